"""LightGBM's evaluation metrics, by the names LightGBM reports, with its conventions.

Each function is ``func(y, prediction, raw, weight, source)``: ``prediction`` is the objective's
output (the raw score for a custom objective), ``source`` gives the metric's parameters
(``alpha``, ``fair_c``, ``tweedie_variance_power``). Means are LightGBM's
``sum(loss * w) / sum(w)``; the float32 literals LightGBM clips with (``kEpsilon = 1e-15f``,
``1e-10f``) are used as float32 values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
from unbiased_criteria.adapters.lightgbm.source import K_EPSILON

__all__ = ["metric_func"]

#: floor of the predictions in LightGBM's poisson and tweedie metrics (``1e-10f``)
_F32_TINY = float(np.float32(1e-10))


def _mean(loss: np.ndarray, w: np.ndarray | None) -> float:
    """LightGBM's ``sum(loss * w) / sum(w)`` (``sum(loss) / n`` without weights)."""
    if w is None:
        return float(np.sum(loss) / loss.shape[0])
    return float(np.sum(loss * w) / np.sum(w))


def _safe_log(x: np.ndarray) -> np.ndarray:
    """``log(x)``, ``-inf`` where ``x <= 0``, in ``x``'s precision."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


def _neg_log(p: np.ndarray, eps: float) -> np.ndarray:
    """``-log(p)``, with ``p <= eps`` scored as ``-log(eps)`` (LightGBM's log-loss clip)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > eps, -np.log(p), -math.log(eps))


def _m_l2(y, p, raw, w, s):
    return _mean((p - y) ** 2, w)


def _m_rmse(y, p, raw, w, s):
    return math.sqrt(_m_l2(y, p, raw, w, s))


def _m_l1(y, p, raw, w, s):
    return _mean(np.abs(p - y), w)


def _m_quantile(y, p, raw, w, s):
    a, d = s.float_param("alpha"), y - p
    return _mean(np.where(d < 0, (a - 1.0) * d, a * d), w)


def _m_huber(y, p, raw, w, s):
    a, d = s.float_param("alpha"), p - y
    return _mean(np.where(np.abs(d) <= a, 0.5 * d * d, a * (np.abs(d) - 0.5 * a)), w)


def _m_fair(y, p, raw, w, s):
    c, x = s.float_param("fair_c"), np.abs(p - y)
    return _mean(c * x - c * c * np.log(1.0 + x / c), w)


def _m_poisson(y, p, raw, w, s):
    q = np.maximum(p, _F32_TINY)
    return _mean(q - y * np.log(q), w)


def _m_mape(y, p, raw, w, s):
    return _mean(np.abs(y - p) / np.maximum(1.0, np.abs(y)), w)


def _m_gamma(y, p, raw, w, s):
    # LightGBM's negative log-likelihood with psi = 1: y / p + log(p)
    # c = log(y / psi) - log(y) is not 0: LightGBM takes the second log of the float32 label
    # in float32
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = -1.0 / p
        b = -_safe_log(-theta)
        c = _safe_log(y) - _safe_log(y.astype(np.float32)).astype(np.float64)
        return _mean(-((y * theta - b) + c), w)


def _m_gamma_deviance(y, p, raw, w, s):
    t = y / (p + 1.0e-9)
    loss = t - _safe_log(t) - 1.0
    return float(2.0 * (np.sum(loss) if w is None else np.sum(loss * w)))


def _m_tweedie(y, p, raw, w, s):
    rho = s.float_param("tweedie_variance_power")
    q = np.maximum(p, _F32_TINY)
    a = y * np.exp((1.0 - rho) * np.log(q)) / (1.0 - rho)
    b = np.exp((2.0 - rho) * np.log(q)) / (2.0 - rho)
    return _mean(-a + b, w)


def _m_binary_logloss(y, p, raw, w, s):
    return _mean(np.where(y > 0, _neg_log(p, K_EPSILON), _neg_log(1.0 - p, K_EPSILON)), w)


def _m_binary_error(y, p, raw, w, s):
    return _mean(np.where(p <= 0.5, y > 0, y <= 0).astype(np.float64), w)


def _m_auc(y, p, raw, w, s):
    """LightGBM's AUC: raw scores in descending order, ties count half; 1 if one class only."""
    order = np.argsort(-raw, kind="stable")
    score = raw[order]
    pos = y[order] > 0
    weight = np.ones(y.shape[0]) if w is None else w[order]
    group = np.cumsum(np.r_[True, score[1:] != score[:-1]]) - 1
    cur_pos = np.bincount(group, weights=pos * weight)
    cur_neg = np.bincount(group, weights=~pos * weight)
    before = np.r_[0.0, np.cumsum(cur_pos)[:-1]]
    accum = float(np.sum(cur_neg * (cur_pos * 0.5 + before)))
    sum_pos, sum_w = float(cur_pos.sum()), float(weight.sum())
    if sum_pos > 0 and sum_pos != sum_w:
        return accum / (sum_pos * (sum_w - sum_pos))
    return 1.0


def _m_cross_entropy(y, p, raw, w, s):
    eps = 1.0e-12
    return _mean(y * _neg_log(p, eps) + (1.0 - y) * _neg_log(1.0 - p, eps), w)


def _m_multi_logloss(y, p, raw, w, s):
    pk = p[np.arange(y.shape[0]), y.astype(np.int64)]
    return _mean(_neg_log(pk, K_EPSILON), w)


def _multi_error(top_k: int):
    def func(y, p, raw, w, s):
        ref = p[np.arange(y.shape[0]), y.astype(np.int64)]
        # LightGBM counts the classes scored at least as high as the label's, itself included
        larger = np.sum(p >= ref[:, None], axis=1)
        return _mean((larger > top_k).astype(np.float64), w)

    return func


#: LightGBM metric name (as it reports it) -> ``func(y, prediction, raw, weight, source)``
_METRIC_FUNCS: dict[str, Callable] = {
    "l2": _m_l2, "rmse": _m_rmse, "l1": _m_l1, "quantile": _m_quantile, "huber": _m_huber,
    "fair": _m_fair, "poisson": _m_poisson, "mape": _m_mape, "gamma": _m_gamma,
    "gamma_deviance": _m_gamma_deviance, "tweedie": _m_tweedie,
    "binary_logloss": _m_binary_logloss, "binary_error": _m_binary_error, "auc": _m_auc,
    "cross_entropy": _m_cross_entropy, "multi_logloss": _m_multi_logloss,
    "multi_error": _multi_error(1),
}


def metric_func(name: str) -> Callable:
    """The function of a metric LightGBM reported as ``name``; ValueError if unsupported."""
    if name in _METRIC_FUNCS:
        return _METRIC_FUNCS[name]
    match = re.fullmatch(r"multi_error@(\d+)", name)
    if match:
        return _multi_error(int(match.group(1)))
    raise ValueError(
        f"metric {name!r} is not supported by the training hook (supported: "
        f"{sorted(_METRIC_FUNCS)} and multi_error@k); compute it with feval"
    )
