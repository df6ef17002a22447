"""Monte Carlo (fixed seeds): the cross-fitted standard error of a repeated splitter is not too
small.

``RepeatedKFold(n_splits=4, n_repeats=4)`` on null data (five features independent of y with
2, 4, 10, 20 levels and a continuous one; 800 rows; LightGBM, 3 trees of 4 leaves), 40 data
sets. Each repetition is combined as one partition and the repetitions' standard errors are
averaged (:meth:`CrossFittedReport.std_error_parts`): an upper bound of the spread of the
averaged estimate, whatever the correlation between repetitions. Checked against the spread
of the estimate over the data sets:

* the reported SE is not smaller than that spread, within the sampling error of a standard
  deviation over 40 data sets (pooled over the features, kurtosis allowed for), where the
  16 folds pooled as one partition (the formula used before) fall below it;
* it is at most ``sqrt(n_repeats)`` times that spread (the most the bound can overstate
  when the per-repetition SE is right);
* noise features are selected at alpha = 0.05 at most alpha + 3 SE of a share.

Measured (these seeds; ``python tests/statistics/test_repeated_cv_calibration.py``): SE / sd
of the estimate 1.52 (by feature 1.39, 1.59, 1.21, 1.39, 1.94), the 16 folds pooled as one
partition 0.75, tolerance sd 0.065 (lower bound 0.80); noise kept at alpha 0.05: 0.010.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from scipy.stats import kurtosis  # noqa: E402
from sklearn.model_selection import RepeatedKFold  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import null_example  # noqa: E402

R = 40  # data sets
N = 800
SPLITS, REPEATS = 4, 4
ALPHA = 0.05


def replications():
    """Per data set and feature: the estimate, its SE, the SE of the 16 folds pooled as one
    partition, and whether ``select`` kept it."""
    est = lgb.LGBMRegressor(n_estimators=3, num_leaves=4, learning_rate=0.3,
                            min_child_samples=20, verbose=-1, n_jobs=1)
    U, SE, POOLED, KEPT = [], [], [], []
    for r in range(R):
        X, y = null_example(N, random_state=r)
        cv = RepeatedKFold(n_splits=SPLITS, n_repeats=REPEATS, random_state=r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = uc.cross_fitted_importance(est, X, y, cv=cv, random_state=r)
        assert report.n_repetitions == REPEATS
        frame = report.to_frame()
        U.append(frame["unbiased_gain"].to_numpy())
        SE.append(frame["std_error"].to_numpy())
        pooled = uc.CrossFittedReport.from_folds(report.fold_reports(), n_blocks=20)
        POOLED.append(pooled.std_error().to_numpy())
        KEPT.append(frame.index.isin(report.select(ALPHA)))
    return tuple(map(np.array, (U, SE, POOLED, KEPT)))


def ratio_tolerance(U: np.ndarray) -> float:
    """Relative standard deviation of the pooled ratio sum_f mean SE_f / sum_f sd_f.

    The sd of a sample standard deviation over ``R`` draws is about ``sqrt((k + 2) / (4 R))``
    of it (``k`` the excess kurtosis, 0 for normal draws: 1/sqrt(2R)). The sum over features
    weighs feature ``f`` by ``w_f = sd_f / sum sd``; two features' sample variances correlate
    as the square of their U's correlation (|r| < 0.4 here, so < 0.16), left out. The mean SE
    over R data sets varies much less than the sd and is left out too.
    """
    sd = U.std(axis=0, ddof=1)
    w = sd / sd.sum()
    excess = np.clip(kurtosis(U, axis=0), 0.0, None)
    return float(np.sqrt(np.sum(w**2 * (excess + 2) / (4 * R))))


@pytest.fixture(scope="module")
def simulated():
    return replications()


@pytest.mark.slow
def test_repeated_kfold_standard_error_covers_the_spread(simulated):
    U, SE, POOLED, _ = simulated
    assert np.isfinite(SE).all()
    spread = U.std(axis=0, ddof=1).sum()
    ratio, pooled_ratio = SE.mean(axis=0).sum() / spread, POOLED.mean(axis=0).sum() / spread
    sigma = ratio_tolerance(U)
    print(f"SE / sd of U: {ratio:.2f} (per feature "
          f"{np.round(SE.mean(axis=0) / U.std(axis=0, ddof=1), 2).tolist()}); folds pooled "
          f"as one partition {pooled_ratio:.2f}; tolerance sd {sigma:.3f}")
    assert ratio >= 1 - 3 * sigma
    assert ratio <= np.sqrt(REPEATS) * (1 + 3 * sigma)
    # the test has power: the formula used before (all folds one partition) fails it
    assert pooled_ratio < 1 - 3 * sigma


@pytest.mark.slow
def test_repeated_kfold_keeps_noise_at_most_alpha_of_the_time(simulated):
    kept = simulated[3]
    print(f"noise kept at alpha {ALPHA}: {kept.mean():.3f} ({kept.mean(axis=0).tolist()})")
    assert kept.mean() <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / kept.size)


if __name__ == "__main__":
    data = replications()
    test_repeated_kfold_standard_error_covers_the_spread(data)
    test_repeated_kfold_keeps_noise_at_most_alpha_of_the_time(data)
