"""The training rows' node sums a boosted model carries in its own trees (host-agnostic).

Without L1, a clipped weight, smoothing or monotone constraints, every leaf of a tree holds
``value = bias + shrinkage * (-G / (H + eps + l2))`` with ``G``, ``H`` the gradient and
hessian sums of the rows that built it (with bagging: the bag's), and the model stores each
leaf's ``H`` (LightGBM ``leaf_weight``, XGBoost ``sum_hessian``). So each leaf gives its
``G``, every internal node's ``G`` and ``H`` are its leaves' sums, and each split's gain
recomputed from them with the model's :class:`~unbiased_criteria.gains.SplitScore` must be
the gain the model stored (``host_gain``): that check is the oracle that the recovered sums
are the model's. Validation-only mode takes ``G`` from here instead of from held-out rows
(:func:`unbiased_criteria.importance.score_tree`), so ``U`` measures the split the model made,
not the gain of refitting it on held-out rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .gains import NodeSums, SplitScore, biased_gain
from .trees import Forest, Tree

__all__ = ["ModelSums", "leaf_implied_sums", "model_node_sums", "forest_node_sums"]

#: a split's recomputed gain must match the stored one to this share of the stored gain:
#: the stored gains are float32 (XGBoost) or printed to 6 digits (LightGBM), the recovered
#: sums carry float32 leaf values; a wrong formula (L1, clipping) misses by far more
_GAIN_RTOL = 1e-4
#: ... plus this share of the tree's largest gain, and of the split's largest node score
#: (its gain is their difference: float32 cancellation leaves that much absolute error)
_GAIN_FLOOR = 1e-5
_SCORE_FLOOR = 1e-6


@dataclass(frozen=True)
class ModelSums:
    """Per tree the recovered sums (None for a tree without splits), or None with the
    reason the model cannot give them."""

    sums: tuple[NodeSums | None, ...] | None
    reason: str = ""


def leaf_implied_sums(tree: Tree, bias: float, shrinkage: float,
                      score: SplitScore) -> NodeSums:
    """Every node's ``G`` and ``H`` (and row count where the leaves store one, else -1) that
    ``tree``'s leaf values and stored hessian sums imply when each leaf holds
    ``bias + shrinkage * (-G / (H + eps + l2 + its parent's l2_extra))`` (no L1, no clip;
    ``score.l2``, ``eps`` its ``hessian_epsilon``): a leaf's from its value, a node's as the
    sum of its leaves'. With ``shrinkage`` 1 the ``G`` are the unknown rate times the rows'."""
    leaf = tree.is_leaf
    H_leaf = tree.host_hessian[leaf]
    weight = (tree.value[leaf] - bias) / shrinkage  # unshrunk leaf output
    per_leaf = np.zeros((tree.n_nodes, 3))
    per_leaf[leaf, 0] = -weight * (H_leaf + score.hessian_epsilon + score.l2
                                   + tree.leaf_l2_extra[leaf])
    per_leaf[leaf, 1] = H_leaf
    per_leaf[leaf, 2] = np.maximum(tree.host_count[leaf], 0)
    total = tree.descendants.sums(per_leaf)
    counted = bool(np.all(tree.host_count[leaf] >= 0))
    return NodeSums(G=np.ascontiguousarray(total[:, 0]), H=np.ascontiguousarray(total[:, 1]),
                    n=np.rint(total[:, 2]).astype(np.int64) if counted
                    else np.full(tree.n_nodes, -1, dtype=np.int64))


def model_node_sums(tree: Tree, score: SplitScore) -> tuple[NodeSums | None, str]:
    """The training rows' ``G``, ``H`` (and row counts where stored, else -1) of every node
    of ``tree`` from its leaf values and stored hessian sums, checked against its stored
    split gains; ``(None, reason)`` where they cannot be recovered or fail the check.

    ``tree.bias`` must be resolved (:func:`unbiased_criteria.replay.resolve_bias`).
    """
    leaf = tree.is_leaf
    if leaf.all():
        return None, ""
    inner = tree.internal_nodes
    if score.l1 > 0 or score.path_smooth > 0 or any(score.monotone):
        return None, ("its leaf values are not -G/(H + l2) (L1, path_smooth or monotone "
                      "constraints)")
    H_leaf = tree.host_hessian[leaf]
    if not (np.all(np.isfinite(H_leaf)) and np.all(np.isfinite(tree.host_gain[inner]))
            and np.isfinite(tree.bias) and tree.shrinkage > 0):
        return None, ("its stored hessian sums, split gains or leaf values are not all "
                      "finite (or not stored), e.g. gains beyond float32, which LightGBM "
                      "stores as inf")
    weight = (tree.value[leaf] - tree.bias) / tree.shrinkage  # unshrunk leaf output
    if score.max_delta_step > 0 and np.any(
            np.abs(weight) >= score.max_delta_step * (1 - 1e-6)):
        return None, "max_delta_step clipped some of its leaf values"
    sums = leaf_implied_sums(tree, tree.bias, tree.shrinkage, score)
    B = biased_gain(tree, sums, score)[inner]
    host = tree.host_gain[inner]
    # the three node scores the gain is the difference of
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.abs(sums.G ** 2 / (sums.H + score.l2))
    parts = np.maximum.reduce([terms[inner], terms[tree.left[inner]], terms[tree.right[inner]]])
    allowed = (_GAIN_RTOL * np.abs(host) + _GAIN_FLOOR * np.abs(host).max()
               + _SCORE_FLOOR * np.nan_to_num(parts))
    off = ~(np.abs(B - host) <= allowed)
    if off.any():
        i = int(np.flatnonzero(off)[0])
        return None, (f"split gains recomputed from its leaves do not match its stored ones "
                      f"({int(off.sum())} of {inner.size} splits; node {int(inner[i])}: "
                      f"{B[i]:.6g} where it stores {host[i]:.6g})")
    return sums, ""


def forest_node_sums(forest: Forest, score: SplitScore) -> ModelSums:
    """:func:`model_node_sums` of every tree, or None for the whole model with the first
    failing tree's reason: one source of ``G`` for every split of a model (a model where
    some splits' sums cannot be checked is not trusted for the others)."""
    out: list[NodeSums | None] = []
    for t, tree in enumerate(forest.trees):
        sums, why = model_node_sums(tree, score)
        if why:
            return ModelSums(None, f"tree {t}: {why}")
        out.append(sums)
    return ModelSums(tuple(out))
