"""Feature selection: cross-fitted unbiased importance against gain and permutation importance.

    python benchmarks/selection.py [--seeds 10] [--data breast_cancer oj hmda] [--quick]

Protocol, the same for every ranking (the issue's): per data set and seed, a random
stratified half of the rows is the training part, the other half the test part. Each method
ranks the features using the training part only; the top 10%, 20% and 30% of the features
(at least one) are kept; a model with the same parameters is retrained on the training part
with only those columns and scored on the test part (AUC for binary targets, R2 for
regression). Model: LightGBM, 200 trees, learning rate 0.05, 31 leaves, one thread.

Rankings:

* ``gain``: the host's gain importance of the model fitted on the whole training part;
* ``permutation``: scikit-learn's ``permutation_importance`` (5 repeats) of each fold's model
  on its held-out fold (5 folds of the training part), averaged over folds;
* ``unbiased split``: ``uc.unbiased_importance`` of a model fitted on one half of the
  training part, scored with the other half (what a user did by hand before);
* ``unbiased cv``: ``uc.cross_fitted_importance`` (5 folds, all trees);
* ``unbiased cv best``: the same with ``iterations="best"``;

and ``UnbiasedSelector`` (alpha 0.05, the same 5 folds; keeps what is significant, however
many) and ``all`` (no selection). Reported per method: the test metric per data set and
fraction, the mean rank over (data set, fraction) cells (1 is best) and the mean metric.
Results: ``benchmarks/results/selection.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from accuracy_suite import load  # noqa: E402

RESULTS = Path(__file__).parent / "results"
FRACTIONS = (0.1, 0.2, 0.3)
RANKINGS = ("gain", "permutation", "unbiased split", "unbiased cv", "unbiased cv best")
DATASETS = ("breast_cancer", "oj", "hmda")


def _estimator(task: str, seed: int, n_estimators: int):
    import lightgbm

    cls = lightgbm.LGBMClassifier if task == "binary" else lightgbm.LGBMRegressor
    return cls(n_estimators=n_estimators, learning_rate=0.05, num_leaves=31, verbose=-1,
               n_jobs=1, random_state=seed)


def _score(task: str, model, X, y) -> float:
    from sklearn.metrics import r2_score, roc_auc_score

    if task == "binary":
        return float(roc_auc_score(y, model.predict_proba(X)[:, 1]))
    return float(r2_score(y, model.predict(X)))


def _rankings(task, X, y, seed, n_estimators) -> dict[str, np.ndarray]:
    """Each method's importance of every column, from the training part only."""
    from sklearn.base import clone
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

    import unbiased_criteria as uc

    est = _estimator(task, seed, n_estimators)
    cv = (StratifiedKFold if task == "binary" else KFold)(5, shuffle=True, random_state=seed)
    out = {"gain": clone(est).set_params(importance_type="gain").fit(X, y)
           .feature_importances_.astype(float)}
    perm = np.zeros(X.shape[1])
    for train, held in cv.split(X, y):
        model = clone(est).fit(X.iloc[train], y[train])
        perm += permutation_importance(
            model, X.iloc[held], y[held], n_repeats=5, random_state=seed,
            scoring="roc_auc" if task == "binary" else "r2").importances_mean
    out["permutation"] = perm / 5
    a, b = train_test_split(np.arange(len(y)), test_size=0.5, random_state=seed,
                            stratify=y if task == "binary" else None)
    model = clone(est).fit(X.iloc[a], y[a])
    out["unbiased split"] = uc.unbiased_importance(
        model, X.iloc[a], y[a], X.iloc[b], y[b], random_state=seed
    ).to_frame()["unbiased_gain"].to_numpy()
    for name, iterations in (("unbiased cv", None), ("unbiased cv best", "best")):
        report = uc.cross_fitted_importance(est, X, y, cv=cv, random_state=seed,
                                            iterations=iterations)
        out[name] = report.to_frame()["unbiased_gain"].to_numpy()
        if iterations == "best":
            out["_cuts"] = np.asarray(report.iterations_kept)
        else:
            out["_selected"] = report.to_frame().index.isin(report.select(0.05))
    return out


def run(names, seeds, n_estimators) -> list[dict]:
    from sklearn.base import clone
    from sklearn.model_selection import train_test_split

    rows = []
    for name in names:
        X, y, task = load(name)
        if task != "binary" and task != "regression":
            raise ValueError(f"{name}: only binary and regression data sets are supported")
        y = np.asarray(y, dtype=float)
        for seed in range(seeds):
            tr, te = train_test_split(np.arange(len(y)), test_size=0.5, random_state=seed,
                                      stratify=y if task == "binary" else None)
            Xtr, ytr, Xte, yte = X.iloc[tr], y[tr], X.iloc[te], y[te]
            est = _estimator(task, seed, n_estimators)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ranks = _rankings(task, Xtr, ytr, seed, n_estimators)
            base = dict(data=name, task=task, seed=seed, n_features=X.shape[1],
                        n_rows=len(y))
            full = clone(est).fit(Xtr, ytr)
            rows.append(dict(base, method="all", fraction=1.0, kept=X.shape[1],
                             metric=_score(task, full, Xte, yte)))
            for method in RANKINGS:
                order = np.argsort(-ranks[method], kind="stable")
                for frac in FRACTIONS:
                    k = max(1, int(round(frac * X.shape[1])))
                    cols = X.columns[order[:k]]
                    model = clone(est).fit(Xtr[cols], ytr)
                    rows.append(dict(base, method=method, fraction=frac, kept=k,
                                     metric=_score(task, model, Xte[cols], yte)))
            cols = X.columns[ranks["_selected"]]
            metric = (_score(task, clone(est).fit(Xtr[cols], ytr), Xte[cols], yte)
                      if len(cols) else float("nan"))
            rows.append(dict(base, method="selector alpha=0.05", fraction=np.nan,
                             kept=len(cols), metric=metric))
            rows.append(dict(base, method="_cuts", fraction=np.nan, kept=0,
                             metric=float(np.mean(ranks["_cuts"]))))
            print(f"{name} seed {seed}: {time.perf_counter() - t0:.1f} s, selector kept "
                  f"{len(cols)} of {X.shape[1]}, best cuts {ranks['_cuts'].tolist()}",
                  flush=True)
    return rows


def summarise(df: pd.DataFrame) -> dict:
    ranked = df[df["method"].isin(RANKINGS)]
    cell = ranked.groupby(["data", "fraction", "method"])["metric"].mean().unstack("method")
    ranks = cell.rank(axis=1, ascending=False)
    selector = df[df["method"] == "selector alpha=0.05"].groupby("data")
    return {
        "metric_by_cell": {f"{d} top {f:.0%}": row.round(4).to_dict()
                           for (d, f), row in cell.iterrows()},
        "mean_metric_by_data": {d: row.round(4).to_dict() for d, row in
                                cell.groupby(level="data").mean().iterrows()},
        "mean_rank": ranks.mean().round(3).to_dict(),
        "mean_metric": cell.mean().round(4).to_dict(),
        "all_features": df[df["method"] == "all"].groupby("data")["metric"].mean()
        .round(4).to_dict(),
        "selector_alpha_0.05": {
            d: {"kept": float(g["kept"].mean()), "n_features": int(g["n_features"].iloc[0]),
                "metric": round(float(g["metric"].mean()), 4)}
            for d, g in selector
        },
        "best_cut_mean_iterations": df[df["method"] == "_cuts"].groupby("data")["metric"]
        .mean().round(1).to_dict(),
    }


ROW_FIELDS = ["data", "seed", "method", "fraction", "kept", "metric"]


def results_text(out: dict, df: pd.DataFrame) -> str:
    """``out`` as indented JSON, plus ``rows``: one compact list per measurement."""
    head = json.dumps(out, indent=1, ensure_ascii=False, allow_nan=False, default=float)
    rows = df[ROW_FIELDS].assign(metric=df["metric"].round(5)).to_numpy().tolist()
    rows = [[None if isinstance(v, float) and np.isnan(v) else v for v in r] for r in rows]
    lines = ",\n  ".join(json.dumps(r, ensure_ascii=False, allow_nan=False, default=float)
                          for r in rows)
    return (f'{head[:-2]},\n "row_fields": {json.dumps(ROW_FIELDS)},\n'
            f' "rows": [\n  {lines}\n ]\n}}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--data", nargs="+", default=list(DATASETS))
    parser.add_argument("--quick", action="store_true", help="2 seeds, 50 trees (a smoke run)")
    args = parser.parse_args()
    seeds, trees = (2, 50) if args.quick else (args.seeds, 200)
    start = time.time()
    df = pd.DataFrame(run(args.data, seeds, trees))
    out = {
        "protocol": {"seeds": seeds, "n_estimators": trees, "learning_rate": 0.05,
                     "num_leaves": 31, "fractions": FRACTIONS, "cv": 5, "data": args.data},
        "summary": summarise(df),
        "seconds": round(time.time() - start, 1),
        "load_average": os.getloadavg()[0],
    }
    text = results_text(out, df)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "selection.json").write_text(text + "\n", encoding="utf-8")
    print(json.dumps(out["summary"], indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
