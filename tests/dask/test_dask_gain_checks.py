"""The Dask engine compares B with the model's stored gains as memory does (one function,
host_gains.with_ties): HistGradientBoosting's root term, XGBoost exact-method ties at a
threshold. Before, it compared raw B: a HistGradientBoosting multiclass model was warned of
and refused by prune, an exact-method XGBoost model with adjacent float32 values warned.
Oracle: the in-memory calls on the same rows (silent, prune goes ahead)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")


def _d(a, rows):
    return da.from_array(a, chunks=(rows,) + a.shape[1:])


def _outcome(call, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call(*args, random_state=0)
    return out, [str(w.message) for w in caught]


def _assert_as_in_memory(model, X, y, Xv, yv, rows):
    dask = (_d(X, rows), _d(y, rows), _d(Xv, rows), _d(yv, rows))
    for call in (uc.unbiased_importance, uc.prune):
        in_memory, said = _outcome(call, model, X, y, Xv, yv)
        assert said == []  # the oracle: nothing to say
        on_dask, said = _outcome(call, model, *dask)
        assert said == []
        if call is uc.unbiased_importance:
            np.testing.assert_allclose(on_dask.splits.biased_gain, in_memory.splits.biased_gain,
                                       rtol=1e-9)


def test_histgradientboosting_multiclass_roots_compared_as_in_memory(client):
    sklearn = pytest.importorskip("sklearn.ensemble")
    r = np.random.default_rng(0)

    def data(n):
        X = r.normal(size=(n, 5))
        X[:, 1] = r.integers(0, 6, n)
        y = 0.5 * X[:, 0] + 0.3 * X[:, 3] + r.normal(size=n)
        return X, np.array(["a", "b", "c"])[np.digitize(y, [-0.5, 0.5])]

    (X, y), (Xv, yv) = data(3000), data(2000)
    model = sklearn.HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    _assert_as_in_memory(model, X, y, Xv, yv, 1000)


def test_xgboost_exact_ties_at_a_threshold_compared_as_in_memory(client):
    xgb = pytest.importorskip("xgboost")

    def adjacent_float32(n, seed):  # as tests/test_later_gains.py
        r = np.random.default_rng(seed)
        k = r.integers(0, 40, n)
        x = np.float32(1000) + k * float(np.spacing(np.float32(1000)))
        x = np.where(r.random(n) < 0.2, np.nan, x)
        return np.column_stack([x, r.normal(size=n)]), k / 10 + r.normal(size=n)

    (X, y), (Xv, yv) = adjacent_float32(1000, 0), adjacent_float32(1000, 100)
    booster = xgb.train({"tree_method": "exact", "max_depth": 2, "eta": 0.3, "nthread": 1},
                        xgb.DMatrix(X, y), 20)
    _assert_as_in_memory(booster, X, y, Xv, yv, 500)
