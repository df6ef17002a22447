"""Cross-fitting with splitters whose held-out sets overlap.

The cross-fitted standard error treats the folds' held-out sets as disjoint. Folds that repeat
a partition (``RepeatedKFold``, a list repeating one) are read as repetitions, each combined
with the disjoint-fold formula and the repetitions' standard errors averaged; any other
overlap (``ShuffleSplit``, arbitrary lists) is refused naming ``cv`` before any fit.

* the repetitions are found from the index sets (splitters of scikit-learn and lists);
* ``KFold(2)`` twice: the report equals the formula applied by hand to the four
  ``unbiased_importance`` reports (mean of the two repetitions' standard errors), where all
  four folds pooled as one partition gave about ``1/sqrt(2)`` of it;
* ``iterations="best"`` chooses a fold's cut only on folds that hold out none of its rows;
* ``UnbiasedSelector`` inherits the refusal.

Calibration (Monte Carlo) is in ``tests/statistics/test_repeated_cv_calibration.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

lightgbm = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from cross_fit_cases import by_hand, lgb_regressor  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GroupKFold,
    KFold,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    ShuffleSplit,
    TimeSeriesSplit,
)

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cross_fit import _fold_repetitions, cross_fit_folds  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402


def helds(splitter, n, y=None, groups=None):
    return [held for _, held in splitter.split(np.zeros((n, 1)), y, groups)]


def test_repetitions_are_found_from_the_held_out_rows():
    n = 60
    y = np.arange(n) % 3
    assert _fold_repetitions(helds(KFold(4), n), n) == [0] * 4
    assert _fold_repetitions(helds(RepeatedKFold(n_splits=4, n_repeats=3, random_state=0),
                                   n), n) == [0] * 4 + [1] * 4 + [2] * 4
    assert _fold_repetitions(
        helds(RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0), n, y),
        n) == [0] * 3 + [1] * 3
    # disjoint held-out sets that do not cover every row: one repetition
    assert _fold_repetitions(helds(TimeSeriesSplit(4), n), n) == [0] * 4
    assert _fold_repetitions(helds(GroupKFold(3), n, groups=np.arange(n) // 7), n) == [0] * 3
    # repetitions of different partitions of the same rows, of different fold counts
    two, three = helds(KFold(2), n), helds(KFold(3, shuffle=True, random_state=1), n)
    assert _fold_repetitions(two + three + two, n) == [0, 0, 1, 1, 1, 2, 2]
    # a row listed twice in one fold is no overlap between folds
    doubled = [np.r_[h, h[:1]] for h in two]
    assert _fold_repetitions(doubled, n) == [0, 0]


@pytest.mark.parametrize("folds, match", [
    (lambda n: helds(ShuffleSplit(5, test_size=0.25, random_state=0), n),
     r"cv: the held-out rows of folds 0 and 1 overlap"),
    # overlapping halves
    (lambda n: [np.arange(0, 40), np.arange(30, 60)], r"folds 0 and 1 overlap"),
    # one partition and then part of another
    (lambda n: helds(KFold(3), n) + helds(KFold(2), n)[:1],
     r"cv: fold 3 holds out 30 of the 60 rows"),
])
def test_overlap_that_is_not_a_repetition_is_refused_before_any_fit(folds, match):
    n = 60
    X, y = np.random.default_rng(0).normal(size=(n, 2)), np.zeros(n)
    held = folds(n)
    pairs = [(np.setdiff1d(np.arange(n), h), h) for h in held]

    def fit(*_):
        raise AssertionError("no fold may be fitted")

    with pytest.raises(ValueError, match=match) as error:
        cross_fit_folds(fit, X, y, pairs)
    assert "KFold" in str(error.value)  # says what is expected


def test_shufflesplit_is_refused_by_cross_fitted_importance_and_the_selector():
    X, y = paper_example(300, random_state=0)
    cv = ShuffleSplit(4, test_size=0.25, random_state=0)
    with pytest.raises(ValueError, match=r"^cv: the held-out rows of folds 0 and 1 overlap"):
        uc.cross_fitted_importance(lgb_regressor(), X, y, cv=cv)
    with pytest.raises(ValueError, match=r"^cv: the held-out rows of folds 0 and 1 overlap"):
        uc.UnbiasedSelector(lgb_regressor(), cv=cv).fit(X, y)


def test_a_repeated_partition_is_combined_per_repetition_as_by_hand():
    """``KFold(2)`` twice: four folds in two repetitions. The estimate is the mean of the four
    totals; the SE the mean of the two repetitions' ``max(within, between)`` (the formula of
    two disjoint folds), its dof the smaller. Pooling the four folds as one partition (the
    old formula) gave about 1/sqrt(2) of it: two copies of a fold are not two samples."""
    X, y = paper_example(800, random_state=1, effect=0.5)
    estimator = lgb_regressor()
    folds = list(KFold(2, shuffle=True, random_state=3).split(X)) * 2
    report = uc.cross_fitted_importance(estimator, X, y, cv=folds, random_state=11)
    reports = [r.to_frame() for r in by_hand(estimator, X, y, folds, 11)]

    assert report.repetitions == [0, 0, 1, 1] and report.n_repetitions == 2
    assert "4 folds in 2 repetitions" in repr(report)
    got = report.to_frame()
    for col in ("unbiased_gain", "biased_gain", "host_gain"):
        expected = sum(f[col] for f in reports) / 4
        np.testing.assert_allclose(got[col], expected, rtol=1e-12, atol=1e-9)
    within, between, se, dof = [], [], [], []
    for a, b in ((0, 1), (2, 3)):
        fa, fb = reports[a], reports[b]
        w = np.sqrt((fa["std_error"] ** 2 + fb["std_error"] ** 2) / 2 / 2)
        d = np.abs(fa["unbiased_gain"] - fb["unbiased_gain"]) / 2
        within.append(w)
        between.append(d)
        se.append(np.maximum(w, d))
        dof.append(np.where(d > w, 1, 2 * 19))
    np.testing.assert_allclose(got["std_error"], (se[0] + se[1]) / 2, rtol=1e-12)
    parts = report.std_error_parts()
    np.testing.assert_allclose(parts["within"], (within[0] + within[1]) / 2, rtol=1e-12)
    np.testing.assert_allclose(parts["between"], (between[0] + between[1]) / 2, rtol=1e-12)
    np.testing.assert_array_equal(parts["dof"], np.minimum(dof[0], dof[1]))

    # the old formula, all four folds as one partition, is what was reported before
    pooled = uc.CrossFittedReport.from_folds(report.fold_reports(), n_blocks=20)
    ratio = pooled.std_error() / report.std_error()
    assert ratio.median() < 0.8, ratio  # about 1/sqrt(2)
    # one repetition alone: about the same SE as the four folds (same folds, other draws)
    single = uc.cross_fitted_importance(estimator, X, y, cv=folds[:2], random_state=11)
    assert (report.std_error() / single.std_error()).median() > 0.85


def test_repeated_kfold_report_keeps_its_repetitions():
    X, y = paper_example(600, random_state=2, effect=0.5)
    cv = RepeatedKFold(n_splits=2, n_repeats=2, random_state=0)
    report = uc.cross_fitted_importance(lgb_regressor(), X, y, cv=cv, random_state=0)
    assert report.repetitions == [0, 0, 1, 1]
    cut = report.first_trees(3)
    assert cut.repetitions == [0, 0, 1, 1]
    folds = [r.std_error() for r in report.fold_reports()]
    assert np.isfinite(report.std_error()).all() and len(folds) == 4
    # the selector's report is the function's
    selector = uc.UnbiasedSelector(lgb_regressor(), cv=cv, random_state=0).fit(X, y)
    assert selector.report_.repetitions == [0, 0, 1, 1]
    pd.testing.assert_frame_equal(selector.report_.to_frame(), report.to_frame())


def test_repetitions_of_different_fold_counts_weigh_each_repetition_equally():
    """KFold(2) then KFold(3) of the same rows: the estimate is the mean of the two
    repetitions' means (each row's evidence counted once per repetition), not the mean of
    the five folds, which would weigh the 3-fold repetition 3/5."""
    X, y = paper_example(900, random_state=5, effect=0.5)
    folds = (list(KFold(2, shuffle=True, random_state=0).split(X))
             + list(KFold(3, shuffle=True, random_state=1).split(X)))
    report = uc.cross_fitted_importance(lgb_regressor(), X, y, cv=folds, random_state=2)
    assert report.repetitions == [0, 0, 1, 1, 1]
    totals = report.fold_frame()
    expected = (totals.iloc[:2].mean() + totals.iloc[2:].mean()) / 2
    np.testing.assert_allclose(report.to_frame()["unbiased_gain"], expected, rtol=1e-12)
    cumulative = report.cumulative_importance()
    np.testing.assert_allclose(cumulative.iloc[-1], expected, rtol=1e-9, atol=1e-9)
    first = uc.CrossFittedReport.from_folds(report.fold_reports()[:2], n_blocks=20)
    second = uc.CrossFittedReport.from_folds(report.fold_reports()[2:], n_blocks=20)
    np.testing.assert_allclose(report.std_error(),
                               (first.std_error() + second.std_error()) / 2, rtol=1e-12)


def test_best_iterations_are_chosen_on_folds_holding_out_none_of_the_rows():
    """KFold(2) twice: fold 0's copy (fold 2) holds out fold 0's rows, so fold 0's cut is
    chosen on folds 1 and 3 only (each fold's own curve over its own held-out rows)."""
    X, y = paper_example(1200, random_state=4, effect=0.3)
    estimator = lgb_regressor(n_estimators=40, learning_rate=0.2, num_leaves=15)
    folds = list(KFold(2, shuffle=True, random_state=0).split(X)) * 2
    report = uc.cross_fitted_importance(estimator, X, y, cv=folds, random_state=1,
                                        iterations="best")
    curves = [np.concatenate([[0.0], r.cumulative_importance().sum(axis=1).to_numpy()])
              for r in by_hand(estimator, X, y, folds, 1)]
    others = {0: (1, 3), 1: (0, 2), 2: (1, 3), 3: (0, 2)}
    expected = [int(np.argmax(curves[a] + curves[b])) for a, b in others.values()]
    assert report.iterations_kept == expected
    # a fold that shares held-out rows with every other fold has no cut to choose from
    with pytest.raises(ValueError, match=r'iterations="best": every other fold holds out'):
        uc.cross_fitted_importance(estimator, X, y, cv=folds[:1] * 2, iterations="best")


def test_from_folds_repetitions_are_checked():
    X, y = paper_example(400, random_state=0)
    report = uc.cross_fitted_importance(lgb_regressor(n_estimators=3), X, y, cv=2)
    folds = report.fold_reports()
    for bad in ([0], [0, 2], [1, 1], [0.0, 1.0], "ab"):
        with pytest.raises(ValueError, match="^repetitions: expected the repetition of each"):
            uc.CrossFittedReport.from_folds(folds, n_blocks=20, repetitions=bad)
    ok = uc.CrossFittedReport.from_folds(folds, n_blocks=20, repetitions=[1, 0])
    assert ok.n_repetitions == 2
