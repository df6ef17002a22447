"""Importing the package loads no host library; the adapters live only under the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOSTS = ("lightgbm", "xgboost")


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter, from ``cwd``, without the repo on sys.path."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )


def loaded_hosts(statement: str, cwd: Path) -> list[str]:
    proc = run_python(
        f"""
        import json, sys
        {statement}
        print(json.dumps([m for m in sys.modules
                          if m.split(".")[0] in {HOSTS!r}]))
        """,
        cwd,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "statement",
    [
        "import unbiased_criteria",
        "import unbiased_criteria.adapters",
        "import unbiased_criteria.trees, unbiased_criteria.gains, "
        "unbiased_criteria.objectives, unbiased_criteria.datasets, unbiased_criteria.model",
        "from unbiased_criteria import adapters; adapters.__all__",
    ],
)
def test_import_loads_no_host(statement, tmp_path):
    assert loaded_hosts(statement, tmp_path) == []


def test_host_checks_can_see_a_host(tmp_path):
    """Guards the test above: importing a host directly is seen (if the host is installed)."""
    found = run_python("import importlib.util as u; print(bool(u.find_spec('lightgbm')))",
                       tmp_path)
    if found.stdout.strip() != "True":
        pytest.skip("lightgbm is not installed")
    assert loaded_hosts("import lightgbm", tmp_path) != []


def test_core_modules_import_no_host(tmp_path):
    """Every module of the core package, whatever it is called, imports no host."""
    proc = run_python(
        """
        import importlib, json, pkgutil, sys
        import unbiased_criteria
        names = [m.name for m in pkgutil.iter_modules(unbiased_criteria.__path__)
                 if m.name != "adapters"]
        for name in names:
            importlib.import_module("unbiased_criteria." + name)
        print(json.dumps([names, [m for m in sys.modules
                                  if m.split(".")[0] in ("lightgbm", "xgboost")]]))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    names, hosts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"trees", "gains", "objectives"} <= set(names)
    assert hosts == [], f"importing the core loaded {hosts}"


def test_adapters_is_only_reachable_through_the_package(tmp_path):
    proc = run_python("import adapters", tmp_path)
    assert proc.returncode != 0
    assert "ModuleNotFoundError" in proc.stderr
    ok = run_python(
        "import unbiased_criteria.adapters as a, pathlib; print(pathlib.Path(a.__file__).parent)",
        tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert Path(ok.stdout.strip()).resolve() == (REPO / "adapters").resolve()


def test_bare_adapters_import_works_only_from_the_repo_root():
    """Guards the test above: from the repo root the folder itself is importable."""
    proc = run_python("import adapters", REPO)
    assert proc.returncode == 0, proc.stderr
