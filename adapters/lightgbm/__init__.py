"""LightGBM adapter: read a model into the IR, route rows with ``pred_leaf``, write the IR back,
and train with unbiased-gain pruning.

One front end for one format (treelite style): :func:`read_model` parses
``Booster.dump_model(num_iteration=-1)`` and the ``parameters:`` block of
``Booster.model_to_string(num_iteration=-1)``; it takes no data. :func:`make_router` routes
rows with LightGBM's own ``predict(pred_leaf=True)``. :func:`write_model` / :func:`model_text`
render IR trees as a LightGBM text model between the original header and trailer, so reading a
model and writing it back gives the same text.

Training hook: :func:`train` (same arguments as ``lightgbm.train``) drives the core's loop
(``unbiased_criteria.boosting.boost``) with :class:`LGBMGrower`, a Booster with
``objective='none'`` fed the loop's gradients one iteration at a time; the pruned trees are
written with the writer. :func:`training_splits` / :func:`training_report` give the unbiased
gain of the splits scored during training; :class:`UnbiasedLGBMRegressor` and
:class:`UnbiasedLGBMClassifier` are drop-in scikit-learn estimators over :func:`train`.

Modules (one idea each):

* ``source``: LightGBM's routing rules and host facts, :class:`LightGBMSource`, parameters,
  forest layout;
* ``objectives``: LightGBM objective names -> core objectives (:func:`make_objective`);
* ``text_model``: checks a text model before LightGBM loads it (:func:`check_model_text`),
  and hands the reader each checked tree's fields;
* ``reader``: text trees (or a JSON dump), the dump's header and ``parameters:`` -> IR
  (:func:`read_model`);
* ``router``: :func:`make_router`;
* ``writer``: IR -> text model (:func:`model_text`, :func:`write_model`);
* ``metrics``: LightGBM's metrics by the names it reports, with its conventions;
* ``datasets``: the training hook's Datasets, constructed as ``lightgbm.train`` does;
* ``grower``: :class:`LGBMGrower`;
* ``callbacks``: LightGBM's evaluation and callbacks on the loop's scores;
* ``training``: :func:`train`, :func:`training_splits`, :func:`training_report`;
* ``estimators``: :class:`UnbiasedLGBMRegressor`, :class:`UnbiasedLGBMClassifier`.
"""

from unbiased_criteria.adapters.lightgbm.estimators import (
    UnbiasedLGBMClassifier,
    UnbiasedLGBMRegressor,
)
from unbiased_criteria.adapters.lightgbm.grower import LGBMGrower
from unbiased_criteria.adapters.lightgbm.objectives import make_objective
from unbiased_criteria.adapters.lightgbm.reader import read_model
from unbiased_criteria.adapters.lightgbm.router import make_router
from unbiased_criteria.adapters.lightgbm.source import RULES, LightGBMSource
from unbiased_criteria.adapters.lightgbm.training import train, training_report, training_splits
from unbiased_criteria.adapters.lightgbm.writer import model_text, write_model

__all__ = [
    "RULES",
    "LightGBMSource",
    "read_model",
    "make_router",
    "make_objective",
    "write_model",
    "model_text",
    "train",
    "training_splits",
    "training_report",
    "LGBMGrower",
    "UnbiasedLGBMRegressor",
    "UnbiasedLGBMClassifier",
]
