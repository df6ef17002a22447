"""Unbiased split gains for LightGBM and XGBoost (Zhang et al., IJCAI 2023).

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


def __getattr__(name):
    # the native grower's estimators need scikit-learn: imported on first use only
    if name in ("UnbiasedGBMRegressor", "UnbiasedGBMClassifier"):
        from . import gbm_estimators

        return getattr(gbm_estimators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
__version__ = "0.1.0"
