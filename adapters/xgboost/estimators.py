"""scikit-learn estimators over the training hook: :class:`UnbiasedXGBRegressor`,
:class:`UnbiasedXGBClassifier`.

XGBRegressor / XGBClassifier whose fit runs XGBoost's own fit with
:func:`~unbiased_criteria.adapters.xgboost.training.train` in place of ``xgboost.train``: every
step of XGBoost's data handling (DMatrix or QuantileDMatrix, eval sets, weights, categorical
data, metrics, callbacks) stays XGBoost's.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xgboost

try:
    from sklearn.exceptions import NotFittedError
except ImportError:  # XGBoost's estimators cannot even be built without scikit-learn; the
    NotFittedError = None  # adapter's train(), readers and the demo still import this module
from unbiased_criteria.adapters._estimators import (
    IMPORTANCE_DOC,
    TrainingImportance,
    check_fit_weights,
    check_unbiased_options,
    fit_argument_names,
    host_seeds,
    unchanged_on_error,
    with_train,
)
from unbiased_criteria.adapters._record import detach_record
from unbiased_criteria.adapters.xgboost.compat import check_estimator_layout, host_more_tags
from unbiased_criteria.adapters.xgboost.training import train

check_estimator_layout()

#: constructor parameters the estimators add to XGBoost's (they are not XGBoost parameters)
_UNBIASED_PARAMS = ("holdout_fraction", "redraw_holdout", "prune_threshold", "n_draws", "min_k",
                    "n_blocks")


#: the training hook's argument names in its errors -> the estimator fit's
_FIT_NAMES = ((r"\bevals\[(\d+)\] \('[^']*'\)", r"eval_set[\1]"),
              (r"\bevals\[(\d+)\]", r"eval_set[\1]"),
              (r"\bdtrain's labels\b", "y"), (r"\bdtrain's weights\b", "the sample weights"),
              (r"\bdtrain\b", "X"))


class _UnbiasedFit(TrainingImportance):
    """What both estimators add to XGBoost's: placed first in their bases, so XGBoost's
    ``get_params`` (which reads the parameters of ``__bases__[0]`` when it has
    ``get_params``, else ``__bases__[1]``) still collects XGBoost's parameters.

    ``_host_fit`` is the XGBoost ``fit`` whose copy (:func:`_with_train`) trains the model.
    """

    _host_fit: Callable
    _not_fitted_error = NotFittedError
    _host_name = "xgboost"

    def _fit_unbiased(self, X: Any, y: Any, kwargs: dict[str, Any]):
        # our options before anything changes; a fit that raises leaves the estimator (a
        # fitted model's Booster, classes, feature names) as it was
        check_unbiased_options(self, _UNBIASED_PARAMS)
        with unchanged_on_error(self):
            return self._fit_host(X, y, kwargs)

    def _fit_host(self, X: Any, y: Any, kwargs: dict[str, Any]):
        if kwargs.get("xgb_model") is not None:
            raise ValueError("xgb_model (continued training) is not supported")
        check_fit_weights(kwargs.get("sample_weight"), kwargs.get("sample_weight_eval_set"),
                          "sample_weight", "sample_weight_eval_set", X, kwargs.get("eval_set"))
        options = {k: getattr(self, k) for k in _UNBIASED_PARAMS}

        def unbiased_train(params, dtrain, num_boost_round=10, *, evals=None, obj=None,
                           maximize=None, early_stopping_rounds=None, evals_result=None,
                           verbose_eval=True, xgb_model=None, callbacks=None,
                           custom_metric=None):
            # XGBoost's Booster skips parameters set to None (the wrapper's unset ones)
            params = {k: v for k, v in params.items() if v is not None}
            # XGBoost draws an int from a Generator or RandomState, not a SeedSequence
            params = host_seeds(params, ("seed", "random_state"))
            # random_state=None: train() takes params' seed (the estimator's), else 0
            return train(params, dtrain, num_boost_round, evals=evals, obj=obj,
                         maximize=maximize, custom_metric=custom_metric,
                         early_stopping_rounds=early_stopping_rounds,
                         evals_result=evals_result, verbose_eval=verbose_eval,
                         callbacks=callbacks, random_state=None, **options)

        fit = with_train(type(self)._host_fit, unbiased_train)
        with fit_argument_names(_FIT_NAMES):  # the hook's argument names, as fit's
            fit(self, X, y, **kwargs)
        return self

    def _host_booster(self) -> xgboost.Booster:
        return self.get_booster()

    def load_model(self, fname: Any) -> None:
        """``XGBModel.load_model``; a fitted estimator's Booster drops its training record and
        its pruning's marks (XGBoost loads into that Booster object, which would otherwise
        keep stale ones)."""
        if self.__sklearn_is_fitted__():
            detach_record(self.get_booster())
        super().load_model(fname)

    def _wrapper_params(self) -> set[str]:
        # ours are not XGBoost parameters: keep them out of the Booster's
        return {*super()._wrapper_params(), *_UNBIASED_PARAMS}

    def _more_tags(self) -> dict[str, bool]:
        # several targets and labels are trained as XGBoost's estimators train them;
        # scikit-learn < 1.6 reads these, XGBoost's __sklearn_tags__ copies them for 1.6+
        return {**host_more_tags(self, _UnbiasedFit), "multioutput": True,
                "multilabel": True}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_label = True
        return tags


_ESTIMATOR_DOC = """XGBoost's ``{base}`` trained with unbiased-gain pruning (:func:`train`).

    A drop-in replacement: the constructor takes every ``{base}`` parameter and ``fit`` every
    ``{base}.fit`` argument (not ``xgb_model``); ``fit`` is XGBoost's own with :func:`train`
    in place of ``xgboost.train``, so each new tree is pruned, top-down, of the splits whose
    unbiased gain on held-out rows is ``<= prune_threshold``. ``random_state`` also seeds the
    held-out draws (``None``: 0, XGBoost's default seed). Several targets (labels of shape
    ``(n, T)``) are trained as XGBoost trains them, one tree per target and iteration, for the
    losses computed target by target.{extra}

    Parameters
    ----------
    holdout_fraction : float, default 0.5
        Training rows held out each round (zero gradient and hessian; they stay in the
        DMatrix), in [0, 1). 0 switches pruning off.
    redraw_holdout : bool, default True
        New held-out rows every round.
    prune_threshold : float or None, default 0.0
        Splits with ``U <= prune_threshold`` are removed; None scores nothing (the model is
        then ``{base}``'s).
    n_draws, min_k : int, default 1 and 5
        Options of the unbiased gain (see :func:`train`).
    n_blocks : int, default 20
        Jackknife blocks for the standard errors of ``training_report(model.get_booster())``.
    **kwargs
        ``{base}``'s parameters.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        {importance}
    training_splits_ : pandas.DataFrame
        Every split scored during training (:func:`training_splits`).
    """


class UnbiasedXGBRegressor(_UnbiasedFit, xgboost.XGBRegressor):
    __doc__ = _ESTIMATOR_DOC.format(base="XGBRegressor", extra="",
                                   importance=IMPORTANCE_DOC)
    _host_fit = xgboost.XGBRegressor.fit

    def __init__(
        self,
        *,
        objective: str | Callable | None = "reg:squarederror",
        holdout_fraction: float = 0.5,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        n_blocks: int = 20,
        **kwargs: Any,
    ) -> None:
        super().__init__(objective=objective, **kwargs)
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k
        self.n_blocks = n_blocks

    def fit(self, X: Any, y: Any, *, sample_weight: Any = None, base_margin: Any = None,
            eval_set: Sequence | None = None, verbose: bool | int | None = True,
            xgb_model: Any = None, sample_weight_eval_set: Sequence | None = None,
            base_margin_eval_set: Sequence | None = None,
            feature_weights: Any = None) -> UnbiasedXGBRegressor:
        """``XGBRegressor.fit`` through :func:`train` (``xgb_model`` must be None)."""
        return self._fit_unbiased(X, y, dict(
            sample_weight=sample_weight, base_margin=base_margin, eval_set=eval_set,
            verbose=verbose, xgb_model=xgb_model, sample_weight_eval_set=sample_weight_eval_set,
            base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
        ))


class UnbiasedXGBClassifier(_UnbiasedFit, xgboost.XGBClassifier):
    __doc__ = _ESTIMATOR_DOC.format(base="XGBClassifier", extra="""

    Unlike ``XGBClassifier``, any labels are accepted (``classes_`` holds them, sorted;
    ``predict`` returns them), and ``fit`` leaves ``objective`` as given (XGBClassifier
    replaces it by ``multi:softprob`` for more than two classes; here the Booster gets that
    objective without the parameter changing).""", importance=IMPORTANCE_DOC)
    _host_fit = xgboost.XGBClassifier.fit

    def __init__(
        self,
        *,
        objective: str | Callable | None = "binary:logistic",
        holdout_fraction: float = 0.5,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        n_blocks: int = 20,
        **kwargs: Any,
    ) -> None:
        super().__init__(objective=objective, **kwargs)
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k
        self.n_blocks = n_blocks

    def fit(self, X: Any, y: Any, *, sample_weight: Any = None, base_margin: Any = None,
            eval_set: Sequence | None = None, verbose: bool | int | None = True,
            xgb_model: Any = None, sample_weight_eval_set: Sequence | None = None,
            base_margin_eval_set: Sequence | None = None,
            feature_weights: Any = None) -> UnbiasedXGBClassifier:
        """``XGBClassifier.fit`` through :func:`train`, on labels encoded as ``0..K-1``."""
        # our options before the labels are encoded; a refused fit leaves a fitted model's
        # classes_ as they were (predict would otherwise return the codes 0..K-1)
        check_unbiased_options(self, _UNBIASED_PARAMS)
        with unchanged_on_error(self):
            return self._fit_classifier(X, y, dict(
                sample_weight=sample_weight, base_margin=base_margin, eval_set=eval_set,
                verbose=verbose, xgb_model=xgb_model,
                sample_weight_eval_set=sample_weight_eval_set,
                base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
            ))

    def _fit_classifier(self, X: Any, y: Any,
                        kwargs: dict[str, Any]) -> UnbiasedXGBClassifier:
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d

        eval_set = kwargs["eval_set"]
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] > 1:
            # multi-label, as XGBClassifier: a 0/1 column per label, one logistic target each
            classes, encoded = np.array([0, 1]), _multi_label(labels, "y")
            if eval_set is not None:
                eval_set = [(Xe, _multi_label(ye, f"eval_set[{i}]", labels.shape[1]))
                            for i, (Xe, ye) in enumerate(eval_set)]
        else:
            y = column_or_1d(y, warn=True)
            if y.size == 0:
                raise ValueError("y has no rows: a classifier needs labels of 2 classes")
            if y.dtype.kind == "O" and pd.isna(y).any():  # np.unique cannot order None
                raise ValueError(f"y contains {int(pd.isna(y).sum())} missing label(s) (None "
                                 "or NaN): a classifier needs a label on every row")
            check_classification_targets(y)
            classes, encoded = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(f"the training labels have {classes.size} class "
                                 f"({classes.tolist()}): a classifier needs at least 2")
            if eval_set is not None:
                eval_set = [(Xe, _encode_labels(ye, classes, f"eval_set[{i}]"))
                            for i, (Xe, ye) in enumerate(eval_set)]
        objective = self.objective
        # a refit starts from scratch: XGBoost's fit checks the labels against classes_, which
        # must be 0..K-1 while it runs, not the previous fit's labels
        self._classes = None
        try:
            self._fit_unbiased(X, encoded, {**kwargs, "eval_set": eval_set})
        finally:
            self.objective = objective  # XGBClassifier.fit sets multi:softprob
        self._classes = classes
        _store_classes(self.get_booster(), classes)
        return self

    def save_model(self, fname: Any) -> None:
        """``XGBClassifier.save_model``; the labels ``fit`` was given are stored with the
        model (a warning names those the file cannot hold, which a loaded model then lacks)."""
        lost = _lost_classes(self.get_booster())
        if lost is not None:
            warnings.warn(
                f"the labels this classifier was fitted on ({_shown(self.classes_)}, dtype "
                f"{lost}) cannot be stored in the model file: loaded, its classes_ are "
                f"0..{self.n_classes_ - 1} and predict returns those codes; keep the labels "
                "beside the file, or fit on labels it holds (int64 or float64 numbers, text, "
                "booleans, datetimes)", UserWarning, stacklevel=2)
        super().save_model(fname)

    def load_model(self, fname: Any) -> None:
        """``XGBClassifier.load_model``, with the labels ``fit`` was given where the model
        stores them (a model saved by this estimator); else ``classes_`` is ``0..K-1`` (a
        warning says so where the model was fitted on labels its file could not hold)."""
        super().load_model(fname)
        self._classes = stored_classes(self.get_booster(), "fname", stacklevel=2)

    def get_xgb_params(self) -> dict[str, Any]:
        """XGBoost's parameters, with the objective the Booster was trained with.

        ``XGBClassifier.fit`` trains ``multi:softprob`` (unless ``multi:softmax``) with
        ``num_class`` for more than two classes; ``set_params`` on a fitted model passes these
        parameters to the Booster, so they must say the same.
        """
        params = super().get_xgb_params()
        n_classes = getattr(self, "n_classes_", 0)
        if n_classes > 2 and not callable(self.objective):
            if params.get("objective") != "multi:softmax":
                params["objective"] = "multi:softprob"
            params["num_class"] = n_classes
        return params

    @property
    def classes_(self) -> np.ndarray:
        """The class labels, sorted (``predict_proba``'s columns)."""
        classes = getattr(self, "_classes", None)
        return np.arange(self.n_classes_) if classes is None else classes

    def predict(self, X: Any, *, output_margin: bool = False, validate_features: bool = True,
                base_margin: Any = None, iteration_range: Any = None) -> np.ndarray:
        """``XGBClassifier.predict``, in the labels given to ``fit``."""
        out = super().predict(X, output_margin=output_margin,
                              validate_features=validate_features, base_margin=base_margin,
                              iteration_range=iteration_range)
        if output_margin:
            return out
        return self.classes_[np.asarray(out, dtype=np.int64)]


#: Booster attribute: the labels an UnbiasedXGBClassifier was fit with (XGBoost keeps only
#: their count), so that save_model / load_model keep what predict returns
_CLASSES_ATTR = "unbiased_criteria_classes"


def _shown(classes: np.ndarray) -> str:
    values = [str(v) for v in np.asarray(classes).tolist()[:5]]
    return ", ".join(values) + (", ..." if np.size(classes) > 5 else "")


def _classes_json(classes: np.ndarray) -> str | None:
    """``classes`` as JSON with their dtype, or None where JSON cannot give them back
    exactly. Datetimes and durations are stored as their int64 counts of their dtype's unit
    (``<M8[D]``: days since 1970), which that dtype reads back exactly."""
    values = classes.astype(np.int64) if classes.dtype.kind in "mM" else classes
    try:
        text = json.dumps({"dtype": classes.dtype.str, "values": values.tolist()},
                          ensure_ascii=False)
        back = _decode_classes(text)
        same = back.shape == classes.shape and bool(np.all(back == classes))
    except (TypeError, ValueError, OverflowError):
        return None
    return text if same else None


def _decode_classes(text: str) -> np.ndarray | None:
    """The classes :func:`_classes_json` stored (None: the marker of labels it could not)."""
    stored = json.loads(text)
    dtype = np.dtype(stored["dtype"])
    if stored["values"] is None:
        return None
    # object labels come back as the JSON values; anything else in its own dtype
    return np.asarray(stored["values"], dtype=None if dtype.kind == "O" else dtype)


def _store_classes(booster: xgboost.Booster, classes: np.ndarray) -> None:
    """Keep ``classes`` in ``booster`` (JSON with their dtype). Labels JSON cannot give back
    exactly (arbitrary objects, bytes) leave a marker instead, so that ``save_model`` warns
    and a loaded model says so."""
    text = _classes_json(classes)
    if text is None:
        text = json.dumps({"dtype": classes.dtype.str, "values": None}, ensure_ascii=False)
    booster.set_attr(**{_CLASSES_ATTR: text})


def _lost_classes(booster: xgboost.Booster) -> str | None:
    """The dtype of the labels a fit could not store in ``booster``, else None."""
    text = booster.attr(_CLASSES_ATTR)
    if text is None:
        return None
    try:
        stored = json.loads(text)
        return str(stored["dtype"]) if stored["values"] is None else None
    except (ValueError, TypeError, KeyError):
        return None


def stored_classes(booster: xgboost.Booster, argument: str = "model",
                   stacklevel: int = 2) -> np.ndarray | None:
    """The labels an ``UnbiasedXGBClassifier`` was fitted on, as its model stores them; None
    for any other model, or (with a warning, ``stacklevel`` counted from the caller of this
    function's caller, as ``warnings.warn`` counts) where its file could not hold them.

    Raises
    ------
    ValueError
        The stored attribute is not what the estimator writes (edited by hand?), naming
        ``argument``.
    """
    text = booster.attr(_CLASSES_ATTR)
    if text is None:
        return None
    try:
        classes = _decode_classes(text)
    except (ValueError, TypeError, KeyError):
        raise ValueError(f"{argument}: the model's attribute {_CLASSES_ATTR!r} does not hold "
                         f"the classes an UnbiasedXGBClassifier stores: {text[:100]!r}") \
            from None
    if classes is None:
        warnings.warn(
            f"the model was fitted on labels its file could not store (dtype "
            f"{_lost_classes(booster)}): its classes are read as the codes 0..K-1, and "
            "predict returns those", UserWarning, stacklevel=stacklevel + 1)
    return classes


def _multi_label(y: Any, argument: str, columns: int | None = None) -> np.ndarray:
    """Multi-label targets ``(n, T)`` of 0 and 1 (booleans too), as float; else one error."""
    y = np.asarray(y)
    if y.ndim != 2 or (columns is not None and y.shape[1] != columns):
        raise ValueError(f"{argument} must have shape (n_rows, {columns}) like the training "
                         f"labels, got shape {y.shape}")
    try:
        values = y.astype(np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or not np.isin(values, (0.0, 1.0)).all():
        raise ValueError(f"{argument}: multi-label targets must hold 0 and 1 in every column")
    return values


def _encode_labels(y: Any, classes: np.ndarray, argument: str) -> np.ndarray:
    """Positions of ``y``'s labels in ``classes`` (sorted); unknown labels are refused."""
    y = np.asarray(y).ravel()
    if y.dtype.kind == "O" and pd.isna(y).any():  # searchsorted cannot order None
        raise ValueError(f"{argument} contains {int(pd.isna(y).sum())} missing label(s) (None "
                         "or NaN): a classifier needs a label on every row")
    index = np.searchsorted(classes, y)
    index[index == classes.size] = 0
    if not np.array_equal(classes[index], y):
        unknown = np.setdiff1d(y, classes)
        raise ValueError(f"{argument} has labels not in the training labels: "
                         f"{unknown[:10].tolist()}")
    return index
