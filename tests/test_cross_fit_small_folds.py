"""Cross-fitting with folds of a single held-out row beside larger ones.

Every fold must have the same jackknife blocks (their replicates are combined). A fold of one
held-out row has no usable split (no split has a held-out row in both children), so its U and
every replicate are 0 whatever the blocks, as ``unbiased_importance`` gives for one row; the
blocks are set by the smallest fold of two rows or more. Before, 11 rows in 10 folds gave the
2-row fold 2 blocks and the 1-row folds 20, and ``np.concatenate`` failed with a raw numpy
error inside ``CrossFittedReport.from_folds``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

lightgbm = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import KFold, LeaveOneOut  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cross_fit import CrossFittedReport  # noqa: E402


def estimator():
    return lightgbm.LGBMRegressor(n_estimators=10, min_child_samples=1, min_data_in_bin=1,
                                  verbose=-1, n_jobs=1, random_state=0)


def data(n):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] + rng.normal(size=n)


def by_hand(X, y, folds, n_blocks):
    """Each fold's ``unbiased_importance`` with the fold's seed (as cross-fitting draws)."""
    seeds = np.random.SeedSequence(0).spawn(len(folds))
    out = []
    for (train, held), seed in zip(folds, seeds):
        model = clone(estimator()).fit(X[train], y[train])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no usable split in a 1-row fold
            out.append(uc.unbiased_importance(model, X[train], y[train], X[held], y[held],
                                              min_k=1, random_state=seed, n_blocks=n_blocks))
    return out


def test_one_row_folds_beside_a_two_row_fold_give_a_report():
    X, y = data(11)
    folds = list(KFold(10).split(X))  # held-out rows: 2, 1, 1, ..., 1
    with pytest.warns(UserWarning, match=r"n_blocks=20 but the smallest fold of more than one "
                                         r"held-out row holds 2 held-out rows: the standard "
                                         r"errors use 2 jackknife blocks in every fold"):
        report = uc.cross_fitted_importance(estimator(), X, y, cv=10, min_k=1,
                                            random_state=0)
    assert report.jackknife.shape[1] == 2
    hand = by_hand(X, y, folds, n_blocks=2)
    assert hand[0].splits["usable"].any()  # the 2-row fold has evidence: a real test
    for k, (got, want) in enumerate(zip(report.fold_reports(), hand)):
        pd.testing.assert_frame_equal(got.to_frame(), want.to_frame(), obj=f"fold {k}")
    # a 1-row fold is what unbiased_importance gives for one row with its own n_blocks=20
    for one_row in by_hand(X, y, folds, n_blocks=20)[1:]:
        assert not one_row.splits["usable"].any()
        assert (one_row.to_frame()["std_error"] == 0).all()
    frame = report.to_frame()
    np.testing.assert_allclose(frame["unbiased_gain"],
                               np.mean([r.to_frame()["unbiased_gain"] for r in hand], axis=0))
    assert np.isfinite(frame["std_error"]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        selector = uc.UnbiasedSelector(estimator(), cv=10, min_k=1, random_state=0).fit(X, y)
    pd.testing.assert_series_equal(selector.importances_["unbiased_gain"],
                                   frame["unbiased_gain"].set_axis(
                                       pd.Index(["x0", "x1", "x2"], name="feature")))


def test_six_rows_in_five_folds_give_a_report():
    X, y = data(6)  # held-out rows 2, 1, 1, 1, 1; default min_k: nothing usable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = uc.cross_fitted_importance(estimator(), X, y, cv=5, random_state=0)
        selector = uc.UnbiasedSelector(estimator(), cv=5).fit(X, y)
    assert report.jackknife.shape[1] == 2
    assert (report.to_frame()[["unbiased_gain", "std_error"]] == 0).all().all()
    assert not selector.get_support().any()


def test_leave_one_out_keeps_n_blocks():
    X, y = data(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        report = uc.cross_fitted_importance(estimator(), X, y, cv=LeaveOneOut(), min_k=1)
    assert report.n_folds == 8 and report.jackknife.shape[1] == 20
    assert not any("n_blocks=20 but" in str(w.message) for w in record)
    assert (report.to_frame()[["unbiased_gain", "std_error"]] == 0).all().all()


def test_from_folds_refuses_reports_of_other_block_counts():
    X, y = data(40)
    folds = list(KFold(2).split(X))
    reports = by_hand(X, y, folds, n_blocks=4)
    reports[1] = by_hand(X, y, folds, n_blocks=5)[1]
    with pytest.raises(ValueError, match=r"^reports: fold 1's report has 5 jackknife blocks, "
                                         r"expected n_blocks=4 in every fold"):
        CrossFittedReport.from_folds(reports, n_blocks=4)
