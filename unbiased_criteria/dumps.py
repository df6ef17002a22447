"""Dumped models: a host's JSON dump of its trees, scored without the host's Booster.

A dump is recognised by its content (:func:`recognise_dump`), whatever it came as:

* LightGBM ``Booster.dump_model()``: a dict with ``"name": "tree"`` and ``"tree_info"``;
* XGBoost ``Booster.get_dump(dump_format="json", with_stats=True)``: a list with one tree per
  entry (a JSON string or a parsed dict holding ``"nodeid"``), or the file
  ``Booster.dump_model(fname, dump_format="json", with_stats=True)`` writes (a JSON list);

each as the parsed object, a JSON string, or the path of a file holding it. The adapters read
dumps into the IR (``unbiased_criteria.adapters.<host>.dump``); rows are routed by the IR's
own decision rules (:mod:`unbiased_criteria.ir_router`), since there is no Booster.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import InputError
from .model import UnsupportedModelError

__all__ = ["Dump", "recognise_dump", "as_dump", "parse_dump_bytes", "significant_digits",
           "printed_bounds", "refuse_linear_dump"]


@dataclass(frozen=True)
class Dump:
    """A dumped model, parsed, with what the caller passed for what it lacks.

    Attributes
    ----------
    host : {"lightgbm", "xgboost"}
    content : dict or list
        LightGBM: the ``dump_model()`` dict. XGBoost: the list of per-tree dicts.
    form : {"object", "strings", "json"}
        How it came: a parsed object (``prune`` returns one), a list of one JSON string per
        tree (what ``get_dump`` returns; so does ``prune``) or JSON text (a string or a file;
        ``prune`` returns a JSON string).
    host_params : dict
        ``host_params=`` of the public functions (and the CLI's ``--param``): parameters the
        dump does not store (XGBoost ``base_score``, ``objective``, ``eta``, ``lambda``,
        ``feature_names``...; LightGBM ``lambda_l2``, ``cat_l2``...).
    """

    host: Literal["lightgbm", "xgboost"]
    content: Any = field(repr=False)
    form: Literal["object", "strings", "json"] = "object"
    host_params: dict = field(default_factory=dict)


def _host_of(obj: Any) -> str | None:
    if isinstance(obj, Mapping):
        return "lightgbm" if obj.get("name") == "tree" and "tree_info" in obj else None
    if isinstance(obj, (list, tuple)) and obj:
        first = obj[0]
        if isinstance(first, str):
            return "xgboost" if '"nodeid"' in first else None
        if isinstance(first, Mapping) and "nodeid" in first:
            return "xgboost"
    return None


#: XGBoost's JSON dump of a gblinear model: one object of "bias" and "weight" lists
_LINEAR = re.compile(r'^\s*\[?\s*\{\s*"bias"\s*:\s*\[')


def _is_linear_dump(obj: Any) -> bool:
    """Whether ``obj`` (a parsed dump, a list of ``get_dump`` strings or JSON text) is
    XGBoost's dump of a gblinear model, which holds no tree."""
    if isinstance(obj, Mapping):
        return "bias" in obj and "weight" in obj and "nodeid" not in obj
    if isinstance(obj, (list, tuple)):
        return bool(obj) and _is_linear_dump(obj[0])
    if isinstance(obj, bytes):
        obj = obj[:4096].decode("utf-8", errors="replace")
    return isinstance(obj, str) and bool(_LINEAR.match(obj)) and '"weight"' in obj


def refuse_linear_dump(obj: Any) -> None:
    """``UnsupportedModelError`` where ``obj`` is XGBoost's dump of a gblinear model."""
    if _is_linear_dump(obj):
        raise UnsupportedModelError("gblinear models have no trees to score (the dump holds "
                                    "the bias and weights of XGBoost's linear booster)")


#: XGBoost's ``get_dump`` in its other formats: a text tree (``0:[f0<1.5] yes=1,...`` or
#: ``0:leaf=...``), graphviz ``dot``; ``dump_model(fname)``'s text file (``booster[0]:``)
_OTHER_FORMAT = re.compile(r"\s*(?:0:(?:\[|leaf=)|digraph\b|booster\[0\]:)")


def _is_other_format_dump(obj: Any) -> bool:
    """Whether ``obj`` (a list of ``get_dump`` strings, or text) is an XGBoost dump in a
    format other than JSON."""
    if isinstance(obj, (list, tuple)):
        return bool(obj) and isinstance(obj[0], str) and bool(_OTHER_FORMAT.match(obj[0]))
    if isinstance(obj, bytes):
        obj = obj[:4096].decode("utf-8", errors="replace")
    return isinstance(obj, str) and bool(_OTHER_FORMAT.match(obj))


def refuse_other_format_dump(obj: Any) -> None:
    """``TypeError`` where ``obj`` is an XGBoost dump in its text or dot format."""
    if _is_other_format_dump(obj):
        raise TypeError("model is an XGBoost dump in its text or dot format: dumps must be "
                        "JSON, get_dump(dump_format='json', with_stats=True)")


def is_file(path: str | os.PathLike) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte: not a file
        return False


def recognise_dump(model: Any) -> str | None:
    """The host whose dump ``model`` is (a parsed object, a JSON string or a file path),
    else None. Cheap: a string or file is looked at, not parsed."""
    if isinstance(model, (Mapping, list, tuple)):
        return _host_of(model)
    text = None
    if isinstance(model, str) and model.lstrip()[:1] in ("{", "["):
        text = model[:4096]
    elif isinstance(model, (str, os.PathLike)) and is_file(model):
        with open(model, "rb") as f:
            head = f.read(4096)
        text = head.decode("utf-8", errors="replace")
    if text is None:
        return None
    return recognise_dump_text(text.encode("utf-8"))


def recognise_dump_text(data: bytes) -> str | None:
    """The host of dump JSON ``data``, else None (byte searches, no parsing)."""
    head = data[:4096].lstrip()
    # an XGBoost model JSON has "tree_info" too, but starts with "learner" and names no "tree"
    if head.startswith(b"{") and not re.match(rb'\{\s*"learner"', head) and \
            b'"tree_info"' in data and re.search(rb'"name"\s*:\s*"tree"', data):
        return "lightgbm"
    if head.startswith(b"[") and b'"nodeid"' in head:
        return "xgboost"
    return None


def parse_dump_bytes(data: bytes, source: str, host_params: Mapping | None = None) -> Dump:
    """A :class:`Dump` from JSON text; ``InputError`` naming ``source`` if it is none."""
    try:
        content = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise InputError(f"{source}: not a valid JSON dump: {err}") from None
    host = _host_of(content)
    if host is None:
        refuse_linear_dump(content)
        raise InputError(
            f"{source}: not a dumped model (expected LightGBM dump_model() JSON, a dict with "
            "'name': 'tree' and 'tree_info', or XGBoost get_dump(dump_format='json') JSON, a "
            "list of trees with 'nodeid')")
    return Dump(host, _parse_trees(content, source), "json", dict(host_params or {}))


def _parse_trees(content: Any, source: str) -> Any:
    """XGBoost's get_dump gives one JSON string per tree: parse them."""
    if isinstance(content, (list, tuple)):
        out = []
        for i, tree in enumerate(content):
            if isinstance(tree, str):
                try:
                    tree = json.loads(tree)
                except ValueError as err:
                    raise InputError(f"{source}: tree {i} is not valid JSON: {err}") from None
            if not isinstance(tree, Mapping):
                raise InputError(f"{source}: tree {i} is a {type(tree).__name__}, expected "
                                 "a JSON object with 'nodeid'")
            out.append(tree)
        return out
    return content


def as_dump(model: Any, host_params: Mapping | None = None) -> Any:
    """``model`` as a :class:`Dump` if it is a dump (else unchanged), with ``host_params``.

    Raises
    ------
    ValueError
        ``host_params`` given for a host model (a Booster stores its own or takes them with
        ``set_param``), or not a dict; a string that is neither dump JSON nor a file.
    TypeError
        An XGBoost dump in its text or dot format (dumps must be JSON).
    UnsupportedModelError
        XGBoost's dump of a gblinear model.
    """
    if host_params is not None and not isinstance(host_params, Mapping):
        raise ValueError(f"host_params must be a dict, got {type(host_params).__name__}")
    if isinstance(model, Dump):
        return replace(model, host_params={**model.host_params, **(host_params or {})})
    host = recognise_dump(model)
    if host is None:
        if isinstance(model, (Mapping, list, tuple, str)):
            refuse_linear_dump(model)
            refuse_other_format_dump(model)
        if isinstance(model, (str, os.PathLike)) and is_file(model):
            with open(model, "rb") as f:
                head = f.read(4096)
            refuse_linear_dump(head)
            refuse_other_format_dump(head)
        if isinstance(model, (str, os.PathLike)) and not is_file(model):
            shown = str(model) if len(str(model)) <= 100 else str(model)[:97] + "..."
            raise ValueError(f"model {shown}: no such file (a model given as a string is a "
                             "dump's JSON or the path of a dump file)")
        # plain data that is no dump is no host model either: the caller refuses its type
        # (saying what a model may be), with host_params or without
        if host_params and not isinstance(model, (Mapping, list, tuple, str, bytes,
                                                  os.PathLike)):
            raise ValueError("host_params is for dumped models (dump_model() / get_dump() "
                             "JSON); a host model stores its parameters")
        return model
    if isinstance(model, (Mapping, list, tuple)):
        form = "strings" if isinstance(model, (list, tuple)) and isinstance(model[0], str) \
            else "object"
        return Dump(host, _parse_trees(model, "model"), form, dict(host_params or {}))
    if isinstance(model, str) and model.lstrip()[:1] in ("{", "["):
        return parse_dump_bytes(model.encode("utf-8"), "model", host_params)
    return parse_dump_bytes(Path(model).read_bytes(), f"model {model}", host_params)


def significant_digits(values: np.ndarray) -> int:
    """The most significant digits among ``values`` as printed (their shortest repr): the
    precision of the printer that wrote a dump (``%.{p}g`` prints at most ``p`` digits)."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values) & (values != 0)]
    return max((len(Decimal(repr(float(v))).normalize().as_tuple().digits) for v in values),
               default=17)


def printed_bounds(values: np.ndarray, dtype: type, digits: int) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and largest ``dtype`` numbers that print as each of ``values`` with
    ``digits`` significant digits.

    A threshold printed as ``%.{digits}g`` stands for any number within half a unit of its
    ``digits``-th significant digit; the model's own threshold is one of the ``dtype`` numbers
    there. A row whose value lies in ``[low, high)`` may go either way. ``low == high`` where
    the printed digits determine the threshold (17 digits for float64, 9 for float32: LightGBM
    and XGBoost 3 dumps).
    """
    values = np.asarray(values, dtype=np.float64)
    exact = values.astype(dtype).astype(np.float64)
    ok = np.isfinite(values) & (values != 0)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log10(np.abs(np.where(ok, values, 1.0))))
    half = np.where(ok, 0.5 * 10.0 ** (exponent - digits + 1), 0.0)
    inf = np.asarray(np.inf, dtype=dtype)
    lo = (values - half).astype(dtype)
    hi = (values + half).astype(dtype)
    # the interval's end points rounded into it
    lo = np.where(lo.astype(np.float64) < values - half, np.nextafter(lo, inf), lo)
    hi = np.where(hi.astype(np.float64) > values + half, np.nextafter(hi, -inf), hi)
    low = np.where(ok, np.minimum(lo.astype(np.float64), exact), exact)
    high = np.where(ok, np.maximum(hi.astype(np.float64), exact), exact)
    return low, high
