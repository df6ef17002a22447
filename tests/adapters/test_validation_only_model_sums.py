"""Validation-only mode takes G from the sums the model stores (its leaves' values and hessian
sums, checked against its split gains), not from half of the held-out rows.

The oracle: the same call with the training rows. Without bagging the model's sums are the
training rows' sums, so U, B and the jackknife's standard errors must be those of the
training-rows mode on the same held-out rows and random_state, and B the host's own gain.
Where the model cannot give its sums (L1, a dump without its learning rate,
HistGradientBoosting, which stores no hessian sums) the halves stay, with one warning for a
model of more than one iteration."""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.ensemble import HistGradientBoostingRegressor

import unbiased_criteria as uc

HALVES = "the model's own training sums cannot be used"


def _data(n: int, seed: int, kind: str = "regression"):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
    signal = X["a"] + 0.5 * X["b"] ** 2
    y = signal + rng.normal(size=n)
    if kind == "binary":
        y = (rng.random(n) < 1 / (1 + np.exp(-signal))).astype(float)
    return X, y.to_numpy()


def _lgb(kind: str, **extra):
    X, y = _data(2000, 0, kind)
    return lgb.train({"objective": kind, "learning_rate": 0.3, "num_leaves": 15,
                      "verbose": -1, "num_threads": 1, "seed": 0, **extra},
                     lgb.Dataset(X, y), 15), X, y


def _xgb(kind: str, **extra):
    X, y = _data(2000, 0, kind)
    obj = {"regression": "reg:squarederror", "binary": "binary:logistic"}[kind]
    return xgb.train({"objective": obj, "eta": 0.3, "max_depth": 4, "nthread": 1,
                      "seed": 0, **extra}, xgb.DMatrix(X, y), 15), X, y


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's sums are used: nothing to warn of
        return fn(*args, **kw)


@pytest.mark.parametrize("make, kind, extra", [
    (_lgb, "regression", {}),
    (_lgb, "binary", {"lambda_l2": 2.0}),
    (_xgb, "regression", {}),
    (_xgb, "binary", {"lambda": 2.0, "grow_policy": "lossguide", "max_leaves": 12}),
])
def test_validation_only_equals_the_training_rows_mode(make, kind, extra):
    model, X, y = make(kind, **extra)
    Xv, yv = _data(3000, 1, kind)
    own = _quiet(uc.unbiased_importance, model, None, None, Xv, yv, random_state=3, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = uc.unbiased_importance(model, X, y, Xv, yv, random_state=3, n_jobs=1)
    assert own.g_source == "model" and rows.g_source == "training rows"
    a, b = own.splits, rows.splits
    assert len(a) == len(b) > 20
    scale = np.abs(b.biased_gain).max()
    np.testing.assert_allclose(a.biased_gain, b.biased_gain, rtol=1e-5, atol=1e-6 * scale)
    # B is the host's gain (stored float32 / 6 digits)
    np.testing.assert_allclose(a.biased_gain, a.host_gain, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_array_equal(a.usable, b.usable)
    np.testing.assert_array_equal(a.k, b.k)
    u_scale = np.abs(b.unbiased_gain).max()
    np.testing.assert_allclose(a.unbiased_gain, b.unbiased_gain, rtol=1e-5,
                               atol=1e-7 * u_scale)
    fa, fb = own.to_frame(), rows.to_frame()
    np.testing.assert_allclose(fa.unbiased_gain, fb.unbiased_gain, rtol=1e-5,
                               atol=1e-7 * u_scale)
    np.testing.assert_allclose(fa.std_error, fb.std_error, rtol=1e-5, atol=1e-7 * u_scale)
    np.testing.assert_allclose(a.sum_hessian, b.sum_hessian, rtol=1e-6)
    if make is _lgb:  # LightGBM stores row counts, XGBoost does not (-1)
        np.testing.assert_array_equal(a.n_train, b.n_train)
    else:
        assert (a.n_train == -1).all()


def test_prune_without_training_rows_uses_the_models_sums():
    """prune's first iteration sees the same scores in both modes: its splits' U, hence
    what is pruned there, are the training-rows mode's."""
    model, X, y = _lgb("regression")
    Xv, yv = _data(3000, 1)
    own = _quiet(uc.prune, model, None, None, Xv, yv, threshold=-np.inf, random_state=3)
    assert own.num_trees() == model.num_trees()
    report = _quiet(uc.unbiased_importance, model, None, None, Xv, yv, random_state=3)
    threshold = float(np.median(report.splits.unbiased_gain[report.splits.tree == 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = uc.prune(model, None, None, Xv, yv, threshold=threshold, random_state=3)
        b = uc.prune(model, X, y, Xv, yv, threshold=threshold, random_state=3)

    def first(m):
        return m.dump_model()["tree_info"][0]["num_leaves"]

    assert first(a) == first(b) < first(model)
    # the new leaves take the same values: the model's sums are the training rows'
    np.testing.assert_allclose(a.predict(Xv, num_iteration=1), b.predict(Xv, num_iteration=1),
                               rtol=1e-6, atol=1e-9)


def _warned(fn, *args, **kw) -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn(*args, **kw)
    return [str(w.message) for w in seen if HALVES in str(w.message)]


def test_models_that_cannot_give_their_sums_keep_the_halves_with_one_warning():
    Xv, yv = _data(1500, 1)
    cases = []
    lgb_l1, _, _ = _lgb("regression", lambda_l1=1.0, boost_from_average=False)
    cases.append(lgb_l1)
    xgb_l1, X, y = _xgb("regression", alpha=1.0)
    cases.append(xgb_l1)
    cases.append(HistGradientBoostingRegressor(max_iter=10, random_state=0).fit(X, y))
    for model in cases:
        found = _warned(uc.unbiased_importance, model, None, None, Xv, yv, n_jobs=1)
        assert len(found) == 1, type(model)
        assert "pass X_train and y_train" in found[0]
        assert "above 0" in found[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = uc.unbiased_importance(xgb_l1, None, None, Xv, yv, n_jobs=1)
    assert report.g_source == "held-out halves"
    # prune too, once
    assert len(_warned(uc.prune, lgb_l1, None, None, Xv, yv)) == 1


def test_a_dump_without_its_learning_rate_keeps_the_halves_and_with_it_uses_the_model():
    """An XGBoost JSON dump stores neither eta nor lambda: without them (no training rows to
    infer them from) the leaves do not give the gains the model stored, so the halves stay,
    warned; given them, the dump's sums pass the check."""
    model, X, y = _xgb("regression", base_score=0.5, eta=0.1)  # not XGBoost's default
    Xv, yv = _data(1500, 1)
    dump = model.get_dump(dump_format="json", with_stats=True)
    base = {"objective": "reg:squarederror", "base_score": 0.5,
            "feature_names": list(X.columns)}
    assert len(_warned(uc.unbiased_importance, dump, None, None, Xv, yv, n_jobs=1,
                       host_params=base)) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = uc.unbiased_importance(dump, None, None, Xv, yv, n_jobs=1,
                                        host_params={**base, "eta": 0.1, "lambda": 1.0})
    assert report.g_source == "model"


def test_single_iteration_models_are_not_warned():
    X, y = _data(2000, 0)
    Xv, yv = _data(1500, 1)
    one = lgb.train({"objective": "regression", "lambda_l1": 1.0, "boost_from_average": False,
                     "num_leaves": 15, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 1)
    hgb = HistGradientBoostingRegressor(max_iter=1, random_state=0).fit(X, y)
    for model in (one, hgb):
        assert _warned(uc.unbiased_importance, model, None, None, Xv, yv, n_jobs=1) == []
