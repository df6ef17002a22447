"""Pruning keeps the hosts' monotone constraints: a collapsed (or refit) node's value is
clipped to the bounds the constrained splits above it imply, and nodes below a constrained
split whose two sides' leaves overlap are left as the host grew them. Checked on the
predictions of the returned host models, exactly (a float sum of monotone trees is
monotone): before, both hosts' pruned models broke the constraints by up to 0.14."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import lightgbm as ul  # noqa: E402
from unbiased_criteria.adapters import xgboost as ux  # noqa: E402

GRID = np.linspace(-3, 3, 61)


def _data(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = (0.2 * X[:, 0] - 0.3 * X[:, 3] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 0]
         + 0.5 * rng.standard_normal(n))
    return X, y


def _worst_step(predict, feature, sign, seed=9):
    """The most negative change of ``sign * prediction`` as ``feature`` grows, other features
    held at each of 60 random rows (0.0 when monotone)."""
    base = np.random.default_rng(seed).standard_normal((60, 4))
    Z = np.repeat(base, GRID.size, axis=0)
    Z[:, feature] = np.tile(GRID, base.shape[0])
    p = np.asarray(predict(Z)).reshape(base.shape[0], GRID.size, -1)
    return float((np.diff(p, axis=1) * sign).min())


def _monotone(predict):
    return _worst_step(predict, 0, 1) >= 0 and _worst_step(predict, 3, -1) >= 0


@pytest.mark.parametrize("method, seed", [("basic", 1), ("advanced", 1), ("intermediate", 0)])
def test_lightgbm_pruned_models_stay_monotone(method, seed):
    X, y = _data(seed, 3000)
    Xv, yv = _data(seed + 100, 2000)
    params = {"objective": "regression", "num_leaves": 31, "verbose": -1, "seed": seed,
              "monotone_constraints": [1, 0, 0, -1], "monotone_constraints_method": method,
              "learning_rate": 0.1, "min_data_in_leaf": 5}
    plain = lgb.train(params, lgb.Dataset(X, y), 80)
    assert _monotone(plain.predict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # host gains will not match: expected
        hook = ul.train(params, lgb.Dataset(X, y), 80, random_state=seed)
        pruned = uc.prune(plain, X, y, Xv, yv, random_state=0)
        refit = uc.prune(plain, X, y, Xv, yv, random_state=0, refit_leaves=True)
    assert ul.training_splits(hook)["kept"].mean() < 1  # something was pruned
    for model in (hook, pruned, refit):
        assert _monotone(model.predict)
    assert pruned.num_trees() == plain.num_trees()
    assert sum(t["num_leaves"] for t in pruned.dump_model()["tree_info"]) < \
        sum(t["num_leaves"] for t in plain.dump_model()["tree_info"])


@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softprob"])
def test_xgboost_pruned_models_stay_monotone(objective):
    X, y = _data(0, 3000)
    Xv, yv = _data(100, 2000)
    if objective.startswith("multi"):
        cuts = np.quantile(y, [0.33, 0.66])
        y, yv = np.digitize(y, cuts).astype(float), np.digitize(yv, cuts).astype(float)
    params = {"objective": objective, "max_depth": 5, "eta": 0.1, "seed": 0,
              "monotone_constraints": "(1,0,0,-1)", "nthread": 1}
    if objective.startswith("multi"):
        params["num_class"] = 3
    d = xgb.DMatrix(X, y)
    plain = xgb.train(params, d, 60)

    def margins(model):
        return lambda Z: model.predict(xgb.DMatrix(Z), output_margin=True)

    assert _monotone(margins(plain))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        hook = ux.train(params, d, 60, random_state=0, verbose_eval=False)
        pruned = uc.prune(plain, X, y, Xv, yv, random_state=0, refit_leaves=True)
    assert ux.training_splits(hook)["kept"].mean() < 1
    for model in (hook, pruned):
        assert _monotone(margins(model))


@pytest.mark.parametrize("as_dict", [False, True])
def test_histgradientboosting_pruned_models_stay_monotone(as_dict):
    pd = pytest.importorskip("pandas")
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y = _data(1, 3000)
    Xv, yv = _data(101, 2000)
    names = ["a", "b", "c", "d"]
    X, Xv = pd.DataFrame(X, columns=names), pd.DataFrame(Xv, columns=names)
    cst = {"a": 1, "d": -1} if as_dict else [1, 0, 0, -1]
    model = HistGradientBoostingRegressor(max_iter=60, monotonic_cst=cst, early_stopping=False,
                                          random_state=0).fit(X, y)

    def predict(m):
        return lambda Z: m.predict(pd.DataFrame(Z, columns=names))

    assert _monotone(predict(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for refit in (False, True):
            assert _monotone(predict(uc.prune(model, X, y, Xv, yv, random_state=0,
                                              refit_leaves=refit)))


def test_dumped_models_keep_the_monotone_constraints_given_in_host_params():
    """A dump stores no constraints: given in ``host_params`` (LightGBM's list, XGBoost's
    string or dict by feature name), a pruned dump equals the pruned Booster's dump."""
    import json

    X, y = _data(1, 2000)
    Xv, yv = _data(101, 1500)
    params = {"objective": "regression", "num_leaves": 31, "verbose": -1, "seed": 1,
              "monotone_constraints": [1, 0, 0, -1], "learning_rate": 0.1, "lambda_l2": 1.0}
    booster = lgb.train(params, lgb.Dataset(X, y), 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = uc.prune(booster, X, y, Xv, yv, random_state=0).dump_model()["tree_info"]
        got = uc.prune(booster.dump_model(), X, y, Xv, yv, random_state=0,
                       host_params={"lambda_l2": 1.0, "monotone_constraints": [1, 0, 0, -1]})
    assert got["tree_info"] == want
    xparams = {"max_depth": 5, "eta": 0.1, "monotone_constraints": "(1,0,0,-1)"}
    xb = xgb.train(xparams, xgb.DMatrix(X, y), 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # recomputed gains will not match
        want = [json.loads(t) for t in uc.prune(xb, X, y, Xv, yv, random_state=0).get_dump(
            dump_format="json", with_stats=True)]
    base = json.loads(xb.save_config())["learner"]["learner_model_param"]["base_score"]
    for given in ("(1,0,0,-1)", {"f0": 1, "f3": -1}):
        hp = {"objective": "reg:squarederror", "base_score": base, "eta": 0.1, "lambda": 1.0,
              "monotone_constraints": given}
        got = uc.prune(xb.get_dump(dump_format="json", with_stats=True), X, y, Xv, yv,
                       random_state=0, host_params=hp)
        assert [json.loads(t) for t in got] == want
