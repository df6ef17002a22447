"""Writes lightgbm3_percentile.npz and lightgbm3_{l1,quantile}.txt: LightGBM 3.3.5 models
whose init score (a percentile of the labels) follows that version's rule, for
tests/adapters/test_lightgbm3_files.py. Run with lightgbm==3.3.5 (and numpy<2)::

    python make_lightgbm3_percentile.py
"""

import json
from pathlib import Path

import lightgbm as lgb
import numpy as np

assert lgb.__version__ == "3.3.5", lgb.__version__
here = Path(__file__).parent
rng = np.random.default_rng(0)
n = 301  # odd: 3.3.5 averages the median and the next value, 4.1 takes the median
X = rng.normal(size=(n, 3))
y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n)
init = {}
for name, alpha in (("l1", 0.5), ("quantile", 0.3)):
    params = {"objective": name, "alpha": alpha, "learning_rate": 0.1, "num_leaves": 6,
              "min_data_in_leaf": 10, "seed": 0, "num_threads": 1, "verbose": -1}
    lgb.train(params, lgb.Dataset(X, y), 3).save_model(str(here / f"lightgbm3_{name}.txt"))
    # LightGBM's own init score: a one-leaf first tree at a learning rate of 1e-12 holds it
    one = lgb.train({**params, "min_data_in_leaf": n, "learning_rate": 1e-12},
                    lgb.Dataset(X, y), 1)
    init[name] = one.dump_model()["tree_info"][0]["tree_structure"]["leaf_value"]
np.savez(here / "lightgbm3_percentile.npz", X=X, y=y,
         init=json.dumps(init))
