"""One way for both hosts to keep a training run's record with the Booster it returned.

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

from typing import Any

from unbiased_criteria.training_record import TrainingRecord

_ATTRIBUTE = "unbiased_training_record"


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


def held_out_rows_warning(record: TrainingRecord | None) -> str | None:
    """Why a model the training hook grew with held-out rows cannot match its own gains on
    the training rows (a reader's warning, as bagging's), or None for any other model."""
    if record is None or not record.holdout_fraction > 0:
        return None
    return (
        f"the training hook grew this model holding out {record.holdout_fraction:g} of the "
        "training rows in every round (with zero gradient and hessian): each tree's stored "
        "hessian sums and gains are those of its round's other rows, so biased_gain over the "
        "training rows given will not match host_gain (unbiased_gain does not depend on it)"
    )
