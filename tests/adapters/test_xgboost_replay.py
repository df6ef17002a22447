"""Full replay of XGBoost models: every split's recomputed gain and hessian sum against the
host's loss_changes and sum_hessian, and the replayed margins against predict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.replay import RowSet, replay  # noqa: E402

N = 700


def data(kind, seed=0, nan=0.0, categorical=False, targets=1):
    if targets > 1:  # one label column per target: the same kind of label, another signal
        X, y = data(kind, seed, nan, categorical)
        _, other = data(kind, seed + 100, nan, categorical)
        return X, np.column_stack([y, other[::-1]] + [y[::-1]] * (targets - 2))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 5)).astype(np.float32)
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    s = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    if categorical:
        codes = rng.integers(0, 7, N)
        s = s + np.isin(codes, [0, 2, 5]) * 1.5
    noise = rng.normal(size=N)
    if kind == "binary:logistic":
        y = (s + noise > 0.5).astype(float)
    elif kind == "multi:softprob":
        y = np.digitize(s + noise, [0.0, 1.0]).astype(float)
    elif kind == "count:poisson":
        y = rng.poisson(np.exp(0.5 * np.clip(s, -3, 3))).astype(float)
    else:
        y = s + noise
    if categorical:
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)])
        X["cat"] = pd.Categorical(codes, categories=range(7))
    return X, y


def dense(X):
    if isinstance(X, pd.DataFrame):
        cols = [X[c].cat.codes.to_numpy().astype(np.float64)
                if isinstance(X[c].dtype, pd.CategoricalDtype) else X[c].to_numpy(np.float64)
                for c in X.columns]
        return np.column_stack(cols)
    return X


CASES = {
    "squarederror": ("reg:squarederror", {}, {}),
    "logistic": ("binary:logistic", {}, {}),
    "softprob": ("multi:softprob", {"num_class": 3}, {}),
    "poisson": ("count:poisson", {}, {}),
    "weights": ("binary:logistic", {}, {"weights": True}),
    "lambda_alpha": ("reg:squarederror", {"reg_lambda": 3.0, "alpha": 0.7},
                     {"weights": True}),
    "lambda_mds": ("reg:squarederror", {"reg_lambda": 3.0, "max_delta_step": 0.4},
                   {"weights": True}),
    "logistic_mds": ("binary:logistic", {"max_delta_step": 0.5, "reg_lambda": 0.2,
                                         "scale_pos_weight": 1.7}, {}),
    "softprob_weights": ("multi:softprob", {"num_class": 3, "reg_lambda": 2.0},
                         {"weights": True}),
    "categorical": ("reg:squarederror", {"max_cat_to_onehot": 1}, {"categorical": True}),
    "nan": ("binary:logistic", {}, {"nan": 0.15}),
    "parallel": ("reg:squarederror", {"num_parallel_tree": 2}, {}),
    # multi-target models (one tree per target and iteration), weighted: the weight is the
    # row's in every target
    "targets": ("reg:squarederror", {"reg_lambda": 2.0}, {"targets": 2, "weights": True}),
    "targets_logistic": ("binary:logistic", {}, {"targets": 3, "nan": 0.1}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    objective, params, opts = CASES[request.param]
    X, y = data(objective, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False),
                targets=opts.get("targets", 1))
    Xv, yv = data(objective, seed=1, nan=opts.get("nan", 0.0),
                  categorical=opts.get("categorical", False), targets=opts.get("targets", 1))
    w = np.random.default_rng(2).uniform(0.3, 2.0, N) if opts.get("weights") else None
    d = xgb.DMatrix(X, y, weight=w, enable_categorical=True)
    params = {"objective": objective, "max_depth": 5, "eta": 0.3, "nthread": 2, **params}
    bst = xgb.train(params, d, 8)
    return bst, X, y, w, Xv, yv, d


def test_replayed_gains_hessians_and_margins(case):
    bst, X, y, w, Xv, yv, d = case
    read = ax.read_model(bst)
    assert read.warnings == ()
    score = read.split_score
    router = ax.make_router(bst, read, X, "X_train", memory_budget=N * 4 * 5)
    assert router.chunk < read.forest.n_trees  # several chunks
    found = {k: [] for k in ("B", "host", "scale", "H", "host_H", "value", "core_value")}

    def visit(step):
        tree = step.tree
        sums = gains.node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        inner = tree.internal_nodes
        L, R = tree.left[inner], tree.right[inner]
        children = (gains.node_score(sums.G[L], sums.H[L], score, weight_form=True)
                    + gains.node_score(sums.G[R], sums.H[R], score, weight_form=True))
        parent = gains.node_score(sums.G[inner], sums.H[inner], score)
        found["B"].append(gains.biased_gain(tree, sums, score)[inner])
        found["host"].append(tree.host_gain[inner])
        found["scale"].append(np.maximum(np.abs(children), np.abs(parent)))
        found["H"].append(sums.H)
        found["host_H"].append(tree.host_hessian)
        # every node's value (leaves: split_conditions, splits: eta * base_weights) is what
        # the core computes for it as a leaf: what pruning writes for a collapsed node
        found["value"].append(tree.value)
        found["core_value"].append(tree.shrinkage * gains.leaf_weight(sums.G, sums.H, score))

    result = replay(read, read.objective, train=RowSet(router, y, w), visit=visit)
    B, host, scale, H, host_H, value, core_value = (np.concatenate(found[k]) for k in found)
    assert B.size > 50
    np.testing.assert_array_less(np.abs(B - host), 1e-5 * scale + 1e-12)
    assert np.median(np.abs(B - host) / np.abs(host)) <= 1e-6
    np.testing.assert_allclose(H, host_H, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(core_value, value, rtol=1e-4, atol=1e-7)
    margin = bst.predict(d, output_margin=True).reshape(len(y), -1)
    np.testing.assert_allclose(result.raw_train, margin, atol=1e-5, rtol=0)
    # the IR's own routing agrees with the host on these rows too
    np.testing.assert_allclose(read.forest.raw_score(dense(X)), margin, atol=1e-5, rtol=0)


def test_unbiased_importance_report(case):
    bst, X, y, w, Xv, yv, d = case
    report = uc.unbiased_importance(bst, X, y, Xv, yv, train_weight=w, random_state=0)
    splits = report.splits
    n_splits = sum(t.n_nodes - t.n_leaves for t in ax.read_model(bst).forest.trees)
    assert len(splits) == n_splits
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert np.median(rel) <= 1e-6
    # float32 cancellation can make tiny gains relatively inexact; the scale is bounded by B
    assert np.quantile(rel, 0.95) <= 1e-3
    np.testing.assert_allclose(splits["sum_hessian"], splits["host_hessian"], rtol=1e-6,
                               atol=1e-9)
    assert np.isfinite(splits["unbiased_gain"]).all()
    frame = report.to_frame()
    assert set(frame.index) <= set(ax.read_model(bst).forest.feature_names)


def test_alpha_with_max_delta_step():
    # with alpha > 0 and max_delta_step > 0 XGBoost scores nodes as -(2 G w + (H + lambda) w^2)
    # with the raw G (SplitScore.raw_gradient_score), not LightGBM's T(G)
    X, y = data("reg:squarederror")
    d = xgb.DMatrix(X, y)
    bst = xgb.train({"max_depth": 5, "nthread": 2, "reg_lambda": 3.0, "alpha": 0.7,
                     "max_delta_step": 0.4}, d, 3)
    read = ax.read_model(bst)
    router = ax.make_router(bst, read, X, "X_train")
    errors = []

    def visit(step):
        tree = step.tree
        sums = gains.node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        inner = tree.internal_nodes
        B = gains.biased_gain(tree, sums, read.split_score)[inner]
        errors.append(np.abs(B - tree.host_gain[inner]) / np.abs(tree.host_gain[inner]))

    replay(read, read.objective, train=RowSet(router, y), visit=visit)
    assert np.max(np.concatenate(errors)) < 1e-3


@pytest.mark.parametrize("name", ["logistic", "softprob", "categorical", "parallel", "targets",
                                  "targets_logistic"])
def test_prune_end_to_end(name):
    from unbiased_criteria.api import prune_forest

    objective, params, opts = CASES[name]
    X, y = data(objective, categorical=opts.get("categorical", False),
                targets=opts.get("targets", 1))
    Xv, yv = data(objective, seed=1, categorical=opts.get("categorical", False),
                  targets=opts.get("targets", 1))
    d = xgb.DMatrix(X, y, enable_categorical=True)
    bst = xgb.train({"objective": objective, "max_depth": 6, "nthread": 2, **params}, d, 6)
    before = bst.save_raw("json")
    result = prune_forest(bst, X, y, Xv, yv, random_state=0)
    assert result.leaves_after < result.leaves_before
    pruned = uc.prune(bst, X, y, Xv, yv, random_state=0)
    assert isinstance(pruned, xgb.Booster) and bst.save_raw("json") == before
    margin = pruned.predict(d, output_margin=True).reshape(len(y), -1)
    # the host's predictions of the written model are the replay's scores of the pruned trees
    np.testing.assert_allclose(margin, result.replay.raw_train, atol=1e-5, rtol=0)
    n_leaves = sum(t.n_leaves for t in ax.read_model(pruned).forest.trees)
    assert n_leaves == result.leaves_after
