"""The Dask engine on workers that run several tasks at once in one process (an in-process
cluster, or threads_per_worker > 1): every task routes its partition through the one LightGBM
Booster the worker holds, whose ``predict`` is not thread-safe. Oracle: the in-memory call on
the same rows (the README: node counts and gains equal to 1e-9)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lightgbm = pytest.importorskip("lightgbm")


def _data(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    X[:, 1] = r.integers(0, 6, n)
    return X, 0.5 * X[:, 0] + 0.3 * X[:, 3] + r.normal(size=n)


@pytest.fixture(scope="module")
def threaded_client():
    # two workers in this process: their tasks share the scattered model object
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_in_process_workers_score_one_lightgbm_model_as_in_memory(threaded_client):
    (X, y), (Xv, yv) = _data(3000, 0), _data(2000, 1)
    model = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1, n_jobs=1).fit(X, y)
    alone = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits

    def d(a, chunks):
        return da.from_array(a, chunks=(chunks,) + a.shape[1:])

    for _ in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # memory_budget: several rounds, each routing another range of iterations
            splits = uc.unbiased_importance(
                model, d(X, 750), d(y, 750), d(Xv, (700, 600, 700)), d(yv, (700, 600, 700)),
                random_state=0, memory_budget=50_000).splits
        np.testing.assert_array_equal(splits.n_train, alone.n_train)
        np.testing.assert_array_equal(splits.k, alone.k)
        np.testing.assert_allclose(splits.biased_gain, alone.biased_gain, rtol=1e-9)
