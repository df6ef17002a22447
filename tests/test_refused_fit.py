"""A refused ``fit`` leaves a fitted estimator as it was, for every family (LightGBM and
XGBoost hooks, native grower).

A refit refused because of one of the library's options (or of its data, after the labels
were encoded) kept the old model but changed ``classes_`` (integer codes predicted) or the
category mapping and feature count (other predictions, an IndexError). Oracle: the
estimator's own predictions before the refused refit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from estimator_families import FAMILIES, HOOKS  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

import unbiased_criteria as uc  # noqa: E402

#: the library's own options, each set to a value the training hook refuses
BAD_OPTIONS = [dict(n_draws=0), dict(holdout_fraction=1.5), dict(min_k=0), dict(n_blocks=1),
               dict(redraw_holdout="yes"), dict(prune_threshold="x")]


def _labelled(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3))
    return X, np.where(X[:, 0] > 0, "spam", "ham")


def _snapshot(model, X):
    out = {"predict": model.predict(X)}
    if hasattr(model, "predict_proba"):
        out["proba"] = model.predict_proba(X)
        out["classes"] = np.asarray(model.classes_)
    out["n_features_in_"] = model.n_features_in_
    out["importance"] = model.feature_importances_
    return out


def _assert_same(before, after):
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


@pytest.mark.parametrize("family", ["lightgbm-classifier", "xgboost-classifier"])
@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=lambda d: next(iter(d)))
def test_refit_refused_by_an_option_keeps_the_classifier(family, bad):
    X, y = _labelled()
    model = FAMILIES[family][0](n_estimators=10).fit(X, y)
    before = _snapshot(model, X)
    assert set(before["predict"]) <= {"ham", "spam"}
    model.set_params(**bad)
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        model.fit(X, (X[:, 1] > 0).astype(int))  # another data set, labels 0/1
    _assert_same(before, _snapshot(model, X))
    # and it refits once the option is right again
    model.set_params(**{name: FAMILIES[family][0]().get_params()[name]})
    assert set(model.fit(X, (X[:, 1] > 0).astype(int)).predict(X)) == {0, 1}


@pytest.mark.parametrize("family", HOOKS)
def test_refit_refused_by_its_data_keeps_the_hook_estimator(family):
    """Refused after the host began (labels encoded, features counted): the sample weights
    do not match the five-column data set's rows."""
    make, classifier = FAMILIES[family]
    X, y = _labelled()
    if not classifier:
        y = X[:, 0] + 0.1 * X[:, 1]
    model = make(n_estimators=10).fit(X, y)
    before = _snapshot(model, X)
    X5 = np.random.default_rng(1).normal(size=(300, 5))
    with pytest.raises(ValueError, match="sample_weight"):
        model.fit(X5, (X5[:, 0] > 0).astype(int), sample_weight=np.ones(7))
    _assert_same(before, _snapshot(model, X))


@pytest.mark.parametrize("family", HOOKS)
def test_first_fit_refused_leaves_the_hook_estimator_unfitted(family):
    X, y = _labelled()
    model = FAMILIES[family][0](n_estimators=5)
    with pytest.raises(ValueError, match="sample_weight"):
        model.fit(X, (X[:, 0] > 0).astype(int), sample_weight=np.ones(7))
    with pytest.raises(NotFittedError):
        check_is_fitted(model)


def _categories_frame(order=("u", "v", "w")):
    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n),
                      "cat": pd.Categorical(rng.choice(["u", "v", "w"], n),
                                            categories=["u", "v", "w"])})
    y = X.a + 3.0 * (X.cat == "u") + 0.1 * rng.normal(size=n)
    X["cat"] = X["cat"].cat.reorder_categories(list(order))
    return X, y.to_numpy()


@pytest.mark.parametrize("bad", [dict(learning_rate=-1.0), dict(num_leaves=1),
                                 dict(n_blocks=1), dict(criterion="gini"),
                                 dict(objective="quantile")], ids=lambda d: next(iter(d)))
def test_native_regressor_refit_refused_keeps_the_category_mapping(bad):
    X, y = _categories_frame()
    model = uc.UnbiasedGBMRegressor(n_estimators=30, random_state=0).fit(X, y)
    before = _snapshot(model, X)
    X2, _ = _categories_frame(order=("w", "v", "u"))  # the same rows, categories reordered
    model.set_params(**bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        model.fit(X2, y)
    _assert_same(before, _snapshot(model, X))
    # a refit refused on its data, after the categories were read: the same
    model.set_params(**uc.UnbiasedGBMRegressor().get_params() | dict(n_estimators=30,
                                                                      random_state=0))
    with pytest.raises(ValueError, match="eval_sample_weight"):
        model.fit(X2, y, eval_set=[(X2, y)], eval_sample_weight=[None, None])
    _assert_same(before, _snapshot(model, X))


def test_native_refit_refused_on_another_column_count_keeps_the_model():
    X, y = _categories_frame()
    X3 = X.assign(b=np.arange(len(X), dtype=float))
    model = uc.UnbiasedGBMRegressor(n_estimators=20).fit(X3, y)
    before = _snapshot(model, X3)
    X5 = X3.assign(c=1.0, d=2.0)
    model.set_params(learning_rate=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        model.fit(X5, y)
    _assert_same(before, _snapshot(model, X3))  # was: IndexError in predict


@pytest.mark.parametrize("bad", [dict(num_leaves=1), dict(objective="regression")],
                         ids=lambda d: next(iter(d)))
def test_native_classifier_refit_refused_keeps_the_labels(bad):
    X, y = _labelled(1)
    y = np.where(X[:, 0] > 0, "cat", "dog")
    model = uc.UnbiasedGBMClassifier(n_estimators=10).fit(X, y)
    before = _snapshot(model, X)
    model.set_params(**bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        model.fit(X, np.where(X[:, 0] > 0, 1, 0))
    _assert_same(before, _snapshot(model, X))
    # refused on its data once the new labels were read: eval_set labels never seen in y
    model.set_params(**uc.UnbiasedGBMClassifier().get_params() | dict(n_estimators=10))
    with pytest.raises(ValueError, match="eval_set"):
        model.fit(X, np.where(X[:, 0] > 0, 1, 0), eval_set=[(X, np.full(len(X), 7))])
    _assert_same(before, _snapshot(model, X))
    with pytest.raises(ValueError, match="num_leaves"):  # a first fit: still unfitted
        uc.UnbiasedGBMClassifier(num_leaves=1).fit(X, y)
