"""Route rows through an XGBoost model's trees with XGBoost's own ``pred_leaf``:
:func:`make_router`.

``predict(pred_leaf=True)`` returns XGBoost's node ids, which are the IR's (trees with
tombstones are mapped, see :mod:`.layout`). Missing values (NaN, absent sparse entries, an
estimator's ``missing``) go where XGBoost sends them, since XGBoost routes.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xgboost
from scipy import sparse
from unbiased_criteria.adapters.xgboost.layout import _booster, _gbtree, _read_node_map

from unbiased_criteria.model import Model, Router, chunk_size, host_call_trees
from unbiased_criteria.validation import check_column_names, check_matrix


def _feature_types(js: Mapping) -> list[str] | None:
    types = js["learner"].get("feature_types") or None
    return list(types) if types else None


def _check_X(X: Any, model_ir: Model, argument: str, missing: float) -> tuple[Any, dict]:
    """``X`` checked against the model (never modified) and the DMatrix keywords for it."""
    forest = model_ir.forest
    js = model_ir.source
    has_names = bool(js["learner"].get("feature_names"))
    names = list(forest.feature_names) if has_names else None
    types = _feature_types(js)
    categorical = bool(types and "c" in types)
    X = check_matrix(X, forest.n_features, argument)
    kwargs: dict[str, Any] = {"missing": missing}
    if isinstance(X, pd.DataFrame):
        if names is not None:
            check_column_names([str(c) for c in X.columns], names, argument)
        kwargs["enable_categorical"] = True
    else:
        kwargs.update(feature_names=names)
        if categorical:
            kwargs.update(feature_types=types, enable_categorical=True)
    if sparse.issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()  # row slices below
    return X, kwargs


def _stored_categories(bst: xgboost.Booster) -> dict[str, list] | None:
    """Per feature name, the categories the model stores (XGBoost 3.1+); None when they
    cannot be read here (older XGBoost, no pyarrow)."""
    try:
        pairs = bst.get_categories(export_to_arrow=True).to_arrow()
    except (AttributeError, ImportError):
        return None
    return {str(name): list(arr.to_pylist()) for name, arr in (pairs or []) if arr is not None}


def _recode_categories(X: pd.DataFrame, bst: xgboost.Booster, argument: str) -> tuple[
        pd.DataFrame, bool]:
    """``X`` with its category columns on the categories the model stores, as XGBoost
    recodes them when it predicts with the whole model; and whether a sliced Booster may
    route it. A slice forgets the stored categories and reads the codes as they are, so a
    held-out frame with categories reordered or missing was routed by the wrong codes."""
    cat_columns = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    if not cat_columns:
        return X, True
    stored = _stored_categories(bst)
    if stored is None:  # cannot recode here: route with the whole model, which recodes
        return X, False
    recoded = {}
    for c in cat_columns:
        cats = stored.get(str(c))
        if cats is None or list(X[c].cat.categories) == cats:
            continue
        values = X[c].dropna()
        unseen = pd.unique(values[~values.isin(cats)])
        if len(unseen):
            raise ValueError(
                f"{argument}'s column {c!r} holds categories the model was not trained with: "
                f"{', '.join(repr(v) for v in unseen[:5])}")
        recoded[c] = X[c].cat.set_categories(cats)
    return (X.assign(**{str(c): v for c, v in recoded.items()}) if recoded else X), True


_CAST_BLOCK = 1 << 14  # values cast per step (a 64 KB temporary at most)

#: bytes of XGBoost's float32 ids per prediction call at most, when a call of the router
#: spans several (each a Booster slice of whole iterations, cast straight into the router's
#: int32 array): output that small is still in the cache (32 MiB L3 here) when it is cast.
#: One thread, 200 trees, 300k rows, routing alone, medians of 7: calls of 20 trees 1.84 s
#: of CPU through ``Booster.predict``, 1.76 s read from XGBoost's buffer, 1.69 s in calls
#: of 10 trees, 1.93 s in calls of 5 (every call fills each row's features anew)
XGB_CALL_BYTES = 12 * 2**20
#: ... and never fewer trees per prediction call than this (when the bound above would
#: split a call into smaller ones, the call is not split)
XGB_MIN_CALL_TREES = 8

# XGBoost's C prediction call, made as ``Booster.predict`` makes it (pred_leaf is type 6):
# the wrapper copies XGBoost's float32 output into a fresh array, which the router then
# cast to int32; reading XGBoost's buffer, the router casts once into its own int32 array.
# None (``Booster.predict`` then) when this XGBoost's Python package lacks these names.
try:
    from xgboost.core import _LIB as _XGB_LIB
    from xgboost.core import _check_call as _xgb_check_call
    from xgboost.core import c_bst_ulong as _c_bst_ulong

    _C_PREDICT = _XGB_LIB.XGBoosterPredictFromDMatrix
except (ImportError, AttributeError):
    _C_PREDICT = None
_PRED_LEAF_ARGS = json.dumps({"type": 6, "training": False, "iteration_begin": 0,
                              "iteration_end": 0, "strict_shape": False}).encode()


def _pred_leaf_into(bst: xgboost.Booster, dmat: xgboost.DMatrix, out: np.ndarray) -> None:
    """Write ``bst.predict(dmat, pred_leaf=True)`` into the int32 array ``out`` (rows x ids,
    a view allowed): XGBoost's own prediction, its float32 ids cast once."""
    if _C_PREDICT is None:
        out[...] = bst.predict(dmat, pred_leaf=True).reshape(out.shape)
        return
    preds = ctypes.POINTER(ctypes.c_float)()
    shape = ctypes.POINTER(_c_bst_ulong)()
    dims = _c_bst_ulong()
    _xgb_check_call(_C_PREDICT(bst.handle, dmat.handle, _PRED_LEAF_ARGS, ctypes.byref(shape),
                               ctypes.byref(dims), ctypes.byref(preds)))
    size = int(np.prod([shape[i] for i in range(dims.value)], dtype=np.int64))
    if size != out.size:
        raise RuntimeError(f"XGBoost returned {size} leaf ids, expected {out.size}")
    if size:  # XGBoost's buffer, valid until this Booster's next prediction
        out[...] = np.ctypeslib.as_array(preds, shape=(size,)).reshape(out.shape)


def _call_iterations(n_rows: int, n_trees: int, n_iterations: int) -> int:
    """Iterations per prediction call for one router call of ``n_iterations`` iterations
    (``n_trees`` trees): :data:`XGB_CALL_BYTES` of float32 ids per call, unless that makes
    calls of fewer than :data:`XGB_MIN_CALL_TREES` trees (then one call)."""
    calls = -(-4 * n_rows * n_trees // XGB_CALL_BYTES)
    per_tree = max(n_trees // max(n_iterations, 1), 1)
    its = -(-n_iterations // max(calls, 1))
    return n_iterations if its * per_tree < XGB_MIN_CALL_TREES else its


def _dmatrix(X: Any, start: int, stop: int, kwargs: dict, argument: str) -> xgboost.DMatrix:
    """Rows ``start:stop`` of ``X`` as a DMatrix."""
    part = X if (start == 0 and stop == X.shape[0]) else (
        X.iloc[start:stop] if isinstance(X, pd.DataFrame) else X[start:stop]
    )
    try:
        return xgboost.DMatrix(part, **kwargs)
    except (ValueError, TypeError, xgboost.core.XGBoostError) as err:
        raise ValueError(f"{argument} cannot be read as XGBoost data: {err}") from None


def _plan(n_rows: int, n_features: int, n_trees: int, per_iteration: int,
          memory_budget: int) -> tuple[int, int]:
    """(trees per call, rows per DMatrix) within ``memory_budget``.

    A DMatrix holds 8 bytes per value (index and float32) and building it may take a float32
    copy of the rows: 16 bytes per value with our share; per row and tree, XGBoost's float32
    output, its copy and our int32 ids take 16. One DMatrix of all rows, built once, with as
    many trees per call as then fit (at most the third of the budget our ids may take, and
    :func:`~unbiased_criteria.model.host_call_trees` of XGBoost's float32 ids), unless not even
    one iteration would: then rows in several DMatrix objects, built anew for each call.
    (Building a DMatrix costs about as much as routing its rows through a dozen trees, so one
    build beats many; at 1M rows and 20 features one DMatrix of all rows takes 13 trees
    per call where row chunks took 44 trees per call and 36 builds over 500 trees.)
    """
    chunk = chunk_size(n_rows, n_trees, memory_budget // 3)
    per_value = 16 * max(n_features, 1)
    whole = (memory_budget - per_value * n_rows) // max(16 * n_rows, 1)
    if whole >= per_iteration:
        cap = max(host_call_trees(n_rows, 4), per_iteration)
        chunk = int(min(chunk, whole, cap))
        if chunk >= per_iteration:
            chunk -= chunk % per_iteration  # whole iterations: no tree is predicted twice
        return max(chunk, 1), max(n_rows, 1)
    if chunk >= per_iteration:
        chunk -= chunk % per_iteration
    per_row = per_value + 12 * chunk
    left = memory_budget - 4 * n_rows * chunk
    rows = n_rows if per_row * n_rows <= left else max(256, left // per_row)
    return max(int(chunk), 1), max(int(min(rows, n_rows)), 1)


def make_router(
    model: xgboost.Booster | xgboost.XGBModel,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the model's trees with XGBoost's own ``pred_leaf``.

    Parameters
    ----------
    model : xgboost.Booster or fitted xgboost.XGBModel
        The model ``model_ir`` was read from.
    model_ir : Model
    X : numpy array, pandas DataFrame (category dtype allowed) or scipy sparse matrix
        Absent sparse entries and NaN are missing values (for an XGBModel, its ``missing``
        value too). Its feature count, and for a DataFrame its column names, must match the
        model. ``X`` is not modified.
    argument : str
        Name of ``X`` in error messages.
    memory_budget : int
        Bytes allowed for one chunk of leaf ids and the DMatrix they are predicted from: when
        a DMatrix of all rows does not fit beside the ids, each call builds DMatrix objects
        of a slice of rows at a time (slower, bounded memory).

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR node ids (int32, ``(n, stop - start)``); ``chunk``
        is a whole number of iterations whenever the budget allows one.
    """
    bst = _booster(model)
    forest = model_ir.forest
    missing = getattr(model, "missing", np.nan) if isinstance(model, xgboost.XGBModel) \
        else np.nan
    X, kwargs = _check_X(X, model_ir, argument, np.nan if missing is None else missing)
    may_slice = True
    if isinstance(X, pd.DataFrame):
        X, may_slice = _recode_categories(X, bst, argument)
    n_rows = int(X.shape[0])
    trees_json = _gbtree(model_ir.source["learner"])[0]["trees"]
    if len(trees_json) != forest.n_trees or bst.num_boosted_rounds() != (
        int(forest.tree_iteration[-1]) + 1 if forest.n_trees else 0
    ):
        raise ValueError("model_ir was not read from model")
    maps = [_read_node_map(t, forest.trees[i], i) for i, t in enumerate(trees_json)]
    iteration = np.asarray(forest.tree_iteration, dtype=np.int64)
    n_iter = int(iteration[-1]) + 1 if iteration.size else 0
    first = np.searchsorted(iteration, np.arange(n_iter + 1))  # first tree of each iteration
    per_iteration = int(np.bincount(iteration).max()) if iteration.size else 1
    chunk, rows = _plan(n_rows, forest.n_features, forest.n_trees, per_iteration,
                        memory_budget)
    row_starts = list(range(0, n_rows, rows)) or [0]
    # one DMatrix of all rows when it fits the budget (built once); else one per row chunk,
    # built for each call (the first one now: bad data fails here)
    first_dmat = _dmatrix(X, 0, min(rows, n_rows), kwargs, argument)
    whole = first_dmat if len(row_starts) == 1 else None

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise ValueError(f"tree range [{start}, {stop}) outside 0..{forest.n_trees}")
        # slicing a Booster selects iterations; take the iterations covering the range
        it0, it1 = int(iteration[start]), int(iteration[stop - 1]) + 1
        if not may_slice:
            it0, it1 = 0, n_iter
        offset = start - int(first[it0])
        if whole is not None and offset == 0 and int(first[it1]) == stop:
            # whole iterations: calls of a few iterations each, cast into their columns
            out = np.empty((n_rows, stop - start), dtype=np.int32)
            step = _call_iterations(n_rows, stop - start, it1 - it0) if may_slice \
                else it1 - it0
            for a in range(it0, it1, step):
                b = min(a + step, it1)
                _pred_leaf_into(bst if (a == 0 and b == n_iter) else bst[a:b], whole,
                                out[:, int(first[a]) - start : int(first[b]) - start])
            return _mapped(out, start, stop)
        part = bst if (it0 == 0 and it1 == n_iter) else bst[it0:it1]
        if whole is not None:
            raw = part.predict(whole, pred_leaf=True).reshape(n_rows, -1)
            if raw.dtype == np.float32 and raw.flags.writeable and raw.flags.c_contiguous:
                # cast XGBoost's float32 ids to int32 in their own buffer, 16k values at a
                # time: one call over the whole overlapping buffer made numpy copy the chunk
                # first (first touching fresh memory cost more than the cast)
                ids = raw.view(np.int32)
                flat, flat_ids = raw.reshape(-1), ids.reshape(-1)
                for s in range(0, flat.size, _CAST_BLOCK):
                    flat_ids[s : s + _CAST_BLOCK] = flat[s : s + _CAST_BLOCK]
                out = ids[:, offset : offset + stop - start]
            else:
                out = raw[:, offset : offset + stop - start].astype(np.int32)
            del raw
        else:
            out = np.empty((n_rows, stop - start), dtype=np.int32)
            for r0 in row_starts:
                r1 = min(r0 + rows, n_rows)
                dmat = _dmatrix(X, r0, r1, kwargs, argument)
                raw = part.predict(dmat, pred_leaf=True).reshape(r1 - r0, -1)
                out[r0:r1] = raw[:, offset : offset + stop - start]
                del dmat, raw
        return _mapped(out, start, stop)

    def _mapped(out: np.ndarray, start: int, stop: int) -> np.ndarray:
        for j, t in enumerate(range(start, stop)):
            if maps[t] is not None:
                out[:, j] = maps[t][out[:, j]]
        return out

    del first_dmat
    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=chunk)
