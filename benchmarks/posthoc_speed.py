"""Post-hoc unbiased importance of a 500-tree model, in units of the host's own pred_leaf.

    python benchmarks/posthoc_speed.py [--rows 200000] [--valid-rows 1000000] [--trees 500]
                                       [--repeat 3] [--shap-rows 10000] [--host lightgbm ...]
    python benchmarks/posthoc_speed.py --rows 20000 --valid-rows 100000 --trees 100  # quick
    python benchmarks/posthoc_speed.py --profile     # cProfile of one full run per host
    python benchmarks/posthoc_speed.py --threads 1   # both sides on one thread

Models: LightGBM (num_leaves=63) and XGBoost (max_depth=6, hist), ``--trees`` rounds each,
learning rate 0.1, trained on ``--rows`` synthetic regression rows (20 standard normal
features, y from x0..x4 plus N(0, 1) noise; fixed seeds). Timed, each in a fresh subprocess:

* ``uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, random_state=0)``
  (default jackknife, ``n_blocks=20``) and the same with ``n_blocks=0``;
* the baseline, measured in the same run: the host's ``predict(X, pred_leaf=True)`` over the
  same rows (train, then valid; for XGBoost on DMatrix objects built beforehand, whose cost
  is reported apart);
* shap's ``TreeExplainer(model).shap_values`` on the first ``--shap-rows`` held-out rows,
  compared per row (if shap is installed).

The library, the host and the host's adapter module are imported before the clock starts.
Memory: the child's peak resident set during the call minus its resident set just before
(which already holds the input arrays, reported apart as ``input_mb``). Medians over
``--repeat`` interleaved repeats; the result goes to ``benchmarks/results/posthoc_speed.json``
(``--profile``: ``benchmarks/results/posthoc_profile.txt``).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import pstats
import sys
import time
from typing import Any

from _common import (
    HOSTS,
    LIGHTGBM_PARAMS,
    MB,
    RESULTS,
    XGBOOST_PARAMS,
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

MEMORY_TARGET_MB = 1024
RATIO_TARGET = 1.5


# ------------------------------------------------------------------------------ children


def child_importance(spec: dict[str, Any]) -> dict[str, Any]:
    import unbiased_criteria as uc
    from unbiased_criteria.api import adapter_for

    booster, X_train, y_train, X_valid, y_valid = load_inputs(spec)
    # the host's adapter is imported on first use: imported before the clock, as the library
    # and the host are (a one-time cost per process, not per call; without cached bytecode,
    # PYTHONDONTWRITEBYTECODE, it took 0.03 s of the call)
    adapter_for(booster)

    def op():
        report = uc.unbiased_importance(
            booster, X_train, y_train, X_valid, y_valid, random_state=0,
            n_blocks=spec["n_blocks"], n_jobs=spec.get("threads"),
        )
        return {"n_splits": len(report.splits)}

    out = measure(op)
    out["input_bytes"] = input_bytes(X_train, y_train, X_valid, y_valid)
    return out


def child_shap(spec: dict[str, Any]) -> dict[str, Any]:
    import shap

    booster, _, _, X_valid, _ = load_inputs(spec)
    X = X_valid[: spec["shap_rows"]]
    t0 = time.perf_counter()
    explainer = shap.TreeExplainer(booster)
    setup = time.perf_counter() - t0

    def op():
        values = explainer.shap_values(X)
        return {"shape": list(values.shape)}

    out = measure(op)
    out["explainer_seconds"] = setup
    out["rows"] = int(X.shape[0])
    return out


def _entries(st, file_part: str, name: str):
    return [v for k, v in st.items() if file_part in k[0] and k[2] == name]


def _cum(st, file_part: str, name: str, how=max) -> float:
    """Cumulative time of function ``name`` in a file matching ``file_part`` (0 if absent)."""
    found = [v[3] for v in _entries(st, file_part, name)]
    return float(how(found)) if found else 0.0


def breakdown(stats: pstats.Stats, host: str) -> dict[str, float]:
    """Seconds by stage, from the cumulative times of the library's functions."""
    st = stats.stats
    adapter = f"adapters/{host}"  # module (adapters/lightgbm.py) or package
    total = _cum(st, "unbiased_criteria/api.py", "unbiased_importance")
    prepare = _cum(st, "unbiased_criteria/api.py", "_prepare")
    read = _cum(st, adapter, "read_model")
    leaf_nodes = _cum(st, adapter, "leaf_nodes")
    if host == "lightgbm":
        host_predict = _cum(st, "lightgbm/basic.py", "predict")  # Booster.predict (outermost)
        host_slice = 0.0
    else:
        host_predict = _cum(st, "xgboost/core.py", "predict")
        host_slice = _cum(st, "xgboost/core.py", "__getitem__")  # bst[it0:it1] per chunk
    replay_total = _cum(st, "unbiased_criteria/replay.py", "replay")
    visit = _cum(st, "unbiased_criteria/api.py", "visit")
    grad = _cum(st, "unbiased_criteria/replay.py", "_grad_hess")
    score = _cum(st, "unbiased_criteria/importance.py", "score_tree")
    draws = _cum(st, "unbiased_criteria/gains.py", "first_k_sums")
    node_sums = _cum(st, "unbiased_criteria/trees.py", "node_sums", how=sum)
    return {
        "total": total,
        "setup (_prepare: read_model, make_router, labels, init score)": prepare,
        "  of which read_model": read,
        "host pred_leaf (Booster.predict)": host_predict,
        "host Booster slicing (bst[it0:it1])": host_slice,
        "router post-processing (reshape, offsets, int32, node maps)":
            leaf_nodes - host_predict - host_slice,
        "replay: gradients (_grad_hess)": grad,
        "replay: raw-score updates, bookkeeping": replay_total - leaf_nodes - visit - grad,
        "gains: first_k_sums (k-draws' cuts, cells, sums with blocks)": draws,
        "gains: node_sums (bincount + ancestors @)": node_sums,
        "gains: rest of score_tree (bins, B, U, combine)": score - draws - node_sums,
        "split records (visit minus score_tree)": visit - score,
        "report (after replay)": total - prepare - replay_total,
    }


def child_profile(spec: dict[str, Any]) -> dict[str, Any]:
    import unbiased_criteria as uc
    from unbiased_criteria.api import adapter_for

    booster, X_train, y_train, X_valid, y_valid = load_inputs(spec)
    adapter_for(booster)  # imported before the clock, as in child_importance
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    # one thread: cProfile sees only the calling thread
    uc.unbiased_importance(booster, X_train, y_train, X_valid, y_valid, random_state=0,
                           n_blocks=spec["n_blocks"], n_jobs=1)
    prof.disable()
    wall = time.perf_counter() - t0
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(15)
    table = buf.getvalue()
    table = table[table.index("   ncalls"):] if "   ncalls" in table else table
    return {"wall_seconds": wall, "table": table.rstrip(),
            "breakdown": breakdown(stats, spec["host"])}


CHILDREN = {
    "pred_leaf": child_pred_leaf,
    "importance": child_importance,
    "shap": child_shap,
    "profile": child_profile,
}


# -------------------------------------------------------------------------------- parent


def summarise(host: str, runs: dict[str, list[dict]], args, info: dict) -> dict[str, Any]:
    def med(kind, field="seconds"):
        if not runs.get(kind):  # not run (--no-noblocks)
            return float("nan")
        return median(r[field] for r in runs[kind])

    n_rows = args.rows + args.valid_rows
    base = med("pred_leaf")
    full, nojack = med("importance"), med("importance_noblocks")
    out: dict[str, Any] = {
        "model": {"trees": args.trees, "train_seconds": info["train_seconds"],
                  "params": LIGHTGBM_PARAMS if host == "lightgbm" else XGBOOST_PARAMS},
        "pred_leaf_seconds": round(base, 3),
        "importance_seconds": round(full, 3),
        "ratio_to_pred_leaf": round(full / base, 2),
        "importance_no_jackknife_seconds": round(nojack, 3),
        "ratio_to_pred_leaf_no_jackknife": round(nojack / base, 2),
        "jackknife_seconds": round(full - nojack, 3),
        "target_ratio_to_pred_leaf": RATIO_TARGET,
        "ratio_target_met": full / base <= RATIO_TARGET,
        "n_splits": runs["importance"][0]["n_splits"],
        "cpu_seconds": {
            "pred_leaf": round(med("pred_leaf", "cpu_seconds"), 3),
            "importance": round(med("importance", "cpu_seconds"), 3),
            "importance_no_jackknife": round(med("importance_noblocks", "cpu_seconds"), 3),
            "ratio_to_pred_leaf": round(
                med("importance", "cpu_seconds") / med("pred_leaf", "cpu_seconds"), 2),
            "ratio_to_pred_leaf_no_jackknife": round(
                med("importance_noblocks", "cpu_seconds") / med("pred_leaf", "cpu_seconds"), 2),
        },
        "ratio_to_pred_leaf_per_repeat": [
            round(a["seconds"] / b["seconds"], 2)
            for a, b in zip(runs["importance"], runs["pred_leaf"])
        ],
    }
    if host == "xgboost":
        dm = med("pred_leaf", "dmatrix_seconds")
        out["baseline_dmatrix_seconds"] = round(dm, 3)
        out["ratio_to_dmatrix_plus_pred_leaf"] = round(full / (base + dm), 2)
    input_mb = runs["importance"][0]["input_bytes"] / MB
    peak_extra = med("importance", "peak_extra_bytes") / MB
    out["memory"] = {
        "input_mb": round(input_mb, 1),
        "rss_before_call_mb": round(med("importance", "rss_before_bytes") / MB, 1),
        "peak_extra_mb": round(peak_extra, 1),
        "peak_extra_mb_no_jackknife": round(med("importance_noblocks", "peak_extra_bytes") / MB,
                                            1),
        "peak_mb": round(med("importance", "peak_bytes") / MB, 1),
        "target_peak_extra_mb": MEMORY_TARGET_MB,
        "target_met": peak_extra <= MEMORY_TARGET_MB,
        "pred_leaf_peak_extra_mb": round(med("pred_leaf", "peak_extra_bytes") / MB, 1),
        "peak_reset": all(r["peak_reset"] for rs in runs.values() for r in rs),
    }
    if runs.get("shap"):
        shap_rows = runs["shap"][0]["rows"]
        shap_per_row = med("shap") / shap_rows
        ours_per_row = full / n_rows
        out["shap"] = {
            "rows": shap_rows,
            "shap_values_seconds": round(med("shap"), 3),
            "shap_values_cpu_seconds": round(med("shap", "cpu_seconds"), 3),
            "explainer_setup_seconds": round(med("shap", "explainer_seconds"), 3),
            "shap_us_per_row": round(1e6 * shap_per_row, 2),
            "importance_us_per_row": round(1e6 * ours_per_row, 2),
            "importance_us_per_row_no_jackknife": round(1e6 * nojack / n_rows, 2),
            "per_row_ratio_importance_to_shap": round(ours_per_row / shap_per_row, 4),
            "shap_to_importance_per_row": round(shap_per_row / ours_per_row, 1),
        }
    if not runs.get("importance_noblocks"):  # --no-noblocks: no NaN fields
        for part in (out, out["cpu_seconds"], out["memory"], out.get("shap", {})):
            for key in [k for k in part if "no_jackknife" in k or k == "jackknife_seconds"]:
                del part[key]
    out["seconds_all_repeats"] = {k: [round(r["seconds"], 3) for r in v] for k, v in runs.items()}
    out["cpu_seconds_all_repeats"] = {k: [round(r["cpu_seconds"], 3) for r in v]
                                      for k, v in runs.items()}
    out["load_1min_before_all_repeats"] = {
        k: [round(r["load_1min_before"], 2) for r in v] for k, v in runs.items()
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="training rows")
    parser.add_argument("--valid-rows", type=int, default=1_000_000, help="held-out rows")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shap-rows", type=int, default=10_000)
    parser.add_argument("--no-shap", action="store_true")
    parser.add_argument("--no-noblocks", action="store_true",
                        help="skip the run without jackknife (n_blocks=0)")
    parser.add_argument("--host", action="append", choices=HOSTS,
                        help="host(s) to run (default: both)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for both sides (OMP_NUM_THREADS for the host, n_jobs "
                             "for the library); default: all cores")
    parser.add_argument("--profile", action="store_true",
                        help="profile one run per host instead of timing")
    parser.add_argument("--out", default=None, help="results file name in benchmarks/results")
    parser.add_argument("--cache-dir", default=None, help="where trained models are kept")
    args = parse_or_run_child(parser, CHILDREN)
    if args is None:  # this process was a child
        return

    hosts = args.host or list(HOSTS)
    cache = cache_dir(args.cache_dir)
    have_shap = importlib.util.find_spec("shap") is not None and not args.no_shap
    infos = {}
    for host in hosts:
        infos[host] = train_model(cache, host, args.rows, args.trees)
        print(f"{host}: model {'cached' if infos[host]['cached'] else 'trained'} "
              f"({infos[host]['train_seconds']} s)", file=sys.stderr)
    base_spec = {"rows": args.rows, "valid_rows": args.valid_rows, "shap_rows": args.shap_rows,
                 "threads": args.threads}

    if args.profile:
        parts = []
        for host in hosts:
            spec = {**base_spec, "host": host, "model": infos[host], "kind": "profile",
                    "n_blocks": 20}
            res = run_child(__file__, spec)
            total = res["breakdown"]["total"]
            lines = [f"== {host}: unbiased_importance, {args.rows} train + {args.valid_rows} "
                     f"held-out rows, {args.trees} trees, n_blocks=20; wall under cProfile "
                     f"{res['wall_seconds']:.1f} s", "", res["table"], "",
                     "where the time goes (cumulative seconds, share of the call):"]
            lines += [f"  {k:<62} {v:8.2f} s {100 * v / total:5.1f}%"
                      for k, v in res["breakdown"].items()]
            parts.append("\n".join(lines))
            print(parts[-1], flush=True)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / (args.out or "posthoc_profile.txt")).write_text("\n\n".join(parts) + "\n")
        return

    kinds = [("pred_leaf", {}), ("importance", {"n_blocks": 20})]
    if not args.no_noblocks:
        kinds.append(("importance_noblocks", {"n_blocks": 0}))
    if have_shap:
        kinds.append(("shap", {}))
    runs: dict[str, dict[str, list]] = {h: {k: [] for k, _ in kinds} for h in hosts}
    for rep in range(args.repeat):
        for host in hosts:  # interleaved: drift on a shared machine hits every kind alike
            for kind, extra in kinds:
                spec = {**base_spec, "host": host, "model": infos[host],
                        "kind": kind.split("_noblocks")[0], **extra}
                res = run_child(__file__, spec)
                runs[host][kind].append(res)
                print(f"repeat {rep} {host} {kind}: {res['seconds']:.2f} s, peak +"
                      f"{res['peak_extra_bytes'] / MB:.0f} MB", file=sys.stderr, flush=True)

    out: dict[str, Any] = {
        "rows_train": args.rows,
        "rows_valid": args.valid_rows,
        "features": 20,
        "trees": args.trees,
        "repeat": args.repeat,
        "threads": args.threads or "all cores (library n_jobs=None, host default)",
        "call": "uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid, "
                "random_state=0[, n_blocks=0])",
        "baseline": "host predict(X, pred_leaf=True) on X_train then X_valid, same run",
        "timing_note": "wall seconds are medians over repeats on a shared 2-core machine; "
                       "cpu_seconds (user + system, all threads) do not count waiting for a "
                       "core",
        "memory_note": "peak resident set during the call minus resident set just before it "
                       "(input arrays already resident), one fresh subprocess per measurement",
        "machine": machine(),
    }
    if not have_shap:
        out["shap"] = ("skipped: --no-shap" if args.no_shap
                       else "skipped: shap is not installed")
    for host in hosts:
        out[host] = summarise(host, runs[host], args, infos[host])
    path = write_results(args.out or "posthoc_speed.json", out)
    print(json.dumps(out, indent=2))
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
