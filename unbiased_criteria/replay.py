"""Replaying a boosted model: the gradients each tree was grown from.

Tree ``t`` was fit to the gradients of the loss at ``F_t = base + sum_{s<t} f_s``. The replay
rebuilds those raw scores tree by tree from each row's leaf (the host's own routing, in chunks
of trees) and the IR's leaf values, in the host's precision. The trees of one iteration (K
classes, parallel trees) share the gradients taken before the iteration. A visitor sees every
tree with its rows' leaves and gradients and may replace the tree (pruning); later trees are
then replayed at the scores of the replaced one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np

from .model import Model, Router
from .objectives import NonFiniteGradientError, Objective
from .progress import progress_bar
from .trees import Tree

__all__ = ["RowSet", "TreeStep", "ReplayResult", "replay", "resolve_bias"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RowSet:
    """Rows routed through the model, with their labels and weights."""

    router: Router
    y: np.ndarray
    weight: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return self.router.n_rows


@dataclass(frozen=True)
class TreeStep:
    """What a visitor sees of tree ``index``.

    ``nodes_*`` are the leaf node ids of the rows; ``g_*``, ``h_*`` their weighted gradients
    and hessians (``w*g``, ``w*h``) at the scores before this tree's iteration; ``raw_*`` those
    scores for this tree's output (for leaf refits; a view of the running scores, valid during
    the visit only). Train fields are None without training rows.
    """

    index: int
    tree: Tree
    nodes_train: np.ndarray | None
    g_train: np.ndarray | None
    h_train: np.ndarray | None
    raw_train: np.ndarray | None
    nodes_valid: np.ndarray | None
    g_valid: np.ndarray | None
    h_valid: np.ndarray | None
    raw_valid: np.ndarray | None


@dataclass(frozen=True)
class ReplayResult:
    """Final raw scores ``(n, n_outputs)`` and the trees as the visitor left them."""

    raw_train: np.ndarray | None
    raw_valid: np.ndarray | None
    trees: tuple[Tree, ...]


Visitor = Callable[[TreeStep], "tuple[Tree, np.ndarray] | None"]


def resolve_bias(model: Model, objective: Objective, y_train, w_train) -> Model:
    """Set the init score folded into the first trees (LightGBM) from the training labels.

    Without training labels the reader's data-free estimate is used; if there is none, this
    raises ``ValueError``.
    """
    if not model.bias_from_labels:
        return model
    forest = model.forest
    first = np.flatnonzero(forest.tree_iteration == forest.tree_iteration.min())
    if y_train is not None:
        init = np.atleast_1d(objective.init_score(np.asarray(y_train), w_train))
        bias = {int(t): float(init[forest.tree_class[t] % init.size]) for t in first}
    else:
        bias = {int(t): forest.trees[t].bias for t in first}
        if any(np.isnan(b) for b in bias.values()):
            raise ValueError(
                "the model folds an init score into its first trees that cannot be recovered "
                "without the training labels: pass X_train and y_train"
            )
    trees = list(forest.trees)
    for t, b in bias.items():
        trees[t] = replace(trees[t], bias=b)
    return replace(model, forest=forest.with_trees(trees))


_KIND = {"train": "training", "valid": "held-out"}


def _start_scores(model: Model, n: int) -> np.ndarray:
    f = model.forest
    return np.tile(f.base_score.astype(f.score_dtype), (n, 1))


def _as_read(objective: Objective, rows: RowSet | None) -> RowSet | None:
    """``rows`` with labels and weights converted once as the objective reads them on every
    call (:meth:`Objective.read_labels`)."""
    if rows is None:
        return rows
    y, weight = objective.read_labels(rows.y, rows.weight)
    return rows if y is rows.y and weight is rows.weight else replace(rows, y=y, weight=weight)


def _score_of(objective: Objective, raw: np.ndarray) -> np.ndarray:
    return raw if objective.n_outputs > 1 else raw[:, 0]


def _grad_hess(objective: Objective, rows: RowSet, raw: np.ndarray, kind: str = "",
               order: np.ndarray | None = None):
    """Gradients and hessians of ``rows``; a non-finite one is reported in the caller's row
    numbers (``order``: the rows' positions there) as ``kind`` rows."""
    try:
        g, h = objective.grad_hess(rows.y, _score_of(objective, raw), rows.weight)
    except NonFiniteGradientError as error:
        if not kind:
            raise
        raise error.renamed(order, kind) from None
    return g.reshape(raw.shape[0], -1), h.reshape(raw.shape[0], -1)


def replay(
    model: Model,
    objective: Objective,
    *,
    train: RowSet | None,
    valid: RowSet | None = None,
    visit: Visitor | None = None,
    progress: bool = False,
    valid_order: np.ndarray | None = None,
    prefetch: bool = False,
) -> ReplayResult:
    """Replay ``model`` tree by tree on ``train`` and ``valid`` rows.

    Parameters
    ----------
    model : Model
        With its init bias resolved (:func:`resolve_bias`).
    objective : Objective
        Loss whose gradients the host used.
    train, valid : RowSet or None
    visit : callable, optional
        ``visit(step) -> None | (new_tree, old_to_new)``: return a replacement tree and the map
        from the old tree's node ids to the new tree's leaf ids (as
        :func:`unbiased_criteria.trees.collapse_nodes` gives) to replay later trees on it.
    progress : bool
        Show a tqdm progress bar over trees (needs tqdm).
    valid_order : int array, optional
        A permutation of the held-out rows: visitors see ``valid`` in this order
        (``step.*_valid[i]`` is row ``valid_order[i]``), so a uniformly random one drawn once
        ranks the rows for every tree's k-draws (:func:`unbiased_criteria.gains.first_k_sums`).
        Each chunk of leaf ids is permuted once; ``raw_valid`` is returned in the rows' order.
    prefetch : bool
        Route the next chunk of trees on a background thread while this one is visited (the
        hosts release the GIL while routing); chunks are halved so that two fit the memory
        budget one did.

    Returns
    -------
    ReplayResult
    """
    forest = model.forest
    if objective.n_outputs != forest.n_outputs:
        raise ValueError(
            f"objective has {objective.n_outputs} outputs but the model has {forest.n_outputs}"
        )
    if valid is not None and valid_order is not None:
        valid = replace(valid, y=valid.y[valid_order],
                        weight=None if valid.weight is None else valid.weight[valid_order])
    sets = {k: _as_read(objective, s) for k, s in (("train", train), ("valid", valid))}
    raw = {k: _start_scores(model, s.n_rows) if s else None for k, s in sets.items()}
    first_iter = forest.tree_iteration.min() if forest.n_trees else 0
    bias = np.zeros(forest.n_outputs)
    for t in np.flatnonzero(forest.tree_iteration == first_iter):
        bias[forest.tree_class[t]] = forest.trees[t].bias
    chunk = min(s.router.chunk for s in sets.values() if s) if any(sets.values()) else 1
    if prefetch:  # two chunks alive at once: each half the size
        per_iteration = max(1, forest.n_outputs)
        chunk = max(per_iteration, chunk // 2 // per_iteration * per_iteration, 1)
    trees = list(forest.trees)
    grads: dict[str, tuple] = {}
    bar = progress_bar(forest.n_trees, progress, "trees")

    def route(start: int) -> dict[str, np.ndarray | None]:
        stop = min(start + chunk, forest.n_trees)
        return {k: s.router.leaf_nodes(start, stop) if s else None for k, s in sets.items()}

    buffers: dict[str, np.ndarray] = {}  # one per set, reused by every chunk

    with ThreadPoolExecutor(1) if prefetch else nullcontext() as ahead_pool:
        ahead = ahead_pool.submit(route, 0) if prefetch and forest.n_trees else None
        for start in range(0, forest.n_trees, chunk):
            stop = min(start + chunk, forest.n_trees)
            if ahead is not None:
                leaves = ahead.result()
                ahead = ahead_pool.submit(route, stop) if stop < forest.n_trees else None
            else:
                leaves = route(start)
            columns_of = {k: _tree_columns(v, valid_order if k == "valid" else None,
                                           buffers, k) if v is not None else None
                          for k, v in leaves.items()}
            del leaves  # the router's arrays go as soon as their columns are taken
            for t in range(start, stop):
                it, cls = forest.tree_iteration[t], forest.tree_class[t]
                if t == 0 or it != forest.tree_iteration[t - 1]:
                    shift = bias if it == first_iter else 0.0
                    scores = {k: (raw[k] + shift if np.any(shift) else raw[k])
                              .astype(forest.score_dtype, copy=False) if s else None
                              for k, s in sets.items()}
                    # a loss scaled by the training rows in each iteration scores every row
                    # set at that scale (the held-out rows' own would be another loss)
                    scaler = "train" if sets["train"] else "valid"
                    step_objective = objective.at_iteration(
                        sets[scaler].y, _score_of(objective, scores[scaler]),
                        sets[scaler].weight
                    ) if objective.iteration_scaled and sets[scaler] else objective
                    grads = {  # the objective copies the scores it is given
                        k: _grad_hess(step_objective, s, scores[k], _KIND[k],
                                      valid_order if k == "valid" else None) if s else None
                        for k, s in sets.items()
                    }
                    # trees of one class in one iteration (parallel trees) must not see each other
                    members = forest.tree_class[forest.tree_iteration == it]
                    shared = np.unique(members).size < members.size
                    before = {k: r.copy() if shared and r is not None else r
                              for k, r in raw.items()}
                # each tree's leaf ids contiguous and intp once: no pass converts them again
                columns = {k: None if v is None else next(v) for k, v in columns_of.items()}
                step_parts = {}
                for k in sets:
                    if sets[k] is None:
                        step_parts[k] = (None, None, None, None)
                        continue
                    g, h = grads[k]
                    shift = bias[cls] if it == first_iter else 0.0
                    raw_k = before[k][:, cls]  # a view, valid during the visit
                    step_parts[k] = (
                        columns[k], g[:, cls], h[:, cls], raw_k + shift if shift else raw_k
                    )
                step = TreeStep(t, trees[t], *step_parts["train"], *step_parts["valid"])
                out = visit(step) if visit is not None else None
                for k in sets:
                    if sets[k] is None:
                        continue
                    nodes = columns[k]
                    tree = trees[t]
                    if out is not None:
                        tree, old_to_new = out
                        nodes = old_to_new[nodes]
                    raw[k][:, cls] += np.take(tree.value.astype(forest.score_dtype), nodes)
                if out is not None:
                    trees[t] = out[0]
                bar.update(1)
    bar.close()
    raw_valid = raw["valid"]
    if raw_valid is not None and valid_order is not None:
        raw_valid = np.empty_like(raw_valid)
        raw_valid[valid_order] = raw["valid"]
    return ReplayResult(raw["train"], raw_valid, tuple(trees))


def _tree_columns(leaves: np.ndarray, order: np.ndarray | None, buffers: dict, name: str,
                  group: int | None = None, block: int = 4096):
    """Yield each tree's leaf ids (contiguous intp, rows permuted by ``order``) from the
    router's ``(n_rows, n_trees)`` array.

    ``group`` trees at a time are transposed by blocks of rows into one ``(group, n_rows)``
    buffer kept in ``buffers[name]`` and reused by every group and chunk: 16 int32 ids are one
    cache line of a row, so the pass reads each line once, and no tree-major copy of the whole
    chunk is allocated (on a loaded machine first touching fresh memory cost as much as the
    pass). Rows taken in ``order`` are random reads of the chunk: 32 trees at a time (None)
    halve their number, 6.4 -> 3.9 ns per row and tree at 300k rows (16 without ``order``);
    a chunk of at most that many trees is gathered by whole rows (2.0 ns at 20 trees).
    Any integer-valued array is accepted (XGBoost's float32 ids are cast here).
    """
    n, c = leaves.shape
    group = group or (16 if order is None else 32)
    buf = buffers.get(name)
    if buf is None or buf.shape[1] != n:
        buf = buffers[name] = np.empty((min(group, c), n), dtype=np.int32)
    elif buf.shape[0] < min(group, c):
        buf = buffers[name] = np.empty((min(group, c), n), dtype=np.int32)
    # a group of all the chunk's trees takes whole rows: np.take copies each (a memcpy) where
    # fancy indexing of a column range went id by id (300k rows, 20 trees: 24 -> 11 ms)
    whole = order is not None and group >= c and leaves.flags.c_contiguous
    tmp = np.empty((min(block, n), c), dtype=leaves.dtype) if whole else None
    for j0 in range(0, c, group):
        j1 = min(j0 + group, c)
        part = buf[: j1 - j0]
        for s in range(0, n, block):
            if order is None:
                rows = leaves[s : s + block, j0:j1]
            elif whole:  # "clip": the order's ids are in range; no buffered copy of out
                rows = np.take(leaves, order[s : s + block], axis=0,
                               out=tmp[: min(block, n - s)], mode="clip")
            else:
                rows = leaves[order[s : s + block], j0:j1]
            part[:, s : s + block] = rows.T
        for j in range(j1 - j0):
            yield part[j].astype(np.intp)
