"""Route rows through a LightGBM model's trees with LightGBM's own ``predict(pred_leaf=True)``.

LightGBM numbers the leaves of a tree ``0 .. L-1``; the router adds ``L - 1`` to give IR node
ids (:mod:`~unbiased_criteria.adapters.lightgbm.source`).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import lightgbm
import numpy as np
import pandas as pd
from scipy import sparse
from unbiased_criteria.adapters.lightgbm.bins import histogram_bins
from unbiased_criteria.adapters.lightgbm.source import LightGBMSource, booster_of

from unbiased_criteria.model import Model, Router, chunk_size, host_call_trees
from unbiased_criteria.trees import Forest
from unbiased_criteria.validation import check_column_names, check_matrix

__all__ = ["make_router", "predict_lock"]

#: one lock per Booster object (weakly held: the lock goes with the Booster)
_PREDICT_LOCKS: weakref.WeakKeyDictionary[lightgbm.Booster, threading.Lock] = (
    weakref.WeakKeyDictionary())
_PREDICT_LOCKS_GUARD = threading.Lock()


def predict_lock(booster: lightgbm.Booster) -> threading.Lock:
    """The lock that every LightGBM ``predict`` the library makes on ``booster`` holds.

    ``Booster.predict`` is not thread-safe on one Booster: each call sets the Booster's
    shared prediction range (``GBDT::InitPredict``: start and number of iterations) and
    then reads it, so two threads predicting different iterations at once get each other's
    trees' leaves (or crash the process). The engines route from several threads on one
    Booster (scoring threads, a Dask worker's tasks); LightGBM's own OpenMP threads make a
    predict call parallel, so serialising the calls costs little.

    Parameters
    ----------
    booster : lightgbm.Booster

    Returns
    -------
    threading.Lock
        The same lock for the same Booster object, as long as it lives.
    """
    with _PREDICT_LOCKS_GUARD:
        lock = _PREDICT_LOCKS.get(booster)
        if lock is None:
            lock = _PREDICT_LOCKS[booster] = threading.Lock()
        return lock


def _check_X(X: Any, forest: Forest, argument: str, pandas_categorical: list | None = None
             ) -> Any:
    """Validate ``X`` against the model; return it (numpy converted, never modified)."""
    X = check_matrix(X, forest.n_features, argument)
    if sparse.issparse(X) and X.format not in ("csr", "csc"):
        X = sparse.csr_matrix(X)  # LightGBM predicts from CSR or CSC only (a new object)
    model_names = list(forest.feature_names)
    default = model_names == [f"Column_{i}" for i in range(forest.n_features)]
    if isinstance(X, pd.DataFrame) and not default:
        # LightGBM stores spaces in feature names as underscores
        columns = [str(c) for c in X.columns]
        check_column_names([c.replace(" ", "_") for c in columns], model_names, argument,
                           shown=columns)
    if isinstance(X, pd.DataFrame) and pandas_categorical is not None:
        # LightGBM maps the category columns to its stored categories by position and, when
        # their count differs, says only "train and valid dataset categorical_feature do not
        # match", naming neither the argument nor the columns
        cat_cols = [str(c) for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
        if len(cat_cols) != len(pandas_categorical):
            raise ValueError(
                f"{argument} has {len(cat_cols)} pandas category column(s) "
                f"({', '.join(cat_cols) or 'none'}) but the model was trained with "
                f"{len(pandas_categorical)}: give the model's categorical features the "
                "category dtype, as when it was trained")
    if isinstance(X, pd.DataFrame):
        # LightGBM's own error names neither the argument nor what it reads
        bad = [f"{c!s} ({dt})" for c, dt in X.dtypes.items()
               if not (isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_numeric_dtype(dt)
                       or pd.api.types.is_bool_dtype(dt))]
        if bad:
            raise ValueError(f"{argument} has column(s) LightGBM cannot read: "
                             f"{', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}; it reads "
                             "int, float, bool and category columns")
        if any(isinstance(dt, pd.ArrowDtype) for dt in X.dtypes):
            # LightGBM refuses pyarrow-backed columns ("pandas dtypes must be int, float or
            # bool"): read as the float64 it would make of them, nulls as missing (a new
            # frame), by position (labels may be integers)
            X = X.copy(deep=False)
            for i, dt in enumerate(X.dtypes):
                if isinstance(dt, pd.ArrowDtype):
                    X.isetitem(i, X.iloc[:, i].to_numpy(dtype=np.float64, na_value=np.nan))
    return X


def make_router(
    model: lightgbm.Booster | lightgbm.LGBMModel,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the model's trees with LightGBM's own ``pred_leaf``.

    Parameters
    ----------
    model : lightgbm.Booster or fitted lightgbm.LGBMModel
        The model that ``model_ir`` was read from.
    model_ir : Model
        ``read_model(model)``.
    X : numpy array, pandas DataFrame (category columns included) or scipy sparse matrix
        Not modified. DataFrames are handed to LightGBM as they are (it maps pandas
        categories itself).
    argument : str
        Name of ``X`` in error messages (``"X_valid"``).
    memory_budget : int
        Bytes one routing call may use: LightGBM's float64 leaf array and its int32 copy.

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR leaf node ids; ``chunk`` is a multiple of the
        trees per iteration, since LightGBM selects trees by iteration.
    """
    booster = booster_of(model)
    source = model_ir.source
    forest = model_ir.forest
    if not isinstance(source, LightGBMSource):
        raise TypeError("model_ir must come from unbiased_criteria.adapters.lightgbm.read_model")
    n_trees = forest.n_trees
    if booster.num_trees() != n_trees or source.n_leaves.size != n_trees:
        raise ValueError(
            f"model has {booster.num_trees()} trees but model_ir has {n_trees}: "
            "model_ir must be read_model(model)"
        )
    X = _check_X(X, forest, argument, getattr(booster, "pandas_categorical", None))
    n_rows = int(X.shape[0])
    K = booster.num_model_per_iteration()
    # predict(pred_leaf=True) fills a float64 array, then casts it to int32: 12 bytes a leaf id
    chunk = chunk_size(n_rows, n_trees, memory_budget // 3)
    chunk = min(chunk, host_call_trees(n_rows, 8))  # LightGBM's ids are float64
    # LightGBM selects whole iterations: keep chunks aligned to K trees
    chunk = max(K, chunk // K * K) if n_trees >= K else max(chunk, 1)
    offset = (source.n_leaves - 1).astype(np.int32)
    lock = predict_lock(booster)

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= n_trees:
            raise IndexError(f"tree range [{start}, {stop}) outside [0, {n_trees})")
        it0, it1 = start // K, -(-stop // K)
        with lock:  # predict on a shared Booster is not thread-safe (predict_lock)
            leaves = booster.predict(
                X, start_iteration=it0, num_iteration=it1 - it0, pred_leaf=True
            )
        leaves = np.asarray(leaves).reshape(n_rows, -1)
        leaves = leaves[:, start - it0 * K : stop - it0 * K]
        if leaves.dtype == np.int32 and leaves.flags.writeable:  # a fresh array of ours
            leaves += offset[start:stop]  # in place: no second array of the chunk
            return leaves
        return (leaves + offset[start:stop]).astype(np.int32, copy=False)

    def bins():
        return histogram_bins(X, source, getattr(booster, "pandas_categorical", None))

    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=chunk, histogram_bins=bins)
