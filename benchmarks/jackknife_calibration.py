"""Block-jackknife standard errors against the spread of U over independent held-out samples.

    python benchmarks/jackknife_calibration.py [--reps 150]

The paper's example (n = 2000 training rows), a LightGBM model (30 trees, learning rate 0.1)
and an XGBoost model (30 trees, depth 4), fixed. For each of ``--reps`` independent held-out
samples of 2000 rows (and a seed each), ``unbiased_importance`` with the training rows and in
the validation-only mode (cross-fitted halves): per feature, the mean standard error over the
samples divided by the standard deviation of U over them. 1 is calibrated; the sampling sd of
that ratio is about ``1 / sqrt(2 (reps - 1))``. Results go to
``benchmarks/results/jackknife_calibration.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402
import xgboost as xgb  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "jackknife_calibration.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=150)
    args = parser.parse_args()
    X, y = paper_example(2000, random_state=0)
    models = {
        "lightgbm": lgb.train({"objective": "regression", "learning_rate": 0.1, "verbose": -1,
                               "num_threads": 1}, lgb.Dataset(X, y), 30),
        "xgboost": xgb.XGBRegressor(n_estimators=30, learning_rate=0.1, max_depth=4,
                                    n_jobs=1, enable_categorical=True).fit(X, y),
    }
    out = {"reps": args.reps, "ratio_sampling_sd": 1 / np.sqrt(2 * (args.reps - 1))}
    for host, model in models.items():
        for mode in ("training rows", "validation-only"):
            U, SE = [], []
            for s in range(args.reps):
                Xv, yv = paper_example(2000, random_state=5000 + s)
                train = (X, y) if mode == "training rows" else (None, None)
                frame = uc.unbiased_importance(model, *train, Xv, yv, random_state=s,
                                               n_jobs=1).to_frame()
                U.append(frame["unbiased_gain"].to_numpy())
                SE.append(frame["std_error"].to_numpy())
            U, SE = np.array(U), np.array(SE)
            ratio = SE.mean(axis=0) / U.std(axis=0, ddof=1)
            out[f"{host}, {mode}"] = {
                "features": list(frame.index), "mean_se": SE.mean(axis=0).round(2).tolist(),
                "sd_u": U.std(axis=0, ddof=1).round(2).tolist(),
                "ratio": ratio.round(3).tolist()}
            print(f"{host:8s} {mode:15s} SE / sd(U): {ratio.round(2)}", flush=True)
    RESULTS.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
