"""Data and models shared by the scikit-learn adapter tests: every loss, weights, NaN,
categorical columns (integer codes and pandas categoricals, not in first position)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One OpenMP thread: the machine's few cores are shared, and oversubscription makes
    scikit-learn's small fits 10x slower."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


N = 800


def data(kind, seed=0, nan=0.0, categorical=False, integer=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    s = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    codes = rng.integers(0, 7, N)
    if categorical:
        s = s + np.isin(codes, [0, 2, 5]) * 1.5
    noise = rng.normal(size=N)
    if kind == "binary":
        y = (s + noise > 0.5).astype(float)
    elif kind == "multiclass":
        y = np.digitize(s + noise, [0.0, 1.0]).astype(float)
    elif kind == "poisson":
        y = rng.poisson(np.exp(0.5 * np.clip(s, -3, 3))).astype(float)
    elif kind == "gamma":
        y = rng.gamma(2.0, np.exp(0.3 * np.clip(s, -3, 3)) / 2.0)
    else:
        y = 10.0 + 3.0 * (s + noise)  # labels far from 0: float32 labels would not do
    if integer:  # ties: raw scores equal to labels (the median baseline of L1 and quantile)
        y = np.round(y)
    if categorical == "pandas":
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(4)])
        X.insert(1, "cat", pd.Categorical(np.array(list("abcdefg"))[codes]))
        if nan:
            X.loc[rng.random(N) < nan, "cat"] = np.nan
    elif categorical:
        X = np.column_stack([X[:, :1], codes.astype(float), X[:, 1:]])
    return X, y


CASES = {
    "squared_error": ("squared_error", {}, {}),
    "binary": ("binary", {}, {}),
    "multiclass": ("multiclass", {}, {}),
    "poisson": ("poisson", {}, {}),
    "gamma": ("gamma", {"l2_regularization": 2.0}, {}),
    "weights": ("binary", {"l2_regularization": 0.5}, {"weights": True}),
    "squared_weights": ("squared_error", {}, {"weights": True}),
    "multiclass_weights": ("multiclass", {"l2_regularization": 1.0}, {"weights": True}),
    "nan": ("poisson", {}, {"nan": 0.15}),
    "categorical": ("squared_error", {"categorical_features": [1]}, {"categorical": True}),
    "pandas": ("binary", {}, {"categorical": "pandas", "nan": 0.1}),
    "absolute_error": ("absolute_error", {}, {}),
    "quantile": ("quantile", {"quantile": 0.8}, {}),
    "absolute_ties": ("absolute_error", {}, {"integer": True}),
    "quantile_ties": ("quantile", {"quantile": 0.3}, {"integer": True}),
}


def fit(kind, params, opts, seed=0):
    X, y = data(kind, seed, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False),
                integer=opts.get("integer", False))
    w = np.random.default_rng(2).uniform(0.3, 2.0, N) if opts.get("weights") else None
    common = {"max_iter": 8, "max_leaf_nodes": 15, "learning_rate": 0.3,
              "early_stopping": False, "random_state": 0, **params}
    if kind in ("binary", "multiclass"):
        model = HistGradientBoostingClassifier(**common)
    else:
        model = HistGradientBoostingRegressor(loss=kind, **common)
    return model.fit(X, y, sample_weight=w), X, y, w
