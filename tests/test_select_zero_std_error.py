"""select() on a feature whose standard error is exactly 0.

With two held-out rows and ``min_k=1`` a split's U is computed from both rows, and every
jackknife replicate (one row left out) leaves a child without a row, so counts 0: U > 0 with
a standard error of 0. ``U / 0 = +inf`` was read as infinite significance and the feature was
selected, with and without a correction. It is no test: nothing is selected, and a warning
names the feature.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cross_fit import CrossFittedReport  # noqa: E402


@pytest.fixture(scope="module")
def two_row_report():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X[:, 0] + rng.normal(size=500)
    Xv = rng.normal(size=(50, 3))[:2]
    yv = Xv[:, 0] + rng.normal(size=50)[:2]
    model = lightgbm.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                           lightgbm.Dataset(X, y), 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two blocks of one row; few usable splits
        return uc.unbiased_importance(model, X, y, Xv, yv, min_k=1, random_state=0, n_jobs=1)


@pytest.mark.parametrize("correction", [None, "holm", "fdr_bh"])
def test_zero_standard_error_selects_nothing(two_row_report, correction):
    frame = two_row_report.to_frame()
    # the situation: the report's own numbers, U > 0 over a standard error of exactly 0
    assert frame.loc["Column_0", "unbiased_gain"] > 0
    assert frame.loc["Column_0", "std_error"] == 0.0
    with pytest.warns(UserWarning, match=r"^Column_0: unbiased_gain > 0 but no test") as rec:
        assert two_row_report.select(correction=correction) == []
    assert rec[0].filename == __file__  # at the caller's line


def test_cross_fitted_zero_standard_error_selects_nothing(two_row_report):
    # two identical folds: no jackknife variation within them and none between them
    report = CrossFittedReport.from_folds([two_row_report, two_row_report], n_blocks=2)
    parts = report.std_error_parts()
    assert parts.loc["Column_0", "std_error"] == 0.0
    assert report.to_frame().loc["Column_0", "unbiased_gain"] > 0
    for correction in (None, "holm"):
        with pytest.warns(UserWarning, match=r"^Column_0: unbiased_gain > 0 but no test"):
            assert report.select(correction=correction) == []
