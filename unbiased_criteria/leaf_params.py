"""Inferring a model's learning rate and L2 penalty from its own leaves.

Without L1 or a clipped weight, every leaf holds ``value = -shrinkage * G / (H + l2)`` with
``G``, ``H`` its gradient and hessian sums over the rows that built it, which the replay
rebuilds exactly from the training rows. That is linear in the two unknowns::

    value * l2 + shrinkage * G = -value * H

and every leaf is one equation, so a few trees overdetermine them: least squares gives both,
and the residual says whether the model follows the formula at all (it does not with an L1
or ``max_delta_step`` the model does not declare, row subsampling, or leaves the host
renewed). A declared L1 soft-thresholds ``G`` and a declared ``max_delta_step`` clips the
weight (XGBoost's Poisson objective clips at 0.7 by default): both are taken into the fit.
XGBoost does not store eta and lambda in its model files; a Booster loaded from one reports
the defaults.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from .gains import SplitScore, leaf_weight, node_sums, soft_threshold
from .model import Model
from .objectives import Objective
from .replay import RowSet, TreeStep, replay

__all__ = ["LeafParams", "fit_leaf_params", "infer_leaf_params", "with_leaf_params"]

log = logging.getLogger(__name__)

# leaves used for the fit: trees of the first iterations until this many leaves
_MIN_LEAVES = 40
_MAX_ITERATIONS = 10
# largest leaf misfit allowed, relative to the largest |value| of the fitted leaves: float32
# leaf values and gradients leave ~1e-6; L1, clipping or subsampling leave far more
_TOLERANCE = 1e-4


class LeafParamsError(ValueError):
    """The learning rate and L2 penalty cannot be identified from the model's leaves."""


@dataclass(frozen=True)
class LeafParams:
    """Fitted ``shrinkage`` and ``l2``, the number of leaves used, the largest misfit."""

    shrinkage: float
    l2: float
    n_leaves: int
    misfit: float


def fit_leaf_params(value, G, H, tolerance: float = _TOLERANCE, *, l1: float = 0.0,
                    max_delta_step: float = 0.0) -> LeafParams:
    """Least-squares ``shrinkage`` and ``l2`` with ``value = -shrinkage * T(G) / (H + l2)``.

    ``T`` soft-thresholds ``G`` by the known ``l1``. With a known ``max_delta_step`` the
    unshrunk weight is clipped to it, so the leaves of the largest ``|value|`` may be clipped:
    they are left out of the fit, and every leaf is held to the clipped formula after it.

    Parameters
    ----------
    value : array
        Leaf values without any bias the host folded in.
    G, H : arrays
        The leaves' gradient and hessian sums over the rows that built them.
    tolerance : float
        Largest misfit ``|fitted - value|`` allowed, relative to ``max |value|``.
    l1, max_delta_step : float
        The model's L1 penalty and weight clip, where known (0: none).

    Raises
    ------
    LeafParamsError
        Too few informative leaves, hessian sums that do not vary (``l2`` and ``shrinkage``
        are then confounded), estimates out of range, or a misfit above ``tolerance``.
    """
    value, G, H = (np.asarray(a, dtype=np.float64).ravel() for a in (value, G, H))
    ok = np.isfinite(value) & np.isfinite(G) & np.isfinite(H) & (G != 0) & (H > 0)
    value, G, H = value[ok], G[ok], H[ok]
    TG = soft_threshold(G, l1)
    # leaves whose weight may be clipped: all of the largest |value| (float32 ties)
    clipped = np.zeros(value.size, dtype=bool)
    if max_delta_step > 0 and value.size:
        clipped = np.abs(value) >= np.max(np.abs(value)) * (1 - 1e-6)
    used = (TG != 0) & ~clipped
    if np.count_nonzero(used) < 3:
        raise LeafParamsError(f"only {np.count_nonzero(used)} leaves with rows to fit them on")
    # each equation divided by |T(G)| so that every leaf weighs alike
    v, tg, h = value[used], TG[used], H[used]
    scale = np.abs(tg)
    design = np.column_stack([v / scale, tg / scale])
    target = -v * h / scale
    norms = np.linalg.norm(design, axis=0)
    if np.any(norms == 0):
        raise LeafParamsError("every leaf value is 0")
    singular = np.linalg.svd(design / norms, compute_uv=False)
    if singular[-1] < 1e-6 * singular[0]:
        raise LeafParamsError(
            "the leaves' hessian sums barely vary, so the L2 penalty and the learning rate "
            "cannot be told apart"
        )
    (l2, shrinkage), *_ = np.linalg.lstsq(design, target, rcond=None)
    score = SplitScore(l1=l1, l2=max(float(l2), 0.0), max_delta_step=max_delta_step)
    fitted = shrinkage * leaf_weight(G, H, score)
    misfit = float(np.max(np.abs(fitted - value)) / np.max(np.abs(value)))
    if not (shrinkage > 0 and l2 > -1e-6 * np.max(H)) or misfit > tolerance:
        known = "".join(f", {name} {v:g}" for name, v in
                        (("alpha", l1), ("max_delta_step", max_delta_step)) if v)
        raise LeafParamsError(
            f"the leaves do not follow value = -eta * G / (H + lambda) (best fit eta "
            f"{shrinkage:.6g}, lambda {l2:.6g}{known}, largest misfit {misfit:.2g} of the "
            "largest leaf value); the model was likely trained with L1 (alpha), "
            "max_delta_step, monotone constraints or row subsampling"
        )
    return LeafParams(float(shrinkage), float(max(l2, 0.0)), int(v.size), misfit)


def infer_leaf_params(model: Model, objective: Objective, train: RowSet) -> LeafParams:
    """Fit :func:`fit_leaf_params` on the leaves of ``model``'s first iterations.

    Their ``G``, ``H`` are replayed on the training rows, which are the rows that built them;
    iterations are added until at least 40 leaves (or 10 iterations). Leaves below a split
    with extra L2 (``Tree.l2_extra``) are left out. All trees must share one shrinkage.
    """
    forest = model.forest
    if len({t.shrinkage for t in forest.trees}) > 1:
        raise LeafParamsError("the trees have different learning rates")
    iterations = np.unique(forest.tree_iteration)
    leaves = np.cumsum([sum(forest.trees[t].n_leaves
                            for t in np.flatnonzero(forest.tree_iteration == it))
                        for it in iterations[:_MAX_ITERATIONS]])
    last = iterations[min(int(np.searchsorted(leaves, _MIN_LEAVES)), leaves.size - 1)]
    n_trees = int(np.flatnonzero(forest.tree_iteration <= last).max()) + 1
    head = replace(forest, trees=forest.trees[:n_trees],
                   tree_class=forest.tree_class[:n_trees],
                   tree_iteration=forest.tree_iteration[:n_trees])
    parts: list[tuple[np.ndarray, ...]] = []

    def visit(step: TreeStep):
        tree = step.tree
        sums = node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        parent = tree.parent
        extra = np.where(parent >= 0, tree.l2_extra[np.maximum(parent, 0)], 0.0)
        leaf = tree.is_leaf & (extra == 0)
        parts.append((tree.value[leaf] - tree.bias, sums.G[leaf], sums.H[leaf]))
        return None

    replay(replace(model, forest=head), objective, train=train, visit=visit)
    value, G, H = (np.concatenate(p) for p in zip(*parts))
    return fit_leaf_params(value, G, H, l1=model.split_score.l1,
                           max_delta_step=model.split_score.max_delta_step)


def with_leaf_params(model: Model, params: LeafParams) -> Model:
    """``model`` with its trees' shrinkage and its ``split_score.l2`` set to ``params``.

    Internal nodes' values (what the host would give them as leaves) are rescaled with the
    shrinkage; leaves keep the host's values.
    """
    trees = []
    for tree in model.forest.trees:
        factor = params.shrinkage / tree.shrinkage if tree.shrinkage else 1.0
        value = np.where(tree.is_leaf, tree.value, (tree.value - tree.bias) * factor + tree.bias)
        trees.append(replace(tree, shrinkage=params.shrinkage, value=value))
    return replace(
        model,
        forest=model.forest.with_trees(trees),
        split_score=replace(model.split_score, l2=params.l2),
        leaf_params_unknown=False,
    )
