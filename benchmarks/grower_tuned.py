"""Accuracy with an equal tuning budget: the native grower against tuned LightGBM, tuned
XGBoost and the tuned training hooks, on the accuracy suite's data.

    python benchmarks/grower_tuned.py [--configs 20] [--splits 1] [--datasets a,b,...]
                                      [--methods lightgbm,xgboost,hook,xgb_hook,grower]
                                      [--merge]

Per data set and split: ``accuracy_suite.split_parts`` (60/20/20 training, validation and
test rows). Every method gets the same number of random configurations (``--configs``); each
configuration trains on the training rows with up to 500 rounds and early stopping after 30
rounds on the validation rows; the configuration with the best validation metric is chosen
and only its test metric is reported (the test rows decide nothing). The configurations are
the same draws for every method and data set (configuration ``i`` comes from seed ``i``):

* shared: ``learning_rate`` log-uniform in [0.02, 0.3], leaves in 4..64 (log-uniform),
  min rows per leaf in 2..64 (log-uniform), L2 ``0`` with probability 0.3 else log-uniform
  in [1e-3, 10];
* ``lightgbm``: LightGBM's ``train`` (``num_leaves``, ``min_data_in_leaf``, ``lambda_l2``);
* ``xgboost``: XGBoost's ``train``, ``tree_method="hist"``, ``grow_policy="lossguide"``,
  ``max_leaves`` = leaves, no depth limit, ``min_child_weight`` = min rows per leaf times
  the mean hessian of a row at the start (1 for squared error, 0.25 for log loss: XGBoost
  bounds the hessian, not the rows), ``lambda``;
* ``hook``: ``unbiased_criteria.adapters.lightgbm.train`` with LightGBM's parameters above
  plus ``holdout_fraction`` in {0.2, 0.35, 0.5} and ``redraw_holdout`` in {True, False};
* ``xgb_hook``: ``unbiased_criteria.adapters.xgboost.train`` with XGBoost's parameters above
  plus the same ``holdout_fraction`` and ``redraw_holdout`` draws as ``hook``;
* ``grower``: ``uc.UnbiasedGBM*`` with the shared parameters (``num_leaves``,
  ``min_child_samples``, ``reg_lambda``) plus ``ratios`` in {1:1:1, 1:1, 2:1:1, 2:1}
  (D : D1' : D2', or D : D1' with D2' = D1').

Pandas categorical columns go to every method as categoricals. Reported: per data set the
chosen configuration's test metric (RMSE, log loss, multiclass log loss; lower is better),
and for the grower against each other method the share of data sets where it is lower and
the geometric mean of the ratio grower / other (mean over splits first; over the data sets
both have). Writes ``benchmarks/results/grower_tuned.json`` and ``.md``.

``--merge`` keeps the stored rows of the methods not run (each method's result is
deterministic per configuration and split) and replaces the stored rows of the methods run,
for the data sets run; it refuses a stored file made with other ``--configs``, ``--splits``,
rounds, early stopping or configuration draws. Files are rewritten after every data set, so
an interrupted run keeps what it finished.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from accuracy_suite import DATASETS, RESULTS, _metric, load, split_parts

import unbiased_criteria as uc

ROUNDS, EARLY = 500, 30
METHODS = ("lightgbm", "xgboost", "hook", "xgb_hook", "grower")
RATIOS = ((1, 1, 1), (1, 1), (2, 1, 1), (2, 1))
HOLDOUTS = (0.2, 0.35, 0.5)


def config(i: int) -> dict:
    """Configuration ``i``: the shared parameters and each method's own, from seed ``i``."""
    rng = np.random.default_rng(i)
    return {
        "learning_rate": float(np.exp(rng.uniform(np.log(0.02), np.log(0.3)))),
        "leaves": int(np.rint(np.exp(rng.uniform(np.log(4), np.log(64))))),
        "min_rows": int(np.rint(np.exp(rng.uniform(np.log(2), np.log(64))))),
        "l2": 0.0 if rng.uniform() < 0.3 else float(np.exp(rng.uniform(np.log(1e-3),
                                                                        np.log(10)))),
        "ratios": RATIOS[rng.integers(len(RATIOS))],
        "holdout": HOLDOUTS[rng.integers(len(HOLDOUTS))],
        "redraw": bool(rng.integers(2)),
    }


def _predict_lgb(model, X):
    return model.predict(X, num_iteration=model.best_iteration)


def fit_lightgbm(cfg, parts, task, n_classes, seed, hook: bool):
    import lightgbm as lgb
    from unbiased_criteria.adapters import lightgbm as ul

    obj = {"regression": "regression", "binary": "binary", "multiclass": "multiclass"}[task]
    params = {"objective": obj, "learning_rate": cfg["learning_rate"],
              "num_leaves": cfg["leaves"], "min_data_in_leaf": cfg["min_rows"],
              "lambda_l2": cfg["l2"], "verbose": -1, "seed": seed, "num_threads": 1}
    if task == "multiclass":
        params["num_class"] = n_classes
    (Xtr, ytr), (Xva, yva) = parts["train"], parts["valid"]
    dtr = lgb.Dataset(Xtr, ytr, free_raw_data=False)
    dva = lgb.Dataset(Xva, yva, reference=dtr)
    cb = [lgb.early_stopping(EARLY, verbose=False)]
    if hook:
        model = ul.train(params, dtr, ROUNDS, valid_sets=[dva], callbacks=cb,
                         holdout_fraction=cfg["holdout"], redraw_holdout=cfg["redraw"],
                         random_state=seed)
    else:
        model = lgb.train(params, dtr, ROUNDS, valid_sets=[dva], callbacks=cb)
    return lambda X: _predict_lgb(model, X)


def fit_xgboost(cfg, parts, task, n_classes, seed, hook: bool):
    import xgboost as xgb
    from unbiased_criteria.adapters import xgboost as ux

    obj = {"regression": "reg:squarederror", "binary": "binary:logistic",
           "multiclass": "multi:softprob"}[task]
    hess = {"regression": 1.0, "binary": 0.25, "multiclass": 0.25}[task]
    params = {"objective": obj, "eta": cfg["learning_rate"], "tree_method": "hist",
              "grow_policy": "lossguide", "max_leaves": cfg["leaves"], "max_depth": 0,
              "min_child_weight": cfg["min_rows"] * hess, "lambda": cfg["l2"], "seed": seed,
              "nthread": 1}
    if task == "multiclass":
        params["num_class"] = n_classes
    (Xtr, ytr), (Xva, yva) = parts["train"], parts["valid"]
    dtr = xgb.DMatrix(Xtr, ytr, enable_categorical=True)
    dva = xgb.DMatrix(Xva, yva, enable_categorical=True)
    if hook:
        model = ux.train(params, dtr, ROUNDS, evals=[(dva, "valid")],
                         early_stopping_rounds=EARLY, verbose_eval=False,
                         holdout_fraction=cfg["holdout"], redraw_holdout=cfg["redraw"],
                         random_state=seed)
    else:
        model = xgb.train(params, dtr, ROUNDS, evals=[(dva, "valid")],
                          early_stopping_rounds=EARLY, verbose_eval=False)
    best = int(model.best_iteration)
    return lambda X: model.predict(xgb.DMatrix(X, enable_categorical=True),
                                   iteration_range=(0, best + 1))


def fit_grower(cfg, parts, task, seed):
    (Xtr, ytr), (Xva, yva) = parts["train"], parts["valid"]
    cls = uc.UnbiasedGBMRegressor if task == "regression" else uc.UnbiasedGBMClassifier
    est = cls(n_estimators=ROUNDS, learning_rate=cfg["learning_rate"],
              num_leaves=cfg["leaves"], min_child_samples=cfg["min_rows"],
              reg_lambda=cfg["l2"], ratios=cfg["ratios"], random_state=seed,
              early_stopping_rounds=EARLY)
    est.fit(Xtr, ytr, eval_set=[(Xva, yva)])
    if task == "regression":
        return est.predict
    if task == "binary":
        return lambda X: est.predict_proba(X)[:, 1]
    return est.predict_proba


def fit(method, cfg, parts, task, n_classes, seed):
    """A predict function of ``method`` trained with configuration ``cfg``."""
    if method in ("lightgbm", "hook"):
        return fit_lightgbm(cfg, parts, task, n_classes, seed, hook=method == "hook")
    if method in ("xgboost", "xgb_hook"):
        return fit_xgboost(cfg, parts, task, n_classes, seed, hook=method == "xgb_hook")
    return fit_grower(cfg, parts, task, seed)


def run(names, methods, n_configs: int, n_splits: int, log, done=None) -> pd.DataFrame:
    """Tune every method on every data set; ``done(rows)`` after each data set."""
    rows = []
    for name in names:
        X, y, task = load(name)
        n_classes = int(y.max()) + 1 if task == "multiclass" else 1
        for split in range(n_splits):
            parts = split_parts(X, y, split)
            for method in methods:
                t0 = time.perf_counter()
                best = None
                for i in range(n_configs):
                    cfg = config(i)
                    predict = fit(method, cfg, parts, task, n_classes, split)
                    valid = _metric(task, parts["valid"][1], predict(parts["valid"][0]))
                    if best is None or valid < best[0]:
                        test = _metric(task, parts["test"][1], predict(parts["test"][0]))
                        best = (valid, test, i)
                rows.append({"dataset": name, "task": task, "split": split, "method": method,
                             "valid_metric": best[0], "test_metric": best[1],
                             "config": best[2], "seconds": time.perf_counter() - t0})
                log(f"{name} split {split} {method}: test {best[1]:.4g} (config {best[2]}), "
                    f"{rows[-1]['seconds']:.0f} s")
        if done is not None:
            done(pd.DataFrame(rows))
    return pd.DataFrame(rows)


def summarise(df: pd.DataFrame) -> tuple[dict, str]:
    metric = df.groupby(["dataset", "method"])["test_metric"].mean().unstack()
    methods = [m for m in METHODS if m in metric.columns]
    others = [m for m in methods if m != "grower"]
    # over the data sets both have (a merged run may cover fewer data sets for a method)
    both = {m: metric[["grower", m]].dropna() for m in others}
    wins = {m: float((b["grower"] < b[m]).mean()) for m, b in both.items()}
    ratio = {m: float(np.exp(np.mean(np.log(b["grower"] / b[m])))) for m, b in both.items()}
    n_sets = {m: len(b) for m, b in both.items()}
    seconds = df.groupby("method")["seconds"].sum().to_dict()
    lines = ["| data set | " + " | ".join(methods) + " | grower / best other |",
             "|---" * (len(methods) + 2) + "|"]
    for name, row in metric[methods].iterrows():
        best_other = row[others].min()  # skips a method without this data set
        lines.append(f"| {name} | " + " | ".join("–" if np.isnan(v) else f"{v:.4g}" for v in row)
                     + f" | {row['grower'] / best_other:.3f} |")
    lines.append("| **grower beats it (share of data sets)** | "
                 + " | ".join(f"{wins[m]:.0%}" for m in others) + " | – | |")
    lines.append("| **grower / it (geometric mean)** | "
                 + " | ".join(f"{ratio[m]:.3f}" for m in others) + " | 1 | |")
    lines.append("| data sets compared | "
                 + " | ".join(f"{n_sets[m]}" for m in others) + " | – | |")
    lines.append("| tuning time, s (data sets run) | "
                 + " | ".join(f"{seconds[m]:.0f}" for m in methods) + " | |")
    summary = {"wins": wins, "ratio": ratio, "data_sets": n_sets, "seconds": seconds}
    return summary, "\n".join(lines) + "\n"


def stored_rows(path, args, methods: list[str], names: list[str]) -> pd.DataFrame:
    """The stored rows ``--merge`` keeps: all but those of ``methods`` on ``names``."""
    stored = json.loads(path.read_text(encoding="utf-8"))
    made = (stored["configs"], stored["splits"], stored["rounds"], stored["early_stopping"])
    if made != (args.configs, args.splits, ROUNDS, EARLY):
        raise SystemExit(f"--merge: {path} was made with (configs, splits, rounds, early "
                         f"stopping) = {made}, this run uses "
                         f"{(args.configs, args.splits, ROUNDS, EARLY)}")
    for i, cfg in stored["chosen"].items():
        now = json.loads(json.dumps(config(int(i))))  # tuples as the stored lists
        if cfg != now:
            raise SystemExit(f"--merge: {path} holds configuration {i} = {cfg}, "
                             f"config({i}) now draws {now}")
    old = pd.DataFrame(stored["rows"])
    return old[~(old["method"].isin(methods) & old["dataset"].isin(names))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--splits", type=int, default=1)
    parser.add_argument("--datasets", default=",".join(d for d in DATASETS if d != "digits"))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--merge", action="store_true",
                        help="keep the stored results of the methods and data sets not run")
    args = parser.parse_args()
    names, methods = args.datasets.split(","), args.methods.split(",")
    path = RESULTS / "grower_tuned.json"
    kept = stored_rows(path, args, methods, names) if args.merge else None

    def write(new: pd.DataFrame) -> str:
        df = new if kept is None else pd.concat([kept, new], ignore_index=True)
        summary, table = summarise(df)
        RESULTS.mkdir(exist_ok=True)
        path.write_text(json.dumps(
            {"configs": args.configs, "splits": args.splits, "rounds": ROUNDS,
             "early_stopping": EARLY, "summary": summary,
             "chosen": {f"{i}": config(i) for i in sorted(set(df["config"]))},
             "rows": df.to_dict(orient="records")}, indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8")
        (RESULTS / "grower_tuned.md").write_text(table, encoding="utf-8")
        return table

    df = run(names, methods, args.configs, args.splits, lambda s: print(s, flush=True), write)
    print(write(df))


if __name__ == "__main__":
    main()
