"""What a training run leaves behind: :class:`TrainingRecord`, kept per returned Booster, and
its views :func:`training_splits` and :func:`training_report`."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xgboost

from unbiased_criteria.boosting import BoostResult
from unbiased_criteria.report import ImportanceReport


@dataclass(frozen=True)
class TrainingRecord:
    """What :func:`train` gathered, kept for the Booster it returned.

    Attributes
    ----------
    splits : pandas.DataFrame
        One row per split the host made (before pruning): ``tree`` (index in the returned
        model), ``class``, ``iteration``, ``node`` (XGBoost's node id in the unpruned tree),
        ``depth``, ``feature_index``, ``feature``, ``threshold``, ``n_train``, ``n_valid``
        (held-out rows reaching it), ``k``, ``biased_gain`` (B on the rows that built it),
        ``unbiased_gain`` (U), ``host_gain`` (XGBoost's loss_chg), ``usable`` (k >= min_k) and
        ``kept`` (the split is in the returned model). Empty when nothing was scored
        (``prune_threshold=None`` or ``holdout_fraction=0``). Per-feature sums over the kept
        splits: :func:`training_report`.
    result : BoostResult
        The core loop's result: pruned trees, ``init_score`` (the intercept's margin),
        ``raw_train`` (running float32 margins of dtrain, ``(n, K)``), ``evals_result``,
        ``best_iteration``.
    raw_eval : tuple of arrays
        Running float32 margins ``(n_rows, K)`` of each eval set, in ``evals`` order.
    feature_names : tuple of str
    """

    splits: pd.DataFrame
    result: BoostResult
    raw_eval: tuple[np.ndarray, ...]
    feature_names: tuple[str, ...]


#: Booster returned by train() -> its TrainingRecord (dropped with the Booster)
_RECORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SPLIT_COLUMNS = ("tree", "class", "iteration", "node", "depth", "feature_index", "feature",
                  "threshold", "n_train", "n_valid", "k", "biased_gain", "unbiased_gain",
                  "host_gain", "usable", "kept")


def training_record(booster: xgboost.Booster) -> TrainingRecord:
    """The :class:`TrainingRecord` of a Booster returned by :func:`train`.

    The record lives as long as that Booster object, in this process: a copy, a slice
    (``booster[a:b]``), a pickled or saved-and-loaded Booster has none.

    Parameters
    ----------
    booster : xgboost.Booster
        The very object :func:`train` returned.

    Returns
    -------
    TrainingRecord

    Raises
    ------
    KeyError
        ``booster`` was not returned by :func:`train` in this process.
    """
    try:
        return _RECORDS[booster]
    except (KeyError, TypeError):
        raise KeyError(
            "booster was not returned by unbiased_criteria.adapters.xgboost.train in this "
            "process (copies, slices, pickled and loaded Boosters carry no training record)"
        ) from None


def training_splits(booster: xgboost.Booster) -> pd.DataFrame:
    """The per-split table gathered while :func:`train` built ``booster`` (a copy).

    See :class:`TrainingRecord` for the columns and :func:`training_record` for which
    Boosters have one. Per-feature sums over the kept splits: :func:`training_report`.
    """
    return training_record(booster).splits.copy()


def training_report(booster: xgboost.Booster) -> ImportanceReport:
    """The unbiased importance gathered while :func:`train` built ``booster``.

    Parameters
    ----------
    booster : xgboost.Booster
        The very object :func:`train` returned (see :func:`training_record`).

    Returns
    -------
    ImportanceReport
        Over the splits the model kept: ``to_frame()`` sums ``unbiased_gain`` (U at the round
        the split was made), ``biased_gain`` and ``host_gain`` per feature; ``splits`` lists
        them. No standard errors (a training run has no jackknife blocks).
    """
    record = training_record(booster)
    kept = record.splits[record.splits["kept"].astype(bool)].reset_index(drop=True)
    return ImportanceReport(kept, record.feature_names, host="xgboost")


def _split_table(splits: pd.DataFrame | None, names: tuple[str, ...], K: int) -> pd.DataFrame:
    if splits is None or splits.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "feature" else np.float64)
                             for c in _SPLIT_COLUMNS})
    out = splits.copy()
    out["iteration"] = out["tree"] // K
    out["feature"] = np.asarray(names, dtype=object)[out["feature_index"].to_numpy()]
    return out[list(_SPLIT_COLUMNS)].reset_index(drop=True)
