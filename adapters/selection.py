"""Cross-fitted unbiased importance and a feature selector, the scikit-learn way.

Installed as ``unbiased_criteria.adapters.selection`` and reached as
``unbiased_criteria.cross_fitted_importance`` / ``unbiased_criteria.UnbiasedSelector``. It
holds what needs scikit-learn (the ``sklearn`` extra): folds from ``cv`` as
``cross_val_score`` makes them, a clone of the estimator per fold, the ``SelectorMixin``
transformer. The statistics (combining the folds, standard errors, the iteration cut) are the
core's :mod:`unbiased_criteria.cross_fit`.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone, is_classifier
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.feature_selection import SelectorMixin
from sklearn.model_selection import check_cv
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from unbiased_criteria.api import DEFAULT_MEMORY_BUDGET
from unbiased_criteria.cross_fit import CrossFittedReport, _fold_rows, cross_fit_folds
from unbiased_criteria.parallel import resolve_n_jobs
from unbiased_criteria.significance import CORRECTIONS

__all__ = ["cross_fitted_importance", "UnbiasedSelector"]


def cross_fitted_importance(
    estimator,
    X,
    y,
    *,
    cv=5,
    groups=None,
    sample_weight=None,
    fit_params: dict | None = None,
    iterations: int | str | None = None,
    objective=None,
    n_draws: int = 1,
    min_k: int = 5,
    n_blocks: int = 20,
    random_state=None,
    n_jobs: int | None = None,
    progress: bool = False,
    memory_budget: float = DEFAULT_MEMORY_BUDGET,
) -> CrossFittedReport:
    """Unbiased importance with every row used both to build trees and as held-out evidence.

    For each fold of ``cv``, a clone of ``estimator`` is fitted on the other folds' rows and
    its splits are scored with the fold's rows (:func:`~unbiased_criteria.unbiased_importance`,
    G from the training rows, ratios from the held-out ones). Per feature, the result is the
    mean over folds of each fold's total; its standard error combines the held-out sampling
    (each fold's block jackknife) with the differences between the folds
    (:meth:`~unbiased_criteria.CrossFittedReport.std_error_parts`); with a repeated splitter,
    per repetition.

    Parameters
    ----------
    estimator : LightGBM, XGBoost or HistGradientBoosting scikit-learn estimator
        Not fitted or fitted: it is cloned (:func:`sklearn.base.clone`) for every fold and
        never changed.
    X : array-like (numpy, pandas with category columns, scipy sparse)
    y : array-like
    cv : int, scikit-learn splitter or iterable of (train, test) indices, default 5
        As in :func:`sklearn.model_selection.cross_val_score`: an int gives
        ``StratifiedKFold`` for classifiers and ``KFold`` otherwise (neither shuffles). The
        folds' held-out (test) rows must be disjoint (``KFold``, ``StratifiedKFold``,
        ``GroupKFold``...) or consecutive repetitions of such folds, each holding out the
        same rows (``RepeatedKFold``, ``RepeatedStratifiedKFold``, a list that repeats a
        partition): each repetition is combined as one partition and the standard error is
        the mean of the repetitions' (conservative; see
        :meth:`~unbiased_criteria.CrossFittedReport.std_error_parts`). Any other overlap
        (``ShuffleSplit``, overlapping lists) is refused with a ``ValueError`` naming ``cv``
        before any fold is fitted: a row held out twice is not two independent pieces of
        evidence.
    groups : array-like, optional
        Passed to the splitter (``GroupKFold``...).
    sample_weight : array-like, optional
        Row weights: passed to ``fit`` for the training rows and used as training and
        held-out weights in the unbiased gain.
    fit_params : dict, optional
        Further keyword arguments of ``estimator.fit`` (not sliced by rows; row weights go
        in ``sample_weight``, which is).
    iterations : int, "best" or None
        Boosting iterations of each fold's model to score. None: all. An int: the first
        ``iterations``. ``"best"``: for each fold, the cut where the other folds' total U over
        all features (their held-out evidence) peaks; a long model's later trees split
        informative features on noise and pull their totals down. The cuts are in the
        report's ``iterations_kept``.
    objective, n_draws, min_k, memory_budget
        As in :func:`~unbiased_criteria.unbiased_importance`.
    n_blocks : int
        As in :func:`~unbiased_criteria.unbiased_importance`, the same in every fold (their
        replicates are combined): at most the held-out rows of the smallest fold of two rows
        or more (warned). A fold of one held-out row has no usable split: its U and every
        replicate are 0.
    random_state : int, numpy SeedSequence / Generator / RandomState, or None
        Seeds the held-out draws: fold ``k`` uses ``SeedSequence(random_state).spawn(K)[k]``
        as the ``random_state`` of ``unbiased_importance``. None is 0, so results repeat
        (pass a Generator for fresh draws). The estimator's own ``random_state`` is left as
        it is.
    n_jobs : int, optional
        Set as every clone's ``n_jobs`` (threads of the host); folds run one after another.
        Checked as in :func:`~unbiased_criteria.unbiased_importance`: a positive integer, a
        negative one (-1: all cores, -2: all but one) or None.
    progress : bool
        Progress bars over folds and, within each fold, over trees.

    Returns
    -------
    CrossFittedReport
        An :class:`~unbiased_criteria.ImportanceReport`: ``to_frame()`` per feature (means
        over folds), ``splits`` per split with a ``fold`` column, ``select(alpha)``.
    """
    _check_estimator(estimator)  # before fitting anything
    resolve_n_jobs(n_jobs)  # as unbiased_importance checks it: 0 or '2' reached the host
    if fit_params is not None and not isinstance(fit_params, Mapping):
        raise ValueError(f"fit_params must be a dict of keyword arguments of estimator.fit, "
                         f"got {type(fit_params).__name__}")
    if fit_params is not None and "sample_weight" in fit_params:
        # fit_params are not sliced by rows: the full weights reached each fold's fit
        raise ValueError("fit_params: pass the row weights as sample_weight=, which is cut "
                         "into each fold's rows and also weights the unbiased gain")
    if y is None:
        raise ValueError("y: the labels are required")
    if hasattr(X, "tocsr"):  # scipy sparse: CSR rows can be indexed (a new matrix)
        X = X.tocsr()
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
    n_labels = y.shape[0] if hasattr(y, "shape") else len(y)
    if n_labels != n_rows:  # before the splitter, whose message names neither argument
        raise ValueError(f"y: expected {n_rows} labels (one per row of X), got {n_labels}")
    splitter = check_cv(cv, y, classifier=is_classifier(estimator))
    folds = [(_fold_rows(train, n_rows, k, "training"), _fold_rows(held, n_rows, k, "held-out"))
             for k, (train, held) in enumerate(splitter.split(X, y, groups))]
    if is_classifier(estimator):
        _check_fold_classes(np.asarray(y), folds)

    def fit(X_train, y_train, w_train):
        model = clone(estimator)
        if n_jobs is not None and "n_jobs" in model.get_params():
            model.set_params(n_jobs=n_jobs)
        kwargs = dict(fit_params or {})
        if w_train is not None:
            kwargs["sample_weight"] = w_train
        return model.fit(X_train, y_train, **kwargs)

    return cross_fit_folds(
        fit, X, y, folds, sample_weight=sample_weight, iterations=iterations,
        objective=objective, n_draws=n_draws, min_k=min_k, n_blocks=n_blocks,
        random_state=random_state, progress=progress, memory_budget=memory_budget,
    )


def _check_estimator(estimator) -> None:
    """One error naming ``estimator`` for anything but a LightGBM, XGBoost or
    HistGradientBoosting scikit-learn estimator (each fold fits a clone of it): other
    estimators were refused only after a fold was fitted, naming a ``model``; a Booster by
    scikit-learn's ``clone``, about ``__sklearn_tags__``."""
    hosts = {cls.__module__.split(".")[0] for cls in type(estimator).__mro__}
    if ({"lightgbm", "xgboost"} & hosts and isinstance(estimator, BaseEstimator)) or \
            isinstance(estimator, (HistGradientBoostingRegressor, HistGradientBoostingClassifier)):
        return
    hint = ""
    if {"lightgbm", "xgboost"} & hosts:
        hint = (": a Booster cannot be refitted on each fold's rows; pass the estimator, e.g. "
                "lightgbm.LGBMRegressor(**params) or xgboost.XGBRegressor(**params)")
    elif hasattr(estimator, "steps"):
        hint = (": a Pipeline is not scored as a whole; pass its gradient-boosting step and "
                "the rows as that step receives them")
    elif hasattr(estimator, "to_lightgbm"):
        hint = (": the native grower measures its own importance (feature_importances_, "
                "importance_report_)")
    raise TypeError(
        "estimator must be a scikit-learn estimator of LightGBM (LGBMRegressor / "
        "LGBMClassifier), XGBoost (XGBRegressor / XGBClassifier) or scikit-learn "
        "(HistGradientBoostingRegressor / HistGradientBoostingClassifier), cloned and fitted "
        f"on each fold; got {type(estimator).__module__}.{type(estimator).__name__}{hint}")


def _check_fold_classes(y: np.ndarray, folds) -> None:
    """Refuse folds whose held-out rows hold a class their training rows lack: that fold's
    classifier has no output for it, so its rows cannot be scored."""
    for k, (train, held) in enumerate(folds):
        missing = np.setdiff1d(y[held], y[train])
        if missing.size:
            raise ValueError(
                f"y: fold {k}'s held-out rows hold the classes {missing.tolist()}, absent from "
                f"its training rows (a class with fewer rows than folds); use fewer folds or "
                f"drop or merge the rare classes")


class UnbiasedSelector(SelectorMixin, BaseEstimator):
    """Keep the features whose cross-fitted unbiased importance is significantly above 0.

    ``fit`` runs :func:`cross_fitted_importance` (a clone of
    ``estimator`` per fold, its splits scored on the fold's held-out rows) and keeps:

    * with ``threshold`` set: the features whose mean unbiased gain is above it;
    * otherwise, with ``alpha`` set (default 0.05): those significantly above 0, one-sided at
      level ``alpha`` (:meth:`CrossFittedReport.select`), with ``correction`` for testing
      many features (None: none; ``"holm"``: family-wise error; ``"fdr_bh"``: false
      discovery rate, each at ``alpha``);
    * with both None: every feature;

    and then, with ``max_features`` set, at most that many of them, the largest first (as
    :class:`sklearn.feature_selection.SelectFromModel`: ``alpha=None, max_features=k`` is the
    top ``k``). A drop-in scikit-learn transformer: ``Pipeline``, ``GridSearchCV``,
    ``clone``, ``check_estimator``.

    Parameters
    ----------
    estimator : LightGBM, XGBoost or HistGradientBoosting scikit-learn estimator
        Cloned for every fold; never fitted itself.
    cv : int, scikit-learn splitter or iterable of (train, test) indices, default 5
        As in :func:`cross_fitted_importance`: held-out rows disjoint across folds, or
        repetitions of such folds (``RepeatedKFold``); ``ShuffleSplit`` is refused.
    alpha : float or None, default 0.05
    correction : {None, "holm", "fdr_bh"}, default None
        Multiple-testing correction of the ``alpha`` test
        (:func:`unbiased_criteria.significance.significant`).
    max_features : int or None
    threshold : float or None
    iterations : int, "best" or None
        Boosting iterations scored per fold (see :func:`cross_fitted_importance`).
    n_draws, min_k, n_blocks : int
        As in :func:`~unbiased_criteria.unbiased_importance`.
    random_state : int, numpy Generator or None
        Seeds the held-out draws (not the estimator); None is 0, so fits repeat.
    n_jobs : int or None
        Threads of the host in every fold.

    Attributes
    ----------
    report_ : CrossFittedReport
    importances_ : pandas.DataFrame
        ``report_.to_frame()`` and a boolean column ``selected``, one row per feature.
    support_ : numpy.ndarray of bool
    n_features_in_, feature_names_in_
    """

    def __init__(self, estimator, *, cv=5, alpha: float | None = 0.05,
                 correction: str | None = None, max_features: int | None = None,
                 threshold: float | None = None, iterations: int | str | None = None,
                 n_draws: int = 1, min_k: int = 5,
                 n_blocks: int = 20, random_state=None, n_jobs: int | None = None):
        self.estimator = estimator
        self.cv = cv
        self.alpha = alpha
        self.correction = correction
        self.max_features = max_features
        self.threshold = threshold
        self.iterations = iterations
        self.n_draws = n_draws
        self.min_k = min_k
        self.n_blocks = n_blocks
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _check_params(self) -> None:
        if self.alpha is not None and (not isinstance(self.alpha, numbers.Real)
                                       or not 0 < self.alpha < 1):
            raise ValueError(f"alpha: expected a number in (0, 1) or None, got {self.alpha!r}")
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction: expected None, 'holm' or 'fdr_bh', got "
                             f"{self.correction!r}")
        if self.max_features is not None and (
                isinstance(self.max_features, bool)
                or not isinstance(self.max_features, numbers.Integral) or self.max_features < 0):
            raise ValueError(f"max_features: expected a non-negative integer or None, got "
                             f"{self.max_features!r}")
        if self.threshold is not None and (not isinstance(self.threshold, numbers.Real)
                                           or np.isnan(self.threshold)):
            raise ValueError(f"threshold: expected a number or None, got {self.threshold!r}")

    def fit(self, X, y, *, groups=None, sample_weight=None, **fit_params):
        """Cross-fit the estimator on ``X, y`` and choose the features.

        ``groups`` goes to the splitter, ``sample_weight`` to every fold's fit and to the
        unbiased gain, ``fit_params`` to every fold's ``fit``.
        """
        self._check_params()
        if isinstance(X, pd.DataFrame):  # keep category columns for the host
            validate_data(self, X, skip_check_array=True, reset=True)
            if len(X) < 1:
                raise ValueError("X: expected at least one row, got 0")
            y = np.asarray(y)
            if not (y.ndim == 2 and y.shape[1] > 1):  # several columns: a multi-target model
                y = column_or_1d(y, warn=True)
        else:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric",
                                 ensure_all_finite="allow-nan", reset=True, multi_output=True)
            if y.ndim == 2 and y.shape[1] == 1:
                y = column_or_1d(y, warn=True)
        report = cross_fitted_importance(
            self.estimator, X, y, cv=self.cv, groups=groups, sample_weight=sample_weight,
            fit_params=fit_params, iterations=self.iterations, n_draws=self.n_draws,
            min_k=self.min_k, n_blocks=self.n_blocks, random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        frame = report.to_frame()
        self.support_ = self._choose(report, frame)
        # the names get_feature_names_out uses (scikit-learn's x0, x1... where X had none),
        # not the host's invented ones (Column_0, f0)
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = [f"x{i}" for i in range(self.n_features_in_)]
        frame.index = pd.Index([str(n) for n in names], name=frame.index.name)
        frame["selected"] = self.support_
        self.report_ = report
        self.importances_ = frame
        return self

    def _choose(self, report: CrossFittedReport, frame: pd.DataFrame) -> np.ndarray:
        gain = frame["unbiased_gain"].to_numpy()
        if self.threshold is not None:
            keep = gain > self.threshold
        elif self.alpha is not None:
            if len(report.splits) == 0 or not report.splits["usable"].any():
                warnings.warn(
                    "no split of any fold's model had usable held-out evidence (too few rows "
                    "per fold, or no splits): no feature is significant, none is kept",
                    UserWarning, stacklevel=3,
                )
                keep = np.zeros(gain.size, dtype=bool)
            else:
                keep = frame.index.isin(report.select(self.alpha, self.correction))
        else:
            keep = np.ones(gain.size, dtype=bool)
        if self.max_features is not None and keep.sum() > self.max_features:
            order = np.argsort(-np.where(keep, gain, -np.inf), kind="stable")
            keep = np.zeros(gain.size, dtype=bool)
            keep[order[: self.max_features]] = True
        return keep

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "support_")
        return self.support_

    def transform(self, X):
        """Reduce ``X`` to the selected features.

        A DataFrame stays a DataFrame with its columns' dtypes (category columns for the host
        downstream); scikit-learn's own transform would convert it to one numpy array, which
        fails on text categories. Arrays and sparse matrices go through scikit-learn's.
        """
        if not isinstance(X, pd.DataFrame):
            return super().transform(X)
        check_is_fitted(self, "support_")
        X = validate_data(self, X, skip_check_array=True, reset=False)
        return self._transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        # sparse X is handed to the estimator as it is: the selector takes it where its
        # estimator does (LightGBM, XGBoost; not HistGradientBoosting). Anything but an
        # estimator is refused by fit, naming `estimator`: no tags to ask it for
        tags.input_tags.sparse = isinstance(self.estimator, BaseEstimator) \
            and get_tags(self.estimator).input_tags.sparse
        tags.target_tags.required = True
        return tags
