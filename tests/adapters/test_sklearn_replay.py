"""Full replay of HistGradientBoosting models, the estimator as oracle: every split's recomputed
gain against the stored ``gain``, node counts against ``count``, every node's recomputed value
against the stored one (which checks the hessian sums, not stored), and the replayed raw scores
against the estimator's own raw predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
from sklearn.ensemble import (  # noqa: E402
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)

from unbiased_criteria.adapters import sklearn as ask  # noqa: E402
from unbiased_criteria.adapters.sklearn import compat  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.replay import RowSet, replay  # noqa: E402

N = 800


def data(kind, seed=0, nan=0.0, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    s = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    codes = rng.integers(0, 7, N)
    if categorical:
        s = s + np.isin(codes, [0, 2, 5]) * 1.5
    noise = rng.normal(size=N)
    if kind == "binary":
        y = (s + noise > 0.5).astype(float)
    elif kind == "multiclass":
        y = np.digitize(s + noise, [0.0, 1.0]).astype(float)
    elif kind == "poisson":
        y = rng.poisson(np.exp(0.5 * np.clip(s, -3, 3))).astype(float)
    elif kind == "gamma":
        y = rng.gamma(2.0, np.exp(0.3 * np.clip(s, -3, 3)) / 2.0)
    else:
        y = 10.0 + 3.0 * (s + noise)  # labels far from 0: float32 labels would not do
    if categorical == "pandas":
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(4)])
        X.insert(1, "cat", pd.Categorical(np.array(list("abcdefg"))[codes]))
        if nan:
            X.loc[rng.random(N) < nan, "cat"] = np.nan
    elif categorical:
        X = np.column_stack([X[:, :1], codes.astype(float), X[:, 1:]])
    return X, y


CASES = {
    "squared_error": ("squared_error", {}, {}),
    "binary": ("binary", {}, {}),
    "multiclass": ("multiclass", {}, {}),
    "poisson": ("poisson", {}, {}),
    "gamma": ("gamma", {"l2_regularization": 2.0}, {}),
    "weights": ("binary", {"l2_regularization": 0.5}, {"weights": True}),
    "squared_weights": ("squared_error", {}, {"weights": True}),
    "multiclass_weights": ("multiclass", {"l2_regularization": 1.0}, {"weights": True}),
    "nan": ("poisson", {}, {"nan": 0.15}),
    "categorical": ("squared_error", {"categorical_features": [1]}, {"categorical": True}),
    "pandas": ("binary", {}, {"categorical": "pandas", "nan": 0.1}),
    "absolute_error": ("absolute_error", {}, {}),
    "quantile": ("quantile", {"quantile": 0.8}, {}),
}


def fit(kind, params, opts, seed=0):
    X, y = data(kind, seed, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False))
    w = np.random.default_rng(2).uniform(0.3, 2.0, N) if opts.get("weights") else None
    common = {"max_iter": 8, "max_leaf_nodes": 15, "learning_rate": 0.3,
              "early_stopping": False, "random_state": 0, **params}
    if kind in ("binary", "multiclass"):
        model = HistGradientBoostingClassifier(**common)
    else:
        model = HistGradientBoostingRegressor(loss=kind, **common)
    return model.fit(X, y, sample_weight=w), X, y, w


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    kind, params, opts = CASES[request.param]
    return (request.param, *fit(kind, params, opts))


def test_replayed_gains_counts_values_and_raw_scores(case):
    name, model, X, y, w = case
    read = ask.read_model(model)
    score = read.split_score
    router = ask.make_router(model, read, X, "X_train", memory_budget=N * 4 * 5)
    assert router.chunk < read.forest.n_trees  # several chunks
    found = {k: [] for k in ("B", "host", "scale", "n", "count", "value", "core_value")}

    def visit(step):
        tree = step.tree
        sums = gains.node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        inner = tree.internal_nodes
        host = tree.host_gain[inner].copy()
        # the root is scored from a node value of 0: its stored gain lacks the parent term
        host[inner == 0] -= gains.node_score(sums.G[0], sums.H[0], score)
        L, R = tree.left[inner], tree.right[inner]
        found["B"].append(gains.biased_gain(tree, sums, score)[inner])
        found["host"].append(host)
        found["scale"].append(gains.node_score(sums.G[L], sums.H[L], score)
                              + gains.node_score(sums.G[R], sums.H[R], score))
        found["n"].append(sums.n)
        found["count"].append(tree.host_count)
        # leaves: -lr G/(H + l2); splits below the root: -G/(H + l2), unshrunk
        leaf_w = gains.leaf_weight(sums.G, sums.H, score)
        core = np.where(tree.is_leaf, tree.shrinkage * leaf_w, leaf_w)
        keep = tree.is_leaf | (np.arange(tree.n_nodes) > 0)
        if not read.objective.renews_leaves:
            found["value"].append(tree.value[keep])
            found["core_value"].append(core[keep])

    result = replay(read, read.objective, train=RowSet(router, y, w), visit=visit)
    B, host, scale, n, count = (np.concatenate(found[k]) for k in ("B", "host", "scale", "n",
                                                                    "count"))
    assert B.size > 40
    np.testing.assert_array_less(np.abs(B - host), 1e-9 * scale + 1e-9)
    np.testing.assert_array_equal(n, count)
    if found["value"]:
        np.testing.assert_allclose(np.concatenate(found["core_value"]),
                                   np.concatenate(found["value"]), rtol=1e-9, atol=1e-12)
    raw = compat.raw_predict(model, X)
    np.testing.assert_allclose(result.raw_train, raw, rtol=0, atol=1e-12)


def test_unbiased_importance_report(case):
    name, model, X, y, w = case
    kind, params, opts = CASES[name]
    Xv, yv = data(kind, 1, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False))
    report = uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, random_state=0)
    splits = report.splits
    inner = splits["node"] != 0
    rel = (np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"]))
    assert rel[inner].max() <= 1e-6
    np.testing.assert_array_equal(splits["n_train"], splits["host_count"])
    assert np.isfinite(splits["unbiased_gain"]).all()
    assert list(report.to_frame().index) != []
