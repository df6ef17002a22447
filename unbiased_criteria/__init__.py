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
]
__version__ = "0.1.0"
