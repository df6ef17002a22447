"""Scoring trees on several threads, results in submission order.

numpy releases the GIL inside most kernels the scoring uses (gathers, cumsum, sorting,
elementwise arithmetic), and the hosts release it while they route rows, so threads overlap
both. Results never depend on the number of threads: each task is a pure function of its
inputs (every tree has its own random stream, the row ranking is shared read-only).
"""

from __future__ import annotations

import numbers
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["resolve_n_jobs", "scoring_threads", "OrderedPool"]

#: Rows (training and held-out) per tree that one more scoring thread needs to pay for
#: itself. Below it the threads' many small numpy calls contend for the GIL and the call gets
#: slower, not faster: 5k + 5k rows, 3000 trees of 4 leaves, 6.2 s on 2 threads against 3.2 s
#: on one (benchmarks/scoring_threads.py, benchmarks/README.md).
ROWS_PER_SCORING_THREAD = 100_000


def _cores() -> int:
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Threads to use: ``None`` or ``-1`` = every core this process may run on (as the hosts
    do); a negative ``n_jobs`` leaves ``-n_jobs - 1`` cores free, as scikit-learn and joblib
    read it (at least one thread)."""
    if n_jobs is None:
        return _cores()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a positive integer, a negative one (-1: all cores, "
                         f"-2: all but one) or None (all cores), got {n_jobs!r}")
    return int(n_jobs) if n_jobs > 0 else max(1, _cores() + 1 + int(n_jobs))


def scoring_threads(threads: int, n_rows: int) -> int:
    """Threads that score trees for ``n_rows`` rows per tree: at most ``threads``, one per
    :data:`ROWS_PER_SCORING_THREAD` rows, at least one. (The host's routing of the next chunk
    of trees overlaps the scoring whenever ``threads > 1``.)"""
    return max(1, min(threads, n_rows // ROWS_PER_SCORING_THREAD))


class OrderedPool:
    """Run ``func(*args)`` tasks on ``n_jobs`` threads; ``done(result)`` in submission order.

    At most ``2 * n_jobs`` tasks are in flight (bounded memory: each holds one tree's rows);
    with ``n_jobs == 1`` tasks run at once in the caller's thread. Use as a context manager:
    leaving it waits for every task and hands over the remaining results.
    """

    def __init__(self, n_jobs: int, done: Callable[[Any], None]) -> None:
        self.n_jobs = n_jobs
        self._done = done
        self._pending: deque[Future] = deque()
        self._executor = ThreadPoolExecutor(n_jobs) if n_jobs > 1 else None

    def submit(self, func: Callable[..., Any], *args: Any) -> None:
        if self._executor is None:
            self._done(func(*args))
            return
        self._pending.append(self._executor.submit(func, *args))
        while len(self._pending) > 2 * self.n_jobs:
            self._done(self._pending.popleft().result())

    def __enter__(self) -> OrderedPool:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                while self._pending:
                    self._done(self._pending.popleft().result())
        finally:
            for f in self._pending:
                f.cancel()
            if self._executor is not None:
                self._executor.shutdown(wait=True)
