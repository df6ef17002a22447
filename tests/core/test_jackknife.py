"""The block jackknife: per-block sums of the drawn rows, leave-one-block-out U, and the
report's standard error, each against a plain recomputation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from unbiased_criteria.gains import (
    block_node_sums,
    draw_subsets,
    leave_one_out,
    node_sums,
    unbiased_gain,
)
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.trees import make_tree, route_rows


def _tree():
    return make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 1, -1, -1, -1],
                     [0.5, 0.2, np.nan, np.nan, np.nan], [np.nan, np.nan, 1.0, 2.0, 3.0])


def test_block_sums_equal_brute_force():
    rng = np.random.default_rng(0)
    tree = _tree()
    nodes = route_rows(tree, rng.random((800, 2)))
    g, h = rng.normal(size=800), rng.random(800)
    blocks = rng.integers(0, 7, 800)
    draws = draw_subsets(tree, nodes, np.array([0, 1, 2, 3, 4]),
                         np.array([90, 40, 30, 10, 25]), rng)
    got_g, got_h = draws.block_sums((g, h), blocks, 7)
    for q in range(5):
        rows = draws.rows(q)
        for b in range(7):
            in_b = rows[blocks[rows] == b]
            assert got_g[q, b] == pytest.approx(g[in_b].sum(), abs=1e-12)
            assert got_h[q, b] == pytest.approx(h[in_b].sum(), abs=1e-12)


def test_block_node_sums_equal_brute_force():
    rng = np.random.default_rng(3)
    tree = _tree()
    nodes = route_rows(tree, rng.random((500, 2)))
    g, blocks = rng.normal(size=500), rng.integers(0, 4, 500)
    got = block_node_sums(tree, nodes, g, blocks, 4)
    for b in range(4):
        np.testing.assert_allclose(got[:, b], node_sums(tree, nodes[blocks == b],
                                                        g[blocks == b], g[blocks == b]).G)


def test_leave_one_out_sums_survive_a_huge_block():
    # block 2 holds one row of weight 1e20: a total minus block 2 would be 0 (cancellation)
    rng = np.random.default_rng(4)
    per_block = rng.normal(size=(3, 6))
    per_block[1, 2] = 1e20
    got = leave_one_out(per_block)
    for q in range(3):
        for b in range(6):
            others = [per_block[q, c] for c in range(6) if c != b]
            assert got[q, b] == pytest.approx(np.sum(others), rel=1e-12)
    assert got[1, 2] == pytest.approx(np.delete(per_block[1], 2).sum(), rel=1e-12)
    assert got[1, 2] != 0.0


@pytest.mark.parametrize("shortcut", [False, True])
@pytest.mark.parametrize("g_blocked", [False, True])
def test_leave_one_block_out_gain(shortcut, g_blocked):
    # g_blocked: G's rows are divided into the same blocks (the validation-only mode's other
    # half), so replicate b leaves block b out of G as well
    rng = np.random.default_rng(1)
    tree = _tree()
    X, Xv = rng.random((600, 2)), rng.random((900, 2))
    g, gv = rng.normal(size=600), rng.normal(size=900)
    h, hv = np.ones(600), np.ones(900) if shortcut else rng.uniform(0.5, 1.5, 900)
    nodes, nodes_v = route_rows(tree, X), route_rows(tree, Xv)
    sums = node_sums(tree, nodes, g, h)
    blocks = rng.integers(0, 5, 900)
    blocks_g = rng.integers(0, 5, 600)
    u = unbiased_gain(tree, sums.G, nodes_v, gv, hv, rng=np.random.default_rng(5),
                      blocks=blocks, n_blocks=5, shortcut=shortcut, min_k=1,
                      G_blocks=block_node_sums(tree, nodes, g, blocks_g, 5) if g_blocked
                      else None)
    split = tree.internal_nodes
    # the draws unbiased_gain made (documented: one draw_subsets call, requests I, L, R)
    req = np.concatenate([split, tree.left[split], tree.right[split]])
    k = np.tile(u.k[split], 3)
    draws = draw_subsets(tree, nodes_v, req, k, np.random.default_rng(5))
    for b in range(5):
        ratio = []
        for q, node in enumerate(req):
            rows = (np.flatnonzero(np.isin(nodes_v, np.flatnonzero(tree.ancestors[node]
                                                                  .toarray()[0])))
                    if shortcut else draws.rows(q))
            rows = rows[blocks[rows] != b]
            ratio.append(gv[rows].sum() / hv[rows].sum())
        r_I, r_L, r_R = np.split(np.array(ratio), 3)
        G = node_sums(tree, nodes[blocks_g != b], g[blocks_g != b], h[blocks_g != b]).G \
            if g_blocked else sums.G
        want = G[tree.left[split]] * r_L + G[tree.right[split]] * r_R - G[split] * r_I
        np.testing.assert_allclose(u.jackknife[b, split], want, rtol=1e-10, atol=1e-10)


def test_report_standard_error_is_the_jackknife_formula():
    rng = np.random.default_rng(2)
    splits = pd.DataFrame({"feature_index": [0, 0, 1, 2, 2, 2],
                           "unbiased_gain": rng.normal(size=6),
                           "biased_gain": rng.random(6), "host_gain": rng.random(6)})
    jack = rng.normal(size=(6, 10))
    report = ImportanceReport(splits, ["a", "b", "c", "d"], jackknife=jack)
    se = report.std_error()
    for f, name in enumerate(["a", "b", "c", "d"]):
        per_block = jack[splits["feature_index"].to_numpy() == f].sum(axis=0)
        want = np.sqrt(9 / 10 * np.sum((per_block - per_block.mean()) ** 2))
        assert se[name] == pytest.approx(want)
    assert se["d"] == 0.0  # no splits: no variation
