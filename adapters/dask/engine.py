"""Unbiased importance and pruning on dask collections, run by dask's distributed scheduler.

Every partition stays on its worker. A task per partition routes its rows (the host's
``pred_leaf``, through the host adapter's router), replays its raw scores and returns per-node
sums (:func:`unbiased_criteria.partitioned.partition_step`); dask adds them up in a tree of
tasks, and only those small arrays reach the client, which draws the k-allocations and scores
the splits. Importance takes two rounds per chunk of trees (node counts and training sums,
then the draws); pruning one round per tree (each tree is scored at the pruned trees before
it). Without training rows (validation-only mode) the training sums are the model's own, as
in memory (:func:`unbiased_criteria.api.validation_only_sums`); where it cannot give them the
held-out partitions give the sums of a uniformly random half A and the draws of both
directions (warned).

The checks are the in-memory ones (:mod:`unbiased_criteria.api`'s helpers), fed from the
partitions: the rows' hashes summarised per partition and merged
(:class:`unbiased_criteria.row_sets.HashSummary`), the first iteration's and the later
trees' gains from the summed node sums, and while pruning the sums at the model's own
(unpruned) scores, which the training partitions keep. For a model that reads category codes
(the adapter's ``match_categories``), each held-out partition is coded as the training
frame's categories, decided from the frames' dask meta (:func:`_categories_like`).
"""

from __future__ import annotations

import importlib
import logging
import operator
import warnings
import weakref
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from unbiased_criteria.adapters.dask.inputs import (
    is_dask,
    is_xgboost_dask_result,
    partition_futures,
    unwrap_model,
)

from unbiased_criteria.api import (
    G_SOURCES,
    _child_share,
    _class_weights,
    _records_frame,
    _split_records,
    _warn_init_score_unseen,
    _warn_unusable,
    adapter_for,
    bias_objective,
    blocks_for_rows,
    reader_warnings,
    validation_only_sums,
    warn_held_out_rows,
)
from unbiased_criteria.dumps import Dump
from unbiased_criteria.gains import NodeSums, biased_gain, log_weight_sums, scale_from_log_sums
from unbiased_criteria.host_gains import (
    LATER_GAIN_RTOL,
    PRUNE_CHECK_TREES,
    _as_stored,
    _first_trees,
    _host_and_replay,
    _with_own_gains,
    check_against_host,
    check_later_gains,
    later_gains,
    later_start,
    leaves_unchanged,
    sum_later_gains,
    tie_candidates,
    with_ties,
)
from unbiased_criteria.importance import TreeScores, stack_replicates
from unbiased_criteria.model import Model, UnsupportedModelError, chunk_size
from unbiased_criteria.objectives import Objective
from unbiased_criteria.options import GainOptions, check_bool, check_memory_budget
from unbiased_criteria.partitioned import (
    add_stats,
    allocate_halves,
    draw_requests,
    halves_tree_scores,
    own_biased_gain,
    partition_step,
    request_allocation,
    start_partition,
    tree_scores,
)
from unbiased_criteria.progress import progress_bar
from unbiased_criteria.pruning import prune_tree
from unbiased_criteria.replay import resolve_bias
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.row_sets import (
    HashSummary,
    covers,
    merge_summaries,
    row_hashes,
    sketch_overlap,
    summarize_hashes,
    summary_overlap,
    summary_sketch,
)
from unbiased_criteria.validation import (
    check_labels,
    check_weight,
    encode_classes,
    training_rows_held_out,
)

__all__ = ["unbiased_importance", "prune", "uses_dask"]

log = logging.getLogger(__name__)

#: partitions' results added per reduction task
_FAN_IN = 8


def uses_dask(model, *data) -> bool:
    """Any dask collection among ``data``, or an ``xgboost.dask.train`` result."""
    return is_xgboost_dask_result(model) or any(is_dask(d) for d in data)


@dataclass(frozen=True)
class _Job:
    """What every task needs, sent to each worker once."""

    adapter: str
    model: Any
    read: Model
    objective: Objective
    classes: Any
    options: GainOptions
    memory_budget: float
    #: each class's weight, where the classifier had a class_weight
    per_class: np.ndarray | None = None
    #: the training frame's (empty) meta, whose categories each held-out partition is coded
    #: as (the adapter's ``match_categories``), where the model reads category codes and
    #: the two frames list them differently (:func:`_categories_like`)
    categories_like: pd.DataFrame | None = None


def _client():
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "dask inputs are computed on a dask.distributed cluster: create a "
            "distributed.Client (e.g. Client(LocalCluster())) before the call"
        ) from None


class _CallClient:
    """The client as one call uses it: every future it makes through :meth:`submit`,
    :meth:`map`, :meth:`compute` and :meth:`scatter` is noted (weakly: those the call drops
    are released as it goes), so that where the call fails, :meth:`release` releases those
    still held. A failed call's exception holds the frames that hold its futures (and a
    failed future's state holds the exception), so without it every partition stayed on
    the workers. Released, not cancelled: a key others hold (a persisted collection's
    partition) stays theirs. Anything else is the client's own."""

    def __init__(self) -> None:
        self._client: Any = None
        self._made: weakref.WeakSet = weakref.WeakSet()

    def using(self, client) -> _CallClient:
        self._client = client
        return self

    def _noted(self, out):
        from distributed.client import futures_of

        for future in futures_of(out):
            self._made.add(future)
        return out

    def submit(self, *args, **kwargs):
        return self._noted(self._client.submit(*args, **kwargs))

    def map(self, *args, **kwargs):
        return self._noted(self._client.map(*args, **kwargs))

    def compute(self, *args, **kwargs):
        return self._noted(self._client.compute(*args, **kwargs))

    def scatter(self, *args, **kwargs):
        return self._noted(self._client.scatter(*args, **kwargs))

    def __getattr__(self, name: str):
        return getattr(self._client, name)

    def release(self) -> None:
        """Release every future of the call still held (a failed call's): the client then
        holds what it held before the call."""
        for future in list(self._made):
            future.release()
        self._made = weakref.WeakSet()


# ---- tasks (run on the workers) ----------------------------------------------------------

def _n_rows(x) -> int:
    return int(x.shape[0])


def _log_weight_sums(y, w, classes, per_class, y_name: str) -> tuple[float, int]:
    """The partition's :func:`~unbiased_criteria.gains.log_weight_sums` of its weights as the
    model weighted its rows (times the class weights: the labels are checked when the
    partition starts)."""
    if per_class is None:
        return log_weight_sums(None if w is None else np.asarray(w, dtype=np.float64))
    by_class = per_class[encode_classes(y, classes, y_name).astype(np.int64)]
    return log_weight_sums(by_class if w is None else np.asarray(w, dtype=np.float64)
                           * by_class)


def _router(job: _Job, x, name: str):
    adapter: ModuleType = importlib.import_module(job.adapter)
    return adapter.make_router(job.model, job.read, x, name, memory_budget=job.memory_budget)


def _matched(job: _Job, x, name: str):
    """A held-out partition with its category columns coded as the training frame's, as
    in memory (the adapter's ``match_categories``: its errors too); other rows as they are.
    Not modified (the partition is shared by later tasks)."""
    if job.categories_like is None or name != "X_valid":
        return x
    adapter: ModuleType = importlib.import_module(job.adapter)
    return adapter.match_categories(job.model, job.read, job.categories_like, x, name)


def _start(job: _Job, x, y, w, names, held_out: bool, index: int, offset: int,
           half_a: int | None, hashed: bool):
    x_name, y_name, w_name = names
    x = _matched(job, x, x_name)
    router = _router(job, x, x_name)  # checks the features as in memory
    n = router.n_rows
    if job.classes is not None:
        y = encode_classes(y, job.classes, y_name)
    labels = check_labels(y, n, y_name, job.objective)
    weight = check_weight(w, n, w_name)
    if job.per_class is not None:  # as the classifier weighted its training rows
        by_class = job.per_class[labels.astype(np.int64)]
        weight = by_class if weight is None else weight * by_class
    state = start_partition(job.read, labels, weight, held_out=held_out, index=index,
                            offset=offset, options=job.options, half_a=half_a)
    stats = [np.array([n, 0 if weight is None else np.count_nonzero(weight),
                       router.feature_values is not None])]
    if not hashed:
        return state, stats
    hashes = row_hashes(x, labels)  # as in memory: the rows' values and their labels
    return state, stats, summarize_hashes(hashes)


def _step(job: _Job, state, x, x_name: str, start: int, stop: int, what: str, replaced,
          requests, keep_last: bool, index: int, keep_own: bool, own_sums: bool):
    router = _router(job, _matched(job, x, x_name), x_name)
    return partition_step(state, job.read, job.objective, router.leaf_nodes, router.chunk,
                          start, stop, what=what, replaced=replaced, requests=requests,
                          keep_last=keep_last, options=job.options, index=index,
                          keep_own=keep_own, own_sums=own_sums,
                          feature_values=router.feature_values)


# ---- the client's side ---------------------------------------------------------------------

class _Rows:
    """One row set (training or held-out) as per-partition futures on the workers: first its
    partitions and their lengths, then (:meth:`start`) each partition's state."""

    def __init__(self, client, X, y, w, names):
        self.client, self.names = client, names
        x_name, y_name, w_name = names
        x = partition_futures(client, X, x_name)
        ys = partition_futures(client, y, y_name, like=x_name, n_parts=len(x))
        ws = (partition_futures(client, w, w_name, like=x_name, n_parts=len(x))
              if w is not None else [None] * len(x))
        lengths = client.gather(client.map(_n_rows, x, pure=False))
        # empty partitions carry no rows: leave them out (the hosts refuse to route 0 rows)
        keep = [i for i, n in enumerate(lengths) if n > 0]
        if not keep:
            raise ValueError(f"{x_name} has no rows")
        self._parts, self._lengths, self.weighted = (x, ys, ws), lengths, w is not None
        self.x = [x[i] for i in keep]
        self.index = keep
        self.n_rows = int(sum(lengths))
        self.largest = int(max(lengths))
        self.job = self.states = None
        self.reads_values = False
        #: the summary of the rows' hashes, where asked for
        self.summary: HashSummary | None = None

    def weight_scale(self, classes=None, per_class: np.ndarray | None = None) -> float:
        """The curvature floor's unit (:func:`~unbiased_criteria.gains.weight_scale`) of the
        rows' weights, times the classifier's class weights where it had them, from the
        partitions' sums."""
        _, ys, ws = self._parts
        parts = [self.client.submit(_log_weight_sums, ys[i], ws[i], classes, per_class,
                                    self.names[1], pure=False) for i in self.index]
        sums = self.client.gather(parts)
        return scale_from_log_sums(sum(t for t, _ in sums), sum(c for _, c in sums))

    def start(self, job_future, held_out: bool, halves_of: GainOptions | None = None,
              hashed: bool = False) -> None:
        """Each partition's state (``held_out``: the held-out rows' rank order and jackknife
        blocks; ``halves_of``: validation-only mode, a uniformly random half A of the whole
        set); ``hashed``: the summary of the rows' hashes too (:class:`HashSummary`)."""
        client, names, self.job = self.client, self.names, job_future
        x, ys, ws = self._parts
        offsets = np.concatenate([[0], np.cumsum(self._lengths)[:-1]])
        half_a = (allocate_halves(self._lengths, halves_of) if halves_of is not None
                  else [None] * len(x))
        started = [client.submit(_start, job_future, x[i], ys[i], ws[i], names, held_out, i,
                                 int(offsets[i]),
                                 None if half_a[i] is None else int(half_a[i]), hashed,
                                 pure=False)
                   for i in self.index]
        parts = self._split(started, 3 if hashed else 2)
        self.states, info = parts[0], parts[1]
        _, nonzero, values = self.reduce(info)[0]
        #: the adapter reads the rows' feature values (the gain checks' ties at a threshold)
        self.reads_values = bool(values)
        if self.weighted and nonzero == 0:
            raise ValueError(f"{names[2]} is 0 for every row: those rows carry no evidence")
        if hashed:
            self.summary = self.reduce(parts[2], merge_summaries)

    def _split(self, results, n: int = 2):
        get = self.client.submit
        return [[get(operator.getitem, r, j, pure=False) for r in results] for j in range(n)]

    def step(self, start, stop, what, replaced=None, requests=None, keep_last=False,
             keep_own=False, own_sums=False):
        """Run :func:`partition_step` on every partition; the new states replace the old ones
        and the per-partition results' futures are returned."""
        requests = requests or [None] * len(self.x)
        results = [
            self.client.submit(_step, self.job, s, x, self.names[0], start, stop, what,
                               replaced, r, keep_last, i, keep_own, own_sums, pure=False)
            for s, x, r, i in zip(self.states, self.x, requests, self.index)
        ]
        self.states, stats = self._split(results)
        return stats

    def ties(self, states, start, stop, requests, **step) -> list[np.ndarray]:
        """The summed :func:`partition_step` ``"ties"`` of trees ``start..stop-1`` from
        ``states``, those a ``"sums"`` step started from (``step``: its arguments); the
        partitions keep their current states."""
        results = [
            self.client.submit(_step, self.job, s, x, self.names[0], start, stop, "ties",
                               step.get("replaced"), requests, step.get("keep_last", False),
                               i, step.get("keep_own", False), False, pure=False)
            for s, x, i in zip(states, self.x, self.index)
        ]
        return self.reduce(self._split(results)[1])

    def reduce(self, stats, combine=add_stats):
        """The partitions' results combined (added up) in a tree of tasks on the workers."""
        while len(stats) > 1:
            stats = [self.client.submit(combine, *stats[i:i + _FAN_IN], pure=False)
                     for i in range(0, len(stats), _FAN_IN)]
        return stats[0].result()


def _same_collection(a, b) -> bool:
    """The same dask collection (one graph): dask names a collection by its graph's token."""
    from dask.base import tokenize

    return a is b or tokenize(a) == tokenize(b)


def _read(model, objective, host_params, needed_for: str, with_train: bool):
    if isinstance(model, Dump) or isinstance(model, dict | str | list):
        raise ValueError("dumped models are not supported with dask inputs: pass the host's "
                         "model (Booster or estimator)")
    adapter = adapter_for(model)
    read = adapter.read_model(model)
    if objective is not None:
        obj = adapter.make_objective(objective, read)
    elif read.objective is None and read.objective_from_labels is not None and with_train:
        return adapter, read, None  # built from the training labels (LightGBM is_unbalance)
    elif read.objective is None:
        why = "".join(f" ({m})" for m in read.messages)
        raise ValueError(
            f"the model's objective is unknown (a custom objective) or cannot be read from "
            f"the model{why}: pass objective= (a name such as 'binary' or a callable "
            "f(y, raw_score, weight) -> (grad, hess))"
        )
    else:
        obj = read.objective
    _check_objective(obj)
    return adapter, read, obj


def _categories_like(adapter: ModuleType, model, read: Model, X_train, X_valid
                     ) -> pd.DataFrame | None:
    """For a model that reads category codes (the adapter's ``reads_category_codes``; its
    ``match_categories`` codes the held-out frame's as the training frame's in memory), the
    training frame's empty meta that each held-out partition is matched to
    (:func:`_matched`), or None where nothing is to match. Decided from the frames' dask
    meta: the column errors of ``match_categories`` (a column a category in one frame only)
    are raised here, a held-out category the training frame does not list by the partition
    that holds it.

    Raises
    ------
    ValueError
        A category column whose categories dask does not know (each partition's codes are
        positions in its own categories, which may differ from partition to partition),
        in either frame, also without training rows.
    """
    import dask.dataframe as dd
    from dask.dataframe.utils import has_known_categories

    match = getattr(adapter, "match_categories", None)
    reads_codes = getattr(adapter, "reads_category_codes", None)
    metas = {name: X._meta for name, X in (("X_train", X_train), ("X_valid", X_valid))
             if isinstance(X, dd.DataFrame)}
    with_categories = {name: [c for c in meta.columns
                              if isinstance(meta[c].dtype, pd.CategoricalDtype)]
                       for name, meta in metas.items()}
    if match is None or reads_codes is None or not any(with_categories.values()) \
            or not reads_codes(model, read):
        return None
    for name, columns in with_categories.items():
        unknown = [c for c in columns if not has_known_categories(metas[name][c])]
        if unknown:
            raise ValueError(
                f"{name}'s column {unknown[0]!r} is a dask category whose categories are "
                "unknown: the model stores no categories, so it reads category codes, and "
                "each partition's would be the positions of its own categories; give it "
                "the categories the model was trained with, in their order, before the call "
                "(.cat.set_categories([...]); .cat.as_known() lists them as the rows come)"
                + (f" (also {', '.join(repr(c) for c in unknown[1:5])})"
                   if len(unknown) > 1 else ""))
    if len(metas) < 2:  # no training frame: the held-out codes as they are, as in memory
        return None
    matched = match(model, read, metas["X_train"], metas["X_valid"], "X_valid")
    return None if matched is metas["X_valid"] else metas["X_train"]


def _check_objective(obj: Objective) -> None:
    if obj.iteration_scaled:
        raise UnsupportedModelError(
            f"objective {obj.name!r} is not supported with dask inputs: each iteration's "
            "gradients depend on a statistic of all training rows, which the partitions would "
            "each take on their own rows; compute the rows into memory"
        )


def _check_read(read: Model, needed_for: str, host_params) -> None:
    if read.leaf_params_unknown:
        message = (
            "the model does not store its learning rate and L2 penalty (eta, lambda), and "
            "with dask inputs they are not inferred from the leaves: pass them with "
            "booster.set_param({'eta': ..., 'lambda': ...}) before the call"
        )
        if needed_for == "prune":
            raise ValueError(message)
        warnings.warn(f"{message}; biased_gain will not match the host's gain", UserWarning,
                      stacklevel=4)
    if host_params:
        raise ValueError("host_params is for dumped models only")


@dataclass(frozen=True)
class _Labels:  # the training labels at the client: what _warn_init_score_unseen reads
    y: np.ndarray
    weight: np.ndarray | None


@dataclass(frozen=True)
class _Setup:
    adapter: ModuleType
    read: Model
    objective: Objective
    options: GainOptions
    train: _Rows | None
    valid: _Rows
    #: validation-only mode: each tree's training ``[G, H, n]`` ``(3, n_nodes)`` the model
    #: stores (None for a tree without splits), or None where the halves give G
    own: list | None = None

    @property
    def halves(self) -> bool:
        """Validation-only mode without the model's sums: G from half the held-out rows."""
        return self.train is None and self.own is None


def _setup(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight, objective,
           options, memory_budget, host_params, needed_for, calls: _CallClient) -> _Setup:
    # the in-memory path's check, first as there (int() took 0 and -5 silently and failed
    # on text and NaN without naming memory_budget)
    memory_budget = check_memory_budget(memory_budget)
    if X_valid is None or y_valid is None:
        raise ValueError("X_valid and y_valid are required: held-out rows drive the estimate")
    if (X_train is None) != (y_train is None):
        raise ValueError("pass both X_train and y_train, or neither")
    if X_train is None and train_weight is not None:
        raise ValueError("train_weight was given without X_train")
    host_model = unwrap_model(model)
    adapter, read, obj = _read(host_model, objective, host_params, needed_for,
                               with_train=y_train is not None)
    _check_read(read, needed_for, host_params)
    # a cheap first test, as same_rows in memory; the rows' hashes find the others
    same = (X_train is not None and _same_collection(X_train, X_valid)
            and _same_collection(y_train, y_valid))
    if same:
        training_rows_held_out(needed_for, stacklevel=4)  # prune: raises
    classes = getattr(host_model, "classes_", None)
    from_labels = obj is None
    # class_weight='balanced' (the labels' counts), the init score (LightGBM's
    # boost_from_average; the one a model without it would have had) and is_unbalance's
    # class weights are functions of all training labels: the labels, and only they, come
    # to the client, once for all of these (each compute runs their graph again)
    weighted_classes = read.class_weight is not None and classes is not None
    balanced = weighted_classes and isinstance(read.class_weight, str)
    for_bias = (read.bias_from_labels or from_labels or read.init_score_unseen) \
        and y_train is not None
    y_all = w_all = None
    if y_train is not None and (balanced or for_bias):
        import dask

        log.info("collecting the training labels")
        y_all, w_all = dask.compute(y_train, train_weight if for_bias else None)
        y_all = np.asarray(y_all)
    per_class = None
    if weighted_classes:
        import dask

        yv = np.asarray(dask.compute(y_valid)[0]) if balanced and y_train is None else None
        per_class = _class_weights(read, classes, y_all if balanced else None, yv,
                                   extra_frames=1)
    labels = None
    if for_bias:
        if classes is not None:
            y_all = encode_classes(y_all, classes, "y_train")
        if from_labels:
            obj = read.objective_from_labels(y_train=y_all)
            _check_objective(obj)
        y_all = check_labels(y_all, y_all.shape[0], "y_train", obj)
        w_all = check_weight(w_all, y_all.shape[0], "train_weight")
        if w_all is not None and not w_all.any():  # as in memory (the init score divides)
            raise ValueError("train_weight is 0 for every row: those rows carry no evidence")
        if per_class is not None:
            by_class = per_class[y_all.astype(np.int64)]
            w_all = by_class if w_all is None else w_all * by_class
        read = resolve_bias(read, bias_objective(read, obj), y_all, w_all)
        labels = _Labels(y_all, w_all)
    else:
        read = resolve_bias(read, obj, None, None)
    _warn_init_score_unseen(read, obj, labels, extra_frames=1)
    for message in reader_warnings(read, objective is not None or from_labels,
                                   with_train=X_train is not None):
        warnings.warn(message, UserWarning, stacklevel=4)
    if read.forest.n_trees == 0:
        warnings.warn("the model has no trees: there is no split to score", UserWarning,
                      stacklevel=4)
    # validation-only mode: the training sums the model stores, as in memory (else the
    # halves, warned there)
    own = validation_only_sums(read, extra_frames=2) if X_train is None else None
    own = None if own is None else [
        None if s is None else np.stack([s.G, s.H, s.n.astype(np.float64)]) for s in own]
    # a model that stores no categories reads each frame's category codes: the held-out
    # partitions' are coded as the training frame's, by value, as in memory
    categories_like = _categories_like(adapter, host_model, read, X_train, X_valid)
    client = calls.using(_client())
    valid = _Rows(client, X_valid, y_valid, valid_weight, ("X_valid", "y_valid", "valid_weight"))
    train = None if X_train is None else _Rows(client, X_train, y_train, train_weight,
                                               ("X_train", "y_train", "train_weight"))
    if needed_for == "importance":  # as in memory: no empty jackknife block
        options = blocks_for_rows(options, valid.n_rows, extra_frames=2)
    if valid.weighted or per_class is not None:  # the floor's unit, as in memory: from
        # the held-out rows' weights as the model weighted them
        options = options.with_weight_scale(
            np.array([valid.weight_scale(classes, per_class)]))
    job = _Job(adapter.__name__, host_model, read, obj, classes, options, memory_budget,
               per_class, categories_like)
    job_future = client.scatter(job, broadcast=True, hash=False)
    # the rows' hashes, as in memory: the training rows' to compare, the held-out rows' to
    # compare, to sketch the rows that prune, or to test against the pruning rows' sketches
    compared = train is not None and not same
    valid.start(job_future, held_out=True,
                halves_of=options if train is None and own is None else None,
                hashed=compared or (needed_for == "prune" and options.prune_threshold > -np.inf)
                or (needed_for == "importance" and bool(read.pruned_on) and not same))
    if train is not None:
        train.start(job_future, held_out=False, hashed=compared)
    _check_held_out_rows(train if compared else None, valid, read, needed_for)
    return _Setup(adapter, read, obj, options, train, valid, own)


def _check_held_out_rows(train: _Rows | None, valid: _Rows, read: Model,
                         needed_for: str) -> None:
    """As in memory: warn (``prune``: refuse) where the held-out rows are training rows
    (all of them, or a share beyond chance) or, for importance, rows that pruned the model
    (its sketches), from the summaries of the rows' hashes: exact where they hold every
    distinct row, else over the rows whose hashes are below their bounds."""
    if valid.summary is None:
        return
    found, part = None, (lambda: False)
    if train is not None:
        found = summary_overlap(train.summary, valid.summary)
        part = lambda: not covers(valid.summary, train.summary)  # noqa: E731
    by_pruning = ([sketch_overlap(text, valid.summary) for text in read.pruned_on]
                  if needed_for == "importance" else [])
    # warnings point at the caller's line: here, _setup, the engine's and uc's entry points
    warn_held_out_rows(found, part, by_pruning, needed_for, stacklevel=6)


def _progress(enabled: bool, futures) -> None:
    if check_bool(enabled, "progress"):
        from distributed import progress

        progress(futures)


def _round_chunk(client, read: Model, train: _Rows, valid: _Rows, memory_budget) -> int:
    """Trees per round: the leaf ids a worker caches in a round (its share of the rows, as if
    they were spread evenly, and never less than the largest partition) fit the budget."""
    forest = read.forest
    K = max(1, forest.n_outputs)
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    sets = [r for r in (train, valid) if r is not None]
    rows = max(-(-max(r.n_rows for r in sets) // workers), *(r.largest for r in sets))
    chunk = chunk_size(rows, forest.n_trees, memory_budget)
    return max(K, chunk // K * K)


def _allocations(tree, counts, options, t, n_parts, halves: bool):
    """Per partition, tree ``t``'s requests and its share of each ``k``; and what scoring
    needs of them. ``counts`` ``(n_parts, n_nodes)``, or ``(n_parts, 2, n_nodes)`` for the
    halves A, B of the validation-only mode (direction 1: ratios from B; 2: from A)."""
    def one(c, direction):
        k, usable, node, req_k = draw_requests(tree, c.sum(axis=0), options.min_k)
        if node.size == 0:
            return [None] * n_parts, (k, usable)
        alloc = request_allocation(tree, c, node, req_k, options, t, direction)
        return [(node, alloc[:, p, :]) for p in range(n_parts)], (k, usable)

    if not halves:
        requests, info = one(counts, 0)
        return requests, (*info, counts.sum(axis=0))
    first, info1 = one(counts[:, 1], 0)
    second, info2 = (one(counts[:, 0], 1) if options.cross_fit
                     else ([None] * n_parts, (None, None)))
    return list(zip(first, second)), ((info1, info2), counts.sum(axis=0))


def _scores(tree, info, sums, draws, options, read, jack):
    """A tree's scores from the reduced arrays (``sums`` None: validation-only mode, where
    ``draws`` holds the halves' sums, each direction's draws, then the halves' G per block)."""
    if sums is None:
        requests, counts = info
        return halves_tree_scores(tree, draws[0], counts, requests, (draws[1], draws[2]),
                                  draws[3], options, read.split_score, jack)
    k, usable, n_valid = info
    return tree_scores(tree, sums, n_valid, k, usable, draws, options, read.split_score, jack)


def _training_scores(tree, sums: np.ndarray, score) -> TreeScores:
    """What the gain checks read of a tree's scores (``B``, the training rows' sums and
    counts), from the training partitions' summed ``[G, H, n]`` before any held-out draw:
    ``B`` as :func:`~unbiased_criteria.partitioned.tree_scores` gives it, the held-out
    fields empty."""
    node_sums = NodeSums(sums[0], sums[1], np.rint(sums[2]).astype(np.int64))
    none = np.zeros(tree.n_nodes, dtype=np.int64)
    return TreeScores(biased_gain(tree, node_sums, score), np.full(tree.n_nodes, np.nan),
                      none, none.astype(bool), node_sums.n, none, node_sums)


def _compared(read: Model, train: _Rows, before, start: int, stop: int,
              scores: dict[int, TreeScores], rtol: float = 1e-3, at_own: bool = False,
              **step) -> dict[int, TreeScores]:
    """Trees ``start..stop-1``'s ``scores`` as compared with the model's stored gains, as in
    memory (:func:`~unbiased_criteria.host_gains.comparable_gains`: HistGradientBoosting's
    root term, XGBoost's exact-method ties at a threshold), by the same two functions
    (:func:`~unbiased_criteria.host_gains.tie_candidates`, :func:`~unbiased_criteria.
    host_gains.with_ties`). The ties' sums take one more pass over the training partitions,
    from ``before`` (the states their ``"sums"`` step started from, ``step`` its arguments;
    ``at_own``: at the model's own scores), only where a numeric split misses its stored
    gain and the adapter reads the rows' values."""
    trees = read.forest.trees
    candidates = {t: tie_candidates(read, trees[t], s, rtol) for t, s in scores.items()}
    ties: dict[int, np.ndarray] = {}
    if train.reads_values and any(c.size for c in candidates.values()):
        requests = [(candidates[t], at_own) if t in candidates and candidates[t].size
                    else None for t in range(start, stop)]
        summed = train.ties(before, start, stop, requests, **step)
        ties = {t: summed[t - start] for t in candidates}
    return {t: with_ties(read, trees[t], s, candidates[t], ties.get(t))
            for t, s in scores.items()}


def unbiased_importance(
    model, X_train, y_train, X_valid, y_valid, *, train_weight=None, valid_weight=None,
    objective=None, n_draws=1, min_k=5, random_state=None, cross_fit=True, n_blocks=20,
    progress=False, memory_budget=512 * 2**20, host_params=None, n_jobs=None,
) -> ImportanceReport:
    """:func:`unbiased_criteria.unbiased_importance` on dask collections (same arguments and
    report; ``n_jobs`` is the workers' business and is ignored)."""
    if not any(is_dask(d) for d in (X_train, y_train, X_valid, y_valid)):
        import unbiased_criteria as uc  # an xgboost.dask.train result with in-memory rows

        return uc.unbiased_importance(
            unwrap_model(model), X_train, y_train, X_valid, y_valid, train_weight=train_weight,
            valid_weight=valid_weight, objective=objective, n_draws=n_draws, min_k=min_k,
            random_state=random_state, cross_fit=cross_fit, n_blocks=n_blocks,
            progress=progress, memory_budget=memory_budget, host_params=host_params,
            n_jobs=n_jobs)
    options = GainOptions(n_draws=n_draws, min_k=min_k, random_state=random_state,
                          cross_fit=cross_fit, n_blocks=n_blocks)
    calls = _CallClient()  # the futures this call makes, released where it fails
    try:
        setup = _setup(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight,
                       objective, options, memory_budget, host_params, "importance", calls)
        read, train, valid, options = setup.read, setup.train, setup.valid, setup.options
        forest = read.forest
        jack = options.n_blocks > 1
        chunk = _round_chunk(valid.client, read, train, valid, memory_budget)
        records, replicates, shares = [], [], []
        n_first, first = _first_trees(forest), []  # for check_against_host
        later: list[tuple[int, int, int]] = []  # for check_later_gains
        for start in range(0, forest.n_trees, chunk):
            stop = min(start + chunk, forest.n_trees)
            before = None if train is None else train.states  # for _compared's ties
            sums_f = [] if train is None else train.step(start, stop, "sums")
            counts_f = valid.step(start, stop, "counts")
            _progress(progress, sums_f + counts_f)
            sums = (train.reduce(sums_f) if train is not None
                    else [None] * (stop - start) if setup.halves else setup.own[start:stop])
            # what the checks compare, as in memory, from the training sums alone
            stored = {} if train is None else _compared(
                read, train, before, start, stop,
                {t: _training_scores(forest.trees[t], sums[t - start], read.split_score)
                 for t in range(start, stop) if forest.trees[t].n_leaves > 1})
            before = None
            per_part = valid.client.gather(counts_f)
            requests = [[] for _ in valid.x]
            about = []
            for i, t in enumerate(range(start, stop)):
                counts = np.stack([c[i] for c in per_part])
                share, info = _allocations(forest.trees[t], counts, options, t, len(valid.x),
                                           halves=setup.halves)
                for p, r in enumerate(share):
                    requests[p].append(r)
                about.append(info)
            draws_f = valid.step(start, stop, "draws", requests=requests)
            _progress(progress, draws_f)
            draws = valid.reduce(draws_f)
            for i, t in enumerate(range(start, stop)):
                tree = forest.trees[t]
                if tree.n_leaves == 1:
                    continue
                scores = _scores(tree, about[i], sums[i], draws[i], options, read, jack)
                records.append(_split_records(_Step(t, tree), scores, int(forest.tree_class[t])))
                if train is not None and t < n_first:
                    first.append(_host_and_replay(tree, stored[t]))
                elif train is not None:
                    later.append((t, *later_gains(tree, stored[t])))
                shares.append(_child_share(_Step(t, tree), scores))
                inner = tree.internal_nodes
                if scores.jackknife is not None:
                    replicates.append(scores.jackknife[:, inner].T)
                elif jack:
                    replicates.append(np.zeros((inner.size, options.n_blocks)))
        if records:
            _warn_unusable(np.concatenate([r["usable"] for r in records]),
                           np.concatenate([r["k"] for r in records]), np.concatenate(shares),
                           options.min_k, valid.n_rows, extra_frames=1, halves=setup.halves)
        report = ImportanceReport(_records_frame(records, forest.feature_names),
                                  forest.feature_names, host=read.host,
                                  jackknife=stack_replicates(replicates, options.n_blocks))
        report.g_source = G_SOURCES[2 if setup.halves else 1 if train is None else 0]
        report.rows_near_threshold = {}
        # as in memory: the first iteration against the model's own, then the later trees' gains
        if not (first and check_against_host(*map(np.concatenate, zip(*first)), read,
                                             extra_frames=1)):
            check_later_gains(sum_later_gains(later, later_start(read) or 0), read,
                              "importance", extra_frames=1,
                              first=first)
        return report
    except BaseException:
        calls.release()
        raise


@dataclass(frozen=True)
class _Step:  # what _split_records / _child_share read of a TreeStep
    index: int
    tree: Any


def prune(
    model, X_train, y_train, X_valid, y_valid, *, threshold=0.0, refit_leaves=False,
    train_weight=None, valid_weight=None, objective=None, n_draws=1, min_k=5,
    random_state=None, cross_fit=True, progress=False, memory_budget=512 * 2**20,
    host_params=None, n_jobs=None,
):
    """:func:`unbiased_criteria.prune` on dask collections: the same kind of model back (for
    an ``xgboost.dask.train`` result, the dict with the pruned Booster)."""
    if not any(is_dask(d) for d in (X_train, y_train, X_valid, y_valid)):
        import unbiased_criteria as uc  # an xgboost.dask.train result with in-memory rows

        pruned = uc.prune(
            unwrap_model(model), X_train, y_train, X_valid, y_valid, threshold=threshold,
            refit_leaves=refit_leaves, train_weight=train_weight, valid_weight=valid_weight,
            objective=objective, n_draws=n_draws, min_k=min_k, random_state=random_state,
            cross_fit=cross_fit, progress=progress, memory_budget=memory_budget,
            host_params=host_params, n_jobs=n_jobs)
        return {**model, "booster": pruned}
    if threshold is None:
        raise ValueError("threshold must be a number (-inf keeps every split), got None")
    options = GainOptions(n_draws=n_draws, min_k=min_k, random_state=random_state,
                          cross_fit=cross_fit, prune_threshold=threshold,
                          refit_leaves=refit_leaves,
                          argument_names={"prune_threshold": "threshold"})
    calls = _CallClient()  # the futures this call makes, released where it fails
    try:
        setup = _setup(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight,
                       objective, options, memory_budget, host_params, "prune", calls)
        read, obj, train, valid = setup.read, setup.objective, setup.train, setup.valid
        if obj.renews_leaves:
            raise ValueError(f"pruning {obj.name} models is not supported: the host renews their "
                             "leaf values from residual percentiles")
        forest = read.forest
        chunk = _round_chunk(valid.client, read, train, valid, memory_budget)
        trees = list(forest.trees)
        usable_all, ks, shares, first = [], [], [], []
        n_first = _first_trees(forest)
        later = _PartitionedLaterGains(read, train is not None)  # for check_later_gains
        own_gains: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}  # B, old_to_new per tree
        replaced = None
        counts_of: dict[int, np.ndarray] = {}
        bar = progress_bar(forest.n_trees, progress, "trees")
        for t in range(forest.n_trees):
            if t not in counts_of:  # held-out node counts do not depend on the pruning
                stop = min(t + chunk, forest.n_trees)
                per_part = valid.client.gather(valid.step(t, stop, "counts"))
                counts_of = {t + i: np.stack([c[i] for c in per_part])
                             for i in range(stop - t)}
            tree = forest.trees[t]
            requests, info = _allocations(tree, counts_of.pop(t), options, t, len(valid.x),
                                          halves=setup.halves)
            at_own = later.at_own_scores(t)
            before = None if train is None else train.states  # for _compared's ties
            step = {"replaced": replaced, "keep_last": True, "keep_own": later.follow}
            sums_f = (None if train is None
                      else train.step(t, t + 1, "sums", own_sums=at_own, **step))
            draws_f = valid.step(t, t + 1, "draws", replaced=replaced,
                                 requests=[[r] for r in requests], keep_last=True)
            sums = (train.reduce(sums_f)[0] if train is not None
                    else None if setup.halves else setup.own[t])
            draws = valid.reduce(draws_f)[0]
            replaced = None
            if tree.n_leaves > 1:
                scores = _scores(tree, info, sums, draws, options, read, False)
                usable_all.append(scores.usable[tree.internal_nodes])
                ks.append(scores.k[tree.internal_nodes])
                shares.append(_child_share(_Step(t, tree), scores))
                def compared(scores, rtol, at_own=False, t=t, before=before, step=step):
                    return _compared(read, train, before, t, t + 1, {t: scores}, rtol,
                                     at_own, **step)[t]

                if train is not None and t < n_first:
                    first.append(_host_and_replay(tree, compared(scores, 1e-3)))
                elif train is not None:
                    later.add(t, tree, scores, sums if at_own else None, compared)
                replaced = prune_tree(tree, scores, read.split_score, options.prune_threshold,
                                      options.refit_leaves)
                if train is not None:
                    later.moved(t, tree, replaced)
                    own_gains[t] = (_as_stored(read, tree, scores).biased,
                                    None if replaced is None else replaced[1])
                if replaced is not None:
                    trees[t] = replaced[0]
            bar.update(1)
        bar.close()
        if usable_all:
            _warn_unusable(np.concatenate(usable_all), np.concatenate(ks), np.concatenate(shares),
                           options.min_k, valid.n_rows, extra_frames=1, halves=setup.halves)
        # as in memory: the first iteration against the model's own, then the later trees' gains
        first_warned = bool(first) and check_against_host(*map(np.concatenate, zip(*first)), read,
                                                          extra_frames=1)
        if not first_warned:
            check_later_gains(sum_later_gains(later.parts, later_start(read) or 0), read,
                              "prune", extra_frames=1,
                              first=first)
        if later.changed_at is not None and not first_warned and not read.warnings:
            # the later trees' gains at the pruned model's own scores, as in memory: read again
            # where its record is lost, it is checked silently and can be pruned again
            trees = _with_own_gains(trees, forest.tree_iteration, later.changed_at, own_gains,
                                    float32=read.host != "sklearn")
        before = sum(t.n_leaves for t in forest.trees)
        after = sum(t.n_leaves for t in trees)
        log.info("pruning kept %d of %d leaves", after, before)
        # rows that decided something (not those of threshold=-inf, which keeps every split):
        # the sketch of the held-out rows, from their partitions' summaries, as in memory
        pruned_on = read.pruned_on
        if threshold > -np.inf:
            pruned_on += tuple({summary_sketch(valid.summary)} - set(pruned_on))
        pruned = setup.adapter.write_model(unwrap_model(model), forest.with_trees(trees),
                                           split_score=read.split_score, pruned_on=pruned_on)
        if is_xgboost_dask_result(model):
            return {**model, "booster": pruned}
        return pruned
    except BaseException:
        calls.release()
        raise


class _PartitionedLaterGains:
    """:class:`unbiased_criteria.host_gains._PrunedLaterGains` over partitions: the later trees'
    ``(index, compared, disagreeing)`` splits while ``prune`` replaces trees, B as scored
    where no earlier iteration was changed, else at the model's own (unpruned) scores, which
    the training partitions keep (``keep_own``) and give the sums at (``own_sums``), for
    :data:`~unbiased_criteria.host_gains.PRUNE_CHECK_TREES` trees of single-output models, as in
    memory."""

    def __init__(self, read: Model, with_train: bool):
        self.read = read
        self.iteration_of = read.forest.tree_iteration
        self.changed_at: int | None = None  # the first iteration a tree was changed in
        self.left = PRUNE_CHECK_TREES
        #: the partitions keep the model's own scores while True
        self.follow = with_train and read.forest.n_outputs == 1
        self.parts: list[tuple[int, int, int]] = []

    def at_own_scores(self, t: int) -> bool:
        """Whether tree ``t`` is compared at the model's own scores: a later iteration than
        the first one changed, while following (from that iteration's first tree on)."""
        return (self.follow and self.changed_at is not None
                and int(self.iteration_of[t]) != self.changed_at)

    def add(self, t: int, tree, scores, sums: np.ndarray | None, compared) -> None:
        """Compare tree ``t``'s gains (``sums``: with those at the model's own scores), as
        ``compared(scores, rtol, at_own)`` gives them (:func:`_compared`), as in memory."""
        if self.changed_at is None or self.changed_at == int(self.iteration_of[t]):
            self.parts.append((t, *later_gains(tree, compared(scores, LATER_GAIN_RTOL))))
            return
        if sums is None:
            return
        self.left -= 1
        self.follow = self.left > 0
        own = NodeSums(sums[3], sums[4], np.rint(sums[2]).astype(np.int64))
        at_own = replace(scores, biased=own_biased_gain(tree, sums, self.read.split_score),
                         sums=own)
        self.parts.append((t, *later_gains(tree, compared(at_own, LATER_GAIN_RTOL, True))))

    def moved(self, t: int, tree, out) -> None:
        """Note the first iteration whose pruning moved the training rows' scores (a leaf
        refit at the model's own scores keeps them, to float rounding)."""
        if out is None or (self.changed_at is None and leaves_unchanged(tree, out)):
            return
        if self.changed_at is None:
            self.changed_at = int(self.iteration_of[t])
