"""Test loss of pruning at ``U <= 0`` on a model that fits strong signal (README, "Where
post-hoc pruning hurts"): the unpruned host model, post-hoc ``uc.prune`` (plain, with
``refit_leaves``, at ``threshold=-5``), and pruning while training (``UnbiasedLGBMRegressor``,
early-stopped on the held-out rows, defaults and ``holdout_fraction=0.2``), against the host
early-stopped on the same rows. Data: ``_common.make_data`` (5 informative of 20 features),
20k rows each for training, held-out / early stopping, and test; LightGBM, 63 leaves,
learning rate 0.1, one thread. Writes ``results/pruning_with_signal.json``.

    python benchmarks/pruning_with_signal.py
"""

from __future__ import annotations

import argparse
import json
import warnings

import lightgbm as lgb
import numpy as np
from _common import LIGHTGBM_PARAMS, RESULTS, make_data
from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor

import unbiased_criteria as uc


def main() -> None:
    X, y = make_data(20_000, 0)
    Xv, yv = make_data(20_000, 1)
    Xt, yt = make_data(20_000, 2)
    params = {**LIGHTGBM_PARAMS, "num_threads": 1}

    def mse(model) -> float:
        return float(np.mean((model.predict(Xt) - yt) ** 2))

    out: dict[str, float] = {}
    host = lgb.train(params, lgb.Dataset(X, y), 100)
    leaves = sum(t["num_leaves"] for t in host.dump_model()["tree_info"])
    out["host, 100 trees"] = mse(host)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "most splits unusable" and the like
        for name, kwargs in [("prune", {}), ("prune, refit_leaves", {"refit_leaves": True}),
                             ("prune, threshold=-5", {"threshold": -5.0})]:
            pruned = uc.prune(host, X, y, Xv, yv, random_state=0, **kwargs)
            kept = sum(t["num_leaves"] for t in pruned.dump_model()["tree_info"]) / leaves
            out[name] = mse(pruned)
            out[f"{name}: share of leaves kept"] = kept
        stop = lgb.early_stopping(30, verbose=False)
        early = lgb.train(params, lgb.Dataset(X, y), 1500, valid_sets=[lgb.Dataset(Xv, yv)],
                          callbacks=[stop])
        out["host, early-stopped"] = mse(early)
        for name, extra in [("hook, defaults", {}), ("hook, holdout_fraction=0.2",
                                                     {"holdout_fraction": 0.2})]:
            est = UnbiasedLGBMRegressor(n_estimators=1500, num_leaves=63, learning_rate=0.1,
                                        verbose=-1, n_jobs=1, random_state=0, **extra)
            est.fit(X, y, eval_set=[(Xv, yv)],
                    callbacks=[lgb.early_stopping(30, verbose=False)])
            out[name] = mse(est)
            out[f"{name}: rounds"] = int(est.best_iteration_)
    for key, value in out.items():
        print(f"{key:45s} {value:.4f}" if isinstance(value, float) else f"{key:45s} {value}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pruning_with_signal.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help
    main()
