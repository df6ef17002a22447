"""Cross-fitted unbiased importance: every row builds trees in some folds and is held out in one.

A model is fitted on each fold's training rows and its splits are scored with the fold's
held-out rows (:func:`~unbiased_criteria.api.unbiased_importance`); the folds are combined into
one :class:`CrossFittedReport`. Neither a host nor scikit-learn is imported here: the
scikit-learn side (folds from ``cv``, clones of an estimator, the selector) is
``unbiased_criteria.adapters.selection``.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .api import DEFAULT_MEMORY_BUDGET, adapter_for, unbiased_importance
from .options import seed_sequence
from .progress import progress_bar
from .report import _SUMMED, ImportanceReport
from .significance import check_selection, significant
from .validation import check_weight

#: held while a fold's warnings are caught (process-wide state: see cross_fit_folds)
_CAPTURE = threading.RLock()

__all__ = ["CrossFittedReport", "cross_fit_folds"]


class CrossFittedReport(ImportanceReport):
    """An :class:`ImportanceReport` over the models of several folds.

    Per feature (:meth:`to_frame`): the mean over folds of each fold's total (``unbiased_gain``,
    ``biased_gain``, ``host_gain``; a fold where the feature has no split counts 0), the
    standard error of that mean (:meth:`std_error`), and ``splits``, the number of splits
    over all folds. Per split (``splits``): every split of every fold's model, with a ``fold``
    column (0-based, in the splitter's order); ``unbiased_gain`` there is the split's own U.

    The folds form one or more *repetitions*: consecutive folds whose held-out rows are
    disjoint and together cover the same rows (``KFold`` is one repetition,
    ``RepeatedKFold(n_repeats=R)`` is ``R``). With several, "the mean over folds" is the mean
    over repetitions of each repetition's mean over its folds (the plain mean when every
    repetition has as many folds), and the standard error is made per repetition
    (:meth:`std_error_parts`).

    Attributes
    ----------
    n_folds : int
    repetitions : list of int
        The repetition of each fold (0-based, in the splitter's order); all 0 when the folds'
        held-out rows are disjoint.
    n_repetitions : int
    trees_kept : list of int or None
        Trees of each fold's model that were scored (``iterations`` of
        :func:`cross_fitted_importance`); None when every tree was.
    iterations_kept : list of int or None
        The same cut in boosting iterations.
    """

    def __init__(self, splits: pd.DataFrame, feature_names, *, host: str = "",
                 jackknife: np.ndarray | None = None, n_folds: int,
                 trees_kept: list[int] | None = None,
                 iterations_kept: list[int] | None = None,
                 repetitions: Sequence[int] | None = None):
        super().__init__(splits, feature_names, host=host, jackknife=jackknife)
        self.n_folds = int(n_folds)
        self.trees_kept = trees_kept
        self.iterations_kept = iterations_kept
        self.repetitions = _check_repetitions(repetitions, self.n_folds)
        self.n_repetitions = max(self.repetitions, default=-1) + 1

    def _repetition_folds(self) -> list[np.ndarray]:
        """The fold indices of each repetition, in order."""
        labels = np.asarray(self.repetitions, dtype=np.int64)
        return [np.flatnonzero(labels == r) for r in range(self.n_repetitions)]

    def _mean_over_folds(self, per_fold: np.ndarray) -> np.ndarray:
        """Mean over repetitions of each repetition's mean over its folds (axis 0: folds).

        One repetition: the plain mean over folds (the same floating-point sum).
        """
        return np.mean([per_fold[members].mean(axis=0)
                        for members in self._repetition_folds()], axis=0)

    @classmethod
    def from_folds(cls, reports: list[ImportanceReport], *, n_blocks: int = 0,
                   trees_kept: list[int] | None = None,
                   iterations_kept: list[int] | None = None,
                   repetitions: Sequence[int] | None = None) -> CrossFittedReport:
        """Combine one report per fold (same features; ``n_blocks`` jackknife blocks each).

        ``repetitions``: the repetition of each fold (see the class docstring); None when the
        folds' held-out rows are disjoint (one repetition). The reports carry no rows, so
        this cannot be checked here: folds whose held-out rows overlap, passed as one
        repetition, get standard errors that are too small (:func:`cross_fit_folds` finds
        the repetitions from the rows).
        """
        if not reports:
            raise ValueError("reports: expected at least one fold's report")
        names = reports[0].feature_names
        for r in reports[1:]:
            if r.feature_names != names:
                raise ValueError("reports: every fold's model must have the same features")
        splits = pd.concat(
            [r.splits.assign(fold=k) for k, r in enumerate(reports)], ignore_index=True
        )
        splits.insert(0, "fold", splits.pop("fold").astype(np.int64))
        jackknife = None
        if n_blocks >= 2:
            for k, r in enumerate(reports):
                if r.jackknife is not None and r.jackknife.shape[1] != n_blocks:
                    raise ValueError(
                        f"reports: fold {k}'s report has {r.jackknife.shape[1]} jackknife "
                        f"blocks, expected n_blocks={n_blocks} in every fold (their "
                        f"replicates are combined); make every fold's report with the same "
                        f"n_blocks")
            # a fold whose model has no split has no jackknife rows
            jackknife = np.concatenate([
                r.jackknife if r.jackknife is not None else np.zeros((len(r.splits), n_blocks))
                for r in reports
            ])
        return cls(splits, names, host=reports[0].host, jackknife=jackknife,
                   n_folds=len(reports), trees_kept=trees_kept, iterations_kept=iterations_kept,
                   repetitions=repetitions)

    def fold_reports(self) -> list[ImportanceReport]:
        """One :class:`ImportanceReport` per fold (its model's splits, its jackknife rows)."""
        fold = self.splits["fold"].to_numpy()
        out = []
        for k in range(self.n_folds):
            mask = fold == k
            out.append(ImportanceReport(
                self.splits[mask].drop(columns="fold").reset_index(drop=True),
                self.feature_names, host=self.host,
                jackknife=None if self.jackknife is None else self.jackknife[mask],
            ))
        return out

    def fold_frame(self, column: str = "unbiased_gain") -> pd.DataFrame:
        """Each fold's per-feature total of ``column`` (rows: folds, columns: features)."""
        totals = np.zeros((self.n_folds, len(self.feature_names)))
        np.add.at(totals, (self.splits["fold"].to_numpy(np.int64),
                           self.splits["feature_index"].to_numpy(np.int64)),
                  self.splits[column].to_numpy(np.float64))
        return pd.DataFrame(totals, index=pd.RangeIndex(self.n_folds, name="fold"),
                            columns=pd.Index(self.feature_names, name="feature"))

    def std_error_parts(self) -> pd.DataFrame:
        """How :meth:`std_error` is made, per feature.

        Within one repetition (folds whose held-out rows are disjoint; every fold when the
        splitter makes one partition, as ``KFold``), with ``F_k`` fold ``k``'s total and
        ``SE_k`` its block-jackknife standard error (held-out sampling given fold ``k``'s
        model), ``K`` folds:

        * ``within = sqrt(mean_k SE_k**2 / K)``: the error of the mean from the held-out rows
          alone (the folds' held-out rows are disjoint, so their samplings are independent);
        * ``between = sqrt(var_k(F_k) / K)`` (sample variance, ``K - 1`` degrees of
          freedom): the error of the mean judged from how much the folds' totals differ,
          which also contains the variation of the fitted models (training rows);
        * ``std_error = max(within, between)``: the random-effects (DerSimonian-Laird)
          standard error of an equally weighted mean, ``sqrt((mean SE_k**2 + tau**2) / K)``
          with the between-model variance ``tau**2 = max(0, var_k(F_k) - mean SE_k**2)``;
        * ``dof``: ``K - 1`` where ``between`` is used, ``K * (B - 1)`` (``B`` blocks) where
          ``within`` is; :meth:`select` takes Student's t quantile with these.

        Several repetitions (``RepeatedKFold``, a list of folds that repeats a partition):
        each row is held out once per repetition, so the repetitions' estimates ``M_r`` (each
        its folds' mean) are built on the same rows and are correlated, not independent; the
        formulas above, over all folds at once, would count each row as ``R`` independent
        pieces of evidence and give a standard error up to ``sqrt(R)`` times too small. The
        estimate is ``mean_r M_r`` and its standard error the mean of the repetitions'
        ``std_error``: for any correlation, ``sd(mean_r M_r) <= mean_r sd(M_r)`` (the
        standard deviation of a sum is at most the sum of the standard deviations), so it is
        conservative: nearly exact when the repetitions repeat one partition (the same
        folds: the same estimate up to the held-out draws), up to ``sqrt(R)`` too large when
        the repetitions were independent. ``within`` and ``between`` are the means of the
        repetitions' values (``std_error`` is at least their maximum), ``dof`` the smallest
        of the repetitions' (the conservative quantile). Held-out rows that overlap in any
        other way are refused by :func:`cross_fit_folds`.

        ``within`` is NaN without jackknife blocks, ``between`` where a repetition has a
        single fold.
        """
        index = pd.Index(self.feature_names, name="feature")
        totals = self.fold_frame().to_numpy()
        se = np.stack([r.std_error().to_numpy() for r in self.fold_reports()])
        B = 0 if self.jackknife is None else self.jackknife.shape[1]
        parts = [_disjoint_fold_parts(totals[members], se[members], B)
                 for members in self._repetition_folds()]
        within, between, std_error, dof = (np.stack(p) for p in zip(*parts))
        return pd.DataFrame({
            "within": within.mean(axis=0),
            "between": between.mean(axis=0),
            "std_error": std_error.mean(axis=0),
            "dof": dof.min(axis=0),
        }, index=index)

    def std_error(self) -> pd.Series:
        """Standard error of each feature's mean over folds (:meth:`std_error_parts`)."""
        return self.std_error_parts()["std_error"].rename("std_error")

    def select(self, alpha: float = 0.05, correction: str | None = None) -> list[str]:
        """Features whose mean unbiased importance over folds is significantly above 0.

        One-sided test of each feature at level ``alpha``: ``unbiased_gain / std_error``
        against Student's t with the degrees of freedom of :meth:`std_error_parts`;
        ``correction`` as in :meth:`ImportanceReport.select` (None, ``"holm"``,
        ``"fdr_bh"``).
        """
        check_selection(alpha, correction)
        refusal = self._select_refusal()
        if refusal is not None:
            raise ValueError(refusal)
        parts = self.std_error_parts()
        mean = self._mean_over_folds(self.fold_frame().to_numpy())
        keep = significant(mean, parts["std_error"].to_numpy(),
                           parts["dof"].to_numpy(), alpha, correction,
                           names=self.feature_names)
        return [name for name, k in zip(self.feature_names, keep) if k]

    # plot() asks these what to draw: the cross-fitted standard error exists without
    # jackknife blocks too (from two folds), where the base class looks at the blocks only
    def _has_std_error(self) -> bool:
        """Whether :meth:`std_error` is finite: ``n_blocks >= 2`` or at least two folds."""
        return bool(self.std_error_parts()["std_error"].notna().any())

    def _select_refusal(self) -> str | None:
        """Why :meth:`select` has nothing to test, or None when it has."""
        if len(self.splits) == 0:
            return "select() has nothing to test: no fold's model has a split"
        if not self.splits["usable"].any():
            return ("select() has nothing to test: no split had usable evidence (every "
                    "unbiased_gain is 0: a split has fewer than min_k held-out rows in a "
                    "child, or (practically) no curvature among a node's drawn rows: rows of "
                    "weight 0 or the model is confidently wrong about; each fold's warning "
                    "says which); use fewer folds, a smaller min_k, more rows of positive "
                    "weight, or a less certain model")
        if not self._has_std_error():
            return "select() needs standard errors: n_blocks >= 2 or two folds"
        return None

    def to_frame(self) -> pd.DataFrame:
        """Per feature: the mean over folds of each fold's sums, and their standard error.

        Columns: ``unbiased_gain``, ``std_error`` (:meth:`std_error`), ``biased_gain``,
        ``host_gain`` (means over folds of the per-fold sums; with several repetitions, the
        mean of the repetitions' means) and ``splits`` (over all folds).
        """
        out = pd.DataFrame({col: self._mean_over_folds(self.fold_frame(col).to_numpy())
                            for col in _SUMMED})
        counts = np.bincount(self.splits["feature_index"].to_numpy(np.int64),
                             minlength=len(self.feature_names))
        out["splits"] = counts.astype(np.int64)
        out.index = pd.Index(self.feature_names, name="feature")
        out.insert(1, "std_error", self.std_error())
        return out

    def cumulative_importance(self) -> pd.DataFrame:
        """Mean over folds of each fold's :meth:`ImportanceReport.cumulative_importance`.

        A fold whose model has fewer trees keeps its total after its last tree. With several
        repetitions, the mean of the repetitions' means (as :meth:`to_frame`).
        """
        tables = [r.cumulative_importance() for r in self.fold_reports()]
        n = max(len(t) for t in tables)
        index = pd.RangeIndex(n, name="tree")
        filled = [t.reindex(index).ffill().fillna(0.0) for t in tables]
        if self.n_repetitions == 1:
            return sum(filled) / len(filled)
        return sum(sum(filled[k] for k in members) / len(members)
                   for members in self._repetition_folds()) / self.n_repetitions

    def first_trees(self, n_trees: int) -> CrossFittedReport:
        """Every fold's model cut after its first ``n_trees`` trees."""
        reports = [r.first_trees(n_trees) for r in self.fold_reports()]
        n_blocks = 0 if self.jackknife is None else self.jackknife.shape[1]
        return CrossFittedReport.from_folds(reports, n_blocks=n_blocks,
                                            repetitions=self.repetitions)

    def _title(self) -> str:
        reps = f" in {self.n_repetitions} repetitions" if self.n_repetitions > 1 else ""
        return (f"CrossFittedReport({self.host}, {self.n_folds} folds{reps}, "
                f"{len(self.splits)} splits)")


def _disjoint_fold_parts(totals: np.ndarray, se: np.ndarray, n_blocks: int):
    """``within``, ``between``, ``std_error``, ``dof`` per feature of the mean of ``K`` folds
    whose held-out rows are disjoint (rows of ``totals`` and ``se``: folds;
    :meth:`CrossFittedReport.std_error_parts`)."""
    K, n_features = totals.shape
    within = (np.sqrt((se**2).mean(axis=0) / K) if n_blocks >= 2
              else np.full(n_features, np.nan))
    between = (np.sqrt(totals.var(axis=0, ddof=1) / K) if K >= 2
               else np.full(n_features, np.nan))
    use_between = np.isnan(within) | (between > within)
    return (within, between, np.where(use_between, between, within),
            np.where(use_between, K - 1, K * max(n_blocks - 1, 0)))


def _check_repetitions(repetitions, n_folds: int) -> list[int]:
    """The repetition of each fold as a list of int (None: all 0); one error naming it."""
    if repetitions is None:
        return [0] * n_folds
    labels = np.asarray(repetitions)
    if labels.shape != (n_folds,) or (n_folds and labels.dtype.kind not in "iu") \
            or not np.array_equal(np.unique(labels), np.arange(len(np.unique(labels)))):
        raise ValueError(f"repetitions: expected the repetition of each of the {n_folds} "
                         f"folds, integers 0, 1, ... with none skipped, got {repetitions!r}")
    return [int(r) for r in labels]


def _warn_by_folds(said: dict[tuple[type, str], list[int]], n_folds: int) -> None:
    """Each fold's warnings at the caller's line, naming the folds: a text that several folds
    gave (the same model kind, the same cause) once, with all of them."""
    for (category, text), folds in said.items():
        which = (f"fold {folds[0]}" if len(folds) == 1 else
                 f"all {n_folds} folds" if len(folds) == n_folds else
                 "folds " + ", ".join(map(str, folds)))
        of = f" of {n_folds}" if len(folds) < n_folds else ""
        warnings.warn(f"{which}{of}: {text}", category, stacklevel=4)


def _fold_seeds(random_state, n: int) -> list[np.random.SeedSequence]:
    """``np.random.SeedSequence(random_state).spawn(n)``, without changing the caller's object.

    None is 0, as in :func:`unbiased_importance`: results repeat; a Generator or RandomState
    gives fresh draws.
    """
    if random_state is None:
        random_state = 0
    elif not isinstance(random_state, np.random.Generator | np.random.RandomState):
        seed_sequence(random_state, "random_state")  # one error naming it, as elsewhere
    if isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(2**63))
    elif isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(2**31))
    base = (random_state if isinstance(random_state, np.random.SeedSequence)
            else np.random.SeedSequence(random_state))
    return [np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, k),
                                   pool_size=base.pool_size) for k in range(n)]


def _rows(a, index: np.ndarray):
    """Rows ``index`` of a numpy array, pandas object or CSR matrix."""
    return a.iloc[index] if hasattr(a, "iloc") else a[index]


def _n_rows(a) -> int:
    return a.shape[0] if hasattr(a, "shape") else len(a)


def _fold_rows(rows, n: int, k: int, kind: str) -> np.ndarray:
    """Fold ``k``'s ``kind`` rows as integer indices (from indices or a boolean mask)."""
    rows = np.asarray(rows)
    if rows.dtype == bool and rows.shape == (n,):
        rows = np.flatnonzero(rows)
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or rows.size == 0 \
            or rows.min() < 0 or rows.max() >= n:
        raise ValueError(f"cv: fold {k}'s {kind} rows must be a non-empty array of row "
                         f"indices in [0, {n}) (or a boolean mask of {n} rows)")
    return rows


def _fold_repetitions(helds: list[np.ndarray], n: int) -> list[int]:
    """The repetition of each fold: consecutive folds whose held-out rows are disjoint and
    together cover every row that any fold holds out.

    Folds whose held-out rows are disjoint (``KFold``, ``GroupKFold``, ``TimeSeriesSplit``)
    are one repetition; ``RepeatedKFold`` / ``RepeatedStratifiedKFold`` (or a list that
    repeats a partition) are one per repeat. Any other overlap (``ShuffleSplit``, an arbitrary
    list) is refused: a row held out by two folds would count as independent evidence twice,
    and no standard error here accounts for it. Exact, from the index sets.
    """
    held_out = np.zeros(n, dtype=bool)
    for h in helds:
        held_out[h] = True
    n_held_out = int(held_out.sum())
    owner = np.full(n, -1, dtype=np.int64)  # the fold of the current repetition holding a row
    covered, repetition, first, out = 0, 0, 0, []
    for k, h in enumerate(helds):
        h = np.unique(h)  # a row listed twice in one fold is not an overlap between folds
        taken = owner[h]
        if (taken >= 0).any():
            raise ValueError(
                f"cv: the held-out rows of folds {int(taken[taken >= 0][0])} and {k} overlap, "
                f"and the folds are not repetitions of one partition (consecutive folds whose "
                f"held-out rows are disjoint and cover the same rows, as KFold or "
                f"RepeatedKFold make); the standard error would count a row held out twice "
                f"as two independent pieces of evidence. Use a splitter whose held-out sets "
                f"are disjoint within each repeat (KFold, StratifiedKFold, GroupKFold, "
                f"RepeatedKFold, RepeatedStratifiedKFold), not ShuffleSplit or overlapping "
                f"lists of folds")
        owner[h] = k
        covered += h.size
        out.append(repetition)
        if covered == n_held_out:  # this repetition holds out every row: the next starts
            owner[:] = -1
            covered, repetition, first = 0, repetition + 1, k + 1
    if covered:
        last = len(helds) - 1
        which = f"fold {first} holds" if first == last else f"folds {first} to {last} hold"
        raise ValueError(
            f"cv: {which} out {covered} of the {n_held_out} "
            f"rows that the folds before them hold out; the folds are not repetitions of one "
            f"partition (consecutive folds whose held-out rows are disjoint and cover the same "
            f"rows, as KFold or RepeatedKFold make). Use a splitter whose held-out sets are "
            f"disjoint within each repeat and cover the same rows in every repeat")
    return out


def _disjoint_folds(helds: list[np.ndarray], n: int) -> np.ndarray:
    """``D[k, j]``: fold ``j`` is not ``k`` and holds out none of fold ``k``'s held-out rows."""
    K = len(helds)
    disjoint = np.zeros((K, K), dtype=bool)
    mask = np.zeros(n, dtype=bool)
    for k, h in enumerate(helds):
        mask[h] = True
        disjoint[k] = [j != k and not mask[other].any() for j, other in enumerate(helds)]
        mask[h] = False
    return disjoint


def _iteration_cuts(reports: list[ImportanceReport], tree_iterations: list[np.ndarray],
                    iterations, helds: list[np.ndarray], n: int) -> list[int]:
    """Boosting iterations to keep of each fold's model.

    ``"best"``: for fold ``k``, the number of iterations ``T`` that maximises the summed
    curves ``C_j(T)`` of the other folds ``j`` whose held-out rows share none with fold
    ``k``'s (every other fold of one partition), ``C_j(T)`` being the total U over all
    features of fold ``j``'s first ``T`` iterations (fold ``j``'s model, its own held-out
    rows). Fold ``k``'s held-out rows never choose fold ``k``'s cut, so choosing cannot favour
    a feature through them (in another repetition, a fold that holds out some of them would).
    """
    n_iter = [int(ti.max()) + 1 if ti.size else 0 for ti in tree_iterations]
    if iterations != "best":
        return [min(int(iterations), n) for n in n_iter]
    if len(reports) < 2:
        raise ValueError('iterations="best" needs at least two folds (the cut of each fold '
                         "is chosen on the others)")
    disjoint = _disjoint_folds(helds, n)
    alone = np.flatnonzero(~disjoint.any(axis=1))
    if alone.size:
        raise ValueError(f'iterations="best": every other fold holds out some of fold '
                         f"{int(alone[0])}'s held-out rows, so no fold can choose its cut "
                         f"(it is chosen on folds that share none of them)")
    longest = max(n_iter)
    curves = np.zeros((len(reports), longest + 1))
    for j, (report, ti) in enumerate(zip(reports, tree_iterations)):
        per_iteration = np.bincount(ti[report.splits["tree"].to_numpy(np.int64)],
                                    weights=report.splits["unbiased_gain"].to_numpy(np.float64),
                                    minlength=longest)
        curves[j, 1:] = np.cumsum(per_iteration)
    return [min(int(np.argmax(curves[disjoint[k]].sum(axis=0))), n)
            for k, n in enumerate(n_iter)]


def cross_fit_folds(
    fit: Callable[[Any, Any, np.ndarray | None], Any],
    X,
    y,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    sample_weight=None,
    iterations: int | str | None = None,
    objective=None,
    n_draws: int = 1,
    min_k: int = 5,
    n_blocks: int = 20,
    random_state=None,
    progress: bool = False,
    memory_budget: float = DEFAULT_MEMORY_BUDGET,
) -> CrossFittedReport:
    """The cross-fitted report of the models ``fit`` returns on each fold's training rows.

    Host-free and scikit-learn-free: :func:`unbiased_criteria.cross_fitted_importance` (in the
    adapters) makes the folds and ``fit`` (a clone of an estimator, fitted) and calls this.

    Parameters
    ----------
    fit : callable
        ``fit(X_train, y_train, weight_train) -> model``: a new model fitted on those rows (a
        LightGBM / XGBoost Booster or estimator).
    X, y : array-like
        numpy, pandas or CSR rows; ``y`` of the same length.
    folds : sequence of (train, held) integer index arrays
        Held-out rows disjoint across folds, or consecutive repetitions of such folds each
        covering the same rows (``RepeatedKFold``); any other overlap between held-out sets
        is refused, naming ``cv`` (:meth:`CrossFittedReport.std_error_parts`).
    sample_weight : array-like, optional
    iterations, objective, n_draws, min_k, n_blocks, random_state, progress, memory_budget
        As in :func:`unbiased_criteria.cross_fitted_importance`.
    """
    if iterations is not None and iterations != "best" and (
            isinstance(iterations, bool) or not isinstance(iterations, int | np.integer)
            or iterations < 1):
        raise ValueError(f'iterations: expected None, "best" or a positive integer, got '
                         f"{iterations!r}")
    if y is None:
        raise ValueError("y: the labels are required")
    if hasattr(X, "tocsr"):  # scipy sparse: CSR rows can be indexed (a new matrix)
        X = X.tocsr()
    if not hasattr(X, "shape"):  # lists: rows are indexed by arrays below
        X = np.asarray(X)
    if not hasattr(y, "shape"):
        y = np.asarray(y)
    n = _n_rows(X)
    if _n_rows(y) != n:
        raise ValueError(f"y: expected {n} labels (one per row of X), got {_n_rows(y)}")
    # as unbiased_importance checks its weights (float32 range included), naming the argument
    sample_weight = check_weight(sample_weight, n, "sample_weight")
    if sample_weight is not None and not sample_weight.any():
        raise ValueError("sample_weight is zero for every row: those rows carry no evidence")
    y_values = np.asarray(y)
    if y_values.dtype.kind == "f" and not np.all(np.isfinite(y_values)):
        # before the folds, whose checks would name y_valid or y_train
        raise ValueError("y: contains NaN or infinite labels")
    folds = [(_fold_rows(train, n, k, "training"), _fold_rows(held, n, k, "held-out"))
             for k, (train, held) in enumerate(folds)]
    if not folds:
        raise ValueError("cv: expected at least one fold")
    # before any fit: folds whose held-out rows overlap are refused unless they repeat a
    # partition, whose repetitions the standard error then keeps apart
    repetitions = _fold_repetitions([held for _, held in folds], n)
    if sample_weight is not None:  # before any fit; the folds' checks would name valid_weight
        for k, (train, held) in enumerate(folds):
            for kind, rows in (("training", train), ("held-out", held)):
                if not sample_weight[rows].any():
                    raise ValueError(
                        f"sample_weight: every {kind} row of fold {k} has weight 0; shuffle "
                        f"the rows into the folds (e.g. cv=KFold(5, shuffle=True)) or drop "
                        f"the rows of weight 0")
    # every fold the same blocks (their replicates are combined), none of them empty. A fold
    # of one held-out row is left out of the count: no split has a row in both children
    # (min_k >= 1), so its U and every replicate are 0 with any blocks (unbiased_importance
    # keeps n_blocks for one row); with it, a 2-row fold had 2 blocks and the others 20
    sizes = [held.size for _, held in folds]
    smallest = min((size for size in sizes if size >= 2), default=0)
    if isinstance(n_blocks, int | np.integer) and not isinstance(n_blocks, bool) \
            and 2 <= smallest < n_blocks:
        which = ("the smallest fold" if min(sizes) >= 2 else
                 "the smallest fold of more than one held-out row")
        warnings.warn(f"n_blocks={n_blocks} but {which} holds {smallest} held-out "
                      f"rows: the standard errors use {smallest} jackknife blocks in every "
                      "fold", UserWarning, stacklevel=3)
        n_blocks = smallest
    seeds = _fold_seeds(random_state, len(folds))
    reports: list[ImportanceReport] = []
    tree_iterations: list[np.ndarray] = []
    bar = progress_bar(len(folds), progress, "folds")
    said: dict[tuple[type, str], list[int]] = {}  # each fold's warnings: the folds per text
    try:
        for (train, held), seed in zip(folds, seeds):
            w_train = None if sample_weight is None else sample_weight[train]
            w_held = None if sample_weight is None else sample_weight[held]
            X_train, y_train = _rows(X, train), _rows(y, train)
            model = fit(X_train, y_train, w_train)
            # catch_warnings swaps the process's filters: two threads inside it at once
            # would leave each other's behind (Python < 3.14), so one fold at a time
            with _CAPTURE, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                reports.append(unbiased_importance(
                    model, X_train, y_train, _rows(X, held), _rows(y, held),
                    train_weight=w_train, valid_weight=w_held, objective=objective,
                    n_draws=n_draws, min_k=min_k, random_state=seed, n_blocks=n_blocks,
                    progress=progress, memory_budget=memory_budget,
                ))
            for w in caught:
                folds_saying = said.setdefault((w.category, str(w.message)), [])
                if not folds_saying or folds_saying[-1] != len(reports) - 1:
                    folds_saying.append(len(reports) - 1)
            if iterations is not None:
                forest = adapter_for(model).read_model(model).forest
                tree_iterations.append(np.asarray(forest.tree_iteration, dtype=np.int64))
            bar.update()
    finally:
        bar.close()
    _warn_by_folds(said, len(folds))  # after the folds (a failed fold's error stands alone)
    trees_kept = iterations_kept = None
    if iterations is not None:
        iterations_kept = _iteration_cuts(reports, tree_iterations, iterations,
                                          [held for _, held in folds], n)
        trees_kept = [int(np.searchsorted(ti, cut)) for ti, cut in
                      zip(tree_iterations, iterations_kept)]
        reports = [r.first_trees(t) for r, t in zip(reports, trees_kept)]
    return CrossFittedReport.from_folds(reports, n_blocks=n_blocks, trees_kept=trees_kept,
                                        iterations_kept=iterations_kept,
                                        repetitions=repetitions)
