"""The training hook: ``lightgbm.train`` with every new tree pruned by its unbiased gain.

:func:`train` drives LightGBM one iteration at a time through the core's loop
(``unbiased_criteria.boosting.boost``): the loop owns the running raw scores and the
gradients, LightGBM grows each iteration from them on a Booster with ``objective='none'``
(:class:`~unbiased_criteria.adapters.lightgbm.grower.LGBMGrower`), the loop scores and prunes
the new trees, and the writer writes them. Evaluation uses LightGBM's metric names and
formulas on the loop's scores, and LightGBM's own callback objects see the results in
``lightgbm.train``'s format (:mod:`~unbiased_criteria.adapters.lightgbm.callbacks`).
:func:`training_splits` / :func:`training_report` give the unbiased gain of the splits scored
during training.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import lightgbm
import numpy as np
import pandas as pd
from unbiased_criteria.adapters._record import Stamp, attach_record, model_record
from unbiased_criteria.adapters.lightgbm.callbacks import LoopHooks, training_callbacks
from unbiased_criteria.adapters.lightgbm.compat import choose_param_value
from unbiased_criteria.adapters.lightgbm.datasets import (
    Setup,
    check_balanced_bagging,
    check_min_hessian,
    check_sets,
    construct,
)
from unbiased_criteria.adapters.lightgbm.grower import LGBMGrower
from unbiased_criteria.adapters.lightgbm.objectives import objective_for, trainable_objective
from unbiased_criteria.adapters.lightgbm.reader import categorical_options
from unbiased_criteria.adapters.lightgbm.source import (
    K_EPSILON,
    booster_of,
    make_forest,
    param_value,
)
from unbiased_criteria.adapters.lightgbm.writer import model_text

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.boosting import BoostResult, EvalSet, boost
from unbiased_criteria.importance import GainOptions
from unbiased_criteria.model import UnsupportedModelError
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.training_record import TrainingRecord

__all__ = ["train", "training_splits", "training_report", "run_training", "TrainingRun"]


@dataclass
class TrainingRun:
    """What :func:`run_training` returns: the booster and the loop's own record (for tests)."""

    booster: lightgbm.Booster
    result: BoostResult
    raw_eval: dict[str, np.ndarray]


def _resolve_params(params, num_boost_round):
    """Params with aliases resolved as ``lightgbm.train`` resolves them, the canonical
    objective name (None for a callable), the callable, and the number of rounds."""
    params = choose_param_value(dict(params or {}), "objective")
    fobj = None
    if callable(params["objective"]):
        fobj, params["objective"], name = params["objective"], "none", None
    else:
        name = trainable_objective(params["objective"])
    params = choose_param_value(params, "num_iterations", num_boost_round)
    rounds = params["num_iterations"]
    if not isinstance(rounds, int | np.integer) or rounds <= 0:
        raise ValueError(f"num_boost_round must be a positive integer, got {rounds!r}")
    boosting = str(param_value(params, "boosting", "gbdt")).lower()
    if boosting == "dart":
        # DART grows each tree with random earlier trees dropped and rescales them: neither
        # the hook nor the post-hoc replay can follow it
        raise UnsupportedModelError("boosting='dart' is not supported by the training hook, "
                                    "nor are trained DART models (their trees were grown "
                                    "with random earlier trees dropped and rescaled "
                                    "afterwards): use 'gbdt'")
    if boosting in ("rf", "random_forest"):
        # a forest's trees are all fit at the init score: nothing for a round-by-round hook
        # to drive (its trained models are read post-hoc: uc.prune)
        raise UnsupportedModelError(f"boosting={boosting!r} is not supported by the training "
                                    "hook: use 'gbdt' (a trained random forest can be pruned "
                                    "with unbiased_criteria.prune)")
    if str(param_value(params, "linear_tree", False)).lower() in ("1", "true"):
        raise UnsupportedModelError("linear_tree=True is not supported: leaves hold models")
    return params, name, fobj, int(rounds)


def train(
    params: dict[str, Any],
    train_set: lightgbm.Dataset,
    num_boost_round: int = 100,
    *,
    valid_sets: list[lightgbm.Dataset] | None = None,
    valid_names: list[str] | None = None,
    feval: Callable | list[Callable] | None = None,
    init_model: Any = None,
    keep_training_booster: bool = False,
    callbacks: list[Callable] | None = None,
    holdout_fraction: float = 0.5,
    redraw_holdout: bool = True,
    prune_threshold: float | None = 0.0,
    n_draws: int = 1,
    min_k: int = 5,
    n_blocks: int = 20,
    random_state: Any = None,
    progress: bool = False,
) -> lightgbm.Booster:
    """Train like ``lightgbm.train``, pruning every new tree by its unbiased split gain.

    Each round the core's loop (:func:`unbiased_criteria.boosting.boost`) takes gradients at
    its own running scores, gives the held-out rows zero gradient and hessian, lets LightGBM
    grow one iteration from them (:class:`LGBMGrower`), scores every new split with the
    unbiased gain U on the held-out rows and collapses, top-down, the splits with
    ``U <= prune_threshold``. Evaluation, callbacks and early stopping run on the loop's
    scores, which equal what the returned model predicts.

    Parameters
    ----------
    params : dict
        As for ``lightgbm.train``. ``objective`` is one of LightGBM's objective names or
        aliases (not ``regression_l1``, ``quantile``, ``mape``: LightGBM renews their leaves
        from residual percentiles; nor ranking or ``cross_entropy_lambda``), or a callable
        ``f(preds, train_data) -> (grad, hess)`` as LightGBM 4 accepts (raw scores, shape
        ``(n,)`` or ``(n, K)``; flat multiclass arrays are class-major). ``boosting`` must be
        ``gbdt`` (GOSS sampling is fine); ``linear_tree`` is refused.
    train_set : lightgbm.Dataset
        With labels and its raw data (not constructed yet, or ``free_raw_data=False``): the
        raw rows are routed through every new tree. Its weights and ``init_score`` count as in
        ``lightgbm.train``: with an ``init_score`` there is no boost-from-average, and the
        model, like LightGBM's, does not contain that score.
    num_boost_round : int
        Rounds, unless ``params`` holds ``num_iterations`` or an alias.
    valid_sets, valid_names : list, optional
        Evaluated every round as in ``lightgbm.train`` (``train_set`` itself may be one of
        them; its default name is ``"training"``, the others ``"valid_<i>"``).
    feval : callable or list of callables, optional
        ``feval(preds, eval_data) -> (name, value, is_higher_better)`` or a list of such
        tuples, as in ``lightgbm.train``: ``preds`` are the objective's outputs (raw scores
        for a custom objective), ``eval_data`` the set's Dataset.
    init_model : None
        Continued training is not supported: anything but None is an error.
    keep_training_booster : False
        The returned Booster is written from the loop's trees, as ``lightgbm.train`` returns
        one with ``keep_training_booster=False``; True is an error.
    callbacks : list of callables, optional
        LightGBM callbacks run after each round, e.g. ``lightgbm.early_stopping(n)`` (also
        from ``params['early_stopping_round']``), ``lightgbm.log_evaluation(period)``,
        ``lightgbm.record_evaluation(d)``. ``env.model`` is the Booster that grows the trees
        (it holds them unpruned). Callbacks that run before an iteration
        (``lightgbm.reset_parameter``) run on that Booster, as in ``lightgbm.train``: each
        tree keeps its own round's learning rate. A callback that changes ``lambda_l1``,
        ``lambda_l2``, ``max_delta_step``, ``path_smooth``, ``cat_l2``,
        ``max_cat_to_onehot``, ``monotone_constraints`` or the objective, under any alias or
        on the Booster directly (``env.model.reset_parameter``), is an error, and so is one
        that sets ``min_sum_hessian_in_leaf <= 0`` with rows held out.
    holdout_fraction : float
        Fraction of the training rows held out each round, in [0, 1). Held-out rows stay in
        the Dataset with zero gradient and hessian, so LightGBM still counts them for
        ``min_data_in_leaf`` (not for ``min_sum_hessian_in_leaf``, which must then be > 0:
        LightGBM estimates row counts from hessians and could pick an empty child). 0
        disables pruning.
        The default, 0.5 re-drawn every round, did best in the accuracy suite
        (``benchmarks/accuracy_suite.py``; see the README).
    redraw_holdout : bool
        Draw new held-out rows every round (every row helps build some trees), or keep one
        draw.
    prune_threshold : float or None
        Collapse splits with ``U <= prune_threshold``. ``None`` switches scoring and pruning
        off; ``-numpy.inf`` scores every split and keeps them all. With ``None`` and
        ``holdout_fraction=0`` the result is the model ``lightgbm.train`` gives.
    n_draws, min_k : int
        Options of the unbiased gain (:class:`unbiased_criteria.importance.GainOptions`):
        k-draws averaged per ratio; splits with fewer than ``min_k`` held-out rows in a child
        get ``U = 0`` (and are pruned at the default threshold).
    n_blocks : int
        Jackknife blocks for the standard errors of :func:`training_report`: every training
        row gets one block for the whole run; 0 records none (1 is an error: a jackknife
        needs two blocks).
    random_state : int, numpy Generator / RandomState / SeedSequence, optional
        Seeds the held-out draws and the k-draws; ``None`` takes LightGBM's ``seed`` parameter
        (or its aliases) if given, else 0, so training is deterministic as LightGBM's is.
    progress : bool
        Show a progress bar over rounds.

    Returns
    -------
    lightgbm.Booster
        A model built from the pruned trees (text model with LightGBM's header and
        ``parameters:`` for the real objective, so ``predict`` applies its link and
        :func:`read_model` reads it), with ``best_iteration`` and ``best_score`` set as
        ``lightgbm.train`` sets them (the model holds ``best_iteration`` iterations after
        early stopping). The first iteration's trees carry the boost-from-average init score
        (``Tree::AddBias``: values + init, ``shrinkage=1``). The unbiased gain of every split
        scored during training is in :func:`training_splits` (one row per split, ``kept`` says
        whether it survived) and, per feature over every scored split with standard errors,
        :func:`training_report`.

    Raises
    ------
    ValueError
        Unknown objective, a bad option (as every entry point checks them:
        :class:`~unbiased_criteria.options.GainOptions`; e.g. ``holdout_fraction`` outside
        [0, 1), a NaN ``prune_threshold``), a Dataset without labels or raw data, NaN labels,
        unsupported metrics, an ``init_model``, ``keep_training_booster=True``,
        ``min_sum_hessian_in_leaf <= 0`` with rows held out (in ``params`` or set by a
        callback), a callback changing a parameter that values leaves (see ``callbacks``).
    UnsupportedModelError
        Objectives, boosting modes or ``linear_tree`` the hook cannot drive; balanced bagging
        (``pos_bagging_fraction`` / ``neg_bagging_fraction``) where LightGBM would apply it
        (binary objective), which it applies only with its own objective.

    Notes
    -----
    With a built-in objective and ``boost_from_average`` the loop starts from
    ``objective.init_score(y, w)`` over all training rows, as LightGBM does; LightGBM's one
    quirk not reproduced: with ``boost_from_average=False`` and a first iteration without any
    split, LightGBM adds the init score to that constant tree anyway. An iteration without any
    split is kept as constant trees of value 0 (LightGBM drops it).
    """
    if init_model is not None:  # the message the estimators give
        raise ValueError("init_model (continued training) is not supported")
    if keep_training_booster:
        raise ValueError("keep_training_booster=True is not supported: the returned Booster is "
                         "written from the loop's trees and cannot go on training")
    return run_training(
        params, train_set, num_boost_round, valid_sets=valid_sets, valid_names=valid_names,
        feval=feval, callbacks=callbacks, holdout_fraction=holdout_fraction,
        redraw_holdout=redraw_holdout, prune_threshold=prune_threshold, n_draws=n_draws,
        min_k=min_k, n_blocks=n_blocks, random_state=random_state, progress=progress,
    ).booster


def run_training(
    params, train_set, num_boost_round, *, valid_sets, valid_names, feval, callbacks,
    holdout_fraction, redraw_holdout, prune_threshold, n_draws, min_k, random_state, progress,
    n_blocks=20,
) -> TrainingRun:
    """:func:`train`, also returning the loop's record."""
    # cheap checks first, before any Dataset is constructed
    valid_sets, valid_names = check_sets(train_set, valid_sets, valid_names)
    options = GainOptions(
        n_draws=n_draws, min_k=min_k, n_blocks=n_blocks, random_state=random_state,
        prune_threshold=prune_threshold, holdout_fraction=holdout_fraction,
        redraw_holdout=redraw_holdout, host_seed=param_value(dict(params or {}), "seed"),
    )
    params, name, fobj, num_boost_round = _resolve_params(params, num_boost_round)
    options.warn_if_nothing_held_out(stacklevel=3)
    if options.holdout_fraction > 0:
        check_min_hessian(param_value(params, "min_sum_hessian_in_leaf", 1e-3))
    params, callbacks = training_callbacks(params, callbacks)

    loop: list = []  # the loop's objective, output transform and init score

    def start(setup_: Setup) -> np.ndarray:
        loop.extend(_loop_objective(name, fobj, setup_))
        return loop[2]

    setup = construct(params, name, train_set, valid_sets, valid_names, start)
    objective, convert, init = loop
    source = setup.source
    # LightGBM's binary objective counts the positive rows (for balanced bagging)
    positives = int(np.count_nonzero(setup.train_rows.y > 0)) if name == "binary" else 0
    check_balanced_bagging(source.params.get, positives)

    eval_rows = setup.eval_rows
    grower = LGBMGrower(
        setup.host, [setup.train_rows.data] + [r.data for r in eval_rows],
        **categorical_options(setup.dump, source),
        num_threads=int(source.float_param("num_threads")),
    )
    hooks = LoopHooks(
        grower=grower, params=params, num_boost_round=num_boost_round, convert=convert,
        source=source, callbacks=callbacks, positives=positives,
        held_out=options.holdout_fraction > 0,
        fevals=[f for f in ([feval] if callable(feval) else list(feval or [])) if f is not None],
    )
    if callbacks:  # only a callback reaches the growing Booster (env.model)
        grower.before_round = hooks.before_round
    result = boost(
        grower, objective, setup.train_rows.y, setup.train_rows.weight,
        num_boost_round=num_boost_round,
        split_score=source.split_score(),
        init_score=init, score_dtype=np.float64,
        options=options,
        eval_sets=[EvalSet(r.name, r.labels(), r.weight) for r in eval_rows],
        metrics=[hooks.metric(m, hib) for m, hib in setup.metric_info],
        feval=hooks.feval if hooks.fevals else None, callback=hooks.callback,
        progress=progress,
    )
    n_iterations = hooks.best_iteration if hooks.stopped else num_boost_round
    booster = _written_booster(setup, result, init, n_iterations, options.n_blocks)
    booster.best_iteration = hooks.best_iteration if hooks.stopped else 0
    best_score: dict[str, dict[str, float]] = defaultdict(OrderedDict)
    for r in hooks.best_score if hooks.stopped else hooks.last_results:
        best_score[r[0]][r[1]] = r[2]
    booster.best_score = best_score
    raw_eval = {r.name: raw for r, raw in zip(eval_rows, result.raw_eval)}
    return TrainingRun(booster, result, raw_eval)


def _loop_objective(name, fobj, setup: Setup):
    """The loop's objective, the output transform of metrics and feval, and the init score.

    A built-in objective: the core's version of it, LightGBM's output link, and the
    boost-from-average init score (0 with a Dataset init_score, as in LightGBM). A callable
    ``fobj(preds, train_data)``: adapted to the core's ``f(y, raw, weight)``, raw outputs,
    init 0. Either way the training Dataset's init_score is added to the scores the gradients
    are taken at.
    """
    rows, K = setup.train_rows, setup.n_outputs
    y, w, shift = rows.y, rows.weight, rows.shifted
    if fobj is not None:
        dataset, n = rows.dataset, y.shape[0]

        def custom(y_, raw, w_):
            grad, hess = fobj(shift(raw), dataset)
            grad, hess = np.asarray(grad), np.asarray(hess)
            if K > 1 and grad.ndim == 1:  # LightGBM's flat layout is class-major
                grad, hess = grad.reshape(K, n).T, hess.reshape(K, n).T
            return grad, hess

        return _objectives.CustomObjective(func=custom, outputs=K), (lambda r: r), np.zeros(K)

    if name == "regression" and setup.source.flag("reg_sqrt"):
        raise UnsupportedModelError("regression with reg_sqrt=True is not supported")
    base = objective_for(name, setup.source, K, y_train=y)
    base.check_labels(y, "train_set's label")
    for r in setup.eval_rows:
        if r is not rows:
            base.check_labels(r.y, f"labels of valid set {r.name!r}")
    init = np.zeros(K)
    if rows.offset is None and setup.source.flag("boost_from_average"):
        init = np.atleast_1d(base.init_score(y, w))
        init = init.astype(np.float64)
        init[np.abs(init) <= K_EPSILON] = 0.0  # LightGBM: only |init| > kEpsilon
    objective = base
    if rows.offset is not None:
        objective = _objectives.CustomObjective(
            func=lambda y_, raw, w_: base.grad_hess(y, shift(raw), w), outputs=K)
    return objective, base.predict, init


def _written_booster(setup: Setup, result: BoostResult, init: np.ndarray, n_iterations: int,
                     n_blocks: int):
    """The model of the first ``n_iterations`` pruned iterations, init folded in (AddBias:
    values + init, ``bias = init``, written with ``shrinkage=1``), with its training record."""
    K = setup.n_outputs
    trees = list(result.trees[: n_iterations * K])
    for k in range(K):
        if init[k] != 0.0:
            trees[k] = replace(trees[k], value=trees[k].value + init[k], bias=float(init[k]))
    names = tuple(setup.dump["feature_names"])
    forest = make_forest(trees, K, len(names), names)
    booster = lightgbm.Booster(model_str=model_text(setup.source, forest))
    attach_record(booster, TrainingRecord.from_result(result, len(trees), K, names, n_blocks),
                  trees_stamp)
    return booster


def trees_stamp(booster: lightgbm.Booster) -> Stamp:
    """Which trees ``booster`` holds: its iterations and a digest of its trees' text (from
    the first ``Tree=`` to ``end of trees``: not the header, parameters or importances).

    A Booster built from a model text (as the hook's is) writes the same text again, pickled
    and loaded too; one that continued training or had its leaves set writes other trees.
    """
    text = booster.model_to_string(num_iteration=-1)
    start = text.find("\nTree=")  # at a line start: a feature name may hold "Tree="
    end = text.find("\nend of trees", max(start, 0))
    part = text[start:end] if 0 <= start < end else ""  # no tree: nothing to tell apart
    return Stamp(booster.current_iteration(),
                 hashlib.sha256(part.encode("utf-8")).hexdigest())


def _record_of(model: lightgbm.Booster | lightgbm.LGBMModel) -> TrainingRecord:
    record = model_record(booster_of(model), model)  # raises if the model changed since
    if record is None:
        raise ValueError(
            "the model was not trained by unbiased_criteria.adapters.lightgbm.train (or is a "
            "Booster copied with copy.deepcopy, which LightGBM implements by re-loading the "
            "model text and loses Python attributes; pickle keeps them, and so does a deep "
            "copy of an UnbiasedLGBM estimator)"
        )
    return record


def training_splits(model: lightgbm.Booster | lightgbm.LGBMModel) -> pd.DataFrame:
    """Every split scored while :func:`train` grew ``model``, one row per split.

    Parameters
    ----------
    model : lightgbm.Booster or fitted estimator
        Returned by :func:`train` (or an ``UnbiasedLGBM*`` estimator).

    Returns
    -------
    pandas.DataFrame
        Columns ``iteration, tree, class, node, depth, feature_index, feature, threshold,
        n_train, n_valid, k, biased_gain, unbiased_gain, host_gain, usable, kept``: ``node`` is
        LightGBM's ``split_index`` in the tree as grown (before pruning), ``n_train`` /
        ``n_valid`` count the rows that built it / were held out, ``unbiased_gain`` is U at
        the time the split was made (at that round's gradients), ``kept`` whether it is in the
        model. Only the trees of the returned model (up to ``best_iteration``). Empty when no
        split was scored (``prune_threshold=None`` or ``holdout_fraction=0``).
    """
    return _record_of(model).splits.copy()


def training_report(model: lightgbm.Booster | lightgbm.LGBMModel) -> ImportanceReport:
    """The unbiased importance gathered during training, over every scored split.

    Every split LightGBM made was scored with U on that round's held-out rows before pruning
    decided on it; each U is unbiased for the split's gain, so the per-feature sum over all
    of them, kept or not, is an honest importance (a noise feature's expected total is <= 0).
    The sum over the kept splits only is not: they were kept because their U was high on the
    very rows that measured it (the winner's curse).

    Parameters
    ----------
    model : lightgbm.Booster or fitted estimator
        Returned by :func:`train` (or an ``UnbiasedLGBM*`` estimator).

    Returns
    -------
    ImportanceReport
        ``to_frame()`` sums ``unbiased_gain`` (and ``biased_gain``, ``host_gain``) per feature
        over every scored split, with block-jackknife standard errors (``n_blocks`` blocks of
        training rows, fixed for the run; NaN with ``n_blocks < 2``), so ``select()`` works;
        ``splits`` lists the splits (``kept`` says which are in the model). The errors reflect
        the sampling of the held-out rows given the trees grown, not that of the trees.

    Raises
    ------
    ValueError
        Nothing was scored (``prune_threshold=None`` or ``holdout_fraction=0``): there is no
        training importance, and a table of zeros would read as a model without splits.
    """
    return _record_of(model).report("lightgbm")
