"""A LightGBM dump routes the rows LightGBM's own predictor routes differently from a plain
comparison: +inf past a threshold the dump prints as 1e300, values LightGBM reads as zero,
and pandas category columns the dump's categorical features do not pair with (the host's
``pred_leaf`` and the Booster's report are the oracles)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.errors import InputError

lgb = pytest.importorskip("lightgbm")

COLS = ["tree", "node", "n_train", "n_valid", "k", "biased_gain", "unbiased_gain"]


def _same(booster, dump, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dump's assumed defaults
        a = uc.unbiased_importance(booster, *args, random_state=0, n_jobs=1, **kw).splits
        b = uc.unbiased_importance(dump, *args, random_state=0, n_jobs=1, **kw).splits
    np.testing.assert_allclose(a[COLS].to_numpy(float), b[COLS].to_numpy(float), rtol=0,
                               atol=1e-6)


def _leaves(booster, dump, X):
    from unbiased_criteria.adapters.lightgbm import dump as D
    read = D.read_model(dump)
    ours = D.make_router(dump, read, X, "X_valid").leaf_nodes(0, booster.num_trees())
    host = booster.predict(X, pred_leaf=True)
    offsets = [t["num_leaves"] - 1 for t in dump["tree_info"]]
    return ours, host + np.array(offsets)


def test_an_infinite_threshold_printed_as_1e300_sends_inf_left():
    """LightGBM stores ``threshold=inf`` for "values left, NaN right"; its dump prints 1e300."""
    rng = np.random.default_rng(0)

    def data(n):
        x = rng.normal(size=n)
        miss = rng.random(n) < 0.3
        x[miss] = np.nan
        return x[:, None], np.where(miss, 2.0, 0.0) + rng.normal(size=n) * 0.1

    X, y = data(1000)
    Xv, yv = data(1000)
    Xv[:100, 0] = np.inf
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 2}, lgb.Dataset(X, y), 2)
    d = b.dump_model()
    assert d["tree_info"][0]["tree_structure"]["threshold"] == 1e300  # what this checks
    ours, host = _leaves(b, d, Xv)
    np.testing.assert_array_equal(ours, host)
    _same(b, d, X, y, Xv, yv)
    # a written dump prints it as LightGBM does (JSON has no infinity)
    pruned = uc.prune(d, X, y, Xv, yv, threshold=-np.inf, random_state=0)
    assert pruned["tree_info"][0]["tree_structure"]["threshold"] == 1e300


@pytest.mark.parametrize("zero_as_missing", [False, True])
def test_values_lightgbm_reads_as_zero(zero_as_missing):
    """LightGBM's predictor keeps only |x| > 1e-35f (a float: 1.0000000180025095e-35);
    smaller values are zero, also to zero_as_missing."""
    rng = np.random.default_rng(0)
    x = np.where(rng.random(2000) < 0.4, 0.0, rng.normal(size=2000))
    y = (x == 0) * 2.0 + (x > 0) + rng.normal(size=2000) * 0.1
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 3,
                   "zero_as_missing": zero_as_missing}, lgb.Dataset(x[:, None], y), 1)
    tiny = float(np.float32(1e-35))
    Xv = np.array([[-tiny], [tiny], [1.000000001e-35], [-1.000000001e-35], [0.0], [1e-45],
                   [np.nextafter(tiny, 1.0)], [-np.nextafter(tiny, 1.0)]])
    ours, host = _leaves(b, b.dump_model(), Xv)
    np.testing.assert_array_equal(ours, host)


def _category_frames(case: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 1500
    labels = np.array(list("abcdefgh"))
    c, cv = rng.integers(0, 8, n), rng.integers(0, 8, n)
    X = pd.DataFrame({"c": pd.Categorical(labels[c], categories=labels),
                      "x": rng.normal(size=n)})
    # held out: the categories listed in another order (or a subset of them)
    Xv = pd.DataFrame({"c": pd.Categorical(labels[cv], categories=labels[::-1]),
                       "x": rng.normal(size=n)})
    if case == "constant":  # LightGBM leaves a constant category column out of the dump
        X["k"] = pd.Categorical(["u"] * n, categories=["u", "v"])
        Xv["k"] = pd.Categorical(["u"] * n, categories=["u", "v"])
    else:  # an integer column declared categorical: a categorical feature without a list
        X["i"] = rng.integers(0, 3, n)
        Xv["i"] = rng.integers(0, 3, n)
    eff = np.arange(8.0)
    return X, eff[c] + rng.normal(size=n), Xv, eff[cv] + rng.normal(size=n)


@pytest.mark.parametrize("case", ["constant", "declared"])
def test_pandas_categories_pair_with_the_frames_category_columns(case):
    X, y, Xv, yv = _category_frames(case)
    ds = lgb.Dataset(X, y, categorical_feature=["c", "i"] if case == "declared" else "auto")
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 6}, ds, 3)
    d = b.dump_model()
    _same(b, d, X, y, Xv, yv)
    # a frame whose category columns are not the training frame's: one clear error
    with pytest.raises(InputError, match=r"X_valid has \d pandas category column"):
        uc.unbiased_importance(d, X, y, Xv.assign(c=Xv["c"].cat.codes), yv)


def test_a_file_that_cannot_pair_its_category_lists_is_refused(tmp_path, capsys):
    """From a file (CSV) no column has a category dtype: the command line refuses a dump whose
    stored lists do not pair with its categorical features, as it does the model text."""
    X, y, Xv, yv = _category_frames("declared")
    ds = lgb.Dataset(X, y, categorical_feature=["c", "i"])
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 6}, ds, 3)
    for err in _cli_refusals(b, Xv, yv, tmp_path, capsys):
        assert "which list is which feature's" in err
        assert "integer column declared categorical_feature" in err and "ordered" not in err


def _cli_refusals(booster, Xv, yv, tmp_path, capsys):
    """The command line's error for ``booster`` as a dump and as a text model, with the
    held-out rows as a CSV file (each run must refuse: exit status 2)."""
    import json

    from unbiased_criteria.cli import main

    (tmp_path / "m.json").write_text(json.dumps(booster.dump_model()))
    booster.save_model(str(tmp_path / "m.txt"))
    Xv.assign(y=yv).to_csv(tmp_path / "v.csv", index=False)
    for model in ("m.json", "m.txt"):
        assert main(["importance", str(tmp_path / model), "--valid", str(tmp_path / "v.csv"),
                     "--label", "y"]) == 2
        yield capsys.readouterr().err


def test_values_beyond_float32_hash_without_a_numpy_warning():
    """LightGBM compares doubles: 1e300 is a valid value; the rows' hash reads it as float32
    does (inf) without numpy's bare overflow warning."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = X[:, 0] + rng.normal(size=400)
    Xv = rng.normal(size=(400, 2))
    yv = Xv[:, 0] + rng.normal(size=400)
    Xv[0, 1] = 1e300
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 4}, lgb.Dataset(X, y), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(b, X, y, Xv, yv, n_jobs=1)


def test_an_ordered_category_column_is_named_as_the_cause_from_a_file(tmp_path, capsys):
    """LightGBM stores an ordered pandas categorical's categories but splits on its codes as
    numbers: from a file (CSV) the lists cannot be paired, and the refusal names that cause
    and the numeric feature holding codes (it named only other causes before); the Python API
    with the frame scores the model, as LightGBM's predict reads it."""

    def frame(seed):
        rng = np.random.default_rng(seed)
        size = rng.choice(["S", "M", "L"], 1500)
        X = pd.DataFrame({"x": rng.normal(size=1500),
                          "size": pd.Categorical(size, categories=["S", "M", "L"],
                                                 ordered=True)})
        return X, (size == "L") * 1.0 + rng.normal(size=1500)

    X, y = frame(0)
    Xv, yv = frame(1)
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 4}, lgb.Dataset(X, y), 3)
    assert b.pandas_categorical == [["S", "M", "L"]]  # stored, yet no categorical feature
    ours, host = _leaves(b, b.dump_model(), Xv)  # the frame's codes, as predict reads them
    np.testing.assert_array_equal(ours, host)
    _same(b, b.dump_model(), X, y, Xv, yv)
    for err in _cli_refusals(b, Xv, yv, tmp_path, capsys):
        assert "an ordered pandas category column" in err and "in ['size']" in err
        assert "which list is which feature's" in err and "df[col].cat.codes" in err
