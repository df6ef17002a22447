"""Route rows through a HistGradientBoosting estimator's trees: :func:`make_router`.

HistGradientBoosting has no ``pred_leaf``. The rows go through the estimator's own input
validation and preprocessing (feature names and count, pandas categoricals ordinal-encoded as
in ``predict``), then through the IR's trees with the IR router
(:func:`unbiased_criteria.trees.route_rows`), whose rules (:data:`.reader.RULES`) are the
estimator's raw-data rules. One rule the IR does not state: at a categorical node a negative
or unknown category goes where NaN goes (``missing_go_to_left``); the router turns those
values into NaN first, so the IR sends them there. Tested against ``_raw_predict``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from unbiased_criteria.adapters.sklearn import compat

from unbiased_criteria.model import Model, Router, chunk_size
from unbiased_criteria.trees import route_rows
from unbiased_criteria.validation import check_matrix

__all__ = ["make_router", "tree_matrix"]

#: category values a categorical node can hold (256-bit sets)
_MAX_CATEGORY = 256


def tree_matrix(model, model_ir: Model, X: Any, argument: str) -> np.ndarray:
    """``X`` as the IR's trees read it: float64, input column order, preprocessed as
    ``predict`` does, negative or unknown categories as NaN. ``X`` is not modified."""
    st = model_ir.source
    if sparse.issparse(X):
        raise ValueError(f"{argument}: HistGradientBoosting does not accept sparse matrices; "
                         "pass a dense array or DataFrame")
    X = check_matrix(X, st.n_features, argument)
    try:
        pre = compat.preprocess(model, X)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{argument} cannot be read by the estimator: {err}") from None
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
    """Route the rows of ``X`` through the estimator's trees.

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
    if isinstance(X, pd.Series):
        raise ValueError(f"{argument} must be 2-D (rows x features), got a pandas Series")
    Xt = tree_matrix(model, model_ir, X, argument)
    n_rows = Xt.shape[0]

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise ValueError(f"tree range [{start}, {stop}) outside 0..{forest.n_trees}")
        out = np.empty((n_rows, stop - start), dtype=np.int32)
        for j, t in enumerate(range(start, stop)):
            out[:, j] = route_rows(forest.trees[t], Xt)
        return out

    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes,
                  chunk=chunk_size(n_rows, max(forest.n_trees, 1), memory_budget))
