"""Speed of the native grower (UnbiasedGBM) against LightGBM's ``train`` in the same run.

50k x 20 rows (``_common.make_data``), 100 trees of 32 leaves, learning rate 0.1, one thread
for both (the grower is numpy; LightGBM ``num_threads=1``), medians of ``--repeats``. Then
how the grower's time grows with rows (20 trees) and with trees (50k rows). Squared error
(equal hessians: D1' ratios from histograms) and binary log loss (k-draws over rows).

Each time is taken twice: wall clock and the process's CPU time. On a machine shared with
other jobs the wall clock of both programs stretches with the load (and not by the same
factor); the CPU time of a one-thread run does not, so its ratio is the one to compare
across runs.

    python benchmarks/grower_speed.py [--repeats 3] [--rows 10000,50000,200000,1000000]

Writes ``benchmarks/results/grower_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # numpy's BLAS: one thread, like LightGBM's

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
from _common import RESULTS, make_data  # noqa: E402

import unbiased_criteria as uc  # noqa: E402


def _time(func, repeats: int) -> dict:
    """Median wall clock and CPU seconds of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        func()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return {"wall_s": float(np.median(wall)), "cpu_s": float(np.median(cpu))}


def _ratio(a: dict, b: dict) -> dict:
    return {"wall": a["wall_s"] / b["wall_s"], "cpu": a["cpu_s"] / b["cpu_s"]}


def _grower(X, y, trees, binary, **kw):
    cls = uc.UnbiasedGBMClassifier if binary else uc.UnbiasedGBMRegressor
    return lambda: cls(n_estimators=trees, num_leaves=32, learning_rate=0.1, random_state=0,
                       **kw).fit(X, y)


def _lightgbm(X, y, trees, binary):
    params = {"objective": "binary" if binary else "regression", "num_leaves": 32,
              "learning_rate": 0.1, "num_threads": 1, "verbose": -1, "seed": 0}
    return lambda: lgb.train(params, lgb.Dataset(X, y), num_boost_round=trees)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", default="10000,50000,200000")
    parser.add_argument("--trees", default="25,50,100")
    args = parser.parse_args()
    out: dict = {"setup": "50k x 20, 100 trees, 32 leaves, one thread, medians of "
                          f"{args.repeats}; wall clock and process CPU seconds",
                 "load_average": os.getloadavg(), "main": {}, "rows": {}, "trees": {}}
    X, y = make_data(50_000, 0)
    objectives = (("squared_error", False), ("binary_logistic", True))
    for name, binary in objectives:
        target = (y > np.median(y)).astype(int) if binary else y
        res = {}
        for label, kw in (("unbiased 1:1:1", {}), ("biased (all rows in D)",
                                                    {"criterion": "biased"})):
            res[label] = _time(_grower(X, target, 100, binary, **kw), args.repeats)
        res["lightgbm"] = _time(_lightgbm(X, target, 100, binary), args.repeats)
        for label in list(res):
            if label != "lightgbm":
                res[f"{label} / lightgbm"] = _ratio(res[label], res["lightgbm"])
        out["main"][name] = res
        print(name, json.dumps(res, ensure_ascii=False), flush=True)
    for name, binary in objectives:
        out["rows"][name], out["trees"][name] = {}, {}
        for n in (int(v) for v in args.rows.split(",")):
            Xn, yn = make_data(n, 0)
            yn = (yn > np.median(yn)).astype(int) if binary else yn
            grower = _time(_grower(Xn, yn, 20, binary), 1)
            host = _time(_lightgbm(Xn, yn, 20, binary), 1)
            out["rows"][name][n] = {"grower": grower, "lightgbm": host,
                                    "ratio": _ratio(grower, host)}
            print(name, "rows", n, out["rows"][name][n], flush=True)
        target = (y > np.median(y)).astype(int) if binary else y
        for t in (int(v) for v in args.trees.split(",")):
            grower = _time(_grower(X, target, t, binary), 1)
            host = _time(_lightgbm(X, target, t, binary), 1)
            out["trees"][name][t] = {"grower": grower, "lightgbm": host,
                                     "ratio": _ratio(grower, host)}
            print(name, "trees", t, out["trees"][name][t], flush=True)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "grower_speed.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", path)


if __name__ == "__main__":
    main()
