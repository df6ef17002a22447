"""The unbiased gain over rows held in partitions (Dask): each partition's part and the sum.

Pure numpy: an engine (``unbiased_criteria.adapters.dask``) runs :func:`partition_step` on the
worker that holds a partition, with the host's routing, and adds up the small arrays it returns;
the client turns the sums into scores (:func:`tree_scores`). Nothing here knows how the work is
scheduled.

**Replay.** A partition replays its own raw scores tree by tree as
:func:`unbiased_criteria.replay.replay` does (same dtype, init bias, iteration-start gradients),
so its rows' gradients are those of the in-memory replay. Node sums are sums over rows, so
adding the partitions' sums gives the in-memory sums up to float rounding.

**K-draws, exactly uniform over the whole held-out set.** Request ``q`` asks for ``k`` rows of
node ``I``, which holds ``n_p`` held-out rows in partition ``p`` (``N = sum n_p``):

1. the client allocates ``k`` over the partitions with a multivariate hypergeometric draw
   ``(k_1..k_P) ~ MVHG(k; n_1..n_P)`` (:func:`allocate_draws`, from a stream of its own per
   tree and node), using only the node counts;
2. partition ``p`` takes the ``k_p`` first-ranked rows of ``I`` under its own uniformly random
   ranking (its rows in a random order drawn once from a stream of its own, then fresh random
   bins per tree and draw, as :func:`unbiased_criteria.gains.first_k_sums` ranks), a uniform
   ``k_p``-subset of its ``n_p`` rows, independent across partitions and of step 1.

A given ``k``-subset ``S`` with ``s_p`` rows in partition ``p`` then has probability
``[prod C(n_p, s_p) / C(N, k)] * prod 1 / C(n_p, s_p) = 1 / C(N, k)``: uniform without
replacement over the whole held-out set, however it is partitioned. As in memory, the requests
of one tree share the rankings, so nested nodes' subsets overlap; each alone is uniform.

Jackknife blocks are a balanced random assignment of the held-out rows (row ``i`` of partition
``p`` gets ``(offset_p + pi_p(i)) mod n_blocks`` with ``pi_p`` a permutation from a stream of
its own): block sizes differ by one at most over the whole set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .gains import (
    MIN_HESSIAN,
    NodeSums,
    UnbiasedGain,
    biased_gain,
    block_node_sums,
    draw_requests,
    first_k_sums,
    gain_from_ratios,
    has_curvature,
    leave_one_out,
    rank_bins,
)
from .host_gains import tie_sums
from .importance import TreeScores, without_flat_nodes
from .model import Model
from .objectives import Objective
from .options import GainOptions
from .replay import _grad_hess, _start_scores
from .trees import Tree

__all__ = [
    "PartitionState", "start_partition", "partition_step", "add_stats", "allocate_draws",
    "draw_requests", "request_allocation", "tree_scores", "halves_tree_scores",
    "allocate_halves", "stream", "own_biased_gain",
]

# spawn keys of the partitioned run's streams (trees use 0..; importance.py uses 2**40 + 0..2)
_ORDER_KEY = 2**40 + 16
_BLOCKS_KEY = 2**40 + 17
_BINS_KEY = 2**40 + 18
_ALLOCATION_KEY = 2**40 + 19
_HALVES_KEY = 2**40 + 20


def stream(random_state: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """The generator of sub-stream ``key`` of a run seeded by ``random_state``."""
    seq = np.random.SeedSequence(random_state.entropy,
                                 spawn_key=(*random_state.spawn_key, *map(int, key)))
    return np.random.Generator(np.random.PCG64(seq))


@dataclass(frozen=True)
class PartitionState:
    """What a worker keeps of one partition between steps (never modified in place).

    ``y``, ``weight``, ``blocks`` are in the partition's rank order (held-out rows) or the
    rows' order (training rows); ``raw`` the running raw scores ``(n, n_outputs)``;
    ``g``, ``h`` the gradients of the current iteration ``iteration``; ``leaves`` the routed
    leaf ids of trees ``leaves_from..`` (tree-major, rank order); ``pending`` the tree whose
    scores are not added to ``raw`` yet (pruning: the client may still replace it); ``half``
    the held-out rows of half A in the validation-only mode (rank order). ``own``: pruning,
    the raw scores at the model's own (unpruned) trees, once a replaced tree made them differ
    from ``raw`` (None: they are ``raw``), and ``own_g``, ``own_h`` their gradients at
    iteration ``own_iteration``.
    """

    y: np.ndarray
    weight: np.ndarray | None
    order: np.ndarray | None
    blocks: np.ndarray | None
    raw: np.ndarray
    g: np.ndarray | None = None
    h: np.ndarray | None = None
    iteration: int = -1
    leaves: np.ndarray | None = None
    leaves_from: int = 0
    pending: int | None = None
    half: np.ndarray | None = None
    own: np.ndarray | None = None
    own_g: np.ndarray | None = None
    own_h: np.ndarray | None = None
    own_iteration: int = -1

    @property
    def n_rows(self) -> int:
        return int(self.y.shape[0])


def start_partition(
    model: Model, y: np.ndarray, weight: np.ndarray | None, *, held_out: bool,
    index: int, offset: int, options: GainOptions, half_a: int | None = None,
) -> PartitionState:
    """A partition's state before the first tree.

    Held-out rows (``held_out``) are put in a uniformly random order from the stream of
    partition ``index``; ``offset`` (held-out rows in the partitions before it) spreads the
    jackknife blocks evenly over the whole set. ``half_a``: validation-only mode, this
    partition's rows in half A (:func:`allocate_halves`), a uniform subset of its rows.
    """
    n = int(y.shape[0])
    order = blocks = None
    if held_out:
        order = stream(options.random_state, _ORDER_KEY, index).permutation(n)
        y = y[order]
        weight = None if weight is None else weight[order]
        if options.n_blocks > 1:
            perm = stream(options.random_state, _BLOCKS_KEY, index).permutation(n)
            blocks = ((offset + perm) % options.n_blocks).astype(np.intp)
    half = None
    if half_a is not None:
        half = stream(options.random_state, _HALVES_KEY, index).permutation(n) < half_a
    return PartitionState(y, weight, order, blocks, _start_scores(model, n), half=half)


def allocate_halves(lengths: np.ndarray, options: GainOptions) -> np.ndarray:
    """Rows of half A in each partition (validation-only mode): ``N // 2`` of the ``N``
    held-out rows, allocated by a multivariate hypergeometric draw and taken uniformly
    inside each partition, an exactly uniform half of the whole set as in memory."""
    lengths = np.asarray(lengths, dtype=np.int64)
    rng = stream(options.random_state, _HALVES_KEY)
    return allocate_draws(lengths, int(lengths.sum() // 2), rng)


def _bias(model: Model) -> tuple[np.ndarray, int]:
    forest = model.forest
    first = int(forest.tree_iteration.min()) if forest.n_trees else 0
    bias = np.zeros(forest.n_outputs)
    for t in np.flatnonzero(forest.tree_iteration == first):
        bias[forest.tree_class[t]] = forest.trees[t].bias
    return bias, first


@dataclass(frozen=True)
class _Rows:  # a RowSet stand-in for replay's _grad_hess
    y: np.ndarray
    weight: np.ndarray | None


def partition_step(
    state: PartitionState,
    model: Model,
    objective: Objective,
    route: Callable[[int, int], np.ndarray],
    chunk: int,
    start: int,
    stop: int,
    *,
    what: str,
    replaced: tuple[Tree, np.ndarray] | None = None,
    requests: list | None = None,
    keep_last: bool = False,
    options: GainOptions | None = None,
    index: int = 0,
    keep_own: bool = False,
    own_sums: bool = False,
    feature_values: Callable[[int], np.ndarray] | None = None,
) -> tuple[PartitionState, list[np.ndarray]]:
    """Trees ``start..stop-1`` on one partition: the new state and per-tree arrays to add up.

    ``route(a, b)`` gives the partition's leaf ids ``(n_rows, b - a)`` in its rows' order
    (the host's ``pred_leaf``), called ``chunk`` trees at a time. ``what``:

    * ``"counts"``: held-out rows per node of each tree (int64); the state only caches leaves.
    * ``"sums"``: training ``[G, H, n]`` per node of each tree, stacked ``(3, n_nodes)``.
    * ``"draws"``: for each tree, sums of the held-out ``(w g, w h, [h != 0], 1)`` over this
      partition's share of every request, ``(n_draws, 4, n_requests, n_blocks)``;
      ``requests[i]`` is ``(node, k_here)`` with ``k_here`` ``(n_draws, n_requests)`` (None:
      no usable split).

    Validation-only mode (``state.half`` set): ``"counts"`` gives ``(2, n_nodes)`` (halves A,
    B); ``"draws"`` gives per tree ``[sums, draws_1, draws_2]``: the halves' ``[G, H, n]``
    ``(2, 3, n_nodes)``, the draw sums of direction 1 (ratios from B) and 2 (from A), and the
    halves' G per jackknife block ``(2, n_nodes, n_blocks)``, with ``requests[i]`` a pair of
    requests.

    ``"ties"`` (training rows, the gain checks): for each tree the
    :func:`~unbiased_criteria.host_gains.tie_sums` ``(3, n_candidates)`` of ``requests[i]``
    ``(candidates, at_own)`` (None: none), at the scores ``"sums"`` gives the tree's sums at
    (``at_own``: those at the model's own scores), the rows' values read by
    ``feature_values``. Run it on the state ``"sums"`` started from, with the same arguments.

    For ``"sums"`` and ``"draws"`` the scores advance: first the pending tree is added
    (``replaced``: the new tree and old-to-new node map that replace it), then each tree after
    it is visited; with ``keep_last`` the last one stays pending.

    Pruning's check of the later trees' gains (training rows): with ``keep_own`` the
    partition also keeps its raw scores at the model's own trees, which replaced trees no
    longer give (without it they are dropped); with ``own_sums`` ``"sums"`` gives per tree
    ``(5, n_nodes)``: ``[G, H, n]``, then ``G`` and ``H`` at those scores. Request
    ``own_sums`` from an iteration's first tree on (its gradients are taken there), and keep
    ``keep_own`` from the first replaced tree until the last ``own_sums``.
    """
    forest = model.forest
    leaves, leaves_from = state.leaves, state.leaves_from

    def leaf_ids(t: int) -> np.ndarray:
        nonlocal leaves, leaves_from
        if leaves is None or not leaves_from <= t < leaves_from + leaves.shape[0]:
            leaves_from = t
            b = min(t + chunk, forest.n_trees)
            leaves = _tree_major(route(t, b), state.order)
        return leaves[t - leaves_from].astype(np.intp)

    if what == "counts":
        out = [_counts(forest.trees[t], leaf_ids(t), state.half) for t in range(start, stop)]
        return replace(state, leaves=leaves, leaves_from=leaves_from), out
    if what not in ("sums", "draws", "ties"):
        raise ValueError(f"what must be 'counts', 'sums', 'draws' or 'ties', got {what!r}")

    raw = state.raw.copy()
    g, h, iteration = state.g, state.h, state.iteration
    own = state.own.copy() if keep_own and state.own is not None else None
    own_g, own_h, own_iteration = ((state.own_g, state.own_h, state.own_iteration)
                                   if own is not None else (None, None, -1))
    bias, first = _bias(model)
    rows = _Rows(state.y, state.weight)

    def own_gradients(it: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
        """The rows' gradients and hessians at the model's own scores, once per iteration."""
        nonlocal own_g, own_h, own_iteration
        if own_iteration != it:
            own_g, own_h = _grad_hess(objective, rows, (own + shift).astype(forest.score_dtype))
            own_iteration = it
        return own_g, own_h

    def add(t: int, tree: Tree, old_to_new: np.ndarray | None) -> None:
        nodes = leaf_ids(t)
        dtype, cls = forest.score_dtype, forest.tree_class[t]
        if own is not None:  # the model's own tree, whatever replaced it
            own[:, cls] += forest.trees[t].value.astype(dtype)[nodes]
        if old_to_new is not None:
            nodes = old_to_new[nodes]
        raw[:, cls] += tree.value.astype(dtype)[nodes]

    if state.pending is not None:
        t = state.pending
        if keep_own and own is None and replaced is not None:
            own = raw.copy()  # from here on the model's own scores differ from raw
        add(t, *(replaced if replaced is not None else (forest.trees[t], None)))
    out = []
    for i, t in enumerate(range(start, stop)):
        it, cls = int(forest.tree_iteration[t]), int(forest.tree_class[t])
        shift = bias if it == first else 0.0
        if it != iteration:
            g, h = _grad_hess(objective, rows, (raw + shift).astype(forest.score_dtype))
            iteration = it
        tree, nodes = forest.trees[t], leaf_ids(t)
        gt, ht = g[:, cls], h[:, cls]
        if what == "sums":
            sums = [tree.node_sums(nodes, gt), tree.node_sums(nodes, ht), tree.node_sums(nodes)]
            if own_sums:
                if own is None:  # no replaced tree moved the scores yet
                    sums += sums[:2]
                else:
                    # at an iteration's first tree requested (requests run from an
                    # iteration's first tree on): its own scores before the iteration
                    og, oh = own_gradients(it, shift)
                    sums += [tree.node_sums(nodes, og[:, cls]), tree.node_sums(nodes, oh[:, cls])]
            out.append(np.stack(sums))
        elif what == "ties":
            if requests[i] is None:
                out.append(np.zeros((3, 0)))
            else:
                candidates, at_own = requests[i]
                if at_own and own is not None:  # as own_sums takes them
                    og, oh = own_gradients(it, shift)
                    gt, ht = og[:, cls], oh[:, cls]
                out.append(tie_sums(tree, candidates, nodes, gt, ht, feature_values))
        elif state.half is None:
            out.append(_draw_sums(tree, nodes, gt, ht, state.blocks, requests[i], options,
                                  index, t))
        else:
            out.append(_halves_sums(tree, nodes, gt, ht, state.blocks, state.half,
                                    requests[i], options, index, t))
        if not (keep_last and t == stop - 1):
            add(t, tree, None)
    pending = stop - 1 if keep_last and stop > start else None
    if leaves is not None and pending is None and leaves_from + leaves.shape[0] <= stop:
        leaves = None  # every cached tree is done with: free them until the next round
    return replace(state, raw=raw, g=g, h=h, iteration=iteration, leaves=leaves,
                   leaves_from=leaves_from, pending=pending, own=own, own_g=own_g,
                   own_h=own_h, own_iteration=own_iteration), out


def _tree_major(leaves: np.ndarray, order: np.ndarray | None, block: int = 4096) -> np.ndarray:
    """``(n_trees, n_rows)`` leaf ids from the router's ``(n_rows, n_trees)``, rows permuted by
    ``order``: one pass by blocks of rows (a whole-array transpose or a strided column copy
    per tree misses the cache on every element). Kept whole: a partition's state holds the
    chunk across calls."""
    n, c = leaves.shape
    out = np.empty((c, n), dtype=leaves.dtype)
    for s in range(0, n, block):
        part = leaves[s : s + block] if order is None else leaves[order[s : s + block]]
        out[:, s : s + block] = part.T
    return out


def _counts(tree: Tree, nodes: np.ndarray, half: np.ndarray | None) -> np.ndarray:
    """Held-out rows per node; in the validation-only mode ``(2, n_nodes)``: halves A, B."""
    if half is None:
        return np.rint(tree.node_sums(nodes)).astype(np.int64)
    return np.stack([np.rint(tree.node_sums(nodes[m])).astype(np.int64)
                     for m in (half, ~half)])


def _halves_sums(tree, nodes, g, h, blocks, half, requests, options: GainOptions,
                 index: int, t: int):
    """Validation-only mode: ``(2, 3, n_nodes)`` sums ``[G, H, n]`` of halves A and B, then
    the draw sums of direction 1 (ratios from B) and, with cross-fitting, 2 (from A)."""
    sums = np.stack([np.stack([tree.node_sums(nodes[m], g[m]), tree.node_sums(nodes[m], h[m]),
                               tree.node_sums(nodes[m])]) for m in (half, ~half)])
    rng = stream(options.random_state, _BINS_KEY, index, t)
    draws = []
    for m, request in zip((~half, half), requests or (None, None)):
        part = None if blocks is None else blocks[m]
        draws.append(_draw_sums(tree, nodes[m], g[m], h[m], part, request, options, rng=rng))
    # G's sums per jackknife block in each half (a replicate leaves its block out of G too)
    g_blocks = (np.zeros((2, tree.n_nodes, 1)) if blocks is None else
                np.stack([block_node_sums(tree, nodes[m], g[m], blocks[m], options.n_blocks)
                          for m in (half, ~half)]))
    return [sums, *draws, g_blocks]


def _draw_sums(tree, nodes, g, h, blocks, request, options: GainOptions, index: int = 0,
               t: int = 0, rng: np.random.Generator | None = None):
    n_blocks = options.n_blocks if blocks is not None else 1
    if request is None:
        return np.zeros((options.n_draws, 4, 0, n_blocks))
    node, k_here = request
    out = np.zeros((options.n_draws, 4, node.size, n_blocks))
    n = nodes.shape[0]
    if n == 0:
        return out
    # sums of w g', w h', the rows with a non-zero hessian and the rows drawn (to scale the
    # drawn hessian sum to the node: gains.has_curvature)
    values = (g, h, (h != 0).astype(np.float64), None)
    if rng is None:
        rng = stream(options.random_state, _BINS_KEY, index, t)
    n_bins = rank_bins(n)
    for d in range(options.n_draws):
        bins = rng.integers(0, n_bins, n, dtype=np.int32 if n_bins < 2**31 else np.int64)
        take = k_here[d] > 0  # first_k_sums needs k >= 1
        if not take.any():
            continue
        got = first_k_sums(tree, nodes, node[take], k_here[d][take], values,
                           blocks, n_blocks if blocks is not None else 1, bins=bins,
                           n_bins=n_bins)
        out[d][:, take] = np.stack(got)
    return out


def add_stats(*parts: list) -> list:
    """Element-wise sum of several partitions' :func:`partition_step` outputs (lists of
    arrays, or of lists of arrays)."""
    return [add_stats(*items) if isinstance(items[0], list) else np.sum(items, axis=0)
            for items in zip(*parts)]


def allocate_draws(counts: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """How many of a request's ``k`` rows each partition gives: a multivariate hypergeometric
    draw from ``counts``, the node's held-out rows per partition."""
    counts = np.asarray(counts, dtype=np.int64)
    if not 0 <= k <= counts.sum():
        raise ValueError(f"k must be between 0 and its node's {counts.sum()} rows, got {k}")
    return rng.multivariate_hypergeometric(counts, int(k))


def node_paths(tree: Tree) -> np.ndarray:
    """Each node's path from the root as an integer (root 1, children ``2p`` and ``2p + 1``):
    unlike node ids, it survives the pruning of other subtrees. Object dtype (deep trees
    exceed 64 bits)."""
    path = np.zeros(tree.n_nodes, dtype=object)
    path[0], level = 1, np.array([0])
    while level.size:
        inner = level[~tree.is_leaf[level]]
        path[tree.left[inner]] = 2 * path[inner]
        path[tree.right[inner]] = 2 * path[inner] + 1
        level = np.concatenate([tree.left[inner], tree.right[inner]])
    return path


def request_allocation(tree: Tree, counts: np.ndarray, node: np.ndarray, k: np.ndarray,
                       options: GainOptions, t: int, direction: int = 0) -> np.ndarray:
    """``(n_draws, n_partitions, n_requests)`` allocations of tree ``t``'s requests;
    ``counts`` is ``(n_partitions, n_nodes)``.

    Each request draws from a stream of its own, keyed by the tree and the node's path
    (:func:`node_paths`): a node keeps its allocation (and so its drawn rows) when other
    subtrees are pruned, as the in-memory draws do; hence a loop over the requests (each step
    vectorised over partitions). ``direction`` 1 keys the validation-only mode's second
    direction (ratios from half A) apart.
    """
    out = np.zeros((options.n_draws, counts.shape[0], node.size), dtype=np.int64)
    path = node_paths(tree)
    for q, (i, kq) in enumerate(zip(node.tolist(), k.tolist())):
        key = (t, path[i]) if direction == 0 else (t, path[i], direction)
        rng = stream(options.random_state, _ALLOCATION_KEY, *key)
        for d in range(options.n_draws):
            out[d, :, q] = allocate_draws(counts[:, i], kq, rng)
    return out


def _unbiased(tree: Tree, G: np.ndarray, n_valid: np.ndarray, k: np.ndarray,
              usable: np.ndarray, draws: np.ndarray, options: GainOptions,
              jack: bool, G_blocks: np.ndarray | None = None,
              n_node: np.ndarray | None = None) -> UnbiasedGain:
    """U from the summed draw sums ``(n_draws, 4, n_requests, n_blocks)``: the ratios over
    the whole set, then the rule of :func:`~unbiased_criteria.gains.gain_from_ratios`
    (``G_blocks``: G's sums per block, when replicates leave blocks out of G too; ``n_node``:
    the rows behind G per node, to which :func:`~unbiased_criteria.gains.has_curvature`
    scales a ratio's drawn hessian sum, as :func:`~unbiased_criteria.gains.unbiased_gain`
    does)."""
    inner = tree.internal_nodes
    if not usable[inner].any():
        gain = np.full(tree.n_nodes, np.nan)
        gain[inner] = 0.0
        return UnbiasedGain(gain, k, n_valid, usable.copy())
    lam = options.lam
    split = inner[usable[inner]]  # the requests' nodes, as draw_requests orders them
    req_node = np.concatenate([split, tree.left[split], tree.right[split]])
    scale = (n_valid if n_node is None else n_node)[req_node].astype(np.float64)
    # (n_draws, n_requests)
    sum_g, sum_h, n_h, n_drawn = (draws[:, i].sum(axis=-1) for i in range(4))
    floor = MIN_HESSIAN * options.weight_scale  # in the rows' own units
    ok = has_curvature(sum_h, n_drawn, n_h, scale, floor)
    ratio = np.divide(sum_g, sum_h + lam, out=np.zeros_like(sum_g), where=ok).sum(axis=0)
    ratio_out = defined_out = None
    if jack:  # each block left out, (n_draws, n_requests, n_blocks)
        out_g, out_h, out_n, out_drawn = (leave_one_out(draws[:, i]) for i in range(4))
        ok_out = has_curvature(out_h, out_drawn, out_n, scale[:, None], floor)
        ratio_out = np.divide(out_g, out_h + lam, out=np.zeros_like(out_g),
                              where=ok_out).sum(axis=0)
        defined_out = ok_out.all(axis=0)
    return gain_from_ratios(tree, G, k, n_valid, usable, ratio, ok.all(axis=0),
                            options.n_draws, ratio_out, defined_out,
                            G_blocks if jack else None)


def tree_scores(
    tree: Tree, sums: np.ndarray, n_valid: np.ndarray, k: np.ndarray, usable: np.ndarray,
    draws: np.ndarray, options: GainOptions, score, jack: bool,
) -> TreeScores:
    """A tree's :class:`~unbiased_criteria.importance.TreeScores` from the whole-set sums:
    ``sums`` the training ``[G, H, n]`` (validation-only mode: the model's own,
    :func:`~unbiased_criteria.model_sums.forest_node_sums`, ``n`` -1 where it stores no row
    counts), ``n_valid`` the held-out counts, ``draws`` the
    summed draw sums of :func:`partition_step`."""
    node_sums = NodeSums(sums[0], sums[1], np.rint(sums[2]).astype(np.int64))
    u = _unbiased(tree, node_sums.G, n_valid, k, usable, draws, options, jack,
                  n_node=node_sums.counts)
    return TreeScores(biased_gain(tree, node_sums, score), u.gain, u.k, u.usable, node_sums.n,
                      u.n_valid, node_sums, u.jackknife)



def halves_tree_scores(
    tree: Tree, sums: np.ndarray, counts: np.ndarray, requests: tuple, draws: tuple,
    g_blocks: np.ndarray, options: GainOptions, score, jack: bool,
) -> TreeScores:
    """Validation-only mode, as :func:`~unbiased_criteria.importance.score_tree`: ``G`` from
    half A and ratios from B, and with ``options.cross_fit`` the other way round, averaged
    (usable where both are). ``sums`` ``(2, 3, n_nodes)`` and ``counts`` ``(2, n_nodes)`` of
    halves A and B over the whole set; ``requests`` the ``(k, usable)`` of each direction
    (:func:`draw_requests`), ``draws`` their summed draw sums; ``g_blocks`` ``(2, n_nodes,
    n_blocks)`` halves A and B's G per jackknife block."""
    a = NodeSums(sums[0, 0], sums[0, 1], np.rint(sums[0, 2]).astype(np.int64))
    b = NodeSums(sums[1, 0], sums[1, 1], np.rint(sums[1, 2]).astype(np.int64))
    (k1, usable1), (k2, usable2) = requests
    u = _unbiased(tree, a.G, counts[1], k1, usable1, draws[0], options, jack, g_blocks[0],
                  n_node=a.n)
    gain, usable, jackknife = u.gain, u.usable, u.jackknife
    if options.cross_fit:
        u2 = _unbiased(tree, b.G, counts[0], k2, usable2, draws[1], options, jack, g_blocks[1],
                       n_node=b.n)
        usable = u.usable & u2.usable
        gain = np.where(usable, (u.gain + u2.gain) / 2.0, np.where(tree.is_leaf, np.nan, 0.0))
        if jackknife is not None:  # (a direction without usable splits has none: U is 0)
            other = u2.jackknife if u2.jackknife is not None else 0.0
            jackknife = np.where(usable, (jackknife + other) / 2.0,
                                 np.where(tree.is_leaf, np.nan, 0.0))
    every = NodeSums(a.G + b.G, a.H + b.H, a.n + b.n)
    biased, gain, usable, jackknife = without_flat_nodes(
        tree, every, biased_gain(tree, every, score), gain, usable, jackknife,
        MIN_HESSIAN * options.weight_scale)
    k = np.minimum(u.k, u2.k) if options.cross_fit else u.k  # the smaller draw, as in memory
    return TreeScores(biased, gain, k, usable, a.n, every.n, a, jackknife)


def own_biased_gain(tree: Tree, sums: np.ndarray, score) -> np.ndarray:
    """Pruning: the tree's biased gain B at the model's own scores, from the summed
    ``(5, n_nodes)`` of :func:`partition_step` with ``own_sums``."""
    return biased_gain(tree, NodeSums(sums[3], sums[4], np.rint(sums[2]).astype(np.int64)),
                       score)
