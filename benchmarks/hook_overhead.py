"""Wall time of the training hooks against the hosts' own training, measured in the same run.

    python benchmarks/hook_overhead.py [--rows 100000] [--features 50] [--rounds 300]
                                       [--repeat 3] [--hosts lightgbm xgboost]

Synthetic regression (a few informative features + noise), 31 leaves (LightGBM
``num_leaves=31``; XGBoost ``max_leaves=31, grow_policy=lossguide``), learning rate 0.05, both
hosts on one thread (the machines here are shared: threads contend). Timed, medians over
repeats: the host's ``train``; the hook with pruning off and no held-out rows (the cost of
driving the host round by round from our own scores); the hook as users run it (20% held-out
rows re-drawn each round, pruning on). Ratios to the host's time; results to
``benchmarks/results/hook_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"


def data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3] + rng.standard_normal(n)
    return X, y


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def bench_lightgbm(X, y, rounds, repeat):
    import lightgbm as lgb
    from unbiased_criteria.adapters import lightgbm as ul

    params = {"objective": "regression", "num_leaves": 31, "learning_rate": 0.05,
              "verbose": -1, "seed": 0, "num_threads": 1}

    def host():
        lgb.train(params, lgb.Dataset(X, y), rounds)

    def hook_plain():
        ul.train(params, lgb.Dataset(X, y), rounds, holdout_fraction=0.0,
                 prune_threshold=None)

    def hook():
        ul.train(params, lgb.Dataset(X, y), rounds, random_state=0)

    return {name: median_time(fn, repeat)
            for name, fn in (("host", host), ("hook_no_pruning", hook_plain), ("hook", hook))}


def bench_xgboost(X, y, rounds, repeat):
    import xgboost as xgb
    from unbiased_criteria.adapters import xgboost as ux

    params = {"objective": "reg:squarederror", "max_leaves": 31, "grow_policy": "lossguide",
              "max_depth": 0, "eta": 0.05, "seed": 0, "nthread": 1}
    d = xgb.DMatrix(X, y)

    def host():
        xgb.train(params, d, rounds)

    def hook_plain():
        ux.train(params, d, rounds, holdout_fraction=0.0, prune_threshold=None,
                 verbose_eval=False)

    def hook():
        ux.train(params, d, rounds, random_state=0, verbose_eval=False)

    return {name: median_time(fn, repeat)
            for name, fn in (("host", host), ("hook_no_pruning", hook_plain), ("hook", hook))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hosts", nargs="+", default=["lightgbm", "xgboost"])
    args = parser.parse_args()
    X, y = data(args.rows, args.features)
    out = {"rows": args.rows, "features": args.features, "rounds": args.rounds,
           "repeat": args.repeat}
    for host in args.hosts:
        times = (bench_lightgbm if host == "lightgbm" else bench_xgboost)(
            X, y, args.rounds, args.repeat)
        out[host] = {
            "seconds": {k: round(v, 3) for k, v in times.items()},
            "ratio_to_host": {k: round(v / times["host"], 2) for k, v in times.items()
                              if k != "host"},
            "target_ratio": 1.5,
        }
        print(host, json.dumps(out[host]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hook_overhead.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
