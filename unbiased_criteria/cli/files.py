"""The command's input files: model files (through :mod:`unbiased_criteria.model_files`) and
data tables (CSV or Parquet) matched to the model's features."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from .. import model_files
from ..errors import InputError
from ..model_files import ModelFile, Schema
from .output import first_line, short, warn

__all__ = ["load_model", "model_schema", "read_table", "prepare_data", "weight_values"]


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


def read_table(path: str | Path, option: str = "data") -> pd.DataFrame:
    """Read a CSV (``.csv``, ``.tsv``, optionally compressed) or Parquet file by its suffix.

    Parameters
    ----------
    path : str or pathlib.Path
    option : str
        The command-line option that named the file, for error messages.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    InputError
        Missing, unreadable or empty file, unknown suffix.
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
            frame = pd.read_csv(p, sep=sep)
        else:
            raise InputError(
                f"{option} {path}: unknown data format; name the file *.csv, *.tsv or "
                "*.parquet"
            )
    except InputError:
        raise
    except (ValueError, OSError, ImportError) as err:  # ParserError, ArrowInvalid, ...
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
    lookup = {c: c for c in columns}
    if schema.stored_name is not None:  # the host may store a column's name changed
        for c in columns:
            lookup.setdefault(schema.stored_name(c), c)
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
    return values


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
        elif _is_text(s):
            raise InputError(
                f"{option} {path}: column {column!r} holds text, but the model treats it as "
                "a numeric feature"
            )
        elif isinstance(s.dtype, pd.CategoricalDtype):
            try:
                X[column] = s.astype(np.float64)
            except (TypeError, ValueError):
                raise InputError(
                    f"{option} {path}: column {column!r} is categorical, but the model treats "
                    "it as a numeric feature"
                ) from None
        elif s.dtype == bool:
            X[column] = s.astype(np.float64)
    return X, y.to_numpy(dtype=object if text_labels else np.float64), w
