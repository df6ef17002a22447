"""Cross-fitted unbiased importance and the scikit-learn selector.

* ``cv=2``: the cross-fitted report is the mean of the two ``unbiased_importance`` reports
  computed by hand on the same folds and draws (both hosts, regression and classification).
* ``first_trees(n)`` equals scoring the model cut after ``n`` trees (LightGBM's own cut).
* ``iterations="best"``: each fold's cut is where the other folds' total U peaks.
* Null Monte Carlo (features of 2, 4, 10, 20 levels and a continuous one): the selector keeps
  a noise feature in at most ``alpha`` of the replications, bound from the replication count.
* Power: on ``y = 0.5 X1 + N(0, 1)`` X1 is kept in almost every replication.
* ``Pipeline`` + ``GridSearchCV``: the selector is refit on each training fold (a feature
  informative only in one half of the rows is kept when training on that half only).
* ``check_estimator``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from cross_fit_cases import by_hand, lgb_regressor  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import null_example, paper_example  # noqa: E402

ALPHA = 0.05
NULL_LEVELS = (2, 4, 10, 20, None)


CASES = {
    "lightgbm-regression-kfold": (
        lambda: lgb_regressor(), "regression", KFold(2, shuffle=True, random_state=3)),
    "xgboost-classifier-int-cv": (
        lambda: xgboost.XGBClassifier(n_estimators=8, max_depth=3, learning_rate=0.2,
                                      n_jobs=1, enable_categorical=True, random_state=0),
        "binary", 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cv2_report_is_the_mean_of_two_reports_by_hand(case):
    make, task, cv = CASES[case]
    X, y = paper_example(800, random_state=1, effect=0.5)
    if task == "binary":
        y = (y > 0.25).astype(int)
    X_before, estimator = X.copy(), make()
    report = uc.cross_fitted_importance(estimator, X, y, cv=cv, random_state=11, n_draws=2)
    # an int cv is stratified for classifiers, as in cross_val_score
    splitter = cv if not isinstance(cv, int) else StratifiedKFold(cv)
    folds = list(splitter.split(X, y))
    r0, r1 = by_hand(estimator, X, y, folds, 11, n_draws=2)

    assert isinstance(report, uc.ImportanceReport) and report.n_folds == 2
    got, f0, f1 = report.to_frame(), r0.to_frame(), r1.to_frame()
    for col in ("unbiased_gain", "biased_gain", "host_gain"):
        np.testing.assert_allclose(got[col], (f0[col] + f1[col]) / 2, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(got["splits"], f0["splits"] + f1["splits"])
    assert (got["unbiased_gain"] != 0).all()
    # per split: the two reports' rows, with the fold
    expected = pd.concat([r0.splits.assign(fold=0), r1.splits.assign(fold=1)],
                         ignore_index=True)
    pd.testing.assert_frame_equal(report.splits[expected.columns], expected)
    assert list(report.splits.columns[:1]) == ["fold"]
    # SE: max of the held-out (within) and between-fold parts of the mean
    within = np.sqrt((f0["std_error"] ** 2 + f1["std_error"] ** 2) / 2 / 2)
    between = np.abs(f0["unbiased_gain"] - f1["unbiased_gain"]) / 2
    np.testing.assert_allclose(got["std_error"], np.maximum(within, between), rtol=1e-12)
    parts = report.std_error_parts()
    np.testing.assert_array_equal(parts["dof"], np.where(between > within, 1, 2 * 19))
    # nothing the caller passed was changed
    pd.testing.assert_frame_equal(X, X_before)
    assert not hasattr(estimator, "n_features_in_")


def test_first_trees_equals_scoring_the_cut_model():
    X, y = paper_example(1500, random_state=2, effect=0.3)
    Xv, yv = paper_example(1500, random_state=3, effect=0.3)
    booster = lgb_regressor(n_estimators=20).fit(X, y).booster_
    cut = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=8))
    assert cut.num_trees() == 8
    full = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=5)
    short = uc.unbiased_importance(cut, X, y, Xv, yv, random_state=5)
    pd.testing.assert_frame_equal(full.first_trees(8).to_frame(), short.to_frame())
    pd.testing.assert_frame_equal(full.first_trees(8).splits, short.splits)
    cumulative = full.cumulative_importance()
    assert cumulative.shape == (20, 3)
    np.testing.assert_allclose(cumulative.loc[7], short.to_frame()["unbiased_gain"],
                               rtol=1e-12)
    np.testing.assert_allclose(cumulative.iloc[-1], full.to_frame()["unbiased_gain"],
                               rtol=1e-12)
    with pytest.raises(ValueError, match="n_trees"):
        full.first_trees(-1)


def test_best_iterations_are_chosen_on_the_other_fold():
    """Fold 0 is cut where fold 1's total U over all features peaks, and the other way round."""
    X, y = paper_example(1200, random_state=4, effect=0.3)
    estimator = lgb_regressor(n_estimators=60, learning_rate=0.2, num_leaves=15)
    cv = KFold(2, shuffle=True, random_state=0)
    report = uc.cross_fitted_importance(estimator, X, y, cv=cv, random_state=1,
                                        iterations="best")
    reports = by_hand(estimator, X, y, list(cv.split(X)), 1)
    peaks = []
    for r in reports:  # one tree per iteration: the curve over trees is the one over iterations
        curve = np.concatenate([[0.0], r.cumulative_importance().sum(axis=1).to_numpy()])
        peaks.append(int(np.argmax(curve)))
    assert report.iterations_kept == [peaks[1], peaks[0]]
    assert report.trees_kept == report.iterations_kept
    assert 0 < min(peaks) and max(peaks) < 60  # a real cut, not all or nothing
    expected = [reports[0].first_trees(peaks[1]), reports[1].first_trees(peaks[0])]
    for k, r in enumerate(report.fold_reports()):
        pd.testing.assert_frame_equal(r.to_frame(), expected[k].to_frame())


def null_keeps(reps: int, iterations=None, n_estimators: int = 5, n: int = 600,
               folds: int = 3) -> np.ndarray:
    """Per replication and noise feature: did the selector (alpha 0.05) keep it?"""
    estimator = lgb_regressor(n_estimators=n_estimators, num_leaves=7)
    kept = np.zeros((reps, len(NULL_LEVELS)), dtype=bool)
    for r in range(reps):
        X, y = null_example(n, random_state=r, levels=NULL_LEVELS)
        selector = uc.UnbiasedSelector(
            estimator, cv=KFold(folds, shuffle=True, random_state=r), alpha=ALPHA,
            iterations=iterations, random_state=r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept[r] = selector.fit(X, y).get_support()
    return kept


@pytest.mark.slow
@pytest.mark.parametrize("n_estimators, iterations", [(1, None), (5, None), (5, "best")])
def test_null_noise_features_are_kept_at_most_alpha_of_the_time(n_estimators, iterations):
    """A single tree is where E[U] = 0 holds exactly; boosted models sit below alpha."""
    reps = 40
    kept = null_keeps(reps, iterations, n_estimators)
    n = kept.size
    # share of (replication, feature) pairs kept: at most alpha + 3 SE of a share at alpha
    assert kept.mean() <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / n), kept.mean(axis=0)
    # no cardinality favoured: each feature within alpha + 3 SE over its replications
    per_feature = ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert (kept.mean(axis=0) <= per_feature).all(), kept.mean(axis=0)


@pytest.mark.slow
def test_power_x1_is_kept_in_almost_every_replication():
    reps = 15
    kept = np.zeros((reps, 3), dtype=bool)
    for r in range(reps):
        X, y = paper_example(1500, random_state=100 + r, effect=0.5)
        selector = uc.UnbiasedSelector(lgb_regressor(n_estimators=10),
                                       cv=KFold(3, shuffle=True, random_state=r), random_state=r)
        kept[r] = selector.fit(X, y).get_support()
    assert kept[:, 0].mean() >= 0.9, kept.mean(axis=0)
    assert kept[:, 1:].mean() <= 0.2, kept.mean(axis=0)


def test_pipeline_grid_search_refits_the_selector_on_each_training_fold():
    """Z drives y only in the first half of the rows (A in all): Z is kept when the training
    fold is that half, dropped when it is the other; a selector fitted once on all rows would
    give one answer for both."""
    rng = np.random.default_rng(0)
    n = 1600
    X = pd.DataFrame(rng.standard_normal((n, 4)), columns=["Z", "A", "B", "C"])
    first = np.arange(n) < n // 2
    y = np.where(first, 1.0 * X["Z"], 0.0) + 0.8 * X["A"] + rng.standard_normal(n)
    halves = [(np.flatnonzero(first), np.flatnonzero(~first)),
              (np.flatnonzero(~first), np.flatnonzero(first))]
    pipe = Pipeline([
        ("select", uc.UnbiasedSelector(lgb_regressor(), cv=KFold(3, shuffle=True,
                                                                 random_state=0),
                                       random_state=0)),
        ("model", LinearRegression()),
    ])

    def keeps_z(estimator, X_test, y_test):
        return float("Z" in estimator.named_steps["select"].get_feature_names_out())

    # every candidate scores the same, so the refit takes the first: alpha 0.05 (with cv=3 and
    # between-fold spread dominating, the test has 2 degrees of freedom; 0.01 needs t > 7)
    search = GridSearchCV(pipe, {"select__alpha": [0.05, 0.01]}, cv=halves, scoring=keeps_z)
    search.fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    for i in range(2):
        assert search.cv_results_["split0_test_score"][i] == 1.0
        assert search.cv_results_["split1_test_score"][i] == 0.0
    assert "Z" in search.best_estimator_.named_steps["select"].get_feature_names_out()


def test_selector_rules_and_attributes():
    X, y = paper_example(1500, random_state=7, effect=0.5)
    base = dict(cv=KFold(3, shuffle=True, random_state=0), random_state=0)
    est = lgb_regressor()
    sel = uc.UnbiasedSelector(est, **base).fit(X, y)
    frame = sel.importances_
    assert list(frame.columns) == ["unbiased_gain", "std_error", "biased_gain", "host_gain",
                                   "splits", "selected"]
    assert list(sel.get_feature_names_out()) == ["X1"] == sel.report_.select(ALPHA)
    assert sel.transform(X).shape == (1500, 1)
    top2 = uc.UnbiasedSelector(est, alpha=None, max_features=2, **base).fit(X, y)
    order = frame["unbiased_gain"].sort_values(ascending=False).index[:2]
    assert set(top2.get_feature_names_out()) == set(order)
    above = uc.UnbiasedSelector(est, threshold=-np.inf, **base).fit(X, y)
    assert above.get_support().all()
    capped = uc.UnbiasedSelector(est, threshold=-np.inf, max_features=1, **base).fit(X, y)
    assert list(capped.get_feature_names_out()) == ["X1"]


def test_report_plot_marks_what_the_cross_fitted_test_selects():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = paper_example(1500, random_state=7, effect=0.5)
    report = uc.cross_fitted_importance(lgb_regressor(), X, y,
                                        cv=KFold(3, shuffle=True, random_state=0),
                                        random_state=0)
    assert report.select(ALPHA) == ["X1"]
    ax = report.plot()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "X1 *" and not any("*" in t for t in labels[1:]), labels
    assert "std_error" in repr(report) and "3 folds" in repr(report)
    assert report._repr_html_().startswith("<p><code>CrossFittedReport(lightgbm, 3 folds, ")
    lines = report.plot_cumulative(top=2).get_lines()
    cumulative = report.cumulative_importance()
    # the two largest absolute final totals, X1 first (the selected one); the runner-up is a
    # noise feature whose rank depends on the draws
    final = cumulative.iloc[-1].abs().sort_values(ascending=False)
    assert final.index[0] == "X1"
    assert [line.get_label() for line in lines[:2]] == list(final.index[:2])
    np.testing.assert_allclose(lines[0].get_ydata(), cumulative["X1"])


@pytest.mark.parametrize("kw, match", [
    ({"alpha": 1.5}, "alpha"), ({"max_features": -1}, "max_features"),
    ({"threshold": np.nan}, "threshold"), ({"iterations": 0}, "iterations"),
    ({"iterations": "best", "cv": KFold(2).split(np.zeros((60, 1)))}, None),
])
def test_selector_bad_parameters(kw, match):
    X, y = paper_example(60, random_state=0)
    if match is None:  # a single split cannot choose its cut on other folds
        kw["cv"] = [next(iter(kw["cv"]))]
        match = "two folds"
    with pytest.raises(ValueError, match=match):
        uc.UnbiasedSelector(lgb_regressor(), **kw).fit(X, y)


def test_cross_fitted_importance_bad_input():
    X, y = paper_example(100, random_state=0)
    with pytest.raises(TypeError, match="LinearRegression"):  # no adapter takes it
        uc.cross_fitted_importance(LinearRegression(), X, y)
    with pytest.raises(ValueError, match="y: expected 100 labels"):
        uc.cross_fitted_importance(lgb_regressor(), X, y[:50])
    with pytest.raises(ValueError, match="sample_weight"):
        uc.cross_fitted_importance(lgb_regressor(), X, y, sample_weight=np.zeros(100))
    # a fold whose held-out rows all have weight 0 (zero weights sorted first, unshuffled
    # folds) was refused by unbiased_importance naming its valid_weight, after fitting
    w = np.r_[np.zeros(50), np.ones(50)]
    with pytest.raises(ValueError, match="sample_weight: every held-out row of fold 0 has "
                                         "weight 0"):
        uc.cross_fitted_importance(lgb_regressor(), X, y, cv=2, sample_weight=w)
    with pytest.raises(ValueError, match="every training row of fold 0"):
        uc.cross_fitted_importance(lgb_regressor(), X, y, sample_weight=w,
                                   cv=[(np.arange(50), np.arange(50, 100))])


def test_other_estimators_are_refused_naming_the_argument_before_any_fold_is_fitted():
    """A random forest was fitted on a fold before the refusal, which named a ``model``; a
    Booster failed inside scikit-learn's clone (``__sklearn_tags__``); a Pipeline got the
    advice meant for a fitted model."""
    from sklearn.ensemble import RandomForestRegressor

    class Forest(RandomForestRegressor):
        def fit(self, X, y, sample_weight=None):
            raise AssertionError("a fold was fitted")

    X, y = paper_example(200, random_state=0)
    Xn = X.assign(X2=X["X2"].cat.codes)
    booster = lightgbm.train({"verbose": -1}, lightgbm.Dataset(Xn, y), 2)
    for estimator, hint in [
        (Forest(), r"\.Forest$"),
        (booster, "a Booster cannot be refitted on each fold's rows"),
        (Pipeline([("gbm", lgb_regressor())]), "pass its gradient-boosting step"),
        (uc.UnbiasedGBMRegressor(), "the native grower measures its own importance"),
    ]:
        with pytest.raises(TypeError, match=r"(?s)^estimator must be a scikit-learn estimator"
                                            rf" of LightGBM.*{hint}"):
            uc.cross_fitted_importance(estimator, Xn, y, cv=2)
    with pytest.raises(TypeError, match="^estimator must be"):
        uc.UnbiasedSelector(Forest(), cv=2).fit(Xn, y)


def test_random_state_none_repeats_and_a_generator_draws_afresh():
    X, y = paper_example(400, random_state=0, effect=0.5)
    est, cv = lgb_regressor(), KFold(2, shuffle=True, random_state=0)

    def gain(random_state):
        return uc.cross_fitted_importance(est, X, y, cv=cv, random_state=random_state
                                          ).to_frame()["unbiased_gain"]

    pd.testing.assert_series_equal(gain(None), gain(0))
    assert not gain(np.random.default_rng(1)).equals(gain(0))


def test_warnings_name_the_fold():
    X, y = paper_example(100, random_state=0)
    with pytest.warns(UserWarning) as record:
        uc.cross_fitted_importance(lgb_regressor(min_child_samples=3), X, y, cv=2, min_k=30)
    messages = [str(w.message) for w in record
                if "splits have no usable evidence" in str(w.message)]
    assert [m[:11] for m in messages] == ["fold 0 of 2", "fold 1 of 2"], messages
    assert all(w.filename == __file__ for w in record)  # at the caller's line


#: checks expected to fail, with why
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data":
        "a row of weight 2 falls in one fold, its two copies in the folds the splitter gives "
        "them; the held-out draws are row by row",
    "check_sample_weight_equivalence_on_sparse_data": "same as on dense data",
}


def test_check_estimator():
    # top 1 feature: every check's transform has a column to compare
    selector = uc.UnbiasedSelector(
        lgb_regressor(n_estimators=5, num_leaves=4, min_child_samples=2), cv=3, alpha=None,
        max_features=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(selector, expected_failed_checks=EXPECTED_FAILED_CHECKS,
                                  on_fail=None)
    status = {r["check_name"]: r["status"] for r in results}
    assert sorted(k for k, v in status.items() if v == "failed") == []
    assert sorted(k for k, v in status.items() if v == "xfail") == sorted(EXPECTED_FAILED_CHECKS)
    assert len(results) > 40


def test_check_estimator_histgradientboosting_sparse_tag_follows_the_estimator():
    """HistGradientBoosting takes no sparse X: the selector around it must not declare sparse
    input (it did, always: check_estimator_sparse_tag and the sparse sample-weight check
    failed); LightGBM and XGBoost take it, and so does the selector around them."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.utils import get_tags

    for est, sparse in [(HistGradientBoostingRegressor(), False),
                        (HistGradientBoostingClassifier(), False), (lgb_regressor(), True),
                        (xgboost.XGBClassifier(), True)]:
        assert get_tags(uc.UnbiasedSelector(est)).input_tags.sparse is sparse, est
    selector = uc.UnbiasedSelector(HistGradientBoostingClassifier(max_iter=5), cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(selector, on_fail=None)
    status = {r["check_name"]: r["status"] for r in results}
    failed = sorted(k for k, v in status.items() if v == "failed")
    # no sparse data is given to it: only the dense sample-weight check may fail
    assert set(failed) <= {"check_sample_weight_equivalence_on_dense_data"}, failed
    assert status["check_estimator_sparse_tag"] == "passed"


def test_import_works_without_scikit_learn(tmp_path):
    code = """
        import sys
        sys.modules["sklearn"] = None  # as if scikit-learn were not installed
        import unbiased_criteria as uc
        assert uc.CrossFittedReport and callable(uc.unbiased_importance)
        for name in ("cross_fitted_importance", "UnbiasedSelector"):
            try:
                getattr(uc, name)
            except ImportError as err:
                print("ImportError", name, err)
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["ImportError", "cross_fitted_importance"], ["ImportError", "UnbiasedSelector"]]
    lazy = subprocess.run(
        [sys.executable, "-c", "import sys, unbiased_criteria; print('sklearn' in sys.modules)"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert lazy.stdout.strip() == "False", lazy.stderr


if __name__ == "__main__":  # the README's null shares: python tests/test_selection_tool.py
    for trees, iterations in ((1, None), (20, None), (20, "best")):
        kept = null_keeps(200, iterations, trees, n=1000, folds=5)
        print(f"{trees} trees, iterations={iterations}: share kept {kept.mean():.3f}, by "
              f"feature {np.round(kept.mean(axis=0), 3).tolist()}", flush=True)


def test_transform_keeps_a_dataframe_with_category_columns():
    """A frame with text categories and booleans used to reach numpy (scikit-learn's transform)
    and fail ("Cannot cast str dtype to float64"); it stays a frame, dtypes kept, so a host
    downstream in a Pipeline still sees its categories."""
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({"cat": pd.Categorical(rng.choice(list("abcd"), n)),
                      "flag": rng.random(n) > 0.5, "x": rng.standard_normal(n)})
    y = 2.0 * (X["cat"] == "a") + X["x"] + 0.3 * rng.standard_normal(n)
    sel = uc.UnbiasedSelector(lgb_regressor(), cv=3, alpha=None, max_features=2,
                              random_state=0).fit(X, y)
    out = sel.transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(sel.get_feature_names_out()) == ["cat", "x"]
    pd.testing.assert_frame_equal(out, X[["cat", "x"]])
    pipe = Pipeline([("select", clone(sel)), ("model", lgb_regressor())]).fit(X, y)
    assert pipe.named_steps["model"].booster_.pandas_categorical == [["a", "b", "c", "d"]]
    assert np.isfinite(pipe.predict(X)).all()
    with pytest.raises(ValueError, match="missing:\n- flag"):  # still checked against fit
        sel.transform(X[["cat", "x"]])


def test_folds_smaller_than_n_blocks_share_one_block_count():
    """Every fold's jackknife has the same blocks (the folds' replicates are combined), one
    held-out row each when the smallest fold has fewer rows than n_blocks: said once."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + rng.normal(size=40)
    with pytest.warns(UserWarning, match=r"n_blocks=20 but the smallest fold holds 13 "
                                         r"held-out rows: the standard errors use 13") as record:
        report = uc.cross_fitted_importance(lgb_regressor(min_child_samples=3), X, y, cv=3,
                                            min_k=2)
    assert sum("smallest fold" in str(w.message) for w in record) == 1
    assert not any("jackknife blocks of one row" in str(w.message) for w in record)
    assert np.isfinite(report.to_frame()["std_error"]).all()


@pytest.mark.parametrize("as_frame", [False, True])
def test_importances_are_named_as_get_feature_names_out(as_frame):
    """Fitted on an array (or a frame with integer column labels), importances_ was indexed
    by the host's invented names (Column_0, f0, '0') while get_feature_names_out said x0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = 2 * X[:, 0] + X[:, 1] + rng.normal(size=600)
    data = pd.DataFrame(X) if as_frame else X
    for estimator in (lgb_regressor(), xgboost.XGBRegressor(n_estimators=20, n_jobs=1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            selector = uc.UnbiasedSelector(estimator, cv=3, random_state=0).fit(data, y)
        assert list(selector.importances_.index) == ["x0", "x1", "x2", "x3"]
        kept = selector.importances_.index[selector.importances_["selected"]]
        assert list(kept) == list(selector.get_feature_names_out())
        assert "x0" in kept
