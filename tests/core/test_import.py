"""The core imports no host library, which a static scan of every core module shows (and
importing the package confirms); the adapters live only under the package."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOSTS = ("lightgbm", "xgboost")
CORE = REPO / "unbiased_criteria"
# packages the core must never import: the hosts (scikit-learn is one too: HistGradientBoosting
# and the hosts' estimators) and what only an adapter needs
STATIC_HOSTS = ("lightgbm", "xgboost", "sklearn", "catboost", "dask")
# the host-specific adapter modules: reached only through importlib by name, at run time
ADAPTER_PREFIX = "unbiased_criteria.adapters."
_IMPORT_CALLS = {"import_module", "__import__"}


def _absolute(module: str | None, level: int, package: str) -> str:
    """``from <level dots><module> import ...`` in ``package``, as an absolute module name."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def package_of(path: Path) -> str:
    """The package a core module's relative imports start from."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1])


def host_imports(source: str, package: str, where: str) -> list[str]:
    """Every import of a host or an adapter module in ``source`` (a module of ``package``), at
    any depth (top level, functions, ``if TYPE_CHECKING``), and every
    ``importlib.import_module`` / ``__import__`` call with a string literal naming one."""

    def forbidden(name: str) -> bool:
        return name.split(".")[0] in STATIC_HOSTS or name.startswith(ADAPTER_PREFIX)

    found = []
    for node in ast.walk(ast.parse(source, where)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in _IMPORT_CALLS and node.args and \
                    isinstance(node.args[0], ast.Constant) and \
                    isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found += [f"{where}:{node.lineno}: {n}" for n in names if forbidden(n)]
    return found


def core_modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_static_scan_no_core_module_imports_a_host():
    """Every module under unbiased_criteria/ (cli included), whether or not a test imports it:
    no host import anywhere in the file, and no adapter module but through the name-based
    dispatch (``api._ADAPTERS``, ``model_files.ADAPTERS``), which uses variables."""
    modules = core_modules()
    assert CORE / "cli" / "__init__.py" in modules and CORE / "model_files.py" in modules
    found = [hit for path in modules
             for hit in host_imports(path.read_text(encoding="utf-8"), package_of(path),
                                     str(path.relative_to(REPO)))]
    assert found == []


def test_static_scan_sees_every_form():
    """Guards the scan: each way of importing a host is caught, the host-free ones are not."""
    code = textwrap.dedent("""
        import numpy, unbiased_criteria.adapters
        from . import output
        from .. import model_files, adapters
        import lightgbm
        import xgboost.core as xc
        def f():
            from sklearn.ensemble import HistGradientBoostingRegressor
            import importlib
            importlib.import_module("catboost")
            __import__("xgboost")
            from ..adapters.lightgbm import model_file
            from ..adapters import xgboost
            importlib.util.find_spec("lightgbm")  # finding is not importing
    """)
    hits = host_imports(code, "unbiased_criteria.cli", "probe.py")
    got = sorted(h.split(": ", 1)[1] for h in hits)
    assert got == sorted([
        "lightgbm", "xgboost.core", "sklearn.ensemble",
        "sklearn.ensemble.HistGradientBoostingRegressor", "catboost", "xgboost",
        "unbiased_criteria.adapters.lightgbm",
        "unbiased_criteria.adapters.lightgbm.model_file",
        "unbiased_criteria.adapters.xgboost",
    ])


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
