"""Monte Carlo checks of the training hooks' importance (the ``UnbiasedLGBM*`` / ``UnbiasedXGB*``
estimators' signed ``unbiased_gain_``, which ``feature_importances_`` clips at 0; fixed
seeds).

The importance sums U over every split scored during training, kept or not. Summed over the
kept splits only it would be a winner's-curse estimate (a split is kept because its U was high
on the very rows that measured it): on the paper's example the continuous noise feature then
outranks X1. Checked here, for both hosts, with the mean and standard error over seeds:

* paper's example (``y = 0.1*X1 + N(0,1)``, X2 six categories, X3 N(0,1)): the mean of every
  noise feature is ``<= 0 + 2 SE`` and X1's is above each of them;
* null design (y independent of a binary, a 10-category categorical and two continuous
  features): every feature's mean is ``<= 0 + 2 SE``.

And ``training_report`` carries block-jackknife standard errors, so ``select()`` works.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from unbiased_criteria.datasets import null_example, paper_example

SEEDS = range(8)
HOSTS = ["lightgbm", "xgboost"]


def estimator(host: str, seed: int, rounds: int, **extra):
    if host == "lightgbm":
        from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor

        return UnbiasedLGBMRegressor(n_estimators=rounds, learning_rate=0.1, num_leaves=15,
                                     random_state=seed, n_jobs=1, verbose=-1, **extra)
    from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor

    return UnbiasedXGBRegressor(n_estimators=rounds, learning_rate=0.1, max_depth=4,
                                random_state=seed, n_jobs=1, enable_categorical=True,
                                tree_method="hist", **extra)


def report_of(host: str, model):
    if host == "lightgbm":
        from unbiased_criteria.adapters.lightgbm import training_report

        return training_report(model)
    from unbiased_criteria.adapters.xgboost import training_report

    return training_report(model.get_booster())


def null_design(n: int, seed: int):
    X, y = null_example(n, random_state=seed, levels=(2, 10, None, None))
    X = pd.DataFrame(X, columns=["binary", "category", "normal_1", "normal_2"])
    X["category"] = pd.Categorical(X["category"].astype(int), categories=range(10))
    return X, y


def importances(host: str, data, rounds: int) -> pd.DataFrame:
    rows = []
    for seed in SEEDS:
        pytest.importorskip(host)
        X, y = data(seed)
        model = estimator(host, seed, rounds).fit(X, y)
        rows.append(model.unbiased_gain_)  # signed: clipped sums would have a mean > 0
    return pd.DataFrame(rows, columns=list(X.columns))


def mean_and_se(values: pd.DataFrame):
    return values.mean(), values.std(ddof=1) / np.sqrt(len(values))


@pytest.mark.slow
@pytest.mark.parametrize("host", HOSTS)
def test_paper_example_noise_is_not_positive_and_x1_ranks_first(host):
    imp = importances(host, lambda s: paper_example(4000, random_state=s), rounds=30)
    mean, se = mean_and_se(imp)
    for noise in ("X2", "X3"):
        assert mean[noise] <= 2 * se[noise], (noise, mean[noise], se[noise])
        assert mean["X1"] > mean[noise], (noise, mean["X1"], mean[noise])


@pytest.mark.slow
@pytest.mark.parametrize("host", HOSTS)
def test_null_design_no_noise_feature_is_positive(host):
    imp = importances(host, lambda s: null_design(2000, s), rounds=20)
    mean, se = mean_and_se(imp)
    for feature in imp.columns:
        assert mean[feature] <= 2 * se[feature], (feature, mean[feature], se[feature])


@pytest.mark.parametrize("host", HOSTS)
def test_training_report_has_standard_errors_and_selects(host):
    pytest.importorskip(host)
    X, y = paper_example(3000, random_state=1, effect=0.5)
    model = estimator(host, 1, 10).fit(X, y)
    report = report_of(host, model)
    frame = report.to_frame()
    assert report.jackknife.shape == (len(report.splits), 20)
    # every scored split, kept or not, and the estimator's importance is the same sum
    assert not report.splits["kept"].all()
    np.testing.assert_allclose(frame["unbiased_gain"], model.unbiased_gain_)
    assert np.isfinite(frame["std_error"]).all() and (frame["std_error"] > 0).all()
    # X1 (t about 8 here) is selected; a noise feature may be, at level alpha
    assert "X1" in report.select()
    # the jackknife replicates are U with a twentieth of the held-out rows left out: their
    # mean is close to U itself, split by split
    np.testing.assert_allclose(report.jackknife.mean(axis=1), report.splits["unbiased_gain"],
                               rtol=0.5, atol=5.0)
    # n_blocks=0 records no jackknife: standard errors NaN, select() refuses
    bare = report_of(host, estimator(host, 1, 10, n_blocks=0).fit(X, y))
    assert bare.jackknife is None and bare.to_frame()["std_error"].isna().all()
    with pytest.raises(ValueError, match="n_blocks"):
        bare.select()
