"""The importance report: one row per split, summed per feature."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["ImportanceReport"]

_SUMMED = ["unbiased_gain", "biased_gain", "host_gain"]


class ImportanceReport:
    """Unbiased and biased gain of every split of a model, and their sums per feature.

    Attributes
    ----------
    splits : pandas.DataFrame
        One row per split: ``tree, node, depth, feature, threshold, n_train, n_valid, k,
        biased_gain, unbiased_gain, host_gain`` plus ``feature_index, sum_hessian,
        host_hessian, host_count, usable`` (``usable`` is False where ``k < min_k`` and U was
        set to 0).
    feature_names : list of str
    """

    def __init__(self, splits: pd.DataFrame, feature_names, *, host: str = ""):
        self.splits = splits
        self.feature_names = list(feature_names)
        self.host = host

    def to_frame(self) -> pd.DataFrame:
        """Per-feature sums, indexed by feature name (features without splits give 0).

        Columns: ``unbiased_gain``, ``biased_gain``, ``host_gain`` (sums over the feature's
        splits; the host's gain importance is ``host_gain``) and ``splits`` (count).
        """
        grouped = self.splits.groupby("feature_index")
        out = pd.DataFrame(index=pd.RangeIndex(len(self.feature_names)))
        for col in _SUMMED:
            out[col] = grouped[col].sum(min_count=1)
        out[_SUMMED] = out[_SUMMED].fillna(0.0)
        out["splits"] = grouped.size().reindex(out.index, fill_value=0).astype(np.int64)
        out.index = pd.Index(self.feature_names, name="feature")
        return out

    def plot(self, ax=None, *, normalize: bool = False):
        """Bar chart of the unbiased gain next to the biased gain per feature.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        normalize : bool
            Divide each column by its sum of absolute values (shares, as hosts show).

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        frame = self.to_frame()[["unbiased_gain", "biased_gain"]]
        if normalize:
            frame = frame / frame.abs().sum().replace(0, 1)
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.4 * len(frame) + 1.5))
        y = np.arange(len(frame))
        ax.barh(y - 0.2, frame["unbiased_gain"], height=0.4, label="unbiased gain")
        ax.barh(y + 0.2, frame["biased_gain"], height=0.4, label="biased gain", alpha=0.6)
        ax.set_yticks(y, frame.index)
        ax.axvline(0, color="black", lw=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("share of total" if normalize else "sum of gains over splits")
        ax.legend()
        return ax

    def __repr__(self) -> str:
        return f"ImportanceReport({self.host}, {len(self.splits)} splits)\n{self.to_frame()}"
