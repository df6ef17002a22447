"""Drop-in scikit-learn estimators over the training hook.

:class:`UnbiasedLGBMRegressor` and :class:`UnbiasedLGBMClassifier` are LightGBM's
``LGBMRegressor`` / ``LGBMClassifier`` whose ``fit`` trains through
:func:`~unbiased_criteria.adapters.lightgbm.training.train`; ``feature_importances_`` is the
unbiased importance gathered during training (every scored split, kept or not).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import lightgbm
import numpy as np
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
from unbiased_criteria.adapters._record import keep_estimator_record
from unbiased_criteria.adapters.lightgbm.compat import check_estimator_layout
from unbiased_criteria.adapters.lightgbm.training import train

check_estimator_layout()

__all__ = ["UnbiasedLGBMRegressor", "UnbiasedLGBMClassifier"]

#: constructor parameters the estimators add to LightGBM's (they are not LightGBM parameters)
_UNBIASED_PARAMS = ("holdout_fraction", "redraw_holdout", "prune_threshold", "n_draws", "min_k",
                    "n_blocks")

#: LightGBM's seed parameter and its aliases
_SEED_ALIASES = ("seed", "random_seed", "random_state")


#: the training hook's argument names in its errors -> the estimator fit's
_FIT_NAMES = ((r"\bvalid_sets\[(\d+)\]'s (label|weight)", r"eval_set[\1]'s \2"),
              (r"\bvalid_sets\[(\d+)\]", r"eval_set[\1]"),
              (r"\btrain_set's labels?\b", "y"),
              (r"\btrain_set's weights\b", "the sample weights"),
              (r"\btrain_set\b", "X"))


class _UnbiasedFit(TrainingImportance, lightgbm.LGBMModel):
    """Placed after ``LGBMRegressor`` / ``LGBMClassifier`` in the estimators' MRO, this class's
    ``fit`` is what their ``fit`` calls as ``super().fit``: LightGBM's ``LGBMModel.fit`` with
    :func:`train` in place of ``lightgbm.train``."""

    _not_fitted_error = lightgbm.compat.LGBMNotFittedError
    _host_name = "lightgbm"

    def fit(self, *args: Any, **kwargs: Any):
        if kwargs.get("init_model") is not None:
            raise ValueError("init_model (continued training) is not supported")
        bound = inspect.signature(lightgbm.LGBMModel.fit).bind(self, *args, **kwargs)
        check_fit_weights(bound.arguments.get("sample_weight"),
                          bound.arguments.get("eval_sample_weight"), "sample_weight",
                          "eval_sample_weight", bound.arguments.get("X"),
                          bound.arguments.get("eval_set"))
        options = {k: getattr(self, k) for k in _UNBIASED_PARAMS}

        def unbiased_train(params, train_set, num_boost_round=100, valid_sets=None,
                           valid_names=None, feval=None, init_model=None,
                           keep_training_booster=False, callbacks=None):
            return train(params, train_set, num_boost_round, valid_sets=valid_sets,
                         valid_names=valid_names, feval=feval or None, callbacks=callbacks,
                         **options)

        fit = with_train(lightgbm.LGBMModel.fit, unbiased_train)
        with fit_argument_names(_FIT_NAMES):  # the hook's argument names, as fit's
            fitted = fit(self, *args, **kwargs)
        # LightGBM's Booster.__deepcopy__ rebuilds it from its model text, without the
        # record: the estimator keeps a reference too, which copy.deepcopy copies
        keep_estimator_record(self, self.booster_)
        return fitted

    def _host_booster(self) -> lightgbm.Booster:
        return self.booster_

    def _process_params(self, stage: str) -> dict[str, Any]:
        params = super()._process_params(stage)
        for key in _UNBIASED_PARAMS:  # ours, not LightGBM's
            params.pop(key, None)
        # LightGBM draws an int from a Generator or RandomState itself, not a SeedSequence
        return host_seeds(params, _SEED_ALIASES)


_ESTIMATOR_DOC = """LightGBM's ``{base}`` trained with unbiased-gain pruning (:func:`train`).

    A drop-in replacement: the constructor takes every ``{base}`` parameter and ``fit`` every
    ``{base}.fit`` argument (not ``init_model``); training goes through :func:`train`, so each
    new tree is pruned, top-down, of the splits whose unbiased gain on held-out rows is
    ``<= prune_threshold``. ``random_state`` also seeds the held-out draws (``None``: 0, so
    fits are repeatable as LightGBM's are).

    Parameters
    ----------
    holdout_fraction : float, default 0.5
        Training rows held out each round (zero gradient and hessian; LightGBM still counts
        them for ``min_child_samples``), in [0, 1). 0 switches pruning off.
    redraw_holdout : bool, default True
        New held-out rows every round.
    prune_threshold : float or None, default 0.0
        Splits with ``U <= prune_threshold`` are removed; None scores nothing (the model is
        then ``{base}``'s).
    n_draws, min_k : int, default 1 and 5
        Options of the unbiased gain (see :func:`train`).
    n_blocks : int, default 20
        Jackknife blocks for the standard errors of ``training_report(model)``.
    **kwargs
        ``{base}``'s parameters.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        {importance}
    training_splits_ : pandas.DataFrame
        Every split scored during training (:func:`training_splits`).
    """


def _estimator(base: type[lightgbm.LGBMModel]) -> type[lightgbm.LGBMModel]:
    """``base`` (``LGBMRegressor`` or ``LGBMClassifier``) trained through :func:`train`.

    scikit-learn reads the parameters from ``__init__``'s signature, so it lists LightGBM's
    constructor parameters and ours explicitly.
    """

    class Estimator(base, _UnbiasedFit):
        def __init__(
            self,
            *,
            boosting_type: str = "gbdt",
            num_leaves: int = 31,
            max_depth: int = -1,
            learning_rate: float = 0.1,
            n_estimators: int = 100,
            subsample_for_bin: int = 200000,
            objective: str | Callable | None = None,
            class_weight: dict | str | None = None,
            min_split_gain: float = 0.0,
            min_child_weight: float = 1e-3,
            min_child_samples: int = 20,
            subsample: float = 1.0,
            subsample_freq: int = 0,
            colsample_bytree: float = 1.0,
            reg_alpha: float = 0.0,
            reg_lambda: float = 0.0,
            random_state: int | np.random.SeedSequence | np.random.RandomState
            | np.random.Generator | None = None,
            n_jobs: int | None = None,
            importance_type: str = "split",
            holdout_fraction: float = 0.5,
            redraw_holdout: bool = True,
            prune_threshold: float | None = 0.0,
            n_draws: int = 1,
            min_k: int = 5,
            n_blocks: int = 20,
            **kwargs: Any,
        ) -> None:
            super().__init__(
                boosting_type=boosting_type, num_leaves=num_leaves, max_depth=max_depth,
                learning_rate=learning_rate, n_estimators=n_estimators,
                subsample_for_bin=subsample_for_bin, objective=objective,
                class_weight=class_weight, min_split_gain=min_split_gain,
                min_child_weight=min_child_weight, min_child_samples=min_child_samples,
                subsample=subsample, subsample_freq=subsample_freq,
                colsample_bytree=colsample_bytree, reg_alpha=reg_alpha, reg_lambda=reg_lambda,
                random_state=random_state, n_jobs=n_jobs, importance_type=importance_type,
                **kwargs,
            )
            self.holdout_fraction = holdout_fraction
            self.redraw_holdout = redraw_holdout
            self.prune_threshold = prune_threshold
            self.n_draws = n_draws
            self.min_k = min_k
            self.n_blocks = n_blocks

        @functools.wraps(base.fit)  # its signature: scikit-learn looks for sample_weight
        def fit(self, *args: Any, **kwargs: Any):
            # LGBMClassifier.fit encodes the labels (classes_) before the hook runs: our
            # options first, and a refused fit leaves a fitted model's classes_ (and all
            # else) as they were
            check_unbiased_options(self, _UNBIASED_PARAMS)
            with unchanged_on_error(self):
                return super().fit(*args, **kwargs)

    # named as the module attribute it is bound to, so that pickle finds it
    Estimator.__name__ = Estimator.__qualname__ = f"Unbiased{base.__name__}"
    Estimator.__init__.__qualname__ = f"Unbiased{base.__name__}.__init__"
    Estimator.fit.__qualname__ = f"Unbiased{base.__name__}.fit"
    Estimator.__doc__ = _ESTIMATOR_DOC.format(base=base.__name__, importance=IMPORTANCE_DOC)
    return Estimator


UnbiasedLGBMRegressor = _estimator(lightgbm.LGBMRegressor)
UnbiasedLGBMClassifier = _estimator(lightgbm.LGBMClassifier)
