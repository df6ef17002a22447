"""Checks of user input: one clear error naming the argument, nothing modified in place."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .objectives import Objective

__all__ = [
    "class_weights", "encode_classes", "check_labels", "check_weight", "check_pair",
    "check_matrix", "check_column_names", "same_rows",
    "training_rows_held_out",
]

#: rows compared by :func:`same_rows`
_PROBE_ROWS = 32


def check_pair(X, y, x_name: str, y_name: str) -> None:
    """``X`` and ``y`` are given together or not at all."""
    if (X is None) != (y is None):
        raise ValueError(f"pass both {x_name} and {y_name}, or neither")


def class_weights(class_weight, classes, y_train: np.ndarray | None) -> np.ndarray:
    """Each class's weight (indexed as ``classes``) under a classifier's ``class_weight``, as
    scikit-learn's ``compute_sample_weight`` gives it (LightGBM and HistGradientBoosting
    multiply their training weights by it): a dict keyed by label (absent labels 1), or
    ``"balanced"``, ``n / (K * count)`` over the encoded training labels ``y_train``.
    """
    classes = np.asarray(classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be a dict, 'balanced' or None, got "
                             f"{class_weight!r}")
        counts = np.bincount(np.asarray(y_train, dtype=np.int64), minlength=classes.size)
        with np.errstate(divide="ignore"):
            out = y_train.size / (classes.size * counts.astype(np.float64))
        return np.where(counts > 0, out, 1.0)
    weights = dict(class_weight)
    return np.array([float(weights.get(c.item() if hasattr(c, "item") else c, 1.0))
                     for c in classes])


def encode_classes(y, classes, argument: str) -> np.ndarray:
    """Labels as the indices 0..K-1 of ``classes`` (a fitted classifier's ``classes_``).

    A scikit-learn classifier trains its booster on the indices of its ``classes_``, whatever
    the labels are (strings, or integers such as 1, 2): the labels the user has must go through
    the same map. Raises ``ValueError`` naming ``argument`` and the labels not in ``classes``.
    """
    values = y.to_numpy() if isinstance(y, (pd.Series, pd.DataFrame)) else np.asarray(y)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim == 2:  # a multi-label classifier (XGBoost): every column through classes_
        return encode_classes(values.reshape(-1), classes, argument).reshape(values.shape)
    if values.ndim != 1:
        raise ValueError(f"{argument} must be one-dimensional, got shape {values.shape}")
    index = pd.Index(np.asarray(classes))
    if values.dtype == bool and index.dtype.kind in "iuf":
        # XGBoost fits booleans as the classes 0 and 1 (pandas does not match True to 1)
        values = values.astype(index.dtype)
    elif index.dtype == bool and values.dtype.kind in "iuf":
        # fitted on booleans, given 0 and 1 (as numpy compares them: 1 == True); any other
        # number stays, to be named below
        binary = np.isin(values, (0, 1))
        if binary.all():
            values = values.astype(bool)
        else:
            values = values.astype(object)
            values[binary] = values[binary] == 1
    codes = index.get_indexer(values)
    unseen = codes < 0
    if unseen.any():
        shown = ", ".join(repr(v) for v in np.asarray(pd.unique(values[unseen]))[:5].tolist())
        raise ValueError(
            f"{argument} holds labels the classifier was not fitted on ({shown}); its "
            f"classes_ are {index.tolist()}"
        )
    return codes.astype(np.float64)


def check_labels(y, n_rows: int, argument: str, objective: Objective) -> np.ndarray:
    """Labels as a new float64 array of length ``n_rows`` (``(n_rows, T)`` for an objective
    of ``T`` label columns), in the objective's domain."""
    try:
        arr = np.array(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{argument} must be numeric labels") from None
    columns = objective.label_columns
    if columns > 1:  # a multi-target model: one label column per target
        if arr.ndim != 2 or arr.shape[1] != columns:
            raise ValueError(f"{argument} must have shape (n_rows, {columns}) for a model of "
                             f"{columns} targets, got shape {arr.shape}")
    else:
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise ValueError(f"{argument} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{argument} is empty")
    if arr.shape[0] != n_rows:
        what = "labels" if arr.ndim == 1 else "rows of labels"
        raise ValueError(f"{argument} has {arr.shape[0]} {what} but the data has {n_rows} rows")
    if np.isnan(arr).any():
        raise ValueError(f"{argument} contains NaN labels")
    _check_float32_range(arr, argument, "labels")
    objective.check_labels(arr, argument)
    return arr


def _check_float32_range(arr: np.ndarray, argument: str, what: str) -> None:
    """The hosts store labels and weights, and compute gradients, in float32: a finite value
    beyond its range would become inf there (numpy's overflow warning, then an error about
    non-finite gradients that does not name the argument)."""
    big = np.finfo(np.float32).max
    if arr.size and np.isfinite(arr).all() and np.abs(arr).max() > big:
        raise ValueError(f"{argument} has {what} beyond the float32 range the hosts compute "
                         f"in (largest {np.abs(arr).max():.3g} > {big:.3g})")


def check_weight(w, n_rows: int, argument: str) -> np.ndarray | None:
    """Weights as a new float64 array of length ``n_rows``: finite and non-negative."""
    if w is None:
        return None
    # text converts to one float ('1.5') or fails with numpy's words, naming nothing
    if isinstance(w, str | bytes):
        raise ValueError(f"{argument} must be an array of numbers (one weight per row), got "
                         f"{w[:40]!r}")
    try:
        arr = np.array(w, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{argument} must be an array of numbers (one weight per row), got "
                         f"a {type(w).__name__} that does not convert to one") from None
    if arr.size != n_rows:
        raise ValueError(f"{argument} has {arr.size} weights but the data has {n_rows} rows")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{argument} must be finite and non-negative")
    _check_float32_range(arr, argument, "weights")
    return arr


def check_matrix(X: Any, n_features: int, argument: str) -> Any:
    """``X`` checked as a 2-D, non-empty table of ``n_features`` columns.

    DataFrames and scipy sparse matrices are returned as they are; anything else as a numpy
    array of numbers (a view or a new array, never the caller's object changed).
    """
    if X is None:
        raise ValueError(f"{argument} is required")
    if isinstance(X, pd.Series):
        raise ValueError(f"{argument} must be 2-D (rows x features), got a pandas Series")
    if not (isinstance(X, pd.DataFrame) or sparse.issparse(X)):
        try:
            X = np.asarray(X)
        except (TypeError, ValueError):
            raise ValueError(f"{argument} must be a 2-D numeric array") from None
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{argument} must hold numbers, got dtype {X.dtype}")
    if len(X.shape) != 2:
        raise ValueError(f"{argument} must be 2-D (rows x features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"{argument} is empty (0 rows)")
    if X.shape[1] != n_features:
        raise ValueError(
            f"{argument} has {X.shape[1]} features but the model expects {n_features}"
        )
    return X


def check_column_names(columns, expected, argument: str, shown=None) -> None:
    """Column names must equal the model's feature names, in order.

    ``shown`` are the names to quote in the error (the caller's own, when ``columns`` were
    normalised as the host stores them).
    """
    columns, expected = list(columns), list(expected)
    if columns != expected:
        i = next(i for i, (a, b) in enumerate(zip(columns, expected)) if a != b)
        name = list(shown)[i] if shown is not None else columns[i]
        raise ValueError(
            f"{argument}'s column names do not match the model's feature names (in order): "
            f"column {i} is {name!r}, the model's is {expected[i]!r}"
        )


def _probe_rows(X: Any) -> Any:
    """The :data:`_PROBE_ROWS` evenly spaced rows of ``X`` that :func:`same_rows` compares."""
    n = np.shape(X)[0]
    return _rows_at(X, np.unique(np.linspace(0, n - 1, min(n, _PROBE_ROWS)).astype(np.intp)))


def _rows_at(X: Any, idx: np.ndarray) -> Any:
    if isinstance(X, pd.DataFrame):
        return X.iloc[idx].reset_index(drop=True)
    if sparse.issparse(X):
        return sparse.csr_matrix(X)[idx].toarray()
    return np.asarray(X)[idx]


def _numbers(dtype: Any) -> bool:
    """Whether a column of ``dtype`` holds numbers: numeric, boolean, or categories that are
    numbers (their values, as ``to_numpy()`` gives them, are what is compared)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return _numbers(dtype.categories.dtype)
    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def _comparable(x: Any) -> np.ndarray | None:
    """``x``'s values as an array: float64 where they are numbers (so that a copy in other
    dtypes or another container compares equal: a DataFrame with numeric categories and its
    ``to_numpy()`` too), None for a table holding other columns."""
    if isinstance(x, pd.DataFrame):
        if not all(_numbers(d) for d in x.dtypes):
            return None
        return np.column_stack([x[c].to_numpy(dtype=np.float64, na_value=np.nan)
                                for c in x.columns]) if x.shape[1] else np.empty(x.shape)
    x = np.asarray(x)
    if x.dtype.kind == "O":  # numbers held as objects (to_numpy() of a mixed frame)
        try:
            return x.astype(np.float64)
        except (TypeError, ValueError):
            return x
    return x.astype(np.float64) if x.dtype.kind in "biuf" else x


def _same(a: Any, b: Any) -> bool:
    both_frames = isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame)
    if both_frames and (not a.columns.equals(b.columns) or a.equals(b)):
        return a.columns.equals(b.columns)
    a, b = _comparable(a), _comparable(b)
    if a is None or b is None or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def same_rows(X_train: Any, y_train: np.ndarray, X_valid: Any, y_valid: np.ndarray) -> bool:
    """Whether the held-out rows are the training rows.

    ``U`` is unbiased only because its ratios come from rows that did not choose the
    splits; on the training rows it is the biased gain again, and nothing in the numbers
    says so. True for the same object, arrays sharing memory, or tables of the same shape
    whose labels and :data:`_PROBE_ROWS` evenly spaced rows are equal (distinct samples of
    real data agree on so many rows only when every row is the same). A cheap first test:
    the same rows in another order, or in part, are found by their hashes
    (:mod:`unbiased_criteria.row_sets`).
    """
    if X_valid is X_train:
        return True
    if isinstance(X_train, np.ndarray) and isinstance(X_valid, np.ndarray) \
            and X_train.shape == X_valid.shape and np.shares_memory(X_train, X_valid):
        return True
    if np.shape(X_train) != np.shape(X_valid) or not _same(y_train, y_valid):
        return False
    return _same(_probe_rows(X_train), _probe_rows(X_valid))


def check_unique_names(names: Any, argument: str) -> None:
    """Evaluation sets' names must differ: the training hooks keep each set's results by
    name, and one would replace another (``ValueError`` naming ``argument``)."""
    names = [str(n) for n in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{argument}: each set needs its own name, got {repeated} more than "
                         "once")


def training_rows_held_out(needed_for: str, stacklevel: int, part: bool = False) -> None:
    """What :func:`same_rows` being true means (``part``: every held-out row is a training
    row, but not every training row is held out): ``prune`` refuses (every split would score
    above 0 and be kept), importance warns (``biased_gain`` on given rows is a quantity of
    its own, e.g. the gain on held-out rows when both are held-out rows)."""
    what = ("every row of X_valid is a row of X_train" if part
            else "X_valid holds the same rows as X_train")
    message = (f"{what}: the unbiased gain needs held-out rows that did not train the model "
               "(on the training rows it is the biased gain again)")
    if needed_for == "prune":
        raise ValueError(f"{message}; pass other rows, or X_train=None, y_train=None to "
                         "score the held-out rows alone")
    warnings.warn(f"{message}: unbiased_gain is not unbiased here; biased_gain is the gain "
                  "on these rows", UserWarning, stacklevel=stacklevel + 1)
