"""Validation-only mode (no training rows) over Dask reports each split's ``k`` as in memory:
the smaller of the two directions' draws, the one that decides whether the split is usable.
Oracle: the in-memory report, where a squared-error split (no curvature floor) is unusable
only where that ``k`` is below ``min_k``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")
lightgbm = pytest.importorskip("lightgbm")


def test_validation_only_k_is_the_smaller_draw_as_in_memory(client):
    r = np.random.default_rng(0)
    X = r.normal(size=(3000, 5))
    y = X[:, 0] + r.normal(size=3000)
    Xv = r.normal(size=(600, 5))
    yv = Xv[:, 0] + r.normal(size=600)
    model = lightgbm.LGBMRegressor(n_estimators=30, verbose=-1, n_jobs=1,
                                   min_child_samples=5).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = uc.unbiased_importance(model, None, None, Xv, yv, random_state=0).splits
        dask = uc.unbiased_importance(model, None, None, da.from_array(Xv, chunks=(300, 5)),
                                      da.from_array(yv, chunks=300), random_state=0).splits
    for splits in (memory, dask):
        assert (splits.k < 5).any() and splits.usable.any()  # both kinds of splits
        # squared error: usable exactly where the deciding draw reaches min_k
        np.testing.assert_array_equal(splits.usable.to_numpy(), (splits.k >= 5).to_numpy())
