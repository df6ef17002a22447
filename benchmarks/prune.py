"""Pruning a 500-tree model (prune_forest + the adapter's writer), in units of pred_leaf.

    python benchmarks/prune.py [--rows 200000] [--valid-rows 1000000] [--test-rows 200000]
                               [--trees 500] [--repeat 3] [--host lightgbm ...]
    python benchmarks/prune.py --rows 20000 --valid-rows 100000 --trees 100   # quick

The models of ``posthoc_speed.py`` (same data, seeds and parameters; shared model cache).
Timed, each in a fresh subprocess: ``prune_forest(model, X_train, y_train, X_valid, y_valid,
random_state=0)`` then ``result.adapter.write_model(model, result.forest)``; baseline, in the
same run: the host's ``predict(X, pred_leaf=True)`` over the same train + held-out rows.
Reported: seconds and ratio, leaves before and after, and the mean squared error of the
original and the pruned model on ``--test-rows`` fresh rows (a third seed, used by nothing
else). Medians over ``--repeat`` interleaved repeats; the result goes to
``benchmarks/results/prune.json``.
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
    data_set,
    input_bytes,
    load_inputs,
    machine,
    measure,
    median,
    parse_or_run_child,
    predict,
    run_child,
    train_model,
    write_results,
)


def child_prune(spec: dict[str, Any]) -> dict[str, Any]:
    import time

    from unbiased_criteria.api import adapter_for, prune_forest

    host = spec["host"]
    booster, X_train, y_train, X_valid, y_valid = load_inputs(spec)
    leaves_in = [t.n_leaves for t in adapter_for(booster).read_model(booster).forest.trees]
    new = {}

    def op():
        t0 = time.perf_counter()
        result = prune_forest(booster, X_train, y_train, X_valid, y_valid, random_state=0)
        t1 = time.perf_counter()
        new["model"] = result.adapter.write_model(booster, result.forest)
        t2 = time.perf_counter()
        leaves_out = [t.n_leaves for t in result.forest.trees]
        return {
            "prune_forest_seconds": t1 - t0,
            "write_seconds": t2 - t1,
            "leaves_before": int(result.leaves_before),
            "leaves_after": int(result.leaves_after),
            "trees_changed": int(sum(a != b for a, b in zip(leaves_in, leaves_out))),
            "single_leaf_trees_after": int(sum(n == 1 for n in leaves_out)),
        }

    out = measure(op)
    out["input_bytes"] = input_bytes(X_train, y_train, X_valid, y_valid)
    X_test, y_test = data_set("test", spec["test_rows"])
    for name, model in (("before", booster), ("after", new["model"])):
        pred = np.asarray(predict(host, model, X_test), dtype=np.float64)
        out[f"test_mse_{name}"] = float(np.mean((pred - y_test) ** 2))
    return out


CHILDREN = {"pred_leaf": child_pred_leaf, "prune": child_prune}


def summarise(host: str, runs: dict[str, list[dict]], info: dict) -> dict[str, Any]:
    def med(kind, field="seconds"):
        return median(r[field] for r in runs[kind])

    base, total = med("pred_leaf"), med("prune")
    first = runs["prune"][0]
    deterministic = all(
        r[f] == first[f] for r in runs["prune"]
        for f in ("leaves_after", "test_mse_after")
    )
    out: dict[str, Any] = {
        "model_train_seconds": info["train_seconds"],
        "pred_leaf_seconds": round(base, 3),
        "prune_seconds": round(total, 3),
        "prune_forest_seconds": round(med("prune", "prune_forest_seconds"), 3),
        "write_seconds": round(med("prune", "write_seconds"), 3),
        "ratio_to_pred_leaf": round(total / base, 2),
        "ratio_to_pred_leaf_per_repeat": [
            round(a["seconds"] / b["seconds"], 2) for a, b in zip(runs["prune"], runs["pred_leaf"])
        ],
        "cpu_seconds": {
            "pred_leaf": round(med("pred_leaf", "cpu_seconds"), 3),
            "prune": round(med("prune", "cpu_seconds"), 3),
            "ratio_to_pred_leaf": round(
                med("prune", "cpu_seconds") / med("pred_leaf", "cpu_seconds"), 2),
        },
        "leaves_before": first["leaves_before"],
        "leaves_after": first["leaves_after"],
        "leaves_kept_share": round(first["leaves_after"] / first["leaves_before"], 4),
        "trees_changed": first["trees_changed"],
        "single_leaf_trees_after": first["single_leaf_trees_after"],
        "test_mse_before": round(first["test_mse_before"], 6),
        "test_mse_after": round(first["test_mse_after"], 6),
        "test_mse_change_pct": round(
            100 * (first["test_mse_after"] / first["test_mse_before"] - 1), 3),
        "same_result_every_repeat": deterministic,
        "memory": {
            "input_mb": round(first["input_bytes"] / MB, 1),
            "peak_extra_mb": round(med("prune", "peak_extra_bytes") / MB, 1),
            "pred_leaf_peak_extra_mb": round(med("pred_leaf", "peak_extra_bytes") / MB, 1),
        },
    }
    if host == "xgboost":
        dm = med("pred_leaf", "dmatrix_seconds")
        out["baseline_dmatrix_seconds"] = round(dm, 3)
        out["ratio_to_dmatrix_plus_pred_leaf"] = round(total / (base + dm), 2)
    out["seconds_all_repeats"] = {k: [round(r["seconds"], 3) for r in v] for k, v in runs.items()}
    out["load_1min_before_all_repeats"] = {
        k: [round(r["load_1min_before"], 2) for r in v] for k, v in runs.items()
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="training rows")
    parser.add_argument("--valid-rows", type=int, default=1_000_000, help="held-out rows")
    parser.add_argument("--test-rows", type=int, default=200_000, help="rows for the test MSE")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--host", action="append", choices=HOSTS,
                        help="host(s) to run (default: both)")
    parser.add_argument("--out", default=None, help="results file name in benchmarks/results")
    parser.add_argument("--cache-dir", default=None, help="where trained models are kept")
    args = parse_or_run_child(parser, CHILDREN)
    if args is None:  # this process was a child
        return

    hosts = args.host or list(HOSTS)
    cache = cache_dir(args.cache_dir)
    infos = {host: train_model(cache, host, args.rows, args.trees) for host in hosts}
    kinds = ("pred_leaf", "prune")
    runs = {h: {k: [] for k in kinds} for h in hosts}
    for rep in range(args.repeat):
        for host in hosts:
            for kind in kinds:
                spec = {"rows": args.rows, "valid_rows": args.valid_rows,
                        "test_rows": args.test_rows, "host": host, "model": infos[host],
                        "kind": kind}
                res = run_child(__file__, spec)
                runs[host][kind].append(res)
                print(f"repeat {rep} {host} {kind}: {res['seconds']:.2f} s", file=sys.stderr,
                      flush=True)
    out: dict[str, Any] = {
        "rows_train": args.rows,
        "rows_valid": args.valid_rows,
        "rows_test": args.test_rows,
        "trees": args.trees,
        "repeat": args.repeat,
        "call": "prune_forest(model, X_train, y_train, X_valid, y_valid, random_state=0) "
                "+ adapter.write_model(model, forest)",
        "baseline": "host predict(X, pred_leaf=True) on X_train then X_valid, same run",
        "machine": machine(),
    }
    for host in hosts:
        out[host] = summarise(host, runs[host], infos[host])
    path = write_results(args.out or "prune.json", out)
    print(json.dumps(out, indent=2))
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
