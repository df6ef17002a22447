"""Route rows through a HistGradientBoosting estimator's trees: :func:`make_router`.

HistGradientBoosting has no ``pred_leaf``. The rows go through the estimator's own input
validation and preprocessing (feature names and count, pandas categoricals ordinal-encoded as
in ``predict``), then through the estimator's own compiled raw-data predictor on copies of its
trees whose leaves hold their node ids (:func:`.compat.leaf_ids`): the host's exact routing,
NaN and unknown categories included, at the cost of one ``predict`` per tree.

:func:`tree_matrix` gives the same rows as the IR's router reads them
(:func:`unbiased_criteria.trees.route_rows` with :data:`.reader.RULES`): one rule the IR does not
state is that at a categorical node a negative or unknown category goes where NaN goes
(``missing_go_to_left``), so those values become NaN there. The IR's routing of that matrix
equals the estimator's, leaf for leaf (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from unbiased_criteria.adapters.sklearn import compat

from unbiased_criteria.model import Model, Router, chunk_size
from unbiased_criteria.validation import check_matrix

__all__ = ["make_router", "tree_matrix"]

#: category values a categorical node can hold (256-bit sets)
_MAX_CATEGORY = 256


def _preprocessed(model, model_ir: Model, X: Any, argument: str) -> np.ndarray:
    """``X`` checked and preprocessed as ``predict`` does (the trees' column order)."""
    if isinstance(X, pd.Series):
        raise ValueError(f"{argument} must be 2-D (rows x features), got a pandas Series")
    if sparse.issparse(X):
        raise ValueError(f"{argument}: HistGradientBoosting does not accept sparse matrices; "
                         "pass a dense array or DataFrame")
    X = check_matrix(X, model_ir.source.n_features, argument)
    try:
        return compat.preprocess(model, X)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{argument} cannot be read by the estimator: {err}") from None


def tree_matrix(model, model_ir: Model, X: Any, argument: str) -> np.ndarray:
    """``X`` as the IR's trees read it: float64, input column order, preprocessed as
    ``predict`` does, negative or unknown categories as NaN. ``X`` is not modified."""
    st = model_ir.source
    pre = _preprocessed(model, model_ir, X, argument)
    out = np.empty_like(pre)
    out[:, st.columns] = pre
    for c, known in enumerate(st.categories):
        if known is None:
            continue
        x = out[:, c]
        code = np.trunc(x)
        bad = (x < 0) | (code >= _MAX_CATEGORY) | ~np.isin(code, known)
        out[:, c] = np.where(bad & ~np.isnan(x), np.nan, x)
    return out


def make_router(
    model,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the estimator's trees with its own predictor.

    Parameters
    ----------
    model : fitted HistGradientBoostingRegressor or HistGradientBoostingClassifier
        The model ``model_ir`` was read from.
    model_ir : Model
    X : numpy array or pandas DataFrame (category dtype allowed)
        As ``model.predict`` accepts it (same features, names, categories). Not modified.
    argument : str
        Name of ``X`` in error messages.
    memory_budget : int
        Bytes allowed for one chunk of leaf ids.

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR node ids (int32, ``(n, stop - start)``).
    """
    compat.check_estimator(model)
    forest = model_ir.forest
    if model_ir.host != "sklearn" or len(model_ir.source.predictors) != model.n_iter_:
        raise ValueError("model_ir was not read from model")
    pre = _preprocessed(model, model_ir, X, argument)
    n_rows = pre.shape[0]
    per_iteration = max(forest.n_outputs, 1)

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise ValueError(f"tree range [{start}, {stop}) outside 0..{forest.n_trees}")
        it0, it1 = start // per_iteration, (stop - 1) // per_iteration + 1
        out = np.empty((n_rows, (it1 - it0) * per_iteration), dtype=np.int32)
        compat.leaf_ids(model, pre, range(it0, it1), out)
        offset = start - it0 * per_iteration
        return out[:, offset : offset + stop - start]

    chunk = chunk_size(n_rows, max(forest.n_trees, 1), memory_budget)
    if chunk >= per_iteration:
        chunk -= chunk % per_iteration  # whole iterations: no tree is routed twice
    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=max(int(chunk), 1))
