"""The paper's example over many seeds, every host: importance and pruning figures.

    python benchmarks/paper_example.py [--seeds 40] [--hosts lightgbm xgboost sklearn]

y = 0.1*X1 + N(0,1); X1 binary, X2 six categories, X3 N(0,1). Per seed: 2000 training,
2000 held-out and 2000 test rows; 100 trees, learning rate 0.05 (LightGBM 31 leaves, XGBoost
max_depth 5, scikit-learn's HistGradientBoostingRegressor its default 31 leaves, no early
stopping; X2 is a pandas categorical, a categorical feature for every host). Reports, over
seeds: the mean per-feature host gain share, biased gain B and unbiased gain U (with paired t
statistics), the features `report.select()` picks, and for pruning (`uc.prune`, threshold 0)
the test MSE change and the share of leaves kept. Results go to
``benchmarks/results/paper_example.json`` (the hosts run replace their entries; the others are
kept).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import unbiased_criteria as uc
from unbiased_criteria.api import prune_forest
from unbiased_criteria.datasets import paper_example

RESULTS = Path(__file__).parent / "results"
FEATURES = ["X1", "X2", "X3"]


def train(host, X, y, seed):
    if host == "lightgbm":
        import lightgbm as lgb

        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 31,
                  "verbose": -1, "seed": seed}
        return lgb.train(params, lgb.Dataset(X, y), num_boost_round=100)
    if host == "sklearn":
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(max_iter=100, learning_rate=0.05,
                                             early_stopping=False, random_state=seed).fit(X, y)
    import xgboost as xgb

    params = {"objective": "reg:squarederror", "eta": 0.05, "max_depth": 5, "seed": seed}
    return xgb.train(params, xgb.DMatrix(X, y, enable_categorical=True), 100)


def predict(host, model, X):
    if host in ("lightgbm", "sklearn"):
        return model.predict(X)
    import xgboost as xgb

    return model.predict(xgb.DMatrix(X, enable_categorical=True))


def t_stat(a):
    a = np.asarray(a, dtype=float)
    return float(a.mean() / (a.std(ddof=1) / np.sqrt(a.size)))


def run_host(host: str, seeds: int) -> dict:
    share, B, U, selected, mse_diff, kept = [], [], [], [], [], []
    t0 = time.perf_counter()
    for s in range(seeds):
        X, y = paper_example(2000, random_state=3 * s)
        Xv, yv = paper_example(2000, random_state=3 * s + 1)
        Xt, yt = paper_example(2000, random_state=3 * s + 2)
        model = train(host, X, y, s)
        report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=s)
        frame = report.to_frame().loc[FEATURES]
        share.append(frame["host_gain"] / frame["host_gain"].sum())
        B.append(frame["biased_gain"])
        U.append(frame["unbiased_gain"])
        selected.append([f in report.select() for f in FEATURES])
        result = prune_forest(model, X, y, Xv, yv, random_state=s)
        pruned = result.adapter.write_model(model, result.forest)
        mse = [np.mean((predict(host, m, Xt) - yt) ** 2) for m in (pruned, model)]
        mse_diff.append(mse[0] - mse[1])
        kept.append(result.leaves_after / result.leaves_before)
    U, B = np.array(U), np.array(B)
    mean = lambda a: dict(zip(FEATURES, np.round(np.mean(a, axis=0), 3).tolist()))  # noqa: E731
    return {
        "seeds": seeds,
        "seconds": round(time.perf_counter() - t0, 1),
        "host_gain_share": mean(share),
        "biased_gain": mean(B),
        "unbiased_gain": mean(U),
        "unbiased_gain_sd": dict(zip(FEATURES, np.round(U.std(axis=0, ddof=1), 1).tolist())),
        "paired_t_X1_minus_X2": round(t_stat(U[:, 0] - U[:, 1]), 2),
        "paired_t_X1_minus_X3": round(t_stat(U[:, 0] - U[:, 2]), 2),
        "t_X2": round(t_stat(U[:, 1]), 2),
        "t_X3": round(t_stat(U[:, 2]), 2),
        "selected_share": mean(selected),
        "prune_test_mse_change_mean": round(float(np.mean(mse_diff)), 5),
        "prune_test_mse_change_t": round(t_stat(mse_diff), 2),
        "prune_test_mse_better_share": round(float(np.mean(np.array(mse_diff) < 0)), 3),
        "prune_leaves_kept_share": round(float(np.mean(kept)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--hosts", nargs="+", default=["lightgbm", "xgboost", "sklearn"],
                        choices=["lightgbm", "xgboost", "sklearn"])
    args = parser.parse_args()
    out = {host: run_host(host, args.seeds) for host in args.hosts}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "paper_example.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    kept.update(out)
    path.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
