"""scikit-learn loss names -> the core's objectives, with scikit-learn's arithmetic.

HistGradientBoosting computes gradients and hessians in float64 from float64 labels, raw
scores and sample weights (``sklearn._loss``), then stores them as float32: every objective
here is the core's :class:`~unbiased_criteria.objectives.Float64Objective` around the core
objective of the loss (the core's own objectives read labels as float32 first, as LightGBM and
XGBoost store them).

Losses: ``squared_error`` (gradient ``raw - y``, hessian 1), ``log_loss`` (binary: ``p - y``,
``p (1 - p)``; multiclass: ``p_k - [y = k]``, ``p_k (1 - p_k)``, no K/(K-1) factor),
``poisson`` (``exp(raw) - y``, ``exp(raw)``), ``gamma`` (``1 - y exp(-raw)``,
``y exp(-raw)``), ``absolute_error`` and ``quantile`` (hessian 1; leaves renewed with a
weighted median / quantile of the residuals, so importance only). Sample weights multiply
gradient and hessian.
"""

from __future__ import annotations

from collections.abc import Callable

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.model import Model
from unbiased_criteria.objectives import Float64Objective, Objective

__all__ = ["core_objective", "make_objective", "LOSSES"]

#: HistGradientBoosting ``loss`` values the adapter supports
LOSSES = ("squared_error", "absolute_error", "quantile", "poisson", "gamma", "log_loss")


def core_objective(loss: str, n_outputs: int, quantile: float | None = None) -> Objective:
    """The core objective of HistGradientBoosting loss ``loss``, with its arithmetic."""
    make = _objectives.make_objective
    if loss == "log_loss":
        base = (make("binary_logistic") if n_outputs == 1
                else make("multiclass_softmax", n_classes=n_outputs, hessian_factor=1.0))
    elif loss == "poisson":
        base = make("poisson", max_delta_step=0.0)
    elif loss == "quantile":
        base = make("quantile", alpha=0.5 if quantile is None else float(quantile))
    elif loss in ("squared_error", "absolute_error", "gamma"):
        base = make(loss)
    else:
        raise ValueError(f"loss must be one of {list(LOSSES)}, got {loss!r}")
    return Float64Objective(base=base)


def make_objective(spec: str | Callable | Objective, model_ir: Model) -> Objective:
    """The core objective for ``spec``.

    Parameters
    ----------
    spec : str, callable or Objective
        A HistGradientBoosting loss name (:data:`LOSSES`; ``quantile`` takes the model's
        quantile when the model has that loss, else 0.5), a canonical core name with
        scikit-learn's arithmetic (``"binary_logistic"``, ``"multiclass_softmax"``...), a
        callable ``f(y, raw_score, weight) -> (grad, hess)``, or a core Objective.
    model_ir : Model
        The model read by :func:`read_model` (number of outputs, its loss).

    Returns
    -------
    Objective
    """
    n_outputs = model_ir.forest.n_outputs
    given = _objectives.objective_given(spec, n_outputs)
    if given is not None:
        return given
    if spec in LOSSES:
        own = model_ir.objective
        if spec == "quantile" and own is not None and own.name == "quantile":
            return own
        return core_objective(spec, n_outputs)
    params: dict = {}
    if spec == "multiclass_softmax":
        params.update(n_classes=n_outputs, hessian_factor=1.0)
    elif spec == "multiclass_ova":
        params["n_classes"] = n_outputs
    return Float64Objective(base=_objectives.make_objective(spec, **params))
