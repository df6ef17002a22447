"""What an adapter hands the core: a host model read into the IR, and the adapter protocol.

An adapter module (``unbiased_criteria.adapters.<host>``) provides

* ``read_model(model) -> Model``: parse a host model (Booster or fitted sklearn estimator);
  no data. Raises :class:`UnsupportedModelError` for kinds it cannot score exactly.
* ``make_router(model, read, X, argument, memory_budget=...) -> Router``: check ``X`` against
  the model (feature count, names) and route its rows through the host's own ``pred_leaf``,
  in chunks of trees.
* ``match_categories(model, read, X_train, X_valid, argument) -> X_valid`` (optional): for a
  model that routes a frame's category codes (it stores no categories), ``X_valid`` with its
  category columns coded as ``X_train``'s, matched by value, or a ``ValueError``; the core
  calls it when both frames are given. With it, ``reads_category_codes(model, read) -> bool``:
  whether ``model`` is such a model (the Dask engine decides from it, before any partition).
* ``make_objective(spec, read) -> Objective``: a host objective name (``"regression"``,
  ``"binary:logistic"``...), a canonical name or a callable, as the core's objective.
* ``write_model(model, forest, split_score=None) -> model``: a new host model of the same
  type holding ``forest``'s trees (structurally pruned), leaving ``model`` untouched;
  ``split_score``, the penalties the leaves were fit with, is kept where the host's format
  would not otherwise hold them (XGBoost's eta and lambda), ignored elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputError
from .gains import SplitScore
from .objectives import Objective
from .trees import Forest

__all__ = ["Model", "Router", "UnsupportedModelError"]


class UnsupportedModelError(InputError):
    """The model uses a feature the library cannot score exactly (DART, linear trees...).

    An :class:`~unbiased_criteria.errors.InputError`, so a ``ValueError``."""


@dataclass(frozen=True)
class Model:
    """A host model in the IR.

    Attributes
    ----------
    forest : Forest
    objective : Objective or None
        The model's loss as the host computes it; None when it was trained with a custom
        objective (the caller must then pass ``objective=``).
    split_score : SplitScore
        The host's regularisation, to recompute its gains and leaf values.
    host : str
        ``"lightgbm"``, ``"xgboost"`` or ``"sklearn"``.
    bias_from_labels : bool
        The host folded an init score into the first iteration's trees (``Tree.bias``) that
        must be recomputed from the training labels with ``objective.init_score``; their
        ``bias`` holds a data-free estimate, or NaN when none exists.
    leaf_params_unknown : bool
        The reader could not take the learning rate (``Tree.shrinkage``) and the L2 penalty
        (``split_score.l2``) from the model (an XGBoost Booster loaded from a file reports the
        host's defaults, and they do not fit its trees): the core infers both from the leaf
        values and the training rows' G, H (:mod:`unbiased_criteria.leaf_params`).
    warnings : tuple of str
        Why recomputed gains will not match the host's (bagging, GOSS...); U stays valid. They
        switch off the check of the first iteration's hessian sums and gains against the
        model's own (:func:`unbiased_criteria.host_gains.check_against_host`).
    notes : tuple of str
        What else the caller is told about the model that does not make the recomputed gains
        differ from the host's (a ``best_iteration``, a learning-rate schedule, an objective
        to pass): warned as ``warnings`` are, but the first-iteration check still runs.
    source : Any
        Whatever the adapter's writer needs from the original model.
    objective_from_labels : callable or None
        For a model whose loss is a function of its training labels (LightGBM's
        ``is_unbalance`` class weights come from the label counts), ``objective`` is None
        and ``objective_from_labels(y_train=labels)`` builds it from the (encoded) training
        labels.
    gain_only : tuple of str
        Those of ``warnings`` that only say why ``biased_gain`` on the training rows will not
        match the host's own gains (bagging, subsampling, a hook's held-out rows...): not
        shown without training rows, where nothing is compared.
    assumed : tuple of str
        Those of ``warnings`` that only say a default was assumed for a parameter the model
        does not store (a dump's): the first iteration's gains check it, so unlike the other
        warnings they do not switch the later trees' check off
        (:func:`unbiased_criteria.host_gains.later_start`).
    pruned_on : tuple of str
        Sketches of the held-out row sets whose ``U`` pruned the model
        (:func:`unbiased_criteria.row_sets.sketch`), kept with the model by the adapter's
        writer: ``U`` on those rows again (or on a part of them) is biased upwards.
    init_score_unseen : bool
        The host adds an init score to its first trees unless training started from given
        scores (LightGBM's ``boost_from_average`` and a Dataset ``init_score``), and these
        hold none: either the init score was 0, or the model was trained from scores it does
        not keep. The core tells the two apart from the training labels.
    written_trees : int or None
        How many of the first trees this library wrote (pruned, refit or grown), where the
        model tells (XGBoost keeps the count with the parameters it stores); None where it
        does not. Trees after them were added by training continued from the model, with
        the host's own parameters, and are checked as any host model's trees
        (:func:`unbiased_criteria.host_gains.later_start`).
    class_weight : dict, "balanced" or None
        A scikit-learn classifier's ``class_weight`` (keyed by its labels), which multiplied
        its training weights: the core multiplies the training and held-out rows' weights by
        it (:func:`unbiased_criteria.validation.class_weights`).
    """

    forest: Forest
    objective: Objective | None
    split_score: SplitScore
    host: str
    bias_from_labels: bool = False
    leaf_params_unknown: bool = False
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    source: Any = field(default=None, repr=False)
    objective_from_labels: Callable[..., Objective] | None = field(default=None, repr=False)
    class_weight: Any = None
    init_score_unseen: bool = False
    pruned_on: tuple[str, ...] = ()
    gain_only: tuple[str, ...] = ()
    assumed: tuple[str, ...] = ()
    written_trees: int | None = None

    @property
    def messages(self) -> tuple[str, ...]:
        """Everything the reader says: ``warnings``, then ``notes``."""
        return self.warnings + self.notes


@dataclass(frozen=True)
class Router:
    """Routes one fixed set of rows through the host's trees.

    ``leaf_nodes(start, stop)`` returns the IR leaf node id of every row in trees
    ``start..stop-1`` as an int32 array ``(n_rows, stop - start)``; ``chunk`` is the number of
    trees per call that keeps that array within the memory budget. ``near_threshold``: rows
    with a value within the printed precision of a threshold (dumped models only, where the
    model the dump came from may route them differently). ``histogram_bins``: where the host
    smooths leaves with row counts it estimates from its histogram bins (LightGBM's
    ``path_smooth``), a call that bins these rows as the host does
    (:class:`unbiased_criteria.pruning.HistogramBins`); None where the router cannot.
    ``feature_values(j)``, where the adapter offers it: the rows' values of numeric feature
    ``j`` as the host compares them with its thresholds (float64 holding the host's rounding,
    NaN = missing), read on demand (:func:`unbiased_criteria.host_gains.comparable_gains`:
    ties at a threshold).
    """

    n_rows: int
    leaf_nodes: Callable[[int, int], np.ndarray]
    chunk: int
    near_threshold: int = 0
    histogram_bins: Callable[[], Any] | None = None
    feature_values: Callable[[int], np.ndarray] | None = None

    def chunks(self, n_trees: int):
        """Yield ``(start, stop, leaf_nodes)`` over all trees, ``chunk`` trees at a time."""
        for start in range(0, n_trees, self.chunk):
            stop = min(start + self.chunk, n_trees)
            yield start, stop, self.leaf_nodes(start, stop)


def chunk_size(n_rows: int, n_trees: int, memory_budget: int = 512 * 2**20) -> int:
    """Trees per routing call so that an int32 ``(n_rows, chunk)`` array fits the budget."""
    return int(max(1, min(n_trees, memory_budget // max(4 * n_rows, 1))))


#: bytes of a host's leaf ids per routing call at most: the hosts' ``pred_leaf`` outputs and
#: the copies their Python packages return are fresh allocations on every call; below glibc's
#: largest mmap threshold (32 MiB) they come back from the heap call after call instead of
#: fresh pages to fault in (post-hoc, one thread, 100 trees, 300k held-out rows: XGBoost
#: 58k -> 24k minor faults, CPU -8%; LightGBM 1.5-1.8 s -> 0.7-0.8 s of CPU) ...
HOST_CALL_BYTES = 24 * 2**20
#: ... but never fewer trees per call than this: each call reads every row again, and the
#: replay reads the held-out rows in random order once per call (XGBoost at 1M rows, 3 trees
#: per call: CPU +20% against 6; LightGBM, 5 trees per call: +30% against 16)
MIN_HOST_CALL_TREES = 16


def host_call_trees(n_rows: int, id_bytes: int) -> int:
    """Most trees per host routing call whose ``id_bytes``-byte leaf ids over ``n_rows`` rows
    stay within :data:`HOST_CALL_BYTES`, or :data:`MIN_HOST_CALL_TREES` if more."""
    return max(HOST_CALL_BYTES // max(id_bytes * n_rows, 1), MIN_HOST_CALL_TREES)
