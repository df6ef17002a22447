"""scikit-learn estimators around the native grower: ``UnbiasedGBMRegressor``,
``UnbiasedGBMClassifier`` (the paper's UnbiasedGBM, exported to LightGBM and XGBoost).

scikit-learn is an optional dependency (and a host to the core): the estimators live with the
adapters, and ``unbiased_criteria`` exports them lazily by module name.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from unbiased_criteria.adapters._estimators import unchanged_on_error

from unbiased_criteria.gains import SplitScore
from unbiased_criteria.gbm import GBMParams, all_rows_gains, fit_gbm
from unbiased_criteria.grower import GrowerParams
from unbiased_criteria.metrics import get_metric
from unbiased_criteria.objectives import make_objective
from unbiased_criteria.report import ImportanceReport

__all__ = ["UnbiasedGBMRegressor", "UnbiasedGBMClassifier"]

#: LightGBM objective names the regressor accepts -> canonical name
_REGRESSION = {"regression": "squared_error", "l2": "squared_error",
               "squared_error": "squared_error", "poisson": "poisson"}
#: default evaluation metric per canonical objective
_METRIC = {"squared_error": "l2", "poisson": "poisson", "binary_logistic": "binary_logloss",
           "multiclass_softmax": "multi_logloss"}
# the metrics each objective's predictions fit (by their canonical names in METRICS)
_VALUE_METRICS = ("l2", "rmse", "l1")
_METRICS_FOR = {"squared_error": _VALUE_METRICS, "poisson": (*_VALUE_METRICS, "poisson"),
                "binary_logistic": (*_VALUE_METRICS, "binary_logloss", "binary_error", "auc"),
                "multiclass_softmax": ("multi_logloss", "multi_error")}


def _check_metric(eval_metric, objective_name: str):
    """The metric ``eval_metric`` names, checked against the objective up front (a mismatch
    failed deep inside, e.g. AUC of three classes)."""
    if eval_metric is None:
        return get_metric(_METRIC[objective_name])
    if not isinstance(eval_metric, str):
        raise ValueError(f"eval_metric: expected one metric name (a str), got "
                         f"{eval_metric!r}")
    metric = get_metric(eval_metric)
    fits = {get_metric(m).func for m in _METRICS_FOR[objective_name]}
    if metric.func not in fits:
        raise ValueError(f"eval_metric: {eval_metric!r} does not fit the objective "
                         f"{objective_name!r}; expected one of "
                         f"{', '.join(_METRICS_FOR[objective_name])}")
    return metric


def _category_codes(X, categories: dict | None):
    """``X`` with its pandas categorical columns replaced by their codes (NaN for missing or
    unseen values), and the categories of each such column; with ``categories`` given (at
    predict time) a categorical column is coded with the training run's categories.

    Text, datetime and other non-numeric columns are refused (as LightGBM does), and so is a
    DataFrame whose categorical columns differ from the training run's."""
    if not isinstance(X, pd.DataFrame):
        return X, {}
    if X.columns.duplicated().any():
        dup = sorted({str(c) for c in X.columns[X.columns.duplicated()]})
        raise ValueError(f"X: expected unique column names, got duplicates of {dup}")
    found = {c: list(dt.categories) for c, dt in X.dtypes.items()
             if isinstance(dt, pd.CategoricalDtype)}
    bad = [f"{c} ({dt})" for c, dt in X.dtypes.items() if c not in found
           and not pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)]
    if bad:
        raise ValueError(f"X: columns must hold numbers, booleans or pandas categoricals; got "
                         f"{', '.join(bad)} (convert text with .astype('category'))")
    if categories is not None and list(found) != list(categories):
        raise ValueError(f"X: the pandas categorical columns {list(found)} differ from those "
                         f"of the training data {list(categories)}")
    if not found:
        return X, {}
    X = X.copy()
    for col in found:
        cats = found[col] if categories is None else categories[col]
        # set_categories: values outside the training run's categories become missing
        codes = X[col].cat.set_categories(cats).cat.codes.to_numpy(np.float64)
        X[col] = np.where(codes < 0, np.nan, codes)
    return X, found


def _positions(X, categories: dict) -> list[int]:
    """Column positions of ``categories``' columns in DataFrame ``X``."""
    return [list(X.columns).index(c) for c in categories]


class _UnbiasedGBM(BaseEstimator):
    """Shared fitting, prediction, importance and export."""

    def __init__(
        self,
        *,
        objective: str | None = None,
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        num_leaves: int = 31,
        max_depth: int = -1,
        min_child_samples: int = 20,
        min_child_weight: float = 1e-3,
        min_split_gain: float = 0.0,
        reg_alpha: float = 0.0,
        reg_lambda: float = 0.0,
        max_delta_step: float = 0.0,
        max_bin: int = 255,
        ratios: tuple = (1, 1, 1),
        redraw: bool = True,
        criterion: str = "unbiased",
        min_k: int = 5,
        early_stopping_rounds: int | None = None,
        n_blocks: int = 0,
        random_state=None,
        n_jobs: int | None = None,
    ):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.min_child_weight = min_child_weight
        self.min_split_gain = min_split_gain
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.max_delta_step = max_delta_step
        self.max_bin = max_bin
        self.ratios = ratios
        self.redraw = redraw
        self.criterion = criterion
        self.min_k = min_k
        self.early_stopping_rounds = early_stopping_rounds
        self.n_blocks = n_blocks
        self.random_state = random_state
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- fitting -------------------------------------------------------------------------
    def _params(self) -> GBMParams:
        if self.criterion not in ("unbiased", "biased"):
            raise ValueError(
                f"criterion: expected 'unbiased' or 'biased', got {self.criterion!r}")
        for name in ("n_estimators", "num_leaves", "min_child_samples", "min_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name}: expected a positive integer, got {value!r}")
        if self.num_leaves < 2:
            raise ValueError(f"num_leaves: expected at least 2, got {self.num_leaves!r}")
        depth = self.max_depth
        if isinstance(depth, bool) or not isinstance(depth, int | np.integer):
            raise ValueError(f"max_depth: expected an integer (<= 0: no limit), got {depth!r}")
        # an iterator would be used up by this check (and by clone): a sequence is needed
        if isinstance(self.ratios, str | bytes | Iterator) \
                or not isinstance(self.ratios, Iterable) \
                or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                           for v in self.ratios):
            raise ValueError(f"ratios: expected 2 or 3 positive numbers (|D| : |D1'| [: |D2'|]), "
                             f"got {self.ratios!r}")
        for name in ("learning_rate", "reg_alpha", "reg_lambda", "min_child_weight",
                     "min_split_gain", "max_delta_step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not np.isfinite(value) or (value < 0 and name != "max_delta_step"):
                raise ValueError(f"{name}: expected a finite non-negative number, got "
                                 f"{value!r}")
        blocks = self.n_blocks
        if isinstance(blocks, bool) or not isinstance(blocks, int | np.integer) or blocks < 0 \
                or blocks == 1:
            raise ValueError(f"n_blocks: expected 0 (no standard errors) or an integer >= 2 "
                             f"(a jackknife needs two blocks), got {blocks!r}")
        if not isinstance(self.redraw, bool | np.bool_):
            raise ValueError(f"redraw: expected True or False, got {self.redraw!r}")
        stop = self.early_stopping_rounds
        if stop is not None and (isinstance(stop, bool) or not isinstance(stop, int | np.integer)
                                 or stop < 0):
            raise ValueError(f"early_stopping_rounds: expected a non-negative integer or None "
                             f"(0: off), got {stop!r}")
        if self.n_jobs not in (None, 1):
            warnings.warn(f"n_jobs={self.n_jobs!r} is ignored: the grower runs on one thread",
                          UserWarning, stacklevel=3)
        score = SplitScore(l1=float(self.reg_alpha), l2=float(self.reg_lambda),
                           max_delta_step=float(self.max_delta_step))
        grower = GrowerParams(
            num_leaves=int(self.num_leaves), max_depth=int(self.max_depth),
            min_child_samples=int(self.min_child_samples),
            min_child_weight=float(self.min_child_weight),
            min_split_gain=float(self.min_split_gain), score=score,
            criterion=self.criterion, min_k=int(self.min_k),
        )
        return GBMParams(
            n_estimators=int(self.n_estimators), learning_rate=float(self.learning_rate),
            max_bin=self.max_bin, ratios=tuple(self.ratios), redraw=bool(self.redraw),
            grower=grower, early_stopping_rounds=self.early_stopping_rounds,
            n_blocks=int(self.n_blocks),
        )

    @staticmethod
    def _categorical_index(X, pandas_categories: dict, categorical_feature) -> list[int]:
        """Indices of the categorical features: pandas categorical columns, plus
        ``categorical_feature`` (indices or column names; ``"auto"``: none more)."""
        names = list(X.columns) if isinstance(X, pd.DataFrame) else None
        index = [names.index(c) for c in pandas_categories] if names is not None else []
        if isinstance(categorical_feature, str) and categorical_feature == "auto":
            return index
        # one name is not a list of names: iterated, "ab" would be the columns a and b
        # (LightGBM's estimators ignore a str silently); a lone index is not iterable either
        if isinstance(categorical_feature, str | bytes | numbers.Number) \
                or not isinstance(categorical_feature, Iterable):
            raise ValueError(f"categorical_feature: expected 'auto' or a list of column names "
                             f"or indices, got {categorical_feature!r} (one column: "
                             f"[{categorical_feature!r}])")
        p = len(names) if names is not None else (np.shape(X)[1] if np.ndim(X) == 2 else 0)
        for item in categorical_feature:
            if isinstance(item, str):
                if names is None or item not in names:
                    raise ValueError(f"categorical_feature: no column named {item!r}")
                item = names.index(item)
            elif isinstance(item, bool) or not isinstance(item, int | np.integer) \
                    or not 0 <= item < p:  # a bool or -1 would silently pick a column
                raise ValueError(f"categorical_feature: expected column names or indices in "
                                 f"[0, {p}), got {item!r}")
            index.append(int(item))
        return sorted(set(index))

    def _fit(self, X, y_encoded, objective, objective_name, params, sample_weight, eval_set,
             eval_sample_weight, eval_metric, encode, cat_index):
        names = getattr(self, "feature_names_in_", None)
        X = np.asarray(X, dtype=np.float64)
        # negative weights make negative hessians (XGBoost refuses them too)
        weight = None if sample_weight is None else _check_sample_weight(
            sample_weight, X, ensure_non_negative=True)
        if isinstance(eval_set, tuple):  # one (X, y) pair, as LightGBM takes it
            eval_set = [eval_set]
        if eval_set is not None and not all(
                isinstance(pair, tuple | list) and len(pair) == 2 for pair in eval_set):
            raise ValueError("eval_set: expected a list of (X, y) pairs")
        if eval_sample_weight is not None and len(eval_sample_weight) != len(eval_set or ()):
            raise ValueError(f"eval_sample_weight: expected one entry per eval_set, got "
                             f"{len(eval_sample_weight)} for {len(eval_set or ())}")
        evals = []
        for i, (ex, ey) in enumerate(eval_set or ()):
            ex, _ = _category_codes(ex, self._categories)
            ex = validate_data(self, ex, reset=False, ensure_all_finite="allow-nan",
                               dtype=np.float64)
            ey = column_or_1d(ey)
            if ey.shape[0] != ex.shape[0]:
                raise ValueError(f"eval_set[{i}]: X has {ex.shape[0]} rows, y has "
                                 f"{ey.shape[0]} labels")
            ey = np.asarray(encode(ey), dtype=np.float64)
            objective.check_labels(ey, f"eval_set[{i}] y")
            ew = None
            if eval_sample_weight is not None and eval_sample_weight[i] is not None:
                try:
                    ew = _check_sample_weight(eval_sample_weight[i], ex,
                                              ensure_non_negative=True)
                except ValueError as exc:
                    raise ValueError(f"eval_sample_weight[{i}]: {exc}") from exc
            evals.append((f"valid_{i}", ex, ey, ew))
        metric = _check_metric(eval_metric, objective_name)
        if params.early_stopping_rounds and not evals:
            raise ValueError("early_stopping_rounds needs an eval_set to stop on (as in "
                             "LightGBM and XGBoost)")
        result = fit_gbm(
            X, y_encoded, objective, params, weight=weight,
            feature_names=None if names is None else [str(v) for v in names],
            eval_sets=evals, metric=metric,
            # None: the same trees every fit, as LightGBM's estimators (their C++ seed)
            random_state=0 if self.random_state is None else self.random_state,
            categorical=cat_index,
        )
        self._result = result
        self._objective = objective
        self._objective_name = objective_name
        self.n_estimators_ = result.best_iteration
        self.best_iteration_ = result.best_iteration
        # LightGBM's layouts: {set: {metric: [per iteration]}}, best_score_ at best_iteration_
        self.evals_result_ = {name: {metric.name: list(history)}
                              for name, history in result.evals.items()}
        self.best_score_ = {name: {metric.name: history[result.best_iteration - 1]}
                            for name, history in result.evals.items()
                            if len(history) >= result.best_iteration > 0}
        return self

    # -- prediction ----------------------------------------------------------------------
    def _raw(self, X) -> np.ndarray:
        check_is_fitted(self, "_result")
        X, _ = _category_codes(X, getattr(self, "_categories", {}))
        X = validate_data(self, X, reset=False, ensure_all_finite="allow-nan", dtype=np.float64)
        # the grower binned float32 values: predict on the same
        X = X.astype(np.float32).astype(np.float64)
        return self._result.forest.raw_score(X)

    # -- importance ----------------------------------------------------------------------
    @property
    def feature_importances_(self) -> np.ndarray:
        """Per feature, the unbiased importance clipped at 0: ``max(0, unbiased_gain_)``.

        A feature whose candidates' ``U`` sum to a negative total showed no evidence of use
        on held-out rows: 0, as scikit-learn's importances are non-negative. Its tools read
        ``feature_importances_`` as a magnitude (``SelectFromModel`` takes ``abs``, ``RFE``
        the square): the signed sums, where noise features are strongly negative, would
        make them keep the noise. The signed sums: ``unbiased_gain_``; with standard errors
        and ``select()``: ``importance_report_``. NaN for ``criterion="biased"``.
        """
        return np.maximum(self.unbiased_gain_, 0.0)  # NaN stays NaN

    @property
    def unbiased_gain_(self) -> np.ndarray:
        """Per feature, the signed sum of the unbiased gain ``U`` on D1' over every candidate
        scored.

        At every node searched, each feature's best threshold (found on D) is scored with
        ``U`` on D1' before anything is decided, and every such ``U`` is summed, chosen or not
        and split or not. ``U`` on D1' is unbiased for the candidate's gain on new data
        whatever is done with it afterwards, so a feature unrelated to ``y`` sums to <= 0 in
        expectation. The splits' own ``U`` on D2' is not used: D2' decided them (the
        winner's curse), and neither is D1' ``U`` of the chosen candidates alone (D1' chose
        them). NaN for ``criterion="biased"`` (nothing is measured on held-out rows).
        """
        check_is_fitted(self, "_result")
        p = self.n_features_in_
        if self.criterion == "biased":
            return np.full(p, np.nan)
        c = self._result.candidates
        if len(c) == 0:
            return np.zeros(p)
        return np.bincount(c["feature"].to_numpy(dtype=np.int64),
                           weights=c["unbiased_gain"].to_numpy(), minlength=p)

    @property
    def importance_report_(self) -> ImportanceReport:
        """Every candidate scored on D1' as an :class:`ImportanceReport` row.

        ``unbiased_gain``: U on D1'; ``biased_gain``: B on D; ``chosen``: the node's candidate
        of largest U on D1'; ``decision_gain``: its U on D2'; ``split``: whether the node
        split on it. ``to_frame()`` sums per feature (``unbiased_gain_``);
        ``std_error`` is a block jackknife over the training rows (``n_blocks`` blocks fixed
        for the run, each replicate leaving one block out of every D1' ratio), so
        ``select()`` works; NaN with ``n_blocks < 2``. Refused with
        ``criterion="biased"`` (nothing is measured on held-out rows).
        """
        check_is_fitted(self, "_result")
        if self.criterion == "biased":  # its empty candidate table would read as U = 0
            raise ValueError("importance_report_: criterion='biased' measures nothing on "
                             "held-out rows (feature_importances_ is NaN); fit with "
                             "criterion='unbiased'")
        c = self._result.candidates.copy()
        names = list(self._result.forest.feature_names)
        if len(c) == 0:
            c = pd.DataFrame({"feature_index": np.zeros(0, dtype=np.int64),
                              "unbiased_gain": [], "biased_gain": [], "host_gain": [],
                              "usable": np.zeros(0, dtype=bool)})
            return ImportanceReport(c, names, host="native", jackknife=self._result.jackknife)
        threshold = np.full(len(c), np.nan)
        feature, bin_ = c["feature"].to_numpy(dtype=np.int64), c["bin"].to_numpy(dtype=np.int64)
        for f in np.unique(feature):  # one lookup per feature
            at = feature == f
            threshold[at] = self._result.binner.bounds[f][bin_[at]]
        c = c.rename(columns={"feature": "feature_index"})
        c.insert(c.columns.get_loc("feature_index"), "feature",
                 [names[i] for i in c["feature_index"]])
        c["threshold"] = threshold
        c["host_gain"] = np.nan
        return ImportanceReport(c, names, host="native", jackknife=self._result.jackknife)

    # -- export --------------------------------------------------------------------------
    def to_lightgbm(self):
        """The model as a ``lightgbm.Booster`` (served and saved by LightGBM alone).

        Each split stores as its ``split_gain`` LightGBM's gain over all training rows (what
        LightGBM would have stored had it grown the tree on them; the grower's own ``B`` on D
        is in :attr:`importance_report_`), and the model's parameters hold the grower's
        ``lambda_l1``, ``lambda_l2`` and ``max_delta_step``: the library reads, scores and
        prunes the export with the training rows like a LightGBM model.
        """
        check_is_fitted(self, "_result")
        from unbiased_criteria.adapters.lightgbm.writer import booster_from_forest

        cats = [list(c) for c in self._categories.values()] or None
        score = SplitScore(l1=float(self.reg_alpha), l2=float(self.reg_lambda),
                           max_delta_step=float(self.max_delta_step))
        params = {"learning_rate": float(self.learning_rate), "lambda_l1": score.l1,
                  "lambda_l2": score.l2, "max_delta_step": score.max_delta_step}
        return booster_from_forest(all_rows_gains(self._result, score), self._objective_name,
                                   cats, params=params)

    def _feature_categories(self) -> list | None:
        """Per feature, the pandas categories of its codes (None for the others), or None
        when the model was not fitted on pandas categorical columns."""
        positions = getattr(self, "_category_positions", None)
        if not self._categories or positions is None:
            return None
        cats: list = [None] * self.n_features_in_
        for i, values in zip(positions, self._categories.values(), strict=True):
            cats[i] = list(values)
        return cats

    def to_xgboost(self):
        """The model as an ``xgboost.Booster`` (served and saved by XGBoost alone).

        Each split stores as its ``loss_chg`` XGBoost's gain over all training rows (what
        XGBoost would have stored had it grown the tree on them, as its ``refresh`` updater
        recomputes it; the grower's own ``B`` on D is in :attr:`importance_report_`), and the
        model keeps the grower's penalties: the library reads, scores and prunes the export
        with the training rows like an XGBoost model.
        """
        check_is_fitted(self, "_result")
        from unbiased_criteria.adapters.xgboost import compat
        from unbiased_criteria.adapters.xgboost.writer import booster_from_forest

        # the grower's penalties, so that the library reads the model with them
        score = SplitScore(l1=float(self.reg_alpha), l2=float(self.reg_lambda),
                           max_delta_step=float(self.max_delta_step))
        # XGBoost's gain: from the float32 weight, with the installed version's L1 rule
        host_score = dataclasses.replace(
            score, weight_float32=True,
            raw_gradient_score=compat.scores_with_raw_gradient(compat.model_version()))
        booster = booster_from_forest(all_rows_gains(self._result, host_score),
                                      self._objective_name,
                                      self._result.binner.categorical, split_score=score,
                                      categories=self._feature_categories())
        if getattr(self, "feature_names_in_", None) is None:
            # fitted without string column names: none, as XGBoost's own model, so that
            # DMatrix(numpy) and DataFrames with other names predict
            booster.feature_names = None
        return booster


class UnbiasedGBMRegressor(RegressorMixin, _UnbiasedGBM):
    """Gradient boosting with the paper's unbiased split rule (Zhang, Zhang and Li, 2023).

    Every tree grows on the sub-training rows D (thresholds), chooses each node's feature
    by the unbiased gain on D1' and splits only if that gain on D2' is > 0; leaf values are
    the Newton steps of all training rows.

    Parameters
    ----------
    objective : {"regression", "poisson"} or None, default None
        The loss (None: ``"regression"``, squared error; ``"l2"`` and ``"squared_error"``
        are its aliases). The classifier infers binary or multiclass log loss.
    n_estimators, learning_rate, num_leaves, max_depth, min_child_samples, \
min_child_weight, min_split_gain, reg_alpha, reg_lambda, max_delta_step, max_bin
        As LightGBM's ``LGBMRegressor`` (defaults 100, 0.1, 31, -1, 20, 1e-3, 0, 0, 0, 0,
        255; ``max_depth <= 0``: no limit).
    ratios : tuple of 2 or 3 positive numbers, default (1, 1, 1)
        |D| : |D1'| : |D2'|, or |D| : |D1'| with D2' = D1'.
    redraw : bool, default True
        A new split of the rows every iteration.
    criterion : {"unbiased", "biased"}, default "unbiased"
        ``"biased"``: an ordinary histogram GBDT on all rows (no importance).
    min_k : int, default 5
        Fewest drawn validation rows per child for a usable ``U``.
    early_stopping_rounds : int or None, default None
        Stop when the metric on the last ``eval_set`` has not improved for this many rounds.
    n_blocks : int, default 0
        Jackknife blocks for the importance's standard errors (0: none; 1 is refused).
    random_state : int, numpy Generator or RandomState, or None, default None
        Seeds the row splits (None: 0, the same trees every fit).
    n_jobs : int or None, default None
        Accepted for compatibility and ignored (one thread; a value other than None or 1
        warns).

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The unbiased importance clipped at 0, ``max(0, unbiased_gain_)``.
    unbiased_gain_ : ndarray of shape (n_features,)
        Per feature, the signed sum of ``U`` on D1' over every candidate scored.
    importance_report_ : ImportanceReport
        Every candidate scored, with standard errors when ``n_blocks >= 2``.
    """

    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None,
            eval_metric=None, categorical_feature="auto"):
        """Grow the trees on ``X, y``.

        Parameters
        ----------
        X : array-like or pandas.DataFrame of shape (n_samples, n_features)
            Numbers, booleans or pandas categoricals (split by category sets); NaN is
            missing.
        y : array-like of shape (n_samples,)
            The target (the classifier: any labels, two classes or more).
        sample_weight : array-like of shape (n_samples,) or None
            Non-negative row weights.
        eval_set : list of (X, y) pairs, or one pair, or None
            Evaluation sets (``evals_result_``; early stopping watches the last).
        eval_sample_weight : list of array-like or None
            One weight array (or None) per evaluation set.
        eval_metric : str or None
            One of LightGBM's metric names that fits the objective (None: the objective's).
        categorical_feature : "auto" or list of int or str, default "auto"
            Columns of non-negative integer codes to split by category sets, by position or
            name ("auto": pandas categorical columns only, which are always found). One
            column is a list of one: a lone name or index is refused.

        Returns
        -------
        self
        """
        return self._fit_checked(X, y, sample_weight, eval_set, eval_sample_weight,
                                 eval_metric, categorical_feature)

    def _fit_checked(self, X, y, sample_weight, eval_set, eval_sample_weight, eval_metric,
                     categorical_feature):
        # the parameters before the data: a refused fit leaves a fitted model as it was
        params = self._params()
        name = _REGRESSION.get(self.objective or "regression")
        if name is None:
            raise ValueError(
                f"objective: expected one of {sorted(_REGRESSION)} or None, "
                f"got {self.objective!r}")
        with unchanged_on_error(self):  # and so does a fit refused on its data
            X, self._categories = _category_codes(X, None)
            self._category_positions = _positions(X, self._categories)
            cat_index = self._categorical_index(X, self._categories, categorical_feature)
            X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", dtype=np.float64,
                                 y_numeric=True)
            objective = make_objective(name)
            return self._fit(X, y, objective, name, params, sample_weight, eval_set,
                             eval_sample_weight, eval_metric, lambda v: v, cat_index)

    def predict(self, X) -> np.ndarray:
        raw = self._raw(X)
        return self._objective.predict(raw[:, 0])


class UnbiasedGBMClassifier(ClassifierMixin, _UnbiasedGBM):
    """Classification with the paper's unbiased split rule (binary or multiclass log loss).

    See :class:`UnbiasedGBMRegressor` for the rule.

    Parameters
    ----------
    objective : {"binary", "multiclass"} or None, default None
        ``"binary"``: logistic loss, two classes only (more is a ``ValueError``, as in
        LightGBM); ``"multiclass"``: softmax, two classes or more (two get one score per
        class); None: ``"binary"`` for two classes, ``"multiclass"`` for more.
    n_estimators, learning_rate, num_leaves, max_depth, min_child_samples, \
min_child_weight, min_split_gain, reg_alpha, reg_lambda, max_delta_step, max_bin, ratios, \
redraw, criterion, min_k, early_stopping_rounds, n_blocks, random_state, n_jobs
        As in :class:`UnbiasedGBMRegressor`.

    Attributes
    ----------
    classes_ : ndarray
        The labels given to ``fit``, sorted (``predict_proba``'s columns).
    feature_importances_ : ndarray of shape (n_features,)
        The unbiased importance clipped at 0, ``max(0, unbiased_gain_)``.
    unbiased_gain_ : ndarray of shape (n_features,)
        Per feature, the signed sum of ``U`` on D1' over every candidate scored.
    importance_report_ : ImportanceReport
        Every candidate scored, with standard errors when ``n_blocks >= 2``.
    """

    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None,
            eval_metric=None, categorical_feature="auto"):
        """Grow the trees on ``X, y``; see :meth:`UnbiasedGBMRegressor.fit`.

        Parameters
        ----------
        X, y, sample_weight, eval_set, eval_sample_weight, eval_metric, \
categorical_feature
            As in :meth:`UnbiasedGBMRegressor.fit` (``y``: any labels of two classes or
            more; ``eval_set`` labels must be among them).

        Returns
        -------
        self
        """
        # the parameters before the data: a refused fit leaves a fitted model as it was
        params = self._params()
        if self.objective not in (None, "binary", "multiclass"):
            raise ValueError(
                f"objective: expected 'binary', 'multiclass' or None, got {self.objective!r}")
        with unchanged_on_error(self):  # and so does a fit refused on its data
            return self._fit_classes(X, y, params, sample_weight, eval_set,
                                     eval_sample_weight, eval_metric, categorical_feature)

    def _fit_classes(self, X, y, params, sample_weight, eval_set, eval_sample_weight,
                     eval_metric, categorical_feature):
        X, self._categories = _category_codes(X, None)
        self._category_positions = _positions(X, self._categories)
        cat_index = self._categorical_index(X, self._categories, categorical_feature)
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", dtype=np.float64)
        if y.dtype == object and pd.isna(y).any():  # else np.unique's TypeError
            raise ValueError("y: contains missing labels (None or NaN)")
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        K = self.classes_.size
        if K < 2:
            raise ValueError(f"y: expected at least 2 classes, got {K} class")
        # the objective asked for, else the class count's (it was ignored: "binary" on three
        # classes fitted a softmax, "multiclass" on two a logistic model)
        if self.objective == "binary" and K > 2:
            raise ValueError(f"objective: 'binary' needs 2 classes, y has {K} (use "
                             f"'multiclass' or None)")
        if self.objective == "binary" or (self.objective is None and K == 2):
            name, objective = "binary_logistic", make_objective("binary_logistic")
        else:
            name, objective = "multiclass_softmax", make_objective("multiclass_softmax",
                                                                   n_classes=K)
        self.n_classes_ = K

        def encode(labels):
            if pd.isna(labels).any():  # else searchsorted's TypeError on text classes
                raise ValueError("eval_set: contains missing labels (None or NaN)")
            idx = np.searchsorted(self.classes_, labels)
            idx = np.minimum(idx, K - 1)
            if np.any(self.classes_[idx] != labels):
                raise ValueError("eval_set: labels not seen in y")
            return idx.astype(np.float64)

        return self._fit(X, y_enc.astype(np.float64), objective, name, params, sample_weight,
                         eval_set, eval_sample_weight, eval_metric, encode, cat_index)

    def predict_proba(self, X) -> np.ndarray:
        raw = self._raw(X)
        if self._objective_name == "binary_logistic":  # one score per row (not a softmax)
            p = self._objective.predict(raw[:, 0])
            return np.stack([1 - p, p], axis=1)
        return self._objective.predict(raw)

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
