"""The native grower's exports store each split's gain over all training rows, as the host
would have stored it had it grown the tree on them: XGBoost's own ``refresh`` updater
recomputes the same ``loss_chg``, and the library reads, scores and prunes the exports with
the training rows like any host model (they were refused as DART before)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
from grower_cases import grower_data, grower_estimator  # noqa: E402

import unbiased_criteria as uc  # noqa: E402


def _data(kind, n=2000, seed=0):
    """``grower_data``; ``"poisson"``: counts whose log mean is the regression signal (some
    first-tree leaves have Newton steps beyond 0.7, count:poisson's max_delta_step)."""
    X, y = grower_data("regression" if kind == "poisson" else kind, n=n, seed=seed)
    if kind == "poisson":
        y = np.random.default_rng(seed + 100).poisson(np.exp(np.clip(y, -3, 3))).astype(float)
    return X, y


def _estimator(kind, **kw):
    if kind == "poisson":
        return uc.UnbiasedGBMRegressor(objective="poisson", n_estimators=15, num_leaves=15,
                                       random_state=0, **kw)
    return grower_estimator(kind, **kw)


def _encoded(est, y):
    """The labels as the hosts' boosters take them (class indices for a classifier)."""
    if hasattr(est, "classes_"):
        return np.searchsorted(est.classes_, y).astype(np.float64)
    return y


def _xgb_trees(booster):
    return json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]


def _same_stats_as_refreshed(booster, refreshed, gain_atol=0.0):
    """Every node's hessian sum and every split's gain of ``booster`` equal those XGBoost's
    ``refresh`` updater recomputed (``refreshed``), over more than 20 splits."""
    n_splits = 0
    for own, host in zip(_xgb_trees(booster), _xgb_trees(refreshed), strict=True):
        inner = np.asarray(own["left_children"]) >= 0
        n_splits += int(inner.sum())
        np.testing.assert_allclose(np.asarray(own["sum_hessian"]),
                                   np.asarray(host["sum_hessian"]), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(own["loss_changes"])[inner],
                                   np.asarray(host["loss_changes"])[inner], rtol=1e-4,
                                   atol=gain_atol)
    assert n_splits > 20


# multiclass: the grower's softmax hessian is LightGBM's (K/(K-1) p(1-p)), XGBoost's 2 p(1-p)
@pytest.mark.parametrize("kind", ["regression", "binary"])
@pytest.mark.parametrize("penalties", [{}, {"reg_lambda": 2.0, "reg_alpha": 0.5},
                                       {"reg_lambda": 1.0, "max_delta_step": 0.1}])
def test_xgboost_export_stores_xgboosts_own_gain_on_all_training_rows(kind, penalties):
    X, y = _data(kind, n=1500)
    est = _estimator(kind, **penalties).fit(X, y)
    booster = est.to_xgboost()
    dtrain = xgb.DMatrix(X, _encoded(est, y))
    # XGBoost's refresh updater recomputes every node's statistics on the rows given, at the
    # scores of the trees before it: the gains XGBoost itself would have stored
    params = {"process_type": "update", "updater": "refresh", "refresh_leaf": False,
              "lambda": penalties.get("reg_lambda", 0.0),
              "alpha": penalties.get("reg_alpha", 0.0),
              "max_delta_step": penalties.get("max_delta_step", 0.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "you have manually specified the updater"
        refreshed = xgb.train(params, dtrain, booster.num_boosted_rounds(), xgb_model=booster)
    _same_stats_as_refreshed(booster, refreshed)


@pytest.mark.parametrize(("penalties", "saved"), [
    ({}, False), ({"reg_lambda": 1.0, "max_delta_step": 0.3}, False), ({"reg_lambda": 1.0}, True)])
def test_poisson_xgboost_export_has_the_growers_hessian(penalties, saved, tmp_path):
    """The grower's Poisson hessian is LightGBM's, ``exp(F + 0.7)``: XGBoost's count:poisson
    with its max_delta_step 0.7. XGBoost shares that name with the trees' max_delta_step
    (the grower's 0, or its own), which was written over the objective's: the export's
    hessian was ``exp(F)`` (the gains it stored 101% off when read back). Oracle: XGBoost's
    ``refresh`` updater recomputes every node's hessian sum and gain with the export's own
    objective and tree parameters, in memory, and loaded from its file (whose Booster has
    XGBoost's default tree parameters: the grower's lambda is passed)."""
    X, y = _data("poisson", n=1500)
    est = _estimator("poisson", **penalties).fit(X, y)
    booster = est.to_xgboost()
    learner = json.loads(booster.save_raw("json"))["learner"]
    assert float(learner["objective"]["poisson_regression_param"]["max_delta_step"]) == \
        pytest.approx(0.7)
    params = {"process_type": "update", "updater": "refresh", "refresh_leaf": False}
    if saved:
        booster.save_model(tmp_path / "m.json")
        booster = xgb.Booster(model_file=str(tmp_path / "m.json"))
        params["lambda"] = penalties["reg_lambda"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "you have manually specified the updater"
        refreshed = xgb.train(params, xgb.DMatrix(X, y), booster.num_boosted_rounds(),
                              xgb_model=booster)
    # (atol: a gain near 0 is a difference of float32 sums of 1e2..1e3)
    _same_stats_as_refreshed(booster, refreshed, gain_atol=1e-5)


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_lightgbm_export_stores_the_same_gains(kind):
    X, y = _data(kind, n=1500)
    est = _estimator(kind, reg_lambda=1.0).fit(X, y)
    own = [np.sort(np.asarray(t["loss_changes"])[np.asarray(t["left_children"]) >= 0])
           for t in _xgb_trees(est.to_xgboost())]
    frame = est.to_lightgbm().trees_to_dataframe()
    splits = frame[frame["split_gain"].notna()]
    for i, gains in enumerate(own):  # both hosts' gain is G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)
        np.testing.assert_allclose(np.sort(splits.loc[splits.tree_index == i, "split_gain"]),
                                   gains, rtol=1e-5)


@pytest.mark.parametrize(("host", "kind"), [
    ("lightgbm", "regression"), ("xgboost", "regression"), ("lightgbm file", "regression"),
    ("lightgbm", "binary"), ("xgboost", "binary"), ("lightgbm", "multiclass"),
    ("lightgbm", "poisson"), ("xgboost", "poisson"), ("xgboost file", "poisson")])
@pytest.mark.parametrize("penalties", [{}, {"reg_lambda": 3.0, "reg_alpha": 0.3,
                                            "max_delta_step": 0.05}])
def test_exports_are_scored_and_pruned_like_host_models(host, kind, penalties, tmp_path):
    X, y = _data(kind, n=2000)
    Xv, yv = _data(kind, n=1000, seed=1)
    est = _estimator(kind, **penalties).fit(X, y)
    y, yv = _encoded(est, y), _encoded(est, yv)
    if host.startswith("xgboost"):
        model = est.to_xgboost()
        if host == "xgboost file":
            model.save_model(tmp_path / "m.json")
            model = xgb.Booster(model_file=str(tmp_path / "m.json"))
    else:
        model = est.to_lightgbm()
        if host == "lightgbm file":
            model.save_model(tmp_path / "m.txt")
            model = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused as DART / edited trees, or warned, before
        splits = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
        # the leaves refit on the training rows with the penalties read from the export
        refit = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
    assert len(splits) > 15
    np.testing.assert_allclose(splits.biased_gain, splits.host_gain, rtol=1e-3)
    assert isinstance(pruned, type(model))
    if host.startswith("xgboost"):
        dm = xgb.DMatrix(X)
        before, after = model.predict(dm), refit.predict(dm)
    else:
        before, after = model.predict(X), refit.predict(X)
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-5)


def test_the_grower_keeps_its_own_gains_on_d():
    X, y = _data("regression", n=1500)
    est = _estimator("regression").fit(X, y)
    trees = est._result.forest.trees
    exported = uc.adapters.xgboost.read_model(est.to_xgboost()).forest.trees
    inner = [np.sort(t.host_gain[t.internal_nodes]) for t in trees]
    stored = [np.sort(t.host_gain[t.internal_nodes]) for t in exported]
    # the grower's B on D (its report's biased_gain) stays; the export's is over all rows
    assert not all(np.allclose(a, b, rtol=1e-3) for a, b in zip(inner, stored, strict=True))
    report = est.importance_report_.splits
    chosen = report[report["split"]]
    np.testing.assert_allclose(np.sort(chosen.biased_gain),
                               np.sort(np.concatenate(inner)), rtol=1e-6)


def test_gains_beyond_float32_are_exported_as_the_hosts_store_them():
    """Labels near 1e20 give split gains beyond float32's range. Oracle: XGBoost's own
    ``refresh`` of the export, which stores such a gain as ``inf``. The LightGBM export writes
    the same gains (``inf`` as LightGBM writes it; they were written 0, so LightGBM's gain
    importance said no feature mattered) and the fit and exports warn nothing (numpy's
    overflow warning leaked, once per tree)."""
    X, y = _data("regression", n=1500)
    y = 1e20 * y
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = _estimator("regression").fit(X, y)
        booster, exported = est.to_lightgbm(), est.to_xgboost()
    params = {"process_type": "update", "updater": "refresh", "refresh_leaf": False,
              "lambda": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "you have manually specified the updater"
        refreshed = xgb.train(params, xgb.DMatrix(X, y), exported.num_boosted_rounds(),
                              xgb_model=exported)
    host = [np.asarray(t["loss_changes"])[np.asarray(t["left_children"]) >= 0]
            for t in _xgb_trees(refreshed)]
    assert np.isinf(np.concatenate(host)).sum() > 10  # the case: many gains overflow
    written = [np.array(line.split("=", 1)[1].split(), dtype=np.float64)
               for line in booster.model_to_string().splitlines()
               if line.startswith("split_gain=")]
    for own, gains in zip(written, host, strict=True):
        np.testing.assert_allclose(np.sort(own), np.sort(gains), rtol=1e-4)
    # LightGBM's gain importance sums the gains it loaded: inf for every feature holding one
    features = [np.asarray(t["split_indices"])[np.asarray(t["left_children"]) >= 0]
                for t in _xgb_trees(refreshed)]
    expected = np.zeros(X.shape[1])
    np.add.at(expected, np.concatenate(features), np.concatenate(host))
    np.testing.assert_allclose(booster.feature_importance("gain"), expected, rtol=1e-4)
