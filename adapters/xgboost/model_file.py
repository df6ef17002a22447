"""XGBoost model files for the command line (the interface of
:mod:`unbiased_criteria.model_files`): JSON and UBJ models in and out, and the demo's model;
``get_dump(dump_format="json")`` JSON in, a dump of the pruned trees out (:mod:`.dump`).
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import numpy as np
import pandas as pd
import xgboost
from unbiased_criteria.adapters.xgboost.compat import (
    BINARY_MAGIC,
    BINARY_READ_UNTIL,
    FILE_OBJECTIVE_ATTR,
    FILE_VERSION_ATTR,
    VERSION,
    UnreadableCategories,
    _version_tuple,
    dropped_objective_params,
    file_objective,
    file_version,
    stored_categories,
)
from unbiased_criteria.adapters.xgboost.estimators import stored_classes

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
]

MODEL_FILE_KINDS = ("an XGBoost JSON or UBJ model, which starts with '{' (or an old binary "
                    "one, 'binf', up to XGBoost 3.0), or a JSON dump (dump_format='json': a "
                    "list of trees with 'nodeid')")
#: output suffix -> format written (any other suffix: the input's format)
SUFFIX_FORMATS = {".json": "json", ".ubj": "ubj"}


def error_reason(err: BaseException) -> str:
    """XGBoost's own reason, without its ``[time] file:line:`` prefix, ``Check failed: ...:``
    clause and stack trace."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Stack trace", "[bt]"))]
    text = lines[0] if lines else type(err).__name__
    text = re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", text)
    return re.sub(r"^Check failed: [^:]*:\s*", "", text) or text


def recognise_model_file(data: bytes) -> bool:
    """JSON and UBJ models both start with ``{`` (JSON then a quote, UBJ binary markers);
    the old binary format with ``binf``; a JSON dump is a list of trees with ``nodeid``."""
    return (data.lstrip().startswith(b"{") or data.startswith(BINARY_MAGIC)
            or recognise_dump_text(data) == "xgboost")


def _binary_unreadable(source: str, written: tuple[int, ...] | None) -> InputError:
    """The old binary format under an XGBoost that no longer reads it (3.1+), with the remedy
    (XGBoost's own reason, given for a path, is lost for the bytes we hand it)."""
    by = "" if written is None else f", written by XGBoost {'.'.join(map(str, written))}"
    return InputError(
        f"{source}: an XGBoost model in the old binary format ('binf'{by}: save_model() to "
        "a .model or .bin file, or save_raw(), with an older XGBoost), which XGBoost removed in "
        f"{'.'.join(map(str, BINARY_READ_UNTIL))}: the installed {VERSION} cannot read it. "
        "Load it with XGBoost 3.0 or older and re-save it as JSON or UBJ "
        "(xgboost.Booster(model_file=path).save_model('model.json')), then pass that file")


def load_model_file(file: ModelBytes) -> ModelFile:
    """An ``xgboost.Booster`` from a JSON or UBJ model (or the old binary format, which
    XGBoost reads before 3.1), whatever the file's suffix; a
    :class:`~unbiased_criteria.dumps.Dump` from a JSON dump (format ``"dump"``). The version
    the file records and the objective parameters the installed XGBoost drops on loading
    it are kept as Booster attributes (:data:`FILE_VERSION_ATTR`,
    :data:`FILE_OBJECTIVE_ATTR`), which the reader follows."""
    if recognise_dump_text(file.data) == "xgboost":
        return ModelFile(parse_dump_bytes(file.data, file.source), "xgboost", "dump",
                         file.source)
    written = file_version(file.data)
    if file.data.startswith(BINARY_MAGIC):
        fmt = "binary"
        if _version_tuple(VERSION) >= BINARY_READ_UNTIL:
            raise _binary_unreadable(file.source, written)
    else:
        fmt = "json" if re.match(rb"\s*\{\s*[\"}]", file.data) else "ubj"
    # XGBoost's log of old formats, silenced for this thread only (its configuration is
    # thread-local; catch_warnings would swap the process's filters under other threads)
    with xgboost.config_context(verbosity=0):
        try:
            booster = xgboost.Booster(model_file=bytearray(file.data))
        except xgboost.core.XGBoostError as err:
            raise InputError(f"{file.source}: not a model file: XGBoost rejects it as "
                             f"{fmt.upper()}: {error_reason(err)}") from None
    # the Booster records the installed version: keep the one whose rules built the trees
    if written is not None and written[:2] != _version_tuple(VERSION):
        booster.set_attr(**{FILE_VERSION_ATTR: ".".join(str(v) for v in written)})
    # and the objective parameters the installed XGBoost dropped (3.0.3+ drops
    # reg:squaredlogerror's scale_pos_weight): the trees were grown with them
    recorded = file_objective(file.data) if fmt != "binary" else None
    if recorded is not None:
        loaded = json.loads(booster.save_config())["learner"].get("objective", {})
        dropped = dropped_objective_params(recorded, loaded)
        if dropped is not None:
            booster.set_attr(**{FILE_OBJECTIVE_ATTR: json.dumps(dropped, sort_keys=True)})
    # a file an UnbiasedXGBClassifier saved: its trees were fit on the indices of the labels
    # it stores, which the scoring then takes as its loaded estimator does (classes_)
    try:
        classes = stored_classes(booster, file.source, stacklevel=3)
    except ValueError as err:
        raise InputError(str(err)) from None
    if classes is not None:
        booster.classes_ = classes
    return ModelFile(booster, "xgboost", fmt, file.source)


def _stored_categories(booster: xgboost.Booster, n: int) -> list[list | None]:
    """Per feature, the categories the model stores (XGBoost 3.1+), or None."""
    recorded = booster.attr(FILE_VERSION_ATTR)  # the version that wrote the file, if older
    writer = _version_tuple(recorded) if recorded else None
    try:
        pairs = stored_categories(booster, writer)
    except UnreadableCategories as err:
        raise InputError(str(err)) from None
    except ImportError:
        raise InputError("reading the categories an XGBoost model stores needs pyarrow "
                         "(pip install pyarrow)") from None
    except xgboost.core.XGBoostError as err:
        raise InputError(f"the model's stored categories cannot be read: {error_reason(err)}") \
            from None
    if pairs is None:
        warnings.warn(
            f"xgboost {xgboost.__version__} cannot read the categories a model stores (3.1 "
            "can): categorical columns must hold the integer codes the model was trained "
            "with", UserWarning, stacklevel=3)
        return [None] * n
    if not pairs:  # no feature stores categories
        return [None] * n
    if len(pairs) != n:
        raise InputError(f"the model stores categories for {len(pairs)} features but has {n}")
    return [cats for _, cats in pairs]


def _dump_schema(dump: Dump) -> Schema:
    from unbiased_criteria.adapters.xgboost.dump import dump_schema

    names, categorical = dump_schema(dump)
    default = names == [f"f{i}" for i in range(len(names))]
    return Schema(len(names), None if default else names, {i: None for i in categorical},
                  unseen_as_missing=False)


def feature_schema(model: xgboost.Booster | Dump) -> Schema:
    """Names, count and categorical features (``feature_types == "c"``) with the categories
    the model stores (a dump stores none: its categorical columns hold the codes); the
    labels of a model an ``UnbiasedXGBClassifier`` saved (``classes_``, set by
    :func:`load_model_file`), which may be text."""
    if isinstance(model, Dump):
        return _dump_schema(model)
    n = int(model.num_features())
    names = model.feature_names
    types = model.feature_types or []
    cat_index = [i for i, t in enumerate(types) if t == "c"]
    stored = _stored_categories(model, n) if cat_index else []
    categorical = {i: (stored[i] or None) for i in cat_index}
    classes = getattr(model, "classes_", None)
    return Schema(n, None if not names else [str(s) for s in names], categorical,
                  unseen_as_missing=False, text_labels=classes is not None,
                  classes=None if classes is None else tuple(np.asarray(classes).tolist()))


def set_training_params(model: xgboost.Booster | Dump, params: dict[str, str]) -> None:
    """``Booster.set_param``: eta, lambda, alpha... which model files do not store; a dump's
    ``host_params`` (``objective``, ``base_score``, ``feature_names``...)."""
    if isinstance(model, Dump):
        model.host_params.update(params)
        return
    if not params:
        return
    try:
        model.set_param(params)
    except xgboost.core.XGBoostError as err:
        raise InputError(error_reason(err)) from None


def output_format(suffix: str, input_format: str) -> str:
    """``json`` or ``ubj`` by the suffix, else the input's format (UBJ for the old binary
    one, which XGBoost no longer writes); a dump gives a dump."""
    if input_format == "binary":
        input_format = "ubj"
    if input_format == "dump":
        if suffix == ".ubj":
            warnings.warn("a pruned XGBoost dump is written as a JSON dump, not as UBJ",
                          UserWarning, stacklevel=2)
        return "dump"
    if suffix == ".txt":  # LightGBM's
        warnings.warn(f"an XGBoost model is written in XGBoost's {input_format.upper()} "
                      "format (.json or .ubj choose), not as a text model", UserWarning,
                      stacklevel=2)
    return SUFFIX_FORMATS.get(suffix, input_format)


def serialise_model(model: Any, fmt: str) -> bytes:
    """``Booster.save_raw(fmt)``; a dump (what pruning a dump gives) as JSON."""
    if fmt == "dump":
        text = model if isinstance(model, str) else json.dumps(model, ensure_ascii=False)
        return text.encode("utf-8")
    if fmt not in SUFFIX_FORMATS.values():
        raise InputError(f"format: XGBoost writes 'json' or 'ubj' models, got {fmt!r}")
    return bytes(model.save_raw(fmt))


def fit_example(X: pd.DataFrame, y: Any, *, seed: int, settings: dict[str, Any]) -> Any:
    """``xgboost.train`` with ``settings`` (trees, learning_rate, depth), one thread."""
    params = {"objective": "reg:squarederror", "eta": settings["learning_rate"],
              "max_depth": settings["depth"], "seed": seed, "nthread": 1}
    return xgboost.train(params, xgboost.DMatrix(X, y, enable_categorical=True),
                         settings["trees"])


def make_estimator(task: str, params: dict[str, Any]) -> Any:
    """``XGBClassifier`` or ``XGBRegressor`` with ``params`` (``enable_categorical=True`` for
    pandas category columns unless they set it), for the ``select`` command."""
    if task not in ("classification", "regression"):
        raise InputError(f"task: expected 'classification' or 'regression', got {task!r}")
    estimator = xgboost.XGBClassifier if task == "classification" else xgboost.XGBRegressor
    return estimator(**{**{"enable_categorical": True}, **params})
