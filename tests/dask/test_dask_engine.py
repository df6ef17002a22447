"""uc.unbiased_importance and uc.prune on dask collections, on a LocalCluster of 2 processes.

Oracles: the in-memory computation on the same rows (node sums, B, counts, k), the hosts'
loaders and predictions, and Monte Carlo for U where the draws legitimately differ.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.api import adapter_for

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")
xgboost_dask = pytest.importorskip("xgboost.dask")

EXACT = ["n_train", "n_valid", "k", "tree", "node", "feature_index"]
CLOSE = ["sum_hessian", "biased_gain", "host_gain", "threshold"]


def _data(n, seed, n_features=4, classes=None):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, n_features)),
                     columns=[f"f{i}" for i in range(n_features)])
    score = X["f0"] + 0.3 * X["f1"] * (X["f2"] > 0)
    if classes:
        y = pd.Series(np.digitize(score + rng.normal(size=n), [-0.5, 0.5][: classes - 1]))
    else:
        y = pd.Series(score + rng.normal(size=n))
    w = pd.Series(rng.uniform(0.5, 2.0, size=n))
    return X, y, w


def _dask(parts, *frames):
    return [dd.from_pandas(f, npartitions=parts) for f in frames]


def _assert_same_splits(mem, dsk):
    a, b = mem.splits, dsk.splits
    assert len(a) == len(b) > 0
    for col in EXACT:
        np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy(), err_msg=col)
    for col in CLOSE:
        np.testing.assert_allclose(b[col].to_numpy(), a[col].to_numpy(), rtol=1e-9,
                                   atol=0, err_msg=col)


def test_lightgbm_binary_weighted_sums_and_B_equal_in_memory(client):
    X, y, w = _data(3000, 0, classes=2)
    Xv, yv, wv = _data(2500, 1, classes=2)
    model = lightgbm.LGBMClassifier(n_estimators=8, num_leaves=8, verbose=-1).fit(
        X, y, sample_weight=w)
    mem = uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, valid_weight=wv)
    dsk = uc.unbiased_importance(model, *_dask(3, X, y), *_dask(4, Xv, yv), train_weight=
                                 _dask(3, w)[0], valid_weight=_dask(4, wv)[0])
    _assert_same_splits(mem, dsk)
    assert dsk.splits["usable"].any()
    # a small memory budget: several rounds, leaves routed a few trees at a time; the draws
    # do not depend on the chunking, so U (and its standard error) is the same
    small = uc.unbiased_importance(model, *_dask(3, X, y), *_dask(4, Xv, yv), train_weight=
                                   _dask(3, w)[0], valid_weight=_dask(4, wv)[0],
                                   memory_budget=20_000)
    pd.testing.assert_frame_equal(small.splits, dsk.splits)
    pd.testing.assert_frame_equal(small.to_frame(), dsk.to_frame())
    # the standard errors are there (blocks of held-out rows across partitions)
    assert np.isfinite(dsk.to_frame()["std_error"]).all()


def test_dask_trained_multiclass_lightgbm_on_dask_arrays(client):
    X, y, _ = _data(3000, 2, classes=3)
    Xv, yv, _ = _data(2000, 3, classes=3)
    dX, dy = da.from_array(X.to_numpy(), chunks=(1000, 4)), da.from_array(y.to_numpy(), 1000)
    model = lightgbm.DaskLGBMClassifier(n_estimators=4, num_leaves=6, verbose=-1,
                                        client=client).fit(dX, dy)
    dXv = da.from_array(Xv.to_numpy(), chunks=(700, 2))  # column chunks: rechunked by rows
    dyv = da.from_array(yv.to_numpy(), chunks=700)
    dsk = uc.unbiased_importance(model, dX, dy, dXv, dyv)
    mem = uc.unbiased_importance(model.to_local(), X.to_numpy(), y, Xv.to_numpy(), yv)
    _assert_same_splits(mem, dsk)
    assert set(dsk.splits["class"]) == {0, 1, 2}


def test_xgboost_dask_train_result(client):
    X, y, w = _data(3000, 4)
    Xv, yv, wv = _data(2000, 5)
    dX, dy = _dask(2, X, y)
    result = xgboost_dask.train(
        client, {"max_depth": 3, "eta": 0.3, "objective": "reg:pseudohubererror"},
        xgboost_dask.DaskDMatrix(client, dX, dy), num_boost_round=5)
    dsk = uc.unbiased_importance(result, dX, dy, *_dask(3, Xv, yv), random_state=1)
    mem = uc.unbiased_importance(result["booster"], X, y, Xv, yv, random_state=1)
    _assert_same_splits(mem, dsk)
    X2, y2, _ = _data(2000, 15)
    pruned = uc.prune(result, *_dask(2, X2, y2), *_dask(3, Xv, yv), threshold=-np.inf,
                      refit_leaves=True)
    assert set(pruned) == set(result) and pruned["history"] is result["history"]
    same = uc.prune(result["booster"], X2, y2, Xv, yv, threshold=-np.inf, refit_leaves=True)
    d = xgboost.DMatrix(Xv)
    np.testing.assert_allclose(pruned["booster"].predict(d, output_margin=True),
                               same.predict(d, output_margin=True), rtol=0, atol=1e-6)


def test_memory_budget_is_checked_as_in_memory(client):
    # the Dask path took int(memory_budget): 0 and -5 silently, text and NaN with int()'s
    # errors that did not name it
    X, y, _ = _data(600, 11)
    model = lightgbm.LGBMRegressor(n_estimators=3, num_leaves=4, verbose=-1).fit(X, y)
    dX, dy = _dask(2, X, y)
    for bad in (0, -5, "abc", float("nan"), True, None):
        expected = "^" + re.escape(f"memory_budget must be a positive number of bytes, got "
                                   f"{bad!r}") + "$"
        for rows in ((X, y), (dX, dy)):
            with pytest.raises(ValueError, match=expected):
                uc.unbiased_importance(model, *rows, *rows, memory_budget=bad)
            with pytest.raises(ValueError, match=expected):
                uc.prune(model, *rows, *rows, memory_budget=bad)
    # a float budget, and one too small for a round of all trees, as in memory
    base = uc.unbiased_importance(model, dX, dy, dX, dy, random_state=0)
    for fine in (1e8, 2e4 + 0.5, float("inf"), np.int64(10**8)):
        got = uc.unbiased_importance(model, dX, dy, dX, dy, random_state=0,
                                     memory_budget=fine)
        pd.testing.assert_frame_equal(got.splits, base.splits)


def test_prune_refit_equals_in_memory_and_loads(client):
    X, y, _ = _data(3000, 6)
    Xv, yv, _ = _data(2000, 7)
    dX, dy = _dask(2, X, y)
    model = lightgbm.DaskLGBMRegressor(n_estimators=10, num_leaves=8, verbose=-1,
                                       client=client).fit(dX, dy)
    # threshold -inf keeps every split: refitting every leaf is deterministic (no draws),
    # so the replays on the partitions must give the in-memory leaf values; refit on other
    # rows than the model's (on its own rows the refit gives back the host's leaves)
    X2, y2, _ = _data(3000, 16)
    dsk = uc.prune(model, *_dask(3, X2, y2), *_dask(3, Xv, yv), threshold=-np.inf,
                   refit_leaves=True)
    mem = uc.prune(model.to_local(), X2, y2, Xv, yv, threshold=-np.inf, refit_leaves=True)
    assert type(dsk) is type(model)
    loaded = lightgbm.Booster(model_str=dsk.booster_.model_to_string())
    np.testing.assert_allclose(loaded.predict(Xv, raw_score=True),
                               mem.booster_.predict(Xv, raw_score=True), rtol=0, atol=1e-9)
    assert not np.allclose(loaded.predict(Xv), model.to_local().predict(Xv))


def test_pruned_model_keeps_only_positive_splits_and_predicts_as_its_ir(client):
    X, y, _ = _data(3000, 8)
    Xv, yv, _ = _data(3000, 9)
    model = lightgbm.LGBMRegressor(n_estimators=15, num_leaves=15, learning_rate=0.2,
                                   verbose=-1).fit(X, y)
    args = (*_dask(2, X, y), *_dask(3, Xv, yv))
    pruned = uc.prune(model, *args, random_state=7)
    before = uc.unbiased_importance(model, *args, random_state=7).splits
    # the rows that pruned it (its sketch, from the partitions): warned, as in memory
    with pytest.warns(UserWarning, match="X_valid holds rows that pruned this model"):
        report = uc.unbiased_importance(pruned, *args, random_state=7)
    assert 0 < len(report.splits) < len(before)
    # re-scored with the same rows and seed, every kept split draws the rows it was pruned
    # with: U > 0 for each (as in memory)
    assert (report.splits["unbiased_gain"] > 0).all()
    read = adapter_for(pruned).read_model(pruned)
    np.testing.assert_allclose(pruned.predict(Xv, raw_score=True),
                               read.forest.raw_score(Xv.to_numpy())[:, 0], atol=1e-9, rtol=0)


@pytest.mark.slow
def test_null_mean_of_U_with_dask_inputs(client):
    """Labels independent of the features: a one-tree model's U sums to 0 in expectation.

    The train rows (and so G) are fixed; each seed draws fresh held-out rows and draws.
    """
    X, _, _ = _data(2000, 10)
    y = pd.Series(np.random.default_rng(10).normal(size=2000))
    model = lightgbm.LGBMRegressor(n_estimators=1, num_leaves=12, min_child_samples=20,
                                   verbose=-1).fit(X, y)
    dX, dy = _dask(2, X, y)
    totals = []
    for seed in range(30):
        Xv, _, _ = _data(1500, 100 + seed)
        yv = pd.Series(np.random.default_rng(200 + seed).normal(size=1500))
        rep = uc.unbiased_importance(model, dX, dy, *_dask(3, Xv, yv), random_state=seed,
                                     n_blocks=0, min_k=1)
        totals.append(rep.splits["unbiased_gain"].sum())
        biased = rep.splits["biased_gain"].sum()
    totals = np.array(totals)
    se = totals.std(ddof=1) / np.sqrt(totals.size)
    assert abs(totals.mean()) < 3.5 * se, (totals.mean(), se)
    # the test has power: B of the same splits is far above 0
    assert biased > 10 * se


def test_bad_dask_inputs(client, monkeypatch):
    X, y, _ = _data(600, 11)
    model = lightgbm.LGBMRegressor(n_estimators=2, num_leaves=4, verbose=-1).fit(X, y)
    dX, dy = _dask(2, X, y)
    with pytest.raises(ValueError, match="y_valid has 3 partitions but X_valid has 2"):
        uc.unbiased_importance(model, dX, dy, dX, dd.from_pandas(y, npartitions=3))
    with pytest.raises(TypeError, match="y_valid must be a dask DataFrame, Series or Array"):
        uc.unbiased_importance(model, dX, dy, dX, y)
    with pytest.raises(ValueError, match="pass both X_train and y_train, or neither"):
        uc.unbiased_importance(model, dX, None, dX, dy)
    bad = dd.from_pandas(pd.Series(np.full(600, np.nan)), npartitions=2)
    with pytest.raises(ValueError, match="y_valid contains NaN labels"):
        uc.unbiased_importance(model, dX, dy, dX, bad)
    # a multi-target model's labels need one column per target, in every partition
    Y = np.column_stack([y, -y])
    targets = xgboost.train({"max_depth": 2}, xgboost.DMatrix(X, Y), 2)
    dY = da.from_array(Y, chunks=(300, 2))
    with pytest.raises(ValueError, match=r"y_valid must have shape \(n_rows, 2\)"):
        uc.unbiased_importance(targets, dX, dY, dX, dy)

    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "get_client", no_client)
    with pytest.raises(ValueError, match="distributed.Client"):
        uc.unbiased_importance(model, dX, dy, dX, dy)


def test_xgboost_multi_target_model(client):
    """Labels (n, T), one tree per target: the sums, B and k are the in-memory ones, with
    the labels as a dask Array or a two-column DataFrame; refit at -inf is the in-memory
    refit; the validation-only mode runs."""
    X, y, w = _data(3000, 18)
    Xv, yv, wv = _data(2000, 19)
    Y = pd.DataFrame({"a": (y > 0).astype(float), "b": (X["f1"] > 0.3).astype(float)})
    Yv = pd.DataFrame({"a": (yv > 0).astype(float), "b": (Xv["f1"] > 0.3).astype(float)})
    model = xgboost.train({"max_depth": 3, "objective": "binary:logistic", "nthread": 1},
                          xgboost.DMatrix(X, Y, weight=w), num_boost_round=4)
    mem = uc.unbiased_importance(model, X, Y, Xv, Yv, train_weight=w, valid_weight=wv)
    dYv = da.from_array(Yv.to_numpy(), chunks=(700, 1))  # column chunks: rechunked by rows
    dsk = uc.unbiased_importance(model, *_dask(3, X, Y, w)[:2], _dask(2, Xv)[0], dYv.rechunk(
        {0: 1000}), train_weight=_dask(3, w)[0], valid_weight=_dask(2, wv)[0])
    _assert_same_splits(mem, dsk)
    assert set(dsk.splits["class"]) == {0, 1} and dsk.splits["usable"].any()
    X2, Y2 = _data(2000, 20)[0], Y.iloc[:2000].reset_index(drop=True)
    pruned = uc.prune(model, *_dask(2, X2, Y2), *_dask(2, Xv, Yv), threshold=-np.inf,
                      refit_leaves=True)
    same = uc.prune(model, X2, Y2, Xv, Yv, threshold=-np.inf, refit_leaves=True)
    d = xgboost.DMatrix(Xv)
    np.testing.assert_allclose(pruned.predict(d, output_margin=True),
                               same.predict(d, output_margin=True), rtol=0, atol=1e-6)
    assert not np.allclose(pruned.predict(d), model.predict(d))
    # validation-only: G from the model's own sums (it stores no row counts: -1), B its gain
    own = uc.unbiased_importance(model, None, None, *_dask(3, Xv, Yv))
    assert own.g_source == "model"
    own_mem = uc.unbiased_importance(model, None, None, Xv, Yv)
    _assert_same_splits(own_mem, own)
    np.testing.assert_allclose(own.splits["biased_gain"], own.splits["host_gain"], rtol=1e-4,
                               atol=1e-5 * own.splits["host_gain"].abs().max())
    assert (own.splits["n_train"] == -1).all()


def test_is_unbalance_takes_its_class_weights_from_the_training_labels(client):
    """LightGBM's is_unbalance: the class weights come from the training label counts, which
    come to the client with the labels for the init score; B as in memory."""
    X, y, _ = _data(3000, 24, classes=2)
    Xv, yv, _ = _data(2000, 25, classes=2)
    y = (y * (X["f3"] > 0.4)).astype(int)  # about a third positive: the weights are not 1
    model = lightgbm.LGBMClassifier(n_estimators=5, num_leaves=6, is_unbalance=True,
                                    verbose=-1).fit(X, y)
    mem = uc.unbiased_importance(model, X, y, Xv, yv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no request for objective=: it was built
        dsk = uc.unbiased_importance(model, *_dask(3, X, y), *_dask(2, Xv, yv))
    _assert_same_splits(mem, dsk)
    np.testing.assert_allclose(dsk.splits["biased_gain"], dsk.splits["host_gain"], rtol=1e-5)
    with pytest.raises(ValueError, match="is_unbalance.*pass objective="):
        uc.unbiased_importance(model, None, None, *_dask(2, Xv, yv))


@pytest.mark.parametrize("class_weight", [{1: 4.0}, "balanced"])
def test_class_weight_as_in_memory(client, class_weight):
    """LGBMClassifier(class_weight=...) multiplied its training weights: Dask inputs weight the
    rows as in memory (the init score too), and B is LightGBM's split_gain."""
    X, y, _ = _data(3000, 26, classes=2)
    Xv, yv, _ = _data(2000, 27, classes=2)
    y = (y * (X["f3"] > 0.4)).astype(int)
    model = lightgbm.LGBMClassifier(n_estimators=5, num_leaves=6, class_weight=class_weight,
                                    verbose=-1).fit(X, y)
    mem = uc.unbiased_importance(model, X, y, Xv, yv)
    dsk = uc.unbiased_importance(model, *_dask(3, X, y), *_dask(2, Xv, yv))
    _assert_same_splits(mem, dsk)
    np.testing.assert_allclose(dsk.splits["biased_gain"], dsk.splits["host_gain"], rtol=1e-5)


def test_the_training_collection_as_held_out_rows_is_warned_or_refused(client):
    X, y, _ = _data(600, 21)
    Xv, yv, _ = _data(600, 22)
    model = lightgbm.LGBMRegressor(n_estimators=2, num_leaves=4, verbose=-1).fit(X, y)
    same = "X_valid holds the same rows as X_train"
    dX, dy = _dask(2, X, y)
    with pytest.warns(UserWarning, match=same) as caught:
        uc.unbiased_importance(model, dX, dy, *_dask(2, X, y))  # the same graph, rebuilt
    assert caught[0].filename == __file__
    with pytest.raises(ValueError, match=same):
        uc.prune(model, dX, dy, dX, dy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, dX, dy, *_dask(2, Xv, yv))


def test_progress_shows_dask_progress(client, capsys):
    X, y, _ = _data(600, 12)
    Xv, yv, _ = _data(600, 23)
    model = lightgbm.LGBMRegressor(n_estimators=2, num_leaves=4, verbose=-1).fit(X, y)
    uc.unbiased_importance(model, *_dask(2, X, y), *_dask(2, Xv, yv), progress=True)
    assert "Completed" in capsys.readouterr().out


def test_dask_xgboost_estimator(client):
    X, y, _ = _data(2000, 13)
    Xv, yv, _ = _data(2000, 14)
    X2, y2, _ = _data(2000, 15)
    dX, dy = _dask(2, X, y)
    model = xgboost_dask.DaskXGBRegressor(n_estimators=4, max_depth=3).fit(dX, dy)
    dsk = uc.unbiased_importance(model, dX, dy, *_dask(2, Xv, yv))
    _assert_same_splits(uc.unbiased_importance(model.get_booster(), X, y, Xv, yv), dsk)
    pruned = uc.prune(model, *_dask(2, X2, y2), *_dask(2, Xv, yv), threshold=-np.inf,
                      refit_leaves=True)
    same = uc.prune(model.get_booster(), X2, y2, Xv, yv, threshold=-np.inf, refit_leaves=True)
    assert type(pruned) is type(model)
    d = xgboost.DMatrix(Xv)
    np.testing.assert_allclose(pruned.get_booster().predict(d), same.predict(d), rtol=0,
                               atol=1e-6)
    assert not np.allclose(pruned.get_booster().predict(d), model.get_booster().predict(d))


def test_validation_only_mode_takes_the_models_sums(client):
    """X_train = None: G from the sums the model stores, as in memory (the same splits, U and
    standard errors); B is the model's gain, n_train its training counts; prune runs."""
    X, y, _ = _data(3000, 16)
    Xv, yv, wv = _data(3001, 17)
    model = lightgbm.LGBMRegressor(n_estimators=6, num_leaves=8, verbose=-1).fit(X, y)
    dXv, dyv, dwv = _dask(3, Xv, yv, wv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the halves
        dsk = uc.unbiased_importance(model, None, None, dXv, dyv, valid_weight=dwv)
    mem = uc.unbiased_importance(model, None, None, Xv, yv, valid_weight=wv)
    assert dsk.g_source == mem.g_source == "model"
    _assert_same_splits(mem, dsk)
    b = dsk.splits
    np.testing.assert_allclose(b["biased_gain"], b["host_gain"], rtol=1e-4,
                               atol=1e-5 * b["host_gain"].abs().max())
    assert (b["n_train"] == b["host_count"]).all()
    assert (b.loc[b["node"] == 0, "n_train"] == 3000).all()
    # (the partitions' jackknife blocks are not the in-memory ones: standard errors differ)
    assert np.isfinite(dsk.to_frame()["std_error"]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(model, None, None, dXv, dyv, valid_weight=dwv)
        kept = uc.prune(model, None, None, dXv, dyv, threshold=-np.inf)
    assert 0 < pruned.booster_.num_trees() and pruned.predict(Xv).shape == (3001,)
    np.testing.assert_allclose(kept.predict(Xv), model.predict(Xv), rtol=1e-9, atol=1e-12)


def test_validation_only_mode_with_halves(client):
    """A model that cannot give its sums (L1): G from a random half of the held-out rows,
    ratios from the other half (and the other way round), warned once. B and the counts are
    over all held-out rows, whatever the halves: they equal the in-memory ones; half A holds
    exactly half the rows."""
    X, y, _ = _data(3000, 16)
    Xv, yv, wv = _data(3001, 17)
    model = lightgbm.LGBMRegressor(n_estimators=6, num_leaves=8, verbose=-1, reg_alpha=1.0,
                                   boost_from_average=False).fit(X, y)
    dXv, dyv, dwv = _dask(3, Xv, yv, wv)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dsk = uc.unbiased_importance(model, None, None, dXv, dyv, valid_weight=dwv)
    assert sum("cannot be used" in str(w.message) for w in seen) == 1
    assert dsk.g_source == "held-out halves"
    mem = uc.unbiased_importance(model, None, None, Xv, yv, valid_weight=wv)
    a, b = mem.splits, dsk.splits
    for col in ("tree", "node", "n_valid"):
        np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy(), err_msg=col)
    np.testing.assert_allclose(b["biased_gain"], a["biased_gain"], rtol=1e-9, atol=0)
    roots = b[b["node"] == 0]
    assert (roots["n_train"] == 1500).all()
    assert b["usable"].any() and np.isfinite(dsk.to_frame()["std_error"]).all()
    # the informative feature leads, as in memory
    assert dsk.to_frame().index[0] == mem.to_frame().index[0] == "f0"
    pruned = uc.prune(model, None, None, dXv, dyv, valid_weight=dwv)
    assert 0 < pruned.booster_.num_trees() and pruned.predict(Xv).shape == (3001,)


def test_pure_noise_loses_most_splits(client):
    """The in-memory pruning check (tests/statistics/test_pruning.py) on dask inputs."""
    rng = np.random.default_rng(0)
    X, Xv = (pd.DataFrame(rng.standard_normal((2000, 5)), columns=[f"f{i}" for i in range(5)])
             for _ in range(2))
    y, yv = pd.Series(rng.standard_normal(2000)), pd.Series(rng.standard_normal(2000))
    model = lightgbm.LGBMRegressor(n_estimators=10, num_leaves=15, learning_rate=0.05,
                                   verbose=-1).fit(X, y)
    pruned = uc.prune(model, *_dask(2, X, y), *_dask(3, Xv, yv), random_state=0)
    before = model.booster_.dump_model()["tree_info"]
    after = pruned.booster_.dump_model()["tree_info"]
    splits_before = sum(t["num_leaves"] - 1 for t in before)
    splits_after = sum(t["num_leaves"] - 1 for t in after)
    assert splits_after <= 0.2 * splits_before, (splits_before, splits_after)


def test_trees_not_grown_on_the_given_rows_are_said_as_in_memory(client):
    """The first iteration's hessian sums against the model's own: a model trained with
    weights, scored without them, warns with Dask inputs as in memory (importance and
    prune); with its weights, nothing is said."""
    X, y, w = _data(2000, 30)
    Xv, yv, _ = _data(1500, 31)
    model = lightgbm.LGBMRegressor(n_estimators=4, num_leaves=6, verbose=-1).fit(
        X, y, sample_weight=w)
    with pytest.warns(UserWarning, match="hessian sums differ from the model's own") as got:
        uc.unbiased_importance(model, *_dask(3, X, y), *_dask(2, Xv, yv))
    assert all(r.filename == __file__ for r in got if "hessian sums" in str(r.message))
    with pytest.warns(UserWarning, match="hessian sums differ"):
        uc.prune(model, *_dask(3, X, y), *_dask(2, Xv, yv))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        uc.unbiased_importance(model, *_dask(3, X, y), *_dask(2, Xv, yv),
                               train_weight=_dask(3, w)[0])


def test_parquet_columns_read_as_their_reported_partitions(client, tmp_path):
    """dd.read_parquet, X = frame[features], y = frame['y'] (the README's example): dask
    reported 4 partitions for both but, optimising each graph, read the label in 2 fused
    parts, and the call refused y for its partitions. As in memory now."""
    pytest.importorskip("pyarrow")
    X, y, _ = _data(4000, 0)
    Xv, yv, _ = _data(4000, 1)
    for name, (A, b) in {"train": (X, y), "valid": (Xv, yv)}.items():
        (tmp_path / name).mkdir()
        frame = A.assign(y=b)
        for i in range(4):
            frame.iloc[1000 * i: 1000 * (i + 1)].to_parquet(tmp_path / name / f"{i}.parquet")
    train, valid = dd.read_parquet(tmp_path / "train"), dd.read_parquet(tmp_path / "valid")
    features = list(X.columns)
    model = lightgbm.train({"verbose": -1, "num_leaves": 8, "num_threads": 1},
                           lightgbm.Dataset(X, y), 5)
    got = uc.unbiased_importance(model, train[features], train["y"], valid[features],
                                 valid["y"], random_state=0)
    want = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    np.testing.assert_array_equal(got.splits["n_valid"], want.splits["n_valid"])
    np.testing.assert_allclose(got.splits["biased_gain"], want.splits["biased_gain"],
                               rtol=1e-9)
