"""Public entry points: post-hoc unbiased importance and pruning of a trained host model."""

from __future__ import annotations

import importlib
import logging
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from .dumps import Dump, as_dump, is_file, recognise_dump, refuse_linear_dump
from .errors import ObjectiveNeeded
from .gains import MIN_HESSIAN, NodeSums, Workspace, node_sums
from .host_gains import (
    _as_stored,
    _first_trees,
    _FitStages,
    _host_and_replay,
    _PrunedLaterGains,
    _with_own_gains,
    check_against_host,
    check_later_gains,
    comparable_gains,
    later_gains,
    later_start,
    sum_later_gains,
)
from .importance import (
    GainOptions,
    TreeScores,
    holdout_halves,
    jackknife_blocks,
    score_tree,
    stack_replicates,
    valid_ranking,
)
from .leaf_params import (
    LeafParamsError,
    infer_leaf_params,
    with_leaf_params,
)
from .model import Model, UnsupportedModelError
from .model_files import ADAPTERS, load_model_file
from .model_sums import forest_node_sums
from .objectives import CustomObjective, Objective
from .options import check_bool, check_memory_budget
from .parallel import OrderedPool, resolve_n_jobs, scoring_threads
from .pruning import prune_tree, smoothing_counts
from .replay import ReplayResult, RowSet, TreeStep, replay, resolve_bias
from .report import ImportanceReport
from .row_sets import Overlap, overlap, overlap_with_sketch, row_hashes, sketch, warn_overlap
from .validation import (
    check_labels,
    check_pair,
    check_weight,
    class_weights,
    encode_classes,
    same_rows,
    training_rows_held_out,
)

__all__ = ["unbiased_importance", "prune", "adapter_for"]

log = logging.getLogger(__name__)

# host package -> adapter package, from the one registry of hosts; looked up by name so the
# core never imports a host
_ADAPTERS = {
    package: model_file.rsplit(".", 1)[0] for package, _, model_file in ADAPTERS.values()
}

DEFAULT_MEMORY_BUDGET = 512 * 2**20

_DASK_ENGINE = "unbiased_criteria.adapters.dask"


def _dask_engine(model, *data) -> ModuleType | None:
    """The dask engine when any of ``data`` is a dask collection or ``model`` is the dict
    ``xgboost.dask.train`` returns (recognised by module names: dask is not imported)."""
    dask_data = any(type(d).__module__.split(".")[0] in ("dask", "dask_expr") for d in data)
    dask_model = (isinstance(model, dict) and "booster" in model
                  and type(model["booster"]).__module__.split(".")[0] == "xgboost")
    return importlib.import_module(_DASK_ENGINE) if dask_data or dask_model else None


def adapter_for(model: Any) -> ModuleType:
    """The adapter module of ``model``'s host, found from its class (and base classes); for a
    dumped model (:class:`~unbiased_criteria.dumps.Dump`), its host's ``dump`` module."""
    if isinstance(model, Dump):
        return importlib.import_module(_ADAPTERS[model.host] + ".dump")
    for cls in type(model).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _ADAPTERS:
            return importlib.import_module(_ADAPTERS[root])
    raise TypeError(
        "model must be a lightgbm.Booster / LGBMModel, an xgboost.Booster / XGBModel, a "
        "fitted scikit-learn HistGradientBoostingRegressor / Classifier or a dumped model "
        "(dump_model() / get_dump(dump_format='json') JSON), "
        f"got {type(model).__module__}.{type(model).__name__}"
    )


@dataclass(frozen=True)
class _Prepared:
    adapter: ModuleType
    model: Model
    objective: Objective
    train: RowSet | None
    valid: RowSet
    #: row hashes of the held-out rows (``row_sets.row_hashes``), where they were needed
    valid_hashes: np.ndarray | None = None


_PARAMS_ADVICE = (
    "pass them (and alpha, max_delta_step, monotone_constraints if the model used them) with "
    "booster.set_param({'eta': ..., 'lambda': ...}) before the call (host_params= for a "
    "dumped model), or "
    "--param eta=... --param lambda=... on the command line"
)


def _leaf_params(read: Model, obj: Objective, train: RowSet | None, needed_for: str,
                 extra_frames: int = 0) -> Model:
    """``read`` with the learning rate and L2 inferred where the reader could not know them.

    ``needed_for="prune"`` refuses when they cannot be inferred (new leaves need them);
    ``"importance"`` warns (with training rows only the biased gain B depends on the L2
    penalty, U on neither). Without training rows the model's stored gains confirm the
    values assumed where its leaves reproduce every one of them
    (:func:`~unbiased_criteria.model_sums.forest_node_sums`): nothing is then unknown.
    """
    if not read.leaf_params_unknown:
        return read
    if all(tree.n_leaves == 1 for tree in read.forest.trees):
        return read  # no split to score (B) and no leaf to refit: neither is needed
    if train is None and forest_node_sums(read.forest, read.split_score).sums is not None:
        # every stored gain is what the leaves give with the model's learning rates and
        # its assumed L2: the gains scale with 1 / rate**2 and weigh the L2 per split, so
        # both are the model's (validation-only mode uses the same check)
        return replace(read, leaf_params_unknown=False)
    if train is None:
        why = "without training rows (X_train, y_train) they cannot be inferred"
    else:
        try:
            fit = infer_leaf_params(read, obj, train)
        except LeafParamsError as err:
            why = f"they cannot be inferred from its trees: {err}"
        else:
            log.info("inferred from %d leaves: shrinkage %.6g, l2 %.6g (misfit %.2g)",
                     fit.n_leaves, fit.shrinkage, fit.l2, fit.misfit)
            return with_leaf_params(read, fit)
    if read.host == "lightgbm":  # only a dump: it stores the learning rate, not the L2
        message = f"the LightGBM dump does not store its L2 penalty (lambda_l2), and {why}"
        advice = ("pass host_params={'lambda_l2': ...} (--param lambda_l2=... on the command "
                  "line)")
    else:
        message = (
            "the model does not store its learning rate and L2 penalty (eta, lambda: an "
            "XGBoost model loaded from a file reports the defaults, which do not fit its "
            f"trees), and {why}"
        )
        advice = _PARAMS_ADVICE
    if needed_for == "prune":
        raise ValueError(f"{message}; pruning needs them for the new leaves: {advice}")
    warnings.warn(
        f"{message}: biased_gain uses lambda={read.split_score.l2:g} and will not match the "
        f"host's gain (unbiased_gain does not depend on them); {advice}",
        UserWarning, stacklevel=4 + extra_frames,
    )
    return read


def host_model(model: Any) -> Any:
    """``model``, or for the path of a model file that is no dump the host model in it
    (LightGBM text, XGBoost JSON/UBJ), read as the command line reads it (the text checked
    before the host parses it). Pickles are refused: loading one runs its code."""
    if not (isinstance(model, str | os.PathLike) and recognise_dump(model) is None
            and is_file(model)):
        return model
    try:
        data = Path(model).read_bytes()
    except OSError as err:
        raise ValueError(f"model {model}: cannot be read: {err.strerror or err}") from None
    refuse_linear_dump(data)  # an XGBoost gblinear dump: no tree, and no other model kind
    return load_model_file(data, f"model {model}", trusted=False).model  # InputError: a ValueError


def reader_warnings(read: Model, objective_resolved: bool, with_train: bool = True
                    ) -> list[str]:
    """The reader's warnings to show: not its requests for ``objective=`` when the objective
    was given or built from the training labels, nor, without training rows, why their
    gains will not match the host's (``Model.gain_only``: nothing is compared)."""
    shown = [m for m in read.messages if with_train or m not in read.gain_only]
    if not objective_resolved:
        return shown
    return [m for m in shown if "pass objective=" not in m]


def bias_objective(read: Model, obj: Objective) -> Objective:
    """The objective that recomputes the init score a LightGBM model folded into its first
    trees: the host computed it with the model's own objective (BoostFromScore), so a callable
    ``objective=`` (gradients only, no closed-form init score) leaves it to the model's."""
    if not isinstance(obj, CustomObjective) or not read.bias_from_labels:
        return obj
    if read.objective is None:
        raise ValueError(
            "the model folds an init score into its first trees (boost_from_average) that a "
            "callable objective= cannot recompute: pass the name of the objective the model "
            "was trained with"
        )
    return read.objective


#: share of held-out rows beyond chance that are training rows: the same rows, reordered
_SAME_ROWS_EXCESS = 0.99
#: what held-out rows that are in part training rows do, by what they are needed for
_TRAINING_ROWS_HELD_OUT = {
    "prune": "U on them is biased upwards, so the splits they score are kept more often than "
             "they should be; prune on rows that did not train the model",
    "importance": "U on them is biased upwards, noise features included; score on rows that "
                  "did not train the model",
}


def _check_held_out_rows(X_train, X_valid, train: RowSet | None, valid: RowSet, read: Model,
                         needed_for: str, extra_frames: int) -> np.ndarray | None:
    """Warn (``prune``: refuse) where the held-out rows are rows that decided something: the
    training rows (all of them, or a share beyond chance) or, for importance, the rows that
    pruned the model (its sketches, ``Model.pruned_on``). Returns the held-out rows' hashes
    where they were computed."""
    stacklevel = 4 + extra_frames
    if train is not None and same_rows(X_train, train.y, X_valid, valid.y):
        training_rows_held_out(needed_for, stacklevel=stacklevel)  # prune: raises
        return None
    hashes = found = None
    if train is not None:
        hashes = row_hashes(X_valid, valid.y)
        train_hashes = row_hashes(X_train, train.y)
        found = overlap(train_hashes, hashes)
    by_pruning = []
    if needed_for == "importance" and read.pruned_on:
        hashes = row_hashes(X_valid, valid.y) if hashes is None else hashes
        by_pruning = [overlap_with_sketch(text, hashes) for text in read.pruned_on]

    def part() -> bool:  # asked only where every held-out row is a training row
        return not np.isin(train_hashes, hashes).all()

    warn_held_out_rows(found, part, by_pruning, needed_for, stacklevel + 1)
    return hashes


def warn_held_out_rows(found: Overlap | None, part: Callable[[], bool],
                       by_pruning: list[Overlap | None], needed_for: str,
                       stacklevel: int) -> None:
    """What the held-out rows' overlaps say, however they were found (in memory, or over
    Dask partitions): ``found`` with the training rows (None: not compared), where all of
    them are training rows beyond chance (``part()``: not every training row is held out)
    ``prune`` refuses and importance warns, else a share over
    :data:`~unbiased_criteria.row_sets.WARN_EXCESS` is warned of; ``by_pruning`` with each
    sketch of the rows that pruned the model (importance only: the largest is warned of).
    ``stacklevel`` as :func:`~unbiased_criteria.validation.training_rows_held_out`'s."""
    if found is not None and found.excess >= _SAME_ROWS_EXCESS:
        # the same rows in another order, or a part
        training_rows_held_out(needed_for, stacklevel=stacklevel, part=part())
    elif found is not None:
        warn_overlap(found, "X_valid holds rows of X_train",
                     _TRAINING_ROWS_HELD_OUT[needed_for], stacklevel)
    if needed_for == "importance":
        worst = max((f for f in by_pruning if f is not None), key=lambda f: f.excess,
                    default=None)
        warn_overlap(worst, "X_valid holds rows that pruned this model",
                     "uc.prune kept each split for its U on those rows, so U on them is "
                     "biased upwards, noise features included; score the pruned model on "
                     "rows that did not prune it", stacklevel)


def _warn_init_score_unseen(read: Model, obj: Objective, train: RowSet | None,
                            extra_frames: int) -> None:
    """Warn where the host would have added a non-zero init score to the first trees and
    they hold none: either the model was trained from given scores (LightGBM's Dataset
    ``init_score``), which it does not keep, so the replay starts from other scores; or its
    first training stage had no init score (``boost_from_average=False``) and a continued
    stage turned it on (a model keeps its last stage's parameters only), and the replay from
    0 is its training. The model cannot tell the two apart."""
    if not read.init_score_unseen or train is None or isinstance(obj, CustomObjective):
        return
    init = np.atleast_1d(obj.init_score(train.y, train.weight))
    if np.all(np.abs(init) <= 1e-15):  # LightGBM adds none below its kEpsilon
        return
    warnings.warn(
        f"the model's first trees hold no init score, where training from its labels would "
        f"have added {float(init.flat[0]):.6g} (boost_from_average, as its parameters say): "
        "either its first training stage ran with boost_from_average=False and training was "
        "continued with it on (init_model=; a model keeps its last stage's parameters only), "
        "and the replay, which starts from 0 as its predictions do, is its training; or it "
        "was trained from given scores (a Dataset init_score), which the model does not keep, "
        "and its gradients, gains and pruned leaves are then not those of its training (the "
        "unbiased gain scores the model as it predicts). The model does not say which",
        UserWarning, stacklevel=4 + extra_frames)


def _class_weights(read: Model, classes, y_train, y_valid, extra_frames: int
                   ) -> np.ndarray | None:
    """Each class's weight where the classifier had a ``class_weight`` (it multiplied its
    training weights; the held-out rows are weighted alike, so that U measures the loss the
    model was fit to), else None."""
    if read.class_weight is None or classes is None:
        return None
    labels = y_train
    if isinstance(read.class_weight, str) and y_train is None:
        warnings.warn(
            "class_weight='balanced' takes each class's weight from the training labels' "
            "counts, and none were given: the held-out labels' counts serve instead",
            UserWarning, stacklevel=4 + extra_frames)
        labels = y_valid
    encoded = None
    if isinstance(read.class_weight, str):
        encoded = encode_classes(labels, classes, "y_train" if y_train is not None
                                 else "y_valid")
    return class_weights(read.class_weight, classes, encoded)


def _prepare(
    model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight, objective,
    memory_budget, needed_for: str = "importance", host_params=None, extra_frames: int = 0,
) -> _Prepared:
    """Read the model and the rows. ``extra_frames``: calls between the public entry point
    and this one beyond the one of ``unbiased_importance`` (its warnings point at the
    caller's line)."""
    check_memory_budget(memory_budget)
    model = as_dump(model, host_params)
    adapter = adapter_for(model)
    read = adapter.read_model(model)
    # a scikit-learn classifier's booster was trained on the indices of its classes_
    classes = getattr(model, "classes_", None)
    from_labels = (objective is None and read.objective is None and y_train is not None
                   and read.objective_from_labels is not None)
    if objective is not None:
        obj = adapter.make_objective(objective, read)
    elif from_labels:  # LightGBM's is_unbalance: class weights from the label counts
        labels = y_train if classes is None else encode_classes(y_train, classes, "y_train")
        obj = read.objective_from_labels(y_train=np.asarray(labels))
    elif read.objective is None:
        # the reader's own reasons (an objective the core does not have, is_unbalance
        # without training labels) say it in full, with what to pass
        reasons = [m for m in read.messages if "pass objective=" in m]
        raise ObjectiveNeeded(
            "; ".join(reasons) if reasons else
            "the model's objective is unknown (a custom objective) or cannot be read from "
            "the model: pass objective= (a name such as 'binary' or a callable "
            "f(y, raw_score, weight) -> (grad, hess))"
        )
    else:
        obj = read.objective
    check_pair(X_train, y_train, "X_train", "y_train")
    if X_valid is None or y_valid is None:
        raise ValueError("X_valid and y_valid are required: held-out rows drive the estimate")
    if X_train is None and train_weight is not None:
        raise ValueError("train_weight was given without X_train")
    per_class = _class_weights(read, classes, y_train, y_valid, extra_frames)

    def rows(X, y, w, x_name, y_name, w_name):
        router = adapter.make_router(model, read, X, x_name, memory_budget=memory_budget)
        if classes is not None:
            y = encode_classes(y, classes, y_name)
        labels = check_labels(y, router.n_rows, y_name, obj)
        weight = check_weight(w, router.n_rows, w_name)
        if weight is not None and not weight.any():
            raise ValueError(f"{w_name} is 0 for every row: those rows carry no evidence")
        if per_class is not None:  # as the classifier weighted its training rows
            by_class = per_class[labels.astype(np.int64)]
            weight = by_class if weight is None else weight * by_class
        return RowSet(router, labels, weight)

    # a model that stores no categories routes each frame's category codes: the adapter
    # codes the held-out frame's as the training frame's (by value), or refuses
    match = getattr(adapter, "match_categories", None)
    if match is not None and X_train is not None:
        X_valid = match(model, read, X_train, X_valid, "X_valid")
    valid = rows(X_valid, y_valid, valid_weight, "X_valid", "y_valid", "valid_weight")
    train = (
        rows(X_train, y_train, train_weight, "X_train", "y_train", "train_weight")
        if X_train is not None
        else None
    )
    valid_hashes = _check_held_out_rows(X_train, X_valid, train, valid, read, needed_for,
                                        extra_frames)
    read = resolve_bias(read, bias_objective(read, obj),
                        None if train is None else train.y,
                        None if train is None else train.weight)
    _warn_init_score_unseen(read, obj, train, extra_frames)
    for message in reader_warnings(read, objective is not None or from_labels,
                                   with_train=train is not None):
        warnings.warn(message, UserWarning, stacklevel=3 + extra_frames)
    read = _leaf_params(read, obj, train, needed_for, extra_frames)
    if read.forest.n_trees == 0:
        warnings.warn("the model has no trees: there is no split to score",
                      UserWarning, stacklevel=3 + extra_frames)
    return _Prepared(adapter, read, obj, train, valid, valid_hashes)


#: ``report.g_source``: where each split's G came from
G_SOURCES = ("training rows", "model", "held-out halves")


def validation_only_sums(model: Model, extra_frames: int = 0
                         ) -> tuple[NodeSums | None, ...] | None:
    """Validation-only mode: the training rows' node sums every tree of ``model`` stores
    (:func:`~unbiased_criteria.model_sums.forest_node_sums`), or None, with one warning for
    a model of more than one iteration, where the held-out halves must give G instead.

    The halves refit each split on held-out rows: after earlier trees overfit a feature, both
    halves' gradients carry the same residual pattern, so U of its later splits measures the
    gain of refitting them (above 0), not that of the split the model made (below 0). A model
    of one iteration has no earlier trees, so its halves are sound and it is not warned.
    """
    found = forest_node_sums(model.forest, model.split_score)
    if found.sums is not None:
        return found.sums
    if np.unique(model.forest.tree_iteration).size > 1:
        warnings.warn(
            "validation-only mode: the model's own training sums cannot be used "
            f"({found.reason}), so G comes from one half of the held-out rows and the ratios "
            "from the other; for a model of more than one iteration this scores features "
            "that earlier trees overfit above 0 (the halves measure refitting a split on "
            "held-out rows, not the split the model made): pass X_train and y_train (on the "
            "command line --train) to remove this",
            UserWarning, stacklevel=3 + extra_frames)
    return None


def _warn_unusable(usable: np.ndarray, k: np.ndarray, share: np.ndarray, min_k: int,
                   n_valid: int, extra_frames: int = 0, halves: bool = False) -> None:
    """One warning when most splits had no usable evidence, saying why.

    ``k`` is each split's draw size: below ``min_k`` the split had too few held-out rows in a
    child (``share``, the smaller child's share of the rows that give G, says about
    ``min_k / share`` held-out rows would do, twice that where the ratios come from ``halves``
    of them: validation-only mode); at or above it, a node's drawn rows carried
    (practically) no curvature (:func:`~unbiased_criteria.gains.has_curvature`): rows of
    weight 0, or rows the model is confidently wrong about, whose hessians vanish (a
    classifier's float32 ``p(1-p)`` underflows), or, validation-only, a node of held-out rows
    whose hessian sum is below the hosts' least (:func:`~unbiased_criteria.importance.
    without_flat_nodes`); more rows of the same kind would not help.
    """
    bad = ~usable
    if usable.size == 0 or bad.sum() * 2 <= usable.size:
        return
    few = bad & (k < min_k)
    weightless = bad & ~few
    parts = []
    if few.any():
        s = share[few]
        s = s[s > 0]
        rows = min_k / np.median(s) * (2 if halves else 1) if s.size else 0
        need = (f"; the median such split needs about {int(np.ceil(rows)):,} "
                f"held-out rows to reach {min_k} in its smaller child" if s.size else "")
        parts.append(f"{int(few.sum())} have fewer than min_k={min_k} held-out rows in a child "
                     f"(of {n_valid:,} held-out rows){need}")
    if weightless.any():
        parts.append(
            f"{int(weightless.sum())} have enough held-out rows but (practically) no curvature "
            f"among a node's rows: their hessian sum, scaled to the node's rows, is below "
            f"{MIN_HESSIAN:g} times the held-out rows' typical weight, the least the hosts "
            f"make a leaf with (only rows of zero hessian, "
            f"e.g. weight 0, or rows the model is confidently wrong about: a classifier's "
            f"hessian p(1-p) vanishes where it gives the true class a probability near 0, "
            f"e.g. a multiclass model certain of another class; the floor is per row of "
            f"the held-out rows' typical weight, so only weights near 0 against the others "
            f"count as weight 0); give weight-0 rows a positive weight, or score a model "
            f"that is less certain (fewer rounds, a smaller learning rate)")
    warnings.warn(
        f"{int(bad.sum())} of {usable.size} splits have no usable evidence (their "
        f"unbiased_gain is 0 and says nothing; usable is False): " + "; ".join(parts),
        UserWarning, stacklevel=3 + extra_frames,
    )


# what neither host's model keeps, and so cannot be told from it
def _sklearn_fit_stages(prep: _Prepared) -> _Prepared:
    """For ``prune``: ``prep`` with each tree's learning rate as its stored leaves say where a
    fit continued with ``warm_start`` changed it (exact: the replay's sums give every leaf
    its ``-learning_rate * G/(H + l2)``). Refuses where the earlier trees' ``l2`` or loss
    differ (the model holds one), and where nothing can be checked: no training rows, or
    trees grown on other rows than those given (the reader said so) of an estimator with
    ``warm_start=True``. One pass over the training rows, no held-out rows."""
    read = prep.model
    if read.host != "sklearn" or read.forest.n_trees == 0:
        return prep
    if prep.train is None or read.warnings:
        if getattr(read.source, "warm_start", False):
            why = ("without training rows (X_train, y_train)" if prep.train is None else
                   "on the rows given (they did not grow its trees, as warned)")
            raise UnsupportedModelError(
                "the estimator has warm_start=True: a fit continued after set_params changed "
                "learning_rate, l2_regularization or loss leaves its earlier trees with "
                "parameters it does not keep, which only their training rows can tell, and "
                f"that cannot be checked {why}; pruning needs them for the new leaves: pass "
                "the training rows, or, if it was fitted in one call, a copy with "
                "warm_start=False")
        return prep
    stages = _FitStages(read)

    def visit(step: TreeStep):
        stages.add(step.index, step.tree,
                   node_sums(step.tree, step.nodes_train, step.g_train, step.h_train))

    replay(read, prep.objective, train=prep.train, visit=visit)
    found = stages.changed()
    if found is None:
        return prep
    message, rates = found
    if not rates:
        raise UnsupportedModelError(
            f"{message}; pruning needs each tree's parameters for its new leaves, and the "
            "model holds one l2_regularization and loss, so it is refused")
    log.info("warm_start: %d trees read at their own learning rate", len(rates))
    trees = [replace(t, shrinkage=rates[i]) if i in rates else t
             for i, t in enumerate(read.forest.trees)]
    return replace(prep, model=replace(read, forest=read.forest.with_trees(trees)))


def _child_share(step: TreeStep, scores: TreeScores) -> np.ndarray:
    """Each split's smaller child's share of the rows that give G (by count)."""
    tree = step.tree
    inner = tree.internal_nodes
    # a model's sums without row counts: by hessian instead
    n = (scores.sums.H if scores.sums.counts is None else scores.n_train).astype(np.float64)
    root = n[0] if n.size and n[0] > 0 else np.nan
    return np.minimum(n[tree.left[inner]], n[tree.right[inner]]) / root


SPLIT_COLUMNS = (
    "tree", "class", "node", "depth", "feature_index", "threshold", "categorical", "n_train",
    "n_valid", "k", "biased_gain", "unbiased_gain", "host_gain", "sum_hessian",
    "host_hessian", "host_count", "usable",
)


def _split_records(step: TreeStep, scores, forest_class: int) -> dict[str, np.ndarray]:
    tree = step.tree
    inner = tree.internal_nodes
    return {
        "tree": np.full(inner.size, step.index),
        "class": np.full(inner.size, forest_class),
        "node": inner,
        "depth": tree.depth[inner],
        "feature_index": tree.feature[inner],
        "threshold": tree.threshold[inner],
        "categorical": tree.categorical[inner],
        "n_train": scores.n_train[inner],
        "n_valid": scores.n_valid[inner],
        "k": scores.k[inner],
        "biased_gain": scores.biased[inner],
        "unbiased_gain": scores.unbiased[inner],
        "host_gain": tree.host_gain[inner],
        "sum_hessian": scores.sums.H[inner],
        "host_hessian": tree.host_hessian[inner],
        "host_count": tree.host_count[inner],
        "usable": scores.usable[inner],
    }


def _records_frame(records: list[dict], names) -> pd.DataFrame:
    if records:
        frame = pd.DataFrame({k: np.concatenate([r[k] for r in records]) for k in records[0]})
    else:
        frame = pd.DataFrame({k: np.zeros(0) for k in SPLIT_COLUMNS})
        frame["feature_index"] = frame["feature_index"].astype(np.int64)
    frame.insert(4, "feature", np.asarray(names, dtype=object)[frame["feature_index"]])
    return frame


def unbiased_importance(
    model,
    X_train,
    y_train,
    X_valid,
    y_valid,
    *,
    train_weight=None,
    valid_weight=None,
    objective=None,
    n_draws: int = 1,
    min_k: int = 5,
    random_state=None,
    cross_fit: bool = True,
    n_blocks: int = 20,
    progress: bool = False,
    memory_budget: float = DEFAULT_MEMORY_BUDGET,
    host_params: dict | None = None,
    n_jobs: int | None = None,
) -> ImportanceReport:
    """Unbiased (and biased) gain of every split of a trained model, and per feature.

    Parameters
    ----------
    model : lightgbm.Booster, lightgbm.LGBMModel, xgboost.Booster, xgboost.XGBModel, a fitted
        sklearn.ensemble.HistGradientBoostingRegressor / HistGradientBoostingClassifier, or a
        dump
        A dumped model is LightGBM ``dump_model()`` or XGBoost ``get_dump(dump_format="json",
        with_stats=True)`` output: the parsed dict / list, a JSON string or a file path
        (recognised by content). Its rows are routed by the library's own copy of the host's
        rules.
    X_train, y_train : array-like or None
        Rows that give the gradient sums G (normally the training rows). ``None`` for both
        selects the validation-only mode: G and H are the training rows' sums the model
        stores (its leaf values and hessian sums, each split checked against its stored gain,
        :func:`~unbiased_criteria.model_sums.forest_node_sums`) and the ratios come from all
        held-out rows (``report.g_source == "model"``). Where the model cannot give them
        (L1, clipping, smoothing, monotone constraints, HistGradientBoosting, a failed check)
        the held-out rows are split in two random halves, G from one and the ratios from the
        other (and, with ``cross_fit``, the other way round), with a warning for a model of
        more than one iteration: its features that earlier trees overfit then score above 0.
    X_valid, y_valid : array-like
        Held-out rows no decision of the model has seen. numpy, pandas (category dtype
        included) or scipy sparse. For a fitted scikit-learn classifier the labels are those
        it was fitted on (strings included): they are encoded through its ``classes_``.
    train_weight, valid_weight : array-like, optional
        Row weights (not all 0).
    objective : str or callable, optional
        Required for models trained with a custom objective: a host or canonical objective
        name, or ``f(y, raw_score, weight) -> (grad, hess)``.
    n_draws : int
        Independent k-draws whose ratios are averaged.
    min_k : int
        Splits with fewer held-out rows than this in a child get U = 0 (``usable`` False);
        so do splits where every drawn held-out row of the node or a child has zero hessian
        (e.g. zero weight: ``0/0`` is no evidence).
    random_state : int, numpy Generator / RandomState / SeedSequence, or None
        Seeds one stream per tree; None is 0, so results repeat (pass a Generator for fresh
        draws). Every option is checked as the training hooks check it
        (:class:`~unbiased_criteria.options.GainOptions`): ``ValueError`` naming it.
    cross_fit : bool
        Validation-only mode with halves: average both assignments of the halves.
    n_blocks : int
        Blocks of held-out rows for the jackknife standard errors (``report.to_frame()``'s
        ``std_error``, ``report.select``); 0 switches them off (1 is an error: a jackknife
        needs two blocks). More blocks than held-out rows: one block per row (warned).
    progress : bool
        Show a progress bar over trees.
    memory_budget : int or float
        Bytes allowed for one chunk of leaf ids (any positive number, e.g. ``1e8``).
    host_params : dict, optional
        Dumped models only: what the dump does not store. XGBoost: ``objective`` and
        ``base_score`` (required; output space, as XGBoost's parameter), ``num_class`` (for
        ``multi:*``), ``eta`` and ``lambda`` (inferred from the leaves when absent),
        ``feature_names`` / ``n_features``. LightGBM: ``lambda_l2`` (inferred
        when absent), ``lambda_l1``, ``max_delta_step``, ``cat_l2``, objective parameters.
    n_jobs : int or None
        Threads (None: every core, as the hosts use). With more than one, the host routes the
        next chunk of trees while this one is scored, on up to ``n_jobs`` threads: one per
        100k training and held-out rows (fewer rows score faster on one,
        :data:`unbiased_criteria.parallel.ROWS_PER_SCORING_THREAD`). The result does not
        depend on it.

    Returns
    -------
    ImportanceReport
        ``report.to_frame()`` per feature, ``report.splits`` per split.

    Dask collections (for ``X_*``, ``y_*`` and the weights, with matching partitions) run on
    the current ``distributed`` cluster, each partition on its worker (README, "Dask").

    Warns
    -----
    UserWarning
        In validation-only mode, when a model of more than one iteration cannot give its
        own sums (the halves give G: biased upward for what earlier trees overfit); when
        ``X_valid`` holds the training rows, or the rows that pruned the model (``prune``
        kept each split for its ``U`` on them: ``U`` there is biased upwards), when more than
        half the splits have fewer than ``min_k`` held-out rows in a child,
        when the model has no trees, and when an XGBoost model's eta and lambda are not stored
        and cannot be inferred (only ``biased_gain`` depends on them). For a dumped model: when
        rows lie within the printed precision of a threshold (``report.rows_near_threshold``
        counts them), and when a parameter the dump lacks takes the host's default.
    """
    threads = resolve_n_jobs(n_jobs)
    check_bool(progress, "progress")  # before any work, on either path
    model = host_model(model)
    engine = _dask_engine(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight)
    if engine is not None:
        return engine.unbiased_importance(
            model, X_train, y_train, X_valid, y_valid, train_weight=train_weight,
            valid_weight=valid_weight, objective=objective, n_draws=n_draws, min_k=min_k,
            random_state=random_state, cross_fit=cross_fit, n_blocks=n_blocks,
            progress=progress, memory_budget=memory_budget, host_params=host_params,
            n_jobs=n_jobs)
    options = GainOptions(n_draws=n_draws, min_k=min_k, random_state=random_state,
                          cross_fit=cross_fit, n_blocks=n_blocks)
    prep = _prepare(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight,
                    objective, memory_budget, host_params=host_params)
    options = blocks_for_rows(options, prep.valid.n_rows)
    options = options.with_weight_scale(prep.valid.weight)  # the held-out rows' units
    forest = prep.model.forest
    # visitors see the held-out rows in one random order (the k-draws' ranking), so the
    # halves and blocks, drawn on the rows' own order, are permuted alike
    order = valid_ranking(prep.valid.n_rows, options)
    own = validation_only_sums(prep.model) if prep.train is None else None
    use_halves = prep.train is None and own is None
    halves = holdout_halves(prep.valid.n_rows, options) if use_halves else None
    halves = None if halves is None else halves[order]
    blocks = jackknife_blocks(prep.valid.n_rows, options)
    blocks = None if blocks is None else blocks[order]
    records: list[dict] = []
    n_first = _first_trees(forest)
    first: list[tuple[np.ndarray, ...]] = []  # for check_against_host
    later: list[tuple[int, ...]] = []  # for check_later_gains
    stages = _FitStages(prep.model)  # a HistGradientBoosting fit continued with warm_start
    workspace = Workspace()  # row arrays reused by each scoring thread, for this call
    replicates: list[np.ndarray] = []
    shares: list[np.ndarray] = []

    def score(step: TreeStep):
        scores = score_tree(step, prep.model.split_score, options, halves, blocks,
                            ranked=True, workspace=workspace,
                            model_sums=None if own is None else own[step.index])
        # what the checks compare: HistGradientBoosting's roots, ties at a threshold; here,
        # while the step's rows are those it was scored with
        return step, scores, comparable_gains(prep.model, step.tree, scores, step.nodes_train,
                                              step.g_train, step.h_train, _values(prep))

    def collect(result):
        step, scores, stored = result
        records.append(_split_records(step, scores, int(forest.tree_class[step.index])))
        if step.nodes_train is not None:
            stages.add(step.index, step.tree, scores.sums)
        if step.nodes_train is not None and step.index < n_first:
            first.append(_host_and_replay(step.tree, stored))
        elif step.nodes_train is not None:
            later.append((step.index, *later_gains(step.tree, stored)))
        shares.append(_child_share(step, scores))
        inner = step.tree.internal_nodes
        if scores.jackknife is not None:
            replicates.append(scores.jackknife[:, inner].T)
        elif blocks is not None:  # no usable split: U is 0 with any block left out
            replicates.append(np.zeros((inner.size, options.n_blocks)))

    n_rows = prep.valid.n_rows + (0 if prep.train is None else prep.train.n_rows)
    with OrderedPool(scoring_threads(threads, n_rows), collect) as pool:
        def visit(step: TreeStep):
            if step.tree.n_leaves > 1:
                pool.submit(score, step)
            return None

        replay(prep.model, prep.objective, train=prep.train, valid=prep.valid, visit=visit,
               progress=progress, valid_order=order, prefetch=threads > 1)
    if records:
        _warn_unusable(np.concatenate([r["usable"] for r in records]),
                       np.concatenate([r["k"] for r in records]), np.concatenate(shares),
                       options.min_k, prep.valid.n_rows, halves=use_halves)
    jack = stack_replicates(replicates, options.n_blocks)
    report = ImportanceReport(_records_frame(records, forest.feature_names),
                              forest.feature_names, host=prep.model.host, jackknife=jack)
    report.g_source = G_SOURCES[2 if use_halves else 1 if own is not None else 0]
    # the first iteration's sums and gains depend on the rows alone; the later trees' gains
    # on the scores before them too (not held to a pruned model's: later_start)
    stage_change = stages.changed()
    if stage_change is not None and not stage_change[1]:  # the learning rate alone is exact
        warnings.warn(
            f"{stage_change[0]}: biased_gain of the earlier trees is computed with the "
            "current l2_regularization and loss and will not match host_gain (unbiased_gain "
            "does not depend on the learning rate or L2; with another loss it scores their "
            "splits at the current loss's gradients)", UserWarning, stacklevel=2)
    elif not (first and check_against_host(*map(np.concatenate, zip(*first)), prep.model)):
        check_later_gains(sum_later_gains(later, later_start(prep.model) or 0), prep.model,
                          "importance", first=first)
    report.rows_near_threshold = _near_threshold(prep)
    return report


def _values(prep: _Prepared):
    """The training rows' feature values as the host compares them, where the adapter reads
    them (:attr:`~unbiased_criteria.model.Router.feature_values`), else None."""
    return None if prep.train is None else prep.train.router.feature_values


def blocks_for_rows(options: GainOptions, n_valid: int, extra_frames: int = 0) -> GainOptions:
    """``options`` with one jackknife block per held-out row where there are fewer rows (2 or
    more) than ``n_blocks``, warned of (in memory and over Dask partitions): an empty block's
    replicate is the full estimate, which would shrink the jackknife variance and add a
    degree of freedom it does not have."""
    if not 2 <= n_valid < options.n_blocks:
        return options
    warnings.warn(
        f"n_blocks={options.n_blocks} but X_valid has {n_valid} rows: the standard "
        f"errors use {n_valid} jackknife blocks of one row each",
        UserWarning, stacklevel=3 + extra_frames)
    return replace(options, n_blocks=n_valid)


def _near_threshold(prep: _Prepared) -> dict[str, int]:
    """Rows within the printed precision of a threshold (dumped models), per row set."""
    sets = {"X_train": prep.train, "X_valid": prep.valid}
    return {k: s.router.near_threshold for k, s in sets.items() if s is not None}


def prune(
    model,
    X_train,
    y_train,
    X_valid,
    y_valid,
    *,
    threshold: float = 0.0,
    refit_leaves: bool = False,
    train_weight=None,
    valid_weight=None,
    objective=None,
    n_draws: int = 1,
    min_k: int = 5,
    random_state=None,
    cross_fit: bool = True,
    progress: bool = False,
    memory_budget: float = DEFAULT_MEMORY_BUDGET,
    host_params: dict | None = None,
    n_jobs: int | None = None,
):
    """Remove every split whose unbiased gain is <= ``threshold``, top-down.

    Trees are pruned in order, each scored at the gradients of the already pruned trees before
    it. Walking from the root, a node with ``U <= threshold`` becomes a leaf and its subtree
    goes; the new leaf gets the value the host would have given that node as a leaf (its G and
    H over the training rows, the host's leaf formula, times the tree's shrinkage).

    Parameters
    ----------
    model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight, objective, \
n_draws, min_k, random_state, cross_fit, progress, memory_budget, host_params
        As in :func:`unbiased_importance` (``X_train = y_train = None``: validation-only mode,
        G and the new leaf values from the model's own sums, at its unpruned scores; where it
        cannot give them, from one half of the held-out rows, warned).
    threshold : float, default 0.0
        Splits with ``U <= threshold`` are removed (``-inf`` keeps every split).
    refit_leaves : bool, default False
        Recompute every leaf of every tree the same way, not only the new ones.
    n_jobs : int or None
        Threads (None: every core). Trees are pruned in order (each is scored at the pruned
        trees before it), so with more than one thread the host routes the next chunk of
        trees while this one is pruned. The result does not depend on it.

    Returns
    -------
    A new model of the same type as ``model`` (Booster or fitted estimator); ``model`` is not
    changed. It keeps a sketch of the rows ``X_valid, y_valid`` (with the object; for XGBoost in
    its model file too): :func:`unbiased_importance` on those rows (in any order, or a part of
    them) warns, since the splits it
    kept were kept for their ``U`` there (not with ``threshold=-inf``, which keeps all).
    A dumped model gives a dump of the same format holding the pruned trees: a dict
    (LightGBM) or list of tree dicts (XGBoost) for a parsed dump, a JSON string for a JSON
    string or a file. Dask collections run on the current ``distributed`` cluster (README,
    "Dask"); an ``xgboost.dask.train`` result gives the same dict with the pruned Booster.

    Raises
    ------
    ValueError
        An XGBoost model whose eta and lambda are not stored (a Booster loaded from a file)
        gets them inferred from its leaves and the training rows; where they cannot be (L1,
        ``max_delta_step``, no training rows), this error asks for them.
    """
    # before any work, on either path: a truthy "False" refitted every leaf / showed the bar
    check_bool(refit_leaves, "refit_leaves")
    check_bool(progress, "progress")
    model = host_model(model)
    engine = _dask_engine(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight)
    if engine is not None:
        return engine.prune(
            model, X_train, y_train, X_valid, y_valid, threshold=threshold,
            refit_leaves=refit_leaves, train_weight=train_weight, valid_weight=valid_weight,
            objective=objective, n_draws=n_draws, min_k=min_k, random_state=random_state,
            cross_fit=cross_fit, progress=progress, memory_budget=memory_budget,
            host_params=host_params, n_jobs=n_jobs)
    result = prune_forest(
        model, X_train, y_train, X_valid, y_valid, threshold=threshold,
        refit_leaves=refit_leaves, train_weight=train_weight, valid_weight=valid_weight,
        objective=objective, n_draws=n_draws, min_k=min_k, random_state=random_state,
        cross_fit=cross_fit, progress=progress, memory_budget=memory_budget,
        host_params=host_params, n_jobs=n_jobs, extra_frames=1,
    )
    return result.write(model)


@dataclass(frozen=True)
class PruneResult:
    adapter: ModuleType
    forest: Any
    replay: ReplayResult
    leaves_before: int
    leaves_after: int
    #: the penalties the leaves were fit with (inferred where the model did not say)
    split_score: Any = None
    #: sketches of the held-out rows that pruned the model, these included (Model.pruned_on)
    pruned_on: tuple[str, ...] = ()

    def write(self, model: Any) -> Any:
        """The pruned host model: ``model``'s type, the pruned trees, the leaves' penalties
        kept where the host's format would lose them (an XGBoost model's eta and lambda),
        and the sketches of the rows that pruned it."""
        return self.adapter.write_model(model, self.forest, split_score=self.split_score,
                                        pruned_on=self.pruned_on)


def _histogram_bins(prep: _Prepared):
    """The host's bins of the training rows where it smooths leaves with row counts it
    estimates from them (LightGBM's ``path_smooth``), else None (each node's row count)."""
    if prep.model.split_score.path_smooth <= 0 or prep.train is None:
        return None
    binner = prep.train.router.histogram_bins
    return None if binner is None else binner()


def prune_forest(model, X_train, y_train, X_valid, y_valid, *, threshold=0.0,
                 refit_leaves=False, train_weight=None, valid_weight=None, objective=None,
                 n_draws=1, min_k=5, random_state=None, cross_fit=True, progress=False,
                 memory_budget=DEFAULT_MEMORY_BUDGET, host_params=None,
                 n_jobs=None, extra_frames: int = 0) -> PruneResult:
    """:func:`prune` without writing: the pruned IR forest and the replayed scores.

    ``extra_frames``: calls between the caller and this function (``prune``'s 1), so that
    warnings point at the caller's line.
    """
    threads = resolve_n_jobs(n_jobs)
    if threshold is None:  # the hooks' "no pruning"; here there would be nothing to do
        raise ValueError("threshold must be a number (-inf keeps every split), got None")
    options = GainOptions(n_draws=n_draws, min_k=min_k, random_state=random_state,
                          cross_fit=cross_fit, prune_threshold=threshold,
                          refit_leaves=refit_leaves,
                          argument_names={"prune_threshold": "threshold"})
    check_bool(progress, "progress")
    prep = _prepare(model, X_train, y_train, X_valid, y_valid, train_weight, valid_weight,
                    objective, memory_budget, needed_for="prune", host_params=host_params,
                    extra_frames=extra_frames)
    if prep.objective.renews_leaves:
        raise ValueError(
            f"pruning {prep.objective.name} models is not supported: the host renews their "
            "leaf values from residual percentiles"
        )
    prep = _sklearn_fit_stages(prep)  # a fit continued with warm_start
    options = options.with_weight_scale(prep.valid.weight)  # the held-out rows' units
    order = valid_ranking(prep.valid.n_rows, options)  # see unbiased_importance
    own = (validation_only_sums(prep.model, extra_frames) if prep.train is None else None)
    use_halves = prep.train is None and own is None
    halves = holdout_halves(prep.valid.n_rows, options) if use_halves else None
    halves = None if halves is None else halves[order]
    usable: list[np.ndarray] = []
    ks: list[np.ndarray] = []
    shares: list[np.ndarray] = []
    n_first = _first_trees(prep.model.forest)
    first: list[tuple[np.ndarray, ...]] = []
    later = _PrunedLaterGains(prep)  # for check_later_gains
    own_gains: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}  # B, old_to_new per tree
    workspace = Workspace()  # row arrays reused from tree to tree, for this call
    bins = _histogram_bins(prep)

    def visit(step: TreeStep):
        if step.tree.n_leaves == 1:
            return None
        scores = score_tree(step, prep.model.split_score, options, halves, ranked=True,
                            workspace=workspace,
                            model_sums=None if own is None else own[step.index])
        usable.append(scores.usable[step.tree.internal_nodes])
        ks.append(scores.k[step.tree.internal_nodes])
        shares.append(_child_share(step, scores))
        if step.nodes_train is not None and step.index < n_first:
            first.append(_host_and_replay(step.tree, comparable_gains(
                prep.model, step.tree, scores, step.nodes_train, step.g_train, step.h_train,
                _values(prep))))
        elif step.nodes_train is not None:
            later.add(step, scores)
        counts = None if bins is None or step.nodes_train is None else (
            lambda: smoothing_counts(step.tree, step.nodes_train, step.h_train, scores.sums,
                                     bins))
        out = prune_tree(step.tree, scores, prep.model.split_score, options.prune_threshold,
                         options.refit_leaves, counts)
        if step.nodes_train is not None:
            later.moved(step, out)
            own_gains[step.index] = (_as_stored(prep.model, step.tree, scores).biased,
                                     None if out is None else out[1])
        return out

    result = replay(prep.model, prep.objective, train=prep.train, valid=prep.valid,
                    visit=visit, progress=progress, valid_order=order, prefetch=threads > 1)
    if usable:
        _warn_unusable(np.concatenate(usable), np.concatenate(ks), np.concatenate(shares),
                       options.min_k, prep.valid.n_rows, extra_frames=extra_frames,
                       halves=use_halves)
    first_warned = bool(first) and check_against_host(*map(np.concatenate, zip(*first)),
                                                      prep.model, extra_frames=extra_frames)
    if not first_warned:
        check_later_gains(sum_later_gains(later.parts, later_start(prep.model) or 0),
                          prep.model, "prune", extra_frames, first=first)
    forest = prep.model.forest
    trees = result.trees
    if later.changed_at is not None and not first_warned and not prep.model.warnings:
        trees = _with_own_gains(trees, forest.tree_iteration, later.changed_at, own_gains,
                                float32=prep.model.host != "sklearn")
    before = sum(t.n_leaves for t in forest.trees)
    after = sum(t.n_leaves for t in result.trees)
    log.info("pruning kept %d of %d leaves", after, before)
    # rows that decided something: not those of threshold=-inf, which keeps every split
    pruned_on = prep.model.pruned_on
    if threshold > -np.inf:
        hashes = (prep.valid_hashes if prep.valid_hashes is not None
                  else row_hashes(X_valid, prep.valid.y))
        pruned_on += tuple({sketch(hashes)} - set(pruned_on))
    return PruneResult(prep.adapter, forest.with_trees(trees), result, before, after,
                       prep.model.split_score, pruned_on)

