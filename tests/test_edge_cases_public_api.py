"""Edge cases of the public surface found by probing: each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc

xgb = pytest.importorskip("xgboost")


def _categorical_frame(n: int, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    cats = ["a", "b", "c", "d"]
    X = pd.DataFrame({"x1": rng.normal(size=n),
                      "c": pd.Categorical(rng.choice(cats, n), categories=cats),
                      "x3": rng.normal(size=n)})
    y = pd.Series(X["x1"] + (X["c"] == "b") * 1.0 + 0.5 * rng.normal(size=n))
    return X, y


@pytest.fixture(scope="module")
def xgb_categorical():
    X, y = _categorical_frame(600, 0)
    Xv, yv = _categorical_frame(600, 1)
    bst = xgb.train({"tree_method": "hist", "max_depth": 3},
                    xgb.DMatrix(X, y, enable_categorical=True), 20)
    return bst, X, y, Xv, yv


def test_xgboost_held_out_categories_reordered_are_recoded_as_xgboost_does(xgb_categorical):
    # XGBoost recodes a frame's categories to the ones it stored; a sliced Booster (our
    # chunks) did not, so reordered categories were routed by the wrong codes, silently
    bst, X, y, Xv, yv = xgb_categorical
    reordered = Xv.copy()
    reordered["c"] = reordered["c"].cat.reorder_categories(["d", "c", "b", "a"])
    before = reordered.copy()
    host = xgb.DMatrix
    np.testing.assert_array_equal(bst.predict(host(Xv, enable_categorical=True)),
                                  bst.predict(host(reordered, enable_categorical=True)))
    want = uc.unbiased_importance(bst, X, y, Xv, yv, random_state=0)
    got = uc.unbiased_importance(bst, X, y, reordered, yv, random_state=0)
    pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())
    pd.testing.assert_frame_equal(reordered, before)
    # the training rows too, and pruning
    Xr = X.copy()
    Xr["c"] = Xr["c"].cat.reorder_categories(["b", "d", "a", "c"])
    pruned = uc.prune(bst, Xr, y, reordered, yv, random_state=0)
    oracle = uc.prune(bst, X, y, Xv, yv, random_state=0)
    np.testing.assert_array_equal(pruned.predict(host(Xv, enable_categorical=True)),
                                  oracle.predict(host(Xv, enable_categorical=True)))


def test_xgboost_held_out_category_the_model_never_saw_is_an_error(xgb_categorical):
    # XGBoost refuses it when predicting; we scored it silently
    bst, X, y, Xv, yv = xgb_categorical
    unseen = Xv.copy()
    unseen["c"] = unseen["c"].cat.add_categories(["zz"])
    unseen.loc[:10, "c"] = "zz"
    with pytest.raises(ValueError, match=r"X_valid's column 'c' .*'zz'"):
        uc.unbiased_importance(bst, X, y, unseen, yv, random_state=0)


@pytest.fixture()
def cli_files(tmp_path):
    """An XGBoost model file and a data file for it."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    y = X["a"] + rng.normal(size=300)
    xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), 3).save_model(
        tmp_path / "m.json")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize("command,option,target", [
    ("importance", "--plot", "folder"),
    ("importance", "--plot", "absent/p.png"),
    ("importance", "--plot", "p.txt"),  # a format matplotlib does not write: after the table
    ("importance", "--output", "absent/t.csv"),
    ("prune", "--output", "absent/m.json"),
])
def test_cli_unwritable_target_is_refused_before_any_work(cli_files, capsys, command, option,
                                                          target):
    # --plot into a folder printed the whole table, then an error naming our temporary file
    from unbiased_criteria.cli import main

    path = cli_files / target
    code = main([command, str(cli_files / "m.json"), "--valid", str(cli_files / "d.csv"),
                 "--label", "y", option, str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"unbiased-criteria: error: {option} {path}: ")
    assert ".tmp" not in err and len(err.strip().splitlines()) == 1


def test_demo_plot_in_a_format_matplotlib_does_not_write_is_refused_before_any_work(
        tmp_path, capsys):
    # the first host's table was printed, then the error
    from unbiased_criteria.cli import main

    path = tmp_path / "demo.txt"
    assert main(["demo", "--plot", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "format 'txt' is not supported (supported: " in err
    assert len(err.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, float("nan"), "0.05", None])
def test_report_select_alpha_outside_zero_one_is_an_error(xgb_categorical, alpha):
    # 1.5 or NaN selected no feature, silently (CrossFittedReport.select already refused)
    bst, X, y, Xv, yv = xgb_categorical
    report = uc.unbiased_importance(bst, X, y, Xv, yv, random_state=0)
    assert report.select(0.05)  # the same report selects at a valid level
    with pytest.raises(ValueError, match=r"alpha: expected a number in \(0, 1\)"):
        report.select(alpha)


def test_lightgbm_held_out_without_the_category_dtype_names_the_argument():
    # LightGBM's own message named neither X_valid nor the columns:
    # "train and valid dataset categorical_feature do not match."
    lgb = pytest.importorskip("lightgbm")
    X, y = _categorical_frame(400, 0)
    Xv, yv = _categorical_frame(400, 1)
    model = lgb.train({"objective": "regression", "verbose": -1, "min_data_per_group": 5},
                      lgb.Dataset(X, y), 5)
    as_text = Xv.assign(c=Xv["c"].astype(str))
    with pytest.raises(ValueError, match=r"X_valid has 0 pandas category column\(s\) "
                                         r"\(none\) but the model was trained with 1"):
        uc.unbiased_importance(model, X, y, as_text, yv, random_state=0)
    with pytest.raises(ValueError, match=r"X_train has 2 pandas category column\(s\) \(c, x3\)"):
        uc.unbiased_importance(model, X.assign(x3=pd.Categorical(X["x3"] > 0)), y, Xv, yv)


@pytest.mark.parametrize("command,option,target", [
    ("prune", "--output", "d.csv"),
    ("importance", "--output", "d.csv"),
    ("importance", "--output", "m.json"),
    ("importance", "--plot", "d.csv"),
])
def test_cli_never_writes_over_its_input_files(cli_files, capsys, command, option, target):
    # prune --output DATA replaced the data file with the pruned model (importance: with the
    # table); --output the input model stays allowed for prune only
    from unbiased_criteria.cli import main

    before = {p.name: p.read_bytes() for p in (cli_files / "m.json", cli_files / "d.csv")}
    code = main([command, str(cli_files / "m.json"), "--valid", str(cli_files / "d.csv"),
                 "--label", "y", option, str(cli_files / target)])
    err = capsys.readouterr().err
    assert code == 2 and "itself; write it elsewhere" in err
    assert {p: (cli_files / p).read_bytes() for p in before} == before
    assert main(["prune", str(cli_files / "m.json"), "--valid", str(cli_files / "d.csv"),
                 "--label", "y", "--output", str(cli_files / "m.json")]) == 0


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
def test_estimator_without_any_split_has_zero_importance_not_nan(host):
    # 30 rows: the host makes no split (LightGBM's min_data_in_leaf=20; XGBoost's
    # min_child_weight here), its own feature_importances_ are 0; ours were NaN, silently
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 3)), columns=["a", "b", "c"])
    y = X["a"] + rng.normal(size=30)
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor as Est
        plain = lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(X, y)
        kwargs = {"verbose": -1}
    else:
        from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor as Est
        plain = xgb.XGBRegressor(n_estimators=5, min_child_weight=1e6).fit(X, y)
        kwargs = {"min_child_weight": 1e6}
    np.testing.assert_array_equal(plain.feature_importances_, 0)
    model = Est(n_estimators=5, random_state=0, **kwargs).fit(X, y)
    np.testing.assert_array_equal(model.feature_importances_, np.zeros(3))
    assert model.training_splits_.empty
    # nothing could be scored at all: still NaN, as documented
    off = Est(n_estimators=5, prune_threshold=None, random_state=0, **kwargs).fit(X, y)
    assert np.isnan(off.feature_importances_).all()


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
def test_report_of_a_model_without_any_split_has_zero_std_error_not_nan(host):
    """Constant features: every tree is one leaf. Every unbiased_gain is exactly 0 in every
    jackknife replicate, so the standard error is 0 (as for first_trees(0) of any report and
    for a cross-fitted report of such folds); it was NaN, silently."""
    rng = np.random.default_rng(0)
    X = np.ones((200, 2))
    y = rng.normal(size=200)
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        model = lgb.train({"verbose": -1, "num_threads": 1}, lgb.Dataset(X[:100], y[:100]), 3)
    else:
        model = xgb.train({"nthread": 1}, xgb.DMatrix(X[:100], y[:100]), 3)
    report = uc.unbiased_importance(model, X[:100], y[:100], X[100:], y[100:])
    frame = report.to_frame()
    assert report.splits.empty
    np.testing.assert_array_equal(frame["unbiased_gain"], 0.0)
    np.testing.assert_array_equal(frame["std_error"], 0.0)
    # without blocks there is no standard error, as documented
    no_blocks = uc.unbiased_importance(model, X[:100], y[:100], X[100:], y[100:], n_blocks=0)
    assert no_blocks.to_frame()["std_error"].isna().all()


def test_prune_warnings_point_at_the_callers_line():
    """prune goes through one more call than unbiased_importance: its warnings (too few
    held-out rows, the reader's notes, no trees) pointed inside the library (api.py)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    model = xgb.train({"nthread": 1, "max_depth": 4}, xgb.DMatrix(X[:200], y[:200]), 3,
                      evals=[(xgb.DMatrix(X[:200], y[:200]), "t")], early_stopping_rounds=1,
                      verbose_eval=False)
    empty = xgb.train({"nthread": 1}, xgb.DMatrix(X[:200], y[:200]), 0)
    for call in (uc.unbiased_importance, uc.prune):
        for m in (model, empty):
            with pytest.warns(UserWarning) as record:
                call(m, X[:200], y[:200], X[200:210], y[200:210])
            assert {w.filename for w in record} == {__file__}, [
                (w.filename, str(w.message)[:40]) for w in record]


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
def test_training_report_without_any_split_has_zero_std_error_not_nan(host):
    """The hooks scored every round but the host made no split: unbiased_gain 0 and, as for
    post-hoc reports, std_error 0 (it was NaN); with nothing scored it is refused."""
    from unbiased_criteria.adapters import lightgbm as alg
    from unbiased_criteria.adapters import xgboost as axg

    rng = np.random.default_rng(0)
    X, y = np.ones((200, 2)), rng.normal(size=200)
    if host == "lightgbm":
        lgb = pytest.importorskip("lightgbm")

        def run(**kw):
            return alg.training_report(alg.train({"verbose": -1, "num_threads": 1},
                                                 lgb.Dataset(X, y), 3, **kw))
    else:
        def run(**kw):
            return axg.training_report(axg.train({"nthread": 1}, xgb.DMatrix(X, y), 3,
                                                 verbose_eval=False, **kw))
    frame = run().to_frame()
    np.testing.assert_array_equal(frame["unbiased_gain"], 0.0)
    np.testing.assert_array_equal(frame["std_error"], 0.0)
    assert run(n_blocks=0).to_frame()["std_error"].isna().all()
    with pytest.raises(ValueError, match="no split was scored"):  # not a table of zeros
        run(prune_threshold=None, holdout_fraction=0.0)


def test_more_jackknife_blocks_than_held_out_rows_uses_a_block_per_row(xgb_categorical):
    """With fewer held-out rows than ``n_blocks`` some blocks would be empty: their replicate
    is the full estimate, which shrinks the variance and adds degrees of freedom that are
    not there. The blocks become one per row, said, and the report is the one asked for
    with that many blocks."""
    import warnings

    bst, X, y, Xv, yv = xgb_categorical
    with pytest.warns(UserWarning, match=r"n_blocks=20 but X_valid has 12 rows: the standard "
                                         r"errors use 12 jackknife blocks of one row each"):
        got = uc.unbiased_importance(bst, X, y, Xv[:12], yv[:12], random_state=0, min_k=1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        want = uc.unbiased_importance(bst, X, y, Xv[:12], yv[:12], random_state=0, min_k=1,
                                      n_blocks=12)
    assert not any("jackknife blocks" in str(w.message) for w in seen)
    pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())
    pd.testing.assert_frame_equal(got.splits, want.splits)
    assert np.isfinite(got.to_frame()["std_error"]).all()
