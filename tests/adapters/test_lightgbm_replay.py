"""Full replay of LightGBM models through the core: the host's stored node statistics, split
gains and raw scores are the oracle for every tree, not only the first."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _lightgbm_data import labels
from _lightgbm_data import make_data as _make_data

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.api import prune_forest  # noqa: E402
from unbiased_criteria.replay import RowSet, replay, resolve_bias  # noqa: E402

N = 800
BASE = dict(
    num_leaves=7, learning_rate=0.2, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1.0,
    max_cat_to_onehot=4, verbose=-1, deterministic=True, num_threads=1,
)


def make_data(n: int = N, seed: int = 3):
    return _make_data(n, seed, n_features=5)


CASES = [
    ("regression", {}, False),
    ("binary", {}, False),
    ("multiclass", {}, False),
    ("poisson", {}, False),
    ("multiclassova", {}, False),
    ("tweedie", {"tweedie_variance_power": 1.3}, False),
    ("regression", {}, True),
    ("multiclass", {}, True),
    ("regression", {"lambda_l1": 0.5, "lambda_l2": 2.0}, False),
    ("binary", {"max_delta_step": 0.3, "lambda_l2": 1.0}, True),
    ("binary", {"scale_pos_weight": 2.5, "min_gain_to_split": 0.2}, False),
    ("regression", {"zero_as_missing": True, "cat_l2": 4.0}, False),
    ("regression", {"use_missing": False, "max_cat_to_onehot": 9}, False),
    ("huber", {"alpha": 0.7}, False),
    ("fair", {"fair_c": 0.5}, True),
    ("gamma", {}, False),
    ("cross_entropy", {}, True),
]


def fit(kind, params, weighted, keep, rounds=6):
    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    w = rng.uniform(0.5, 2.0, N) if weighted else None
    p = {**BASE, "objective": kind, **params}
    if kind in ("multiclass", "multiclassova"):
        p["num_class"] = 3
    ds = lightgbm.Dataset(X, y, weight=w, categorical_feature=[2, 3])
    return lightgbm.train(p, ds, rounds, keep_training_booster=keep), X, y, w


@pytest.mark.parametrize("keep,rtol", [(True, 1e-6), (False, 1e-5)])
@pytest.mark.parametrize("kind,params,weighted", CASES)
def test_replayed_gains_and_stats_match_the_host(kind, params, weighted, keep, rtol):
    booster, X, y, w = fit(kind, params, weighted, keep)
    report = uc.unbiased_importance(
        booster, X, y, X[:200], y[:200], train_weight=w,
        valid_weight=None if w is None else w[:200], random_state=0,
    )
    s = report.splits
    assert len(s) >= 6 * booster.num_model_per_iteration() * 3
    assert s["categorical"].any() and (~s["categorical"]).any()
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=rtol)
    # keep_training_booster: full-precision internal_weight; else 6 significant digits
    np.testing.assert_allclose(s["sum_hessian"], s["host_hessian"], rtol=1e-7 if keep else 1e-5)
    np.testing.assert_array_equal(s["n_train"], s["host_count"])

    # the replayed raw scores are the host's
    read = adapter.read_model(booster)
    read = resolve_bias(read, read.objective, y, w)
    router = adapter.make_router(booster, read, X, "X_train", memory_budget=4 * N * 3)
    result = replay(read, read.objective, train=RowSet(router, y, w))
    host = booster.predict(X, raw_score=True).reshape(N, -1)
    np.testing.assert_allclose(result.raw_train, host, rtol=0, atol=1e-9)


def test_init_score_from_labels_equals_data_free_estimate():
    booster, X, y, _ = fit("binary", {}, False, True)
    read = adapter.read_model(booster)
    from_labels = resolve_bias(read, read.objective, y, None)
    assert from_labels.forest.trees[0].bias == pytest.approx(read.forest.trees[0].bias, rel=1e-7)


def test_bagged_model_warns_and_gains_do_not_match():
    booster, X, y, _ = fit("regression", {"bagging_fraction": 0.5, "bagging_freq": 1}, False, True)
    with pytest.warns(UserWarning, match="bagging"):
        report = uc.unbiased_importance(booster, X, y, X[:200], y[:200], random_state=0)
    s = report.splits
    # the host's statistics come from the bags; ours from every training row
    assert (s["n_train"] != s["host_count"]).any()
    assert np.isfinite(s["unbiased_gain"]).all()


@pytest.mark.parametrize("estimator", ["booster", "classifier"])
def test_pruned_model_predicts_its_replayed_scores(estimator):
    X, signal, rng = make_data()
    y = labels("binary", signal, rng)
    X[:, 4] = rng.normal(size=N)  # pure noise, gets pruned
    params = {**BASE, "objective": "binary", "num_leaves": 15}
    if estimator == "booster":
        model = lightgbm.train(params, lightgbm.Dataset(X[:600], y[:600],
                                                        categorical_feature=[2, 3]), 8)
    else:
        model = lightgbm.LGBMClassifier(n_estimators=8, **params).fit(
            X[:600], y[:600], categorical_feature=[2, 3]
        )
    args = (model, X[:600], y[:600], X[600:], y[600:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plain model: no replay warnings
        result = prune_forest(*args, random_state=1)
    assert result.leaves_after < result.leaves_before
    pruned = uc.prune(*args, random_state=1)
    assert type(pruned) is type(model)
    booster = pruned if estimator == "booster" else pruned.booster_
    np.testing.assert_allclose(
        booster.predict(X[:600], raw_score=True), result.replay.raw_train[:, 0], atol=1e-9
    )
    np.testing.assert_allclose(
        booster.predict(X[600:], raw_score=True), result.replay.raw_valid[:, 0], atol=1e-9
    )
    leaves = sum(t["num_leaves"] for t in booster.dump_model()["tree_info"])
    assert leaves == result.leaves_after


def test_validation_only_mode_uses_the_data_free_init_score():
    booster, X, y, _ = fit("regression", {}, False, True)
    # replayed without training rows, from the data-free init score: the host's raw scores
    read = adapter.read_model(booster)
    read = resolve_bias(read, read.objective, None, None)
    router = adapter.make_router(booster, read, X[:300], "X_valid")
    result = replay(read, read.objective, train=None, valid=RowSet(router, y[:300]))
    assert result.raw_train is None
    np.testing.assert_allclose(result.raw_valid[:, 0], booster.predict(X[:300], raw_score=True),
                               rtol=0, atol=1e-9)
    huber, X, y, _ = fit("huber", {}, False, True)
    with pytest.raises(ValueError, match="X_train and y_train"):
        uc.unbiased_importance(huber, None, None, X[:300], y[:300])


def test_is_unbalance_model_takes_its_objective_from_the_training_labels():
    """LightGBM's is_unbalance class weights come from the training label counts, which the
    model does not store: the training rows give them (as they give the init score), or an
    objective built from the labels; without training rows it is one error saying so."""
    import pandas as pd

    booster, X, y, _ = fit("binary", {"is_unbalance": True}, False, True)
    read = adapter.read_model(booster)
    objective = adapter.make_objective("binary", read, y_train=y)
    assert objective.pos_weight * objective.neg_weight > 1.05  # the counts weigh the classes
    Xv = X[:200] + 1e-3  # held-out rows (not training rows): needed, not what is tested
    with warnings.catch_warnings():  # the objective asked for is given: no warning asks again
        warnings.simplefilter("error")
        report = uc.unbiased_importance(booster, X, y, Xv, y[:200], objective=objective)
        built = uc.unbiased_importance(booster, X, y, Xv, y[:200])
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-6)
    pd.testing.assert_frame_equal(built.splits, s)
    pruned = uc.prune(booster, X, y, Xv, y[:200], threshold=-np.inf)
    np.testing.assert_allclose(pruned.predict(X, raw_score=True),
                               booster.predict(X, raw_score=True), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="y_train=y_train"):
        uc.unbiased_importance(booster, X, y, Xv, y[:200], objective="binary")
    with pytest.raises(ValueError, match=r"pass the training rows \(X_train, y_train; --train "
                                         r"on the command line\), whose labels give the counts"):
        uc.unbiased_importance(booster, None, None, Xv, y[:200])



@pytest.mark.parametrize("weighted", [False, True])
def test_multiclassova_is_unbalance_weighs_each_class_by_its_own_counts(weighted):
    """LightGBM's multiclassova is one binary loss per class k, each with is_unbalance's
    weights from the counts of label k against the others. It was refused with an error that
    asked for the training rows the caller had given (the real reason only with
    objective="multiclassova"); the oracles: LightGBM's split gains and its model, refit."""
    import pandas as pd

    booster, X, y, w = fit("multiclassova", {"is_unbalance": True}, weighted, True)
    read = adapter.read_model(booster)
    objective = adapter.make_objective("multiclassova", read, y_train=y)
    counts = np.bincount(y.astype(np.int64), minlength=3)
    rest = y.size - counts
    np.testing.assert_allclose(np.maximum(objective.pos_weights, objective.neg_weights),
                               np.maximum(counts, rest) / np.minimum(counts, rest))
    Xv, yv = X[:300] + 1e-3, y[:300]
    wv = None if w is None else w[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = uc.unbiased_importance(booster, X, y, Xv, yv, train_weight=w,
                                        valid_weight=wv, random_state=0)
        given = uc.unbiased_importance(booster, X, y, Xv, yv, train_weight=w, valid_weight=wv,
                                       objective=objective, random_state=0)
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-6)
    pd.testing.assert_frame_equal(given.splits, s)
    pruned = uc.prune(booster, X, y, Xv, yv, train_weight=w, valid_weight=wv,
                      threshold=-np.inf, refit_leaves=True, random_state=0)
    np.testing.assert_allclose(pruned.predict(X, raw_score=True),
                               booster.predict(X, raw_score=True), rtol=0, atol=1e-8)
    # without training rows the counts are unknown: one error that asks for them
    with pytest.raises(ValueError, match=r"pass the training rows .*make_objective\("
                                         r"'multiclassova'"):
        uc.unbiased_importance(booster, None, None, Xv, yv)

def test_pyarrow_backed_columns_are_read_as_their_numpy_values():
    # LightGBM refuses ArrowDtype columns; the router reads them as the float64 values
    # (nulls missing) that a numpy frame holds: the same report, and the caller's frame kept
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.normal(size=N), "b": rng.integers(0, 9, N),
                      "c": rng.normal(size=N) > 0})
    X.loc[::17, "a"] = np.nan
    y = X["a"].fillna(0).to_numpy() + 0.3 * X["b"] + rng.normal(size=N)
    model = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(X, y), 5)
    arrow = X.astype({"a": "float64[pyarrow]", "b": "int64[pyarrow]", "c": "bool[pyarrow]"})
    assert arrow["a"].isna().sum() == X["a"].isna().sum() > 0
    kept = arrow.copy()
    # held-out rows: the training rows reversed, with other labels (not the training rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = uc.unbiased_importance(model, arrow, y, arrow.iloc[::-1], y[::-1] + 1,
                                     random_state=0).splits
    want = uc.unbiased_importance(model, X, y, X.iloc[::-1], y[::-1] + 1, random_state=0).splits
    pd.testing.assert_frame_equal(got, want)
    np.testing.assert_allclose(got["biased_gain"], got["host_gain"], rtol=1e-5)
    pd.testing.assert_frame_equal(arrow, kept)
    # a frame whose column labels are integers (pandas' default) reads the same
    numbered, numbered_arrow = X.set_axis(range(3), axis=1), arrow.set_axis(range(3), axis=1)
    model = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(numbered, y), 5)
    got = uc.unbiased_importance(model, numbered_arrow, y, numbered_arrow.iloc[::-1], y[::-1] + 1,
                                 random_state=0).splits
    want = uc.unbiased_importance(model, numbered, y, numbered.iloc[::-1], y[::-1] + 1,
                                  random_state=0).splits
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_random_forest_mode_is_replayed_at_the_init_score(kind):
    # boosting="rf": every tree is fit to the gradients at the init score (each tree holds it,
    # unshrunk) and the host averages them. feature_fraction alone (no bagging) keeps the
    # host's gains and hessians on all rows: the oracle
    from unbiased_criteria.api import prune_forest

    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    Xv, signal_v, rng_v = make_data(seed=8)
    yv = labels(kind, signal_v, rng_v)
    p = {**BASE, "objective": kind, "boosting": "rf", "feature_fraction": 0.7}
    if kind == "multiclass":
        p["num_class"] = 3
    model = lightgbm.train(p, lightgbm.Dataset(X, y, categorical_feature=[2, 3]), 12)
    read = adapter.read_model(model)
    assert read.warnings == ()
    assert (read.forest.tree_iteration == 0).all()
    assert all(t.shrinkage == 1.0 for t in read.forest.trees)
    # every tree holds the init score, which the leaves alone give
    init = read.objective.init_score(y)
    bias = np.array([t.bias for t in read.forest.trees])
    np.testing.assert_allclose(bias, init[read.forest.tree_class], rtol=1e-6)
    splits = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert len(splits) > 50 and np.median(rel) <= 1e-6 and rel.max() <= 1e-4
    np.testing.assert_allclose(splits["sum_hessian"], splits["host_hessian"], rtol=1e-5)
    raw = model.predict(X, raw_score=True).reshape(N, -1)  # the sum of the trees
    np.testing.assert_allclose(read.forest.raw_score(X), raw, rtol=0, atol=1e-9)
    # pruning: nothing at -inf; else a smaller forest whose host predictions are the replay's
    same = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, random_state=0)
    np.testing.assert_array_equal(same.predict(Xv), model.predict(Xv))
    result = prune_forest(model, X, y, Xv, yv, random_state=0)
    assert result.leaves_after < result.leaves_before
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
    np.testing.assert_allclose(pruned.predict(X, raw_score=True).reshape(N, -1),
                               result.replay.raw_train, rtol=0, atol=1e-9)
