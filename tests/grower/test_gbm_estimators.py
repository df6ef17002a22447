"""UnbiasedGBMRegressor / UnbiasedGBMClassifier: export to the hosts, the paper's claims on
the grower (Monte Carlo, fixed seeds), importance, early stopping, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
from grower_cases import grower_data, grower_estimator  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402

_data, _estimator = grower_data, grower_estimator


def _raw(est, X):
    return est._raw(X)


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("criterion", ["unbiased", "biased"])
def test_exported_lightgbm_predicts_as_the_grower(kind, criterion, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(kind)
    est = _estimator(kind, criterion=criterion).fit(X, y)
    assert sum(t.n_leaves for t in est._result.forest.trees) > len(est._result.forest.trees)
    booster = est.to_lightgbm()
    raw = booster.predict(X, raw_score=True).reshape(X.shape[0], -1)
    np.testing.assert_allclose(raw, _raw(est, X), rtol=0, atol=1e-9)
    # served by LightGBM alone: its own file round trip, and its own transform
    path = tmp_path / "model.txt"
    booster.save_model(str(path))
    again = lgb.Booster(model_file=str(path))
    pred = again.predict(X)
    if kind == "regression":
        np.testing.assert_allclose(pred, est.predict(X), rtol=0, atol=1e-9)
    else:
        proba = est.predict_proba(X)
        np.testing.assert_allclose(pred.reshape(X.shape[0], -1),
                                   proba[:, 1:] if kind == "binary" else proba, atol=1e-9)


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_exported_xgboost_predicts_as_the_grower(kind, tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y = _data(kind)
    est = _estimator(kind).fit(X, y)
    booster = est.to_xgboost()
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    again = xgb.Booster(model_file=str(path))
    dm = xgb.DMatrix(X, feature_names=[f"Column_{j}" for j in range(X.shape[1])])
    margin = again.predict(dm, output_margin=True).reshape(X.shape[0], -1)
    np.testing.assert_allclose(margin, _raw(est, X), rtol=0, atol=1e-6)
    # saved and loaded, it is read with the grower's learning rate and L2 (stored with the
    # trees), not XGBoost's defaults 0.3 and 1
    from unbiased_criteria.adapters import xgboost as ax

    read = ax.read_model(again)
    assert not read.leaf_params_unknown
    assert read.split_score.l2 == pytest.approx(est.reg_lambda)
    assert read.forest.trees[0].shrinkage == pytest.approx(est.learning_rate)


def test_export_keeps_dataframe_feature_names():
    lgb = pytest.importorskip("lightgbm")
    X, y = _data("regression", nan=0.0)
    frame = pd.DataFrame(X, columns=["größe", "b", "c", "d", "e"])
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(frame, y)
    assert isinstance(est.to_lightgbm(), lgb.Booster)
    assert est.to_lightgbm().feature_name() == ["größe", "b", "c", "d", "e"]
    assert list(est.importance_report_.to_frame().index) == ["größe", "b", "c", "d", "e"]


def test_null_data_makes_almost_no_splits():
    """y independent of X: 10 trees of at most 15 splits. A Monte Carlo of 30 seeds (this
    design) gave 10.3 splits per run (sd 5.8, max 28) for the unbiased rule against 150 (every
    tree full) for the ordinary one; the bound 40 per run is well outside that spread."""
    splits = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n = 1500
        X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 10, n),
                             rng.normal(size=n), rng.normal(size=n)]).astype(float)
        y = rng.normal(size=n)
        est = uc.UnbiasedGBMRegressor(n_estimators=10, num_leaves=16, random_state=seed)
        est.fit(X, y)
        splits.append(sum(t.n_leaves - 1 for t in est._result.forest.trees))
    assert max(splits) <= 40 and np.mean(splits) <= 20


def test_paper_example_first_split_is_x1():
    """y = 0.1 X1 + N(0, 1), 10000 rows: the first tree's root splits on X1. A Monte Carlo
    gave 30 of 30 seeds (5000 rows: 24 of 30, 3 with no split); required: 18 of 20."""
    roots = []
    for seed in range(20):
        X, y = paper_example(10000, random_state=seed, as_frame=False)
        tree = uc.UnbiasedGBMRegressor(n_estimators=1, random_state=seed).fit(
            X, y)._result.forest.trees[0]
        roots.append(tree.feature[0] if tree.n_leaves > 1 else -1)
    assert np.sum(np.array(roots) == 0) >= 18


def test_noise_importance_not_positive_in_expectation():
    """Null data, one tree of 16 leaves, 60 seeds: every feature's mean importance is at most
    2 standard errors above 0 (a Monte Carlo of 100 seeds gave -0.2, -0.8, -1.4, +0.1 with
    SE 0.2-0.5 for a binary, a 10-level and two continuous features)."""
    imp = []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = 1500
        X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 10, n),
                             rng.normal(size=n), rng.normal(size=n)]).astype(float)
        est = uc.UnbiasedGBMRegressor(n_estimators=1, num_leaves=16, random_state=seed)
        imp.append(est.fit(X, rng.normal(size=n)).unbiased_gain_)  # signed: a mean of 0
    imp = np.array(imp)
    se = imp.std(axis=0, ddof=1) / np.sqrt(len(imp))
    assert np.all(imp.mean(axis=0) <= 2 * se)


def test_importance_ranks_the_signal_first_and_report_matches():
    X, y = paper_example(10000, random_state=1, as_frame=False)
    est = uc.UnbiasedGBMRegressor(n_estimators=20, random_state=1).fit(X, y)
    imp = est.unbiased_gain_
    assert np.argmax(imp) == 0 and imp[0] > 0
    np.testing.assert_array_equal(est.feature_importances_, np.maximum(imp, 0.0))
    frame = est.importance_report_.to_frame()
    np.testing.assert_allclose(frame["unbiased_gain"].to_numpy(), imp)
    splits = est.importance_report_.splits
    assert {"feature", "threshold", "chosen", "decision_gain", "split"} <= set(splits.columns)
    # every split the model made is in the report, decided by U > 0 on D2'
    made = sum(t.n_leaves - 1 for t in est._result.forest.trees)
    assert splits["split"].sum() == made
    assert (splits.loc[splits["split"], "decision_gain"] > 0).all()


def test_early_stopping_keeps_the_best_iteration():
    X, y = _data("regression", n=3000, nan=0.0)
    Xv, yv = _data("regression", n=2000, seed=1, nan=0.0)
    est = uc.UnbiasedGBMRegressor(n_estimators=300, learning_rate=0.3,
                                  early_stopping_rounds=5, random_state=0)
    est.fit(X, y, eval_set=[(Xv, yv)])
    hist = est.evals_result_["valid_0"]["l2"]  # LightGBM's layout: set, metric, iterations
    assert est.best_iteration_ < len(hist) < 300
    assert est.best_iteration_ == int(np.argmin(hist)) + 1
    assert est.best_score_ == {"valid_0": {"l2": hist[est.best_iteration_ - 1]}}
    assert len(est._result.forest.trees) == est.best_iteration_


@pytest.mark.parametrize("kind, alias, name", [
    ("regression", "mse", "l2"), ("regression", "mae", "l1"), ("regression", "l2_root", "rmse"),
    ("binary", "logloss", "binary_logloss"), ("binary", "error", "binary_error"),
    ("multiclass", "multiclass", "multi_logloss"), ("multiclass", "merror", "multi_error"),
])
def test_metric_aliases_are_keyed_by_lightgbms_names(kind, alias, name):
    """evals_result_ was keyed by the alias typed ('mse'), where LightGBM keys 'l2'."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(kind, n=600, nan=0.0)
    est = _estimator(kind).set_params(n_estimators=3).fit(X, y, eval_set=[(X, y)],
                                                          eval_metric=alias)
    assert list(est.evals_result_["valid_0"]) == [name]
    if alias == "merror":  # XGBoost's name, which the grower takes too
        return
    host = (lgb.LGBMRegressor if kind == "regression" else lgb.LGBMClassifier)(
        n_estimators=2, verbose=-1).fit(X, y, eval_set=[(X.copy(), y)], eval_metric=alias)
    assert name in host.evals_result_["valid_0"]  # the oracle: LightGBM's own key


def test_ratios_shared_validation_and_sample_weight():
    X, y = _data("regression", nan=0.0)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=y.size)
    est = uc.UnbiasedGBMRegressor(n_estimators=5, ratios=(1, 1), random_state=0)
    est.fit(X, y, sample_weight=w)
    assert np.isfinite(est.predict(X)).all()
    assert est.feature_importances_[0] == est.feature_importances_.max()


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    for est in (uc.UnbiasedGBMRegressor(n_estimators=10),
                uc.UnbiasedGBMClassifier(n_estimators=10)):
        failed = [r for r in check_estimator(est, on_fail=None) if r["status"] == "failed"]
        assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]


def test_bad_input():
    X, y = _data("regression", n=200, nan=0.0)
    with pytest.raises(ValueError, match="ratios"):
        uc.UnbiasedGBMRegressor(ratios=(1, 0, 1)).fit(X, y)
    with pytest.raises(ValueError, match="criterion"):
        uc.UnbiasedGBMRegressor(criterion="gini").fit(X, y)
    with pytest.raises(ValueError, match="objective"):
        uc.UnbiasedGBMRegressor(objective="quantile").fit(X, y)
    bad = X.copy()
    bad[0, 1] = -1.0
    with pytest.raises(ValueError, match="categorical feature 1 must hold non-negative integer"):
        uc.UnbiasedGBMRegressor().fit(bad, y, categorical_feature=[1])
    with pytest.raises(ValueError, match="categorical_feature: no column named 'z'"):
        uc.UnbiasedGBMRegressor().fit(pd.DataFrame(X).rename(columns=str), y,
                                      categorical_feature=["z"])


@pytest.mark.parametrize("cls", [uc.UnbiasedGBMRegressor, uc.UnbiasedGBMClassifier])
def test_categorical_feature_takes_a_list_not_a_lone_name(cls):
    # "ab" was iterated letter by letter: columns a and b categorical, ab not, silently
    rng = np.random.default_rng(0)
    X = pd.DataFrame({c: rng.integers(0, 5, 300).astype(float) for c in ("a", "b", "ab")})
    y = (X["ab"].to_numpy() == 2).astype(float)
    est = cls(n_estimators=2, random_state=0)
    for lone in ("ab", np.str_("ab"), 2, np.int64(2)):
        with pytest.raises(ValueError, match=r"categorical_feature: expected 'auto' or a list"):
            est.fit(X, y, categorical_feature=lone)
        with pytest.raises(ValueError, match=r"categorical_feature: expected 'auto' or a list"):
            est.fit(X.to_numpy(), y, categorical_feature=lone)
    for listed in (["ab"], [2], ("ab",), np.array([2])):
        est.fit(X, y, categorical_feature=listed)
        assert est._result.binner.categorical.tolist() == [False, False, True]


def test_classifier_objective_is_honoured_or_refused():
    # objective was checked, then the loss was picked from the class count alone
    import json

    xgb = pytest.importorskip("xgboost")
    X, y3 = _data("multiclass", n=600)
    with pytest.raises(ValueError, match=r"objective: 'binary' needs 2 classes, y has 3"):
        _estimator("multiclass", objective="binary").fit(X, y3)
    X, y = _data("binary", n=600)
    soft = _estimator("binary", objective="multiclass").fit(X, y)
    booster = soft.to_xgboost()  # the host's own reading of the model
    config = json.loads(booster.save_config())["learner"]
    assert config["objective"]["name"] == "multi:softprob"
    assert config["learner_model_param"]["num_class"] == "2"
    dm = xgb.DMatrix(X, feature_names=[f"Column_{j}" for j in range(X.shape[1])])
    np.testing.assert_allclose(soft.predict_proba(X), booster.predict(dm), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(soft.classes_, ["no", "yes"])
    # one score per class: two trees a round, where "binary" (and None) grow one
    logistic = _estimator("binary", objective="binary").fit(X, y)
    assert len(soft._result.forest.trees) == 2 * len(logistic._result.forest.trees)
    default = _estimator("binary").fit(X, y)
    np.testing.assert_array_equal(default.predict_proba(X), logistic.predict_proba(X))
    config = json.loads(logistic.to_xgboost().save_config())["learner"]
    assert config["objective"]["name"] == "binary:logistic"


def test_import_does_not_need_scikit_learn():
    code = ("import sys, unbiased_criteria as uc; assert 'sklearn' not in sys.modules; "
            "uc.UnbiasedGBMRegressor; assert 'sklearn' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_poisson_exports_predict_as_the_grower():
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 3)).astype(np.float32).astype(np.float64)
    y = rng.poisson(np.exp(0.5 * X[:, 0]))
    X[rng.random(X.shape) < 0.1] = np.nan
    est = uc.UnbiasedGBMRegressor(objective="poisson", n_estimators=10, random_state=0).fit(X, y)
    raw = _raw(est, X)[:, 0]
    assert isinstance(est.to_lightgbm(), lgb.Booster)
    np.testing.assert_allclose(est.to_lightgbm().predict(X, raw_score=True), raw, atol=1e-9)
    dm = xgb.DMatrix(X, feature_names=[f"Column_{j}" for j in range(3)])
    np.testing.assert_allclose(est.to_xgboost().predict(dm, output_margin=True), raw, atol=1e-6)
    np.testing.assert_allclose(est.predict(X), np.exp(raw))


def _categorical_data(n=4000, seed=5):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 12, n).astype(float)  # many-vs-many (more than 4 categories)
    c2 = rng.integers(0, 3, n).astype(float)  # one-vs-rest
    y = rng.normal(size=12)[c.astype(int)] + 0.5 * (c2 == 1) + 0.5 * rng.normal(size=n)
    c[rng.random(n) < 0.1] = np.nan
    X = np.column_stack([rng.normal(size=n).astype(np.float32).astype(np.float64), c, c2])
    return X, y


@pytest.mark.parametrize("kind", ["regression", "multiclass"])
def test_categorical_splits_export_to_both_hosts(kind):
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    X, y = _categorical_data()
    if kind == "multiclass":
        y = np.digitize(y, [-0.5, 0.5])
    est = _estimator(kind).fit(X, y, categorical_feature=[1, 2])
    trees = est._result.forest.trees
    cat_nodes = sum(int((t.categorical & ~t.is_leaf).sum()) for t in trees)
    assert cat_nodes > len(trees)  # category-set splits on both kinds of feature
    sizes = {len(t.category_set(v)) for t in trees for v in t.internal_nodes if t.categorical[v]}
    assert max(sizes) > 1
    raw = _raw(est, X)
    booster = est.to_lightgbm()
    assert isinstance(booster, lgb.Booster)
    np.testing.assert_allclose(booster.predict(X, raw_score=True).reshape(X.shape[0], -1), raw,
                               rtol=0, atol=1e-9)
    dm = xgb.DMatrix(X, feature_types=["q", "c", "c"], enable_categorical=True,
                     feature_names=[f"Column_{j}" for j in range(3)])
    np.testing.assert_allclose(
        est.to_xgboost().predict(dm, output_margin=True).reshape(X.shape[0], -1), raw,
        rtol=0, atol=1e-6)


def test_pandas_categoricals_are_coded_with_the_training_categories():
    lgb = pytest.importorskip("lightgbm")
    X, y = _categorical_data()
    names = {0.0: "a", 1.0: "b", 2.0: "c"}
    frame = pd.DataFrame({"x": X[:, 0], "c": pd.Categorical(X[:, 1]),
                          "c2": pd.Categorical([names[v] for v in X[:, 2]])})
    est = uc.UnbiasedGBMRegressor(n_estimators=10, random_state=0).fit(frame, y)
    assert est._result.binner.categorical.tolist() == [False, True, True]
    # the same rows with the categories listed in another order predict the same
    shuffled = frame.assign(c2=frame["c2"].cat.reorder_categories(["c", "a", "b"]))
    np.testing.assert_array_equal(est.predict(shuffled), est.predict(frame))
    booster = est.to_lightgbm()
    assert isinstance(booster, lgb.Booster)
    np.testing.assert_allclose(booster.predict(frame), est.predict(frame), rtol=0, atol=1e-9)
    np.testing.assert_allclose(booster.predict(shuffled), est.predict(frame), rtol=0, atol=1e-9)


def test_xgboost_export_keeps_pandas_categories():
    """XGBoost 3.1+ keeps a DataFrame's categories in its model: the exported one codes a
    frame listing them in another order by value, as the grower does."""
    xgb = pytest.importorskip("xgboost")
    if not hasattr(xgb.Booster, "get_categories"):
        pytest.skip("XGBoost before 3.1 keeps no categories")
    X, y = _categorical_data()
    codes = np.where(np.isnan(X[:, 1]), -1, X[:, 1]).astype(int)
    frame = pd.DataFrame({"x": X[:, 0],
                          "c": pd.Categorical.from_codes(codes, categories=list(range(12))),
                          "c2": pd.Categorical(np.array(["a", "b", "c"])[X[:, 2].astype(int)])})
    est = uc.UnbiasedGBMRegressor(n_estimators=10, random_state=0).fit(frame, y)
    booster = est.to_xgboost()
    shuffled = frame.assign(c2=frame["c2"].cat.reorder_categories(["c", "a", "b"]),
                            c=frame["c"].cat.reorder_categories(list(range(11, -1, -1))))
    assert (shuffled["c2"].cat.codes != frame["c2"].cat.codes).any()
    for rows in (frame, shuffled):
        got = booster.predict(xgb.DMatrix(rows, enable_categorical=True))
        np.testing.assert_allclose(got, est.predict(frame), rtol=0, atol=1e-6)
    # the library reads the model it wrote (its router codes by the stored categories)
    report = uc.unbiased_importance(booster, None, None, shuffled, y, n_blocks=0)
    assert report.to_frame()["splits"].sum() > 0
    np.testing.assert_array_equal(
        report.to_frame(),
        uc.unbiased_importance(booster, None, None, frame, y, n_blocks=0).to_frame())
    # float categories XGBoost does not keep: said, and the codes predict
    floats = frame.assign(c=pd.Categorical(X[:, 1]))
    est = uc.UnbiasedGBMRegressor(n_estimators=10, random_state=0).fit(floats, y)
    with pytest.warns(UserWarning, match=r"only string or integer categories, not those of "
                                         r"\['c'\]"):
        booster = est.to_xgboost()
    coded = floats.assign(c=floats["c"].cat.codes.replace(-1, np.nan))
    dm = xgb.DMatrix(coded, feature_types=["q", "c", "c"], enable_categorical=True)
    np.testing.assert_allclose(booster.predict(dm), est.predict(floats), rtol=0, atol=1e-6)


def test_xgboost_export_refuses_names_xgboost_refuses():
    pytest.importorskip("xgboost")
    X, y = _data("regression")
    frame = pd.DataFrame(X, columns=["x[0]", "a<b", "ok", "d", "e"])
    est = uc.UnbiasedGBMRegressor(n_estimators=2, random_state=0).fit(frame, y)
    with pytest.raises(ValueError, match=r"XGBoost refuses .*\['x\[0\]', 'a<b'\]"):
        est.to_xgboost()


def test_leaves_are_newton_steps_of_all_training_rows():
    """Tree 0's leaves: lr * leaf_weight(G, H) over every training row in the leaf (D, D1'
    and D2' together), with L1, L2 and max_delta_step."""
    from unbiased_criteria.gains import SplitScore, leaf_weight
    from unbiased_criteria.objectives import make_objective
    from unbiased_criteria.trees import route_rows

    X, y = _data("binary", nan=0.05)
    est = uc.UnbiasedGBMClassifier(n_estimators=1, learning_rate=0.3, reg_alpha=0.5,
                                   reg_lambda=2.0, max_delta_step=0.8, random_state=0)
    est.fit(X, y)
    tree = est._result.forest.trees[0]
    assert tree.n_leaves > 2
    yb = (y == "yes").astype(np.float64)
    obj = make_objective("binary_logistic")
    g, h = obj.grad_hess(yb, np.full(yb.size, obj.init_score(yb)[0]))
    leaf = route_rows(tree, X.astype(np.float32).astype(np.float64))
    G = np.bincount(leaf, g.astype(np.float64), minlength=tree.n_nodes)
    H = np.bincount(leaf, h.astype(np.float64), minlength=tree.n_nodes)
    want = 0.3 * leaf_weight(G, H, SplitScore(l1=0.5, l2=2.0, max_delta_step=0.8))
    np.testing.assert_allclose(tree.value[tree.is_leaf], want[tree.is_leaf], rtol=1e-12)


def test_leaf_budget_depth_and_rows_per_leaf():
    X, y = _data("regression", n=6000, nan=0.0)
    est = uc.UnbiasedGBMRegressor(n_estimators=5, num_leaves=7, max_depth=2,
                                  min_child_samples=50, criterion="biased", random_state=0)
    est.fit(X, y)
    for tree in est._result.forest.trees:
        assert tree.n_leaves <= 4 and tree.max_depth <= 2
        assert tree.host_count[tree.is_leaf].min() >= 50
    est = uc.UnbiasedGBMRegressor(n_estimators=3, num_leaves=7, min_child_samples=50,
                                  criterion="biased", random_state=0).fit(X, y)
    assert max(t.n_leaves for t in est._result.forest.trees) == 7


@pytest.mark.parametrize("kind", ["regression", "binary"])
def test_importance_standard_errors_and_select(kind):
    """n_blocks=20: finite positive standard errors for the features with candidates, and
    select() picks the strong signal of a clear case and no pure-noise column."""
    rng = np.random.default_rng(7)
    n = 6000
    X = rng.normal(size=(n, 4))
    signal = X[:, 0] + rng.normal(size=n)
    y = signal if kind == "regression" else (signal > 0).astype(int)
    est = _estimator(kind, n_blocks=20).fit(X, y)
    report = est.importance_report_
    se = report.std_error()
    assert np.all(np.isfinite(se)) and np.all(se > 0)
    assert report.select() == ["Column_0"]
    assert _estimator(kind).fit(X, y).importance_report_.std_error().isna().all()


def test_standard_errors_calibrated_on_null_data():
    """One tree on null data, 100 seeds x 4 features: U / SE has mean ~0 and sd ~1 (measured
    0.03/-0.04/-0.08/-0.10 and 0.92-1.14), and select() picks about alpha of the noise
    features (measured 0.055 at 0.05). Bounds: |mean| < 0.3 (3 SE of a mean over 100) and
    sd in [0.8, 1.25] per feature; share selected <= 0.1."""
    z, picked = [], 0
    for seed in range(100):
        rng = np.random.default_rng(1000 + seed)
        n = 2000
        X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 10, n),
                             rng.normal(size=n), rng.normal(size=n)]).astype(float)
        est = uc.UnbiasedGBMRegressor(n_estimators=1, num_leaves=16, n_blocks=20,
                                      random_state=seed).fit(X, rng.normal(size=n))
        report = est.importance_report_
        frame = report.to_frame()
        z.append((frame["unbiased_gain"] / frame["std_error"]).to_numpy())
        picked += len(report.select())
    z = np.array(z)
    assert np.all(np.abs(z.mean(axis=0)) < 0.3)
    assert np.all((z.std(axis=0) > 0.8) & (z.std(axis=0) < 1.25))
    assert picked / z.size <= 0.1


def test_n_jobs_is_ignored_with_a_warning():
    """The grower runs on one thread: n_jobs=None or 1 is silent, anything else warns."""
    import warnings

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.normal(size=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.UnbiasedGBMRegressor(n_estimators=2, n_jobs=1).fit(X, y)
    with pytest.warns(UserWarning, match="n_jobs=-1 is ignored"):
        uc.UnbiasedGBMRegressor(n_estimators=2, n_jobs=-1).fit(X, y)


def test_missing_eval_labels_of_a_classifier_are_one_error():
    """A None among text eval labels failed inside numpy's searchsorted (TypeError)."""
    X, y = _data("binary", n=300, nan=0.0)
    ey = y[:50].astype(object)
    ey[3] = None
    with pytest.raises(ValueError, match=r"eval_set: contains missing labels \(None or NaN\)"):
        uc.UnbiasedGBMClassifier(n_estimators=2).fit(X, y, eval_set=[(X[:50], ey)])


def test_small_input_errors_and_a_report_without_host_gains():
    X, y = _data("regression", n=300, nan=0.0)
    # labels beyond float32: the message blamed the init score and suggested poisson labels
    with pytest.raises(ValueError, match=r"y: labels must lie within float32's range"):
        uc.UnbiasedGBMRegressor(n_estimators=2).fit(X, y * 1e39)
    # an iterator of ratios was used up by the check and reported as "got ()"
    with pytest.raises(ValueError, match="ratios: expected 2 or 3 positive numbers .*generator"):
        uc.UnbiasedGBMRegressor(ratios=(v for v in (1, 1, 1))).fit(X, y)
    # the grower has no host gain: NaN per feature, not a sum of nothing shown as 0
    est = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X, y)
    assert est.importance_report_.splits["host_gain"].isna().all()
    assert est.importance_report_.to_frame()["host_gain"].isna().all()


def test_a_split_on_missingness_exports_to_both_hosts():
    """'Every value left, NaN right' (threshold: the largest float32): both exports route as
    the grower, the largest float32 itself and its negative included (XGBoost's '<' has no
    threshold above it but inf: it is written 'v < -largest', children swapped)."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n = 2000
    flag = np.where(rng.random(n) < 0.5, 1.0, np.nan)
    X = np.column_stack([flag, rng.normal(size=n)])
    y = np.where(np.isnan(flag), 2.0, 0.0) + X[:, 1] + 0.1 * rng.normal(size=n)
    est = uc.UnbiasedGBMRegressor(n_estimators=5, learning_rate=0.5, random_state=0).fit(X, y)
    top = float(np.finfo(np.float32).max)
    assert any(top in t.threshold for t in est._result.forest.trees)
    q = np.array([[1.0, 0.0], [np.nan, 0.0], [top, 0.5], [-top, -0.5], [1e38, 1.0],
                  [-1e38, 2.0]])
    own = est.predict(q)
    assert isinstance(est.to_lightgbm(), lgb.Booster)
    np.testing.assert_allclose(est.to_lightgbm().predict(q), own, rtol=0, atol=1e-9)
    dm = xgb.DMatrix(q, feature_names=["Column_0", "Column_1"])
    np.testing.assert_allclose(est.to_xgboost().predict(dm), own, rtol=0, atol=1e-6)
