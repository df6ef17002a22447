"""Accuracy of the native grower's settings against LightGBM, on the accuracy suite's data.

    python benchmarks/grower_accuracy.py [--seeds 3] [--datasets diabetes,boston,...]

Same protocol as ``accuracy_suite.py`` (its data sets, random 60/20/20 splits, learning rate
0.1, up to 500 rounds, early stopping after 30 rounds on the validation rows, 31 leaves,
default parameters otherwise; no tuning), for

* ``lightgbm``: LightGBM's own ``train`` (the suite's ``host`` setting);
* ``grower 1:1:1 redraw``: ``UnbiasedGBM*`` defaults (D : D1' : D2' = 1 : 1 : 1, re-drawn
  every iteration);
* ``grower 1:1 redraw``: D2' = D1' (the paper's alternative);
* ``grower 1:1:1 fixed``: one split of the rows for the whole run (the paper's program);
* ``grower biased``: every row in D, largest B (an ordinary histogram GBDT).

Pandas categorical columns go to both as categoricals (the grower's category-set splits,
LightGBM's own).
Writes ``benchmarks/results/grower_accuracy.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from accuracy_suite import (
    DATASETS,
    RESULTS,
    _metric,
    _params,
    fit_predict,
    load,
    split_parts,
)

import unbiased_criteria as uc

ROUNDS, EARLY, LR = 500, 30, 0.1
SETTINGS = {
    "grower 1:1:1 redraw": {"ratios": (1, 1, 1), "redraw": True},
    "grower 1:1 redraw": {"ratios": (1, 1), "redraw": True},
    "grower 1:1:1 fixed": {"ratios": (1, 1, 1), "redraw": False},
    "grower biased": {"criterion": "biased"},
}


def grower_fit_predict(setting, parts, task, seed):
    (Xtr, ytr), (Xva, yva), (Xte, _) = parts["train"], parts["valid"], parts["test"]
    cls = uc.UnbiasedGBMRegressor if task == "regression" else uc.UnbiasedGBMClassifier
    est = cls(n_estimators=ROUNDS, learning_rate=LR, num_leaves=31, random_state=seed,
              early_stopping_rounds=EARLY, **SETTINGS[setting])
    est.fit(Xtr, ytr, eval_set=[(Xva, yva)])
    if task == "regression":
        pred = est.predict(Xte)
    else:
        proba = est.predict_proba(Xte)
        pred = proba[:, 1] if task == "binary" else proba
    return pred, int(sum(t.n_leaves for t in est._result.forest.trees))


def run(seeds: int, names: list[str]) -> pd.DataFrame:
    rows = []
    for name in names:
        X, y, task = load(name)
        n_classes = int(y.max()) + 1 if task == "multiclass" else 1
        for seed in range(seeds):
            parts = split_parts(X, y, seed)
            for setting in ["lightgbm", *SETTINGS]:
                t0 = time.perf_counter()
                if setting == "lightgbm":
                    params = _params("lightgbm", task, n_classes, seed)
                    pred, leaves = fit_predict("lightgbm", "host", params, parts, task, seed)
                else:
                    pred, leaves = grower_fit_predict(setting, parts, task, seed)
                rows.append({"dataset": name, "task": task, "seed": seed, "setting": setting,
                             "test_metric": _metric(task, parts["test"][1], pred),
                             "leaves": leaves, "seconds": time.perf_counter() - t0})
            print(f"{name} seed {seed} done", flush=True)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> tuple[dict, str]:
    metric = df.groupby(["dataset", "setting"])["test_metric"].mean().unstack()
    leaves = df.groupby(["dataset", "setting"])["leaves"].mean().unstack()
    order = ["lightgbm", *SETTINGS]
    wins = {s: float((metric[s] < metric["lightgbm"]).mean()) for s in SETTINGS}
    rel = {s: float(np.exp(np.mean(np.log(metric[s] / metric["lightgbm"])))) for s in SETTINGS}
    size = {s: float(np.exp(np.mean(np.log(leaves[s] / leaves["lightgbm"])))) for s in SETTINGS}
    lines = ["| data set | " + " | ".join(order) + " |", "|---" * (len(order) + 1) + "|"]
    for name, row in metric[order].iterrows():
        lines.append(f"| {name} | " + " | ".join(f"{v:.4g}" for v in row) + " |")
    lines.append("| **beats LightGBM** | – | " + " | ".join(f"{wins[s]:.0%}" for s in SETTINGS)
                 + " |")
    lines.append("| **metric / LightGBM (geo. mean)** | 1 | "
                 + " | ".join(f"{rel[s]:.3f}" for s in SETTINGS) + " |")
    lines.append("| **leaves / LightGBM** | 1 | " + " | ".join(f"{size[s]:.3f}" for s in SETTINGS)
                 + " |")
    return {"wins": wins, "ratio": rel, "leaves": size}, "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", default=",".join(d for d in DATASETS if d != "digits"))
    args = parser.parse_args()
    df = run(args.seeds, args.datasets.split(","))
    summary, table = summarise(df)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "grower_accuracy.json").write_text(json.dumps(
        {"summary": summary, "rows": df.to_dict(orient="records")}, indent=1,
        ensure_ascii=False) + "\n", encoding="utf-8")
    (RESULTS / "grower_accuracy.md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
