"""LightGBM's ``path_smooth``: a node's value as a leaf is pulled towards its parent's, with
the row count LightGBM estimates from the hessians. Refitting every leaf from the training
rows (nothing pruned) gives back the host's model (to the last bit for squared error, to
float rounding where hessians vary), so a collapsed node gets what LightGBM would have given
it (before, the plain ``-G/(H + l2)``: predictions off by up to 0.3; then the true row
counts: off by up to 1.2 where hessians vary)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc

lgb = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as ul  # noqa: E402


@pytest.mark.parametrize("extra", [
    {"path_smooth": 5.0},
    {"path_smooth": 50.0, "lambda_l1": 1.0, "objective": "huber"},
    {"path_smooth": 20.0, "max_delta_step": 0.3, "objective": "binary"},
])
def test_refit_leaves_reproduce_lightgbms_smoothed_values(extra):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + rng.standard_normal(2000)
    if extra.get("objective") == "binary":
        y = (y > 0).astype(float)
    params = {"num_leaves": 15, "verbose": -1, "learning_rate": 0.1, "lambda_l2": 1.0,
              "num_threads": 1, **extra}
    model = lgb.train(params, lgb.Dataset(X, y), 15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # host gains will not match: expected
        # held-out rows are needed, not used: every split is kept
        refit = uc.prune(model, X, y, X[:500] + 1e-3, y[:500], threshold=-1e300,
                         refit_leaves=True, random_state=0)
    # to the last bit for squared error and Huber; the log loss's gradients may differ from
    # LightGBM's in their last bit
    np.testing.assert_allclose(refit.predict(X, raw_score=True),
                               model.predict(X, raw_score=True), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("objective", ["regression", "binary"])
def test_hook_values_nodes_as_lightgbm(monkeypatch, objective):
    """In the hook the held-out rows have zero hessian, and LightGBM smooths each child with a
    row count it estimates from the hessians while it splits (the held-out rows' zeros
    included). The loop smooths with the same estimates: at LightGBM's own leaves its value
    is LightGBM's, to the float32 rounding of the gradients LightGBM was given (before: the
    node's row count, off by a few percent on small leaves, and a warning said so)."""
    from unbiased_criteria import boosting
    from unbiased_criteria.pruning import leaf_values

    errors = []

    def checking_prune(tree, scores, score, threshold, counts=None):
        leaf = tree.is_leaf
        ours = leaf_values(tree, scores.sums, score, counts)[leaf]
        errors.append(np.abs(ours - tree.value[leaf]).max() / np.abs(tree.value[leaf]).max())
        return prune_tree(tree, scores, score, threshold, counts=counts)

    prune_tree = boosting.prune_tree
    monkeypatch.setattr(boosting, "prune_tree", checking_prune)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3000, 5))
    y = X[:, 0] + rng.standard_normal(3000)
    if objective == "binary":
        y = (y > 0).astype(float)
    params = {"objective": objective, "num_leaves": 15, "verbose": -1, "path_smooth": 10.0,
              "learning_rate": 0.5, "min_data_in_leaf": 5}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about path_smooth, nor any other
        booster = ul.train(params, lgb.Dataset(X, y), 20, random_state=0)
    assert len(errors) == 20 and max(errors) < 1e-6
    assert not ul.training_splits(booster)["kept"].all()


def _varying_hessian_case(kind):
    """Rows, labels, weights and parameters of a model whose hessians vary from row to row
    (the first 800 rows train, the others are held out)."""
    rng = np.random.default_rng(3)
    n = 1100
    X = rng.standard_normal((n, 4))
    X[rng.random(n) < 0.15, 1] = np.nan  # LightGBM's missing type NaN, both default sides
    X[:, 2] = np.abs(X[:, 2])  # non-negative: its first bin is zero's, the most frequent one
    X[rng.random(n) < 0.75, 2] = 0.0
    X[:, 3] = rng.integers(0, 6, n)  # categorical
    signal = X[:, 0] + np.nan_to_num(X[:, 1]) + X[:, 2] + (X[:, 3] % 2)
    params = {"path_smooth": 3.0, "num_leaves": 12, "min_data_in_leaf": 5, "verbose": -1,
              "num_threads": 1}
    weight = None
    if kind == "weighted squared error":
        # powers of two: LightGBM's float32 gradient times the weight is exact, as the
        # library's, so only the smoothing can differ
        weight = 2.0 ** rng.integers(-3, 4, n)
        y = signal + rng.standard_normal(n)
        params |= {"objective": "regression"}
    elif kind == "binary, learning rate 1":
        y = (signal + rng.logistic(size=n) > 0.5).astype(float)
        params |= {"objective": "binary", "learning_rate": 1.0}
    else:
        y = np.digitize(signal + rng.standard_normal(n), [0.0, 1.5]).astype(float)
        params |= {"objective": "multiclass", "num_class": 3, "learning_rate": 0.5}
    return X, y, weight, params


@pytest.mark.parametrize("kind", ["weighted squared error", "binary, learning rate 1",
                                  "multiclass"])
def test_refit_gives_back_lightgbm_when_hessians_vary(kind):
    """LightGBM smooths a child with a row count it estimates from the hessians, bin by bin
    of the split feature's histogram: with varying hessians that is not the child's row
    count. Refitting every leaf with nothing pruned gives back LightGBM's own predictions
    (before: smoothed with the true counts, off by 0.02 to 0.2)."""
    X, y, weight, params = _varying_hessian_case(kind)
    X, X_valid, y, y_valid = X[:800], X[800:], y[:800], y[800:]
    weight = None if weight is None else weight[:800]
    model = lgb.train(params, lgb.Dataset(X, y, weight=weight, categorical_feature=[3]), 10)
    X_before = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # host gains will not match: expected
        refit = uc.prune(model, X, y, X_valid, y_valid, train_weight=weight,
                         threshold=-np.inf, refit_leaves=True, random_state=0)
    expected = model.predict(X, raw_score=True)
    np.testing.assert_allclose(refit.predict(X, raw_score=True), expected,
                               rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_array_equal(X, X_before)  # the caller's rows are not touched


def test_refit_gives_back_lightgbm_from_a_frame_with_category_columns():
    """A DataFrame's category column is binned with the codes LightGBM trained on."""
    pd = pytest.importorskip("pandas")
    X, y, _, params = _varying_hessian_case("binary, learning rate 1")
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["d"] = pd.Categorical(np.array(["u", "v", "w", "x", "y", "z"])[X[:, 3].astype(int)])
    model = lgb.train(params, lgb.Dataset(frame.iloc[:800], y[:800]), 10)
    frame, valid, y, y_valid = frame.iloc[:800], frame.iloc[800:], y[:800], y[800:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        refit = uc.prune(model, frame, y, valid, y_valid, threshold=-np.inf,
                         refit_leaves=True, random_state=0)
    expected = model.predict(frame, raw_score=True)
    np.testing.assert_allclose(refit.predict(frame, raw_score=True), expected,
                               rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_a_dataset_text_that_does_not_read_as_bins_is_warned(monkeypatch):
    """The bins come from LightGBM's debugging text of a Dataset: a LightGBM that writes it
    otherwise is told (row counts are used, as before), never read as wrong bins."""
    X, y, weight, params = _varying_hessian_case("binary")

    def other_text(self, filename):
        with open(filename, "w", encoding="utf-8") as f:
            f.write("a format this library does not know\n" * 3)

    monkeypatch.setattr(lgb.Dataset, "_dump_text", other_text)
    model = lgb.train(params, lgb.Dataset(X[:800], y[:800], categorical_feature=[3]), 5)
    with pytest.warns(UserWarning, match="does not read as its bins"):
        pruned = uc.prune(model, X[:800], y[:800], X[800:], y[800:], threshold=-np.inf,
                          refit_leaves=True, random_state=0)
    assert np.isfinite(pruned.predict(X, raw_score=True)).all()


def test_sparse_rows_with_missing_values_are_binned_as_dense_ones():
    """scipy's column min keeps NaN: a non-negative column with missing entries was taken
    for one with values below zero's bin, and the counted child of its splits was the wrong
    one (refit off LightGBM by 5e-3 from a CSR matrix, 2e-9 from the same rows dense)."""
    from scipy import sparse

    rng = np.random.default_rng(9)

    def rows(n):
        Z = np.abs(rng.normal(size=(n, 4)))
        Z[rng.random((n, 4)) < 0.3] = 0.0
        Z[rng.random((n, 4)) < 0.15] = np.nan
        y = (np.nan_to_num(Z[:, 0]) + np.nan_to_num(Z[:, 1]) + rng.normal(size=n) > 1.2)
        return Z, y.astype(int)

    Z, y = rows(3000)
    Zv, yv = rows(1500)
    weight = rng.uniform(0.2, 3, 3000)
    params = {"objective": "binary", "path_smooth": 5.0, "learning_rate": 0.3, "verbose": -1,
              "num_threads": 1}
    A, Av = sparse.csr_matrix(Z), sparse.csr_matrix(Zv)
    model = lgb.train(params, lgb.Dataset(A, y, weight=weight), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # host gains will not match: expected
        refit = uc.prune(model, A, y, Av, yv, threshold=-np.inf, refit_leaves=True,
                         train_weight=weight, random_state=0)
    expected = model.predict(Av, raw_score=True)
    np.testing.assert_allclose(refit.predict(Av, raw_score=True), expected, rtol=1e-8,
                               atol=1e-8 * np.abs(expected).max())


def test_counts_are_estimated_only_where_a_leaf_gets_a_new_value(monkeypatch):
    """The estimate costs passes over the training rows: a prune that gives no leaf a new
    value (threshold=-inf without refit) makes none."""
    from unbiased_criteria import pruning

    X, y, weight, params = _varying_hessian_case("binary")

    def never(*args, **kwargs):
        raise AssertionError("counts estimated for a tree whose leaves keep their values")

    model = lgb.train(params, lgb.Dataset(X[:800], y[:800], categorical_feature=[3]), 5)
    monkeypatch.setattr(pruning, "smoothing_counts", never)
    monkeypatch.setattr(uc.api, "smoothing_counts", never, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pruned = uc.prune(model, X[:800], y[:800], X[800:], y[800:], threshold=-np.inf,
                          random_state=0)
    np.testing.assert_array_equal(pruned.predict(X, raw_score=True),
                                  model.predict(X, raw_score=True))
