"""What the Dask engine checks, computed from partitions (:mod:`unbiased_criteria.partitioned`,
run here in this process): the row-hash summaries merged over partitions against the
in-memory row sets (:mod:`unbiased_criteria.row_sets`), and a pruned model's later trees'
sums at its own scores against the in-memory replay of the unpruned model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import unbiased_criteria as uc
from unbiased_criteria.options import GainOptions
from unbiased_criteria.partitioned import (
    add_stats,
    own_biased_gain,
    partition_step,
    start_partition,
)
from unbiased_criteria.replay import resolve_bias
from unbiased_criteria.row_sets import (
    SKETCH_SIZE,
    SUMMARY_SIZE,
    WARN_EXCESS,
    covers,
    merge_summaries,
    overlap,
    overlap_with_sketch,
    sketch,
    sketch_overlap,
    summarize_hashes,
    summary_overlap,
    summary_sketch,
)


def _hashes(rng, n_distinct, n_rows):
    """``n_rows`` row hashes over ``n_distinct`` values (repeats when more rows)."""
    values = _fresh(rng, n_distinct)
    return values[rng.integers(0, n_distinct, n_rows)]


def _fresh(rng, n):
    """Hashes of ``n`` rows none of which (to chance 2**-64 a pair) repeats another."""
    return rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)


def _summary(hashes, n_parts):
    return merge_summaries(*(summarize_hashes(h) for h in np.array_split(hashes, n_parts)))


@pytest.mark.parametrize("n_distinct, n_rows", [(500, 3000), (200_000, 150_000)])
def test_merged_summaries_are_those_of_all_rows_and_sketch_alike(n_distinct, n_rows):
    rng = np.random.default_rng(n_distinct)
    hashes = _hashes(rng, n_distinct, n_rows)
    third = n_rows // 3
    merged = merge_summaries(_summary(hashes[:third], 7), _summary(hashes[third:], 2))
    distinct, counts = np.unique(hashes, return_counts=True)
    np.testing.assert_array_equal(merged.distinct, distinct[:SUMMARY_SIZE])
    np.testing.assert_array_equal(merged.counts, counts[:SUMMARY_SIZE])
    assert merged.n_rows == n_rows and merged.complete == (distinct.size < SUMMARY_SIZE)
    assert summary_sketch(merged) == sketch(hashes)
    # a set of few distinct hashes: its sketch is complete, and still the same text
    few = hashes[np.isin(hashes, distinct[:SKETCH_SIZE - 10])]
    assert summary_sketch(_summary(few, 3)) == sketch(few)


def test_complete_summaries_overlap_as_the_row_sets():
    """Fewer distinct rows than a summary keeps: exactly the in-memory overlap."""
    rng = np.random.default_rng(1)
    train = _hashes(rng, 3000, 5000)
    held = np.concatenate([train[:700], _hashes(rng, 2000, 2000)])
    got = summary_overlap(_summary(train, 3), _summary(held, 4))
    want = overlap(train, held)
    assert (got.share, got.chance, got.tested, got.estimated) == \
        (want.share, want.chance, want.tested, False)
    assert covers(_summary(train, 2), _summary(train[::-1], 5))
    assert not covers(_summary(train[:4000], 2), _summary(train, 5))
    text = sketch(train)
    assert sketch_overlap(text, _summary(held, 3)) == overlap_with_sketch(text, held)


@pytest.mark.parametrize("n_train", [200_000, 1_000_000])
def test_a_share_of_many_training_rows_is_estimated(n_train):
    """More distinct rows than a summary keeps: the share among the held-out rows below
    both bounds, within 4 standard errors; the same rows, shuffled or a part, share all."""
    rng = np.random.default_rng(2)
    train = _fresh(rng, n_train)
    train_summary = _summary(train, 8)
    for share in (0.0, 0.3, 1.0):
        n_old = int(share * 20_000)
        held = np.concatenate([rng.choice(train, n_old, replace=False),
                               _fresh(rng, 20_000 - n_old)])
        found = summary_overlap(train_summary, _summary(held, 3))
        assert found.estimated and found.chance == 0.0
        expected = 20_000 * SUMMARY_SIZE / n_train  # held-out rows below the training bound
        assert abs(found.tested - expected) < 5 * np.sqrt(expected)
        se = max(np.sqrt(share * (1 - share) / found.tested), 1e-12)
        assert abs(found.share - share) <= 4 * se
    same = summary_overlap(train_summary, _summary(rng.permutation(train), 5))
    assert same.share == 1.0 and same.tested > 0.9 * SUMMARY_SIZE
    assert covers(_summary(train, 3), train_summary)
    assert not covers(_summary(train[::4], 3), train_summary)


def test_a_common_row_below_one_bound_is_no_false_alarm():
    """A row value common in the data (a default record), more distinct training rows than
    a summary keeps, fewer held-out ones: the chance level is that of the training rows
    below the bound the held-out rows are tested under (as a sketch's)."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        common = rng.integers(0, 2**64, dtype=np.uint64)

        def make(n, p0, rng=rng, common=common):
            rows = _fresh(rng, n)
            rows[rng.random(n) < p0] = common
            return rows

        for p0 in (0.3, 0.05):
            found = summary_overlap(_summary(make(200_000, p0), 4), _summary(make(5000, p0), 2))
            assert found is None or found.excess < WARN_EXCESS, (seed, p0, found)
            found = sketch_overlap(sketch(make(5000, p0)), _summary(make(200_000, p0), 4))
            assert found is None or found.excess < WARN_EXCESS, (seed, p0, found)


lightgbm = pytest.importorskip("lightgbm")
from unbiased_criteria.adapters import lightgbm as uc_lgb  # noqa: E402


def test_sums_at_the_models_own_scores_give_its_in_memory_gains():
    """Pruning replaces tree 1; the partitions keep the model's own scores too: the later
    trees' B from their sums there is the in-memory B of the unpruned model (oracle: its
    importance report), while their sums at the pruned scores differ."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4))
    y = X[:, 0] + 0.5 * X[:, 1] * (X[:, 2] > 0) + rng.normal(size=3000)
    booster = lightgbm.train({"verbose": -1, "num_threads": 1, "num_leaves": 6},
                             lightgbm.Dataset(X, y), 6)
    Xv = rng.normal(size=(500, 4))
    want = uc.unbiased_importance(booster, X, y, Xv, Xv[:, 0]).splits
    read = uc_lgb.read_model(booster)
    read = resolve_bias(read, read.objective, y, None)
    options = GainOptions(random_state=0)
    tree1 = read.forest.trees[1]
    replaced = (replace(tree1, value=np.zeros_like(tree1.value)), np.arange(tree1.n_nodes))
    parts = [slice(0, 1000), slice(1000, 3000)]
    states = [start_partition(read, y[p], None, held_out=False, index=i, offset=p.start,
                              options=options) for i, p in enumerate(parts)]
    routers = [uc_lgb.make_router(booster, read, X[p], "X_train") for p in parts]
    for t in range(read.forest.n_trees):
        out = []
        for i, router in enumerate(routers):
            states[i], sums = partition_step(
                states[i], read, read.objective, router.leaf_nodes, router.chunk, t, t + 1,
                what="sums", replaced=replaced if t == 2 else None, keep_last=True,
                keep_own=True, own_sums=t >= 2)
            out.append(sums)
        if t < 2:
            continue
        sums = add_stats(*out)[0]
        tree = read.forest.trees[t]
        inner = tree.internal_nodes
        B = own_biased_gain(tree, sums, read.split_score)[inner]
        expected = want.loc[want["tree"] == t, "biased_gain"].to_numpy()
        np.testing.assert_allclose(B, expected, rtol=1e-9)
        at_pruned = own_biased_gain(tree, np.concatenate([sums[:3], sums[:2]]),
                                    read.split_score)[inner]
        assert not np.allclose(at_pruned, expected, rtol=1e-3)
