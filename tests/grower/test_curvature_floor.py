"""The grower's curvature floor: a ratio over drawn validation rows is evidence only where their
hessian sum, scaled to the node's rows of D, reaches 1e-3 times the mean weight of the rows it
is drawn from (the post-hoc scorer's rule, ``gains.has_curvature``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc
from unbiased_criteria.binning import fit_bins
from unbiased_criteria.grower import GrowerParams, RowSets, feature_major, grow_tree

FLOOR = 1e-3  # gains.MIN_HESSIAN, spelt out: the oracle below is the documented rule


def _confident_data(seed=31, n=3000):
    """Log-loss-like gradients with a region (x0 > 1) of rows a model is confidently wrong
    about: gradient +-1, hessian 1e-13..1e-12, as float32 hessians of p(1-p) near 0 are."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[rng.uniform(size=(n, 3)) < 0.05] = np.nan
    p = 1 / (1 + np.exp(-0.5 * np.nan_to_num(X[:, 1])))
    y = (rng.uniform(size=n) < p).astype(float)
    g, h = p - y, p * (1 - p)
    wrong = np.nan_to_num(X[:, 0]) > 1.0
    g[wrong] = np.where(rng.uniform(size=wrong.sum()) < 0.8, 1.0, -1.0)
    h[wrong] = rng.uniform(1e-13, 1e-12, size=wrong.sum())
    w = rng.uniform(0.5, 2.0, size=n)
    return X, g * w, h * w, w


def _by_hand(order, goes_left, g, h, n_node, GL, GI, floor, blocks=None, n_blocks=0):
    """U of one candidate from the first k rows of ``order`` that go left, right, and of the
    node, with the documented floor; and its jackknife replicates leaving each block out."""
    lo, ro = order[goes_left[order]], order[~goes_left[order]]
    k = min(lo.size, ro.size)
    drawn = (lo[:k], ro[:k], order[:k])
    G = (GL, GI - GL, GI)

    def U_of(rows_of_side):
        U, ok = 0.0, True
        for sign, rows, Gx, nx in zip((1, 1, -1), rows_of_side, G, n_node):
            sum_h = h[rows].sum()
            ok &= bool(np.count_nonzero(h[rows]) > 0 and sum_h * nx >= floor * rows.size)
            U += sign * Gx * (g[rows].sum() / sum_h if ok else 0.0)
        return (U if ok else 0.0), ok

    U, ok = U_of(drawn)
    ok &= k >= 5
    U = U if ok else 0.0
    jack = None
    if blocks is not None:
        jack = np.array([U_of([r[blocks[r] != b] for r in drawn])[0] if ok else 0.0
                         for b in range(n_blocks)])
    return U, k, ok, jack


@pytest.mark.parametrize("with_blocks", [False, True])
def test_floor_applies_to_the_choice_the_decision_and_the_jackknife_by_hand(with_blocks):
    """Every root candidate's U on D1', usability, decision on D2' and jackknife replicates
    equal the documented rule by hand: where a ratio's drawn hessian sum, scaled to the
    node's rows of D, is below 1e-3 times the mean weight of D1' (D2' for the decision), the
    candidate is unusable and 0. Without the floor the candidate on x0 > 1 (hessians 1e-12
    on its right) had U of order 1e12 and was chosen."""
    X, g, h, w = _confident_data()
    n = X.shape[0]
    rng = np.random.default_rng(5)
    D, V1, V2 = np.array_split(rng.permutation(n), 3)
    B = 6
    blocks = (rng.permutation(n) % B).astype(np.intp) if with_blocks else None
    binner = fit_bins(X, 255)
    codes = feature_major(binner.transform(X))
    params = GrowerParams(num_leaves=2, min_child_samples=5, min_child_weight=0.0)
    grown = grow_tree(codes, g, h, RowSets(D, V1, V2), binner, params,
                      np.random.default_rng(4), blocks, B if with_blocks else 0, weight=w)
    draws = np.random.default_rng(4)
    order1 = V1[draws.permutation(V1.size)]  # the root's shuffle of D1', then of D2'
    order2 = V2[draws.permutation(V2.size)]
    floor1, floor2 = FLOOR * w[V1].mean(), FLOOR * w[V2].mean()
    bins = binner.transform(X)
    c = grown.candidates
    root = np.flatnonzero(c["node"] == 0)
    assert root.size == 3
    floored = 0
    for j in root:
        f, b = int(c["feature"][j]), int(c["bin"][j])
        # NaN rows go to the side that reproduces B on D
        GI, HI = g[D].sum(), h[D].sum()
        fits = []
        for nan_left in (False, True):
            gl = (bins[:, f] <= b) | (nan_left & np.isnan(X[:, f]))
            GL, HL = g[D][gl[D]].sum(), h[D][gl[D]].sum()
            B_hand = GL**2 / HL + (GI - GL) ** 2 / (HI - HL) - GI**2 / HI
            fits.append((abs(B_hand - c["biased_gain"][j]) / abs(B_hand), gl, GL))
        _, gl, GL = min(fits, key=lambda t: t[0])
        nL = gl[D].sum()
        n_node = (nL, D.size - nL, D.size)
        U, k, ok, jack = _by_hand(order1, gl, g, h, n_node, GL, GI, floor1, blocks, B)
        assert c["k"][j] == k and bool(c["usable"][j]) == ok
        np.testing.assert_allclose(c["unbiased_gain"][j], U, rtol=1e-9, atol=1e-9)
        if with_blocks:
            np.testing.assert_allclose(grown.jackknife[j], jack, rtol=1e-9, atol=1e-9)
        # the candidates the floor refused: rows with a non-zero hessian on every side
        if not ok and k >= 5:
            floored += 1
        if c["chosen"][j]:
            U2, _, ok2, _ = _by_hand(order2, gl, g, h, n_node, GL, GI, floor2)
            want = U2 if ok2 else np.nan
            np.testing.assert_allclose(c["decision_gain"][j], want, rtol=1e-9, atol=1e-9)
    assert floored >= 1  # the x0 > 1 candidate: tiny hessians on its right
    assert np.all(np.isfinite(c["unbiased_gain"]))
    assert np.all(np.abs(c["unbiased_gain"]) < 1e7)


def test_floor_unit_is_the_mean_weight_of_the_rows_drawn_from():
    """Scaling the weights of D1' (or of D2') alone by 1e-6 leaves every ratio drawn from it,
    so every U on it, usability and replicate, and the trees, unchanged: the floor scales
    with those rows' weights. (A floor in other units refused every candidate after the
    scaling.)"""
    X, g, h, w = _confident_data(seed=32)
    n = X.shape[0]
    rng = np.random.default_rng(6)
    D, V1, V2 = np.array_split(rng.permutation(n), 3)
    blocks = (rng.permutation(n) % 5).astype(np.intp)
    binner = fit_bins(X, 255)
    codes = feature_major(binner.transform(X))
    params = GrowerParams(num_leaves=8, min_child_samples=5, min_child_weight=0.0)

    def grow(scale_rows, c):
        s = np.ones(n)
        s[scale_rows] = c
        return grow_tree(codes, g * s, h * s, RowSets(D, V1, V2), binner, params,
                         np.random.default_rng(0), blocks, 5, weight=w * s)

    base = grow([], 1.0)
    assert not base.candidates["usable"].all() and base.candidates["usable"].any()
    for rows in (V1, V2):
        scaled = grow(rows, 1e-6)
        np.testing.assert_array_equal(scaled.tree.feature, base.tree.feature)
        np.testing.assert_array_equal(scaled.row_leaf, base.row_leaf)
        for key in ("usable", "chosen", "k", "split"):
            np.testing.assert_array_equal(scaled.candidates[key], base.candidates[key])
        for key in ("unbiased_gain", "decision_gain"):
            np.testing.assert_allclose(scaled.candidates[key], base.candidates[key],
                                       rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(scaled.jackknife, base.jackknife, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n_blocks", [0, 20])
def test_multiclass_with_a_tiny_class_reports_finite_bounded_gains(n_blocks):
    """Three classes and one of 3 rows, learning rate 1: validation rows the model is
    confidently wrong about have hessians near 0. Every gain is finite and no warning reaches
    the user (before: U = inf and 7.6e25, an infinitely important noise column, numpy's
    divide-by-zero warning; with n_blocks=20 standard errors of 6.8e44). With gradients
    |g| <= 1 and unit weights the floor bounds each ratio by 1e3 n_X (n_X the node's rows of
    D), so |U| <= 1e3 (n_L^2 + n_R^2 + n_I^2) <= 2e3 n_I^2."""
    r = np.random.default_rng(0)
    n = 5000
    X = np.column_stack([r.integers(0, 2, n), r.integers(0, 6, n),
                         r.normal(size=n)]).astype(float)
    y = np.where(r.random(n) < 0.3 + 0.3 * X[:, 0], 1, 0)  # only X[:, 0] is informative
    y[r.random(n) < 0.3] = 2
    y[r.choice(n, 3, replace=False)] = 3  # a class of 3 rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = uc.UnbiasedGBMClassifier(n_estimators=30, learning_rate=1.0, num_leaves=8,
                                     random_state=0, n_blocks=n_blocks).fit(X, y)
    assert np.all(np.isfinite(m.unbiased_gain_))
    assert np.all(np.isfinite(m.feature_importances_))
    if n_blocks:
        assert np.all(np.isfinite(m.importance_report_.to_frame()["std_error"]))
        assert np.all(np.isfinite(m._result.jackknife))
    c = m._result.candidates
    bound = 2e3 * c["n_train"].to_numpy(dtype=np.float64) ** 2
    assert np.all(np.abs(c["unbiased_gain"]) <= bound)
    decided = c["decision_gain"].notna()
    assert np.all(np.abs(c["decision_gain"][decided]) <= bound[decided])
