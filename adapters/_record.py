"""One way for both hosts to keep a training run's record with the Booster it returned.

The record (:class:`unbiased_criteria.training_record.TrainingRecord`) is a Python attribute of
the Booster object. LightGBM's and XGBoost's Boosters pickle their ``__dict__``, so a pickled
Booster, or estimator, keeps it; ``copy.copy`` / ``copy.deepcopy`` (both hosts re-load the
model), XGBoost's slices ``booster[a:b]``, ``save_model`` / ``load_model`` make new Boosters
without it.
"""

from __future__ import annotations

from typing import Any

from unbiased_criteria.training_record import TrainingRecord

_ATTRIBUTE = "unbiased_training_record"


def attach_record(booster: Any, record: TrainingRecord) -> None:
    """Keep ``record`` with ``booster`` (the object :func:`train` returns)."""
    setattr(booster, _ATTRIBUTE, record)


def record_of(booster: Any) -> TrainingRecord | None:
    """The record kept with ``booster``, or None."""
    record = getattr(booster, _ATTRIBUTE, None)
    return record if isinstance(record, TrainingRecord) else None
