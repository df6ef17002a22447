"""The ``unbiased-criteria`` command line end to end, in subprocesses, on files written here.

Each command's numbers are compared with the Python API's on the same models and rows; the
pruned model files are loaded with the host alone; every user error must exit 2 with one line
on stderr and no traceback.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("pyarrow")

FEATURES = ["X1", "X2", "X3"]
COLUMNS = ["unbiased_gain", "std_error", "biased_gain", "host_gain", "splits"]
XGB_PARAMS = {"objective": "reg:squarederror", "eta": 0.1, "lambda": 2.0, "max_depth": 4,
              "seed": 0, "nthread": 1}
# XGBoost model files do not store eta and lambda: the command line gets them with --param
XGB_FLAGS = ["--param", "eta=0.1", "--param", "lambda=2"]


IMPORTANCE = {  # name: (model, data suffix, format, extra options)
    "lgb-csv-table": ("lgb.txt", "csv", "table", ["--seed", "7", "--n-jobs", "1"]),
    "lgb-parquet-json": ("lgb.txt", "parquet", "json", ["--n-draws", "3", "--weight", "w"]),
    "xgbjson-parquet-csv": ("xgb.json", "parquet", "csv", [*XGB_FLAGS, "--n-jobs", "-1"]),
    "xgbubj-csv-json": ("xgb.ubj", "csv", "json", [*XGB_FLAGS, "--weight", "w", "--seed", "3"]),
}
PRUNE = {  # name: (model, output, extra options)
    "lgb": ("lgb.txt", "pruned.txt", ["--n-jobs", "2"]),
    "xgbjson-to-ubj": ("xgb.json", "pruned.ubj", XGB_FLAGS),
    "xgbubj-to-json": ("xgb.ubj", "pruned.json", XGB_FLAGS),
}
ERRORS = {  # name: (arguments, expected part of the message)
    "missing-label": (["importance", "lgb.txt", "--train", "train.csv", "--valid", "valid.csv",
                       "--label", "target"], "no label column 'target'"),
    "feature-mismatch": (["importance", "xgb.json", "--valid", "other.csv", "--label", "y"],
                         "missing the model's feature(s) X1, X2, X3"),
    "csv-not-a-model": (["prune", "valid.csv", "--valid", "valid.csv", "--label", "y",
                         "--output", "p.txt"], "not a model file"),
    "json-not-a-model": (["importance", "config.json", "--valid", "valid.csv", "--label", "y"],
                         "not a model file"),
    "missing-data-file": (["importance", "lgb.txt", "--valid", "absent.parquet", "--label",
                           "y"], "--valid absent.parquet: no such file"),
    "missing-model-file": (["importance", "absent.txt", "--valid", "valid.csv", "--label",
                            "y"], "model absent.txt: no such file"),
    "negative-weight": (["importance", "lgb.txt", "--valid", "negative_w.csv", "--label", "y",
                         "--weight", "w"], "--valid negative_w.csv: weight column 'w' must be "
                        "finite and non-negative: 1 value(s) are not, the first -1 in data row 4"),
}
SAME_ROWS = {  # the held-out rows are the training rows: the same file, or the same rows
    "importance": ["importance", "lgb.txt", "--train", "valid.csv", "--valid", "valid.csv",
                   "--label", "y", "--weight", "w"],
    "prune": ["prune", "xgb.json", "--train", "valid.csv", "--valid", "valid.parquet",
              "--label", "y", "--weight", "w", "--output", "p.txt", *XGB_FLAGS],
}
COMMANDS = {
    **{f"importance-{k}": ["importance", m, "--train", f"train.{d}", "--valid", f"valid.{d}",
                           "--label", "y", "--format", f, *x]
       for k, (m, d, f, x) in IMPORTANCE.items()},
    "splits": ["importance", "lgb.txt", "--valid", "valid.parquet", "--label", "y", "--splits",
               "--format", "csv", "--output", "splits.csv", "--plot", "imp.png"],
    **{f"prune-{k}": ["prune", m, "--train", "train.parquet", "--valid", "valid.csv",
                      "--label", "y", "--output", o, *x] for k, (m, o, x) in PRUNE.items()},
    **{f"error-{k}": a for k, (a, _) in ERRORS.items()},
    **{f"same-rows-{k}": a for k, a in SAME_ROWS.items()},
    "debug": ["--debug", "importance", "absent.txt", "--valid", "valid.csv", "--label", "y"],
}


def run(args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "unbiased_criteria.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )


def frame_of(X: pd.DataFrame, y: np.ndarray, seed: int) -> pd.DataFrame:
    """A data file's content: X2 as text categories, a label, a weight and an unused id."""
    out = X.copy()
    out["X2"] = pd.Categorical(
        np.asarray(list("abcdef"), dtype=object)[X["X2"].cat.codes.to_numpy()],
        categories=list("abcdef"),
    )
    out["y"] = y
    out["w"] = np.random.default_rng(seed).uniform(0.5, 1.5, len(y))
    out["id"] = np.arange(len(y))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    X, y = paper_example(1000, random_state=0)
    Xv, yv = paper_example(1000, random_state=1)
    train, valid = frame_of(X, y, 2), frame_of(Xv, yv, 3)
    train.to_csv(d / "train.csv", index=False)
    valid.to_csv(d / "valid.csv", index=False)
    train.to_parquet(d / "train.parquet")
    valid.to_parquet(d / "valid.parquet")
    Xt = train[FEATURES]
    models = {
        "lgb.txt": lgb.train({"objective": "regression", "learning_rate": 0.1,
                              "num_leaves": 15, "verbose": -1, "seed": 0},
                             lgb.Dataset(Xt, y), num_boost_round=30),
        "xgb": xgb.train(XGB_PARAMS, xgb.DMatrix(Xt, y, enable_categorical=True), 30),
    }
    models["lgb.txt"].save_model(d / "lgb.txt")
    models["xgb"].save_model(d / "xgb.json")
    models["xgb"].save_model(d / "xgb.ubj")
    models["xgb.json"] = models["xgb.ubj"] = models.pop("xgb")
    # a data file whose columns are not the model's, a JSON file that is no model
    pd.DataFrame({"A": [1.0, 2.0], "B": [3.0, 4.0], "y": [0.0, 1.0]}).to_csv(
        d / "other.csv", index=False)
    (d / "config.json").write_text('{"learning_rate": 0.1}')
    valid.assign(w=np.where(np.arange(len(valid)) == 3, -1.0, valid["w"])).to_csv(
        d / "negative_w.csv", index=False)
    return {"dir": d, "models": models, "train": train, "valid": valid}


@pytest.fixture(scope="module")
def results(files) -> dict[str, subprocess.CompletedProcess]:
    """Every command of COMMANDS, run a few at a time (each spends most of its time importing
    the host)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = pool.map(lambda args: run(args, files["dir"]), COMMANDS.values())
        return dict(zip(COMMANDS, done))


def api_report(files, name, *, validation_only=False, weight=False, **options):
    train, valid = files["train"], files["valid"]
    return uc.unbiased_importance(
        files["models"][name],
        None if validation_only else train[FEATURES],
        None if validation_only else train["y"].to_numpy(),
        valid[FEATURES], valid["y"].to_numpy(),
        train_weight=None if validation_only or not weight else train["w"].to_numpy(),
        valid_weight=valid["w"].to_numpy() if weight else None,
        **options,
    )


def parse(out: str, fmt: str) -> pd.DataFrame:
    if fmt == "json":
        return pd.DataFrame(json.loads(out)).set_index("feature")
    if fmt == "csv":
        return pd.read_csv(io.StringIO(out), index_col="feature")
    return pd.read_csv(io.StringIO(out), sep=r"\s+", index_col="feature")


@pytest.mark.parametrize("name", IMPORTANCE)
def test_importance_matches_the_python_api(files, results, name):
    model, data, fmt, extra = IMPORTANCE[name]
    res = results[f"importance-{name}"]
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    # the unused columns are reported, on stderr only
    assert re.search(r"warning: --valid valid\.\w+: ignoring column\(s\) the model does not "
                     r"use: (w, )?id$", res.stderr, flags=re.MULTILINE), res.stderr
    got = parse(res.stdout, fmt)
    opts = dict(zip(extra[::2], extra[1::2]))
    expected = api_report(
        files, model, weight="--weight" in opts, random_state=int(opts.get("--seed", 0)),
        n_draws=int(opts.get("--n-draws", 1)),
    ).to_frame()
    assert list(got.index) == FEATURES
    assert list(got.columns) == COLUMNS
    tol = {"rtol": 1e-5, "atol": 1e-5} if fmt == "table" else {"rtol": 1e-9, "atol": 1e-9}
    for col in COLUMNS:
        np.testing.assert_allclose(got[col].to_numpy(float), expected[col].to_numpy(float),
                                   err_msg=col, **tol)
    # the gains are not trivially equal: noise gets a large biased gain
    assert (got["biased_gain"] > 0).all() and got.loc["X3", "biased_gain"] > 10


def test_splits_validation_only_output_file_and_plot(files, results):
    d = files["dir"]
    res = results["splits"]
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""  # the table went to --output
    got = pd.read_csv(d / "splits.csv")
    expected = api_report(files, "lgb.txt", validation_only=True, random_state=0).splits
    assert len(got) == len(expected) > 30
    for col in ["tree", "node", "feature", "n_train", "n_valid", "k"]:
        assert got[col].tolist() == expected[col].tolist(), col
    np.testing.assert_allclose(got["unbiased_gain"], expected["unbiased_gain"], rtol=1e-9,
                               atol=1e-9)
    # validation-only mode: G from the model's own sums, the 1000 training rows it stores
    # (it was G from one half of the 1000 held-out rows, which scored overfit noise above 0)
    assert got.loc[got["depth"] == 0, "n_train"].eq(1000).all()
    assert got["n_train"].tolist() == got["host_count"].tolist()
    np.testing.assert_allclose(got["biased_gain"], got["host_gain"], rtol=1e-4,
                               atol=1e-5 * got["host_gain"].abs().max())
    png = (d / "imp.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000


def lightgbm_leaves(path: Path) -> int:
    booster = lgb.Booster(model_file=str(path))
    return sum(t["num_leaves"] for t in booster.dump_model()["tree_info"])


def xgboost_leaves(path: Path) -> int:
    booster = xgb.Booster(model_file=str(path))
    return int((booster.trees_to_dataframe()["Feature"] == "Leaf").sum())


@pytest.mark.parametrize("name", PRUNE)
def test_prune_writes_a_smaller_host_model(files, results, name):
    d = files["dir"]
    model, output, _ = PRUNE[name]
    res = results[f"prune-{name}"]
    assert res.returncode == 0, res.stderr
    before = int(re.search(r"leaves before: (\d+)", res.stdout).group(1))
    after = int(re.search(r"leaves after: +(\d+)", res.stdout).group(1))
    path = d / output
    host = "lightgbm" if model.endswith(".txt") else "xgboost"
    count = lightgbm_leaves if host == "lightgbm" else xgboost_leaves
    assert before == count(d / model)
    assert after == count(path) < before
    # the host format follows the output suffix
    blob = path.read_bytes()
    if host == "lightgbm":
        assert blob.startswith(b"tree\n")
    else:
        assert blob.startswith(b"{")
        assert blob.startswith(b'{"') == output.endswith(".json")
    # the file predicts what the Python API's pruned model predicts
    train, valid = files["train"], files["valid"]
    pruned = uc.prune(files["models"][model], train[FEATURES], train["y"].to_numpy(),
                      valid[FEATURES], valid["y"].to_numpy(), random_state=0)
    if host == "lightgbm":
        loaded = lgb.Booster(model_file=str(path))
        got, want = loaded.predict(valid[FEATURES]), pruned.predict(valid[FEATURES])
    else:
        loaded = xgb.Booster(model_file=str(path))
        dm = xgb.DMatrix(valid[FEATURES], enable_categorical=True)
        got, want = loaded.predict(dm), pruned.predict(dm)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ERRORS)
def test_user_errors_are_one_line_without_traceback(files, results, name):
    message = ERRORS[name][1]
    res = results[f"error-{name}"]
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("unbiased-criteria: error: ")
    assert message in lines[0]
    assert "Traceback" not in res.stderr
    assert not (files["dir"] / "p.txt").exists()


@pytest.mark.parametrize("name", SAME_ROWS)
def test_held_out_rows_that_are_the_training_rows_are_refused(files, results, name):
    res = results[f"same-rows-{name}"]
    assert res.returncode == 2 and res.stdout == ""
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("unbiased-criteria: error: --valid holds the same rows as --train")
    assert "leave out --train" in last and "Traceback" not in res.stderr
    assert not (files["dir"] / "p.txt").exists()


def test_categories_the_model_never_saw(files):
    """LightGBM (and HistGradientBoosting) predict an unseen category as a missing value:
    warned, and the report is the API's on the frame with those values missing. XGBoost
    refuses them, as the API does. A column none of whose values is a category (text
    where the model has other names) is an error, not a column of missing values."""
    d, valid = files["dir"], files["valid"]
    some = valid.copy()
    some["X2"] = some["X2"].astype(object)
    some.loc[:9, "X2"] = "z"
    some.to_csv(d / "unseen.csv", index=False)
    none = valid.assign(X2="c" + valid["X2"].astype(str))
    none.to_csv(d / "renamed.csv", index=False)
    common = ["--label", "y", "--format", "csv"]
    res = run(["importance", "lgb.txt", "--valid", "unseen.csv", *common], d)
    assert res.returncode == 0, res.stderr
    assert re.search(r"warning: --valid unseen\.csv: 10 value\(s\) of column 'X2' are not "
                     r"among the categories .*\('z'; .*read as missing values", res.stderr)
    X = valid[FEATURES].copy()
    X.loc[:9, "X2"] = np.nan
    expected = uc.unbiased_importance(files["models"]["lgb.txt"], None, None, X,
                                      valid["y"], random_state=0).to_frame()
    np.testing.assert_allclose(parse(res.stdout, "csv")["unbiased_gain"],
                               expected["unbiased_gain"], rtol=1e-9, atol=1e-9)
    res = run(["importance", "xgb.json", "--valid", "unseen.csv", *common, *XGB_FLAGS], d)
    assert res.returncode == 2 and res.stdout == ""
    assert "XGBoost refuses categories it never saw" in res.stderr
    res = run(["importance", "lgb.txt", "--valid", "renamed.csv", *common], d)
    assert res.returncode == 2 and res.stdout == ""
    assert "1000 value(s) of column 'X2'" in res.stderr
    assert "none of the column's values is one" in res.stderr


def test_debug_shows_the_traceback(results):
    res = results["debug"]
    assert res.returncode != 0
    assert "Traceback" in res.stderr and "no such file" in res.stderr


def test_console_script_demo_core(tmp_path):
    script = Path(sys.executable).with_name("unbiased-criteria")
    if not script.exists():
        pytest.skip("console script not installed next to the interpreter")
    res = subprocess.run([str(script), "demo", "--core", "--rows", "200", "--replications",
                          "50"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "biased gain B" in res.stdout and "unbiased gain U" in res.stdout
