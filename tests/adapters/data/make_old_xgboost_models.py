"""Write the old-XGBoost model files of ``tests/adapters/test_xgboost_old_files.py``.

Run once with each old XGBoost (the tests themselves need none of them)::

    python -m venv v17 && v17/bin/pip install xgboost==1.7.6 "numpy<2"
    v17/bin/python make_old_xgboost_models.py      # xgboost_1.7_*
    python -m venv v21 && v21/bin/pip install xgboost-cpu==2.1.4 "numpy<2" pandas
    v21/bin/python make_old_xgboost_models.py      # xgboost_2.1_*

The rows come from ``numpy.random.default_rng``, whose streams numpy keeps across versions:
the tests draw them again with :func:`rows`.
"""

from __future__ import annotations

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).parent


def rows(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of ``seed``: 4 features, labels of which about 30% are exactly 1 (what
    ``scale_pos_weight`` weighs) and the rest positive."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(rng.random(n) < 0.3, 1.0,
                 np.exp(0.5 * X[:, 0] + 0.5 * rng.normal(size=n)))
    return X, y


def category_rows(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of ``seed`` whose column 1 holds the integers 0..5 (a category)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 1] = rng.integers(0, 6, size=n)
    effect = np.array([0.0, 2.0, -1.0, 0.5, -2.0, 1.0])
    y = X[:, 0] + effect[X[:, 1].astype(int)] + rng.normal(size=n)
    return X, y


def main() -> None:
    import xgboost as xgb

    version = ".".join(xgb.__version__.split(".")[:2])
    base = {"eta": 0.3, "max_depth": 3, "tree_method": "hist", "seed": 0, "nthread": 1}
    if version == "1.7":
        X, y = rows(0)
        bst = xgb.train({**base, "objective": "reg:squarederror"}, xgb.DMatrix(X, y), 6)
        bst.save_model(HERE / "xgboost_1.7_squarederror.json")
        bst.save_model(HERE / "xgboost_1.7_squarederror.model")  # the old binary format
    elif version == "2.1":
        import pandas as pd

        X, y = rows(0)
        bst = xgb.train({**base, "objective": "reg:squaredlogerror", "scale_pos_weight": 3.0},
                        xgb.DMatrix(X, y), 6)
        bst.save_model(HERE / "xgboost_2.1_squaredlogerror_spw.json")
        bst.save_model(HERE / "xgboost_2.1_squaredlogerror_spw.ubj")
        X, y = category_rows(1)
        frame = pd.DataFrame(X, columns=list("abcd"))
        frame["b"] = frame["b"].astype(int).astype("category")  # categories 0..5
        bst = xgb.train({**base, "objective": "reg:squarederror", "eta": 0.1},
                        xgb.DMatrix(frame, y, enable_categorical=True), 8)
        bst.save_model(HERE / "xgboost_2.1_categorical.json")
    else:
        raise SystemExit(f"xgboost {xgb.__version__}: run this with 1.7 or 2.1")


if __name__ == "__main__":
    main()
