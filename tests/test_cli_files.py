"""The command line's files: data read as the model's categories and types, unreadable
compressed files, output that is a pipe or a descriptor, a plot format that cannot be
written, output paths that are no file, and SIGTERM during a write.

Numbers are compared with the Python API's on the same rows (the API takes the frame as the
host predicts it); files written are read back with the host or with plain Python.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import signal
import subprocess
import sys
import textwrap
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria import files
from unbiased_criteria.cli import main

lgb = pytest.importorskip("lightgbm")


def importance(model, valid, *extra) -> list[str]:
    return ["importance", str(model), "--valid", str(valid), "--label", "y", "--n-jobs", "1",
            *extra]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("unbiased-criteria: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def numeric(tmp_path_factory):
    """A LightGBM model on two numeric features, its held-out rows as a CSV file."""
    d = tmp_path_factory.mktemp("numeric")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=1200), "b": rng.normal(size=1200)})
    y = X["a"] + rng.normal(size=1200)
    lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 7}, lgb.Dataset(X[:600], y[:600]),
              8).save_model(d / "m.txt")
    X[600:].assign(y=y[600:]).to_csv(d / "valid.csv", index=False)
    return d


# ------------------------------------------------------------- categorical columns as text


def categorical_rows(categories, special, n, seed):
    rng = np.random.default_rng(seed)
    values = rng.choice(categories, n)
    X = pd.DataFrame({"cat": pd.Categorical(values, categories=categories),
                      "x": rng.normal(size=n)})
    y = np.isin(values, special) * 2.0 + X["x"].to_numpy() + rng.normal(size=n)
    return X, y


CATEGORIES = {  # pandas read "NA" as missing, "00" "01" as the numbers 0 1
    "NA-is-a-country": (["NA", "US", "FR", "DE"], ["NA"]),
    "zero-padded-codes": (["00", "01", "02", "10", "11", "12"], ["00", "01"]),
    "null-and-None": (["null", "None", "nan", "x"], ["null", "nan"]),
}


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("name", CATEGORIES)
def test_categorical_columns_are_read_as_the_models_categories(tmp_path, capsys, host, name):
    """The CLI's unbiased gain of 'cat' was 589.9 against the API's 5811.8 on the same rows
    ("NA" read as missing, silently); "00", "01" were warned of as unseen "0", "1"."""
    categories, special = CATEGORIES[name]
    X, y = categorical_rows(categories, special, 1500, 0)
    Xv, yv = categorical_rows(categories, special, 1500, 1)
    Xv.loc[[3, 10], "cat"] = np.nan  # an empty field: missing
    extra = []
    if host == "lightgbm":
        model = lgb.train({"verbose": -1, "num_threads": 1, "min_data_per_group": 10,
                           "cat_smooth": 1}, lgb.Dataset(X, y), 10)
        model.save_model(tmp_path / "m.txt")
        path = tmp_path / "m.txt"
    else:
        xgb = pytest.importorskip("xgboost")
        model = xgb.train({"max_depth": 3, "nthread": 1, "eta": 0.3, "lambda": 1.0},
                          xgb.DMatrix(X, y, enable_categorical=True), 10)
        model.save_model(tmp_path / "m.json")
        path = tmp_path / "m.json"
        extra = ["--param", "eta=0.3", "--param", "lambda=1"]
    Xv.assign(y=yv).to_csv(tmp_path / "valid.csv", index=False)
    text = (tmp_path / "valid.csv").read_text()
    assert f"\n{categories[0]}," in text and "\n," in text  # as written: the codes, an empty field
    assert main(importance(path, tmp_path / "valid.csv", "--format", "csv", *extra)) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err, out.err
    got = pd.read_csv(io.StringIO(out.out), index_col="feature")
    expected = uc.unbiased_importance(model, None, None, Xv, yv, n_jobs=1,
                                      random_state=0).to_frame()
    assert got.loc["cat", "unbiased_gain"] > 100  # the category that matters is found
    for column in ("unbiased_gain", "std_error", "biased_gain"):
        np.testing.assert_allclose(got[column], expected[column], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("categories, special", [([1, 2, 3, 4], [2]), ([False, True], [True])],
                         ids=["numbers", "true-false"])
def test_numeric_categories_and_other_columns_keep_their_types(tmp_path, capsys, categories,
                                                               special):
    """Categories that are numbers or booleans match the text read; the numeric feature
    still takes pandas' missing values ("NA" there is missing, as before)."""
    X, y = categorical_rows(categories, special, 1500, 0)
    Xv, yv = categorical_rows(categories, special, 1500, 1)
    model = lgb.train({"verbose": -1, "num_threads": 1, "min_data_per_group": 10},
                      lgb.Dataset(X, y), 10)
    model.save_model(tmp_path / "m.txt")
    Xv.loc[[0, 5], "x"] = np.nan
    Xv.assign(y=yv).to_csv(tmp_path / "valid.csv", index=False, na_rep="NA")
    assert main(importance(tmp_path / "m.txt", tmp_path / "valid.csv", "--format", "csv")) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err, out.err
    got = pd.read_csv(io.StringIO(out.out), index_col="feature")
    expected = uc.unbiased_importance(model, None, None, Xv, yv, n_jobs=1,
                                      random_state=0).to_frame()
    np.testing.assert_allclose(got["unbiased_gain"], expected["unbiased_gain"], rtol=1e-9)


# ------------------------------------------------------------ true/false with missing values


@pytest.mark.parametrize("kind", ["csv", "parquet-object", "parquet-boolean"])
def test_true_false_column_with_missing_values_is_one_zero_nan(tmp_path, capsys, kind):
    """Refused as 'holds text' once one value was missing; without the gap it was 0/1."""
    rng = np.random.default_rng(0)
    flag = rng.random(2000) < 0.5
    X = pd.DataFrame({"flag": flag.astype(float), "b": rng.normal(size=2000)})
    y = X["flag"] + rng.normal(size=2000)
    model = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 7},
                      lgb.Dataset(X[:1000], y[:1000]), 8)
    model.save_model(tmp_path / "m.txt")
    valid = pd.DataFrame({"flag": pd.array(flag[1000:], dtype=object), "b": X["b"][1000:],
                          "y": y[1000:]}).reset_index(drop=True)
    valid.loc[[0, 7], "flag"] = None
    if kind == "csv":
        path = tmp_path / "valid.csv"
        valid.to_csv(path, index=False)
        assert (tmp_path / "valid.csv").read_text().splitlines()[1].startswith(",")
    else:
        pytest.importorskip("pyarrow")
        path = tmp_path / "valid.parquet"
        if kind == "parquet-boolean":
            valid = valid.astype({"flag": "boolean"})
        valid.to_parquet(path)
    assert main(importance(tmp_path / "m.txt", path, "--format", "csv")) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col="feature")
    Xv = X[1000:].reset_index(drop=True)
    Xv.loc[[0, 7], "flag"] = np.nan
    expected = uc.unbiased_importance(model, None, None, Xv, y[1000:].to_numpy(), n_jobs=1,
                                      random_state=0).to_frame()
    np.testing.assert_allclose(got["unbiased_gain"], expected["unbiased_gain"], rtol=1e-9)


def test_text_among_true_false_is_still_refused(numeric, tmp_path, capsys):
    frame = pd.read_csv(numeric / "valid.csv")
    frame["a"] = frame["a"].gt(0).astype(object)
    frame.loc[4, "a"] = "maybe"
    frame.to_csv(tmp_path / "v.csv", index=False)
    assert main(importance(numeric / "m.txt", tmp_path / "v.csv")) == 2
    assert "column 'a' holds text" in one_error_line(capsys.readouterr().err)


# ------------------------------------------------------------ unreadable compressed files


def _truncated(raw: bytes, compress) -> bytes:
    return compress(raw)[:3000]


def _zip(raw: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("valid.csv", raw)
    return buffer.getvalue()


BROKEN = {  # name: (file name, its bytes from the CSV's)
    "truncated-gz": ("v.csv.gz", lambda raw: _truncated(raw, gzip.compress)),
    "truncated-bz2": ("v.csv.bz2", lambda raw: _truncated(raw, bz2.compress)),
    "truncated-xz": ("v.csv.xz", lambda raw: _truncated(raw, lzma.compress)),
    "truncated-zip": ("v.csv.zip", lambda raw: _zip(raw)[:3000]),
    "corrupt-gz": ("v.csv.gz", lambda raw: (g := gzip.compress(raw))[:10] + b"\0" * 50 + g[60:]),
    "corrupt-bz2": ("v.csv.bz2", lambda raw: (b := bz2.compress(raw))[:40] + b"\xff" * 40
                    + b[80:]),
    "corrupt-xz": ("v.csv.xz", lambda raw: (x := lzma.compress(raw))[:60] + b"\0" * 40
                   + x[100:]),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_compressed_file_is_one_line_exit_2(numeric, tmp_path, capsys, name):
    """Was 'internal error (a bug...)' with a traceback, exit 1 (EOFError, zlib.error,
    LZMAError, BadZipFile were not caught)."""
    file_name, make = BROKEN[name]
    path = tmp_path / file_name
    path.write_bytes(make((numeric / "valid.csv").read_bytes()))
    assert main(importance(numeric / "m.txt", path)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"unbiased-criteria: error: --valid {path}: cannot be read: ")
    pytest.importorskip("sklearn")
    assert main(["select", str(path), "--label", "y", "--host", "lightgbm"]) == 2
    assert one_error_line(capsys.readouterr().err).startswith(
        f"unbiased-criteria: error: DATA {path}: cannot be read: ")


# ------------------------------------------------------- output that is no regular file


def test_write_atomic_writes_a_fifo_in_place(tmp_path):
    """The FIFO was replaced by a regular file, its reader got nothing."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    files.write_atomic(fifo, b"through the pipe\n")
    reader.join(10)
    assert got == [b"through the pipe\n"]
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.parametrize("form", ["/dev/fd/{fd}", "/proc/self/fd/{fd}", "link"])
def test_write_atomic_writes_an_open_descriptor_where_it_stands(tmp_path, form):
    """/dev/stdout of a log opened with >> replaced the log (its earlier lines lost)."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd (Linux)")
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    inode = log.stat().st_ino
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        path = form.format(fd=fd)
        if form == "link":  # a link to the descriptor, as /dev/stdout is to /proc/self/fd/1
            (tmp_path / "out").symlink_to(f"/proc/self/fd/{fd}")
            path = tmp_path / "out"
        files.write_atomic(path, "the table\n")
    finally:
        os.close(fd)
    assert log.read_text() == "earlier line\nthe table\n" and log.stat().st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["log.txt"] + (["out"] if form == "link" else []))


def test_write_atomic_into_a_pipe_descriptor():
    read, write = os.pipe()
    try:
        files.write_atomic(f"/dev/fd/{write}", b"x" * 1000)
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as f:
            read = -1
            assert f.read() == b"x" * 1000
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)


def test_cli_output_fifo_reaches_its_reader_and_stays_a_fifo(numeric, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    assert main(importance(numeric / "m.txt", numeric / "valid.csv", "--format", "csv",
                           "--output", str(fifo))) == 0
    reader.join(10)
    assert got and got[0].startswith("feature,unbiased_gain")
    assert fifo.is_fifo()


def test_cli_output_dev_stdout_into_a_pipe_and_an_appended_log(numeric, tmp_path):
    """--output /dev/stdout failed into a pipe and clobbered a log opened with >>."""
    args = [sys.executable, "-m", "unbiased_criteria.cli",
            *importance(numeric / "m.txt", numeric / "valid.csv", "--format", "csv",
                        "--output", "/dev/stdout")]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("feature,unbiased_gain")
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    with open(log, "a") as f:
        res = subprocess.run(args, stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert log.read_text().startswith("earlier line\nfeature,unbiased_gain")
    # prune's model to standard output: its summary goes to stderr, not after the model
    res = subprocess.run([sys.executable, "-m", "unbiased_criteria.cli", "prune",
                          str(numeric / "m.txt"), "--valid", str(numeric / "valid.csv"),
                          "--label", "y", "--n-jobs", "1", "--output", "/dev/stdout"],
                         capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert b"leaves before" in res.stderr and b"leaves before" not in res.stdout
    pruned = lgb.Booster(model_str=res.stdout.decode())
    assert pruned.num_trees() == 8


# ------------------------------------------------------------ output paths that are no file


def test_prune_output_dash_is_refused(numeric, tmp_path, capsys, monkeypatch):
    """'-' passed the up-front checks as standard output, then a file '-' was written."""
    monkeypatch.chdir(tmp_path)
    args = ["prune", str(numeric / "m.txt"), "--valid", str(numeric / "valid.csv"),
            "--label", "y", "--n-jobs", "1", "--output", "-"]
    assert main(args) == 2
    assert "--output -: prune writes a model file" in one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["prune --output", "--output", "--plot"])
def test_output_path_ending_in_a_separator_is_a_folder(numeric, tmp_path, capsys, option):
    """'newdir/' (no such folder) was written as a file 'newdir'."""
    target = f"{tmp_path / 'newdir'}{os.sep}"
    if option == "prune --output":
        args = ["prune", str(numeric / "m.txt"), "--valid", str(numeric / "valid.csv"),
                "--label", "y", "--output", target]
    else:
        if option == "--plot":
            pytest.importorskip("matplotlib")
        args = importance(numeric / "m.txt", numeric / "valid.csv", option, target)
    assert main(args) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{option.split()[-1]} {target}: names a folder" in line
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(IsADirectoryError):
        files.write_atomic(target, "x")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ a plot format not writable


def test_plot_format_that_cannot_be_written_is_refused_before_any_work(
        numeric, tmp_path, capsys, monkeypatch):
    """pgf without LaTeX: matplotlib lists the format, and saving failed after the whole
    computation (RuntimeError traceback, exit 1)."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("PATH", str(tmp_path))  # no TeX program on it
    from unbiased_criteria.cli import commands

    def no_work(args):
        raise AssertionError("the data were read before the plot format was checked")

    monkeypatch.setattr(commands, "load_inputs", no_work)
    target = tmp_path / "imp.pgf"
    assert main(importance(numeric / "m.txt", numeric / "valid.csv", "--plot",
                           str(target))) == 2
    out = capsys.readouterr()
    line = one_error_line(out.err)
    assert f"--plot {target}: cannot be written in format 'pgf': " in line
    assert out.out == "" and list(tmp_path.iterdir()) == []


def test_plot_draws_dollar_names_and_file_name_as_written(tmp_path, capsys, monkeypatch):
    """Feature names with '$' went to matplotlib as mathtext: 'gross_$_net_$' made the save
    fail and the command said '--plot p.png: cannot be written: _net_' (exit 2), blaming the
    file. The names, and the model file's name in the title, are drawn as written."""
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import RendererAgg

    drawn: list[tuple[str, object]] = []
    original = RendererAgg.draw_text

    def spy(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        drawn.append((s, ismath))
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    monkeypatch.setattr(RendererAgg, "draw_text", spy)
    names = ["US$_min/US$_max", "gross_$_net_$", "z"]  # LightGBM: "_" for a space
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(1200, 3)), columns=names)
    y = X[names[0]] + X[names[1]] + rng.normal(size=1200)
    model = tmp_path / "m$_x$.txt"
    lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 7},
              lgb.Dataset(X[:600], y[:600]), 8).save_model(model)
    X[600:].assign(y=y[600:]).to_csv(tmp_path / "valid.csv", index=False)
    target = tmp_path / "p.png"
    assert main(importance(model, tmp_path / "valid.csv", "--plot", str(target))) == 0
    assert capsys.readouterr().err == f"unbiased-criteria: wrote plot to {target}\n"
    assert target.read_bytes().startswith(b"\x89PNG")
    for name in names:
        assert any(s in (name, f"{name} *") and ismath is False for s, ismath in drawn), name
    assert ("m$_x$.txt: unbiased vs biased gain", False) in drawn


@pytest.mark.parametrize("error, says", [
    (RuntimeError("LaTeX was not able to process the following string:"),
     "matplotlib could not draw the plot as 'pgf' (nothing written): LaTeX was not able "
     "to process the following string:"),
    (PermissionError(13, "Permission denied"), "cannot be written: Permission denied"),
])
def test_plot_blames_the_file_only_when_writing_fails(tmp_path, capsys, monkeypatch, error,
                                                      says):
    """Any failure of the save was reported as '--plot FILE: cannot be written: ...', also
    matplotlib's failures to draw the figure (a mathtext error, LaTeX refusing a name under
    the pgf format): the file was never the cause. Only an OSError blames it now."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from unbiased_criteria.cli.output import save_plot
    from unbiased_criteria.errors import InputError

    def fails(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(Figure, "savefig", fails)
    report = uc.ImportanceReport(
        pd.DataFrame({"feature_index": [0], "feature": ["a"], "tree": [0],
                      "unbiased_gain": [1.0], "biased_gain": [2.0], "host_gain": [2.0]}),
        ["a"])
    target = tmp_path / "p.pgf"
    with pytest.raises(InputError) as raised:
        save_plot(report, str(target), "title")
    assert str(raised.value) == f"--plot {target}: {says}"
    assert capsys.readouterr().err == "" and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ SIGTERM while writing


def test_sigterm_during_the_write_leaves_no_temporary_file(numeric, tmp_path):
    """The temporary file .out.csv.XXXX.tmp stayed next to the target: SIGTERM's default
    action ends the process without any cleanup."""
    out = tmp_path / "out.csv"
    out.write_text("the old table\n")
    script = textwrap.dedent("""
        import os, signal, sys
        from unbiased_criteria import files
        from unbiased_criteria.cli import main
        real_fsync = os.fsync
        def killed_while_syncing(fd):  # as `kill` during a slow disk's fsync
            os.kill(os.getpid(), signal.SIGTERM)
            real_fsync(fd)
        files.os.fsync = killed_while_syncing
        sys.exit(main(sys.argv[1:]))
    """)
    res = subprocess.run([sys.executable, "-c", script,
                          *importance(numeric / "m.txt", numeric / "valid.csv", "--output",
                                      str(out))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 128 + signal.SIGTERM, (res.returncode, res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    assert out.read_text() == "the old table\n"


def test_the_signal_handlers_are_restored_after_the_command(numeric, capsys):
    before = signal.getsignal(signal.SIGTERM)
    assert main(importance(numeric / "m.txt", numeric / "valid.csv")) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    capsys.readouterr()


def test_text_classes_and_numeric_categories_read_from_csv_as_from_parquet(tmp_path,
                                                                            monkeypatch):
    """A classifier's text classes ("01", "NA") were read by pandas' guess (the numbers 1,
    2, 3; a missing label), and an "NA" among numeric categories became an unseen category
    (XGBoost refused the file): a CSV now gives the Parquet file's table."""
    pytest.importorskip("pyarrow")
    import pickle

    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingClassifier

    from unbiased_criteria.cli import main

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=1500), "z": rng.normal(size=1500)})

    def table(args):
        assert main(args + ["--output", "out.csv"]) == 0
        return pd.read_csv("out.csv")

    for classes in (("01", "02", "03"), ("lo", "mid", "NA")):
        labels = np.where(X.x > 0.5, classes[2], np.where(X.x < -0.5, classes[0], classes[1]))
        model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(
            X.iloc[:700], labels[:700])
        (tmp_path / "m.pkl").write_bytes(pickle.dumps(model))
        v = X.iloc[700:].assign(y=labels[700:])
        v.to_csv("v.csv", index=False)
        v.to_parquet("v.parquet")
        args = ["importance", "m.pkl", "--trust-pickle", "--label", "y", "--seed", "0"]
        pd.testing.assert_frame_equal(table(args + ["--valid", "v.csv"]),
                                      table(args + ["--valid", "v.parquet"]))
    k = rng.choice([1, 2, 3], 2000).astype(float)
    x = rng.normal(size=2000)
    y = k + x + 0.3 * rng.normal(size=2000)
    k[rng.random(2000) < 0.05] = np.nan
    df = pd.DataFrame({"k": pd.Categorical(pd.array(k, dtype="Int64"), categories=[1, 2, 3]),
                       "x": x})
    xgb.train({"tree_method": "hist", "nthread": 1, "max_depth": 3},
              xgb.DMatrix(df.iloc[:1000], y[:1000], enable_categorical=True),
              10).save_model("m.json")
    v = df.iloc[1000:].assign(y=y[1000:])
    v.to_csv("blank.csv", index=False)
    v.to_csv("na.csv", index=False, na_rep="NA")  # R's write.csv writes missing so
    args = ["importance", "m.json", "--label", "y", "--seed", "0"]
    pd.testing.assert_frame_equal(table(args + ["--valid", "na.csv"]),
                                  table(args + ["--valid", "blank.csv"]))
