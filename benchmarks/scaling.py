"""Scaling of post-hoc unbiased importance: time against held-out rows and trees, memory
against rows, each point beside the host's own pred_leaf over the same rows in the same run.

    python benchmarks/scaling.py [--host lightgbm ...] [--repeat 1]
        [--valid-rows 10000 100000 500000 1000000 2000000] [--trees-for-rows 100]
        [--trees 50 200 500 2000] [--valid-rows-for-trees 100000] [--rows 20000]

The models of ``posthoc_speed.py`` (same data, seeds and parameters, shared model cache),
trained on ``--rows`` rows. Two sweeps per host:

* rows: a ``--trees-for-rows``-tree model, held-out rows from 10k to 2M;
* trees: models of 50 to 2000 trees, ``--valid-rows-for-trees`` held-out rows.

Each point, in a fresh subprocess each (as ``posthoc_speed.py``):
``uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, random_state=0)`` (default
jackknife, all cores) and the host's ``predict(X, pred_leaf=True)`` over the same train and
held-out rows; wall and CPU seconds, peak resident set during the call minus the one before
it, the load average. A straight line ``seconds = a + b * x`` is fitted by least squares to
each sweep (``b``: seconds per million held-out rows, or per 100 trees) with its R^2 and the
largest relative residual. Medians over ``--repeat`` interleaved repeats; the result goes to
``benchmarks/results/scaling.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
from _common import (
    HOSTS,
    MB,
    cache_dir,
    child_pred_leaf,
    input_bytes,
    load_inputs,
    machine,
    measure,
    median,
    parse_or_run_child,
    run_child,
    train_model,
    write_results,
)


def child_importance(spec: dict[str, Any]) -> dict[str, Any]:
    import unbiased_criteria as uc

    booster, X_train, y_train, X_valid, y_valid = load_inputs(spec)

    def op():
        report = uc.unbiased_importance(booster, X_train, y_train, X_valid, y_valid,
                                        random_state=0, n_jobs=spec.get("threads"))
        return {"n_splits": len(report.splits)}

    out = measure(op)
    out["input_bytes"] = input_bytes(X_train, y_train, X_valid, y_valid)
    return out


CHILDREN = {"pred_leaf": child_pred_leaf, "importance": child_importance}


def fit_line(x, y) -> dict[str, float]:
    """Least-squares ``y = a + b x``; R^2 and the largest residual relative to ``y``."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    b, a = np.polyfit(x, y, 1)
    fitted = a + b * x
    ss_res = float(np.sum((y - fitted) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return {"intercept": round(float(a), 3), "slope": round(float(b), 4),
            "r2": round(1.0 - ss_res / ss_tot, 4) if ss_tot > 0 else float("nan"),
            "max_relative_residual": round(float(np.max(np.abs(y - fitted) / y)), 3)}


def run_point(host: str, info: dict, rows: int, valid_rows: int, threads, repeat: int):
    spec = {"host": host, "model": info, "rows": rows, "valid_rows": valid_rows,
            "threads": threads}
    runs: dict[str, list] = {"pred_leaf": [], "importance": []}
    for _ in range(repeat):
        for kind in runs:
            runs[kind].append(run_child(__file__, {**spec, "kind": kind}))

    def med(kind, field="seconds"):
        return median(r[field] for r in runs[kind])

    out = {
        "trees": info["trees"], "valid_rows": valid_rows,
        "importance_seconds": round(med("importance"), 3),
        "pred_leaf_seconds": round(med("pred_leaf"), 3),
        "ratio_to_pred_leaf": round(med("importance") / med("pred_leaf"), 2),
        "importance_cpu_seconds": round(med("importance", "cpu_seconds"), 3),
        "pred_leaf_cpu_seconds": round(med("pred_leaf", "cpu_seconds"), 3),
        "cpu_ratio_to_pred_leaf": round(
            med("importance", "cpu_seconds") / med("pred_leaf", "cpu_seconds"), 2),
        "peak_extra_mb": round(med("importance", "peak_extra_bytes") / MB, 1),
        "pred_leaf_peak_extra_mb": round(med("pred_leaf", "peak_extra_bytes") / MB, 1),
        "input_mb": round(runs["importance"][0]["input_bytes"] / MB, 1),
        "load_1min_before": [round(r["load_1min_before"], 2)
                             for rs in runs.values() for r in rs],
    }
    if host == "xgboost":
        out["pred_leaf_dmatrix_seconds"] = round(med("pred_leaf", "dmatrix_seconds"), 3)
    print(f"{host} trees={info['trees']} valid={valid_rows}: importance "
          f"{out['importance_seconds']:.2f} s, pred_leaf {out['pred_leaf_seconds']:.2f} s "
          f"({out['ratio_to_pred_leaf']}x), peak +{out['peak_extra_mb']:.0f} MB, load "
          f"{out['load_1min_before']}", file=sys.stderr, flush=True)
    return out


def sweep_fits(points: list[dict], x_key: str, scale: float) -> dict[str, Any]:
    x = [p[x_key] / scale for p in points]
    return {
        "importance_seconds": fit_line(x, [p["importance_seconds"] for p in points]),
        "pred_leaf_seconds": fit_line(x, [p["pred_leaf_seconds"] for p in points]),
        "importance_cpu_seconds": fit_line(x, [p["importance_cpu_seconds"] for p in points]),
        "pred_leaf_cpu_seconds": fit_line(x, [p["pred_leaf_cpu_seconds"] for p in points]),
        "peak_extra_mb": fit_line(x, [p["peak_extra_mb"] for p in points]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="training rows")
    parser.add_argument("--valid-rows", type=int, nargs="+",
                        default=[10_000, 100_000, 500_000, 1_000_000, 2_000_000])
    parser.add_argument("--trees-for-rows", type=int, default=100)
    parser.add_argument("--trees", type=int, nargs="+", default=[50, 200, 500, 2000])
    parser.add_argument("--valid-rows-for-trees", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for both sides (default: all cores)")
    parser.add_argument("--host", action="append", choices=HOSTS)
    parser.add_argument("--out", default="scaling.json")
    parser.add_argument("--cache-dir", default=None)
    args = parse_or_run_child(parser, CHILDREN)
    if args is None:  # this process was a child
        return

    cache = cache_dir(args.cache_dir)
    out: dict[str, Any] = {
        "rows_train": args.rows, "repeat": args.repeat,
        "threads": args.threads or "all cores (library n_jobs=None, host default)",
        "call": "uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, "
                "random_state=0)",
        "baseline": "host predict(X, pred_leaf=True) on X_train then X_valid, same run",
        "fit_note": "least squares seconds = intercept + slope * x; x in millions of held-out "
                    "rows (rows sweep) or hundreds of trees (trees sweep)",
        "memory_note": "peak resident set during the call minus resident set just before it",
        "machine": machine(),
    }
    for host in args.host or list(HOSTS):
        rows_sweep, trees_sweep = [], []
        info = train_model(cache, host, args.rows, args.trees_for_rows)
        for v in args.valid_rows:
            rows_sweep.append(run_point(host, info, args.rows, v, args.threads, args.repeat))
        for t in args.trees:
            info = train_model(cache, host, args.rows, t)
            trees_sweep.append(run_point(host, info, args.rows, args.valid_rows_for_trees,
                                         args.threads, args.repeat))
        out[host] = {
            "rows_sweep": {"trees": args.trees_for_rows, "points": rows_sweep,
                           "fit_per_million_valid_rows": sweep_fits(rows_sweep, "valid_rows",
                                                                    1e6)},
            "trees_sweep": {"valid_rows": args.valid_rows_for_trees, "points": trees_sweep,
                            "fit_per_100_trees": sweep_fits(trees_sweep, "trees", 100)},
        }
    path = write_results(args.out, out)
    print(json.dumps({h: {s: out[h][s][f] for s, f in
                          (("rows_sweep", "fit_per_million_valid_rows"),
                           ("trees_sweep", "fit_per_100_trees"))}
                      for h in args.host or list(HOSTS)}, indent=1))
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
