"""``unbiased-criteria select``: the same numbers as :class:`UnbiasedSelector` on the same file."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

import lightgbm  # noqa: E402
import xgboost  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import model_files  # noqa: E402
from unbiased_criteria.cli import main  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    X, y = paper_example(900, random_state=0, effect=0.5)
    X["X2"] = np.array(list("abcdef"))[X["X2"].cat.codes]  # a text column
    X["y"] = y
    X["cls"] = np.where(y > 0.25, "yes", "no")
    X["w"] = np.random.default_rng(0).uniform(0.5, 1.5, len(y))
    path = tmp_path_factory.mktemp("select") / "data.csv"
    X.to_csv(path, index=False)
    return path


DROP = ["--drop", "cls", "--drop", "w"]  # not features


def features(path) -> pd.DataFrame:
    frame = pd.read_csv(path)[["X1", "X2", "X3"]]
    frame["X2"] = frame["X2"].astype("category")
    return frame


def run(args, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_lightgbm_regression_equals_the_selector(data_file, capsys):
    code, out, err = run(["select", data_file, "--label", "y", "--host", "lightgbm", "--cv",
                          "3", "--param", "n_estimators=15", "--param", "learning_rate=0.1",
                          "--seed", "4", "--format", "csv", *DROP], capsys)
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out), index_col="feature")
    estimator = lightgbm.LGBMRegressor(n_estimators=15, learning_rate=0.1, verbose=-1)
    selector = uc.UnbiasedSelector(estimator, cv=3, random_state=4).fit(
        features(data_file), pd.read_csv(data_file)["y"].to_numpy())
    expected = selector.importances_.loc[got.index]
    np.testing.assert_allclose(got["unbiased_gain"], expected["unbiased_gain"], rtol=1e-12)
    np.testing.assert_allclose(got["std_error"], expected["std_error"], rtol=1e-12)
    assert list(got["selected"]) == list(expected["selected"])
    assert list(got.index) == list(expected.sort_values("unbiased_gain",
                                                        ascending=False).index)
    assert "kept 1 of 3: X1" in err


def test_table_lists_the_kept_columns_first(data_file, capsys):
    code, out, _ = run(["select", data_file, "--label", "y", "--host", "lightgbm", "--cv", "3",
                        "--param", "n_estimators=15", "--alpha", "none", "--max-features",
                        "2", *DROP], capsys)
    assert code == 0
    first, _, table = out.partition("\n\n")
    assert first.startswith("kept 2 of 3: X1, ")
    assert table.split()[:2] == ["feature", "unbiased_gain"]


def test_xgboost_text_labels_are_classes_with_a_warning(data_file, capsys):
    code, out, err = run(["select", data_file, "--label", "cls", "--host", "xgboost", "--cv",
                          "3", "--weight", "w", "--param", "n_estimators=10", "--param",
                          "max_depth=3", "--format", "json", "--drop", "y"], capsys)
    assert code == 0, err
    assert "--label cls: 2 distinct values, treated as classes" in err
    frame = pd.read_json(io.StringIO(out))
    assert set(frame["feature"]) == {"X1", "X2", "X3"}
    assert frame.set_index("feature").loc["X1", "selected"]
    estimator = xgboost.XGBClassifier(n_estimators=10, max_depth=3, enable_categorical=True)
    raw = pd.read_csv(data_file)
    classes = (raw["cls"] == "yes").to_numpy(int)  # the command encodes sorted classes 0..K-1
    selector = uc.UnbiasedSelector(estimator, cv=3, random_state=0).fit(
        features(data_file), classes, sample_weight=raw["w"].to_numpy())
    np.testing.assert_allclose(frame.set_index("feature").loc[["X1", "X2", "X3"],
                                                              "unbiased_gain"],
                               selector.importances_["unbiased_gain"], rtol=1e-12)


def test_sklearn_host_is_histgradientboosting(data_file, capsys):
    from sklearn.ensemble import HistGradientBoostingRegressor

    code, out, err = run(["select", data_file, "--label", "y", "--host", "sklearn", "--cv", "3",
                          "--param", "max_iter=10", "--format", "csv", *DROP], capsys)
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out), index_col="feature")
    selector = uc.UnbiasedSelector(HistGradientBoostingRegressor(max_iter=10), cv=3).fit(
        features(data_file), pd.read_csv(data_file)["y"].to_numpy())
    np.testing.assert_allclose(got["unbiased_gain"],
                               selector.importances_.loc[got.index, "unbiased_gain"],
                               rtol=1e-12)
    assert got.loc["X1", "selected"]


@pytest.mark.parametrize("args, message", [
    (["--label", "z", "--host", "lightgbm"], "no label column 'z'"),
    (["--label", "y", "--host", "lightgbm", "--weight", "v"], "no weight column 'v'"),
    (["--label", "y", "--host", "lightgbm", "--drop", "v"], "--drop v: DATA"),
    # the label or weight named again: a KeyError traceback, reported as a bug
    (["--label", "y", "--host", "lightgbm", "--drop", "y"],
     "--drop y: that is the label column (--label)"),
    (["--label", "y", "--host", "lightgbm", "--weight", "y"],
     "--weight y: that is the label column"),
    (["--label", "y", "--host", "lightgbm", "--weight", "X1", "--drop", "X1"],
     "--drop X1: that is the weight column (--weight)"),
    # LightGBM's own error is no ValueError: it was reported as a bug, with a traceback
    (["--label", "y", "--host", "lightgbm", "--param", "num_leaves=1"],
     "lightgbm refused the parameters or the rows: Check failed: (num_leaves) > (1)"),
    (["--label", "y", "--host", "xgboost", "--param", "max_depth=abc"], "max_depth"),
])
def test_errors_are_one_line(data_file, capsys, args, message):
    code, out, err = run(["select", data_file, *args], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("args", [["--cv", "1"], ["--alpha", "2"], ["--iterations", "0"]])
def test_bad_options_are_usage_errors(data_file, capsys, args):
    assert main(["select", str(data_file), "--label", "y", "--host", "lightgbm", *args]) == 2
    assert args[0] in capsys.readouterr().err


def test_host_estimator_defaults_yield_to_params():
    from unbiased_criteria import model_files
    from unbiased_criteria.errors import InputError

    est = model_files.host_estimator("lightgbm", "regression", {"n_estimators": 7})
    assert isinstance(est, lightgbm.LGBMRegressor)
    assert est.get_params()["verbose"] == -1 and est.n_estimators == 7
    est = model_files.host_estimator("xgboost", "classification",
                                     {"enable_categorical": False})
    assert isinstance(est, xgboost.XGBClassifier) and est.enable_categorical is False
    with pytest.raises(InputError, match="task"):
        model_files.host_estimator("xgboost", "ranking", {})


def test_correction_goes_to_the_selector_and_to_importance(data_file, tmp_path, capsys):
    """--correction holm/fdr_bh is the selector's correction= (same selected column), and
    the importance command's select(); without --alpha it is an error."""
    code, out, err = run(["select", data_file, "--label", "y", "--host", "lightgbm", "--cv",
                          "3", "--param", "n_estimators=15", "--correction", "holm",
                          "--format", "csv", *DROP], capsys)
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out), index_col="feature")
    selector = uc.UnbiasedSelector(lightgbm.LGBMRegressor(n_estimators=15, verbose=-1), cv=3,
                                   correction="holm").fit(
        features(data_file), pd.read_csv(data_file)["y"].to_numpy())
    assert list(got["selected"]) == list(selector.importances_.loc[got.index, "selected"])
    assert got["selected"].any()
    with pytest.raises(ValueError, match="correction: expected None, 'holm' or 'fdr_bh'"):
        uc.UnbiasedSelector(lightgbm.LGBMRegressor(), correction="bonferroni").fit(
            features(data_file), pd.read_csv(data_file)["y"].to_numpy())

    X, y = paper_example(600, random_state=1, effect=0.5)
    model = lightgbm.LGBMRegressor(n_estimators=10, verbose=-1).fit(X, y)
    model.booster_.save_model(tmp_path / "m.txt")
    Xv, yv = paper_example(600, random_state=2, effect=0.5)
    Xv.assign(y=yv).to_csv(tmp_path / "v.csv", index=False)
    base = ["importance", tmp_path / "m.txt", "--valid", tmp_path / "v.csv", "--label", "y",
            "--format", "csv"]
    code, out, err = run([*base, "--alpha", "0.05", "--correction", "fdr_bh"], capsys)
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out), index_col="feature")
    report = uc.unbiased_importance(model.booster_, None, None, Xv, yv)
    assert set(got.index[got["selected"]]) == set(report.select(0.05, "fdr_bh"))
    code, out, err = run([*base, "--correction", "holm"], capsys)
    assert code == 2 and "--correction corrects the --alpha test: give --alpha too" in err


def test_regression_on_a_text_label_names_the_label(data_file, capsys):
    code, out, err = run(["select", data_file, "--label", "cls", "--host", "lightgbm",
                          "--task", "regression", "--drop", "y", "--drop", "w"], capsys)
    assert code == 2 and out == ""
    assert "--label cls: --task regression needs numbers, the column holds text (" in err
    assert "Traceback" not in err


# ------------------------------------------------- columns read as importance and prune read them


@pytest.fixture(scope="module")
def mixed_columns():
    """A true/false column with gaps, a pyarrow-backed number, a nullable integer and the
    frame the hosts are given for them (1/0/NaN and float64)."""
    rng = np.random.default_rng(3)
    n = 600
    flag = rng.choice(np.array([True, False, None], dtype=object), size=n)
    x = rng.normal(size=n)
    z = rng.integers(0, 4, n)
    y = x + np.where(flag == True, 1.0, 0.0) + rng.normal(size=n)  # noqa: E712
    read = pd.DataFrame({"x": x, "flag": [np.nan if v is None else float(v) for v in flag],
                         "z": z.astype(np.float64)})
    z_missing = pd.array(z, dtype="Int64")
    z_missing[:5] = pd.NA
    read.loc[:4, "z"] = np.nan
    written = pd.DataFrame({"x": pd.array(x, dtype="double[pyarrow]"),
                            "flag": pd.Series(flag, dtype=object), "z": z_missing, "y": y})
    return written, read, y


def _selected(args, capsys) -> pd.DataFrame:
    code, out, err = run(args, capsys)
    assert code == 0, err
    assert "internal error" not in err
    return pd.read_csv(io.StringIO(out), index_col="feature")


@pytest.mark.parametrize("host", ["xgboost", "lightgbm", "sklearn"])
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_true_false_and_pyarrow_columns_are_numbers_as_importance_reads_them(
        mixed_columns, tmp_path, capsys, host, kind):
    """A True/False column with gaps (object of bools) became a category of booleans, on
    which XGBoost failed (TypeError, 'internal error'); LightGBM refused pyarrow-backed
    columns that importance reads. Now each is what importance reads: 1/0/NaN, float64."""
    written, read, y = mixed_columns
    path = tmp_path / f"data.{kind}"
    if kind == "csv":
        written.to_csv(path, index=False)
        assert pd.read_csv(path)["flag"].dtype == object  # pandas' own reading of it
    else:
        pytest.importorskip("pyarrow")
        written.to_parquet(path)
    trees = "max_iter" if host == "sklearn" else "n_estimators"
    got = _selected(["select", path, "--label", "y", "--host", host, "--cv", "3", "--seed", "2",
                     "--format", "csv", "--param", f"{trees}=8"], capsys)
    estimator = model_files.host_estimator(host, "regression", {trees: 8})
    selector = uc.UnbiasedSelector(estimator, cv=3, random_state=2).fit(read, y)
    np.testing.assert_allclose(got["unbiased_gain"],
                               selector.importances_.loc[got.index, "unbiased_gain"],
                               rtol=1e-9)
    assert got.loc["flag", "biased_gain"] > 0  # the column was used, as numbers


@pytest.mark.parametrize("host", ["lightgbm", "sklearn", "xgboost"])
@pytest.mark.parametrize("column", ["date", "span", "bytes"])
def test_a_column_no_host_reads_is_one_error_naming_it(tmp_path, capsys, host, column):
    """A Parquet datetime column: DTypePromotionError from LightGBM and HistGradientBoosting,
    reported as an internal error (exit 1). Dates, durations, bytes: one line naming it."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 300
    values = {"date": pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 99, n), "D"),
              "span": pd.to_timedelta(rng.integers(0, 99, n), unit="D"),
              "bytes": pd.Series([b"a", b"b", b"c"] * (n // 3), dtype=object)}[column]
    x = rng.normal(size=n)
    path = tmp_path / "data.parquet"
    pd.DataFrame({"x": x, column: values, "y": x + rng.normal(size=n)}).to_parquet(path)
    code, out, err = run(["select", path, "--label", "y", "--host", host, "--cv", "3"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1, err
    assert f"DATA {path}: column {column!r} holds values of type" in err
    assert f"--drop {column}" in err


def test_a_date_label_is_no_regression_target(tmp_path, capsys):
    """pd.to_numeric read a date label as its microseconds: a regression on them, silently."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 300
    path = tmp_path / "data.parquet"
    pd.DataFrame({"x": rng.normal(size=n), "when": pd.Timestamp("2020-01-01")
                  + pd.to_timedelta(rng.integers(0, 99, n), "D")}).to_parquet(path)
    code, out, err = run(["select", path, "--label", "when", "--host", "lightgbm", "--cv",
                          "3", "--task", "regression"], capsys)
    assert code == 2 and out == ""
    assert "--label when: --task regression needs numbers, the column holds values of type " \
           "datetime64" in err


@pytest.mark.parametrize("args, refused", [
    (["--host", "lightgbm", "--param", "n_estimators=abc"], "n_estimators=abc"),
    (["--host", "lightgbm", "--param", "early_stopping=abc"], "early_stopping=abc"),
    (["--host", "xgboost", "--param", "n_estimators=abc"], "n_estimators=abc"),
    (["--host", "xgboost", "--param", "n_estimators=2.5"], "n_estimators=2.5"),
    # a classifier: every class among the rows the host is refitted on
    (["--host", "xgboost", "--label", "cls", "--task", "classification", "--param",
      "n_estimators=2.5"], "n_estimators=2.5"),
    # the values the host takes are not named, every one it refuses is
    (["--host", "lightgbm", "--param", "learning_rate=0.2", "--param", "n_estimators=abc",
      "--param", "n_jobs=1"], "n_estimators=abc"),
    (["--host", "lightgbm", "--param", "n_estimators=abc", "--param", "learning_rate=0.2",
      "--param", "early_stopping=abc"], "n_estimators=abc, early_stopping=abc"),
])
def test_a_value_the_host_refuses_with_a_type_error_is_one_line_naming_it(
        data_file, capsys, args, refused):
    """LightGBM and XGBoost refuse these values with a plain TypeError from fit, which was
    reported as an internal error (a bug), traceback and exit 1."""
    label = [] if "--label" in args else ["--label", "y", "--drop", "cls"]
    code, out, err = run(["select", data_file, *label, "--drop", "w", "--cv", "2", *args],
                         capsys)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err
    host = args[1]
    them = "them" if "," in refused else "it"
    assert err.startswith(f"unbiased-criteria: error: --param {refused}: {host} refused "
                          f"{them}: TypeError: "), err


def test_a_type_error_that_is_not_the_params_stays_an_internal_error(data_file, monkeypatch,
                                                                      capsys):
    """Only what the host refuses for a --param value is an input error: a TypeError that
    the fit raises without any of them, or that the scoring raises, is a bug."""
    def broken_fit(self, *args, **kwargs):
        raise TypeError("internal detail")

    monkeypatch.setattr(lightgbm.LGBMRegressor, "fit", broken_fit)
    args = ["select", data_file, "--label", "y", *DROP, "--cv", "2", "--host", "lightgbm",
            "--param", "n_estimators=5"]
    code, _, err = run(args, capsys)
    assert code == 1 and "internal error (a bug" in err and "in broken_fit" in err
    monkeypatch.undo()

    def broken_scoring(*args, **kwargs):
        raise TypeError("internal detail")

    monkeypatch.setattr("unbiased_criteria.cross_fit.unbiased_importance", broken_scoring)
    code, _, err = run(args, capsys)
    assert code == 1 and "internal error (a bug" in err and "in broken_scoring" in err


# names as the kept line prints them: bare where that is unambiguous, else a Python string
# literal (the commas, spaces and quotes of the names made a comma-joined list ambiguous)
PRINTED = {"cät": "cät", "1": "1", 'x "q" é': "'x \"q\" é'", "sig, nal": "'sig, nal'",
           "it's": "\"it's\"", "tab\tname": "'tab\\tname'", "(none)": "'(none)'"}


def _parse_kept(text: str) -> list[str]:
    """The names of a printed kept list: bare names and Python string literals."""
    import ast
    import re

    token = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,\s'"]+""")
    names, pos = [], 0
    while pos < len(text):
        match = token.match(text, pos)
        assert match, text[pos:]
        word = match.group()
        names.append(ast.literal_eval(word) if word[0] in "'\"" else word)
        pos = match.end()
        if pos < len(text):
            assert text.startswith(", ", pos), text[pos:]
            pos += 2
    return names


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_kept_names_are_printed_unambiguously(tmp_path, capsys, fmt):
    """'kept 2 of 3: cät, 1, x "q" é' was a comma-joined list: which names it held was
    ambiguous when a name holds a comma or a space. A name that is not plainly one word
    is printed as a Python string literal; the line reads back as the selector's names."""
    rng = np.random.default_rng(0)
    names = list(PRINTED)
    X = pd.DataFrame(rng.normal(size=(600, len(names))), columns=names)
    # '1' and 'tab\tname' noise: the 5 kept hold a comma, quotes and '(none)'
    y = X @ np.array([1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 2.0]) + rng.normal(size=600)
    path = tmp_path / "names.csv"
    X.assign(y=y).to_csv(path, index=False)
    # HistGradientBoosting: LightGBM refuses quotes and commas in names, XGBoost commas
    code, out, err = run(["select", path, "--label", "y", "--host", "sklearn", "--cv", "3",
                          "--param", "max_iter=15", "--alpha", "none", "--max-features",
                          "5", "--format", fmt], capsys)
    assert code == 0, err
    from sklearn.ensemble import HistGradientBoostingRegressor

    estimator = HistGradientBoostingRegressor(max_iter=15)
    kept = list(uc.UnbiasedSelector(estimator, cv=3, alpha=None, max_features=5,
                                    random_state=0).fit(X, y).get_feature_names_out())
    assert len(kept) == 5
    line = out.partition("\n")[0] if fmt == "table" else err.strip().removeprefix(
        "unbiased-criteria: ")
    prefix = f"kept 5 of {len(names)}: "
    assert line == prefix + ", ".join(PRINTED[name] for name in kept)
    assert _parse_kept(line.removeprefix(prefix)) == kept
