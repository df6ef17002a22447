"""Gradient and hessian of each loss, as the hosts compute them.

Every objective maps labels ``y``, raw scores ``F`` and row weights ``w`` to float32 gradients
and hessians (both hosts store them as float32). Labels are read as float32 first (both hosts
store them so). ``precision`` is the arithmetic the host uses in between: ``"float64"``
(LightGBM: double scores, double maths, float32 result) or ``"float32"`` (XGBoost: float32
margins and maths). Multiclass objectives take ``F`` of shape ``(n, K)`` and return ``(n, K)``.

:class:`Float64Objective` wraps any of them with scikit-learn's arithmetic instead (float64
labels and maths, one final float32 cast).

Names are canonical; adapters translate the hosts' names (``"regression"``,
``"reg:squarederror"``...) into them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from .errors import InputError

__all__ = ["Objective", "CustomObjective", "Float64Objective", "MultiTarget", "Quantiles",
           "LabelOneWeighted", "make_objective", "objective_given", "OBJECTIVES",
           "NonFiniteGradientError"]

Precision = Literal["float64", "float32"]


def _sigmoid(z):
    # exp of a large negative argument underflows to 0 cleanly; no overflow warning wanted
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def _check_classes(y, argument, n_classes, name):
    if not (np.all(y == np.round(y)) and y.min() >= 0 and y.max() < n_classes):
        raise ValueError(f"{argument} must hold class indices 0..{n_classes - 1} for {name}")


def _check_non_negative(y, argument, name):
    if np.any(y < 0):
        raise ValueError(f"{argument} must be non-negative for {name}")


def _check_finite(name: str, g: np.ndarray, h: np.ndarray) -> None:
    """Raise ``ValueError`` naming the objective and the first rows whose gradient or hessian
    is NaN or infinite (a NaN would otherwise pass silently into every gain)."""
    # a float64 sum of float32 values cannot overflow: it is finite iff every value is
    # (inf - inf in the sum is NaN, not finite: the check below names the rows)
    with np.errstate(invalid="ignore"):
        if g.dtype == h.dtype == np.float32 and np.isfinite(g.sum(dtype=np.float64)) \
                and np.isfinite(h.sum(dtype=np.float64)):
            return
    if np.isfinite(g).all() and np.isfinite(h).all():
        return
    bad = ~(np.isfinite(g) & np.isfinite(h))
    rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
    raise NonFiniteGradientError(name, rows)


def _check_hessians(name: str, h: np.ndarray) -> None:
    """Refuse a callable's negative hessians (beyond float32 rounding of a zero): every gain
    divides by hessian sums, which they would shrink towards 0 or below (a non-convex loss:
    the gains and leaves would be meaningless, without a word)."""
    low = float(h.min(initial=0.0))
    if low >= 0:
        return
    floor = -1e-6 * float(np.abs(h).max())  # a zero's rounding, at the hessians' scale
    if low >= floor:
        return
    bad = h < floor
    rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
    raise NonFiniteGradientError(name, rows, problem=f"negative hessians (the lowest {low:.6g})",
                                 advice="gains divide by hessian sums, which need a convex "
                                        "loss (hessians >= 0)")


class NonFiniteGradientError(InputError):
    """An objective's gradient or hessian is NaN or infinite on some rows (or, from a
    callable, a hessian is negative: ``problem`` says which).

    ``rows`` are positions in the arrays the objective was given; a caller that reordered the
    rows re-raises with :meth:`renamed`, in the user's row numbers and naming the argument.
    """

    def __init__(self, objective: str, rows: np.ndarray, what: str = "row(s)",
                 problem: str = "non-finite gradients or hessians",
                 advice: str = "check the labels, weights and raw scores of these rows",
                 ) -> None:
        self.objective, self.rows = objective, np.asarray(rows)
        self.problem, self.advice = problem, advice
        shown = ", ".join(str(r) for r in self.rows[:10]) + \
            (", ..." if self.rows.size > 10 else "")
        super().__init__(
            f"objective {objective!r} gives {problem} on {self.rows.size} {what} (rows "
            f"{shown}); {advice}"
        )

    def renamed(self, order: np.ndarray | None, kind: str) -> NonFiniteGradientError:
        """The same error in the caller's row numbers ``order[rows]`` (sorted), the rows
        called ``kind`` rows ("training", "held-out")."""
        rows = self.rows if order is None else np.sort(np.asarray(order)[self.rows])
        return NonFiniteGradientError(self.objective, rows, f"{kind} row(s)", self.problem,
                                      self.advice)


# LightGBM clamps class frequencies away from 0 and 1 before taking logs, by its kEpsilon:
# the float literal 1e-15f widened to double
_K_EPSILON = float(np.float32(1e-15))


def _weighted_mean(y, w):
    if w is None:
        return float(np.mean(y, dtype=np.float64))
    return float(np.average(np.asarray(y, dtype=np.float64), weights=w))


#: LightGBM's rules for an unweighted percentile (``percentile_rule`` of the L1 and quantile
#: objectives): from 4.1 on; 4.0's; 3.x's (and older), whose position is a float32 product
PERCENTILE_RULES = ("lightgbm", "lightgbm4.0", "lightgbm3")


def _check_percentile_rule(rule: str) -> None:
    if rule not in PERCENTILE_RULES:
        raise ValueError(f"percentile_rule must be one of {PERCENTILE_RULES}, got {rule!r}")


def _weighted_percentile(y, w, q, rule: str = "lightgbm"):
    """LightGBM's percentile of labels ``y`` (the init score of its L1, quantile and MAPE
    objectives), rule for rule, in its precisions (labels, weights and alpha in float32).

    Checked against LightGBM 4.7's own init scores (``tests/core/test_objectives.py``), not
    its source, whose formula differs. Unweighted (``rule``, one of
    :data:`PERCENTILE_RULES`): from LightGBM 4.1 on (``"lightgbm"``), linear interpolation
    between order statistics, counted from the largest, at position ``(n - 1) * (1 - q)``;
    before 4.1 (``"lightgbm4.0"``, ``"lightgbm3"``), at position ``(1 - q) * n`` from the
    largest, between the values ``floor(pos) - 1`` and ``floor(pos)`` (0-based; LightGBM
    PR #5848), ``(1 - q) * n`` in float32 before 4.0 (``"lightgbm3"``: quantile's alpha is
    a float32 there; L1's median uses a double 0.5, as 4.0 does). Weighted (the same in
    every version): the values sorted (stably), the running sum ``cdf`` of their weights,
    ``t = alpha * cdf[-1]`` and ``pos`` the first index whose
    ``cdf`` exceeds ``t`` (at most ``n - 1``); the value at ``pos`` at either end; else, where
    the weight at ``pos`` is at least 1, ``v[pos-1] + (t - cdf[pos-1]) / w[pos] * (v[pos] -
    v[pos-1])`` (the difference in float32), and ``v[pos-1]`` where it is below 1.
    """
    _check_percentile_rule(rule)
    y = np.asarray(y, dtype=np.float32)
    q = float(np.float32(q))
    n = y.size
    if n <= 1:
        return float(y[0])
    if w is None:
        values = np.sort(y)[::-1].astype(np.float64)  # LightGBM counts from the largest
        if rule == "lightgbm":
            float_pos = (n - 1) * (1.0 - q)
            pos = int(float_pos) + 1
            bias = float_pos - (pos - 1)
        else:  # before 4.1
            if rule == "lightgbm3":  # (1.0f - alpha) * cnt_data, all float32
                float_pos = float(np.float32(np.float32(1.0) - np.float32(q))
                                  * np.float32(n))
            else:
                float_pos = (1.0 - q) * n
            pos = int(float_pos)
            bias = float_pos - pos
        if pos < 1:
            return float(values[0])
        if pos >= n:
            return float(values[-1])
        v1, v2 = values[pos - 1], values[pos]
        return float(np.float32(v1 - (v1 - v2) * bias))
    order = np.argsort(y, kind="stable")
    values = y[order]
    cdf = np.cumsum(np.asarray(w, dtype=np.float32)[order].astype(np.float64))
    threshold = cdf[-1] * q
    pos = min(int(np.searchsorted(cdf, threshold, side="right")), n - 1)
    if pos == 0 or pos == n - 1:
        return float(values[pos])
    v1, v2 = values[pos - 1], values[pos]
    step = cdf[pos] - cdf[pos - 1]
    if step >= 1.0:
        return float(np.float32((threshold - cdf[pos - 1]) / step * float(v2 - v1) + float(v1)))
    return float(v1)


@dataclass(frozen=True)
class Objective:
    """Base class: a loss with its gradient, hessian, label check and optimal constant."""

    precision: Precision = "float64"

    name = "objective"
    #: number of raw scores per row
    n_outputs = 1
    #: number of label columns (1: labels are a vector, even for several outputs)
    label_columns = 1
    #: the host replaces leaf values by a percentile of residuals (L1, quantile, MAPE)
    renews_leaves = False
    #: the gradients of a row depend on a statistic of all training rows in each iteration
    #: (:meth:`at_iteration`); rows held in partitions cannot be replayed one partition alone
    iteration_scaled = False

    def at_iteration(self, y: np.ndarray, raw: np.ndarray,
                     weight: np.ndarray | None = None) -> Objective:
        """The loss of one boosting iteration, given the training rows' labels and raw scores.

        Every other row's gradients at that iteration come from the returned objective: for
        an :attr:`iteration_scaled` loss that fixes the scale the training rows set; any
        other loss is the same in every iteration and returns itself.
        """
        return self

    def grad_hess(
        self, y: np.ndarray, raw: np.ndarray, weight: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Float32 gradient and hessian of every row at raw score ``raw``.

        Raises ``ValueError`` naming the objective and the first offending rows when a
        gradient or hessian is NaN or infinite (e.g. a raw score whose exp overflows).
        """
        dt = np.float32 if self.precision == "float32" else np.float64
        # no copy where the type is already right: the _grad_hess never write their inputs
        y = np.asarray(y, dtype=np.float32).astype(dt, copy=False)
        raw = np.asarray(raw).astype(dt, copy=False)
        w = None if weight is None else \
            np.asarray(weight, dtype=np.float32).astype(dt, copy=False)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            g, h = self._grad_hess(y, raw, w)
            g, h = g.astype(np.float32, copy=False), h.astype(np.float32, copy=False)
        _check_finite(self.name, g, h)  # names the rows whose values overflowed or are NaN
        return g, h

    def _grad_hess(self, y, raw, w):
        raise NotImplementedError

    def read_labels(
        self, y: np.ndarray, weight: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``y`` and ``weight`` as :meth:`grad_hess` reads them, for a loop that calls it
        every round on the same rows: converted once (float32, as LightGBM and XGBoost store
        them) instead of on every call, the same gradients. Objectives that read them
        otherwise (custom, float64) get them as given."""
        if type(self).grad_hess is not Objective.grad_hess:
            return y, weight
        return (np.asarray(y, dtype=np.float32),
                None if weight is None else np.asarray(weight, dtype=np.float32))

    def check_labels(self, y: np.ndarray, argument: str) -> None:
        """Raise ``ValueError`` naming ``argument`` if ``y`` is outside the loss's domain."""
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{argument} contains NaN or infinite labels")

    def init_score(self, y: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
        """Best constant raw score, one per output (LightGBM's BoostFromScore)."""
        raise NotImplementedError(f"{self.name} has no closed-form init score")

    def loss(self, y: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Per-row loss at ``raw`` (for metrics and tests)."""
        raise NotImplementedError

    def predict(self, raw: np.ndarray) -> np.ndarray:
        """Prediction in output space (the inverse link) from raw scores."""
        return raw

    @staticmethod
    def _w(x, w):
        return x if w is None else x * w


@dataclass(frozen=True)
class SquaredError(Objective):
    name = "squared_error"

    def _grad_hess(self, y, raw, w):
        if w is None:
            return raw - y, np.ones_like(raw)
        # both hosts round the residual to float32 before weighting it in float32
        w32 = w.astype(np.float32)
        return (raw - y).astype(np.float32) * w32, w32

    def init_score(self, y, weight=None):
        return np.array([_weighted_mean(np.float32(y), weight)])

    def loss(self, y, raw):
        return 0.5 * (raw - y) ** 2


@dataclass(frozen=True)
class Logistic(Objective):
    """Binary log loss with labels in {0, 1}.

    ``sigmoid`` is LightGBM's sigmoid parameter (p = 1/(1+exp(-sigmoid*F))); ``pos_weight``
    multiplies gradient and hessian of positive rows (label > 0: LightGBM's scale_pos_weight /
    is_unbalance; XGBoost weighs rows whose label is exactly 1 instead, soft labels too:
    :class:`LabelOneWeighted`);
    ``hessian_floor`` is XGBoost's 1e-16 floor applied before the weight; ``soft_labels``
    accepts any label in [0, 1] (XGBoost), not only 0 and 1 (LightGBM).
    """

    sigmoid: float = 1.0
    pos_weight: float = 1.0
    neg_weight: float = 1.0
    hessian_floor: float = 0.0
    soft_labels: bool = False
    name = "binary_logistic"

    def _grad_hess(self, y, raw, w):
        s = raw.dtype.type(self.sigmoid)
        if self.precision == "float64":
            sign = np.where(y > 0, 1.0, -1.0)
            # LightGBM: response = -y*s / (1 + exp(y*s*F)), hessian |r|(s - |r|)
            r = -sign * s / (1.0 + np.exp(sign * s * raw))
            g, h = r, np.abs(r) * (s - np.abs(r))
        else:
            p = _sigmoid(s * raw).astype(raw.dtype)
            g, h = s * (p - y), s * s * p * (1 - p)
        h = np.maximum(h, raw.dtype.type(self.hessian_floor))
        lw = np.where(y > 0, self.pos_weight, self.neg_weight).astype(raw.dtype)
        if self.pos_weight != 1.0 or self.neg_weight != 1.0:
            g, h = g * lw, h * lw
        return self._w(g, w), self._w(h, w)

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        if self.soft_labels:
            if np.any((y < 0) | (y > 1)):
                raise ValueError(f"{argument} must lie in [0, 1] for {self.name}")
        elif not np.isin(y, (0, 1)).all():
            raise ValueError(f"{argument} must hold binary labels 0 and 1 for {self.name}")

    def init_score(self, y, weight=None):
        p = _weighted_mean((np.float32(y) > 0).astype(np.float64), weight)
        p = min(max(p, _K_EPSILON), 1.0 - _K_EPSILON)
        return np.array([np.log(p / (1.0 - p)) / self.sigmoid])

    def loss(self, y, raw):
        return np.logaddexp(0.0, -self.sigmoid * raw) + (1 - y) * self.sigmoid * raw

    def predict(self, raw):
        return _sigmoid(self.sigmoid * np.asarray(raw, dtype=np.float64))


@dataclass(frozen=True)
class Softmax(Objective):
    """Multiclass log loss; labels are class indices 0..K-1.

    ``hessian_factor`` multiplies p(1-p): LightGBM uses K/(K-1) (the default, None), XGBoost 2.
    ``hessian_floor`` is XGBoost's 1e-16, applied after the weight.
    """

    n_classes: int = 3
    hessian_factor: float | None = None
    hessian_floor: float = 0.0
    name = "multiclass_softmax"

    def __post_init__(self):
        if int(self.n_classes) < 2:
            raise ValueError(f"n_classes must be at least 2, got {self.n_classes!r}")
        if self.hessian_factor is None:
            object.__setattr__(self, "hessian_factor", self.n_classes / (self.n_classes - 1.0))

    @property
    def n_outputs(self) -> int:
        return self.n_classes

    def _grad_hess(self, y, raw, w):
        z = raw - raw.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        onehot = (y.astype(np.int64)[:, None] == np.arange(self.n_classes)).astype(raw.dtype)
        g = p - onehot
        h = raw.dtype.type(self.hessian_factor) * p * (1 - p)
        if w is not None:
            g, h = g * w[:, None], h * w[:, None]
        return g, np.maximum(h, raw.dtype.type(self.hessian_floor))

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        _check_classes(y, argument, self.n_classes, self.name)

    def init_score(self, y, weight=None):
        onehot = np.asarray(y).astype(np.int64)[:, None] == np.arange(self.n_classes)
        p = np.average(onehot, axis=0, weights=weight)
        return np.log(np.maximum(p, _K_EPSILON))

    def loss(self, y, raw):
        z = raw - raw.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return -logp[np.arange(len(y)), np.asarray(y, dtype=np.int64)]

    def predict(self, raw):
        z = np.asarray(raw, dtype=np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class OneVsRest(Objective):
    """K independent binary log losses (LightGBM multiclassova).

    ``pos_weights`` / ``neg_weights`` (one per class, or None: 1) multiply gradient and
    hessian of output ``k`` where the label is ``k`` / is not (LightGBM's ``is_unbalance``,
    each class's binary loss weighted by its own counts), before the row weight.
    """

    n_classes: int = 3
    sigmoid: float = 1.0
    pos_weights: tuple[float, ...] | None = None
    neg_weights: tuple[float, ...] | None = None
    name = "multiclass_ova"

    def __post_init__(self):
        for name in ("pos_weights", "neg_weights"):
            value = getattr(self, name)
            if value is not None and len(value) != self.n_classes:
                raise ValueError(f"{name} must hold one weight per class ({self.n_classes}), "
                                 f"got {len(value)}")

    @property
    def n_outputs(self) -> int:
        return self.n_classes

    def _grad_hess(self, y, raw, w):
        sign = np.where(y.astype(np.int64)[:, None] == np.arange(self.n_classes), 1.0, -1.0)
        r = -sign * self.sigmoid / (1.0 + np.exp(sign * self.sigmoid * raw))
        g, h = r, np.abs(r) * (self.sigmoid - np.abs(r))
        if self.pos_weights is not None or self.neg_weights is not None:
            ones = (1.0,) * self.n_classes
            lw = np.where(sign > 0, np.asarray(self.pos_weights or ones)[None, :],
                          np.asarray(self.neg_weights or ones)[None, :])
            g, h = g * lw, h * lw
        if w is not None:
            g, h = g * w[:, None], h * w[:, None]
        return g, h

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        _check_classes(y, argument, self.n_classes, self.name)

    def init_score(self, y, weight=None):
        onehot = np.asarray(y).astype(np.int64)[:, None] == np.arange(self.n_classes)
        p = np.clip(np.average(onehot, axis=0, weights=weight), _K_EPSILON, 1 - _K_EPSILON)
        return np.log(p / (1 - p)) / self.sigmoid

    def predict(self, raw):
        return _sigmoid(self.sigmoid * np.asarray(raw, dtype=np.float64))


@dataclass(frozen=True)
class Poisson(Objective):
    """Poisson deviance with log link; hessian exp(F + max_delta_step) as both hosts use."""

    max_delta_step: float = 0.7
    name = "poisson"

    def _grad_hess(self, y, raw, w):
        return self._w(np.exp(raw) - y, w), self._w(
            np.exp(raw + raw.dtype.type(self.max_delta_step)), w
        )

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        _check_non_negative(y, argument, self.name)

    def init_score(self, y, weight=None):
        return np.array([np.log(_weighted_mean(np.float32(y), weight))])

    def loss(self, y, raw):
        return np.exp(raw) - y * raw

    def predict(self, raw):
        return np.exp(raw)


@dataclass(frozen=True)
class Gamma(Objective):
    name = "gamma"

    def _grad_hess(self, y, raw, w):
        e = y * np.exp(-raw)
        return self._w(1 - e, w), self._w(e, w)

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        if np.any(y <= 0):
            raise ValueError(f"{argument} must be positive for {self.name}")

    init_score = Poisson.init_score
    predict = Poisson.predict

    def loss(self, y, raw):
        return y * np.exp(-raw) + raw


@dataclass(frozen=True)
class Tweedie(Objective):
    variance_power: float = 1.5
    name = "tweedie"

    def _grad_hess(self, y, raw, w):
        rho = raw.dtype.type(self.variance_power)
        a, b = np.exp((1 - rho) * raw), np.exp((2 - rho) * raw)
        return self._w(-y * a + b, w), self._w(-y * (1 - rho) * a + (2 - rho) * b, w)

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        _check_non_negative(y, argument, self.name)

    init_score = Poisson.init_score
    predict = Poisson.predict


@dataclass(frozen=True)
class PseudoHuber(Objective):
    slope: float = 1.0
    name = "pseudo_huber"

    def _grad_hess(self, y, raw, w):
        z = raw - y
        d2 = raw.dtype.type(self.slope) ** 2
        scale = 1 + z * z / d2
        root = np.sqrt(scale)
        return self._w(z / root, w), self._w(1 / (scale * root), w)


@dataclass(frozen=True)
class Huber(Objective):
    """LightGBM's huber: gradient clipped at +-alpha, unit hessian."""

    alpha: float = 0.9
    name = "huber"

    def _grad_hess(self, y, raw, w):
        d = raw - y
        g = np.where(np.abs(d) <= self.alpha, d, np.sign(d) * self.alpha)
        return self._w(g, w), self._w(np.ones_like(raw), w)

    init_score = SquaredError.init_score


@dataclass(frozen=True)
class Fair(Objective):
    c: float = 1.0
    name = "fair"

    def _grad_hess(self, y, raw, w):
        x = raw - y
        c = raw.dtype.type(self.c)
        return self._w(c * x / (np.abs(x) + c), w), self._w(c * c / (np.abs(x) + c) ** 2, w)

    init_score = SquaredError.init_score


@dataclass(frozen=True)
class CrossEntropy(Objective):
    """Log loss with labels in [0, 1] (LightGBM cross_entropy / xentropy)."""

    name = "cross_entropy"

    def _grad_hess(self, y, raw, w):
        z = _sigmoid(raw)
        return self._w(z - y, w), self._w(z * (1 - z), w)

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        if np.any((y < 0) | (y > 1)):
            raise ValueError(f"{argument} must lie in [0, 1] for {self.name}")

    def init_score(self, y, weight=None):
        # LightGBM clamps the mean label like the binary objective's (all-0 labels: -34.5)
        p = _weighted_mean(np.float32(y), weight)
        p = min(max(p, _K_EPSILON), 1.0 - _K_EPSILON)
        return np.array([np.log(p / (1.0 - p))])

    def predict(self, raw):
        return _sigmoid(np.asarray(raw, dtype=np.float64))


@dataclass(frozen=True)
class SquaredLogError(Objective):
    name = "squared_log_error"

    def _grad_hess(self, y, raw, w):
        p = np.maximum(raw, raw.dtype.type(-1 + 1e-6))
        res = np.log1p(p) - np.log1p(y)
        g = res / (p + 1)
        h = np.maximum((1 - res) / (p + 1) ** 2, raw.dtype.type(1e-6))
        return self._w(g, w), self._w(h, w)

    def check_labels(self, y, argument):
        super().check_labels(y, argument)
        if np.any(y <= -1):
            raise ValueError(f"{argument} must be greater than -1 for {self.name}")


@dataclass(frozen=True)
class AbsoluteError(Objective):
    """L1 loss: gradient sign(F - y), unit hessian (LightGBM regression_l1, XGBoost
    reg:absoluteerror). The hosts renew leaf values with a weighted median."""

    #: LightGBM's rule for the unweighted median (:data:`PERCENTILE_RULES`): it changed in 4.1
    percentile_rule: str = "lightgbm"
    name = "absolute_error"
    renews_leaves = True

    def __post_init__(self):
        _check_percentile_rule(self.percentile_rule)

    def _grad_hess(self, y, raw, w):
        return self._w(np.sign(raw - y), w), self._w(np.ones_like(raw), w)

    def init_score(self, y, weight=None):
        # LightGBM 3's L1 takes its median at a double 0.5, by 4.0's arithmetic
        rule = "lightgbm4.0" if self.percentile_rule == "lightgbm3" else self.percentile_rule
        return np.array([_weighted_percentile(np.float32(y), weight, 0.5, rule)])

    def loss(self, y, raw):
        return np.abs(raw - y)


@dataclass(frozen=True)
class Quantile(Objective):
    """Pinball loss: gradient (1-alpha) at or above the label, -alpha below; unit hessian.

    The hosts renew leaf values with a percentile of residuals.
    """

    alpha: float = 0.5
    #: LightGBM's rule for the unweighted percentile (:data:`PERCENTILE_RULES`)
    percentile_rule: str = "lightgbm"
    name = "quantile"
    renews_leaves = True

    def __post_init__(self):
        _check_percentile_rule(self.percentile_rule)

    def _grad_hess(self, y, raw, w):
        g = np.where(raw - y >= 0, 1 - self.alpha, -self.alpha).astype(raw.dtype)
        return self._w(g, w), self._w(np.ones_like(raw), w)

    def init_score(self, y, weight=None):
        return np.array([_weighted_percentile(np.float32(y), weight, self.alpha,
                                              self.percentile_rule)])

    def loss(self, y, raw):
        d = y - raw
        return np.maximum(self.alpha * d, (self.alpha - 1) * d)


def _root_mean_scale(y, raw, w) -> np.float32:
    """XGBoost's per-iteration scale of its smoothed L1 losses (3.4+): the square of the
    weighted mean of ``sqrt(|raw - y|)``, float32 rows summed in double, 0 without weight."""
    root = np.sqrt(np.abs(raw - y))
    if w is not None:
        root = root * w
    total = float(root.sum(dtype=np.float64))
    weight = float(raw.shape[0] if w is None else w.sum(dtype=np.float64))
    return np.float32(0.0) if weight == 0 else np.float32((total / weight) ** 2)


@dataclass(frozen=True)
class _IterationScaled(Objective):
    """An XGBoost 3.4 surrogate whose scale is set by the training rows in each iteration."""

    scale: float | None = None  # None: from the rows given to grad_hess
    iteration_scaled = True

    def at_iteration(self, y, raw, weight=None):
        y = np.asarray(y, dtype=np.float32)
        raw = np.asarray(raw, dtype=np.float32)
        w = None if weight is None else np.asarray(weight, dtype=np.float32)
        return replace(self, scale=float(_root_mean_scale(y, raw, w)))

    def _scale(self, y, raw, w):
        return np.float32(self.scale) if self.scale is not None else _root_mean_scale(y, raw, w)


@dataclass(frozen=True)
class SmoothAbsoluteError(_IterationScaled):
    """XGBoost 3.4's ``reg:absoluteerror``: a smooth majorizer of L1 (leaves not renewed).

    With the iteration's scale ``d`` (:func:`_root_mean_scale`) and ``r = raw - y``:
    ``g = w r c``, ``h = w c``, ``c = d / hypot(d, r)`` (1 where both are 0), in float32.
    """

    name = "smooth_absolute_error"

    def _grad_hess(self, y, raw, w):
        delta = self._scale(y, raw, w)
        r = raw - y
        norm = np.hypot(delta, r)
        c = np.where(norm > 0, delta / np.where(norm > 0, norm, 1), np.float32(1))
        return (r if w is None else w * r) * c, self._w(c, w)

    def loss(self, y, raw):
        return np.abs(raw - y)


_SMOOTHING = np.float32(0.04)  # XGBoost's kSmoothingScale
_MIN_RATIO = np.float32(3.0e-4)  # and its kMinSurrogateRatio


@dataclass(frozen=True)
class SmoothQuantile(_IterationScaled):
    """XGBoost 3.4's ``reg:quantileerror`` (one quantile): a logistic-smoothed pinball loss.

    With the iteration's scale ``S`` and ``x = (raw - y) / (0.04 S)``:
    ``g = w S/2 (tanh x + 1 - 2 alpha)``, ``h = w / 0.08 max(tanh(x) / x, 3e-4)`` (``tanh(x)/x``
    is 1 at 0), in float32; both 0 where ``S`` or ``w`` is 0.
    """

    alpha: float = 0.5
    name = "smooth_quantile"

    def _grad_hess(self, y, raw, w):
        S = self._scale(y, raw, w)
        one, half = np.float32(1), np.float32(0.5)
        r = raw - y
        if not S > 0:
            zero = np.zeros_like(r)
            return zero, zero.copy()
        x = r / (_SMOOTHING * S)
        t = np.tanh(x.astype(np.float64)).astype(np.float32)  # tanhf, correctly rounded
        ratio = np.maximum(np.where(x == 0, one, t / np.where(x == 0, one, x)), _MIN_RATIO)
        g = half * S * (t + one - np.float32(2) * np.float32(self.alpha))
        h = (half / _SMOOTHING) * ratio
        return self._w(g, w), self._w(h, w)

    def loss(self, y, raw):
        d = y - raw
        return np.maximum(self.alpha * d, (self.alpha - 1) * d)


@dataclass(frozen=True)
class Mape(Objective):
    name = "mape"
    renews_leaves = True

    def _grad_hess(self, y, raw, w):
        lw = 1.0 / np.maximum(1.0, np.abs(y))
        return self._w(np.sign(raw - y) * lw, w), self._w(np.ones_like(raw), w)

    def init_score(self, y, weight=None):
        # LightGBM's label weights, in float32: 1 / max(1, |y|), times the row weight
        y = np.asarray(y, dtype=np.float32)
        lw = np.float32(1.0) / np.maximum(np.float32(1.0), np.abs(y))
        if weight is not None:
            lw = lw * np.asarray(weight, dtype=np.float32)
        return np.array([_weighted_percentile(y, lw, 0.5)])


@dataclass(frozen=True)
class CustomObjective(Objective):
    """A user callable ``func(y, raw_score, weight) -> (grad, hess)``.

    ``raw_score`` has shape ``(n,)`` or ``(n, n_outputs)`` and is the callable's own copy (the
    callers pass their running scores); the result is cast to float32.
    """

    func: Callable | None = None
    outputs: int = 1
    labels: int = 1
    name = "custom"

    @property
    def n_outputs(self) -> int:
        return self.outputs

    @property
    def label_columns(self) -> int:  # type: ignore[override]
        return self.labels

    def grad_hess(self, y, raw, weight=None):
        name = f"custom ({getattr(self.func, '__name__', 'callable')})"
        out = self.func(np.asarray(y), np.array(raw), weight)
        try:
            g, h = out
        except (TypeError, ValueError):  # not a pair
            raise ValueError(f"objective {name!r} must return (grad, hess), got "
                             f"{type(out).__name__}") from None
        gh = [np.asarray(a, dtype=np.float32) for a in (g, h)]
        for what, a in zip(("gradients", "hessians"), gh):
            if a.size != np.size(raw):
                raise ValueError(
                    f"objective {name!r} returned {a.size} {what} for raw scores of shape "
                    f"{np.shape(raw)}: expected one per raw score")
        g, h = (a.reshape(np.shape(raw)) for a in gh)
        _check_finite(name, g, h)
        _check_hessians(name, h)
        return g, h


@dataclass(frozen=True)
class _OnBase(Objective):
    """An objective that computes its gradients otherwise than ``base`` and takes the rest
    from it: its name, outputs, label checks, loss and inverse link."""

    base: Objective = field(default_factory=SquaredError)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.base.name

    @property
    def n_outputs(self) -> int:  # type: ignore[override]
        return self.base.n_outputs

    def check_labels(self, y, argument):
        self.base.check_labels(y, argument)

    def loss(self, y, raw):
        return self.base.loss(y, raw)

    def predict(self, raw):
        return self.base.predict(raw)


@dataclass(frozen=True)
class Float64Objective(_OnBase):
    """An objective computed as scikit-learn's HistGradientBoosting computes it.

    Float64 labels, raw scores and weights, float64 maths, weights multiplied last, one final
    cast to float32 (the other objectives read labels as float32 first, as LightGBM and
    XGBoost store them: that would shift a residual ``raw - y`` by up to ``|y| * 6e-8``).
    At ``raw == y`` scikit-learn's ``absolute_error`` gradient is -1 (not 0) and its
    ``quantile`` gradient ``-q`` (not ``1 - q``).

    Parameters
    ----------
    base : Objective
        The core objective (label checks, init score, loss and inverse link come from it).
    """

    @property
    def renews_leaves(self) -> bool:  # type: ignore[override]
        return self.base.renews_leaves

    def grad_hess(self, y, raw, weight=None):
        """Float32 gradient and hessian: float64 maths on float64 labels, then weights.

        Raises ``ValueError`` as :meth:`Objective.grad_hess` does on non-finite values.
        """
        y = np.asarray(y, dtype=np.float64)
        raw = np.asarray(raw, dtype=np.float64)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            g, h = self._unweighted(y, raw)
            if weight is not None:
                w = np.asarray(weight, dtype=np.float64)
                w = w[:, None] if g.ndim == 2 else w
                g, h = g * w, h * w
            g, h = g.astype(np.float32), h.astype(np.float32)
        _check_finite(self.name, g, h)  # names the rows whose values overflowed or are NaN
        return g, h

    def _unweighted(self, y, raw):
        base = self.base
        if base.name == "absolute_error":
            return np.where(raw > y, 1.0, -1.0), np.ones_like(raw)
        if base.name == "quantile":
            q = base.alpha
            return np.where(y >= raw, -q, 1.0 - q), np.ones_like(raw)
        return base._grad_hess(y, raw, None)

    def init_score(self, y, weight=None):
        return self.base.init_score(y, weight)


@dataclass(frozen=True)
class LabelOneWeighted(_OnBase):
    """``base`` with the weight of every row whose label is exactly 1 multiplied by ``weight``.

    XGBoost's ``scale_pos_weight``: its ``RegLossObj`` losses (squared error, the logistic
    ones, gamma) multiply a row's weight by it where ``label == 1.0f``, in float32, before
    the gradient and hessian; any other label (a soft label 0.7, a gamma label 2) keeps its
    weight. ``base`` must compute elementwise (its ``_grad_hess``); a row's weight applies
    to each of its label columns, and a multi-target label is weighted column by column.
    """

    weight: float = 1.0

    def __post_init__(self):
        base = self.base
        if type(base).grad_hess is not Objective.grad_hess or base.renews_leaves:
            raise ValueError(f"objective {base.name!r} cannot weight rows by their label")
        if not (np.isfinite(self.weight) and self.weight >= 0):
            raise ValueError(f"weight must be finite and non-negative, got {self.weight!r}")
        object.__setattr__(self, "precision", base.precision)

    @property
    def label_columns(self) -> int:  # type: ignore[override]
        return self.base.label_columns

    @property
    def iteration_scaled(self) -> bool:  # type: ignore[override]
        return self.base.iteration_scaled

    def at_iteration(self, y, raw, weight=None):
        base = self.base.at_iteration(y, raw, self._weights(y, weight))
        return self if base is self.base else replace(self, base=base)

    def _weights(self, y, w):
        """The row weights times ``weight`` where the label is exactly 1 (in ``y``'s dtype:
        XGBoost's ``w *= scale_pos_weight`` in float32)."""
        y = np.asarray(y)
        dt = y.dtype.type if y.dtype.kind == "f" else np.float64
        factor = np.where(y == 1, dt(self.weight), dt(1))
        return factor if w is None else np.asarray(w) * factor

    def _grad_hess(self, y, raw, w):
        return self.base._grad_hess(y, raw, self._weights(y, w))

    def init_score(self, y, weight=None):
        # the base's rule on the weighted rows (hosts that read this fold no such weight)
        return self.base.init_score(y, self._weights(np.asarray(y, dtype=np.float32), weight))


@dataclass(frozen=True)
class MultiTarget(Objective):
    """One single-output loss applied to each of ``n_targets`` label columns (XGBoost's
    multi-target models, one tree per target and iteration).

    Labels have shape ``(n, n_targets)``, raw scores too; a row's weight applies to every
    target. ``base`` must compute elementwise (no leaf renewal, no per-iteration scale).
    """

    base: Objective = field(default_factory=SquaredError)
    n_targets: int = 2

    def __post_init__(self):
        base = self.base
        if int(self.n_targets) < 2:
            raise ValueError(f"n_targets must be at least 2, got {self.n_targets!r}")
        if base.n_outputs != 1 or base.renews_leaves or base.iteration_scaled \
                or type(base).grad_hess is not Objective.grad_hess:
            raise ValueError(f"objective {base.name!r} cannot be applied target by target")
        object.__setattr__(self, "precision", base.precision)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.base.name} ({self.n_targets} targets)"

    @property
    def n_outputs(self) -> int:  # type: ignore[override]
        return self.n_targets

    @property
    def label_columns(self) -> int:  # type: ignore[override]
        return self.n_targets

    def _grad_hess(self, y, raw, w):
        g, h = self.base._grad_hess(y, raw, None if w is None else w[:, None])
        # a weighted hessian may be the weight column alone (squared error): one per target
        return (g if g.shape == raw.shape else np.broadcast_to(g, raw.shape).copy(),
                h if h.shape == raw.shape else np.broadcast_to(h, raw.shape).copy())

    def check_labels(self, y, argument):
        self.base.check_labels(y, argument)

    def init_score(self, y, weight=None):
        y = np.asarray(y)
        return np.concatenate([self.base.init_score(y[:, j], weight)
                               for j in range(self.n_targets)])

    def loss(self, y, raw):
        return self.base.loss(y, raw)

    def predict(self, raw):
        return self.base.predict(raw)


@dataclass(frozen=True)
class Quantiles(Objective):
    """Several quantile losses on the same labels, one output each (XGBoost's
    ``reg:quantileerror`` with a list of ``quantile_alpha``): labels ``(n,)``, raw scores
    ``(n, len(bases))``, output ``j`` scored by ``bases[j]`` (each with its own scale in
    each iteration when the losses are scaled).
    """

    bases: tuple[Objective, ...] = ()

    def __post_init__(self):
        if len(self.bases) < 2 or any(b.n_outputs != 1 or b.name != self.bases[0].name
                                      for b in self.bases):
            raise ValueError("Quantiles needs at least two one-output losses of one kind")
        object.__setattr__(self, "precision", self.bases[0].precision)

    @property
    def name(self) -> str:  # type: ignore[override]
        alphas = ", ".join(f"{getattr(b, 'alpha', '?'):g}" for b in self.bases)
        return f"{self.bases[0].name} ({alphas})"

    @property
    def n_outputs(self) -> int:  # type: ignore[override]
        return len(self.bases)

    @property
    def renews_leaves(self) -> bool:  # type: ignore[override]
        return self.bases[0].renews_leaves

    @property
    def iteration_scaled(self) -> bool:  # type: ignore[override]
        return self.bases[0].iteration_scaled

    def at_iteration(self, y, raw, weight=None):
        raw = np.asarray(raw)
        return replace(self, bases=tuple(b.at_iteration(y, raw[:, j], weight)
                                         for j, b in enumerate(self.bases)))

    def _grad_hess(self, y, raw, w):
        # one column per loss (a handful): each is its own function of the same labels
        parts = [b._grad_hess(y, raw[:, j], w) for j, b in enumerate(self.bases)]
        return (np.column_stack([g for g, _ in parts]), np.column_stack([h for _, h in parts]))

    def check_labels(self, y, argument):
        self.bases[0].check_labels(y, argument)

    def init_score(self, y, weight=None):
        return np.concatenate([b.init_score(y, weight) for b in self.bases])

    def loss(self, y, raw):
        raw = np.asarray(raw)
        return np.column_stack([b.loss(y, raw[:, j]) for j, b in enumerate(self.bases)])



OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls
    for cls in (
        SquaredError, Logistic, Softmax, OneVsRest, Poisson, Gamma, Tweedie, PseudoHuber,
        Huber, Fair, CrossEntropy, SquaredLogError, AbsoluteError, Quantile, Mape,
        SmoothAbsoluteError, SmoothQuantile,
    )
}


def objective_given(spec, n_outputs: int) -> Objective | None:
    """``spec`` as an Objective when it is one or a callable; None when it is a name (the
    adapter resolves host names); TypeError otherwise."""
    if isinstance(spec, Objective):
        return spec
    if callable(spec):
        return make_objective(spec, n_outputs=n_outputs)
    if not isinstance(spec, str):
        raise TypeError(f"objective must be a name or a callable, got {type(spec).__name__}")
    return None


def make_objective(name: str | Callable, **params) -> Objective:
    """An objective by canonical name (see ``OBJECTIVES``) or from a user callable."""
    if callable(name):
        return CustomObjective(func=name, outputs=int(params.pop("n_outputs", 1)),
                               labels=int(params.pop("label_columns", 1)))
    try:
        cls = OBJECTIVES[name]
    except KeyError:
        raise ValueError(
            f"objective must be one of {sorted(OBJECTIVES)} or a callable, got {name!r}"
        ) from None
    return cls(**params)
