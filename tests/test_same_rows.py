"""Held-out rows that are the training rows: U would be the biased gain again, silently.

``unbiased_importance`` warns (its ``biased_gain`` on given rows is a quantity of its own);
``prune`` refuses (every split would score above 0 and be kept).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example
from unbiased_criteria.validation import same_rows

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

SAME = "X_valid holds the same rows as X_train"


@pytest.fixture(scope="module")
def data():
    X, y = paper_example(1500, random_state=0)
    Xv, yv = paper_example(1500, random_state=1)
    return X, y, Xv, yv


@pytest.fixture(scope="module", params=["lightgbm", "xgboost"])
def model(request, data):
    X, y, _, _ = data
    if request.param == "lightgbm":
        return lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                         lgb.Dataset(X, y), 20)
    return xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y, enable_categorical=True),
                     20)


def test_the_training_rows_as_held_out_rows_are_warned_or_refused(model, data):
    X, y, Xv, yv = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # other rows: nothing to say
        fair = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).to_frame()
    for X2, y2 in [(X, y), (X.copy(), np.array(y, copy=True))]:  # the object, a copy
        with pytest.warns(UserWarning, match=SAME) as caught:
            report = uc.unbiased_importance(model, X, y, X2, y2, random_state=0)
        same = [w for w in caught if SAME in str(w.message)]
        assert len(same) == 1 and same[0].filename == __file__
        # what the warning is about: on its own rows the noise X3 gets about its biased
        # gain back, several standard errors above 0; on other rows a small part of it
        own = report.to_frame().loc["X3"]
        assert own["unbiased_gain"] > max(0.8 * own["biased_gain"], 5 * own["std_error"])
        assert fair.loc["X3", "unbiased_gain"] < 0.2 * own["biased_gain"]
        with pytest.raises(ValueError, match=SAME + ".*X_train=None"):
            uc.prune(model, X, y, X2, y2, random_state=0)


def test_same_rows_is_exact_where_it_can_be():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(200, 3))
    y = rng.normal(size=200)
    assert same_rows(A, y, A, y)
    assert same_rows(A, y, A[::-1], y[::-1])  # a view of the same rows, in another order
    assert same_rows(A, y, A.copy(), y.copy())
    frame = pd.DataFrame(A, columns=list("abc"))
    assert same_rows(frame, y, frame.copy(), y)
    assert same_rows(sparse.csr_matrix(A), y, sparse.csr_matrix(A), y)
    assert same_rows(A.tolist(), y, A.tolist(), y)  # lists of rows, as numpy reads them
    # the same values in another container or other dtypes
    assert same_rows(frame, y, A.copy(), pd.Series(y))
    assert same_rows(A, y, frame, y)
    ints = frame.round().astype(np.int64)
    assert same_rows(ints, y, ints.to_numpy(np.float64), y)
    assert same_rows(frame, y, frame.convert_dtypes(), y)  # nullable Float64
    pytest.importorskip("pyarrow")
    assert same_rows(frame, y, frame.convert_dtypes(dtype_backend="pyarrow"), y)
    assert not same_rows(frame, y, frame.rename(columns={"a": "z"}), y)
    # numeric categories (the paper's X2) compare by value with to_numpy()'s objects
    cats = frame.assign(c=pd.Categorical(np.round(A[:, 2] * 2)))
    assert same_rows(cats, y, cats.to_numpy(), y)
    assert not same_rows(cats, y, cats.assign(c=cats["c"].cat.codes).to_numpy(), y)
    assert not same_rows(A.tolist(), y, A[::-1].tolist(), y)
    # other rows, or the same features of other rows, or the same rows with other labels
    B = rng.normal(size=(200, 3))
    assert not same_rows(A, y, B, y)
    assert not same_rows(A, y, A.copy(), y[::-1])
    assert not same_rows(A[:100], y[:100], A[100:], y[100:])
    assert not same_rows(frame, y, frame.iloc[::-1], y[::-1])  # not detected: documented
    nan = A.copy()
    nan[::7, 0] = np.nan
    assert same_rows(nan, y, nan.copy(), y)  # missing values compare equal
    # binary features and labels: 32 probe rows agree by chance with probability 2**-128
    bits = rng.integers(0, 2, size=(200, 3)).astype(float)
    labels = rng.integers(0, 2, size=200).astype(float)
    other = rng.integers(0, 2, size=(200, 3)).astype(float)
    assert not same_rows(bits, labels, other, labels)


PRUNED = "X_valid holds the rows that pruned this model"


def test_scoring_a_model_on_the_rows_that_pruned_it_is_warned(model, data, tmp_path):
    """prune keeps each split for its U on the held-out rows: U on them again is biased
    upwards (on null data every noise feature came out positive, select() picked 23% of
    them). The pruned model remembers the rows (a digest), in memory and, for XGBoost, in its
    file; other rows, or the unpruned model, say nothing."""
    X, y, Xv, yv = data
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
    for rows in (Xv, Xv.copy(), Xv.convert_dtypes()):  # the rows, in any container
        with pytest.warns(UserWarning, match=PRUNED) as caught:
            uc.unbiased_importance(pruned, X, y, rows, np.asarray(yv), random_state=0)
        assert [w.filename for w in caught if PRUNED in str(w.message)] == [__file__]
    X2, y2 = paper_example(1500, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(pruned, X, y, X2, y2, random_state=0)  # other rows
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)  # not pruned on them
        # the same features with other labels are other rows
        uc.unbiased_importance(pruned, X, y, Xv, y2, random_state=0)
    # pruned again on other rows: both sets are remembered
    twice = uc.prune(pruned, X, y, X2, y2, random_state=0)
    for rows, labels in ((Xv, yv), (X2, y2)):
        with pytest.warns(UserWarning, match=PRUNED):
            uc.unbiased_importance(twice, X, y, rows, labels, random_state=0)
    if isinstance(model, xgb.Booster):  # kept in the model file
        pruned.save_model(tmp_path / "pruned.json")
        loaded = xgb.Booster(model_file=str(tmp_path / "pruned.json"))
        with pytest.warns(UserWarning, match=PRUNED):
            uc.unbiased_importance(loaded, X, y, Xv, yv, random_state=0)
    else:  # kept with the Booster object and its pickles
        import pickle

        with pytest.warns(UserWarning, match=PRUNED):
            uc.unbiased_importance(pickle.loads(pickle.dumps(pruned)), X, y, Xv, yv,
                                   random_state=0)


def test_pruned_rows_kept_by_estimator_copies_and_not_said_for_keep_all(data):
    """LightGBM's deepcopy rebuilds a Booster from its text: a copied pruned estimator forgot
    its pruning rows (the estimator keeps them now). threshold=-inf keeps every split, so
    it decided nothing on its rows, and scoring on them is not warned about."""
    import copy

    X, y, Xv, yv = data
    est = lgb.LGBMRegressor(n_estimators=10, verbose=-1, n_jobs=1).fit(X, y)
    pruned = uc.prune(est, X, y, Xv, yv, random_state=0)
    with pytest.warns(UserWarning, match=PRUNED):
        uc.unbiased_importance(copy.deepcopy(pruned), X, y, Xv, yv, random_state=0)
    kept = uc.prune(est, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(kept, X, y, Xv, yv, random_state=0)


def test_histgradientboosting_pruned_on_the_rows_is_warned(data):
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y, Xv, yv = data
    est = HistGradientBoostingRegressor(max_iter=10, categorical_features="from_dtype",
                                        random_state=0).fit(X, y)
    pruned = uc.prune(est, X, y, Xv, yv, random_state=0)
    with pytest.warns(UserWarning, match=PRUNED):
        uc.unbiased_importance(pruned, X, y, Xv, yv, random_state=0)


def test_rows_digest_is_the_rows_in_any_container():
    from unbiased_criteria.validation import rows_digest

    rng = np.random.default_rng(0)
    A, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    frame = pd.DataFrame(A, columns=list("abc"))
    digest = rows_digest(A, y)
    assert rows_digest(frame, pd.Series(y)) == digest
    assert rows_digest(frame.convert_dtypes(), y) == digest
    assert rows_digest(sparse.csr_matrix(A), y) == digest
    negative_zero = A.copy()
    negative_zero[0, 0] = -0.0
    zero = A.copy()
    zero[0, 0] = 0.0
    assert rows_digest(negative_zero, y) == rows_digest(zero, y)
    assert rows_digest(A[::-1], y) != digest
    assert rows_digest(A, y[::-1]) != digest
    assert rows_digest(A[:299], y[:299]) != digest
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]
    assert rows_digest(A, labels) == rows_digest(frame, list(labels))
    cats = frame.assign(c=pd.Categorical(rng.integers(0, 4, 300)))
    assert rows_digest(cats, y) == rows_digest(cats.copy(), y)
    assert rows_digest(cats, y) != rows_digest(cats.assign(a=0.0), y)
