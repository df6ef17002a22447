"""LightGBM's evaluation and callbacks, run on the core loop's scores.

Metrics and ``feval`` see the scores of the pruned trees in ``lightgbm.train``'s terms; LightGBM's
own callback objects (``early_stopping``, ``log_evaluation``, ``record_evaluation``...) see the
results in ``lightgbm.train``'s format and can stop the loop.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters.lightgbm.compat import EVAL_RESULT, choose_param_value
from unbiased_criteria.adapters.lightgbm.datasets import check_balanced_bagging
from unbiased_criteria.adapters.lightgbm.metrics import metric_func
from unbiased_criteria.adapters.lightgbm.source import param_value

from unbiased_criteria.metrics import Metric

__all__ = ["training_callbacks", "LoopHooks"]

#: parameters that fix the values of collapsed nodes (and the gains) for the whole run
_SCORING_PARAMS = ("lambda_l1", "lambda_l2", "max_delta_step", "path_smooth", "cat_l2")


def training_callbacks(params: dict[str, Any], callbacks):
    """The callbacks in ``lightgbm.train``'s order, with early stopping from ``params``."""
    params = choose_param_value(params, "early_stopping_round")
    if params["early_stopping_round"] is None:
        params.pop("early_stopping_round")
    callbacks = list(callbacks or [])
    for i, cb in enumerate(callbacks):
        cb.__dict__.setdefault("order", i - len(callbacks))
    callback_set = set(callbacks)
    rounds = params.get("early_stopping_round", 0)
    if not isinstance(rounds, int | np.integer):
        raise TypeError(f"early_stopping_round must be an integer, got {rounds!r}")
    if rounds > 0:
        callback_set.add(lightgbm.early_stopping(
            stopping_rounds=rounds, first_metric_only=params.get("first_metric_only", False),
            min_delta=params.get("early_stopping_min_delta", 0.0),
            verbose=param_value(params, "verbosity", 1) > 0,
        ))
    return params, sorted(callback_set, key=attrgetter("order"))


class LoopHooks:
    """The core loop's metrics, ``feval`` and ``callback`` for one training run.

    Metrics and ``feval`` find their evaluation set through the labels the loop hands them
    (:class:`~unbiased_criteria.adapters.lightgbm.datasets.Labels`). ``callback`` runs
    LightGBM's callbacks on the results in ``lightgbm.train``'s format; when one raises
    ``EarlyStopException`` it records the best iteration and score as ``lightgbm.train`` does
    and stops the loop. :meth:`before_round` runs the callbacks that run before each
    iteration (``lightgbm.reset_parameter``) on the growing Booster, as ``lightgbm.train``
    does: each tree then carries its own round's learning rate as its shrinkage, which the
    values of its collapsed nodes take.
    """

    def __init__(self, *, grower, params, num_boost_round, convert, source, callbacks, fevals,
                 positives=0):
        self.grower, self.params, self.num_boost_round = grower, params, num_boost_round
        self.positives = positives  # rows LightGBM's binary objective counts as positive
        self.convert, self.source = convert, source
        self.before = [cb for cb in callbacks if getattr(cb, "before_iteration", False)]
        self.callbacks = [cb for cb in callbacks if not getattr(cb, "before_iteration", False)]
        self._scoring = {key: source.float_param(key) for key in _SCORING_PARAMS}
        self.fevals = fevals
        self.stopped = False
        self.best_iteration = 0
        self.best_score: list = []
        self.last_results: list = []
        self._EvalResult = EVAL_RESULT

    def metric(self, name: str, higher_is_better: bool) -> Metric:
        func, convert, source = metric_func(name), self.convert, self.source

        def value(y, raw, w, _objective):
            rows = y.rows
            r = rows.shifted(raw)
            return func(rows.y, convert(r), r, rows.weight, source)

        return Metric(name, value, higher_is_better)

    def feval(self, y, raw, w):
        rows = y.rows
        preds = self.convert(rows.shifted(raw))
        out = []
        for f in self.fevals:
            res = f(preds, rows.dataset)
            out.extend(res if isinstance(res, list) else [res])
        return [(str(n), float(v), bool(b)) for n, v, b in out]

    def before_round(self, it: int) -> None:
        """Run the before-iteration callbacks ahead of round ``it``.

        Raises
        ------
        ValueError
            A callback changed a parameter that fixes the values of collapsed nodes
            (``lambda_l1``, ``lambda_l2``, ``max_delta_step``, ``path_smooth``...), or set
            balanced bagging LightGBM would apply (:func:`check_balanced_bagging`).
        """
        env = lightgbm.callback.CallbackEnv(
            model=self.grower.booster, params=self.params, iteration=it, begin_iteration=0,
            end_iteration=self.num_boost_round, evaluation_result_list=None,
        )
        for cb in self.before:
            cb(env)
        for key, was in self._scoring.items():
            value = choose_param_value(self.params, key).get(key)
            if value is not None and float(value) != was:
                raise ValueError(
                    f"a callback changed {key} from {was:g} to {float(value):g} during "
                    "training: the training hook follows a changing learning rate or tree "
                    "parameters, not the parameters that value a leaf"
                )
        check_balanced_bagging(self._param, self.positives, when=" set by a callback")

    def _param(self, key: str) -> Any:
        """The run's value of LightGBM parameter ``key`` now (aliases resolved)."""
        value = choose_param_value(self.params, key).get(key)
        return self.source.params.get(key) if value is None else value

    def callback(self, it: int, evaluations: dict) -> bool:
        """Run LightGBM's callbacks after round ``it``; True stops the loop."""
        results = [(s, m, v, hib) for (s, m), (v, hib) in evaluations.items()]
        if self._EvalResult is not None:
            results = [self._EvalResult(*r) for r in results]
        self.last_results = results
        env = lightgbm.callback.CallbackEnv(
            model=self.grower.booster, params=self.params, iteration=it, begin_iteration=0,
            end_iteration=self.num_boost_round, evaluation_result_list=results,
        )
        try:
            for cb in self.callbacks:
                cb(env)
        except lightgbm.callback.EarlyStopException as stop:
            self.stopped = True
            self.best_iteration = stop.best_iteration + 1
            self.best_score = list(stop.best_score)
        return self.stopped
