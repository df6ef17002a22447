"""Full replay of HistGradientBoosting models, the estimator as oracle: every split's recomputed
gain against the stored ``gain``, node counts against ``count``, every node's recomputed value
against the stored one (which checks the hessian sums, not stored), and the replayed raw scores
against the estimator's own raw predictions."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
from _sklearn_data import CASES, N, data, fit, one_thread  # noqa: E402, F401
from unbiased_criteria.adapters import sklearn as ask  # noqa: E402
from unbiased_criteria.adapters.sklearn import compat  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.replay import RowSet, replay  # noqa: E402


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
    Xv, yv = data(kind, 1, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False),
                  integer=opts.get("integer", False))
    report = uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, random_state=0)
    splits = report.splits
    inner = splits["node"] != 0
    rel = (np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"]))
    assert rel[inner].max() <= 1e-6
    np.testing.assert_array_equal(splits["n_train"], splits["host_count"])
    assert np.isfinite(splits["unbiased_gain"]).all()
    assert list(report.to_frame().index) != []


@pytest.mark.parametrize("name", ["squared_weights", "multiclass_weights", "weights", "gamma",
                                  "poisson", "absolute_ties", "quantile_ties"])
def test_gradients_equal_the_estimators_loss(name):
    # the estimator's own loss object, at the raw scores of its first iterations
    kind, params, opts = CASES[name]
    model, X, y, w = fit(kind, {**params, "max_iter": 2}, opts)
    obj = ask.read_model(model).objective
    raw = compat.raw_predict(model, X)
    y_enc = np.searchsorted(model.classes_, y).astype(float) if hasattr(model, "classes_") \
        else y
    sk_raw = raw if raw.shape[1] > 1 else raw[:, 0]
    g = np.empty_like(sk_raw, dtype=np.float32)
    h = np.empty_like(sk_raw, dtype=np.float32)
    model._loss.gradient_hessian(y_true=y_enc, raw_prediction=sk_raw, sample_weight=w,
                                 gradient_out=g, hessian_out=h)
    # the baseline itself: L1 and quantile then have rows with raw == y
    base = np.broadcast_to(model._baseline_prediction, raw.shape)
    sk_base = np.ascontiguousarray(base if raw.shape[1] > 1 else base[:, 0])
    g0, h0 = np.empty_like(g), np.empty_like(h)
    model._loss.gradient_hessian(y_true=y_enc, raw_prediction=sk_base, sample_weight=w,
                                 gradient_out=g0, hessian_out=h0)
    for sk_g, sk_h, at in ((g, h, sk_raw), (g0, h0, sk_base)):
        cg, ch = obj.grad_hess(y_enc, at, w)
        np.testing.assert_array_equal(cg, sk_g)
        np.testing.assert_array_equal(ch, sk_h)
    if obj.renews_leaves:
        assert np.any(y == sk_base)  # the tie rule was exercised


def test_non_finite_gradients_raise():
    from unbiased_criteria.adapters.sklearn.objectives import core_objective

    with pytest.raises(ValueError, match=r"'poisson' gives non-finite .*\(rows 1\)"):
        core_objective("poisson", 1).grad_hess(np.ones(3), np.array([0.0, 1000.0, 0.0]))
