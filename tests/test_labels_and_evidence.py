"""Labels as the user has them (a classifier's classes_), and no silent nothing: too few
held-out rows, zero trees, zero weights, bad memory_budget / threshold are said so."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    X, y = paper_example(600, random_state=0)
    Xv, yv = paper_example(600, random_state=1)
    return X, y, Xv, yv


def classes(y, names):
    """Labels ``names[bin]`` from y's terciles (3 names) or its median (2 names)."""
    cuts = np.quantile(y, np.linspace(0, 1, len(names) + 1)[1:-1])
    return np.asarray(names, dtype=object)[np.digitize(y, cuts)]


def same_report(a, b):
    pd.testing.assert_frame_equal(a.splits, b.splits)
    np.testing.assert_array_equal(a.jackknife, b.jackknife)


@pytest.mark.parametrize("names", [["No", "Yes"], ["a", "b", "c"], [1, 2], [10, 20, 30]],
                         ids=["binary-str", "multi-str", "binary-int", "multi-int"])
def test_lightgbm_classifier_labels_go_through_classes(data, names):
    X, y, Xv, yv = data
    ys, yvs = classes(y, names), classes(yv, names)
    if isinstance(names[0], int):
        ys, yvs = ys.astype(np.int64), yvs.astype(np.int64)
    clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=7, verbose=-1).fit(X, ys)
    report = uc.unbiased_importance(clf, X, ys, Xv, pd.Series(yvs), random_state=0)
    # the Booster was trained on the indices of classes_
    codes = {c: i for i, c in enumerate(clf.classes_)}
    enc = np.array([codes[v] for v in ys]), np.array([codes[v] for v in yvs])
    same_report(report, uc.unbiased_importance(clf.booster_, X, enc[0], Xv, enc[1],
                                               random_state=0))
    pruned = uc.prune(clf, X, ys, Xv, yvs, random_state=0)
    expected = uc.prune(clf.booster_, X, enc[0], Xv, enc[1], random_state=0)
    np.testing.assert_allclose(pruned.predict_proba(Xv), expected.predict(Xv).reshape(
        len(Xv), -1) if len(names) > 2 else np.column_stack([1 - expected.predict(Xv),
                                                              expected.predict(Xv)]))


@pytest.mark.parametrize("n_class", [2, 3])
def test_xgboost_classifier_labels_go_through_classes(data, n_class):
    X, y, Xv, yv = data
    names = list(range(n_class))
    ys, yvs = classes(y, names).astype(np.int64), classes(yv, names).astype(np.int64)
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, nthread=1,
                            enable_categorical=True).fit(X, ys)
    report = uc.unbiased_importance(clf, X, ys, Xv, yvs, random_state=0)
    same_report(report, uc.unbiased_importance(clf.get_booster(), X, ys, Xv, yvs,
                                               random_state=0))
    with pytest.raises(ValueError, match=r"y_valid holds labels .*\(7\).*classes_ are \[0, 1"):
        uc.unbiased_importance(clf, X, ys, Xv, np.where(yvs == 0, 7, yvs))


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
def test_boolean_labels_of_a_classifier_fitted_on_them(data, host):
    """XGBClassifier fitted on boolean labels has classes_ [0, 1]: the same boolean labels
    were refused as "not fitted on (False, True)". LightGBM keeps [False, True]."""
    X, y, Xv, yv = data
    yb, yvb = y > np.median(y), yv > np.median(y)
    if host == "xgboost":
        clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, nthread=1,
                                enable_categorical=True).fit(X, yb)
    else:
        clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=7, verbose=-1).fit(X, yb)
    report = uc.unbiased_importance(clf, X, yb, Xv, pd.Series(yvb), random_state=0)
    # the labels as the classifier's own classes_
    as_classes = clf.classes_[yb.astype(int)], clf.classes_[yvb.astype(int)]
    same_report(report, uc.unbiased_importance(clf, X, as_classes[0], Xv, as_classes[1],
                                               random_state=0))
    uc.prune(clf, X, yb, Xv, yvb, random_state=0)
    # 0 and 1 for False and True, as numpy compares them (LightGBM's classes_ are booleans)
    same_report(report, uc.unbiased_importance(clf, X, yb.astype(int), Xv, yvb.astype(float),
                                               random_state=0))
    with pytest.raises(ValueError, match=r"y_valid holds labels .*\(2\)"):
        uc.unbiased_importance(clf, X, yb, Xv, np.where(yvb, 2, 0))


def test_unseen_labels_are_named(data):
    X, y, Xv, yv = data
    ys, yvs = classes(y, ["No", "Yes"]), classes(yv, ["No", "Yes"])
    clf = lgb.LGBMClassifier(n_estimators=3, verbose=-1).fit(X, ys)
    bad = yvs.copy()
    bad[:3] = "Maybe"
    with pytest.raises(ValueError, match=r"y_valid holds labels .*'Maybe'.*\['No', 'Yes'\]"):
        uc.unbiased_importance(clf, X, ys, Xv, bad)
    with pytest.raises(ValueError, match="y_train holds labels"):
        uc.prune(clf, X, np.where(ys == "No", "no", ys), Xv, yvs)
    assert (bad[:3] == "Maybe").all() and bad.dtype == object  # not modified


def test_too_few_held_out_rows_are_said(data):
    X, y, Xv, yv = data
    model = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 4,
                       "min_data_in_leaf": 5}, lgb.Dataset(X, y), 10)
    with pytest.warns(UserWarning, match=r"30 of 30 splits have no usable evidence.*30 have "
                                         r"fewer than min_k=5 held-out rows in a child \(of 3 "
                                         r"held-out rows\).*needs about"):
        report = uc.unbiased_importance(model, X, y, Xv[:3], yv[:3], random_state=0)
    with pytest.raises(ValueError, match="no split had usable evidence"):
        report.select()
    with pytest.warns(UserWarning, match="30 of 30 splits"):
        uc.prune(model, X, y, Xv[:3], yv[:3], random_state=0)
    # some trees with usable splits, some without: one jackknife row per split
    with pytest.warns(UserWarning, match="have fewer than min_k"):
        report = uc.unbiased_importance(model, X, y, Xv[:15], yv[:15], random_state=0)
    assert report.jackknife.shape == (len(report.splits), 15)  # one block per row
    assert np.isfinite(report.to_frame()["std_error"]).all()
    report.select()
    # enough rows: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)


def test_zero_weight_rows_are_said_not_blamed_on_min_k(data):
    """All but one held-out row of weight 0: every split lacks evidence because a node's drawn
    rows have zero hessian; the warning blamed min_k and advised more rows or a smaller
    min_k, neither of which helps."""
    X, y, Xv, yv = data
    model = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 4},
                      lgb.Dataset(X, y), 10)
    w = np.zeros(len(yv))
    w[0] = 1.0
    for min_k in (5, 1):
        with pytest.warns(UserWarning, match=r"splits have no usable evidence") as record:
            report = uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=w,
                                            min_k=min_k, random_state=0)
        message = str(record[0].message)
        splits = report.splits
        weightless = int((~splits["usable"] & (splits["k"] >= min_k)).sum())
        assert weightless > 0 and f"{weightless} have enough held-out rows but " \
            "(practically) no curvature" in message and "weight 0" in message
        few = int((~splits["usable"] & (splits["k"] < min_k)).sum())
        assert (f"{few} have fewer than min_k" in message) == (few > 0)
    with pytest.raises(ValueError, match="only rows of weight 0 among a node's drawn rows"):
        report.select()


def test_zero_trees_and_zero_weights(data):
    X, y, Xv, yv = data
    empty = xgb.train({"base_score": 0.0}, xgb.DMatrix(X, y, enable_categorical=True), 0)
    with pytest.warns(UserWarning, match="the model has no trees"):
        report = uc.unbiased_importance(empty, X, y, Xv, yv)
    assert len(report.splits) == 0
    with pytest.raises(ValueError, match="the model has no splits"):
        report.select()
    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="valid_weight is 0 for every row"):
        uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=np.zeros(len(yv)))
    with pytest.raises(ValueError, match="train_weight is 0 for every row"):
        uc.prune(model, X, y, Xv, yv, train_weight=np.zeros(len(y)))


@pytest.mark.parametrize("budget", [0, -1, float("nan"), "1GB", True])
def test_memory_budget_must_be_positive(data, budget):
    X, y, Xv, yv = data
    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="memory_budget must be a positive number"):
        uc.unbiased_importance(model, X, y, Xv, yv, memory_budget=budget)
    with pytest.raises(ValueError, match="memory_budget"):
        uc.prune(model, X, y, Xv, yv, memory_budget=budget)


@pytest.mark.parametrize("threshold", [float("nan"), None, "0"])
def test_threshold_must_be_a_number(data, threshold):
    X, y, Xv, yv = data
    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="threshold must be a number") as error:
        uc.prune(model, X, y, Xv, yv, threshold=threshold)
    assert "prune_threshold" not in str(error.value)
    assert "or None" not in str(error.value)  # prune() has no "no pruning" value


def test_validation_only_unusable_splits_are_blamed_on_the_right_cause(data):
    """Validation-only mode, no weights: a split unusable in one cross-fit direction only was
    reported with the other direction's k (>= min_k) and blamed on zero-hessian rows, which
    there are none of. Its k is now the smaller draw; the rows it says are needed count the
    half that gives the ratios (twice that many rows make most splits usable)."""
    X, y, Xv, yv = data
    model = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 4,
                       "num_threads": 1}, lgb.Dataset(X, y), 5)
    with pytest.warns(UserWarning, match="splits have no usable evidence") as record:
        report = uc.unbiased_importance(model, None, None, Xv[:30], yv[:30], random_state=0)
    message = str(record[0].message)
    assert "zero hessian" not in message
    splits = report.splits
    assert not (~splits["usable"] & (splits["k"] >= 5)).any()
    need = int(re.search(r"needs about (\d+) held-out rows", message).group(1))
    assert need > 30
    bigger = uc.unbiased_importance(model, None, None, Xv[:2 * need], yv[:2 * need],
                                    random_state=0)
    assert bigger.splits["usable"].mean() >= 0.5
