"""Cost of the unbiased gain of one 255-leaf tree, in bincount passes measured in the same run.

    python benchmarks/core_gain.py [--rows 1000000] [--repeat 7]

The tree is grown leaf-wise on random data (the largest leaf split at a random feature's
median, like a host's leaf-wise grower on noise), 1M training and 1M held-out rows routed
through it. Timed: node sums of the training rows (G, H, counts) plus U with its k-draws over
the held-out rows, as the replay runs it (rows in one random order, ``ranked=True``), with and
without the 20 jackknife blocks, and with a shuffle per call (``ranked=False``). Baseline: one
weighted ``np.bincount`` over the same 2M rows' leaf ids.
Medians of CPU seconds over repeats; the result goes to ``benchmarks/results/core_gain.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from unbiased_criteria.gains import node_sums, unbiased_gain
from unbiased_criteria.trees import make_tree, route_rows

RESULTS = Path(__file__).parent / "results"


def grow_tree(X: np.ndarray, n_leaves: int, rng: np.random.Generator):
    """Leaf-wise tree: split the leaf with most rows at a random feature's median."""
    left, right, feat, thr = [-1], [-1], [-1], [np.nan]
    rows = {0: np.arange(X.shape[0])}
    while len(rows) < n_leaves:
        leaf = max(rows, key=lambda v: rows[v].size)
        idx = rows.pop(leaf)
        f = int(rng.integers(X.shape[1]))
        t = float(np.median(X[idx, f]))
        a, b = len(left), len(left) + 1
        left[leaf], right[leaf], feat[leaf], thr[leaf] = a, b, f, t
        left += [-1, -1]
        right += [-1, -1]
        feat += [-1, -1]
        thr += [np.nan, np.nan]
        go = X[idx, f] <= t
        rows[a], rows[b] = idx[go], idx[~go]
    return make_tree(left, right, feat, thr, np.zeros(len(left)))


def median_time(fn, repeat: int) -> float:
    """Median CPU seconds of ``fn()`` (one thread: on a shared machine, waiting for a core
    inflated wall times, the baseline's most)."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--leaves", type=int, default=255)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    X = rng.standard_normal((2 * n, 8))
    tree = grow_tree(X[:n], args.leaves, rng)
    nodes = route_rows(tree, X).astype(np.int32)
    nodes_train, nodes_valid = nodes[:n], nodes[n:]
    y = rng.standard_normal(2 * n)
    g = (-y).astype(np.float32)  # squared error at F = 0
    h = np.ones(2 * n, dtype=np.float32)
    g_tr, h_tr, g_va, h_va = g[:n], h[:n], g[n:], h[n:]

    blocks = rng.permutation(n) % 20  # the rows are in random order: blocks as the API's

    def gain(ranked=True, jackknife=False):
        sums = node_sums(tree, nodes_train, g_tr, h_tr)
        unbiased_gain(tree, sums.G, nodes_valid, g_va, h_va, rng=rng, ranked=ranked,
                      blocks=blocks if jackknife else None, n_blocks=20 if jackknife else 0)

    def baseline():
        np.bincount(nodes, weights=g, minlength=tree.n_nodes)

    gain()  # warm caches (ancestor matrix)
    t_gain = median_time(gain, args.repeat)
    t_jack = median_time(lambda: gain(jackknife=True), args.repeat)
    t_shuffled = median_time(lambda: gain(ranked=False), args.repeat)
    t_base = median_time(baseline, args.repeat)
    out = {
        "rows_train": n,
        "rows_valid": n,
        "leaves": tree.n_leaves,
        "max_depth": tree.max_depth,
        "seconds_per_tree": round(t_gain, 4),
        "bincount_seconds": round(t_base, 4),
        "bincount_equivalents": round(t_gain / t_base, 2),
        "seconds_per_tree_with_jackknife": round(t_jack, 4),
        "bincount_equivalents_with_jackknife": round(t_jack / t_base, 2),
        "seconds_per_tree_shuffle_per_call": round(t_shuffled, 4),
        "bincount_equivalents_shuffle_per_call": round(t_shuffled / t_base, 2),
        "target_bincount_equivalents": 10,
        "repeat": args.repeat,
        "timing": "median CPU seconds (time.process_time), one thread",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core_gain.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
