"""The pruning rule: collapse every split whose unbiased gain is <= a threshold, top-down.

A rule marks nodes; :func:`unbiased_criteria.trees.collapse_nodes` rebuilds the tree. Marking
every internal node with ``U <= threshold`` and collapsing is exactly the top-down stop rule:
the subtree below a collapsed node goes whatever its own scores.
"""

from __future__ import annotations

import numpy as np

from .gains import NodeSums, SplitScore, leaf_weight
from .importance import TreeScores
from .trees import Tree, collapse_nodes

__all__ = ["leaf_values", "monotone_bounds", "prune_tree", "smoothed_weights"]


def leaf_values(tree: Tree, sums: NodeSums, score: SplitScore) -> np.ndarray:
    """What the host would give every node as a leaf: ``shrinkage * w(G, H) + bias``.

    ``w`` is the host's leaf weight with its regularisation; a node below a split with extra
    L2 (LightGBM's cat_l2) is valued with it, as the host values that split's children. With
    ``score.path_smooth`` (LightGBM) it is smoothed towards the parent's value, as
    :func:`smoothed_weights` says.
    """
    parent = tree.parent
    extra = np.where(parent >= 0, tree.l2_extra[np.maximum(parent, 0)], 0.0)
    w = leaf_weight(sums.G, sums.H, score, extra)
    if score.path_smooth > 0:
        w = smoothed_weights(tree, w, np.where(tree.host_count >= 0, tree.host_count, sums.n),
                             score.path_smooth)
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
) -> tuple[Tree, np.ndarray] | None:
    """Collapse the splits of ``tree`` with ``U <= threshold``; None when nothing changes.

    New leaves get :func:`leaf_values` from ``scores.sums``; with ``refit_leaves`` every leaf
    does. With monotone constraints (``score.monotone``) those values are clipped to
    :func:`monotone_bounds` and frozen nodes keep their subtree and values, so the pruned
    tree keeps the constraints the host kept. A tree whose learning rate is unknown (a NaN
    ``shrinkage``) is left as it is. Returns the pruned tree and the map from old node ids to
    the new tree's leaves.
    """
    if not np.isfinite(tree.shrinkage):  # the host's learning rate of this tree is unknown:
        return None  # no value for a new leaf, so the tree stays as it is
    collapse = ~tree.is_leaf & (scores.unbiased <= threshold)
    bounds = monotone_bounds(tree, score.monotone) if any(score.monotone) else None
    if bounds is not None:
        collapse &= ~bounds[2]
    if not collapse.any() and not refit_leaves:
        return None
    values = leaf_values(tree, scores.sums, score)
    if bounds is not None:
        values = np.where(bounds[2], tree.value, np.clip(values, bounds[0], bounds[1]))
    if not refit_leaves:
        values = np.where(tree.is_leaf, tree.value, values)
    return collapse_nodes(tree, collapse, values)
