"""One LightGBM model scored from several threads at once gives the sequential call's report.

LightGBM's ``Booster.predict(pred_leaf=True, start_iteration=...)`` sets the Booster's shared
prediction range before reading it, so two threads routing other iterations of one Booster at
once got each other's trees' leaves (wrong node counts and gains, IndexError, or an abort).
Oracle: the same call made alone.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import unbiased_criteria as uc

lightgbm = pytest.importorskip("lightgbm")


def _data(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    X[:, 1] = r.integers(0, 6, n)
    return X, 0.5 * X[:, 0] + 0.3 * X[:, 3] + r.normal(size=n)


def test_threads_scoring_one_booster_give_the_sequential_report():
    (X, y), (Xv, yv) = _data(3000, 0), _data(2000, 1)
    model = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1, n_jobs=1).fit(X, y)

    def call(_=None):
        # memory_budget: several routing calls per tree range, each another start_iteration
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return uc.unbiased_importance(model, X, y, Xv, yv, random_state=0,
                                          memory_budget=50_000, n_jobs=1).splits

    alone = call()
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(call, range(8)))
    for splits in together:
        assert splits.equals(alone)


def test_threads_pruning_one_booster_give_the_sequential_model():
    (X, y), (Xv, yv) = _data(2000, 2), _data(2000, 3)
    model = lightgbm.LGBMRegressor(n_estimators=20, verbose=-1, n_jobs=1).fit(X, y)

    def call(_=None):
        return uc.prune(model, X, y, Xv, yv, threshold=0.0, random_state=0,
                        memory_budget=50_000, n_jobs=1).predict(Xv)

    alone = call()
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(call, range(6)))
    for predicted in together:
        np.testing.assert_array_equal(predicted, alone)
