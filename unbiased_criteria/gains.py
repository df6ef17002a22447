"""Split gains: the host's biased gain B and the unbiased gain U, for all nodes of a tree.

Notation (design.md): a split I -> (L, R); ``G_X``, ``H_X`` are sums of ``w*g`` and ``w*h`` over
the rows that built the tree (or any sample), ``n'_X`` counts held-out rows.

* Biased gain, on the hosts' scale (no 1/2, gamma / min_gain_to_split not subtracted)::

      B = S(G_L, H_L) + S(G_R, H_R) - S(G_I, H_I),   S(G, H) = T(G)^2 / (H + lambda)

  with ``T(G) = sign(G) max(|G| - alpha, 0)``; with ``max_delta_step`` the leaf weight
  ``o = -T(G)/(H+lambda)`` is clipped and ``S = -(2 T(G) o + (H+lambda) o^2)``.
* Unbiased gain, with ``k = min(n'_L, n'_R)``::

      U = G_L r_L + G_R r_R - G_I r_I,   r_X = sum(w g') / (sum(w h') + lam) over k rows
                                              drawn uniformly without replacement from X

  All three ratios use the same ``k``, so their small-sample ratio bias is shared and cancels:
  ``E[U] = 0`` when the held-out gradients in ``I`` do not depend on the split.

  A ratio is evidence only where its drawn rows carry curvature (:func:`has_curvature`): its
  drawn hessian sum scaled to the node, ``sum(w h') * n_X / k`` (``n_X`` the rows behind
  ``G_X``), must reach :data:`MIN_HESSIAN` times the held-out rows' typical weight
  (:func:`weight_scale`, the unit of the sums it bounds), the least hessian sum LightGBM
  and scikit-learn's HistGradientBoosting make a leaf with by default (at unit weights).
  Below it the ratio is no evidence, as ``0/0`` is: held-out rows a classifier is
  confidently wrong about have gradient about -1 and a float32 hessian ``p(1-p)`` that
  underflows to 0 or a subnormal, and a drawn sum of 1e-40 made ``r_X`` 1e40 (``E[r_X]`` is
  not even defined when ``h'`` comes arbitrarily close to 0).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from .trees import Tree

__all__ = [
    "MIN_HESSIAN",
    "weight_scale",
    "log_weight_sums",
    "scale_from_log_sums",
    "has_curvature",
    "flat_splits",
    "SplitScore",
    "NodeSums",
    "node_sums",
    "block_node_sums",
    "leave_one_out",
    "soft_threshold",
    "leaf_weight",
    "node_score",
    "biased_gain",
    "draw_requests",
    "unbiased_gain",
    "gain_from_ratios",
    "UnbiasedGain",
    "Draws",
    "draw_subsets",
    "Workspace",
    "bin_leaf_counts",
    "first_k_sums",
    "rank_bins",
    "tree_generator",
]


#: The least hessian sum of a node whose held-out ratio counts as evidence (scaled to the
#: node's rows, :func:`has_curvature`): LightGBM's ``min_sum_hessian_in_leaf`` and
#: HistGradientBoosting's ``min_hessian_to_split`` default, the native grower's
#: ``min_child_weight``. XGBoost's default ``min_child_weight`` is 1, but the held-out
#: estimate of a node's hessian sum from ``k`` rows is noisy, and at 1 6-7% of the usable
#: splits of ordinary binary XGBoost models would flip (README, *Use*): 1e-3 bites only where
#: the hessians are degenerate.
MIN_HESSIAN = 1e-3


def log_weight_sums(weight: np.ndarray | None) -> tuple[float, int]:
    """The sum of ``log(w)`` over the positive weights and their count (None: unweighted,
    ``(0, 0)``): what :func:`weight_scale` needs, summable over parts of the rows (Dask
    partitions)."""
    if weight is None:
        return 0.0, 0
    positive = np.asarray(weight, dtype=np.float64)
    positive = positive[positive > 0]
    return float(np.log(positive).sum()), int(positive.size)


def scale_from_log_sums(total: float, count: int) -> float:
    """:func:`weight_scale` from :func:`log_weight_sums` (summed over parts): 1 without
    positive weights."""
    if count == 0:
        return 1.0
    scale = math.exp(total / count)
    return scale if math.isfinite(scale) and scale > 0 else 1.0


def weight_scale(weight: np.ndarray | None) -> float:
    """The unit of the curvature floor for rows of weights ``weight`` (None: 1): the
    geometric mean of the positive weights, so that the floor is :data:`MIN_HESSIAN` per row
    of typical weight, as the hosts' minimum is for unit weights. Multiplying every weight by
    ``c`` multiplies every hessian sum and the floor alike: which splits are usable does not
    depend on the weights' scale (an absolute floor made ordinary nodes unusable under
    weights normalised to sum to 1, and ``U`` biased under the null there: a split's
    usability then depends on its draws). Geometric, not arithmetic: one row of weight 1e20
    among a thousand of weight 1 raised a mean's floor above every node without that row
    (all unusable); it moves the geometric mean by a factor ``e^(46/1000)``."""
    return scale_from_log_sums(*log_weight_sums(weight))


def has_curvature(sum_h: np.ndarray, n_drawn: np.ndarray, n_h: np.ndarray,
                  n_node: np.ndarray, min_hessian: float = MIN_HESSIAN) -> np.ndarray:
    """Whether a ratio ``sum(w g') / sum(w h')`` over drawn held-out rows is evidence.

    Its drawn rows' hessian sum ``sum_h`` over ``n_drawn`` rows, scaled to the ``n_node`` rows
    behind the node's ``G``, estimates the node's hessian sum: where that is below
    ``min_hessian`` the ratio estimates a leaf the host would not make (and is of the order
    of ``1 / sum_h``, unbounded), so it is no evidence, as ``0/0`` is (``n_h``, the drawn rows
    with a non-zero hessian, is 0). A node without rows behind ``G`` (``n_node == 0``) has
    ``G = 0``: its term ``G r`` is 0 whatever the ratio, so only ``0/0`` counts there.
    Compared as ``sum_h * n_node >= min_hessian * n_drawn`` (no division: a jackknife
    replicate may have no drawn row left). Arrays broadcast together.
    """
    return (n_h > 0) & ((n_node == 0) | (sum_h * n_node >= min_hessian * n_drawn))


def flat_splits(tree: Tree, H: np.ndarray, n: np.ndarray,
                min_hessian: float = MIN_HESSIAN) -> np.ndarray:
    """Per node: True at the splits one of whose nodes (itself or a child) holds rows whose
    hessian sum ``H`` is below ``min_hessian`` (``n`` rows, a node without rows is fine).

    Where held-out rows play the training rows (validation-only mode) such a node is a leaf
    the host would not make from them, and its score ``G^2 / H`` is unbounded: ``B`` of the
    split is then the difference of huge terms (float cancellation gave ``B = -1e46``).
    """
    thin = (n > 0) & (H < min_hessian)
    out = np.zeros(tree.n_nodes, dtype=bool)
    inner = tree.internal_nodes
    out[inner] = thin[inner] | thin[tree.left[inner]] | thin[tree.right[inner]]
    return out


@dataclass(frozen=True)
class SplitScore:
    """How a host values a leaf and scores a node (its regularisation).

    Parameters
    ----------
    l1, l2 : float
        L1 (alpha, lambda_l1) and L2 (lambda, lambda_l2) penalties.
    max_delta_step : float
        Clip of the leaf weight (0 = none).
    weight_float32 : bool
        XGBoost rounds the leaf weight to float32 and scores children from that weight.
    raw_gradient_score : bool
        Score a node from its weight ``w`` as ``-(2 G w + (H + l2) w^2)`` with the raw ``G``
        (XGBoost) instead of the soft-thresholded ``T(G)`` (LightGBM). The two differ only
        when ``l1 > 0`` and the weight form is used (``max_delta_step > 0``).
    monotone : tuple of int
        The host's monotone constraints, one per feature (``+1`` increasing, ``-1``
        decreasing, ``0`` none; missing trailing entries are 0): the host clamped its leaf
        values to keep them, and pruning must too (:func:`unbiased_criteria.pruning.
        monotone_bounds`).
    path_smooth : float
        LightGBM's ``path_smooth``: every node's value as a leaf is pulled towards its
        parent's (:func:`unbiased_criteria.pruning.leaf_values`); 0 = none.
    hessian_epsilon : float
        What the host adds to a node's hessian sum where it values the node as a leaf and
        scores it as a split's child (LightGBM's ``kEpsilon``, ``1e-15f``); a split's parent
        it scores at the sum of its children's, its own sum plus twice this. It matters where
        hessian sums are that small (LightGBM with ``min_sum_hessian_in_leaf`` near 0 and tiny
        weights); 0 = none.
    """

    l1: float = 0.0
    l2: float = 0.0
    max_delta_step: float = 0.0
    weight_float32: bool = False
    raw_gradient_score: bool = False
    monotone: tuple[int, ...] = ()
    path_smooth: float = 0.0
    hessian_epsilon: float = 0.0


@dataclass(frozen=True)
class NodeSums:
    """Per-node sums over a set of rows: gradient, hessian and row count (-1 where not
    known: a model's own sums, :mod:`unbiased_criteria.model_sums`, without stored counts)."""

    G: np.ndarray
    H: np.ndarray
    n: np.ndarray

    @property
    def counts(self) -> np.ndarray | None:
        """``n``, or None where the counts are not known (``unbiased_gain(n_node=None)``)."""
        return self.n if bool(np.all(self.n >= 0)) else None


def node_sums(tree: Tree, nodes: np.ndarray, g: np.ndarray, h: np.ndarray) -> NodeSums:
    """Sums of ``g``, ``h`` (already weighted) and counts for every node of ``tree``.

    Three bincounts over the rows' leaves (two when ``h`` is one power of two, e.g. squared
    error: its sums are then ``h[0]`` times the counts, bit for bit), one product with the
    ancestor matrix for all three.
    """
    nodes = nodes.astype(np.intp, copy=False)  # bincount would cast int32 ids in every call
    count = np.bincount(nodes, minlength=tree.n_nodes).astype(np.float64)
    h0 = _power_of_two(h)
    leaf = np.stack([np.bincount(nodes, weights=g, minlength=tree.n_nodes),
                     h0 * count if h0 is not None
                     else np.bincount(nodes, weights=h, minlength=tree.n_nodes),
                     count], axis=1)
    total = tree.descendants.sums(leaf)
    return NodeSums(G=np.ascontiguousarray(total[:, 0]), H=np.ascontiguousarray(total[:, 1]),
                    n=np.rint(total[:, 2]).astype(np.int64))


def block_node_sums(tree: Tree, nodes: np.ndarray, values: np.ndarray, blocks: np.ndarray,
                    n_blocks: int) -> np.ndarray:
    """``(n_nodes, n_blocks)`` sums of ``values`` over each node's rows of each block: one
    bincount over (leaf, block) cells, one product with the ancestor matrix."""
    cell = nodes.astype(np.intp) * n_blocks + blocks
    leaf = np.bincount(cell, weights=values, minlength=tree.n_nodes * n_blocks)
    return tree.descendants.sums(leaf.reshape(tree.n_nodes, n_blocks))


def leave_one_out(per_block: np.ndarray) -> np.ndarray:
    """Sums over every block but one along the last axis: ``out[..., b]`` is the sum of
    ``per_block[..., c]`` over ``c != b``.

    Added from both ends (the blocks before ``b`` plus those after it), never a total minus
    block ``b``: when one block holds a huge weight (1e20 on one row) the subtraction would
    lose every other block to cancellation and leave a replicate of rounding noise.
    """
    before = np.cumsum(per_block, axis=-1)
    after = np.cumsum(per_block[..., ::-1], axis=-1)[..., ::-1]
    out = np.zeros_like(before)
    out[..., 1:] += before[..., :-1]
    out[..., :-1] += after[..., 1:]
    return out


def soft_threshold(G: np.ndarray, l1: float) -> np.ndarray:
    """``T(G) = sign(G) * max(|G| - l1, 0)``."""
    if l1 == 0:
        return G
    return np.sign(G) * np.maximum(np.abs(G) - l1, 0.0)


def leaf_weight(G, H, score: SplitScore, l2_extra=0.0) -> np.ndarray:
    """Unshrunk leaf output ``-T(G)/(H + eps + l2)``, clipped to ``+-max_delta_step``
    (``eps``: ``score.hessian_epsilon``)."""
    G = np.asarray(G, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64) + score.hessian_epsilon
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -soft_threshold(G, score.l1) / (H + score.l2 + l2_extra)
    w = np.where(H + score.l2 + l2_extra > 0, w, 0.0)
    if score.max_delta_step > 0:
        w = np.clip(w, -score.max_delta_step, score.max_delta_step)
    if score.weight_float32:
        w = w.astype(np.float32).astype(np.float64)
    return w


def node_score(G, H, score: SplitScore, l2_extra=0.0, weight_form: bool = False) -> np.ndarray:
    """Score ``S(G, H)`` of a node as a leaf (a split's child) on the hosts' scale (twice the
    loss reduction), its hessian sum padded by ``score.hessian_epsilon``."""
    G, H = np.asarray(G, dtype=np.float64), np.asarray(H, dtype=np.float64)
    lam = score.l2 + l2_extra
    TG = soft_threshold(G, score.l1)
    if weight_form or score.max_delta_step > 0:
        w = leaf_weight(G, H, score, l2_extra)  # pads H itself
        H = H + score.hessian_epsilon
        return -(2.0 * (G if score.raw_gradient_score else TG) * w + (H + lam) * w * w)
    H = H + score.hessian_epsilon
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(H + lam > 0, TG * TG / (H + lam), 0.0)


def biased_gain(tree: Tree, sums: NodeSums, score: SplitScore) -> np.ndarray:
    """The host's split gain B of every internal node (NaN at leaves).

    Children are scored with ``l2 + tree.l2_extra[I]`` (LightGBM's cat_l2), the parent with
    ``l2``; every node from its (clipped) weight when ``max_delta_step > 0``, else with the
    plain ``T(G)^2 / (H + l2)``. With ``score.hessian_epsilon`` each child's ``H`` is padded
    by it and the parent's by twice it, the sum of its children's (LightGBM's kEpsilon).
    """
    inner = tree.internal_nodes
    L, R = tree.left[inner], tree.right[inner]
    extra = tree.l2_extra[inner]
    B = np.full(tree.n_nodes, np.nan)
    B[inner] = (
        node_score(sums.G[L], sums.H[L], score, extra)
        + node_score(sums.G[R], sums.H[R], score, extra)
        # node_score pads once more: the parent's H + 2 eps
        - node_score(sums.G[inner], sums.H[inner] + score.hessian_epsilon, score)
    )
    return B


def tree_generator(random_state, tree_index: int) -> np.random.Generator:
    """An independent generator for tree ``tree_index`` of a run seeded by ``random_state``.

    Each tree gets its own stream, so results do not depend on how trees are chunked.
    ``random_state`` is None, an int or a ``numpy.random.SeedSequence``.
    """
    if not isinstance(random_state, np.random.SeedSequence):
        random_state = np.random.SeedSequence(random_state)
    seq = np.random.SeedSequence(
        random_state.entropy, spawn_key=(*random_state.spawn_key, int(tree_index))
    )
    return np.random.Generator(np.random.PCG64(seq))


@dataclass(frozen=True)
class Draws:
    """Subsets of held-out rows, one per request, drawn uniformly without replacement.

    Request ``q`` asks for ``k[q]`` of the rows of node ``node[q]``. Every row gets a random
    rank (a uniform shuffle); request ``q`` takes the ``k[q]`` rows of its node with the
    smallest ranks. That subset is uniform, and it depends only on the node's rows, not on the
    tree below it: a split that survives pruning draws the same rows when the pruned model is
    scored again. Requests of one call share the ranks, so nested nodes get overlapping
    (dependent) subsets; each one alone is exactly uniform, which is all E[U] = 0 needs.

    Rows are kept grouped by leaf in rank order, so a request's subset is a prefix of each of
    its leaves' blocks: ``count`` rows of leaf ``leaf`` starting at ``start[leaf]``.
    """

    order: np.ndarray  # row ids grouped by leaf, in rank order inside each leaf
    start: np.ndarray  # first position of each node's block in ``order`` (leaves only)
    request: np.ndarray  # per (request, leaf) pair: request id
    leaf: np.ndarray  # per pair: leaf node id
    count: np.ndarray  # per pair: rows taken from the front of the leaf's block
    n_requests: int

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Sum of 1-D ``values`` over each request's rows."""
        s, j = self.start[self.leaf], self.count
        cum = np.zeros(values.shape[0] + 1)
        np.cumsum(values[self.order], dtype=np.float64, out=cum[1:])
        return np.bincount(self.request, cum[s + j] - cum[s], minlength=self.n_requests)

    def block_sums(
        self, values: tuple[np.ndarray, ...], blocks: np.ndarray, n_blocks: int
    ) -> list[np.ndarray]:
        """For each 1-D array in ``values``: its sums over each request's rows in each block,
        ``(n_requests, n_blocks)``.

        One pass over the rows whatever the number of blocks: the rows are cut at every
        window boundary, summed per (segment, block), and windows add up their segments.
        """
        s, j = self.start[self.leaf], self.count
        n = blocks.shape[0]
        cuts = np.unique(np.concatenate([[0, n], s, s + j]))
        seg = np.repeat(np.arange(cuts.size - 1), np.diff(cuts))
        cell = seg * n_blocks + blocks[self.order]
        lo, hi = np.searchsorted(cuts, s), np.searchsorted(cuts, s + j)
        out = []
        for v in values:
            acc = np.bincount(cell, weights=v[self.order],
                              minlength=(cuts.size - 1) * n_blocks).reshape(-1, n_blocks)
            cum = np.vstack([np.zeros(n_blocks), np.cumsum(acc, axis=0)])
            per_request = np.zeros((self.n_requests, n_blocks))
            np.add.at(per_request, self.request, cum[hi] - cum[lo])
            out.append(per_request)
        return out

    def rows(self, q: int) -> np.ndarray:
        """Row ids drawn for request ``q`` (for tests and inspection)."""
        pick = self.request == q
        parts = [
            self.order[s : s + j] for s, j in zip(self.start[self.leaf[pick]], self.count[pick])
        ]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def draw_subsets(
    tree: Tree, nodes: np.ndarray, node: np.ndarray, k: np.ndarray, rng: np.random.Generator
) -> Draws:
    """Draw ``k[q]`` rows uniformly without replacement from the rows of ``node[q]``.

    ``nodes`` holds each row's leaf node id. The only randomness is one ``rng.permutation``
    of the rows. Cost: that shuffle and one radix sort of the rows, plus a binary search over
    ranks whose work grows with (requests x leaves below them), never with the rows drawn.
    """
    n = nodes.shape[0]
    node = np.asarray(node, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    size = np.bincount(nodes, minlength=tree.n_nodes)
    perm = rng.permutation(n)
    idx = np.argsort(
        nodes[perm].astype(np.int16 if tree.n_nodes < 2**15 else np.int32), kind="stable"
    )
    # row order[p] has rank idx[p]; inside each leaf block the ranks ascend
    order = perm[idx]
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    block = np.repeat(np.arange(tree.n_nodes, dtype=np.int64), size)
    key = block * (n + 1) + idx  # globally ascending: (leaf, rank)

    # (request, leaf below it) pairs, leaves holding rows only
    pair_req, pair_leaf = _leaves_below(tree, node)
    keep = size[pair_leaf] > 0
    pair_req, pair_leaf = pair_req[keep], pair_leaf[keep]

    def taken(tau):  # rows of each pair with rank < tau[request]
        pos = np.searchsorted(key, pair_leaf * (n + 1) + tau[pair_req])
        return pos - start[pair_leaf]

    # smallest tau with k rows of rank < tau in the node: the k lowest-ranked rows
    lo, hi = np.zeros(node.size, dtype=np.int64), np.full(node.size, n, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        enough = np.bincount(pair_req, taken(mid), minlength=node.size) >= k
        hi = np.where(enough, mid, hi)
        lo = np.where(enough, lo, mid + 1)
    count = taken(lo)
    nz = count > 0
    return Draws(
        order=order, start=start, request=pair_req[nz], leaf=pair_leaf[nz], count=count[nz],
        n_requests=int(node.size),
    )


def _power_of_two(h: np.ndarray) -> float | None:
    """``h[0]`` when every entry of ``h`` equals it and it is a power of two, else None.

    Sums of ``m`` copies of a power of two are exact in float64, so ``h[0] * count`` equals the
    sum of ``h`` over any ``m < 2**53`` rows bit for bit: no bincount of its own is needed.
    """
    if h.size == 0:
        return None
    h0 = float(h[0])
    if not (np.isfinite(h0) and h0 > 0 and np.frexp(h0)[0] == 0.5):
        return None
    # two reductions, no temporary (a NaN makes both comparisons false)
    return h0 if h.min() == h0 and h.max() == h0 else None


def _ancestor_at_depth(tree: Tree) -> np.ndarray:
    """``(n_nodes, max_depth + 1)``: the ancestor (or self) of each node at each depth, -1."""
    a = tree.descendants  # CSR: row a holds a's descendants (and a)
    row = np.repeat(np.arange(tree.n_nodes), np.diff(a.indptr))
    out = np.full((tree.n_nodes, tree.max_depth + 1), -1, dtype=np.int64)
    out[a.indices, tree.depth[row]] = row
    return out


def _leaves_below(tree: Tree, node: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(request, leaf) pairs: every leaf under each ``node[q]``, grouped by request, leaves
    ascending (:meth:`~unbiased_criteria.trees.Descendants.row_pairs`)."""
    req, leaf = tree.descendants.row_pairs(node)
    keep = tree.is_leaf[leaf]
    return req[keep], leaf[keep]


#: at most this many (request, row of its crossing bin) entries at a time: a tree of 8192
#: leaves over 40k rows made five such arrays of 20 MB each at once
_CROSSING_CHUNK = 1 << 18


#: at most this many (request, leaf, rank) counts: one table of every rank's counts instead of
#: a binary search over ranks (each of its log2(n_bins) steps is a few numpy calls). Measured
#: on 5k held-out rows: 10% faster for trees of 4 leaves, no slower for 31 (2**16: 7% slower)
_RANK_TABLE_LIMIT = 1 << 14


def rank_bins(n: int) -> int:
    """Number of rank bins for ``n`` rows, ``2 sqrt(n)``: the (node, bin) counts and the
    scan of the bins holding a ``k``-th row then both cost ``O(sqrt(n))`` per request."""
    return max(1, int(2 * np.sqrt(n)))


class Workspace:
    """Row arrays reused from tree to tree (or round to round) within one call, by name, one
    set per thread.

    Each tree's k-draws need two arrays as long as the held-out rows (the (run, leaf) keys
    and the rows' cells), the training hooks a few more per round. Fresh ones cost a page
    fault per 4 kB page on first touch, which on this kind of machine cost more than the
    passes that fill them (post-hoc, XGBoost, 100 trees, 400k rows, one thread: 210k minor
    faults, 95–130k with the two k-draw arrays reused). Made per call (its arrays go with it);
    each thread takes its own (scoring runs on several).
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, dict[str, np.ndarray]] = {}

    def array(self, name: str, size: int, dtype) -> np.ndarray:
        """This thread's array ``name`` of ``size`` entries (contents undefined); made anew
        when the size or type changes."""
        arrays = self._by_thread.setdefault(threading.get_ident(), {})
        a = arrays.get(name)
        if a is None or a.shape != (size,) or a.dtype != dtype:
            a = arrays[name] = np.empty(size, dtype=dtype)
        return a


def bin_leaf_counts(
    leaf: np.ndarray, n_nodes: int, n_bins: int, bins: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (bin, leaf) key ``bin * n_nodes + leaf`` and the rows per (bin, leaf),
    ``(n_bins, n_nodes)``: the table :func:`first_k_sums` ranks from (its column sums are the
    rows per leaf). ``bins=None``: runs of ``ceil(n / n_bins)`` consecutive rows, added to the
    leaf ids by a broadcast in the same pass (no array of bins). ``leaf`` is intp; ``out``
    (intp, one per row) receives the keys."""
    n = leaf.shape[0]
    if bins is None:
        size = -(-n // n_bins)
        full = n // size * size
        key = np.empty(n, dtype=np.intp) if out is None else out
        np.add(leaf[:full].reshape(-1, size),
               np.arange(0, full // size * n_nodes, n_nodes)[:, None],
               out=key[:full].reshape(-1, size))
        np.add(leaf[full:], full // size * n_nodes, out=key[full:])
    else:
        key = np.multiply(bins, n_nodes, dtype=np.intp, out=out)
        key += leaf
    counts = np.bincount(key, minlength=n_bins * n_nodes).reshape(n_bins, n_nodes)
    return key, counts


def first_k_sums(
    tree: Tree,
    nodes: np.ndarray,
    node: np.ndarray,
    k: np.ndarray,
    values: tuple[np.ndarray | float | None, ...],
    blocks: np.ndarray | None = None,
    n_blocks: int = 1,
    bins: np.ndarray | None = None,
    n_bins: int = 0,
    bin_order: np.ndarray | None = None,
    binned: tuple[np.ndarray, np.ndarray] | None = None,
    workspace: Workspace | None = None,
) -> list[np.ndarray]:
    """Sums of each of ``values`` over the ``k[q]`` first-ranked rows of node ``node[q]``.

    Rows are ranked by ``(rank of bins[i], i)``: by the rank of their bin, then by their
    position. ``bin_order`` lists the bins in rank order (``bin_order[r]`` is the bin ranked
    ``r``; None: bin ``b`` ranks ``b``). With ``bins=None`` the bins are runs of consecutive
    positions, ``ceil(n / n_bins)`` rows each (``n_bins=0``: :func:`rank_bins`); with
    ``bin_order=None`` too, the rank is the position itself. Request ``q`` takes the ``k[q]``
    rows of its node ranked first; ``k[q]`` must not exceed the rows of ``node[q]``.

    Uniformity: let the rows' order be a uniformly random permutation drawn independently of
    ``tree`` and of the rows' values (the replay shuffles the held-out rows once,
    ``replay(valid_order=...)``). Given the bins and ``bin_order``, drawn independently of
    that order (positional bins and a uniformly random ``bin_order`` per tree, as
    :func:`unbiased_gain` ranks; or i.i.d. uniform ``bins``), the ranking is a fixed
    bijection of the positions, and a fixed bijection after a uniformly random permutation
    is a uniformly random permutation: every request's subset is an exactly uniform draw
    without replacement from its node's rows. A fresh ``bin_order`` per tree makes different
    trees' draws nearly independent (they share only the order inside a bin of about
    ``sqrt(n) / 2`` rows), as a shuffle per tree would, at the cost of permuting ``n_bins``
    labels. Requests of one call share the ranking, so nested nodes get overlapping
    (dependent) subsets, each one alone uniform.

    ``values`` are 1-D float arrays (``None`` counts rows, a float ``c`` is ``c`` times the
    count); ``workspace`` (:class:`Workspace`) lends the rows' cells. Returns, for each, an
    array
    ``(n_requests, n_blocks)`` of sums per block (``blocks`` None: one block). No sort and no
    random gather over the ``n`` rows; the passes over them, each sequential:

    1. rank cuts (where each request's ``k``-th row lies): one bincount of (bin, leaf) and its
       key (one elementwise pass; both given as ``binned``, :func:`bin_leaf_counts`, when the
       caller made them), a binary search over bin ranks in (request, leaf) pairs (a
       table of every rank's counts where that is small),
       then only the rows of the bins holding a ``k``-th row are read (positional bins: a
       slice each; given ``bins``: a gather from a bin table and a ``flatnonzero``, two
       passes);
    2. each row's cell (leaf, which cuts of the requests above its leaf it precedes, block):
       one gather from a small (bin, leaf) table by the key of step 1 (one elementwise pass
       more with blocks: the table holds ``cell * n_blocks``);
    3. one bincount per value over the cells; requests add up prefix sums of their leaves'
       cells (work in cells and (request, leaf) pairs, not in rows). A value given as a float
       ``c`` (a power of two) is ``c`` times the count of rows, summed exactly from the count
       without a pass of its own: a constant hessian (squared error) costs nothing.
    """
    n = nodes.shape[0]
    node = np.asarray(node, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    n_req, n_nodes = node.size, tree.n_nodes
    leaf = nodes.astype(np.intp, copy=False)
    positional = bins is None
    n_bins = (n_bins or rank_bins(n)) if positional else n_bins
    size = -(-n // n_bins)  # rows per bin when positional (the last bins may be empty)
    if bin_order is None:
        bin_order = np.arange(n_bins)
    rank_of = np.empty(n_bins, dtype=np.int64)
    rank_of[bin_order] = np.arange(n_bins)

    # (request, leaf under it) pairs, grouped by request; every request has one at least
    pair_req, pair_leaf = _leaves_below(tree, node)
    starts = np.searchsorted(pair_req, np.arange(n_req))

    # 1. the rank of the bin of each request's k-th row, and how many of its rows rank before
    key, counts = binned if binned is not None else bin_leaf_counts(
        leaf, n_nodes, n_bins, bins)
    leaves = np.flatnonzero(tree.is_leaf)
    column = np.zeros(n_nodes, dtype=np.int64)
    column[leaves] = np.arange(leaves.size)
    # (leaf, rank): the cumulative sum runs along contiguous rows (numpy's along axis 0 of a
    # (rank, leaf) table took 4 times as long); pairs index it flat
    upto = np.take(counts, bin_order, axis=0).T[leaves]
    np.cumsum(upto, axis=1, out=upto)  # rows of each leaf in bin ranks <= r

    if pair_leaf.size * n_bins <= _RANK_TABLE_LIMIT:  # small: every rank at once
        per_rank = np.add.reduceat(upto[column[pair_leaf]], starts, axis=0)
        crossing = (per_rank < k[:, None]).sum(axis=1)  # counts ascend in r
        before = np.where(crossing > 0,
                          per_rank[np.arange(n_req), np.maximum(crossing - 1, 0)], 0)
    else:
        pair_at = column[pair_leaf] * n_bins

        def count(r):  # rows of each request in bin ranks <= r[request]
            return np.add.reduceat(np.take(upto, pair_at + r[pair_req]), starts)

        lo, hi = np.zeros(n_req, dtype=np.int64), np.full(n_req, n_bins - 1, dtype=np.int64)
        while np.any(lo < hi):  # binary search: log2(n_bins) steps over (request, leaf) pairs
            mid = (lo + hi) // 2
            enough = count(mid) >= k
            hi, lo = np.where(enough, mid, hi), np.where(enough, lo, mid + 1)
        crossing = lo
        before = np.where(crossing > 0, count(np.maximum(crossing - 1, 0)), 0)
    # crossing: the rank of the bin holding each request's k-th row; before: its rows
    # ranked in earlier bins
    crossing_bin = bin_order[crossing]
    # the rows of each request's crossing bin, in position order: from ``first[q]``, ``width``
    # positions (of the rows, or of ``scan``), ``count[q]`` of them in the bin
    if positional:
        first, count, width = crossing_bin * size, np.minimum(size, n - crossing_bin * size), size
    else:
        wanted = np.zeros(n_bins, dtype=bool)
        wanted[crossing_bin] = True
        scan = np.flatnonzero(wanted[bins])
        slot = np.cumsum(wanted) - 1  # crossing bins numbered in order (small ints: radix)
        slot = slot.astype(np.int16 if wanted.sum() < 2**15 else np.int32)
        scan = scan[np.argsort(slot[bins[scan]], kind="stable")]
        scan_bin = bins[scan].astype(np.int64)
        first = np.searchsorted(scan_bin, crossing_bin)
        count = np.searchsorted(scan_bin, crossing_bin, side="right") - first
        width = max(int(count.max()), 1)
    depth = _ancestor_at_depth(tree)  # a row is inside node q iff its leaf's ancestor at
    depth_flat, node_depth = depth.ravel(), tree.depth[node]  # q's depth is q
    cut_pos = np.empty(n_req, dtype=np.int64)
    step = max(1, _CROSSING_CHUNK // width)  # (requests, width) arrays bounded: big trees
    for a in range(0, n_req, step):
        q = slice(a, a + step)
        at = first[q, None] + np.arange(width)
        there = at < (first[q] + count[q])[:, None]
        rows = np.minimum(at, n - 1) if positional else scan[np.minimum(at, scan.size - 1)]
        inside = np.take(depth_flat, leaf[rows] * depth.shape[1] + node_depth[q, None])
        inside = (inside == node[q, None]) & there
        reached = np.cumsum(inside, axis=1) + before[q, None] >= k[q, None]
        # cut of request q: rows ranked before (crossing rank, position after its k-th row)
        cut_pos[q] = rows[np.arange(rows.shape[0]), np.argmax(reached, axis=1)] + 1
    cut_key = crossing * (n + 1) + cut_pos

    # 2. cells: a leaf's rows are split at the cuts of the requests above it (compacted)
    cuts = np.unique(cut_key)
    cut_of = np.searchsorted(cuts, cut_key)  # (unique's inverse costs more)
    m = cuts.size
    cells = _Cells(pair_leaf, cut_of[pair_req], n_nodes, m)
    n_cells = cells.n_cells

    # a row's cell from its (bin, leaf), except in the crossing bins: there from its position;
    # with blocks the small table holds cell * n_blocks, so the rows take one pass less
    if blocks is None:
        n_blocks = 1
    cuts_before_bin = np.searchsorted(cuts, rank_of * (n + 1))
    table = cells.by_cut_count(cuts_before_bin, leaves)  # (bin, leaf): rows' keys index it
    table *= n_blocks
    cell = None if workspace is None else workspace.array("cell", n, np.intp)
    cell = np.take(table.ravel(), key, out=cell,
                   mode="clip")  # keys are in range; "clip" writes without a buffer
    if positional:  # cuts before each row of a crossing bin: its bin's, then a prefix count
        crossing_bins = np.unique(crossing_bin)
        cut_bin = (cuts % (n + 1) - 1) // size
        marks = np.bincount(np.searchsorted(crossing_bins, cut_bin) * (size + 1)
                            + cuts % (n + 1) - cut_bin * size,
                            minlength=crossing_bins.size * (size + 1))
        passed = np.cumsum(marks.reshape(-1, size + 1)[:, :size], axis=1)
        passed += cuts_before_bin[crossing_bins][:, None]
        scan = crossing_bins[:, None] * size + np.arange(size)
        valid = scan < n
        scan, passed = scan[valid], passed[valid]
    else:
        passed = np.searchsorted(cuts, rank_of[scan_bin] * (n + 1) + scan, side="right")
    cell[scan] = cells.cell(leaf[scan], passed) * n_blocks
    if blocks is not None:
        cell += blocks

    # 3. sums per cell; a (request, leaf) pair takes its leaf's cells up to the request's cut
    lo = cells.first[pair_leaf]
    hi = cells.cell(pair_leaf, cut_of[pair_req]) + 1
    out: list = []
    counted = None  # the per-request row counts, when a value needed them
    for v in values:
        if v is None or isinstance(v, float):  # counts, or c * counts (exact: c = 2**e)
            if counted is None:
                counted = _cell_sums(cell, None, n_cells, n_blocks, lo, hi, starts)
            out.append(counted if v is None else v * counted)
        else:
            out.append(_cell_sums(cell, v, n_cells, n_blocks, lo, hi, starts))
    return out


#: a (request, leaf) pair's sum below this share of the prefix sums it is the difference of
#: is summed again cell by cell: the difference has lost its digits to cancellation
_CANCELLATION = 1e-8


#: at most this many (node, cut) entries: a dense table of how many of the first cuts are
#: each leaf's own (one gather per lookup); above it, each leaf's cuts as a sorted list (a
#: binary search per lookup): the dense table grows with the square of the tree (3.7 GB for
#: one tree of 8192 leaves), while the search made a tree of 255 leaves 50% slower to score
_CELL_TABLE_LIMIT = 1 << 22


class _Cells:
    """Each leaf's rows split at the cuts of the requests above it: cell ids, a leaf's
    ``first`` cell plus how many of the cuts a row has passed are the leaf's own.

    The pairs' ``pair_cut`` (of ``m`` cuts) say which cuts each leaf has. Where
    ``n_nodes * (m + 1) <= _CELL_TABLE_LIMIT`` a dense table of every (node, cut count)
    cell answers by a gather, else each leaf's sorted cuts by a binary search."""

    def __init__(self, pair_leaf: np.ndarray, pair_cut: np.ndarray, n_nodes: int, m: int):
        self.m = m
        if n_nodes * (m + 1) <= _CELL_TABLE_LIMIT:
            relevant = np.zeros((n_nodes, m), dtype=bool)
            relevant[pair_leaf, pair_cut] = True
            seen = np.zeros((n_nodes, m + 1), dtype=np.int64)
            np.cumsum(relevant, axis=1, out=seen[:, 1:])
            count = seen[:, -1]
            self.own = None
        else:
            self.own = np.unique(pair_leaf * (m + 1) + pair_cut)  # by leaf, then cut
            self.start = np.searchsorted(self.own, np.arange(n_nodes + 1) * (m + 1))
            count = np.diff(self.start)
        self.first = np.concatenate([[0], np.cumsum(count + 1)])
        self.n_cells = int(self.first[-1])
        if self.own is None:
            self.table = self.first[:-1, None] + seen  # (node, cuts passed) -> cell

    def cell(self, leaf: np.ndarray, passed: np.ndarray) -> np.ndarray:
        """The cell of a row of ``leaf`` that has passed ``passed`` cuts (elementwise)."""
        if self.own is None:
            return np.take(self.table.ravel(), leaf * (self.m + 1) + passed)
        return (self.first[leaf] + np.searchsorted(self.own, leaf * (self.m + 1) + passed)
                - self.start[leaf])

    def by_cut_count(self, passed: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        """``(passed.size, n_nodes)``: the cell of a row of each leaf that has passed
        ``passed[i]`` cuts (other nodes' entries are not cells)."""
        if self.own is None:  # whole rows of the transposed table: contiguous copies
            return np.ascontiguousarray(self.table.T)[passed]
        out = np.zeros((passed.size, self.first.size - 1), dtype=np.int64)
        step = max(1, _CROSSING_CHUNK // max(leaves.size, 1))  # bounds the temporaries
        for a in range(0, passed.size, step):
            out[a:a + step, leaves] = self.cell(leaves[None, :], passed[a:a + step, None])
        return out


def _cell_sums(cell, v, n_cells, n_blocks, lo, hi, starts) -> np.ndarray:
    """Sums of ``v`` (None: counts) per request and block: one bincount over the rows' cells,
    prefix sums over cells, each (request, leaf) pair takes its cells ``lo:hi``.

    A difference of prefix sums loses what is small beside them: hessians of weight 1e-20
    after rows of weight 1 summed to exactly 0, with rows counted, and the ratio was 0/0. The
    pairs whose difference is below ``_CANCELLATION`` of its operands (rare: about a
    billionth of the rows before them) are summed cell by cell instead. Counts are exact."""
    per_cell = np.bincount(cell, weights=v, minlength=n_cells * n_blocks)
    per_cell = per_cell.reshape(n_cells, n_blocks)
    cum_cells = np.zeros((n_cells + 1, n_blocks))
    np.cumsum(per_cell, axis=0, out=cum_cells[1:])
    out = np.empty((starts.size, n_blocks))
    for a, b in _request_chunks(starts, lo.size):  # one chunk but for trees of many nodes
        p0, p1 = starts[a], starts[b] if b < starts.size else lo.size
        l, h = lo[p0:p1], hi[p0:p1]
        upper, lower = cum_cells[h], cum_cells[l]
        pair = upper - lower
        if v is not None:
            scale = np.maximum(np.abs(upper), np.abs(lower), out=upper)
            lost = np.flatnonzero((np.abs(pair) < _CANCELLATION * scale).any(axis=1)
                                  & (h > l))
            if lost.size:
                pair[lost] = _range_sums(per_cell, l[lost], h[lost])
        out[a:b] = np.add.reduceat(pair, starts[a:b] - p0, axis=0)
    return out


#: (request, leaf) pairs whose sums are taken at a time (arrays of pairs x blocks): a tree
#: of 15,000 leaves has about a million pairs
_PAIR_CHUNK = 1 << 16


def _request_chunks(starts: np.ndarray, n_pairs: int) -> list[tuple[int, int]]:
    """Consecutive ranges of requests holding about ``_PAIR_CHUNK`` pairs each (a request's
    pairs are never split; ``starts``: each request's first pair)."""
    if n_pairs <= _PAIR_CHUNK:
        return [(0, starts.size)]
    cut = np.searchsorted(starts, np.arange(_PAIR_CHUNK, n_pairs, _PAIR_CHUNK), side="right")
    edges = np.unique(np.concatenate([[0], cut, [starts.size]]))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def _range_sums(per_cell: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``per_cell[lo[j]:hi[j]].sum(axis=0)`` for every ``j`` (each range non-empty), added
    cell by cell: no prefix sums, so nothing small is lost beside something large."""
    lengths = hi - lo
    ends = np.cumsum(lengths)
    out = np.empty((lo.size, per_cell.shape[1]))
    # ranges in groups of about _CROSSING_CHUNK cells: the gathered cells are bounded
    edges = np.unique(np.searchsorted(ends, np.arange(0, int(ends[-1]), _CROSSING_CHUNK),
                                      side="right"))
    for a, b in zip(edges.tolist(), [*edges[1:].tolist(), lo.size], strict=True):
        seg = ends[a:b] - lengths[a:b] - (ends[a - 1] if a else 0)
        cells = np.repeat(lo[a:b] - seg, lengths[a:b]) + np.arange(int(lengths[a:b].sum()))
        out[a:b] = np.add.reduceat(per_cell[cells], seg, axis=0)
    return out


@dataclass(frozen=True)
class UnbiasedGain:
    """Result of :func:`unbiased_gain`; per-node arrays (leaves NaN / 0).

    ``gain`` is U (0 where the split is not usable); ``k`` the draw size; ``n_valid`` the
    held-out rows per node; ``usable`` marks splits with ``k >= min_k`` whose three ratios
    each carry curvature (:func:`has_curvature`, in every draw).
    """

    gain: np.ndarray
    k: np.ndarray
    n_valid: np.ndarray
    usable: np.ndarray
    #: (n_blocks, n_nodes): U with each block of held-out rows left out (when blocks given)
    jackknife: np.ndarray | None = None


def draw_requests(
    tree: Tree, n_valid: np.ndarray, min_k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``k`` and ``usable`` per node (what :func:`unbiased_gain` and the partitioned
    gain share), and the requests ``(I, L, R)`` of the usable splits with their ``k``."""
    inner = tree.internal_nodes
    L, R = tree.left[inner], tree.right[inner]
    k = np.zeros(tree.n_nodes, dtype=np.int64)
    k[inner] = np.minimum(n_valid[L], n_valid[R])
    usable = np.zeros(tree.n_nodes, dtype=bool)
    usable[inner] = k[inner] >= max(min_k, 1)
    split = inner[usable[inner]]
    node = np.concatenate([split, tree.left[split], tree.right[split]])
    return k, usable, node, np.tile(k[split], 3)


def unbiased_gain(
    tree: Tree,
    G: np.ndarray,
    nodes_valid: np.ndarray,
    g_valid: np.ndarray,
    h_valid: np.ndarray,
    *,
    rng: np.random.Generator,
    n_draws: int = 1,
    min_k: int = 5,
    lam: float = 0.0,
    shortcut: bool = False,
    blocks: np.ndarray | None = None,
    n_blocks: int = 0,
    G_blocks: np.ndarray | None = None,
    ranked: bool = False,
    workspace: Workspace | None = None,
    n_node: np.ndarray | None = None,
    min_hessian: float = MIN_HESSIAN,
) -> UnbiasedGain:
    """Unbiased gain U of every internal node of ``tree``.

    Parameters
    ----------
    tree : Tree
    G : array (n_nodes,)
        Sum of (weighted) gradients of the training sample in each node.
    nodes_valid : int array (n_valid,)
        Leaf node id of each held-out row.
    g_valid, h_valid : arrays (n_valid,)
        Weighted gradients and hessians ``w*g'``, ``w*h'`` of the held-out rows.
    rng : numpy.random.Generator
        Source of the draws. Without ``ranked`` the only randomness used is one
        ``rng.permutation`` of the held-out rows per draw: each draw takes the same rows as
        :func:`draw_subsets` with requests ``(I, k), (L, k), (R, k)`` for the usable splits in
        increasing node order, so tests can reproduce the drawn rows. With ``ranked``, one
        ``rng.permutation(rank_bins(n))`` per draw (the rank of each run of consecutive rows,
        :func:`first_k_sums`).
    n_draws : int
        Number of draws whose ratios ``r_X`` are averaged (same expectation, less noise).
    min_k : int
        Splits with ``k < min_k`` get ``U = 0`` and ``usable = False``. So do splits where a
        ratio's drawn rows carry (practically) no curvature (:func:`has_curvature`): all of
        zero hessian (e.g. zero weight, ``0/0``), or a hessian sum that, scaled to the node's
        ``n_node`` rows, is below ``min_hessian`` (rows a classifier is confidently wrong
        about: their float32 hessians underflow, and the ratio would be unbounded).
    lam : float
        L2 added to every ratio's denominator (the same for I, L and R).
    shortcut : bool
        When every held-out hessian is equal (squared error), use all of a node's held-out
        rows instead of k drawn ones: deterministic, unbiased, less variance.
    blocks, n_blocks : int array (n_valid,), int
        Optional block of every held-out row (0..n_blocks-1): also return, for each block,
        U computed with that block's rows left out of every ratio (for a jackknife). The
        replicate applies the same rule as the full estimate: where leaving block ``b`` out
        leaves a ratio without curvature (its remaining drawn rows' hessian sum, scaled to
        the node by their count, below ``min_hessian``; or no row of non-zero hessian), that
        split's replicate is 0, so every replicate is finite and the jackknife keeps its
        ``n_blocks - 1`` degrees of freedom. Unusable splits are 0 in every replicate.
    G_blocks : array (n_nodes, n_blocks), optional
        When ``G`` comes from rows that the blocks also divide (the validation-only mode's
        other half), ``G``'s sums per block: a replicate then leaves block ``b`` out of ``G``
        as well as of the ratios, as deleting a block of rows must. None: ``G`` is fixed
        (training rows, which the jackknife of the held-out rows does not resample).
    ranked : bool
        The held-out rows come in a uniformly random order drawn independently of ``tree``
        and of the rows' values (a caller shuffled them once, for all trees): each draw cuts
        that order into :func:`rank_bins` runs of consecutive rows and ranks the runs afresh
        (a random permutation of the runs, then the order inside each run), an exactly
        uniform ranking (:func:`first_k_sums`) that needs no shuffle, sort or gather of the
        rows, and no random number per row.
    workspace : Workspace, optional
        Reuses the ranked draws' row arrays from tree to tree (the caller's, per call).
    n_node : int array (n_nodes,), optional
        The rows behind ``G`` in each node, to which a ratio's drawn hessian sum is scaled
        (:func:`has_curvature`). None: the held-out rows per node (the ratios' own).
    min_hessian : float
        The least scaled hessian sum of a ratio that is evidence (:data:`MIN_HESSIAN`; 0
        keeps only the ``0/0`` rule).

    Returns
    -------
    UnbiasedGain
    """
    n_rows = nodes_valid.shape[0]
    binned = None
    if ranked and n_rows:  # the (bin, leaf) counts give the rows per leaf: no pass of its own
        n_bins = rank_bins(n_rows)
        binned = bin_leaf_counts(
            nodes_valid.astype(np.intp, copy=False), tree.n_nodes, n_bins,
            out=None if workspace is None else workspace.array("key", n_rows, np.intp))
        n_valid = tree.descendants.sums(binned[1].sum(axis=0)).astype(np.int64)
    else:
        n_valid = np.rint(tree.node_sums(nodes_valid)).astype(np.int64)
    inner = tree.internal_nodes
    k, usable, req_node, req_k = draw_requests(tree, n_valid, min_k)
    split = inner[usable[inner]]
    gain = np.full(tree.n_nodes, np.nan)
    gain[inner] = 0.0
    jack = blocks is not None and n_blocks > 1
    if split.size == 0:  # nothing usable: U is 0 with any block left out, too
        replicates = None
        if jack:
            replicates = np.full((n_blocks, tree.n_nodes), np.nan)
            replicates[:, inner] = 0.0
        return UnbiasedGain(gain, k, n_valid, usable, replicates)

    scale = (n_valid if n_node is None else np.asarray(n_node))[req_node].astype(np.float64)
    ratio = np.zeros(req_node.size)
    defined = np.ones(req_node.size, dtype=bool)  # every draw's ratio carries curvature
    ratio_out = np.zeros((req_node.size, n_blocks)) if jack else None
    defined_out = np.ones((req_node.size, n_blocks), dtype=bool) if jack else None

    # rows with a non-zero hessian, counted exactly: leaving a block out must see 0 rows as 0,
    # where the float sum of the hessians would leave a rounding residue
    def has_h():
        return (h_valid != 0).astype(np.float64)

    def add(sums, block_sums):  # each: sums of (w g', w h', rows of h' != 0, rows)
        (sum_g, sum_h, n_h, n_drawn) = sums
        ok = has_curvature(sum_h, n_drawn, n_h, scale, min_hessian)
        defined[...] &= ok
        ratio[...] += np.divide(sum_g, sum_h + lam, out=np.zeros_like(sum_g), where=ok)
        if jack:
            out_g, out_h, out_n, out_drawn = leave_one_out(np.stack(block_sums))
            ok = has_curvature(out_h, out_drawn, out_n, scale[:, None], min_hessian)
            defined_out[...] &= ok
            ratio_out[...] += np.divide(out_g, out_h + lam, out=np.zeros_like(out_g), where=ok)

    if shortcut and h_valid.size and np.all(h_valid == h_valid[0]):
        n_draws = 1
        values = (g_valid, h_valid, has_h(), np.ones(n_rows))
        sums = [tree.node_sums(nodes_valid, v)[req_node] for v in values]
        block_sums = (None, None, None, None)
        if jack:
            onehot = blocks[:, None] == np.arange(n_blocks)
            block_sums = [tree.node_sums(nodes_valid, onehot * v[:, None])[req_node]
                          for v in values]
        add(sums, block_sums)
    else:
        # zero hessians are rare (zero weights): count rows instead of summing an indicator
        h0 = _power_of_two(h_valid) if ranked else None
        # the drawn rows are counted too (None: a count, computed once for all Nones), to
        # scale the drawn hessian sums to their nodes
        if h0 is not None:  # a constant hessian, e.g. squared error: h0 * count, exact
            counted = (g_valid, None, None, None) if h0 == 1.0 else (g_valid, h0, None, None)
        else:
            counted = (g_valid, h_valid, None if np.count_nonzero(h_valid) == h_valid.size
                       else has_h(), None)
        for _ in range(n_draws):
            if ranked:  # runs of the given (random) order ranked afresh: no shuffle
                got = first_k_sums(tree, nodes_valid, req_node, req_k, counted,
                                   blocks if jack else None, n_blocks if jack else 1,
                                   n_bins=n_bins, bin_order=rng.permutation(n_bins),
                                   binned=binned, workspace=workspace)
            else:
                perm = rng.permutation(n_rows)
                values = tuple(None if v is None else v[perm] for v in counted)
                got = first_k_sums(tree, nodes_valid[perm], req_node, req_k, values,
                                   blocks[perm] if jack else None, n_blocks if jack else 1)
            sums = [a.sum(axis=1) for a in got]
            add(sums, got if jack else (None, None, None, None))

    return gain_from_ratios(tree, G, k, n_valid, usable, ratio, defined, n_draws,
                            ratio_out, defined_out, G_blocks)


def gain_from_ratios(
    tree: Tree, G: np.ndarray, k: np.ndarray, n_valid: np.ndarray, usable: np.ndarray,
    ratio: np.ndarray, defined: np.ndarray, n_draws: int,
    ratio_out: np.ndarray | None = None, defined_out: np.ndarray | None = None,
    G_blocks: np.ndarray | None = None,
) -> UnbiasedGain:
    """U of the usable splits from their ratios ``r = sum g' / (sum h' + lam)``, summed over
    the draws: ``U = G_L r_L + G_R r_R - G_I r_I`` (each ``r`` the mean over ``n_draws``).

    The requests are ordered as :func:`unbiased_gain` makes them: ``(I, L, R)`` of the splits
    ``usable`` marks, in increasing node order, so ``ratio`` and ``defined`` (every draw's
    ratio carries curvature, :func:`has_curvature`) are ``(3 s,)``; with a jackknife,
    ``ratio_out`` and ``defined_out`` are the same with each of the ``n_blocks`` blocks left
    out, ``(3 s, n_blocks)``. The one
    rule for every way the sums are gathered (in memory, or added over partitions).
    ``G_blocks`` (``(n_nodes, n_blocks)``, optional): ``G``'s sums per block, when the
    replicates leave each block out of ``G`` too (:func:`unbiased_gain`).
    ``usable`` is copied, not changed.
    """
    inner = tree.internal_nodes
    usable = usable.copy()
    split = inner[usable[inner]]
    gain = np.full(tree.n_nodes, np.nan)
    gain[inner] = 0.0

    def combine(r, G=G):  # U from the ratios of (I, L, R); r is (3s,) or (3s, n_blocks)
        r_I, r_L, r_R = (r / n_draws).reshape((3, split.size) + r.shape[1:])
        shape = (-1,) + (1,) * (r.ndim - G.ndim)
        G_I, G_L, G_R = (G[a].reshape(shape + G.shape[1:])
                         for a in (split, tree.left[split], tree.right[split]))
        return G_L * r_L + G_R * r_R - G_I * r_I

    # a ratio over rows without curvature (all drawn rows of weight 0, or hessians that
    # underflowed: has_curvature) is no evidence: the split is unusable, like one with
    # k < min_k
    ok = defined.reshape(3, split.size).all(axis=0)
    usable[split] = ok
    gain[split] = np.where(ok, combine(ratio), 0.0)
    jackknife = None
    if ratio_out is not None:
        # leaving block b out is the same estimator on fewer rows: where a ratio loses its
        # curvature (e.g. every drawn row of the node with a hessian is in block b), that
        # split's U is 0
        ok_out = defined_out.reshape(3, split.size, -1).all(axis=0) & ok[:, None]
        jackknife = np.full((ratio_out.shape[1], tree.n_nodes), np.nan)
        jackknife[:, inner] = 0.0
        G_out = G if G_blocks is None else leave_one_out(G_blocks)
        jackknife[:, split] = np.where(ok_out, combine(ratio_out, G_out), 0.0).T
    return UnbiasedGain(gain, k, n_valid, usable, jackknife)
