"""Biased gain B, unbiased gain U and the k-draws, against plain reference computations."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from unbiased_criteria.gains import (
    SplitScore,
    biased_gain,
    draw_subsets,
    node_score,
    node_sums,
    tree_generator,
    unbiased_gain,
)
from unbiased_criteria.trees import make_tree, route_rows

from ._helpers import XGBOOST_RULES, random_tree, random_X, reference_membership

# --------------------------------------------------------------------------- references


def reference_score(G, H, l1, lam, mds, f32, weight_form):
    """S(G, H) of one node, scalar maths from the formulas in gains.py's docstring."""
    T = math.copysign(max(abs(G) - l1, 0.0), G)
    if weight_form or mds > 0:
        w = -T / (H + lam) if H + lam > 0 else 0.0
        if mds > 0:
            w = min(max(w, -mds), mds)
        if f32:
            w = float(np.float32(w))
        return -(2.0 * T * w + (H + lam) * w * w)
    return T * T / (H + lam) if H + lam > 0 else 0.0


def reference_biased_gain(tree, M, g, h, score: SplitScore):
    """B of every internal node from brute-force sums over the rows whose path passes it."""
    B = np.full(tree.n_nodes, np.nan)
    for i in tree.internal_nodes:
        sums = {X: (g[M[:, X]].sum(), h[M[:, X]].sum()) for X in (i, tree.left[i], tree.right[i])}
        extra = float(tree.l2_extra[i])
        # children: L2 plus the node's extra, scored from the (float32) weight if asked
        child = [
            reference_score(*sums[c], score.l1, score.l2 + extra, score.max_delta_step,
                            score.weight_float32, score.weight_float32)
            for c in (tree.left[i], tree.right[i])
        ]
        parent = reference_score(*sums[i], score.l1, score.l2, score.max_delta_step,
                                 score.weight_float32, False)
        B[i] = child[0] + child[1] - parent
    return B


def random_case(seed, n=300, n_valid=200, n_internal=None):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_internal or int(rng.integers(1, 20)))
    X, Xv = random_X(rng, n), random_X(rng, n_valid)
    return rng, tree, X, Xv


# --------------------------------------------------------------------------- B


@pytest.mark.parametrize("seed", range(24))
def test_biased_gain_matches_brute_force(seed):
    rng, tree, X, _ = random_case(seed)
    M = reference_membership(tree, X)
    g = rng.normal(loc=rng.normal(), size=X.shape[0])
    h = rng.uniform(0.01, 2.0, size=X.shape[0])
    score = SplitScore(
        l1=float(rng.choice([0.0, rng.uniform(0, 3)])),
        l2=float(rng.choice([0.0, rng.uniform(0, 5)])),
        max_delta_step=float(rng.choice([0.0, rng.uniform(0.05, 2)])),
        weight_float32=bool(seed % 4 == 3),
    )
    sums = node_sums(tree, route_rows(tree, X), g, h)
    got = biased_gain(tree, sums, score)
    want = reference_biased_gain(tree, M, g, h, score)
    assert np.isnan(got[tree.is_leaf]).all()
    np.testing.assert_allclose(got[tree.internal_nodes], want[tree.internal_nodes],
                               rtol=1e-9, atol=1e-9)


def test_biased_gain_regularisation_is_exercised():
    """The random parameters above really change B (so a dropped term would be caught)."""
    rng, tree, X, _ = random_case(3, n_internal=10)
    g, h = rng.normal(size=X.shape[0]), rng.uniform(0.01, 2.0, size=X.shape[0])
    sums = node_sums(tree, route_rows(tree, X), g, h)
    base = biased_gain(tree, sums, SplitScore())
    for score in (SplitScore(l1=1.0), SplitScore(l2=2.0), SplitScore(max_delta_step=0.05)):
        assert not np.allclose(biased_gain(tree, sums, score)[tree.internal_nodes],
                               base[tree.internal_nodes])
    extra = dataclasses.replace(tree, l2_extra=np.full(tree.n_nodes, 3.0))
    assert not np.allclose(biased_gain(extra, sums, SplitScore())[tree.internal_nodes],
                           base[tree.internal_nodes])


def test_node_score_closed_forms():
    # S = G^2/(H+l2) with no clipping; with max_delta_step the clipped weight form
    assert node_score(3.0, 2.0, SplitScore(l2=1.0)) == pytest.approx(3.0)
    assert node_score(3.0, 2.0, SplitScore(l1=1.0)) == pytest.approx(2.0)
    assert node_score(-3.0, 2.0, SplitScore(l1=4.0)) == 0.0
    # w = -3/2 clipped to -0.5: S = -(2*3*(-0.5) + 2*0.25) = 2.5
    assert node_score(3.0, 2.0, SplitScore(max_delta_step=0.5)) == pytest.approx(2.5)
    # the unclipped weight form equals G^2/(H+l2)
    assert node_score(3.0, 2.0, SplitScore(l2=1.0), weight_form=True) == pytest.approx(3.0)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_internal=st.integers(1, 12),
    gh=st.lists(
        st.tuples(
            st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
            st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False),
        ),
        min_size=1,
        max_size=80,
    ),
)
def test_biased_gain_is_nonnegative_without_regularisation(seed, n_internal, gh):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_internal)
    tree = dataclasses.replace(tree, l2_extra=np.zeros(tree.n_nodes))
    g, h = np.array(gh).T
    nodes = route_rows(tree, random_X(rng, g.size))
    sums = node_sums(tree, nodes, g, h)
    B = biased_gain(tree, sums, SplitScore())
    inner = tree.internal_nodes
    # rounding allowance on the scale of the parent's score (0 for an empty node)
    H = np.where(sums.H[inner] > 0, sums.H[inner], 1.0)
    scale = sums.G[inner] ** 2 / H
    assert np.all(B[inner] >= -1e-9 * scale - 1e-12), (B[inner], scale)


def test_biased_gain_can_be_negative_with_extra_child_l2():
    """The previous property needs the children's L2 to be the parent's (guards the test)."""
    tree = make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [0.5, np.nan, np.nan],
                     [np.nan, 0.0, 0.0], l2_extra=[5.0, 0.0, 0.0])
    nodes = np.array([1, 1, 2, 2])
    sums = node_sums(tree, nodes, np.ones(4), np.ones(4))
    assert biased_gain(tree, sums, SplitScore())[0] < 0


@pytest.mark.parametrize("seed", range(6))
def test_node_sums_are_exact(seed):
    rng, tree, X, _ = random_case(seed)
    nodes = route_rows(tree, X)
    # dyadic values: every partial sum is exact in float64, so equality must be exact
    g = rng.integers(-64, 64, X.shape[0]) / 8.0
    h = rng.integers(1, 64, X.shape[0]) / 16.0
    s = node_sums(tree, nodes, g, h)
    inner = tree.internal_nodes
    L, R = tree.left[inner], tree.right[inner]
    np.testing.assert_array_equal(s.G[L] + s.G[R], s.G[inner])
    np.testing.assert_array_equal(s.H[L] + s.H[R], s.H[inner])
    np.testing.assert_array_equal(s.n[L] + s.n[R], s.n[inner])
    assert s.n[0] == X.shape[0] and s.G[0] == g.sum() and s.H[0] == h.sum()
    M = reference_membership(tree, X)
    np.testing.assert_array_equal(s.G, g @ M)
    np.testing.assert_array_equal(s.n, M.sum(axis=0))
    # arbitrary floats: equal to rounding
    gf = rng.normal(size=X.shape[0])
    sf = node_sums(tree, nodes, gf, np.abs(gf))
    np.testing.assert_allclose(sf.G[L] + sf.G[R], sf.G[inner], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- U


def reference_unbiased(tree, G, Mv, g, h, seed, n_draws=1, min_k=5, lam=0.0):
    """U by hand, with the drawn rows reproduced as unbiased_gain documents.

    Returns (gain, k, n_valid, usable). ``Mv`` is the brute-force membership of the held-out
    rows; the draws are taken with ``draw_subsets`` from a generator of the same seed, with the
    requests (I, k) for every usable split, then (L, k), then (R, k), in increasing node order.
    """
    n_valid = Mv.sum(axis=0)
    inner = tree.internal_nodes
    k = np.zeros(tree.n_nodes, dtype=np.int64)
    for i in inner:
        k[i] = min(n_valid[tree.left[i]], n_valid[tree.right[i]])
    usable = np.zeros(tree.n_nodes, dtype=bool)
    usable[inner] = k[inner] >= max(min_k, 1)
    split = np.array(sorted(i for i in inner if usable[i]), dtype=np.int64)
    gain = np.full(tree.n_nodes, np.nan)
    gain[inner] = 0.0
    if split.size == 0:
        return gain, k, n_valid, usable
    req_node = np.concatenate([split, tree.left[split], tree.right[split]])
    req_k = np.tile(k[split], 3)
    nodes_valid = np.array([np.flatnonzero(row & tree.is_leaf)[0] for row in Mv])
    rng = np.random.default_rng(seed)
    ratio = np.zeros(req_node.size)
    for _ in range(n_draws):
        draws = draw_subsets(tree, nodes_valid, req_node, req_k, rng)
        for q, (node, kq) in enumerate(zip(req_node, req_k)):
            rows = draws.rows(q)
            assert rows.size == kq and np.unique(rows).size == kq
            assert Mv[rows, node].all()
            ratio[q] += g[rows].sum() / (h[rows].sum() + lam)
    ratio /= n_draws
    m = split.size
    r_I, r_L, r_R = ratio[:m], ratio[m : 2 * m], ratio[2 * m :]
    gain[split] = G[tree.left[split]] * r_L + G[tree.right[split]] * r_R - G[split] * r_I
    return gain, k, n_valid, usable


def _u_inputs(seed, n_valid=120):
    rng, tree, X, Xv = random_case(seed, n_valid=n_valid, n_internal=int(8 + seed % 10))
    g = rng.normal(0.3, 1.0, X.shape[0])
    G = node_sums(tree, route_rows(tree, X), g, np.ones_like(g)).G
    gv = rng.normal(0.3, 1.0, Xv.shape[0])
    hv = rng.uniform(0.2, 1.5, Xv.shape[0])
    return tree, G, Xv, route_rows(tree, Xv), reference_membership(tree, Xv), gv, hv


@pytest.mark.parametrize(
    "seed, n_draws, min_k, lam",
    [(0, 1, 5, 0.0), (1, 1, 5, 0.0), (2, 3, 5, 0.0), (3, 1, 1, 0.7), (4, 4, 2, 1.5),
     (5, 1, 0, 0.0), (6, 2, 12, 0.0), (7, 1, 5, 0.0), (8, 1, 3, 0.25), (9, 5, 5, 0.0)],
)
def test_unbiased_gain_matches_reference(seed, n_draws, min_k, lam):
    tree, G, Xv, nodes_v, Mv, gv, hv = _u_inputs(seed)
    got = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(seed + 50),
                        n_draws=n_draws, min_k=min_k, lam=lam)
    gain, k, n_valid, usable = reference_unbiased(tree, G, Mv, gv, hv, seed + 50, n_draws,
                                                  min_k, lam)
    np.testing.assert_array_equal(got.n_valid, n_valid)
    np.testing.assert_array_equal(got.k[tree.internal_nodes], k[tree.internal_nodes])
    np.testing.assert_array_equal(got.usable, usable)
    assert np.isnan(got.gain[tree.is_leaf]).all()
    inner = tree.internal_nodes
    np.testing.assert_allclose(got.gain[inner], gain[inner], rtol=1e-9, atol=1e-9)
    assert np.all(got.gain[inner][~usable[inner]] == 0.0)


def test_unbiased_gain_min_k_and_empty_children():
    # 0 -> (1, 2), 1 -> (3, 4); held-out rows: none in 3, so k(1) = 0; k(0) = min(n1, n2)
    tree = make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 0, -1, -1, -1],
                     [0.0, -1.0, np.nan, np.nan, np.nan], [np.nan, np.nan, 1.0, 2.0, 3.0])
    nodes_v = np.array([4] * 6 + [2] * 9)
    rng = np.random.default_rng(0)
    gv, hv = rng.normal(size=15), np.ones(15)
    G = np.array([3.0, 1.0, 2.0, 0.5, 0.5])
    for min_k, usable0 in [(0, True), (1, True), (6, True), (7, False)]:
        res = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(1), min_k=min_k)
        assert res.k[0] == 6 and res.k[1] == 0
        assert res.usable[0] == usable0 and not res.usable[1]
        assert res.gain[1] == 0.0  # k = 0 is never usable, whatever min_k
        assert (res.gain[0] != 0.0) == usable0
    # no held-out rows at all: nothing usable, no error
    res = unbiased_gain(tree, G, np.zeros(0, np.int64), np.zeros(0), np.zeros(0),
                        rng=np.random.default_rng(1), min_k=0)
    assert not res.usable.any() and np.all(res.gain[tree.internal_nodes] == 0)


def test_unbiased_gain_n_draws_average_reduces_noise():
    """Averaging n_draws ratios keeps the mean and reduces the spread over seeds."""
    tree, G, Xv, nodes_v, Mv, gv, hv = _u_inputs(11, n_valid=200)
    i = tree.internal_nodes[0]

    def spread(n_draws):
        u = [unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(s),
                           n_draws=n_draws, min_k=1).gain[i] for s in range(200)]
        return np.mean(u), np.std(u)

    m1, s1 = spread(1)
    m8, s8 = spread(8)
    assert s8 < 0.6 * s1  # ~ 1/sqrt(8) of the single-draw spread when k < n'_I
    assert abs(m8 - m1) < 3 * math.hypot(s1, s8) / math.sqrt(200)


@pytest.mark.parametrize("hval, lam", [(1.0, 0.0), (0.3, 0.0), (1.0, 2.0)])
def test_constant_hessian_shortcut(hval, lam):
    tree, G, Xv, nodes_v, Mv, gv, _ = _u_inputs(12)
    hv = np.full(gv.size, hval)
    got = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(0), min_k=3,
                        lam=lam, shortcut=True)
    # the ratio over ALL of each node's held-out rows
    with np.errstate(invalid="ignore", divide="ignore"):  # empty nodes are never used
        r = (gv @ Mv) / (hv @ Mv + lam)
    inner = tree.internal_nodes
    want = G[tree.left] * r[tree.left] + G[tree.right] * r[tree.right] - G * r
    sel = inner[got.usable[inner]]
    assert sel.size > 0
    np.testing.assert_allclose(got.gain[sel], want[sel], rtol=1e-9, atol=1e-9)
    assert np.all(got.gain[inner[~got.usable[inner]]] == 0)
    # deterministic: another generator gives the same result
    again = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(99), min_k=3,
                          lam=lam, shortcut=True)
    np.testing.assert_array_equal(again.gain, got.gain)


def test_shortcut_ignored_when_hessian_varies():
    tree, G, Xv, nodes_v, Mv, gv, hv = _u_inputs(13)
    got = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(4), shortcut=True)
    gain, *_ = reference_unbiased(tree, G, Mv, gv, hv, 4)
    np.testing.assert_allclose(got.gain[tree.internal_nodes], gain[tree.internal_nodes],
                               rtol=1e-9, atol=1e-9)


def test_unbiased_gain_without_shortcut_draws_even_for_constant_hessian():
    tree, G, Xv, nodes_v, Mv, gv, _ = _u_inputs(14)
    hv = np.ones(gv.size)
    got = unbiased_gain(tree, G, nodes_v, gv, hv, rng=np.random.default_rng(8))
    gain, *_ = reference_unbiased(tree, G, Mv, gv, hv, 8)
    np.testing.assert_allclose(got.gain[tree.internal_nodes], gain[tree.internal_nodes],
                               rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- draws


@pytest.mark.parametrize("seed", range(8))
def test_draws_are_k_distinct_rows_of_the_node(seed):
    rng, tree, _, Xv = random_case(seed, n_valid=150, n_internal=int(3 + 2 * seed))
    nodes_v = route_rows(tree, Xv)
    Mv = reference_membership(tree, Xv)
    size = Mv.sum(axis=0)
    cand = np.flatnonzero(size > 0)
    req_node = rng.choice(cand, 40)
    req_k = np.array([rng.integers(1, size[v] + 1) for v in req_node])
    draws = draw_subsets(tree, nodes_v, req_node, req_k, rng)
    vals = rng.normal(size=Xv.shape[0])
    sums = draws.sums(vals)
    assert sums.shape == (req_node.size,)
    for q, (v, kq) in enumerate(zip(req_node, req_k)):
        rows = draws.rows(q)
        assert rows.size == kq and np.unique(rows).size == kq
        assert Mv[rows, v].all()
        assert sums[q] == pytest.approx(vals[rows].sum(), rel=1e-12, abs=1e-12)
        if kq == size[v]:
            np.testing.assert_array_equal(rows, np.flatnonzero(Mv[:, v]))


# 0 -> (1, 2), 1 -> (3, 4): leaves 2, 3, 4
THREE_LEAVES = dict(left=[1, 3, -1, -1, -1], right=[2, 4, -1, -1, -1], feature=[0, 0, -1, -1, -1],
                    threshold=[0.0, -1.0, np.nan, np.nan, np.nan],
                    value=[np.nan, np.nan, 1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "leaf_sizes, node, node_leaves, k, other",
    [
        # root of 6 rows over 3 leaves (1, 2, 3 rows), k = 3: 20 subsets
        ({3: 1, 4: 2, 2: 3}, 0, [2, 3, 4], 3, [(1, 2), (2, 1)]),
        # node 1 of 6 rows over 2 leaves (2, 4 rows), k = 2: 15 subsets; leaf 2 has 5 others
        ({3: 2, 4: 4, 2: 5}, 1, [3, 4], 2, [(0, 2), (2, 2)]),
        # node 1 again, k = 3 (20 subsets), alone in the call
        ({3: 2, 4: 4, 2: 5}, 1, [3, 4], 3, []),
    ],
)
def test_draws_are_uniform_chisquare(leaf_sizes, node, node_leaves, k, other):
    tree = make_tree(**THREE_LEAVES)
    rng = np.random.default_rng(2024)
    nodes = np.concatenate([[leaf] * m for leaf, m in leaf_sizes.items()])
    nodes = nodes[rng.permutation(nodes.size)]  # rows of a leaf are not contiguous
    members = np.flatnonzero(np.isin(nodes, node_leaves))
    m = members.size
    assert m == 6
    subsets = list(itertools.combinations(members.tolist(), k))
    index = {s: j for j, s in enumerate(subsets)}
    req_node = np.array([node] + [v for v, _ in other])
    req_k = np.array([k] + [kk for _, kk in other])
    n_rep = 4000
    freq = np.zeros(len(subsets))
    for _ in range(n_rep):
        rows = draw_subsets(tree, nodes, req_node, req_k, rng).rows(0)
        freq[index[tuple(rows.tolist())]] += 1
    assert len(subsets) == math.comb(m, k)
    p = stats.chisquare(freq).pvalue
    assert p > 0.001, (p, freq)


def test_draws_inclusion_frequency():
    """Every row of a node is drawn with probability k/m; rows outside never."""
    rng = np.random.default_rng(77)
    # 0 -> (1, 2), 1 -> (3, 4), 2 -> (5, 6); node 1 = leaves 3, 4; node 0 = all
    tree = make_tree([1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1],
                     [0, 0, 0, -1, -1, -1, -1], [0.0, -1.0, 1.0] + [np.nan] * 4,
                     [np.nan] * 3 + [1.0, 2.0, 3.0, 4.0])
    nodes = np.repeat([3, 4, 5, 6], [1, 3, 7, 9])
    nodes = nodes[rng.permutation(nodes.size)]
    n_rep, k0, k1 = 4000, 5, 2
    hits0 = np.zeros(nodes.size)
    hits1 = np.zeros(nodes.size)
    for _ in range(n_rep):
        d = draw_subsets(tree, nodes, np.array([0, 1]), np.array([k0, k1]), rng)
        hits0[d.rows(0)] += 1
        hits1[d.rows(1)] += 1
    m0, m1 = nodes.size, 4
    p0 = k0 / m0
    z0 = (hits0 / n_rep - p0) / math.sqrt(p0 * (1 - p0) / n_rep)
    assert np.abs(z0).max() < 4.5, z0
    in1 = np.isin(nodes, [3, 4])
    assert hits1[~in1].sum() == 0
    p1 = k1 / m1
    z1 = (hits1[in1] / n_rep - p1) / math.sqrt(p1 * (1 - p1) / n_rep)
    assert np.abs(z1).max() < 4.5, z1


def test_draws_differ_between_calls_and_repeat_with_the_seed():
    rng, tree, _, Xv = random_case(21, n_valid=100, n_internal=6)
    nodes_v = route_rows(tree, Xv)
    req = np.array([0]), np.array([10])
    a = draw_subsets(tree, nodes_v, *req, np.random.default_rng(5)).rows(0)
    b = draw_subsets(tree, nodes_v, *req, np.random.default_rng(5)).rows(0)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(5)
    first = draw_subsets(tree, nodes_v, *req, g).rows(0)
    second = draw_subsets(tree, nodes_v, *req, g).rows(0)
    assert not np.array_equal(first, second)


# --------------------------------------------------------------------------- generators


def _stream(gen, n=8):
    return gen.integers(0, 2**62, n)


def test_tree_generator_streams_do_not_depend_on_chunking():
    n_trees = 23
    per_tree = {t: _stream(tree_generator(1234, t)) for t in range(n_trees)}
    for chunk in (1, 4, 10, 23):
        for start in range(0, n_trees, chunk):
            for t in range(start, min(start + chunk, n_trees)):
                np.testing.assert_array_equal(_stream(tree_generator(1234, t)), per_tree[t])
    # in reverse order too: a tree's stream does not depend on which trees were drawn before
    for t in reversed(range(n_trees)):
        np.testing.assert_array_equal(_stream(tree_generator(1234, t)), per_tree[t])


def test_tree_generator_streams_differ_between_trees_and_seeds():
    streams = [tuple(_stream(tree_generator(7, t))) for t in range(200)]
    assert len(set(streams)) == 200
    assert tuple(_stream(tree_generator(8, 0))) != streams[0]
    # the same seed given as a SeedSequence gives the same streams
    ss = np.random.SeedSequence(7)
    assert tuple(_stream(tree_generator(ss, 3))) == streams[3]
    # a spawned child sequence gives streams distinct from its parent's
    child = ss.spawn(1)[0]
    assert tuple(_stream(tree_generator(child, 3))) not in set(streams)
    # None: fresh entropy each time
    assert tuple(_stream(tree_generator(None, 0))) != tuple(_stream(tree_generator(None, 0)))


def test_tree_generator_streams_look_independent():
    """Uniforms of neighbouring trees are uncorrelated (|r| < 4 / sqrt(n))."""
    u = np.array([tree_generator(99, t).random(2000) for t in range(10)])
    r = np.corrcoef(u)[np.triu_indices(10, 1)]
    assert np.abs(r).max() < 4 / math.sqrt(2000)


def test_unbiased_gain_with_tree_generator_is_reproducible():
    tree, G, Xv, nodes_v, Mv, gv, hv = _u_inputs(15)
    a = unbiased_gain(tree, G, nodes_v, gv, hv, rng=tree_generator(3, 5)).gain
    b = unbiased_gain(tree, G, nodes_v, gv, hv, rng=tree_generator(3, 5)).gain
    c = unbiased_gain(tree, G, nodes_v, gv, hv, rng=tree_generator(3, 6)).gain
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[tree.internal_nodes], c[tree.internal_nodes])


def test_xgboost_rules_tree_gains():
    """Gains go through the same IR whatever the routing rules (smoke on XGBoost rules)."""
    rng = np.random.default_rng(31)
    tree = random_tree(rng, 8, rules=XGBOOST_RULES)
    X = random_X(rng, 200)
    g, h = rng.normal(size=200), rng.uniform(0.1, 1, 200)
    B = biased_gain(tree, node_sums(tree, route_rows(tree, X), g, h), SplitScore(l2=1.0))
    want = reference_biased_gain(tree, reference_membership(tree, X), g, h, SplitScore(l2=1.0))
    np.testing.assert_allclose(B[tree.internal_nodes], want[tree.internal_nodes], rtol=1e-9,
                               atol=1e-9)
