"""Over Dask, a model trained on a frame with integer column labels, held-out partitions
listing its categories in another order: recoding the column added a new column '1' beside
the integer label 1 (XGBoost: duplicate feature names); the result now equals in memory."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
xgb = pytest.importorskip("xgboost")

CATS = list("abcd")


def _frame(n, seed, categories=CATS):
    rng = np.random.default_rng(seed)
    c = rng.choice(CATS, n)
    x = rng.normal(size=n)
    y = (c == "b") * 2.0 + x + rng.normal(size=n)
    return pd.DataFrame({0: x, 1: pd.Categorical(c, categories=categories)}), y


def test_integer_labels_with_reordered_categories_over_dask(client):
    X, y = _frame(2000, 0)
    Xv, yv = _frame(2000, 1)
    Xv_other = Xv.copy()
    Xv_other[1] = Xv_other[1].cat.reorder_categories(CATS[::-1])
    booster = xgb.train({"nthread": 1, "max_depth": 3},
                        xgb.DMatrix(X, y, enable_categorical=True), 8)
    mem = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=0)
    d = uc.unbiased_importance(
        booster, dd.from_pandas(X, npartitions=2), dd.from_pandas(pd.Series(y), npartitions=2),
        dd.from_pandas(Xv_other, npartitions=2), dd.from_pandas(pd.Series(yv), npartitions=2),
        random_state=0)
    cols = ["tree", "node", "feature", "n_train", "n_valid"]
    pd.testing.assert_frame_equal(d.splits[cols].reset_index(drop=True),
                                  mem.splits[cols].reset_index(drop=True))
    np.testing.assert_allclose(d.to_frame()["biased_gain"], mem.to_frame()["biased_gain"])
