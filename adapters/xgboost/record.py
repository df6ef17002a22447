"""The record a training run leaves with the Booster it returned
(:class:`~unbiased_criteria.training_record.TrainingRecord`), and its views
:func:`training_splits` and :func:`training_report`."""

from __future__ import annotations

import hashlib

import pandas as pd
import xgboost
from unbiased_criteria.adapters._record import Stamp, model_record

from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.training_record import TrainingRecord

__all__ = ["TrainingRecord", "training_record", "training_splits", "training_report"]


def trees_stamp(booster: xgboost.Booster) -> Stamp:
    """Which trees ``booster`` holds: its boosting rounds and a digest of its trees.

    The digest covers the model's ``gradient_booster`` object of its UBJSON (tree structure,
    values and statistics, the trees' layout), not its attributes, feature names or base
    score, which XGBoost and the library set without touching the trees. XGBoost writes the
    learner's keys in sorted order, ``gradient_booster`` right before
    ``learner_model_param``; both keys are searched from the end, after the attributes.
    """
    raw = bytes(booster.save_raw("ubj"))
    end = raw.rfind(b"learner_model_param")
    start = raw.rfind(b"gradient_booster", 0, end if end >= 0 else len(raw))
    part = raw[start:end] if 0 <= start < end else raw  # an unknown layout: the whole model
    return Stamp(booster.num_boosted_rounds(), hashlib.sha256(part).hexdigest())


def training_record(booster: xgboost.Booster | xgboost.XGBModel) -> TrainingRecord:
    """The :class:`TrainingRecord` of a Booster returned by :func:`train`.

    The record is an attribute of that Booster object: a pickled or copied Booster (or
    estimator) keeps it; a slice (``booster[a:b]``), a saved-and-loaded Booster has none. A
    Booster whose trees changed after :func:`train` returned it (continued with
    ``xgboost.train(..., xgb_model=booster)``, which copies the record along, ``update()``,
    ``load_model``) is refused: the record describes the hook's trees only.

    Parameters
    ----------
    booster : xgboost.Booster or xgboost.XGBModel
        The object :func:`train` returned (or a copy or unpickled copy of it), or a fitted
        ``UnbiasedXGBRegressor`` / ``UnbiasedXGBClassifier`` (its Booster), as LightGBM's
        ``training_record`` takes the estimator.

    Returns
    -------
    TrainingRecord

    Raises
    ------
    KeyError
        ``booster`` was not returned by :func:`train`.
    ValueError
        ``booster`` was continued or changed after :func:`train` returned it.
    """
    if isinstance(booster, xgboost.XGBModel):  # the estimator was refused as "not returned"
        booster = booster.get_booster()
    record = model_record(booster)
    if record is None:
        raise KeyError(
            "booster was not returned by unbiased_criteria.adapters.xgboost.train (slices and "
            "loaded Boosters carry no training record; copied and pickled ones do)"
        )
    return record


def training_splits(booster: xgboost.Booster | xgboost.XGBModel) -> pd.DataFrame:
    """The per-split table gathered while :func:`train` built ``booster`` (a copy).

    One row per split XGBoost made, scored before pruning, kept or not; see
    :class:`TrainingRecord` for the columns and :func:`training_record` for which Boosters
    have one.
    """
    return training_record(booster).splits.copy()


def training_report(booster: xgboost.Booster | xgboost.XGBModel) -> ImportanceReport:
    """The unbiased importance gathered while :func:`train` built ``booster``.

    Every split XGBoost made was scored with U on that round's held-out rows before pruning
    decided on it; each U is unbiased for the split's gain, so the per-feature sum over all of
    them, kept or not, is an honest importance (a noise feature's expected total is <= 0).
    The sum over the kept splits only is not: they were kept because their U was high on the
    very rows that measured it (the winner's curse).

    Parameters
    ----------
    booster : xgboost.Booster or xgboost.XGBModel
        The object :func:`train` returned, or the estimator (see :func:`training_record`).

    Returns
    -------
    ImportanceReport
        ``to_frame()`` sums ``unbiased_gain`` (U at the round the split was made),
        ``biased_gain`` and ``host_gain`` per feature over every scored split, with
        block-jackknife standard errors (``n_blocks`` blocks of training rows fixed for the
        run; NaN with ``n_blocks < 2``), so ``select()`` works; ``splits`` lists the splits
        (``kept`` says which are in the model).

    Raises
    ------
    ValueError
        Nothing was scored (``prune_threshold=None`` or ``holdout_fraction=0``): there is no
        training importance, and a table of zeros would read as a model without splits.
    """
    return training_record(booster).report("xgboost")
