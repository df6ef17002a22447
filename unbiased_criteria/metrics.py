"""Evaluation metrics on raw scores, under the hosts' names (for training hooks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from .objectives import Objective

__all__ = ["Metric", "get_metric", "METRICS"]

_EPS = 1e-15


def _avg(values, w):
    return float(np.average(values, weights=w))


def _binary_p(obj: Objective, raw):
    return np.clip(obj.predict(raw), _EPS, 1 - _EPS)


def _l2(y, raw, w, obj):
    return _avg((obj.predict(raw) - y) ** 2, w)


def _rmse(y, raw, w, obj):
    return float(np.sqrt(_l2(y, raw, w, obj)))


def _l1(y, raw, w, obj):
    return _avg(np.abs(obj.predict(raw) - y), w)


def _logloss(y, raw, w, obj):
    p = _binary_p(obj, raw)
    return _avg(-(y * np.log(p) + (1 - y) * np.log(1 - p)), w)


def _error(y, raw, w, obj):
    return _avg((obj.predict(raw) > 0.5) != (y > 0.5), w)


def _auc(y, raw, w, obj):
    pos = y > 0.5
    w = np.ones_like(y) if w is None else w
    r = rankdata(raw)  # ties share their mean rank
    wp, wn = w[pos].sum(), w[~pos].sum()
    if wp == 0 or wn == 0:
        return float("nan")
    if np.all(w == w[0]):
        return float((r[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum()))
    # weighted AUC: positives' weighted count of negatives ranked below (ties count half)
    order = np.argsort(raw, kind="stable")
    s, ws, ps = raw[order], w[order], pos[order]
    neg_cum = np.cumsum(np.where(ps, 0.0, ws))
    uniq, first = np.unique(s, return_index=True)
    last = np.r_[first[1:], s.size] - 1
    grp = np.searchsorted(uniq, s)
    below = np.where(first[grp] > 0, neg_cum[np.maximum(first[grp] - 1, 0)], 0.0)
    tied = neg_cum[last[grp]] - below
    return float(np.sum(ws[ps] * (below[ps] + 0.5 * tied[ps])) / (wp * wn))


def _mlogloss(y, raw, w, obj):
    p = np.clip(obj.predict(raw), _EPS, 1.0)
    return _avg(-np.log(p[np.arange(y.size), y.astype(np.int64)]), w)


def _merror(y, raw, w, obj):
    return _avg(np.argmax(raw, axis=1) != y.astype(np.int64), w)


def _poisson(y, raw, w, obj):
    return _avg(np.exp(raw) - y * raw, w)


@dataclass(frozen=True)
class Metric:
    """A metric: ``func(y, raw, weight, objective) -> float``; ``higher_is_better``."""

    name: str
    func: Callable
    higher_is_better: bool = False

    def __call__(self, y, raw, weight, objective) -> float:
        return float(self.func(y, raw, weight, objective))


_DEFS = [
    (("l2", "mse", "mean_squared_error", "regression"), _l2, False),
    (("rmse", "root_mean_squared_error", "l2_root"), _rmse, False),
    (("l1", "mae", "mean_absolute_error"), _l1, False),
    (("binary_logloss", "logloss", "binary"), _logloss, False),
    (("binary_error", "error"), _error, False),
    (("auc",), _auc, True),
    (("multi_logloss", "mlogloss", "multiclass", "softmax"), _mlogloss, False),
    (("multi_error", "merror"), _merror, False),
    (("poisson", "poisson-nloglik"), _poisson, False),
]
METRICS: dict[str, tuple[Callable, bool]] = {
    name: (func, hib) for names, func, hib in _DEFS for name in names
}
#: every accepted name -> LightGBM's own name of the metric (the first of its names)
_CANONICAL = {name: names[0] for names, _, _ in _DEFS for name in names}


def get_metric(name: str) -> Metric:
    """A metric by the host's name (LightGBM's or XGBoost's, aliases included); its ``name``
    is LightGBM's own (``"mse"`` gives ``"l2"``), as LightGBM keys ``evals_result_``."""
    try:
        func, hib = METRICS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown metric {name!r}; known: {sorted(METRICS)}") from None
    return Metric(_CANONICAL[name], func, hib)
