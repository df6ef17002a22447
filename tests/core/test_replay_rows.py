"""The replay converts a row set's labels and weights once, as the objective reads them."""

from __future__ import annotations

import numpy as np
import pytest

from unbiased_criteria.model import Router
from unbiased_criteria.objectives import (
    CustomObjective,
    Float64Objective,
    Logistic,
    SquaredError,
)
from unbiased_criteria.replay import RowSet, _as_read


def _rows(rng, n, weighted):
    router = Router(n_rows=n, leaf_nodes=lambda a, b: np.zeros((n, b - a), np.int32), chunk=1)
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    return RowSet(router, rng.normal(size=n) * 1e3 + 1 / 3, w)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("objective", [SquaredError(precision="float32"), SquaredError(),
                                       Logistic(precision="float32", soft_labels=True)])
def test_labels_converted_once_give_the_same_gradients(objective, weighted):
    rng = np.random.default_rng(0)
    rows = _rows(rng, 500, weighted)
    if isinstance(objective, Logistic):
        rows = RowSet(rows.router, rng.uniform(0, 1, 500), rows.weight)
    read = _as_read(objective, rows)
    assert read.y.dtype == np.float32
    assert read.weight is None or read.weight.dtype == np.float32
    raw = rng.normal(size=500).astype(np.float32)
    for a, b in zip(objective.grad_hess(rows.y, raw, rows.weight),
                    objective.grad_hess(read.y, raw, read.weight)):
        np.testing.assert_array_equal(a, b)
    assert rows.y.dtype == np.float64  # the caller's row set is not modified


@pytest.mark.parametrize("objective", [
    CustomObjective(func=lambda y, raw, w: (raw - y, np.ones_like(raw))),
    Float64Objective(base=SquaredError()),
])
def test_objectives_reading_labels_otherwise_get_them_as_given(objective):
    rows = _rows(np.random.default_rng(1), 50, True)
    assert _as_read(objective, rows) is rows
    assert _as_read(objective, None) is None
