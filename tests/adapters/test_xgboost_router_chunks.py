"""The XGBoost router builds DMatrix objects of a few rows when one of all rows would not fit
``memory_budget``, with the same leaf ids as XGBoost's own ``pred_leaf`` on all rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters.xgboost import read_model  # noqa: E402
from unbiased_criteria.adapters.xgboost import router as router_module  # noqa: E402

from unbiased_criteria import model as model_module  # noqa: E402


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + rng.normal(size=3000)
    booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 6)
    return booster, X


@pytest.mark.parametrize("kind", ["numpy", "pandas", "coo"])
def test_small_budget_builds_row_chunks_with_the_hosts_leaf_ids(model, kind, monkeypatch):
    booster, X = model
    data = {"numpy": X, "pandas": pd.DataFrame(X, columns=[f"f{i}" for i in range(6)]),
            "coo": sparse.coo_matrix(np.nan_to_num(X, nan=0.0))}[kind]
    expected = booster.predict(xgb.DMatrix(data), pred_leaf=True).astype(np.int32)
    built = []
    real = xgb.DMatrix

    def counting(part, **kwargs):
        built.append(part.shape[0])
        return real(part, **kwargs)

    monkeypatch.setattr(router_module.xgboost, "DMatrix", counting)
    ir = read_model(booster)
    # 256 kB: a DMatrix of all 3000 x 6 rows (216 kB at 12 bytes a value) does not fit
    router = router_module.make_router(booster, ir, data, "X", memory_budget=256 * 2**10)
    built.clear()
    got = np.concatenate([ids for _, _, ids in router.chunks(ir.forest.n_trees)],
                         axis=1)
    np.testing.assert_array_equal(got, expected)
    assert len(built) >= 2 and max(built) < 3000 and sum(built) % 3000 == 0
    # a generous budget keeps one DMatrix of all rows, built once
    built.clear()
    router = router_module.make_router(booster, ir, data, "X", memory_budget=64 * 2**20)
    got = router.leaf_nodes(0, ir.forest.n_trees)
    np.testing.assert_array_equal(got, expected)
    assert built == [3000]


def test_plan_keeps_one_dmatrix_while_an_iteration_fits():
    """Building a DMatrix costs about a dozen trees of routing: rather fewer trees per call on
    one DMatrix of all rows than a DMatrix per row chunk rebuilt for every call; the plan stays
    within the budget either way."""
    budget = 512 * 2**20
    for n, features in ((300_000, 20), (1_000_000, 20)):
        chunk, rows = router_module._plan(n, features, 500, 1, budget)
        assert rows == n
        assert 16 * features * n + 16 * chunk * n <= budget
        # XGBoost's output per call stays below glibc's largest mmap threshold (reused heap),
        # unless that leaves too few trees per call
        assert model_module.HOST_CALL_BYTES < 32 * 2**20
        assert chunk <= max(model_module.HOST_CALL_BYTES // (4 * n),
                            model_module.MIN_HOST_CALL_TREES)
    assert router_module._plan(300_000, 20, 500, 1, budget)[0] == 20  # 24 MiB, was 91 trees
    assert router_module._plan(1_000_000, 20, 500, 1, budget)[0] == 13  # as before
    chunk, rows = router_module._plan(1_000_000, 20, 500, 3, budget)  # 3 trees an iteration
    assert rows == 1_000_000 and chunk % 3 == 0
    # iterations of 30 trees above HOST_CALL_BYTES: one iteration per call, never part of one
    chunk, rows = router_module._plan(300_000, 20, 600, 30, budget)
    assert rows == 300_000 and chunk == 30
    chunk, rows = router_module._plan(2_000_000, 20, 500, 1, budget)  # the rows alone do not fit
    assert rows < 2_000_000
