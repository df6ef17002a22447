"""A Dask call that fails releases what it put on the workers: afterwards the client holds
the futures it held before (a failed call's exception holds the frames that hold its
futures, so every partition stayed on the workers, and each failed call added more). Oracle:
the client's own record of its futures, and the workers' memory."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lightgbm = pytest.importorskip("lightgbm")


def _data(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    return X, X[:, 0] + r.normal(size=n)


def _d(a):
    return da.from_array(a, chunks=(1000,) + a.shape[1:])


def _held(client):
    """The client's futures' keys and the data its workers hold."""
    return set(client.futures), sum(
        client.run(lambda dask_worker: len(dask_worker.data)).values())


def _settles_at(client, before, seconds=30.0) -> bool:
    """Whether the client comes to hold the futures of ``before``, and its workers no more
    data (releases are sent asynchronously, and the workers free their data when the
    scheduler says so; an earlier test's may still be on their way out)."""
    gc.collect()
    deadline = time.monotonic() + seconds
    while True:
        keys, data = _held(client)
        if keys == before[0] and data <= before[1]:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


@pytest.mark.parametrize("call", ["importance", "prune"])
def test_a_failed_call_leaves_the_client_holding_what_it_held(client, call):
    (X, y), (Xv, yv) = _data(3000, 0), _data(3000, 1)
    model = lightgbm.LGBMRegressor(n_estimators=5, verbose=-1, n_jobs=1).fit(X, y)
    # the user's own persisted partitions: the call's failure must not take them
    X_mine = _d(X).persist()
    distributed.wait(X_mine)
    before = _held(client)
    entry = uc.unbiased_importance if call == "importance" else uc.prune
    for _ in range(3):
        bad = yv.copy()
        bad[-1] = np.nan  # found by the last held-out partition's task
        with pytest.raises(ValueError, match="y_valid contains NaN"):
            entry(model, X_mine, _d(y), _d(Xv), _d(bad), random_state=0)
        assert _settles_at(client, before), (_held(client), before)
    np.testing.assert_array_equal(X_mine.compute(), X)
