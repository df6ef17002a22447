"""Host adapters: one module per host (lightgbm, xgboost, sklearn), imported lazily.

Installed as ``unbiased_criteria.adapters``. Importing this package imports no host.
"""

import importlib

__all__ = ["lightgbm", "xgboost", "sklearn"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
