"""A scikit-learn feature selector on cross-fitted unbiased importance (needs scikit-learn)."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .cross_fit import CrossFittedReport, cross_fitted_importance

__all__ = ["UnbiasedSelector"]


class UnbiasedSelector(SelectorMixin, BaseEstimator):
    """Keep the features whose cross-fitted unbiased importance is significantly above 0.

    ``fit`` runs :func:`~unbiased_criteria.cross_fitted_importance` (a clone of
    ``estimator`` per fold, its splits scored on the fold's held-out rows) and keeps:

    * with ``threshold`` set: the features whose mean unbiased gain is above it;
    * otherwise, with ``alpha`` set (default 0.05): those significantly above 0, one-sided at
      level ``alpha`` (:meth:`CrossFittedReport.select`, no correction for several features);
    * with both None: every feature;

    and then, with ``max_features`` set, at most that many of them, the largest first (as
    :class:`sklearn.feature_selection.SelectFromModel`: ``alpha=None, max_features=k`` is the
    top ``k``). A drop-in scikit-learn transformer: ``Pipeline``, ``GridSearchCV``,
    ``clone``, ``check_estimator``.

    Parameters
    ----------
    estimator : LightGBM or XGBoost scikit-learn estimator
        Cloned for every fold; never fitted itself.
    cv : int or scikit-learn splitter, default 5
    alpha : float or None, default 0.05
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
                 max_features: int | None = None, threshold: float | None = None,
                 iterations: int | str | None = None, n_draws: int = 1, min_k: int = 5,
                 n_blocks: int = 20, random_state=None, n_jobs: int | None = None):
        self.estimator = estimator
        self.cv = cv
        self.alpha = alpha
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
            y = column_or_1d(y, warn=True)
        else:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric",
                                 ensure_all_finite="allow-nan", reset=True)
        report = cross_fitted_importance(
            self.estimator, X, y, cv=self.cv, groups=groups, sample_weight=sample_weight,
            fit_params=fit_params, iterations=self.iterations, n_draws=self.n_draws,
            min_k=self.min_k, n_blocks=self.n_blocks, random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        frame = report.to_frame()
        self.support_ = self._choose(report, frame)
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
                keep = frame.index.isin(report.select(self.alpha))
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        return tags
