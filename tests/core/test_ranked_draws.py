"""The k-draws ranked by bins over one fixed random order of the held-out rows
(``first_k_sums``, ``unbiased_gain(ranked=True)``): against a brute-force recomputation,
against the shuffled path, and E[U] = 0 by Monte Carlo for several trees sharing one order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from unbiased_criteria import gains
from unbiased_criteria.gains import first_k_sums, node_sums, rank_bins, unbiased_gain
from unbiased_criteria.trees import make_tree, route_rows


def _deep_tree():
    """Depth 3, 5 leaves of unequal depths (leaves 3, 5, 6, 7, 8)."""
    # ids: 0 root, 1 left, 2 right, 3 leaf, 4 split, 5 leaf, 6 leaf, 7 leaf, 8 leaf
    left = [1, 3, 5, -1, 7, -1, -1, -1, -1]
    right = [2, 4, 6, -1, 8, -1, -1, -1, -1]
    feature = [0, 1, 1, -1, 0, -1, -1, -1, -1]
    threshold = [0.5, 0.3, 0.6, np.nan, 0.2, np.nan, np.nan, np.nan, np.nan]
    value = [np.nan, np.nan, np.nan, 1.0, np.nan, 2.0, 3.0, 4.0, 5.0]
    return make_tree(left, right, feature, threshold, value)


@pytest.fixture(params=["rank table", "binary search"])
def rank_search(request, monkeypatch):
    """Both ways of finding each request's crossing rank: one table of every rank's counts
    (small trees and few rows) and the binary search over ranks (the limit set to 0)."""
    if request.param == "binary search":
        monkeypatch.setattr(gains, "_RANK_TABLE_LIMIT", 0)
    return request.param


@pytest.fixture(params=["dense cells", "sparse cells"])
def cell_table(request, monkeypatch):
    """Both ways of finding each row's cell: a dense (node, cut) table (most trees) and each
    leaf's sorted cuts with a binary search (trees of thousands of leaves; limit set to 0)."""
    if request.param == "sparse cells":
        monkeypatch.setattr(gains, "_CELL_TABLE_LIMIT", 0)
    return request.param


@pytest.fixture(params=["whole", "in chunks"])
def crossing_chunk(request, monkeypatch):
    """Requests' crossing bins, bins' cells and re-summed ranges of cells taken all at once
    (most trees) or a few at a time (trees of thousands of leaves: the limit set to 1)."""
    if request.param == "in chunks":
        monkeypatch.setattr(gains, "_CROSSING_CHUNK", 1)
    return request.param


def _brute(tree, nodes, node, k, values, blocks, n_blocks):
    members = tree.ancestors.toarray().astype(bool)  # members[a, v]: v under a
    out = [np.zeros((node.size, n_blocks)) for _ in values]
    for q, (a, kq) in enumerate(zip(node, k)):
        rows = np.flatnonzero(members[a, nodes])[:kq]  # first k rows in the given order
        assert rows.size == kq
        for v, o in zip(values, out):
            vals = np.ones(nodes.size) if v is None else v
            which = blocks[rows] if blocks is not None else np.zeros(kq, dtype=np.int64)
            np.add.at(o[q], which, vals[rows])
    return out


@pytest.mark.parametrize("n", [7, 60, 3000])
@pytest.mark.parametrize("with_blocks", [False, True])
def test_first_k_sums_equal_brute_force(n, with_blocks, rank_search, cell_table,
                                        crossing_chunk):
    rng = np.random.default_rng(n)
    tree = _deep_tree()
    nodes = route_rows(tree, rng.random((n, 2)))
    size = np.rint(tree.node_sums(nodes)).astype(np.int64)
    node = np.flatnonzero(size > 0)
    node = np.concatenate([node, node])  # repeated requests with other k
    k = np.maximum(1, (rng.random(node.size) * (size[node] + 1)).astype(np.int64))
    k = np.minimum(k, size[node])
    k[: node.size // 2] = size[node[: node.size // 2]]  # every row of the node
    g, h = rng.normal(size=n), rng.random(n)
    n_blocks = 4 if with_blocks else 1
    blocks = rng.integers(0, n_blocks, n) if with_blocks else None
    got = first_k_sums(tree, nodes, node, k, (g, h, None), blocks, n_blocks)
    want = _brute(tree, nodes, node, k, (g, h, None), blocks, n_blocks)
    for a, b in zip(got, want):
        assert a.shape == (node.size, n_blocks)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_first_k_sums_in_chunks_of_pairs_equal_brute_force(chunk, monkeypatch, cell_table):
    """Large trees take their (request, leaf) pairs' sums a chunk of requests at a time
    (their arrays of pairs x blocks took gigabytes): any chunking gives the same sums."""
    monkeypatch.setattr(gains, "_PAIR_CHUNK", chunk)
    rng = np.random.default_rng(11)
    n = 2000
    tree = _deep_tree()
    nodes = route_rows(tree, rng.random((n, 2)))
    size = np.rint(tree.node_sums(nodes)).astype(np.int64)
    node = np.repeat(np.flatnonzero(size > 0), 2)
    k = np.maximum(1, (rng.random(node.size) * (size[node] + 1)).astype(np.int64))
    k = np.minimum(k, size[node])
    g, h = rng.normal(size=n), rng.random(n)
    blocks = rng.integers(0, 5, n)
    got = first_k_sums(tree, nodes, node, k, (g, h, None), blocks, 5)
    want = _brute(tree, nodes, node, k, (g, h, None), blocks, 5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("with_blocks", [False, True])
def test_first_k_sums_keep_tiny_values_beside_large_ones(with_blocks, rank_search,
                                                        cell_table, crossing_chunk):
    """Hessians of weight 1e-20 among rows of weight 1: a node's draw of tiny rows summed to
    exactly 0 as a difference of prefix sums (then 0/0, NaN U marked usable); each sum is
    now the tiny rows' own, to the brute force's precision."""
    rng = np.random.default_rng(5)
    n = 3000
    tree = _deep_tree()
    X = rng.random((n, 2))
    nodes = route_rows(tree, X)
    tiny = X[:, 0] > 0.5  # the root's right subtree
    g = rng.normal(size=n) * np.where(tiny, 1e-20, 1.0)
    h = rng.random(n) * np.where(tiny, 1e-20, 1.0)
    size = np.rint(tree.node_sums(nodes)).astype(np.int64)
    node = np.flatnonzero(size > 0)
    k = np.minimum(size[node], 7)
    n_blocks = 4 if with_blocks else 1
    blocks = rng.integers(0, n_blocks, n) if with_blocks else None
    got = first_k_sums(tree, nodes, node, k, (g, h), blocks, n_blocks)
    want = _brute(tree, nodes, node, k, (g, h), blocks, n_blocks)
    assert (want[1][node >= 2] < 1e-18).any()  # requests of tiny rows only
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=0)


@pytest.mark.parametrize("n", [50, 3000])
def test_first_k_sums_rank_by_bin_then_position(n, rank_search, cell_table, crossing_chunk):
    """With ``bins``, rows are ranked by (bin, position): the same sums as the position rank
    of the rows stably sorted by bin."""
    rng = np.random.default_rng(n + 1)
    tree = _deep_tree()
    nodes = route_rows(tree, rng.random((n, 2)))
    size = np.rint(tree.node_sums(nodes)).astype(np.int64)
    node = np.flatnonzero(size > 0)
    k = np.maximum(1, size[node] // 3)
    g, blocks = rng.normal(size=n), rng.integers(0, 3, n)
    n_bins = 9
    bins = rng.integers(0, n_bins, n)
    got = first_k_sums(tree, nodes, node, k, (g, None), blocks, 3, bins=bins, n_bins=n_bins)
    p = np.argsort(bins, kind="stable")
    want = _brute(tree, nodes[p], node, k, (g[p], None), blocks[p], 3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)

@pytest.mark.parametrize("n", [5, 50, 3001])
@pytest.mark.parametrize("n_bins", [0, 1, 7])
def test_first_k_sums_runs_ranked_by_bin_order(n, n_bins, rank_search, cell_table,
                                               crossing_chunk):
    """Without ``bins``, runs of ``ceil(n / n_bins)`` consecutive rows ranked by
    ``bin_order``, then by position: the same sums as the position rank of the rows taken
    run by run in that order (``n_bins=0``: ``rank_bins(n)`` runs; empty runs at the end)."""
    rng = np.random.default_rng(n + n_bins)
    tree = _deep_tree()
    nodes = route_rows(tree, rng.random((n, 2)))
    size = np.rint(tree.node_sums(nodes)).astype(np.int64)
    node = np.flatnonzero(size > 0)
    node = np.concatenate([node, node])
    k = np.minimum(size[node], np.maximum(1, (rng.random(node.size) * size[node]).astype(int)))
    g, blocks = rng.normal(size=n), rng.integers(0, 3, n)
    runs = n_bins or rank_bins(n)
    order = rng.permutation(runs)
    got = first_k_sums(tree, nodes, node, k, (g, None, 0.5), blocks, 3, n_bins=n_bins,
                       bin_order=order)
    run = np.arange(n) // -(-n // runs)
    p = np.argsort(np.argsort(order)[run], kind="stable")
    want = _brute(tree, nodes[p], node, k, (g[p], None, None), blocks[p], 3)
    want[2] = 0.5 * want[1]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("with_blocks", [False, True])
def test_ranked_gain_draws_bins_from_rng(with_blocks):
    """ranked=True: one rng.permutation(rank_bins(n)) per draw ranks runs of consecutive rows,
    then rows by position; the same gain as the shuffled path fed the rows in that order."""
    rng = np.random.default_rng(3)
    tree = _deep_tree()
    X, Xv = rng.random((500, 2)), rng.random((2000, 2))
    g, gv = rng.normal(size=500), rng.normal(size=2000)
    h, hv = rng.random(500) + 0.5, rng.random(2000) + 0.5
    hv[::50] = 0.0  # some zero hessians: counted, not summed
    sums = node_sums(tree, route_rows(tree, X), g, h)
    nodes_v = route_rows(tree, Xv)
    blocks = rng.integers(0, 5, 2000) if with_blocks else None
    kw = dict(min_k=1, n_blocks=5 if with_blocks else 0)
    ranked = unbiased_gain(tree, sums.G, nodes_v, gv, hv, rng=np.random.default_rng(9),
                           ranked=True, blocks=blocks, **kw)
    runs = rank_bins(2000)
    order = np.random.default_rng(9).permutation(runs)
    run = np.arange(2000) // -(-2000 // runs)
    p = np.argsort(np.argsort(order)[run], kind="stable")

    class Identity:  # the shuffled path, with the rank order given as its "shuffle"
        def permutation(self, n):
            return p

    ref = unbiased_gain(tree, sums.G, nodes_v, gv, hv, rng=Identity(),
                        blocks=blocks, **kw)
    np.testing.assert_allclose(ranked.gain, ref.gain, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ranked.usable, ref.usable)
    if with_blocks:
        np.testing.assert_allclose(ranked.jackknife, ref.jackknife, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_one_order_shared_by_many_trees_keeps_every_tree_unbiased():
    """Null: gradients independent of the features. R samples, each ranked once (its rows
    come in a random order) and shared by 4 trees on different features; every tree's mean U
    over the replications is 0 within 4 standard errors, and so is the sum over trees."""
    R, n, nv, T = 800, 120, 120, 4
    rng = np.random.default_rng(2024)
    trees = [make_tree([1, -1, -1], [2, -1, -1], [f, -1, -1], [0.5, np.nan, np.nan],
                       [np.nan, 0.0, 0.0]) for f in range(T)]
    u = np.empty((R, T))
    for r in range(R):
        X, Xv = rng.random((n, T)), rng.random((nv, T))
        g, gv = -rng.normal(0.3, 1.0, n), -rng.normal(0.3, 1.0, nv)
        h, hv = np.ones(n), rng.uniform(0.5, 1.5, nv)
        for t, tree in enumerate(trees):
            sums = node_sums(tree, route_rows(tree, X), g, h)
            res = unbiased_gain(tree, sums.G, route_rows(tree, Xv), gv, hv,
                                rng=np.random.default_rng(0), min_k=1, ranked=True)
            u[r, t] = res.gain[0]
    mean, se = u.mean(axis=0), u.std(axis=0, ddof=1) / math.sqrt(R)
    assert np.all(np.abs(mean) < 4 * se), (mean, se)
    total = u.sum(axis=1)
    assert abs(total.mean()) < 4 * total.std(ddof=1) / math.sqrt(R)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("permuted", [False, True])
def test_tree_columns_are_the_chunk_transposed_in_the_given_order(dtype, permuted):
    """The replay's transposition (blocks of rows, gathered whole when permuted) yields each
    tree's ids in the given order, intp, whatever the block size and a reused buffer."""
    from unbiased_criteria.replay import _tree_columns

    rng = np.random.default_rng(4)
    buffers: dict = {}
    # a second, smaller chunk reuses the buffer; 40 trees make two groups (a column range of
    # each row), a strided view is read as it is
    for n, c, strided in ((1000, 7, False), (999, 3, False), (1000, 40, False),
                          (999, 5, True)):
        leaves = rng.integers(0, 50, (n, 2 * c if strided else c)).astype(dtype)
        leaves = leaves[:, ::2] if strided else leaves
        order = rng.permutation(n) if permuted else None
        want = (leaves if order is None else leaves[order]).T.astype(np.intp)
        got = list(_tree_columns(leaves, order, buffers, "v", block=64))
        assert len(got) == c
        for a, b in zip(got, want):
            assert a.dtype == np.intp
            np.testing.assert_array_equal(a, b)


def test_scoring_a_tree_of_thousands_of_leaves_stays_small():
    """The cells were a dense (node, cut) table, which grew with the square of the tree: one
    LightGBM tree of 8192 leaves took 3.7 GB. They are now a sparse table, and the pairs'
    sums, the crossing bins' rows and the re-summed ranges are taken a chunk at a time
    (numpy's allocations, by tracemalloc)."""
    import tracemalloc

    from ._helpers import random_tree

    rng = np.random.default_rng(0)
    tree = random_tree(rng, 4095, categorical=False)
    leaves = np.flatnonzero(tree.is_leaf)
    n = 20000
    nodes = rng.choice(leaves, n)
    g, h = rng.normal(size=n), np.ones(n)
    G = tree.node_sums(nodes, g)
    tracemalloc.start()
    try:
        u = unbiased_gain(tree, G, nodes, g, h, rng=np.random.default_rng(1), min_k=1,
                          ranked=True, blocks=rng.integers(0, 20, n), n_blocks=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert u.usable.sum() > 1000
    # 190 MB, most of it the cells' sums per block (cells grow with the tree's nodes times
    # its depth); 350 MB when the ranges of cells re-summed against cancellation were
    # gathered at once, and the dense table took 1.8 GB here
    assert peak < 280 * 2**20, peak / 2**20
