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
the defaults. :func:`tree_params` asks the same of one tree at a time, with its internal
nodes' unshrunk values too (HistGradientBoosting's trees, of which a fit continued with
``warm_start`` may hold several rates and penalties).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np

from .gains import SplitScore, leaf_weight, node_sums, soft_threshold
from .model import Model
from .objectives import Objective
from .replay import RowSet, TreeStep, replay

__all__ = ["LeafParams", "TreeParams", "fit_leaf_params", "infer_leaf_params", "tree_params",
           "with_leaf_params"]

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
    iterations with a split are added until at least 40 leaves (or 10 of them). Leaves
    below a split with extra L2 (``Tree.l2_extra``) are left out, and so are trees of one
    leaf: a host may store a constant there rather than a Newton step (LightGBM: 0, or its
    initial score in the first iteration, with shrinkage 1), so they say nothing of the two
    parameters. All trees with a split must share one shrinkage.

    Raises
    ------
    LeafParamsError
        The trees with a split have different shrinkages, no tree has a split, or
        :func:`fit_leaf_params` cannot fit their leaves.
    """
    forest = model.forest
    split = np.array([t.n_leaves > 1 for t in forest.trees], dtype=bool)
    if not split.any():
        raise LeafParamsError("no tree has a split, so no leaf was fitted to the rows")
    if len({t.shrinkage for t, s in zip(forest.trees, split, strict=True) if s}) > 1:
        raise LeafParamsError("the trees with a split have different learning rates")
    # the first iterations with a split (one of one-leaf trees only holds no evidence)
    iterations = np.unique(forest.tree_iteration[split])[:_MAX_ITERATIONS]
    leaves = np.cumsum([sum(forest.trees[t].n_leaves
                            for t in np.flatnonzero((forest.tree_iteration == it) & split))
                        for it in iterations])
    last = iterations[min(int(np.searchsorted(leaves, _MIN_LEAVES)), leaves.size - 1)]
    n_trees = int(np.flatnonzero(forest.tree_iteration <= last).max()) + 1
    head = replace(forest, trees=forest.trees[:n_trees],
                   tree_class=forest.tree_class[:n_trees],
                   tree_iteration=forest.tree_iteration[:n_trees])
    parts: list[tuple[np.ndarray, ...]] = []

    def visit(step: TreeStep):
        tree = step.tree
        if tree.n_leaves == 1:  # a constant, not fitted to the rows (see above)
            return None
        sums = node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        leaf = tree.is_leaf & (tree.leaf_l2_extra == 0)
        # every leaf is a split's child: its H as the host padded it (LightGBM's kEpsilon)
        parts.append((tree.value[leaf] - tree.bias, sums.G[leaf],
                      sums.H[leaf] + model.split_score.hessian_epsilon))
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


#: largest misfit of a tree's stored values under fitted parameters, relative to its largest
#: |value|: the replay recomputes HistGradientBoosting's stored values to 1e-9
_TREE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class TreeParams:
    """What one tree's stored values say of the learning rate and L2 penalty it was grown with.

    ``fits`` is ``"read"`` (the values follow the parameters read from the model),
    ``"shrinkage"`` (they follow the read L2 and another learning rate, ``shrinkage``),
    ``"both"`` (another learning rate and L2: ``shrinkage``, ``l2``), ``"none"`` (no pair
    fits them: other gradients, as of another loss or other weights) or ``"too_few"`` (not
    enough values to tell, a tree of one leaf). ``shrinkage`` and ``l2`` are NaN where not
    determined.
    """

    fits: str
    shrinkage: float = np.nan
    l2: float = np.nan


def tree_params(value, G, H, is_leaf, shrinkage: float, l2: float,
                tolerance: float = _TREE_TOLERANCE) -> TreeParams:
    """The learning rate and L2 penalty one tree's stored values were computed with.

    For trees that store, at every node they are given, ``-G/(H + l2)`` (internal nodes,
    unshrunk) or ``-shrinkage * G/(H + l2)`` (leaves), with ``G``, ``H`` the node's sums over
    the rows that grew it (scikit-learn's HistGradientBoosting below its root): a model
    continued with other parameters (``warm_start``) holds trees of other rates and
    penalties than it reports. Each node is one equation, linear in ``l2`` and
    ``shrinkage`` (``value * l2 + shrinkage * G = -value * H``; ``shrinkage`` is 1 at
    internal nodes): the read pair is tried first, then another rate at the read L2, then
    both by least squares, each held to ``tolerance`` of the largest ``|value|`` (a fit with
    as many equations as unknowns checks nothing and does not count).

    Parameters
    ----------
    value, G, H : arrays
        Stored values and the replayed sums of the nodes to use (not a root scored from 0).
    is_leaf : bool array
        Which of them are leaves.
    shrinkage, l2 : float
        The parameters read from the model.
    tolerance : float
        Largest misfit allowed, relative to the largest ``|value|``.
    """
    value, G, H = (np.asarray(a, dtype=np.float64).ravel() for a in (value, G, H))
    leaf = np.asarray(is_leaf, dtype=bool).ravel()
    ok = np.isfinite(value) & np.isfinite(G) & np.isfinite(H) & (H > 0)
    value, G, H, leaf = value[ok], G[ok], H[ok], leaf[ok]
    scale = np.max(np.abs(value)) if value.size else 0.0
    if scale == 0:
        return TreeParams("too_few")

    def misfit(lr: float, lam: float) -> float:
        if not (lr > 0 and lam >= 0):
            return np.inf
        fitted = -G / (H + lam) * np.where(leaf, lr, 1.0)
        return float(np.max(np.abs(fitted - value)) / scale)

    if misfit(shrinkage, l2) <= tolerance:
        return TreeParams("read", shrinkage, l2)
    w = -G[leaf] / (H[leaf] + l2)
    if leaf.sum() >= 1 and np.any(w != 0):
        lr = float(np.dot(value[leaf], w) / np.dot(w, w))
        if value.size > 1 and misfit(lr, l2) <= tolerance:
            return TreeParams("shrinkage", lr, l2)
    if value.size <= 2 or not leaf.any():
        return TreeParams("too_few")
    # each equation divided by |G| + |value| H, so that every node weighs alike
    design = np.column_stack([value, np.where(leaf, G, 0.0)])
    target = -value * H - np.where(leaf, 0.0, G)
    norm = np.abs(G) + np.abs(value) * H
    norm = np.where(norm > 0, norm, 1.0)
    design, target = design / norm[:, None], target / norm
    norms = np.linalg.norm(design, axis=0)
    if np.any(norms == 0):
        return TreeParams("too_few")
    singular = np.linalg.svd(design / norms, compute_uv=False)
    if singular[-1] < 1e-6 * singular[0]:  # hessian sums that barely vary: confounded
        return TreeParams("too_few")
    (lam, lr), *_ = np.linalg.lstsq(design, target, rcond=None)
    if abs(lam) < 1e-9 * np.max(H):  # no penalty, up to rounding
        lam = 0.0
    if misfit(float(lr), float(lam)) <= tolerance:
        return TreeParams("both", float(lr), float(lam))
    return TreeParams("none")
