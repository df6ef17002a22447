"""What a training-hook run leaves for its model: every scored split, its jackknife, the names.

The importance of a training run is the sum of U over *every* split scored, before the
pruning decision (kept or not): a split is kept because its U was high on the very held-out
rows that measured it, so the kept splits' U alone is a selected sample, biased upward (the
winner's curse: continuous noise features then outrank informative ones). Each U is unbiased
for its split's gain whatever is done with the split afterwards, so their sum is too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .boosting import BoostResult
from .importance import stack_replicates
from .report import ImportanceReport

__all__ = ["TrainingRecord", "SPLIT_COLUMNS"]

#: columns of :attr:`TrainingRecord.splits`, in order
SPLIT_COLUMNS = ("iteration", "tree", "class", "node", "depth", "feature_index", "feature",
                 "threshold", "n_train", "n_valid", "k", "biased_gain", "unbiased_gain",
                 "host_gain", "usable", "kept")


@dataclass(frozen=True)
class TrainingRecord:
    """Every split a training run scored, with its jackknife replicates and the feature names.

    Attributes
    ----------
    splits : pandas.DataFrame
        One row per split the host made, before pruning (columns :data:`SPLIT_COLUMNS`):
        ``iteration``, ``tree`` (index in the returned model), ``class``, ``node`` (the host's
        node id in the tree as grown), ``depth``, ``feature_index``, ``feature``,
        ``threshold``, ``n_train`` / ``n_valid`` (rows that built it / held-out rows reaching
        it), ``k``, ``biased_gain`` (B on the rows that built it), ``unbiased_gain`` (U on the
        held-out rows, at that round's gradients), ``host_gain``, ``usable`` (``k >= min_k``)
        and ``kept`` (the split is in the returned model). Only the returned model's trees.
    jackknife : ndarray (n_splits, n_blocks) or None
        Each split's U with one block of training rows left out of the held-out rows (blocks
        fixed for the whole run); None when the run had ``n_blocks < 2``.
    feature_names : tuple of str
    scored : bool
        False when nothing could be scored (scoring off, no held-out rows): importances NaN.
    holdout_fraction : float
        The share of the training rows held out of each round's trees (0: every tree was
        grown on all of them).
    """

    splits: pd.DataFrame
    jackknife: np.ndarray | None
    feature_names: tuple[str, ...]
    scored: bool = True
    holdout_fraction: float = 0.0

    @classmethod
    def from_result(cls, result: BoostResult, n_trees: int, n_outputs: int,
                    feature_names, n_blocks: int = 0) -> TrainingRecord:
        """The record of the first ``n_trees`` trees of ``result`` (``n_outputs`` per round);
        ``n_blocks``: the run's jackknife blocks."""
        names = tuple(str(f) for f in feature_names)
        if result.splits is None or result.splits.empty:
            splits = pd.DataFrame({c: pd.Series(dtype=object if c == "feature" else np.float64)
                                   for c in SPLIT_COLUMNS})
            # scored, but the host made no split: every replicate is 0 (std_error 0, not NaN)
            jack = stack_replicates([], n_blocks) if result.splits is not None else None
            return cls(splits, jack, names, scored=result.splits is not None,
                       holdout_fraction=result.holdout_fraction)
        inside = (result.splits["tree"] < n_trees).to_numpy()
        out = result.splits.loc[inside].reset_index(drop=True)
        out["iteration"] = (out["tree"] // n_outputs).astype(np.int64)
        out["feature"] = np.asarray(names, dtype=object)[out["feature_index"].to_numpy()]
        jack = None if result.jackknife is None else result.jackknife[inside]
        return cls(out[list(SPLIT_COLUMNS)], jack, names,
                   holdout_fraction=result.holdout_fraction)

    def importances(self) -> np.ndarray:
        """Per feature, the sum of U over every scored split (kept or not); NaN for every
        feature when nothing could be scored, 0 when scoring found no split."""
        out = np.zeros(len(self.feature_names))
        if not self.scored:
            return np.full_like(out, np.nan)
        if self.splits.empty:
            return out
        np.add.at(out, self.splits["feature_index"].to_numpy(dtype=np.int64),
                  self.splits["unbiased_gain"].to_numpy(dtype=np.float64))
        return out

    def report(self, host: str) -> ImportanceReport:
        """:class:`ImportanceReport` over every scored split, with the run's jackknife.

        Raises
        ------
        ValueError
            Nothing was scored (``scored`` False): an empty table would read as U = 0 for
            every feature, the report of a host that made no split.
        """
        if not self.scored:
            raise ValueError(
                "no split was scored during training (pruning off or no held-out rows: "
                "prune_threshold=None or holdout_fraction=0), so there is no training "
                "importance; train with held-out rows and pruning on to measure it")
        return ImportanceReport(self.splits.copy(), self.feature_names, host=host,
                                jackknife=self.jackknife)
