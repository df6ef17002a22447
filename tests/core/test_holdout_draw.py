"""The hook's held-out rows (``HoldoutPlan.held_rows``): a uniformly random set in a uniformly
random order, by Monte Carlo with fixed seeds (chi-square tests at the 0.999 quantile), on
both paths of ``Generator.choice`` (Floyd's sampling for few rows, a partial shuffle above
10,000 rows)."""

from __future__ import annotations

from itertools import permutations

import numpy as np
from scipy import stats

from unbiased_criteria.boosting import HoldoutPlan
from unbiased_criteria.importance import GainOptions


def _chi2_ok(counts: np.ndarray) -> bool:
    expected = counts.sum() / counts.size
    statistic = float(((counts - expected) ** 2 / expected).sum())
    return statistic < stats.chi2.ppf(0.999, counts.size - 1)


def test_held_rows_every_ordered_tuple_equally_likely():
    plan, options = HoldoutPlan(0.4), GainOptions(random_state=3)
    cells = {t: i for i, t in enumerate(permutations(range(5), 2))}  # 20 ordered pairs
    counts = np.zeros(len(cells))
    for it in range(4000):
        rows = plan.held_rows(5, it, options)
        assert rows.dtype == np.int64 and rows.size == 2
        counts[cells[tuple(rows.tolist())]] += 1
    assert _chi2_ok(counts)


def test_held_rows_uniform_set_and_order_on_many_rows():
    n, plan, options = 20_000, HoldoutPlan(0.2), GainOptions(random_state=5)
    first = np.zeros(10)  # the first-ranked held row, by tenth of the rows
    members = np.zeros(10)  # held rows by tenth, over all rounds
    corr = []  # rank in the held order against row id: 0 in expectation
    for it in range(400):
        rows = plan.held_rows(n, it, options)
        assert rows.size == 4000 and np.unique(rows).size == 4000
        assert rows.min() >= 0 and rows.max() < n
        first[rows[0] * 10 // n] += 1
        members += np.bincount(rows * 10 // n, minlength=10)
        corr.append(np.corrcoef(np.arange(rows.size), rows)[0, 1])
    assert _chi2_ok(first) and _chi2_ok(members)
    # each round's correlation has sd 1/sqrt(4000); their mean over 400 rounds 1/sqrt(1.6e6)
    assert abs(np.mean(corr)) < 4 / np.sqrt(4000 * 400)


def test_held_rows_reproducible_and_fixed_without_redraw():
    options = GainOptions(random_state=11)
    a = HoldoutPlan(0.3).held_rows(1000, 4, options)
    np.testing.assert_array_equal(a, HoldoutPlan(0.3).held_rows(1000, 4, options))
    assert not np.array_equal(a, HoldoutPlan(0.3).held_rows(1000, 5, options))
    fixed = HoldoutPlan(0.3, redraw=False)
    np.testing.assert_array_equal(fixed.held_rows(1000, 0, options),
                                  fixed.held_rows(1000, 7, options))
    assert HoldoutPlan(0.0).held_rows(1000, 0, options).size == 0
