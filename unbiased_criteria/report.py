"""The importance report: one row per split, summed per feature."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from .significance import check_selection, significant

__all__ = ["ImportanceReport"]

_SUMMED = ["unbiased_gain", "biased_gain", "host_gain"]


def _is_positive_int(value) -> bool:
    return (not isinstance(value, bool) and isinstance(value, int | np.integer)
            and value >= 1)


def _check_top(top) -> None:
    if top is not None and not _is_positive_int(top):
        raise ValueError(f"top: expected a positive integer or None, got {top!r}")


def _draw_literally(texts) -> None:
    """Draw each of ``texts`` (matplotlib Text objects) as its characters.

    Feature names are data, not markup: matplotlib reads text between ``$`` signs as
    mathtext ('US$_min / US$_max' was drawn with subscripts, 'gross_$_net_$' made ``savefig``
    raise) and, under ``rcParams["text.usetex"]``, hands text to LaTeX, where ``_``, ``%``,
    ``&`` and ``#`` are markup too.
    """
    for text in texts:
        text.set_parse_math(False)
        text.set_usetex(False)


def _legend(ax, handles: list, labels: list[str], **kwargs) -> None:
    """A legend of exactly these handles and labels, the labels drawn as written.

    Given explicitly: a legend built from the artists' own labels leaves out those starting
    with ``_`` (matplotlib's mark of a private artist), and a feature named ``_signal`` was
    drawn in a colour the legend never named.
    """
    legend = ax.legend(handles, labels, **kwargs)
    _draw_literally(legend.get_texts())


def _check_max_points(max_points) -> None:
    # 0 drew an empty plot without a word; -5, 2.5 or None failed inside numpy
    if not _is_positive_int(max_points):
        raise ValueError(f"max_points: expected a positive integer, got {max_points!r}")


class ImportanceReport:
    """Unbiased and biased gain of every split of a model, and their sums per feature.

    Attributes
    ----------
    splits : pandas.DataFrame
        One row per split: ``tree, node, depth, feature, threshold, n_train, n_valid, k,
        biased_gain, unbiased_gain, host_gain`` plus ``feature_index, sum_hessian,
        host_hessian, host_count, usable`` (``usable`` is False, and U set to 0, where
        ``k < min_k`` or where the drawn held-out rows of the node or a child carry
        (practically) no curvature, :func:`~unbiased_criteria.gains.has_curvature`: zero
        weight, ``0/0``, or hessians that vanish where a model is confidently wrong).
    feature_names : list of str
    rows_near_threshold : dict of str to int
        Dumped models: rows of ``X_train`` / ``X_valid`` with a value within the printed
        precision of a threshold (the original model may route them differently); empty
        where it does not apply.
    g_source : str
        Where the gradient sums G of :func:`~unbiased_criteria.unbiased_importance` came
        from: ``"training rows"``, ``"model"`` (validation-only mode, the sums the model
        stores, checked against its split gains) or ``"held-out halves"`` (validation-only
        mode where the model cannot give them, warned); ``""`` where not recorded.
    """

    def __init__(self, splits: pd.DataFrame, feature_names, *, host: str = "",
                 jackknife: np.ndarray | None = None):
        self.splits = splits
        self.rows_near_threshold: dict[str, int] = {}
        self.g_source = ""
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
        np.add.at(per_feature, self.splits["feature_index"].to_numpy(np.int64),
                  self.jackknife)
        dev = per_feature - per_feature.mean(axis=1, keepdims=True)
        se = np.sqrt((B - 1) / B * (dev**2).sum(axis=1))
        if not np.isfinite(se).all():  # the core gives finite replicates; a NaN is a bug
            raise ValueError("the jackknife replicates contain NaN or infinite values")
        return pd.Series(se, index=index, name="std_error")

    def select(self, alpha: float = 0.05, correction: str | None = None) -> list[str]:
        """Features whose unbiased importance is significantly above 0.

        One-sided test of each feature at level ``alpha``: ``unbiased_gain / std_error``
        against Student's t with ``B - 1`` degrees of freedom (``B`` jackknife blocks).

        Parameters
        ----------
        alpha : float, default 0.05
            Level of each test, in (0, 1).
        correction : {None, "holm", "fdr_bh"}, default None
            For testing many features at once: None (no correction), ``"holm"``
            (family-wise error <= ``alpha``) or ``"fdr_bh"`` (false discovery rate
            <= ``alpha``); see :func:`unbiased_criteria.significance.significant`.

        Returns
        -------
        list of str
            The selected features' names, in the order of :meth:`to_frame`.

        Raises
        ------
        ValueError
            For a bad ``alpha`` or ``correction``, or nothing to test: no split, no split
            with usable evidence, or no standard errors (built with ``n_blocks < 2``).
        """
        # as CrossFittedReport.select: 1.5 or NaN selected nothing, silently
        check_selection(alpha, correction)
        refusal = self._select_refusal()
        if refusal is not None:
            raise ValueError(refusal)
        frame = self.to_frame()
        keep = significant(frame["unbiased_gain"], frame["std_error"],
                           self.jackknife.shape[1] - 1, alpha, correction,
                           names=list(frame.index))
        return list(frame.index[keep])

    def cumulative_importance(self) -> pd.DataFrame:
        """Each feature's unbiased gain summed over trees ``0..t``, one row per tree ``t``.

        A feature's column is the total :meth:`to_frame` would report for the model cut after
        tree ``t`` (U of a tree depends only on the trees before it). Its slope shows where
        splits on the feature stop helping on the held-out rows: past that point a long model
        splits it on noise and its total falls. Rows run to the last tree with a split.

        Returns
        -------
        pandas.DataFrame
            Index ``tree``, one column per feature.
        """
        splits = self.splits
        n_trees = int(splits["tree"].max()) + 1 if len(splits) else 0
        table = np.zeros((n_trees, len(self.feature_names)))
        np.add.at(table, (splits["tree"].to_numpy(np.int64),
                          splits["feature_index"].to_numpy(np.int64)),
                  splits["unbiased_gain"].to_numpy(np.float64))
        return pd.DataFrame(np.cumsum(table, axis=0),
                            index=pd.RangeIndex(n_trees, name="tree"),
                            columns=pd.Index(self.feature_names, name="feature"))

    def first_trees(self, n_trees: int) -> ImportanceReport:
        """The report of the model cut after its first ``n_trees`` trees.

        U of a tree depends only on the trees before it, so this equals scoring the cut model
        with the same rows and ``random_state`` (tested), without scoring it again.
        """
        if isinstance(n_trees, bool) or not isinstance(n_trees, int | np.integer) or n_trees < 0:
            raise ValueError(f"n_trees: expected a non-negative integer, got {n_trees!r}")
        keep = (self.splits["tree"] < n_trees).to_numpy()
        return ImportanceReport(
            self.splits[keep].reset_index(drop=True), self.feature_names, host=self.host,
            jackknife=None if self.jackknife is None else self.jackknife[keep],
        )

    def plot_cumulative(self, ax=None, *, top: int = 10):
        """Lines of :meth:`cumulative_importance`: each feature's U summed up to every tree.

        The ``top`` features with the largest absolute final total are drawn, each named in
        the legend as written. A line that rises and then falls belongs to a feature that
        long models keep splitting on noise.

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        if isinstance(top, bool) or not isinstance(top, int | np.integer) or top < 1:
            raise ValueError(f"top: expected a positive integer, got {top!r}")
        table = self.cumulative_importance()
        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 4.5))
        if len(table):
            final = table.iloc[-1].abs().sort_values(ascending=False, kind="stable")
            names = [str(name) for name in final.index[:top]]
            lines = [ax.plot(table.index + 1, table[name], label=label)[0]
                     for name, label in zip(final.index[:top], names)]
            _legend(ax, lines, names, title="feature", fontsize="small", loc="center left",
                    bbox_to_anchor=(1.01, 0.5))
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("trees")
        ax.set_ylabel("unbiased gain U, summed over trees")
        return ax

    def to_frame(self) -> pd.DataFrame:
        """Per-feature sums, indexed by feature name (features without splits give 0).

        Columns: ``unbiased_gain``, ``std_error`` (its block-jackknife standard error),
        ``biased_gain``, ``host_gain`` (sums over the feature's splits; the host's gain
        importance is ``host_gain``; NaN throughout where the model has no host gain, as the
        native grower's) and ``splits`` (count).
        """
        grouped = self.splits.groupby("feature_index")
        out = pd.DataFrame(index=pd.RangeIndex(len(self.feature_names)))
        for col in _SUMMED:
            out[col] = grouped[col].sum(min_count=1)
        out[_SUMMED] = out[_SUMMED].fillna(0.0)
        if len(self.splits) and self.splits["host_gain"].isna().all():
            out["host_gain"] = np.nan  # no host gain at all (the native grower's): not 0
        out["splits"] = grouped.size().reindex(out.index, fill_value=0).astype(np.int64)
        out.index = pd.Index(self.feature_names, name="feature")
        out.insert(1, "std_error", self.std_error())
        return out

    def _has_std_error(self) -> bool:
        return self.jackknife is not None and self.jackknife.shape[1] >= 2

    def _select_refusal(self) -> str | None:
        """Why :meth:`select` has nothing to test, or None when it has."""
        if len(self.splits) == 0:
            return "select() has nothing to test: the model has no splits"
        if "usable" in self.splits and not self.splits["usable"].any():
            return ("select() has nothing to test: no split had usable evidence (every "
                    "unbiased_gain is 0: a split has fewer than min_k held-out rows in a "
                    "child, or only rows of weight 0 among a node's drawn rows, or rows "
                    "of near-zero hessian: a model confidently wrong on them); pass more "
                    "held-out rows of positive weight, or a smaller min_k")
        if not self._has_std_error():
            return "select() needs standard errors: build the report with n_blocks >= 2"
        return None

    def _can_select(self) -> bool:
        """Whether :meth:`select` has something to test (else it raises, saying why)."""
        return self._select_refusal() is None

    def plot(self, ax=None, *, normalize: bool = False, top: int | None = 20,
             alpha: float = 0.05, title: str | None = None):
        """Bar chart of the unbiased gain next to the biased gain, sorted by unbiased gain.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw into these axes; by default a new figure whose height fits the bars shown.
        normalize : bool
            Divide each column by its sum of absolute values over all features (shares, as
            hosts show).
        top : int or None
            Show the ``top`` features with the largest unbiased gain (default 20); None shows
            every feature. The title says how many are shown of how many.
        alpha : float
            When the report has standard errors, the features :meth:`select` picks at this
            level are marked with ``*`` after their name.
        title : str, optional
            Title (default: the host and "unbiased vs biased gain"), matplotlib text as any
            title (``$...$`` is mathtext). The feature names are drawn as written.

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        _check_top(top)
        full = self.to_frame()
        frame = full[["unbiased_gain", "biased_gain"]]
        err = full["std_error"]
        if normalize:
            scale = frame.abs().sum().replace(0, 1)
            frame = frame / scale
            err = err / scale["unbiased_gain"]
        # stable sort: ties keep the features' order
        order = np.argsort(-full["unbiased_gain"].to_numpy(), kind="stable")
        n_all = len(order)
        if top is not None:
            order = order[:top]
        frame, err = frame.iloc[order], err.iloc[order]
        has_se = self._has_std_error()
        # no split, or none with usable evidence: nothing is selected, nothing marked
        selected = set(self.select(alpha)) if self._can_select() else set()
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.3 * len(frame) + 1.8))
        y = np.arange(len(frame))
        xerr = 2 * err.to_numpy() if has_se else None
        ax.barh(y - 0.2, frame["unbiased_gain"], height=0.4, xerr=xerr, capsize=3,
                label="unbiased gain (±2 SE)" if has_se else "unbiased gain")
        ax.barh(y + 0.2, frame["biased_gain"], height=0.4, label="biased gain", alpha=0.6)
        labels = [f"{name} *" if name in selected else str(name) for name in frame.index]
        # the names as written, not as mathtext or LaTeX
        ax.set_yticks(y, labels, parse_math=False, usetex=False)
        for tick, name in zip(ax.get_yticklabels(), frame.index):
            if name in selected:
                tick.set_fontweight("bold")
        ax.axvline(0, color="black", lw=0.8)
        ax.set_ylim(len(frame) - 0.5, -0.5)  # largest on top
        ax.set_xlabel("share of total" if normalize else "sum of gains over splits")
        if title is None:
            title = f"{self.host}: unbiased vs biased gain" if self.host else \
                "unbiased vs biased gain"
        notes = []
        if len(frame) < n_all:
            notes.append(f"top {len(frame)} of {n_all} features")
        if self._can_select():
            notes.append(f"* significantly above 0 (alpha {alpha:g})")
        ax.set_title(title + ("\n" + "; ".join(notes) if notes else ""), fontsize="medium")
        ax.legend(loc="best", fontsize="small")
        return ax

    def plot_splits(self, ax=None, *, max_points: int = 20000, top: int | None = 20,
                    title: str | None = None):
        """Scatter of every split's biased gain B (x) against its unbiased gain U (y).

        One colour per feature; with more than ``top`` features, only the ``top`` features
        with the largest absolute unbiased importance get a colour and a legend entry, the
        others are grey ("other"). The line ``U = 0`` marks where a split stops helping on the
        held-out rows.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw into these axes; by default a new figure.
        max_points : int
            Draw at most this many splits (a positive integer; default 20000): with more, an
            even sample of them, in the order of ``splits``.
        top : int or None
            Features that get a colour and a legend entry (a positive integer, default 20;
            None: every feature).
        title : str, optional
            Title (default: the host and "every split, B vs U"), matplotlib text as any
            title (``$...$`` is mathtext). The feature names, in the legend, are drawn as
            written, a name starting with ``_`` included.

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        _check_top(top)
        _check_max_points(max_points)
        splits = self.splits
        if len(splits) > max_points:
            splits = splits.iloc[np.linspace(0, len(splits) - 1, max_points).astype(int)]
        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 4.5))
        totals = self.splits.groupby("feature", sort=False)["unbiased_gain"].sum()
        labelled = list(totals.abs().sort_values(ascending=False, kind="stable").index[:top])
        handles, labels = [], []
        for i, feature in enumerate(labelled):
            group = splits[splits["feature"] == feature]
            labels.append(str(feature))
            # 10 colours, then the same colours as triangles: 20 features stay distinct
            handles.append(ax.scatter(
                group["biased_gain"], group["unbiased_gain"], s=8, alpha=0.6,
                color=f"C{i % 10}", marker="o^sD"[(i // 10) % 4], label=labels[-1]))
        rest = splits[~splits["feature"].isin(labelled)]
        if len(rest):
            labels.append(f"other ({len(totals) - len(labelled)} features)")
            handles.append(ax.scatter(rest["biased_gain"], rest["unbiased_gain"], s=6,
                                      alpha=0.4, color="grey", label=labels[-1]))
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("biased gain B (training rows)")
        ax.set_ylabel("unbiased gain U (held-out rows)")
        if title is None:
            title = f"{self.host}: every split, B vs U" if self.host else "every split, B vs U"
        ax.set_title(title, fontsize="medium")
        if len(splits):  # no split, no point: matplotlib warns of a legend without entries
            _legend(ax, handles, labels, title="feature", fontsize="small", markerscale=2,
                    loc="center left", bbox_to_anchor=(1.01, 0.5))
        return ax

    def _title(self) -> str:
        return f"ImportanceReport({self.host}, {len(self.splits)} splits)"

    def __repr__(self) -> str:
        return f"{self._title()}\n{self.to_frame()}"

    def _repr_html_(self) -> str:
        """The per-feature table as a notebook shows a DataFrame, under the report's title."""
        return f"<p><code>{html.escape(self._title())}</code></p>{self.to_frame()._repr_html_()}"
