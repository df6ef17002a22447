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
    "UnbiasedGBMRegressor",
    "UnbiasedGBMClassifier",
]
__version__ = "0.1.0"


#: what needs scikit-learn (a host to the core) lives with the adapters, reached by module name
#: on first use: the native grower's estimators, the cross-fitted importance and the selector
_NATIVE_ESTIMATORS = "unbiased_criteria.adapters.gbm_estimators"
_SELECTION = "unbiased_criteria.adapters.selection"
_LAZY = {
    "UnbiasedGBMRegressor": _NATIVE_ESTIMATORS,
    "UnbiasedGBMClassifier": _NATIVE_ESTIMATORS,
    "cross_fitted_importance": _SELECTION,
    "UnbiasedSelector": _SELECTION,
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
