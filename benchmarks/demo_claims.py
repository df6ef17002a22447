"""How often each claim the demo prints holds: the demo's computation over 100 seeds.

    python benchmarks/demo_claims.py [--seeds 100] [--hosts lightgbm xgboost]

Runs ``unbiased_criteria.demo.demo_run`` (what ``unbiased-criteria demo --seed S`` prints)
for seeds 0..N-1 and reports, per host and claim, the share of seeds where it holds, plus
the mean table and the seconds per seed. The demo prints only claims that hold in at least
95% of the seeds (``CLAIMS``); ``UNPRINTED_CLAIMS`` are measured to show what does
not hold. Results go to ``benchmarks/results/demo_claims.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from _common import machine, write_results

from unbiased_criteria.demo import CLAIMS, DEMO_SETTINGS, UNPRINTED_CLAIMS, demo_run


def run_host(host: str, seeds: int) -> dict:
    held = {key: [] for key in {**CLAIMS, **UNPRINTED_CLAIMS}}
    tables = []
    t0 = time.perf_counter()
    for seed in range(seeds):
        run = demo_run(host, seed)
        for key, ok in run.claims.items():
            held[key].append(ok)
        tables.append(run.table)
        if (seed + 1) % 10 == 0:
            print(f"{host}: {seed + 1} seeds, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    seconds = time.perf_counter() - t0
    mean = sum(tables) / len(tables)
    return {
        "seeds": seeds,
        "seconds_per_seed": round(seconds / seeds, 3),
        "claim_share": {key: float(np.mean(v)) for key, v in held.items()},
        "claim_failed_seeds": {key: [s for s, ok in enumerate(v) if not ok]
                               for key, v in held.items()},
        "mean": {name: {f: round(float(x), 4) for f, x in mean[col].items()}
                 for name, col in [("host_gain_share", "host gain share"),
                                   ("unbiased_gain", "unbiased gain"), ("std_error", "± SE")]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--hosts", nargs="+", default=["lightgbm", "xgboost"])
    args = parser.parse_args()
    out = {"settings": DEMO_SETTINGS, "claims": CLAIMS, "unprinted_claims": UNPRINTED_CLAIMS,
           "hosts": {host: run_host(host, args.seeds) for host in args.hosts},
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "machine": machine()}
    path = write_results("demo_claims.json", out)
    print(json.dumps(out["hosts"], indent=2, ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
