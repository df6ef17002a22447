"""LightGBM's histogram bins of the training rows, for the row counts ``path_smooth`` uses.

LightGBM smooths a child with a row count it estimates bin by bin from the hessians of the
split feature's histogram (:func:`unbiased_criteria.pruning.smoothing_counts`). The rows are
binned here as LightGBM binned them: a Dataset of the same rows with the model's binning
parameters, whose bin codes LightGBM writes out (``Dataset._dump_text``).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

import lightgbm
import numpy as np
import pandas as pd
from scipy import sparse
from unbiased_criteria.adapters.lightgbm.source import K_EPSILON, LightGBMSource

from unbiased_criteria.pruning import HistogramBins

__all__ = ["dataset_bins", "histogram_bins"]

#: the parameters that decide LightGBM's bins (and which features it keeps)
_BINNING = ("max_bin", "max_bin_by_feature", "min_data_in_bin", "bin_construct_sample_cnt",
            "data_random_seed", "use_missing", "zero_as_missing", "feature_pre_filter",
            "min_data_in_leaf", "min_sum_hessian_in_leaf", "linear_tree",
            "forcedbins_filename", "enable_bundle", "is_enable_sparse", "max_cat_threshold")

#: those of them LightGBM prints as 1 / 0 but reads as true / false only
_FLAGS = frozenset({"use_missing", "zero_as_missing", "feature_pre_filter", "linear_tree",
                    "enable_bundle", "is_enable_sparse"})

#: LightGBM's kSparseThreshold: a most frequent bin other than zero's below this share of
#: the rows is not used as the most frequent one
_SPARSE_THRESHOLD = 0.7

#: LightGBM's kZeroThreshold: values within it of 0 fall in zero's bin
_ZERO = float(np.float32(1e-35))


def _codes(dataset: lightgbm.Dataset, n_rows: int) -> np.ndarray | None:
    """Every row's bin of every feature, as LightGBM's Dataset holds it (0 for a feature it
    dropped); None when the text does not read as one bin of each feature per row."""
    fd, path = tempfile.mkstemp(suffix=".txt")
    os.close(fd)
    try:
        dataset._dump_text(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    finally:
        os.remove(path)
    # the last n_rows lines are the rows, "b0, b1, ..., " ("NA" for a dropped feature);
    # parsed by numpy in one pass (no Python object per entry)
    body = "\n".join(lines[len(lines) - n_rows:]).replace("NA", "0").rstrip().rstrip(",")
    try:
        codes = np.fromstring(body, dtype=np.int32, sep=",")
    except ValueError:  # text that is not numbers
        return None
    n_bins = np.array([dataset.feature_num_bin(j) for j in range(dataset.num_feature())])
    # the text is LightGBM's debugging format: a version that writes it otherwise is told
    if codes.size != n_rows * n_bins.size:
        return None
    codes = codes.reshape(n_rows, -1)
    return codes if ((codes >= 0) & (codes < np.maximum(n_bins, 1))).all() else None


def _nonnegative(X: Any, n_features: int) -> np.ndarray:
    """Per feature: no value below zero's bin (zero's bin is then LightGBM's bin 0)."""
    if isinstance(X, pd.DataFrame):
        out = np.ones(n_features, dtype=bool)
        for j in range(n_features):
            col = X.iloc[:, j]
            if not isinstance(col.dtype, pd.CategoricalDtype):
                out[j] = not bool((col.to_numpy(dtype=np.float64, na_value=np.nan) < -_ZERO).any())
        return out
    if sparse.issparse(X):  # the stored values' least per column, NaN left out (min keeps it)
        csc = sparse.csc_matrix(X)
        low = np.zeros(max(n_features, csc.shape[1]))  # absent entries are 0
        np.minimum.at(low, np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr)),
                      np.nan_to_num(csc.data, nan=0.0))
        return low[:n_features] >= -_ZERO
    with np.errstate(invalid="ignore"):
        return ~(np.asarray(X, dtype=np.float64) < -_ZERO).any(axis=0)


def dataset_bins(dataset: lightgbm.Dataset, X: Any) -> HistogramBins | None:
    """The bins of the constructed ``dataset`` made from the raw rows ``X``.

    ``right_when_forward`` marks the features whose most frequent bin is the first (LightGBM
    then leaves that bin out of its histogram, and a split that sends NaN right counts its
    right child) or that have at most two bins (searched from the right only).
    """
    n_rows = int(dataset.num_data())
    codes = _codes(dataset, n_rows)
    if codes is None:
        warnings.warn(
            "LightGBM's text of the training Dataset (Dataset._dump_text, a debugging format) "
            f"does not read as its bins in LightGBM {lightgbm.__version__}: path_smooth "
            "smooths new leaves with their row counts instead of LightGBM's estimates from "
            "the hessians (refit leaves may differ slightly from LightGBM's)", UserWarning,
            stacklevel=2)
        return None
    n_features = codes.shape[1]
    first = np.zeros(n_features, dtype=bool)
    nonnegative = _nonnegative(X, n_features)
    for j in range(n_features):
        count = np.bincount(codes[:, j])
        top = int(np.argmax(count))
        # LightGBM's most frequent bin is zero's (the first where no value is below it)
        # unless another bin holds most rows
        first[j] = (top == 0) if count[top] >= _SPARSE_THRESHOLD * n_rows else nonnegative[j]
        first[j] |= dataset.feature_num_bin(j) <= 2
    return HistogramBins(codes=codes, right_when_forward=first,
                         hessian_epsilon=2 * K_EPSILON)


def histogram_bins(X: Any, source: LightGBMSource, pandas_categorical: list | None
                   ) -> HistogramBins | None:
    """LightGBM's bins of the training rows ``X`` (already checked) for the model ``source``:
    a Dataset of ``X`` with the model's binning parameters (:func:`dataset_bins`)."""
    params = {k: source.params[k] for k in _BINNING if source.params.get(k, "") != ""}
    params.update({k: source.flag(k) for k in _FLAGS & params.keys()})
    categorical = [int(c) for c in source.param("categorical_feature").split(",")
                   if c.strip().lstrip("-").isdigit()]
    dataset = lightgbm.Dataset(X, params={**params, "verbose": -1}, free_raw_data=True,
                               categorical_feature=categorical or "auto")
    if isinstance(X, pd.DataFrame) and pandas_categorical is not None:
        dataset.pandas_categorical = pandas_categorical  # codes as in training
    return dataset_bins(dataset.construct(), X)
