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
    # the object, a copy, a float32 copy of the rows and labels (the precision the hosts read)
    for X2, y2 in [(X, y), (X.copy(), np.array(y, copy=True)),
                   (X.astype({c: np.float32 for c in X.columns if X[c].dtype.kind == "f"}),
                    np.asarray(y, dtype=np.float32))]:
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


PRUNED = "X_valid holds rows that pruned this model"


def test_scoring_a_model_on_the_rows_that_pruned_it_is_warned(model, data, tmp_path):
    """prune keeps each split for its U on the held-out rows: U on them again is biased
    upwards (on null data every noise feature came out positive, select() picked 23% of
    them). The pruned model remembers the rows (a sketch), in memory and, for XGBoost, in its
    file; other rows, or the unpruned model, say nothing."""
    X, y, Xv, yv = data
    pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
    for rows in (Xv, Xv.copy(), Xv.convert_dtypes()):  # the rows, in any container
        for labels in (np.asarray(yv), np.asarray(yv, dtype=np.float32)):  # labels as read
            with pytest.warns(UserWarning, match=PRUNED) as caught:
                uc.unbiased_importance(pruned, X, y, rows, labels, random_state=0)
            assert [w.filename for w in caught if PRUNED in str(w.message)] == [__file__]
    X2, y2 = paper_example(1500, random_state=2)
    # shuffled, a part of them, or mixed with fresh rows: still those rows
    order = np.random.default_rng(0).permutation(1500)
    for rows, labels, share in [(Xv.iloc[order], np.asarray(yv)[order], "100%"),
                                (Xv.iloc[order[:300]], np.asarray(yv)[order[:300]], "100%"),
                                (pd.concat([Xv.iloc[:500], X2.iloc[:1000]]),
                                 np.concatenate([yv[:500], y2[:1000]]), r"3\d%")]:
        with pytest.warns(UserWarning, match=f"{PRUNED} \\(about {share} of its rows\\)"):
            uc.unbiased_importance(pruned, X, y, rows, labels, random_state=0)
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


def test_row_hashes_are_the_rows_in_any_container():
    from unbiased_criteria.row_sets import row_hashes

    rng = np.random.default_rng(0)
    A, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    A[::11, 1] = np.nan
    frame = pd.DataFrame(A, columns=list("abc"))
    hashes = row_hashes(A, y)
    assert np.unique(hashes).size == 300
    for X2, y2 in [(frame, pd.Series(y, index=np.arange(300) + 7)), (frame.convert_dtypes(), y),
                   (A.astype(np.float32), y), (np.asfortranarray(A), list(y)),
                   (A.astype(object), y), (A, y.astype(np.float32)),
                   (A, pd.Series(y, dtype="float32"))]:
        np.testing.assert_array_equal(row_hashes(X2, y2), hashes)
    dense = np.nan_to_num(A)
    np.testing.assert_array_equal(row_hashes(sparse.csc_matrix(dense), y),
                                  row_hashes(dense, y))
    negative_zero, zero = A.copy(), A.copy()
    negative_zero[0, 0], zero[0, 0] = -0.0, 0.0
    np.testing.assert_array_equal(row_hashes(negative_zero, y), row_hashes(zero, y))
    np.testing.assert_array_equal(row_hashes(A[::-1], y[::-1]), hashes[::-1])
    # another label or another value is another row
    assert (row_hashes(A, y + 1) != hashes).all()
    moved = A.copy()
    moved[:, 0] += 1e-3
    assert (row_hashes(moved, y) != hashes).all()
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]
    np.testing.assert_array_equal(row_hashes(A, labels), row_hashes(frame, list(labels)))
    cats = frame.assign(c=pd.Categorical(rng.integers(0, 4, 300)))
    np.testing.assert_array_equal(row_hashes(cats, y), row_hashes(cats.to_numpy(), y))
    words = frame.assign(c=pd.Categorical(np.array(["u", "v"])[rng.integers(0, 2, 300)]))
    np.testing.assert_array_equal(row_hashes(words, y),
                                  row_hashes(words.assign(c=words["c"].astype(str)), y))
    assert (row_hashes(words.assign(a=0.0), y) != row_hashes(words, y)).all()
    # a wide table is hashed on 64 evenly spaced columns, alike in every container
    wide = rng.normal(size=(50, 300))
    wide_hashes = row_hashes(wide, y[:50])
    np.testing.assert_array_equal(row_hashes(pd.DataFrame(wide), y[:50]), wide_hashes)
    np.testing.assert_array_equal(row_hashes(sparse.csr_matrix(wide), y[:50]), wide_hashes)
    assert np.unique(wide_hashes).size == 50
    # chunks: a table longer than one chunk hashes as its parts
    from unbiased_criteria import row_sets

    big = rng.normal(size=(row_sets._CHUNK_VALUES // 3 + 5, 2))  # 3 values a row
    labels = rng.normal(size=big.shape[0])
    np.testing.assert_array_equal(row_hashes(big, labels)[-10:],
                                  row_hashes(big[-10:], labels[-10:]))


SHARED = "X_valid holds rows of X_train"


def test_training_rows_in_another_order_or_in_part_are_warned(model, data):
    """The same rows shuffled are the same rows (prune refuses); a third of the held-out rows
    from the training set is warned of with its share; fresh rows say nothing."""
    X, y, Xv, yv = data
    order = np.random.default_rng(3).permutation(len(y))
    shuffled, shuffled_y = X.iloc[order], np.asarray(y)[order]
    with pytest.warns(UserWarning, match=SAME):
        uc.unbiased_importance(model, X, y, shuffled, shuffled_y, random_state=0)
    with pytest.raises(ValueError, match=SAME):
        uc.prune(model, X, y, shuffled.to_numpy(), shuffled_y, random_state=0)
    mixed = pd.concat([X.iloc[:500], Xv.iloc[:1000]])
    mixed_y = np.concatenate([np.asarray(y)[:500], np.asarray(yv)[:1000]])
    for call in (uc.unbiased_importance, uc.prune):
        with pytest.warns(UserWarning, match=SHARED + r" \(33% of its rows\)") as caught:
            call(model, X, y, mixed, mixed_y, random_state=0)
        assert [w.filename for w in caught if SHARED in str(w.message)] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # 5% of the rows: below what is warned of
        uc.unbiased_importance(model, X, y, mixed.iloc[450:], mixed_y[450:], random_state=0)


def test_rows_repeated_by_chance_are_not_warned():
    """Binary features and labels: independent samples share every row by chance (the
    training rows repeat among themselves as often); only a share beyond it is warned."""
    rng = np.random.default_rng(1)

    def sample(n):
        X = rng.integers(0, 2, size=(n, 3)).astype(float)
        return X, (X[:, 0] + rng.integers(0, 2, n) > 1).astype(float)

    X, y = sample(2000)
    Xv, yv = sample(1000)
    model = lgb.train({"objective": "binary", "verbose": -1, "num_threads": 1,
                       "min_data_in_leaf": 5}, lgb.Dataset(X, y), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
        X2, y2 = sample(1000)
        uc.unbiased_importance(pruned, X, y, X2, y2, random_state=0)
    from unbiased_criteria.row_sets import overlap, row_hashes

    found = overlap(row_hashes(X, y), row_hashes(Xv, yv))
    assert found.share == 1.0 and found.chance == 1.0 and found.excess == 0.0


def test_a_part_of_many_pruning_rows_is_recognised_from_the_sketch():
    """More distinct pruning rows than the sketch keeps: the share of given rows among them is
    estimated from the given rows below the sketch's bound, with its standard error."""
    from unbiased_criteria.row_sets import SKETCH_SIZE, overlap_with_sketch, row_hashes, sketch

    rng = np.random.default_rng(2)
    P, yp = rng.normal(size=(50_000, 4)), rng.normal(size=50_000)
    text = sketch(row_hashes(P, yp))
    fresh, yf = rng.normal(size=(20_000, 4)), rng.normal(size=20_000)
    for share in (0.0, 0.3, 1.0):
        n_old = int(share * 20_000)
        rows = np.concatenate([P[:n_old], fresh[n_old:]])
        labels = np.concatenate([yp[:n_old], yf[n_old:]])
        found = overlap_with_sketch(text, row_hashes(rows, labels))
        assert found.estimated and found.chance == 0.0
        expected_tested = 20_000 * SKETCH_SIZE / 50_000
        assert abs(found.tested - expected_tested) < 5 * np.sqrt(expected_tested)
        se = max(np.sqrt(share * (1 - share) / found.tested), 1e-12)
        assert abs(found.share - share) <= 4 * se
    assert overlap_with_sketch("rows0:junk", row_hashes(fresh, yf)) is None  # unreadable


def test_a_part_of_the_training_rows_is_said_so(model, data):
    X, y, _, _ = data
    with pytest.warns(UserWarning, match="every row of X_valid is a row of X_train"):
        uc.unbiased_importance(model, X, y, X.iloc[::3], np.asarray(y)[::3], random_state=0)
    with pytest.raises(ValueError, match="every row of X_valid is a row of X_train"):
        uc.prune(model, X, y, X.iloc[::3], np.asarray(y)[::3], random_state=0)


@pytest.mark.parametrize("n_features, p, n_train, n_valid",
                         [(16, 0.5, 20_000, 5_000), (12, 0.2, 2_000, 20_000),
                          (14, 0.3, 50_000, 500)])
def test_the_chance_level_is_the_share_a_fresh_sample_shares(n_features, p, n_train, n_valid):
    """Independent samples of discrete rows: the held-out rows' share among the training rows
    is, in expectation, the share of training rows that repeat among themselves (a held-out
    row meets n training rows as a training row meets the n - 1 others). Checked against
    its standard error over 20 pairs of samples."""
    from unbiased_criteria.row_sets import overlap, row_hashes

    rng = np.random.default_rng(n_features)
    diffs = []
    for _ in range(20):
        Xt, Xv = (rng.random((n_train, n_features)) < p), (rng.random((n_valid, n_features)) < p)
        yt, yv = rng.random(n_train) < 0.5, rng.random(n_valid) < 0.5
        found = overlap(row_hashes(Xt, yt), row_hashes(Xv, yv))
        diffs.append(found.share - found.chance)
    diffs = np.array(diffs)
    assert 0.02 < found.share < 0.98  # neither level is trivial
    assert abs(diffs.mean()) <= 4 * diffs.std(ddof=1) / np.sqrt(diffs.size)
    assert diffs.max() < 0.1  # what would be warned of


def test_a_common_row_below_the_sketch_bound_is_no_false_alarm():
    """One row value common in the data (a default record: 5-30% of rows) and more distinct
    rows than the sketch keeps: where its hash fell below the sketch's bound, it was most of
    the rows tested, and the chance level of all rows did not apply to them (fresh rows were
    warned of in 16 of 80 draws). The sketch's chance level is that of the rows it tests."""
    from unbiased_criteria.row_sets import WARN_EXCESS, overlap_with_sketch, row_hashes, sketch

    for seed in range(20):
        rng = np.random.default_rng(seed)

        def make(n, p0, rng=rng):
            X = rng.normal(size=(n, 5)).round(2)
            y = (X[:, 0] + rng.normal(size=n) > 0).astype(float)
            common = rng.random(n) < p0
            X[common], y[common] = 1.0, 0.0
            return X, y

        for p0 in (0.3, 0.05):
            found = overlap_with_sketch(sketch(row_hashes(*make(5000, p0))),
                                        row_hashes(*make(5000, p0)))
            assert found is None or found.excess < WARN_EXCESS, (seed, p0, found)


def test_without_training_rows_the_readers_gain_warnings_are_not_shown():
    """Validation-only mode compares nothing with the host's gains: the readers' reasons why
    biased_gain on the training rows would not match them (bagging, subsample, a hook's
    held-out rows) were still shown there, as noise. With training rows they are."""
    X, y = paper_example(3000, random_state=0)
    Xv, yv = paper_example(3000, random_state=1)
    models = {
        "bagging": lgb.train({"objective": "regression", "bagging_fraction": 0.5,
                              "bagging_freq": 1, "verbose": -1, "num_threads": 1,
                              "boost_from_average": False}, lgb.Dataset(X, y), 10),
        "subsample": xgb.train({"subsample": 0.5, "max_depth": 3, "nthread": 1},
                               xgb.DMatrix(X, y, enable_categorical=True), 10),
        "the training hook": uc.adapters.xgboost.train(
            {"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y, enable_categorical=True), 10,
            random_state=0),
    }
    for reason, model in models.items():
        with pytest.warns(UserWarning, match=reason):
            uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.filterwarnings("ignore", message=".*no usable evidence")
            uc.unbiased_importance(model, None, None, Xv, yv, random_state=0)
