"""Hardening checked against the hosts: zero-weight held-out rows no longer hide a feature
from ``select``, the cross-entropy init score and the softmax hessian factors are the hosts'."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.objectives import make_objective  # noqa: E402


def test_zero_weight_held_out_rows_keep_standard_errors_finite():
    # the reproduction of the hardening issue: 3 of 4 standard errors were NaN and select()
    # returned [] although Column_0 carries all the signal
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + rng.normal(size=n)
    w = rng.random(n)
    w[::3] = 0
    Xv = rng.normal(size=(n, 4))
    yv = Xv[:, 0] + rng.normal(size=n)
    wv = rng.random(n)
    wv[::2] = 0
    m = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                  lgb.Dataset(X, y, weight=w), 20)
    r = uc.unbiased_importance(m, X, y, Xv, yv, valid_weight=wv, random_state=0)
    frame = r.to_frame()
    assert np.isfinite(frame["std_error"]).all()
    assert np.isfinite(r.splits["unbiased_gain"]).all()
    assert r.select() == ["Column_0"]


@pytest.mark.parametrize("host_name,name", [("cross_entropy", "cross_entropy"),
                                            ("binary", "binary_logistic")])
@pytest.mark.parametrize("label", [0.0, 1.0])
def test_init_score_at_constant_labels_is_lightgbms(host_name, name, label):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = np.full(200, label)
    booster = lgb.train({"objective": host_name, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y), 1)
    host = booster.predict(X[:1], raw_score=True)[0]  # constant labels: no split, init only
    # LightGBM clamps the mean label to [kEpsilon, 1 - kEpsilon], kEpsilon = 1e-15f
    assert make_objective(name).init_score(y)[0] == pytest.approx(host, rel=1e-12)


def _multiclass_data(K, seed=2, n=600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=n), np.linspace(-1, 1, K - 1))
    return X, y.astype(np.float64)


@pytest.mark.parametrize("K", [3, 4, 5])
def test_softmax_default_hessian_is_lightgbms_internal_weight(K):
    X, y = _multiclass_data(K)
    booster = lgb.train(
        {"objective": "multiclass", "num_class": K, "verbose": -1, "num_threads": 1,
         "num_leaves": 4}, lgb.Dataset(X, y), 1, keep_training_booster=True)
    obj = make_objective("multiclass_softmax", n_classes=K)  # the core default, no factor
    start = np.tile(obj.init_score(y), (len(y), 1))  # iteration 0 starts at the init score
    _, h = obj.grad_hess(y, start)
    roots = [t["tree_structure"]["internal_weight"] for t in booster.dump_model()["tree_info"]]
    np.testing.assert_allclose(h.astype(np.float64).sum(axis=0), roots, rtol=1e-6)


@pytest.mark.parametrize("K", [3, 4, 5])
def test_softmax_hessians_of_both_hosts_through_the_pipeline(K):
    X, y = _multiclass_data(K)
    Xv, yv = _multiclass_data(K, seed=3)
    lgb_model = lgb.train(
        {"objective": "multiclass", "num_class": K, "verbose": -1, "num_threads": 1,
         "num_leaves": 6}, lgb.Dataset(X, y), 3, keep_training_booster=True)
    xgb_model = xgb.train({"objective": "multi:softprob", "num_class": K, "max_depth": 3,
                           "nthread": 1}, xgb.DMatrix(X, y), 3)
    for model in (lgb_model, xgb_model):
        s = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_blocks=0).splits
        assert len(s) >= 3 * K
        np.testing.assert_allclose(s["sum_hessian"], s["host_hessian"], rtol=1e-6, atol=1e-9)
