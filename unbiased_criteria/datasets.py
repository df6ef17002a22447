"""Small generated data sets used by the demo, the tests and the benchmarks."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["paper_example", "null_example"]


def paper_example(
    n: int = 2000, random_state=None, effect: float = 0.1, as_frame: bool = True
) -> tuple[pd.DataFrame | np.ndarray, np.ndarray]:
    """The paper's example: ``y = effect * X1 + N(0, 1)``.

    ``X1`` is binary (Bernoulli 1/2), ``X2`` uniform over six categories (codes 0..5, a pandas
    categorical column when ``as_frame``), ``X3`` standard normal. Only ``X1`` carries
    information; with the usual gain, LightGBM credits most importance to ``X3``.
    """
    rng = np.random.default_rng(random_state)
    x1 = rng.integers(0, 2, n)
    x2 = rng.integers(0, 6, n)
    x3 = rng.standard_normal(n)
    y = effect * x1 + rng.standard_normal(n)
    if not as_frame:
        return np.column_stack([x1, x2, x3]).astype(np.float64), y
    X = pd.DataFrame(
        {
            "X1": x1.astype(np.float64),
            "X2": pd.Categorical(x2, categories=range(6)),
            "X3": x3,
        }
    )
    return X, y


def null_example(
    n: int = 2000, random_state=None, levels=(2, 4, 10, 20, None)
) -> tuple[np.ndarray, np.ndarray]:
    """Features independent of ``y ~ N(0, 1)``: one per entry of ``levels``.

    An integer entry gives a feature uniform over that many levels (coded 0..levels-1 as
    floats); ``None`` gives a continuous N(0, 1) feature.
    """
    rng = np.random.default_rng(random_state)
    cols = [
        rng.standard_normal(n) if lv is None else rng.integers(0, lv, n).astype(np.float64)
        for lv in levels
    ]
    return np.column_stack(cols), rng.standard_normal(n)
