"""One way for both hosts to keep a training run's record with the Booster it returned, and
what the library's writers leave with a model they wrote (:class:`Written`: the sketches of
the held-out rows that pruned it, :attr:`Model.pruned_on`, where the model's format has no
place for them).

The record (:class:`unbiased_criteria.training_record.TrainingRecord`) is a Python attribute of
the Booster object, not a weak map keyed by it, so that it travels with the Booster where the
host copies the Booster's ``__dict__``: both hosts' pickles (a pickled Booster or estimator
keeps it) and XGBoost's ``copy()`` / ``copy.copy`` / ``copy.deepcopy``. LightGBM's
``copy.deepcopy`` re-loads the model text, XGBoost's slices ``booster[a:b]`` build a new
Booster, and ``save_model`` / ``load_model`` keep only the model: those have no record.

A Python attribute also travels where the model no longer is the one the record describes:
XGBoost's continued training (``xgboost.train(..., xgb_model=booster)``) copies the Booster's
``__dict__`` into the continued one, and ``update``, ``load_model`` or a ``refresh`` updater
change the trees of the very Booster that holds it. So the record is kept with a fingerprint
of the trees it describes (:class:`KeptRecord`): a record whose Booster's trees no longer match
is not used as theirs (:func:`model_record` raises, the readers say the model changed).

Both are stored as plain Python, numpy and pandas data (a dict of frames, arrays, strings
and numbers; the fingerprint function by its name), never as this library's objects: a
pickle of a Booster or estimator the library returned must load, and predict, where the
library is not installed (a serving image with only the host). :class:`KeptRecord` and
:class:`Written` are rebuilt from that data when the library reads it.
"""

from __future__ import annotations

import dataclasses
import importlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from unbiased_criteria.model import Model
from unbiased_criteria.training_record import TrainingRecord

_ATTRIBUTE = "unbiased_training_record"
_WRITTEN = "unbiased_pruned_on"
#: the estimators' own reference to their record (LightGBM's deepcopy rebuilds the Booster)
_ESTIMATOR_RECORD = "_unbiased_record"
#: the key marking the plain data this module stores (its value: the kind of data)
_KIND = "unbiased_criteria"
#: the package a stored fingerprint function is looked up in
_PACKAGE = "unbiased_criteria."
#: the records rebuilt from stored data while they are in use, by the id of their splits
#: frame: reading one stored record twice gives the same object (as when it was the object)
_REBUILT: weakref.WeakValueDictionary[int, TrainingRecord] = weakref.WeakValueDictionary()


@dataclass(frozen=True)
class Stamp:
    """Which trees a record describes: the model's boosting rounds and a digest of its trees
    (their structure and values, not the model's attributes or feature names)."""

    iterations: int
    digest: str


@dataclass(frozen=True)
class KeptRecord:
    """A training record with the :class:`Stamp` of the Booster it was made for.

    ``fingerprint`` is the host's function giving a Booster's stamp (a module-level function
    of the library: it is stored by its name, ``"module:qualname"``).
    """

    record: TrainingRecord
    stamp: Stamp
    fingerprint: Callable[[Any], Stamp]

    def describes(self, booster: Any) -> bool:
        """Whether ``booster`` holds the very trees the record was made for."""
        return self.fingerprint(booster) == self.stamp

    def changed_message(self, booster: Any) -> str:
        """Why the record is not ``booster``'s: what it covered, what the model holds now."""
        now = self.fingerprint(booster).iterations
        grown = self.stamp.iterations
        if now > grown:
            how = (f"it holds {now} boosting rounds where the training hook grew {grown} "
                   "(continued training, e.g. xgboost.train(xgb_model=...) or update(), or a "
                   "model loaded over it)")
        else:
            how = (f"its trees are not those the training hook grew ({now} boosting rounds now, "
                   f"{grown} then: refreshed, a model loaded over it, leaves set...)")
        return ("this model's training record no longer describes it: " + how + " after the "
                "training hook returned it. The record's splits and importance are those of "
                "the hook's trees alone; for the model as it is, use "
                "unbiased_criteria.unbiased_importance with held-out rows")


def _function(name: str) -> Callable[[Any], Stamp]:
    """The library's module-level function stored as ``"module:qualname"``."""
    module, _, qualname = name.partition(":")
    if not module.startswith(_PACKAGE):  # only the library's own functions are looked up
        raise ValueError(f"not a function of the library: {name!r}")
    return getattr(importlib.import_module(module), qualname)


def _stored_record(kept: KeptRecord) -> dict[str, Any]:
    """``kept`` as plain data (no object of this library: see the module docstring)."""
    fingerprint = kept.fingerprint
    name = f"{fingerprint.__module__}:{fingerprint.__qualname__}"
    if not name.startswith(_PACKAGE) or _function(name) is not fingerprint:
        raise ValueError(f"fingerprint must be a module-level function of the library, "
                         f"got {fingerprint!r}")
    record = kept.record
    return {_KIND: "training_record", "splits": record.splits, "jackknife": record.jackknife,
            "feature_names": tuple(record.feature_names), "scored": bool(record.scored),
            "holdout_fraction": float(record.holdout_fraction),
            "stamp": (int(kept.stamp.iterations), str(kept.stamp.digest)),
            "fingerprint": name}


def _kept_from(stored: Any) -> KeptRecord | None:
    """The :class:`KeptRecord` :func:`_stored_record` stored (or, kept by an older version of
    the library, the object itself), else None."""
    if isinstance(stored, KeptRecord):
        return stored
    if not isinstance(stored, dict) or stored.get(_KIND) != "training_record":
        return None
    record = TrainingRecord(stored["splits"], stored["jackknife"],
                            tuple(stored["feature_names"]), scored=stored["scored"],
                            holdout_fraction=stored["holdout_fraction"])
    iterations, digest = stored["stamp"]
    # the one in use, if any: it holds the frame, so the id is not another frame's
    before = _REBUILT.get(id(record.splits))
    if (before is not None and before.splits is record.splits
            and before.jackknife is record.jackknife
            and dataclasses.replace(before, splits=None, jackknife=None)
            == dataclasses.replace(record, splits=None, jackknife=None)):
        record = before
    else:
        _REBUILT[id(record.splits)] = record
    return KeptRecord(record, Stamp(int(iterations), str(digest)),
                      _function(stored["fingerprint"]))


def attach_record(booster: Any, record: TrainingRecord,
                  fingerprint: Callable[[Any], Stamp]) -> None:
    """Keep ``record`` with ``booster`` (the object :func:`train` returns), stamped with
    ``fingerprint(booster)`` (a module-level function of the library): the trees it
    describes; stored as plain data (see the module docstring)."""
    kept = KeptRecord(record, fingerprint(booster), fingerprint)
    setattr(booster, _ATTRIBUTE, _stored_record(kept))


def detach_record(booster: Any) -> None:
    """Drop what the library kept with ``booster`` (its record, what a writer left), if any:
    for a Booster whose model is replaced in place (``load_model``)."""
    booster.__dict__.pop(_ATTRIBUTE, None)
    booster.__dict__.pop(_WRITTEN, None)


def kept_record(booster: Any, model: Any = None) -> KeptRecord | None:
    """The stamped record kept with ``booster``, else the one the estimator ``model`` keeps
    for it (:func:`keep_estimator_record`: LightGBM's ``copy.deepcopy`` rebuilds the Booster
    without it), or None; whether it still describes ``booster`` is not checked."""
    kept = _kept_from(getattr(booster, _ATTRIBUTE, None))
    if kept is None and model is not None:
        kept = _kept_from(getattr(model, _ESTIMATOR_RECORD, None))
    return kept


def model_record(booster: Any, model: Any = None) -> TrainingRecord | None:
    """The record of ``booster`` (see :func:`kept_record`), or None when it has none.

    Raises
    ------
    ValueError
        The Booster carries a record but its trees are no longer those the record describes
        (continued or changed after the training hook returned it).
    """
    kept = kept_record(booster, model)
    if kept is None:
        return None
    if not kept.describes(booster):
        raise ValueError(kept.changed_message(booster))
    return kept.record


def keep_estimator_record(estimator: Any, booster: Any) -> None:
    """Let the fitted ``estimator`` keep a reference to its Booster's record, so that its deep
    copies keep it where the host's deepcopy of the Booster drops Python attributes."""
    kept = kept_record(booster)
    setattr(estimator, _ESTIMATOR_RECORD, None if kept is None else _stored_record(kept))


def drop_estimator_record(estimator: Any) -> None:
    """Drop the record an estimator keeps (a written copy's record is not its own)."""
    estimator.__dict__.pop(_ESTIMATOR_RECORD, None)


@dataclass(frozen=True, eq=False)
class Written:
    """What a writer left with a model it wrote (a pruned model).

    Attributes
    ----------
    sketches : tuple of str
        Sketches of the held-out rows that pruned it (:attr:`Model.pruned_on`); may be empty
        (``threshold=-inf`` decides nothing).
    model : object or None
        Kept with an estimator: the fitted model object it was written for (its Booster, its
        predictors list); what was written describes the estimator only while that object is
        still its model (a re-fit makes a new one; pickles and deep copies keep the shared
        reference). None when kept with the Booster itself.
    holdout_fraction : float
        The training hook's held-out share of the rows the trees were grown with (0: not
        grown by the hook, or without held-out rows): the written model has no training
        record, but its kept splits still hold the sums of each round's other rows.
    """

    sketches: tuple[str, ...]
    model: Any = None
    holdout_fraction: float = 0.0


def grown_holdout(booster: Any, model: Any = None) -> float:
    """The training hook's held-out share for the trees of ``booster`` (``model``: the
    estimator holding it), from its record or, for a model written from one, what the writer
    kept; 0 when neither says."""
    kept = kept_record(booster, model)
    if kept is not None:
        return float(kept.record.holdout_fraction)
    written = _written_for(booster, model)
    return 0.0 if written is None else written.holdout_fraction


def _written_for(booster: Any, model: Any = None) -> Written | None:
    """What a writer kept for ``booster``: with it, or with the estimator ``model`` holding
    it."""
    return written_of(booster) or written_of(model, booster)


def attach_written(obj: Any, sketches: tuple[str, ...], model: Any = None,
                   holdout_fraction: float = 0.0) -> None:
    """Keep with ``obj`` (a Booster the writer made, or an estimator with its fitted ``model``
    object) that a writer wrote it, the sketches of the held-out rows that pruned it and the
    training hook's held-out share its trees were grown with (:func:`grown_holdout` of the
    template); travels as the training record does (pickles, not files), as plain data (see
    the module docstring)."""
    setattr(obj, _WRITTEN, {_KIND: "written", "sketches": tuple(str(s) for s in sketches),
                            "model": model, "holdout_fraction": float(holdout_fraction)})


def _written_from(stored: Any) -> Written | None:
    """The :class:`Written` :func:`attach_written` stored (or, kept by an older version of the
    library, the object itself), else None."""
    if isinstance(stored, Written):
        return stored
    if not isinstance(stored, dict) or stored.get(_KIND) != "written":
        return None
    return Written(tuple(stored["sketches"]), stored["model"],
                   float(stored["holdout_fraction"]))


def written_of(obj: Any, model: Any = None) -> Written | None:
    """What :func:`attach_written` kept with ``obj`` while it describes ``obj``'s model
    (``model``: the estimator's current Booster or predictors list), or None."""
    written = _written_from(getattr(obj, _WRITTEN, None))
    if written is None:
        return None
    if written.model is not None and written.model is not model:
        return None  # kept for a model the estimator no longer holds (it was fit again)
    return written


def pruned_on_of(obj: Any, model: Any = None) -> tuple[str, ...]:
    """The sketches :func:`attach_written` kept with ``obj`` (for ``model``), or ()."""
    written = written_of(obj, model)
    return () if written is None else written.sketches


def with_held_out_warning(read: Model, booster: Any, model: Any = None) -> Model:
    """``read`` with the reason a model the training hook grew with held-out rows cannot
    match its own gains on the training rows (a reader's warning, as bagging's); ``read``
    itself for any other model. ``booster`` is the model's Booster, ``model`` what was read
    (see :func:`kept_record`); a record that no longer describes ``booster`` speaks only of
    the trees the hook grew."""
    kept = kept_record(booster, model)
    written = _written_for(booster, model) if kept is None else None
    if written is not None and written.holdout_fraction > 0:
        message = (
            "this model was pruned from trees the training hook grew holding out "
            f"{written.holdout_fraction:g} of the training rows in every round (with zero "
            "gradient and hessian): the splits kept hold the hessian sums and gains of each "
            "round's other rows, so biased_gain over the training rows given need not match "
            "host_gain (unbiased_gain does not depend on it)")
    elif kept is None or not kept.record.holdout_fraction > 0:
        return read
    elif kept.describes(booster):
        fraction = f"{kept.record.holdout_fraction:g}"
        message = (
            f"the training hook grew this model holding out {fraction} of the training rows "
            "in every round (with zero gradient and hessian): each tree's stored hessian sums "
            "and gains are those of its round's other rows, so biased_gain over the training "
            "rows given will not match host_gain (unbiased_gain does not depend on it)")
    else:
        message = (
            f"this model carries the record of {kept.stamp.iterations} boosting rounds the "
            f"training hook grew holding out {kept.record.holdout_fraction:g} of the training "
            "rows in every round, "
            "but its trees changed after (continued training, a model loaded over it...): "
            "where the hook's trees are still in it, their stored hessian sums and gains are "
            "those of each round's other rows, so biased_gain over the training rows given "
            "need not match host_gain (unbiased_gain does not depend on it)")
    return dataclasses.replace(read, warnings=read.warnings + (message,),
                               gain_only=read.gain_only + (message,))
