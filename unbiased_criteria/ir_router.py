"""Routing rows by the IR's own decision rules, for models without a host object (dumps).

The adapters route with the host's ``pred_leaf``; a dumped model has no Booster, so its rows
go through :func:`unbiased_criteria.trees.route_rows` (the hosts' exact rules, level by level,
vectorised over rows), a slice of rows at a time within the memory budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .dumps import printed_bounds, significant_digits
from .model import Router, chunk_size
from .trees import Forest, route_rows
from .validation import check_column_names

__all__ = ["make_ir_router", "dense_features", "rows_near_thresholds"]


def dense_features(
    X: Any,
    forest: Forest,
    argument: str,
    *,
    feature_dtype: type,
    sparse_missing: bool,
    categories: Mapping[int, Sequence] | None = None,
    stored_name=None,
) -> np.ndarray:
    """``X`` as a dense float64 array of the model's features (NaN = missing), as the host
    reads it: values rounded to ``feature_dtype`` (XGBoost compares float32).

    A DataFrame's columns must carry the model's feature names (in order); a category column
    gives the position of each value in the model's stored ``categories`` of that feature,
    else its own codes; absent sparse entries are missing (``sparse_missing``, XGBoost) or 0
    (LightGBM). ``X`` is not modified.
    """
    if X is None:
        raise ValueError(f"{argument} is required")
    names = list(forest.feature_names)
    if isinstance(X, pd.DataFrame):
        columns = [str(c) for c in X.columns]
        mapped = [stored_name(c) for c in columns] if stored_name else columns
        if len(columns) != forest.n_features:
            raise ValueError(f"{argument} has {len(columns)} features but the model expects "
                             f"{forest.n_features}")
        default = names == [f"Column_{i}" for i in range(len(names))] or \
            names == [f"f{i}" for i in range(len(names))]
        if not default:
            check_column_names(mapped, names, argument, shown=columns)
        out = np.empty(X.shape, dtype=np.float64)
        for j in range(X.shape[1]):
            col = X.iloc[:, j]
            if isinstance(col.dtype, pd.CategoricalDtype):
                stored = (categories or {}).get(j)
                codes = (pd.Categorical(col, categories=stored).codes if stored is not None
                         else col.cat.codes.to_numpy())
                out[:, j] = np.where(codes < 0, np.nan, codes)
            else:
                try:
                    out[:, j] = pd.to_numeric(col, errors="raise").to_numpy(np.float64,
                                                                          na_value=np.nan)
                except (TypeError, ValueError):
                    raise ValueError(f"{argument} column {columns[j]!r} must hold numbers or "
                                     "pandas categories") from None
    elif sparse.issparse(X):
        if X.shape[1] != forest.n_features:
            raise ValueError(f"{argument} has {X.shape[1]} features but the model expects "
                             f"{forest.n_features}")
        csr = sparse.csr_matrix(X, dtype=np.float64)
        out = np.full(csr.shape, np.nan if sparse_missing else 0.0)
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        out[rows, csr.indices] = csr.data
    else:
        try:
            out = np.array(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{argument} must be a 2-D numeric array") from None
        if out.ndim != 2 or out.shape[1] != forest.n_features:
            raise ValueError(f"{argument} has shape {out.shape}; the model expects "
                             f"{forest.n_features} features")
    if out.shape[0] == 0:
        raise ValueError(f"{argument} is empty (0 rows)")
    return out.astype(feature_dtype).astype(np.float64)


def rows_near_thresholds(forest: Forest, X: np.ndarray, feature_dtype: type,
                         printed: Sequence[np.ndarray]) -> int:
    """Rows of dense ``X`` with a value that lies within the printed precision of a numeric
    threshold on that feature (:func:`unbiased_criteria.dumps.printed_bounds`; the precision
    is the most significant digits any threshold shows): the model the dump came from may
    route them differently. Counted whether or not the row reaches that node.

    ``printed[t]`` holds tree ``t``'s thresholds as the dump printed them (per node, NaN at
    leaves and categorical nodes), before any rounding to ``feature_dtype``.
    """
    near = np.zeros(X.shape[0], dtype=bool)
    numeric = [t.internal_nodes[~t.categorical[t.internal_nodes]] for t in forest.trees]
    values = [np.asarray(p, dtype=np.float64)[inner] for p, inner in zip(printed, numeric)]
    if not values:
        return 0
    digits = significant_digits(np.concatenate(values))
    low, high = printed_bounds(np.concatenate(values), feature_dtype, digits)
    feats = np.concatenate([t.feature[inner] for t, inner in zip(forest.trees, numeric)])
    wide = low < high
    feats, lows, highs = feats[wide], low[wide], high[wide]
    for f in np.unique(feats):  # one sorted search per feature, not per threshold
        sel = feats == f
        lo, hi = lows[sel], highs[sel]
        order = np.argsort(lo)
        lo, hi = lo[order], np.maximum.accumulate(hi[order])
        x = X[:, f]
        pos = np.searchsorted(lo, x, side="right") - 1  # last interval starting at or below x
        inside = (pos >= 0) & (x < hi[np.maximum(pos, 0)])
        near |= inside & ~np.isnan(x)
    return int(near.sum())


def make_ir_router(forest: Forest, X: np.ndarray, *, memory_budget: int,
                   near_threshold: int = 0) -> Router:
    """A :class:`~unbiased_criteria.model.Router` over dense float ``X`` by the IR's rules.

    Leaf ids of all rows for ``chunk`` trees fit a third of ``memory_budget``; the rest
    bounds the rows routed at once (routing keeps a few arrays per row).
    """
    n_rows = X.shape[0]
    chunk = chunk_size(n_rows, max(forest.n_trees, 1), memory_budget // 3)
    rows = int(max(1024, (memory_budget // 3) // 64))

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise IndexError(f"tree range [{start}, {stop}) outside [0, {forest.n_trees})")
        out = np.empty((n_rows, stop - start), dtype=np.int32)
        for r0 in range(0, n_rows, rows):
            part = X[r0:r0 + rows]
            for j, t in enumerate(range(start, stop)):
                out[r0:r0 + rows, j] = route_rows(forest.trees[t], part)
        return out

    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=chunk,
                  near_threshold=near_threshold)
