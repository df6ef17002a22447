"""Edge inputs of the recent features: the native grower's estimators and their exports,
cross-fitted importance / the selector, the ``select`` command.

Each case either works as a LightGBM / XGBoost / scikit-learn user would expect (finite
predictions, exports that predict as the grower, the caller's objects unchanged) or fails with
one error naming the argument.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cli import main  # noqa: E402

N = 150


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=N)
    return X, y, (X[:, 0] > 0).astype(np.int64)


def small(cls, **kw):
    return cls(n_estimators=3, min_child_samples=5, random_state=0, **kw)


def lgb_margin(model, X):
    return model.to_lightgbm().predict(X, raw_score=True)


def own_margin(model, X):
    return model._raw(X)[:, 0]


# -- categorical columns ----------------------------------------------------------------------
def test_categorical_without_any_value_fits_predicts_and_exports(data):
    X, y, _ = data
    frame = pd.DataFrame({"a": X[:, 0],
                          "c": pd.Categorical([np.nan] * N, categories=["u", "v"])})
    model = small(uc.UnbiasedGBMRegressor).fit(frame, y)
    pred = model.predict(frame)
    assert np.all(np.isfinite(pred))
    np.testing.assert_allclose(lgb_margin(model, frame), own_margin(model, frame), atol=1e-9)
    # a category column given by index that holds only NaN
    Xn = X.copy()
    Xn[:, 1] = np.nan
    model = small(uc.UnbiasedGBMRegressor).fit(Xn, y, categorical_feature=[1])
    assert np.all(np.isfinite(model.predict(Xn)))


@pytest.mark.parametrize("levels", [["x"], ["x", "y", "z"]])
def test_unseen_categories_predict_as_missing_without_a_pandas_warning(data, levels):
    X, y, _ = data
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(rng.choice(levels, N))})
    model = small(uc.UnbiasedGBMRegressor).fit(frame, y)
    unseen = frame.assign(c=pd.Categorical(["w"] * N))
    missing = frame.assign(c=pd.Categorical([np.nan] * N, categories=levels))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas deprecates coding unseen values
        got = model.predict(unseen)
    np.testing.assert_array_equal(got, model.predict(missing))
    # categories in another order are recoded with the training run's
    reordered = frame.assign(c=frame["c"].cat.reorder_categories(levels[::-1]))
    np.testing.assert_array_equal(model.predict(reordered), model.predict(frame))


def test_text_and_mismatched_categorical_columns_get_one_clear_error(data):
    X, y, _ = data
    rng = np.random.default_rng(2)
    text = pd.DataFrame({"a": X[:, 0], "s": rng.choice(["u", "v"], N)})
    with pytest.raises(ValueError, match=r"X: columns must hold .*\bs \("):
        small(uc.UnbiasedGBMRegressor).fit(text, y)
    cat = text.assign(s=text["s"].astype("category"))
    model = small(uc.UnbiasedGBMRegressor).fit(cat, y)
    with pytest.raises(ValueError, match=r"X: columns must hold"):
        model.predict(text)  # the categorical column arrives as text
    numeric = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    model = small(uc.UnbiasedGBMRegressor).fit(numeric, y)
    with pytest.raises(ValueError, match=r"categorical columns \['b'\] differ"):
        model.predict(numeric.assign(b=pd.Categorical(rng.choice(["u", "v"], N))))
    dup = pd.concat([cat, cat[["s"]]], axis=1)
    with pytest.raises(ValueError, match=r"X: expected unique column names"):
        small(uc.UnbiasedGBMRegressor).fit(dup, y)


# -- weights, labels, evaluation sets ---------------------------------------------------------
@pytest.mark.parametrize("cls", ["UnbiasedGBMRegressor", "UnbiasedGBMClassifier"])
def test_negative_sample_weight_is_refused(data, cls):
    X, y, yc = data
    w = np.ones(N)
    w[0] = -1.0
    with pytest.raises(ValueError, match="sample_weight"):
        small(getattr(uc, cls)).fit(X, yc if "Class" in cls else y, sample_weight=w)
    assert w[0] == -1.0


def test_zero_weights_on_some_rows_are_accepted(data):
    X, y, _ = data
    w = np.r_[np.zeros(N // 2), np.ones(N - N // 2)]
    model = small(uc.UnbiasedGBMRegressor).fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("case,match", [
    ("short_y", r"eval_set\[0\]: X has 150 rows, y has 10"),
    ("nan_y", r"eval_set\[0\] y contains NaN"),
    ("short_weight", r"eval_sample_weight\[0\]"),
    ("negative_weight", r"eval_sample_weight\[0\]"),
    ("weights_count", r"eval_sample_weight: expected one entry per eval_set"),
])
def test_bad_evaluation_sets_name_the_argument(data, case, match):
    X, y, _ = data
    ey, ew = y, [np.ones(N)]
    if case == "short_y":
        ey = y[:10]
    elif case == "nan_y":
        ey = np.r_[np.nan, y[1:]]
    elif case == "short_weight":
        ew = [np.ones(3)]
    elif case == "negative_weight":
        ew = [np.r_[-1.0, np.ones(N - 1)]]
    else:
        ew = [np.ones(N), np.ones(N)]
    with pytest.raises(ValueError, match=match):
        small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[(X, ey)], eval_sample_weight=ew)


def test_poisson_with_every_label_zero_is_refused_without_numpy_warning(data):
    X, _, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="y: the poisson objective's initial score"):
            small(uc.UnbiasedGBMRegressor, objective="poisson").fit(X, np.zeros(N))


def test_constant_target_and_single_class(data):
    X, _, _ = data
    model = small(uc.UnbiasedGBMRegressor).fit(X, np.full(N, 2.5))
    np.testing.assert_allclose(model.predict(X), 2.5)
    np.testing.assert_allclose(lgb_margin(model, X), 2.5)
    np.testing.assert_allclose(model.to_xgboost().predict(xgboost.DMatrix(X)), 2.5, rtol=1e-6)
    with pytest.raises(ValueError, match="y: expected at least 2 classes"):
        small(uc.UnbiasedGBMClassifier).fit(X, np.ones(N))


def test_values_beyond_float32_are_named(data):  # no numpy overflow warning either
    X, y, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="beyond the float32 range"):
            small(uc.UnbiasedGBMRegressor).fit(X * 1e300, y)


# -- dtypes, layouts, shapes: the same model and exports that predict as it -------------------
LAYOUTS = {
    "float32": lambda X: X.astype(np.float32),
    "fortran": np.asfortranarray,
    "strided": lambda X: np.repeat(X, 2, axis=1)[:, ::2],
    "int": lambda X: np.round(X * 4).astype(np.int64),
    "bool": lambda X: X > 0,
    "int_columns": pd.DataFrame,
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_fit_as_float64_and_export_exactly(data, layout):
    X, y, yc = data
    Xl = LAYOUTS[layout](X)
    reference = np.asarray(Xl, dtype=np.float64)
    model = small(uc.UnbiasedGBMClassifier).fit(Xl, yc)
    same = small(uc.UnbiasedGBMClassifier).fit(reference, yc)
    np.testing.assert_array_equal(model.predict_proba(Xl), same.predict_proba(reference))
    np.testing.assert_allclose(lgb_margin(model, Xl), own_margin(model, Xl), atol=1e-9)
    # as XGBoost's own model fitted on the same input: DMatrix(X) predicts, whatever names
    xgb_margin = model.to_xgboost().predict(xgboost.DMatrix(Xl), output_margin=True)
    np.testing.assert_allclose(xgb_margin, own_margin(model, Xl), atol=1e-6)


def test_tiny_data_and_more_classes_than_rows_per_class(data):
    X, y, _ = data
    model = uc.UnbiasedGBMRegressor(n_estimators=3, random_state=0).fit(X[:5, :1], y[:5])
    np.testing.assert_allclose(model.predict(X[:5, :1]), y[:5].mean(), atol=1e-12)
    assert np.all(model.feature_importances_ == 0)
    labels = np.arange(12) % 10
    clf = small(uc.UnbiasedGBMClassifier).fit(X[:12], labels)
    proba = clf.predict_proba(X[:12])
    assert proba.shape == (12, 10)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_feature_count_mismatch_and_inputs_unchanged(data):
    X, y, _ = data
    frame = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(np.where(X[:, 1] > 0, "p", "n"))})
    before, w = frame.copy(), np.ones(N)
    model = small(uc.UnbiasedGBMRegressor).fit(frame, y, sample_weight=w)
    pd.testing.assert_frame_equal(frame, before)
    assert np.all(w == 1)
    numeric = small(uc.UnbiasedGBMRegressor).fit(X, y)
    with pytest.raises(ValueError, match="expecting 3 features"):
        numeric.predict(X[:, :2])
    with pytest.raises(ValueError, match="expecting 3 features"):
        small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[(X[:, :2], y)])
    assert model.predict(frame).shape == (N,)


# -- cross-fitted importance, the selector, the CLI -------------------------------------------
def lgb_small():
    return lightgbm.LGBMRegressor(n_estimators=3, min_child_samples=5, verbose=-1)


@pytest.mark.parametrize("weight,match", [
    (np.r_[np.nan, np.ones(N - 1)], "sample_weight must be finite"),
    (np.r_[np.inf, np.ones(N - 1)], "sample_weight must be finite"),
    (np.r_[-1.0, np.ones(N - 1)], "sample_weight must be finite and non-negative"),
])
def test_cross_fit_bad_weights_name_sample_weight(data, weight, match):
    X, y, _ = data
    with pytest.raises(ValueError, match=match):
        uc.cross_fitted_importance(lgb_small(), X, y, cv=2, n_blocks=0, sample_weight=weight)


def test_cross_fit_nan_label_names_y(data):
    X, y, _ = data
    with pytest.raises(ValueError, match=r"^y: contains NaN"):
        uc.cross_fitted_importance(lgb_small(), pd.DataFrame(X), np.r_[np.nan, y[1:]], cv=2)


def test_selector_max_features_above_n_features_keeps_all(data):
    X, y, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few held-out rows per split
        sel = uc.UnbiasedSelector(lgb_small(), cv=2, alpha=None, max_features=10,
                                  n_blocks=0).fit(X, y)
    assert sel.get_support().all()
    with pytest.raises(ValueError, match="expecting 3 features"):
        sel.transform(X[:, :2])


def test_cli_select_unknown_sklearn_param_is_an_input_error(tmp_path, capsys, data):
    X, y, _ = data
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y}).to_csv(path, index=False)
    code = main(["select", str(path), "--label", "y", "--host", "sklearn",
                 "--param", "n_estimators=5"])
    err = capsys.readouterr().err
    assert code != 0
    assert "--param n_estimators: not a parameter of HistGradientBoostingRegressor" in err
    assert "internal error" not in err


@pytest.mark.parametrize("param,value", [
    ("reg_lambda", -1.0), ("reg_alpha", -1.0), ("min_child_weight", -1.0),
    ("min_split_gain", np.nan), ("learning_rate", "x"), ("early_stopping_rounds", -1),
    ("max_depth", 2.5), ("ratios", "111"), ("ratios", (1, True, 1)),
])
def test_bad_numeric_parameters_name_themselves(data, param, value):
    X, y, _ = data
    with pytest.raises(ValueError, match=f"^{param}: expected"):
        small(uc.UnbiasedGBMRegressor, **{param: value}).fit(X, y, eval_set=[(X, y)])


@pytest.mark.parametrize("item", [5, -1, True, 1.0])
def test_categorical_feature_indices_are_checked(data, item):
    X, y, _ = data
    with pytest.raises(ValueError, match=r"categorical_feature: expected column names or "
                                         r"indices in \[0, 3\)"):
        small(uc.UnbiasedGBMRegressor).fit(X, y, categorical_feature=[item])


def test_classifier_missing_labels_are_named(data):
    X, _, yc = data
    labels = np.where(yc == 1, "p", None).astype(object)
    with pytest.raises(ValueError, match="y: contains missing labels"):
        small(uc.UnbiasedGBMClassifier).fit(X, labels)


def test_cross_fit_class_missing_from_a_training_fold_is_named(data):
    X, _, yc = data
    labels = yc.copy()
    labels[0] = 2  # one row of class 2: its fold's model never saw the class
    clf = lightgbm.LGBMClassifier(n_estimators=3, min_child_samples=5, verbose=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the splitter's few-members warning
        with pytest.raises(ValueError, match=r"^y: fold 0's held-out rows hold the classes "
                                             r"\[2\], absent from its training rows"):
            uc.cross_fitted_importance(clf, X, labels, cv=3, n_blocks=0)


def test_cli_select_text_weight_column_is_an_input_error(tmp_path, capsys, data):
    X, y, _ = data
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "y": y, "w": np.where(y > 0, "hi", "lo")}).to_csv(path,
                                                                                  index=False)
    code = main(["select", str(path), "--label", "y", "--host", "lightgbm", "--weight", "w"])
    err = capsys.readouterr().err
    assert code != 0
    assert "weight column 'w' has missing or non-numeric values" in err


def test_biased_criterion_has_no_importance_report(data):
    X, y, _ = data
    model = small(uc.UnbiasedGBMRegressor, criterion="biased").fit(X, y)
    assert np.isnan(model.feature_importances_).all()
    with pytest.raises(ValueError, match="importance_report_: criterion='biased'"):
        model.importance_report_  # noqa: B018 (was a report of zeros)


def test_cli_select_refuses_to_write_over_its_data_file(tmp_path, capsys, data):
    X, y, _ = data
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "y": y}).to_csv(path, index=False)
    before = path.read_bytes()
    code = main(["select", str(path), "--label", "y", "--host", "lightgbm", "--output",
                 str(tmp_path / "." / "d.csv")])
    assert code != 0
    assert "is DATA itself" in capsys.readouterr().err
    assert path.read_bytes() == before


@pytest.mark.parametrize("fold", ["out_of_range", "empty_training", "empty_held_out"])
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_cross_fit_bad_custom_folds_name_cv(data, fold, task):
    X, y, yc = data
    half = np.arange(N // 2)
    train, held = {"out_of_range": (half, half + N // 2 + 1),
                   "empty_training": (half[:0], half),
                   "empty_held_out": (half, half[:0])}[fold]
    est = (lgb_small() if task == "regression" else
           lightgbm.LGBMClassifier(n_estimators=3, min_child_samples=5, verbose=-1))
    with pytest.raises(ValueError, match=r"^cv: fold 0's (training|held-out) rows must be"):
        uc.cross_fitted_importance(est, X, y if task == "regression" else yc,
                                   cv=[(train, held)], n_blocks=0)


def test_cross_fit_accepts_lists(data):
    X, y, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few held-out rows per split
        from_lists = uc.cross_fitted_importance(lgb_small(), X.tolist(), y.tolist(), cv=2,
                                                n_blocks=0)
        from_arrays = uc.cross_fitted_importance(lgb_small(), X, y, cv=2, n_blocks=0)
    pd.testing.assert_frame_equal(from_lists.to_frame(), from_arrays.to_frame())


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(3),
                                  lambda: np.random.RandomState(3)])
def test_grower_random_state_accepts_numpy_generators(data, make):
    """As scikit-learn and LightGBM estimators: the same generator state, the same model."""
    X, y, _ = data
    first = small(uc.UnbiasedGBMRegressor).set_params(random_state=make()).fit(X, y)
    second = small(uc.UnbiasedGBMRegressor).set_params(random_state=make()).fit(X, y)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))


@pytest.mark.parametrize("param,value", [("random_state", -1), ("random_state", 1.5),
                                         ("n_estimators", 2.7), ("n_estimators", "3")])
def test_grower_seed_and_tree_count_types_are_checked(data, param, value):
    X, y, _ = data
    with pytest.raises(ValueError, match=f"^{param}"):
        small(uc.UnbiasedGBMRegressor).set_params(**{param: value}).fit(X, y)


def test_eval_set_as_one_pair_and_nan_metric(data):
    X, y, yc = data
    pair = small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=(X, y))
    listed = small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[(X, y)])
    assert pair.evals_result_ == listed.evals_result_
    with pytest.raises(ValueError, match=r"eval_set: expected a list of \(X, y\) pairs"):
        small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[X])
    with pytest.raises(ValueError, match="eval_set valid_0: metric 'auc' is NaN"):
        small(uc.UnbiasedGBMClassifier, early_stopping_rounds=2).fit(
            X, yc, eval_set=[(X, np.ones(N, dtype=np.int64))], eval_metric="auc")


def test_grower_without_a_seed_repeats_itself(data):
    """random_state=None drew a fresh seed each fit: the same data gave other trees, where
    LightGBM's and XGBoost's estimators repeat themselves."""
    X, y, _ = data
    a = uc.UnbiasedGBMRegressor(n_estimators=3, min_child_samples=5).fit(X, y)
    b = uc.UnbiasedGBMRegressor(n_estimators=3, min_child_samples=5).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    c = uc.UnbiasedGBMRegressor(n_estimators=3, min_child_samples=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), c.predict(X))


@pytest.mark.parametrize("param, value, match", [
    ("n_blocks", 2.7, "n_blocks: expected 0"), ("n_blocks", "x", "n_blocks: expected 0"),
    ("n_blocks", 1, "n_blocks: expected 0"), ("ratios", None, "ratios: expected 2 or 3"),
    ("redraw", "yes", "redraw: expected True or False"),
])
def test_grower_options_are_checked_by_name(data, param, value, match):
    X, y, _ = data
    with pytest.raises(ValueError, match=f"^{match}"):
        small(uc.UnbiasedGBMRegressor).set_params(**{param: value}).fit(X, y)


def test_grower_early_stopping_and_metrics_as_lightgbm(data):
    X, y, yc = data
    with pytest.raises(ValueError, match="^early_stopping_rounds needs an eval_set"):
        small(uc.UnbiasedGBMRegressor, early_stopping_rounds=2).fit(X, y)
    with pytest.raises(ValueError, match="^eval_metric: 'auc' does not fit the objective "
                                         "'squared_error'; expected one of l2, rmse, l1"):
        small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[(X, y)], eval_metric="auc")
    with pytest.raises(ValueError, match="^eval_metric: 'multi_logloss' does not fit"):
        small(uc.UnbiasedGBMClassifier).fit(X, yc, eval_set=[(X, yc)],
                                            eval_metric="multi_logloss")
    with pytest.raises(ValueError, match="^eval_metric: expected one metric name"):
        small(uc.UnbiasedGBMRegressor).fit(X, y, eval_set=[(X, y)], eval_metric=["l2", "l1"])
    model = small(uc.UnbiasedGBMClassifier).fit(X, yc, eval_set=[(X, yc)], eval_metric="auc")
    assert list(model.evals_result_) == ["valid_0"]
    assert list(model.evals_result_["valid_0"]) == ["auc"]
    assert len(model.evals_result_["valid_0"]["auc"]) == 3
    assert model.best_score_["valid_0"]["auc"] == model.evals_result_["valid_0"]["auc"][-1]
