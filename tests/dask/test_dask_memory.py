"""A held-out set larger than a worker's memory limit: partitions stay on the workers (spilled
to disk by dask when over the limit), no worker holds the whole set, the client never holds it.
"""

from __future__ import annotations

import resource
import threading

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
lightgbm = pytest.importorskip("lightgbm")
psutil = pytest.importorskip("psutil")

N_ROWS, N_FEATURES, CHUNK = 640_000, 100, 20_000  # 512 MB of float64 held-out rows
MEMORY_LIMIT = 450 * 2**20


def _peak_rss() -> int:
    """The process's peak resident memory since :func:`_reset_peak` (VmHWM, Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> None:
    """Start the peak afresh: a worker's ru_maxrss starts at the resident memory of the
    process that started it (kept across fork and exec), here a pytest worker that ran other
    tests before this one."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


class _RssWatch:
    """Highest resident memory of this process while the block runs, sampled every 20 ms."""

    def __enter__(self):
        self.start = psutil.Process().memory_info().rss
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, psutil.Process().memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_held_out_set_larger_than_a_worker_memory_limit(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((3000, N_FEATURES))
    y = X[:, 0] + rng.normal(size=3000)
    model = lightgbm.LGBMRegressor(n_estimators=5, num_leaves=8, verbose=-1).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=MEMORY_LIMIT, dashboard_address=None,
                                  local_directory=str(tmp_path)) as cluster, \
            distributed.Client(cluster) as client:
        # the held-out rows are generated on the workers, partition by partition
        state = da.random.RandomState(1)
        Xv = state.random_sample((N_ROWS, N_FEATURES), chunks=(CHUNK, N_FEATURES))
        yv = Xv[:, 0] + state.normal(size=N_ROWS, chunks=CHUNK)
        held_out_bytes = Xv.nbytes
        assert held_out_bytes > MEMORY_LIMIT
        Xt = da.from_array(X, chunks=(1500, N_FEATURES))
        yt = da.from_array(y, chunks=1500)
        client.run(_reset_peak)
        with _RssWatch() as watch:
            report = uc.unbiased_importance(model, Xt, yt, Xv, yv, memory_budget=16 * 2**20)
        assert report.splits["n_valid"].iloc[0] == N_ROWS
        assert report.splits["usable"].all()
        # the client never held the held-out set (nor a tenth of it)
        assert watch.peak - watch.start < held_out_bytes / 10, (watch.peak - watch.start)
        # no worker ever held the whole set; each stayed near its limit
        peaks = client.run(_peak_rss)
        assert all(p < held_out_bytes for p in peaks.values()), peaks
        assert all(p < 1.2 * MEMORY_LIMIT for p in peaks.values()), peaks
