"""Corrupt model files, atomic writes and non-ASCII feature names.

A corrupt LightGBM text model or XGBoost JSON model must give one line naming the tree and the
field, through the Python API and the command line, never a signal: LightGBM and XGBoost
crash the process on some of them, so every case runs in a subprocess.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


def lightgbm_corruptions(text: str) -> dict[str, tuple[str, str]]:
    """name: (corrupt text, expected part of the message), on a 2-tree 4-leaf model."""
    tree1 = text.index("Tree=1")
    cases = {
        "tree-sizes-off-by-7": (re.sub(r"tree_sizes=(\d+)",
                                       lambda m: f"tree_sizes={int(m[1]) + 7}", text, count=1),
                                "tree 0: tree_sizes"),
        "truncated-mid-tree": (text[: tree1 + 60], "tree 1: tree_sizes"),
        "truncated-no-sizes": (re.sub(r"tree_sizes=.*\n", "", text[: tree1 + 60]),
                               "tree 1: no 'end of trees'"),
        "tree-sizes-entry-missing": (re.sub(r"tree_sizes=(\d+) \d+", r"tree_sizes=\1", text),
                                     "tree_sizes: 1 entries for 2"),
        "num-leaves-edited": (text.replace("num_leaves=4", "num_leaves=5", 1),
                              "tree 0: leaf_value"),
        "left-child-out-of-range": (text.replace("left_child=2 -2 -1", "left_child=7 -2 -1", 1),
                                    "tree 0: left_child of node 0 is 7"),
        "left-child-to-root": (text.replace("left_child=2 -2 -1", "left_child=2 00 -1", 1),
                               "tree 0: left_child of node 1 is 0"),
        "children-cyclic": (text.replace("left_child=2 -2 -1", "left_child=-1 2 1", 1)
                            .replace("right_child=1 -3 -4", "right_child=-4 -2 -3", 1),
                            "tree 0: left_child/right_child form a cycle"),
        "split-feature-out-of-range": (text.replace("split_feature=0 0 0",
                                                    "split_feature=0 9 0", 1),
                                       "tree 0: split_feature of node 1 is 9"),
    }
    for name, (bad, _) in cases.items():
        assert bad != text, name
    return cases


def xgboost_corruptions(text: str) -> dict[str, tuple[str, str]]:
    """name: (corrupt JSON text, expected part of the message), on a depth-2 model."""
    def edit(key: str, node: int, value: int) -> str:
        js = json.loads(text)
        tree = js["learner"]["gradient_booster"]["model"]["trees"][1]
        assert tree["left_children"] == [1, 3, 5, -1, -1, -1, -1]
        tree[key][node] = value
        return json.dumps(js, ensure_ascii=False)

    return {
        "child-below-minus-1": (edit("left_children", 1, -3),
                                "tree 1, node 1: left_children is -3"),
        "child-9999": (edit("right_children", 2, 9999), "tree 1, node 2: right_children is 9999"),
        "split-indices-out-of-range": (edit("split_indices", 0, 50),
                                       "tree 1, node 0: split_indices is 50"),
        "host-rejects": (text[: len(text) // 2], "not a model file: XGBoost rejects it as JSON: "),
    }


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """Small models, their corrupt copies and a data file, written once."""
    d = tmp_path_factory.mktemp("model_files")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((400, 4)), columns=["a", "b", "c", "d"])
    y = X["a"] + 0.5 * rng.random(400)
    X.assign(y=y).to_csv(d / "data.csv", index=False)
    lgb.train({"num_leaves": 4, "verbose": -1, "seed": 0},
              lgb.Dataset(X, y), 2).save_model(d / "lgb.txt")
    xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), 2).save_model(d / "xgb.json")
    lgb_cases = lightgbm_corruptions((d / "lgb.txt").read_text())
    xgb_cases = xgboost_corruptions((d / "xgb.json").read_text())
    assert tuple(lgb_cases) == LGB_CASES and tuple(xgb_cases) == XGB_CASES
    for name, (bad, _) in lgb_cases.items():
        (d / f"lgb-{name}.txt").write_text(bad)
    for name, (bad, _) in xgb_cases.items():
        (d / f"xgb-{name}.json").write_text(bad)
    return d


LGB_CASES = ("tree-sizes-off-by-7", "truncated-mid-tree", "truncated-no-sizes",
             "tree-sizes-entry-missing", "num-leaves-edited", "left-child-out-of-range",
             "left-child-to-root", "children-cyclic", "split-feature-out-of-range")
XGB_CASES = ("child-below-minus-1", "child-9999", "split-indices-out-of-range", "host-rejects")


def _cases() -> list[tuple[str, str]]:
    return [("lgb", n) for n in LGB_CASES] + [("xgb", n) for n in XGB_CASES]


def _expected(models: Path, host: str, name: str) -> str:
    if host == "lgb":
        return lightgbm_corruptions((models / "lgb.txt").read_text())[name][1]
    return xgboost_corruptions((models / "xgb.json").read_text())[name][1]


def _path(host: str, name: str) -> str:
    return f"lgb-{name}.txt" if host == "lgb" else f"xgb-{name}.json"


_CLI_SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    from unbiased_criteria.cli import main
    for path in sys.stdin.read().split():
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(["importance", path, "--valid", "data.csv", "--label", "y"])
        print(json.dumps({"path": path, "rc": rc, "stderr": err.getvalue()}), flush=True)
""")


@pytest.fixture(scope="module")
def cli_results(models) -> dict:
    """The command line's exit code and stderr for each corrupt file (one process for all:
    a crash fails every case)."""
    res = subprocess.run([sys.executable, "-c", _CLI_SCRIPT], cwd=models, timeout=300,
                         input=" ".join(_path(h, n) for h, n in _cases()),
                         capture_output=True, text=True)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    return {r["path"]: r for r in map(json.loads, res.stdout.splitlines())}


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c[0]}-{c[1]}")
def test_corrupt_model_cli_exits_2_with_one_line(models, cli_results, case):
    res = cli_results[_path(*case)]
    lines = res["stderr"].strip().splitlines()
    assert res["rc"] == 2, res
    assert len(lines) == 1 and lines[0].startswith("unbiased-criteria: error: "), lines
    assert _expected(models, *case) in lines[0]


_API_SCRIPT = textwrap.dedent("""
    import sys, pandas as pd, xgboost
    import unbiased_criteria as uc
    from unbiased_criteria.cli import UserError, load_model
    from unbiased_criteria.adapters.lightgbm.text_model import ModelTextError, check_model_text
    data = pd.read_csv("data.csv"); X, y = data.drop(columns="y"), data["y"]
    for host, path in (line.split() for line in sys.stdin):
        out = []
        try:
            load_model(path)
            if host == "lgb":  # XGBoost loads these files: the reader refuses them
                out.append("load_model: no error")
        except UserError as err:
            out.append("load_model: " + str(err))
        if host == "lgb":
            text = open(path).read()
            try:
                check_model_text(text)
            except ModelTextError as err:
                out.append("check: " + str(err))
        else:
            try:
                booster = xgboost.Booster(model_file=path)
            except xgboost.core.XGBoostError:
                booster = None
            if booster is not None:
                try:
                    uc.unbiased_importance(booster, X, y, X, y)
                    out.append("importance: no error")
                except ValueError as err:
                    out.append("importance: " + str(err).splitlines()[0])
        print(path, "|", " || ".join(out), flush=True)
""")


def test_corrupt_model_python_api_raises_value_error(models):
    cases = _cases()
    res = subprocess.run([sys.executable, "-c", _API_SCRIPT], cwd=models, timeout=300,
                         input="".join(f"{h} {_path(h, n)}\n" for h, n in cases),
                         capture_output=True, text=True)
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr[-2000:])
    lines = dict(line.split(" | ", 1) for line in res.stdout.strip().splitlines())
    for host, name in cases:
        got = lines[_path(host, name)]
        expected = _expected(models, host, name)
        assert "no error" not in got, (name, got)
        for part in got.split(" || "):
            assert expected in part, (name, part)


_USER_BOOSTER_SCRIPT = textwrap.dedent("""
    import sys, pandas as pd, lightgbm
    import unbiased_criteria as uc
    data = pd.read_csv("data.csv"); X, y = data.drop(columns="y"), data["y"]
    booster = lightgbm.Booster(model_file=sys.argv[1])  # LightGBM loads these files
    try:
        uc.unbiased_importance(booster, X, y, X, y)
        print("no error")
    except ValueError as err:
        print(err)
""")


# files LightGBM loads and then crashes on in dump_model() or misreads. Not split_feature out
# of range: LightGBM's own model_to_string() then writes past its feature-importance array
# (the process may die at exit, 2 runs in 6), and no host call gives the text without it
@pytest.mark.parametrize("name", ["left-child-out-of-range", "left-child-to-root",
                                  "children-cyclic"])
def test_user_booster_from_corrupt_text_is_refused(models, name):
    res = subprocess.run([sys.executable, "-c", _USER_BOOSTER_SCRIPT, f"lgb-{name}.txt"],
                         cwd=models, timeout=300, capture_output=True, text=True)
    assert res.returncode == 0, (res.returncode, res.stdout, res.stderr[-2000:])
    assert _expected(models, "lgb", name) in res.stdout, res.stdout


def test_check_model_text_accepts_real_models(models):
    """Real models pass: a categorical multiclass model, one-leaf trees, a pruned model."""
    from unbiased_criteria.adapters.lightgbm.text_model import check_model_text

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"c": pd.Categorical(rng.integers(0, 12, 600)), "x": rng.random(600)})
    y = rng.integers(0, 3, 600)
    booster = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 6,
                         "min_data_per_group": 5, "cat_smooth": 1, "verbose": -1},
                        lgb.Dataset(X, y), 4)
    text = booster.model_to_string()
    assert re.search(r"num_cat=[1-9]", text)
    check_model_text(text)
    check_model_text((models / "lgb.txt").read_text())
    stump = lgb.train({"num_leaves": 4, "min_data_in_leaf": 1000, "verbose": -1},
                      lgb.Dataset(X[["x"]], rng.random(600)), 2).model_to_string()
    assert "num_leaves=1" in stump
    check_model_text(stump)


# ------------------------------------------------------------------------- atomic writes


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    import os

    from unbiased_criteria import files

    target = tmp_path / "model.txt"
    target.write_text("old model")
    target.chmod(0o640)

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomic(target, "new model, cut short")
    assert target.read_text() == "old model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.txt"]  # no temporary file
    monkeypatch.undo()
    files.write_atomic(target, "größe".encode())
    assert target.read_text(encoding="utf-8") == "größe"
    assert (target.stat().st_mode & 0o777) == 0o640  # an existing file keeps its mode
    files.write_atomic(tmp_path / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert ((tmp_path / "new.txt").stat().st_mode & 0o777) == 0o666 & ~umask


def test_cli_prune_output_over_its_input_and_a_failed_write(models, tmp_path):
    """--output equal to the input model replaces it whole; a failing write leaves it."""
    import shutil

    for name in ("lgb.txt", "xgb.json", "data.csv"):
        shutil.copy(models / name, tmp_path / name)
    script = textwrap.dedent("""
        import sys
        from unbiased_criteria import files
        from unbiased_criteria.cli import main
        if sys.argv[1] == "fail":
            def fail(fd):
                raise OSError(28, "No space left on device")
            files.os.fsync = fail
        sys.exit(main(["prune", sys.argv[2], "--valid", "data.csv", "--label", "y",
                       "--output", sys.argv[2], *sys.argv[3:]]))
    """)
    for name in ("lgb.txt", "xgb.json"):
        before = (tmp_path / name).read_bytes()
        extra = ["--param", "eta=0.3"] if name.endswith("json") else []
        res = subprocess.run([sys.executable, "-c", script, "fail", name, *extra], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 2 and "No space left on device" in res.stderr, res.stderr
        assert (tmp_path / name).read_bytes() == before
        res = subprocess.run([sys.executable, "-c", script, "ok", name, *extra], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "lgb.txt", "xgb.json"]
        X = pd.read_csv(tmp_path / "data.csv").drop(columns="y")
        if name == "lgb.txt":
            pruned = lgb.Booster(model_file=tmp_path / name)
        else:
            pruned = xgb.Booster(model_file=tmp_path / name)
            X = xgb.DMatrix(X)
        assert np.all(np.isfinite(pruned.predict(X)))


# ------------------------------------------------------------------- non-ASCII feature names


@pytest.fixture(scope="module")
def umlaut():
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.random((400, 3)), columns=["größe", "x", "höhe"])
    y = X["größe"] + 0.3 * rng.normal(size=400)
    return X, y


def test_pruned_xgboost_model_keeps_non_ascii_names(umlaut, tmp_path):
    import unbiased_criteria as uc

    X, y = umlaut
    booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 8)
    pruned = uc.prune(booster, X[:200], y[:200], X[200:], y[200:], threshold=0.0)
    assert pruned.feature_names == list(X.columns)
    np.testing.assert_array_equal(pruned.predict(xgb.DMatrix(X)).shape, (400,))
    pruned.save_model(tmp_path / "p.json")
    assert "größe" in (tmp_path / "p.json").read_text(encoding="utf-8")
    assert xgb.Booster(model_file=tmp_path / "p.json").feature_names == list(X.columns)


def test_xgboost_hook_and_estimator_keep_non_ascii_names(umlaut):
    from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor, train

    X, y = umlaut
    est = UnbiasedXGBRegressor(n_estimators=5, max_depth=3).fit(X, y)
    assert est.get_booster().feature_names == list(X.columns)
    assert est.predict(X).shape == (400,)
    booster = train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 5)
    assert booster.feature_names == list(X.columns)
    assert booster.predict(xgb.DMatrix(X)).shape == (400,)


def test_cli_prune_keeps_non_ascii_names(umlaut, tmp_path):
    X, y = umlaut
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False, encoding="utf-8")
    xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 8).save_model(
        tmp_path / "m.json")
    res = subprocess.run([sys.executable, "-m", "unbiased_criteria.cli", "prune", "m.json",
                          "--valid", "data.csv", "--label", "y", "--output", "p.json",
                          "--param", "eta=0.3"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    pruned = xgb.Booster(model_file=tmp_path / "p.json")
    assert pruned.feature_names == list(X.columns)
    assert pruned.predict(xgb.DMatrix(X)).shape == (400,)
