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
