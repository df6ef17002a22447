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

__all__ = ["leaf_values", "prune_tree"]


def leaf_values(tree: Tree, sums: NodeSums, score: SplitScore) -> np.ndarray:
    """What the host would give every node as a leaf: ``shrinkage * w(G, H) + bias``.

    ``w`` is the host's leaf weight with its regularisation; a node below a split with extra
    L2 (LightGBM's cat_l2) is valued with it, as the host values that split's children.
    """
    parent = tree.parent
    extra = np.where(parent >= 0, tree.l2_extra[np.maximum(parent, 0)], 0.0)
    return tree.shrinkage * leaf_weight(sums.G, sums.H, score, extra) + tree.bias


def prune_tree(
    tree: Tree,
    scores: TreeScores,
    score: SplitScore,
    threshold: float = 0.0,
    refit_leaves: bool = False,
) -> tuple[Tree, np.ndarray] | None:
    """Collapse the splits of ``tree`` with ``U <= threshold``; None when nothing changes.

    New leaves get :func:`leaf_values` from ``scores.sums``; with ``refit_leaves`` every leaf
    does. Returns the pruned tree and the map from old node ids to the new tree's leaves.
    """
    collapse = ~tree.is_leaf & (scores.unbiased <= threshold)
    if not collapse.any() and not refit_leaves:
        return None
    values = leaf_values(tree, scores.sums, score)
    if not refit_leaves:
        values = np.where(tree.is_leaf, tree.value, values)
    return collapse_nodes(tree, collapse, values)
