"""Dask inputs: recognising them, the models the hosts' dask interfaces return, partitions.

Recognised by the type's module (``dask.*``), so that callers without dask never import it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_dask", "unwrap_model", "partition_futures"]


def is_dask(obj: Any) -> bool:
    """A dask collection (DataFrame, Series, Array)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def is_xgboost_dask_result(model: Any) -> bool:
    """The dict ``xgboost.dask.train`` returns: ``{"booster": Booster, "history": ...}``."""
    return (isinstance(model, dict) and "booster" in model
            and type(model["booster"]).__module__.split(".")[0] == "xgboost")


def unwrap_model(model: Any) -> Any:
    """The host model to read: the Booster of an ``xgboost.dask.train`` result, else ``model``
    (``lightgbm.DaskLGBM*`` and ``xgboost.dask.DaskXGB*`` are host estimators already)."""
    return model["booster"] if is_xgboost_dask_result(model) else model


def partition_futures(client, collection: Any, name: str, like: str | None = None,
                      n_parts: int | None = None) -> list:
    """One future per partition of ``collection`` (a dask DataFrame, Series or Array cut by
    rows only), computed and kept on the workers; ``n_parts`` must match when given."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(collection, da.Array):
        if collection.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D, got {collection.ndim} dimensions")
        if collection.ndim == 2 and len(collection.chunks[1]) > 1:
            collection = collection.rechunk({1: -1})  # partitions hold whole rows
        parts = collection.to_delayed().ravel().tolist()
    elif isinstance(collection, dd.DataFrame | dd.Series):
        # as npartitions says: an optimised graph may fuse partitions otherwise for a column
        # subset (dask-expr reads fewer, larger parts for the label than for the features)
        parts = list(collection.to_delayed(optimize_graph=False))
    else:
        with_what = f" like {like}" if like else ""
        raise TypeError(
            f"{name} must be a dask DataFrame, Series or Array{with_what} (the held-out and "
            f"training parts are all dask collections or all in memory), got "
            f"{type(collection).__module__}.{type(collection).__name__}"
        )
    if n_parts is not None and len(parts) != n_parts:
        raise ValueError(
            f"{name} has {len(parts)} partitions but {like} has {n_parts}: labels and weights "
            "need the partitions of their rows"
        )
    return client.compute(parts)
