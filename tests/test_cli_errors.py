"""What the command line reports as bad input (one line, exit 2) and what as a bug (traceback,
exit 1), and the categories a model stores that cannot be read: an error, never a silent read
of the column as integer codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from unbiased_criteria import model_files
from unbiased_criteria.cli import main
from unbiased_criteria.errors import InputError
from unbiased_criteria.model import UnsupportedModelError

xgb = pytest.importorskip("xgboost")


@pytest.fixture()
def xgb_files(tmp_path):
    """An XGBoost model with a stored categorical feature and a data file for it."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": pd.Categorical(rng.choice(["u", "v", "w"], 200)),
                      "x": rng.random(200)})
    y = X["x"] + 0.5 * (X["c"] == "v").to_numpy()
    booster = xgb.train({"max_depth": 2, "nthread": 1},
                        xgb.DMatrix(X, y, enable_categorical=True), 2)
    booster.save_model(tmp_path / "m.json")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    return tmp_path


def run(folder, *extra) -> list[str]:
    return ["importance", str(folder / "m.json"), "--valid", str(folder / "d.csv"), "--label",
            "y", *extra]


@pytest.mark.parametrize("bug", [TypeError, KeyError, IndexError, AttributeError])
def test_internal_bug_exits_1_with_its_traceback(xgb_files, monkeypatch, capsys, bug):
    def broken(*args, **kwargs):
        raise bug("internal detail")

    monkeypatch.setattr(model_files, "feature_schema", broken)
    assert main(run(xgb_files)) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err
    assert "unbiased-criteria: internal error (a bug" in err and bug.__name__ in err
    with pytest.raises(bug):  # --debug: the exception itself
        main(["--debug", *run(xgb_files)])


@pytest.mark.parametrize("error", [InputError("bad input here"),
                                   ValueError("bad input here"),
                                   UnsupportedModelError("bad input here")])
def test_input_error_exits_2_with_one_line(xgb_files, monkeypatch, capsys, error):
    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(model_files, "feature_schema", refuse)
    assert main(run(xgb_files)) == 2
    err = capsys.readouterr().err
    assert err.startswith("unbiased-criteria: error: ") and err.endswith(": bad input here\n")
    assert err.count("\n") == 1


def test_stored_categories_that_cannot_be_read_are_an_error(xgb_files, monkeypatch, capsys):
    """Before: any failure of get_categories read the column as integer codes, silently."""
    def unreadable(self, export_to_arrow=False):
        raise xgb.core.XGBoostError("[10:00:00] src/c_api.cc:1: categories are corrupt")

    monkeypatch.setattr(xgb.Booster, "get_categories", unreadable)
    mf = model_files.load_model_file((xgb_files / "m.json").read_bytes(), "model m.json")
    with pytest.raises(InputError, match="stored categories cannot be read: categories are "
                                         "corrupt$"):
        model_files.feature_schema(mf)
    assert main(run(xgb_files)) == 2
    err = capsys.readouterr().err
    assert err.startswith("unbiased-criteria: error: model ") and err.count("\n") == 1
    assert "stored categories cannot be read" in err


def test_stored_categories_without_pyarrow_name_it(xgb_files, monkeypatch):
    def no_arrow(self, export_to_arrow=False):
        raise ImportError("pyarrow is required")

    monkeypatch.setattr(xgb.Booster, "get_categories", no_arrow)
    mf = model_files.load_model_file((xgb_files / "m.json").read_bytes(), "m")
    with pytest.raises(InputError, match=r"needs pyarrow \(pip install pyarrow\)"):
        model_files.feature_schema(mf)


def test_xgboost_without_get_categories_warns_of_integer_codes(xgb_files, monkeypatch):
    mf = model_files.load_model_file((xgb_files / "m.json").read_bytes(), "m")
    monkeypatch.delattr(xgb.Booster, "get_categories")
    with pytest.warns(UserWarning, match="must hold the integer codes"):
        schema = model_files.feature_schema(mf)
    assert schema.categorical == {0: None}


def test_failing_get_booster_is_not_reported_as_not_fitted():
    """Before: every exception of get_booster() became "model is not fitted"."""
    from unbiased_criteria.adapters.xgboost import read_model

    class Broken(xgb.XGBRegressor):
        def __sklearn_is_fitted__(self):
            return True

        def get_booster(self):
            raise RuntimeError("a bug in get_booster")

    with pytest.raises(RuntimeError, match="a bug in get_booster"):
        read_model(Broken())
    with pytest.raises(ValueError, match="not fitted"):
        read_model(xgb.XGBRegressor())


def test_missing_labels_name_the_file_column_and_row(xgb_files, capsys):
    frame = pd.read_csv(xgb_files / "d.csv")
    frame.loc[[3, 7], "y"] = np.nan
    frame.to_csv(xgb_files / "d.csv", index=False)
    assert main(run(xgb_files)) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"unbiased-criteria: error: --valid {xgb_files / 'd.csv'}: label column 'y' "
                   "has 2 missing value(s), the first in data row 4")


def test_a_repeated_column_name_is_an_error_not_a_guess(xgb_files, capsys):
    """pandas renames a repeated header name ('x', 'x.1') and the first column was read as
    the feature, whichever it was; now one error naming it."""
    frame = pd.read_csv(xgb_files / "d.csv")
    frame.insert(0, "junk", 0.0)
    frame.columns = ["x", *frame.columns[1:]]
    frame.to_csv(xgb_files / "d.csv", index=False)
    assert main(run(xgb_files)) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"unbiased-criteria: error: --valid {xgb_files / 'd.csv'}: column name(s) x "
                   "appear more than once in the header")


def test_output_and_plot_on_one_path_are_refused_before_any_work(xgb_files, capsys):
    pytest.importorskip("matplotlib")
    target = xgb_files / "out.png"
    assert main(run(xgb_files, "--output", str(target), "--plot", str(target))) == 2
    assert "--plot" in capsys.readouterr().err and not target.exists()


def test_output_through_a_symbolic_link_writes_its_target(xgb_files):
    """An atomic write replaced the link by a file and left its target as it was."""
    real = xgb_files / "real.csv"
    real.write_text("old\n")
    link = xgb_files / "link.csv"
    link.symlink_to(real)
    assert main(run(xgb_files, "--output", str(link), "--format", "csv")) == 0
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_text().startswith("feature,")


@pytest.mark.parametrize("suffix, start", [(".csv", "feature,"), (".json", "[\n {"),
                                           (".txt", "feature ")])
def test_output_format_follows_the_suffix(xgb_files, suffix, start):
    """An aligned text table was written to out.csv / out.json unless --format was given."""
    target = xgb_files / f"out{suffix}"
    assert main(run(xgb_files, "--output", str(target))) == 0
    assert target.read_text().lstrip().startswith(start)
    assert main(run(xgb_files, "--output", str(target), "--format", "table")) == 0
    assert target.read_text().lstrip().startswith("feature ")


@pytest.mark.parametrize("name", ["out.parquet", "out.csv.gz", "out.tsv"])
def test_output_suffix_the_table_is_not_is_refused(xgb_files, capsys, name):
    """A text table went silently into out.csv.gz (not gzip) or out.tsv (not tab-separated)."""
    assert main(run(xgb_files, "--output", str(xgb_files / name))) == 2
    assert "name the file .csv, .json or .txt" in capsys.readouterr().err
    assert not (xgb_files / name).exists()


def test_a_repeated_header_name_pandas_reads_as_missing_is_caught(xgb_files, capsys):
    frame = pd.read_csv(xgb_files / "d.csv")
    frame.insert(0, "NA", 0.0)
    frame.insert(1, "NA ", 0.0)
    (xgb_files / "d.csv").write_text(
        frame.to_csv(index=False).replace("NA,NA ,", "NA,NA,", 1))
    assert main(run(xgb_files)) == 2
    assert "column name(s) NA appear more than once" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--objective", "binary:hinge"]])
def test_objective_the_core_lacks_says_what_the_command_line_can_do(tmp_path, capsys, extra):
    """binary:hinge has no core loss: the API asks for objective= a callable, which the
    command line cannot take (--objective NAME); its one line said only that."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(400, 3)), columns=list("abc"))
    y = (X.a > 0).astype(int)
    xgb.train({"objective": "binary:hinge", "nthread": 1, "max_depth": 2},
              xgb.DMatrix(X, y), 3).save_model(tmp_path / "m.json")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    assert main(run(tmp_path, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("unbiased-criteria: error: ")
    assert "'binary:hinge' has no equivalent in the core" in err
    assert "on the command line --objective takes an objective name only, and a callable " \
           "objective needs the Python API: unbiased_criteria.unbiased_importance(" in err
