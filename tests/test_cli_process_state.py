"""``unbiased_criteria.cli.main(argv)`` run in-process (a notebook, a test) leaves the process
as it found it: the matplotlib backend (``--plot`` switched it to Agg for good, and a
notebook's inline plots stopped) and the root logger (``logging.basicConfig`` left a handler
printing every later record of any library as ``unbiased-criteria: WARNING: ...``)."""

from __future__ import annotations

import contextlib
import io
import logging

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.cli import main

lgb = pytest.importorskip("lightgbm")
matplotlib = pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A LightGBM model file on 25 features (more than the plot's 20) and one on 3, with
    their training and held-out rows."""
    d = tmp_path_factory.mktemp("state")
    for name, seed in (("train.csv", 0), ("valid.csv", 1)):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(600, 25))
        frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(25)])
        frame.assign(y=X[:, 0] + X[:, 1] + rng.normal(size=600)).to_csv(d / name, index=False)
    train = pd.read_csv(d / "train.csv")
    for model, columns in (("wide.txt", [f"f{i}" for i in range(25)]),
                           ("narrow.txt", ["f0", "f1", "f2"])):
        lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1, "seed": 0},
                  lgb.Dataset(train[columns], train["y"]), 15).save_model(d / model)
    return d


def importance(d, model: str, *extra: str) -> list[str]:
    return ["importance", str(d / model), "--train", str(d / "train.csv"), "--valid",
            str(d / "valid.csv"), "--label", "y", "--n-jobs", "1", *extra]


@pytest.fixture
def user_backend():
    """The user's pyplot backend is svg (for an inline or GUI one) while the test runs."""
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    yield "svg"
    matplotlib.use(before)


@pytest.mark.parametrize("model", ["wide.txt", "narrow.txt"])
def test_plot_keeps_the_users_backend_and_draws_the_librarys_plot(model_files, user_backend,
                                                                  model, capsys):
    import matplotlib.pyplot as plt

    target = model_files / f"{model}.png"
    open_figures = plt.get_fignums()
    assert main(importance(model_files, model, "--output", str(model_files / "imp.csv"),
                           "--plot", str(target))) == 0
    assert capsys.readouterr().err.endswith(f"unbiased-criteria: wrote plot to {target}\n")
    assert matplotlib.get_backend() == user_backend  # was "agg" after main
    assert plt.get_fignums() == open_figures
    # the oracle: report.plot() on the API's report, in the figure it makes itself
    train = pd.read_csv(model_files / "train.csv")
    valid = pd.read_csv(model_files / "valid.csv")
    booster = lgb.Booster(model_file=str(model_files / model))
    columns = booster.feature_name()
    report = uc.unbiased_importance(booster, train[columns], train["y"].to_numpy(),
                                    valid[columns], valid["y"].to_numpy(), n_jobs=1)
    ax = report.plot(title=f"{model}: unbiased vs biased gain")
    buffer = io.BytesIO()
    try:
        ax.figure.savefig(buffer, format="png", bbox_inches="tight", dpi=100)
    finally:
        plt.close(ax.figure)
    assert target.read_bytes() == buffer.getvalue()


@contextlib.contextmanager
def bare_root_logger():
    """The root logger as a fresh process has it, no handler (pytest adds its own in the
    test's call; they are put back after)."""
    root = logging.getLogger()
    handlers, level = root.handlers, root.level
    root.handlers, root.level = [], logging.WARNING
    try:
        yield root
    finally:
        root.handlers, root.level = handlers, level


def _logging_command(args) -> int:
    logging.getLogger("some.library").warning("a record while the command runs")
    logging.getLogger("some.library").info("below the level shown")
    return 0


def test_log_records_are_shown_while_the_command_runs_and_the_root_logger_is_restored(
        monkeypatch, capsys):
    monkeypatch.setattr("unbiased_criteria.cli.arguments.cmd_demo", _logging_command)
    with bare_root_logger() as root:
        root.setLevel(logging.ERROR)
        assert main(["demo"]) == 0
        # as before: WARNING and above, in the command's format, on stderr
        assert capsys.readouterr().err == \
            "unbiased-criteria: WARNING: a record while the command runs\n"
        assert root.handlers == [] and root.level == logging.ERROR
        logging.getLogger("someone.else").critical("after the command")
        assert "unbiased-criteria" not in capsys.readouterr().err


def test_a_configured_root_logger_is_left_alone(monkeypatch, capsys):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    monkeypatch.setattr("unbiased_criteria.cli.arguments.cmd_demo", _logging_command)
    with bare_root_logger() as root:
        root.addHandler(handler)
        assert main(["demo"]) == 0
        assert root.handlers == [handler] and root.level == logging.WARNING
    assert stream.getvalue() == "a record while the command runs\n"
    assert capsys.readouterr().err == ""


def test_an_error_restores_the_root_logger_too(model_files, capsys):
    with bare_root_logger() as root:
        assert main(importance(model_files, "absent.txt")) == 2
        assert root.handlers == []
    assert "no such file" in capsys.readouterr().err
