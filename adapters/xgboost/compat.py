"""Every private or version-dependent XGBoost API the adapter uses, in one place.

Known to work with XGBoost 3.2 to 3.4 (``pyproject.toml``: ``xgboost>=3.2``; the tests run on
the installed version: 3.2 on Python 3.11, 3.4 on Python 3.12). Older versions are refused at
import (:func:`check_version`): measured by hand on Python 3.11 with numpy 1.26, the adapter
tests fail on 3.1.3 (multi-target labels, which ``DMatrix.get_label`` flattens before 3.2;
category matching of models that store none; ``check_estimator``), on 3.0.5 and 2.1.4 also
dumps (a scalar ``base_score``), callbacks with early stopping and ``QuantileDMatrix`` eval
sets, and 2.x lacks ``XGBModel._wrapper_params``. What is used, and why:

* ``Booster.boost``: one iteration from given gradients and hessians. Its signature changed
  across versions: ``boost(dtrain, grad, hess)`` in older ones, ``boost(dtrain, iteration, grad,
  hess)`` later, with ``grad`` and ``hess`` keyword-only in 3.x. :func:`boost_one_iteration`
  picks the call from the signature (:data:`BOOST_TAKES_ITERATION`), not from the version
  number;
* ``XGBModel._wrapper_params``: extended by the estimators so that their own parameters stay
  out of the Booster's (checked by :func:`check_estimator_layout`);
* ``XGBModel._more_tags``: extended for scikit-learn < 1.6 (1.6+ reads ``__sklearn_tags__``);
  :func:`host_more_tags` gives XGBoost's, or none where XGBoost no longer has them;
* ``Booster.get_categories`` / ``DMatrix.get_categories`` (3.1+): the categories a model or
  a DMatrix stores, per feature, read in one place by :func:`category_records` (string
  categories as their stored bytes) and :func:`stored_categories` (as values, where they
  can be read reliably: XGBoost 3.2's pandas reader records non-ASCII text with character
  counts as byte offsets, :func:`decode_record`);
* ``XGBModel.fit`` calling the global ``train``: the estimators run a copy of it with our
  ``train`` (:func:`unbiased_criteria.adapters._estimators.with_train` checks it).

Version-dependent rules of the models themselves (not of the Python API), by the XGBoost
version that wrote the model (:func:`model_version`):

* from 3.4 a node is always scored from its float32 weight as ``-(2 G w + (H + lambda) w^2 +
  2 alpha |w|)`` (``tree::CalcGainGivenWeight``), which is the soft-thresholded score of
  LightGBM; before, with ``max_delta_step`` the raw ``G`` was used and L1 had no term
  (:func:`scores_with_raw_gradient`);
* from 3.4 ``reg:absoluteerror`` and ``reg:quantileerror`` are smoothed surrogates whose scale
  is a statistic of all training rows in each iteration, and leaves are no longer renewed
  (:data:`SMOOTH_L1_FROM`).

A missing name raises :class:`~unbiased_criteria.adapters._compat.HostVersionError`.
"""

from __future__ import annotations

import codecs
import functools
import inspect
import json
import re
import struct
from typing import Any

import numpy as np
import xgboost
from unbiased_criteria.adapters._compat import HostVersionError, private

__all__ = [
    "KNOWN_VERSIONS", "MIN_VERSION", "check_version", "HostVersionError", "SMOOTH_L1_FROM",
    "model_version", "file_version",
    "FILE_VERSION_ATTR", "FILE_OBJECTIVE_ATTR", "BINARY_MAGIC", "BINARY_READ_UNTIL",
    "file_objective", "dropped_objective_params",
    "scores_with_raw_gradient", "BOOST_TAKES_ITERATION", "boost_one_iteration",
    "check_estimator_layout", "host_more_tags", "stored_categories", "category_records",
    "UnreadableCategories", "MISRECORDS_UNTIL", "decode_record", "encode_categories",
    "is_text", "misrecorded_reading", "records_text_faithfully", "shown_record",
    "unreadable_message",
]

#: the oldest XGBoost the adapter works with (``pyproject.toml`` requires it too)
MIN_VERSION = (3, 2)
#: XGBoost versions the adapter is known to work with
KNOWN_VERSIONS = "3.2 to 3.4"
VERSION = xgboost.__version__
#: the first XGBoost whose L1 objectives are smoothed surrogates with a per-iteration scale
SMOOTH_L1_FROM = (3, 4)


def _version_tuple(text: str) -> tuple[int, int]:
    major, minor = (text.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def check_version(version: str = VERSION) -> None:
    """Refuse an XGBoost ``version`` (the installed one) older than :data:`MIN_VERSION`.

    pip refuses it with the ``xgboost`` extra; this catches an XGBoost installed otherwise,
    which would fail later, part way, or score some models otherwise than it trained them.

    Raises
    ------
    HostVersionError
        ``version`` is older than :data:`MIN_VERSION`.
    """
    if _version_tuple(version) < MIN_VERSION:
        oldest = ".".join(map(str, MIN_VERSION))
        raise HostVersionError(
            f"xgboost {version} is older than {oldest}, the oldest version unbiased-criteria "
            f"works with (known to work with xgboost {KNOWN_VERSIONS}); upgrade it: "
            f"pip install -U 'xgboost>={oldest}'")


check_version()  # every part of the adapter imports this module first


#: model attribute: the version a model file recorded, where the installed XGBoost that
#: loaded it records its own (:func:`file_version`)
FILE_VERSION_ATTR = "unbiased_criteria_xgboost_version"
#: model attribute: the objective parameters a model file recorded that the installed XGBoost
#: dropped when it loaded the file (:func:`dropped_objective_params`), as JSON
FILE_OBJECTIVE_ATTR = "unbiased_criteria_xgboost_objective"
#: the first bytes of XGBoost's old binary model format (``save_model("m.model")``, and
#: ``save_raw()`` up to 1.7); XGBoost reads it up to (not including) :data:`BINARY_READ_UNTIL`
BINARY_MAGIC = b"binf"
BINARY_READ_UNTIL = (3, 1)


def model_version(js: dict | None = None) -> tuple[int, int]:
    """(major, minor) of the XGBoost that wrote the model JSON ``js`` (its ``version``).

    A live Booster's JSON carries the installed version, also for a model loaded from a file
    another version wrote: the library's loader keeps the file's as the attribute
    :data:`FILE_VERSION_ATTR`, which wins. Without ``js`` (dumps store none) the installed
    version is assumed.
    """
    stored = ((js or {}).get("learner", {}).get("attributes", {}) or {}).get(FILE_VERSION_ATTR)
    if stored is not None:
        return _version_tuple(str(stored))
    version = (js or {}).get("version")
    if isinstance(version, list) and len(version) >= 2:
        return int(version[0]), int(version[1])
    return _version_tuple(VERSION)


def file_version(data: bytes) -> tuple[int, ...] | None:
    """The XGBoost version a JSON or UBJ model file records (its top-level ``version``, the
    last key XGBoost writes), or an old binary one (``binf``: the major and minor version in
    its header, from 1.0), or None where it cannot be read."""
    if data.startswith(BINARY_MAGIC):
        # LearnerModelParamLegacy: base_score, num_feature, num_class, contain_extra_attrs,
        # contain_eval_metrics, major_version, minor_version (little-endian 32-bit fields)
        if len(data) < 32:
            return None
        major, minor = struct.unpack("<II", data[24:32])
        return (major, minor) if 0 < major < 100 and minor < 100 else None
    at = data.rfind(b"version")
    if at < 0:
        return None
    tail = data[at + len(b"version"):at + 64]
    if tail[:1] == b'"':  # JSON: "version":[3,2,0]
        found = re.match(rb'"\s*:\s*\[\s*(\d+)\s*,\s*(\d+)(?:\s*,\s*(\d+))?', tail)
        return tuple(int(v) for v in found.groups() if v is not None) if found else None
    return _ubj_ints(tail)


_UBJ_INT = {b"i": (1, True), b"U": (1, False), b"I": (2, True), b"l": (4, True),
            b"L": (8, True)}


def _ubj_ints(tail: bytes) -> tuple[int, ...] | None:
    """A UBJSON array of integers (``[``, optional ``$`` type and ``#`` count), or None."""
    def number(pos: int, marker: bytes) -> tuple[int, int] | None:
        if marker not in _UBJ_INT:
            return None
        size, signed = _UBJ_INT[marker]
        if pos + size > len(tail):
            return None
        return int.from_bytes(tail[pos:pos + size], "big", signed=signed), pos + size

    if tail[:1] != b"[":
        return None
    pos, typed, count = 1, None, None
    if tail[pos:pos + 1] == b"$":
        typed, pos = tail[pos + 1:pos + 2], pos + 2
    if tail[pos:pos + 1] == b"#":
        got = number(pos + 2, tail[pos + 1:pos + 2])
        if got is None:
            return None
        count, pos = got
    values: list[int] = []
    while (count is None or len(values) < count) and pos < len(tail):
        if count is None and tail[pos:pos + 1] == b"]":
            break
        marker = typed
        if marker is None:
            marker, pos = tail[pos:pos + 1], pos + 1
        got = number(pos, marker)
        if got is None:
            return None
        value, pos = got
        values.append(value)
    return tuple(values) if len(values) >= 2 else None


def file_objective(data: bytes) -> dict | None:
    """The objective a JSON or UBJ model file records (``learner.objective``: its ``name``
    and ``<x>_param`` blocks of strings), or None where it cannot be read.

    It is the file's last ``"objective"`` key whose value is an object: XGBoost writes the
    learner's keys in order, ``objective`` after the trees, and its attributes and feature
    names are strings."""
    if re.match(rb"\s*\{\s*[\"}]", data):  # JSON
        end = len(data)
        while (at := data.rfind(b'"objective"', 0, end)) >= 0:
            end = at
            found = re.compile(rb'"objective"\s*:\s*\{').match(data, at)
            if found is None:
                continue
            try:
                value, _ = json.JSONDecoder().raw_decode(
                    data[found.end() - 1:].decode("utf-8"))
            except ValueError:  # UnicodeDecodeError too
                return None
            return value if isinstance(value, dict) and "name" in value else None
        return None
    at = data.rfind(b"\x09objective{")  # UBJ: the key's length 9, then the object
    if at < 0:
        return None
    try:
        value, _ = _ubj_value(data, at + len(b"\x09objective"))
    except (IndexError, ValueError, UnicodeDecodeError, struct.error):
        return None
    return value if isinstance(value, dict) and "name" in value else None


_UBJ_SCALAR = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f",
               b"D": ">d"}


def _ubj_value(data: bytes, pos: int, marker: bytes | None = None) -> tuple[Any, int]:
    """The UBJSON value at ``pos`` (its type marker there unless given) and the position after
    it: the scalars, strings, objects and arrays XGBoost writes (typed arrays included)."""
    if marker is None:
        marker, pos = data[pos:pos + 1], pos + 1
    if marker in _UBJ_SCALAR:
        fmt = _UBJ_SCALAR[marker]
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, data[pos:pos + size])[0], pos + size
    if marker in (b"T", b"F", b"Z"):
        return {b"T": True, b"F": False, b"Z": None}[marker], pos
    if marker in (b"S", b"C", b"H"):
        if marker == b"C":
            return data[pos:pos + 1].decode("ascii"), pos + 1
        size, pos = _ubj_value(data, pos)
        return data[pos:pos + size].decode("utf-8"), pos + size
    if marker not in (b"{", b"["):
        raise ValueError(f"UBJSON marker {marker!r} at {pos - 1}")
    typed = count = None
    if data[pos:pos + 1] == b"$":
        typed, pos = data[pos + 1:pos + 2], pos + 2
    if data[pos:pos + 1] == b"#":
        count, pos = _ubj_value(data, pos + 1)
    obj = marker == b"{"
    items: list = []
    while count is None or len(items) < count:
        if count is None and data[pos:pos + 1] in (b"}", b"]"):
            pos += 1
            break
        if pos >= len(data):
            raise ValueError("UBJSON container not closed")
        if obj:
            size, pos = _ubj_value(data, pos)
            key, pos = data[pos:pos + size].decode("utf-8"), pos + size
        value, pos = _ubj_value(data, pos, typed)
        items.append((key, value) if obj else value)
    return (dict(items) if obj else items), pos


def dropped_objective_params(recorded: dict, loaded: dict) -> dict | None:
    """The parameters of objective ``recorded`` (a file's) that ``loaded`` (the Booster
    XGBoost made of the file) does not hold, in their blocks with the name, or None: XGBoost
    3.0.3+ drops ``reg:squaredlogerror``'s ``scale_pos_weight`` from an older file, whose
    trees were grown with it."""
    if recorded.get("name") != loaded.get("name"):
        return None
    dropped = {}
    for block, params in recorded.items():
        if block == "name" or not isinstance(params, dict):
            continue
        held = loaded.get(block)
        have = held if isinstance(held, dict) else {}
        missing = {str(k): str(v) for k, v in params.items() if k not in have}
        if missing:
            dropped[block] = missing
    return {"name": recorded["name"], **dropped} if dropped else None


def scores_with_raw_gradient(version: tuple[int, int]) -> bool:
    """Whether XGBoost ``version`` scores a clipped weight with the raw gradient sum."""
    return version < (3, 4)


def _takes_iteration(boost: Any) -> bool:
    return "iteration" in inspect.signature(boost).parameters


#: whether the installed ``Booster.boost`` takes the iteration (XGBoost 3.x does)
BOOST_TAKES_ITERATION = _takes_iteration(xgboost.Booster.boost)


def boost_one_iteration(booster: xgboost.Booster, dtrain: xgboost.DMatrix, iteration: int,
                        grad: np.ndarray, hess: np.ndarray) -> None:
    """Grow iteration ``iteration`` of ``booster`` from ``grad`` and ``hess``."""
    # the installed Booster's signature was read at import (inspecting it costs 0.2 ms a round)
    takes = (BOOST_TAKES_ITERATION if type(booster).boost is xgboost.Booster.boost
             else _takes_iteration(booster.boost))
    if takes:
        booster.boost(dtrain, iteration, grad=grad, hess=hess)
    else:
        booster.boost(dtrain, grad, hess)


#: the newest XGBoost known to record a pandas frame's non-ASCII string categories wrongly
#: (:func:`misrecorded_reading`); a model it wrote holding such categories is not trusted
MISRECORDS_UNTIL = (3, 2)


class UnreadableCategories(ValueError):
    """The categories a model stores for a feature cannot be read reliably."""


def category_records(obj: xgboost.Booster | xgboost.DMatrix
                     ) -> list[tuple[str, list | None]] | None:
    """Per feature, its name and the categories ``obj`` stores as XGBoost holds them: None
    for a numeric feature, numbers, or for string categories each one's stored bytes (not
    decoded: XGBoost 3.2 records non-ASCII ones of a pandas frame with character counts as
    byte offsets, whose pieces may not even be UTF-8). An empty list when no feature stores
    any; None when this XGBoost (before 3.1) stores none. Needs pyarrow (``ImportError``
    without it); ``XGBoostError`` on a model XGBoost cannot read them from."""
    if not hasattr(obj, "get_categories"):
        return None
    import pyarrow as pa

    out: list[tuple[str, list | None]] = []
    for name, arr in obj.get_categories(export_to_arrow=True).to_arrow() or []:
        if arr is None:
            out.append((str(name), None))
        elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            _, offsets, data = arr.buffers()[:3]
            width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
            at = np.frombuffer(offsets, dtype=width)[arr.offset:arr.offset + len(arr) + 1]
            raw = b"" if data is None else data.to_pybytes()
            out.append((str(name), [raw[a:b] for a, b in zip(at[:-1], at[1:])]))
        else:
            out.append((str(name), arr.to_pylist()))
    return out


def is_text(record: list | None) -> bool:
    """Whether a :func:`category_records` entry holds string categories (as bytes)."""
    return bool(record) and all(isinstance(v, bytes) for v in record)


def encode_categories(categories: list[str]) -> list[bytes] | None:
    """The bytes the installed XGBoost records for a pandas frame's string ``categories`` (in
    this order), as it records a DataFrame it trains on or predicts; None where it stores
    none (before 3.1). It is asked, not imitated: its pandas reader took character counts
    as byte offsets up to 3.2 at least."""
    if not hasattr(xgboost.DMatrix, "get_categories"):
        return None
    return _encode(tuple(categories))


@functools.lru_cache(maxsize=64)
def _encode(categories: tuple[str, ...]) -> list[bytes] | None:
    import pandas as pd

    frame = pd.DataFrame({"c": pd.Categorical.from_codes([], categories=list(categories))})
    records = category_records(xgboost.DMatrix(frame, enable_categorical=True))
    return None if not records else records[0][1]


def records_text_faithfully() -> bool:
    """Whether the installed XGBoost records non-ASCII categories as their UTF-8 bytes."""
    probe = ["\u00fc", "a\u00e9b"]
    return encode_categories(probe) == [v.encode("utf-8") for v in probe]


def decode_record(name: str, record: list, writer: tuple[int, int] | None = None) -> list:
    """The categories of a :func:`category_records` entry as values, where they can be
    read reliably: numbers as they are; ASCII strings always; other text only where the
    installed XGBoost records text faithfully, the record decodes as UTF-8, re-encodes to
    the same bytes and was not written by an XGBoost known to misrecord it (``writer``,
    the version that wrote the model, where known; :data:`MISRECORDS_UNTIL`).

    Raises
    ------
    UnreadableCategories
        The record cannot be read reliably: it names ``name`` and why.
    """
    if not is_text(record):
        return list(record)
    if all(v.isascii() for v in record):
        return [v.decode("ascii") for v in record]
    try:
        values = [v.decode("utf-8") for v in record]
    except UnicodeDecodeError:
        values = None
    readable = (values is not None and records_text_faithfully()
                and (writer is None or writer > MISRECORDS_UNTIL)
                and encode_categories(values) == record)
    if not readable:
        raise UnreadableCategories(unreadable_message(name, record))
    return values


def shown_record(record: list, limit: int = 5) -> str:
    """A record's first categories for a message (undecodable bytes escaped)."""
    values = [v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v
              for v in record[:limit]]
    return f"{values!r}{'...' if len(record) > limit else ''}"


def unreadable_message(name: str, record: list) -> str:
    """Why the stored categories of feature ``name`` cannot be read reliably."""
    until = ".".join(map(str, MISRECORDS_UNTIL))
    return (f"the categories the model stores for feature {name!r} cannot be read reliably "
            f"(stored as {shown_record(record)}): they hold non-ASCII text, which XGBoost "
            f"{until} records for a pandas frame with character counts taken as byte offsets "
            "(names cut and shifted)"
            + (f", as the installed XGBoost {VERSION} does for any frame: it reads a frame "
               "right only where the frame lists exactly the categories the model was "
               "trained with, in their order" if not records_text_faithfully() else
               ", and this model was written by such an XGBoost, or its stored text does "
               "not read back as written")
            + "; train with XGBoost 3.4 or later, or with ASCII category names")


def misrecorded_reading(record: list, values: list) -> bool:
    """Whether ``record`` (text, as stored) is how XGBoost's miscounting pandas reader
    (:data:`MISRECORDS_UNTIL`) records categories among which are all ``values``: its byte
    offsets are then the categories' character offsets, its bytes the first that many of
    their UTF-8 text. True only where that reading differs from the faithful one."""
    if not is_text(record) or not values or not all(isinstance(v, str) for v in values):
        return False
    joined = b"".join(record)
    text = codecs.getincrementaldecoder("utf-8")().decode(joined, final=False)
    if text.encode("utf-8") != joined[:len(text.encode("utf-8"))]:
        return False
    ends = np.cumsum([0] + [len(v) for v in record])
    if len(text) >= ends[-1]:  # all ASCII: both readings agree
        return False
    stored = [(text[a:b], int(b - a)) for a, b in zip(ends[:-1], ends[1:])]
    return all(any(len(v) == size and v.startswith(known) for known, size in stored)
               for v in values)


def stored_categories(obj: xgboost.Booster | xgboost.DMatrix,
                      writer: tuple[int, int] | None = None
                      ) -> list[tuple[str, list | None]] | None:
    """Per feature, its name and the categories ``obj`` stores as values (None for a numeric
    one; an empty list when no feature stores any), or None when this XGBoost (before 3.1)
    stores none. The arrow export needs pyarrow: ``ImportError`` without it, ``XGBoostError``
    on a model XGBoost cannot read them from (each caller decides what that means);
    :class:`UnreadableCategories` where text cannot be read reliably (:func:`decode_record`).
    """
    records = category_records(obj)
    if records is None:
        return None
    return [(name, None if rec is None else decode_record(name, rec, writer))
            for name, rec in records]


def check_estimator_layout() -> None:
    """Fail now, with a clear message, if ``XGBModel`` lacks what the estimators extend."""
    private(xgboost.XGBModel, "_wrapper_params", "xgboost", VERSION, KNOWN_VERSIONS)


def host_more_tags(estimator: Any, cls: type) -> dict[str, Any]:
    """XGBoost's ``_more_tags`` of ``estimator`` (its class after ``cls`` in the MRO), or {}
    where XGBoost has none (scikit-learn 1.6+ reads ``__sklearn_tags__`` instead)."""
    more = getattr(super(cls, estimator), "_more_tags", None)
    return {} if more is None else dict(more())
