"""Data and estimators the grower's tests share."""

import numpy as np

import unbiased_criteria as uc


def grower_data(kind, n=2000, seed=0, nan=0.1):
    """Five features (one of 4 integer values), NaN in 10% of the cells; float32-exact: the
    hosts read float32 (XGBoost) and the grower bins float32. ``kind``: "regression",
    "binary" (text labels) or three classes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32).astype(np.float64)
    X[:, 4] = rng.integers(0, 4, n)
    signal = X[:, 0] + 0.5 * (X[:, 4] == 2)
    X[rng.random((n, 5)) < nan] = np.nan
    noise = rng.normal(size=n)
    if kind == "regression":
        return X, signal + noise
    if kind == "binary":
        return X, np.where(signal + noise > 0, "yes", "no")
    return X, np.digitize(signal + noise, [-1.0, 1.0])


def grower_estimator(kind, **kw):
    """A small grower of ``kind`` (15 trees of 15 leaves, seed 0)."""
    cls = uc.UnbiasedGBMRegressor if kind == "regression" else uc.UnbiasedGBMClassifier
    return cls(n_estimators=15, num_leaves=15, random_state=0, **kw)
