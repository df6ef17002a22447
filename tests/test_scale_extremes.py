"""Models of labels, weights or hessian sums far from 1 are read, checked and pruned as any
other: every tolerance is in the data's own units, and the hosts' own constants are
replayed. Oracles: the hosts' stored gains, their predictions and the parameters the models
were trained with; where labels are scaled, the same model at scale 1."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402

import unbiased_criteria as uc  # noqa: E402

N = 3000


def make(seed: int, n: int = N):
    r = np.random.default_rng(seed)
    X = np.column_stack([r.integers(0, 2, n), r.integers(0, 6, n), r.normal(size=n)])
    return X.astype(float), 0.5 * X[:, 0] + r.normal(size=n)


X, y = make(0)
Xv, yv = make(1)
LGB = dict(objective="regression", learning_rate=0.1, num_leaves=8, verbose=-1, num_threads=1)


# the later trees' check while pruning: a pruning move at a small scale is a move

@pytest.mark.parametrize("host", ["lightgbm", "hgb"])
def test_a_pruning_move_of_small_labels_is_a_change(host):
    """Labels scaled by 1e-12 (the same trees, every gain scaled by 1e-24): the check that a
    pruning moved a tree's leaves allowed an absolute 1e-12 of rounding, so every move was
    taken for rounding, the later trees were held to the model's gains at the pruned
    scores, and prune refused the model as DART. Oracle: the same model at label scale 1,
    whose pruning (kept splits, leaves) this one must equal, scaled."""

    def fit(scale):
        if host == "lightgbm":
            return lgb.train(LGB, lgb.Dataset(X, y * scale), 30)
        return HistGradientBoostingRegressor(max_iter=30, max_leaf_nodes=8,
                                             early_stopping=False).fit(X, y * scale)

    expected = uc.prune(fit(1.0), X, y, Xv, yv, random_state=0, n_jobs=1).predict(Xv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(fit(1e-12), X, y * 1e-12, Xv, yv * 1e-12, random_state=0, n_jobs=1)
    np.testing.assert_allclose(pruned.predict(Xv) / 1e-12, expected, rtol=1e-6,
                               atol=1e-6 * np.ptp(expected))
