"""LightGBM model files for the command line (the interface of
:mod:`unbiased_criteria.model_files`): text models in, text models out, and the demo's model;
``dump_model()`` JSON in, a dump of the pruned trees out (:mod:`.dump`).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from typing import Any

import lightgbm
import pandas as pd
from unbiased_criteria.adapters.lightgbm.text_model import check_model_text

from unbiased_criteria.dumps import Dump, parse_dump_bytes, recognise_dump_text
from unbiased_criteria.errors import InputError
from unbiased_criteria.model_files import ModelBytes, ModelFile, Schema

__all__ = [
    "MODEL_FILE_KINDS",
    "recognise_model_file",
    "load_model_file",
    "feature_schema",
    "set_training_params",
    "output_format",
    "serialise_model",
    "fit_example",
    "make_estimator",
    "FIT_ERRORS",
]

MODEL_FILE_KINDS = ("a LightGBM text model, which starts with 'tree', or dump_model() JSON "
                    "('name': 'tree' and 'tree_info')")
_OTHER_SUFFIXES = (".json", ".ubj")  # suffixes users give to XGBoost files


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def recognise_model_file(data: bytes) -> bool:
    """A LightGBM text model starts with ``tree`` on a line of its own; a ``dump_model()``
    JSON is a dict with ``"name": "tree"`` and ``"tree_info"``."""
    return data.startswith((b"tree\n", b"tree\r\n")) or \
        recognise_dump_text(data) == "lightgbm"


def load_model_file(file: ModelBytes) -> ModelFile:
    """A ``lightgbm.Booster`` from a text model, checked first (LightGBM aborts the process on
    some corrupt files); a :class:`~unbiased_criteria.dumps.Dump` from ``dump_model()`` JSON
    (format ``"dump"``)."""
    if recognise_dump_text(file.data) == "lightgbm":
        return ModelFile(parse_dump_bytes(file.data, file.source), "lightgbm", "dump",
                         file.source)
    try:
        text = file.data.decode("utf-8")
        check_model_text(text)
        booster = lightgbm.Booster(model_str=text)
    except (UnicodeDecodeError, ValueError, lightgbm.basic.LightGBMError) as err:
        raise InputError(
            f"{file.source}: not a valid LightGBM text model: {_first_line(err)}"
        ) from None
    return ModelFile(booster, "lightgbm", "text", file.source)


def _pair_lists(lists: list, categorical: Sequence[int], names: Sequence[str],
                ranges: dict[int, tuple[float, float]]) -> None:
    """Refuse a file whose stored pandas category lists (one per category column of the
    training frame, ordered ones included) do not pair one to one with its categorical
    features: a column read from a file has no dtype to pair them by, as a frame's category
    columns do.

    ``ranges``: each numeric feature's training range ``(min, max)``, which names the
    numeric features that may be an ordered category column's codes.
    """
    if len(lists) == len(categorical):
        return
    causes, codes = [], ""
    if len(lists) > len(categorical):
        # LightGBM splits on an ordered category column's codes as numbers (its Python API
        # declares only the unordered ones categorical) yet stores its categories
        longest = max(len(c) for c in lists)
        coded = [names[i] for i, (lo, hi) in sorted(ranges.items())
                 if i not in categorical and 0 <= lo <= hi < longest
                 and float(lo).is_integer() and float(hi).is_integer()]
        causes.append(
            "an ordered pandas category column, whose categories LightGBM stores but whose "
            "codes it splits on as numbers"
            + (f" (whole numbers from 0, as codes are, in {coded})" if coded else ""))
        causes.append("a constant category column, which LightGBM leaves out")
        codes = (", or train on an ordered column's codes (df[col].cat.codes) instead of the "
                 "column and give the file those codes")
    else:
        causes.append("an integer column declared categorical_feature, which has no list")
    raise InputError(
        f"the model stores {len(lists)} pandas category list(s) for {len(categorical)} "
        f"categorical feature(s) ({'; or '.join(causes)}): which list is which feature's is "
        "known only from a frame's category columns; score it from Python with the held-out "
        "rows as a pandas DataFrame (as LightGBM's predict, it pairs the lists with the "
        f"frame's category columns){codes}")


def _text_ranges(infos: Sequence[str]) -> dict[int, tuple[float, float]]:
    """Numeric features' training ranges from a text model's ``feature_infos`` (``[lo:hi]``)."""
    out = {}
    for i, info in enumerate(infos):
        m = re.fullmatch(r"\[(.*):(.*)\]", info)
        if m:
            try:
                out[i] = (float(m.group(1)), float(m.group(2)))
            except ValueError:
                continue  # not a range LightGBM wrote: names no candidate
    return out


def _dump_schema(dump: Dump) -> Schema:
    content = dump.content
    names = [str(n) for n in content["feature_names"]]
    default = names == [f"Column_{i}" for i in range(len(names))]
    infos = content.get("feature_infos", {})
    cat = [i for i, name in enumerate(names) if infos.get(name, {}).get("values")]
    lists = content.get("pandas_categorical") or []
    categorical: dict[int, list | None] = {i: None for i in cat}
    if lists:
        ranges = {i: (float(info["min_value"]), float(info["max_value"]))
                  for i, info in ((i, infos.get(name, {})) for i, name in enumerate(names))
                  if not info.get("values") and "min_value" in info and "max_value" in info}
        _pair_lists(lists, cat, names, ranges)
        categorical = {i: list(c) for i, c in zip(cat, lists)}
    return Schema(len(names), None if default else names, categorical,
                  stored_name=lambda name: name.replace(" ", "_"))


def feature_schema(model: lightgbm.Booster | Dump) -> Schema:
    """Names (None when LightGBM made them up), count and categorical features with the pandas
    categories the model stores."""
    if isinstance(model, Dump):
        return _dump_schema(model)
    text = model.model_to_string(num_iteration=-1)
    names = [str(n) for n in model.feature_name()]
    n = len(names)
    default = names == [f"Column_{i}" for i in range(n)]
    cat: set[int] = set()
    m = re.search(r"^\[categorical_feature: ([^\]]*)\]", text, flags=re.MULTILINE)
    if m and m.group(1).strip():
        spec = m.group(1).strip()
        if spec.startswith("name:"):
            cat |= {names.index(s) for s in spec[5:].split(",") if s in names}
        else:
            cat |= {int(s) for s in spec.split(",") if s.strip().lstrip("-").isdigit()}
    m = re.search(r"^feature_infos=(.*)$", text, flags=re.MULTILINE)
    infos = m.group(1).split(" ") if m else []
    # used categorical features: "c1:c2:..." (numeric ones are "[lo:hi]" or "none")
    cat |= {i for i, s in enumerate(infos) if s and s != "none" and not s.startswith("[")}
    cat = {i for i in cat if 0 <= i < n}
    pandas_cats = getattr(model, "pandas_categorical", None)
    categorical: dict[int, list | None] = {i: None for i in sorted(cat)}
    if pandas_cats:
        _pair_lists(pandas_cats, list(categorical), names, _text_ranges(infos))
        categorical = {i: list(c) for i, c in zip(sorted(cat), pandas_cats)}
    # LightGBM stores feature names with spaces replaced by "_"
    return Schema(n, None if default else names, categorical,
                  stored_name=lambda name: name.replace(" ", "_"))


def set_training_params(model: lightgbm.Booster | Dump, params: dict[str, str]) -> None:
    """LightGBM text models store their training parameters: none can be set. A dump lacks
    them: they become its ``host_params`` (``lambda_l2``, ``cat_l2``...)."""
    if isinstance(model, Dump):
        model.host_params.update(params)
        return
    if params:
        raise InputError("LightGBM model files store their training parameters; only XGBoost "
                         "models take them")


def output_format(suffix: str, input_format: str) -> str:
    """``"dump"`` for a dump, else ``"text"`` (with a warning for a suffix of another host's
    format)."""
    if input_format == "dump":
        return "dump"
    if suffix in _OTHER_SUFFIXES:
        warnings.warn(f"a LightGBM model is written as a LightGBM text model, not as "
                      f"{suffix}", UserWarning, stacklevel=2)
    return "text"


def serialise_model(model: Any, fmt: str) -> bytes:
    """The text model of every iteration; a dump (what pruning a dump gives) as JSON."""
    if fmt == "dump":
        text = model if isinstance(model, str) else json.dumps(model, ensure_ascii=False)
        return text.encode("utf-8")
    if fmt != "text":
        raise InputError(f"format: LightGBM writes 'text' models, got {fmt!r}")
    return model.model_to_string(num_iteration=-1).encode("utf-8")


def fit_example(X: pd.DataFrame, y: Any, *, seed: int, settings: dict[str, Any]) -> Any:
    """``lightgbm.train`` with ``settings`` (trees, learning_rate, leaves), one thread."""
    params = {"objective": "regression", "learning_rate": settings["learning_rate"],
              "num_leaves": settings["leaves"], "verbose": -1, "seed": seed, "num_threads": 1}
    return lightgbm.train(params, lightgbm.Dataset(X, y), num_boost_round=settings["trees"])


#: LightGBM's own error for parameters or rows it refuses while fitting (not a ValueError)
FIT_ERRORS: tuple[type[Exception], ...] = (lightgbm.basic.LightGBMError,)


def make_estimator(task: str, params: dict[str, Any]) -> Any:
    """``LGBMClassifier`` or ``LGBMRegressor`` with ``params`` (``verbose=-1`` unless they
    set it), for the ``select`` command."""
    if task not in ("classification", "regression"):
        raise InputError(f"task: expected 'classification' or 'regression', got {task!r}")
    estimator = lightgbm.LGBMClassifier if task == "classification" else lightgbm.LGBMRegressor
    return estimator(**{**{"verbose": -1}, **params})
