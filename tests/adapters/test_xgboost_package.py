"""The XGBoost adapter package: its public surface and how its modules find the host."""

from __future__ import annotations

import importlib
import inspect
import pickle
import subprocess
import sys

import pytest

xgboost = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

PUBLIC = {
    "RULES", "read_model", "parse_model", "parse_base_score", "make_objective", "make_router",
    "match_categories", "reads_category_codes",
    "write_model", "model_json", "train", "XGBGrower", "TrainingRecord", "training_record",
    "training_splits", "training_report", "UnbiasedXGBRegressor", "UnbiasedXGBClassifier",
}
MODULES = ("layout", "objectives", "reader", "router", "writer", "metrics", "grower", "record",
           "training", "estimators")


def test_public_surface():
    assert set(ax.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(ax, name) is not None


@pytest.mark.parametrize("module", MODULES)
def test_modules_import_the_real_xgboost(module):
    mod = importlib.import_module(f"{ax.__name__}.{module}")
    host = getattr(mod, "xgboost", xgboost)
    assert host is xgboost and hasattr(host, "Booster")


def test_import_from_another_directory(tmp_path):
    """Neither the package's own directory nor the repository is needed on sys.path."""
    code = ("import unbiased_criteria.adapters.xgboost as ax, xgboost; "
            "assert xgboost.Booster and ax.train.__module__.endswith('.training')")
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)


@pytest.mark.parametrize("name", ["UnbiasedXGBRegressor", "UnbiasedXGBClassifier"])
def test_estimator_classes_are_named_and_picklable_by_reference(name):
    cls = getattr(ax, name)
    assert cls.__name__ == cls.__qualname__ == name
    assert getattr(importlib.import_module(cls.__module__), name) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls
    params = inspect.signature(cls.__init__).parameters
    assert {"holdout_fraction", "redraw_holdout", "prune_threshold", "n_draws", "min_k",
            "objective", "kwargs"} <= set(params)
    base = name.replace("Unbiased", "")
    assert base in cls.__doc__ and issubclass(cls, getattr(xgboost, base))


def test_the_adapter_imports_without_scikit_learn():
    """The README's first command installs no scikit-learn: the demo and train() need none."""
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import unbiased_criteria.adapters.xgboost as ax\n"
        "import unbiased_criteria.adapters.lightgbm as al\n"
        "assert callable(ax.train) and callable(al.train)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
