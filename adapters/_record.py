"""One way for both hosts to keep a training run's record with the Booster it returned, and
the sketches of the held-out rows that pruned a model (:attr:`Model.pruned_on`) where the
model's format has no place for them.

The record (:class:`unbiased_criteria.training_record.TrainingRecord`) is a Python attribute of
the Booster object, not a weak map keyed by it, so that it travels with the Booster where the
host copies the Booster's ``__dict__``: both hosts' pickles (a pickled Booster or estimator
keeps it) and XGBoost's ``copy()`` / ``copy.copy`` / ``copy.deepcopy``. LightGBM's
``copy.deepcopy`` re-loads the model text, XGBoost's slices ``booster[a:b]`` build a new
Booster, and ``save_model`` / ``load_model`` keep only the model: those have no record.
(``Booster.load_model`` into the very Booster ``train`` returned replaces its model but not
its Python attributes: the record would then be stale; the estimators' ``load_model`` drops
it.)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from unbiased_criteria.model import Model
from unbiased_criteria.training_record import TrainingRecord

_ATTRIBUTE = "unbiased_training_record"
_PRUNED_ON = "unbiased_pruned_on"


def attach_record(booster: Any, record: TrainingRecord) -> None:
    """Keep ``record`` with ``booster`` (the object :func:`train` returns)."""
    setattr(booster, _ATTRIBUTE, record)


def detach_record(booster: Any) -> None:
    """Drop the record kept with ``booster``, if any."""
    booster.__dict__.pop(_ATTRIBUTE, None)


def record_of(booster: Any) -> TrainingRecord | None:
    """The record kept with ``booster``, or None."""
    record = getattr(booster, _ATTRIBUTE, None)
    return record if isinstance(record, TrainingRecord) else None


def attach_pruned_on(obj: Any, sketches: tuple[str, ...]) -> None:
    """Keep with ``obj`` (a Booster or an estimator the writer made) the sketches of the
    held-out rows that pruned it; travels as the training record does (pickles, not files)."""
    if sketches:
        setattr(obj, _PRUNED_ON, tuple(sketches))


def pruned_on_of(obj: Any) -> tuple[str, ...]:
    """The sketches :func:`attach_pruned_on` kept with ``obj``, or ()."""
    sketches = getattr(obj, _PRUNED_ON, ())
    return tuple(sketches) if isinstance(sketches, tuple) else ()


def model_record(booster: Any, model: Any = None) -> TrainingRecord | None:
    """The record kept with ``booster``, else the one the estimator ``model`` keeps for it
    (``_own_record``: LightGBM's ``copy.deepcopy`` rebuilds the Booster without it), or None."""
    record = record_of(booster)
    if record is None and hasattr(model, "_own_record"):
        record = model._own_record()
    return record


def with_held_out_warning(read: Model, record: TrainingRecord | None) -> Model:
    """``read`` with the reason a model the training hook grew with held-out rows cannot
    match its own gains on the training rows (a reader's warning, as bagging's); ``read``
    itself for any other model."""
    if record is None or not record.holdout_fraction > 0:
        return read
    message = (
        f"the training hook grew this model holding out {record.holdout_fraction:g} of the "
        "training rows in every round (with zero gradient and hessian): each tree's stored "
        "hessian sums and gains are those of its round's other rows, so biased_gain over the "
        "training rows given will not match host_gain (unbiased_gain does not depend on it)")
    return dataclasses.replace(read, warnings=read.warnings + (message,),
                               gain_only=read.gain_only + (message,))
