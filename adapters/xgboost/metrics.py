"""XGBoost's evaluation metrics, by the names it reports, with its conventions.

What the training hook evaluates on the core's running margins: the objective's default
metric, which metrics early stopping maximises, the predictions metrics see
(``EvalTransform``) and XGBoost's arithmetic (float32 rows, sums in double, its clamps).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import gammaln
from unbiased_criteria.adapters.xgboost import compat
from unbiased_criteria.adapters.xgboost.objectives import _LOG_LINK, _LOGIT_LINK, expf

from unbiased_criteria.metrics import METRICS, Metric

#: XGBoost's default metric of each objective (``ObjFunction::DefaultEvalMetric``)
_DEFAULT_METRIC = {
    "reg:squarederror": "rmse", "reg:squaredlogerror": "rmsle", "reg:logistic": "rmse",
    "reg:pseudohubererror": "mphe", "binary:logistic": "logloss", "binary:logitraw": "logloss",
    "multi:softmax": "mlogloss", "multi:softprob": "mlogloss",
    "count:poisson": "poisson-nloglik", "reg:gamma": "gamma-deviance",
    "reg:absoluteerror": "mae", "reg:quantileerror": "quantile",
}
#: prefixes of metrics XGBoost maximises when early stopping is not told (callback.py)
_MAXIMIZE_PREFIXES = ("auc", "aucpr", "pre", "pre@", "map", "ndcg", "auc@", "aucpr@", "map@",
                      "ndcg@")
#: from XGBoost 3.4 a row's quantiles (alphas ascending) are sorted so that they do not cross
#: (its PredTransform, which its metrics see); the hook trains with the installed version
_SORTED_QUANTILES = compat.model_version() >= compat.SMOOTH_L1_FROM
_LOG_EPS = np.float32(1e-16)  # XGBoost's clamp in logloss, mlogloss and poisson-nloglik
_RT_EPS = np.float32(1e-6)  # kRtEps in gamma-deviance


def _sigmoid32(x: np.ndarray) -> np.ndarray:
    """XGBoost's ``common::Sigmoid`` in float32: ``1 / (expf(min(-x, 88.7)) + 1)`` (its
    ``+ 1e-16`` does not change a float32 sum of at least 1)."""
    return np.float32(1) / (expf(np.minimum(-x, np.float32(88.7))) + np.float32(1))


def _softmax32(x: np.ndarray) -> np.ndarray:
    """XGBoost's softmax: float32 exponentials, their sum in double, float32 division."""
    e = expf(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, dtype=np.float64, keepdims=True).astype(np.float32)


def _eval_transform(objective: str, raw: np.ndarray) -> np.ndarray:
    """Predictions that XGBoost's metrics see (``EvalTransform``), in float32."""
    raw = np.asarray(raw, dtype=np.float32)
    if objective in _LOGIT_LINK:
        return _sigmoid32(raw)
    if objective in _LOG_LINK:
        return expf(raw)
    if objective in ("multi:softprob", "multi:softmax"):
        return _softmax32(raw)
    if objective == "reg:quantileerror" and raw.ndim == 2 and raw.shape[1] > 1 \
            and _SORTED_QUANTILES:
        return np.sort(raw, axis=1)
    return raw


def _predict_transform(objective: str, raw: np.ndarray) -> np.ndarray:
    """What ``Booster.predict`` returns (``PredTransform``): softmax gives class indices."""
    if objective == "multi:softmax":
        return np.argmax(np.asarray(raw, dtype=np.float32), axis=1).astype(np.float32)
    return _eval_transform(objective, raw)


def _weighted_mean(rows: np.ndarray, w: np.ndarray | None) -> float:
    """XGBoost's reduction: float32 ``row * weight``, sums in double, ``sum / sum(w)``.

    Rows ``(n, T)`` (a multi-target model) pool every target, each weighted by its row's
    weight, as XGBoost's elementwise metrics do."""
    if w is None:
        total, wsum = float(np.sum(rows, dtype=np.float64)), float(rows.size)
    else:
        w32 = np.asarray(w, dtype=np.float32)
        if rows.ndim == 2:
            w32 = np.broadcast_to(w32[:, None], rows.shape)
        total = float(np.sum(rows * w32, dtype=np.float64))
        wsum = float(np.sum(w32, dtype=np.float64))
    return total if wsum == 0 else total / wsum


def _metric_rows(name: str, param: float | np.ndarray | None, y: np.ndarray, p: np.ndarray
                 ) -> np.ndarray:
    """Per-row float32 values of XGBoost's elementwise metric ``name`` (see metric/*.cu)."""
    one = np.float32(1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if name in ("rmse", "mae", "mape", "mphe"):
            diff = y - p
            if name == "rmse":
                return diff * diff
            if name == "mae":
                return np.abs(diff)
            if name == "mape":
                return np.abs(diff / y)
            slope = np.float32(param)
            z = diff / slope
            return slope * slope * (np.sqrt(one + z * z) - one)
        if name == "rmsle":
            diff = np.log1p(y) - np.log1p(p)
            return diff * diff
        if name == "logloss":
            pos = np.where(y == 0, np.float32(0), -y * np.log(np.maximum(p, _LOG_EPS)))
            neg = np.where(one - y == 0, np.float32(0),
                           -(one - y) * np.log(np.maximum(one - p, _LOG_EPS)))
            return pos + neg
        if name == "error":
            return np.where(p > np.float32(param), one - y, y)
        if name == "poisson-nloglik":
            py = np.maximum(p, _LOG_EPS)
            return gammaln(y + one).astype(np.float32) + py - np.log(py) * y
        if name == "gamma-nloglik":
            py = np.maximum(p, np.float32(1e-6))
            return y / py + np.log(py)
        if name == "gamma-deviance":
            pt, lt = p + _RT_EPS, y + _RT_EPS
            return np.log(pt / lt) + lt / pt - one
        if name == "tweedie-nloglik":
            rho = np.float32(param)
            a = y * np.exp((one - rho) * np.log(p)) / (one - rho)
            b = np.exp((np.float32(2) - rho) * np.log(p)) / (np.float32(2) - rho)
            return -a + b
        if name == "quantile":  # pinball loss at quantile_alpha (one per output)
            d = (y[:, None] if p.ndim == 2 and y.ndim == 1 else y) - p
            sign = (d >= np.float32(0)).astype(np.float32)
            a = np.asarray(param, dtype=np.float32)
            return a * sign * d - (one - a) * (one - sign) * d
        if name == "mlogloss":
            pk = p[np.arange(y.size), y.astype(np.int64)]
            return np.where(pk > _LOG_EPS, -np.log(pk), -np.log(_LOG_EPS))
        if name == "merror":
            return (np.argmax(p, axis=1) != y.astype(np.int64)).astype(np.float32)
    raise AssertionError(name)


_ELEMENTWISE = ("rmse", "rmsle", "mae", "mape", "mphe", "logloss", "error", "poisson-nloglik",
                "gamma-nloglik", "gamma-deviance", "tweedie-nloglik", "quantile")
_MULTICLASS_METRICS = ("mlogloss", "merror")
_SUPPORTED_METRICS = (*_ELEMENTWISE, *_MULTICLASS_METRICS, "auc", "error@<t>",
                      "tweedie-nloglik@<rho>")


def _maximize(name: str, maximize: bool | None) -> bool:
    """Whether early stopping maximises metric ``name`` (XGBoost's rule when not told)."""
    if maximize is not None:
        return bool(maximize)
    return name != "mape" and any(name.startswith(p) for p in _MAXIMIZE_PREFIXES)


def _xgb_metric(spec: str, objective: str, n_outputs: int, params: Mapping[str, Any],
                maximize: bool | None, targets: bool = False) -> Metric:
    """XGBoost's metric ``spec`` (``"rmse"``, ``"error@0.7"``...) on the core's raw scores.

    ``targets``: the ``n_outputs`` are the targets of a multi-target model (labels ``(n, T)``,
    elementwise metrics pooled over every target), not classes.

    The core calls ``func(y, raw, weight, objective)``; the predictions are the link of the
    ``params`` objective (``objective``) as XGBoost's ``EvalTransform`` gives them, also with a
    custom objective, and the arithmetic is XGBoost's (float32 rows, double sums).
    """
    if not isinstance(spec, str):
        raise TypeError(f"params['eval_metric'] must hold metric names, got {spec!r}")
    base, _, arg = spec.partition("@")
    param: float | np.ndarray | None = None
    name = spec
    if base == "error":
        param = float(np.float32(arg)) if arg else 0.5
        name = "error" if np.float32(param) == np.float32(0.5) else f"error@{param:g}"
    elif base == "tweedie-nloglik":
        if not arg:
            raise ValueError("params['eval_metric']: write tweedie-nloglik@rho, e.g. "
                             "'tweedie-nloglik@1.5'")
        param = float(np.float32(arg))
        name = f"tweedie-nloglik@{param:g}"
    elif base == "mphe":
        param = float(params.get("huber_slope", 1.0))
    elif base == "quantile":
        alpha = np.atleast_1d(json.loads(str(params.get("quantile_alpha", "0.5"))))
        if alpha.size != max(n_outputs, 1) and alpha.size != 1:
            raise ValueError(f"params['eval_metric']: metric 'quantile' needs one "
                             f"quantile_alpha per output, got {alpha.size} for {n_outputs}")
        # several: one per output, pooled over rows and outputs as XGBoost's metric does
        param = float(np.float32(alpha[0])) if alpha.size == 1 else alpha.astype(np.float32)
    elif arg or base not in (*_ELEMENTWISE, *_MULTICLASS_METRICS, "auc"):
        raise ValueError(
            f"params['eval_metric']: metric {spec!r} is not supported by the training hook; "
            f"supported: {list(_SUPPORTED_METRICS)}"
        )
    multiclass = base in _MULTICLASS_METRICS
    classes = n_outputs > 1 and not targets
    if multiclass != classes or (base == "auc" and n_outputs > 1):
        raise ValueError(
            f"params['eval_metric']: metric {spec!r} does not fit objective {objective!r} "
            f"with {n_outputs} output(s)"
        )

    def func(y, raw, weight, _objective):
        p = _eval_transform(objective, raw)
        y32 = np.asarray(y, dtype=np.float32)
        if base == "auc":
            return METRICS["auc"][0](y32, p.astype(np.float64), weight, None)
        value = _weighted_mean(_metric_rows(base, param, y32, p), weight)
        if base in ("rmse", "rmsle"):
            return float(np.sqrt(value))
        if base == "gamma-deviance":  # 2 * sum / sum(w)
            return 2.0 * value
        return value

    return Metric(name, func, _maximize(name, maximize))
