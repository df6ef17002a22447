"""Model-file hardening costs: the XGBoost router's peak memory, the LightGBM text check.

    python benchmarks/model_files.py router [--rows 500000] [--features 50] [--budget-mib 64]
    python benchmarks/model_files.py check

``router``: a 100-tree depth-6 XGBoost model routes ``rows`` float32 rows at ``memory_budget``;
prints the peak resident memory the router adds (``ru_maxrss`` after minus before; the rows
are generated in slices so that no temporary raises the peak first). ``check``: the time of
``check_model_text`` against ``dump_model`` and ``model_to_string`` on a 500-tree, 63-leaf
LightGBM model, best of 3.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def router(rows: int, features: int, budget_mib: int) -> None:
    import xgboost as xgb
    from unbiased_criteria.adapters.xgboost import read_model
    from unbiased_criteria.adapters.xgboost.router import make_router

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(5000, features))
    booster = xgb.train({"max_depth": 6, "nthread": 2},
                        xgb.DMatrix(Xs, Xs[:, 0] + rng.normal(size=5000)), 100)
    model_ir = read_model(booster)
    X = np.empty((rows, features), dtype=np.float32)
    for r in range(0, rows, 20000):
        X[r : r + 20000] = rng.normal(size=(min(20000, rows - r), features))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    route = make_router(booster, model_ir, X, "X", memory_budget=budget_mib * 2**20)
    for _ in route.chunks(model_ir.forest.n_trees):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"router {rows} x {features} float32 at memory_budget {budget_mib} MiB: peak extra "
          f"{(peak - base) / 1024:.0f} MiB, {time.perf_counter() - start:.1f} s, "
          f"{route.chunk} trees per call")


def check() -> None:
    import lightgbm as lgb
    from unbiased_criteria.adapters.lightgbm.text_model import check_model_text

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 50))
    booster = lgb.train({"num_leaves": 63, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, X[:, 0] + rng.normal(size=20000)), 500)
    text = booster.model_to_string(num_iteration=-1)

    def best(f):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
        return min(times)

    t_check = best(lambda: check_model_text(text))
    t_dump = best(lambda: booster.dump_model(num_iteration=-1))
    t_text = best(lambda: booster.model_to_string(num_iteration=-1))
    print(f"check_model_text on 500 trees x 63 leaves ({len(text) / 2**20:.1f} MiB): "
          f"{t_check * 1e3:.0f} ms; dump_model {t_dump * 1e3:.0f} ms ({t_check / t_dump:.2f}x), "
          f"model_to_string {t_text * 1e3:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["router", "check"])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--budget-mib", type=int, default=64)
    args = parser.parse_args()
    if args.what == "router":
        router(args.rows, args.features, args.budget_mib)
    else:
        check()
