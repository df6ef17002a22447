"""The LightGBM adapter package: its public surface and how its modules find the host."""

from __future__ import annotations

import importlib
import inspect
import pickle

import pytest

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402

PUBLIC = {
    "RULES", "LightGBMSource", "read_model", "make_router", "make_objective", "write_model",
    "model_text", "train", "training_splits", "training_report", "LGBMGrower",
    "UnbiasedLGBMRegressor", "UnbiasedLGBMClassifier",
}
MODULES = ("source", "objectives", "reader", "router", "writer", "metrics", "datasets",
           "grower", "callbacks", "training", "estimators")


def test_public_surface():
    assert set(adapter.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(adapter, name) is not None


@pytest.mark.parametrize("module", MODULES)
def test_modules_import_the_real_lightgbm(module):
    mod = importlib.import_module(f"{adapter.__name__}.{module}")
    host = getattr(mod, "lightgbm", lightgbm)
    assert host is lightgbm and hasattr(host, "Booster")


@pytest.mark.parametrize("name", ["UnbiasedLGBMRegressor", "UnbiasedLGBMClassifier"])
def test_estimator_classes_are_named_and_picklable_by_reference(name):
    cls = getattr(adapter, name)
    assert cls.__name__ == cls.__qualname__ == name
    assert getattr(importlib.import_module(cls.__module__), name) is cls
    assert pickle.loads(pickle.dumps(cls)) is cls
    params = inspect.signature(cls.__init__).parameters
    assert {"holdout_fraction", "prune_threshold", "num_leaves", "kwargs"} <= set(params)
    base = name.replace("Unbiased", "")
    assert base in cls.__doc__ and issubclass(cls, getattr(lightgbm, base))
