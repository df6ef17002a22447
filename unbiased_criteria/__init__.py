"""Unbiased split gains for LightGBM, XGBoost and scikit-learn's HistGradientBoosting (Zhang et
al., IJCAI 2023).

>>> import unbiased_criteria as uc
>>> report = uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid)  # doctest: +SKIP
>>> report.to_frame()                                                           # doctest: +SKIP
"""

import importlib

from . import adapters
from .api import prune, unbiased_importance
from .cross_fit import CrossFittedReport
from .model import UnsupportedModelError
from .report import ImportanceReport

__all__ = [
    "unbiased_importance",
    "prune",
    "ImportanceReport",
    "UnsupportedModelError",
    "adapters",
    "cross_fitted_importance",
    "CrossFittedReport",
    "UnbiasedSelector",
]
__version__ = "0.1.0"

# need scikit-learn (the sklearn extra), so they live in the adapters: imported on first use
_LAZY = {"cross_fitted_importance": "adapters.selection", "UnbiasedSelector": "adapters.selection"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
