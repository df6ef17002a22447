"""HistGradientBoosting on null data (Monte Carlo, fixed seeds): single trees whose features
carry no information have mean U within 3 standard errors of 0, whatever their cardinality
and whether scikit-learn splits them as numbers or as categories, while mean B is far above 0.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import null_example  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("categorical", [None, [0, 1, 2, 3]], ids=["numeric", "categorical"])
def test_single_tree_null_mean_u_is_zero(categorical):
    reps, n = 200, 1000
    U, B = [], []
    with threadpool_limits(limits=1, user_api="openmp"):
        for r in range(reps):
            X, y = null_example(n, random_state=2 * r)
            Xv, yv = null_example(n, random_state=2 * r + 1)
            model = HistGradientBoostingRegressor(
                max_iter=1, learning_rate=1.0, categorical_features=categorical,
                early_stopping=False, random_state=r).fit(X, y)
            frame = uc.unbiased_importance(model, X, y, Xv, yv, random_state=r,
                                           n_blocks=0).to_frame()
            U.append(frame["unbiased_gain"].to_numpy())
            B.append(frame["biased_gain"].to_numpy())
    U, B = np.array(U), np.array(B)
    se_u = U.std(axis=0, ddof=1) / np.sqrt(reps)
    se_b = B.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(U.mean(axis=0)) <= 3 * se_u), (U.mean(axis=0), se_u)
    assert np.all(B.mean(axis=0) >= 10 * se_b), (B.mean(axis=0), se_b)
