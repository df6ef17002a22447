"""LightGBM's init score for L1, quantile and MAPE is a (weighted) percentile of the labels
by its own rule: where the weight crossing the percentile is below 1 it takes the lower
value, else it interpolates; alpha is float32. The library interpolated always (MAPE's
first tree: B off by 12-17%). Oracles: LightGBM's own init scores (a one-leaf first tree
at a learning rate of 1e-12 holds it) and its split_gain."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.objectives import Mape, _weighted_percentile  # noqa: E402


def _host_init(X, y, w, objective, alpha=0.5):
    params = dict(objective=objective, alpha=alpha, verbose=-1, num_threads=1,
                  min_data_in_leaf=len(y), learning_rate=1e-12)
    booster = lgb.train(params, lgb.Dataset(X, y, weight=w), 1)
    return booster.dump_model()["tree_info"][0]["tree_structure"]["leaf_value"]


def _weights(kind, rng, n):
    return {"none": None, "light": rng.uniform(0.1, 0.9, n), "heavy": rng.uniform(0.5, 3, n),
            "mixed": rng.choice([0.5, 1.0, 2.0], n)}[kind]


@pytest.mark.parametrize("kind", ["none", "light", "heavy", "mixed"])
@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.8, 0.05, 0.95])
def test_percentile_init_equals_lightgbms(kind, alpha):
    rng = np.random.default_rng(int(alpha * 100) + len(kind))
    for _ in range(3):
        n = int(rng.integers(20, 300))
        X, y = rng.normal(size=(n, 2)), 3 * rng.normal(size=n)
        w = _weights(kind, rng, n)
        objective = "l1" if alpha == 0.5 else "quantile"
        assert np.float32(_weighted_percentile(y, w, alpha)) == \
            np.float32(_host_init(X, y, w, objective, alpha))
        labels = np.exp(y / 3) * 10  # MAPE: always weighted by 1 / max(1, |y|)
        assert np.float32(Mape().init_score(labels, w)[0]) == \
            np.float32(_host_init(X, labels, w, "mape"))


@pytest.mark.parametrize("objective", ["l1", "quantile", "mape"])
def test_first_tree_gains_equal_split_gain(objective):
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n)
    if objective == "mape":
        y = 100 * np.exp(0.3 * y)
    w = None if objective == "mape" else rng.uniform(0.1, 0.9, n)
    model = lgb.train(dict(objective=objective, alpha=0.5, verbose=-1, num_threads=1, seed=0),
                      lgb.Dataset(X, y, weight=w), 3)
    splits = uc.unbiased_importance(model, X, y, X[:500], y[:500], train_weight=w,
                                    random_state=0).splits
    np.testing.assert_allclose(splits["biased_gain"], splits["host_gain"], rtol=1e-4)
