"""The partitioned k-draws are exactly uniform without replacement over the whole held-out set.

Runs the functions the dask workers run (:mod:`unbiased_criteria.partitioned`) in this process,
with a chosen routing: a stump over 9 held-out rows cut in partitions of 3, 4 and 2 rows. A
custom objective makes row ``i``'s gradient ``2**i``, so a drawn subset's gradient sum is its
bitmask. Over many seeds every ``k``-subset of a node must appear equally often (chi-square
over all of them), each row equally often (inclusion counts), and the partitions' shares follow
the multivariate hypergeometric law.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

from unbiased_criteria.options import GainOptions
from unbiased_criteria.partitioned import (
    add_stats,
    allocate_draws,
    draw_requests,
    partition_step,
    request_allocation,
    start_partition,
)

lightgbm = pytest.importorskip("lightgbm")
from unbiased_criteria.adapters import lightgbm as uc_lgb  # noqa: E402

SIZES = (3, 4, 2)
# leaf of each held-out row (IR ids of a stump: 0 root, 1 and 2 leaves): 4 left, 5 right
LEAF = np.array([1, 2, 2, 1, 2, 1, 2, 1, 2])


def _identity_objective(y, raw, weight):
    return np.asarray(y, dtype=np.float64), np.ones_like(raw, dtype=np.float64)


@pytest.fixture(scope="module")
def stump():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    booster = lightgbm.train({"num_leaves": 2, "verbose": -1, "min_data_in_leaf": 5},
                             lightgbm.Dataset(X, X[:, 0] + rng.normal(size=200)), 1)
    read = uc_lgb.read_model(booster)
    objective = uc_lgb.make_objective(_identity_objective, read)
    assert read.forest.trees[0].n_nodes == 3
    return read, objective


def _one_run(read, objective, seed):
    options = GainOptions(random_state=seed, min_k=1)
    y = 2.0 ** np.arange(LEAF.size)
    cuts = np.cumsum((0,) + SIZES)
    states, counts = [], []
    for p in range(len(SIZES)):
        rows = slice(cuts[p], cuts[p + 1])
        leaf = LEAF[rows].reshape(-1, 1).astype(np.int32)
        state = start_partition(read, y[rows], None, held_out=True, index=p,
                                offset=int(cuts[p]), options=options)
        route = (lambda a, b, leaf=leaf: leaf)  # noqa: E731 - the chosen routing
        state, c = partition_step(state, read, objective, route, 1, 0, 1, what="counts")
        states.append((state, route))
        counts.append(c[0])
    counts = np.stack(counts)
    tree = read.forest.trees[0]
    k, usable, node, req_k = draw_requests(tree, counts.sum(axis=0), options.min_k)
    alloc = request_allocation(tree, counts, node, req_k, options, 0)
    parts = [partition_step(s, read, objective, route, 1, 0, 1, what="draws",
                            requests=[(node, alloc[:, p])], options=options, index=p)[1]
             for p, (s, route) in enumerate(states)]
    draws = add_stats(*parts)[0]  # (n_draws, 3, requests, blocks)
    masks = np.rint(draws[0, 0, :, 0]).astype(np.int64)
    return node, req_k, masks, alloc[0]


def _subsets(mask_rows):
    return [sum(1 << i for i in c) for c in mask_rows]


def test_every_k_subset_equally_likely(stump):
    read, objective = stump
    n_seeds = 2000
    node, req_k, _, _ = _one_run(read, objective, 0)
    assert node.tolist() == [0, 1, 2] and req_k.tolist() == [4, 4, 4]
    root_cells = {m: i for i, m in enumerate(_subsets(combinations(range(9), 4)))}
    right_rows = np.flatnonzero(LEAF == 2)  # 5 rows, draws of 4
    right_cells = {m: i for i, m in enumerate(
        _subsets(combinations(right_rows.tolist(), 4)))}
    root = np.zeros(comb(9, 4))
    right = np.zeros(comb(5, 4))
    inclusion = np.zeros(9)
    for seed in range(n_seeds):
        _, _, masks, _ = _one_run(read, objective, seed)
        root[root_cells[masks[0]]] += 1  # KeyError: not a 4-subset of the node
        right[right_cells[masks[2]]] += 1
        inclusion += (masks[0] >> np.arange(9)) & 1
        assert masks[1] == sum(1 << i for i in np.flatnonzero(LEAF == 1))  # all 4 left rows
    # chi-square over the 126 subsets of the root and the 5 of the right child
    assert stats.chisquare(root).pvalue > 1e-3
    assert stats.chisquare(right).pvalue > 1e-3
    # inclusion counts: every row in 4/9 of the draws (binomial, 4 standard errors)
    p = 4 / 9
    se = np.sqrt(n_seeds * p * (1 - p))
    assert np.all(np.abs(inclusion - n_seeds * p) < 4 * se), inclusion


def test_allocation_is_multivariate_hypergeometric(stump):
    tree = stump[0].forest.trees[0]
    counts = np.array([[3, 0, 1], [4, 5, 0], [2, 7, 0]])
    node, k = np.array([0, 1]), np.array([4, 6])
    draws = np.stack([request_allocation(tree, counts, node, k, GainOptions(random_state=s), 0)[0]
                      for s in range(3000)])
    assert np.all(draws.sum(axis=1) == k) and np.all(draws <= counts[:, node])
    # means and variances of the multivariate hypergeometric law, per partition and request
    c = counts[:, node]
    N = c.sum(axis=0)
    mean = k * c / N
    var = k * c / N * (1 - c / N) * (N - k) / np.maximum(N - 1, 1)
    se = np.sqrt(var / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 4 * se + 1e-12)
    assert np.allclose(draws.var(axis=0), var, rtol=0.15, atol=1e-9)


def test_a_node_keeps_its_allocation_when_other_requests_change(stump):
    tree = stump[0].forest.trees[0]
    counts = np.array([[3, 2, 1], [4, 5, 3], [2, 7, 2]])
    options = GainOptions(random_state=3, n_draws=2)
    both = request_allocation(tree, counts, np.array([0, 1]), np.array([4, 6]), options, 5)
    alone = request_allocation(tree, counts, np.array([1]), np.array([6]), options, 5)
    np.testing.assert_array_equal(both[:, :, 1], alone[:, :, 0])


def test_allocation_refuses_k_above_the_rows():
    with pytest.raises(ValueError, match="between 0 and"):
        allocate_draws(np.array([1, 2]), 4, np.random.default_rng(0))
