"""The command's input files: model files (through :mod:`unbiased_criteria.model_files`) and
data tables (CSV or Parquet) matched to the model's features."""

from __future__ import annotations

import decimal
import importlib.util
import lzma
import numbers
import sys
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import model_files
from ..errors import InputError
from ..model_files import ModelFile, Schema
from .output import first_line, short, warn

__all__ = ["load_model", "model_schema", "read_table", "prepare_data", "feature_values",
           "weight_values"]


def _readable_file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} {path}: no such file")
    if p.is_dir():
        raise InputError(f"{what} {path}: is a directory, not a file")
    return p


def load_model(path: str | Path, *, trusted: bool = False) -> ModelFile:
    """Load a model file with the adapter that recognises its content, whatever its suffix
    (:func:`unbiased_criteria.model_files.load_model_file`).

    Parameters
    ----------
    path : str or pathlib.Path
    trusted : bool
        The user vouches for the file (formats that run code when loaded, such as pickle);
        see :class:`unbiased_criteria.model_files.ModelBytes`.

    Returns
    -------
    ModelFile

    Raises
    ------
    InputError
        The file is missing, unreadable, corrupt, of no known format, or its host is not
        installed.
    """
    p = _readable_file(path, "model")
    try:
        data = p.read_bytes()
    except OSError as err:
        raise InputError(f"model {path}: cannot be read: {err.strerror or err}") from None
    return model_files.load_model_file(data, f"model {path}", trusted=trusted)


_PARQUET = (".parquet", ".pq", ".parq")
_CSV = (".csv", ".txt")
_TSV = (".tsv", ".tab")
_COMPRESSED = ("", ".gz", ".bz2", ".zip", ".xz", ".zst")


def _has_suffix(name: str, suffixes: tuple[str, ...]) -> bool:
    return any(name.endswith(s + c) for s in suffixes for c in _COMPRESSED)


def _read_errors() -> tuple[type[BaseException], ...]:
    """What pandas and its decompressors raise for a file that cannot be read: a parse error,
    a truncated (``EOFError``) or corrupt compressed stream (``zlib.error``, ``LZMAError``,
    ``BadZipFile``, ``OSError`` from gzip and bz2, zstandard's ``ZstdError``)."""
    errors: list[type[BaseException]] = [ValueError, OSError, ImportError, EOFError,
                                         zlib.error, lzma.LZMAError, zipfile.BadZipFile]
    zstandard = sys.modules.get("zstandard")  # imported by pandas for a .zst file only
    if zstandard is not None and isinstance(getattr(zstandard, "ZstdError", None), type):
        errors.append(zstandard.ZstdError)
    return tuple(errors)


#: the values pandas' read_csv reads as missing by default, as its documentation lists them
_DEFAULT_NA = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}


def _read_csv(p: Path, sep: str, header: list[str], text: dict[str, set[str]]) -> pd.DataFrame:
    """The CSV with pandas' type guessing, except the columns ``text`` (names as pandas gives
    them): read as written, so that a category "NA" or "007" stays one. ``text`` maps each
    such column to the values the model knows in it (its categories or classes, as text):
    pandas' missing-value strings other than those are still missing there (a numeric
    category column's "NA" is missing, a category "NA" is not)."""
    if not text:
        return pd.read_csv(p, sep=sep)
    default = sorted(_DEFAULT_NA)
    na_values: dict = {}
    for i, name in enumerate(header):
        # an unnamed column by its position (pandas names it "Unnamed: i")
        key, pandas_name = (name, name) if name != "" else (i, f"Unnamed: {i}")
        known = text.get(pandas_name)
        na_values[key] = default if known is None else sorted((_DEFAULT_NA - known) | {""})
    return pd.read_csv(p, sep=sep, dtype={name: str for name in text},
                       keep_default_na=False, na_values=na_values)


def read_table(path: str | Path, option: str = "data", *, schema: Schema | None = None,
               label: str | Iterable[str] | None = None, weight: str | None = None
               ) -> pd.DataFrame:
    """Read a CSV (``.csv``, ``.tsv``, optionally compressed) or Parquet file by its suffix.

    Parameters
    ----------
    path : str or pathlib.Path
    option : str
        The command-line option that named the file, for error messages.
    schema : Schema, optional
        The model the rows are for: in a CSV file, the columns of its categorical features
        that have stored categories are read as text (missing: an empty field, or a
        missing-value string that is not one of the categories), to be
        matched with those categories; pandas' guess would read a category "NA" as missing
        and "01" as the number 1.
    label, weight : str, list of str or None
        The label and weight columns (not features), with ``schema``.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    InputError
        Missing, unreadable (corrupt or truncated compressed file too) or empty file,
        unknown suffix.
    """
    p = _readable_file(path, option)
    name = p.name.lower()
    try:
        if _has_suffix(name, _PARQUET):
            if importlib.util.find_spec("pyarrow") is None and \
                    importlib.util.find_spec("fastparquet") is None:
                raise InputError(f"{option} {path}: reading Parquet needs pyarrow "
                                "(pip install pyarrow)")
            frame = pd.read_parquet(p)
        elif _has_suffix(name, _CSV + _TSV):
            sep = "," if _has_suffix(name, _CSV) else "\t"
            # pandas renames a repeated name ("a", "a.1"): the header as written first
            header = pd.read_csv(p, sep=sep, header=None, nrows=1, dtype=str,
                                 keep_default_na=False).iloc[0]  # "NA" is a name here
            named = header[header != ""]  # pandas names empty ones apart ("Unnamed: 3")
            repeated = named[named.duplicated()].unique().tolist()
            if repeated:
                raise InputError(f"{option} {path}: column name(s) {short(repeated)} appear "
                                 "more than once in the header")
            # the names pandas gives the columns, unnamed ones included (by position)
            columns = [h if h != "" else f"Unnamed: {i}" for i, h in enumerate(header)]
            text = {} if schema is None else \
                _category_columns(columns, schema, label, weight)
            frame = _read_csv(p, sep, header.tolist(), text)
        else:
            raise InputError(
                f"{option} {path}: unknown data format; name the file *.csv, *.tsv or "
                "*.parquet"
            )
    except InputError:
        raise
    except _read_errors() as err:  # ParserError, ArrowInvalid, a truncated .gz, ...
        raise InputError(f"{option} {path}: cannot be read: {first_line(err)}") from None
    if frame.shape[0] == 0:
        raise InputError(f"{option} {path}: has no rows")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def model_schema(mf: ModelFile) -> Schema:
    """The feature names, count and categorical features of a loaded model.

    Parameters
    ----------
    mf : ModelFile

    Returns
    -------
    Schema

    Raises
    ------
    InputError
        The file's schema cannot be read (its stored categories, for one).
    """
    try:
        return model_files.feature_schema(mf)
    except InputError as err:
        raise InputError(f"{mf.source}: {err}") from None


def _is_text(s: pd.Series) -> bool:
    return (pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)) \
        and not isinstance(s.dtype, pd.CategoricalDtype)


def _feature_lookup(columns: list[str], schema: Schema) -> dict[str, str]:
    """Feature name -> the data column that holds it (``schema.names`` is not None)."""
    lookup = {c: c for c in columns}
    if schema.stored_name is not None:  # the host may store a column's name changed
        for c in columns:
            lookup.setdefault(schema.stored_name(c), c)
    return lookup


def _category_columns(columns: list[str], schema: Schema,
                      label: str | Iterable[str] | None, weight: str | None
                      ) -> dict[str, set[str]]:
    """The data columns to read as text, each with the values the model knows in it as
    text: its categorical features with stored categories (those :func:`_match_columns`
    will pick; the others are checked there), and the label columns of a classifier whose
    classes are text."""
    labels = [label] if isinstance(label, str) else list(label or ())
    rest = [c for c in columns if c not in labels and c != weight]
    known = {i: {str(c) for c in categories} for i, categories in schema.categorical.items()
             if categories is not None}
    out: dict[str, set[str]] = {}
    if schema.classes is not None and any(isinstance(c, str) for c in schema.classes):
        out.update({c: {str(k) for k in schema.classes} for c in labels if c in columns})
    if schema.names is None:
        if len(rest) == schema.n_features:
            out.update({rest[i]: values for i, values in known.items()})
        return out
    lookup = _feature_lookup(rest, schema)
    out.update({lookup[schema.names[i]]: values for i, values in known.items()
                if schema.names[i] in lookup})
    return out


def _match_columns(frame: pd.DataFrame, schema: Schema, option: str, path: str) -> list[str]:
    """The frame's columns in the model's feature order (all other columns are dropped)."""
    columns = list(frame.columns)
    if schema.names is None:
        if len(columns) != schema.n_features:
            raise InputError(
                f"{option} {path}: {len(columns)} feature columns ({short(columns)}) but the "
                f"model has {schema.n_features} features (and no feature names to match by)"
            )
        return columns
    lookup = _feature_lookup(columns, schema)
    missing = [n for n in schema.names if n not in lookup]
    if missing:
        raise InputError(
            f"{option} {path}: missing the model's feature(s) {short(missing)} (the file's "
            f"columns: {short(columns)}; the model's features: {short(schema.names)})"
        )
    chosen = [lookup[n] for n in schema.names]
    extra = [c for c in columns if c not in set(chosen)]
    if extra:
        warn(f"{option} {path}: ignoring column(s) the model does not use: {short(extra)}")
    return chosen


def _coerce_like(values: pd.Series, categories: list) -> pd.Series:
    """``values`` converted to the type of ``categories`` (text vs numbers) where possible."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    if all(isinstance(c, str) for c in categories):
        if pd.api.types.is_numeric_dtype(values.dtype):
            def as_text(v):
                if isinstance(v, float) and v.is_integer():
                    v = int(v)
                return str(v)

            return values.map(as_text, na_action="ignore").astype(object)
        return values.astype(object)
    if all(isinstance(c, (int, float, np.number)) and not isinstance(c, bool)
           for c in categories):
        return pd.to_numeric(values, errors="coerce") if _is_text(values) else values
    if all(isinstance(c, (bool, np.bool_)) for c in categories) and _is_text(values):
        # read as text (read_table): the words pandas reads as booleans
        words = {"true": True, "false": False}
        return values.map(lambda v: words.get(v.lower(), v) if isinstance(v, str) else v,
                          na_action="ignore").astype(object)
    return values


def _true_false(s: pd.Series) -> bool:
    """True/False values with missing ones: pandas reads such a CSV or Parquet column as
    objects (``True``, ``False``, NaN or None), as its ``boolean`` dtype, or as pyarrow's
    ``bool[pyarrow]``."""
    if isinstance(s.dtype, pd.BooleanDtype):
        return True
    if isinstance(s.dtype, pd.ArrowDtype):
        return pd.api.types.is_bool_dtype(s.dtype)
    return pd.api.types.is_object_dtype(s.dtype) and _object_kind(s) == "true/false"


def _object_kind(s: pd.Series) -> str:
    """What an object column holds: ``"missing"`` (nothing else), ``"true/false"``,
    ``"text"``, ``"numbers"`` (Parquet decimals, say; booleans are not numbers here) or
    ``"mixed"`` (values of several of these kinds, or of another type: dates, bytes...)."""
    present = s.dropna()
    if len(present) == 0:
        return "missing"
    kinds = set()
    for v in present:  # a Python loop: object columns are what pandas could not type
        if isinstance(v, (bool, np.bool_)):
            kinds.add("true/false")
        elif isinstance(v, str):
            kinds.add("text")
        elif isinstance(v, (numbers.Real, decimal.Decimal)):
            kinds.add("numbers")
        else:
            return "mixed"
        if len(kinds) > 1:
            return "mixed"
    return kinds.pop()


def _unreadable(s: pd.Series, column: str, option: str, path: str, hint: str) -> InputError:
    """The error for a column of a type no host reads as a feature (dates, durations,
    intervals, complex numbers, objects of mixed types), naming it and its type."""
    if pd.api.types.is_object_dtype(s.dtype):
        types = sorted({type(v).__name__ for v in s.dropna()})
        what = f"values of type(s) {short(types)}"
    else:
        what = f"values of type {s.dtype}"
    return InputError(f"{option} {path}: column {column!r} holds {what}, which no host reads "
                      f"as a feature (they read numbers, true/false and categories){hint}")


def feature_values(s: pd.Series, column: str, option: str, path: str, *,
                   categories: bool, hint: str = "") -> pd.Series:
    """A data column as the host reads a feature, the same for every command (a feature
    with the model's stored categories excepted: :func:`prepare_data` matches those).

    Parameters
    ----------
    s : pandas.Series
        As :func:`read_table` read it; not modified.
    column, option, path : str
        The column, option and file, for error messages.
    categories : bool
        Text and category columns are categorical features (``select``, where the host is
        trained on the file): text becomes a pandas categorical, a categorical stays one.
        False: the feature is numeric (``importance`` and ``prune`` for a model that treats
        it so): text is refused, numeric categories are read as their numbers.
    hint : str
        Appended to the error for a column no host reads (what the user may do).

    Returns
    -------
    pandas.Series
        numpy ``int``/``float`` columns as they are; true/false (numpy ``bool``, objects
        ``True``/``False`` with missing values, nullable ``boolean``, ``bool[pyarrow]``) as
        float64 1/0 with missing values NaN; other numbers (nullable ``Int64``/``Float64``,
        pyarrow-backed, sparse, Parquet decimals) as float64 with missing values NaN, which
        every host reads (LightGBM refuses pyarrow-backed columns, XGBoost takes a category
        of booleans for text).

    Raises
    ------
    InputError
        Text where the feature is numeric, and values of types no host reads as a feature:
        dates, durations, periods, intervals, complex numbers, objects of mixed types.
    """
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        kind = dtype.categories.dtype
        if pd.api.types.is_bool_dtype(kind) or (pd.api.types.is_object_dtype(kind) and
                                                _object_kind(dtype.categories.to_series())
                                                == "true/false"):
            return _one_zero(s)
        if categories:
            if (pd.api.types.is_numeric_dtype(kind) and not pd.api.types.is_complex_dtype(kind)) \
                    or _text_values(dtype.categories.to_series()):
                if isinstance(kind, pd.ArrowDtype):  # as text, above
                    plain = pd.Index(dtype.categories.to_numpy(dtype=object)).infer_objects()
                    return s.astype(object).astype(pd.CategoricalDtype(plain, dtype.ordered))
                return s
            raise _unreadable(s.astype(object), column, option, path, hint)
        try:
            return s.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(
                f"{option} {path}: column {column!r} is categorical, but the model treats "
                "it as a numeric feature"
            ) from None
    if pd.api.types.is_bool_dtype(dtype) or _true_false(s):  # 1/0; a missing value NaN
        return _one_zero(s)
    if pd.api.types.is_complex_dtype(dtype):
        raise _unreadable(s, column, option, path, hint)
    if pd.api.types.is_numeric_dtype(dtype):
        if isinstance(dtype, np.dtype):  # the numbers as they are
            return s
        return pd.Series(s.to_numpy(dtype=np.float64, na_value=np.nan), index=s.index,
                         name=s.name)
    if pd.api.types.is_object_dtype(dtype):
        kind = _object_kind(s)
        if kind in ("missing", "numbers"):  # a Parquet null or decimal column
            return pd.Series(pd.to_numeric(s.astype(object), errors="raise"), index=s.index,
                             name=s.name).astype(np.float64)
        if kind == "mixed":
            raise _unreadable(s, column, option, path, hint)
    if _is_text(s):
        if categories:  # categories of plain text (HistGradientBoosting's encoder refuses
            return s.astype(object).astype("category")  # pyarrow strings with nulls)
        raise InputError(
            f"{option} {path}: column {column!r} holds text, but the model treats it as "
            "a numeric feature"
        )
    raise _unreadable(s, column, option, path, hint)


def _one_zero(s: pd.Series) -> pd.Series:
    """True/False values (any dtype: object, ``boolean``, ``bool[pyarrow]``, categories) as
    float64 1/0, missing values (None, NaN, ``pd.NA``) as NaN."""
    values = s.astype(object).to_numpy()
    present = ~pd.isna(values)
    out = np.full(len(values), np.nan)
    out[present] = values[present].astype(np.float64)
    return pd.Series(out, index=s.index, name=s.name)


def _text_values(s: pd.Series) -> bool:
    """``s`` holds text: a string dtype, or objects that are all strings."""
    if pd.api.types.is_object_dtype(s.dtype):
        return _object_kind(s) == "text"
    return _is_text(s)


def _to_category(values: pd.Series, categories: list | None, column: str, option: str,
                 path: str, unseen_as_missing: bool = True) -> pd.Series:
    if categories is None:  # the model stores no categories: the data holds integer codes
        if _is_text(values):
            raise InputError(
                f"{option} {path}: column {column!r} holds text, but the model stores no "
                "category names for it: give the integer category codes it was trained with"
            )
        if isinstance(values.dtype, pd.CategoricalDtype):
            return values
        codes = pd.to_numeric(values, errors="coerce")
        top = codes.max()
        n_codes = int(top) + 1 if pd.notna(top) and top >= 0 else 0
        return pd.Series(pd.Categorical(codes.where(codes >= 0), categories=range(n_codes)),
                         index=values.index, name=values.name)
    coerced = _coerce_like(values, categories)
    known = coerced.isin(categories)
    # a value that does not convert to the categories' type (text for numbers) is unseen too
    unseen = values.notna().to_numpy() & ~known.to_numpy()
    if unseen.any():
        def listed(vs, most):
            vs = [v.item() if isinstance(v, np.generic) else v for v in vs]
            return ", ".join(map(repr, vs[:most])) + (", ..." if len(vs) > most else "")

        shown, known_shown = listed(pd.unique(values[unseen]), 5), listed(categories, 10)
        what = (f"{option} {path}: {int(unseen.sum())} value(s) of column {column!r} are not "
                f"among the categories the model was trained with ({shown}; the model's: "
                f"{known_shown})")
        if not unseen_as_missing:
            raise InputError(f"{what}: XGBoost refuses categories it never saw")
        if unseen.all():
            raise InputError(f"{what}: none of the column's values is one (all would be read "
                             "as missing)")
        warn(f"{what}; they are read as missing values, as the host predicts them")
    return pd.Series(pd.Categorical(coerced.where(known), categories=categories),
                     index=values.index, name=values.name)


def weight_values(column: pd.Series, option: str, path: str) -> np.ndarray:
    """A weight column as float64; missing or non-numeric values are refused."""
    w = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(w).any():
        raise InputError(f"{option} {path}: weight column {column.name!r} has missing or "
                         "non-numeric values")
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        raise InputError(f"{option} {path}: weight column {column.name!r} must be finite and "
                         f"non-negative: {bad.size} value(s) are not, the first "
                         f"{w[bad[0]]:g} in data row {bad[0] + 1}")
    return w


def prepare_data(frame: pd.DataFrame, schema: Schema, label: str | list[str],
                 weight: str | None, option: str, path: str
                 ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray | None]:
    """Split a data file into features (in the model's order and types), labels and weights.

    Parameters
    ----------
    frame : pandas.DataFrame
        As read by :func:`read_table`; not modified.
    schema : Schema
        :func:`model_schema` of the model.
    label : str or list of str
        Label column(s): several for a multi-target model (labels ``(n, T)``).
    weight : str or None
        Weight column.
    option, path : str
        The option and file name, for error messages.

    Returns
    -------
    X : pandas.DataFrame
        The model's features, in its order; categorical features as pandas categoricals with
        the model's categories where the model stores them.
    y : numpy.ndarray
    w : numpy.ndarray or None

    Raises
    ------
    InputError
        Missing label, weight or feature columns, missing labels, text in a numeric feature.
    """
    labels = [label] if isinstance(label, str) else list(label)
    for kind, col in [("label", c) for c in labels] + [("weight", weight)]:
        if col is not None and col not in frame.columns:
            raise InputError(
                f"{option} {path}: no {kind} column {col!r} (columns: {short(list(frame))})"
            )
    if len(set(labels)) < len(labels) or weight in labels:
        named = ", ".join(map(repr, labels)) + ("" if weight is None else f", weight {weight!r}")
        raise InputError(f"{option} {path}: a column is named twice among the label and "
                         f"weight columns ({named})")
    text_labels = False
    for col in labels:
        y = frame[col]
        text = _is_text(y) or isinstance(y.dtype, pd.CategoricalDtype)
        if text and (not schema.text_labels or len(labels) > 1):
            raise InputError(f"{option} {path}: label column {col!r} must hold numbers")
        text_labels = text_labels or text
        missing = np.flatnonzero(y.isna().to_numpy())
        if missing.size:
            raise InputError(f"{option} {path}: label column {col!r} has {missing.size} "
                             f"missing value(s), the first in data row {missing[0] + 1}")
    y = frame[labels[0]] if len(labels) == 1 else frame[labels]
    w = None if weight is None else weight_values(frame[weight], option, path)
    rest = frame.drop(columns=[c for c in (*labels, weight) if c is not None])
    X = rest[_match_columns(rest, schema, option, path)].copy()
    for i, column in enumerate(X.columns):
        s = X[column]
        if i in schema.categorical:
            X[column] = _to_category(s, schema.categorical[i], column, option, path,
                                     schema.unseen_as_missing)
        else:
            X[column] = feature_values(s, column, option, path, categories=False,
                                       hint="; give the numbers the model was trained with")
    return X, y.to_numpy(dtype=object if text_labels else np.float64), w
