"""scikit-learn loss names -> the core's objectives, with scikit-learn's arithmetic.

HistGradientBoosting computes gradients and hessians in float64 from float64 labels, raw
scores and sample weights (``sklearn._loss``), then stores them as float32. The core's
objectives read labels as float32 first (what LightGBM and XGBoost store), which would shift a
residual ``raw - y`` by up to ``|y| * 6e-8``: :class:`SklearnObjective` wraps a core objective
and keeps everything float64 until the final float32 cast, and applies scikit-learn's tie
rules where they differ from the core's (at ``raw == y``: ``absolute_error`` gives -1, not 0;
``quantile`` gives ``-q``, not ``1 - q``).

Losses: ``squared_error`` (gradient ``raw - y``, hessian 1), ``log_loss`` (binary: ``p - y``,
``p (1 - p)``; multiclass: ``p_k - [y = k]``, ``p_k (1 - p_k)``, no K/(K-1) factor),
``poisson`` (``exp(raw) - y``, ``exp(raw)``), ``gamma`` (``1 - y exp(-raw)``,
``y exp(-raw)``), ``absolute_error`` and ``quantile`` (hessian 1; leaves renewed with a
weighted median / quantile of the residuals, so importance only). Sample weights multiply
gradient and hessian.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.model import Model
from unbiased_criteria.objectives import Objective

__all__ = ["SklearnObjective", "core_objective", "make_objective", "LOSSES"]

#: HistGradientBoosting ``loss`` values the adapter supports
LOSSES = ("squared_error", "absolute_error", "quantile", "poisson", "gamma", "log_loss")


@dataclass(frozen=True)
class SklearnObjective(Objective):
    """A core objective computed as scikit-learn does (float64 labels and weights).

    Parameters
    ----------
    base : Objective
        The core objective (label checks, init score, loss and inverse link come from it).
    """

    base: Objective = field(default_factory=lambda: _objectives.make_objective("squared_error"))

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.base.name

    @property
    def n_outputs(self) -> int:  # type: ignore[override]
        return self.base.n_outputs

    @property
    def renews_leaves(self) -> bool:  # type: ignore[override]
        return self.base.renews_leaves

    def grad_hess(self, y, raw, weight=None):
        """Float32 gradient and hessian: float64 maths on float64 labels, then weights."""
        y = np.asarray(y, dtype=np.float64)
        raw = np.asarray(raw, dtype=np.float64)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            g, h = self._unweighted(y, raw)
            if weight is not None:
                w = np.asarray(weight, dtype=np.float64)
                w = w[:, None] if g.ndim == 2 else w
                g, h = g * w, h * w
        return g.astype(np.float32), h.astype(np.float32)

    def _unweighted(self, y, raw):
        base = self.base
        if base.name == "absolute_error":
            return np.where(raw > y, 1.0, -1.0), np.ones_like(raw)
        if base.name == "quantile":
            q = base.alpha
            return np.where(y >= raw, -q, 1.0 - q), np.ones_like(raw)
        return base._grad_hess(y, raw, None)

    def check_labels(self, y, argument):
        self.base.check_labels(y, argument)

    def init_score(self, y, weight=None):
        return self.base.init_score(y, weight)

    def loss(self, y, raw):
        return self.base.loss(y, raw)

    def predict(self, raw):
        return self.base.predict(raw)


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
    return SklearnObjective(base=base)


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
    if isinstance(spec, Objective):
        return spec
    if callable(spec):
        return _objectives.make_objective(spec, n_outputs=n_outputs)
    if not isinstance(spec, str):
        raise TypeError(f"objective must be a name or a callable, got {type(spec).__name__}")
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
    return SklearnObjective(base=_objectives.make_objective(spec, **params))
