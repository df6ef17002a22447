"""LightGBM adapter: read a model into the IR, route rows with ``pred_leaf``, write the IR back.

One front end for one format (treelite style): the reader parses
``Booster.dump_model(num_iteration=-1)`` (the tree structure and statistics) and the
``parameters:`` block of ``Booster.model_to_string(num_iteration=-1)`` (objective
hyper-parameters, modes that break replay); it takes no data. The writer renders IR trees as
LightGBM text-model tree blocks between the original header and trailer, so reading a model
and writing it back gives the same text.

IR numbering of a tree with ``L`` leaves: internal node ``i`` is LightGBM's ``split_index``
``i`` (root 0), leaf ``j`` is node ``L - 1 + j``. The router adds ``L - 1`` to the leaf indices
that ``predict(pred_leaf=True)`` returns.

Training hook: :func:`train` (same arguments as ``lightgbm.train``) drives the core's loop
(``unbiased_criteria.boosting.boost``) with :class:`LGBMGrower`, a Booster with
``objective='none'`` fed the loop's gradients one iteration at a time; the pruned trees are
written with the writer. :func:`training_splits` / :func:`training_report` give the unbiased
gain of the splits scored during training; :class:`UnbiasedLGBMRegressor` and
:class:`UnbiasedLGBMClassifier` are drop-in scikit-learn estimators over :func:`train`.

Host facts this module relies on (LightGBM 4.x, see host-notes sections 1-8 and 13):

* numeric nodes send ``x`` left iff ``x <= threshold``; categorical nodes send the categories of
  their set left and everything else, NaN and negative codes included, right;
* ``decision_type`` bits: 1 = categorical, 2 = default_left, ``(dt >> 2) & 3`` = missing type
  (0 None, 1 Zero, 2 NaN);
* with ``boost_from_average`` the init score is added to every value of the first iteration's
  trees (``Tree::AddBias``), whose ``shrinkage`` then reads 1;
* ``tree_sizes`` in the header must be right to the byte or the loader aborts the process.
"""

from __future__ import annotations

import copy
import math
import os
import re
import types
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

import lightgbm
import numpy as np
import pandas as pd
from lightgbm.basic import _choose_param_value
from scipy import sparse

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.boosting import EvalSet, HoldoutPlan, boost
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.importance import GainOptions
from unbiased_criteria.metrics import Metric
from unbiased_criteria.model import Model, Router, UnsupportedModelError, chunk_size
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.trees import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    DecisionRules,
    Forest,
    Tree,
    make_tree,
)
from unbiased_criteria.validation import check_labels

__all__ = [
    "RULES",
    "LightGBMSource",
    "read_model",
    "make_router",
    "make_objective",
    "write_model",
    "model_text",
    "train",
    "training_splits",
    "training_report",
    "LGBMGrower",
    "UnbiasedLGBMRegressor",
    "UnbiasedLGBMClassifier",
]

#: LightGBM's routing: ``x <= t`` goes left, a category set goes left, NaN joins the others
RULES = DecisionRules(operator="<=", categories_go="left", categorical_nan="other")

_MISSING_CODE = {"None": MISSING_NONE, "Zero": MISSING_ZERO, "NaN": MISSING_NAN}

#: LightGBM objective names and aliases -> canonical LightGBM name (config.cpp ParseObjectiveAlias)
_OBJECTIVE_ALIASES = {
    "regression": "regression", "regression_l2": "regression", "l2": "regression",
    "mean_squared_error": "regression", "mse": "regression", "l2_root": "regression",
    "root_mean_squared_error": "regression", "rmse": "regression",
    "regression_l1": "regression_l1", "l1": "regression_l1",
    "mean_absolute_error": "regression_l1", "mae": "regression_l1",
    "huber": "huber", "fair": "fair", "poisson": "poisson", "quantile": "quantile",
    "mape": "mape", "mean_absolute_percentage_error": "mape", "gamma": "gamma",
    "tweedie": "tweedie", "binary": "binary",
    "multiclass": "multiclass", "softmax": "multiclass",
    "multiclassova": "multiclassova", "multiclass_ova": "multiclassova", "ova": "multiclassova",
    "ovr": "multiclassova",
    "cross_entropy": "cross_entropy", "xentropy": "cross_entropy",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
    "lambdarank": "lambdarank", "rank_xendcg": "rank_xendcg", "xendcg": "rank_xendcg",
    "xe_ndcg": "rank_xendcg", "xe_ndcg_mart": "rank_xendcg", "xendcg_mart": "rank_xendcg",
}
_RANKING = {"lambdarank", "rank_xendcg"}
#: objectives whose init score zeroes the root gradient sum, so that the folded init score can be
#: read off the first tree's leaves (host-notes section 5, "recovering init", option 2)
_MEAN_TYPE = {"regression", "poisson", "gamma", "tweedie", "binary", "cross_entropy",
              "multiclass", "multiclassova"}

_DEFAULTS = {
    "learning_rate": "0.1", "lambda_l1": "0", "lambda_l2": "0", "max_delta_step": "0",
    "cat_l2": "10", "max_cat_to_onehot": "4", "boost_from_average": "1", "sigmoid": "1",
    "scale_pos_weight": "1", "is_unbalance": "0", "alpha": "0.9", "fair_c": "1",
    "poisson_max_delta_step": "0.7", "tweedie_variance_power": "1.5", "boosting": "gbdt",
    "saved_feature_importance_type": "0",
}


@dataclass(frozen=True)
class LightGBMSource:
    """What the router and the writer need from the original model (``Model.source``).

    Attributes
    ----------
    text : str
        ``model_to_string(num_iteration=-1)`` of the original booster.
    params : dict of str
        The ``parameters:`` block, ``{key: value}`` as LightGBM printed them.
    objective : str or None
        LightGBM's canonical objective name; None for a custom objective.
    n_leaves : int array
        Leaves per tree; the router maps ``pred_leaf`` leaf ``j`` of tree ``t`` to IR node
        ``n_leaves[t] - 1 + j``.
    best_iteration : int
        The booster's ``best_iteration`` (what ``predict`` uses by default), kept by the writer.
    """

    text: str = field(repr=False)
    params: dict[str, str] = field(repr=False)
    objective: str | None
    n_leaves: np.ndarray = field(repr=False)
    best_iteration: int = 0

    def param(self, key: str) -> str:
        return self.params.get(key, _DEFAULTS.get(key, ""))

    def float_param(self, key: str) -> float:
        return float(self.param(key) or 0.0)


# --------------------------------------------------------------------------- reading


def _booster(model: Any, argument: str = "model") -> lightgbm.Booster:
    """The Booster of a Booster or fitted LGBMModel."""
    if isinstance(model, lightgbm.Booster):
        return model
    if isinstance(model, lightgbm.LGBMModel):
        if getattr(model, "_Booster", None) is None:
            raise ValueError(f"{argument} is an unfitted {type(model).__name__}; fit it first")
        return model.booster_
    raise TypeError(
        f"{argument} must be a lightgbm.Booster or a fitted lightgbm.LGBMModel, "
        f"got {type(model).__name__}"
    )


def _parse_parameters(text: str) -> dict[str, str]:
    """The ``[key: value]`` lines between ``parameters:`` and ``end of parameters``."""
    start = text.find("\nparameters:\n")
    if start < 0:
        return {}
    stop = text.find("\nend of parameters", start)
    block = text[start:stop if stop >= 0 else len(text)]
    return dict(re.findall(r"^\[([^:\]]+): ?(.*)\]$", block, flags=re.MULTILINE))


def _split_text(text: str) -> tuple[str, list[str], str]:
    """Header (up to the first tree), tree blocks (without ``Tree=i`` line) and trailer."""
    first = re.search(r"^Tree=0$", text, flags=re.MULTILINE)
    end = re.search(r"^end of trees$", text, flags=re.MULTILINE)
    if end is None:
        raise ValueError("not a LightGBM text model: no 'end of trees' line")
    if first is None:  # a model without trees
        return text[: end.start()], [], text[end.start():]
    body = text[first.start(): end.start()]
    blocks = re.split(r"^Tree=\d+\n", body, flags=re.MULTILINE)[1:]
    return text[: first.start()], blocks, text[end.start():]


def _check_supported(dump: dict, source: LightGBMSource, text: str) -> None:
    """Raise UnsupportedModelError for model kinds the IR cannot replay or represent."""
    boosting = source.param("boosting")
    if dump.get("average_output") or boosting == "rf":
        raise UnsupportedModelError(
            "random forest mode (boosting='rf', average_output) is not supported: every tree "
            "is fit at the init score and the output is averaged"
        )
    if boosting == "dart":
        raise UnsupportedModelError(
            "DART boosting is not supported: its gradients were computed with random trees "
            "dropped and its trees were rescaled afterwards"
        )
    if source.param("linear_tree") in ("1", "true") or re.search(r"^is_linear=1$", text, re.M):
        raise UnsupportedModelError(
            "linear trees (linear_tree=True) are not supported: their leaves hold linear models"
        )
    obj = source.objective
    if obj in _RANKING:
        raise UnsupportedModelError(f"ranking objective {obj!r} is not supported")
    if obj == "cross_entropy_lambda":
        raise UnsupportedModelError("objective 'cross_entropy_lambda' is not supported")
    if obj == "regression" and source.param("reg_sqrt") in ("1", "true"):
        raise UnsupportedModelError(
            "regression with reg_sqrt=True is not supported: the model was fit to sqrt(y)"
        )
    if obj is not None and obj not in _OBJECTIVE_ALIASES.values():
        raise UnsupportedModelError(f"unknown LightGBM objective {obj!r}")


def _replay_warnings(source: LightGBMSource) -> tuple[str, ...]:
    """Training modes after which host_gain will not match the recomputed biased gain."""
    p, fp = source.param, source.float_param
    tail = "host_gain will not match the recomputed biased gain; the unbiased gain stays valid"
    out = []
    freq = int(fp("bagging_freq"))
    if freq > 0 and (
        fp("bagging_fraction") < 1 or p("pos_bagging_fraction") not in ("", "1")
        or p("neg_bagging_fraction") not in ("", "1")
    ):
        out.append(f"bagging: the trees were grown on bags of rows that were not stored; {tail}")
    if p("data_sample_strategy") == "goss" or p("boosting") == "goss":
        out.append(f"GOSS: the trees were grown on reweighted samples of rows; {tail}")
    if p("use_quantized_grad") in ("1", "true"):
        out.append(f"use_quantized_grad: the trees were grown on rounded gradients; {tail}")
    if any(float(v) != 0 for v in re.split(r"[,\s]+", p("monotone_constraints")) if v):
        out.append(f"monotone constraints: leaf outputs were clipped; {tail}")
    if any(float(v) != 1 for v in re.split(r"[,\s]+", p("feature_contri")) if v):
        out.append(f"feature_contri: gains were scaled per feature; {tail}")
    if fp("path_smooth") > 0:
        out.append(f"path_smooth: leaf outputs were smoothed towards their parents; {tail}")
    cegb = [p("cegb_penalty_split")] + re.split(
        r"[,\s]+", p("cegb_penalty_feature_lazy") + "," + p("cegb_penalty_feature_coupled")
    )
    if any(float(v) != 0 for v in cegb if v):
        out.append(f"cegb: gains were reduced by cost-effective boosting penalties; {tail}")
    return tuple(out)


def _n_categories(dump: dict) -> list[int]:
    """Number of categorical bins of each feature (its category list, -1 = the NaN bin)."""
    infos = dump.get("feature_infos", {})
    return [len(infos.get(name, {}).get("values", []) or []) for name in dump["feature_names"]]


def _parse_tree(
    info: dict, n_categories: list[int], cat_l2: float, max_cat_to_onehot: int
) -> dict[str, Any]:
    """Flat IR arrays of one ``tree_info`` entry (iterative walk: trees can be deep)."""
    L = int(info["num_leaves"])
    n = 2 * L - 1
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    threshold = np.full(n, np.nan)
    default_left = np.zeros(n, bool)
    missing = np.full(n, MISSING_NONE, np.int8)
    value = np.full(n, np.nan)
    l2_extra = np.zeros(n)
    gain = np.full(n, np.nan)
    hess = np.full(n, np.nan)
    count = np.full(n, -1, np.int64)
    cat_sets: dict[int, np.ndarray] = {}

    def node_id(node: dict) -> int:
        if "split_index" in node:
            return int(node["split_index"])
        return L - 1 + int(node.get("leaf_index", 0))

    stack = [info["tree_structure"]]
    while stack:
        node = stack.pop()
        i = node_id(node)
        if "split_index" not in node:
            value[i] = node["leaf_value"]
            hess[i] = node.get("leaf_weight", np.nan)
            count[i] = node.get("leaf_count", -1)
            if "leaf_coeff" in node:
                raise UnsupportedModelError("linear trees (leaf_coeff) are not supported")
            continue
        f = int(node["split_feature"])
        feature[i] = f
        left[i] = node_id(node["left_child"])
        right[i] = node_id(node["right_child"])
        default_left[i] = bool(node["default_left"])
        missing[i] = _MISSING_CODE[node["missing_type"]]
        value[i] = node["internal_value"]
        gain[i] = node["split_gain"]
        hess[i] = node["internal_weight"]
        count[i] = node["internal_count"]
        if node["decision_type"] == "==":
            cat_sets[i] = np.array([int(c) for c in str(node["threshold"]).split("||")])
            # many-vs-many splits score their children with lambda_l2 + cat_l2
            if n_categories[f] > max_cat_to_onehot:
                l2_extra[i] = cat_l2
        else:
            threshold[i] = node["threshold"]
        stack.append(node["left_child"])
        stack.append(node["right_child"])
    return dict(
        left=left, right=right, feature=feature, threshold=threshold, value=value,
        default_left=default_left, missing=missing, cat_sets=cat_sets, l2_extra=l2_extra,
        host_gain=gain, host_hessian=hess, host_count=count,
    )


def _data_free_bias(arrays: dict[str, Any], l2: float) -> float:
    """Init score folded into a first-iteration tree, from its leaves alone.

    Exact when the init score zeroes the root's gradient sum and leaf outputs are
    ``-G/(H + l2)``: then ``sum_j (H_j + l2_j) value_j / sum_j (H_j + l2_j) = init``, with
    ``l2_j`` including the parent's ``cat_l2`` for leaves of many-vs-many splits.
    """
    leaf = arrays["left"] < 0
    if leaf.sum() == 1:
        return float(arrays["value"][leaf][0])
    parent = np.full(leaf.size, -1)
    inner = np.flatnonzero(~leaf)
    parent[arrays["left"][inner]] = inner
    parent[arrays["right"][inner]] = inner
    weight = arrays["host_hessian"][leaf] + l2 + arrays["l2_extra"][parent[leaf]]
    if not np.all(np.isfinite(weight)) or weight.sum() <= 0:
        return math.nan
    return float(np.sum(weight * arrays["value"][leaf]) / np.sum(weight))


#: LightGBM canonical objective -> (core objective name, its parameters from the model's)
_CORE_OBJECTIVES: dict[str, tuple[str, Callable[[LightGBMSource, int], dict]]] = {
    "regression": ("squared_error", lambda s, K: {}),
    "binary": ("binary_logistic", lambda s, K: {
        "sigmoid": s.float_param("sigmoid"), "pos_weight": s.float_param("scale_pos_weight")}),
    # LightGBM's softmax hessian is K/(K-1) p(1-p)
    "multiclass": ("multiclass_softmax", lambda s, K: {
        "n_classes": K, "hessian_factor": K / (K - 1.0)}),
    "multiclassova": ("multiclass_ova", lambda s, K: {
        "n_classes": K, "sigmoid": s.float_param("sigmoid")}),
    "poisson": ("poisson", lambda s, K: {
        "max_delta_step": s.float_param("poisson_max_delta_step")}),
    "gamma": ("gamma", lambda s, K: {}),
    "tweedie": ("tweedie", lambda s, K: {
        "variance_power": s.float_param("tweedie_variance_power")}),
    "huber": ("huber", lambda s, K: {"alpha": s.float_param("alpha")}),
    "fair": ("fair", lambda s, K: {"c": s.float_param("fair_c")}),
    "cross_entropy": ("cross_entropy", lambda s, K: {}),
    "regression_l1": ("absolute_error", lambda s, K: {}),
    "quantile": ("quantile", lambda s, K: {"alpha": s.float_param("alpha")}),
    "mape": ("mape", lambda s, K: {}),
}


def _make_core_objective(name: str | None, source: LightGBMSource, K: int):
    """The core objective (float64 maths, like LightGBM) for LightGBM objective ``name``."""
    if name is None:
        return None
    try:
        core, params = _CORE_OBJECTIVES[name]
    except KeyError:
        raise UnsupportedModelError(f"LightGBM objective {name!r} is not supported") from None
    return _objectives.make_objective(core, precision="float64", **params(source, K))


def read_model(model: lightgbm.Booster | lightgbm.LGBMModel) -> Model:
    """Read a LightGBM model into the IR; no data needed.

    Parameters
    ----------
    model : lightgbm.Booster or fitted lightgbm.LGBMModel
        All trees are read (``num_iteration=-1``), also those past ``best_iteration``.

    Returns
    -------
    Model
        ``source`` is a :class:`LightGBMSource`. The first iteration's trees carry the init
        score that ``boost_from_average`` folded into them in ``Tree.bias`` (estimated from
        their leaves where that is exact, else NaN) and ``bias_from_labels`` is set.

    Raises
    ------
    UnsupportedModelError
        DART, random forest, linear trees, ranking objectives, ``reg_sqrt``,
        ``cross_entropy_lambda``.

    Notes
    -----
    The folded init score is detected from the first trees' ``shrinkage`` reading 1 while the
    learning rate does not. With ``learning_rate=1`` the two cannot be told apart, so a model
    trained with ``boost_from_average`` is read as holding one. A Dataset ``init_score`` used in
    training leaves no trace in the model (its predictions lack it); the replay then starts
    from 0, not from that score.
    """
    booster = _booster(model)
    text = booster.model_to_string(num_iteration=-1)
    dump = booster.dump_model(num_iteration=-1)
    params = _parse_parameters(text)
    obj_line = dump.get("objective")  # absent for a custom objective
    objective_name = None
    if obj_line is not None:
        first = obj_line.split()[0]
        objective_name = _OBJECTIVE_ALIASES.get(first, first)
        if objective_name == "regression" and "sqrt" in obj_line.split()[1:]:
            params = {**params, "reg_sqrt": "1"}
    infos = dump["tree_info"]
    source = LightGBMSource(
        text=text, params=params, objective=objective_name,
        n_leaves=np.array([int(t["num_leaves"]) for t in infos], dtype=np.int64),
        best_iteration=int(getattr(booster, "best_iteration", 0) or 0),
    )
    _check_supported(dump, source, text)

    K = int(dump["num_tree_per_iteration"])
    fp = source.float_param
    score = SplitScore(l1=fp("lambda_l1"), l2=fp("lambda_l2"),
                       max_delta_step=fp("max_delta_step"))
    warnings = list(_replay_warnings(source))

    objective = None
    if objective_name in ("binary", "multiclassova") and source.param("is_unbalance") in (
        "1", "true"
    ):
        warnings.append(
            "is_unbalance: LightGBM weighted the classes by their counts in the training "
            "labels, which the model does not store; pass objective= (e.g. "
            "unbiased_criteria.adapters.lightgbm.make_objective('binary', model_ir, "
            "y_train=y_train))"
        )
    else:
        objective = _make_core_objective(objective_name, source, K)

    # AddBias: built-in objective, boost_from_average, and the first trees' shrinkage reset to 1
    if "learning_rate" in params:
        lr = fp("learning_rate")
    else:  # no parameters block (hand-made model): the second iteration shows the rate
        lr = float(infos[K]["shrinkage"]) if len(infos) > K else 1.0
    add_bias = (
        objective_name is not None and source.param("boost_from_average") in ("1", "true")
    )
    exact_bias = (
        add_bias and objective is not None and objective_name in _MEAN_TYPE
        and score.l1 == 0 and score.max_delta_step == 0 and fp("scale_pos_weight") == 1
        and not warnings  # bagging, GOSS, quantisation, monotone, path_smooth...
    )

    n_categories = _n_categories(dump)
    cat_l2, onehot = fp("cat_l2"), int(fp("max_cat_to_onehot"))
    trees = []
    any_bias = False
    for t, info in enumerate(infos):
        arrays = _parse_tree(info, n_categories, cat_l2, onehot)
        shrinkage = float(info["shrinkage"])
        bias = 0.0
        if t < K and add_bias and (shrinkage == 1.0 or arrays["left"][0] < 0):
            bias = _data_free_bias(arrays, score.l2) if exact_bias else math.nan
            shrinkage = lr if lr > 0 else shrinkage
            any_bias = True
        trees.append(make_tree(**arrays, shrinkage=shrinkage, bias=bias, rules=RULES))

    n_trees = len(trees)
    forest = Forest(
        trees=tuple(trees),
        tree_class=np.arange(n_trees, dtype=np.int64) % K,
        tree_iteration=np.arange(n_trees, dtype=np.int64) // K,
        base_score=np.zeros(K),
        n_features=int(dump["max_feature_idx"]) + 1,
        feature_names=tuple(dump["feature_names"]),
        score_dtype=np.float64,
    )
    return Model(
        forest=forest, objective=objective, split_score=score, host="lightgbm",
        bias_from_labels=any_bias, warnings=tuple(warnings), source=source,
    )


def _label_weights(y: np.ndarray, scale_pos_weight: float) -> tuple[float, float]:
    """LightGBM's is_unbalance class weights (positive, negative) from the label counts."""
    pos = int(np.sum(np.asarray(y) > 0))
    neg = int(np.size(y)) - pos
    if pos == 0 or neg == 0:
        return scale_pos_weight, 1.0
    if pos > neg:
        return scale_pos_weight, pos / neg
    return neg / pos * scale_pos_weight, 1.0


def make_objective(
    spec: str | Callable | _objectives.Objective, model_ir: Model, *, y_train=None
) -> _objectives.Objective:
    """The core objective for ``spec``, with the hyper-parameters of the model.

    Parameters
    ----------
    spec : str, callable or Objective
        A LightGBM objective name or alias (``"regression"``, ``"binary"``, ``"l1"``...),
        read with the model's ``parameters:`` (sigmoid, alpha, tweedie power...); a canonical
        core name (``"squared_error"``...); a callable ``func(y, raw, weight) -> (g, h)``; or
        a core Objective, returned as is.
    model_ir : Model
        The model as read by :func:`read_model`.
    y_train : array, optional
        Training labels; needed only for a binary model trained with ``is_unbalance``, whose
        class weights LightGBM computed from the label counts.

    Returns
    -------
    Objective
    """
    K = model_ir.forest.n_outputs
    if isinstance(spec, _objectives.Objective):
        return spec
    if callable(spec):
        return _objectives.make_objective(spec, n_outputs=K)
    if not isinstance(spec, str):
        raise TypeError(f"objective must be a string or a callable, got {type(spec).__name__}")
    source = model_ir.source
    if not isinstance(source, LightGBMSource):
        source = LightGBMSource(text="", params={}, objective=None, n_leaves=np.zeros(0))
    name = _OBJECTIVE_ALIASES.get(spec)
    if name is None:
        if spec not in _objectives.OBJECTIVES:
            raise ValueError(
                f"objective {spec!r} is neither a LightGBM objective "
                f"({sorted(set(_OBJECTIVE_ALIASES))}) nor one of "
                f"{sorted(_objectives.OBJECTIVES)}"
            )
        cls = _objectives.OBJECTIVES[spec]
        extra = {"n_classes": K} if "n_classes" in cls.__dataclass_fields__ else {}
        if spec == "multiclass_softmax":
            extra["hessian_factor"] = K / (K - 1.0)
        return cls(precision="float64", **extra)
    if name in _RANKING or name == "cross_entropy_lambda":
        raise UnsupportedModelError(f"LightGBM objective {name!r} is not supported")
    unbalanced = source.param("is_unbalance") in ("1", "true")
    if name == "binary" and unbalanced:
        if y_train is None:
            raise ValueError(
                "the model was trained with is_unbalance=True: its class weights come from the "
                "training label counts; build the objective with unbiased_criteria.adapters."
                "lightgbm.make_objective('binary', read_model(model), y_train=y_train) and "
                "pass that as objective="
            )
        pos, neg = _label_weights(y_train, source.float_param("scale_pos_weight"))
        return _objectives.make_objective(
            "binary_logistic", precision="float64", sigmoid=source.float_param("sigmoid"),
            pos_weight=pos, neg_weight=neg,
        )
    if name == "multiclassova" and unbalanced:
        raise UnsupportedModelError("multiclassova with is_unbalance=True is not supported")
    return _make_core_objective(name, source, K)


# --------------------------------------------------------------------------- routing


def _check_X(X: Any, forest: Forest, argument: str) -> Any:
    """Validate ``X`` against the model; return it (numpy converted, never modified)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(X, pd.DataFrame):
        shape = X.shape
        columns = [str(c) for c in X.columns]
        names = [c.replace(" ", "_") for c in columns]  # as LightGBM stores them
    elif sparse.issparse(X):
        if X.format not in ("csr", "csc"):
            X = sparse.csr_matrix(X)  # LightGBM predicts from CSR or CSC only (a new object)
        shape, names, columns = X.shape, None, None
    else:
        if pd is not None and isinstance(X, pd.Series):
            raise ValueError(f"{argument} must be 2-D (rows x features), got a pandas Series")
        X = np.asarray(X)
        shape, names = X.shape, None
        columns = None
        if X.dtype.kind not in "fiub":
            raise ValueError(f"{argument} must hold numbers, got dtype {X.dtype}")
    if len(shape) != 2:
        raise ValueError(f"{argument} must be 2-D (rows x features), got shape {shape}")
    if shape[0] == 0:
        raise ValueError(f"{argument} is empty (0 rows)")
    if shape[1] != forest.n_features:
        raise ValueError(
            f"{argument} has {shape[1]} features but the model expects {forest.n_features}"
        )
    model_names = list(forest.feature_names)
    default = model_names == [f"Column_{i}" for i in range(forest.n_features)]
    if names is not None and not default and names != model_names:
        i = next(i for i, (a, b) in enumerate(zip(names, model_names)) if a != b)
        raise ValueError(
            f"{argument}'s column names do not match the model's feature names: "
            f"column {i} is {columns[i]!r}, the model's is {model_names[i]!r}"
        )
    return X


def make_router(
    model: lightgbm.Booster | lightgbm.LGBMModel,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the model's trees with LightGBM's own ``pred_leaf``.

    Parameters
    ----------
    model : lightgbm.Booster or fitted lightgbm.LGBMModel
        The model that ``model_ir`` was read from.
    model_ir : Model
        ``read_model(model)``.
    X : numpy array, pandas DataFrame (category columns included) or scipy sparse matrix
        Not modified. DataFrames are handed to LightGBM as they are (it maps pandas
        categories itself).
    argument : str
        Name of ``X`` in error messages (``"X_valid"``).
    memory_budget : int
        Bytes one routing call may use: LightGBM's float64 leaf array and its int32 copy.

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR leaf node ids; ``chunk`` is a multiple of the
        trees per iteration, since LightGBM selects trees by iteration.
    """
    booster = _booster(model)
    source = model_ir.source
    forest = model_ir.forest
    if not isinstance(source, LightGBMSource):
        raise TypeError("model_ir must come from unbiased_criteria.adapters.lightgbm.read_model")
    n_trees = forest.n_trees
    if booster.num_trees() != n_trees or source.n_leaves.size != n_trees:
        raise ValueError(
            f"model has {booster.num_trees()} trees but model_ir has {n_trees}: "
            "model_ir must be read_model(model)"
        )
    X = _check_X(X, forest, argument)
    n_rows = int(X.shape[0])
    K = booster.num_model_per_iteration()
    # predict(pred_leaf=True) fills a float64 array, then casts it to int32: 12 bytes a leaf id
    chunk = chunk_size(n_rows, n_trees, memory_budget // 3)
    # LightGBM selects whole iterations: keep chunks aligned to K trees
    chunk = max(K, chunk // K * K) if n_trees >= K else max(chunk, 1)
    offset = (source.n_leaves - 1).astype(np.int32)

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= n_trees:
            raise IndexError(f"tree range [{start}, {stop}) outside [0, {n_trees})")
        it0, it1 = start // K, -(-stop // K)
        leaves = booster.predict(
            X, start_iteration=it0, num_iteration=it1 - it0, pred_leaf=True
        )
        leaves = np.asarray(leaves).reshape(n_rows, -1)
        leaves = leaves[:, start - it0 * K : stop - it0 * K]
        return (leaves + offset[start:stop]).astype(np.int32, copy=False)

    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=chunk)


# --------------------------------------------------------------------------- writing


def _g(x: float) -> str:
    """C++ ``{:g}`` (6 significant digits), as LightGBM writes gains and internal stats."""
    return f"{float(x):g}"


def _g17(x: float) -> str:
    """C++ ``{:.17g}``, as LightGBM writes thresholds and leaf values (exact)."""
    return f"{float(x):.17g}"


def _join(fmt: Callable, values) -> str:
    return " ".join(fmt(v) for v in values)


def _bitset(cats: np.ndarray) -> list[int]:
    """uint32 words with bit ``c`` set for each category ``c`` (LightGBM ConstructBitset)."""
    cats = np.asarray(cats, dtype=np.int64)
    words = np.zeros(int(cats.max()) // 32 + 1 if cats.size else 1, dtype=np.uint64)
    np.bitwise_or.at(words, cats // 32, np.uint64(1) << (cats % 32).astype(np.uint64))
    return [int(w) for w in words]


def _tree_block(tree: Tree) -> str:
    """One LightGBM text-model tree block (the lines after ``Tree=i``)."""
    if tree.rules != RULES:
        raise ValueError(f"tree rules {tree.rules} are not LightGBM's {RULES}")
    inner = tree.internal_nodes  # ascending: the root 0 comes first
    leaves = np.flatnonzero(tree.is_leaf)
    if inner.size and inner[0] != 0:
        raise ValueError("the root must be internal node 0")
    child = np.zeros(tree.n_nodes, dtype=np.int64)
    child[inner] = np.arange(inner.size)
    child[leaves] = ~np.arange(leaves.size)  # LightGBM's encoding: leaf j is ~j
    L = leaves.size

    cat_nodes = inner[tree.categorical[inner]]
    cat_index = {int(v): i for i, v in enumerate(cat_nodes)}
    boundaries, words = [0], []
    for v in cat_nodes:
        words.extend(_bitset(tree.category_set(v)))
        boundaries.append(len(words))

    threshold = [
        float(cat_index[int(v)]) if tree.categorical[v] else tree.threshold[v] for v in inner
    ]
    missing = tree.missing[inner].astype(np.int64)
    dtype = (
        tree.categorical[inner].astype(np.int64)
        | (tree.default_left[inner].astype(np.int64) << 1)
        | (missing << 2)
    )

    def finite(a, fill=0.0):
        a = np.asarray(a, dtype=np.float64)
        return np.where(np.isfinite(a), a, fill)

    def counts(a):
        return np.maximum(np.asarray(a, dtype=np.int64), 0)

    # LightGBM writes (and so keeps) no leaf weight for a single-leaf tree
    weight_line = "" if L == 1 else _join(_g17, finite(tree.host_hessian[leaves]))
    shrinkage = 1.0 if tree.bias != 0 else tree.shrinkage  # AddBias resets shrinkage to 1
    lines = [
        f"num_leaves={L}",
        f"num_cat={cat_nodes.size}",
        "split_feature=" + " ".join(str(int(f)) for f in tree.feature[inner]),
        "split_gain=" + _join(_g, finite(tree.host_gain[inner]).astype(np.float32)),
        "threshold=" + _join(_g17, threshold),
        "decision_type=" + " ".join(str(int(d)) for d in dtype),
        "left_child=" + " ".join(str(int(c)) for c in child[tree.left[inner]]),
        "right_child=" + " ".join(str(int(c)) for c in child[tree.right[inner]]),
        "leaf_value=" + _join(_g17, tree.value[leaves]),
        "leaf_weight=" + weight_line,
        "leaf_count=" + " ".join(str(int(c)) for c in counts(tree.host_count[leaves])),
        "internal_value=" + _join(_g, finite(tree.value[inner])),
        "internal_weight=" + _join(_g, finite(tree.host_hessian[inner])),
        "internal_count=" + " ".join(str(int(c)) for c in counts(tree.host_count[inner])),
    ]
    if cat_nodes.size:
        lines.append("cat_boundaries=" + " ".join(str(b) for b in boundaries))
        lines.append("cat_threshold=" + " ".join(str(w) for w in words))
    lines.append("is_linear=0")
    lines.append(f"shrinkage={_g(shrinkage)}")
    return "\n".join(lines) + "\n\n"


def _feature_importances(forest: Forest, importance_type: str) -> str:
    """The informational ``feature_importances:`` block, as GBDT::SaveModelToString writes it."""
    total = np.zeros(forest.n_features)
    for tree in forest.trees:
        inner = tree.internal_nodes
        gain = np.nan_to_num(tree.host_gain[inner].astype(np.float32))
        used = gain > 0  # LightGBM counts only splits with a positive gain
        add = np.ones(inner.size) if importance_type == "0" else gain.astype(np.float64)
        np.add.at(total, tree.feature[inner][used], add[used])
    ints = total.astype(np.int64)
    pairs = [(int(v), name) for v, name in zip(ints, forest.feature_names) if v > 0]
    pairs.sort(key=lambda p: -p[0])  # stable, like std::stable_sort
    return "feature_importances:\n" + "".join(f"{name}={v}\n" for v, name in pairs)


def model_text(source: LightGBMSource, forest: Forest) -> str:
    """The LightGBM text model of ``forest``, with the header and trailer of ``source``.

    Parameters
    ----------
    source : LightGBMSource
        ``read_model(model).source``: its header (with ``tree_sizes`` recomputed), parameters
        block and ``pandas_categorical`` are kept; the ``feature_importances:`` block is
        recomputed from ``forest`` as LightGBM computes it.
    forest : Forest
        Trees in LightGBM's order, with LightGBM's decision rules.

    Returns
    -------
    str
        What ``lightgbm.Booster(model_str=...)`` loads; for the forest read from ``source``
        it equals ``source.text`` byte for byte.
    """
    header, _, trailer = _split_text(source.text)
    blocks = [f"Tree={t}\n" + _tree_block(tree) + "\n" for t, tree in enumerate(forest.trees)]
    sizes = " ".join(str(len(b.encode("utf-8"))) for b in blocks)
    if re.search(r"^tree_sizes=.*$", header, flags=re.MULTILINE):
        header = re.sub(r"^tree_sizes=.*$", f"tree_sizes={sizes}", header, flags=re.MULTILINE)
    importance = re.search(r"^feature_importances:\n(?:[^\n]+=[^\n]*\n)*", trailer, re.M)
    kind = source.param("saved_feature_importance_type")
    if importance is not None and kind in ("0", "1"):
        trailer = (
            trailer[: importance.start()]
            + _feature_importances(forest, kind)
            + trailer[importance.end():]
        )
    return header + "".join(blocks) + trailer


def write_model(
    model: lightgbm.Booster | lightgbm.LGBMModel, forest: Forest
) -> lightgbm.Booster | lightgbm.LGBMModel:
    """A new LightGBM model of the same type as ``model`` holding ``forest``'s trees.

    Parameters
    ----------
    model : lightgbm.Booster or fitted lightgbm.LGBMModel
        The original model; not modified. Its header, parameters and pandas categories are
        kept.
    forest : Forest
        IR trees (e.g. pruned by ``trees.collapse_nodes``), in LightGBM's order.

    Returns
    -------
    lightgbm.Booster or LGBMModel
        A Booster built from the new text model, or a copy of the estimator holding it.
    """
    model_ir = read_model(model)  # also refuses DART, rf and linear trees
    source = model_ir.source
    if forest.n_features != model_ir.forest.n_features:
        raise ValueError(
            f"forest has {forest.n_features} features but the model has "
            f"{model_ir.forest.n_features}"
        )
    K = model_ir.forest.n_outputs
    if forest.n_trees % K:
        raise ValueError(f"forest has {forest.n_trees} trees, not a multiple of {K} per iteration")
    text = model_text(source, forest)
    booster = lightgbm.Booster(model_str=text)
    # predict() uses best_iteration by default: keep the original's (within the new trees)
    booster.best_iteration = min(source.best_iteration, forest.n_trees // K)
    if isinstance(model, lightgbm.Booster):
        return booster
    # a copy of the estimator whose booster is the new one (the old one is not copied)
    return copy.deepcopy(model, memo={id(model._Booster): booster})


# --------------------------------------------------------------------------- training
#
# ``train`` drives LightGBM one iteration at a time through the core's loop
# (``unbiased_criteria.boosting.boost``): the loop owns the running raw scores and the
# gradients, LightGBM grows each iteration from them on a Booster with ``objective='none'``
# (:class:`LGBMGrower`), the loop scores and prunes the new trees. Evaluation uses LightGBM's
# metric names and formulas (below) on the loop's scores, and LightGBM's own callback objects
# (``early_stopping``, ``log_evaluation``, ``record_evaluation``...) see the results in
# ``lightgbm.train``'s format.

#: LightGBM's kEpsilon, a float literal (``1e-15f``)
_F32_EPSILON = float(np.float32(1e-15))
#: floor of the predictions in LightGBM's poisson and tweedie metrics (``1e-10f``)
_F32_TINY = float(np.float32(1e-10))

#: LightGBM objectives the training hook refuses, with the reason
_NOT_TRAINABLE = {
    "regression_l1": "LightGBM renews its leaf values with weighted medians of the residuals "
                     "(RenewTreeOutput), which a Booster driven by custom gradients cannot do",
    "quantile": "LightGBM renews its leaf values with weighted percentiles of the residuals "
                "(RenewTreeOutput), which a Booster driven by custom gradients cannot do",
    "mape": "LightGBM renews its leaf values with weighted medians of the residuals "
            "(RenewTreeOutput), which a Booster driven by custom gradients cannot do",
    "lambdarank": "ranking objectives are not supported",
    "rank_xendcg": "ranking objectives are not supported",
    "cross_entropy_lambda": "its gradients are not implemented in the core",
}


def _mean(loss: np.ndarray, w: np.ndarray | None) -> float:
    """LightGBM's ``sum(loss * w) / sum(w)`` (``sum(loss) / n`` without weights)."""
    if w is None:
        return float(np.sum(loss) / loss.shape[0])
    return float(np.sum(loss * w) / np.sum(w))


def _safe_log(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


def _m_l2(y, p, raw, w, s):
    return _mean((p - y) ** 2, w)


def _m_rmse(y, p, raw, w, s):
    return math.sqrt(_m_l2(y, p, raw, w, s))


def _m_l1(y, p, raw, w, s):
    return _mean(np.abs(p - y), w)


def _m_quantile(y, p, raw, w, s):
    a, d = s.float_param("alpha"), y - p
    return _mean(np.where(d < 0, (a - 1.0) * d, a * d), w)


def _m_huber(y, p, raw, w, s):
    a, d = s.float_param("alpha"), p - y
    return _mean(np.where(np.abs(d) <= a, 0.5 * d * d, a * (np.abs(d) - 0.5 * a)), w)


def _m_fair(y, p, raw, w, s):
    c, x = s.float_param("fair_c"), np.abs(p - y)
    return _mean(c * x - c * c * np.log(1.0 + x / c), w)


def _m_poisson(y, p, raw, w, s):
    q = np.maximum(p, _F32_TINY)
    return _mean(q - y * np.log(q), w)


def _m_mape(y, p, raw, w, s):
    return _mean(np.abs(y - p) / np.maximum(1.0, np.abs(y)), w)


def _m_gamma(y, p, raw, w, s):
    # LightGBM's negative log-likelihood with psi = 1: y / p + log(p)
    # c = log(y / psi) - log(y) is not 0: LightGBM takes the second log of the float32 label
    # in float32
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = -1.0 / p
        b = -_safe_log(-theta)
        y32 = y.astype(np.float32)
        log32 = np.where(y32 > 0, np.log(np.where(y32 > 0, y32, 1)), -np.inf)
        c = _safe_log(y) - log32.astype(np.float64)
        return _mean(-((y * theta - b) + c), w)


def _m_gamma_deviance(y, p, raw, w, s):
    t = y / (p + 1.0e-9)
    loss = t - _safe_log(t) - 1.0
    return float(2.0 * (np.sum(loss) if w is None else np.sum(loss * w)))


def _m_tweedie(y, p, raw, w, s):
    rho = s.float_param("tweedie_variance_power")
    q = np.maximum(p, _F32_TINY)
    a = y * np.exp((1.0 - rho) * np.log(q)) / (1.0 - rho)
    b = np.exp((2.0 - rho) * np.log(q)) / (2.0 - rho)
    return _mean(-a + b, w)


def _m_binary_logloss(y, p, raw, w, s):
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(p > _F32_EPSILON, -np.log(p), -math.log(_F32_EPSILON))
        neg = np.where(1.0 - p > _F32_EPSILON, -np.log(1.0 - p), -math.log(_F32_EPSILON))
    return _mean(np.where(y > 0, pos, neg), w)


def _m_binary_error(y, p, raw, w, s):
    return _mean(np.where(p <= 0.5, y > 0, y <= 0).astype(np.float64), w)


def _m_auc(y, p, raw, w, s):
    """LightGBM's AUC: raw scores in descending order, ties count half; 1 if one class only."""
    order = np.argsort(-raw, kind="stable")
    score = raw[order]
    pos = y[order] > 0
    weight = np.ones(y.shape[0]) if w is None else w[order]
    group = np.cumsum(np.r_[True, score[1:] != score[:-1]]) - 1
    cur_pos = np.bincount(group, weights=pos * weight)
    cur_neg = np.bincount(group, weights=~pos * weight)
    before = np.r_[0.0, np.cumsum(cur_pos)[:-1]]
    accum = float(np.sum(cur_neg * (cur_pos * 0.5 + before)))
    sum_pos, sum_w = float(cur_pos.sum()), float(weight.sum())
    if sum_pos > 0 and sum_pos != sum_w:
        return accum / (sum_pos * (sum_w - sum_pos))
    return 1.0


def _m_cross_entropy(y, p, raw, w, s):
    eps = 1.0e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        a = y * np.where(p > eps, np.log(p), math.log(eps))
        b = (1.0 - y) * np.where(1.0 - p > eps, np.log(1.0 - p), math.log(eps))
    return _mean(-(a + b), w)


def _m_multi_logloss(y, p, raw, w, s):
    pk = p[np.arange(y.shape[0]), y.astype(np.int64)]
    with np.errstate(divide="ignore"):
        return _mean(np.where(pk > _F32_EPSILON, -np.log(pk), -math.log(_F32_EPSILON)), w)


def _multi_error(top_k: int):
    def func(y, p, raw, w, s):
        ref = p[np.arange(y.shape[0]), y.astype(np.int64)]
        # LightGBM counts the classes scored at least as high as the label's, itself included
        larger = np.sum(p >= ref[:, None], axis=1)
        return _mean((larger > top_k).astype(np.float64), w)

    return func


#: LightGBM metric name (as it reports it) -> ``func(y, prediction, raw, weight, source)``;
#: ``prediction`` is the objective's output (the raw score for a custom objective)
_METRIC_FUNCS: dict[str, Callable] = {
    "l2": _m_l2, "rmse": _m_rmse, "l1": _m_l1, "quantile": _m_quantile, "huber": _m_huber,
    "fair": _m_fair, "poisson": _m_poisson, "mape": _m_mape, "gamma": _m_gamma,
    "gamma_deviance": _m_gamma_deviance, "tweedie": _m_tweedie,
    "binary_logloss": _m_binary_logloss, "binary_error": _m_binary_error, "auc": _m_auc,
    "cross_entropy": _m_cross_entropy, "multi_logloss": _m_multi_logloss,
    "multi_error": _multi_error(1),
}


def _metric_func(name: str) -> Callable:
    """The function of a metric LightGBM reported as ``name``; ValueError if unsupported."""
    if name in _METRIC_FUNCS:
        return _METRIC_FUNCS[name]
    match = re.fullmatch(r"multi_error@(\d+)", name)
    if match:
        return _multi_error(int(match.group(1)))
    raise ValueError(
        f"metric {name!r} is not supported by the training hook (supported: "
        f"{sorted(_METRIC_FUNCS)} and multi_error@k); compute it with feval"
    )


class _Labels(np.ndarray):
    """Labels of one set of rows that know those rows (``rows``).

    The core's loop hands every evaluation set's labels, unchanged, to the metrics and to
    ``feval``; the wrappers in :func:`train` find the set's Dataset and init score from them.
    """

    rows: _Rows | None

    def __array_finalize__(self, obj):
        self.rows = getattr(obj, "rows", None)


@dataclass(eq=False)
class _Rows:
    """One set of rows: its Dataset, raw data (what ``predict`` routes), labels and offsets."""

    name: str
    dataset: lightgbm.Dataset
    data: Any
    y: np.ndarray
    weight: np.ndarray | None
    offset: np.ndarray | None  # (n, K): the Dataset's init_score, None if it has none

    def labels(self) -> _Labels:
        out = self.y.view(_Labels)
        out.rows = self
        return out

    def shifted(self, raw: np.ndarray) -> np.ndarray:
        """Raw scores plus the Dataset's init score, as LightGBM scores the set."""
        if self.offset is None:
            return raw
        return raw + (self.offset if raw.ndim == 2 else self.offset[:, 0])


def _single_leaf() -> Tree:
    return make_tree([-1], [-1], [-1], value=[0.0], rules=RULES)


class LGBMGrower:
    """A :class:`unbiased_criteria.boosting.Grower` on a LightGBM Booster.

    ``grow(grad, hess)`` hands the loop's float32 arrays ``(n, K)`` to ``Booster.update`` on a
    Booster made with ``objective='none'`` (class-major for multiclass, as LightGBM wants),
    reads the K new trees with ``dump_model(start_iteration=it, num_iteration=1)`` and the
    reader's parser, and returns them in the IR (leaf values shrunk, no init score). The
    Booster's own score caches are never used: they do not see pruning.

    ``leaf_nodes(which)`` routes the raw rows of set ``which`` (0: the training rows) through
    the new iteration with ``predict(pred_leaf=True)``: the written model routes them the
    same way, so the loop's running scores are exactly what it will predict.

    When no tree of an iteration has a split, LightGBM drops the iteration; the grower then
    returns K single-leaf trees of value 0 (which add nothing).

    Parameters
    ----------
    booster : lightgbm.Booster
        Made with ``objective='none'`` on the training Dataset; it gains one iteration per call.
    data : sequence
        The raw rows of the training set (first) and of each evaluation set, as ``predict``
        accepts them; the same object twice is routed once per iteration.
    n_categories : list of int
        Categories of each feature (:func:`_n_categories`), for ``cat_l2``.
    cat_l2 : float
    max_cat_to_onehot : int
    num_threads : int
        LightGBM's ``num_threads`` of the training: ``predict`` must use the same, or OpenMP
        switches thread teams on every call, which made each ``update`` up to 100 times slower
        on a loaded machine.
    """

    def __init__(
        self,
        booster: lightgbm.Booster,
        data: list[Any],
        *,
        n_categories: list[int],
        cat_l2: float,
        max_cat_to_onehot: int,
        num_threads: int = 0,
    ) -> None:
        self.booster = booster
        self._num_threads = int(num_threads)
        self.n_outputs = booster.num_model_per_iteration()
        self._data = list(data)
        self._n_categories = n_categories
        self._cat_l2 = cat_l2
        self._onehot = max_cat_to_onehot
        self._iteration: int | None = None  # Booster iteration of the last grown trees
        self._offsets = np.zeros(self.n_outputs, dtype=np.int32)
        self._nodes: dict[int, np.ndarray] = {}

    def grow(self, grad: np.ndarray, hess: np.ndarray) -> list[Tree]:
        """Grow one iteration from ``(n, K)`` float32 gradients and hessians."""
        K = self.n_outputs
        self._nodes = {}
        self._iteration = None
        g = np.ascontiguousarray(grad if K > 1 else grad[:, 0], dtype=np.float32)
        h = np.ascontiguousarray(hess if K > 1 else hess[:, 0], dtype=np.float32)
        it = self.booster.current_iteration()
        # Booster.update(fobj=...) first resets the objective to 'none', which fails when
        # LightGBM kept no usable feature; the Booster already has objective 'none', so call
        # the step it then takes (LGBM_BoosterUpdateOneIterCustom) directly
        step = getattr(self.booster, "_Booster__boost", None)
        if step is not None:
            step(grad=g, hess=h)
        else:  # pragma: no cover - other LightGBM versions
            self.booster.update(fobj=lambda preds, data: (g, h))
        if self.booster.current_iteration() == it:  # no split anywhere: LightGBM dropped it
            return [_single_leaf() for _ in range(K)]
        infos = self.booster.dump_model(start_iteration=it, num_iteration=1)["tree_info"]
        trees = [
            make_tree(
                **_parse_tree(info, self._n_categories, self._cat_l2, self._onehot),
                shrinkage=float(info["shrinkage"]), rules=RULES,
            )
            for info in infos
        ]
        self._iteration = it
        self._offsets = np.array([t.n_leaves - 1 for t in trees], dtype=np.int32)
        return trees

    def leaf_nodes(self, which: int) -> np.ndarray:
        """IR leaf node ids ``(n_rows, K)`` of set ``which`` in the last grown iteration."""
        X = self._data[which]
        key = id(X)
        if key not in self._nodes:
            n = int(X.shape[0])
            if self._iteration is None:
                nodes = np.zeros((n, self.n_outputs), dtype=np.int32)
            else:
                leaves = self.booster.predict(
                    X, start_iteration=self._iteration, num_iteration=1, pred_leaf=True,
                    num_threads=self._num_threads,
                )
                nodes = np.asarray(leaves).reshape(n, self.n_outputs) + self._offsets
            self._nodes[key] = nodes.astype(np.int32, copy=False)
        return self._nodes[key]


@dataclass
class _Training:
    """What :func:`_train` returns: the booster and the loop's own record (for tests)."""

    booster: lightgbm.Booster
    result: Any  # unbiased_criteria.boosting.BoostResult
    raw_eval: dict[str, np.ndarray]
    n_iterations: int


def _resolved(params: dict[str, Any], name: str, default: Any = None) -> Any:
    """The value of LightGBM parameter ``name`` in ``params``, through its aliases."""
    return _choose_param_value(main_param_name=name, params=params, default_value=default)[name]


def _trainable_objective(spec: Any) -> str:
    """LightGBM's canonical name for objective ``spec``; ValueError if unknown or refused."""
    if spec is None:
        return "regression"
    if not isinstance(spec, str):
        raise TypeError(
            f"params['objective'] must be a string or a callable, got {type(spec).__name__}"
        )
    name = _OBJECTIVE_ALIASES.get(spec.strip().lower())
    if name is None:
        raise ValueError(
            f"unknown objective {spec!r}: use one of LightGBM's objectives "
            f"({sorted(set(_OBJECTIVE_ALIASES) - set(_NOT_TRAINABLE))}) or a callable "
            "f(preds, train_data) -> (grad, hess)"
        )
    if name in _NOT_TRAINABLE:
        raise UnsupportedModelError(
            f"objective {spec!r} is not supported by the training hook: {_NOT_TRAINABLE[name]}"
        )
    return name


def _raw_rows(ds: lightgbm.Dataset, argument: str) -> Any:
    """The raw data of ``ds``, which ``predict(pred_leaf=True)`` routes every round."""
    if getattr(ds, "used_indices", None) is not None:
        raise ValueError(
            f"{argument} is a subset of another Dataset (Dataset.subset); pass a Dataset "
            "built from its own data"
        )
    data = ds.data
    if data is None:
        raise ValueError(
            f"{argument} no longer holds its raw data (it was constructed with "
            "free_raw_data=True): the training hook routes the raw rows through every new "
            "tree; pass an unconstructed Dataset or one made with free_raw_data=False"
        )
    if isinstance(data, str | os.PathLike):
        raise ValueError(
            f"{argument} reads its data from the file {str(data)!r}: load the data and build "
            "the Dataset from an array, DataFrame or sparse matrix"
        )
    if isinstance(data, lightgbm.Sequence) or (
        isinstance(data, list) and data and isinstance(data[0], lightgbm.Sequence)
    ):
        raise ValueError(f"{argument} is built from lightgbm.Sequence objects, not supported")
    if isinstance(data, list):
        data = np.asarray(data, dtype=np.float64)
    return data


def _given_labels(ds: lightgbm.Dataset, argument: str) -> np.ndarray:
    """The labels of ``ds`` before construction, checked for presence and NaN."""
    label = ds.label if ds._handle is None else ds.get_label()
    if label is None:
        raise ValueError(f"{argument} has no labels: build it with lightgbm.Dataset(X, label=y)")
    try:
        y = np.asarray(label, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{argument}'s labels must be numeric") from None
    return check_labels(y, y.shape[0] if y.ndim else 0, f"{argument}'s label",
                        _objectives.Objective())


def _init_offset(ds: lightgbm.Dataset, K: int) -> np.ndarray | None:
    """The constructed Dataset's init_score as ``(n, K)`` (LightGBM's flat layout is
    class-major), or None."""
    init = ds.get_init_score()
    if init is None:
        return None
    init = np.asarray(init, dtype=np.float64)
    n = ds.num_data()
    if init.ndim == 2:
        return init.reshape(n, K)
    return init.reshape(K, n).T.copy()


def _row_set(ds, data, name, argument, K) -> _Rows:
    """A constructed Dataset's rows, labels (float32, as LightGBM stores them) and weights."""
    y = np.asarray(ds.get_label(), dtype=np.float32).astype(np.float64)
    w = ds.get_weight()
    w = None if w is None else np.asarray(w, dtype=np.float32).astype(np.float64)
    if w is not None and (not np.all(np.isfinite(w)) or np.any(w < 0)):
        raise ValueError(f"{argument}'s weights must be finite and non-negative")
    return _Rows(name, ds, data, y, w, _init_offset(ds, K))


def _holdout_seed(random_state: Any, params: dict[str, Any]) -> Any:
    """Seed of the held-out draws: ``random_state``, else LightGBM's ``seed``, else 0."""
    if random_state is None:
        random_state = _resolved(params, "seed")
    if random_state is None:
        return 0
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    return random_state


def _training_objective(name: str, source: LightGBMSource, K: int, y: np.ndarray):
    """The core objective LightGBM's built-in ``name`` computes, with its parameters."""
    unbalanced = source.param("is_unbalance") in ("1", "true")
    if name == "binary" and unbalanced:
        pos, neg = _label_weights(y, source.float_param("scale_pos_weight"))
        return _objectives.make_objective(
            "binary_logistic", precision="float64", sigmoid=source.float_param("sigmoid"),
            pos_weight=pos, neg_weight=neg,
        )
    if name == "multiclassova" and unbalanced:
        raise UnsupportedModelError("multiclassova with is_unbalance=True is not supported")
    if name == "regression" and source.param("reg_sqrt") in ("1", "true"):
        raise UnsupportedModelError("regression with reg_sqrt=True is not supported")
    return _make_core_objective(name, source, K)


def _splits_frame(splits, n_trees: int, K: int, names: tuple[str, ...]) -> pd.DataFrame:
    """The loop's per-split records of the kept trees, with iteration and feature names."""
    columns = ["tree", "node", "depth", "feature_index", "threshold", "n_train", "n_valid",
               "k", "biased_gain", "unbiased_gain", "host_gain", "usable", "class", "kept"]
    if splits is None:
        frame = pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in columns})
    else:
        frame = splits.loc[splits["tree"] < n_trees, columns].reset_index(drop=True)
    frame.insert(0, "iteration", (frame["tree"] // K).astype(np.int64))
    frame.insert(5, "feature", np.asarray(names, dtype=object)[
        frame["feature_index"].to_numpy(dtype=np.int64)])
    return frame


def train(
    params: dict[str, Any],
    train_set: lightgbm.Dataset,
    num_boost_round: int = 100,
    *,
    valid_sets: list[lightgbm.Dataset] | None = None,
    valid_names: list[str] | None = None,
    feval: Callable | list[Callable] | None = None,
    callbacks: list[Callable] | None = None,
    holdout_fraction: float = 0.2,
    redraw_holdout: bool = True,
    prune_threshold: float | None = 0.0,
    n_draws: int = 1,
    min_k: int = 5,
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
    callbacks : list of callables, optional
        LightGBM callbacks run after each round, e.g. ``lightgbm.early_stopping(n)`` (also
        from ``params['early_stopping_round']``), ``lightgbm.log_evaluation(period)``,
        ``lightgbm.record_evaluation(d)``. ``env.model`` is the Booster that grows the trees
        (it holds them unpruned). Callbacks that run before an iteration
        (``lightgbm.reset_parameter``) are refused: the learning rate must stay fixed.
    holdout_fraction : float
        Fraction of the training rows held out each round, in [0, 1). Held-out rows stay in
        the Dataset with zero gradient and hessian, so LightGBM still counts them for
        ``min_data_in_leaf`` (not for ``min_sum_hessian_in_leaf``). 0 disables pruning.
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
        whether it survived) and, per feature over the kept splits, :func:`training_report`.

    Raises
    ------
    ValueError
        Unknown objective, ``holdout_fraction`` outside [0, 1), a Dataset without labels or
        raw data, NaN labels, unsupported metrics.
    UnsupportedModelError
        Objectives, boosting modes or ``linear_tree`` the hook cannot drive.

    Notes
    -----
    With a built-in objective and ``boost_from_average`` the loop starts from
    ``objective.init_score(y, w)`` over all training rows, as LightGBM does; LightGBM's one
    quirk not reproduced: with ``boost_from_average=False`` and a first iteration without any
    split, LightGBM adds the init score to that constant tree anyway. An iteration without any
    split is kept as constant trees of value 0 (LightGBM drops it).
    """
    return _train(
        params, train_set, num_boost_round, valid_sets=valid_sets, valid_names=valid_names,
        feval=feval, callbacks=callbacks, holdout_fraction=holdout_fraction,
        redraw_holdout=redraw_holdout, prune_threshold=prune_threshold, n_draws=n_draws,
        min_k=min_k, random_state=random_state, progress=progress,
    ).booster


def _train(
    params, train_set, num_boost_round, *, valid_sets, valid_names, feval, callbacks,
    holdout_fraction, redraw_holdout, prune_threshold, n_draws, min_k, random_state, progress,
) -> _Training:
    """:func:`train`, also returning the loop's record."""
    # cheap checks first, before any Dataset is constructed
    valid_sets, valid_names = _check_sets(train_set, valid_sets, valid_names)
    holdout = HoldoutPlan(float(holdout_fraction), bool(redraw_holdout))
    if prune_threshold is not None:
        prune_threshold = float(prune_threshold)
        if math.isnan(prune_threshold):
            raise ValueError("prune_threshold must be a number or None, got NaN")
    params, name, fobj, num_boost_round = _resolve_params(params, num_boost_round)
    options = GainOptions(n_draws=n_draws, min_k=min_k,
                          random_state=_holdout_seed(random_state, params))
    params, callbacks_after = _after_iteration_callbacks(params, callbacks)

    setup = _construct(params, name, train_set, valid_sets, valid_names)
    objective, convert, init = _loop_objective(name, fobj, setup)
    source = setup.source
    fp = source.float_param
    if prune_threshold is not None:
        for message in _replay_warnings(source):
            if message.startswith(("monotone", "path_smooth")):
                warnings.warn(
                    message.split(";")[0] + "; collapsed nodes get LightGBM's plain leaf value",
                    UserWarning, stacklevel=3,
                )

    eval_rows = setup.eval_rows
    grower = LGBMGrower(
        setup.host, [setup.train_rows.data] + [r.data for r in eval_rows],
        n_categories=_n_categories(setup.dump), cat_l2=fp("cat_l2"),
        max_cat_to_onehot=int(fp("max_cat_to_onehot")), num_threads=int(fp("num_threads")),
    )
    hooks = _LoopHooks(
        grower=grower, params=params, num_boost_round=num_boost_round, convert=convert,
        source=source, callbacks=callbacks_after,
        fevals=[f for f in ([feval] if callable(feval) else list(feval or [])) if f is not None],
    )
    result = boost(
        grower, objective, setup.train_rows.y, setup.train_rows.weight,
        num_boost_round=num_boost_round,
        split_score=SplitScore(l1=fp("lambda_l1"), l2=fp("lambda_l2"),
                               max_delta_step=fp("max_delta_step")),
        init_score=init, score_dtype=np.float64,
        holdout=holdout, options=options, prune_threshold=prune_threshold,
        eval_sets=[EvalSet(r.name, r.labels(), r.weight) for r in eval_rows],
        metrics=[hooks.metric(m, hib) for m, hib in setup.metric_info],
        feval=hooks.feval if hooks.fevals else None, callback=hooks.callback,
        progress=progress,
    )
    n_iterations = hooks.best_iteration if hooks.stopped else num_boost_round
    booster = _written_booster(setup, result, init, n_iterations)
    booster.best_iteration = hooks.best_iteration if hooks.stopped else 0
    best_score: dict[str, dict[str, float]] = defaultdict(OrderedDict)
    for r in hooks.best_score if hooks.stopped else hooks.last_results:
        best_score[r[0]][r[1]] = r[2]
    booster.best_score = best_score
    raw_eval = {r.name: raw for r, raw in zip(eval_rows, result.raw_eval)}
    return _Training(booster, result, raw_eval, n_iterations)


def _check_sets(train_set, valid_sets, valid_names):
    """Type checks of the Datasets, as ``lightgbm.train`` makes them."""
    if not isinstance(train_set, lightgbm.Dataset):
        raise TypeError(f"train_set must be a lightgbm.Dataset, got {type(train_set).__name__}")
    if valid_sets is None:
        valid_sets = []
    elif isinstance(valid_sets, lightgbm.Dataset):
        valid_sets = [valid_sets]
    for i, ds in enumerate(valid_sets):
        if not isinstance(ds, lightgbm.Dataset):
            raise TypeError(f"valid_sets[{i}] must be a lightgbm.Dataset, got {type(ds).__name__}")
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    return list(valid_sets), valid_names


def _resolve_params(params, num_boost_round):
    """Params with aliases resolved as ``lightgbm.train`` resolves them, the canonical
    objective name (None for a callable), the callable, and the number of rounds."""
    params = _choose_param_value(main_param_name="objective", params=dict(params or {}),
                                 default_value=None)
    fobj = None
    if callable(params["objective"]):
        fobj, params["objective"], name = params["objective"], "none", None
    else:
        name = _trainable_objective(params["objective"])
    params = _choose_param_value(main_param_name="num_iterations", params=params,
                                 default_value=num_boost_round)
    rounds = params["num_iterations"]
    if not isinstance(rounds, int | np.integer) or rounds <= 0:
        raise ValueError(f"num_boost_round must be a positive integer, got {rounds!r}")
    boosting = str(_resolved(params, "boosting", "gbdt")).lower()
    if boosting in ("rf", "random_forest", "dart"):
        raise UnsupportedModelError(f"boosting={boosting!r} is not supported: use 'gbdt'")
    if str(_resolved(params, "linear_tree", False)).lower() in ("1", "true"):
        raise UnsupportedModelError("linear_tree=True is not supported: leaves hold models")
    return params, name, fobj, int(rounds)


def _after_iteration_callbacks(params, callbacks):
    """The callbacks in ``lightgbm.train``'s order, with early stopping from ``params``."""
    params = _choose_param_value(main_param_name="early_stopping_round", params=params,
                                 default_value=None)
    if params["early_stopping_round"] is None:
        params.pop("early_stopping_round")
    callbacks = list(callbacks or [])
    for i, cb in enumerate(callbacks):
        cb.__dict__.setdefault("order", i - len(callbacks))
    callback_set = set(callbacks)
    rounds = params.get("early_stopping_round", 0)
    if not isinstance(rounds, int | np.integer):
        raise TypeError(f"early_stopping_round must be an integer, got {rounds!r}")
    if rounds > 0:
        callback_set.add(lightgbm.early_stopping(
            stopping_rounds=rounds, first_metric_only=params.get("first_metric_only", False),
            min_delta=params.get("early_stopping_min_delta", 0.0),
            verbose=_resolved(params, "verbosity", 1) > 0,
        ))
    if any(getattr(cb, "before_iteration", False) for cb in callback_set):
        raise ValueError(
            "callbacks that run before each iteration (lightgbm.reset_parameter...) are not "
            "supported: the learning rate and tree parameters must stay fixed during training"
        )
    return params, sorted(callback_set, key=attrgetter("order"))


@dataclass
class _Setup:
    """The constructed Datasets and Boosters of one training run."""

    host: lightgbm.Booster  # objective 'none': grows the trees
    source: LightGBMSource  # header and parameters of the model lightgbm.train would write
    metric_info: list[tuple[str, bool]]  # LightGBM's metric names and higher_is_better
    n_outputs: int
    dump: dict  # the host's dump_model() before training: feature names and infos
    train_rows: _Rows
    eval_rows: list[_Rows]  # the training set first if it is evaluated, then the others


def _construct(params, name, train_set, valid_sets, valid_names) -> _Setup:
    """Construct the Datasets as ``lightgbm.train`` does, and the two Boosters.

    A Booster with the real objective (never trained) gives the written model's header and
    ``parameters:`` and LightGBM's metric names; a Booster with ``objective='none'`` grows the
    trees. Raw data and labels are taken first: construction may free them.
    """
    train_data = _raw_rows(train_set, "train_set")
    _given_labels(train_set, "train_set")
    train_name, reduced = "training", []
    for i, ds in enumerate(valid_sets):
        if ds is train_set:
            if valid_names is not None:
                train_name = valid_names[i]
            continue
        argument = f"valid_sets[{i}]"
        data = _raw_rows(ds, argument)
        _given_labels(ds, argument)
        nm = valid_names[i] if valid_names is not None and len(valid_names) > i else f"valid_{i}"
        reduced.append((ds, data, nm, argument))
    has_train_eval = any(ds is train_set for ds in valid_sets)

    host_params = _choose_param_value(main_param_name="metric", params=params,
                                      default_value=None)
    host_params.update(objective="none", metric="None")
    train_set._update_params(params)._set_predictor(None)
    for ds, *_ in reduced:
        ds._update_params(params).set_reference(train_set)
    try:
        template = lightgbm.Booster(params=params, train_set=train_set)
        host = lightgbm.Booster(params=host_params, train_set=train_set)
        for ds, *_ in reduced:
            ds.construct()
    finally:
        train_set._reverse_update_params()
        for ds, *_ in reduced:
            ds._reverse_update_params()
    if has_train_eval:
        host.set_train_data_name(train_name)
    text = template.model_to_string(num_iteration=-1)
    metric_info = [(r.metric_name, bool(r.maximize)) for r in template.eval_train()]
    del template

    K = host.num_model_per_iteration()
    train_rows = _row_set(train_set, train_data, train_name, "train_set", K)
    if train_rows.weight is not None and not train_rows.weight.sum() > 0:
        raise ValueError("train_set's weights sum to zero: no row would count")
    eval_rows = [train_rows] if has_train_eval else []
    eval_rows += [_row_set(ds, data, nm, arg, K) for ds, data, nm, arg in reduced]
    source = LightGBMSource(text=text, params=_parse_parameters(text), objective=name,
                            n_leaves=np.zeros(0, dtype=np.int64))
    return _Setup(host, source, metric_info, K, host.dump_model(num_iteration=-1), train_rows,
                  eval_rows)


def _loop_objective(name, fobj, setup: _Setup):
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

    base = _training_objective(name, setup.source, K, y)
    base.check_labels(y, "train_set's label")
    for r in setup.eval_rows:
        if r is not rows:
            base.check_labels(r.y, f"labels of valid set {r.name!r}")
    init = np.zeros(K)
    if rows.offset is None and setup.source.param("boost_from_average") in ("1", "true"):
        init = np.atleast_1d(base.init_score(y, w))
        init = init.astype(np.float64)
        init[np.abs(init) <= _F32_EPSILON] = 0.0  # LightGBM: only |init| > kEpsilon
    objective = base
    if rows.offset is not None:
        objective = _objectives.CustomObjective(
            func=lambda y_, raw, w_: base.grad_hess(y, shift(raw), w), outputs=K)
    return objective, base.predict, init


class _LoopHooks:
    """The core loop's metrics, ``feval`` and ``callback`` for one training run.

    Metrics and ``feval`` find their evaluation set through the labels the loop hands them
    (:class:`_Labels`). ``callback`` runs LightGBM's callbacks on the results in
    ``lightgbm.train``'s format; when one raises ``EarlyStopException`` it records the best
    iteration and score as ``lightgbm.train`` does and stops the loop.
    """

    def __init__(self, *, grower, params, num_boost_round, convert, source, callbacks, fevals):
        self.grower, self.params, self.num_boost_round = grower, params, num_boost_round
        self.convert, self.source, self.callbacks = convert, source, callbacks
        self.fevals = fevals
        self.stopped = False
        self.best_iteration = 0
        self.best_score: list = []
        self.last_results: list = []
        self._EvalResult = getattr(lightgbm.basic, "EvalResult", None)

    def metric(self, name: str, higher_is_better: bool) -> Metric:
        func, convert, source = _metric_func(name), self.convert, self.source

        def value(y, raw, w, _objective):
            rows = y.rows
            r = rows.shifted(raw)
            return func(rows.y, convert(r), r, rows.weight, source)

        return Metric(name, value, higher_is_better)

    def feval(self, y, raw, w):
        rows = y.rows
        preds = self.convert(rows.shifted(raw))
        out = []
        for f in self.fevals:
            res = f(preds, rows.dataset)
            out.extend(res if isinstance(res, list) else [res])
        return [(str(n), float(v), bool(b)) for n, v, b in out]

    def callback(self, it: int, evaluations: dict) -> bool:
        """Run LightGBM's callbacks after round ``it``; True stops the loop."""
        results = [(s, m, v, hib) for (s, m), (v, hib) in evaluations.items()]
        if self._EvalResult is not None:
            results = [self._EvalResult(*r) for r in results]
        self.last_results = results
        env = lightgbm.callback.CallbackEnv(
            model=self.grower.booster, params=self.params, iteration=it, begin_iteration=0,
            end_iteration=self.num_boost_round, evaluation_result_list=results,
        )
        try:
            for cb in self.callbacks:
                cb(env)
        except lightgbm.callback.EarlyStopException as stop:
            self.stopped = True
            self.best_iteration = stop.best_iteration + 1
            self.best_score = list(stop.best_score)
        return self.stopped


def _written_booster(setup: _Setup, result, init: np.ndarray, n_iterations: int):
    """The model of the first ``n_iterations`` pruned iterations, init folded in (AddBias:
    values + init, ``bias = init``, written with ``shrinkage=1``), with its split records."""
    K = setup.n_outputs
    trees = list(result.trees[: n_iterations * K])
    for k in range(K):
        if init[k] != 0.0:
            trees[k] = replace(trees[k], value=trees[k].value + init[k], bias=float(init[k]))
    names = tuple(setup.dump["feature_names"])
    forest = Forest(
        trees=tuple(trees), tree_class=np.arange(len(trees), dtype=np.int64) % K,
        tree_iteration=np.arange(len(trees), dtype=np.int64) // K, base_score=np.zeros(K),
        n_features=len(names), feature_names=names, score_dtype=np.float64,
    )
    booster = lightgbm.Booster(model_str=model_text(setup.source, forest))
    booster.unbiased_splits = _splits_frame(result.splits, len(trees), K, names)
    return booster


def _splits_of(model: lightgbm.Booster | lightgbm.LGBMModel):
    booster = _booster(model)
    frame = getattr(booster, "unbiased_splits", None)
    if frame is None:
        raise ValueError(
            "the model was not trained by unbiased_criteria.adapters.lightgbm.train (or was "
            "copied with copy.deepcopy, which LightGBM implements by re-loading the model text "
            "and loses Python attributes; pickle keeps them)"
        )
    return booster, frame


def training_splits(model: lightgbm.Booster | lightgbm.LGBMModel) -> pd.DataFrame:
    """Every split scored while :func:`train` grew ``model``, one row per split.

    Parameters
    ----------
    model : lightgbm.Booster or fitted estimator
        Returned by :func:`train` (or an ``UnbiasedLGBM*`` estimator).

    Returns
    -------
    pandas.DataFrame
        Columns ``iteration, tree, node, depth, feature_index, feature, threshold, n_train,
        n_valid, k, biased_gain, unbiased_gain, host_gain, usable, class, kept``: ``node`` is
        LightGBM's ``split_index`` in the tree as grown (before pruning), ``n_train`` /
        ``n_valid`` count the rows that built it / were held out, ``unbiased_gain`` is U at
        the time the split was made (at that round's gradients), ``kept`` whether it is in the
        model. Only the trees of the returned model (up to ``best_iteration``). Empty when no
        split was scored (``prune_threshold=None`` or ``holdout_fraction=0``).
    """
    return _splits_of(model)[1].copy()


def training_report(model: lightgbm.Booster | lightgbm.LGBMModel) -> ImportanceReport:
    """The unbiased importance gathered during training, over the kept splits.

    Parameters
    ----------
    model : lightgbm.Booster or fitted estimator
        Returned by :func:`train` (or an ``UnbiasedLGBM*`` estimator).

    Returns
    -------
    ImportanceReport
        ``to_frame()`` sums ``unbiased_gain`` (and ``biased_gain``, ``host_gain``) per feature
        over the splits the model kept; ``splits`` lists them. No standard errors (a training
        run has no jackknife blocks).
    """
    booster, frame = _splits_of(model)
    kept = frame[frame["kept"].astype(bool)].reset_index(drop=True)
    return ImportanceReport(kept, booster.feature_name(), host="lightgbm")


# --------------------------------------------------------------------------- scikit-learn

#: constructor parameters the estimators add to LightGBM's (they are not LightGBM parameters)
_UNBIASED_PARAMS = ("holdout_fraction", "redraw_holdout", "prune_threshold", "n_draws", "min_k")


def _with_train(func: Callable, replacement: Callable) -> Callable:
    """A copy of ``func`` whose global name ``train`` means ``replacement``.

    ``LGBMModel.fit`` prepares the Datasets, evaluation sets, metrics and callbacks and then
    calls ``lightgbm.train`` through its module's global name ``train``. Running a copy of it
    with that one name rebound keeps every step of LightGBM's ``fit`` without touching the
    ``lightgbm`` module (no monkeypatching: other code and threads are unaffected).
    """
    if "train" not in func.__code__.co_names:
        raise RuntimeError(
            "this LightGBM version's LGBMModel.fit does not call train(); the "
            "UnbiasedLGBM* estimators need an update"
        )
    namespace = dict(func.__globals__)
    namespace["train"] = replacement
    new = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                             func.__closure__)
    new.__kwdefaults__ = copy.copy(func.__kwdefaults__)
    return new


class _UnbiasedFit(lightgbm.LGBMModel):
    """Placed after ``LGBMRegressor`` / ``LGBMClassifier`` in the estimators' MRO, this class's
    ``fit`` is what their ``fit`` calls as ``super().fit``: LightGBM's ``LGBMModel.fit`` with
    :func:`train` in place of ``lightgbm.train``."""

    def fit(self, *args: Any, **kwargs: Any):
        if kwargs.get("init_model") is not None:
            raise ValueError("init_model (continued training) is not supported")
        options = {k: getattr(self, k) for k in _UNBIASED_PARAMS}

        def unbiased_train(params, train_set, num_boost_round=100, valid_sets=None,
                           valid_names=None, feval=None, init_model=None,
                           keep_training_booster=False, callbacks=None):
            return train(params, train_set, num_boost_round, valid_sets=valid_sets,
                         valid_names=valid_names, feval=feval or None, callbacks=callbacks,
                         **options)

        fit = _with_train(lightgbm.LGBMModel.fit, unbiased_train)
        return fit(self, *args, **kwargs)

    def _process_params(self, stage: str) -> dict[str, Any]:
        params = super()._process_params(stage)
        for key in _UNBIASED_PARAMS:  # ours, not LightGBM's
            params.pop(key, None)
        return params

    @property
    def feature_importances_(self) -> np.ndarray:
        """Unbiased importance of each feature: the sum of ``U`` over its kept splits.

        ``U`` is the unbiased gain of each split when it was made (see
        :func:`training_splits`). NaN for every feature when no split was scored
        (``prune_threshold=None`` or ``holdout_fraction=0``). LightGBM's own importances stay
        available as ``booster_.feature_importance(importance_type)``.
        """
        if not self.__sklearn_is_fitted__():
            raise lightgbm.compat.LGBMNotFittedError(
                "No feature_importances found. Need to call fit beforehand."
            )
        frame = training_splits(self._Booster)
        out = np.zeros(self._Booster.num_feature())
        if frame.empty:
            return np.full_like(out, np.nan)
        kept = frame[frame["kept"].astype(bool)]
        np.add.at(out, kept["feature_index"].to_numpy(dtype=np.int64),
                  kept["unbiased_gain"].to_numpy(dtype=np.float64))
        return out

    @property
    def training_splits_(self) -> pd.DataFrame:
        """:func:`training_splits` of the fitted model (one row per scored split)."""
        return training_splits(self.booster_)


_ESTIMATOR_DOC = """LightGBM's ``{base}`` trained with unbiased-gain pruning (:func:`train`).

    A drop-in replacement: the constructor takes every ``{base}`` parameter and ``fit`` every
    ``{base}.fit`` argument (not ``init_model``); training goes through :func:`train`, so each
    new tree is pruned, top-down, of the splits whose unbiased gain on held-out rows is
    ``<= prune_threshold``. ``random_state`` also seeds the held-out draws (``None``: 0, so
    fits are repeatable as LightGBM's are).

    Parameters
    ----------
    holdout_fraction : float, default 0.2
        Training rows held out each round (zero gradient and hessian; LightGBM still counts
        them for ``min_child_samples``), in [0, 1). 0 switches pruning off.
    redraw_holdout : bool, default True
        New held-out rows every round.
    prune_threshold : float or None, default 0.0
        Splits with ``U <= prune_threshold`` are removed; None scores nothing (the model is
        then ``{base}``'s).
    n_draws, min_k : int, default 1 and 5
        Options of the unbiased gain (see :func:`train`).
    **kwargs
        ``{base}``'s parameters.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The unbiased importance: per feature, the sum of ``U`` over the kept splits.
    training_splits_ : pandas.DataFrame
        Every split scored during training (:func:`training_splits`).
    """


class UnbiasedLGBMRegressor(lightgbm.LGBMRegressor, _UnbiasedFit):
    __doc__ = _ESTIMATOR_DOC.format(base="LGBMRegressor")

    def __init__(
        self,
        *,
        boosting_type: str = "gbdt",
        num_leaves: int = 31,
        max_depth: int = -1,
        learning_rate: float = 0.1,
        n_estimators: int = 100,
        subsample_for_bin: int = 200000,
        objective: str | Callable | None = None,
        class_weight: dict | str | None = None,
        min_split_gain: float = 0.0,
        min_child_weight: float = 1e-3,
        min_child_samples: int = 20,
        subsample: float = 1.0,
        subsample_freq: int = 0,
        colsample_bytree: float = 1.0,
        reg_alpha: float = 0.0,
        reg_lambda: float = 0.0,
        random_state: int | np.random.RandomState | np.random.Generator | None = None,
        n_jobs: int | None = None,
        importance_type: str = "split",
        holdout_fraction: float = 0.2,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            boosting_type=boosting_type, num_leaves=num_leaves, max_depth=max_depth,
            learning_rate=learning_rate, n_estimators=n_estimators,
            subsample_for_bin=subsample_for_bin, objective=objective, class_weight=class_weight,
            min_split_gain=min_split_gain, min_child_weight=min_child_weight,
            min_child_samples=min_child_samples, subsample=subsample,
            subsample_freq=subsample_freq, colsample_bytree=colsample_bytree,
            reg_alpha=reg_alpha, reg_lambda=reg_lambda, random_state=random_state,
            n_jobs=n_jobs, importance_type=importance_type, **kwargs,
        )
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k


class UnbiasedLGBMClassifier(lightgbm.LGBMClassifier, _UnbiasedFit):
    __doc__ = _ESTIMATOR_DOC.format(base="LGBMClassifier")

    def __init__(
        self,
        *,
        boosting_type: str = "gbdt",
        num_leaves: int = 31,
        max_depth: int = -1,
        learning_rate: float = 0.1,
        n_estimators: int = 100,
        subsample_for_bin: int = 200000,
        objective: str | Callable | None = None,
        class_weight: dict | str | None = None,
        min_split_gain: float = 0.0,
        min_child_weight: float = 1e-3,
        min_child_samples: int = 20,
        subsample: float = 1.0,
        subsample_freq: int = 0,
        colsample_bytree: float = 1.0,
        reg_alpha: float = 0.0,
        reg_lambda: float = 0.0,
        random_state: int | np.random.RandomState | np.random.Generator | None = None,
        n_jobs: int | None = None,
        importance_type: str = "split",
        holdout_fraction: float = 0.2,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            boosting_type=boosting_type, num_leaves=num_leaves, max_depth=max_depth,
            learning_rate=learning_rate, n_estimators=n_estimators,
            subsample_for_bin=subsample_for_bin, objective=objective, class_weight=class_weight,
            min_split_gain=min_split_gain, min_child_weight=min_child_weight,
            min_child_samples=min_child_samples, subsample=subsample,
            subsample_freq=subsample_freq, colsample_bytree=colsample_bytree,
            reg_alpha=reg_alpha, reg_lambda=reg_lambda, random_state=random_state,
            n_jobs=n_jobs, importance_type=importance_type, **kwargs,
        )
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k
