"""The native grower's importance on pure noise, at the root and below it (README, "What
``feature_importances_`` measures"): 1 tree of 16 leaves, 4 noise features (binary, 10 levels,
two continuous), 1500 rows, ``R`` seeds. Prints the mean sum of ``U`` over the root's
candidates and over the other nodes' per tree, with z = mean / standard error. Writes
``results/grower_null_depth.json``.

    python benchmarks/grower_null_depth.py [--seeds R]
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
from _common import RESULTS

import unbiased_criteria as uc


def main(R: int = 300) -> None:
    totals = []
    for r in range(R):
        rng = np.random.default_rng(4000 + r)
        n = 1500
        X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 10, n),
                             rng.normal(size=n), rng.normal(size=n)]).astype(float)
        y = rng.normal(size=n)  # independent of every feature
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = uc.UnbiasedGBMRegressor(n_estimators=1, num_leaves=16,
                                            random_state=r).fit(X, y)
        s = model.importance_report_.splits
        root = s["node"] == 0
        totals.append([s.loc[root, "unbiased_gain"].sum(), s.loc[~root, "unbiased_gain"].sum()])
    totals = np.array(totals)
    mean, se = totals.mean(0), totals.std(0, ddof=1) / np.sqrt(R)
    out = {"seeds": R}
    for i, where in enumerate(("root", "below the root")):
        out[where] = {"mean": float(mean[i]), "std_error": float(se[i]),
                      "z": float(mean[i] / se[i])}
        print(f"sum of U over the {where:14s} candidates: {mean[i]:+.3f} "
              f"(z = {mean[i] / se[i]:+.2f})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "grower_null_depth.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300, metavar="R",
                        help="number of seeds (default 300)")
    main(parser.parse_args().seeds)
