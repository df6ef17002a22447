"""fit_leaf_params: the learning rate and L2 recovered from leaf values, or a clear refusal."""

from __future__ import annotations

import numpy as np
import pytest

from unbiased_criteria.gains import SplitScore, leaf_weight
from unbiased_criteria.leaf_params import LeafParamsError, fit_leaf_params


def leaves(n=60, seed=0):
    rng = np.random.default_rng(seed)
    H = rng.uniform(5.0, 300.0, n)
    G = rng.normal(size=n) * np.sqrt(H) * 3
    return G, H


def test_recovers_eta_and_lambda_from_float32_leaves():
    G, H = leaves()
    # XGBoost: float32 weight, float32 product with eta
    w = leaf_weight(G, H, SplitScore(l2=5.0, weight_float32=True))
    value = (np.float32(0.3) * w.astype(np.float32)).astype(np.float64)
    fit = fit_leaf_params(value, G, H)
    assert fit.shrinkage == pytest.approx(0.3, rel=1e-4)
    assert fit.l2 == pytest.approx(5.0, rel=1e-4)
    assert fit.n_leaves == G.size and fit.misfit < 1e-5


@pytest.mark.parametrize("score", [SplitScore(l1=2.0, l2=1.0),
                                   SplitScore(l2=1.0, max_delta_step=0.05)],
                         ids=["l1", "max_delta_step"])
def test_l1_or_clipped_leaves_are_refused(score):
    G, H = leaves()
    value = 0.1 * leaf_weight(G, H, score)
    with pytest.raises(LeafParamsError, match="alpha.*max_delta_step"):
        fit_leaf_params(value, G, H)


@pytest.mark.parametrize("score", [SplitScore(l1=2.0, l2=3.0),
                                   SplitScore(l2=3.0, max_delta_step=0.25),
                                   SplitScore(l1=2.0, l2=3.0, max_delta_step=0.25)],
                         ids=["l1", "max_delta_step", "both"])
def test_declared_l1_and_clip_are_taken_into_the_fit(score):
    G, H = leaves()
    w = leaf_weight(G, H, score)
    value = 0.1 * w
    if score.max_delta_step:
        assert 5 < np.sum(np.abs(w) == score.max_delta_step) < G.size - 10  # some clipped
    fit = fit_leaf_params(value, G, H, l1=score.l1, max_delta_step=score.max_delta_step)
    assert fit.shrinkage == pytest.approx(0.1, rel=1e-9)
    assert fit.l2 == pytest.approx(3.0, rel=1e-9)
    # a clip the leaves do not follow (the model's is other than declared) is refused
    if score.max_delta_step:
        with pytest.raises(LeafParamsError, match="max_delta_step 0.35"):
            fit_leaf_params(value, G, H, l1=score.l1, max_delta_step=0.35)
    # and one declared where no leaf is clipped costs only the largest leaf
    plain = 0.1 * leaf_weight(G, H, SplitScore(l2=3.0))
    fit = fit_leaf_params(plain, G, H, max_delta_step=100.0)
    assert fit.l2 == pytest.approx(3.0, rel=1e-9) and fit.n_leaves == G.size - 1


def test_constant_hessians_cannot_tell_eta_from_lambda():
    G, _ = leaves()
    H = np.full(G.size, 50.0)
    with pytest.raises(LeafParamsError, match="cannot be told apart"):
        fit_leaf_params(-0.1 * G / (H + 1.0), G, H)


def test_too_few_leaves():
    with pytest.raises(LeafParamsError, match="only 2 leaves"):
        fit_leaf_params([0.1, -0.2], [-1.0, 2.0], [3.0, 4.0])
