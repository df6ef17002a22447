"""Boosting with the native grower: the paper's UnbiasedGBM, host-free.

Each iteration draws the three-way split of the training rows (D : D1' : D2' in ``ratios``;
a 2-tuple means D1' = D2'), takes gradients at the running raw scores, grows one tree per
output with :func:`unbiased_criteria.grower.grow_tree`, and sets every leaf to the Newton
step of *all* training rows in it (the host's regularised formula), times the learning rate.
The split is re-drawn every iteration by default (``redraw``), so every row builds some
trees. Evaluation sets are scored by the IR's own routing; early stopping keeps the trees up
to the best iteration.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .binning import BinMapper, fit_bins
from .gains import NodeSums, SplitScore, biased_gain, tree_generator
from .grower import GrowerParams, RowSets, feature_major, grow_tree
from .metrics import Metric
from .objectives import Objective
from .options import seed_sequence
from .trees import Forest

__all__ = ["GBMParams", "GBMResult", "all_rows_gains", "fit_gbm", "split_rows"]

log = logging.getLogger(__name__)

_SPLIT_KEY = 2**42  # spawn key of the stream that draws the three-way splits
_BLOCKS_KEY = 2**42 + 1  # spawn key of the stream that assigns jackknife blocks


@dataclass(frozen=True)
class GBMParams:
    """Boosting parameters; ``grower`` holds the per-tree ones.

    ``ratios``: relative sizes of D, D1', D2' (``(1, 1, 1)``, the paper's best in general), or
    of D, D1' with D2' = D1' (``(1, 1)``). Ignored with ``grower.criterion == "biased"``
    (every row is in D). ``redraw``: a new split every iteration (else one for the run).
    ``n_blocks``: jackknife blocks of the training rows (fixed for the run) for the standard
    errors of the importance (< 2: none).
    """

    n_estimators: int = 100
    learning_rate: float = 0.1
    max_bin: int = 255
    ratios: tuple = (1.0, 1.0, 1.0)
    redraw: bool = True
    grower: GrowerParams = field(default_factory=GrowerParams)
    early_stopping_rounds: int | None = None
    n_blocks: int = 0

    def __post_init__(self):
        r = tuple(float(v) for v in self.ratios)
        if len(r) not in (2, 3) or not all(np.isfinite(r)) or min(r) <= 0:
            raise ValueError(
                f"ratios: expected 2 or 3 positive numbers (|D| : |D1'| [: |D2'|]), got "
                f"{self.ratios!r}")
        object.__setattr__(self, "ratios", r)
        if int(self.n_estimators) < 1:
            raise ValueError(
                f"n_estimators: expected a positive integer, got {self.n_estimators!r}")
        if not float(self.learning_rate) > 0:
            raise ValueError(
                f"learning_rate: expected a positive number, got {self.learning_rate!r}")


def split_rows(n: int, ratios: tuple, rng: np.random.Generator) -> RowSets:
    """A random split of ``n`` rows into D, D1', D2' in proportion to ``ratios``."""
    perm = rng.permutation(n)
    share = np.asarray(ratios) / np.sum(ratios)
    cuts = np.rint(np.cumsum(share)[:-1] * n).astype(np.int64)
    parts = np.split(perm, cuts)
    if len(parts) == 2:
        return RowSets(build=parts[0], select=parts[1], decide=parts[1])
    return RowSets(build=parts[0], select=parts[1], decide=parts[2])


@dataclass
class GBMResult:
    """A fitted forest and what its growth measured.

    Attributes
    ----------
    forest : Forest
        The trees (leaf values shrunk), the init scores in ``base_score``, the grower's rules.
    binner : BinMapper
    candidates : pandas.DataFrame
        Every candidate scored on D1' (see :class:`~unbiased_criteria.grower.GrownTree`), with
        ``tree`` and ``iteration``; only trees kept after early stopping.
    jackknife : array (len(candidates), n_blocks) or None
        Each candidate's U with one block of training rows left out of its D1' ratios.
    evals : dict
        Metric per iteration for each evaluation set, by name.
    best_iteration : int
        Iterations kept (all of them without early stopping).
    node_sums : tuple of NodeSums or None
        Per tree, every node's gradient and hessian sums over all training rows (at the
        scores the tree was grown from): :func:`all_rows_gains`. None in a result made
        before they were kept.
    """

    forest: Forest
    binner: BinMapper
    candidates: pd.DataFrame
    evals: dict
    best_iteration: int
    jackknife: np.ndarray | None = None
    node_sums: tuple[NodeSums, ...] | None = None


def fit_gbm(
    X: np.ndarray,
    y: np.ndarray,
    objective: Objective,
    params: GBMParams,
    *,
    weight: np.ndarray | None = None,
    feature_names: Sequence[str] | None = None,
    eval_sets: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray | None]] = (),
    metric: Metric | None = None,
    random_state=None,
    categorical: Sequence[int] = (),
) -> GBMResult:
    """Boost ``params.n_estimators`` iterations of the native grower.

    Parameters
    ----------
    X : float array (n, n_features)
        Read as float32; NaN is missing.
    y : array (n,)
        Labels as ``objective`` expects them (checked by it).
    objective : Objective
        Gradients, hessians and the init score.
    params : GBMParams
    weight : array (n,), optional
    feature_names : sequence of str, optional
    eval_sets : sequence of (name, X, y, weight)
        Scored every iteration with ``metric``; the last one drives early stopping.
    metric : Metric, optional
        Needed with ``eval_sets``.
    random_state : int, SeedSequence, Generator, RandomState or None
        Seeds the row splits and the k-draws (one stream per tree); a Generator or
        RandomState gives one draw of its stream.
    categorical : sequence of int
        Categorical features (non-negative integer codes, NaN missing): split by category
        sets (one-vs-rest up to ``grower.max_cat_to_onehot`` categories, else LightGBM's
        many-vs-many search).
    """
    if objective.renews_leaves:
        raise ValueError(f"objective {objective.name!r} renews its leaves; the grower refuses it")
    with np.errstate(over="ignore"):  # beyond float32: inf, refused by fit_bins
        X = np.asarray(X, dtype=np.float32)
    n, p = X.shape
    y = np.asarray(y)
    objective.check_labels(np.asarray(y, dtype=np.float64), "y")
    big = np.abs(np.asarray(y, dtype=np.float64)) > np.finfo(np.float32).max
    if big.any():  # float32 gradients of such labels overflow: the init score said it first
        raise ValueError(f"y: labels must lie within float32's range (|y| <= 3.4e38), got "
                         f"{float(np.asarray(y, dtype=np.float64)[big][0])!r}")
    K = objective.n_outputs
    seed = seed_sequence(random_state, "random_state")
    binner = fit_bins(X, params.max_bin, categorical)
    codes = feature_major(binner.transform(X))
    with np.errstate(divide="ignore"):  # log(0): checked on the next line
        base = np.asarray(objective.init_score(y, weight), dtype=np.float64).reshape(K)
    if not np.all(np.isfinite(base)):
        raise ValueError(f"y: the {objective.name} objective's initial score is not finite "
                         f"({base}); e.g. poisson with every (weighted) label 0")
    raw = np.tile(base, (n, 1))
    evals_raw = [np.tile(base, (np.shape(ex)[0], 1)) for _, ex, _, _ in eval_sets]
    evals_X = [np.asarray(ex, dtype=np.float32).astype(np.float64) for _, ex, _, _ in eval_sets]
    history: dict[str, list[float]] = {name: [] for name, *_ in eval_sets}
    split_rng = tree_generator(seed, _SPLIT_KEY)
    unbiased = params.grower.criterion == "unbiased"
    sets = split_rows(n, params.ratios, split_rng) if unbiased else RowSets(np.arange(n))
    n_blocks = int(params.n_blocks) if unbiased and params.n_blocks >= 2 else 0
    blocks = (tree_generator(seed, _BLOCKS_KEY).permutation(n) % n_blocks).astype(np.intp) \
        if n_blocks else None
    jacks, sums = [], []

    trees, parts = [], []
    best_score, best_iter, since_best = None, 0, 0
    for it in range(int(params.n_estimators)):
        if unbiased and params.redraw and it > 0:
            sets = split_rows(n, params.ratios, split_rng)
        g, h = objective.grad_hess(y, raw if K > 1 else raw[:, 0], weight)
        g, h = g.reshape(n, K), h.reshape(n, K)
        for k in range(K):
            t = it * K + k
            grown = grow_tree(codes, g[:, k], h[:, k], sets, binner, params.grower,
                              tree_generator(seed, t), blocks, n_blocks, weight)
            jacks.append(grown.jackknife)
            sums.append(grown.sums)
            tree = _shrunk(grown.tree, params.learning_rate)
            trees.append(tree)
            raw[:, k] += tree.value[grown.row_leaf]
            for ex, er in zip(evals_X, evals_raw):
                er[:, k] += tree.predict(ex)
            size = len(grown.candidates["node"])
            parts.append({"tree": np.full(size, t), "iteration": np.full(size, it),
                          **grown.candidates})
        for (name, _, ey, ew), er in zip(eval_sets, evals_raw):
            history[name].append(metric(ey, er if K > 1 else er[:, 0], ew, objective))
            if np.isnan(history[name][-1]):  # it would silently stall early stopping
                raise ValueError(f"eval_set {name}: metric {metric.name!r} is NaN (e.g. AUC "
                                 f"of a set with one class)")
        if eval_sets and params.early_stopping_rounds:
            score = history[eval_sets[-1][0]][-1]
            better = best_score is None or (
                score > best_score if metric.higher_is_better else score < best_score)
            if better:
                best_score, best_iter, since_best = score, it + 1, 0
            else:
                since_best += 1
                if since_best >= params.early_stopping_rounds:
                    log.info("early stopping at iteration %d, best %d", it + 1, best_iter)
                    break
    n_iter = len(trees) // K
    if not (eval_sets and params.early_stopping_rounds):
        best_iter = n_iter
    trees = trees[: best_iter * K]
    # one DataFrame at the end (cheaper than one per tree); trees without candidates hold
    # float placeholders that must not turn the integer columns to float
    kept = [c for c in parts[: best_iter * K] if len(c["node"])] or parts[:1]
    candidates = pd.DataFrame({key: np.concatenate([c[key] for c in kept])
                               for key in kept[0]}) if kept else pd.DataFrame()
    names = tuple(feature_names) if feature_names is not None else tuple(
        f"Column_{j}" for j in range(p))
    forest = Forest(
        trees=tuple(trees),
        tree_class=np.tile(np.arange(K), best_iter),
        tree_iteration=np.repeat(np.arange(best_iter), K),
        base_score=base,
        n_features=p,
        feature_names=names,
    )
    jackknife = np.concatenate(jacks[: best_iter * K]) if n_blocks and jacks else None
    return GBMResult(forest=forest, binner=binner, candidates=candidates, evals=history,
                     best_iteration=best_iter, jackknife=jackknife,
                     node_sums=tuple(sums[: best_iter * K]))


def all_rows_gains(result: GBMResult, score: SplitScore) -> Forest:
    """``result.forest`` with each split's stored gain (``Tree.host_gain``) the gain ``B``
    over all training rows under ``score``, the host's regularisation.

    The grower keeps as ``host_gain`` its ``B`` on the rows of D that chose the split; a host
    that grew the same tree on all training rows would have stored ``B`` over all of them
    (LightGBM's ``split_gain``, XGBoost's ``loss_chg``), as a replay on the training rows
    recomputes it: an export holding these reads back like any host model (its leaves are
    already the Newton steps of all rows). ``score`` is the regularisation the host's reader
    will take from the export (XGBoost: float32 weights and its version's L1 rule). The gains
    are rounded to float32 as the hosts store them; one beyond float32's range is ``inf``, as
    the host's own cast makes it (LightGBM writes and reads ``inf``).

    Raises
    ------
    ValueError
        ``result`` does not hold the sums (made before they were kept): fit again.
    """
    if result.node_sums is None or len(result.node_sums) != result.forest.n_trees:
        raise ValueError("the fitted result does not keep its trees' sums over all training "
                         "rows (fitted by an earlier version): fit the estimator again")
    trees = []
    for tree, sums in zip(result.forest.trees, result.node_sums, strict=True):
        # float32, as both hosts store their gains: one beyond float32's range is inf, as a
        # host's cast makes it (not a warning; LightGBM writes inf, clipping would rank by the
        # clip)
        with np.errstate(over="ignore"):
            gain = biased_gain(tree, sums, score).astype(np.float32).astype(np.float64)
        gain.setflags(write=False)
        trees.append(replace(tree, host_gain=gain))
    return result.forest.with_trees(trees)


def _shrunk(tree, rate: float):
    """``tree`` with every node value times the learning rate."""
    value = tree.value * rate
    value.setflags(write=False)
    return replace(tree, value=value, shrinkage=float(rate))
