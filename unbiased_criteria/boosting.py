"""Training hooks, host-agnostic: the host grows each tree, the core scores and prunes it.

Each round the core takes gradients at its own running raw scores (the hosts' caches do not
see pruning), hides the held-out rows from the host by giving them zero gradient and hessian,
lets the host grow one iteration (a :class:`Grower` supplied by an adapter), scores every new
split with U on the held-out rows, collapses the splits with ``U <= threshold`` top-down, and
adds the pruned trees to its running scores of the training rows and every evaluation set.
Evaluation and early stopping run on those running scores.

While no tree has been pruned, the host's own running scores of the training rows (a
grower's optional ``train_scores()``: LightGBM's training score, XGBoost's prediction cache)
are the loop's, when they started from the same init score: checked, bit for bit, before the
first round. In a round that scores nothing, the loop then takes them as they are instead of
finding every row's leaf and adding its value (the same float sums, in the same order).
Without evaluation sets such a round needs no tree at all: a grower that can
(``read_grown``) reads those rounds' trees later, all at once, before a round that needs
trees and at the end (one read of the host's model instead of one per round).

Every scored split is recorded, kept or not, with U measured before the pruning decision and,
with ``options.n_blocks >= 2``, its block-jackknife replicates: each training row has one
block for the whole run, and a replicate leaves that block's held-out rows out of every U.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from .gains import SplitScore, Workspace, node_sums, tree_generator
from .importance import GainOptions, jackknife_blocks, score_tree
from .metrics import Metric
from .objectives import Objective
from .progress import progress_bar
from .pruning import prune_tree, smoothing_counts
from .replay import TreeStep
from .trees import Tree

__all__ = ["Grower", "EvalSet", "HoldoutPlan", "BoostResult", "boost"]

log = logging.getLogger(__name__)

# spawn key of the stream that draws held-out rows (trees use 0..)
_HOLDOUT_KEY = 2**41


class Grower(Protocol):
    """What an adapter supplies to :func:`boost`.

    ``grow(grad, hess)`` grows one iteration from float32 arrays ``(n_train, K)`` (valid
    during the call only: the loop reuses them) and returns its K trees in the IR (leaf
    values as the host set them: shrunk, no init score). ``leaf_nodes(which)`` gives the leaf
    node ids ``(n_rows, K)`` of the last grown iteration for the training rows
    (``which = 0``) or evaluation set ``which`` (1, 2, ...), valid until the next ``grow``.
    Optional: ``train_scores()``, the host's own raw scores ``(n_train, K)`` of the training
    rows after the last ``grow`` (before the first, its starting scores), or None; and
    ``grow(grad, hess, read=False)`` with ``read_grown()``: grow an iteration without reading
    its trees, then read the trees of all iterations grown so since the last call (K per
    iteration, in order) at once, where the loop needs no tree in its round.
    """

    def grow(self, grad: np.ndarray, hess: np.ndarray) -> list[Tree]: ...

    def leaf_nodes(self, which: int) -> np.ndarray: ...


@dataclass(frozen=True)
class EvalSet:
    """An evaluation set: its name, labels and weights (its rows live in the grower)."""

    name: str
    y: np.ndarray
    weight: np.ndarray | None = None


@dataclass(frozen=True)
class HoldoutPlan:
    """Which training rows are held out.

    ``fraction`` of the rows (0 = none: no pruning possible); ``redraw`` draws a new held-out
    part every round, so every row helps build some trees.
    """

    fraction: float = 0.5
    redraw: bool = True

    def __post_init__(self):
        if not 0.0 <= self.fraction < 1.0:
            raise ValueError(f"holdout_fraction must be in [0, 1), got {self.fraction!r}")

    @classmethod
    def of(cls, options: GainOptions) -> HoldoutPlan:
        """The plan of ``options.holdout_fraction`` and ``options.redraw_holdout``."""
        return cls(options.holdout_fraction, options.redraw_holdout)

    def mask(self, n: int, round_: int, options: GainOptions) -> np.ndarray:
        held = np.zeros(n, dtype=bool)
        held[self.held_rows(n, round_, options)] = True
        return held

    def held_rows(self, n: int, round_: int, options: GainOptions) -> np.ndarray:
        """The held-out row ids in a uniformly random order (their ranks for the k-draws).

        ``m = round(fraction * n)`` rows drawn without replacement, in the order drawn
        (``Generator.choice(n, m, replace=False)``: a partial Fisher-Yates shuffle of the last
        ``m`` places, or Floyd's sampling then a shuffle): every ordered ``m``-tuple of
        distinct rows is equally likely, so the held set is uniform and its order is uniform
        given the set and independent of the tree (grown from the other rows); the trees of
        the round need no shuffle of their own (``unbiased_gain(ranked=True)``). Cost: ``m``
        random numbers and one pass over ``n`` ids, not a permutation of the ``n`` rows.
        """
        m = int(round(self.fraction * n))
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        rng = tree_generator(options.random_state, _HOLDOUT_KEY + (round_ if self.redraw else 0))
        return rng.choice(n, m, replace=False, shuffle=True)


@dataclass
class BoostResult:
    """Trees (pruned), their outputs, init score, evaluation history and per-split scores.

    ``splits`` has one row per split scored (before pruning, kept or not; ``kept`` says which
    survived) in tree order; ``jackknife`` the matching ``(n_splits, n_blocks)`` replicates of
    ``unbiased_gain`` (None with ``n_blocks < 2``).
    """

    trees: list[Tree]
    tree_class: np.ndarray
    init_score: np.ndarray
    raw_train: np.ndarray
    raw_eval: list[np.ndarray] = field(default_factory=list)
    evals_result: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    best_iteration: int = -1
    best_score: dict[str, dict[str, float]] = field(default_factory=dict)
    splits: pd.DataFrame | None = None
    jackknife: np.ndarray | None = None
    #: rounds whose training scores were the host's own (see the module docstring)
    host_score_rounds: int = 0
    #: the share of the training rows held out of each round's tree (``HoldoutPlan``)
    holdout_fraction: float = 0.0


def boost(
    grower: Grower,
    objective: Objective,
    y: np.ndarray,
    weight: np.ndarray | None,
    *,
    num_boost_round: int,
    split_score: SplitScore,
    init_score: np.ndarray,
    score_dtype=np.float64,
    options: GainOptions,
    eval_sets: Sequence[EvalSet] = (),
    metrics: Sequence[Metric] = (),
    feval: Callable | None = None,
    early_stopping_rounds: int | None = None,
    monitor: Sequence[tuple[str, str]] | None = None,
    callback: Callable[[int, dict], None] | None = None,
    progress: bool = False,
) -> BoostResult:
    """Run the training hook (see the module docstring).

    Parameters
    ----------
    grower : Grower
    objective : Objective
    y, weight : arrays
        Training labels and weights (all training rows, held-out ones included).
    num_boost_round : int
    split_score : SplitScore
        The host's regularisation (for the values of collapsed nodes, with each tree's
        ``Tree.shrinkage``).
    init_score : array (K,)
        Raw score every row starts from.
    score_dtype : dtype
        Precision of the running scores (the host's).
    options : GainOptions
        Checked options of every hook: the held-out rows (``holdout_fraction``,
        ``redraw_holdout``; :class:`HoldoutPlan`), ``prune_threshold`` (collapse splits with
        ``U <= prune_threshold``; None switches scoring and pruning off), the unbiased gain's
        options and the seed; ``n_blocks >= 2`` also records each split's jackknife
        replicates (blocks of training rows fixed for the run).
    eval_sets : sequence of EvalSet
        Rows are held by the grower as sets 1, 2, ... in this order.
    metrics : sequence of Metric
        Evaluated on every eval set each round.
    feval : callable, optional
        ``feval(y, raw, weight) -> (name, value, higher_is_better)`` or a list of such.
    early_stopping_rounds : int, optional
        Stop when a monitored (set, metric) has not improved for that many rounds.
    monitor : sequence of (set name, metric name), optional
        Defaults to every metric on every eval set.
    callback : callable, optional
        ``callback(round, evaluations)`` after each round; returning True stops training.
    progress : bool
        tqdm progress bar over rounds.
    """
    n, K = y.shape[0], objective.n_outputs
    holdout = HoldoutPlan.of(options)
    prune_threshold = options.prune_threshold
    init = np.asarray(init_score, dtype=np.float64).reshape(K)
    raw = np.tile(init.astype(score_dtype), (n, 1))
    raw_eval = [np.tile(init.astype(score_dtype), (e.y.shape[0], 1)) for e in eval_sets]
    trees: list[Tree] = []
    classes: list[int] = []
    # per-split records and jackknife replicates, by tree index
    records: dict[int, dict[str, np.ndarray]] = {}
    replicates: dict[int, np.ndarray] = {}
    blocks = jackknife_blocks(n, options)
    history: dict[str, dict[str, list[float]]] = {e.name: {} for e in eval_sets}
    best: dict[tuple[str, str], tuple[float, int]] = {}
    best_iteration = -1
    bar = progress_bar(num_boost_round, progress, "rounds")
    scoring = False  # some round had held-out rows to score splits with
    scratch = Workspace()  # per-round row arrays, reused (also by the scoring)
    row_ids = np.arange(n)
    # the host's running scores stand for the loop's while both are equal: checked once
    # here, and kept until a tree is pruned (the host does not see pruning)
    host_scores = getattr(grower, "train_scores", None)
    start = host_scores() if host_scores is not None else None
    tracking = start is not None and start.shape == raw.shape and np.array_equal(start, raw)
    host_rounds = 0
    y_read, w_read = objective.read_labels(y, weight)  # once, not every round
    # the curvature floor in the weights' units (gains.weight_scale)
    options = options.with_weight_scale(weight)
    read_grown = getattr(grower, "read_grown", None)
    # the host's bins of the training rows, where it smooths leaves with counts it estimates
    # from them (LightGBM's path_smooth): a collapsed node is smoothed as the host would
    bins_of = getattr(grower, "histogram_bins", None)
    bins = (bins_of() if bins_of is not None and split_score.path_smooth > 0
            and prune_threshold is not None else None)
    unread = 0  # rounds grown whose trees are not read yet (their classes are in `classes`)

    for it in range(num_boost_round):
        score = raw if K > 1 else raw[:, 0]
        held_rows = holdout.held_rows(n, it, options)  # in random order: the draws' ranks
        step_objective = objective
        if objective.iteration_scaled:  # the rows that build the tree set the round's loss
            kept = np.ones(n, dtype=bool)
            kept[held_rows] = False
            step_objective = objective.at_iteration(
                y_read[kept], score[kept], None if w_read is None else w_read[kept])
        g, h = step_objective.grad_hess(y_read, score, w_read)
        g, h = g.reshape(n, K), h.reshape(n, K)
        score_round = prune_threshold is not None and held_rows.size > 0
        scoring |= score_round
        g_fit, h_fit = g, h  # nothing held out: the host sees the gradients as they are
        fit_rows = None
        if held_rows.size:
            fit = scratch.array("fit", n, bool)
            fit.fill(True)
            fit[held_rows] = False
            # the held-out rows' gradients times 0 (they are finite: checked), in one
            # sequential pass each instead of a copy and a scatter; a negative gradient
            # gives -0.0, which adds to every host sum as +0.0 does
            g_fit = np.multiply(g, fit[:, None], out=scratch.array(
                "g_fit", g.size, g.dtype).reshape(g.shape))
            h_fit = np.multiply(h, fit[:, None], out=scratch.array(
                "h_fit", h.size, h.dtype).reshape(h.shape))
        if score_round:  # the other rows, in row order, shared by the K trees
            fit_rows = np.compress(fit, row_ids, out=scratch.array("fit_rows", n - held_rows.size,
                                                             row_ids.dtype))
        held_blocks = (None if blocks is None or not score_round
                       else _gather(blocks, held_rows, scratch, "held blocks"))
        from_host = tracking and not score_round  # no leaf of a training row needed
        if from_host and not eval_sets and read_grown is not None:  # no tree needed now
            grower.grow(g_fit, h_fit, read=False)
            unread += 1
            classes.extend(range(K))
            new = []
        else:
            if unread:  # in order, before this round's trees (tree indices seed the draws)
                trees.extend(_read_grown(read_grown, unread, K))
                unread = 0
            new = grower.grow(g_fit, h_fit)
        nodes = None if from_host else grower.leaf_nodes(0)
        nodes_eval = [grower.leaf_nodes(i + 1) for i in range(len(eval_sets))]
        for k, tree in enumerate(new):
            node_k = None if nodes is None else nodes[:, k]
            index = len(trees)
            grown = tree
            # the gathers below take ids unchecked (no buffer): a grower's bad id fails here
            for ids in ([] if node_k is None else [node_k]) + [ne[:, k] for ne in nodes_eval]:
                _check_node_ids(ids, tree, index)
            tree, old_to_new, rec, jack = _score_and_prune(
                tree, index, node_k, g[:, k], h[:, k], fit_rows, held_rows, split_score,
                options, prune_threshold, held_blocks,
                scratch, None if bins is None else (bins, g_fit[:, k], h_fit[:, k]),
            )
            if rec is not None:
                rec["class"] = np.full(rec["node"].size, k)
                records[index] = rec
            if jack is not None:
                replicates[index] = jack
            # each old node's new value, cast once: one gather per row
            value = tree.value[old_to_new].astype(score_dtype)
            if node_k is not None:
                raw[:, k] += _gather(value, node_k, scratch, "train")
            tracking &= tree is grown
            for i, (r, ne) in enumerate(zip(raw_eval, nodes_eval)):
                r[:, k] += _gather(value, ne[:, k], scratch, f"eval {i}")
            trees.append(tree)
            classes.append(k)

        if from_host:  # nothing scored, so nothing pruned: the host's sums are the loop's
            np.copyto(raw, host_scores(), casting="same_kind")
            host_rounds += 1

        evaluations = _evaluate(eval_sets, raw_eval, metrics, feval, objective, K)
        for (set_name, metric_name), (value, _) in evaluations.items():
            history[set_name].setdefault(metric_name, []).append(value)
        stop_asked = bool(callback(it, evaluations)) if callback is not None else False
        bar.update(1)
        if stop_asked:
            log.info("a callback stopped training at round %d", it)
            break
        if early_stopping_rounds and evaluations:
            watched = monitor or list(evaluations)
            stop = False
            for key in watched:
                value, hib = evaluations[key]
                prev = best.get(key)
                if prev is None or (value > prev[0] if hib else value < prev[0]):
                    best[key] = (value, it)
                elif it - prev[1] >= early_stopping_rounds:
                    stop = True
            if stop:
                best_iteration = best[watched[0]][1]
                log.info("early stopping at round %d, best round %d", it, best_iteration)
                break
    bar.close()
    if unread:
        trees.extend(_read_grown(read_grown, unread, K))
    if early_stopping_rounds and best_iteration < 0 and best:
        best_iteration = best[(monitor or list(best))[0]][1]
    best_score: dict[str, dict[str, float]] = {}
    for (s, m), (v, _) in best.items():
        best_score.setdefault(s, {})[m] = v
    order = sorted(records)
    splits = (
        pd.DataFrame({c: np.concatenate([records[i][c] for i in order])
                      for c in records[order[0]]})
        # scored, but no tree had a split: an empty table (importance 0), not None (NaN)
        if order else (pd.DataFrame() if scoring else None)
    )
    jackknife = (np.concatenate([replicates[i] for i in order])
                 if order and blocks is not None else None)
    return BoostResult(trees, np.array(classes), init, raw, raw_eval, history,
                       best_iteration, best_score, splits, jackknife, host_rounds,
                       holdout.fraction)


def _read_grown(read_grown: Callable[[], list[Tree]], rounds: int, K: int) -> list[Tree]:
    got = read_grown()
    if len(got) != rounds * K:
        raise RuntimeError(f"the grower read {len(got)} trees of {rounds} rounds of {K}")
    return got


def _check_node_ids(ids: np.ndarray, tree: Tree, index: int) -> None:
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= tree.n_nodes):
        raise RuntimeError(f"the grower gave node ids outside tree {index}'s "
                           f"{tree.n_nodes} nodes")


def _gather(values: np.ndarray, ids: np.ndarray, scratch: Workspace | None, name: str):
    """``values[ids]`` for ids ``ids`` (any integer dtype, in range: checked by the caller),
    in scratch arrays ``name`` when given (the ids cast to intp once there: ``take`` would
    cast them to a fresh array; ``mode="clip"`` writes to ``out`` without a buffer)."""
    if scratch is None:
        return values[ids]
    at = ids
    if ids.dtype != np.intp:
        at = scratch.array(name + " ids", ids.size, np.intp)
        np.copyto(at, ids, casting="same_kind")
    return values.take(at, out=scratch.array(name, ids.size, values.dtype), mode="clip")


def _score_and_prune(tree, index, nodes, g, h, fit_rows, held_rows, split_score, options,
                     threshold, blocks=None, scratch=None, host_rows=None):
    """The tree pruned, its old-to-new node map, its split record and jackknife replicates
    (``(n_splits, n_blocks)``, or None). ``fit_rows`` are the rows the tree was grown from (None
    when nothing is scored this round), ``held_rows`` the held-out row ids in a uniformly
    random order, ``blocks`` their jackknife blocks in that order; ``scratch`` (optional)
    holds the rows' gathered values (read by the scoring only, within the call). A hessian
    that is the same on every row (squared error) is not gathered: a read-only broadcast of
    its value stands for it (the scoring then needs no pass over it either). ``host_rows``:
    the host's bins of the training rows and the gradients and hessians it grew the tree from
    (held-out rows' zero), for the row counts it smooths with
    (:func:`unbiased_criteria.pruning.smoothing_counts`), or None."""
    identity = np.arange(tree.n_nodes)
    if threshold is None or tree.n_leaves == 1 or fit_rows is None or not held_rows.size:
        return tree, identity, None, None

    same_h = _constant(h)  # e.g. squared error: the same values, no gather

    def rows_of(a, rows, name):
        if a is h and same_h:
            return np.broadcast_to(h[:1], rows.shape)
        return _gather(a, rows, scratch, name)

    step = TreeStep(index, tree, *(rows_of(a, fit_rows, f"fit {i}")
                                   for i, a in enumerate((nodes, g, h))), None,
                    *(rows_of(a, held_rows, f"held {i}")
                      for i, a in enumerate((nodes, g, h))), None)
    scores = score_tree(step, split_score, options, blocks=blocks, ranked=True,
                        workspace=scratch)
    inner = tree.internal_nodes
    if scores.jackknife is not None:
        jack = scores.jackknife[:, inner].T
    else:  # no usable split: U = 0 in every replicate too
        jack = None if blocks is None else np.zeros((inner.size, options.n_blocks))
    rec = {
        "tree": np.full(inner.size, index), "node": inner, "depth": tree.depth[inner],
        "feature_index": tree.feature[inner], "threshold": tree.threshold[inner],
        "n_train": scores.n_train[inner], "n_valid": scores.n_valid[inner],
        "k": scores.k[inner], "biased_gain": scores.biased[inner],
        "unbiased_gain": scores.unbiased[inner], "host_gain": tree.host_gain[inner],
        "usable": scores.usable[inner],
    }
    counts = None
    if host_rows is not None:  # computed only if a leaf gets a new value
        bins, g_host, h_host = host_rows
        counts = lambda: smoothing_counts(  # noqa: E731
            tree, nodes, h_host, node_sums(tree, nodes, g_host, h_host), bins)
    out = prune_tree(tree, scores, split_score, threshold, counts=counts)
    if out is None:
        rec["kept"] = np.ones(inner.size, dtype=bool)
        return tree, identity, rec, jack
    pruned, old_to_new = out
    # a split is kept iff it is still an internal node: it and all its ancestors survived
    rec["kept"] = ~pruned.is_leaf[old_to_new[inner]]
    return pruned, old_to_new, rec, jack


def _constant(h: np.ndarray) -> bool:
    """Whether every entry of the non-empty ``h`` is ``h[0]`` (two reductions, after a test
    of two entries that settles most hessians that vary)."""
    h0 = h[0]
    return bool(h[-1] == h0 and h.min() == h0 and h.max() == h0)


def _evaluate(eval_sets, raw_eval, metrics, feval, objective, K):
    out: dict[tuple[str, str], tuple[float, bool]] = {}
    for e, r in zip(eval_sets, raw_eval):
        score = r if K > 1 else r[:, 0]
        for m in metrics:
            out[(e.name, m.name)] = (m(e.y, score, e.weight, objective), m.higher_is_better)
        if feval is not None:
            fevals = feval if isinstance(feval, list | tuple) else [feval]
            for f in fevals:
                res = f(e.y, score, e.weight)
                for name, value, hib in res if isinstance(res, list) else [res]:
                    out[(e.name, name)] = (float(value), bool(hib))
    return out
