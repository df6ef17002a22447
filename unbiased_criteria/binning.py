"""Feature binning for the native grower: quantile bins within a bin budget, and a NaN bin.

Features are read as float32 (as XGBoost reads them, and as the grower's exported models
compare them). Each feature gets ascending float32 upper bounds ``u_0 < u_1 < ... < u_{m-1} =
+inf``: a value ``v`` falls in the first bin ``b`` with ``v <= u_b``. With at most
``max_bin - 1`` distinct values every value has its own bin and a bound lies halfway between
neighbours (LightGBM's rule); with more, bounds are cut at quantiles of the values (row
counts), so each bin holds about ``n / (max_bin - 1)`` rows. Missing values (NaN) go to a bin
of their own, the last column of the code table, whatever the feature's bin count.

A split "left iff bin <= b" is then the rule ``v <= u_b`` on the raw value: the threshold the
trees store is ``u_b``.

A categorical feature holds non-negative integer codes (NaN missing); each code seen in
training gets a bin of its own (at most ``max_bin - 1`` codes), in ascending order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BinMapper", "fit_bins"]


def _midpoints(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """float32 bounds ``m`` with ``lo <= m < hi`` (halfway, rounded to float32)."""
    mid = ((lo.astype(np.float64) + hi.astype(np.float64)) / 2.0).astype(np.float32)
    # rounding may land on hi (adjacent float32 values): lo is then the bound
    return np.where(mid < hi, mid, lo).astype(np.float32)


def _feature_bounds(x: np.ndarray, max_bin: int) -> np.ndarray:
    """Upper bounds of one feature's value bins (float32, last is +inf)."""
    x = x[~np.isnan(x)]
    if x.size == 0:
        return np.array([np.inf], dtype=np.float32)
    values, counts = np.unique(x, return_counts=True)
    n_value_bins = max_bin - 1
    if values.size <= n_value_bins:
        cut = np.arange(values.size - 1)  # a bound after every distinct value but the last
    else:
        # cut after the distinct value where the cumulative count crosses each quantile
        cum = np.cumsum(counts)
        targets = x.size * np.arange(1, n_value_bins) / n_value_bins
        cut = np.unique(np.searchsorted(cum, targets, side="left"))
        cut = cut[cut < values.size - 1]
    bounds = _midpoints(values[cut], values[cut + 1])
    return np.concatenate([bounds, np.array([np.inf], dtype=np.float32)])


@dataclass(frozen=True)
class BinMapper:
    """Bins of every feature, fitted by :func:`fit_bins`.

    Attributes
    ----------
    bounds : tuple of float32 arrays
        Upper bounds of each feature's value bins (the last is +inf).
    n_bins : int array (n_features,)
        Value bins of each feature (without the NaN bin).
    width : int
        Columns of the code table: ``max(n_bins) + 1``; column ``width - 1`` is the NaN bin.
    categorical : bool array (n_features,)
    categories : tuple
        Per feature, the sorted codes of a categorical feature (bin ``b`` holds code
        ``categories[f][b]``; any other value is binned as NaN), None for a numeric one.
    """

    bounds: tuple[np.ndarray, ...]
    n_bins: np.ndarray
    width: int
    categorical: np.ndarray | None = None
    categories: tuple = ()

    def __post_init__(self):
        if self.categorical is None:
            object.__setattr__(self, "categorical", np.zeros(len(self.bounds), dtype=bool))
        if not self.categories:
            object.__setattr__(self, "categories", (None,) * len(self.bounds))

    @property
    def n_features(self) -> int:
        return len(self.bounds)

    @property
    def nan_bin(self) -> int:
        return self.width - 1

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Bin code of every value of float ``X`` (n, n_features): uint8 or uint16."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have {self.n_features} columns, got shape {X.shape}")
        dtype = np.uint8 if self.width <= 256 else np.uint16
        codes = np.empty(X.shape, dtype=dtype)
        for f, bounds in enumerate(self.bounds):  # one vectorised search per feature
            col = X[:, f]
            cats = self.categories[f]
            if cats is None:
                codes[:, f] = np.where(np.isnan(col), self.nan_bin,
                                       np.searchsorted(bounds, col, side="left"))
                continue
            if cats.size == 0:  # no category seen in training: every value is missing
                codes[:, f] = self.nan_bin
                continue
            pos = np.minimum(np.searchsorted(cats, col), cats.size - 1)
            known = ~np.isnan(col) & (cats[pos] == col)
            codes[:, f] = np.where(known, pos, self.nan_bin)
        return codes

    def threshold(self, feature: int, bin_: int) -> float:
        """The value threshold of the split "left iff bin <= ``bin_``": ``v <= threshold``.

        The last bin's bound (+inf: every value left, NaN right) is written as the largest
        float32, which the hosts' model formats hold (LightGBM writes 1e300 there)."""
        bound = float(self.bounds[feature][bin_])
        return float(np.finfo(np.float32).max) if bound == np.inf else bound


def _categories(x: np.ndarray, f: int, max_bin: int) -> np.ndarray:
    x = x[~np.isnan(x)]
    if np.any(x < 0) or np.any(x != np.round(x)):
        raise ValueError(f"categorical feature {f} must hold non-negative integer codes or NaN")
    cats = np.unique(x)
    if cats.size > max_bin - 1:
        raise ValueError(f"categorical feature {f} has {cats.size} categories, more than "
                         f"max_bin - 1 = {max_bin - 1}; raise max_bin")
    return cats


def fit_bins(X: np.ndarray, max_bin: int = 255, categorical=()) -> BinMapper:
    """Fit quantile bins to float ``X`` (n, n_features); NaN is missing.

    Parameters
    ----------
    X : array (n, n_features)
        Read as float32.
    max_bin : int
        Bin budget per feature, the NaN bin included (at least 2).
    categorical : sequence of int
        Indices of the categorical features (non-negative integer codes).
    """
    if isinstance(max_bin, bool) or not isinstance(max_bin, int | np.integer) or max_bin < 2:
        raise ValueError(f"max_bin: expected an integer >= 2, got {max_bin!r}")
    if int(max_bin) > 65536:
        raise ValueError(f"max_bin: at most 65536 bins are supported, got {max_bin!r}")
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
    if np.isinf(X).any():
        raise ValueError("X contains infinite values or values beyond the float32 range "
                         "(|x| > 3.4e38, read as float32); use NaN for missing values")
    is_cat = np.zeros(X.shape[1], dtype=bool)
    is_cat[list(categorical)] = True
    categories = tuple(_categories(X[:, f], f, int(max_bin)) if is_cat[f] else None
                       for f in range(X.shape[1]))
    bounds = tuple(np.full(max(c.size, 1), np.inf, dtype=np.float32) if c is not None
                   else _feature_bounds(X[:, f], int(max_bin)) for f, c in enumerate(categories))
    n_bins = np.array([b.size for b in bounds], dtype=np.int64)
    return BinMapper(bounds=bounds, n_bins=n_bins, width=int(n_bins.max(initial=1)) + 1,
                     categorical=is_cat, categories=categories)
