"""The native grower's LightGBM export is a LightGBM model LightGBM itself works with: its
``parameters:`` block names the objective as LightGBM does (``Booster.refit``, ``params``,
continued training), feature names LightGBM refuses or cannot dump are refused up front, and
its trees follow LightGBM's reading of values within 1e-35 of 0."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")
from grower_cases import grower_data, grower_estimator  # noqa: E402
from unbiased_criteria.adapters.lightgbm.reader import read_model  # noqa: E402
from unbiased_criteria.adapters.lightgbm.writer import booster_from_forest  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.errors import InputError  # noqa: E402

# canonical objective -> LightGBM's training parameters for it
_LIGHTGBM = {
    "squared_error": {"objective": "regression"},
    "binary_logistic": {"objective": "binary"},
    "multiclass_softmax": {"objective": "multiclass", "num_class": 3},
    "poisson": {"objective": "poisson"},
}


def _labels(objective, signal):
    if objective == "squared_error":
        return signal
    if objective == "binary_logistic":
        return (signal > 0).astype(float)
    if objective == "multiclass_softmax":
        return np.digitize(signal, [-0.5, 0.5]).astype(float)
    return np.round(np.exp(signal / 3))


@pytest.mark.parametrize("objective", sorted(_LIGHTGBM))
def test_refit_of_a_written_forest_is_lightgbms_refit_of_the_model_it_came_from(objective):
    """Oracle: a LightGBM-trained model, read and written again without its text, refits
    (decay 0.3, other rows) to LightGBM's refit of the original, prediction for prediction;
    ``params`` names LightGBM's objective and class count (the block named the library's
    ``squared_error`` / ``binary_logistic`` / ``multiclass_softmax``: refit raised)."""
    rng = np.random.default_rng(0)
    X, X2 = rng.normal(size=(600, 3)), rng.normal(size=(600, 3))
    y = _labels(objective, X[:, 0] + rng.normal(size=600))
    y2 = _labels(objective, X2[:, 0] + rng.normal(size=600) + 0.5)
    penalties = {"learning_rate": 0.3, "lambda_l1": 0.2, "lambda_l2": 2.0,
                 "max_delta_step": 0.0}
    params = {**_LIGHTGBM[objective], **penalties, "num_leaves": 7, "verbose": -1}
    original = lgb.train(params, lgb.Dataset(X, y), 4)
    written = booster_from_forest(read_model(original).forest, objective, params=penalties)
    np.testing.assert_array_equal(written.predict(X), original.predict(X))
    loaded = lgb.Booster(model_str=original.model_to_string())  # params as LightGBM reads them
    for key in ("objective", "num_class"):
        assert written.params[key] == loaded.params[key]
    refit = written.refit(X2, y2, decay_rate=0.3, verbose=-1)
    expected = original.refit(X2, y2, decay_rate=0.3, verbose=-1)
    assert np.abs(expected.predict(X2) - original.predict(X2)).max() > 1e-3  # it refits
    np.testing.assert_array_equal(refit.predict(X2), expected.predict(X2))


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_the_grower_export_refits_and_continues_training_in_lightgbm(kind):
    X, y = grower_data(kind, n=800)
    est = grower_estimator(kind).fit(X, y)
    booster = est.to_lightgbm()
    codes = np.searchsorted(est.classes_, y).astype(float) if kind != "regression" else y
    own = lgb.train({**_LIGHTGBM[est._objective_name], "verbose": -1}, lgb.Dataset(X, codes), 1)
    own = lgb.Booster(model_str=own.model_to_string())  # params as LightGBM reads them
    for key in ("objective", "num_class"):
        assert booster.params[key] == own.params[key]
    refit = booster.refit(X, codes, decay_rate=0.5, verbose=-1)
    assert refit.num_trees() == booster.num_trees()
    assert np.isfinite(refit.predict(X)).all()
    more = lgb.train({**booster.params, "verbose": -1}, lgb.Dataset(X, codes), 2,
                     init_model=booster)
    assert more.num_trees() == booster.num_trees() + 2 * booster.num_model_per_iteration()


@pytest.mark.parametrize("char", list('",:[]{}'))
def test_export_refuses_names_lightgbm_refuses(char):
    rng = np.random.default_rng(0)
    name = f"size {char}cm{char}"
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=[name, "b"])
    y = X.iloc[:, 0] + rng.normal(size=300)
    with pytest.raises(lgb.basic.LightGBMError, match="special JSON characters"):
        lgb.train({"verbose": -1}, lgb.Dataset(X, y), 1)  # the oracle: LightGBM's own rule
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), est.predict(X))  # the model itself is fine
    with pytest.raises(InputError, match=r"feature names: LightGBM refuses .*got \[" +
                       re.escape(repr(name)) + r"\]"):
        est.to_lightgbm()


@pytest.mark.parametrize("char", ["\\", "\x01", "\x7f\\u"])
def test_export_refuses_names_lightgbm_cannot_dump(char):
    """LightGBM trains with these names but its JSON dump does not read them back (a
    backslash escapes the next character, a control character is invalid JSON)."""
    rng = np.random.default_rng(0)
    name = f"a{char}q"
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=[name, "b"])
    y = X.iloc[:, 0] + rng.normal(size=300)
    own = lgb.train({"verbose": -1}, lgb.Dataset(X, y), 2)
    try:
        dumped = own.dump_model()["feature_names"][0]
    except json.JSONDecodeError:
        dumped = None
    assert dumped != name
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(InputError, match="feature names: LightGBM refuses"):
        est.to_lightgbm()


def test_export_names_lightgbm_keeps_read_back():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=["size (cm)", "prix €", "a=b;c"])
    y = X.iloc[:, 0] + rng.normal(size=600)
    fit = slice(0, 400)
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X[fit], y[fit])
    booster = est.to_lightgbm()
    assert booster.dump_model()["feature_names"] == ["size_(cm)", "prix_€", "a=b;c"]
    assert len(booster.trees_to_dataframe()) > 0
    report = uc.unbiased_importance(booster, X[fit], y[fit], X[400:], y[400:], n_blocks=0)
    assert report.to_frame()["splits"].sum() > 0


def test_export_reads_tiny_values_as_lightgbm_does_and_says_where_that_differs():
    """LightGBM's predictor reads |x| <= 1e-35 as 0. The grower's thresholds are midpoints:
    a feature of -1 and 1 splits at 0, where LightGBM sends 1e-36 left with 0 and the grower
    right: said (a warning naming the feature). The library reads the export as LightGBM
    predicts it, tiny values included."""
    rng = np.random.default_rng(0)
    n = 1000
    X = np.column_stack([rng.choice([-1.0, 1.0], n), rng.normal(size=n)])
    y = 2 * X[:, 0] + X[:, 1] + rng.normal(size=n)
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match=r"features \['Column_0'\] have splits with a "
                                         r"threshold within 1e-35 of 0"):
        booster = est.to_lightgbm()
    np.testing.assert_allclose(booster.predict(X), est.predict(X), rtol=0, atol=1e-12)
    tiny = X.copy()
    tiny[:, 0] = 1e-36
    assert not np.allclose(booster.predict(tiny), est.predict(tiny))  # as warned
    # the library routes the export's rows as LightGBM does: its leaves are LightGBM's
    from unbiased_criteria.trees import route_rows
    forest = read_model(booster).forest
    leaves = booster.predict(tiny, pred_leaf=True)
    for t, tree in enumerate(forest.trees):
        routed = route_rows(tree, tiny)
        n_leaves = int(tree.is_leaf.sum())
        np.testing.assert_array_equal(routed, n_leaves - 1 + leaves[:, t])
    # data without a threshold near 0: no warning
    X[:, 0] = rng.normal(size=n)
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.to_lightgbm()
