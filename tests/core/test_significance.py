"""Multiple-testing corrections of select(): textbook answers, and their error rates by Monte
Carlo on null t statistics (tolerances from the replication count)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from unbiased_criteria.significance import significant

DOF = 19


def ratios(p):
    """t ratios whose one-sided p-values at DOF degrees of freedom are ``p``."""
    return stats.t.isf(np.asarray(p, dtype=float), DOF)


def test_textbook_answers():
    # p = 0.01, 0.04, 0.03, 0.005 at alpha 0.05: Holm compares the sorted p with
    # 0.05/4, 0.05/3, 0.05/2, 0.05/1 and stops at 0.03 > 0.025; Benjamini-Hochberg compares
    # with 0.05*i/4 and the largest p under its bound (0.04 <= 0.05) takes all four
    z = ratios([0.01, 0.04, 0.03, 0.005])
    se = np.ones(4)
    assert significant(z, se, DOF, 0.05).tolist() == [True, True, True, True]
    assert significant(z, se, DOF, 0.05, "holm").tolist() == [True, False, False, True]
    assert significant(z, se, DOF, 0.05, "fdr_bh").tolist() == [True, True, True, True]
    assert significant(z, se, DOF, 0.03, "fdr_bh").tolist() == [True, False, False, True]
    # a feature without a test (standard error 0, gain 0: never split) is not counted
    z5, se5 = np.r_[z, 0.0], np.r_[se, 0.0]
    assert significant(z5, se5, DOF, 0.05, "holm").tolist() == [True, False, False, True,
                                                                  False]
    assert not significant([0.0, 0.0], [0.0, 0.0], DOF, 0.05, "fdr_bh").any()
    with pytest.raises(ValueError, match="correction: expected None, 'holm' or 'fdr_bh'"):
        significant(z, se, DOF, 0.05, "bonferroni")
    with pytest.raises(ValueError, match=r"alpha: expected a number in \(0, 1\)"):
        significant(z, se, DOF, 1.5)


@pytest.mark.parametrize("correction,bound", [("holm", 0.05), ("fdr_bh", 0.05), (None, None)])
def test_error_rates_on_null_features(correction, bound):
    """50 null features (t ratios with DOF degrees of freedom), 4000 replications: the share
    of replications selecting any feature (family-wise error; under the global null also the
    false discovery rate) is at most alpha within 3 standard errors with a correction, and
    near 1 - 0.95**50 = 0.92 without."""
    rng = np.random.default_rng(0)
    reps, m = 4000, 50
    z = rng.standard_t(DOF, size=(reps, m))
    any_selected = np.array([significant(row, np.ones(m), DOF, 0.05, correction).any()
                             for row in z])
    rate = any_selected.mean()
    if bound is None:
        expected = 1 - 0.95 ** m
        assert abs(rate - expected) <= 3 * np.sqrt(expected * (1 - expected) / reps)
    else:
        assert rate <= bound + 3 * np.sqrt(bound * (1 - bound) / reps), rate
        assert rate > 0.5 * bound  # not vacuous: the procedures spend their level


@pytest.mark.parametrize("correction", [None, "holm", "fdr_bh"])
def test_zero_standard_error_is_no_test(correction):
    """U / 0 is +inf: that was read as infinite significance (p = 0) and the feature was
    selected, and counted among Holm's tests. A standard error of 0 (every replicate alike)
    is no test: never selected, not counted, and said."""
    p_alone = 0.03  # passes at 0.05 alone, fails Holm's 0.05 / 2 when the other is counted
    z = np.r_[5.0, ratios([p_alone])]
    se = np.r_[0.0, 1.0]
    with pytest.warns(UserWarning, match=r"^a: unbiased_gain > 0 but no test"):
        keep = significant(z, se, DOF, 0.05, correction, names=["a", "b"])
    assert keep.tolist() == [False, True]
    # a negative gain over 0 (-inf) and 0 / 0 (NaN) are no test either, and not worth a word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert significant([-5.0, 0.0], [0.0, 0.0], DOF, 0.05, correction).tolist() == [
            False, False]
