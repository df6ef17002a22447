"""The training hook: :func:`train`, ``xgboost.train`` with every new tree pruned.

XGBoost grows each iteration from the core loop's gradients (``Booster.boost``, through
:class:`~unbiased_criteria.adapters.xgboost.grower.XGBGrower`), the core scores and prunes it
and keeps the running scores; at the end the pruned trees are written into a Booster with the
intercept ``xgb.train`` would have used, and the run's record
(:class:`unbiased_criteria.training_record.TrainingRecord`) is kept with it (:mod:`.record`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import xgboost
from unbiased_criteria.adapters._record import attach_record
from unbiased_criteria.adapters.xgboost import compat
from unbiased_criteria.adapters.xgboost.compat import (
    UnreadableCategories,
    category_records,
    decode_record,
    is_text,
)
from unbiased_criteria.adapters.xgboost.grower import XGBGrower
from unbiased_criteria.adapters.xgboost.layout import _gbtree, _outputs
from unbiased_criteria.adapters.xgboost.metrics import (
    _DEFAULT_METRIC,
    _maximize,
    _predict_transform,
    _xgb_metric,
)
from unbiased_criteria.adapters.xgboost.objectives import _custom_objective, parse_base_score
from unbiased_criteria.adapters.xgboost.reader import parse_model
from unbiased_criteria.adapters.xgboost.record import trees_stamp
from unbiased_criteria.adapters.xgboost.writer import (
    _load_with_config,
    leaf_attributes,
    model_json,
)

from unbiased_criteria.boosting import BoostResult, EvalSet, boost
from unbiased_criteria.importance import GainOptions
from unbiased_criteria.model import UnsupportedModelError
from unbiased_criteria.training_record import TrainingRecord
from unbiased_criteria.trees import Forest
from unbiased_criteria.validation import check_labels, check_unique_names

#: objectives the training hook drives (the core has their gradients, XGBoost keeps its leaves)
_TRAIN_OBJECTIVES = (
    "reg:squarederror", "reg:squaredlogerror", "reg:logistic", "reg:pseudohubererror",
    "binary:logistic", "binary:logitraw", "multi:softmax", "multi:softprob", "count:poisson",
    "reg:gamma", "reg:tweedie",
    # XGBoost 3.4's smoothed L1 losses: leaves no longer renewed
    *(("reg:absoluteerror", "reg:quantileerror")
      if compat.model_version() >= compat.SMOOTH_L1_FROM else ()),
)
#: XGBoost objectives the training hook refuses, and why
_REFUSED_OBJECTIVES = {
    **({} if compat.model_version() >= compat.SMOOTH_L1_FROM else dict.fromkeys(
        ("reg:absoluteerror", "reg:quantileerror"),
        "XGBoost renews its leaf values from its own prediction cache, which does not see "
        "pruning, and from held-out rows")),
    "binary:hinge": "the core has no hinge loss",
}


def _normalise_params(params: Any) -> dict[str, Any]:
    """``params`` (a dict, or pairs as ``xgb.train`` accepts) as a new dict.

    Repeated ``eval_metric`` pairs become one list; nothing the caller passed is modified.
    """
    if isinstance(params, Mapping):
        out = dict(params)
    else:
        try:
            pairs = [(k, v) for k, v in params]
        except (TypeError, ValueError):
            raise TypeError("params must be a dict (or a list of (key, value) pairs)") from None
        out: dict[str, Any] = {}
        metrics: list[Any] = []
        for key, value in pairs:
            if key == "eval_metric":
                metrics.extend(value if isinstance(value, list | tuple) else [value])
            else:
                out[key] = value
        if metrics:
            out["eval_metric"] = metrics
    if isinstance(out.get("eval_metric"), tuple):
        out["eval_metric"] = list(out["eval_metric"])
    return out


def _check_training_params(params: Mapping[str, Any]) -> None:
    """Refuse what the hook cannot drive in ``params``: the objective where they name one
    (without one, XGBoost chooses it: :func:`_check_objective` checks its choice), the booster
    and its options."""
    name = params.get("objective")
    if callable(name):
        raise TypeError("params['objective'] must be an XGBoost objective name; pass a callable "
                        "objective as obj=")
    if name is not None:  # None: unset, as XGBoost's set_param skips it
        if not isinstance(name, str):
            raise TypeError(f"params['objective'] must be a string, got {type(name).__name__}")
        _check_objective(name, "params['objective']")
    booster = params.get("booster", "gbtree")
    if booster != "gbtree":
        raise UnsupportedModelError(
            f"params['booster']={booster!r} is not supported by the training hook: only gbtree "
            "(DART drops and rescales trees, gblinear has none)"
        )
    # XGBoost 3.4 applies DART's dropout on gbtree too (earlier versions ignore these there)
    dropout = {k: params[k] for k in ("rate_drop", "one_drop") if k in params
               and str(params[k]).lower() not in ("0", "0.0", "false", "none")}
    if dropout:
        raise UnsupportedModelError(
            f"params {dropout} (dropout) are not supported by the training hook: dropout drops "
            "and rescales trees, which the loop's running scores do not follow"
        )
    if int(params.get("num_parallel_tree", 1)) != 1:
        raise UnsupportedModelError(
            "params['num_parallel_tree'] > 1 is not supported by the training hook: the core "
            "loop takes one tree per output and iteration"
        )
    if params.get("multi_strategy", "one_output_per_tree") != "one_output_per_tree":
        raise UnsupportedModelError("multi_strategy='multi_output_tree' (vector leaves) is not "
                                    "supported")


def _check_objective(name: str, source: str) -> str:
    """``name``, after refusing an objective the hook cannot drive; ``source`` says where it
    came from in the errors."""
    if name in _REFUSED_OBJECTIVES or name.startswith(("rank:", "survival:")):
        why = _REFUSED_OBJECTIVES.get(name, "ranking and survival objectives are not row-wise")
        raise UnsupportedModelError(
            f"{source}={name!r} is not supported by the training hook: {why}"
        )
    if name not in _TRAIN_OBJECTIVES:
        raise ValueError(
            f"{source}: unknown objective {name!r}; the training hook supports "
            f"{list(_TRAIN_OBJECTIVES)} (or pass a callable as obj=)"
        )
    return name


def _host_seed(params: Mapping[str, Any]) -> Any:
    """XGBoost's ``seed`` parameter (or its alias ``random_state``), None when not given."""
    seed = params.get("seed")
    return params.get("random_state") if seed is None else seed


def _labels(dmat: xgboost.DMatrix, argument: str) -> np.ndarray:
    """The labels, ``(n,)`` or ``(n, T)`` for a multi-target DMatrix."""
    y = np.asarray(dmat.get_label())
    n = int(dmat.num_row())
    if y.size == 0:
        raise ValueError(f"{argument} has no labels: build it with xgboost.DMatrix(X, label=y)")
    if y.shape[0] != n or y.ndim > 2:
        raise ValueError(f"{argument} has labels of shape {y.shape} for {n} rows")
    return y[:, 0] if y.ndim == 2 and y.shape[1] == 1 else y


def _weights(dmat: xgboost.DMatrix) -> np.ndarray | None:
    w = np.asarray(dmat.get_weight())
    return w if w.size else None


def _check_dmatrix(dmat: Any, argument: str, reference: xgboost.DMatrix | None) -> None:
    if not isinstance(dmat, xgboost.DMatrix):
        raise TypeError(f"{argument} must be an xgboost.DMatrix, got {type(dmat).__name__}")
    if int(dmat.num_row()) == 0:
        raise ValueError(f"{argument} is empty (0 rows)")
    if dmat.get_base_margin().size:
        raise ValueError(
            f"{argument} has a base_margin: the training hook starts every row from the "
            "model's base_score (one value per output)"
        )
    if dmat.get_group().size:
        raise UnsupportedModelError(f"{argument} has query groups: ranking is not supported")
    if reference is not None and dmat is not reference:
        _check_reference(dmat, argument, reference)
        if int(dmat.num_col()) != int(reference.num_col()):
            raise ValueError(f"{argument} has {dmat.num_col()} features but dtrain has "
                             f"{reference.num_col()}")
        names, ref_names = dmat.feature_names, reference.feature_names
        if names is not None and ref_names is not None and list(names) != list(ref_names):
            raise ValueError(f"{argument}'s feature names do not match dtrain's")


def _check_reference(dmat: xgboost.DMatrix, argument: str, dtrain: xgboost.DMatrix) -> None:
    """Refuse an eval ``QuantileDMatrix`` (or another quantised DMatrix) not built with
    ``ref=dtrain``, as ``xgboost.train`` does.

    Its rows are binned on its own cuts, not the model's: routed through the new trees they
    fall in other leaves than the model's ``predict`` gives them, so the recorded metrics
    and early stopping would not be the returned model's.
    """
    # xgboost.train's own test: a DMatrix that carries a reference (its class defines
    # ``ref``; QuantileDMatrix in every version) must carry dtrain's
    if not (isinstance(dmat, xgboost.QuantileDMatrix) or hasattr(type(dmat), "ref")):
        return
    ref = getattr(dmat, "ref", None)
    if ref is None or ref() is not dtrain:
        raise ValueError(
            f"{argument} is a {type(dmat).__name__} not built with ref=dtrain, which "
            "xgboost.train refuses ('Training dataset should be used as a reference when "
            "constructing the `QuantileDMatrix` for evaluation'): its rows are binned on "
            "their own cuts, not the model's; build it as "
            f"xgboost.{type(dmat).__name__}(X, y, ref=dtrain)"
        )


def _categories(dmat: xgboost.DMatrix) -> list | None:
    """Per feature, the categories a DMatrix holds (None for a numeric one; text as its
    stored bytes, :func:`~unbiased_criteria.adapters.xgboost.compat.category_records`);
    None when there are no categorical features or this XGBoost (before 3.1) stores none."""
    if "c" not in (dmat.feature_types or ()):
        return None
    try:
        pairs = category_records(dmat)
    except ImportError:
        warnings.warn("pyarrow is not installed: the eval sets' categories cannot be read "
                      "(they must be dtrain's, in the same order)",
                      UserWarning, stacklevel=5)
        return None
    return [cats for _, cats in pairs] if pairs else None


def on_dtrain_categories(dmat: xgboost.DMatrix, argument: str,
                         reference: xgboost.DMatrix) -> xgboost.DMatrix:
    """``dmat``, or a copy of it whose category codes are dtrain's.

    The grower routes eval rows through one iteration at a time (a Booster slice), and
    XGBoost reads a slice's input codes as they are: it recodes categories by name only when
    the whole model predicts. An eval set whose categories are dtrain's in another order, or
    a subset of them (``astype("category")`` on each split), gave other leaves, so other
    metrics and early stopping, silently. Its codes are mapped to dtrain's instead, once,
    on the stored values (``get_data``: missing values stay absent) into a new DMatrix with
    its labels and weights; a category dtrain does not hold is an error naming it.
    """
    mine, train = _categories(dmat), _categories(reference)
    if mine is None or train is None or mine == train:
        return dmat
    names = reference.feature_names or [f"f{j}" for j in range(len(train))]
    data = dmat.get_data()
    for j, (name, a, b) in enumerate(zip(names, mine, train)):
        if a == b:  # recorded alike (same categories, same order): codes alike
            continue
        if a is None or b is None:
            raise ValueError(f"{argument}: feature {name!r} is {_kind(a)} but dtrain's is "
                             f"{_kind(b)}")
        if is_text(b) and all(v.isascii() for v in b):
            # dtrain's categories are read as they are: match the eval set's as XGBoost's
            # whole model recodes them, by their recorded bytes (its record of non-ASCII
            # ones may be cut: they then match none, as in xgboost.train)
            a = [v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else v
                 for v in a]
            b = [v.decode("ascii") for v in b]
        else:
            try:  # by value, where both can be read (not non-ASCII text XGBoost misrecords)
                a, b = decode_record(name, a), decode_record(name, b)
            except UnreadableCategories as err:
                raise ValueError(f"{argument}: feature {name!r} lists other categories than "
                                 f"dtrain's, or in another order, and {err}") from None
        at = np.flatnonzero(data.indices == j)
        code = data.data[at].astype(np.int64)
        position = {c: i for i, c in enumerate(b)}
        recode = np.array([position.get(c, -1) for c in a], dtype=np.int64)[code]
        if (recode < 0).any():
            unseen = sorted({str(a[c]) for c in code[recode < 0]})
            raise ValueError(f"{argument}: feature {name!r} holds categories dtrain does not: "
                             f"{', '.join(repr(c) for c in unseen[:5])}")
        data.data[at] = recode
    return xgboost.DMatrix(data, label=dmat.get_label(), weight=_weights(dmat),
                           feature_names=dmat.feature_names, feature_types=dmat.feature_types,
                           enable_categorical=True)


def _kind(categories: list | None) -> str:
    return "numeric" if categories is None else "categorical"


def _host_intercept(params: Mapping[str, Any], dtrain: xgboost.DMatrix,
                    grower: XGBGrower, estimate: bool) -> str:
    """``base_score`` (model JSON text) that ``xgb.train`` would give the model.

    XGBoost estimates it in its first ``update`` only (not when boosting with given gradients,
    so neither for ``obj=``, nor with 0 rounds, nor when a callback stops training before
    round 0): one throwaway round of depth 1 with the same parameters and data gives it
    exactly, whatever the objective and XGBoost version.
    """
    if estimate:
        scratch = xgboost.Booster({**params, "max_depth": 1}, [dtrain])
        scratch.update(dtrain, 0)
        lmp = json.loads(scratch.save_raw("json"))["learner"]["learner_model_param"]
    else:  # xgb.train keeps the parameter (0.5 unless given)
        lmp = json.loads(grower.booster.save_raw("json"))["learner"]["learner_model_param"]
    return str(lmp["base_score"])


def train(
    params: Mapping[str, Any] | Sequence[tuple[str, Any]],
    dtrain: xgboost.DMatrix,
    num_boost_round: int = 10,
    *,
    evals: Sequence[tuple[xgboost.DMatrix, str]] | None = (),
    obj: Callable | None = None,
    maximize: bool | None = None,
    custom_metric: Callable | None = None,
    early_stopping_rounds: int | None = None,
    evals_result: dict | None = None,
    verbose_eval: bool | int = True,
    xgb_model: Any = None,
    callbacks: Sequence[xgboost.callback.TrainingCallback] | None = None,
    holdout_fraction: float = 0.5,
    redraw_holdout: bool = True,
    prune_threshold: float | None = 0.0,
    n_draws: int = 1,
    min_k: int = 5,
    n_blocks: int = 20,
    random_state: Any = None,
    progress: bool = False,
) -> xgboost.Booster:
    """Train with XGBoost's tree builder, pruning every new tree by its unbiased gain.

    Each round the core takes gradients at its own running margins, gives the held-out rows
    zero gradient and hessian (they stay in ``dtrain``), lets XGBoost grow one iteration from
    them (``Booster.boost``), scores every new split with U on the held-out rows, collapses
    the splits with ``U <= prune_threshold`` top-down (a collapsed node gets the value XGBoost
    would give it as a leaf, ``eta * w``) and adds the pruned trees to its margins of dtrain
    and of every eval set. Evaluation and early stopping run on those margins.

    With ``prune_threshold=None`` and ``holdout_fraction=0`` the result is the model
    ``xgboost.train(params, dtrain, num_boost_round, ...)`` gives.

    Parameters
    ----------
    params : dict or list of (key, value) pairs
        As for ``xgboost.train``. ``objective``: one of ``reg:squarederror``,
        ``reg:squaredlogerror``, ``reg:logistic``, ``reg:pseudohubererror``,
        ``binary:logistic``, ``binary:logitraw``, ``multi:softmax``, ``multi:softprob``,
        ``count:poisson``, ``reg:gamma``, ``reg:tweedie``, and from XGBoost 3.4
        ``reg:absoluteerror`` and ``reg:quantileerror`` with one ``quantile_alpha`` (its link
        and default metric also apply with ``obj=``). Without one, the objective XGBoost
        chooses, as in ``xgboost.train``: ``multi:softmax`` with ``num_class`` > 1, else
        ``reg:squarederror`` (read from the Booster's configuration, with ``obj=`` too).
        ``eval_metric``: XGBoost names among
        rmse, rmsle, mae, mape, mphe, logloss, error, error@t, auc, mlogloss, merror,
        poisson-nloglik, gamma-nloglik, gamma-deviance, tweedie-nloglik@rho, quantile;
        default: the objective's, as in XGBoost.
        Not supported: ``num_parallel_tree > 1``, DART and its dropout (``rate_drop``,
        ``one_drop``, which XGBoost 3.4 applies on gbtree too), gblinear, vector leaves.
    dtrain : xgboost.DMatrix
        Training rows with labels (and weights); no base_margin, no groups.
    num_boost_round : int
    evals : sequence of (DMatrix, name)
        Evaluated every round on the running margins (pruned trees). A ``QuantileDMatrix``
        must be built with ``ref=dtrain``, as ``xgboost.train`` requires.
    obj : callable, optional
        ``obj(preds, dtrain) -> (grad, hess)`` as in ``xgboost.train``: ``preds`` are float32
        margins ``(n,)`` or ``(n, K)``; flat results are row-major; it applies weights.
        ``base_score`` then stays the parameter (0.5 unless given), as in ``xgboost.train``.
    maximize : bool, optional
        Whether early stopping maximises its metric; None: XGBoost's rule (auc, map, ndcg...).
    custom_metric : callable, optional
        ``f(preds, dmatrix) -> (name, value)`` or a list of such, as in ``xgboost.train``:
        ``preds`` as ``Booster.predict`` gives them (margins with ``obj=``). Its values are
        recorded as XGBoost records them (``"%f"``, 6 decimals).
    early_stopping_rounds : int, optional
        Stop when the last metric on the last eval set has not improved for that many rounds:
        XGBoost's own ``EarlyStopping`` callback, after the others, as in ``xgboost.train``.
        The returned model keeps every tree; ``best_iteration`` and ``best_score`` are set as
        attributes (``booster.best_iteration``), as XGBoost does.
    evals_result : dict, optional
        Filled with ``{eval name: {metric: [value per round]}}``.
    verbose_eval : bool or int
        Print the evaluations every ``verbose_eval`` rounds (True: every round) with
        XGBoost's own ``EvaluationMonitor``, which prints where XGBoost prints. Pass False and
        ``callbacks=[xgboost.callback.EvaluationMonitor(logger=...)]`` to send them to a
        ``logging`` logger instead. False prints nothing.
    xgb_model : None
        Continued training is not supported: anything but None is an error.
    callbacks : sequence of xgboost.callback.TrainingCallback, optional
        Called as ``xgboost.train`` calls them (``before_training``, ``before_iteration``,
        ``after_iteration`` with the evaluation log, ``after_training``; no call for a round
        that is not grown). ``before_training`` must return the model it was given (another
        Booster is an error: ``xgboost.train`` would train that one), ``after_training`` a
        Booster holding the first rounds of the model it was given (that model, a copy or a
        slice ``model[:n]``; other trees are an error). ``model`` is the
        Booster growing the trees, which holds them unpruned, except in ``after_training``,
        which gets (and may replace) the returned model: ``EarlyStopping(save_best=True)``
        works as in ``xgboost.train``, and the training record and the model's attributes
        (each tree's eta, the leaves' parameters) then describe the returned trees only.
        ``before_iteration`` or ``after_iteration`` returning True stops training (before
        round 0: no tree, and ``base_score`` not estimated, as in ``xgboost.train``). They
        may set the learning rate between rounds (``LearningRateScheduler``): nodes
        collapsed in a round get that round's eta; a change of ``lambda``, ``alpha`` or
        ``max_delta_step`` is an error.
    holdout_fraction : float in [0, 1)
        Share of training rows held out each round to score the new splits.
        The default, 0.5 re-drawn every round, did best in the accuracy suite
        (``benchmarks/accuracy_suite.py``; see the README).
    redraw_holdout : bool
        Draw a new held-out part every round (every row helps build some trees).
    prune_threshold : float or None
        Collapse splits with ``U <= prune_threshold``; None: no pruning and no scoring.
    n_draws, min_k : int
        Options of the unbiased gain (see :func:`unbiased_criteria.unbiased_importance`).
    n_blocks : int
        Jackknife blocks for the standard errors of :func:`training_report`: every training
        row gets one block for the whole run; 0 records none (1 is an error: a jackknife
        needs two blocks).
    random_state : int, numpy Generator / RandomState / SeedSequence, optional
        Seeds the held-out draws and the k-draws; ``None`` takes XGBoost's ``seed`` parameter
        (or its alias ``random_state``) if given, else 0, so training is deterministic as
        XGBoost's is.
    progress : bool
        Show a tqdm progress bar over rounds.

    Returns
    -------
    xgboost.Booster
        The pruned model, with the intercept ``xgboost.train`` would have used and the
        training parameters of ``params``: ``predict(dmat, output_margin=True)`` equals the
        loop's running margins. Its per-split scores: :func:`training_splits`; the unbiased
        importance (every scored split, kept or not, with standard errors):
        :func:`training_report`; both: :func:`training_record`.

    Raises
    ------
    ValueError
        Unknown objective or metric, a bad option (as every entry point checks them:
        :class:`~unbiased_criteria.options.GainOptions`; e.g. ``holdout_fraction`` outside
        [0, 1), a NaN ``prune_threshold``), ``dtrain``
        without labels or with weights summing to zero, labels outside the objective's range,
        early stopping without evals, an ``xgb_model``, an eval ``QuantileDMatrix`` not built
        with ``ref=dtrain``, a callback's ``before_training`` returning another Booster, its
        ``after_training`` returning (or leaving) trees other than the first rounds grown.
    TypeError
        A callback's ``before_training`` or ``after_training`` returning no Booster.
    UnsupportedModelError
        Objectives, boosters and options the hook cannot drive (see ``params``).
    """
    if xgb_model is not None:  # the message the estimators give
        raise ValueError("xgb_model (continued training) is not supported")
    return run_training(
        params, dtrain, num_boost_round, evals=evals, obj=obj, maximize=maximize,
        custom_metric=custom_metric, early_stopping_rounds=early_stopping_rounds,
        evals_result=evals_result, verbose_eval=verbose_eval, callbacks=callbacks,
        holdout_fraction=holdout_fraction, redraw_holdout=redraw_holdout,
        prune_threshold=prune_threshold, n_draws=n_draws, min_k=min_k, n_blocks=n_blocks,
        random_state=random_state, progress=progress,
    ).booster


@dataclass
class TrainingRun:
    """What :func:`run_training` returns: the booster and the loop's own record (for tests).

    ``raw_eval`` holds the running float32 margins ``(n_rows, K)`` of each eval set, in
    ``evals`` order.
    """

    booster: xgboost.Booster
    result: BoostResult
    raw_eval: tuple[np.ndarray, ...]


def run_training(
    params, dtrain, num_boost_round, *, evals, obj, maximize, custom_metric,
    early_stopping_rounds, evals_result, verbose_eval, callbacks, holdout_fraction,
    redraw_holdout, prune_threshold, n_draws, min_k, n_blocks, random_state, progress,
) -> TrainingRun:
    """:func:`train`, also returning the loop's record."""
    params = _normalise_params(params)
    options = GainOptions(
        n_draws=n_draws, min_k=min_k, n_blocks=n_blocks, random_state=random_state,
        prune_threshold=prune_threshold, holdout_fraction=holdout_fraction,
        redraw_holdout=redraw_holdout, host_seed=_host_seed(params),
    )
    if obj is not None and not callable(obj):
        raise TypeError(f"obj must be a callable f(preds, dtrain) -> (grad, hess), got {obj!r}")
    if custom_metric is not None and not callable(custom_metric):
        raise TypeError("custom_metric must be a callable f(preds, dmatrix) -> (name, value)")
    _check_training_params(params)
    if int(num_boost_round) != num_boost_round or num_boost_round < 0:
        raise ValueError(f"num_boost_round must be a non-negative integer, got "
                         f"{num_boost_round!r}")
    _check_dmatrix(dtrain, "dtrain", None)
    evals = list(evals or [])
    for i, pair in enumerate(evals):
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[1], str)):
            raise TypeError(f"evals[{i}] must be a (DMatrix, name) pair")
        _check_dmatrix(pair[0], f"evals[{i}] ({pair[1]!r})", dtrain)
        if "-" in pair[1]:
            raise ValueError(f"evals[{i}]: the name {pair[1]!r} must not contain '-'")
    check_unique_names([name for _, name in evals], "evals")
    if early_stopping_rounds and not evals:
        raise ValueError("early_stopping_rounds needs at least one eval set in evals")
    options.warn_if_nothing_held_out(stacklevel=3)
    y = _labels(dtrain, "dtrain")
    weight = _weights(dtrain)
    if weight is not None and not weight.sum() > 0:
        raise ValueError("dtrain's weights sum to zero: no row would count")
    eval_y = [_labels(d, f"evals[{i}] ({s!r})") for i, (d, s) in enumerate(evals)]

    # routed on dtrain's category codes (the user's DMatrix still goes to custom_metric)
    routed = [on_dtrain_categories(d, f"evals[{i}] ({s!r})", dtrain)
              for i, (d, s) in enumerate(evals)]
    grower = XGBGrower(params, dtrain, routed)
    # the objective XGBoost configured, as xgb.train's Booster has it: without one in params
    # XGBoost chooses (multi:softmax with num_class > 1), and its link and default metric are
    # what xgb.train evaluates with, obj= or not
    name = _check_objective(
        grower.objective_name,
        "params['objective']" if params.get("objective") is not None
        else "the objective XGBoost chose for params naming none")
    K = grower.n_outputs
    template = json.loads(grower.booster.save_raw("json"))
    model_ir = parse_model(template, grower.train_params)
    targets = y.shape[1] if y.ndim == 2 else 1  # a multi-target model: labels (n, T)
    # outputs that are targets, not classes: label columns, or one quantile each
    per_target = _outputs(template["learner"])[1] > 1
    objective = model_ir.objective if obj is None \
        else _custom_objective(obj, dtrain, K, label_columns=targets)
    y = check_labels(y, y.shape[0], "dtrain's labels", objective)
    for i, (labels, (_, set_name)) in enumerate(zip(eval_y, evals)):
        check_labels(labels, labels.shape[0], f"evals[{i}] ({set_name!r}) labels", objective)

    metric_names = params.get("eval_metric")
    if metric_names is None:
        off = str(params.get("disable_default_eval_metric", "0")).lower() in ("1", "true")
        metric_names = [] if off or name not in _DEFAULT_METRIC else [_DEFAULT_METRIC[name]]
        if name == "reg:tweedie":
            rho = float(np.float32(params.get("tweedie_variance_power", 1.5)))
            metric_names = [] if off else [f"tweedie-nloglik@{rho:g}"]
    elif isinstance(metric_names, str):
        metric_names = [metric_names]
    metrics = [_xgb_metric(m, name, K, params, maximize, targets=per_target)
               for m in metric_names]
    if early_stopping_rounds and not (metrics or custom_metric):
        raise ValueError("early_stopping_rounds needs a metric: the objective has no default "
                         "one and params has no eval_metric")
    eval_sets = [EvalSet(s, eval_y[i], _weights(d)) for i, (d, s) in enumerate(evals)]
    estimate = obj is None and num_boost_round > 0
    base_score = _host_intercept(params, dtrain, grower, estimate=estimate)
    init = parse_base_score(base_score, name, K)
    if estimate:
        # the throwaway Booster drew from XGBoost's global random engine, which a Booster
        # seeds once, when it is first configured: a new one samples rows and columns as
        # xgb.train's Booster does (the first one sampled others)
        grower = XGBGrower(params, dtrain, routed)
        # XGBoost's margins start where the loop's scores do (see XGBGrower)
        grower.start_from(base_score)

    position = {id(e.y): i for i, e in enumerate(eval_sets)}
    latest: list[np.ndarray | None] = [None] * len(eval_sets)

    def feval(y_set, raw, w_set):
        # keeps a view of the running margins (updated in place by the loop)
        i = position[id(y_set)]
        latest[i] = raw
        if custom_metric is None:
            return []
        preds = np.array(raw, dtype=np.float32) if obj is not None \
            else _predict_transform(name, raw)
        res = custom_metric(preds, evals[i][0])
        return [(str(m), float(f"{v:f}"), _maximize(str(m), maximize))
                for m, v in (res if isinstance(res, list) else [res])]

    callbacks = list(callbacks or [])
    for cb in callbacks:
        if not isinstance(cb, xgboost.callback.TrainingCallback):
            raise TypeError("callbacks must be xgboost.callback.TrainingCallback instances")
    # the caller's callbacks may set the learning rate between rounds (LearningRateScheduler)
    follow = grower.follow_params if callbacks else (lambda: None)
    # the callbacks xgb.train adds, in its order: early stopping is XGBoost's own callback,
    # last, so that it stops after every other callback's after_iteration and before any
    # before_iteration of a round that is not grown, and sets best_iteration and best_score
    # on the model as in xgb.train
    if verbose_eval:
        period = 1 if verbose_eval is True else int(verbose_eval)
        callbacks.append(xgboost.callback.EvaluationMonitor(period=period))
    if early_stopping_rounds:
        callbacks.append(xgboost.callback.EarlyStopping(rounds=early_stopping_rounds,
                                                        maximize=maximize))
    history: dict[str, dict[str, list[float]]] = {}
    n_rounds = int(num_boost_round)

    def on_round(it: int, evaluations: dict) -> bool:
        for (set_name, metric_name), (value, _) in evaluations.items():
            history.setdefault(set_name, {}).setdefault(metric_name, []).append(value)
        # as xgb.train: True from a callback stops (the ones after it are not called), and
        # the next round's before_iteration runs before it is grown
        stop = any(cb.after_iteration(grower.booster, it, history) for cb in callbacks)
        if not stop and it + 1 < n_rounds:
            stop = any(cb.before_iteration(grower.booster, it + 1, history) for cb in callbacks)
        follow()
        return stop

    _before_training(callbacks, grower.booster)
    if n_rounds and any(cb.before_iteration(grower.booster, 0, history) for cb in callbacks):
        n_rounds = 0
        if estimate:  # xgb.train estimates it in round 0's update, which never ran
            base_score = str(template["learner"]["learner_model_param"]["base_score"])
            init = parse_base_score(base_score, name, K)
    follow()
    result = boost(
        grower, objective, y, weight,
        num_boost_round=n_rounds, split_score=model_ir.split_score,
        init_score=init, score_dtype=np.float32,
        options=options,
        eval_sets=eval_sets, metrics=metrics, feval=feval if eval_sets else None,
        callback=on_round, progress=progress,
    )

    n_trees = len(result.trees)
    forest = replace(
        model_ir.forest, trees=tuple(result.trees), tree_class=result.tree_class,
        tree_iteration=np.arange(n_trees, dtype=np.int64) // K, base_score=init,
    )
    # its attributes go with it: best_iteration and best_score, set by EarlyStopping
    js = json.loads(grower.booster.save_raw("json"))
    _gbtree(js["learner"])[0]["trees"] = []  # the unpruned trees: replaced, not worth copying
    js["learner"]["learner_model_param"]["base_score"] = base_score
    # start_from set base_score, which XGBoost records as not estimated: as xgb.train writes
    for key in ("boost_from_average",):
        if key in template["learner"]["learner_model_param"]:
            js["learner"]["learner_model_param"][key] = \
                template["learner"]["learner_model_param"][key]
    booster = _load_with_config(model_json(js, forest, model_ir.split_score), grower.booster)
    raw_eval = tuple(
        np.array(r, dtype=np.float32).reshape(r.shape[0], K) if r is not None
        else np.tile(init.astype(np.float32), (e.y.size, 1))
        for r, e in zip(latest, eval_sets)
    )
    n_returned = n_trees
    if callbacks:
        grown = _tree_dicts(booster)  # the hook's trees, as written
        held = None  # rounds the model holds, where checked after the last callback
        for i, cb in enumerate(callbacks):
            returned = _returned_model(cb.after_training(booster), i, "after_training")
            # a slice (EarlyStopping(save_best=True)) or a copy is checked now, to name the
            # callback; the model given back may have been changed in place
            held = (_rounds_held(returned, grown, K, f"callbacks[{i}].after_training returned")
                    if returned is not booster else None)
            booster = returned
        if held is None:
            held = _rounds_held(booster, grown, K, "a callback's after_training left")
        # the attributes and the record must describe the trees returned only: the stored
        # etas and parameters were the whole run's, which a slice keeps (its trees were read
        # at the scheduler's last eta)
        n_returned = held * K
        kept = _first_trees(forest, n_returned)
        for key, value in leaf_attributes(kept, model_ir.split_score).items():
            booster.set_attr(**{key: value})
    record = TrainingRecord.from_result(result, n_returned, K, forest.feature_names,
                                        options.n_blocks)
    attach_record(booster, record, trees_stamp)
    if evals_result is not None:
        evals_result.update(history)  # as xgb.train: the log its callbacks saw
    return TrainingRun(booster, result, raw_eval)


def _returned_model(model: Any, i: int, method: str) -> xgboost.Booster:
    """A callback's returned model, which xgb.train requires to be a Booster."""
    if not isinstance(model, xgboost.Booster):
        raise TypeError(f"callbacks[{i}].{method} must return the model (an xgboost.Booster), "
                        f"as xgboost.train requires; it returned {type(model).__name__}")
    return model


def _before_training(callbacks: list, booster: xgboost.Booster) -> None:
    """Run ``before_training`` as xgb.train does: each callback gets the model the one before
    returned, which must be a Booster.

    xgb.train then trains the returned model; the hook grows its trees on its own Booster (set
    up with dtrain, the eval sets and the intercept), so another one is an error, not
    silently ignored.
    """
    model = booster
    for i, cb in enumerate(callbacks):
        model = _returned_model(cb.before_training(model), i, "before_training")
        if model is not booster:
            raise ValueError(
                f"callbacks[{i}].before_training returned another Booster than the one it was "
                "given: xgboost.train would train that one, the training hook grows its trees "
                "on its own (continued training is not supported); return the model given"
            )


def _tree_dicts(booster: xgboost.Booster) -> list[dict]:
    """Each tree of ``booster`` as its model JSON holds it, without its position (``id``:
    a slice renumbers the trees)."""
    trees = _gbtree(json.loads(booster.save_raw("json"))["learner"])[0]["trees"]
    return [{k: v for k, v in t.items() if k != "id"} for t in trees]


def _rounds_held(booster: xgboost.Booster, grown: list[dict], n_outputs: int,
                 who: str) -> int:
    """How many of the first boosting rounds the hook grew ``booster`` holds: its trees must
    be the first ones of ``grown`` (:func:`_tree_dicts`), whole rounds of ``n_outputs``.

    Raises
    ------
    ValueError
        ``booster`` holds other trees (``who`` says which callback gave them): the hook could
        not say which learning rate and penalties they have, nor give their record.
    """
    held = _tree_dicts(booster)
    if held != grown[: len(held)] or len(held) % n_outputs:
        raise ValueError(
            f"{who} a model whose trees are not the first boosting rounds the training hook "
            f"grew ({len(held)} trees, {len(grown)} grown): the hook's model attributes (each "
            "tree's learning rate and penalties) and training record can describe only those; "
            "return the model given, or a slice of its first rounds (model[:n], as "
            "EarlyStopping(save_best=True) does)"
        )
    return len(held) // n_outputs


def _first_trees(forest: Forest, n_trees: int) -> Forest:
    """``forest`` with its first ``n_trees`` trees only."""
    return replace(forest, trees=forest.trees[:n_trees],
                   tree_class=forest.tree_class[:n_trees],
                   tree_iteration=forest.tree_iteration[:n_trees])
