"""Scoring every split of a replayed model with B and U (host-agnostic)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gains import (
    MIN_HESSIAN,
    NodeSums,
    SplitScore,
    Workspace,
    biased_gain,
    block_node_sums,
    flat_splits,
    node_sums,
    tree_generator,
    unbiased_gain,
)
from .options import GainOptions
from .replay import TreeStep

__all__ = [
    "GainOptions", "TreeScores", "score_tree", "holdout_halves", "jackknife_blocks",
    "valid_ranking",
]

# spawn key of the stream that splits held-out rows in validation-only mode (trees use 0..)
_HALVES_KEY = 2**40
_BLOCKS_KEY = 2**40 + 1
_RANKING_KEY = 2**40 + 2


def holdout_halves(n: int, options: GainOptions) -> np.ndarray:
    """Random half of ``n`` held-out rows (True) for the validation-only mode."""
    rng = tree_generator(options.random_state, _HALVES_KEY)
    return rng.permutation(n) < n // 2


def jackknife_blocks(n: int, options: GainOptions) -> np.ndarray | None:
    """Block (0..n_blocks-1, equal sizes) of each of ``n`` held-out rows, or None."""
    if options.n_blocks < 2:
        return None
    rng = tree_generator(options.random_state, _BLOCKS_KEY)
    return (rng.permutation(n) % options.n_blocks).astype(np.int64)


def stack_replicates(replicates: list[np.ndarray], n_blocks: int) -> np.ndarray | None:
    """The splits' jackknife replicates as one ``(n_splits, n_blocks)`` array, or None
    without blocks (``n_blocks < 2``). No split at all gives an empty array, not None: every
    replicate is 0, so the standard errors are 0 (as for splits without usable evidence)."""
    if n_blocks < 2:
        return None
    return np.concatenate(replicates) if replicates else np.zeros((0, n_blocks))


def valid_ranking(n: int, options: GainOptions) -> np.ndarray:
    """One uniformly random order of ``n`` held-out rows for every tree of a replay.

    Drawn from its own stream, before and independently of any tree and of the rows' values.
    Each tree cuts this order into runs of consecutive rows and ranks the runs by a fresh
    permutation from its own stream, then the rows inside a run by this order
    (:func:`unbiased_criteria.gains.first_k_sums`): for every node of every tree the node's
    ``k`` first-ranked rows are an exactly uniform draw without replacement from its rows,
    and different trees' draws are nearly independent (they share only the order inside a
    run of about ``sqrt(n) / 2`` rows). It replaces a shuffle per tree
    (``replay(valid_order=...)``).
    """
    return tree_generator(options.random_state, _RANKING_KEY).permutation(n)


@dataclass(frozen=True)
class TreeScores:
    """Per-node scores of one tree (leaves NaN); ``sums`` are the rows that give G and H."""

    biased: np.ndarray
    unbiased: np.ndarray
    k: np.ndarray
    usable: np.ndarray
    n_train: np.ndarray
    n_valid: np.ndarray
    sums: NodeSums
    jackknife: np.ndarray | None = None


def score_tree(
    step: TreeStep,
    score: SplitScore,
    options: GainOptions,
    halves: np.ndarray | None = None,
    blocks: np.ndarray | None = None,
    ranked: bool = False,
    workspace: Workspace | None = None,
    model_sums: NodeSums | None = None,
) -> TreeScores:
    """B and U of every split of ``step.tree``.

    With training rows, G and H come from them and the ratios from the held-out rows. Without
    them, ``model_sums`` (validation-only mode, the training rows' sums the model stores,
    :func:`unbiased_criteria.model_sums.forest_node_sums`) stand in for them: the same
    computation, every held-out row giving the ratios, so ``B`` is the host's gain and ``U``
    that of the split the model made; their counts may be -1 (not stored), and a node's
    held-out rows then scale its drawn hessian sum (``unbiased_gain(n_node=None)``). Without
    either, ``halves`` splits the held-out rows: G from one half, ratios from
    the other, and with ``options.cross_fit`` also the other way round, averaged; a split is
    usable only when both directions are, and U (and its jackknife replicates) is 0 otherwise;
    its ``k`` is then the smaller of the two draws. A split one of whose nodes holds held-out
    rows of (practically) no curvature is 0 and unusable there (:func:`without_flat_nodes`).
    Both halves' rows belong to the jackknife's blocks: replicate ``b`` leaves block ``b``'s
    rows out of G's half as well as out of the ratios' half.
    ``ranked``: the held-out rows come in a uniformly random order independent of the tree
    (``unbiased_gain(ranked=True)``; a half keeps that order, so it stays uniform).
    ``workspace``: row arrays reused from tree to tree (:class:`~unbiased_criteria.gains.
    Workspace`, one per call).
    """
    tree = step.tree
    rng = tree_generator(options.random_state, step.index)
    kw = dict(
        rng=rng, n_draws=options.n_draws, min_k=options.min_k, lam=options.lam,
        shortcut=options.shortcut, ranked=ranked, workspace=workspace,
    )
    nv, gv, hv = step.nodes_valid, step.g_valid, step.h_valid
    n_blocks = options.n_blocks if blocks is not None else 0
    floor = MIN_HESSIAN * options.weight_scale  # in the rows' own units (weight_scale)
    if step.nodes_train is not None or model_sums is not None:
        sums = (node_sums(tree, step.nodes_train, step.g_train, step.h_train)
                if step.nodes_train is not None else model_sums)
        u = unbiased_gain(tree, sums.G, nv, gv, hv, blocks=blocks, n_blocks=n_blocks,
                          n_node=sums.counts, min_hessian=floor, **kw)
        return TreeScores(
            biased_gain(tree, sums, score), u.gain, u.k, u.usable, sums.n, u.n_valid, sums,
            u.jackknife,
        )

    a, b = halves, ~halves

    def half(g_rows, r_rows):  # G from g_rows, ratios from r_rows
        sums = node_sums(tree, nv[g_rows], gv[g_rows], hv[g_rows])
        part = g_blocks = None
        if blocks is not None:  # a replicate leaves its block out of both halves
            part = blocks[r_rows]
            g_blocks = block_node_sums(tree, nv[g_rows], gv[g_rows], blocks[g_rows], n_blocks)
        u = unbiased_gain(tree, sums.G, nv[r_rows], gv[r_rows], hv[r_rows], blocks=part,
                          n_blocks=n_blocks, G_blocks=g_blocks, n_node=sums.n,
                          min_hessian=floor, **kw)
        return sums, u

    sums_a, u = half(a, b)
    gain, usable, jack, k = u.gain, u.usable, u.jackknife, u.k
    if options.cross_fit:
        _, u2 = half(b, a)
        usable = u.usable & u2.usable
        k = np.minimum(u.k, u2.k)  # the draw that decides whether the split is usable
        # U = 0 wherever either half is unusable (leaves stay NaN)
        gain = np.where(usable, (u.gain + u2.gain) / 2.0, np.where(tree.is_leaf, np.nan, 0.0))
        if jack is not None:
            jack = np.where(usable, (jack + u2.jackknife) / 2.0,
                            np.where(tree.is_leaf, np.nan, 0.0))
    all_rows = node_sums(tree, nv, gv, hv)
    biased, gain, usable, jack = without_flat_nodes(
        tree, all_rows, biased_gain(tree, all_rows, score), gain, usable, jack, floor)
    return TreeScores(biased, gain, k, usable, sums_a.n, all_rows.n, sums_a, jack)


def without_flat_nodes(
    tree, rows: NodeSums, biased: np.ndarray, gain: np.ndarray, usable: np.ndarray,
    jack: np.ndarray | None, min_hessian: float = MIN_HESSIAN,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Validation-only mode: ``B``, ``U``, ``usable`` and the jackknife replicates with the
    splits that hold a node whose held-out rows' hessian sum is below ``min_hessian``
    (:data:`~unbiased_criteria.gains.MIN_HESSIAN` in the rows' units,
    :func:`~unbiased_criteria.gains.flat_splits`) set to 0 and unusable.

    The held-out rows play the training rows there, and the host would not make such a leaf
    from them: its score ``G^2 / H`` is unbounded, so ``B`` is the difference of huge terms
    (float cancellation gave ``B = -1e46``, where ``B`` is never negative) and says nothing;
    ``U`` is no evidence either. Copies; other splits are unchanged.
    """
    flat = flat_splits(tree, rows.H, rows.n, min_hessian)
    if not flat.any():
        return biased, gain, usable, jack
    biased, gain = np.where(flat, 0.0, biased), np.where(flat, 0.0, gain)
    usable = usable & ~flat
    if jack is not None:
        jack = np.where(flat, 0.0, jack)
    return biased, gain, usable, jack
