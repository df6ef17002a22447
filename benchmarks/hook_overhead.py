"""Wall time of the training hooks against the hosts' own training, measured in the same run.

    python benchmarks/hook_overhead.py [--rows 100000] [--features 50] [--rounds 300]
                                       [--repeat 3] [--hosts lightgbm xgboost]

Synthetic regression (a few informative features + noise), 31 leaves (LightGBM
``num_leaves=31``; XGBoost ``max_leaves=31, grow_policy=lossguide``), learning rate 0.05, both
hosts on one thread (the machines here are shared: threads contend). Timed, medians over
interleaved repeats, wall and CPU seconds: the host's ``train``; the hook with pruning off
and no held-out rows (the cost of driving the host round by round from our own scores); the
hook as users run it (the defaults: half the rows held out, re-drawn each round, pruning at
``U <= 0``). Ratios to the host's time; results to ``benchmarks/results/hook_overhead.json``
(``--out``). CPU seconds are the steadier figure on a shared machine (waiting for a core
does not count); the load average is recorded before each timed call.

For context (not a target), the host's ``train`` is also timed with its own row sampling at
the fraction the hook fits on (LightGBM ``bagging_fraction=0.5, bagging_freq=1``, XGBoost
``subsample=0.5``): neither host gets faster by half when it draws half the rows per tree
(XGBoost's CPU ``hist`` zeroes the unsampled rows' gradients, as the hook zeroes the held-out
rows'; LightGBM builds its histograms from the bag's scattered row indices).
``hook_ratio_to_host_sampled`` is the hook as used against that.

Each hook's CPU time is also split into the host's own work inside it (LightGBM: building
the Dataset and the iterations from the given gradients; XGBoost: the throwaway round that
finds the intercept and the iterations) and the rest (ours: gradients, reading each new
tree, the leaves, scoring, pruning, writing the model), by timing the adapters' calls into
the host: ``host_side_ratio`` and ``ours_ratio`` add up to the hook's CPU ratio. The host's
part is a floor no change of ours can lower.

The floors are also measured on their own (``floor_ratio``), by loops that use no code of
this library: the host fed numpy gradients round by round through the same calls the hook
makes (``fed``: squared-error gradients at the host's own scores, read back every round; the
least any hook driving the host can do), and the same with the defaults' held-out rows
(half, a fresh ``Generator.choice`` every round) given zero gradient and hessian and each new
tree read back from the host as JSON (``fed_held_read``: what any hook that scores the new
tree on held-out rows must do before it scores anything). ``budget_left`` is the target
minus that floor: what is left for everything else (gradients of other objectives, the
leaves, scoring, pruning, bookkeeping).

A third loop, ``fed_held_passes``, adds to ``fed_held_read`` the passes over rows that
scoring the new tree needs, each one numpy call, with every table they use made once outside
the loop (no per-tree work, no Python beyond the calls: :func:`_row_passes`). They are the
fewest we found: the training rows' leaves from the change of the host's scores (a
subtraction, a cell index, a table gather and the correction where a row passed a midpoint
inside its cell, the check that each row's change is its leaf's value), the fit rows' sums
(two bincounts over every row: held-out rows add 0), the held-out rows' leaves, gradients
and jackknife blocks gathered in their random order, the k-draws' (bin, leaf) keys, their
counts, each row's cell and block, two bincounts over the cells, and the running scores'
update. ``budget_after_passes`` is the target minus that floor: what any numpy
implementation has left for all its per-tree work that is not a pass over rows (reading the
tree into arrays, finding the draws' cuts, combining the sums into ``U``, pruning, recording
the splits).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from unbiased_criteria.boosting import HoldoutPlan

RESULTS = Path(__file__).parent / "results"


def data(n: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3] + rng.standard_normal(n)
    return X, y


class HostClock:
    """CPU seconds spent inside the wrapped host calls (``attribute`` of each module)."""

    def __init__(self, *targets: tuple[object, str]) -> None:
        self.seconds = 0.0
        for module, attribute in targets:
            setattr(module, attribute, self._timed(getattr(module, attribute)))

    def _timed(self, call):
        def timed(*args, **kwargs):
            c0 = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds += time.process_time() - c0
        return timed


def interleaved(fns: dict, repeat: int, clock: HostClock) -> dict:
    """Wall and CPU seconds of each function, medians over ``repeat`` rounds that run every
    function once in turn (drift on a shared machine hits all alike), the CPU seconds spent
    in the host's calls inside each (``clock``), and the load average."""
    wall: dict[str, list] = {k: [] for k in fns}
    cpu: dict[str, list] = {k: [] for k in fns}
    host_side: dict[str, list] = {k: [] for k in fns}
    load = []
    for _ in range(repeat):
        for name, fn in fns.items():
            load.append(os.getloadavg()[0])
            clock.seconds = 0.0
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            host_side[name].append(clock.seconds)
    return {"seconds": {k: float(np.median(v)) for k, v in wall.items()},
            "cpu_seconds": {k: float(np.median(v)) for k, v in cpu.items()},
            "host_side_cpu_seconds": {k: float(np.median(v)) for k, v in host_side.items()
                                      if k.startswith("hook")},
            "load_1min": [round(x, 2) for x in load]}


def bench_lightgbm(X, y, rounds, repeat):
    import lightgbm as lgb
    from unbiased_criteria.adapters import lightgbm as ul
    from unbiased_criteria.adapters.lightgbm import compat, grower, training

    clock = HostClock((training, "construct"), (grower, "boost_one_iteration"))

    params = {"objective": "regression", "num_leaves": 31, "learning_rate": 0.05,
              "verbose": -1, "seed": 0, "num_threads": 1}

    def host():
        lgb.train(params, lgb.Dataset(X, y), rounds)

    def host_sampled():  # LightGBM's own bagging of the same fraction, re-drawn every round
        fraction = 1.0 - HoldoutPlan().fraction
        lgb.train({**params, "bagging_fraction": fraction, "bagging_freq": 1},
                  lgb.Dataset(X, y), rounds)

    def hook_plain():
        ul.train(params, lgb.Dataset(X, y), rounds, holdout_fraction=0.0,
                 prune_threshold=None)

    def hook():
        ul.train(params, lgb.Dataset(X, y), rounds, random_state=0)

    def fed_host(start: float):  # a fresh growing Booster and its calls, as the hook's
        ds = lgb.Dataset(X, y, init_score=np.full(y.size, start), params=params)
        booster = lgb.Booster({**params, "objective": "none"}, ds)
        return (lambda: compat.train_scores(booster),
                lambda it, g, h: compat.boost_one_iteration(booster, g, h),
                lambda it: _lightgbm_leaf_values(
                    booster.dump_model(start_iteration=it, num_iteration=1)))

    return interleaved(_modes(host, host_sampled, hook_plain, hook, fed_host, y, rounds),
                       repeat, clock)


def bench_xgboost(X, y, rounds, repeat):
    import xgboost as xgb
    from unbiased_criteria.adapters import xgboost as ux
    from unbiased_criteria.adapters.xgboost import compat, grower, training

    clock = HostClock((training, "_host_intercept"), (grower, "boost_one_iteration"))

    params = {"objective": "reg:squarederror", "max_leaves": 31, "grow_policy": "lossguide",
              "max_depth": 0, "eta": 0.05, "seed": 0, "nthread": 1}
    d = xgb.DMatrix(X, y)
    xgb.train(params, d, 1)  # the DMatrix's histogram index, built once outside every clock

    def host():
        xgb.train(params, d, rounds)

    def host_sampled():  # XGBoost's own subsample of the same fraction (drawn every round)
        xgb.train({**params, "subsample": 1.0 - HoldoutPlan().fraction}, d, rounds)

    def hook_plain():
        ux.train(params, d, rounds, holdout_fraction=0.0, prune_threshold=None,
                 verbose_eval=False)

    def hook():
        ux.train(params, d, rounds, random_state=0, verbose_eval=False)

    def fed_host(start: float):  # a fresh growing Booster and its calls, as the hook's
        booster = xgb.Booster(params, [d])
        booster.set_param({"base_score": str(start)})
        return (lambda: booster.predict(d, output_margin=True),
                lambda it, g, h: compat.boost_one_iteration(booster, d, it, g, h),
                lambda it: _xgboost_leaf_values(
                    json.loads(booster[it:it + 1].save_raw("json"))))

    return interleaved(_modes(host, host_sampled, hook_plain, hook, fed_host, y, rounds),
                       repeat, clock)


def _lightgbm_leaf_values(model: dict) -> np.ndarray:
    """Leaf values of the one tree in a ``dump_model`` dict."""
    stack, values = [model["tree_info"][0]["tree_structure"]], []
    while stack:
        node = stack.pop()
        if "leaf_value" in node:
            values.append(node["leaf_value"])
        else:
            stack += [node["left_child"], node["right_child"]]
    return np.array(values)


def _xgboost_leaf_values(model: dict) -> np.ndarray:
    """Leaf values of the one tree in a Booster's JSON (``split_conditions`` at leaves)."""
    tree = model["learner"]["gradient_booster"]["model"]["trees"][0]
    leaf = np.array(tree["left_children"]) == -1
    return np.array(tree["split_conditions"], dtype=np.float64)[leaf]


def _modes(host, host_sampled, hook_plain, hook, fed_host, y, rounds) -> dict:
    """The timed functions of one host: its ``train`` (also with its own row sampling at the
    hooks' default held-out fraction: ``host_sampled``), both hooks and the three floors.

    ``fed_host(start)`` makes a fresh growing model whose scores start at ``start`` and gives
    its calls ``(scores(), boost(it, g, h), read_tree(it))`` (``read_tree`` returns the new
    tree's leaf values); the floors drive it with :func:`_fed_rounds`: nothing held out
    (``fed``), the hooks' default held-out fraction and each tree read (``fed_held_read``),
    and that with the row passes of scoring (``fed_held_passes``).
    """
    y32 = y.astype(np.float32)
    start = float(np.mean(y32))

    def fed(held: float, read: bool, passes: bool = False):
        return lambda: _fed_rounds(rounds, y32, held, read, passes, *fed_host(start))

    fraction = HoldoutPlan().fraction
    return {"host": host, "host_sampled": host_sampled, "hook_no_pruning": hook_plain,
            "hook": hook,
            "fed": fed(0.0, False), "fed_held_read": fed(fraction, True),
            "fed_held_passes": fed(fraction, True, True)}


def _fed_rounds(rounds, y32, held, read, passes, scores, boost, read_tree) -> None:
    """The floors' loop: squared-error gradients at the host's scores, the held-out rows
    (fraction ``held``, drawn afresh each round) zeroed, one iteration, the new tree read
    (``read``), and with ``passes`` the row passes of scoring it (:func:`_row_passes`)."""
    rng = np.random.default_rng(0)
    n = y32.size
    m = int(round(held * n))
    work = _PassTables(n, m, rng) if passes else None
    after = None  # the scores after a round are those before the next: read once
    for it in range(rounds):
        before = scores() if after is None else after
        g = before.astype(np.float32) - y32
        h = np.ones(n, dtype=np.float32)
        if m:
            rows = rng.choice(n, m, replace=False)
            g_fit = g.copy()
            g_fit[rows], h[rows] = 0.0, 0.0
        else:
            g_fit = g
        boost(it, g_fit, h)
        if read:
            value = read_tree(it)
            if work is not None:
                after = scores()
                _row_passes(work, before, after, value, g, g_fit, rows)


class _PassTables:
    """What :func:`_row_passes` reuses: the running scores, jackknife blocks (20) of the
    rows, and fixed-size lookup tables (their contents do not change the passes' cost)."""

    n_cells, n_nodes, n_blocks = 4096, 64, 20

    def __init__(self, n: int, m: int, rng: np.random.Generator) -> None:
        self.raw = np.zeros(n)
        self.blocks = rng.integers(0, self.n_blocks, n)
        self.n_bins = max(1, int(2 * np.sqrt(m)))
        size = -(-m // self.n_bins)
        # the (bin, leaf) offset of each held-out position: runs of ``size`` positions
        self.bin_offset = np.repeat(np.arange(self.n_bins) * self.n_nodes, size)[:m]
        self.cell_of_key = np.arange(self.n_bins * self.n_nodes) * self.n_blocks


def _row_passes(t: _PassTables, before, after, value, g, g_fit, rows) -> None:
    """The passes over rows of scoring one new tree (see the module docstring)."""
    n_keys = t.n_bins * t.n_nodes
    # the training rows' leaves: the change of the host's scores, looked up in a cell table
    change = after - before
    order = np.sort(value)
    lo, hi = order[0] - 1e-9, order[-1] + 1e-9
    cell = ((change - lo) * (t.n_cells / (hi - lo))).astype(np.intp)
    np.clip(cell, 0, t.n_cells - 1, out=cell)
    # midpoints below each cell's lower edge, then one more where the row passed a midpoint
    # inside its cell (cells narrower than the leaves' gaps hold one at most)
    mid = np.append((order[1:] + order[:-1]) / 2, np.inf)
    table = np.searchsorted(mid, lo + np.arange(t.n_cells) * (hi - lo) / t.n_cells)
    leaf = table[cell]
    leaf += change > mid[leaf]
    off = order[leaf] - change  # every row's change must be its leaf's value: its extremes
    np.max(off), np.min(off)  # noqa: B018 (computed for their cost, as the check does)
    # the fit rows' sums (held-out rows have g 0) and counts
    np.bincount(leaf, weights=g_fit, minlength=t.n_nodes)
    np.bincount(leaf, minlength=t.n_nodes)
    # the held-out rows in their random order: leaves, gradients, blocks; the draws' sums
    key = leaf[rows]
    g_held = g[rows]
    key += t.bin_offset
    np.bincount(key, minlength=n_keys)
    cells = t.cell_of_key[key]
    cells += t.blocks[rows]
    np.bincount(cells, weights=g_held, minlength=n_keys * t.n_blocks)
    np.bincount(cells, minlength=n_keys * t.n_blocks)
    # the running scores
    t.raw += order[leaf]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hosts", nargs="+", default=["lightgbm", "xgboost"])
    parser.add_argument("--out", default="hook_overhead.json")
    args = parser.parse_args()
    X, y = data(args.rows, args.features)
    out = {"rows": args.rows, "features": args.features, "rounds": args.rounds,
           "repeat": args.repeat,
           "modes": {"host_sampled": "the host's train with its own row sampling (LightGBM "
                                     "bagging_fraction, bagging_freq=1; XGBoost subsample) "
                                     "at the fraction the hook fits on",
                     "hook_no_pruning": "holdout_fraction=0, prune_threshold=None",
                     "hook": "defaults: holdout_fraction=0.5 re-drawn, prune_threshold=0",
                     "fed": "the host alone fed numpy gradients round by round (no library)",
                     "fed_held_read": "fed, half the rows zeroed (re-drawn), each new tree "
                                      "read back as JSON",
                     "fed_held_passes": "fed_held_read and the row passes of scoring the "
                                        "tree, one numpy call each (no per-tree work)"}}
    for host in args.hosts:
        rounds = args.rounds
        got = (bench_lightgbm if host == "lightgbm" else bench_xgboost)(
            X, y, rounds, args.repeat)
        times, cpu = got["seconds"], got["cpu_seconds"]
        out[host] = {
            "seconds": {k: round(v, 3) for k, v in times.items()},
            "ratio_to_host": {k: round(v / times["host"], 2) for k, v in times.items()
                              if k.startswith("hook")},
            "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
            "cpu_ratio_to_host": {k: round(v / cpu["host"], 2) for k, v in cpu.items()
                                  if k.startswith("hook")},
            # the floors alone (no code of ours), CPU, and what each target leaves above them
            "floor_ratio": {"hook_no_pruning": round(cpu["fed"] / cpu["host"], 2),
                            "hook": round(cpu["fed_held_read"] / cpu["host"], 2)},
            "budget_left": {"hook_no_pruning": round(1.2 - cpu["fed"] / cpu["host"], 2),
                            "hook": round(1.5 - cpu["fed_held_read"] / cpu["host"], 2)},
            # the defaults' floor with the row passes of scoring, and what 1.5 leaves above it
            # (per round: for all per-tree work that is not a pass over rows)
            "passes_floor_ratio": round(cpu["fed_held_passes"] / cpu["host"], 2),
            "budget_after_passes": round(1.5 - cpu["fed_held_passes"] / cpu["host"], 2),
            "budget_after_passes_ms_per_round": round(
                (1.5 * cpu["host"] - cpu["fed_held_passes"]) / rounds * 1e3, 2),
            # the hook's CPU time split: the host's calls inside it, and the rest (ours)
            "host_side_ratio": {k: round(v / cpu["host"], 2)
                                for k, v in got["host_side_cpu_seconds"].items()},
            "ours_ratio": {k: round((cpu[k] - v) / cpu["host"], 2)
                           for k, v in got["host_side_cpu_seconds"].items()},
            "target_ratio": {"hook_no_pruning": 1.2, "hook": 1.5},
            # context, not a target: the host drawing its own rows per tree at the fraction
            # the hook fits on (LightGBM bagging, XGBoost subsample), and the hook against it
            "host_sampled_ratio": round(cpu["host_sampled"] / cpu["host"], 2),
            "hook_ratio_to_host_sampled": round(cpu["hook"] / cpu["host_sampled"], 2),
            "load_1min": got["load_1min"],
        }
        print(host, json.dumps(out[host]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
