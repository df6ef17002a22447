"""Data shared by the LightGBM adapter tests: every kind of split and missing value."""

from __future__ import annotations

import numpy as np


def make_data(n: int, seed: int = 0, n_features: int = 4):
    """Columns: 0 numeric with NaN, 1 numeric with exact zeros, 2 eight categories
    (many-vs-many), 3 three categories (one-hot: 3 + the NaN bin <= max_cat_to_onehot=4),
    then pure-noise numeric columns up to ``n_features``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(n) < 0.2, 0] = np.nan
    X[rng.random(n) < 0.3, 1] = 0.0
    X[:, 2] = rng.integers(0, 8, n)
    X[:, 3] = rng.integers(0, 3, n)
    signal = np.nan_to_num(X[:, 0]) + (X[:, 2] % 3 == 0) + 0.5 * X[:, 3] + 0.3 * X[:, 1]
    return X, signal, rng


def labels(kind: str, signal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Labels of objective ``kind`` from the signal (draws from ``rng``)."""
    noise = rng.normal(size=signal.size)
    if kind in ("binary", "cross_entropy"):
        return (signal + noise > 0.8).astype(np.float64)
    if kind in ("multiclass", "multiclassova"):
        return np.digitize(signal + noise, [0.0, 1.0]).astype(np.float64)
    if kind in ("poisson", "tweedie"):
        return rng.poisson(np.exp(0.3 * signal)).astype(np.float64)
    if kind == "gamma":
        return rng.gamma(2.0, np.exp(0.2 * signal))
    return signal + noise
