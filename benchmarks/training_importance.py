"""Which sum of U a training run should report as importance, over seeds, both hosts.

    python benchmarks/training_importance.py [--seeds 10]

Per seed, ``UnbiasedLGBMRegressor`` (31 leaves) / ``UnbiasedXGBRegressor`` (depth 5), 100
trees, learning rate 0.05, default hook options (half the rows held out, re-drawn every
round, threshold 0), on 4000 rows of

* the paper's example (``y = 0.1*X1 + N(0,1)``, X2 six categories, X3 N(0,1));
* a null design (``y ~ N(0,1)`` independent of a binary N2, a 10-category categorical N10cat
  and two N(0,1) columns Nc1, Nc2).

Three candidate estimands, mean (standard error) over seeds:

* kept-only: U summed over the splits the model kept (each measured on the rows that decided
  to keep it: the winner's curse);
* all scored: U summed over every split scored, before the pruning decision (the library's
  choice);
* kept, re-measured: the held-out rows cut in two halves, one decides the pruning, U of the
  kept splits is measured on the other (a second run, with pruning decided on half as many
  rows; done here by wrapping the core loop's private ``_score_and_prune``).

Also the mean block-jackknife standard error of the all-scored sum (``training_report``)
next to the standard deviation of that sum over seeds. Results go to
``benchmarks/results/training_importance.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import unbiased_criteria.adapters.lightgbm as alg
import unbiased_criteria.adapters.xgboost as axg

import unbiased_criteria.boosting as boosting
from unbiased_criteria.datasets import null_example, paper_example
from unbiased_criteria.importance import score_tree
from unbiased_criteria.replay import TreeStep

RESULTS = Path(__file__).parent / "results"
_score_and_prune = boosting._score_and_prune


def remeasured(tree, index, nodes, g, h, fit_rows, held_rows, split_score, options,
               threshold, blocks=None, scratch=None):
    """Prune on half A of the held-out rows, record U measured on half B."""
    rng = np.random.default_rng(10_000 + index)
    in_b = rng.permutation(held_rows.size) < held_rows.size // 2
    half_a, half_b = held_rows[~in_b], held_rows[in_b]  # half A keeps the random order
    pruned, old_to_new, rec, _ = _score_and_prune(tree, index, nodes, g, h, fit_rows, half_a,
                                                  split_score, options, threshold)
    if rec is not None:
        step = TreeStep(index, tree, nodes[fit_rows], g[fit_rows], h[fit_rows], None,
                        nodes[half_b], g[half_b], h[half_b], None)
        rec["unbiased_gain"] = score_tree(step, split_score, options).unbiased[
            tree.internal_nodes]
    return pruned, old_to_new, rec, None


def data(design: str, seed: int):
    if design == "paper":
        return paper_example(4000, random_state=seed)
    X, y = null_example(4000, random_state=seed, levels=(2, 10, None, None))
    X = pd.DataFrame(X, columns=["N2", "N10cat", "Nc1", "Nc2"])
    X["N10cat"] = pd.Categorical(X["N10cat"].astype(int), categories=range(10))
    return X, y


def fit(host: str, X, y, seed: int, **extra):
    if host == "lightgbm":
        return alg.UnbiasedLGBMRegressor(n_estimators=100, learning_rate=0.05,
                                         random_state=seed, verbose=-1, n_jobs=1,
                                         **extra).fit(X, y)
    return axg.UnbiasedXGBRegressor(n_estimators=100, learning_rate=0.05, max_depth=5,
                                    random_state=seed, enable_categorical=True,
                                    tree_method="hist", n_jobs=1, **extra).fit(X, y)


def per_feature(frame: pd.DataFrame, names: list[str], kept_only: bool) -> pd.Series:
    if kept_only:
        frame = frame[frame["kept"].astype(bool)]
    return frame.groupby("feature")["unbiased_gain"].sum().reindex(names, fill_value=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    out: dict = {}
    for design in ("paper", "null"):
        for host in ("lightgbm", "xgboost"):
            start = time.time()
            rows: dict[str, list[pd.Series]] = {"kept-only": [], "all scored": [],
                                                "kept, re-measured": [], "jackknife SE": []}
            for seed in range(args.seeds):
                X, y = data(design, seed)
                names = list(X.columns)
                model = fit(host, X, y, seed)
                splits = model.training_splits_
                report = (alg.training_report(model) if host == "lightgbm"
                          else axg.training_report(model.get_booster()))
                rows["kept-only"].append(per_feature(splits, names, True))
                rows["all scored"].append(per_feature(splits, names, False))
                rows["jackknife SE"].append(report.std_error().reindex(names))
                boosting._score_and_prune = remeasured
                try:
                    splits = fit(host, X, y, seed, n_blocks=0).training_splits_
                finally:
                    boosting._score_and_prune = _score_and_prune
                rows["kept, re-measured"].append(per_feature(splits, names, True))
            result = {}
            for name, values in rows.items():
                v = pd.DataFrame(values)
                result[name] = {"mean": v.mean().to_dict(),
                                "se": (v.std(ddof=1) / np.sqrt(len(v))).to_dict()}
            result["all scored"]["sd over seeds"] = pd.DataFrame(
                rows["all scored"]).std(ddof=1).to_dict()
            out[f"{design}/{host}"] = result
            print(f"{design} {host} ({time.time() - start:.0f} s)")
            for name in ("kept-only", "all scored", "kept, re-measured"):
                m, se = result[name]["mean"], result[name]["se"]
                print(f"  {name:18s} " + "  ".join(f"{c} {m[c]:7.1f} ({se[c]:5.1f})"
                                                   for c in names))
            jse, sd = result["jackknife SE"]["mean"], result["all scored"]["sd over seeds"]
            print("  jackknife SE / SD over seeds: " + "  ".join(
                f"{c} {jse[c]:.0f}/{sd[c]:.0f}" for c in names), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "training_importance.json").write_text(
        json.dumps({"seeds": args.seeds, "results": out}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
