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
from unbiased_criteria.adapters.lightgbm.datasets import (
    check_balanced_bagging,
    check_min_hessian,
)
from unbiased_criteria.adapters.lightgbm.metrics import metric_func
from unbiased_criteria.adapters.lightgbm.source import param_value, parse_parameters

from unbiased_criteria.metrics import Metric

__all__ = ["training_callbacks", "LoopHooks", "BoosterParams"]

#: parameters read once for the whole run: they value every collapsed node and score every
#: split (the loop's SplitScore, the grower's categorical options)
_SCORING_PARAMS = ("lambda_l1", "lambda_l2", "max_delta_step", "path_smooth", "cat_l2",
                   "max_cat_to_onehot", "monotone_constraints")
#: parameters the hook re-checks after every callback (:meth:`LoopHooks.before_round`)
_CHECKED_PARAMS = ("min_sum_hessian_in_leaf", "data_sample_strategy", "bagging_freq",
                   "pos_bagging_fraction", "neg_bagging_fraction")
_WATCHED = (*_SCORING_PARAMS, "objective", *_CHECKED_PARAMS)


def _same(a: Any, b: Any) -> bool:
    """Whether two parameter values are equal (False where ``==`` cannot tell, e.g. arrays)."""
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _number(value: Any) -> float | None:
    """``value`` as a float, None where it is not a number (a list, a name)."""
    if isinstance(value, bool | str | int | float | np.integer | np.floating):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _prints_as(value: Any, printed: str) -> bool:
    """Whether LightGBM prints number ``value`` as ``printed`` (6 significant digits)."""
    number, shown = _number(value), _number(printed)
    return number is not None and shown is not None and float(f"{number:.6g}") == shown


def _show(value: Any) -> str:
    """A parameter value for a message: ``2``, ``1.0000001``, ``'1,0,0'``."""
    number = _number(value)
    if number is None or isinstance(value, str) and not value.strip():
        return repr(value)
    return f"{number:g}" if float(f"{number:g}") == number else repr(number)


class BoosterParams:
    """LightGBM's own current values of the parameters the hook relies on, on a Booster.

    A callback can change the growing Booster's parameters through
    ``lightgbm.reset_parameter``, under any of LightGBM's aliases, or on the Booster itself
    (``env.model.reset_parameter``); LightGBM applies what it was given, and the run's params
    (``env.params``) need not say so. The Booster's model text reports the parameters it
    uses, but to 6 significant digits; ``Booster.params``, which ``reset_parameter`` updates,
    holds what was passed in full. A value is the one passed where it prints as the Booster
    reports, else the reported one. The text is read again only when ``Booster.params``
    changed (``reset_parameter``, however called, updates it; a change through LightGBM's C
    API alone goes unseen): a round without one costs a dictionary comparison.

    Parameters
    ----------
    booster : lightgbm.Booster
        The growing Booster, before any callback ran.
    """

    def __init__(self, booster: lightgbm.Booster) -> None:
        self._booster = booster
        self._record = dict(booster.params)  # Python's record of what LightGBM was given
        self.values = self._read(self._record, {})
        #: the values at the start of training
        self.start = dict(self.values)

    def refresh(self) -> dict[str, Any]:
        """Read the Booster's parameters again; the current :attr:`values`."""
        record = self._booster.params
        # entries a callback passed since the last read: a key passed twice in one round
        # holds its last value, and a clash between a name and its alias is settled by the
        # value the Booster reports
        given = {k: v for k, v in record.items()
                 if k not in self._record or not _same(self._record[k], v)}
        if not given and record.keys() == self._record.keys():
            # nothing passed through reset_parameter: the model text (whose cost grows with
            # the model's features and categories) is not read again
            return self.values
        self._record = dict(record)
        self.values = self._read(given, self.values)
        return self.values

    def _read(self, given: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
        booster = self._booster
        # the model text of no tree: the header and the Booster's parameters, ~0.1 ms
        printed = parse_parameters(booster.model_to_string(
            start_iteration=booster.current_iteration(), num_iteration=1))
        values = {}
        for key in _WATCHED:
            shown = printed.get(key, "")
            value = choose_param_value(given, key).get(key)
            if value is None:
                value = previous.get(key)
            values[key] = value if value is not None and _prints_as(value, shown) else shown
        return values

    def changed(self, key: str) -> bool:
        """Whether parameter ``key`` differs from its value at the start."""
        was, now = self.start[key], self.values[key]
        a, b = _number(was), _number(now)
        if a is not None and b is not None:
            return a != b
        return str(was) != str(now)


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
    values of its collapsed nodes take. Before every round it also checks what the callbacks
    did to the growing Booster's parameters (:class:`BoosterParams`).
    """

    def __init__(self, *, grower, params, num_boost_round, convert, source, callbacks, fevals,
                 positives=0, held_out=False):
        self.grower, self.params, self.num_boost_round = grower, params, num_boost_round
        self.positives = positives  # rows LightGBM's binary objective counts as positive
        self.held_out = held_out  # rows are held out (zero hessian): min_sum_hessian > 0
        self.convert, self.source = convert, source
        self.before = [cb for cb in callbacks if getattr(cb, "before_iteration", False)]
        self.callbacks = [cb for cb in callbacks if not getattr(cb, "before_iteration", False)]
        self.booster_params = BoosterParams(grower.booster)
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
        """Run the before-iteration callbacks ahead of round ``it``, then check what every
        callback so far did to the growing Booster (after-iteration ones may call
        ``env.model.reset_parameter`` too).

        Raises
        ------
        ValueError
            A callback changed, under any name or on the Booster itself, a parameter that
            values collapsed nodes or scores splits (``lambda_l1``, ``lambda_l2``,
            ``max_delta_step``, ``path_smooth``, ``cat_l2``, ``max_cat_to_onehot``,
            ``monotone_constraints``) or the objective, or set ``min_sum_hessian_in_leaf <= 0``
            while rows are held out (:func:`check_min_hessian`).
        UnsupportedModelError
            A callback set balanced bagging LightGBM would apply
            (:func:`check_balanced_bagging`).
        """
        env = lightgbm.callback.CallbackEnv(
            model=self.grower.booster, params=self.params, iteration=it, begin_iteration=0,
            end_iteration=self.num_boost_round, evaluation_result_list=None,
        )
        for cb in self.before:
            cb(env)
        current = self.booster_params
        values = current.refresh()
        if current.changed("objective"):
            raise ValueError(
                f"a callback set objective to {values['objective']!r} during training: the "
                "training hook takes the gradients of the objective it started with and "
                "cannot follow a change"
            )
        for key in _SCORING_PARAMS:
            if current.changed(key):
                raise ValueError(
                    f"a callback changed {key} from {_show(current.start[key])} to "
                    f"{_show(values[key])} during training (under this name or an alias, or "
                    "on the Booster): the training hook follows a changing learning rate or "
                    "tree parameters, not the parameters that value a leaf"
                )
        if self.held_out:
            check_min_hessian(values["min_sum_hessian_in_leaf"],
                              when=f", set by a callback before round {it}")
        check_balanced_bagging(values.get, self.positives, when=" set by a callback")

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
