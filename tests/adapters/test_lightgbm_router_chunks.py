"""The LightGBM router asks ``pred_leaf`` for a bounded number of leaf ids per call (LightGBM's
float64 output is a fresh allocation each call), with the host's own leaf ids."""

from __future__ import annotations

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters.lightgbm import read_model  # noqa: E402
from unbiased_criteria.adapters.lightgbm import router as router_module  # noqa: E402

from unbiased_criteria import model as model_module  # noqa: E402

N = 3000


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(N, 4))
    y = X[:, 0] + rng.normal(size=N)
    params = {"num_leaves": 7, "verbose": -1, "num_threads": 1}
    reg = lightgbm.train(params, lightgbm.Dataset(X, y), 40)
    multi = lightgbm.train({**params, "objective": "multiclass", "num_class": 3},
                           lightgbm.Dataset(X, (y > 0).astype(int) + (y > 1)), 10)
    return X, reg, multi


def _host_ids(booster, X):
    """The oracle: LightGBM's own leaf ids of every tree, as IR node ids (leaf + L - 1)."""
    n_leaves = np.array([t["num_leaves"] for t in booster.dump_model()["tree_info"]])
    return booster.predict(X, pred_leaf=True) + (n_leaves - 1)


@pytest.mark.parametrize("which,heap_trees,expected_chunk", [
    ("reg", 5, 5),      # the heap bound: 5 trees of float64 ids per call
    ("reg", 1, 4),      # never fewer than MIN_HOST_CALL_TREES
    ("multi", 5, 3),    # whole iterations of 3 trees
])
def test_calls_stay_within_heap_bytes_with_the_hosts_leaf_ids(models, monkeypatch, which,
                                                               heap_trees, expected_chunk):
    X, reg, multi = models
    booster = {"reg": reg, "multi": multi}[which]
    monkeypatch.setattr(model_module, "HOST_CALL_BYTES", 8 * N * heap_trees)
    monkeypatch.setattr(model_module, "MIN_HOST_CALL_TREES", 4 if which == "reg" else 1)
    ir = read_model(booster)
    router = router_module.make_router(booster, ir, X, "X")
    assert router.chunk == expected_chunk
    got = np.concatenate([ids for _, _, ids in router.chunks(ir.forest.n_trees)], axis=1)
    np.testing.assert_array_equal(got, _host_ids(booster, X))


def test_default_bounds_at_the_benchmark_sizes(models):
    """24 MiB of float64 ids per call: 31 trees at 100k rows; at 300k rows the floor of 16
    trees (the memory budget alone allowed all 40)."""
    _, reg, _ = models
    ir = read_model(reg)
    assert model_module.HOST_CALL_BYTES < 32 * 2**20  # below glibc's largest mmap threshold
    for n, trees in ((100_000, 31), (300_000, 16)):
        router = router_module.make_router(reg, ir, np.zeros((n, 4)), "X")
        assert router.chunk == trees
