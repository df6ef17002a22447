"""Monte Carlo: in the validation-only mode (G from one half of the held-out rows, ratios from
the other, cross-fitted) the block jackknife's standard error against the spread of U over
independent held-out samples, for a split with signal and a split without.

Both halves are cut into the same blocks and a replicate leaves its block out of both: the
replicates once left it out of the ratios' half only, and the standard error came out at
0.6-0.8 of the spread. A split without signal is a product of two independent zero-mean
noises: the jackknife counts each factor's variance at the other's observed value, so its
variance is up to twice the true one (standard error up to sqrt(2) of the spread): the error
is on the safe side there, never below the spread."""

from __future__ import annotations

import numpy as np
import pytest

from unbiased_criteria.gains import SplitScore
from unbiased_criteria.importance import (
    GainOptions,
    holdout_halves,
    jackknife_blocks,
    score_tree,
)
from unbiased_criteria.replay import TreeStep
from unbiased_criteria.trees import make_tree, route_rows

R = 400  # independent held-out samples
N = 2000
BLOCKS = 20


def _tree():
    # root splits x0 at 0.5 (the signal: the gradient's mean depends on x0); node 1 splits x1
    # at 0.5 (no signal)
    return make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 1, -1, -1, -1],
                     [0.5, 0.5, np.nan, np.nan, np.nan], [np.nan, np.nan, 0.0, 0.0, 0.0])


def _replications():
    tree = _tree()
    U, SE = [], []
    for r in range(R):
        rng = np.random.default_rng(7000 + r)
        X = rng.random((N, 2))
        g = rng.normal(size=N) + np.where(X[:, 0] < 0.5, -0.15, 0.15)
        h = rng.uniform(0.5, 1.5, N)
        options = GainOptions(random_state=r, n_blocks=BLOCKS)
        step = TreeStep(0, tree, None, None, None, None, route_rows(tree, X), g, h, None)
        s = score_tree(step, SplitScore(), options, halves=holdout_halves(N, options),
                       blocks=jackknife_blocks(N, options))
        jack = s.jackknife[:, [0, 1]]
        U.append(s.unbiased[[0, 1]])
        SE.append(np.sqrt((BLOCKS - 1) / BLOCKS * ((jack - jack.mean(axis=0)) ** 2).sum(0)))
    return np.array(U), np.array(SE)


@pytest.mark.slow
def test_validation_only_standard_error_against_the_spread_of_u():
    U, SE = _replications()
    ratio = SE.mean(axis=0) / U.std(axis=0, ddof=1)
    print("SE / sd(U), signal and null split:", ratio.round(3))  # the README's figures
    sigma = np.sqrt(1 / (2 * (R - 1)) + 1 / (2 * (BLOCKS - 1) * R))
    assert abs(ratio[0] - 1) < 3.5 * sigma  # the split with signal: calibrated
    assert 1 - 3.5 * sigma < ratio[1] < np.sqrt(2) + 3.5 * sigma  # no signal: conservative
