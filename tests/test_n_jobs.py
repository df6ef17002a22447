"""Results do not depend on the number of threads nor on the chunking of trees: identical
reports and pruned models with ``n_jobs=1`` and ``n_jobs=4``, and with a memory budget that
routes a few trees per call."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc

HOSTS = ["lightgbm", "xgboost"]


def _model(host, X, y):
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        return lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1,
                          "num_threads": 1, "seed": 0}, lgb.Dataset(X, y), 30)
    xgb = pytest.importorskip("xgboost")
    return xgb.train({"objective": "reg:squarederror", "max_depth": 4, "nthread": 1,
                      "seed": 0}, xgb.DMatrix(X, y), 30)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(3000, 5)), rng.normal(size=(4000, 5))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=3000)
    yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=4000)
    return X, y, Xv, yv


def _same(a, b):
    pd.testing.assert_frame_equal(a.splits, b.splits, check_exact=True)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame(), check_exact=True)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("validation_only", [False, True])
def test_importance_does_not_depend_on_threads_or_chunks(host, data, validation_only,
                                                          monkeypatch):
    from unbiased_criteria import parallel

    # rows this few are scored on one thread: score them on four, as large inputs are
    monkeypatch.setattr(parallel, "ROWS_PER_SCORING_THREAD", 1)
    assert parallel.scoring_threads(4, 7000) == 4
    X, y, Xv, yv = data
    model = _model(host, X, y)
    Xt, yt = (None, None) if validation_only else (X, y)
    one = uc.unbiased_importance(model, Xt, yt, Xv, yv, random_state=3, n_jobs=1)
    four = uc.unbiased_importance(model, Xt, yt, Xv, yv, random_state=3, n_jobs=4)
    # about 3 trees per routing call instead of all 30
    small = uc.unbiased_importance(model, Xt, yt, Xv, yv, random_state=3, n_jobs=4,
                                   memory_budget=4 * 3 * 7000)
    assert one.splits["usable"].any()
    _same(one, four)
    _same(one, small)


@pytest.mark.parametrize("host", HOSTS)
def test_prune_does_not_depend_on_threads_or_chunks(host, data):
    X, y, Xv, yv = data
    model = _model(host, X, y)
    out = [uc.prune(model, X, y, Xv, yv, random_state=5, n_jobs=j, memory_budget=budget)
           for j, budget in [(1, 2**26), (4, 2**26), (4, 4 * 3 * 7000)]]
    preds = [m.predict(Xv) if host == "lightgbm" else
             m.predict(__import__("xgboost").DMatrix(Xv)) for m in out]
    np.testing.assert_array_equal(preds[0], preds[1])
    np.testing.assert_array_equal(preds[0], preds[2])


def test_small_inputs_are_scored_on_fewer_threads(data, monkeypatch):
    """One scoring thread per ROWS_PER_SCORING_THREAD rows, within n_jobs: below that the
    threads contend for the GIL and slow the call (benchmarks/scoring_threads.py: 3000 small
    trees on 5k + 5k rows took 7.3 s on two threads, 4.0 s on one)."""
    from unbiased_criteria import api, parallel
    from unbiased_criteria.parallel import ROWS_PER_SCORING_THREAD, scoring_threads

    assert scoring_threads(2, 10_000) == 1
    assert scoring_threads(2, ROWS_PER_SCORING_THREAD - 1) == 1
    assert scoring_threads(2, 2 * ROWS_PER_SCORING_THREAD) == 2
    assert scoring_threads(16, 4 * ROWS_PER_SCORING_THREAD + 1) == 4
    assert scoring_threads(1, 10**9) == 1
    X, y, Xv, yv = data
    model = _model("lightgbm", X, y)
    pools = []

    class Spy(api.OrderedPool):
        def __init__(self, n_jobs, done):
            pools.append(n_jobs)
            super().__init__(n_jobs, done)

    monkeypatch.setattr(api, "OrderedPool", Spy)
    uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_jobs=4)
    assert pools == [1]  # 7000 rows
    monkeypatch.setattr(parallel, "ROWS_PER_SCORING_THREAD", 3000)
    uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_jobs=4)
    assert pools == [1, 2]  # 7000 rows, one thread per 3000


@pytest.mark.parametrize("bad", [0, 1.5, True, "2"])
def test_n_jobs_must_be_a_nonzero_integer(data, bad):
    X, y, Xv, yv = data
    model = _model("lightgbm", X, y)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer, a negative one"):
        uc.unbiased_importance(model, X, y, Xv, yv, n_jobs=bad)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer, a negative one"):
        uc.prune(model, X, y, Xv, yv, n_jobs=bad)


def test_negative_n_jobs_count_back_from_all_cores(data, monkeypatch):
    from unbiased_criteria import parallel

    monkeypatch.setattr(parallel, "_cores", lambda: 8)
    assert [parallel.resolve_n_jobs(j) for j in (None, -1, -2, -8, -50, 3)] == [8, 8, 7, 1, 1, 3]
    X, y, Xv, yv = data  # as the hosts and scikit-learn read it: the same report
    model = _model("lightgbm", X, y)
    want = uc.unbiased_importance(model, X, y, Xv, yv, random_state=2).splits
    got = uc.unbiased_importance(model, X, y, Xv, yv, random_state=2, n_jobs=-1).splits
    pd.testing.assert_frame_equal(got, want)
