"""Does the replay match the model's own numbers? The checks that tell a model replayed from
the scores its trees were grown from (the first iteration's hessian sums and gains against
the host's stored ones; the later trees' gains, which DART's dropout, a model continued from
another boosting mode or edited trees miss), HistGradientBoosting's fits continued with
``warm_start``, and what ``prune`` keeps of them: the later trees' gains at the model's own
(unpruned) scores."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .gains import biased_gain, node_score, node_sums
from .importance import TreeScores
from .leaf_params import TreeParams, tree_params
from .model import Model, UnsupportedModelError
from .replay import TreeStep


def _stores_hessians(tree) -> bool:
    """Whether the model stored node hessian sums (HistGradientBoosting stores row counts
    only): what :func:`check_against_host` compares, and how its warning names it."""
    return not np.isnan(tree.host_hessian).all()


_OTHER_SCORES = ("a base_margin or init_score it does not keep, a slice that left out "
                 "earlier trees")


def _warn_host_hessian(host: np.ndarray, replayed: np.ndarray, read: Model,
                       extra_frames: int = 0) -> bool:
    """One warning when the training rows' hessian sums at the first iteration's nodes
    differ from the model's own (``host``: its stored ``sum_hessian`` / ``internal_weight`` /
    ``leaf_weight``; for HistGradientBoosting, which stores none, the row counts).

    The trees were then not grown on these rows with these weights: other rows, weights not
    given, a row subsample or an update the model's file does not record. Skipped where the
    reader already said why the gains will not match (``read.warnings``). True if it warned.
    """
    host, replayed = np.asarray(host, dtype=np.float64), np.asarray(replayed, dtype=np.float64)
    ok = np.isfinite(host) & (host > 0)
    if read.warnings or not ok.any():
        return False
    # float32 sums of float32 hessians: a relative error of 1e-3 is far beyond rounding
    off = np.abs(replayed[ok] - host[ok]) > 1e-3 * host[ok]
    first = read.forest.trees[0] if read.forest.n_trees else None
    what = "hessian sums" if first is None or _stores_hessians(first) else "row counts"
    if off.any():
        i = int(np.flatnonzero(off)[0])
        warnings.warn(
            f"the training rows' {what} differ from the model's own at {int(off.sum())} "
            f"of the first iteration's {int(ok.sum())} nodes (e.g. {replayed[ok][i]:.6g} "
            f"where the model's is {host[ok][i]:.6g}): its trees were "
            "not grown on these rows with these weights (other rows, or these read otherwise: "
            "a scipy sparse matrix's absent entries are missing to XGBoost, not 0; "
            "train_weight not given, "
            "a row subsample such as subsample < 1 or bagging, an update; or a model grown "
            "by the training hook, whose trees saw each round's fit rows only) or from other "
            f"scores than it predicts from ({_OTHER_SCORES}), so "
            "biased_gain will not match host_gain (unbiased_gain does not need the match, "
            "but comes from the same gradients: with weights or an objective other than the "
            "training's it measures that other loss)",
            UserWarning, stacklevel=3 + extra_frames,
        )
    return bool(off.any())


#: gains below this fraction of the largest compared with them are left out: float32
#: cancellation (a node's score minus its children's) may leave them any relative error
_TINY_GAIN = 1e-6
#: gains above this fraction of the largest are far above that rounding: a stray miss there
#: is not rounding, so a majority of them missing says something whatever the model's size
_LARGE_GAIN = 1e-3


def gain_misses(host: np.ndarray, B: np.ndarray, rtol: float) -> tuple[int, int, int, int]:
    """``(compared, missed, large, large_missed)``: the splits whose stored gain ``host`` and
    recomputed ``B`` are both finite and ``host`` above :data:`_TINY_GAIN` of the largest;
    those where ``B`` misses ``host`` by more than ``rtol`` of it; and the same two counts
    over the gains above :data:`_LARGE_GAIN` of the largest."""
    host, B = np.asarray(host, dtype=np.float64), np.asarray(B, dtype=np.float64)
    ok = np.isfinite(host) & np.isfinite(B)
    if not ok.any():
        return 0, 0, 0, 0
    size = np.abs(host)
    scale = size[ok].max()
    ok &= size > _TINY_GAIN * scale
    off = ok & (np.abs(B - np.where(ok, host, 0.0)) > rtol * size)
    large = ok & (size > _LARGE_GAIN * scale)
    return int(ok.sum()), int(off.sum()), int(large.sum()), int((off & large).sum())


def gains_mismatch(compared: int, off: int, large: int, large_off: int) -> bool:
    """Whether the misses of :func:`gain_misses` say that the gains were not computed as the
    replay computes them: more than 1% of the compared splits, and either more than 2 of
    them (a stray float32 cancellation stays below that) or a majority of the large ones (a
    model of a few splits, every one missing, is as wrong as a large one)."""
    return off > 0.01 * compared and (off > 2 or large_off > large // 2)


def _warn_host_gain(host: np.ndarray, B: np.ndarray, read: Model,
                    extra_frames: int = 0) -> bool:
    """One warning when the recomputed gains B of the first iteration miss the model's own
    (``host_gain``) at more than 1% of the splits, beyond float32 rounding, where nothing said
    why: the model's
    parameters are not those its trees were grown with (e.g. continued training that added
    ``max_delta_step`` or ``alpha``: the last stage's parameters are all a model keeps).
    For HistGradientBoosting, ``B`` at each root carries the term its stored gain has there
    (:func:`_as_stored`). True if it warned."""
    if read.warnings or np.size(host) == 0:
        return False
    misses = gain_misses(host, B, 1e-3)
    if not gains_mismatch(*misses):
        return False
    compared, off = misses[:2]
    if read.host == "sklearn":
        # its nodes store row counts only: weights not passed show in the gains alone
        warnings.warn(
            f"biased_gain misses the model's own gains at {off} of {compared} "
            "splits: its trees were not grown on these rows with these weights (sample_weight "
            "given to fit but not as train_weight here, other rows, or class weights otherwise "
            "than the estimator's) or with other parameters than it reports (a fit "
            "continued with warm_start after set_params, trees edited), so biased_gain will "
            "not match host_gain; unbiased_gain comes from the same gradients, so with other "
            "weights it measures that other loss",
            UserWarning, stacklevel=3 + extra_frames,
        )
        return True
    warnings.warn(
        f"biased_gain misses the model's own gains at {off} of {compared} "
        "splits: the parameters read from the model are not those its trees were grown "
        "with (continued training that changed max_delta_step, alpha or lambda keeps only "
        "the last ones; a file that lost them): pass the right ones (booster.set_param, "
        "host_params= for a dump); or its first trees were grown from other scores than "
        f"it predicts from ({_OTHER_SCORES}): the gains are then those at the scores it "
        "predicts from. unbiased_gain does not depend on the penalties, but pruned leaves "
        "would",
        UserWarning, stacklevel=3 + extra_frames)
    return True


def check_against_host(host_hessian, hessian, host_gain, gain, read: Model,
                       extra_frames: int = 0) -> bool:
    """The first iteration's replayed hessian sums and gains B (on the training rows) against
    the model's own: one warning where they differ (the hessians first: they name the rows).
    Hessians over the first iteration's nodes, gains over its splits, as
    :func:`_host_and_replay` gives them (in memory or over Dask partitions). True if it
    warned: the later trees then differ for the reason it gave."""
    if _warn_host_hessian(host_hessian, hessian, read, extra_frames + 1):
        return True
    return _warn_host_gain(host_gain, gain, read, extra_frames + 1)


#: a later tree's split disagrees with the model's own gain beyond this relative error; on 20
#: models of both hosts (every objective, 150 trees, exact / hist / approx, categorical splits)
#: no split of a later tree missed it by more than 8e-3 (float32 gradients and sums), where
#: the trees of DART models miss by a median of 50% (tests/test_later_gains.py)
LATER_GAIN_RTOL = 1e-2


@dataclass(frozen=True)
class LaterGains:
    """The splits of the trees after the first iteration whose biased gain B was compared with
    the model's own (``host_gain``): how many, how many disagree, and the first tree that
    does (-1: none); and their nodes whose stored hessian sum was compared with the training
    rows' (leaves included): how many, and how many hold less or more than the rows give
    (beyond 1e-3, float32 sums); and of the compared splits, how many have a gain far above
    rounding (:func:`gain_misses`), and how many of those disagree."""

    compared: int
    off: int
    first_tree: int
    hessians: int = 0
    hessians_below: int = 0
    hessians_above: int = 0
    large: int = 0
    large_off: int = 0

    @property
    def mismatch(self) -> bool:
        """More than 1% of the compared splits disagree, and more than 2 of them or most of
        those with a large gain (:func:`gains_mismatch`)."""
        return gains_mismatch(self.compared, self.off, self.large, self.large_off)

    @property
    def part_of_the_rows(self) -> bool:
        """The stored hessian sums fall short of the training rows' at nearly every node (90%)
        and exceed them at almost none (1%): each tree summed a part of the rows, the others
        weightless in its round (the training hook's held-out rows, a row subsample). Scores
        replayed otherwise than they were grown from (DART) move the hessians both ways, or
        not at all (squared error)."""
        return (self.hessians > 0 and self.hessians_below >= 0.9 * self.hessians
                and self.hessians_above <= 0.01 * self.hessians)


def later_gains(tree, scores: TreeScores) -> tuple[int, ...]:
    """``(compared, disagreeing)`` splits of one tree after the first iteration: B against the
    model's own gain, beyond :data:`LATER_GAIN_RTOL`, leaving out gains below 1e-6 of the
    tree's largest (float32 cancellation); then ``(compared, below, above)`` nodes: the
    model's stored hessian sums against the rows'; then ``(large, disagreeing)`` of the
    compared splits with a gain far above rounding (:func:`gain_misses`, :class:`LaterGains`).
    No pass over rows: B and the sums are the scorer's."""
    inner = tree.internal_nodes
    host = np.asarray(tree.host_gain[inner], dtype=np.float64)
    B = np.asarray(scores.biased[inner], dtype=np.float64)
    stored = np.asarray(tree.host_hessian, dtype=np.float64)
    rows = np.asarray(scores.sums.H, dtype=np.float64)
    known = np.isfinite(stored) & (stored > 0) & np.isfinite(rows)
    hessians = (int(known.sum()), int((stored[known] < rows[known] * (1 - 1e-3)).sum()),
                int((stored[known] > rows[known] * (1 + 1e-3)).sum()))
    compared, off, large, large_off = gain_misses(host, B, LATER_GAIN_RTOL)
    return compared, off, *hessians, large, large_off


def sum_later_gains(parts: list[tuple[int, ...]], start: int = 0) -> LaterGains:
    """:class:`LaterGains` of ``(tree index, *later_gains(...))`` per tree, over the trees
    from ``start`` on (:func:`later_start`)."""
    parts = [p for p in parts if p[0] >= start]
    bad = [p[0] for p in parts if p[2]]
    return LaterGains(*(sum(p[i] for p in parts) for i in (1, 2)), min(bad) if bad else -1,
                      *(sum(p[i] for p in parts) for i in (3, 4, 5, 6, 7)))


def later_start(read: Model) -> int | None:
    """The first tree whose gains are held to the model's own (the trees of the first
    iteration aside), or None: none. None where the reader said why they may differ
    (bagging, GOSS, subsample, a hook's held-out rows, parameters that do not reproduce the
    trees' weights...: ``read.warnings``, but for the defaults a dump's reader assumed,
    ``read.assumed``, which the first iteration checks), and for a model this library
    pruned (``read.pruned_on``): its later trees keep the gains they were grown with, before the
    trees in front of them were pruned. Where training continued from a pruned model
    (``read.written_trees`` below the trees it holds), the trees it added were grown from
    the pruned model's scores: they are held to their own gains, from the first of them.
    HistGradientBoosting's roots are compared with the term their stored gain has
    (:func:`_as_stored`)."""
    if set(read.warnings) - set(read.assumed):  # gain_only among them
        return None
    if read.pruned_on:
        written = read.written_trees
        return written if written is not None and written < read.forest.n_trees else None
    return 0


#: what a model the training hook grew with held-out rows looks like once its record is lost
_HOOK_WITHOUT_RECORD = (
    "a model the training hook grew with held-out rows (UnbiasedLGBM*, UnbiasedXGB*, "
    "uc.adapters.lightgbm.train / uc.adapters.xgboost.train with holdout_fraction > 0) whose "
    "record was lost (saved with the host's save_model and loaded, a LightGBM Booster copied "
    "with copy.deepcopy: prune or score the object the hook returned, or its pickle, which "
    "keep it)")


def _first_iteration(first: list[tuple[np.ndarray, ...]] | None) -> str:
    """What the first iteration's gains said (``first``: its trees' :func:`_host_and_replay`
    tuples; None or empty: not compared), for the later trees' messages: they must not claim
    a match the first iteration did not have."""
    if not first:
        return "the first iteration's gains were not compared"
    misses = gain_misses(np.concatenate([f[2] for f in first]),
                         np.concatenate([f[3] for f in first]), 1e-3)
    if misses[0] == 0:
        return "the first iteration has no gain to compare"
    if misses[1] == 0:
        return "the first iteration matches"
    return (f"the first iteration misses at {misses[1]} of its {misses[0]} splits, too few "
            "to warn of alone")


def check_later_gains(found: LaterGains, read: Model, needed_for: str,
                      extra_frames: int = 0,
                      first: list[tuple[np.ndarray, ...]] | None = None) -> None:
    """Warn (``prune``: refuse) where the biased gains of the trees after the first iteration
    miss the model's own at more than a few splits, and nothing said why (call it only where
    :func:`check_against_host` did not warn: the first iteration's causes carry on). The
    scores the replay rebuilds from the trees are then not those the trees were grown from.

    Unless the trees' stored hessian sums say that each summed a part of the training rows
    (:attr:`LaterGains.part_of_the_rows`: the training hook's held-out rows, a row
    subsample): their stored gains are then those of that part, which the rows given cannot
    reproduce, and the scores are those the trees were grown from (rows left out of a round
    change what is summed, not the scores): a warning, and ``prune`` goes ahead, as where the
    first iteration's hessian sums say so. ``first``: the first iteration's
    :func:`_host_and_replay` tuples, to say what its gains showed."""
    if not found.mismatch or later_start(read) is None:
        return
    first_said = _first_iteration(first)
    if found.part_of_the_rows:
        warnings.warn(
            f"biased_gain misses the model's own gains at {found.off} of {found.compared} "
            f"splits of the trees after the first iteration (first at tree {found.first_tree}; "
            f"{first_said}), and their stored hessian sums are below the "
            f"training rows' at {found.hessians_below} of {found.hessians} nodes (above at "
            f"{found.hessians_above}): each tree was grown on a part of these rows, the others "
            f"weightless in its round: {_HOOK_WITHOUT_RECORD}, or a row subsample (subsample, "
            "bagging) the model no longer records. Its stored gains are those of each round's "
            "part, so biased_gain will not match host_gain (unbiased_gain does not depend on "
            "it); the scores replayed from the trees are those they were grown from, so "
            + ("the pruning went ahead" if needed_for == "prune" else "the scores stand"),
            UserWarning, stacklevel=3 + extra_frames)
        return
    what = (f"biased_gain misses the model's own gains at {found.off} of {found.compared} "
            f"splits of the trees after the first iteration (first at tree {found.first_tree}; "
            f"{first_said}): the scores replayed from its trees are not those "
            "its trees were grown from. Likely causes: starting scores the model does not keep "
            f"({_OTHER_SCORES}), DART (dropout: each tree was grown with "
            "random earlier trees left out, and rescaled afterwards; an XGBoost dump does not "
            "even hold the rescaling, weight_drop), a model continued from one of another "
            "boosting mode (init_model= / xgb_model= from a DART model), an objective= "
            "other than the loss the trees were grown with, trees refreshed or "
            "edited after training, or a model pruned by unbiased_criteria.prune without "
            "training rows and saved where its record is lost (a LightGBM text model, a "
            "dump: its later trees keep the gains of the unpruned model). Not "
            f"{_HOOK_WITHOUT_RECORD}: its trees' stored hessian sums would fall short of the "
            f"training rows' at nearly every node, and they do at {found.hessians_below} of "
            f"{found.hessians} (above at {found.hessians_above})")
    if needed_for == "prune":
        raise UnsupportedModelError(
            f"{what}; pruning would compute its new leaves from the wrong scores, so it is "
            "refused")
    warnings.warn(f"{what}. unbiased_gain scores the splits at the scores the model predicts "
                  "from, not those of its training", UserWarning, stacklevel=3 + extra_frames)


def _as_stored(read: Model, tree, scores: TreeScores) -> TreeScores:
    """``scores`` with ``B`` in the convention of the model's stored gains, to compare with
    them or to store: HistGradientBoosting scores each root from a node value of 0, so a
    root's stored gain is ``B + G²/(H + l2)`` (its ``G``, ``H``); the other hosts store ``B``.
    """
    if read.host != "sklearn" or tree.n_leaves == 1:
        return scores
    B = np.array(scores.biased, dtype=np.float64)
    B[0] += node_score(scores.sums.G[0], scores.sums.H[0], read.split_score)
    return replace(scores, biased=B)


def comparable_gains(read: Model, tree, scores: TreeScores, nodes: np.ndarray | None,
                     g: np.ndarray | None, h: np.ndarray | None, feature_values,
                     rtol: float = 1e-3) -> TreeScores:
    """``scores`` as compared with the model's stored gains (:func:`_as_stored`), where a
    numeric split's ``B`` misses its stored gain beyond ``rtol`` and training rows at the
    node hold the threshold itself: there ``B`` of the other side of that tie, if it is
    nearer the stored gain.

    XGBoost's exact method puts a threshold at the float32 midpoint of two neighbouring
    values; where they are adjacent float32 numbers the midpoint rounds onto one of them (or
    the enumeration takes the lower one), and the stored gain describes the partition that
    sends the rows at the threshold to the other side than the tree does (``x <= t`` where
    the tree routes ``x < t``). ``B`` is right for the tree as it routes (it stays in the
    report); the check must not take such a split for other scores (DART). ``nodes``, ``g``,
    ``h``: the training rows' leaves and weighted gradients and hessians at the scores ``B``
    was computed from; ``feature_values``: :attr:`~unbiased_criteria.model.Router.
    feature_values` (None: the adapter cannot read the rows' values, nothing replaced)."""
    candidates = tie_candidates(read, tree, scores, rtol)
    if feature_values is None or nodes is None or not candidates.size:
        return with_ties(read, tree, scores, candidates, None)
    return with_ties(read, tree, scores, candidates,
                     tie_sums(tree, candidates, nodes, g, h, feature_values))


def tie_candidates(read: Model, tree, scores: TreeScores, rtol: float = 1e-3) -> np.ndarray:
    """The numeric splits of ``tree`` whose ``B`` (as stored, :func:`_as_stored`) misses the
    stored gain beyond ``rtol``: those :func:`comparable_gains` tries the other side of a tie
    at (their training rows at the threshold: :func:`tie_sums`)."""
    if tree.n_leaves == 1:
        return np.zeros(0, dtype=np.intp)
    stored = _as_stored(read, tree, scores)
    inner = tree.internal_nodes
    host = np.asarray(tree.host_gain, dtype=np.float64)
    B = np.asarray(stored.biased, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        miss = np.isfinite(host) & np.isfinite(B) & (np.abs(B - host) > rtol * np.abs(host))
    return inner[miss[inner] & ~tree.categorical[inner] & np.isfinite(tree.threshold[inner])]


def tie_sums(tree, candidates: np.ndarray, nodes: np.ndarray, g: np.ndarray, h: np.ndarray,
             feature_values) -> np.ndarray:
    """``(3, len(candidates))``: the sums of ``g``, ``h`` and the count of the training rows
    at each candidate split's threshold below it (``nodes``: the rows' leaves;
    ``feature_values``: :attr:`~unbiased_criteria.model.Router.feature_values`). Sums over
    rows: partitions' add up (Dask)."""
    out = np.zeros((3, len(candidates)))
    read_features: dict[int, np.ndarray] = {}
    below = tree.descendants
    for i, node in enumerate(candidates):
        j = int(tree.feature[node])
        if j not in read_features:
            read_features[j] = feature_values(j)
        # the rows at the threshold first (few), then those of them below the node
        tie = np.flatnonzero(read_features[j] == tree.threshold[node])
        under = np.zeros(tree.n_nodes, dtype=bool)
        under[below.indices[below.indptr[node]:below.indptr[node + 1]]] = True
        tie = tie[under[nodes[tie]]]
        out[:, i] = float(np.sum(g[tie])), float(np.sum(h[tie])), tie.size
    return out


def with_ties(read: Model, tree, scores: TreeScores, candidates: np.ndarray,
              ties: np.ndarray | None) -> TreeScores:
    """``scores`` as compared with the model's stored gains (:func:`_as_stored`), each
    candidate split's ``B`` (:func:`tie_candidates`) replaced by that of the other side of
    its tie where that is nearer the stored gain; ``ties``: their :func:`tie_sums` (in
    memory, or added over partitions), None: nothing replaced. What
    :func:`comparable_gains` gives; the Dask engine calls it with the partitions' sums."""
    stored = _as_stored(read, tree, scores)
    if ties is None or not len(candidates):
        return stored
    host = np.asarray(tree.host_gain, dtype=np.float64)
    B = np.asarray(stored.biased, dtype=np.float64)
    out = B.copy()
    G, H, score = scores.sums.G, scores.sums.H, read.split_score
    at_left = tree.rules.operator == "<="  # where the rows at the threshold go
    for i, node in enumerate(candidates):
        moved_g, moved_h, count = ties[:, i]
        if not count:
            continue
        L, R = int(tree.left[node]), int(tree.right[node])
        sign = 1.0 if at_left else -1.0  # their sums leave that child for the other
        extra = tree.l2_extra[node]
        now = node_score(G[L], H[L], score, extra) + node_score(G[R], H[R], score, extra)
        other = (node_score(G[L] - sign * moved_g, H[L] - sign * moved_h, score, extra)
                 + node_score(G[R] + sign * moved_g, H[R] + sign * moved_h, score, extra))
        alternative = B[node] + float(other - now)
        if abs(alternative - host[node]) < abs(B[node] - host[node]):
            out[node] = alternative
    return replace(stored, biased=out)


class _FitStages:
    """What each HistGradientBoosting tree's stored values say of the learning rate and
    ``l2_regularization`` it was grown with (:func:`~unbiased_criteria.leaf_params.
    tree_params`, from its training rows' sums), to find a fit continued with
    ``warm_start=True`` after ``set_params`` changed them (or the loss): the estimator keeps
    the last fit's parameters only, and the earlier trees do not follow them."""

    def __init__(self, read: Model):
        self.read = read
        # a pruned model's later trees hold values fitted at its unpruned scores
        self.on = read.host == "sklearn" and not read.warnings and not read.pruned_on
        self.found: dict[int, TreeParams] = {}

    def add(self, index: int, tree, sums) -> None:
        """One tree with more than one leaf, ``sums`` over the rows that grew it."""
        if not self.on or tree.n_leaves == 1:
            return
        use = np.arange(tree.n_nodes) > 0  # the root holds 0, not its value
        self.found[index] = tree_params(tree.value[use], sums.G[use], sums.H[use],
                                        tree.is_leaf[use], tree.shrinkage,
                                        self.read.split_score.l2)

    def changed(self) -> tuple[str, dict[int, float]] | None:
        """``None`` where every tree follows the parameters read, or where those that do not
        are not followed by trees that do (not a continued fit: other rows or weights,
        which :func:`check_against_host` names). Else the message naming what changed, and
        the learning rate of each earlier tree where that alone changed (else empty)."""
        iteration = self.read.forest.tree_iteration
        off = {i: p for i, p in self.found.items() if p.fits != "read"}
        if not off:
            return None
        last = max(int(iteration[i]) for i in off)
        if not any(p.fits == "read" and iteration[i] > last for i, p in self.found.items()):
            return None
        lr, l2 = self.read.forest.trees[-1].shrinkage, self.read.split_score.l2
        fits = {p.fits for p in off.values()}
        names = []
        if any(p.fits in ("shrinkage", "both") and not np.isclose(p.shrinkage, lr, rtol=1e-6)
               for p in off.values()):
            names.append("learning_rate")
        if "both" in fits:
            names.append("l2_regularization")
        if "none" in fits:
            names.append("loss (or class_weight)")
        if "too_few" in fits:
            names.append("learning_rate or l2_regularization (too few values to tell)")
        first = min(off)
        examples = "; ".join(f"tree {i}: learning_rate {p.shrinkage:.6g}, "
                             f"l2_regularization {p.l2:.6g}"
                             for i, p in sorted(off.items())[:3] if p.fits != "none")
        message = (
            f"the trees up to iteration {last} (first at tree {first}) do not follow the "
            f"estimator's learning_rate={lr:g}, l2_regularization={l2:g} and loss, as its "
            "later trees do: it was fitted again with warm_start=True after set_params "
            f"changed {', '.join(names)}, and keeps the last fit's parameters only"
            + (f" ({examples})" if examples else ""))
        exact = fits == {"shrinkage"}
        return message, ({i: p.shrinkage for i, p in off.items()} if exact else {})


#: trees after the first iteration a pruning changes whose gains ``prune`` still holds to the
#: model's own, at the unpruned scores: each costs one more gradient and node-sum pass over
#: the training rows (single-output models; the trees before that iteration cost nothing)
PRUNE_CHECK_TREES = 32


class _PrunedLaterGains:
    """The later trees' ``(index, compared, disagreeing)`` splits (:func:`later_gains`) while
    ``prune`` replaces trees: B as scored where no earlier iteration was changed, else at the
    model's own (unpruned) scores, for :data:`PRUNE_CHECK_TREES` trees; that needs
    single-output models (a class's gradient needs every class's scores, which a visitor
    does not see). The own scores are summed as the host summed them, each unpruned tree
    added to the scores before the first changed iteration (``own``; the first iteration's
    replayed scores hold its trees' init bias, which ``own`` leaves out, as the later
    iterations' do): rebuilt as the replayed scores plus what the changed trees moved,
    float32 margins near 1e4 rounded otherwise than the host's, and late trees' small gains
    missed by more than 1%."""

    def __init__(self, prep: Any):  # api._Prepared: its model, objective and training rows
        self.prep = prep
        self.iteration_of = prep.model.forest.tree_iteration
        self.changed_at: int | None = None  # the first iteration a tree was changed in
        self.iteration = None
        self.pending: list[np.ndarray] | None = None  # this iteration's trees' own values
        self.own: np.ndarray | None = None  # the model's own scores before this iteration
        self.first_iteration = int(np.min(self.iteration_of)) if self.iteration_of.size \
            else 0
        self.left = PRUNE_CHECK_TREES
        self.follow = prep.train is not None and prep.model.forest.n_outputs == 1
        if self.follow:
            self.y, self.weight = prep.objective.read_labels(prep.train.y, prep.train.weight)
        self.parts: list[tuple[int, ...]] = []

    def _at(self, index: int) -> int:
        """The tree's iteration; this iteration's moves join ``delta`` when the next begins
        (the trees of one iteration share the scores before it)."""
        it = int(self.iteration_of[index])
        if it != self.iteration:
            for values in self.pending or ():  # tree by tree, as the host adds them
                self.own += values
            self.pending = None
            self.iteration = it
        return it

    def add(self, step: TreeStep, scores: TreeScores) -> None:
        """Compare a later tree's gains, where its scores are the model's or can be rebuilt."""
        it = self._at(step.index)
        read = self.prep.model
        values = None if self.prep.train is None else self.prep.train.router.feature_values
        if self.changed_at is None or self.changed_at == it:
            self.parts.append((step.index, *later_gains(step.tree, comparable_gains(
                read, step.tree, scores, step.nodes_train, step.g_train, step.h_train, values,
                LATER_GAIN_RTOL))))
            return
        if not self.follow or self.own is None:
            return
        self.left -= 1
        self.follow = self.left > 0
        raw = self.own
        obj = self.prep.objective
        if obj.iteration_scaled:
            obj = obj.at_iteration(self.y, raw, self.weight)
        g, h = obj.grad_hess(self.y, raw, self.weight)
        sums = node_sums(step.tree, step.nodes_train, np.ravel(g), np.ravel(h))
        B = biased_gain(step.tree, sums, self.prep.model.split_score)
        rebuilt = comparable_gains(read, step.tree, replace(scores, biased=B, sums=sums),
                                   step.nodes_train, np.ravel(g), np.ravel(h), values,
                                   LATER_GAIN_RTOL)
        self.parts.append((step.index, *later_gains(step.tree, rebuilt)))

    def moved(self, step: TreeStep, out) -> None:
        """Note the first iteration pruning changes (a tree whose leaves kept their values, as
        a leaf refit at the model's own scores does to float rounding, changes nothing), and
        from it on add every tree's own (unpruned) values to ``own``."""
        it = self._at(step.index)
        dtype = self.prep.model.forest.score_dtype
        if self.own is not None:  # every tree's own values, changed or not
            if self.follow:
                values = step.tree.value.astype(dtype)[step.nodes_train]
                self.pending = (self.pending or []) + [values]
            return
        if self.changed_at is not None or out is None or leaves_unchanged(step.tree, out):
            return
        self.changed_at = it
        if self.follow:  # the scores before it are the model's own
            shift = step.tree.bias if it == self.first_iteration else 0.0
            own = step.raw_train - shift if shift and np.isfinite(shift) else step.raw_train
            self.own = np.array(own, dtype=dtype)
            self.pending = [step.tree.value.astype(dtype)[step.nodes_train]]


def _with_own_gains(trees, tree_iteration: np.ndarray, changed_at: int,
                    own_gains: dict[int, tuple[np.ndarray, np.ndarray | None]],
                    float32: bool = True) -> list:
    """The pruned trees, those of iterations after ``changed_at`` (the first iteration whose
    pruning moved the training rows' scores) holding as their stored gain B at the pruned
    model's own scores, as the replay computed it: the gains of the trees they were grown
    with no longer fit the scores in front of them, and a pruned model saved where its record
    is lost (a LightGBM text model, a dump) would fail :func:`check_later_gains` when read
    again. The first iteration, and the trees before ``changed_at``, keep the host's.
    ``own_gains`` hold B in the host's convention (:func:`_as_stored`: a HistGradientBoosting
    root's with its root term); ``float32`` rounds them as LightGBM and XGBoost store their
    gains (HistGradientBoosting stores float64)."""
    out = list(trees)
    for index, (B, old_to_new) in own_gains.items():
        if tree_iteration[index] <= changed_at:
            continue
        tree = out[index]
        gain = np.full(tree.n_nodes, np.nan)
        if old_to_new is None:
            gain[:] = B
        else:
            kept = old_to_new >= 0
            gain[old_to_new[kept]] = np.asarray(B)[kept]
        gain[tree.is_leaf] = np.nan
        if float32:  # as LightGBM and XGBoost store their gains: a Booster and a dump agree
            # a gain past float32's range (a model confidently wrong on rows, whose hessians
            # vanish: gains of 1e45) is stored as float32's largest, finite in every file,
            # where the cast would give inf with numpy's overflow warning
            big = float(np.finfo(np.float32).max)
            gain = np.clip(gain, -big, big).astype(np.float32).astype(np.float64)
        out[index] = replace(tree, host_gain=gain)
    return out


def leaves_unchanged(tree, out) -> bool:
    """Whether a visitor's ``out`` (``None`` or ``(new_tree, old_to_new)``) leaves every row's
    value of ``tree`` as it was, up to float rounding (a leaf refit at the model's own
    scores): later trees are then replayed at the model's scores and their gains are
    comparable with its own.

    The rounding of a refit is a part of the leaves' spread, not of their size: a first tree
    that holds the init score (labels around 1000 with a spread of 1) has leaves near 1000
    whose pruning moves them by 0.08, which a bound of 1e-4 of their size took for rounding
    (and the later trees were held to the model's gains at the pruned scores). Nor of a
    fixed size: every bound is in the leaves' own units, so that labels (or gradients) of
    any scale are told alike (an absolute 1e-12 took every pruning move of a model of labels
    near 1e-12 for rounding, and prune refused it as DART). A tree of one leaf value has no
    spread: its refit's rounding is a part of that value (without the folded ``bias``).
    """
    if out is None:
        return True
    new, old_to_new = out
    leaves = np.flatnonzero(tree.is_leaf)
    old = np.asarray(tree.value[leaves], dtype=np.float64)
    now = np.asarray(new.value[old_to_new[leaves]], dtype=np.float64)
    if not old.size:
        return True
    spread = float(old.max() - old.min())
    if spread == 0:  # one value: a refit moves it by a part of its own size
        spread = float(np.abs(old[0] - tree.bias)) if np.isfinite(tree.bias) else 0.0
    # plus float64 rounding of the size (1e-6 of it took 0.08 at 1e5 for rounding)
    tolerance = 1e-4 * spread + 1e-12 * np.abs(old).max()
    return bool(np.all(np.abs(now - old) <= tolerance))


def _first_trees(forest) -> int:
    """Trees of the first iteration (trees are iteration-major)."""
    it = np.asarray(forest.tree_iteration)
    return int(np.count_nonzero(it == it.min())) if it.size else 0


def _host_and_replay(tree, scores: TreeScores) -> tuple[np.ndarray, ...]:
    """A tree's ``(host hessian, replayed hessian)`` at every node, leaves included (a row
    routed otherwise than in training may only change a leaf's), and its splits' ``(host
    gain, B)``: the arrays of :func:`check_against_host`."""
    inner = tree.internal_nodes
    host, replayed = tree.host_hessian, scores.sums.H
    if not _stores_hessians(tree):  # HistGradientBoosting: its row counts
        host, replayed = tree.host_count, scores.n_train
    return (host, replayed, tree.host_gain[inner], scores.biased[inner])
