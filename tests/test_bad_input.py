"""The public entry points reject bad input with one clear error naming the argument, and
never modify what the caller passed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example

HOSTS = ["lightgbm", "xgboost"]


def fit(host: str, X, y, objective: str = "regression", **extra):
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        params = {"objective": objective, "verbose": -1, "num_threads": 1, **extra}
        return lgb.train(params, lgb.Dataset(X, y), num_boost_round=5)
    xgb = pytest.importorskip("xgboost")
    name = {"regression": "reg:squarederror", "binary": "binary:logistic"}.get(objective,
                                                                              objective)
    params = {"objective": name, "max_depth": 3, "nthread": 1, **extra}
    return xgb.train(params, xgb.DMatrix(X, y, enable_categorical=True), 5)


@pytest.fixture(scope="module")
def data():
    X, y = paper_example(400, random_state=0)
    Xv, yv = paper_example(300, random_state=1)
    return X, y, Xv, yv


@pytest.mark.parametrize("host", HOSTS)
def test_wrong_feature_count(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    with pytest.raises(ValueError, match="X_valid"):
        uc.unbiased_importance(model, X, y, Xv.iloc[:, :2], yv)
    with pytest.raises(ValueError, match="X_train"):
        uc.unbiased_importance(model, X.assign(extra=1.0), y, Xv, yv)


@pytest.mark.parametrize("host", HOSTS)
def test_wrong_feature_names(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    renamed = Xv.rename(columns={"X3": "noise"})
    with pytest.raises(ValueError, match="X_valid"):
        uc.unbiased_importance(model, X, y, renamed, yv)


@pytest.mark.parametrize("host", HOSTS)
def test_labels_outside_the_objective(host, data):
    X, y, Xv, yv = data
    yb, yvb = (y > 0).astype(float), (yv > 0).astype(float)
    model = fit(host, X, yb, objective="binary")
    with pytest.raises(ValueError, match="y_valid"):
        uc.unbiased_importance(model, X, yb, Xv, yvb + 2.0)
    with pytest.raises(ValueError, match="y_train"):
        uc.unbiased_importance(model, X, np.where(yb > 0, 1.0, -1.0), Xv, yvb)


@pytest.mark.parametrize("host", HOSTS)
def test_nan_labels_and_length(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    bad = yv.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y_valid contains NaN"):
        uc.unbiased_importance(model, X, y, Xv, bad)
    with pytest.raises(ValueError, match="y_train has 399 labels"):
        uc.unbiased_importance(model, X, y[:-1], Xv, yv)


@pytest.mark.parametrize("host", HOSTS)
def test_empty_held_out_set(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    with pytest.raises(ValueError, match="X_valid"):
        uc.unbiased_importance(model, X, y, Xv.iloc[:0], yv[:0])


@pytest.mark.parametrize("host", HOSTS)
def test_weights_of_the_wrong_length_or_sign(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    with pytest.raises(ValueError, match="valid_weight has 10 weights"):
        uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=np.ones(10))
    with pytest.raises(ValueError, match="train_weight must be finite and non-negative"):
        uc.unbiased_importance(model, X, y, Xv, yv, train_weight=-np.ones(len(y)))


@pytest.mark.parametrize("host", HOSTS)
def test_dart_is_refused(host, data):
    X, y, Xv, yv = data
    extra = {"boosting": "dart"} if host == "lightgbm" else {"booster": "dart",
                                                              "rate_drop": 0.5}
    model = fit(host, X, y, **extra)
    with pytest.raises(uc.UnsupportedModelError, match="(?i)dart"):
        uc.unbiased_importance(model, X, y, Xv, yv)
    with pytest.raises(uc.UnsupportedModelError, match="(?i)dart"):
        uc.prune(model, X, y, Xv, yv)


def test_custom_objective_needs_objective():
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(300, random_state=0)
    Xv, yv = paper_example(300, random_state=1)

    def l2(preds, data):
        return preds - data.get_label(), np.ones_like(preds)

    model = lgb.train({"objective": l2, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y),
                      num_boost_round=5)
    with pytest.raises(ValueError, match="objective="):
        uc.unbiased_importance(model, X, y, Xv, yv)
    # given as a name or as a callable, the objective reproduces the host's own split gains
    _callable_gives_the_named_splits(model, X, y, Xv, yv, objective="regression")


def _l2(y_, raw, w):
    return raw - y_, np.ones_like(raw)


def _callable_gives_the_named_splits(model, X, y, Xv, yv, **named) -> None:
    """The squared error as a callable scores the splits as the named objective does, and
    that reproduces the host's own split gains."""
    by_name = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, **named)
    np.testing.assert_allclose(by_name.splits["biased_gain"], by_name.splits["host_gain"],
                               rtol=1e-5)
    by_callable = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, objective=_l2)
    pd.testing.assert_frame_equal(by_callable.splits, by_name.splits)


def test_callable_objective_on_a_model_that_folded_its_init_score():
    """A LightGBM model trained with a built-in objective folds its boost-from-average score
    into the first trees; that score is the model's objective's (the host's BoostFromScore).
    A callable objective= has no closed-form init score: it raised NotImplementedError
    whenever training labels were given. Now the model's own objective recomputes the init
    score, and the callable gives the gradients: the same splits as the named objective."""
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(300, random_state=0)
    Xv, yv = paper_example(300, random_state=1)
    model = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                      lgb.Dataset(X, y), num_boost_round=5)
    _callable_gives_the_named_splits(model, X, y, Xv, yv)
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0, objective=_l2)
    # the callable reads float64 labels, the named objective float32 ones (as LightGBM)
    np.testing.assert_allclose(pruned.predict(Xv),
                               uc.prune(model, X, y, Xv, yv, random_state=0).predict(Xv),
                               rtol=1e-6)


def test_not_a_model():
    X, y = paper_example(50, random_state=0)
    with pytest.raises(TypeError, match="model must be"):
        uc.unbiased_importance(object(), X, y, X, y)


def test_half_given_training_pair():
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(300, random_state=0)
    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="X_train and y_train"):
        uc.unbiased_importance(model, X, None, X, y)


@pytest.mark.parametrize("host", HOSTS)
def test_inputs_are_never_modified(host, data):
    X, y, Xv, yv = data
    model = fit(host, X, y)
    w, wv = np.linspace(0.5, 2, len(y)), np.linspace(0.5, 2, len(yv))
    copies = [a.copy() for a in (X, y, Xv, yv, w, wv)]
    uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, valid_weight=wv,
                           random_state=0)
    uc.prune(model, X, y, Xv, yv, train_weight=w, valid_weight=wv, random_state=0)
    for before, after in zip(copies, (X, y, Xv, yv, w, wv)):
        if isinstance(before, pd.DataFrame):
            pd.testing.assert_frame_equal(before, after)
        else:
            np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("host", HOSTS)
def test_labels_and_weights_beyond_float32_name_the_argument(host, data):
    """The hosts compute in float32: labels of 1e200 leaked numpy's "overflow encountered in
    cast" and then failed on non-finite gradients without naming the argument."""
    import warnings

    X, y, Xv, yv = data
    model = fit(host, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on the way
        with pytest.raises(ValueError, match="y_valid has labels beyond the float32 range"):
            uc.unbiased_importance(model, X, y, Xv, yv * 1e200)
        with pytest.raises(ValueError, match="valid_weight has weights beyond the float32"):
            uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=np.full(len(yv), 1e300))


def test_xgboost_duplicate_column_names_name_the_argument(data):
    X, y, Xv, yv = data
    model = fit("xgboost", X.to_numpy(float), y)  # no feature names to compare with
    dup = Xv.astype(float).set_axis(["X1", "X1", "X3"], axis=1)
    with pytest.raises(ValueError, match=r"X_valid has duplicate column names \('X1'\)"):
        uc.unbiased_importance(model, X.to_numpy(float), y, dup, yv)


def test_xgboost_data_error_keeps_the_reason_not_the_stack_trace(data):
    X, y, Xv, yv = data
    model = fit("xgboost", X, y)
    bad = Xv.astype(float).copy()
    bad.iloc[0, 0] = np.inf
    with pytest.raises(ValueError, match="X_valid cannot be read as XGBoost data") as err:
        uc.unbiased_importance(model, X, y, bad, yv)
    message = str(err.value)
    assert "inf" in message and "Stack trace" not in message and "\n" not in message


@pytest.mark.parametrize("host", HOSTS)
def test_text_columns_name_the_argument(host, data):
    """A text column where the model read numbers is one error naming the argument (LightGBM's
    own said only 'pandas dtypes must be int, float or bool')."""
    X, y, Xv, yv = data
    model = fit(host, X.astype(float), y)
    with pytest.raises(ValueError, match="X_train") as err:
        uc.unbiased_importance(model, X.astype(float).assign(X3="a"), y, Xv.astype(float), yv)
    assert "X3" in str(err.value) or host == "xgboost"  # XGBoost's reason names no column


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("cross_fit", [True, False])
def test_non_finite_gradient_names_the_callers_rows(host, cross_fit, data):
    """The held-out rows are replayed in a random order: the error named rows in that order
    (row 5 reported as row 18), and a float32 cast overflow leaked numpy's warning."""
    import warnings

    X, y, Xv, yv = data
    model = fit(host, X, y)
    yv, wv = yv.copy(), np.ones(len(yv))
    yv[[5, 200]], wv[[5, 200]] = 100.0, 1e37  # 100 * 1e37 overflows float32
    yt, wt = y.copy(), np.ones(len(y))
    yt[7], wt[7] = 100.0, 1e37
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"on 2 held-out row\(s\) \(rows 5, 200\)"):
            uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=wv, random_state=0,
                                   cross_fit=cross_fit)
        with pytest.raises(ValueError, match=r"on 1 training row\(s\) \(rows 7\)"):
            uc.unbiased_importance(model, X, yt, Xv, data[3], train_weight=wt, random_state=0)
        with pytest.raises(ValueError, match=r"on 2 held-out row\(s\) \(rows 5, 200\)"):
            uc.unbiased_importance(model, None, None, Xv, yv, valid_weight=wv,
                                   random_state=0, cross_fit=cross_fit)


@pytest.mark.parametrize("host", HOSTS)
def test_one_huge_held_out_weight_keeps_finite_standard_errors(host, data):
    """Replicates were total minus block: a block holding a row of weight 1e20 cancelled the
    other rows and left NaN replicates (``to_frame`` then raised)."""
    X, y, Xv, yv = data
    model = fit(host, X, y)
    wv = np.ones(len(yv))
    wv[10] = 1e20
    report = uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=wv, random_state=0,
                                    n_blocks=10)
    assert np.isfinite(report.jackknife).all()
    frame = report.to_frame()
    assert np.isfinite(frame["std_error"]).all() and (frame["std_error"] > 0).all()


@pytest.mark.parametrize("host", HOSTS)
def test_tiny_held_out_weights_beside_large_ones_keep_u_finite(host, data):
    """Weights of 1e-20 on part of the held-out rows: a node's drawn sums lost the tiny rows
    to cancellation, U was NaN on splits marked usable, to_frame raised and prune kept them."""
    X, y, Xv, yv = data
    model = fit(host, X, y)
    wv = np.where(Xv["X3"].to_numpy() > 0.3, 1e-20, 1.0)
    report = uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=wv, random_state=0)
    assert np.isfinite(report.splits["unbiased_gain"]).all()
    assert np.isfinite(report.to_frame()["std_error"]).all()
    # with the tiny weights at 1e-10 U is the same: a ratio over rows of one weight does not
    # depend on it, and beside rows of weight 1 either is nothing
    same = uc.unbiased_importance(model, X, y, Xv, yv,
                                  valid_weight=np.where(wv < 1, 1e-10, 1.0), random_state=0)
    pure = report.splits["unbiased_gain"].to_numpy()
    other = same.splits["unbiased_gain"].to_numpy()
    np.testing.assert_allclose(pure, other, rtol=1e-6, atol=1e-9 * np.abs(other).max())


@pytest.mark.parametrize("host", HOSTS)
def test_trees_not_grown_on_the_given_training_rows_are_said(host, data, tmp_path):
    """The first iteration's hessian sums depend on the training rows alone: where they
    differ from the model's own, biased_gain cannot match host_gain. A model trained with
    weights not passed, or with a row subsample read from a file (whose parameters are
    lost), was scored without a word."""
    import warnings

    X, y, Xv, yv = data
    w = np.linspace(0.5, 2, len(y))
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        weighted = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                             lgb.Dataset(X, y, weight=w), 5)
    else:
        xgb = pytest.importorskip("xgboost")
        weighted = xgb.train({"max_depth": 3, "nthread": 1},
                             xgb.DMatrix(X, y, weight=w, enable_categorical=True), 5)
    with pytest.warns(UserWarning, match=r"hessian sums differ from the model's own at \d+ "
                                         r"of the first iteration's \d+ nodes"):
        uc.unbiased_importance(weighted, X, y, Xv, yv, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same model with its weights: nothing to say
        # (of the rows: XGBoost 3.4 grows deeper trees here, whose small splits 300 held-out
        # rows leave without evidence, and says so)
        warnings.filterwarnings("ignore", message=r".* splits have no usable evidence")
        uc.unbiased_importance(weighted, X, y, Xv, yv, train_weight=w, random_state=0)
    with pytest.warns(UserWarning, match="hessian sums differ"):
        uc.prune(weighted, X, y, Xv, yv, random_state=0)
    if host == "xgboost":  # a row subsample, loaded from a file: its parameters are gone
        sub = xgb.train({"max_depth": 3, "nthread": 1, "subsample": 0.5, "seed": 1},
                        xgb.DMatrix(X, y, enable_categorical=True), 3)
        path = tmp_path / "sub.json"
        sub.save_model(path)
        with pytest.warns(UserWarning, match="hessian sums differ") as record:
            uc.unbiased_importance(str(path), X, y, Xv, yv, random_state=0)
        assert not any("subsample=" in str(r.message) for r in record)


def _hook_estimator(host: str, **options):
    if host == "lightgbm":
        from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor

        return UnbiasedLGBMRegressor(n_estimators=5, verbose=-1, n_jobs=1, **options)
    from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor

    return UnbiasedXGBRegressor(n_estimators=5, max_depth=3, n_jobs=1, **options)


@pytest.mark.parametrize("host", HOSTS)
def test_a_model_the_hook_grew_with_held_out_rows_says_why_its_sums_differ(host, data):
    """The training hook grows every tree with half the rows at zero gradient and hessian:
    scored on its training rows, such a model was told "its trees were not grown on these
    rows" with a list of seven possible causes, in every fold of a cross-fit. The reader now
    names the cause (the check cannot hold such trees to rows it does not know); without
    held-out rows the hook's trees are held to their own sums, and match them."""
    import warnings

    X, y, Xv, yv = data
    X, Xv = X.assign(X2=X["X2"].cat.codes), Xv.assign(X2=Xv["X2"].cat.codes)
    model = _hook_estimator(host).fit(X, y)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    said = [str(r.message) for r in record if "no usable evidence" not in str(r.message)]
    assert len(said) == 1 and said[0].startswith(
        "the training hook grew this model holding out 0.5 of the training rows"), said
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        plain = _hook_estimator(host, holdout_fraction=0.0, prune_threshold=None).fit(X, y)
        uc.unbiased_importance(plain, X, y, Xv, yv, random_state=0)
    said = [str(r.message) for r in record if "no usable evidence" not in str(r.message)]
    assert said == [], said
    # the check does run there: other rows than the training rows are said
    with pytest.warns(UserWarning, match="hessian sums differ from the model's own"):
        uc.unbiased_importance(plain, Xv, yv, X, y, random_state=0)
    # a cross-fit says a cause all folds share once, naming them
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        uc.cross_fitted_importance(_hook_estimator(host), X, y, cv=3, random_state=0)
    said = [str(r.message) for r in record if "training hook grew" in str(r.message)]
    assert len(said) == 1 and said[0].startswith("all 3 folds: the training hook"), said


@pytest.mark.parametrize("host", HOSTS)
def test_a_model_with_a_best_iteration_is_still_checked_against_its_own_sums(host, data):
    """An early-stopped model's best_iteration note (the scikit-learn predict stops there)
    counted as a reason for the gains to differ and switched the first-iteration check off:
    weights not passed went unsaid for every early-stopped model."""
    import warnings

    X, y, Xv, yv = data
    Xn, Xvn = X.assign(X2=X["X2"].cat.codes), Xv.assign(X2=Xv["X2"].cat.codes)
    w = np.linspace(0.5, 2, len(y))
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                          lgb.Dataset(Xn, y, weight=w), 60,
                          valid_sets=[lgb.Dataset(Xvn, yv)], keep_training_booster=True,
                          callbacks=[lgb.early_stopping(2, verbose=False)])
        assert 0 < model.best_iteration < model.current_iteration()
    else:
        xgb = pytest.importorskip("xgboost")
        model = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(Xn, y, weight=w), 60,
                          evals=[(xgb.DMatrix(Xvn, yv), "v")], early_stopping_rounds=2,
                          verbose_eval=False)
        assert model.best_iteration < model.num_boosted_rounds() - 1
    with pytest.warns(UserWarning) as record:
        uc.unbiased_importance(model, Xn, y, Xvn, yv, random_state=0)
    said = [str(r.message) for r in record]
    assert any("best_iteration" in m for m in said)
    assert any("hessian sums differ from the model's own" in m for m in said)
    with warnings.catch_warnings(record=True) as record:  # with its weights: the note alone
        warnings.simplefilter("always")
        uc.unbiased_importance(model, Xn, y, Xvn, yv, train_weight=w, random_state=0)
    assert [m for m in map(str, (r.message for r in record)) if "best_iteration" not in m
            and "no usable evidence" not in m] == []


def test_rows_routed_otherwise_only_below_the_root_are_said():
    """A sparse matrix's absent entries are missing to XGBoost: a model grown on dense rows
    sends the zeros of a {0, 1} column the learned default way. The root's hessian sum is
    the same either way and one split's gain is below the gain check's count: only the
    leaves' hessian sums (the first iteration's every node) tell, and now do."""
    import warnings

    xgb = pytest.importorskip("xgboost")
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X, Xv = (np.c_[rng.integers(0, 2, 600), rng.normal(size=600)] for _ in range(2))
    y, yv = (2.0 * A[:, 0] + rng.normal(size=600) for A in (X, Xv))
    stump = xgb.train({"max_depth": 1, "nthread": 1}, xgb.DMatrix(X, y), 1)
    # the premise, from XGBoost itself: the sparse rows take other leaves
    assert (stump.predict(xgb.DMatrix(sparse.csr_matrix(X)), pred_leaf=True)
            != stump.predict(xgb.DMatrix(X), pred_leaf=True)).any()
    with pytest.warns(UserWarning, match=r"(?s)hessian sums differ from the model's own at 2 "
                                         r"of the first iteration's 3 nodes.*sparse matrix"):
        uc.unbiased_importance(stump, sparse.csr_matrix(X), y, sparse.csr_matrix(Xv), yv,
                               random_state=0, min_k=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rows it was grown on, read as it read them
        uc.unbiased_importance(stump, X, y, Xv, yv, random_state=0)


@pytest.mark.parametrize("host", HOSTS)
def test_split_node_ids_are_the_hosts_own(host, data):
    """report.splits['node'] joins trees_to_dataframe() by (tree, node): same feature,
    threshold and gain on every split."""
    X, y, Xv, yv = data
    model = fit(host, X, y)
    splits = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
    frame = model.trees_to_dataframe()
    if host == "lightgbm":
        frame = frame[frame["split_feature"].notna()]
        node = frame["node_index"].str.split("-S").str[1].astype(int)
        host_frame = pd.DataFrame({"tree": frame["tree_index"], "node": node,
                                   "gain": frame["split_gain"]})
    else:
        frame = frame[frame["Feature"] != "Leaf"]
        host_frame = pd.DataFrame({"tree": frame["Tree"], "node": frame["Node"],
                                   "gain": frame["Gain"]})
    joined = splits.merge(host_frame, on=["tree", "node"], how="left")
    assert len(joined) == len(splits) and joined["gain"].notna().all()
    np.testing.assert_allclose(joined["host_gain"], joined["gain"], rtol=1e-6)


@pytest.mark.parametrize("value", [float("nan"), "nan", float("inf"), -1.0, "abc"])
@pytest.mark.parametrize("host", HOSTS)
def test_regularisation_parameters_must_be_finite(host, value, data):
    """``lambda=nan`` (a dump's host_params, or an XGBoost Booster's set_param, which XGBoost
    lets through) gave every biased gain 0 and pruned leaves 0, with exit 0: now one error
    naming it."""
    X, y, Xv, yv = data
    model = fit(host, X, y)
    if host == "lightgbm":
        dump, key = model.dump_model(), "lambda_l2"
        params = {key: value, "cat_l2": 10}
    else:
        dump, key = model.get_dump(dump_format="json", with_stats=True), "lambda"
        params = {key: value, "objective": "reg:squarederror", "base_score": 0.5,
                  "feature_names": list(X.columns)}
    with pytest.raises(ValueError, match=rf"host_params: {key} must be a finite number >= 0, "
                                         rf"got {value!r}"):
        uc.unbiased_importance(dump, X, y, Xv, yv, host_params=params)
    if host == "xgboost" and value not in (-1.0, "abc"):  # XGBoost refuses those itself
        changed = model.copy()
        changed.set_param({"lambda": value})
        for call in (uc.unbiased_importance, uc.prune):
            with pytest.raises(ValueError, match=r"lambda must be a finite number >= 0"):
                call(changed, X, y, Xv, yv)


def test_a_negative_seed_is_named_through_every_entry_point(data, capsys):
    """cross_fitted_importance and UnbiasedSelector gave numpy's "expected non-negative
    integer" (and so did `select --seed -1`); the estimators said random_state=None, then
    "the seed (the host's seed parameter, or an estimator's random_state...)"."""
    pytest.importorskip("sklearn")
    lgb = pytest.importorskip("lightgbm")
    from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor

    from unbiased_criteria.cli import main

    X, y, _, _ = data
    est = lgb.LGBMRegressor(n_estimators=3, verbose=-1)
    with pytest.raises(ValueError, match="random_state must be .* got -1"):
        uc.cross_fitted_importance(est, X, y, cv=2, random_state=-1)
    with pytest.raises(ValueError, match="random_state must be .* got -1"):
        uc.UnbiasedSelector(est, cv=2, random_state=-1).fit(X, y)
    with pytest.raises(ValueError, match="^random_state must be .* got -1"):
        UnbiasedLGBMRegressor(n_estimators=2, random_state=-1).fit(X, y)
    assert main(["select", "data.csv", "--label", "y", "--host", "lightgbm", "--seed",
                 "-1"]) == 2
    assert "--seed: must be from 0 to 2**63 - 1 (9223372036854775807), got -1" in \
        capsys.readouterr().err
