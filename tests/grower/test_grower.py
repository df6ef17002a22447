"""The native grower: binning, the ordinary (biased) tree against LightGBM, the unbiased rule."""

from __future__ import annotations

import numpy as np
import pytest

from unbiased_criteria.binning import fit_bins
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.grower import GrowerParams, RowSets, feature_major, grow_tree
from unbiased_criteria.objectives import make_objective
from unbiased_criteria.trees import route_rows


def _grow(X, g, h, sets, params, max_bin=255, seed=0):
    binner = fit_bins(X, max_bin)
    codes = feature_major(binner.transform(X))
    return grow_tree(codes, np.asarray(g, np.float32), np.asarray(h, np.float32), sets, binner,
                     params, np.random.default_rng(seed)), binner


def test_bins_few_distinct_values_one_bin_each_and_nan_bin():
    x = np.array([[3.0], [1.0], [2.0], [np.nan], [2.0], [1.0]])
    binner = fit_bins(x, 255)
    assert binner.n_bins.tolist() == [3]
    np.testing.assert_array_equal(binner.bounds[0], np.float32([1.5, 2.5, np.inf]))
    codes = binner.transform(x)[:, 0]
    assert codes.tolist() == [2, 0, 1, binner.nan_bin, 1, 0]


def test_bins_quantiles_within_budget():
    x = np.random.default_rng(0).normal(size=(10000, 1))
    binner = fit_bins(x, 16)
    assert binner.n_bins[0] <= 15
    counts = np.bincount(binner.transform(x)[:, 0])
    # quantile bins: every bin near n / 15 rows
    assert counts.min() > 0.8 * 10000 / 15 and counts.max() < 1.2 * 10000 / 15
    # a value goes to the first bin whose bound it does not exceed
    codes = binner.transform(x)[:, 0]
    assert np.all(x[:, 0].astype(np.float32) <= binner.bounds[0][codes])
    below = binner.bounds[0][np.maximum(codes.astype(np.int64) - 1, 0)]
    assert np.all((codes == 0) | (x[:, 0].astype(np.float32) > below))


def test_bins_categorical_one_bin_per_code():
    x = np.array([[0.0, 1.5], [7.0, 2.5], [np.nan, 0.5], [3.0, 1.5], [7.0, 2.0]])
    binner = fit_bins(x, 255, categorical=[0])
    assert binner.categorical.tolist() == [True, False]
    assert binner.categories[0].tolist() == [0.0, 3.0, 7.0]
    codes = binner.transform(x)[:, 0]
    assert codes.tolist() == [0, 2, binner.nan_bin, 1, 2]
    with pytest.raises(ValueError, match="categorical feature 1 must hold non-negative integer"):
        fit_bins(x, 255, categorical=[1])
    with pytest.raises(ValueError, match="3 categories, more than max_bin - 1 = 2"):
        fit_bins(x, 3, categorical=[0])


def test_bins_bad_input():
    with pytest.raises(ValueError, match="max_bin"):
        fit_bins(np.zeros((3, 1)), 1)
    with pytest.raises(ValueError, match="infinite"):
        fit_bins(np.array([[np.inf]]), 255)


@pytest.mark.parametrize("objective,l2,leaves,missing", [
    ("regression", 0.0, 8, False), ("regression", 2.0, 15, False),
    ("regression", 100.0, 12, False), ("binary", 0.0, 12, False), ("binary", 2.0, 12, False),
    ("binary", 10.0, 12, False), ("multiclass", 0.0, 10, False),
    ("regression", 0.0, 8, True), ("binary", 0.0, 12, True),
])
def test_biased_first_iteration_equals_lightgbm(objective, l2, leaves, missing):
    """criterion='biased', every row in D: LightGBM's first iteration, on data whose
    distinct values are fewer than max_bin (so both bin the same): same partition, same leaf
    values, same split gains. With L2 > 0 a feature without a valid split at a node is not
    tried below it (LightGBM's rule; binary L2 2 and 10, regression L2 100 stop early or
    split elsewhere without it). ``missing``: NaN in two features, one of them a flag (1 or
    NaN) whose only split is "every value left, NaN right", which the grower never tried."""
    lgb = pytest.importorskip("lightgbm")
    from unbiased_criteria.adapters.lightgbm import read_model

    rng = np.random.default_rng(1)
    n = 3000
    X = rng.integers(0, 12, size=(n, 5)).astype(np.float64)
    y = 0.4 * X[:, 0] - 0.3 * (X[:, 2] > 5) + rng.normal(size=n)
    if missing:
        X[rng.random(n) < 0.3, 2] = np.nan
        X[:, 4] = np.where(rng.random(n) < 0.4, 1.0, np.nan)
        y += 0.8 * np.isnan(X[:, 4]) + 0.5 * np.isnan(X[:, 2])
    K = 1
    if objective == "binary":
        y = (y > np.median(y)).astype(np.float64)
        obj = make_objective("binary_logistic")
    elif objective == "multiclass":
        K = 3
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(np.float64)
        obj = make_objective("multiclass_softmax", n_classes=3)
    else:
        obj = make_objective("squared_error")
    # LightGBM counts a bin's rows from its hessian sum when hessians vary: keep the row
    # bound out of play there
    min_rows = 20 if objective == "regression" else 1
    params = {"objective": objective, "num_leaves": leaves, "min_data_in_leaf": min_rows,
              "min_sum_hessian_in_leaf": 1e-3, "lambda_l2": l2, "learning_rate": 0.1,
              "verbose": -1, "num_threads": 1, "deterministic": True}
    if K > 1:
        params["num_class"] = K
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=1)
    hosts = read_model(booster).forest.trees

    init = obj.init_score(y)
    raw = np.tile(init, (n, 1))
    g, h = obj.grad_hess(y, raw if K > 1 else raw[:, 0])
    g, h = g.reshape(n, K), h.reshape(n, K)
    gp = GrowerParams(num_leaves=leaves, min_child_samples=min_rows, criterion="biased",
                      score=SplitScore(l2=l2))
    for k in range(K):
        grown, _ = _grow(X, g[:, k], h[:, k], RowSets(np.arange(n)), gp)
        mine, host = grown.tree, hosts[k]
        assert mine.n_leaves == host.n_leaves
        assert sorted(mine.feature[mine.feature >= 0]) == sorted(host.feature[host.feature >= 0])
        host_leaf = route_rows(host, X)
        # same partition of the rows into leaves
        pairs = np.unique(np.stack([host_leaf, grown.row_leaf]), axis=1)
        assert pairs.shape[1] == mine.n_leaves
        np.testing.assert_allclose(init[k] + 0.1 * mine.value[grown.row_leaf],
                                   host.value[host_leaf], rtol=0, atol=1e-9)
        # B on D is LightGBM's split gain (6 digits in the text model)
        np.testing.assert_allclose(np.sort(mine.host_gain[mine.feature >= 0]),
                                   np.sort(host.host_gain[host.feature >= 0]), rtol=1e-5)
        if missing:  # the flag was split on: its only split is on missingness
            assert 4 in mine.feature


def test_nan_rows_follow_default_side_and_rows_route_as_ir():
    rng = np.random.default_rng(2)
    n = 4000
    X = rng.normal(size=(n, 3))
    X[rng.random((n, 3)) < 0.2] = np.nan
    y = np.where(np.isnan(X[:, 0]), 3.0, X[:, 0]) + rng.normal(size=n) * 0.1
    perm = rng.permutation(n)
    D, V1, V2 = np.array_split(perm, 3)
    for sets in (RowSets(np.arange(n)), RowSets(D, V1, V2)):
        crit = "biased" if sets.select is None else "unbiased"
        grown, _ = _grow(X, -y, np.ones(n), sets, GrowerParams(criterion=crit))
        assert grown.tree.n_leaves > 4
        # every row's leaf as grown = the IR's routing of its (float32) row
        np.testing.assert_array_equal(
            route_rows(grown.tree, X.astype(np.float32).astype(np.float64)), grown.row_leaf)


def test_unbiased_rule_decides_on_d2():
    """Every split made had U > 0 on D2'; the chosen candidate is the best U on D1'."""
    rng = np.random.default_rng(3)
    n = 6000
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + rng.normal(size=n)
    D, V1, V2 = np.array_split(rng.permutation(n), 3)
    grown, _ = _grow(X, -y, np.ones(n), RowSets(D, V1, V2), GrowerParams(num_leaves=16))
    c = grown.candidates
    made = grown.tree.internal_nodes
    assert made.size > 0
    chosen = c["chosen"]
    split_nodes = set(made.tolist())
    for node in np.unique(c["node"][chosen]):
        at = c["node"] == node
        best = np.argmax(np.where(c["usable"][at], c["unbiased_gain"][at], -np.inf))
        assert c["chosen"][at][best]
        decided = c["decision_gain"][at][best]
        if node in split_nodes:
            assert decided > 0
        else:  # refused on D2', or left for lack of leaves
            assert not decided > 0 or grown.tree.n_leaves == 16
    assert grown.tree.feature[0] == 0
    assert np.mean(grown.tree.feature[made] == 0) > 0.5


def test_jackknife_replicates_leave_a_block_out_of_the_d1_ratios():
    """Equal hessians (every D1' row used): the root's replicate b of each candidate equals U
    recomputed by hand from the D1' rows outside block b."""
    rng = np.random.default_rng(6)
    n = 3000
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + rng.normal(size=n)
    D, V1, V2 = np.array_split(rng.permutation(n), 3)
    B = 5
    blocks = (rng.permutation(n) % B).astype(np.intp)
    binner = fit_bins(X, 255)
    codes = feature_major(binner.transform(X))
    g, h = (-y).astype(np.float32), np.ones(n, np.float32)
    grown = grow_tree(codes, g, h, RowSets(D, V1, V2), binner, GrowerParams(num_leaves=4),
                      np.random.default_rng(0), blocks, B)
    c = grown.candidates
    assert grown.jackknife.shape == (c["node"].size, B)
    bins = binner.transform(X)
    for j in np.flatnonzero(c["node"] == 0):
        f, b = int(c["feature"][j]), int(c["bin"][j])
        goes_left = bins[:, f] <= b  # no NaN here
        GL, GI = g[D][goes_left[D]].sum(dtype=np.float64), g[D].sum(dtype=np.float64)
        for blk in range(B):
            v = V1[blocks[V1] != blk]
            rL = g[v][goes_left[v]].mean(dtype=np.float64)
            rR = g[v][~goes_left[v]].mean(dtype=np.float64)
            rI = g[v].mean(dtype=np.float64)
            want = GL * rL + (GI - GL) * rR - GI * rI
            np.testing.assert_allclose(grown.jackknife[j, blk], want, rtol=1e-9, atol=1e-9)


def test_k_draw_sums_are_the_first_k_rows_of_each_side():
    """The vectorised k-draw (one flatnonzero over every candidate) sums exactly the first k
    rows in the shuffled order that go left, that go right, and of the node: checked by hand
    per candidate, including k = 0, k = 1, ties (n_L = n_R) and every row on one side."""
    from unbiased_criteria.grower import _first_k_sums

    rng = np.random.default_rng(11)
    m = 40
    left = rng.uniform(size=(9, m)) < np.array([.1, .3, .5, .7, .9, 0, 1, .5, .02])[:, None]
    left[7] = np.arange(m) % 2 == 0  # a tie: n_L = n_R = 20
    left[8] = np.arange(m) == 17  # k = 1, the single left row late in the order
    vals = rng.normal(size=(2, m))
    nL = left.sum(axis=1)
    k = np.minimum(nL, m - nL)
    sL, sR = _first_k_sums(left, k, vals)
    for j in range(left.shape[0]):
        want_L = vals[:, np.flatnonzero(left[j])[: k[j]]].sum(axis=1)
        want_R = vals[:, np.flatnonzero(~left[j])[: k[j]]].sum(axis=1)
        np.testing.assert_allclose(sL[:, j], want_L, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(sR[:, j], want_R, rtol=1e-12, atol=1e-12)
    assert k[5] == 0 and k[6] == 0 and k[7] == 20 and k[8] == 1


def test_k_draw_sums_keep_a_tiny_larger_side_beside_large_ones():
    """Smaller sides of hessian about 1, larger sides of about 1e-18: the larger side's first
    k rows sum to their own 1e-18s. (As the prefix sum up to its k-th row minus the smaller
    side's rows before it they came out 0 or rounding noise of 1e-15, and the ratio over
    them inf or 1e3 times too small.)"""
    from unbiased_criteria.grower import _first_k_sums

    rng = np.random.default_rng(21)
    q, m = 12, 400
    left = rng.uniform(size=(q, m)) < rng.uniform(0.05, 0.95, size=q)[:, None]
    nL = left.sum(axis=1)
    k = np.minimum(nL, m - nL)
    small_left = nL * 2 <= m
    small = left == small_left[:, None]
    for j in range(q):  # the values depend on candidate j's sides: one call per candidate
        vals = np.stack([np.where(small[j], 1.0, -1e-18), np.where(small[j], 1.0, 1e-18)])
        vals *= rng.uniform(0.5, 1.5, size=m)
        sL, sR = _first_k_sums(left, k, vals, nL)
        want_L = vals[:, np.flatnonzero(left[j])[: k[j]]].sum(axis=1)
        want_R = vals[:, np.flatnonzero(~left[j])[: k[j]]].sum(axis=1)
        np.testing.assert_allclose(sL[:, j], want_L, rtol=1e-12, atol=0)
        np.testing.assert_allclose(sR[:, j], want_R, rtol=1e-12, atol=0)
        large = sR[:, j] if small_left[j] else sL[:, j]
        assert 0 < large[1] < 1e-15 and large[0] < 0


def test_unbiased_gain_on_d1_by_hand_with_unequal_hessians():
    """Log-loss hessians (the k-draw path): the root's U of every candidate equals U by hand
    from the same shuffle of D1' (first k rows of I, of L and of R)."""
    rng = np.random.default_rng(12)
    n = 3000
    X = rng.normal(size=(n, 4))
    X[rng.uniform(size=(n, 4)) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n) > 0).astype(float)
    p = 1 / (1 + np.exp(-0.5 * np.nan_to_num(X[:, 1])))
    g, h = p - y, p * (1 - p)
    D, V1, V2 = np.array_split(rng.permutation(n), 3)
    binner = fit_bins(X, 255)
    codes = feature_major(binner.transform(X))
    params = GrowerParams(num_leaves=2, min_child_samples=5)
    grown = grow_tree(codes, g, h, RowSets(D, V1, V2), binner, params, np.random.default_rng(4))
    order = V1[np.random.default_rng(4).permutation(V1.size)]  # the root's shuffle of D1'
    bins = binner.transform(X)
    c = grown.candidates
    assert (c["node"] == 0).sum() == 4
    for j in np.flatnonzero(c["node"] == 0):
        f, b = int(c["feature"][j]), int(c["bin"][j])
        go = bins[:, f] <= b  # NaN rows are in the last bin: right here
        # NaN rows go to the side that reproduces B on D
        GI, HI = g[D].sum(), h[D].sum()
        best = None
        for nan_left in (False, True):
            gl = go | (nan_left & np.isnan(X[:, f]))
            GL, HL = g[D][gl[D]].sum(), h[D][gl[D]].sum()
            B = GL**2 / HL + (GI - GL) ** 2 / (HI - HL) - GI**2 / HI
            if best is None or abs(B - c["biased_gain"][j]) < abs(best[0] - c["biased_gain"][j]):
                best = (B, gl, GL)
        _, gl, GL = best
        lo = order[gl[order]]
        ro = order[~gl[order]]
        k = min(lo.size, ro.size)
        assert k == c["k"][j]
        rL = g[lo[:k]].sum() / h[lo[:k]].sum()
        rR = g[ro[:k]].sum() / h[ro[:k]].sum()
        rI = g[order[:k]].sum() / h[order[:k]].sum()
        want = GL * rL + (GI - GL) * rR - GI * rI
        np.testing.assert_allclose(c["unbiased_gain"][j], want, rtol=1e-9, atol=1e-9)


def test_goes_left_is_the_mask_lookup():
    """Prefix masks (numeric thresholds, NaN either side) compare codes instead of looking
    them up: same answer as the lookup ``mask[code]``, category sets included."""
    from unbiased_criteria.grower import _goes_left

    rng = np.random.default_rng(13)
    width, p, n = 12, 5, 300
    codes = rng.integers(0, width, size=(p, n)).astype(np.uint8)  # width - 1: the NaN bin
    masks = np.zeros((p, width), dtype=bool)
    masks[0, :4] = True  # bins 0..3 left, NaN right
    masks[1, :7] = True
    masks[1, -1] = True  # NaN left
    masks[2, [1, 4, 5]] = True  # a category set
    masks[3, -1] = True  # only NaN left (prefix of length 0)
    masks[4, [0, 1, 2]] = True  # a category set that is a prefix
    rows = rng.permutation(n)[:200]
    want = np.stack([masks[f][codes[f, rows]] for f in range(p)])
    np.testing.assert_array_equal(_goes_left(codes, rows, np.arange(p), masks), want)
    sub = np.array([1, 2, 4])
    np.testing.assert_array_equal(_goes_left(codes, rows, sub, masks[sub]), want[sub])
    np.testing.assert_array_equal(_goes_left(codes, rows, sub[1:2], masks[2:3]), want[2:3])


@pytest.mark.parametrize("all_rows", [False, True])
def test_decision_on_one_candidate_matches_the_general_k_draw(all_rows):
    """The decision's single-candidate path gives the general path's U, k and usability
    (same shuffle, same first-k rows; every row when hessians are equal), NaN bins and a
    category set included."""
    from unbiased_criteria.grower import _unbiased, _unbiased_one

    rng = np.random.default_rng(14)
    width, n = 10, 500
    codes = rng.integers(0, width, size=(2, n)).astype(np.uint8)
    g = rng.normal(size=n)
    h = np.ones(n) if all_rows else rng.uniform(0.05, 0.25, size=n)
    params = GrowerParams(min_k=3)
    for trial in range(20):
        rows = np.sort(rng.permutation(n)[: rng.integers(1, 200)])
        mask = np.zeros(width, dtype=bool)
        if trial % 2:
            mask[rng.permutation(width - 1)[:3]] = True  # a category set
        else:
            mask[: rng.integers(0, width - 1)] = True
            mask[-1] = bool(trial % 4)  # NaN left in half the numeric ones
        f = trial % 2
        GL, GR, GI = np.array([1.5]), np.array([-0.5]), 1.0
        n_node = (np.array([30.0]), np.array([50.0]), 80.0)  # rows of D behind GL, GR, GI
        want = _unbiased(codes, rows, np.array([f]), mask[None], g, h, GL, GR, GI, n_node,
                         1e-3, np.random.default_rng(trial), params, all_rows)
        got = _unbiased_one(codes, rows, f, mask, g, h, GL, GR, GI, n_node, 1e-3,
                            np.random.default_rng(trial), params, all_rows)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])
