"""scikit-learn adapter: read a fitted HistGradientBoosting estimator into the IR, route rows
through its trees, write the IR back as a fitted estimator.

Supports ``sklearn.ensemble.HistGradientBoostingRegressor`` and
``HistGradientBoostingClassifier`` (scikit-learn ships no ``feature_importances_`` for them);
any other scikit-learn estimator is refused with one clear error. scikit-learn exposes the
trees only through private attributes: every access to them is in :mod:`.compat`, with the
versions it was verified with, and an unknown layout fails there with one clear error.

There is no ``pred_leaf``: the router runs the rows through the estimator's own input
preprocessing and its compiled predictor, on copies of the trees whose leaves hold their node
ids; the IR's own router gives the same leaves (tested). There are no training hooks:
scikit-learn has no public round-by-round custom-objective interface.

Modules (one idea each):

* ``compat``: the private layout (``_predictors``, ``_baseline_prediction``, ``_loss``,
  ``_preprocessor``, ``_bin_mapper``), in one place;
* ``objectives``: loss names -> core objectives with scikit-learn's float64 arithmetic;
* ``reader``: estimator -> IR (:func:`read_model`, :data:`RULES`; the stored gain's scale);
* ``router``: :func:`make_router`;
* ``writer``: IR -> a fitted estimator (:func:`write_model`);
* ``model_file``: the command line's model files (pickles and joblib files, read only when the
  user trusts them), the interface of :mod:`unbiased_criteria.model_files`.
"""

from unbiased_criteria.adapters.sklearn.objectives import make_objective
from unbiased_criteria.adapters.sklearn.reader import RULES, read_model
from unbiased_criteria.adapters.sklearn.router import make_router
from unbiased_criteria.adapters.sklearn.writer import write_model

__all__ = ["RULES", "read_model", "make_router", "make_objective", "write_model"]
