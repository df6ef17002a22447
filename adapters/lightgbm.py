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
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lightgbm
import numpy as np
from scipy import sparse

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.model import Model, Router, UnsupportedModelError, chunk_size
from unbiased_criteria.trees import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    DecisionRules,
    Forest,
    Tree,
    make_tree,
)

__all__ = [
    "RULES",
    "LightGBMSource",
    "read_model",
    "make_router",
    "make_objective",
    "write_model",
    "model_text",
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
