"""The Dask tests' cluster: a LocalCluster of 2 single-threaded worker processes, one per
test module that asks for ``client``."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c
