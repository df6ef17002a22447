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

    def __init__(self, splits: pd.DataFrame, feature_names, *, host: str = "",
                 jackknife: np.ndarray | None = None):
        self.splits = splits
        self.feature_names = list(feature_names)
        self.host = host
        # (n_splits, n_blocks): each split's U with one block of held-out rows left out
        self.jackknife = jackknife

    def std_error(self) -> pd.Series:
        """Block-jackknife standard error of each feature's unbiased importance.

        The held-out rows are cut into ``B`` random blocks; ``U`` of every split is recomputed
        with each block left out of every ratio (same draws, no extra replay), summed per
        feature, and ``SE = sqrt((B-1)/B * sum_b (F_(b) - mean F_(.))^2)``. It reflects the
        sampling of the held-out rows, the k-draws included; not that of the training rows.
        A replicate is the same estimator on the remaining rows: a split that leaving block
        ``b`` out leaves without a held-out row of non-zero hessian in one of its ratios (e.g.
        all its drawn rows with weight > 0 are in block ``b``) counts 0 in replicate ``b``,
        as an unusable split does. So every replicate is finite and every feature keeps
        ``B - 1`` degrees of freedom. NaN when the report was made with ``n_blocks < 2``.
        """
        index = pd.Index(self.feature_names, name="feature")
        if self.jackknife is None or self.jackknife.shape[1] < 2:
            return pd.Series(np.nan, index=index, name="std_error")
        B = self.jackknife.shape[1]
        per_feature = np.zeros((len(self.feature_names), B))
        np.add.at(per_feature, self.splits["feature_index"].to_numpy(), self.jackknife)
        dev = per_feature - per_feature.mean(axis=1, keepdims=True)
        se = np.sqrt((B - 1) / B * (dev**2).sum(axis=1))
        if not np.isfinite(se).all():  # the core gives finite replicates; a NaN is a bug
            raise ValueError("the jackknife replicates contain NaN or infinite values")
        return pd.Series(se, index=index, name="std_error")

    def select(self, alpha: float = 0.05) -> list[str]:
        """Features whose unbiased importance is significantly above 0.

        One-sided test of each feature at level ``alpha``: ``unbiased_gain / std_error``
        against Student's t with ``B - 1`` degrees of freedom (``B`` jackknife blocks). No
        correction for testing several features.
        """
        from scipy.stats import t as student_t

        if self.jackknife is None or self.jackknife.shape[1] < 2:
            raise ValueError("select() needs standard errors: build the report with n_blocks >= 2")
        frame = self.to_frame()
        crit = student_t.ppf(1 - alpha, self.jackknife.shape[1] - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = frame["unbiased_gain"] / frame["std_error"]
        return list(frame.index[(z > crit).to_numpy()])

    def to_frame(self) -> pd.DataFrame:
        """Per-feature sums, indexed by feature name (features without splits give 0).

        Columns: ``unbiased_gain``, ``std_error`` (its block-jackknife standard error),
        ``biased_gain``, ``host_gain`` (sums over the feature's splits; the host's gain
        importance is ``host_gain``) and ``splits`` (count).
        """
        grouped = self.splits.groupby("feature_index")
        out = pd.DataFrame(index=pd.RangeIndex(len(self.feature_names)))
        for col in _SUMMED:
            out[col] = grouped[col].sum(min_count=1)
        out[_SUMMED] = out[_SUMMED].fillna(0.0)
        out["splits"] = grouped.size().reindex(out.index, fill_value=0).astype(np.int64)
        out.index = pd.Index(self.feature_names, name="feature")
        out.insert(1, "std_error", self.std_error())
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

        full = self.to_frame()
        frame = full[["unbiased_gain", "biased_gain"]]
        err = full["std_error"]
        if normalize:
            scale = frame.abs().sum().replace(0, 1)
            frame = frame / scale
            err = err / scale["unbiased_gain"]
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.4 * len(frame) + 1.5))
        y = np.arange(len(frame))
        xerr = None if err.isna().all() else 2 * err.to_numpy()
        ax.barh(y - 0.2, frame["unbiased_gain"], height=0.4, xerr=xerr, capsize=3,
                label="unbiased gain (±2 SE)" if xerr is not None else "unbiased gain")
        ax.barh(y + 0.2, frame["biased_gain"], height=0.4, label="biased gain", alpha=0.6)
        ax.set_yticks(y, frame.index)
        ax.axvline(0, color="black", lw=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("share of total" if normalize else "sum of gains over splits")
        ax.legend()
        return ax

    def plot_splits(self, ax=None, *, max_points: int = 20000):
        """Scatter of every split's biased gain B (x) against its unbiased gain U (y).

        One colour per feature; the line ``U = 0`` marks where a split stops helping on the
        held-out rows. At most ``max_points`` splits are drawn (an even sample of them).

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        splits = self.splits
        if len(splits) > max_points:
            splits = splits.iloc[np.linspace(0, len(splits) - 1, max_points).astype(int)]
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4.5))
        for feature, group in splits.groupby("feature", sort=False):
            ax.scatter(group["biased_gain"], group["unbiased_gain"], s=8, alpha=0.6,
                       label=str(feature))
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("biased gain B (training rows)")
        ax.set_ylabel("unbiased gain U (held-out rows)")
        if splits["feature"].nunique() <= 20:
            ax.legend(title="feature", fontsize="small", markerscale=2)
        return ax

    def __repr__(self) -> str:
        return f"ImportanceReport({self.host}, {len(self.splits)} splits)\n{self.to_frame()}"
