"""The paper's tree: histogram-based leaf-wise growth with the unbiased split rule.

Zhang, Zhang and Li (IJCAI 2023) split the training rows into a sub-training part D and two
validation parts D1', D2'. At every node:

1. each feature's best threshold is found on D (the host's gain B from D's histograms);
2. among those candidates the feature is chosen by its unbiased gain U measured on D1';
3. the split is made only if the chosen candidate's U measured on D2' is > 0.

``U = G_L r_L + G_R r_R - G_I r_I`` with ``G`` from D and ratios ``r = sum(g') / (sum(h') +
lam)`` over ``k = min(n'_L, n'_R)`` validation rows drawn without replacement from each of
I, L and R (:mod:`unbiased_criteria.gains`); with equal hessians everywhere (squared error,
no weights) all of a node's validation rows are used instead (unbiased, less noise). A
ratio whose drawn rows carry (practically) no curvature is no evidence, as in the post-hoc
scorer (:func:`unbiased_criteria.gains.has_curvature`, ``GrowerParams.min_hessian``): such a
candidate is unusable, in the choice on D1', the decision on D2' and the jackknife alike.

With ``criterion="biased"`` the grower is an ordinary histogram GBDT: every row is in D and a
node takes the candidate of largest B, as LightGBM does (tested against LightGBM).

Histograms of gradient, hessian and count are built by one ``np.bincount`` each over the
(feature, bin) codes of a node's rows; a node's larger child gets its parent's histogram
minus its sibling's, so each split costs the rows of the smaller child. The best threshold of
every feature comes from cumulative sums over its bins, with NaN rows tried on either side.
Growth is leaf-wise: the leaf whose chosen candidate has the largest selection gain (B or
U on D1') is split next, until ``num_leaves`` leaves or no leaf can split.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .binning import BinMapper
from .gains import (
    MIN_HESSIAN,
    NodeSums,
    SplitScore,
    has_curvature,
    leaf_weight,
    leave_one_out,
    node_score,
    weight_scale,
)
from .trees import MISSING_NAN, DecisionRules, Tree, make_tree

__all__ = ["RULES", "GrowerParams", "RowSets", "GrownTree", "grow_tree", "feature_major"]

#: the grower's trees send ``v <= threshold`` left (LightGBM's rules; the XGBoost writer
#: converts thresholds for its ``<``)
RULES = DecisionRules(operator="<=", categories_go="left", categorical_nan="other")


@dataclass(frozen=True)
class GrowerParams:
    """How one tree grows (names as LightGBM's scikit-learn estimators').

    ``min_child_samples`` and ``min_child_weight`` bound the rows and the hessian sum of D in
    each child; ``min_split_gain`` bounds B on D. ``criterion="unbiased"`` applies the paper's
    rule (steps 2 and 3 above), ``"biased"`` takes the candidate of largest B and splits
    while ``B > min_split_gain``. ``min_k``: a candidate with ``k < min_k`` has no usable
    evidence and cannot be chosen. ``lam``: L2 added to the ratios' denominators (default 0,
    as the post-hoc estimator; with all rows used the three ratios have different row counts,
    so ``lam > 0`` would shrink them differently and bias U).
    ``stop_threshold``: split iff U on D2' exceeds it (the paper: 0).
    ``min_hessian``: the curvature floor of the ratios, as the post-hoc scorer's
    (:func:`unbiased_criteria.gains.has_curvature`): a ratio is evidence only where its
    drawn hessian sum, scaled to the node's rows of D, reaches ``min_hessian`` times the
    typical weight (:func:`~unbiased_criteria.gains.weight_scale`) of the validation rows it
    is drawn from (D1' or D2'); else the candidate is
    unusable (0 keeps only the ``0/0`` rule).
    ``max_cat_to_onehot``, ``max_cat_threshold``, ``cat_smooth``: the categorical search
    (LightGBM's defaults and meaning; see ``_best_categorical``).
    """

    num_leaves: int = 31
    max_depth: int = -1
    min_child_samples: int = 20
    min_child_weight: float = 1e-3
    min_split_gain: float = 0.0
    score: SplitScore = SplitScore()
    criterion: Literal["unbiased", "biased"] = "unbiased"
    min_k: int = 5
    lam: float = 0.0
    stop_threshold: float = 0.0
    min_hessian: float = MIN_HESSIAN
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 32
    cat_smooth: float = 10.0


@dataclass(frozen=True)
class RowSets:
    """Row indices of D, D1' and D2' (``select is decide`` when D1' = D2')."""

    build: np.ndarray
    select: np.ndarray | None = None
    decide: np.ndarray | None = None


@dataclass(frozen=True)
class GrownTree:
    """A grown tree and what growing it measured.

    Attributes
    ----------
    tree : Tree
        Leaf values are the unshrunk Newton steps of all rows (``value`` at internal nodes
        too); ``host_gain`` is B on D, ``host_hessian`` / ``host_count`` over all rows.
    row_leaf : int array (n,)
        Leaf node id of every training row (D, D1' and D2' together).
    candidates : dict of arrays
        One entry per candidate scored on D1' (every feature with a valid threshold at every
        node searched): ``node``, ``feature``, ``bin`` (numeric: left iff bin <= it; -1 for
        a category set), ``biased_gain`` (B on D), ``unbiased_gain`` (U on D1'), ``k``,
        ``usable``, ``chosen``, ``decision_gain`` (U on D2' for the chosen one, NaN for the
        rest), ``n_train`` (rows of D in the node), ``n_valid`` (rows of D1'), ``split``
        (the node split on this candidate).
    jackknife : array (n_candidates, n_blocks) or None
        Each candidate's U with one block of D1' rows left out.
    sums : NodeSums or None
        Every node's gradient and hessian sums and row count over *all* training rows (the
        leaves' Newton steps come from them): what a host that grew this tree on those rows
        would have scored its splits with (:func:`unbiased_criteria.gbm.all_rows_gains`).
    """

    tree: Tree
    row_leaf: np.ndarray
    candidates: dict
    jackknife: np.ndarray | None = None
    sums: NodeSums | None = None


def feature_major(codes: np.ndarray) -> np.ndarray:
    """Bin codes (n, n_features) laid out feature-major (n_features, n): a node's rows of one
    feature are then one gather, and each feature's histogram one bincount."""
    return np.ascontiguousarray(codes.T)


#: rows up to which one bincount over all features beats one per feature (measured)
_SMALL_NODE = 2000


def _histogram(codes: np.ndarray, rows: np.ndarray, g, h, width: int) -> np.ndarray:
    """(3, p * width): sums of g, h and row counts per (feature, bin) over ``rows``."""
    p = codes.shape[0]
    sub = codes.take(rows, axis=1)  # take(): several times faster than codes[:, rows]
    gr, hr = g.take(rows), h.take(rows)
    if rows.size <= _SMALL_NODE:  # few rows: one bincount over (feature, bin) keys
        keys = sub.astype(np.intp)
        keys += (np.arange(p, dtype=np.intp) * width)[:, None]
        keys = keys.ravel()
        return np.stack([np.bincount(keys, np.tile(gr, p), minlength=p * width),
                         np.bincount(keys, np.tile(hr, p), minlength=p * width),
                         np.bincount(keys, minlength=p * width).astype(np.float64)])
    out = np.empty((3, p, width))
    for f in range(p):  # three bincounts per feature (faster than one over repeated weights)
        out[0, f] = np.bincount(sub[f], gr, minlength=width)
        out[1, f] = np.bincount(sub[f], hr, minlength=width)
        out[2, f] = np.bincount(sub[f], minlength=width)
    return out.reshape(3, -1)


@dataclass
class _Best:
    """Each feature's best threshold at one node (arrays over features)."""

    gain: np.ndarray  # B, -inf where no valid threshold
    bin: np.ndarray  # numeric: left iff bin <= b; -1 for a categorical candidate
    mask: np.ndarray  # (p, width) bool: the bins that go left (the NaN bin last)
    GL: np.ndarray
    HL: np.ndarray
    nL: np.ndarray


def _split_scores(GL, HL, G, H, score: SplitScore) -> np.ndarray:
    """``S(GL, HL) + S(G - GL, H - HL) - S(G, H)``: the host's gain B of every threshold."""
    if score.l1 == 0 and score.max_delta_step == 0:  # plain G^2 / (H + l2), fewer passes
        lam = score.l2
        HLl, HRl = HL + lam, (H - HL) + lam
        GR = G - GL
        with np.errstate(divide="ignore", invalid="ignore"):
            left = np.where(HLl > 0, GL * GL / HLl, 0.0)
            right = np.where(HRl > 0, GR * GR / HRl, 0.0)
        parent = G * G / (H + lam) if H + lam > 0 else 0.0
        left += right
        left -= parent
        return left
    return node_score(GL, HL, score) + node_score(G - GL, H - HL, score) - node_score(G, H, score)


def _best_thresholds(hist: np.ndarray, p: int, width: int, n_bins: np.ndarray,
                     G: float, H: float, n: float, params: GrowerParams) -> _Best:
    """Best threshold per feature from cumulative sums, NaN rows tried on both sides."""
    hist = hist.reshape(3, p, width)
    cum = np.cumsum(hist[:, :, :-1], axis=2)  # (3, p, width-1): sums over bins <= b
    nan = hist[:, :, -1:]  # (3, p, 1)
    if nan[2].any():
        side = np.stack([cum, cum + nan], axis=1)  # (3, 2, p, width-1): NaN right / left
    else:  # no NaN row in the node: sending NaN left changes nothing (right is kept)
        side = cum[:, None]
    GL, HL, nL = side
    nR = n - nL
    gain = _split_scores(GL, HL, G, H, params.score)
    # NaN right: up to the last bin (every value left, NaN right: the split on missingness,
    # as the hosts make it); NaN left: up to the one before (the last would send all left)
    last = (n_bins - 1)[None, :, None] - np.arange(side.shape[1])[:, None, None]
    valid = (
        (np.arange(width - 1)[None, None, :] <= last)
        & (nL > 0) & (nR > 0)
        & (nL >= params.min_child_samples) & (nR >= params.min_child_samples)
        & (HL >= params.min_child_weight) & (H - HL >= params.min_child_weight)
        & (gain > params.min_split_gain)
    )
    gain = np.where(valid, gain, -np.inf)
    flat = gain.transpose(1, 0, 2).reshape(p, -1)  # per feature: (side, bin)
    pick = np.argmax(flat, axis=1)
    s, b = np.divmod(pick, width - 1)
    f = np.arange(p)
    mask = np.arange(width)[None, :] <= b[:, None]
    mask[:, -1] = s.astype(bool)
    return _Best(gain=flat[f, pick], bin=b, mask=mask,
                 GL=GL[s, f, b], HL=HL[s, f, b], nL=nL[s, f, b])


def _best_categorical(best: _Best, hist: np.ndarray, p: int, width: int, binner: BinMapper,
                      G: float, H: float, n: float, params: GrowerParams) -> None:
    """Replace the categorical features' entries of ``best`` by their best category sets.

    A feature with at most ``max_cat_to_onehot`` categories tries each category against
    the rest; with more, the categories seen in the node are sorted by
    ``G / (H + cat_smooth)`` and every prefix of up to ``max_cat_threshold`` categories from
    either end is tried (LightGBM's many-vs-many search). NaN goes with the rest.
    """
    hist = hist.reshape(3, p, width)
    score = params.score
    for f in np.flatnonzero(binner.categorical):
        best.gain[f] = -np.inf  # the numeric search's result means nothing here
        nb = int(binner.n_bins[f])
        hf = hist[:, f, :nb]
        if nb <= params.max_cat_to_onehot:
            masks = np.eye(nb, dtype=bool)
        else:
            seen = np.flatnonzero(hf[2] > 0)
            order = seen[np.argsort(hf[0, seen] / (hf[1, seen] + params.cat_smooth),
                                    kind="stable")]
            t = min(params.max_cat_threshold, seen.size - 1)
            if t < 1:
                continue
            steps = np.arange(1, t + 1)
            rank = np.full(nb, nb, dtype=np.int64)
            rank[order] = np.arange(order.size)
            rev = np.full(nb, nb, dtype=np.int64)
            rev[order[::-1]] = np.arange(order.size)
            masks = np.concatenate([rank[None, :] < steps[:, None],
                                    rev[None, :] < steps[:, None]])
        sums = masks.astype(np.float64) @ hf.T  # (candidates, 3)
        GL, HL, nL = sums.T
        GR, HR, nR = G - GL, H - HL, n - nL
        gain = node_score(GL, HL, score) + node_score(GR, HR, score) - node_score(G, H, score)
        valid = ((nL >= params.min_child_samples) & (nR >= params.min_child_samples)
                 & (HL >= params.min_child_weight) & (HR >= params.min_child_weight)
                 & (gain > params.min_split_gain))
        gain = np.where(valid, gain, -np.inf)
        j = int(np.argmax(gain))
        best.gain[f], best.bin[f] = gain[j], -1
        best.mask[f] = False
        best.mask[f, :nb] = masks[j]
        best.GL[f], best.HL[f], best.nL[f] = GL[j], HL[j], nL[j]


def _goes_left(codes, rows, feats, masks) -> np.ndarray:
    """(q, m) whether each of ``rows`` goes left at each candidate (``masks`` (q, width))."""
    feats = np.asarray(feats)
    q, width = masks.shape
    # take() gathers a node's rows several times faster than fancy indexing codes[:, rows]
    if q == 1:
        x = codes[feats[0]].take(rows)[None, :]
    else:
        x = codes.take(rows, axis=1)
        if q < codes.shape[0]:  # feats is sorted: all features when q == p
            x = x[feats]
    # a mask whose value bins are a prefix 0..c-1 (every numeric threshold) is "code < c":
    # one comparison of the codes, no lookup; NaN (the last bin) is added where it goes left
    count = masks[:, :-1].sum(axis=1)
    prefix = (masks[:, :-1] == (np.arange(width - 1) < count[:, None])).all(axis=1)
    left = x < count.astype(x.dtype)[:, None]
    nan_left = np.flatnonzero(prefix & masks[:, -1])
    if nan_left.size:
        left[nan_left] |= x[nan_left] == width - 1
    for j in np.flatnonzero(~prefix):  # category sets: a lookup
        left[j] = masks[j].take(x[j])
    return left


def _combine(sL, sR, sI, k, GL, GR, GI, n_node, floor: float, params: GrowerParams,
             blocks=None):
    """U = GL rL + GR rR - GI rI from the validation sums (4, q) over L, R, I of g, h, the
    rows with a non-zero hessian and the rows drawn; (U, usable, jackknife).

    A ratio is evidence only where its drawn rows carry curvature, the post-hoc scorer's rule
    (:func:`unbiased_criteria.gains.has_curvature`): their hessian sum, scaled to the node's
    rows of D (``n_node``, ``(nL, nR, nI)``: the rows behind ``GL``, ``GR``, ``GI``), must
    reach ``floor`` (``min_hessian`` times the typical weight, the geometric mean, of the
    rows drawn from). Below it the ratio is of the order of ``1 / sum(h')``, unbounded
    (rows a classifier is confidently wrong about have hessians near 0): the candidate is
    unusable and U is 0.

    ``blocks``: the same sums per block, ``(bL, bR, bI)`` each (4, q, B); the jackknife
    replicate ``b`` (q, B) leaves block ``b`` out of every ratio, and is 0 where a ratio
    loses its curvature so (as :func:`unbiased_criteria.gains.unbiased_gain` does), and for
    unusable candidates.
    """
    q = sL.shape[1]
    nL, nR, nI = (np.asarray(n, dtype=np.float64) for n in n_node)

    def ratio(s, n):
        ok = has_curvature(s[1], s[3], s[2], n, floor)
        return np.divide(s[0], s[1] + params.lam, out=np.zeros(s[0].shape), where=ok), ok

    (rL, okL), (rR, okR), (rI, okI) = ratio(sL, nL), ratio(sR, nR), ratio(sI, nI)
    usable = (k >= max(params.min_k, 1)) & okL & okR & okI
    U = np.where(usable, GL * rL + GR * rR - GI * rI, 0.0)
    if blocks is None:
        return U, usable, None
    # the other blocks' sums, not a total minus a block (cancellation: gains.leave_one_out)
    (oL, okL), (oR, okR), (oI, okI) = (
        ratio(leave_one_out(b), n[..., None] if n.ndim else n)
        for b, n in zip(blocks, (nL, nR, nI)))
    ok = usable[:, None] & okL & okR & okI
    jack = GL[:, None] * oL + GR[:, None] * oR - GI * oI
    return U, usable, np.where(ok, jack, 0.0).reshape(q, -1)


def _first_k(left: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q, m) masks of the first ``k`` rows (in order) that go left and that go right."""
    q, m = left.shape
    small_left = np.count_nonzero(left, axis=1) * 2 <= m  # the smaller side is taken whole
    last = np.full(q, -1)  # position of the k-th row of the larger side
    for j in np.flatnonzero(k > 0):
        last[j] = np.flatnonzero(left[j] != small_left[j])[k[j] - 1]
    pos = np.arange(m)[None, :]
    takeL = left & (pos <= np.where(small_left, m - 1, last)[:, None])
    takeR = ~left & (pos <= np.where(small_left, last, m - 1)[:, None])
    return takeL, takeR


def _first_k_sums(left: np.ndarray, k: np.ndarray, vals: np.ndarray,
                  nL: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sums (v, q) of ``vals`` (v, m) over the first ``k`` rows (in order) that go left, and right.

    The smaller side (``k`` rows) is taken whole. The larger side's first ``k`` rows are the
    rows up to its k-th, at position ``t``, except the smaller side's rows before ``t``. With
    the smaller side's positions ``pos_0 < pos_1 < ...``, ``pos_r - r`` larger-side rows come
    before ``pos_r``, so ``r* = #{r: pos_r - r <= k - 1}`` of them come before ``t``, and
    ``t = k - 1 + r*``. Both sides are summed over their own rows, gathered: the larger
    side's sum as a prefix sum up to ``t`` minus the smaller side's rows before it lost a
    tiny hessian sum beside large ones to cancellation (0, or a negative sum of rounding
    noise, made the ratio unbounded). One ``flatnonzero`` over every candidate; the rest
    costs about twice the smaller sides' rows.
    """
    q, m = left.shape
    small_left = (np.count_nonzero(left, axis=1) if nL is None else nL) * 2 <= m
    # flat positions (candidate * m + row) of each candidate's smaller side, k[j] of them
    flat = np.flatnonzero(left == small_left[:, None])  # 1-D: far faster than 2-D nonzero
    start = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(k, out=start[1:])
    first = np.repeat(start[:-1], k)  # where each entry's candidate starts
    # candidate * m + (larger-side rows before the entry): sorted, candidates apart
    key = flat - np.arange(flat.size)
    key += first
    r_star = np.searchsorted(key, np.arange(q) * m + k - 1, side="right") - start[:-1]
    pos = flat - np.repeat(np.arange(q, dtype=np.int64) * m, k)
    # the larger side's first k rows: positions 0..t of each candidate (k + r* of them)
    # without the smaller side's r* rows before t
    span = k + r_star
    span_start = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(span, out=span_start[1:])
    at = np.arange(span_start[-1]) - np.repeat(span_start[:-1], span)
    rank = np.arange(flat.size) - first  # each smaller-side entry's rank in its candidate
    before_t = rank < np.repeat(r_star, k)
    keep = np.ones(at.size, dtype=bool)
    keep[np.repeat(span_start[:-1], k)[before_t] + pos[before_t]] = False
    large_pos = at[keep]  # k[j] per candidate, candidates in order (as ``pos``)
    v = vals.shape[0]

    def segment_sums(positions):  # sums over each candidate's k[j] gathered rows
        gathered = np.zeros((v, positions.size + 1))  # a zero column ends the last segment
        vals.take(positions, axis=1, out=gathered[:, :-1])
        # reduceat gives a lone element for an empty segment (k = 0): zeroed
        return np.where(k > 0, np.add.reduceat(gathered, start[:-1], axis=1), 0.0)

    small, large = segment_sums(pos), segment_sums(large_pos)
    return np.where(small_left, small, large), np.where(small_left, large, small)


def _unbiased(codes, rows, feats, masks, g, h, GL, GR, GI, n_node, floor: float,
              rng, params: GrowerParams, all_rows: bool, blocks=None, n_blocks: int = 0):
    """U of each candidate on the validation ``rows`` of a node; (U, k, usable, jackknife).

    One shuffle of the node's rows serves every candidate: I's draw is the first k rows in
    that order, L's (R's) the first k rows that go left (right). Each draw alone is uniform
    without replacement, which is all E[U] = 0 needs (as in :mod:`unbiased_criteria.gains`).
    ``n_node`` and ``floor``: the curvature floor (:func:`_combine`). ``blocks`` (block of
    every training row) adds the jackknife replicates.
    """
    q = len(feats)
    m = rows.size
    if m == 0 or q == 0:
        jack = np.zeros((q, n_blocks)) if blocks is not None else None
        return np.zeros(q), np.zeros(q, dtype=np.int64), np.zeros(q, dtype=bool), jack
    order = rows.take(rng.permutation(m))
    left = _goes_left(codes, order, feats, masks)  # (q, m)
    gv = g.take(order).astype(np.float64, copy=False)
    hv = h.take(order).astype(np.float64, copy=False)
    nL = np.count_nonzero(left, axis=1)
    k = np.minimum(nL, m - nL)
    kI = np.full(q, m) if all_rows else k
    if not all_rows and blocks is None and hv.all():
        # every row has a non-zero hessian: the last two sums are the row count, k
        vals = np.stack([gv, hv])
        cum = np.zeros((2, m + 1))  # I's sums are prefix sums (from 0: no cancellation)
        np.cumsum(vals, axis=1, out=cum[:, 1:])
        sums = np.empty((3, 4, q))  # L, R, I
        sums[0, :2], sums[1, :2] = _first_k_sums(left, k, vals, nL)
        sums[2, :2] = cum[:, k]
        sums[:, 2:] = k
        U, usable, _ = _combine(sums[0], sums[1], sums[2], k, GL, GR, GI, n_node, floor,
                                params)
        return U, k, usable, None
    # g, h, rows with a non-zero hessian, rows drawn
    vals = np.stack([gv, hv, (hv != 0).astype(np.float64), np.ones(m)])  # (4, m)
    cum = np.concatenate([np.zeros((4, 1)), np.cumsum(vals, axis=1)], axis=1)
    by_block = None
    if all_rows or blocks is not None:
        takeL, takeR = (left, ~left) if all_rows else _first_k(left, k)
        # an explicit cast keeps the product in BLAS (mixed float @ bool is a slow loop)
        fL, fR = takeL.astype(np.float64), takeR.astype(np.float64)
        sL, sR = vals @ fL.T, vals @ fR.T
        if blocks is not None:
            onehot = (blocks[order][:, None] == np.arange(n_blocks)).astype(np.float64)
            weighted = vals[:, :, None] * onehot[None]  # (4, m, B)
            bL = np.einsum("vmb,qm->vqb", weighted, fL)
            bR = np.einsum("vmb,qm->vqb", weighted, fR)
            cumb = np.concatenate([np.zeros((4, 1, n_blocks)), np.cumsum(weighted, axis=1)],
                                  axis=1)
            by_block = (bL, bR, cumb[:, kI, :])
    else:
        sL, sR = _first_k_sums(left, k, vals, nL)
    sI = cum[:, kI]
    U, usable, jack = _combine(sL, sR, sI, k, GL, GR, GI, n_node, floor, params, by_block)
    return U, k, usable, jack


def _unbiased_one(codes, rows, f: int, mask, g, h, GL, GR, GI, n_node, floor: float, rng,
                  params: GrowerParams, all_rows: bool):
    """:func:`_unbiased` of one candidate (the decision on D2'), with a few array calls:
    the same shuffle and the same first-k draws. With every row used (``all_rows``) the order
    is irrelevant and the rows are not shuffled."""
    m = rows.size
    if m == 0:
        return np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=bool), None
    order = rows if all_rows else rows.take(rng.permutation(m))
    left = _goes_left(codes, order, np.array([f]), mask[None, :])[0]
    on_left, on_right = np.flatnonzero(left), np.flatnonzero(~left)
    k = min(on_left.size, on_right.size)
    if not all_rows:
        on_left, on_right = on_left[:k], on_right[:k]
    gv, hv = g.take(order), h.take(order)
    head = slice(None) if all_rows else slice(0, k)

    def sums(gs, hs):
        return [gs.sum(dtype=np.float64), hs.sum(dtype=np.float64), np.count_nonzero(hs),
                hs.size]

    sL = np.array(sums(gv.take(on_left), hv.take(on_left)), dtype=np.float64)[:, None]
    sR = np.array(sums(gv.take(on_right), hv.take(on_right)), dtype=np.float64)[:, None]
    sI = np.array(sums(gv[head], hv[head]), dtype=np.float64)[:, None]
    kk = np.array([k])
    U, usable, _ = _combine(sL, sR, sI, kk, GL, GR, GI, n_node, floor, params)
    return U, kk, usable, None


def _block_histogram(codes, rows, g, h, width, blocks, n_blocks) -> np.ndarray:
    """(3, B, p, width): :func:`_histogram` of ``rows`` per jackknife block (B = 1 without
    blocks)."""
    if blocks is None:
        return _histogram(codes, rows, g, h, width).reshape(3, 1, codes.shape[0], width)
    p = codes.shape[0]
    sub = codes[:, rows].astype(np.intp) + (blocks[rows] * width)[None, :]
    gr, hr = g[rows], h[rows]
    size = n_blocks * width
    out = np.empty((3, p, n_blocks, width))
    for f in range(p):
        out[0, f] = np.bincount(sub[f], gr, minlength=size).reshape(n_blocks, width)
        out[1, f] = np.bincount(sub[f], hr, minlength=size).reshape(n_blocks, width)
        out[2, f] = np.bincount(sub[f], minlength=size).reshape(n_blocks, width)
    return out.transpose(0, 2, 1, 3)


def _unbiased_from_hist(hist_b, feats, masks, GL, GR, GI, n_node, floor: float,
                        params: GrowerParams, jackknife: bool):
    """U of each candidate from the block histograms (3, B, p, width) of a node's validation
    rows, every row used (equal hessians: no ratio bias to cancel); (U, k, usable, jack).

    The histograms' third sum counts the rows with a non-zero hessian; with equal hessians
    those are every row drawn, or none (then no ratio is usable whatever the rows drawn), so
    it serves as the rows drawn too (:func:`_combine`).
    """
    hb = hist_b[:, :, feats, :]  # (3, B, q, width)
    bL = (hb * masks[None, None]).sum(axis=3).transpose(0, 2, 1)  # (3, q, B)
    bI = hb[:, :, :1, :].sum(axis=3).transpose(0, 2, 1)
    # g, h, rows with a non-zero hessian, rows drawn: (4, q, B)
    bL = np.concatenate([bL, bL[2:3]])
    bI = np.broadcast_to(np.concatenate([bI, bI[2:3]]), bL.shape)
    bR = bI - bL  # equal hessians: no small sum beside large ones to lose
    sL, sR, sI = bL.sum(axis=2), bR.sum(axis=2), bI.sum(axis=2)
    nL = sL[2]
    k = np.rint(np.minimum(nL, sI[2] - nL)).astype(np.int64)
    U, usable, jack = _combine(sL, sR, sI, k, GL, GR, GI, n_node, floor, params,
                               (bL, bR, bI) if jackknife else None)
    return U, k, usable, jack


def grow_tree(codes: np.ndarray, g: np.ndarray, h: np.ndarray, sets: RowSets,
              binner: BinMapper, params: GrowerParams, rng: np.random.Generator,
              blocks: np.ndarray | None = None, n_blocks: int = 0,
              weight: np.ndarray | None = None) -> GrownTree:
    """Grow one tree on the binned training rows.

    Parameters
    ----------
    codes : uint8 or uint16 array (n_features, n)
        The training rows' bin codes, feature-major (:func:`feature_major`).
    g, h : float arrays (n,)
        Weighted gradients and hessians of every training row.
    sets : RowSets
        D, D1', D2' (D1' and D2' unused with ``criterion="biased"``).
    binner : BinMapper
    params : GrowerParams
    rng : numpy.random.Generator
        The k-draws' only source of randomness.
    blocks, n_blocks : int array (n,), int
        Optional jackknife block (0..n_blocks-1) of every training row: each candidate's U
        on D1' is also computed with each block's rows left out (``GrownTree.jackknife``).
    weight : float array (n,), optional
        The rows' weights (already in ``g`` and ``h``; None: unweighted): the unit of the
        curvature floor (``params.min_hessian``) is the typical weight of D1' for the scores on
        D1', of D2' for the decisions on D2' (:func:`unbiased_criteria.gains.weight_scale`),
        so that scaling every weight changes no candidate's usability.
    """
    p, n = codes.shape
    width = binner.width
    unbiased = params.criterion == "unbiased"
    shared = sets.select is sets.decide
    all_rows = unbiased and h.size > 0 and bool(np.all(h == h[0]))
    g64 = g.astype(np.float64)
    h64 = h.astype(np.float64)

    # per node: rows of D, D1', D2'; depth; histogram of D while a leaf
    rows_of: list[tuple] = []
    depth: list[int] = []
    hist_of: dict[int, np.ndarray] = {}
    stats: list[tuple[float, float, float]] = []  # G, H, n on D
    split_of: dict[int, tuple] = {}  # node -> (priority, feature, bin, left mask, B)
    left_of: dict[int, int] = {}
    cand_parts: list[dict] = []

    hist1_of: dict[int, np.ndarray] = {}  # block histograms of D1' (equal hessians only)
    # with equal hessians the count histogram stands for "rows with a non-zero hessian"
    h_nonzero = 1.0 if (h.size and h[0] != 0) else 0.0
    nz_scale = np.array([1.0, 1.0, h_nonzero])[:, None, None, None]
    jackknife = blocks is not None and n_blocks >= 2
    if not jackknife:
        blocks, n_blocks = None, 0
    jack_parts: list[np.ndarray] = []

    def add_node(rows, d, hist, hist1=None):
        node = len(rows_of)
        rows_of.append(rows)
        depth.append(d)
        hist_of[node] = hist
        if hist1 is not None:
            hist1_of[node] = hist1 * nz_scale
        G, H, _ = hist.reshape(3, p, width)[:, 0, :].sum(axis=1)  # any feature's bins
        stats.append((float(G), float(H), float(rows[0].size)))
        return node

    all_features = np.ones(p, dtype=bool)
    allowed_of: dict[int, np.ndarray] = {}  # criterion="biased": features a node may try

    def search(node):
        G, H, nD = stats[node]
        if params.max_depth > 0 and depth[node] >= params.max_depth:
            return
        if nD < 2 * params.min_child_samples or H < 2 * params.min_child_weight:
            return
        best = _best_thresholds(hist_of[node], p, width, binner.n_bins, G, H, nD, params)
        if binner.categorical.any():
            _best_categorical(best, hist_of[node], p, width, binner, G, H, nD, params)
        if not unbiased:
            # LightGBM searches a node only on the features that had a valid split at its
            # parent (FeatureHistogram::is_splittable); with L2 > 0 or row bounds a feature
            # can lose every valid split near the root and is then never tried below it
            best.gain[~allowed_of.get(node, all_features)] = -np.inf
            allowed_of[node] = np.isfinite(best.gain)
        feats = np.flatnonzero(np.isfinite(best.gain))
        if feats.size == 0:
            return
        if not unbiased:
            f = int(feats[np.argmax(best.gain[feats])])
            split_of[node] = (best.gain[f], f, int(best.bin[f]), best.mask[f], best.gain[f])
            return
        GL = best.GL[feats]
        GR = G - GL
        nL = best.nL[feats]
        n_node = (nL, nD - nL, nD)  # the rows of D behind GL, GR, G
        if all_rows:
            U1, k1, ok1, jack = _unbiased_from_hist(hist1_of[node], feats, best.mask[feats],
                                                    GL, GR, G, n_node, floor_select, params,
                                                    jackknife)
        else:
            U1, k1, ok1, jack = _unbiased(codes, rows_of[node][1], feats, best.mask[feats],
                                          g, h, GL, GR, G, n_node, floor_select, rng, params,
                                          all_rows, blocks, n_blocks)
        if jackknife:
            jack_parts.append(jack)
        chosen = np.zeros(feats.size, dtype=bool)
        decision = np.full(feats.size, np.nan)
        if ok1.any():
            j = int(np.flatnonzero(ok1)[np.argmax(U1[ok1])])
            chosen[j] = True
            f = int(feats[j])
            U2, _, ok2, _ = _unbiased_one(codes, rows_of[node][2], f, best.mask[f], g, h,
                                          GL[j:j + 1], GR[j:j + 1], G,
                                          (nL[j:j + 1], nD - nL[j:j + 1], nD), floor_decide,
                                          rng, params, all_rows)
            decision[j] = U2[0] if ok2[0] else np.nan
            if ok2[0] and U2[0] > params.stop_threshold:
                split_of[node] = (U1[j], f, int(best.bin[f]), best.mask[f], best.gain[f])
        cand_parts.append(dict(
            node=np.full(feats.size, node), feature=feats, bin=best.bin[feats],
            biased_gain=best.gain[feats], unbiased_gain=U1, k=k1, usable=ok1, chosen=chosen,
            decision_gain=decision, n_train=np.full(feats.size, int(nD)),
            n_valid=np.full(feats.size, rows_of[node][1].size),
        ))

    empty = np.zeros(0, dtype=np.int64)
    select = empty if sets.select is None else sets.select
    root_rows = (sets.build, select, select if shared or sets.decide is None else sets.decide)
    # the curvature floor in the units of the weights of the rows each ratio draws from
    floor_select, floor_decide = (
        params.min_hessian * weight_scale(None if weight is None
                                          else np.asarray(weight, dtype=np.float64)[rows])
        for rows in root_rows[1:])
    add_node(root_rows, 0, _histogram(codes, sets.build, g64, h64, width),
             _block_histogram(codes, select, g64, h64, width, blocks, n_blocks)
             if all_rows else None)
    search(0)
    n_leaves = 1
    made: dict[int, tuple] = {}  # node -> (feature, bin, left mask, B)
    while n_leaves < params.num_leaves and split_of:
        node = max(split_of, key=lambda v: split_of[v][0])
        _, f, b, mask, B = split_of.pop(node)
        made[node] = (f, b, mask, B)
        parent_hist = hist_of.pop(node)
        parts = []
        for i, rows in enumerate(rows_of[node]):
            if i == 2 and shared:
                parts.append(parts[1])
                continue
            go = mask.take(codes[f].take(rows))
            parts.append((rows[go], rows[~go]))
        dl_rows, dr_rows = parts[0]
        small_left = dl_rows.size <= dr_rows.size
        small = _histogram(codes, dl_rows if small_left else dr_rows, g64, h64, width)
        large = parent_hist - small
        hists = (small, large) if small_left else (large, small)
        hists1 = (None, None)
        if all_rows:
            parent1 = hist1_of.pop(node) / np.maximum(nz_scale, 1.0)
            v_left, v_right = parts[1]
            small1_left = v_left.size <= v_right.size
            small1 = _block_histogram(codes, v_left if small1_left else v_right, g64, h64,
                                      width, blocks, n_blocks)
            hists1 = (small1, parent1 - small1) if small1_left else (parent1 - small1, small1)
        children = [add_node(tuple(part[side] for part in parts), depth[node] + 1, hists[side],
                             hists1[side]) for side in (0, 1)]
        left_of[node] = children[0]
        if not unbiased:
            allowed_of[children[0]] = allowed_of[children[1]] = allowed_of.pop(node)
        rows_of[node] = None  # the children hold the rows now
        n_leaves += 1
        for c in children:
            search(c)
    grown = _assemble(n, rows_of, left_of, made, g64, h64, binner, params, cand_parts)
    if jackknife:
        jack = np.concatenate(jack_parts) if jack_parts else np.zeros((0, n_blocks))
        grown = replace(grown, jackknife=jack)
    return grown


def _assemble(n, rows_of, left_of, made, g, h, binner, params, cand_parts) -> GrownTree:
    """The IR tree (children adjacent, numbered as created) and every row's leaf."""
    N = len(rows_of)
    left = np.full(N, -1, dtype=np.int32)
    right = np.full(N, -1, dtype=np.int32)
    feature = np.full(N, -1, dtype=np.int32)
    threshold = np.full(N, np.nan)
    default_left = np.zeros(N, dtype=bool)
    gain = np.full(N, np.nan)
    categorical = np.zeros(N, dtype=bool)
    cat_sets = {}
    for node, (f, b, mask, B) in made.items():
        left[node], right[node] = left_of[node], left_of[node] + 1
        feature[node], gain[node] = f, B
        if b >= 0:
            threshold[node], default_left[node] = binner.threshold(f, b), mask[-1]
        else:  # the categories in the set go left; NaN and every other value go right
            categorical[node] = True
            cat_sets[node] = binner.categories[f][mask[: binner.n_bins[f]]]
    row_leaf = np.full(n, -1, dtype=np.int32)
    for node, rows in enumerate(rows_of):
        if rows is not None:  # a leaf
            for part in rows:
                row_leaf[part] = node
    if (row_leaf < 0).any():
        raise ValueError("sets must cover every training row (D, D1' and D2' together)")
    shape = make_tree(left, right, feature, threshold, np.zeros(N), categorical=categorical,
                      cat_sets=cat_sets, rules=RULES)
    G, H = shape.node_sums(row_leaf, g), shape.node_sums(row_leaf, h)
    count = np.rint(shape.node_sums(row_leaf)).astype(np.int64)
    tree = make_tree(
        left, right, feature, threshold, leaf_weight(G, H, params.score),
        default_left=default_left, missing=np.full(N, MISSING_NAN, dtype=np.int8),
        categorical=categorical, cat_sets=cat_sets,
        host_gain=gain, host_hessian=H, host_count=count, rules=RULES,
    )
    keys = ("node", "feature", "bin", "biased_gain", "unbiased_gain", "k", "usable", "chosen",
            "decision_gain", "n_train", "n_valid")
    candidates = {key: (np.concatenate([c[key] for c in cand_parts]) if cand_parts
                        else np.zeros(0)) for key in keys}
    candidates["split"] = (candidates["chosen"].astype(bool)
                           & np.isin(candidates["node"], list(made)))
    return GrownTree(tree=tree, row_leaf=row_leaf, candidates=candidates,
                     sums=NodeSums(G=G, H=H, n=count))
