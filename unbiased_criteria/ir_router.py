"""Routing rows by the IR's own decision rules, for models without a host object (dumps).

The adapters route with the host's ``pred_leaf``; a dumped model has no Booster, so its rows
go through :func:`unbiased_criteria.trees.route_rows` (the hosts' exact rules, level by level,
vectorised over rows), read from ``X`` and routed a slice of rows at a time within the memory
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .dumps import printed_bounds, significant_digits
from .model import Router, chunk_size
from .trees import Forest, route_rows
from .validation import check_column_names, check_matrix

__all__ = ["DenseRows", "make_ir_router", "dense_features", "rows_near_thresholds"]


@dataclass(frozen=True)
class DenseRows:
    """The model's features of a slice of rows at a time, as a dense float64 array (NaN =
    missing), so that no dense copy of all rows is ever held."""

    n_rows: int
    #: rows per slice within the memory budget
    step: int
    read: Callable[[int, int], np.ndarray]

    def slices(self):
        """Yield ``(start, stop, dense rows)`` over all rows, ``step`` rows at a time."""
        for r0 in range(0, self.n_rows, self.step):
            r1 = min(r0 + self.step, self.n_rows)
            yield r0, r1, self.read(r0, r1)


def dense_features(
    X: Any,
    forest: Forest,
    argument: str,
    *,
    feature_dtype: type,
    sparse_missing: bool,
    categories: Mapping[int, Sequence] | None = None,
    stored_name=None,
    memory_budget: int = 512 * 2**20,
) -> DenseRows:
    """``X`` read as the host reads it, a slice of rows at a time (:class:`DenseRows`):
    values rounded to ``feature_dtype`` (XGBoost compares float32).

    A DataFrame's columns must carry the model's feature names (in order); a category column
    gives the position of each value in the model's stored ``categories`` of that feature,
    else its own codes; absent sparse entries are missing (``sparse_missing``, XGBoost) or 0
    (LightGBM). ``X`` is not modified. A slice holds at most a third of ``memory_budget``
    (its dense copies and the routing's arrays).
    """
    names = list(forest.feature_names)
    n = forest.n_features
    X = check_matrix(X, n, argument)  # 2-D, rows, n columns; numbers unless a frame or sparse
    if isinstance(X, pd.DataFrame):
        columns = [str(c) for c in X.columns]
        mapped = [stored_name(c) for c in columns] if stored_name else columns
        default = names in ([f"Column_{i}" for i in range(n)], [f"f{i}" for i in range(n)])
        if not default:
            check_column_names(mapped, names, argument, shown=columns)
        for j, col in enumerate(columns):
            dtype = X.dtypes.iloc[j]
            if not (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_numeric_dtype(
                    dtype) or pd.api.types.is_bool_dtype(dtype)):
                raise ValueError(f"{argument} column {col!r} must hold numbers or pandas "
                                 f"categories, got dtype {dtype}")

        def read(r0: int, r1: int) -> np.ndarray:
            out = np.empty((r1 - r0, n), dtype=np.float64)
            for j in range(n):
                col = X.iloc[r0:r1, j]
                if isinstance(col.dtype, pd.CategoricalDtype):
                    stored = (categories or {}).get(j)
                    # set_categories: by value, a category the model never saw is missing
                    codes = (col.cat.set_categories(stored) if stored is not None
                             else col).cat.codes.to_numpy()
                    out[:, j] = np.where(codes < 0, np.nan, codes)
                else:
                    out[:, j] = col.to_numpy(np.float64, na_value=np.nan)
            return out
    elif sparse.issparse(X):
        csr = sparse.csr_matrix(X)

        def read(r0: int, r1: int) -> np.ndarray:
            part = csr[r0:r1]
            out = np.full(part.shape, np.nan if sparse_missing else 0.0)
            rows = np.repeat(np.arange(part.shape[0]), np.diff(part.indptr))
            out[rows, part.indices] = part.data
            return out
    else:
        def read(r0: int, r1: int) -> np.ndarray:
            return np.array(X[r0:r1], dtype=np.float64)
    n_rows = int(X.shape[0])

    def rounded(r0: int, r1: int) -> np.ndarray:
        return read(r0, r1).astype(feature_dtype).astype(np.float64)

    # per row: the slice, its rounded copy and the routing's few arrays
    step = int(max(256, (memory_budget // 3) // (24 * max(n, 1) + 64)))
    return DenseRows(n_rows, min(step, n_rows), rounded)


def rows_near_thresholds(forest: Forest, X: DenseRows, feature_dtype: type,
                         printed: Sequence[np.ndarray]) -> int:
    """Rows of dense ``X`` with a value that lies within the printed precision of a numeric
    threshold on that feature (:func:`unbiased_criteria.dumps.printed_bounds`; the precision
    is the most significant digits any threshold shows): the model the dump came from may
    route them differently. Counted whether or not the row reaches that node.

    ``printed[t]`` holds tree ``t``'s thresholds as the dump printed them (per node, NaN at
    leaves and categorical nodes), before any rounding to ``feature_dtype``.
    """
    numeric = [t.internal_nodes[~t.categorical[t.internal_nodes]] for t in forest.trees]
    values = [np.asarray(p, dtype=np.float64)[inner] for p, inner in zip(printed, numeric)]
    if not values:
        return 0
    digits = significant_digits(np.concatenate(values))
    low, high = printed_bounds(np.concatenate(values), feature_dtype, digits)
    feats = np.concatenate([t.feature[inner] for t, inner in zip(forest.trees, numeric)])
    wide = low < high
    feats, lows, highs = feats[wide], low[wide], high[wide]
    count = 0
    for _, _, rows in X.slices():
        near = np.zeros(rows.shape[0], dtype=bool)
        for f in np.unique(feats):  # one sorted search per feature, not per threshold
            sel = feats == f
            lo, hi = lows[sel], highs[sel]
            order = np.argsort(lo)
            lo, hi = lo[order], np.maximum.accumulate(hi[order])
            x = rows[:, f]
            pos = np.searchsorted(lo, x, side="right") - 1  # last interval starting <= x
            near |= (pos >= 0) & (x < hi[np.maximum(pos, 0)]) & ~np.isnan(x)
        count += int(near.sum())
    return count


def make_ir_router(forest: Forest, X: DenseRows, *, memory_budget: int,
                   near_threshold: int = 0) -> Router:
    """A :class:`~unbiased_criteria.model.Router` over ``X`` by the IR's rules.

    Leaf ids of all rows for ``chunk`` trees fit a third of ``memory_budget``; rows are read
    and routed ``X.step`` at a time (:func:`dense_features`).
    """
    chunk = chunk_size(X.n_rows, max(forest.n_trees, 1), memory_budget // 3)

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise IndexError(f"tree range [{start}, {stop}) outside [0, {forest.n_trees})")
        out = np.empty((X.n_rows, stop - start), dtype=np.int32)
        for r0, r1, rows in X.slices():
            for j, t in enumerate(range(start, stop)):
                out[r0:r1, j] = route_rows(forest.trees[t], rows)
        return out

    # the first slice now: data the model cannot read fails here, not mid-replay
    X.read(0, min(X.step, X.n_rows))
    return Router(n_rows=X.n_rows, leaf_nodes=leaf_nodes, chunk=chunk,
                  near_threshold=near_threshold)
