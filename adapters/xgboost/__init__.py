"""XGBoost adapter: read a model into the IR, route rows with ``pred_leaf``, write the IR back,
and train with pruning (:func:`train`).

One front end for one format (treelite style): the reader parses the model JSON
(``Booster.save_raw("json")``) and takes the training hyper-parameters (eta, lambda, alpha,
max_delta_step, subsample...) from ``Booster.save_config()``, since the model JSON does not
hold them. It takes no data. The writer puts IR trees back into a copy of that JSON, so reading
a model and writing it back gives the same arrays. The training hook (:func:`train`,
:class:`XGBGrower`) lets XGBoost grow each iteration from the core loop's gradients
(``Booster.boost``), reads just that iteration with the reader, and writes the pruned trees
with the writer; :func:`training_splits` gives the per-split scores gathered on the way.
:class:`UnbiasedXGBRegressor` and :class:`UnbiasedXGBClassifier` are drop-in scikit-learn
estimators over :func:`train`.

IR node ids are XGBoost's node ids, so ``predict(pred_leaf=True)`` returns IR ids directly.
The one exception is a tree with tombstones (nodes the ``prune`` updater deleted, marked by
``split_indices == 2147483647``): the IR keeps only its reachable nodes, in increasing id, and
the router maps XGBoost's ids to them.

Host facts this package relies on (XGBoost 3.x, each checked by experiment):

* numeric nodes send ``x`` left iff ``x < split_condition``; categorical nodes send the
  categories of their set **right** and everything else left; missing values (NaN, absent
  sparse entries) go to ``default_left``'s side at every node;
* ``split_conditions`` holds the (shrunk) leaf value at a leaf; ``base_weights`` holds the
  unshrunk weight of an internal node;
* ``base_score`` is in output space: a scalar string (``"5E-1"``) up to 3.0, a list string
  (``"[2.79E0]"``) from 3.1; the margin is the objective's link of it, in float32. From 3.2
  the multiclass intercept is a per-class vector already in margin space;
* the predictor assumes ``right == left + 1``: siblings must have consecutive ids;
* ``load_model`` on an existing Booster resets its training parameters, and a Booster loaded
  from a file has default parameters in ``save_config()``.

Everything is float32 in XGBoost (features, margins, gradients, leaf values); the IR stores
the exact float32 values as float64.

Modules (one idea each):

* ``layout``: the model JSON as every part reads it (:data:`RULES`, the ``gbtree`` dict, a
  tree's arrays, tombstones);
* ``objectives``: XGBoost objective names -> core objectives and links
  (:func:`make_objective`, :func:`parse_base_score`);
* ``reader``: model JSON and config -> IR (:func:`read_model`, :func:`parse_model`);
* ``router``: :func:`make_router`, :func:`match_categories` (a held-out frame's categories
  coded as the training frame's, for a model that stores none: :func:`reads_category_codes`);
* ``writer``: IR -> model JSON and Booster (:func:`model_json`, :func:`write_model`);
* ``metrics``: XGBoost's metrics by the names it reports, with its conventions;
* ``grower``: :class:`XGBGrower`;
* ``record``: :class:`TrainingRecord`, :func:`training_record`, :func:`training_splits`,
  :func:`training_report`;
* ``training``: :func:`train`;
* ``estimators``: :class:`UnbiasedXGBRegressor`, :class:`UnbiasedXGBClassifier`.
"""

from unbiased_criteria.adapters.xgboost.estimators import (
    UnbiasedXGBClassifier,
    UnbiasedXGBRegressor,
)
from unbiased_criteria.adapters.xgboost.grower import XGBGrower
from unbiased_criteria.adapters.xgboost.layout import RULES
from unbiased_criteria.adapters.xgboost.objectives import make_objective, parse_base_score
from unbiased_criteria.adapters.xgboost.reader import parse_model, read_model
from unbiased_criteria.adapters.xgboost.record import (
    TrainingRecord,
    training_record,
    training_report,
    training_splits,
)
from unbiased_criteria.adapters.xgboost.router import (
    make_router,
    match_categories,
    reads_category_codes,
)
from unbiased_criteria.adapters.xgboost.training import train
from unbiased_criteria.adapters.xgboost.writer import model_json, write_model

__all__ = [
    "RULES",
    "read_model",
    "parse_model",
    "parse_base_score",
    "make_objective",
    "make_router",
    "match_categories",
    "reads_category_codes",
    "write_model",
    "model_json",
    "train",
    "XGBGrower",
    "TrainingRecord",
    "training_record",
    "training_splits",
    "training_report",
    "UnbiasedXGBRegressor",
    "UnbiasedXGBClassifier",
]
