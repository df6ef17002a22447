"""Unbiased split gains for LightGBM, XGBoost and scikit-learn's HistGradientBoosting (Zhang et
al., IJCAI 2023).

>>> import unbiased_criteria as uc
>>> report = uc.unbiased_importance(model, X_train, y_train, X_valid, y_valid)  # doctest: +SKIP
>>> report.to_frame()                                                           # doctest: +SKIP
"""

from . import adapters
from .api import prune, unbiased_importance
from .model import UnsupportedModelError
from .report import ImportanceReport

__all__ = [
    "unbiased_importance",
    "prune",
    "ImportanceReport",
    "UnsupportedModelError",
    "adapters",
    "UnbiasedGBMRegressor",
    "UnbiasedGBMClassifier",
]


#: the native grower's scikit-learn estimators live with the adapters (scikit-learn is a host
#: to the core); reached by module name on first use
_NATIVE_ESTIMATORS = "unbiased_criteria.adapters.gbm_estimators"


def __getattr__(name):
    if name in ("UnbiasedGBMRegressor", "UnbiasedGBMClassifier"):
        import importlib

        return getattr(importlib.import_module(_NATIVE_ESTIMATORS), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
