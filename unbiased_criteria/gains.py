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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .trees import Tree

__all__ = [
    "SplitScore",
    "NodeSums",
    "node_sums",
    "soft_threshold",
    "leaf_weight",
    "node_score",
    "biased_gain",
    "unbiased_gain",
    "UnbiasedGain",
    "Draws",
    "draw_subsets",
    "tree_generator",
]


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
    """

    l1: float = 0.0
    l2: float = 0.0
    max_delta_step: float = 0.0
    weight_float32: bool = False
    raw_gradient_score: bool = False


@dataclass(frozen=True)
class NodeSums:
    """Per-node sums over a set of rows: gradient, hessian and row count."""

    G: np.ndarray
    H: np.ndarray
    n: np.ndarray


def node_sums(tree: Tree, nodes: np.ndarray, g: np.ndarray, h: np.ndarray) -> NodeSums:
    """Sums of ``g``, ``h`` (already weighted) and counts for every node of ``tree``."""
    return NodeSums(
        G=tree.node_sums(nodes, g),
        H=tree.node_sums(nodes, h),
        n=np.rint(tree.node_sums(nodes)).astype(np.int64),
    )


def soft_threshold(G: np.ndarray, l1: float) -> np.ndarray:
    """``T(G) = sign(G) * max(|G| - l1, 0)``."""
    if l1 == 0:
        return G
    return np.sign(G) * np.maximum(np.abs(G) - l1, 0.0)


def leaf_weight(G, H, score: SplitScore, l2_extra=0.0) -> np.ndarray:
    """Unshrunk leaf output ``-T(G)/(H + l2)``, clipped to ``+-max_delta_step``."""
    G, H = np.asarray(G, dtype=np.float64), np.asarray(H, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -soft_threshold(G, score.l1) / (H + score.l2 + l2_extra)
    w = np.where(H + score.l2 + l2_extra > 0, w, 0.0)
    if score.max_delta_step > 0:
        w = np.clip(w, -score.max_delta_step, score.max_delta_step)
    if score.weight_float32:
        w = w.astype(np.float32).astype(np.float64)
    return w


def node_score(G, H, score: SplitScore, l2_extra=0.0, weight_form: bool = False) -> np.ndarray:
    """Score ``S(G, H)`` of a node on the hosts' scale (twice the loss reduction)."""
    G, H = np.asarray(G, dtype=np.float64), np.asarray(H, dtype=np.float64)
    lam = score.l2 + l2_extra
    TG = soft_threshold(G, score.l1)
    if weight_form or score.max_delta_step > 0:
        w = leaf_weight(G, H, score, l2_extra)
        return -(2.0 * (G if score.raw_gradient_score else TG) * w + (H + lam) * w * w)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(H + lam > 0, TG * TG / (H + lam), 0.0)


def biased_gain(tree: Tree, sums: NodeSums, score: SplitScore) -> np.ndarray:
    """The host's split gain B of every internal node (NaN at leaves).

    Children are scored with ``l2 + tree.l2_extra[I]`` (LightGBM's cat_l2), the parent with
    ``l2``; every node from its (clipped) weight when ``max_delta_step > 0``, else with the
    plain ``T(G)^2 / (H + l2)``.
    """
    inner = tree.internal_nodes
    L, R = tree.left[inner], tree.right[inner]
    extra = tree.l2_extra[inner]
    B = np.full(tree.n_nodes, np.nan)
    B[inner] = (
        node_score(sums.G[L], sums.H[L], score, extra)
        + node_score(sums.G[R], sums.H[R], score, extra)
        - node_score(sums.G[inner], sums.H[inner], score)
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

    # (request, leaf below it) pairs from the ancestor matrix
    below = tree.ancestors[node]
    pair_req = np.repeat(np.arange(node.size), np.diff(below.indptr))
    pair_leaf = below.indices.astype(np.int64)
    keep = tree.is_leaf[pair_leaf] & (size[pair_leaf] > 0)
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


@dataclass(frozen=True)
class UnbiasedGain:
    """Result of :func:`unbiased_gain`; per-node arrays (leaves NaN / 0).

    ``gain`` is U (0 where the split is not usable); ``k`` the draw size; ``n_valid`` the
    held-out rows per node; ``usable`` marks splits with ``k >= min_k`` whose three ratios
    each have a drawn row with a non-zero hessian (in every draw).
    """

    gain: np.ndarray
    k: np.ndarray
    n_valid: np.ndarray
    usable: np.ndarray
    #: (n_blocks, n_nodes): U with each block of held-out rows left out (when blocks given)
    jackknife: np.ndarray | None = None


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
        Source of the draws. The only randomness used is ``n_draws`` successive calls of
        :func:`draw_subsets` with requests ``(I, k), (L, k), (R, k)`` for the usable splits in
        increasing node order, so tests can reproduce the drawn rows.
    n_draws : int
        Number of draws whose ratios ``r_X`` are averaged (same expectation, less noise).
    min_k : int
        Splits with ``k < min_k`` get ``U = 0`` and ``usable = False``. So do splits where a
        ratio's drawn rows all have zero hessian (e.g. zero weight): ``0/0`` is no evidence.
    lam : float
        L2 added to every ratio's denominator (the same for I, L and R).
    shortcut : bool
        When every held-out hessian is equal (squared error), use all of a node's held-out
        rows instead of k drawn ones: deterministic, unbiased, less variance.
    blocks, n_blocks : int array (n_valid,), int
        Optional block of every held-out row (0..n_blocks-1): also return, for each block,
        U computed with that block's rows left out of every ratio (for a jackknife). The
        replicate applies the same rule as the full estimate: where leaving block ``b`` out
        leaves a ratio without a row of non-zero hessian, that split's replicate is 0, so
        every replicate is finite and the jackknife keeps its ``n_blocks - 1`` degrees of
        freedom. Unusable splits are 0 in every replicate.

    Returns
    -------
    UnbiasedGain
    """
    n_valid = np.rint(tree.node_sums(nodes_valid)).astype(np.int64)
    inner = tree.internal_nodes
    L, R = tree.left[inner], tree.right[inner]
    k = np.zeros(tree.n_nodes, dtype=np.int64)
    k[inner] = np.minimum(n_valid[L], n_valid[R])
    usable = np.zeros(tree.n_nodes, dtype=bool)
    usable[inner] = k[inner] >= max(min_k, 1)
    split = inner[usable[inner]]
    gain = np.full(tree.n_nodes, np.nan)
    gain[inner] = 0.0
    if split.size == 0:
        return UnbiasedGain(gain, k, n_valid, usable)

    req_node = np.concatenate([split, tree.left[split], tree.right[split]])
    jack = blocks is not None and n_blocks > 1
    ratio = np.zeros(req_node.size)
    defined = np.ones(req_node.size, dtype=bool)  # every draw's denominator is non-zero
    ratio_out = np.zeros((req_node.size, n_blocks)) if jack else None
    defined_out = np.ones((req_node.size, n_blocks), dtype=bool) if jack else None

    # rows with a non-zero hessian, counted exactly: leaving a block out must see 0 rows as 0,
    # where the float sum of the hessians would leave a rounding residue
    has_h = (h_valid != 0).astype(np.float64)

    def add(sums, block_sums):
        (sum_g, sum_h, n_h), (block_g, block_h, block_n) = sums, block_sums
        ok = n_h > 0
        defined[...] &= ok
        ratio[...] += np.divide(sum_g, sum_h + lam, out=np.zeros_like(sum_g), where=ok)
        if jack:
            ok = (n_h[:, None] - block_n) > 0
            defined_out[...] &= ok
            ratio_out[...] += np.divide(sum_g[:, None] - block_g, sum_h[:, None] - block_h + lam,
                                        out=np.zeros_like(block_g), where=ok)

    if shortcut and h_valid.size and np.all(h_valid == h_valid[0]):
        n_draws = 1
        values = (g_valid, h_valid, has_h)
        sums = [tree.node_sums(nodes_valid, v)[req_node] for v in values]
        block_sums = (None, None, None)
        if jack:
            onehot = blocks[:, None] == np.arange(n_blocks)
            block_sums = [tree.node_sums(nodes_valid, onehot * v[:, None])[req_node]
                          for v in values]
        add(sums, block_sums)
    else:
        req_k = np.tile(k[split], 3)
        for _ in range(n_draws):
            draws = draw_subsets(tree, nodes_valid, req_node, req_k, rng)
            values = (g_valid, h_valid, has_h)
            block_sums = (
                draws.block_sums(values, blocks, n_blocks) if jack else (None, None, None)
            )
            add([draws.sums(v) for v in values], block_sums)

    def combine(r):  # U from the ratios of (I, L, R); r is (3s,) or (3s, n_blocks)
        r_I, r_L, r_R = np.split(r / n_draws, 3)
        shape = (-1,) + (1,) * (r.ndim - 1)
        G_I, G_L, G_R = (G[a].reshape(shape) for a in (split, tree.left[split],
                                                        tree.right[split]))
        return G_L * r_L + G_R * r_R - G_I * r_I

    # a ratio over rows whose hessians sum to 0 (e.g. all drawn rows have weight 0) is no
    # evidence: the split is unusable, like one with k < min_k
    ok = np.logical_and.reduce(np.split(defined, 3))
    usable[split] = ok
    gain[split] = np.where(ok, combine(ratio), 0.0)
    jackknife = None
    if jack:
        # leaving block b out is the same estimator on fewer rows: where a ratio loses all
        # its hessian (every drawn row of the node is in block b), that split's U is 0
        ok_out = np.logical_and.reduce(np.split(defined_out, 3)) & ok[:, None]
        jackknife = np.full((n_blocks, tree.n_nodes), np.nan)
        jackknife[:, inner] = 0.0
        jackknife[:, split] = np.where(ok_out, combine(ratio_out), 0.0).T
    return UnbiasedGain(gain, k, n_valid, usable, jackknife)
