"""The packages are typed (PEP 561): the built distribution ships ``py.typed`` in
``unbiased_criteria`` and in its ``adapters`` (installed from another source folder), and a
README-style user script type-checks with mypy against the built package (skipped without
mypy). Without the markers mypy refused ``import unbiased_criteria`` (import-untyped) and
checked nothing; with them, documented calls (``memory_budget=1e8``,
``plot_splits(top=None)``) were false errors."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# README calls; mypy reads the annotations of the library only (the hosts are skipped below)
USER_SCRIPT = """\
import lightgbm as lgb

import unbiased_criteria as uc
from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor
from unbiased_criteria.datasets import paper_example

X, y = paper_example(2000, random_state=0)
Xv, yv = paper_example(2000, random_state=1)
model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 100)
report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, memory_budget=1e8)
report.to_frame()
report.select()
report.plot()
report.plot_splits(top=None)
pruned = uc.prune(model, X, y, Xv, yv, random_state=0, refit_leaves=True, memory_budget=2**27)
est = UnbiasedLGBMRegressor(n_estimators=5, random_state=0).fit(X, y)
est.feature_importances_
grower = uc.UnbiasedGBMRegressor(n_estimators=5, random_state=0).fit(X, y)
grower.importance_report_.to_frame()
"""

MYPY_CONFIG = """\
[mypy]
follow_imports = silent
[mypy-numpy.*,pandas.*,scipy.*,sklearn.*,lightgbm.*,xgboost.*,matplotlib.*,dask.*,\
distributed.*,tqdm.*,pyarrow.*]
follow_imports = skip
ignore_missing_imports = True
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The packages as setuptools lays them out in the wheel (``build_py``: the modules and
    their package data), built from a copy of the project (the checkout is not written)."""
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("unbiased_criteria", "adapters"):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    lib = tmp / "lib"
    run = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py",
         "--build-lib", str(lib)], cwd=src, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return lib


def test_the_build_ships_py_typed_in_both_packages(built):
    assert (built / "unbiased_criteria" / "py.typed").is_file()
    assert (built / "unbiased_criteria" / "adapters" / "py.typed").is_file()


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed")
def test_a_readme_style_script_type_checks(built, tmp_path):
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    # the built package on the path, as an installed one: mypy needs its py.typed to read it
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(built),
                                                       os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-incremental",
         "--cache-dir", os.devnull, "user.py"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout
