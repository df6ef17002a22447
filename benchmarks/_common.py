"""Shared pieces of the host-model benchmarks (``posthoc_speed.py``, ``prune.py``).

* Synthetic regression data, regenerated from a seed in every process (no data files).
* The 500-tree LightGBM (63 leaves) and XGBoost (depth 6) models, trained once per size and
  cached as files in a temporary directory (keyed by every parameter and the host versions).
* Measurements in a fresh subprocess each: the child rebuilds data and model, resets the peak
  resident set (``/proc/self/clear_refs``), runs one timed operation and reports wall time,
  resident memory before it and the peak during it as one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
N_FEATURES = 20
SEEDS = {"train": 0, "valid": 1, "test": 2}
LIGHTGBM_PARAMS = {
    "objective": "regression", "num_leaves": 63, "learning_rate": 0.1, "seed": 0,
    "deterministic": True, "verbose": -1,
}
XGBOOST_PARAMS = {
    "objective": "reg:squarederror", "max_depth": 6, "eta": 0.1, "tree_method": "hist",
    "seed": 0,
}
HOSTS = ("lightgbm", "xgboost")
MB = 2**20


# ----------------------------------------------------------------------------------- data


def make_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of 20 standard normal features; y depends on x0..x4 only, plus N(0, 1)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, N_FEATURES))
    y = (
        1.0 * X[:, 0]
        + 1.5 * np.sin(2.0 * X[:, 1])
        + 0.5 * X[:, 2] * X[:, 3]
        + 0.8 * (X[:, 4] > 0.5)
        + rng.standard_normal(n)
    )
    return X, y


def data_set(name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    return make_data(n, SEEDS[name])


# --------------------------------------------------------------------------------- models


def _versions() -> dict[str, str]:
    import lightgbm
    import xgboost

    return {"lightgbm": lightgbm.__version__, "xgboost": xgboost.__version__,
            "numpy": np.__version__}


def model_paths(cache: Path, host: str, rows: int, trees: int) -> dict[str, Path]:
    params = LIGHTGBM_PARAMS if host == "lightgbm" else XGBOOST_PARAMS
    key = json.dumps([host, rows, trees, params, SEEDS["train"], _versions()], sort_keys=True)
    stem = f"{host}-{rows}-{trees}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"
    suffix = ".txt" if host == "lightgbm" else ".ubj"
    return {"model": cache / f"{stem}{suffix}", "config": cache / f"{stem}.config.json",
            "info": cache / f"{stem}.info.json"}


def train_model(cache: Path, host: str, rows: int, trees: int) -> dict[str, Any]:
    """Train (or find in ``cache``) the benchmark model; returns its paths and training time."""
    paths = model_paths(cache, host, rows, trees)
    if paths["info"].exists():
        return {**json.loads(paths["info"].read_text()), "cached": True}
    X, y = data_set("train", rows)
    t0 = time.perf_counter()
    if host == "lightgbm":
        import lightgbm as lgb

        booster = lgb.train(LIGHTGBM_PARAMS, lgb.Dataset(X, y), num_boost_round=trees)
        seconds = time.perf_counter() - t0
        booster.save_model(str(paths["model"]))
    else:
        import xgboost as xgb

        booster = xgb.train(XGBOOST_PARAMS, xgb.DMatrix(X, y), num_boost_round=trees)
        seconds = time.perf_counter() - t0
        booster.save_model(str(paths["model"]))
        # a Booster loaded from a file has default training parameters (eta 0.3, lambda 1):
        # keep the configuration to restore them, as the library's writer does
        paths["config"].write_text(booster.save_config())
    info = {"host": host, "rows": rows, "trees": trees, "train_seconds": round(seconds, 2),
            "model": str(paths["model"]), "config": str(paths["config"])}
    paths["info"].write_text(json.dumps(info))
    return {**info, "cached": False}


def load_model(host: str, info: dict[str, Any]):
    if host == "lightgbm":
        import lightgbm as lgb

        return lgb.Booster(model_file=info["model"])
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(info["model"])
    booster.load_config(Path(info["config"]).read_text())
    return booster


def pred_leaf(host: str, booster, X) -> np.ndarray:
    """The host's own leaf ids of every row in every tree (X: array, or DMatrix for XGBoost)."""
    return booster.predict(X, pred_leaf=True)


def predict(host: str, booster, X: np.ndarray) -> np.ndarray:
    if host == "lightgbm":
        return booster.predict(X)
    import xgboost as xgb

    return booster.predict(xgb.DMatrix(X))


def cache_dir(path: str | None) -> Path:
    out = Path(path) if path else Path(tempfile.gettempdir()) / "unbiased-criteria-bench"
    out.mkdir(parents=True, exist_ok=True)
    return out


# ----------------------------------------------------------------------------- children


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Reset the peak resident set to the current one (Linux >= 4.0); False if impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def rss_bytes() -> int:
    kb = _status_kb("VmRSS")
    return 1024 * kb if kb is not None else peak_bytes()


def peak_bytes() -> int:
    kb = _status_kb("VmHWM")
    if kb is None:  # ru_maxrss is in kB on Linux
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return 1024 * kb


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(op: Callable[[], dict | None]) -> dict[str, Any]:
    """Wall time, CPU time and memory of ``op()`` in this process (``op`` may return fields).

    CPU time (all threads) is reported beside wall time because the machine is shared: it
    does not count time spent waiting for a core.
    """
    import gc

    gc.collect()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    before = rss_bytes()
    reset = reset_peak()
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    extra = op() or {}
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    peak = peak_bytes()
    return {"seconds": seconds, "cpu_seconds": cpu, "rss_before_bytes": before,
            "peak_bytes": peak, "peak_extra_bytes": peak - before, "peak_reset": reset,
            "load_1min_before": load, **extra}


def run_child(script: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``script --child SPEC`` in a fresh interpreter; its last stdout line is JSON."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if spec.get("threads"):  # both sides on that many threads: the hosts' OpenMP and ours
        env["OMP_NUM_THREADS"] = str(spec["threads"])
    proc = subprocess.run(
        [sys.executable, script, "--child", json.dumps(spec)], capture_output=True, text=True,
        env=env, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {spec.get('kind')} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_done(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


def parse_or_run_child(parser: argparse.ArgumentParser, children: dict[str, Any]):
    """The parsed command line, or None after running the child that ``--child SPEC`` names
    (:func:`run_child` starts it; ``children[spec["kind"]](spec)`` gives its result)."""
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is None:
        return args
    spec = json.loads(args.child)
    child_done(children[spec["kind"]](spec))
    return None


# ------------------------------------------------------------------------------ summary


def median(values) -> float:
    return float(np.median(np.asarray(list(values), dtype=np.float64)))


def library() -> dict[str, Any]:
    """Which copy of the library ran: its path and git commit.

    To benchmark a fixed commit while the working tree changes, run against a snapshot::

        git archive HEAD unbiased_criteria adapters | tar -x -C /tmp/lib
        ln -s ../adapters /tmp/lib/unbiased_criteria/adapters
        UC_LIBRARY_COMMIT=$(git rev-parse HEAD) PYTHONPATH=/tmp/lib python benchmarks/...
    """
    import unbiased_criteria

    root = Path(unbiased_criteria.__file__).resolve().parent.parent
    out: dict[str, Any] = {"path": str(root)}
    commit = os.environ.get("UC_LIBRARY_COMMIT")
    if commit:
        out.update(commit=commit, snapshot=True)
        return out
    try:
        git = ["git", "-C", str(root)]
        out["commit"] = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True,
                                       text=True, check=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--", "unbiased_criteria",
                                      "adapters"], capture_output=True, text=True,
                               check=True).stdout
        out["uncommitted_library_changes"] = bool(dirty.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return out


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform(), **_versions(), "library": library()}


def write_results(name: str, out: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / name
    path.write_text(json.dumps(out, indent=2) + "\n")
    return path


# ------------------------------------------------------------------- shared measurements


def load_inputs(spec: dict[str, Any]):
    """Model and the train/valid rows of a child's ``spec``."""
    booster = load_model(spec["host"], spec["model"])
    X_train, y_train = data_set("train", spec["rows"])
    X_valid, y_valid = data_set("valid", spec["valid_rows"])
    return booster, X_train, y_train, X_valid, y_valid


def input_bytes(*arrays) -> int:
    return int(sum(a.nbytes for a in arrays))


def child_pred_leaf(spec: dict[str, Any]) -> dict[str, Any]:
    """The baseline: the host's ``pred_leaf`` over the training rows, then the held-out rows.

    XGBoost's DMatrix objects are built before the clock starts (their cost is reported
    separately as ``dmatrix_seconds``); LightGBM reads the numpy arrays directly.
    """
    host = spec["host"]
    booster, X_train, y_train, X_valid, y_valid = load_inputs(spec)
    sets = [X_train, X_valid]
    dmatrix_seconds = 0.0
    if host == "xgboost":
        import xgboost as xgb

        t0 = time.perf_counter()
        sets = [xgb.DMatrix(X) for X in sets]
        dmatrix_seconds = time.perf_counter() - t0

    def op():
        shapes = []
        for X in sets:
            leaves = pred_leaf(host, booster, X)
            shapes.append(list(leaves.shape))
            del leaves
        return {"leaf_array_shapes": shapes}

    out = measure(op)
    out["dmatrix_seconds"] = dmatrix_seconds
    return out
