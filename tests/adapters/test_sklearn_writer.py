"""Writing IR trees back as a fitted HistGradientBoosting estimator: the identity on unpruned
trees, pruned estimators that predict as the IR evaluates them, pickle, check_is_fitted,
partial dependence, and the paper's example."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn")
from _sklearn_data import CASES, data, fit, one_thread  # noqa: E402, F401
from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from sklearn.inspection import partial_dependence  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402
from unbiased_criteria.adapters import sklearn as ask  # noqa: E402
from unbiased_criteria.adapters.sklearn import compat  # noqa: E402
from unbiased_criteria.adapters.sklearn.router import tree_matrix  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.api import prune_forest  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402


@pytest.mark.parametrize("name", ["multiclass", "nan", "categorical", "pandas"])
def test_unpruned_write_is_the_identity(name):
    model, X, y, w = fit(*CASES[name])
    written = ask.write_model(model, ask.read_model(model).forest)
    assert type(written) is type(model) and written is not model
    for old_it, new_it in zip(model._predictors, written._predictors, strict=True):
        for old, new in zip(old_it, new_it, strict=True):
            assert new.nodes.dtype == old.nodes.dtype
            for field in compat.NODE_FIELDS:
                np.testing.assert_array_equal(new.nodes[field], old.nodes[field], err_msg=field)
            np.testing.assert_array_equal(new.raw_left_cat_bitsets, old.raw_left_cat_bitsets)
            # the missing-values bin too, which scikit-learn marks only where the feature
            # had missing values in training (the writer marked it wherever they go left)
            np.testing.assert_array_equal(new.binned_left_cat_bitsets,
                                          old.binned_left_cat_bitsets)
    np.testing.assert_array_equal(compat.raw_predict(written, X), compat.raw_predict(model, X))


@pytest.mark.parametrize("name", ["squared_error", "binary", "multiclass", "poisson", "gamma",
                                  "squared_weights", "nan", "categorical", "pandas"])
def test_pruned_estimator_predicts_as_the_ir(name):
    kind, params, opts = CASES[name]
    model, X, y, w = fit(kind, {**params, "max_iter": 10, "learning_rate": 0.5}, opts)
    Xv, yv = data(kind, 1, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False))
    before = pickle.dumps(model)
    result = prune_forest(model, X, y, Xv, yv, train_weight=w, random_state=0)
    assert result.leaves_after < result.leaves_before
    pruned = uc.prune(model, X, y, Xv, yv, train_weight=w, random_state=0)
    assert pickle.dumps(model) == before
    assert type(pruned) is type(model)
    check_is_fitted(pruned)
    read = ask.read_model(pruned)
    assert sum(t.n_leaves for t in read.forest.trees) == result.leaves_after
    # the estimator's predictions of the written model are the IR's own evaluation
    raw = compat.raw_predict(pruned, Xv)
    ir = result.forest.raw_score(tree_matrix(model, ask.read_model(model), Xv, "X"))
    np.testing.assert_allclose(raw, ir, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compat.raw_predict(pruned, X), result.replay.raw_train,
                               rtol=0, atol=1e-12)
    # public predictions, after a pickle round trip
    again = pickle.loads(pickle.dumps(pruned))
    np.testing.assert_array_equal(again.predict(Xv), pruned.predict(Xv))
    if hasattr(pruned, "predict_proba"):
        np.testing.assert_array_equal(again.predict_proba(Xv), pruned.predict_proba(Xv))
    assert pruned.n_iter_ == model.n_iter_


def test_partial_dependence_reads_the_pruned_counts():
    model, X, y, w = fit("squared_error", {"learning_rate": 0.5}, {})
    Xv, yv = data("squared_error", 1)
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
    pd_rec = partial_dependence(pruned, X, [0], method="recursion", grid_resolution=10)
    pd_brute = partial_dependence(pruned, X, [0], method="brute", grid_resolution=10)
    # recursion weights subtrees by the stored counts; brute force averages over X's rows,
    # so they agree up to the training rows' spread, and both are finite
    assert np.isfinite(pd_rec["average"]).all()
    np.testing.assert_allclose(pd_rec["average"] - pd_rec["average"].mean(),
                               pd_brute["average"] - pd_brute["average"].mean(), atol=0.5)


def test_renewed_leaf_losses_are_refused_for_pruning():
    model, X, y, w = fit(*CASES["absolute_error"])
    Xv, yv = data("absolute_error", 1)
    with pytest.raises(ValueError, match="pruning absolute_error models is not supported"):
        uc.prune(model, X, y, Xv, yv)
    assert np.isfinite(uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
                       .to_frame()["unbiased_gain"]).all()


@pytest.mark.slow
def test_paper_example_puts_x1_above_x2_and_x3():
    seeds = 12
    U = []
    for s in range(seeds):
        X, y = paper_example(2000, random_state=2 * s)
        Xv, yv = paper_example(2000, random_state=2 * s + 1)
        model = HistGradientBoostingRegressor(max_iter=100, learning_rate=0.05,
                                              early_stopping=False, random_state=s).fit(X, y)
        frame = uc.unbiased_importance(model, X, y, Xv, yv, random_state=s, n_blocks=0
                                       ).to_frame()
        U.append(frame.loc[["X1", "X2", "X3"], "unbiased_gain"].to_numpy())
    U = np.array(U)
    for noise in (1, 2):
        d = U[:, 0] - U[:, noise]
        assert d.mean() / (d.std(ddof=1) / np.sqrt(seeds)) > 3


@pytest.mark.parametrize("name", ["nan", "pandas"])
def test_pruned_binned_fields_route_training_rows_as_raw_ones(name):
    # warm_start and early stopping predict binned rows with bin_threshold and the binned
    # category sets, which the writer rebuilds from the bin edges
    kind, params, opts = CASES[name]
    model, X, y, w = fit(kind, {**params, "learning_rate": 0.5}, opts)
    Xv, yv = data(kind, 1, nan=opts.get("nan", 0.0), categorical=opts.get("categorical", False))
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
    X_binned = pruned._bin_mapper.transform(pruned._preprocess_X(X, reset=False))
    pruned._in_fit = True  # _raw_predict then reads binned rows, as during fit
    try:
        binned = pruned._raw_predict(X_binned)
    finally:
        del pruned._in_fit
    np.testing.assert_array_equal(binned, compat.raw_predict(pruned, X))
    more = pruned.set_params(warm_start=True, max_iter=pruned.n_iter_ + 2).fit(X, y)
    assert more.n_iter_ == model.n_iter_ + 2
