"""How many threads should score trees? Post-hoc importance on small to large inputs, with
the scoring on one thread, on every core, and as the library chooses (one thread per
``ROWS_PER_SCORING_THREAD`` rows per tree, within ``n_jobs``), beside the host's own
``pred_leaf`` over the same rows in the same run.

    python benchmarks/scoring_threads.py [--repeat 3] [--host lightgbm xgboost]

Cases (training + held-out rows, trees, leaves): 5k + 5k rows with 3000 trees of 4 leaves
(tiny trees: the per-tree overhead), and 200 trees of 31 leaves (LightGBM) / depth 5
(XGBoost) on 5k + 5k, 20k + 20k, 60k + 60k and 100k + 300k rows. Every mode runs with
``n_jobs`` = all cores, so the host's routing of the next chunk of trees overlaps the
scoring in each; "one" and "all" force the number of scoring threads. Wall seconds, medians
of ``--repeat`` interleaved repeats, the load average before and after; the results go to
``benchmarks/results/scoring_threads.json``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _common import machine, median, write_results

from unbiased_criteria import parallel

CASES = [  # (training rows, held-out rows, trees, LightGBM leaves / XGBoost depth)
    (5_000, 5_000, 3000, (4, 2)),
    (5_000, 5_000, 200, (31, 5)),
    (20_000, 20_000, 200, (31, 5)),
    (60_000, 60_000, 200, (31, 5)),
    (100_000, 300_000, 200, (31, 5)),
]
MODES = {"one": 10**18, "all": 1, "chosen": parallel.ROWS_PER_SCORING_THREAD}


def model_for(host: str, X, y, trees: int, size: tuple[int, int]):
    if host == "lightgbm":
        import lightgbm as lgb

        return lgb.train({"verbose": -1, "num_leaves": size[0], "seed": 0},
                         lgb.Dataset(X, y), trees)
    import xgboost as xgb

    return xgb.train({"max_depth": size[1], "seed": 0}, xgb.DMatrix(X, y), trees)


def pred_leaf(host: str, model, X):
    if host == "lightgbm":
        return model.predict(X, pred_leaf=True)
    import xgboost as xgb

    return model.predict(xgb.DMatrix(X), pred_leaf=True)


def main() -> None:
    import unbiased_criteria as uc

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--host", nargs="+", default=["lightgbm", "xgboost"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    load_before = os.getloadavg()
    for n_train, n_valid, trees, size in CASES:
        X = rng.normal(size=(n_train, 10)).astype(np.float32)
        Xv = rng.normal(size=(n_valid, 10)).astype(np.float32)
        y = X[:, 0] + rng.normal(size=n_train)
        yv = Xv[:, 0] + rng.normal(size=n_valid)
        for host in args.host:
            model = model_for(host, X, y, trees, size)
            times: dict[str, list[float]] = {"pred_leaf": [], **{m: [] for m in MODES}}
            for _ in range(args.repeat):
                start = time.perf_counter()
                pred_leaf(host, model, X)
                pred_leaf(host, model, Xv)
                times["pred_leaf"].append(time.perf_counter() - start)
                for mode, rows_per_thread in MODES.items():
                    parallel.ROWS_PER_SCORING_THREAD = rows_per_thread
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # few held-out rows per leaf
                        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
                    times[mode].append(time.perf_counter() - start)
            parallel.ROWS_PER_SCORING_THREAD = MODES["chosen"]
            med = {k: median(v) for k, v in times.items()}
            row = {"host": host, "train_rows": n_train, "valid_rows": n_valid, "trees": trees,
                   "seconds": med,
                   "ratio_to_pred_leaf": {m: med[m] / med["pred_leaf"] for m in MODES},
                   "chosen_threads": parallel.scoring_threads(parallel.resolve_n_jobs(None),
                                                              n_train + n_valid)}
            rows.append(row)
            print(f"{host:8s} {n_train:>7,} + {n_valid:>7,} rows, {trees:4d} trees: "
                  + ", ".join(f"{m} {med[m]:.2f}s ({med[m] / med['pred_leaf']:.1f}x)"
                              for m in MODES)
                  + f"; pred_leaf {med['pred_leaf']:.2f}s; chosen threads "
                  f"{row['chosen_threads']}", flush=True)
    out = {"machine": machine(), "repeat": args.repeat, "load_average": {
        "before": load_before, "after": os.getloadavg()}, "cases": rows}
    print("wrote", write_results("scoring_threads.json", out))


if __name__ == "__main__":
    main()
