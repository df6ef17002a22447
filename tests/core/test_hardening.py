"""Hardening of the core: no silent NaN from 0/0 ratios or non-finite gradients, cross-fit
U = 0 where a half is unusable, the softmax hessian factor, and Tree's lock-free caches."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

from unbiased_criteria.gains import SplitScore, node_sums, unbiased_gain
from unbiased_criteria.importance import (
    GainOptions,
    holdout_halves,
    jackknife_blocks,
    score_tree,
)
from unbiased_criteria.objectives import make_objective
from unbiased_criteria.replay import TreeStep
from unbiased_criteria.trees import Tree, make_tree, route_rows

from ._helpers import random_tree, random_X


def _tree():
    # root 0 splits x0 at 0.5 into 1 (split x1 at 0.2 into 3, 4) and leaf 2
    return make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 1, -1, -1, -1],
                     [0.5, 0.2, np.nan, np.nan, np.nan], [np.nan, np.nan, 1.0, 2.0, 3.0])


def _rows(rng, n):
    X = rng.random((n, 2))
    return X, rng.normal(size=n), rng.uniform(0.5, 1.5, n)


@pytest.mark.parametrize("shortcut", [False, True])
def test_ratio_without_hessian_is_unusable_not_nan(shortcut):
    rng = np.random.default_rng(0)
    tree = _tree()
    X, g, h = _rows(rng, 400)
    Xv, gv, hv = _rows(rng, 600)
    if shortcut:
        hv = np.ones(600)
    nodes, nodes_v = route_rows(tree, X), route_rows(tree, Xv)
    # every held-out row of leaf 4 has weight 0: r_R of split 1 is 0/0
    w = np.where(nodes_v == 4, 0.0, 1.0)
    sums = node_sums(tree, nodes, g, h)
    u = unbiased_gain(tree, sums.G, nodes_v, gv * w, hv * w, rng=np.random.default_rng(1),
                      shortcut=shortcut, blocks=rng.integers(0, 5, 600), n_blocks=5)
    assert u.k[1] >= 5  # enough rows by count: only their zero hessian makes it unusable
    assert not u.usable[1] and u.gain[1] == 0.0
    np.testing.assert_array_equal(u.jackknife[:, 1], 0.0)
    assert u.usable[0] and np.isfinite(u.gain[0]) and u.gain[0] != 0.0
    assert np.isfinite(u.jackknife[:, tree.internal_nodes]).all()


def test_jackknife_replicate_that_loses_all_hessian_is_zero():
    rng = np.random.default_rng(2)
    tree = _tree()
    X, g, h = _rows(rng, 400)
    Xv, gv, hv = _rows(rng, 900)
    nodes, nodes_v = route_rows(tree, X), route_rows(tree, Xv)
    blocks = rng.integers(0, 6, 900)
    # in leaf 3 only rows of block 2 have weight: leaving block 2 out leaves r_L of split 1
    # without hessian, every other replicate keeps them
    w = np.where((nodes_v == 3) & (blocks != 2), 0.0, 1.0)
    sums = node_sums(tree, nodes, g, h)
    u = unbiased_gain(tree, sums.G, nodes_v, gv * w, hv * w, rng=np.random.default_rng(3),
                      shortcut=False, blocks=blocks, n_blocks=6, min_k=1)
    assert u.usable[1]
    assert u.jackknife[2, 1] == 0.0
    others = np.delete(u.jackknife[:, 1], 2)
    assert np.isfinite(others).all() and (others != 0).all()
    assert np.isfinite(u.jackknife[:, tree.internal_nodes]).all()


def test_cross_fit_gain_is_zero_where_either_half_is_unusable():
    rng = np.random.default_rng(4)
    options = GainOptions(min_k=5, random_state=0, n_blocks=4)
    n = 2000
    zero_when_unusable, unusable_seen = [], 0
    for seed in range(20):
        tree = random_tree(np.random.default_rng(seed), 12)
        nodes = route_rows(tree, random_X(rng, n))
        gv, hv = rng.normal(size=n), rng.uniform(0.5, 1.5, n)
        step = TreeStep(seed, tree, None, None, None, None, nodes, gv, hv, None)
        halves = holdout_halves(n, options)
        s = score_tree(step, SplitScore(), options, halves=halves,
                       blocks=jackknife_blocks(n, options))
        inner = tree.internal_nodes
        bad = inner[~s.usable[inner]]
        unusable_seen += bad.size
        zero_when_unusable.append(np.all(s.unbiased[bad] == 0.0)
                                  and np.all(s.jackknife[:, bad] == 0.0))
        assert np.isnan(s.unbiased[tree.is_leaf]).all()
    assert unusable_seen > 0
    assert all(zero_when_unusable)


def test_cross_fit_with_one_half_without_any_usable_split():
    """A stump whose split is usable from one half and not from the other (a rare group of
    rows): that half's gain had no jackknife replicates (None) and the average of both
    raised a TypeError; now the split is unusable, with U and its replicates 0."""
    tree = make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [0.5, np.nan, np.nan],
                     [np.nan, 1.0, 2.0])  # one split
    options = GainOptions(min_k=5, random_state=0, n_blocks=4)
    n = 400
    # six rows in the right child, all in the half that is not halves' True half: the ratios
    # from that half have k = 6, those from the other half k = 0
    nodes = np.full(n, 1)
    nodes[1:13:2] = 2
    halves = np.zeros(n, dtype=bool)
    halves[::2] = True
    step = TreeStep(0, tree, None, None, None, None, nodes, np.ones(n), np.ones(n), None)
    s = score_tree(step, SplitScore(), options, halves=halves,
                   blocks=jackknife_blocks(n, options))
    assert not s.usable[0] and s.unbiased[0] == 0.0
    assert (s.jackknife[:, 0] == 0.0).all()


def test_non_finite_gradient_raises_naming_objective_and_rows():
    obj = make_objective("poisson")
    raw = np.zeros(50)
    raw[[7, 31]] = 800.0  # exp overflows
    with pytest.raises(ValueError, match=r"'poisson'.*2 row\(s\).*rows 7, 31"):
        obj.grad_hess(np.ones(50), raw)

    def nan_at_three(y, raw, weight):
        g = raw - y
        g[3] = np.nan
        return g, np.ones_like(raw)

    custom = make_objective(nan_at_three)
    with pytest.raises(ValueError, match=r"nan_at_three.*rows 3\b"):
        custom.grad_hess(np.zeros(10), np.zeros(10))
    # finite input passes untouched
    g, h = obj.grad_hess(np.ones(50), np.zeros(50))
    assert np.isfinite(g).all() and np.isfinite(h).all()


def test_negative_hessians_of_a_callable_raise_naming_the_rows():
    """A non-convex callable's negative hessians shrank the hessian sums every gain divides
    by: gains and refit leaves were meaningless, without a word. A hessian that is 0 up to
    float32 rounding passes."""
    def non_convex(y, raw, weight):
        h = np.ones_like(raw)
        h[[2, 5]] = -0.5
        return raw - y, h

    with pytest.raises(ValueError, match=r"'custom \(non_convex\)' gives negative hessians "
                                         r"\(the lowest -0\.5\) on 2 row\(s\) \(rows 2, 5\);"
                                         r" .*need a convex loss"):
        make_objective(non_convex).grad_hess(np.zeros(10), np.zeros(10))

    def rounding(y, raw, weight):
        p = np.full_like(raw, 0.3)
        return raw - y, np.where(np.arange(raw.size) == 4, -1e-9, p * (1 - p))

    g, h = make_objective(rounding).grad_hess(np.zeros(10), np.zeros(10))
    assert h[4] < 0 and h.min() > -1e-6


def test_negative_hessians_on_held_out_rows_are_named_as_the_caller_numbers_them():
    lgb = pytest.importorskip("lightgbm")
    import unbiased_criteria as uc

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(300, 2)), rng.normal(size=(200, 2))
    y, yv = X[:, 0] + rng.normal(size=300), Xv[:, 0] + rng.normal(size=200)
    yv[[17, 150]] = 1000.0  # the callable's curvature turns negative far from the label

    def tukey_like(y, raw, weight):
        r = raw - y
        return r, np.where(np.abs(r) > 100, -1.0, 1.0)

    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 3)
    with pytest.raises(ValueError, match=r"negative hessians \(the lowest -1\) on 2 held-out "
                                         r"row\(s\) \(rows 17, 150\)"):
        uc.unbiased_importance(model, X, y, Xv, yv, objective=tukey_like, random_state=0)


def test_multiclass_non_finite_rows_are_rows_not_cells():
    obj = make_objective("multiclass_softmax", n_classes=3)
    raw = np.zeros((6, 3))
    raw[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"1 row\(s\) \(rows 4\)"):
        obj.grad_hess(np.zeros(6), raw)


@pytest.mark.parametrize("K", [3, 4, 5])
def test_softmax_default_hessian_factor_follows_the_classes(K):
    assert make_objective("multiclass_softmax", n_classes=K).hessian_factor == K / (K - 1)
    assert make_objective("multiclass_softmax", n_classes=K,
                          hessian_factor=2.0).hessian_factor == 2.0
    with pytest.raises(ValueError, match="n_classes"):
        make_objective("multiclass_softmax", n_classes=1)


def test_cross_entropy_init_score_is_finite_at_constant_labels():
    obj = make_objective("cross_entropy")
    lo, hi = obj.init_score(np.zeros(10))[0], obj.init_score(np.ones(10))[0]
    assert np.isfinite(lo) and np.isfinite(hi) and lo < -34 and hi > 34


def test_tree_caches_take_no_class_wide_lock():
    cached = [k for k, v in vars(Tree).items() if isinstance(v, functools.cached_property)]
    assert cached == []


def _reference(tree):
    """The derived arrays from their definitions, one node at a time."""
    n = tree.n_nodes
    parent = np.full(n, -1)
    for v in range(n):
        if tree.left[v] >= 0:
            parent[tree.left[v]] = parent[tree.right[v]] = v
    depth = np.zeros(n, dtype=int)
    anc = np.eye(n)
    for v in range(n):
        a = parent[v]
        while a >= 0:
            depth[v] += 1
            anc[a, v] = 1
            a = parent[a]
    return parent, depth, anc


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_derived_values_are_unchanged(seed):
    tree = random_tree(np.random.default_rng(seed), 15)
    parent, depth, anc = _reference(tree)
    np.testing.assert_array_equal(tree.parent, parent)
    np.testing.assert_array_equal(tree.depth, depth)
    assert tree.max_depth == depth.max()
    np.testing.assert_array_equal(tree.ancestors.toarray(), anc)
    np.testing.assert_array_equal(tree.is_leaf, tree.left < 0)
    assert tree.n_leaves == (tree.left < 0).sum()
    np.testing.assert_array_equal(tree.internal_nodes, np.flatnonzero(tree.left >= 0))
    assert tree.ancestors is tree.ancestors  # computed once per instance


def test_tree_derived_values_from_many_threads():
    trees = [random_tree(np.random.default_rng(s), 40) for s in range(16)]
    want = [_reference(t)[2] for t in trees]
    got = [None] * len(trees)
    start = threading.Barrier(8)

    def work(i):
        start.wait()
        for j in range(i, len(trees), 8):
            got[j] = trees[j].ancestors.toarray()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_standard_error_refuses_non_finite_replicates():
    import pandas as pd

    from unbiased_criteria.report import ImportanceReport

    splits = pd.DataFrame({"feature_index": [0, 1], "unbiased_gain": [1.0, 2.0],
                           "biased_gain": [1.0, 2.0], "host_gain": [1.0, 2.0]})
    jack = np.ones((2, 5))
    jack[1, 3] = np.nan
    with pytest.raises(ValueError, match="jackknife replicates"):
        ImportanceReport(splits, ["a", "b"], jackknife=jack).std_error()


def test_small_k_draw_inside_one_block_gives_a_zero_replicate():
    # leaf 4 holds 2 held-out rows, so split 1 draws k = 2 rows per ratio; when both drawn rows
    # of a ratio share a block, leaving it out leaves that ratio empty: replicate 0, not NaN
    rng = np.random.default_rng(6)
    tree = _tree()
    X, g, h = _rows(rng, 300)
    Xv = np.vstack([np.column_stack([rng.uniform(0, 0.5, 300), rng.uniform(0, 0.2, 300)]),
                    [[0.1, 0.9], [0.3, 0.8]], rng.uniform(0.5, 1, (300, 2))])
    nodes, nodes_v = route_rows(tree, X), route_rows(tree, Xv)
    assert (nodes_v == 4).sum() == 2
    blocks = np.arange(Xv.shape[0]) % 4
    blocks[nodes_v == 4] = 1  # both rows of leaf 4 in block 1
    sums = node_sums(tree, nodes, g, h)
    u = unbiased_gain(tree, sums.G, nodes_v, rng.normal(size=Xv.shape[0]),
                      rng.uniform(0.5, 1.5, Xv.shape[0]), rng=np.random.default_rng(7),
                      blocks=blocks, n_blocks=4, min_k=1)
    assert u.usable[1] and u.k[1] == 2
    assert u.jackknife[1, 1] == 0.0
    assert np.isfinite(u.jackknife[:, tree.internal_nodes]).all()
