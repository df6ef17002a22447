"""The pruning rule: collapse every split whose unbiased gain is <= a threshold, top-down.

A rule marks nodes; :func:`unbiased_criteria.trees.collapse_nodes` rebuilds the tree. Marking
every internal node with ``U <= threshold`` and collapsing is exactly the top-down stop rule:
the subtree below a collapsed node goes whatever its own scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .gains import NodeSums, SplitScore, leaf_weight
from .importance import TreeScores
from .trees import MISSING_NAN, Tree, collapse_nodes

__all__ = ["HistogramBins", "leaf_values", "monotone_bounds", "prune_tree", "smoothed_weights",
           "smoothing_counts"]


@dataclass(frozen=True)
class HistogramBins:
    """The host's histogram bin of every training row, for the row counts it smooths with.

    LightGBM's ``path_smooth`` does not smooth a child with its row count: while it splits a
    node it estimates the count of one child from the hessians, bin by bin of the split
    feature's histogram, and gives the other child the rest (:func:`smoothing_counts`). The
    adapter bins the training rows as the host did; the core applies the rule.

    Attributes
    ----------
    codes : int array of shape (n_rows, n_features)
        Each training row's bin of each feature, as the host's Dataset holds it.
    right_when_forward : bool array of shape (n_features,)
        Features on which a numeric split with NaN as missing whose missing values go right
        still counts its right child (LightGBM: the most frequent bin is the first, or at
        most two bins).
    hessian_epsilon : float
        What the host adds to a node's hessian sum before dividing its row count by it.
    """

    codes: np.ndarray
    right_when_forward: np.ndarray
    hessian_epsilon: float = 0.0


#: (node, bin) cells summed by one dense bincount (8 bytes each); more: only those with rows
_DENSE_CELLS = 1 << 22


def smoothing_counts(tree: Tree, nodes: np.ndarray, h: np.ndarray, sums: NodeSums,
                     bins: HistogramBins) -> np.ndarray:
    """The row count every node of ``tree`` is smoothed with, estimated as the host does.

    For a split node ``p`` with ``n`` rows and hessian sum ``H``, ``f = n / (H + eps)``; the
    counted child (the left one of a categorical split or of a numeric split whose missing
    values go right, else the right one; the exceptions in :class:`HistogramBins`) gets the
    sum over the split feature's bins of ``round(H_bin * f)`` (``H_bin``: its rows' hessians
    in that bin), the other child ``n`` minus that. With equal hessians these are the rows'
    counts; with varying ones (weights, the log loss) they are not. The root keeps its row
    count. ``nodes`` are the training rows' leaves, ``h`` their (weighted) hessians for this
    tree, ``sums`` their node sums. One pass per depth level over the rows, no loop over
    nodes.
    """
    n_nodes = tree.n_nodes
    inner = tree.internal_nodes
    counted = np.full(n_nodes, -1, dtype=np.int64)
    feature = tree.feature[inner]
    nan_right = (tree.missing[inner] == MISSING_NAN) & bins.right_when_forward[feature]
    left_side = tree.categorical[inner] | ~(tree.default_left[inner] | nan_right)
    counted[inner] = np.where(left_side, tree.left[inner], tree.right[inner])
    is_counted = np.zeros(n_nodes, dtype=bool)
    is_counted[counted[inner]] = True
    parent, split_feature = tree.parent, tree.feature
    width = int(bins.codes.max()) + 1 if bins.codes.size else 1
    keys, weights = [], []
    rows = np.arange(nodes.shape[0])
    node = nodes.astype(np.intp)
    while rows.size:  # every row climbs one level per pass, from its leaf to the root
        up = parent[node]
        climbing = up >= 0
        rows, node, up = rows[climbing], node[climbing], up[climbing]
        take = is_counted[node]
        r, p = rows[take], up[take]
        keys.append(p.astype(np.int64) * width + bins.codes[r, split_feature[p]])
        weights.append(h[r])
        node = up
    count = np.asarray(sums.n, dtype=np.int64).copy()
    if not inner.size:
        return count
    keys_all, weights_all = np.concatenate(keys), np.concatenate(weights)
    if n_nodes * width <= _DENSE_CELLS:  # one bincount over every (node, bin) cell
        key = np.arange(n_nodes * width, dtype=np.int64)
        per_bin = np.bincount(keys_all, weights=weights_all, minlength=key.size)
    else:  # many nodes and bins: only the cells that hold rows (a sort)
        key, cell = np.unique(keys_all, return_inverse=True)
        per_bin = np.bincount(cell, weights=weights_all, minlength=key.size)
    owner = key // width  # the split node of each (node, bin) cell
    factor = sums.n[owner] / (sums.H[owner] + bins.hessian_epsilon)
    # the host rounds by truncating x + 0.5 towards zero (half up for x >= 0)
    estimate = np.bincount(owner, weights=np.trunc(per_bin * factor + 0.5), minlength=n_nodes)
    n_inner = sums.n[inner]
    mine = np.rint(estimate[inner]).astype(np.int64)
    other = np.where(left_side, tree.right[inner], tree.left[inner])
    count[counted[inner]] = mine
    count[other] = n_inner - mine
    return count


def leaf_values(tree: Tree, sums: NodeSums, score: SplitScore,
                counts: np.ndarray | Callable[[], np.ndarray] | None = None) -> np.ndarray:
    """What the host would give every node as a leaf: ``shrinkage * w(G, H) + bias``.

    ``w`` is the host's leaf weight with its regularisation; a node below a split with extra
    L2 (LightGBM's cat_l2) is valued with it, as the host values that split's children. With
    ``score.path_smooth`` (LightGBM) it is smoothed towards the parent's value, as
    :func:`smoothed_weights` says, with ``counts`` (the host's estimates,
    :func:`smoothing_counts`, or a callable giving them, called only here) where given, else
    each node's row count.
    """
    w = leaf_weight(sums.G, sums.H, score, tree.leaf_l2_extra)
    if score.path_smooth > 0:
        if callable(counts):
            counts = counts()
        if counts is None:
            counts = np.where(tree.host_count >= 0, tree.host_count, sums.n)
        w = smoothed_weights(tree, w, counts, score.path_smooth)
    return tree.shrinkage * w + tree.bias


def smoothed_weights(tree: Tree, w: np.ndarray, count: np.ndarray, smooth: float
                     ) -> np.ndarray:
    """LightGBM's ``path_smooth`` outputs: the root keeps ``w``; a node with ``n`` rows
    (``count``: LightGBM's own, held-out rows with zero hessian included, as it counts them)
    takes ``w r / (r + 1) + out(parent) / (r + 1)``, ``r = n / smooth``, with its parent's
    smoothed output, in LightGBM's order of operations. One step per depth level."""
    out = np.array(w, dtype=np.float64)
    depth, parent = tree.depth, tree.parent
    r = count.astype(np.float64) / smooth
    for d in range(1, int(depth.max()) + 1 if depth.size else 0):
        v = np.flatnonzero(depth == d)
        out[v] = out[v] * r[v] / (r[v] + 1) + out[parent[v]] / (r[v] + 1)
    return out


def monotone_bounds(tree: Tree, monotone: tuple[int, ...]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node, the interval ``[lower, upper]`` a value it takes as a leaf must lie in to keep
    the tree monotone, and whether it must stay as it is (``frozen``).

    A split ``S`` on a feature constrained to increase (decrease) sends smaller values of the
    feature left (both hosts). The hosts clamp every value below ``S`` so that each leaf on
    the side of smaller outputs is at most each leaf on the other side (a bound at the mean
    of the children's outputs). The gap between the two sides' leaves, ``[max of the lesser
    side, min of the greater side]``, then holds a separator ``t_S`` (its midpoint): every
    node under the lesser side takes ``upper <= t_S``, every node under the greater side
    ``lower >= t_S``. Values clipped to these intervals keep every leaf of the lesser side at
    most every leaf of the greater one, for every constrained split, whichever nodes are
    collapsed or refit: two rows that differ only in a constrained feature part at such a
    split (or share a leaf). Where the two sides overlap (LightGBM's ``intermediate`` and
    ``advanced`` methods compare only leaves whose regions touch), no separator exists: the
    nodes below ``S`` are frozen (neither collapsed nor refit). Passes over the ancestor
    matrix's entries, no loop over nodes.
    """
    n = tree.n_nodes
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    frozen = np.zeros(n, dtype=bool)
    code = np.zeros(max(int(tree.feature.max()) + 1, len(monotone)), dtype=np.int64)
    code[: len(monotone)] = np.sign(np.asarray(monotone, dtype=np.int64))
    inner = tree.internal_nodes
    sign = code[tree.feature[inner]] * ~tree.categorical[inner]
    split = inner[sign != 0]
    if not split.size:
        return lower, upper, frozen
    up = sign[sign != 0] > 0
    lesser = np.where(up, tree.left[split], tree.right[split])
    greater = np.where(up, tree.right[split], tree.left[split])
    A = tree.descendants  # CSR: row a holds a and its descendants
    # each node's highest and lowest leaf below it (fmax/fmin skip the internal nodes' NaN;
    # every row of A holds a leaf)
    leaf_value = np.where(tree.is_leaf, tree.value, np.nan)[A.indices]
    highest = np.fmax.reduceat(leaf_value, A.indptr[:-1])
    lowest = np.fmin.reduceat(leaf_value, A.indptr[:-1])
    gap_lo, gap_hi = highest[lesser], lowest[greater]
    apart = gap_lo <= gap_hi
    t = (gap_lo + gap_hi) / 2

    which, node = A.row_pairs(lesser[apart])  # every node under each lesser child
    np.minimum.at(upper, node, t[apart][which])
    which, node = A.row_pairs(greater[apart])
    np.maximum.at(lower, node, t[apart][which])
    frozen[A.row_pairs(np.concatenate([lesser[~apart], greater[~apart]]))[1]] = True
    return lower, upper, frozen


def prune_tree(
    tree: Tree,
    scores: TreeScores,
    score: SplitScore,
    threshold: float = 0.0,
    refit_leaves: bool = False,
    counts: np.ndarray | Callable[[], np.ndarray] | None = None,
) -> tuple[Tree, np.ndarray] | None:
    """Collapse the splits of ``tree`` with ``U <= threshold``; None when nothing changes.

    New leaves get :func:`leaf_values` from ``scores.sums``; with ``refit_leaves`` every leaf
    does. With monotone constraints (``score.monotone``) those values are clipped to
    :func:`monotone_bounds` and frozen nodes keep their subtree and values, so the pruned
    tree keeps the constraints the host kept. A tree whose learning rate is unknown (a NaN
    ``shrinkage``) is left as it is. Returns the pruned tree and the map from old node ids to
    the new tree's leaves. ``counts``: the row counts path smoothing uses
    (:func:`smoothing_counts`), passed to :func:`leaf_values`; a callable giving them is
    called only when a leaf gets a new value (they cost passes over the training rows).
    """
    if not np.isfinite(tree.shrinkage):  # the host's learning rate of this tree is unknown:
        return None  # no value for a new leaf, so the tree stays as it is
    collapse = ~tree.is_leaf & (scores.unbiased <= threshold)
    bounds = monotone_bounds(tree, score.monotone) if any(score.monotone) else None
    if bounds is not None:
        collapse &= ~bounds[2]
    if not collapse.any() and not refit_leaves:
        return None
    values = leaf_values(tree, scores.sums, score, counts)
    if bounds is not None:
        values = np.where(bounds[2], tree.value, np.clip(values, bounds[0], bounds[1]))
    if not refit_leaves:
        values = np.where(tree.is_leaf, tree.value, values)
    return collapse_nodes(tree, collapse, values)
