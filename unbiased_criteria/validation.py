"""Checks of user input: one clear error naming the argument, nothing modified in place."""

from __future__ import annotations

import numpy as np

from .objectives import Objective

__all__ = ["check_labels", "check_weight", "check_pair"]


def check_pair(X, y, x_name: str, y_name: str) -> None:
    """``X`` and ``y`` are given together or not at all."""
    if (X is None) != (y is None):
        raise ValueError(f"pass both {x_name} and {y_name}, or neither")


def check_labels(y, n_rows: int, argument: str, objective: Objective) -> np.ndarray:
    """Labels as a new float64 array of length ``n_rows``, in the objective's domain."""
    try:
        arr = np.array(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{argument} must be numeric labels") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{argument} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{argument} is empty")
    if arr.size != n_rows:
        raise ValueError(f"{argument} has {arr.size} labels but the data has {n_rows} rows")
    if np.isnan(arr).any():
        raise ValueError(f"{argument} contains NaN labels")
    objective.check_labels(arr, argument)
    return arr


def check_weight(w, n_rows: int, argument: str) -> np.ndarray | None:
    """Weights as a new float64 array of length ``n_rows``: finite and non-negative."""
    if w is None:
        return None
    arr = np.array(w, dtype=np.float64).reshape(-1)
    if arr.size != n_rows:
        raise ValueError(f"{argument} has {arr.size} weights but the data has {n_rows} rows")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{argument} must be finite and non-negative")
    return arr
