"""Dask engine: :func:`unbiased_importance` and :func:`prune` on dask collections.

Not a host: models come from the hosts' dask interfaces (``lightgbm.DaskLGBMRegressor`` /
``DaskLGBMClassifier``, the dict ``xgboost.dask.train`` returns, their Boosters) and are read
and routed by the host adapters; the statistics are the core's
(:mod:`unbiased_criteria.partitioned`). ``uc.unbiased_importance`` and ``uc.prune`` call these
when given dask collections.

Modules: ``inputs`` (recognising dask inputs, partitions), ``engine`` (the tasks and the
client's loop).
"""

from unbiased_criteria.adapters.dask.engine import prune, unbiased_importance, uses_dask

__all__ = ["unbiased_importance", "prune", "uses_dask"]
