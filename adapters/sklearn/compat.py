"""Every access to scikit-learn's private HistGradientBoosting state, in one place.

scikit-learn has no public interface to the trees of a fitted ``HistGradientBoosting*``
estimator: everything this adapter reads or writes goes through the private attributes below,
and nowhere else in the package.

Verified with scikit-learn 1.9 (:data:`VERIFIED_VERSIONS`); the layout this module relies on:

* ``_predictors``: list (iterations) of lists (one per output) of ``TreePredictor`` with
  ``nodes`` (a structured array of ``PREDICTOR_RECORD_DTYPE``, :data:`NODE_FIELDS`),
  ``raw_left_cat_bitsets`` and ``binned_left_cat_bitsets`` (``(n_categorical_splits, 8)``
  uint32: 256-bit sets of the categories that go left); ``TreePredictor(nodes,
  binned_left_cat_bitsets, raw_left_cat_bitsets)`` builds one;
* ``_baseline_prediction``: ``(1, n_trees_per_iteration_)`` raw score every row starts from;
* ``_loss``: the ``sklearn._loss`` object (its class names the loss; ``PinballLoss`` keeps
  its quantile in ``closs.quantile``);
* ``_preprocessor``: None, or the ``ColumnTransformer`` that ordinal-encodes the categorical
  columns and puts them **first** (then the numeric ones, in order), so tree feature indices
  count in that order; ``_preprocess_X(X, reset=False)`` validates and transforms ``X`` as
  ``predict`` does;
* ``_bin_mapper``: ``bin_thresholds_[j]`` (numeric: bin edges; categorical: the known
  category values, sorted), ``n_bins_non_missing_``, ``missing_values_bin_idx_``;
* ``_raw_predict(X)``: the raw scores ``(n, n_trees_per_iteration_)``;
* ``TreePredictor.predict(X, known_cat_bitsets, f_idx_map, n_threads)`` with
  ``_bin_mapper.make_known_categories_bitsets()``: one tree's raw-data predictions, as
  ``predict`` computes them (:func:`leaf_ids` routes rows with it).

:func:`check_layout` fails with one clear error on any other layout (``HostVersionError``, as
the other adapters' ``compat`` modules).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import sklearn
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from unbiased_criteria.adapters._compat import HostVersionError

from unbiased_criteria.model import UnsupportedModelError

__all__ = [
    "VERIFIED_VERSIONS", "NODE_FIELDS", "HGBState", "is_hgb", "check_estimator",
    "check_layout", "state", "input_categories", "preprocess", "raw_predict", "leaf_ids",
    "with_predictors", "fitted_trees", "missing_bin_marked",
]

#: scikit-learn versions (major.minor) this module was verified with
VERIFIED_VERSIONS = ("1.9",)
#: fields of a predictor's node records that the adapter reads or writes
NODE_FIELDS = (
    "value", "count", "feature_idx", "num_threshold", "missing_go_to_left", "left", "right",
    "gain", "depth", "is_leaf", "bin_threshold", "is_categorical", "bitset_idx",
)
_HGB = (HistGradientBoostingRegressor, HistGradientBoostingClassifier)


def version_verified() -> bool:
    return ".".join(sklearn.__version__.split(".")[:2]) in VERIFIED_VERSIONS


def is_hgb(model) -> bool:
    return isinstance(model, _HGB)


def check_estimator(model) -> None:
    """Refuse anything but a fitted HistGradientBoosting estimator, with one clear error."""
    if not is_hgb(model):
        name = f"{type(model).__module__}.{type(model).__name__}"
        hint = (" (pass the fitted estimator at the end of the pipeline and the rows as "
                "it receives them)" if hasattr(model, "steps") else
                " (the library's own grower: pass model.to_lightgbm() or model.to_xgboost(), "
                "or read its importance_report_)" if hasattr(model, "to_lightgbm") else "")
        raise TypeError(
            "model must be a LightGBM model (Booster or LGBMModel), an XGBoost model (Booster "
            "or XGBModel), a fitted scikit-learn HistGradientBoostingRegressor / "
            "HistGradientBoostingClassifier or a dumped model (dump_model() / "
            f"get_dump(dump_format='json') JSON); scikit-learn's other estimators are not "
            f"supported, got {name}{hint}"
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise ValueError(
            f"model is an unfitted {type(model).__name__}: call fit first"
        ) from None


def check_layout(model) -> None:
    """Raise :class:`~unbiased_criteria.adapters._compat.HostVersionError` (as the other
    adapters' compat modules do) unless ``model`` has the private layout above."""
    problems = []
    for attr in ("_predictors", "_baseline_prediction", "_loss", "_bin_mapper"):
        if not hasattr(model, attr):
            problems.append(f"no attribute {attr}")
    if not hasattr(model, "_preprocessor") or not hasattr(model, "_preprocess_X"):
        problems.append("no _preprocessor / _preprocess_X")
    if not problems:
        predictors = model._predictors
        if not isinstance(predictors, list) or not all(isinstance(p, list) for p in predictors):
            problems.append("_predictors is not a list of lists")
        else:
            for p in (p for it in predictors for p in it):
                names = getattr(getattr(p, "nodes", None), "dtype", np.dtype([])).names or ()
                missing = [f for f in NODE_FIELDS if f not in names]
                if missing or not hasattr(p, "raw_left_cat_bitsets") \
                        or not hasattr(p, "binned_left_cat_bitsets"):
                    problems.append(f"predictor nodes lack {missing or 'bitsets'}")
                    break
        base = np.asarray(model._baseline_prediction)
        if base.ndim != 2 or base.shape[0] != 1:
            problems.append(f"_baseline_prediction has shape {base.shape}, not (1, K)")
        mapper = model._bin_mapper
        for attr in ("bin_thresholds_", "n_bins_non_missing_", "missing_values_bin_idx_",
                     "is_categorical_"):
            if not hasattr(mapper, attr):
                problems.append(f"_bin_mapper has no {attr}")
    if problems:
        raise HostVersionError(
            f"scikit-learn {sklearn.__version__} stores HistGradientBoosting models in a "
            f"layout unbiased-criteria does not know ({'; '.join(problems)}); known to work "
            f"with scikit-learn {', '.join(VERIFIED_VERSIONS)}"
        )


@dataclass(frozen=True)
class HGBState:
    """What the reader needs of a fitted estimator, in plain numpy.

    ``columns[j]`` is the input column of the trees' feature ``j`` (the preprocessor puts the
    categorical columns first); ``categories[c]`` are the known category values of input
    column ``c`` (None for a numeric column) as they reach the trees.
    """

    predictors: list  # [iteration][output] -> (nodes, raw_left_cat_bitsets)
    baseline: np.ndarray
    loss: str
    quantile: float | None
    learning_rate: float
    l2_regularization: float
    columns: np.ndarray
    categories: list
    n_features: int
    feature_names: tuple[str, ...]
    #: ``warm_start``: the estimator may have been fitted again after ``set_params`` changed
    #: its learning rate, L2 or loss, which it keeps for the last fit only
    warm_start: bool = False


_LOSS_NAMES = {
    "HalfSquaredError": "squared_error", "AbsoluteError": "absolute_error",
    "PinballLoss": "quantile", "HalfPoissonLoss": "poisson", "HalfGammaLoss": "gamma",
    "HalfBinomialLoss": "log_loss", "HalfMultinomialLoss": "log_loss",
}


def _loss_name(loss) -> tuple[str, float | None]:
    # the ArrayAPI variants subclass the plain losses: walk the MRO
    for cls in type(loss).__mro__:
        if cls.__name__ in _LOSS_NAMES:
            name = _LOSS_NAMES[cls.__name__]
            quantile = float(loss.closs.quantile) if name == "quantile" else None
            return name, quantile
    raise UnsupportedModelError(
        f"the estimator's loss {type(loss).__name__} is not supported (squared_error, "
        "absolute_error, quantile, poisson, gamma, log_loss are)"
    )


def _columns(model, n_features: int) -> np.ndarray:
    """Input column of every tree feature (identity without a preprocessor)."""
    if model._preprocessor is None:
        return np.arange(n_features)
    is_cat = np.asarray(model.is_categorical_, dtype=bool)
    columns = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
    remapped = np.asarray(model._is_categorical_remapped, dtype=bool)
    if columns.size != n_features or not np.array_equal(remapped, np.arange(n_features)
                                                        < is_cat.sum()):
        raise HostVersionError(
            f"scikit-learn {sklearn.__version__}'s HistGradientBoosting preprocessor does not "
            "put the categorical columns first, as unbiased-criteria expects (known to work "
            f"with scikit-learn {', '.join(VERIFIED_VERSIONS)})")
    return columns


def state(model) -> HGBState:
    """The fitted estimator's trees and parameters (no copies of the node arrays)."""
    check_layout(model)
    n_features = int(model.n_features_in_)
    columns = _columns(model, n_features)
    mapper = model._bin_mapper
    is_cat_tree = np.asarray(mapper.is_categorical_, dtype=bool)
    categories: list = [None] * n_features
    for j in np.flatnonzero(is_cat_tree):
        categories[int(columns[j])] = np.asarray(mapper.bin_thresholds_[j], dtype=np.float64)
    names = getattr(model, "feature_names_in_", None)
    names = tuple(str(n) for n in names) if names is not None else tuple(
        f"x{i}" for i in range(n_features))
    loss, quantile = _loss_name(model._loss)
    return HGBState(
        predictors=[[(p.nodes, p.raw_left_cat_bitsets) for p in it]
                    for it in model._predictors],
        baseline=np.asarray(model._baseline_prediction, dtype=np.float64).ravel(),
        loss=loss,
        quantile=quantile,
        learning_rate=float(model.learning_rate),
        l2_regularization=float(model.l2_regularization),
        columns=columns,
        categories=categories,
        n_features=n_features,
        feature_names=names,
        warm_start=bool(getattr(model, "warm_start", False)),
    )


def input_categories(model) -> dict[int, list]:
    """The categories of every categorical input column as the estimator's encoder knows them
    (missing values left out), for readers of data files that must build matching columns."""
    if model._preprocessor is None or model.is_categorical_ is None:
        return {}
    encoder = model._preprocessor.named_transformers_["encoder"]
    columns = np.flatnonzero(np.asarray(model.is_categorical_, dtype=bool))
    out = {}
    for c, cats in zip(columns, encoder.categories_):
        values = np.asarray(cats, dtype=object).tolist()
        out[int(c)] = [v for v in values if not (isinstance(v, float) and np.isnan(v))]
    return out


def preprocess(model, X) -> np.ndarray:
    """``X`` validated and transformed as ``predict`` does, in the trees' column order."""
    return np.asarray(model._preprocess_X(X, reset=False), dtype=np.float64)


def raw_predict(model, X) -> np.ndarray:
    """The estimator's own raw scores ``(n, n_trees_per_iteration_)``."""
    return model._raw_predict(X)


def leaf_ids(model, X_pre: np.ndarray, iterations: range, out: np.ndarray) -> None:
    """Write the node id of the leaf every row of preprocessed ``X_pre`` reaches in every tree
    of ``iterations`` into ``out`` (``(n, n_trees)`` int32, iteration-major, class-minor).

    The estimator's own compiled raw-data predictor does the routing: a copy of each tree
    whose leaves hold their own node id (exact in float64) is predicted with the estimator's
    known-category bitsets, as ``predict`` does; this stands in for the ``pred_leaf`` that
    scikit-learn does not have.
    """
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    known, f_idx_map = model._bin_mapper.make_known_categories_bitsets()
    n_threads = _openmp_effective_n_threads()
    X_pre = np.ascontiguousarray(X_pre, dtype=np.float64)
    j = 0
    for i in iterations:
        for p in model._predictors[i]:
            nodes = p.nodes.copy()
            nodes["value"] = np.arange(nodes.shape[0], dtype=np.float64)
            ids = TreePredictor(nodes, p.binned_left_cat_bitsets, p.raw_left_cat_bitsets
                                ).predict(X_pre, known, f_idx_map, n_threads)
            out[:, j] = ids.astype(np.int32)
            j += 1


def bin_layout(model) -> tuple[list, np.ndarray, int]:
    """``bin_thresholds_``, ``n_bins_non_missing_`` and the missing-values bin index."""
    mapper = model._bin_mapper
    return (list(mapper.bin_thresholds_), np.asarray(mapper.n_bins_non_missing_),
            int(mapper.missing_values_bin_idx_))


def missing_bin_marked(model) -> dict[int, bool]:
    """For each categorical tree feature that has a split sending missing values left, whether
    scikit-learn put the missing-values bin in that split's binned category set: it does
    where the feature had missing values in training (``has_missing_values``, not kept on
    the estimator), and the same way at every such split of the feature."""
    missing_bin = int(model._bin_mapper.missing_values_bin_idx_)
    word, bit = divmod(missing_bin, 32)
    out: dict[int, bool] = {}
    for p in (p for it in model._predictors for p in it):
        nodes = p.nodes
        at = np.flatnonzero(nodes["is_categorical"].astype(bool) & ~nodes["is_leaf"].astype(bool)
                            & nodes["missing_go_to_left"].astype(bool))
        for v in at:
            sets = p.binned_left_cat_bitsets[int(nodes["bitset_idx"][v])]
            out.setdefault(int(nodes["feature_idx"][v]), bool((int(sets[word]) >> bit) & 1))
    return out


def node_dtype(model) -> np.dtype:
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    return PREDICTOR_RECORD_DTYPE


def fitted_trees(model) -> object:
    """The list object of the fitted estimator's trees (``_predictors``), or None: a fit makes
    a new one (a ``warm_start`` fit extends it), pickles and deep copies keep its identity
    with the estimator's, so what is kept for these trees can be tied to it."""
    return getattr(model, "_predictors", None)


def with_predictors(model, predictors: list) -> object:
    """A deep copy of ``model`` whose ``_predictors`` are ``predictors``.

    ``predictors[i][k]`` is ``(nodes, binned_left_cat_bitsets, raw_left_cat_bitsets)``.
    """
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor

    old = model._predictors
    # the old trees are not copied: they are replaced
    new = copy.deepcopy(model, memo={id(old): []})
    new._predictors = [[TreePredictor(*p) for p in it] for it in predictors]
    return new
