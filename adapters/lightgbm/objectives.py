"""LightGBM objective names -> the core's objectives, with the model's hyper-parameters.

The core speaks canonical objective names only (``squared_error``, ``binary_logistic``...);
this module owns LightGBM's names and aliases, the parameters each objective reads from the
``parameters:`` block, and which objectives the reader and the training hook refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from unbiased_criteria.adapters.lightgbm.source import LightGBMSource

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.model import Model, UnsupportedModelError

__all__ = [
    "OBJECTIVE_ALIASES", "RANKING", "MEAN_TYPE", "core_objective", "objective_for",
    "make_objective", "trainable_objective",
]

#: LightGBM objective names and aliases -> canonical LightGBM name (config.cpp ParseObjectiveAlias)
OBJECTIVE_ALIASES = {
    "regression": "regression", "regression_l2": "regression", "l2": "regression",
    "mean_squared_error": "regression", "mse": "regression", "l2_root": "regression",
    "root_mean_squared_error": "regression", "rmse": "regression",
    "regression_l1": "regression_l1", "l1": "regression_l1",
    "mean_absolute_error": "regression_l1", "mae": "regression_l1",
    "huber": "huber", "fair": "fair", "poisson": "poisson", "quantile": "quantile",
    "mape": "mape", "mean_absolute_percentage_error": "mape", "gamma": "gamma",
    "tweedie": "tweedie", "binary": "binary",
    "multiclass": "multiclass", "softmax": "multiclass",
    "multiclassova": "multiclassova", "multiclass_ova": "multiclassova", "ova": "multiclassova",
    "ovr": "multiclassova",
    "cross_entropy": "cross_entropy", "xentropy": "cross_entropy",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
    "lambdarank": "lambdarank", "rank_xendcg": "rank_xendcg", "xendcg": "rank_xendcg",
    "xe_ndcg": "rank_xendcg", "xe_ndcg_mart": "rank_xendcg", "xendcg_mart": "rank_xendcg",
}
RANKING = {"lambdarank", "rank_xendcg"}
#: objectives whose init score zeroes the root gradient sum, so that the folded init score can be
#: read off the first tree's leaves
MEAN_TYPE = {"regression", "poisson", "gamma", "tweedie", "binary", "cross_entropy",
             "multiclass", "multiclassova"}

_RENEWED = ("LightGBM renews its leaf values with weighted {} of the residuals "
            "(RenewTreeOutput), which a Booster driven by custom gradients cannot do")
#: LightGBM objectives the training hook refuses, with the reason
_NOT_TRAINABLE = {
    "regression_l1": _RENEWED.format("medians"),
    "quantile": _RENEWED.format("percentiles"),
    "mape": _RENEWED.format("medians"),
    "lambdarank": "ranking objectives are not supported",
    "rank_xendcg": "ranking objectives are not supported",
    "cross_entropy_lambda": "its gradients are not implemented in the core",
}

def percentile_rule(source: LightGBMSource) -> str:
    """The core's rule for the unweighted percentile of the labels that the LightGBM version
    that wrote the model took as the L1 and quantile init score (it changed in 4.0 and 4.1:
    :data:`unbiased_criteria.objectives.PERCENTILE_RULES`)."""
    return {"4.0": "lightgbm3", "4.1": "lightgbm4.0"}.get(source.written_before() or "",
                                                           "lightgbm")


#: LightGBM canonical objective -> (core objective name, its parameters from the model's)
_CORE_OBJECTIVES: dict[str, tuple[str, Callable[[LightGBMSource, int], dict]]] = {
    "regression": ("squared_error", lambda s, K: {}),
    "binary": ("binary_logistic", lambda s, K: {
        "sigmoid": s.float_param("sigmoid"), "pos_weight": s.float_param("scale_pos_weight")}),
    # LightGBM's softmax hessian is K/(K-1) p(1-p)
    "multiclass": ("multiclass_softmax", lambda s, K: {
        "n_classes": K, "hessian_factor": K / (K - 1.0)}),
    "multiclassova": ("multiclass_ova", lambda s, K: {
        "n_classes": K, "sigmoid": s.float_param("sigmoid")}),
    "poisson": ("poisson", lambda s, K: {
        "max_delta_step": s.float_param("poisson_max_delta_step")}),
    "gamma": ("gamma", lambda s, K: {}),
    "tweedie": ("tweedie", lambda s, K: {
        "variance_power": s.float_param("tweedie_variance_power")}),
    "huber": ("huber", lambda s, K: {"alpha": s.float_param("alpha")}),
    "fair": ("fair", lambda s, K: {"c": s.float_param("fair_c")}),
    "cross_entropy": ("cross_entropy", lambda s, K: {}),
    "regression_l1": ("absolute_error", lambda s, K: {
        "percentile_rule": percentile_rule(s)}),
    "quantile": ("quantile", lambda s, K: {
        "alpha": s.float_param("alpha"), "percentile_rule": percentile_rule(s)}),
    "mape": ("mape", lambda s, K: {}),
}


def core_objective(name: str | None, source: LightGBMSource, K: int):
    """The core objective (float64 maths, like LightGBM) for LightGBM objective ``name``."""
    if name is None:
        return None
    try:
        core, params = _CORE_OBJECTIVES[name]
    except KeyError:
        raise UnsupportedModelError(f"LightGBM objective {name!r} is not supported") from None
    return _objectives.make_objective(core, precision="float64", **params(source, K))


def _label_weights(y: np.ndarray, scale_pos_weight: float) -> tuple[float, float]:
    """LightGBM's is_unbalance class weights (positive, negative) from the label counts."""
    pos = int(np.sum(np.asarray(y) > 0))
    neg = int(np.size(y)) - pos
    if pos == 0 or neg == 0:
        return scale_pos_weight, 1.0
    if pos > neg:
        return scale_pos_weight, pos / neg
    return neg / pos * scale_pos_weight, 1.0


def objective_for(name: str, source: LightGBMSource, K: int, *, y_train=None):
    """:func:`core_objective`, with ``is_unbalance``'s class weights from ``y_train``.

    LightGBM weighs the classes of a binary model trained with ``is_unbalance`` by their counts
    in the training labels, which the model does not store.
    """
    unbalanced = source.flag("is_unbalance")
    if name == "binary" and unbalanced:
        if y_train is None:
            raise ValueError(
                "the model was trained with is_unbalance=True: its class weights come from the "
                "training label counts; build the objective with unbiased_criteria.adapters."
                "lightgbm.make_objective('binary', read_model(model), y_train=y_train) and "
                "pass that as objective="
            )
        pos, neg = _label_weights(y_train, source.float_param("scale_pos_weight"))
        return _objectives.make_objective(
            "binary_logistic", precision="float64", sigmoid=source.float_param("sigmoid"),
            pos_weight=pos, neg_weight=neg,
        )
    if name == "multiclassova" and unbalanced:
        # one binary loss per class k, weighted by the counts of label k against the others
        if y_train is None:
            raise ValueError(
                "the model was trained with is_unbalance=True: its class weights come from the "
                "training label counts; build the objective with unbiased_criteria.adapters."
                "lightgbm.make_objective('multiclassova', read_model(model), y_train=y_train) "
                "and pass that as objective=")
        y = np.asarray(y_train).astype(np.int64)  # LightGBM: static_cast<int>(label) == k
        spw = source.float_param("scale_pos_weight")
        pairs = [_label_weights((y == k).astype(np.int64), spw) for k in range(K)]
        return _objectives.make_objective(
            "multiclass_ova", precision="float64", n_classes=K,
            sigmoid=source.float_param("sigmoid"),
            pos_weights=tuple(p for p, _ in pairs), neg_weights=tuple(n for _, n in pairs))
    return core_objective(name, source, K)


def make_objective(
    spec: str | Callable | _objectives.Objective, model_ir: Model, *, y_train=None
) -> _objectives.Objective:
    """The core objective for ``spec``, with the hyper-parameters of the model.

    Parameters
    ----------
    spec : str, callable or Objective
        A LightGBM objective name or alias (``"regression"``, ``"binary"``, ``"l1"``...),
        read with the model's ``parameters:`` (sigmoid, alpha, tweedie power...); a canonical
        core name (``"squared_error"``...); a callable ``func(y, raw, weight) -> (g, h)``; or
        a core Objective, returned as is.
    model_ir : Model
        The model as read by :func:`read_model`.
    y_train : array, optional
        Training labels; needed only for a binary or multiclassova model trained with
        ``is_unbalance``, whose class weights LightGBM computed from the label counts.

    Returns
    -------
    Objective
    """
    K = model_ir.forest.n_outputs
    if isinstance(spec, _objectives.Objective):
        return spec
    if callable(spec):
        return _objectives.make_objective(spec, n_outputs=K)
    if not isinstance(spec, str):
        raise TypeError(f"objective must be a string or a callable, got {type(spec).__name__}")
    source = model_ir.source
    if not isinstance(source, LightGBMSource):
        source = LightGBMSource(text="", params={}, objective=None, n_leaves=np.zeros(0))
    name = OBJECTIVE_ALIASES.get(spec)
    if name is None:
        if spec not in _objectives.OBJECTIVES:
            raise ValueError(
                f"objective {spec!r} is neither a LightGBM objective "
                f"({sorted(set(OBJECTIVE_ALIASES))}) nor one of "
                f"{sorted(_objectives.OBJECTIVES)}"
            )
        cls = _objectives.OBJECTIVES[spec]
        extra = {"n_classes": K} if "n_classes" in cls.__dataclass_fields__ else {}
        if spec == "multiclass_softmax":
            extra["hessian_factor"] = K / (K - 1.0)
        return cls(precision="float64", **extra)
    # ranking and cross_entropy_lambda have no core objective: core_objective refuses them
    return objective_for(name, source, K, y_train=y_train)


def trainable_objective(spec: Any) -> str:
    """LightGBM's canonical name for objective ``spec`` of the training hook; ValueError if
    unknown, UnsupportedModelError if the hook cannot drive it."""
    if spec is None:
        return "regression"
    if not isinstance(spec, str):
        raise TypeError(
            f"params['objective'] must be a string or a callable, got {type(spec).__name__}"
        )
    name = OBJECTIVE_ALIASES.get(spec.strip().lower())
    if name is None:
        raise ValueError(
            f"unknown objective {spec!r}: use one of LightGBM's objectives "
            f"({sorted(set(OBJECTIVE_ALIASES) - set(_NOT_TRAINABLE))}) or a callable "
            "f(preds, train_data) -> (grad, hess)"
        )
    if name in _NOT_TRAINABLE:
        raise UnsupportedModelError(
            f"objective {spec!r} is not supported by the training hook: {_NOT_TRAINABLE[name]}"
        )
    return name
