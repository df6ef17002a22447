"""Monte Carlo: the block-jackknife standard error of each feature's unbiased importance
matches the spread of that importance over independent held-out samples (fixed training
set and model), with and without zero-weight held-out rows."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402

R = 40  # independent held-out samples
N = 2000
BLOCKS = 20


def _replications(zero_weight_share: float):
    X, y = paper_example(N, random_state=0)
    model = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                      lgb.Dataset(X, y), 30)
    U, SE = [], []
    for r in range(R):
        rng = np.random.default_rng(1000 + r)
        Xv, yv = paper_example(N, random_state=rng)
        wv = None
        if zero_weight_share:
            wv = rng.random(N)
            wv[rng.random(N) < zero_weight_share] = 0.0
        frame = uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=wv, random_state=r,
                                       n_blocks=BLOCKS).to_frame()
        U.append(frame["unbiased_gain"].to_numpy())
        SE.append(frame["std_error"].to_numpy())
    return np.array(U), np.array(SE)


@pytest.mark.slow
@pytest.mark.parametrize("zero_weight_share", [0.0, 0.5])
def test_jackknife_standard_error_matches_the_spread_of_u(zero_weight_share):
    U, SE = _replications(zero_weight_share)
    assert np.isfinite(SE).all()
    spread = U.std(axis=0, ddof=1)
    ratio = SE.mean(axis=0) / spread
    print(f"zero-weight share {zero_weight_share}: mean SE {SE.mean(axis=0).round(1)}, "
          f"sd of U {spread.round(1)}")  # the README's figures (pytest -s)
    # relative sd of a sample sd over R draws is about 1/sqrt(2(R-1)); each SE also varies
    # (about 1/sqrt(2(B-1)) relative), averaged over R samples
    sigma = np.sqrt(1 / (2 * (R - 1)) + 1 / (2 * (BLOCKS - 1) * R))
    np.testing.assert_array_less(np.abs(ratio - 1), 3.5 * sigma)
