"""Checks of user input: one clear error naming the argument, nothing modified in place."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .objectives import Objective

__all__ = [
    "encode_classes", "check_labels", "check_weight", "check_pair", "check_matrix",
    "check_column_names",
]


def check_pair(X, y, x_name: str, y_name: str) -> None:
    """``X`` and ``y`` are given together or not at all."""
    if (X is None) != (y is None):
        raise ValueError(f"pass both {x_name} and {y_name}, or neither")


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
    arr = np.array(w, dtype=np.float64).reshape(-1)
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
