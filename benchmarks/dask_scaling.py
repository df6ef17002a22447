"""Unbiased importance in memory vs on a dask cluster of 1 and 2 worker processes.

    python benchmarks/dask_scaling.py [--rows 200000] [--valid-rows 2000000] [--trees 50]
                                      [--partition-rows 100000]
    python benchmarks/dask_scaling.py --rows 20000 --valid-rows 200000 --trees 10  # quick

Same data in every mode: the rows are generated partition by partition from fixed seeds
(``_common.make_data``, 20 features); in memory they are concatenated, on dask each partition
is generated on a worker and persisted before the timed call (as a user's persisted
collection). Model: LightGBM (``_common.LIGHTGBM_PARAMS``, 63 leaves), ``--trees`` rounds on
the training rows. Timed, each mode in a fresh subprocess, everything on one thread per
process (``OMP_NUM_THREADS=1``, ``n_jobs=1``, one thread per worker) so that the modes compare
the same compute:

* ``memory``: ``uc.unbiased_importance(booster, X_train, y_train, X_valid, y_valid)``;
* ``dask-1``: the same call on dask Arrays on a ``LocalCluster`` of 1 worker process, dask's
  default worker environment;
* ``dask-1-mmap``, ``dask-2-mmap``: 1 and 2 worker processes started with
  ``MALLOC_MMAP_THRESHOLD_`` = 1 GiB (``distributed.nanny.pre-spawn-environ``; see
  ``MMAP_THRESHOLD``).

Reported: wall time, overhead ratio (dask / memory), the client's and each worker's peak
resident memory above its level before the call (``/proc/self/clear_refs``), and from dask's
task stream the busy time of the partition tasks and of the reductions, and the number of
rounds, from which the N-machine estimate in README is made. The result goes to
``benchmarks/results/dask_scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np
from _common import (
    LIGHTGBM_PARAMS,
    MB,
    child_done,
    cpu_seconds,
    machine,
    make_data,
    measure,
    peak_bytes,
    reset_peak,
    rss_bytes,
    run_child,
    write_results,
)

# dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
# adaptive mmap threshold: every temporary array over 128 kB is then mapped and unmapped, and
# the scoring spends about as long in page faults as in computing. A large mmap threshold
# restores heap reuse (the ``-mmap`` modes).
MMAP_THRESHOLD = str(2**30)


def _part_seed(kind: str, i: int) -> int:
    return (1 if kind == "valid" else 0) * 1_000_003 + i


def _part(kind: str, i: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    return make_data(rows, _part_seed(kind, i))


def _sizes(total: int, per: int) -> list[int]:
    return [min(per, total - s) for s in range(0, total, per)]


def _in_memory(kind: str, total: int, per: int):
    parts = [_part(kind, i, n) for i, n in enumerate(_sizes(total, per))]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _dask(kind: str, total: int, per: int):
    import dask
    import dask.array as da

    xs, ys = [], []
    for i, n in enumerate(_sizes(total, per)):
        part = dask.delayed(_part, nout=2, pure=True)(kind, i, n)
        xs.append(da.from_delayed(part[0], (n, 20), dtype=np.float64))
        ys.append(da.from_delayed(part[1], (n,), dtype=np.float64))
    return da.concatenate(xs), da.concatenate(ys)


def _model(spec):
    import lightgbm as lgb

    X, y = _in_memory("train", spec["rows"], spec["partition_rows"])
    params = {**LIGHTGBM_PARAMS, "num_threads": 1}
    return lgb.train(params, lgb.Dataset(X, y), num_boost_round=spec["trees"])


def _worker_reset() -> int:
    reset_peak()
    return rss_bytes()


def _worker_peak() -> int:
    return peak_bytes()


def child(spec: dict[str, Any]) -> dict[str, Any]:
    import unbiased_criteria as uc

    booster = _model(spec)
    if spec["kind"] == "memory":
        X, y = _in_memory("train", spec["rows"], spec["partition_rows"])
        Xv, yv = _in_memory("valid", spec["valid_rows"], spec["partition_rows"])
        out = measure(lambda: (uc.unbiased_importance(booster, X, y, Xv, yv, n_jobs=1), None)[1])
        return {"kind": "memory", **out}

    import dask
    import distributed

    workers = spec["workers"]
    environ = {"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD}
    with dask.config.set(environ if spec["tuned"] else {}), \
            distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                     dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as client:
        X, y = _dask("train", spec["rows"], spec["partition_rows"])
        Xv, yv = _dask("valid", spec["valid_rows"], spec["partition_rows"])
        X, y, Xv, yv = client.persist([X, y, Xv, yv])
        distributed.wait([X, y, Xv, yv])
        client.run(lambda: __import__("unbiased_criteria.adapters.dask"))  # warm imports
        client.run(lambda: __import__("unbiased_criteria.adapters.lightgbm"))
        mmap = set(client.run(lambda: os.environ.get("MALLOC_MMAP_THRESHOLD_")).values())
        assert mmap == {MMAP_THRESHOLD if spec["tuned"] else None}, mmap
        before = client.run(_worker_reset)
        cpu_before = client.run(cpu_seconds)
        with distributed.get_task_stream(client) as stream:
            out = measure(lambda: (uc.unbiased_importance(booster, X, y, Xv, yv), None)[1])
        peaks = client.run(_worker_peak)
        cpu_after = client.run(cpu_seconds)
        busy: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        for task in stream.data:
            name = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
            name = str(name).split("-", 1)[0]  # the task's function
            for s in task["startstops"]:
                if s["action"] == "compute":
                    busy[name] += s["stop"] - s["start"]
                    count[name] += 1
    return {
        "kind": f"dask-{workers}" + ("-mmap" if spec["tuned"] else ""), **out,
        "worker_peak_extra_mb": [round((peaks[w] - before[w]) / MB, 1) for w in peaks],
        "worker_peak_mb": [round(peaks[w] / MB, 1) for w in peaks],
        "worker_cpu_seconds": [round(cpu_after[w] - cpu_before[w], 2) for w in peaks],
        "task_busy_seconds": {k: round(v, 3) for k, v in busy.items()},
        "task_count": dict(count),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--valid-rows", type=int, default=2_000_000)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--partition-rows", type=int, default=100_000)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child_done(child(json.loads(args.child)))
        return
    os.environ["OMP_NUM_THREADS"] = "1"  # workers inherit it
    base = {"rows": args.rows, "valid_rows": args.valid_rows, "trees": args.trees,
            "partition_rows": args.partition_rows}
    runs = {}
    modes = (("memory", 0, False), ("dask", 1, False), ("dask", 1, True), ("dask", 2, True))
    for kind, workers, tuned in modes:
        spec = {**base, "kind": kind, "workers": workers, "threads": 1, "tuned": tuned}
        t0 = time.perf_counter()
        r = run_child(__file__, spec)
        runs[r["kind"]] = r
        print(f"{r['kind']}: {r['seconds']:.1f} s (child {time.perf_counter() - t0:.0f} s), "
              f"peak +{r['peak_extra_bytes'] / MB:.0f} MB"
              + (f", workers +{r['worker_peak_extra_mb']} MB" if "worker_peak_mb" in r
                 else ""), file=sys.stderr, flush=True)
    mem = runs["memory"]["seconds"]
    mem_cpu = runs["memory"]["cpu_seconds"]
    summary = {k: {"seconds": round(r["seconds"], 2),
                   "overhead_ratio": round(r["seconds"] / mem, 2),
                   "cpu_seconds": round(r["cpu_seconds"] + sum(r.get("worker_cpu_seconds", [])),
                                        2),
                   "cpu_ratio": round((r["cpu_seconds"] + sum(r.get("worker_cpu_seconds", [])))
                                      / mem_cpu, 2),
                   "peak_extra_mb": round(r["peak_extra_bytes"] / MB, 1),
                   **{f: r[f] for f in ("worker_peak_extra_mb", "worker_cpu_seconds",
                                         "task_busy_seconds",
                                         "task_count") if f in r}}
               for k, r in runs.items()}
    write_results("dask_scaling.json", {
        "command": "python benchmarks/dask_scaling.py " + " ".join(sys.argv[1:]),
        "parameters": base, "machine": machine(), "summary": summary, "runs": runs,
    })
    print(json.dumps(summary, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
