"""XGBoost adapter: read a model into the IR, route rows with ``pred_leaf``, write the IR back,
and train with pruning (:func:`train`).

One front end for one format (treelite style): the reader parses the model JSON
(``Booster.save_raw("json")``) and takes the training hyper-parameters (eta, lambda, alpha,
max_delta_step, subsample...) from ``Booster.save_config()``, since the model JSON does not
hold them. It takes no data. The writer puts IR trees back into a copy of that JSON, so reading
a model and writing it back gives the same arrays. The training hook (:func:`train`,
:class:`XGBGrower`) lets XGBoost grow each iteration from the core loop's gradients
(``Booster.boost``), reads just that iteration with the reader, and writes the pruned trees
with the writer; :func:`training_splits` gives the per-split scores gathered on the way.

IR node ids are XGBoost's node ids, so ``predict(pred_leaf=True)`` returns IR ids directly.
The one exception is a tree with tombstones (nodes the ``prune`` updater deleted, marked by
``split_indices == 2147483647``): the IR keeps only its reachable nodes, in increasing id, and
the router maps XGBoost's ids to them.

Host facts this module relies on (XGBoost 3.x, see host-notes sections 9-13):

* numeric nodes send ``x`` left iff ``x < split_condition``; categorical nodes send the
  categories of their set **right** and everything else left; missing values (NaN, absent
  sparse entries) go to ``default_left``'s side at every node;
* ``split_conditions`` holds the (shrunk) leaf value at a leaf; ``base_weights`` holds the
  unshrunk weight of an internal node;
* ``base_score`` is in output space: a scalar string (``"5E-1"``) up to 3.0, a list string
  (``"[2.79E0]"``) from 3.1; the margin is the objective's link of it, in float32. From 3.2
  the multiclass intercept is a per-class vector already in margin space;
* the predictor assumes ``right == left + 1``: siblings must have consecutive ids;
* ``load_model`` on an existing Booster resets its training parameters, and a Booster loaded
  from a file has default parameters in ``save_config()``.

Everything is float32 in XGBoost (features, margins, gradients, leaf values); the IR stores
the exact float32 values as float64.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import types
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import xgboost
from scipy import sparse
from scipy.special import gammaln

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.boosting import BoostResult, EvalSet, HoldoutPlan, boost
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.importance import GainOptions
from unbiased_criteria.metrics import METRICS, Metric
from unbiased_criteria.model import Model, Router, UnsupportedModelError, chunk_size
from unbiased_criteria.objectives import Objective
from unbiased_criteria.report import ImportanceReport
from unbiased_criteria.trees import (
    MISSING_NAN,
    DecisionRules,
    Forest,
    Tree,
    collapse_nodes,
    make_tree,
)
from unbiased_criteria.validation import check_labels

__all__ = [
    "RULES",
    "read_model",
    "parse_model",
    "parse_base_score",
    "make_objective",
    "make_router",
    "write_model",
    "model_json",
    "train",
    "XGBGrower",
    "TrainingRecord",
    "training_record",
    "training_splits",
    "training_report",
    "UnbiasedXGBRegressor",
    "UnbiasedXGBClassifier",
]

#: XGBoost's routing: ``x < t`` goes left, a category in the set goes right, NaN goes to the
#: default side at categorical nodes too
RULES = DecisionRules(
    operator="<", categories_go="right", categorical_nan="default", negative_is_invalid=True
)

_DELETED = 2147483647  # split_indices of a node the prune updater deleted
_NO_PARENT = 2147483647  # parents[root]
# split_conditions XGBoost writes at a categorical node (the smallest float32 denormal)
_CAT_CONDITION = float(np.float32(1e-45))
_HESSIAN_FLOOR = 1e-16  # kRtEps, XGBoost's floor of the logistic and softmax hessians

_LOGIT_LINK = frozenset({"binary:logistic", "reg:logistic"})
_LOG_LINK = frozenset({"count:poisson", "reg:gamma", "reg:tweedie"})

# training parameters read from save_config(): XGBoost's defaults, aliases
_DEFAULT_TRAIN = {
    "eta": 0.3, "lambda": 1.0, "alpha": 0.0, "max_delta_step": 0.0, "subsample": 1.0,
    "colsample_bytree": 1.0, "colsample_bylevel": 1.0, "colsample_bynode": 1.0,
}
_ALIASES = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha"}


# ------------------------------------------------------------------------------ reading


def _booster(model: Any, argument: str = "model") -> xgboost.Booster:
    """The Booster of a Booster or a fitted ``XGBModel``."""
    if isinstance(model, xgboost.Booster):
        return model
    if isinstance(model, xgboost.XGBModel):
        try:
            return model.get_booster()
        except Exception as err:  # sklearn's NotFittedError or XGBoostError
            raise ValueError(f"{argument} is not fitted: {err}") from None
    raise TypeError(
        f"{argument} must be an xgboost.Booster or a fitted xgboost.XGBModel, "
        f"got {type(model).__module__}.{type(model).__name__}"
    )


def _find(tree: Any, key: str) -> Any:
    """First value stored under ``key`` in nested dicts (depth-first), or None."""
    if isinstance(tree, Mapping):
        if key in tree:
            return tree[key]
        for value in tree.values():
            found = _find(value, key)
            if found is not None:
                return found
    return None


def _gbtree(learner: Mapping) -> tuple[dict, list[float] | None]:
    """The ``gbtree`` model dict and DART's ``weight_drop`` (None for gbtree).

    3.2 stores DART as ``{"name": "dart", "gbtree": {"model": ...}, "weight_drop": [...]}``,
    3.4 as ``{"name": "gbtree", "model": {..., "weight_drop": [...]}}``.
    """
    booster = learner["gradient_booster"]
    name = booster.get("name")
    if name == "gblinear":
        raise UnsupportedModelError("gblinear models have no trees to score")
    if name == "dart":
        model = booster["gbtree"]["model"]
        weights = booster.get("weight_drop")
    elif name == "gbtree":
        model = booster["model"]
        weights = model.get("weight_drop")
    else:
        raise UnsupportedModelError(f"unknown gradient booster {name!r}")
    if weights is not None and not np.all(np.asarray(weights, dtype=np.float64) == 1.0):
        raise UnsupportedModelError(
            "DART models whose trees were dropped (weight_drop != 1) cannot be replayed: their "
            "gradients were taken with random trees left out and the trees were rescaled"
        )
    return model, weights


def parse_base_score(text: str, objective: str, n_outputs: int = 1) -> np.ndarray:
    """The initial margin of every output from ``learner_model_param.base_score``.

    Parameters
    ----------
    text : str
        ``"5E-1"`` (XGBoost <= 3.0) or ``"[5E-1]"`` / ``"[a,b,c]"`` (3.1+), in output space.
    objective : str
        XGBoost objective name: selects the link (logit for binary:logistic and reg:logistic,
        log for count:poisson, reg:gamma and reg:tweedie, identity otherwise; the multiclass
        vector of 3.2+ is already a margin).
    n_outputs : int
        A single value is repeated for every output (old multiclass models).

    Returns
    -------
    float64 array (n_outputs,) holding float32 values
        Computed as XGBoost does: ``-logf(1/p - 1)`` and ``logf(p)`` in float32.
    """
    value = np.atleast_1d(np.asarray(json.loads(text), dtype=np.float32))
    if value.ndim != 1 or value.size not in (1, n_outputs):
        raise ValueError(f"base_score {text!r} does not have {n_outputs} value(s)")
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective in _LOGIT_LINK:
            # ProbToMargin: -logf(1.0f / p - 1.0f); logf is correctly rounded
            ratio = np.float32(1) / value - np.float32(1)
            value = -np.log(ratio.astype(np.float64)).astype(np.float32)
        elif objective in _LOG_LINK:
            value = np.log(value.astype(np.float64)).astype(np.float32)
    return np.broadcast_to(value, (n_outputs,)).astype(np.float64)


def _margin_to_base_score(margin: np.ndarray, objective: str) -> np.ndarray:
    """Inverse of the link of :func:`parse_base_score` (output space, float32)."""
    m = np.asarray(margin, dtype=np.float32)
    with np.errstate(over="ignore"):
        if objective in _LOGIT_LINK:
            return np.float32(1) / (np.float32(1) + np.exp(-m))
        if objective in _LOG_LINK:
            return np.exp(m)
    return m


def _format_base_score(values: np.ndarray, as_list: bool) -> str:
    text = [np.format_float_scientific(np.float32(v), unique=True) for v in values]
    text = [t.replace("e+", "E").replace("e", "E") for t in text]
    return "[" + ",".join(text) + "]" if as_list else text[0]


def _objective_params(obj: Mapping) -> dict[str, str]:
    """Flatten ``{"name": ..., "<x>_param": {...}}`` into one dict of strings."""
    params: dict[str, str] = {}
    for key, value in obj.items():
        if key != "name" and isinstance(value, Mapping):
            params.update({k: str(v) for k, v in value.items()})
    return params


def _core_objective(name: str, params: Mapping[str, str], n_outputs: int) -> Objective | None:
    """The core objective of XGBoost objective ``name`` (None: no core equivalent).

    Raises UnsupportedModelError for ranking, survival and multi-quantile objectives.
    """
    f32 = {"precision": "float32"}
    make = _objectives.make_objective
    if name.startswith(("rank:", "survival:")):
        raise UnsupportedModelError(
            f"objective {name!r} is not supported: ranking and survival objectives cannot be "
            "replayed row by row"
        )
    if name in ("reg:squarederror", "reg:linear"):
        return make("squared_error", **f32)
    if name == "reg:squaredlogerror":
        return make("squared_log_error", **f32)
    if name in ("reg:logistic", "binary:logistic", "binary:logitraw"):
        return make(
            "binary_logistic", hessian_floor=_HESSIAN_FLOOR, soft_labels=True,
            pos_weight=float(params.get("scale_pos_weight", 1.0)), **f32,
        )
    if name in ("multi:softprob", "multi:softmax"):
        return make(
            "multiclass_softmax", n_classes=n_outputs, hessian_factor=2.0,
            hessian_floor=_HESSIAN_FLOOR, **f32,
        )
    if name == "count:poisson":
        return make("poisson", max_delta_step=float(params.get("max_delta_step", 0.7)), **f32)
    if name == "reg:gamma":
        return make("gamma", **f32)
    if name == "reg:tweedie":
        power = float(params.get("tweedie_variance_power", 1.5))
        return make("tweedie", variance_power=power, **f32)
    if name == "reg:pseudohubererror":
        return make("pseudo_huber", slope=float(params.get("huber_slope", 1.0)), **f32)
    if name == "reg:absoluteerror":
        return make("absolute_error", **f32)
    if name == "reg:quantileerror":
        alpha = np.atleast_1d(json.loads(params.get("quantile_alpha", "0.5")))
        if alpha.size != 1:
            raise UnsupportedModelError(
                f"reg:quantileerror with several quantiles ({alpha.tolist()}) is not "
                "supported: train one model per quantile"
            )
        return make("quantile", alpha=float(alpha[0]), **f32)
    return None


def _reachable(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Mask of the nodes reachable from the root, level by level."""
    seen = np.zeros(left.size, dtype=bool)
    level = np.array([0])
    while level.size:
        if seen[level].any() or level.max() >= left.size:
            raise ValueError("tree arrays do not describe a tree")
        seen[level] = True
        inner = level[left[level] >= 0]
        level = np.concatenate([left[inner], right[inner]])
    return seen


def _tree_arrays(tree: Mapping, index: int) -> dict[str, np.ndarray]:
    """The per-node arrays of one tree JSON, checked for length."""
    param = tree["tree_param"]
    n = int(param["num_nodes"])
    if int(param.get("size_leaf_vector", 1)) > 1:
        raise UnsupportedModelError(
            "multi-output trees (multi_strategy='multi_output_tree', vector leaves) are not "
            "supported"
        )
    arrays = {
        "left": np.asarray(tree["left_children"], dtype=np.int64),
        "right": np.asarray(tree["right_children"], dtype=np.int64),
        "split": np.asarray(tree["split_indices"], dtype=np.int64),
        # exact float32 values (the JSON holds their shortest decimal form)
        "cond": np.asarray(tree["split_conditions"], dtype=np.float32).astype(np.float64),
        "default_left": np.asarray(tree["default_left"], dtype=bool),
        "split_type": np.asarray(tree.get("split_type", np.zeros(n)), dtype=np.int64),
        "gain": np.asarray(tree["loss_changes"], dtype=np.float32).astype(np.float64),
        "hess": np.asarray(tree["sum_hessian"], dtype=np.float32).astype(np.float64),
        "weight": np.asarray(tree["base_weights"], dtype=np.float32).astype(np.float64),
    }
    for key, value in arrays.items():
        if value.shape != (n,):
            raise ValueError(f"tree {index}: {key} has {value.size} entries, expected {n}")
    return arrays


def _node_map(tree: Mapping) -> np.ndarray | None:
    """XGBoost node id -> IR node id for a tree with tombstones (-1 = dropped), else None."""
    left = np.asarray(tree["left_children"], dtype=np.int64)
    right = np.asarray(tree["right_children"], dtype=np.int64)
    keep = _reachable(left, right)
    if keep.all():
        return None
    new_id = np.full(left.size, -1, dtype=np.int32)
    new_id[keep] = np.arange(int(keep.sum()), dtype=np.int32)
    return new_id


def _read_tree(tree: Mapping, index: int, shrinkage: float) -> Tree:
    """One XGBoost tree JSON as an IR tree (see the module docstring for the ids)."""
    a = _tree_arrays(tree, index)
    leaf = a["left"] < 0
    new_id = _node_map(tree)
    keep = np.ones(leaf.size, dtype=bool) if new_id is None else new_id >= 0
    if np.any(a["split"][keep & ~leaf] == _DELETED):
        raise ValueError(f"tree {index}: a reachable split node is marked deleted")
    categorical = (a["split_type"] == 1) & ~leaf
    cat_sets = {}
    nodes = tree.get("categories_nodes", [])
    if len(nodes):
        cats = np.asarray(tree["categories"], dtype=np.int64)
        seg = np.asarray(tree["categories_segments"], dtype=np.int64)
        size = np.asarray(tree["categories_sizes"], dtype=np.int64)
        # sets left on nodes that are no longer splits (collapsed by an updater) are dropped
        cat_sets = {int(v): cats[s : s + m] for v, s, m in zip(nodes, seg, size)
                    if categorical[v] and keep[v]}

    def remap(child):
        if new_id is None:
            return child
        return np.where(child >= 0, new_id[np.maximum(child, 0)], -1)

    # internal nodes keep the value XGBoost would give them as a leaf: eta * base_weight
    # (exact in float64: a product of two float32 values)
    value = np.where(leaf, a["cond"], shrinkage * a["weight"])
    sel = np.flatnonzero(keep)
    return make_tree(
        remap(a["left"])[sel],
        remap(a["right"])[sel],
        np.where(leaf, -1, a["split"])[sel],
        np.where(leaf | categorical, np.nan, a["cond"])[sel],
        value[sel],
        default_left=a["default_left"][sel],
        missing=np.full(sel.size, MISSING_NAN, dtype=np.int8),
        categorical=categorical[sel],
        cat_sets={int(v if new_id is None else new_id[v]): c for v, c in cat_sets.items()},
        host_gain=np.where(leaf, np.nan, a["gain"])[sel],
        host_hessian=a["hess"][sel],
        host_count=None,
        shrinkage=shrinkage,
        bias=0.0,
        rules=RULES,
    )


def _tree_iterations(model: Mapping, n_trees: int, per_iteration: int) -> np.ndarray:
    indptr = model.get("iteration_indptr")
    if indptr is not None and len(indptr) > 0:
        counts = np.diff(np.asarray(indptr, dtype=np.int64))
        if counts.sum() != n_trees or np.any(counts < 0):
            raise ValueError("iteration_indptr does not match the number of trees")
        return np.repeat(np.arange(counts.size), counts)
    # models saved before iteration_indptr existed: fixed number of trees per iteration
    return np.arange(n_trees) // max(per_iteration, 1)


def _train_params(config: Mapping | None, overrides: Mapping[str, Any] | None) -> dict:
    """Training parameters from ``save_config()``, with user overrides (aliases accepted)."""
    params: dict[str, Any] = dict(_DEFAULT_TRAIN)
    if config:
        tree_param = _find(config, "tree_train_param") or {}
        params.update({_ALIASES.get(k, k): v for k, v in tree_param.items()})
        for key in ("tree_method", "updater_seq", "process_type"):
            value = _find(config, key)
            if value is not None:
                params[key] = value
        generic = _find(config, "generic_param") or {}
        if "device" in generic:
            params["device"] = generic["device"]
    for key, value in (overrides or {}).items():
        params[_ALIASES.get(key, key)] = value
    for key in _DEFAULT_TRAIN:
        # TrainParam holds them as float32 (the config prints "0.699999988")
        params[key] = float(np.float32(params[key]))
    return params


#: model attribute set by the writer (pruned or refit leaves no longer fit node statistics)
_WRITTEN_ATTR = "unbiased_criteria_written"


def _params_mismatch(trees: list, eta: float, lam: float) -> float:
    """Median relative misfit of ``eta`` and ``lambda`` to the trees' own weights.

    A parent of two leaves satisfies ``base_weight = (v_L (H_L + lam) + v_R (H_R + lam)) /
    (eta (H + lam))`` (leaf value ``v = eta * -G/(H + lam)``, without alpha or clipping).
    """
    errors = []
    if eta == 0:
        return 0.0
    for tree in trees[:20]:
        a = _tree_arrays(tree, 0)
        left, right = a["left"], a["right"]
        inner = np.flatnonzero(left >= 0)
        both = inner[(left[left[inner]] < 0) & (left[right[inner]] < 0)]
        L, R = left[both], right[both]
        fit = (a["cond"][L] * (a["hess"][L] + lam) + a["cond"][R] * (a["hess"][R] + lam)) / (
            eta * (a["hess"][both] + lam)
        )
        scale = np.maximum(np.abs(fit), np.abs(a["weight"][both]))
        ok = scale > 1e-6
        errors.append(np.abs(fit - a["weight"][both])[ok] / scale[ok])
    errors = np.concatenate(errors) if errors else np.zeros(0)
    return float(np.median(errors)) if errors.size else 0.0


def _warnings(learner: Mapping, model: Mapping, params: Mapping, objective: str,
              base_score: np.ndarray, renews: bool, check_params: bool,
              shrinkage: float) -> tuple[str, ...]:
    out = []
    if params["subsample"] < 1.0:
        out.append(
            f"subsample={params['subsample']:g}: the host summed each node over a random "
            "subsample, so recomputed node sums and biased gains will not match its "
            "sum_hessian and loss_changes (the unbiased gain stays valid)"
        )
    mono = any(float(c) != 0 for c in re.findall(r"-?\d+(?:\.\d*)?",
                                                    str(params.get("monotone_constraints", ""))))
    if mono:
        out.append("monotone constraints clip leaf weights: recomputed gains may not match")
    method = str(params.get("tree_method", "")) + str(params.get("updater_seq", ""))
    if "colmaker" in method or "exact" in method or "approx" in method:
        out.append(
            "only the hist tree method was verified against the host; exact and approx "
            "models should match but were not checked"
        )
    if str(params.get("device", "cpu")).startswith(("cuda", "gpu")):
        out.append("GPU training quantises gradients: recomputed gains are approximate")
    best = learner.get("attributes", {}).get("best_iteration")
    if best is not None:
        out.append(
            f"the model has best_iteration={best}: the IR holds all its iterations (as "
            "Booster.predict uses), while the scikit-learn predict stops at best_iteration"
        )
    lmp = learner["learner_model_param"]
    if (objective == "reg:squarederror" and np.all(base_score == 0.5)
            and str(lmp.get("boost_from_average", "1")) == "1"):
        out.append(
            "base_score is 0.5 with reg:squarederror, what a custom objective (obj=) leaves: "
            "if the model was trained with one, pass objective="
        )
    written = _WRITTEN_ATTR in learner.get("attributes", {})
    if check_params and not renews and not written and params["alpha"] == 0 \
            and params["max_delta_step"] == 0 and not mono:
        misfit = _params_mismatch(model["trees"], shrinkage, params["lambda"])
        if misfit > 1e-3:
            out.append(
                f"eta={params['eta']:g} and lambda={params['lambda']:g} do not reproduce the "
                f"trees' own weights (median misfit {misfit:.2g}): a Booster loaded from a "
                "file forgets its training parameters and reports XGBoost's defaults; pass "
                "the real ones with read_model(model, params={'eta': ..., 'lambda': ...})"
            )
    return tuple(out)


def parse_model(
    js: Mapping,
    train_params: Mapping[str, Any] | None = None,
    *,
    custom_objective: bool = False,
) -> Model:
    """The IR of a parsed XGBoost model JSON (no data, no Booster needed).

    Parameters
    ----------
    js : dict
        ``json.loads(booster.save_raw("json"))``; it becomes ``Model.source`` (not copied).
    train_params : dict, optional
        Training parameters (``eta``, ``lambda``, ``alpha``, ``max_delta_step``,
        ``subsample``...); XGBoost's defaults where absent. When given, they are checked
        against the trees' own weights (a warning if they do not fit).
    custom_objective : bool
        The model was trained with a callable objective: ``Model.objective`` is None.

    Returns
    -------
    Model
    """
    learner = js["learner"]
    model, _ = _gbtree(learner)
    lmp = learner["learner_model_param"]
    n_class = int(lmp.get("num_class", 0))
    n_target = int(lmp.get("num_target", 1))
    obj_json = learner.get("objective", {"name": "reg:squarederror"})
    obj_name = obj_json["name"]
    obj_params = _objective_params(obj_json)
    objective = _core_objective(obj_name, obj_params, max(n_class, 1))
    if n_target > 1:
        raise UnsupportedModelError(
            f"multi-target models (num_target={n_target}) are not supported"
        )
    n_outputs = max(n_class, 1)
    params = _train_params(None, train_params)
    n_parallel = int(model.get("gbtree_model_param", {}).get("num_parallel_tree", 1))
    # the updaters shrink each of an iteration's parallel trees by eta / num_parallel_tree,
    # in float32
    eta = float(np.float32(params["eta"]) / np.float32(n_parallel))

    trees_json = model["trees"]
    trees = tuple(_read_tree(t, i, eta) for i, t in enumerate(trees_json))
    n_trees = len(trees)
    tree_info = np.asarray(model.get("tree_info", np.zeros(n_trees)), dtype=np.int64)
    if tree_info.shape != (n_trees,) or (n_trees and tree_info.max() >= n_outputs):
        raise ValueError("tree_info does not match the trees and classes")
    per_iter = n_parallel * n_outputs
    n_features = int(lmp["num_feature"])
    names = learner.get("feature_names") or [f"f{i}" for i in range(n_features)]
    base = parse_base_score(str(lmp["base_score"]), obj_name, n_outputs)
    forest = Forest(
        trees=trees,
        tree_class=tree_info,
        tree_iteration=_tree_iterations(model, n_trees, per_iter),
        base_score=base,
        n_features=n_features,
        feature_names=tuple(str(n) for n in names),
        score_dtype=np.float32,
    )
    split_score = SplitScore(
        l1=params["alpha"], l2=params["lambda"], max_delta_step=params["max_delta_step"],
        weight_float32=True, raw_gradient_score=True,
    )
    warnings = list(_warnings(learner, model, params, obj_name, base,
                              bool(objective is not None and objective.renews_leaves),
                              check_params=train_params is not None, shrinkage=eta))
    if objective is None and not custom_objective:
        warnings.append(
            f"objective {obj_name!r} has no equivalent in the core: pass objective= (a "
            "callable f(y, raw_score, weight) -> (grad, hess))"
        )
    return Model(
        forest=forest,
        objective=None if custom_objective else objective,
        split_score=split_score,
        host="xgboost",
        bias_from_labels=False,
        warnings=tuple(warnings),
        source=js,
    )


def read_model(
    model: xgboost.Booster | xgboost.XGBModel, *, params: Mapping[str, Any] | None = None
) -> Model:
    """Read an XGBoost model into the IR.

    Parameters
    ----------
    model : xgboost.Booster or fitted xgboost.XGBModel
    params : dict, optional
        Training parameters that override ``save_config()`` (``eta``/``learning_rate``,
        ``lambda``/``reg_lambda``, ``alpha``/``reg_alpha``, ``max_delta_step``). Needed for a
        model loaded from a file: XGBoost does not store them in the model, and such a Booster
        reports its defaults (eta 0.3, lambda 1); a warning says when they do not fit the trees.

    Returns
    -------
    Model
        ``objective`` is None for a scikit-learn model with a callable objective. A Booster
        trained with ``xgb.train(..., obj=f)`` cannot be told apart: it stores the params'
        objective (reg:squarederror by default) and base_score 0.5, so pass ``objective=`` to
        the public functions for such models. ``source`` is the parsed model JSON.

    Raises
    ------
    UnsupportedModelError
        gblinear, DART with dropped trees, ranking or survival objectives, multi-output trees,
        multi-target models, reg:quantileerror with several quantiles.
    """
    bst = _booster(model)
    js = json.loads(bst.save_raw("json"))
    try:
        config = json.loads(bst.save_config())
    except Exception:  # a Booster without a learner configuration
        config = None
    train = _train_params(config, params)
    custom = isinstance(model, xgboost.XGBModel) and callable(getattr(model, "objective", None))
    return parse_model(js, train, custom_objective=custom)


def make_objective(spec: str | Callable | Objective, model_ir: Model) -> Objective:
    """The core objective for ``spec``.

    Parameters
    ----------
    spec : str, callable or Objective
        An XGBoost objective name (``"binary:logistic"``; its parameters are the model's when
        the model has the same objective, else XGBoost's defaults), a canonical core name
        (``"binary_logistic"``, float32 arithmetic, XGBoost's hessian floors and softmax
        factor), a callable ``f(y, raw_score, weight) -> (grad, hess)``, or a core Objective.
    model_ir : Model
        The model read by :func:`read_model` (number of outputs, objective parameters).

    Returns
    -------
    Objective
    """
    n_outputs = model_ir.forest.n_outputs
    if isinstance(spec, Objective):
        return spec
    if callable(spec):
        return _objectives.make_objective(spec, n_outputs=n_outputs)
    if not isinstance(spec, str):
        raise TypeError(f"objective must be a name or a callable, got {type(spec).__name__}")
    if ":" in spec:
        obj_json = (model_ir.source or {}).get("learner", {}).get("objective", {})
        params = _objective_params(obj_json) if obj_json.get("name") == spec else {}
        objective = _core_objective(spec, params, n_outputs)
        if objective is None:
            raise ValueError(f"XGBoost objective {spec!r} has no equivalent in the core")
        return objective
    params: dict[str, Any] = {"precision": "float32"}
    if spec == "binary_logistic":
        params["hessian_floor"] = _HESSIAN_FLOOR
    elif spec == "multiclass_softmax":
        params.update(n_classes=n_outputs, hessian_factor=2.0, hessian_floor=_HESSIAN_FLOOR)
    elif spec == "multiclass_ova":
        params["n_classes"] = n_outputs
    return _objectives.make_objective(spec, **params)


# ------------------------------------------------------------------------------ routing


def _feature_types(js: Mapping) -> list[str] | None:
    types = js["learner"].get("feature_types") or None
    return list(types) if types else None


def _check_X(X: Any, model_ir: Model, argument: str, missing: float) -> xgboost.DMatrix:
    """``X`` as one DMatrix, after checking it against the model (never modifies ``X``)."""
    forest = model_ir.forest
    js = model_ir.source
    has_names = bool(js["learner"].get("feature_names"))
    names = list(forest.feature_names) if has_names else None
    types = _feature_types(js)
    categorical = bool(types and "c" in types)
    if X is None:
        raise ValueError(f"{argument} is required")
    if isinstance(X, pd.DataFrame):
        shape = X.shape
    elif sparse.issparse(X):
        shape = X.shape
    else:
        try:
            X = np.asarray(X)
        except Exception:
            raise ValueError(f"{argument} must be a 2-D numeric array") from None
        if X.ndim != 2:
            raise ValueError(f"{argument} must be 2-D (rows x features), got shape {X.shape}")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{argument} must be numeric, got dtype {X.dtype}")
        shape = X.shape
    if shape[0] == 0:
        raise ValueError(f"{argument} is empty (0 rows)")
    if shape[1] != forest.n_features:
        raise ValueError(
            f"{argument} has {shape[1]} features but the model has {forest.n_features}"
        )
    kwargs: dict[str, Any] = {"missing": missing}
    if isinstance(X, pd.DataFrame):
        columns = [str(c) for c in X.columns]
        if names is not None and columns != names:
            diff = [c for c in columns if c not in names]
            raise ValueError(
                f"{argument}'s columns do not match the model's feature names "
                f"(model: {names[:10]}{'...' if len(names) > 10 else ''}; unknown columns: "
                f"{diff[:10]}; the order must match too)"
            )
        kwargs["enable_categorical"] = True
    else:
        kwargs.update(feature_names=names)
        if categorical:
            kwargs.update(feature_types=types, enable_categorical=True)
    try:
        return xgboost.DMatrix(X, **kwargs)
    except (ValueError, TypeError, xgboost.core.XGBoostError) as err:
        raise ValueError(f"{argument} cannot be read as XGBoost data: {err}") from None


def make_router(
    model: xgboost.Booster | xgboost.XGBModel,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the model's trees with XGBoost's own ``pred_leaf``.

    Parameters
    ----------
    model : xgboost.Booster or fitted xgboost.XGBModel
        The model ``model_ir`` was read from.
    model_ir : Model
    X : numpy array, pandas DataFrame (category dtype allowed) or scipy sparse matrix
        Absent sparse entries and NaN are missing values (for an XGBModel, its ``missing``
        value too). Its feature count, and for a DataFrame its column names, must match the
        model. ``X`` is not modified.
    argument : str
        Name of ``X`` in error messages.
    memory_budget : int
        Bytes allowed for one chunk of leaf ids.

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR node ids (int32, ``(n, stop - start)``); ``chunk``
        is a whole number of iterations whenever the budget allows one.
    """
    bst = _booster(model)
    forest = model_ir.forest
    missing = getattr(model, "missing", np.nan) if isinstance(model, xgboost.XGBModel) \
        else np.nan
    dmat = _check_X(X, model_ir, argument, np.nan if missing is None else missing)
    n_rows = int(dmat.num_row())
    trees_json = _gbtree(model_ir.source["learner"])[0]["trees"]
    if len(trees_json) != forest.n_trees or bst.num_boosted_rounds() != (
        int(forest.tree_iteration[-1]) + 1 if forest.n_trees else 0
    ):
        raise ValueError("model_ir was not read from model")
    maps = [_node_map(t) for t in trees_json]
    iteration = np.asarray(forest.tree_iteration, dtype=np.int64)
    n_iter = int(iteration[-1]) + 1 if iteration.size else 0
    first = np.searchsorted(iteration, np.arange(n_iter + 1))  # first tree of each iteration

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise ValueError(f"tree range [{start}, {stop}) outside 0..{forest.n_trees}")
        # slicing a Booster selects iterations; take the iterations covering the range
        it0, it1 = int(iteration[start]), int(iteration[stop - 1]) + 1
        part = bst if (it0 == 0 and it1 == n_iter) else bst[it0:it1]
        raw = part.predict(dmat, pred_leaf=True)
        raw = raw.reshape(n_rows, -1)
        offset = start - int(first[it0])
        out = raw[:, offset : offset + stop - start].astype(np.int32)
        for j, t in enumerate(range(start, stop)):
            if maps[t] is not None:
                out[:, j] = maps[t][out[:, j]]
        return out

    chunk = chunk_size(n_rows, forest.n_trees, memory_budget)
    per_iteration = int(np.bincount(iteration).max()) if iteration.size else 1
    if chunk >= per_iteration:
        chunk -= chunk % per_iteration  # whole iterations: no tree is predicted twice
    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=max(int(chunk), 1))


# ------------------------------------------------------------------------------ writing


def _write_tree(tree: Tree, index: int, num_feature: int) -> dict:
    """One IR tree as XGBoost's compact tree JSON (siblings renumbered adjacent if needed)."""
    if tree.rules != RULES:
        raise ValueError(f"tree {index} does not use XGBoost's decision rules")
    inner = tree.internal_nodes
    if np.any(tree.right[inner] != tree.left[inner] + 1):
        # XGBoost's predictor takes the right child as left + 1: renumber breadth-first
        tree, _ = collapse_nodes(tree, np.zeros(tree.n_nodes, dtype=bool))
        inner = tree.internal_nodes
    if np.any(tree.missing[inner] != MISSING_NAN):
        raise ValueError(f"tree {index}: XGBoost sends only missing values to default_left")
    leaf = tree.is_leaf
    if not np.all(np.isfinite(tree.value[leaf])):
        raise ValueError(f"tree {index} has a leaf without a finite value")
    n = tree.n_nodes
    parents = np.full(n, _NO_PARENT, dtype=np.int64)
    parents[tree.left[inner]] = inner
    parents[tree.right[inner]] = inner
    cat = tree.categorical & ~leaf
    cond = np.where(leaf, tree.value, np.where(cat, _CAT_CONDITION, tree.threshold))
    # internal nodes: the unshrunk weight, value / shrinkage (exact for values read from XGBoost)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner_weight = tree.value / tree.shrinkage if tree.shrinkage != 0 else tree.value
    weight = np.where(leaf, tree.value, np.nan_to_num(inner_weight, nan=0.0))
    gain = np.where(leaf | np.isnan(tree.host_gain), 0.0, tree.host_gain)
    cat_nodes = np.flatnonzero(cat)
    sizes = np.diff(tree.cat_offsets)[cat_nodes]
    segments = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if sizes.size else sizes
    cats = [tree.category_set(v) for v in cat_nodes]

    def f32(a):
        return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()

    return {
        "base_weights": f32(weight),
        "categories": np.concatenate(cats).astype(np.int64).tolist() if cats else [],
        "categories_nodes": cat_nodes.astype(np.int64).tolist(),
        "categories_segments": np.asarray(segments, dtype=np.int64).tolist(),
        "categories_sizes": sizes.astype(np.int64).tolist(),
        "default_left": np.where(leaf, 0, tree.default_left).astype(np.int64).tolist(),
        "id": int(index),
        "left_children": tree.left.astype(np.int64).tolist(),
        "loss_changes": f32(gain),
        "parents": parents.tolist(),
        "right_children": tree.right.astype(np.int64).tolist(),
        "split_conditions": f32(cond),
        "split_indices": np.where(leaf, 0, tree.feature).astype(np.int64).tolist(),
        "split_type": cat.astype(np.int64).tolist(),
        "sum_hessian": f32(np.nan_to_num(tree.host_hessian, nan=0.0)),
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(int(num_feature)),
            "num_nodes": str(int(n)),
            "size_leaf_vector": "1",
        },
    }


def model_json(js: Mapping, forest: Forest) -> dict:
    """A copy of model JSON ``js`` holding ``forest``'s trees and base score."""
    js = copy.deepcopy(dict(js))
    learner = js["learner"]
    model, weights = _gbtree(learner)
    lmp = learner["learner_model_param"]
    n_outputs = max(int(lmp.get("num_class", 0)), 1)
    num_feature = int(lmp["num_feature"])
    if forest.n_features != num_feature:
        raise ValueError(f"forest has {forest.n_features} features, the model {num_feature}")
    if forest.n_outputs != n_outputs:
        raise ValueError(f"forest has {forest.n_outputs} outputs, the model {n_outputs}")
    if weights is not None and len(weights) != forest.n_trees:
        raise ValueError("a DART model must keep its number of trees")
    model["trees"] = [_write_tree(t, i, num_feature) for i, t in enumerate(forest.trees)]
    model["tree_info"] = np.asarray(forest.tree_class, dtype=np.int64).tolist()
    counts = np.bincount(np.asarray(forest.tree_iteration, dtype=np.int64),
                         minlength=0) if forest.n_trees else np.zeros(0, dtype=np.int64)
    model["iteration_indptr"] = np.concatenate([[0], np.cumsum(counts)]).astype(int).tolist()
    model.setdefault("gbtree_model_param", {})["num_trees"] = str(forest.n_trees)
    # leaves we wrote need not fit the node statistics: tells the reader not to test them
    learner.setdefault("attributes", {})[_WRITTEN_ATTR] = "1"
    # keep the original base_score text unless the forest's margin changed
    name = learner.get("objective", {}).get("name", "reg:squarederror")
    text = str(lmp["base_score"])
    old = parse_base_score(text, name, n_outputs)
    new = np.asarray(forest.base_score, dtype=np.float32).astype(np.float64)
    if not np.array_equal(old, new):
        lmp["base_score"] = _format_base_score(
            _margin_to_base_score(new, name), as_list=text.lstrip().startswith("[")
        )
    return js


def _load_with_config(js: Mapping, template: xgboost.Booster) -> xgboost.Booster:
    """A Booster loaded from model JSON ``js`` with ``template``'s training configuration."""
    new = xgboost.Booster(model_file=bytearray(json.dumps(js).encode()))
    # a loaded Booster has default training parameters: restore the template's (but not its
    # model parameters: base_score may have changed)
    config = json.loads(template.save_config())
    config.get("learner", {}).pop("learner_model_param", None)
    new.load_config(json.dumps(config))
    return new


def write_model(model: xgboost.Booster | xgboost.XGBModel, forest: Forest):
    """A new model of ``model``'s type holding ``forest``'s trees; ``model`` is unchanged.

    Parameters
    ----------
    model : xgboost.Booster or fitted xgboost.XGBModel
        The template: everything but the trees (and base score, if the forest's differs) is
        kept, training parameters included.
    forest : Forest
        Trees with XGBoost's decision rules (as :func:`read_model` and
        :func:`unbiased_criteria.trees.collapse_nodes` give). Trees whose siblings do not have
        consecutive ids are renumbered breadth-first. Internal nodes get ``base_weights =
        value / shrinkage``; NaN statistics are written as 0.

    Returns
    -------
    xgboost.Booster, or a fitted estimator of ``model``'s class
    """
    bst = _booster(model)
    new = _load_with_config(model_json(json.loads(bst.save_raw("json")), forest), bst)
    if isinstance(model, xgboost.Booster):
        return new
    # a copy of the estimator (fitted attributes included) around the new Booster
    return copy.deepcopy(model, memo={id(bst): new})


# ------------------------------------------------------------------------------ training
#
# The training hook: XGBoost grows each iteration from the core loop's gradients
# (``Booster.boost``), the core scores and prunes it and keeps the running scores; at the end
# the pruned trees are written into a Booster with the intercept ``xgb.train`` would have used.

#: objectives the training hook drives (the core has their gradients, XGBoost keeps its leaves)
_TRAIN_OBJECTIVES = (
    "reg:squarederror", "reg:squaredlogerror", "reg:logistic", "reg:pseudohubererror",
    "binary:logistic", "binary:logitraw", "multi:softmax", "multi:softprob", "count:poisson",
    "reg:gamma", "reg:tweedie",
)
#: XGBoost objectives the training hook refuses, and why
_REFUSED_OBJECTIVES = {
    "reg:absoluteerror": "XGBoost renews its leaf values from its own prediction cache, which "
    "does not see pruning, and from held-out rows",
    "reg:quantileerror": "XGBoost renews its leaf values from its own prediction cache, which "
    "does not see pruning, and from held-out rows",
    "binary:hinge": "the core has no hinge loss",
}
#: XGBoost's default metric of each objective (``ObjFunction::DefaultEvalMetric``)
_DEFAULT_METRIC = {
    "reg:squarederror": "rmse", "reg:squaredlogerror": "rmsle", "reg:logistic": "rmse",
    "reg:pseudohubererror": "mphe", "binary:logistic": "logloss", "binary:logitraw": "logloss",
    "multi:softmax": "mlogloss", "multi:softprob": "mlogloss",
    "count:poisson": "poisson-nloglik", "reg:gamma": "gamma-deviance",
}
#: prefixes of metrics XGBoost maximises when early stopping is not told (callback.py)
_MAXIMIZE_PREFIXES = ("auc", "aucpr", "pre", "pre@", "map", "ndcg", "auc@", "aucpr@", "map@",
                      "ndcg@")
_LOG_EPS = np.float32(1e-16)  # XGBoost's clamp in logloss, mlogloss and poisson-nloglik
_RT_EPS = np.float32(1e-6)  # kRtEps in gamma-deviance


def _sigmoid32(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.float32(1) / (np.float32(1) + np.exp(-x))


def _softmax32(x: np.ndarray) -> np.ndarray:
    """XGBoost's softmax: float32 exponentials, their sum in double, float32 division."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, dtype=np.float64, keepdims=True).astype(np.float32)


def _eval_transform(objective: str, raw: np.ndarray) -> np.ndarray:
    """Predictions that XGBoost's metrics see (``EvalTransform``), in float32."""
    raw = np.asarray(raw, dtype=np.float32)
    if objective in _LOGIT_LINK:
        return _sigmoid32(raw)
    if objective in _LOG_LINK:
        with np.errstate(over="ignore"):
            return np.exp(raw)
    if objective in ("multi:softprob", "multi:softmax"):
        return _softmax32(raw)
    return raw


def _predict_transform(objective: str, raw: np.ndarray) -> np.ndarray:
    """What ``Booster.predict`` returns (``PredTransform``): softmax gives class indices."""
    if objective == "multi:softmax":
        return np.argmax(np.asarray(raw, dtype=np.float32), axis=1).astype(np.float32)
    return _eval_transform(objective, raw)


def _weighted_mean(rows: np.ndarray, w: np.ndarray | None) -> float:
    """XGBoost's reduction: float32 ``row * weight``, sums in double, ``sum / sum(w)``."""
    if w is None:
        total, wsum = float(np.sum(rows, dtype=np.float64)), float(rows.size)
    else:
        w32 = np.asarray(w, dtype=np.float32)
        total = float(np.sum(rows * w32, dtype=np.float64))
        wsum = float(np.sum(w32, dtype=np.float64))
    return total if wsum == 0 else total / wsum


def _metric_rows(name: str, param: float | None, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-row float32 values of XGBoost's elementwise metric ``name`` (see metric/*.cu)."""
    one = np.float32(1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if name in ("rmse", "mae", "mape", "mphe"):
            diff = y - p
            if name == "rmse":
                return diff * diff
            if name == "mae":
                return np.abs(diff)
            if name == "mape":
                return np.abs(diff / y)
            slope = np.float32(param)
            z = diff / slope
            return slope * slope * (np.sqrt(one + z * z) - one)
        if name == "rmsle":
            diff = np.log1p(y) - np.log1p(p)
            return diff * diff
        if name == "logloss":
            pos = np.where(y == 0, np.float32(0), -y * np.log(np.maximum(p, _LOG_EPS)))
            neg = np.where(one - y == 0, np.float32(0),
                           -(one - y) * np.log(np.maximum(one - p, _LOG_EPS)))
            return pos + neg
        if name == "error":
            return np.where(p > np.float32(param), one - y, y)
        if name == "poisson-nloglik":
            py = np.maximum(p, _LOG_EPS)
            return gammaln(y + one).astype(np.float32) + py - np.log(py) * y
        if name == "gamma-nloglik":
            py = np.maximum(p, np.float32(1e-6))
            return y / py + np.log(py)
        if name == "gamma-deviance":
            pt, lt = p + _RT_EPS, y + _RT_EPS
            return np.log(pt / lt) + lt / pt - one
        if name == "tweedie-nloglik":
            rho = np.float32(param)
            a = y * np.exp((one - rho) * np.log(p)) / (one - rho)
            b = np.exp((np.float32(2) - rho) * np.log(p)) / (np.float32(2) - rho)
            return -a + b
        if name == "mlogloss":
            pk = p[np.arange(y.size), y.astype(np.int64)]
            return np.where(pk > _LOG_EPS, -np.log(pk), -np.log(_LOG_EPS))
        if name == "merror":
            return (np.argmax(p, axis=1) != y.astype(np.int64)).astype(np.float32)
    raise AssertionError(name)


_ELEMENTWISE = ("rmse", "rmsle", "mae", "mape", "mphe", "logloss", "error", "poisson-nloglik",
                "gamma-nloglik", "gamma-deviance", "tweedie-nloglik")
_MULTICLASS_METRICS = ("mlogloss", "merror")
_SUPPORTED_METRICS = (*_ELEMENTWISE, *_MULTICLASS_METRICS, "auc", "error@<t>",
                      "tweedie-nloglik@<rho>")


def _maximize(name: str, maximize: bool | None) -> bool:
    """Whether early stopping maximises metric ``name`` (XGBoost's rule when not told)."""
    if maximize is not None:
        return bool(maximize)
    return name != "mape" and any(name.startswith(p) for p in _MAXIMIZE_PREFIXES)


def _xgb_metric(spec: str, objective: str, n_outputs: int, params: Mapping[str, Any],
                maximize: bool | None) -> Metric:
    """XGBoost's metric ``spec`` (``"rmse"``, ``"error@0.7"``...) on the core's raw scores.

    The core calls ``func(y, raw, weight, objective)``; the predictions are the link of the
    ``params`` objective (``objective``) as XGBoost's ``EvalTransform`` gives them, also with a
    custom objective, and the arithmetic is XGBoost's (float32 rows, double sums).
    """
    if not isinstance(spec, str):
        raise TypeError(f"params['eval_metric'] must hold metric names, got {spec!r}")
    base, _, arg = spec.partition("@")
    param: float | None = None
    name = spec
    if base == "error":
        param = float(np.float32(arg)) if arg else 0.5
        name = "error" if np.float32(param) == np.float32(0.5) else f"error@{param:g}"
    elif base == "tweedie-nloglik":
        if not arg:
            raise ValueError("params['eval_metric']: write tweedie-nloglik@rho, e.g. "
                             "'tweedie-nloglik@1.5'")
        param = float(np.float32(arg))
        name = f"tweedie-nloglik@{param:g}"
    elif base == "mphe":
        param = float(params.get("huber_slope", 1.0))
    elif arg or base not in (*_ELEMENTWISE, *_MULTICLASS_METRICS, "auc"):
        raise ValueError(
            f"params['eval_metric']: metric {spec!r} is not supported by the training hook; "
            f"supported: {list(_SUPPORTED_METRICS)}"
        )
    multiclass = base in _MULTICLASS_METRICS
    if multiclass != (n_outputs > 1) or (base == "auc" and n_outputs > 1):
        raise ValueError(
            f"params['eval_metric']: metric {spec!r} does not fit objective {objective!r} "
            f"with {n_outputs} output(s)"
        )

    def func(y, raw, weight, _objective):
        p = _eval_transform(objective, raw)
        y32 = np.asarray(y, dtype=np.float32)
        if base == "auc":
            return METRICS["auc"][0](y32, p.astype(np.float64), weight, None)
        value = _weighted_mean(_metric_rows(base, param, y32, p), weight)
        if base in ("rmse", "rmsle"):
            return float(np.sqrt(value))
        if base == "gamma-deviance":  # 2 * sum / sum(w)
            return 2.0 * value
        return value

    return Metric(name, func, _maximize(name, maximize))


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


def _check_training_params(params: Mapping[str, Any]) -> str:
    """The objective name of ``params``, after refusing what the hook cannot drive."""
    name = params.get("objective", "reg:squarederror")
    if callable(name):
        raise TypeError("params['objective'] must be an XGBoost objective name; pass a callable "
                        "objective as obj=")
    if not isinstance(name, str):
        raise TypeError(f"params['objective'] must be a string, got {type(name).__name__}")
    if name in _REFUSED_OBJECTIVES or name.startswith(("rank:", "survival:")):
        why = _REFUSED_OBJECTIVES.get(name, "ranking and survival objectives are not row-wise")
        raise UnsupportedModelError(
            f"params['objective']={name!r} is not supported by the training hook: {why}"
        )
    if name not in _TRAIN_OBJECTIVES:
        raise ValueError(
            f"params['objective']: unknown objective {name!r}; the training hook supports "
            f"{list(_TRAIN_OBJECTIVES)} (or pass a callable as obj=)"
        )
    booster = params.get("booster", "gbtree")
    if booster != "gbtree":
        raise UnsupportedModelError(
            f"params['booster']={booster!r} is not supported by the training hook: only gbtree "
            "(DART drops and rescales trees, gblinear has none)"
        )
    if int(params.get("num_parallel_tree", 1)) != 1:
        raise UnsupportedModelError(
            "params['num_parallel_tree'] > 1 is not supported by the training hook: the core "
            "loop takes one tree per output and iteration"
        )
    if params.get("multi_strategy", "one_output_per_tree") != "one_output_per_tree":
        raise UnsupportedModelError("multi_strategy='multi_output_tree' (vector leaves) is not "
                                    "supported")
    return name


def _labels(dmat: xgboost.DMatrix, argument: str) -> np.ndarray:
    y = np.asarray(dmat.get_label())
    n = int(dmat.num_row())
    if y.size == 0:
        raise ValueError(f"{argument} has no labels: build it with xgboost.DMatrix(X, label=y)")
    if y.size != n:
        raise UnsupportedModelError(
            f"{argument} has {y.size} labels for {n} rows: multi-target training is not "
            "supported"
        )
    return y


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
        if int(dmat.num_col()) != int(reference.num_col()):
            raise ValueError(f"{argument} has {dmat.num_col()} features but dtrain has "
                             f"{reference.num_col()}")
        names, ref_names = dmat.feature_names, reference.feature_names
        if names is not None and ref_names is not None and list(names) != list(ref_names):
            raise ValueError(f"{argument}'s feature names do not match dtrain's")


class XGBGrower:
    """The core's :class:`~unbiased_criteria.boosting.Grower` on an XGBoost Booster.

    One ``xgboost.Booster(params, [dtrain, *eval DMatrices])`` is built once. Each
    :meth:`grow` calls ``Booster.boost`` with the core's gradients, so XGBoost grows the trees
    exactly as ``xgb.train`` would from them (its own objective is never evaluated: boosting
    with given gradients neither estimates an intercept nor reads the prediction cache), then
    reads only the new iteration's trees (``booster[it:it + 1]``, its JSON) into the IR.
    :meth:`leaf_nodes` routes a DMatrix through that iteration with ``pred_leaf``.

    The Booster keeps the unpruned trees; only the core's trees and running scores count.

    Parameters
    ----------
    params : dict
        XGBoost parameters (objective included: it sets the number of outputs).
    dtrain : xgboost.DMatrix
    evals : sequence of xgboost.DMatrix
        Routed as sets 1, 2, ... in this order.
    """

    def __init__(self, params: Mapping[str, Any], dtrain: xgboost.DMatrix,
                 evals: list[xgboost.DMatrix] | tuple = ()):
        self.booster = xgboost.Booster(dict(params), [dtrain, *evals])
        self.data = [dtrain, *evals]
        self.train_params = _train_params(json.loads(self.booster.save_config()), None)
        js = json.loads(self.booster.save_raw("json"))
        self.n_outputs = max(int(js["learner"]["learner_model_param"].get("num_class", 0)), 1)
        #: eta as XGBoost multiplies leaf weights by it (float32)
        self.shrinkage = float(np.float32(self.train_params["eta"]))
        self.iteration = 0
        self._part: xgboost.Booster | None = None
        self._maps: list[np.ndarray | None] = []
        self._leaves: dict[int, np.ndarray] = {}

    def grow(self, grad: np.ndarray, hess: np.ndarray) -> list[Tree]:
        """Grow one iteration from float32 ``(n, K)`` gradients; its K trees in the IR."""
        K = self.n_outputs
        if K == 1:
            grad, hess = np.ascontiguousarray(grad[:, 0]), np.ascontiguousarray(hess[:, 0])
        it = self.iteration
        self.booster.boost(self.data[0], it, grad=grad, hess=hess)
        self.iteration += 1
        part = self.booster[it : it + 1]
        model, _ = _gbtree(json.loads(part.save_raw("json"))["learner"])
        trees_json = model["trees"]
        if np.asarray(model.get("tree_info", []), dtype=np.int64).tolist() != list(range(K)):
            raise ValueError(f"iteration {it} does not hold one tree per output")
        self._part = part
        self._maps = [_node_map(t) for t in trees_json]
        self._leaves = {}
        return [_read_tree(t, it * K + k, self.shrinkage) for k, t in enumerate(trees_json)]

    def leaf_nodes(self, which: int) -> np.ndarray:
        """IR leaf ids ``(n_rows, K)`` of the last iteration for set ``which`` (0 = train)."""
        dmat = self.data[which]
        key = id(dmat)
        if key not in self._leaves:  # dtrain given as an eval set is routed once
            n = int(dmat.num_row())
            ids = self._part.predict(dmat, pred_leaf=True).reshape(n, -1).astype(np.int32)
            for k, node_map in enumerate(self._maps):
                if node_map is not None:
                    ids[:, k] = node_map[ids[:, k]]
            self._leaves[key] = ids
        return self._leaves[key]


@dataclass(frozen=True)
class TrainingRecord:
    """What :func:`train` gathered, kept for the Booster it returned.

    Attributes
    ----------
    splits : pandas.DataFrame
        One row per split the host made (before pruning): ``tree`` (index in the returned
        model), ``class``, ``iteration``, ``node`` (XGBoost's node id in the unpruned tree),
        ``depth``, ``feature_index``, ``feature``, ``threshold``, ``n_train``, ``n_valid``
        (held-out rows reaching it), ``k``, ``biased_gain`` (B on the rows that built it),
        ``unbiased_gain`` (U), ``host_gain`` (XGBoost's loss_chg), ``usable`` (k >= min_k) and
        ``kept`` (the split is in the returned model). Empty when nothing was scored
        (``prune_threshold=None`` or ``holdout_fraction=0``). Per-feature sums over the kept
        splits: :func:`training_report`.
    result : BoostResult
        The core loop's result: pruned trees, ``init_score`` (the intercept's margin),
        ``raw_train`` (running float32 margins of dtrain, ``(n, K)``), ``evals_result``,
        ``best_iteration``.
    raw_eval : tuple of arrays
        Running float32 margins ``(n_rows, K)`` of each eval set, in ``evals`` order.
    feature_names : tuple of str
    """

    splits: pd.DataFrame
    result: BoostResult
    raw_eval: tuple[np.ndarray, ...]
    feature_names: tuple[str, ...]


#: Booster returned by train() -> its TrainingRecord (dropped with the Booster)
_RECORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_SPLIT_COLUMNS = ("tree", "class", "iteration", "node", "depth", "feature_index", "feature",
                  "threshold", "n_train", "n_valid", "k", "biased_gain", "unbiased_gain",
                  "host_gain", "usable", "kept")


def training_record(booster: xgboost.Booster) -> TrainingRecord:
    """The :class:`TrainingRecord` of a Booster returned by :func:`train`.

    The record lives as long as that Booster object, in this process: a copy, a slice
    (``booster[a:b]``), a pickled or saved-and-loaded Booster has none.

    Parameters
    ----------
    booster : xgboost.Booster
        The very object :func:`train` returned.

    Returns
    -------
    TrainingRecord

    Raises
    ------
    KeyError
        ``booster`` was not returned by :func:`train` in this process.
    """
    try:
        return _RECORDS[booster]
    except (KeyError, TypeError):
        raise KeyError(
            "booster was not returned by unbiased_criteria.adapters.xgboost.train in this "
            "process (copies, slices, pickled and loaded Boosters carry no training record)"
        ) from None


def training_splits(booster: xgboost.Booster) -> pd.DataFrame:
    """The per-split table gathered while :func:`train` built ``booster`` (a copy).

    See :class:`TrainingRecord` for the columns and :func:`training_record` for which
    Boosters have one. Per-feature sums over the kept splits: :func:`training_report`.
    """
    return training_record(booster).splits.copy()


def training_report(booster: xgboost.Booster) -> ImportanceReport:
    """The unbiased importance gathered while :func:`train` built ``booster``.

    Parameters
    ----------
    booster : xgboost.Booster
        The very object :func:`train` returned (see :func:`training_record`).

    Returns
    -------
    ImportanceReport
        Over the splits the model kept: ``to_frame()`` sums ``unbiased_gain`` (U at the round
        the split was made), ``biased_gain`` and ``host_gain`` per feature; ``splits`` lists
        them. No standard errors (a training run has no jackknife blocks).
    """
    record = training_record(booster)
    kept = record.splits[record.splits["kept"].astype(bool)].reset_index(drop=True)
    return ImportanceReport(kept, record.feature_names, host="xgboost")


def _split_table(splits: pd.DataFrame | None, names: tuple[str, ...], K: int) -> pd.DataFrame:
    if splits is None or splits.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "feature" else np.float64)
                             for c in _SPLIT_COLUMNS})
    out = splits.copy()
    out["iteration"] = out["tree"] // K
    out["feature"] = np.asarray(names, dtype=object)[out["feature_index"].to_numpy()]
    return out[list(_SPLIT_COLUMNS)].reset_index(drop=True)


def _custom_objective(obj: Callable, dtrain: xgboost.DMatrix, n_outputs: int) -> Objective:
    """XGBoost's ``obj(preds, dtrain) -> (grad, hess)`` as the core's ``f(y, raw, weight)``.

    ``preds`` are float32 margins ``(n,)`` or ``(n, K)``; flat results are row-major, as
    XGBoost reads them. The callable applies weights itself (it has ``dtrain``).
    """
    n = int(dtrain.num_row())

    def func(y, raw, weight):
        grad, hess = obj(np.array(raw, dtype=np.float32), dtrain)
        for what, value in (("grad", grad), ("hess", hess)):
            if np.size(value) != n * n_outputs:
                raise ValueError(
                    f"obj returned {np.size(value)} {what} values, expected {n * n_outputs} "
                    f"({n} rows x {n_outputs} outputs; flat arrays are row-major)"
                )
        return grad, hess

    return _objectives.make_objective(func, n_outputs=n_outputs)


def _host_intercept(params: Mapping[str, Any], dtrain: xgboost.DMatrix,
                    grower: XGBGrower, estimate: bool) -> str:
    """``base_score`` (model JSON text) that ``xgb.train`` would give the model.

    XGBoost estimates it in its first ``update`` only (not when boosting with given gradients,
    so neither for ``obj=`` nor with 0 rounds): one throwaway round of depth 1 with the same
    parameters and data gives it exactly, whatever the objective and XGBoost version.
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
    callbacks: Sequence[xgboost.callback.TrainingCallback] | None = None,
    holdout_fraction: float = 0.2,
    redraw_holdout: bool = True,
    prune_threshold: float | None = 0.0,
    n_draws: int = 1,
    min_k: int = 5,
    random_state: int | np.random.SeedSequence | None = None,
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
        ``count:poisson``, ``reg:gamma``, ``reg:tweedie`` (its link and default metric also
        apply with ``obj=``). ``eval_metric``: XGBoost names among rmse, rmsle, mae, mape,
        mphe, logloss, error, error@t, auc, mlogloss, merror, poisson-nloglik, gamma-nloglik,
        gamma-deviance, tweedie-nloglik@rho; default: the objective's, as in XGBoost.
        Not supported: ``num_parallel_tree > 1``, DART, gblinear, vector leaves.
    dtrain : xgboost.DMatrix
        Training rows with labels (and weights); no base_margin, no groups.
    num_boost_round : int
    evals : sequence of (DMatrix, name)
        Evaluated every round on the running margins (pruned trees).
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
        Stop when the last metric on the last eval set has not improved for that many rounds.
        The returned model keeps every tree; ``best_iteration`` and ``best_score`` are set as
        attributes (``booster.best_iteration``), as XGBoost does.
    evals_result : dict, optional
        Filled with ``{eval name: {metric: [value per round]}}``.
    verbose_eval : bool or int
        Print the evaluations every ``verbose_eval`` rounds (True: every round) with
        XGBoost's own ``EvaluationMonitor``, which prints where XGBoost prints. Pass False and
        ``callbacks=[xgboost.callback.EvaluationMonitor(logger=...)]`` to send them to a
        ``logging`` logger instead. False prints nothing.
    callbacks : sequence of xgboost.callback.TrainingCallback, optional
        Called as ``xgboost.train`` calls them (``before_training``, ``after_iteration``
        with the evaluation log, ``after_training``). ``model`` is the Booster growing the
        trees, which holds them unpruned, except in ``after_training``, which gets (and may
        replace) the returned model. They cannot stop training (a warning says so) and must
        not change training parameters.
    holdout_fraction : float in [0, 1)
        Share of training rows held out each round to score the new splits.
    redraw_holdout : bool
        Draw a new held-out part every round (every row helps build some trees).
    prune_threshold : float or None
        Collapse splits with ``U <= prune_threshold``; None: no pruning and no scoring.
    n_draws, min_k : int
        Options of the unbiased gain (see :func:`unbiased_criteria.unbiased_importance`).
    random_state : int, SeedSequence or None
        Seeds the held-out draws and the k-subsampling.
    progress : bool
        Show a tqdm progress bar over rounds.

    Returns
    -------
    xgboost.Booster
        The pruned model, with the intercept ``xgboost.train`` would have used and the
        training parameters of ``params``: ``predict(dmat, output_margin=True)`` equals the
        loop's running margins. Its per-split scores: :func:`training_splits`; the unbiased
        importance: :func:`training_report`; the rest: :func:`training_record`.

    Raises
    ------
    ValueError
        Unknown objective or metric, ``holdout_fraction`` outside [0, 1), ``dtrain``
        without labels or with weights summing to zero, labels outside the objective's range,
        early stopping without evals.
    UnsupportedModelError
        Objectives, boosters and options the hook cannot drive (see ``params``).
    """
    params = _normalise_params(params)
    holdout = HoldoutPlan(float(holdout_fraction), bool(redraw_holdout))
    options = GainOptions(n_draws=n_draws, min_k=min_k, random_state=random_state)
    if obj is not None and not callable(obj):
        raise TypeError(f"obj must be a callable f(preds, dtrain) -> (grad, hess), got {obj!r}")
    if custom_metric is not None and not callable(custom_metric):
        raise TypeError("custom_metric must be a callable f(preds, dmatrix) -> (name, value)")
    name = _check_training_params(params)
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
    if early_stopping_rounds and not evals:
        raise ValueError("early_stopping_rounds needs at least one eval set in evals")
    if prune_threshold is not None and holdout.fraction == 0:
        warnings.warn("holdout_fraction=0 leaves no held-out rows: no split is scored or "
                      "pruned", UserWarning, stacklevel=2)
    y = _labels(dtrain, "dtrain")
    weight = _weights(dtrain)
    if weight is not None and not weight.sum() > 0:
        raise ValueError("dtrain's weights sum to zero: no row would count")
    eval_y = [_labels(d, f"evals[{i}] ({s!r})") for i, (d, s) in enumerate(evals)]

    grower = XGBGrower(params, dtrain, [d for d, _ in evals])
    K = grower.n_outputs
    model_ir = parse_model(json.loads(grower.booster.save_raw("json")), grower.train_params)
    objective = model_ir.objective if obj is None else _custom_objective(obj, dtrain, K)
    y = check_labels(y, y.size, "dtrain's labels", objective)
    for i, (labels, (_, set_name)) in enumerate(zip(eval_y, evals)):
        check_labels(labels, labels.size, f"evals[{i}] ({set_name!r}) labels", objective)

    metric_names = params.get("eval_metric")
    if metric_names is None:
        off = str(params.get("disable_default_eval_metric", "0")).lower() in ("1", "true")
        metric_names = [] if off or name not in _DEFAULT_METRIC else [_DEFAULT_METRIC[name]]
        if name == "reg:tweedie":
            rho = float(np.float32(params.get("tweedie_variance_power", 1.5)))
            metric_names = [] if off else [f"tweedie-nloglik@{rho:g}"]
    elif isinstance(metric_names, str):
        metric_names = [metric_names]
    metrics = [_xgb_metric(m, name, K, params, maximize) for m in metric_names]
    if early_stopping_rounds and not (metrics or custom_metric):
        raise ValueError("early_stopping_rounds needs a metric: the objective has no default "
                         "one and params has no eval_metric")
    eval_sets = [EvalSet(s, eval_y[i], _weights(d)) for i, (d, s) in enumerate(evals)]
    base_score = _host_intercept(params, dtrain, grower,
                                 estimate=obj is None and num_boost_round > 0)
    init = parse_base_score(base_score, name, K)

    # XGBoost stops on the last metric of the last eval set; a custom metric's names are
    # known once it has run, so the feval hook below fills ``monitor`` in the first round
    monitor: list[tuple[str, str]] = []
    if evals and metrics:
        monitor.append((evals[-1][1], metrics[-1].name))
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
        out = [(str(m), float(f"{v:f}"), _maximize(str(m), maximize))
               for m, v in (res if isinstance(res, list) else [res])]
        if i == len(eval_sets) - 1 and out:
            monitor[:] = [(evals[i][1], out[-1][0])]
        return out

    callbacks = list(callbacks or [])
    for cb in callbacks:
        if not isinstance(cb, xgboost.callback.TrainingCallback):
            raise TypeError("callbacks must be xgboost.callback.TrainingCallback instances")
    if verbose_eval:
        period = 1 if verbose_eval is True else int(verbose_eval)
        callbacks.append(xgboost.callback.EvaluationMonitor(period=period))
    history: dict[str, dict[str, list[float]]] = {}
    warned = []

    def on_round(it: int, evaluations: dict) -> None:
        for (set_name, metric_name), (value, _) in evaluations.items():
            history.setdefault(set_name, {}).setdefault(metric_name, []).append(value)
        stop = [cb.after_iteration(grower.booster, it, history) for cb in callbacks]
        if any(stop) and not warned:
            warned.append(True)
            warnings.warn("a callback asked to stop training: the training hook cannot stop "
                          "from a callback (use early_stopping_rounds)", UserWarning,
                          stacklevel=2)

    for cb in callbacks:
        cb.before_training(grower.booster)
    result = boost(
        grower, objective, y, weight,
        num_boost_round=int(num_boost_round), split_score=model_ir.split_score,
        init_score=init, score_dtype=np.float32,
        holdout=holdout, options=options, prune_threshold=prune_threshold,
        eval_sets=eval_sets, metrics=metrics, feval=feval if eval_sets else None,
        early_stopping_rounds=early_stopping_rounds, monitor=monitor, callback=on_round,
        progress=progress,
    )

    n_trees = len(result.trees)
    forest = replace(
        model_ir.forest, trees=tuple(result.trees), tree_class=result.tree_class,
        tree_iteration=np.arange(n_trees, dtype=np.int64) // K, base_score=init,
    )
    js = json.loads(grower.booster.save_raw("json"))
    _gbtree(js["learner"])[0]["trees"] = []  # the unpruned trees: replaced, not worth copying
    js["learner"]["learner_model_param"]["base_score"] = base_score
    booster = _load_with_config(model_json(js, forest), grower.booster)
    if early_stopping_rounds and monitor and result.best_iteration >= 0:
        set_name, metric_name = monitor[0]
        booster.set_attr(best_iteration=str(result.best_iteration),
                         best_score=str(result.best_score[set_name][metric_name]))
    raw_eval = tuple(
        np.array(r, dtype=np.float32).reshape(r.shape[0], K) if r is not None
        else np.tile(init.astype(np.float32), (e.y.size, 1))
        for r, e in zip(latest, eval_sets)
    )
    record = TrainingRecord(_split_table(result.splits, forest.feature_names, K), result,
                            raw_eval, forest.feature_names)
    for cb in callbacks:
        out = cb.after_training(booster)
        booster = out if isinstance(out, xgboost.Booster) else booster
    _RECORDS[booster] = record
    if evals_result is not None:
        evals_result.update(result.evals_result)
    return booster


# ------------------------------------------------------------------------------ scikit-learn
#
# XGBRegressor / XGBClassifier whose fit runs XGBoost's own fit with :func:`train` in place of
# ``xgboost.train``: every step of XGBoost's data handling (DMatrix or QuantileDMatrix, eval
# sets, weights, categorical data, metrics, callbacks) stays XGBoost's.

#: constructor parameters the estimators add to XGBoost's (they are not XGBoost parameters)
_UNBIASED_PARAMS = ("holdout_fraction", "redraw_holdout", "prune_threshold", "n_draws", "min_k")


def _with_train(func: Callable, replacement: Callable) -> Callable:
    """A copy of ``func`` whose global name ``train`` means ``replacement``.

    ``XGBModel.fit`` and ``XGBClassifier.fit`` build the DMatrices, evaluation sets, metric
    and objective wrappers and then call ``xgboost.train`` through their module's global name
    ``train``. Running a copy of the function (unwrapped from XGBoost's positional-argument
    decorator) with that one name rebound keeps every step of XGBoost's ``fit`` without
    touching the ``xgboost`` module (no monkeypatching: other code and threads are unaffected).
    """
    func = inspect.unwrap(func)
    if "train" not in func.__code__.co_names:
        raise RuntimeError(
            f"this XGBoost version's {func.__qualname__} does not call train(); the "
            "UnbiasedXGB* estimators need an update"
        )
    namespace = dict(func.__globals__)
    namespace["train"] = replacement
    new = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__,
                             func.__closure__)
    new.__kwdefaults__ = copy.copy(func.__kwdefaults__)
    return new


class _UnbiasedFit:
    """What both estimators add to XGBoost's: placed first in their bases, so XGBoost's
    ``get_params`` (which reads the parameters of ``__bases__[0]`` when it has
    ``get_params``, else ``__bases__[1]``) still collects XGBoost's parameters.

    ``_host_fit`` is the XGBoost ``fit`` whose copy (:func:`_with_train`) trains the model.
    """

    _host_fit: Callable

    def _fit_unbiased(self, X: Any, y: Any, kwargs: dict[str, Any]):
        if kwargs.get("xgb_model") is not None:
            raise ValueError("xgb_model (continued training) is not supported")
        options = {k: getattr(self, k) for k in _UNBIASED_PARAMS}

        def unbiased_train(params, dtrain, num_boost_round=10, *, evals=None, obj=None,
                           maximize=None, early_stopping_rounds=None, evals_result=None,
                           verbose_eval=True, xgb_model=None, callbacks=None,
                           custom_metric=None):
            # XGBoost's Booster skips parameters set to None (the wrapper's unset ones)
            params = {k: v for k, v in params.items() if v is not None}
            seed = params.get("random_state", params.get("seed"))
            return train(params, dtrain, num_boost_round, evals=evals, obj=obj,
                         maximize=maximize, custom_metric=custom_metric,
                         early_stopping_rounds=early_stopping_rounds,
                         evals_result=evals_result, verbose_eval=verbose_eval,
                         callbacks=callbacks, random_state=0 if seed is None else seed,
                         **options)

        fit = _with_train(type(self)._host_fit, unbiased_train)
        fit(self, X, y, **kwargs)
        self.training_splits_ = training_splits(self._Booster)
        return self

    def _wrapper_params(self) -> set[str]:
        # ours are not XGBoost parameters: keep them out of the Booster's
        return {*super()._wrapper_params(), *_UNBIASED_PARAMS}

    def _more_tags(self) -> dict[str, bool]:
        # train() refuses several targets (XGBoost's estimators accept them); scikit-learn
        # < 1.6 reads these, XGBoost's __sklearn_tags__ copies them for 1.6+
        return {**super()._more_tags(), "multioutput": False, "multilabel": False}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_label = False
        return tags

    @property
    def feature_importances_(self) -> np.ndarray:
        """Unbiased importance of each feature: the sum of ``U`` over its kept splits.

        ``U`` is the unbiased gain of each split when it was made (see
        ``training_splits_``), summed over every tree of the Booster (also beyond
        ``best_iteration``, as XGBoost's own importances). Not normalised: noise features
        can have negative totals. NaN for every feature when no split was scored
        (``prune_threshold=None`` or ``holdout_fraction=0``). XGBoost's own importances stay
        available as ``get_booster().get_score(importance_type=...)``.
        """
        if not self.__sklearn_is_fitted__():
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("No feature_importances found. Need to call fit beforehand.")
        frame = getattr(self, "training_splits_", None)
        if frame is None:
            raise AttributeError(
                "feature_importances_: this model was not fitted by fit (load_model keeps no "
                "training record); XGBoost's importances: get_booster().get_score()"
            )
        out = np.zeros(self.get_booster().num_features())
        if frame.empty:
            return np.full_like(out, np.nan)
        kept = frame[frame["kept"].astype(bool)]
        np.add.at(out, kept["feature_index"].to_numpy(dtype=np.int64),
                  kept["unbiased_gain"].to_numpy(dtype=np.float64))
        return out


_ESTIMATOR_DOC = """XGBoost's ``{base}`` trained with unbiased-gain pruning (:func:`train`).

    A drop-in replacement: the constructor takes every ``{base}`` parameter and ``fit`` every
    ``{base}.fit`` argument (not ``xgb_model``); ``fit`` is XGBoost's own with :func:`train`
    in place of ``xgboost.train``, so each new tree is pruned, top-down, of the splits whose
    unbiased gain on held-out rows is ``<= prune_threshold``. ``random_state`` also seeds the
    held-out draws (``None``: 0, XGBoost's default seed). Several targets are not
    supported.{extra}

    Parameters
    ----------
    holdout_fraction : float, default 0.2
        Training rows held out each round (zero gradient and hessian; they stay in the
        DMatrix), in [0, 1). 0 switches pruning off.
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


class UnbiasedXGBRegressor(_UnbiasedFit, xgboost.XGBRegressor):
    __doc__ = _ESTIMATOR_DOC.format(base="XGBRegressor", extra="")
    _host_fit = xgboost.XGBRegressor.fit

    def __init__(
        self,
        *,
        objective: str | Callable | None = "reg:squarederror",
        holdout_fraction: float = 0.2,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(objective=objective, **kwargs)
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k

    def fit(self, X: Any, y: Any, *, sample_weight: Any = None, base_margin: Any = None,
            eval_set: Sequence | None = None, verbose: bool | int | None = True,
            xgb_model: Any = None, sample_weight_eval_set: Sequence | None = None,
            base_margin_eval_set: Sequence | None = None,
            feature_weights: Any = None) -> UnbiasedXGBRegressor:
        """``XGBRegressor.fit`` through :func:`train` (``xgb_model`` must be None)."""
        return self._fit_unbiased(X, y, dict(
            sample_weight=sample_weight, base_margin=base_margin, eval_set=eval_set,
            verbose=verbose, xgb_model=xgb_model, sample_weight_eval_set=sample_weight_eval_set,
            base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
        ))


class UnbiasedXGBClassifier(_UnbiasedFit, xgboost.XGBClassifier):
    __doc__ = _ESTIMATOR_DOC.format(base="XGBClassifier", extra="""

    Unlike ``XGBClassifier``, any labels are accepted (``classes_`` holds them, sorted;
    ``predict`` returns them), and ``fit`` leaves ``objective`` as given (XGBClassifier
    replaces it by ``multi:softprob`` for more than two classes; here the Booster gets that
    objective without the parameter changing).""")
    _host_fit = xgboost.XGBClassifier.fit

    def __init__(
        self,
        *,
        objective: str | Callable | None = "binary:logistic",
        holdout_fraction: float = 0.2,
        redraw_holdout: bool = True,
        prune_threshold: float | None = 0.0,
        n_draws: int = 1,
        min_k: int = 5,
        **kwargs: Any,
    ) -> None:
        super().__init__(objective=objective, **kwargs)
        self.holdout_fraction = holdout_fraction
        self.redraw_holdout = redraw_holdout
        self.prune_threshold = prune_threshold
        self.n_draws = n_draws
        self.min_k = min_k

    def fit(self, X: Any, y: Any, *, sample_weight: Any = None, base_margin: Any = None,
            eval_set: Sequence | None = None, verbose: bool | int | None = True,
            xgb_model: Any = None, sample_weight_eval_set: Sequence | None = None,
            base_margin_eval_set: Sequence | None = None,
            feature_weights: Any = None) -> UnbiasedXGBClassifier:
        """``XGBClassifier.fit`` through :func:`train`, on labels encoded as ``0..K-1``."""
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import column_or_1d

        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes, encoded = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"the training labels have 1 class ({classes.tolist()}): a "
                             "classifier needs at least 2")
        if eval_set is not None:
            eval_set = [(Xe, _encode_labels(ye, classes, f"eval_set[{i}]"))
                        for i, (Xe, ye) in enumerate(eval_set)]
        objective = self.objective
        try:
            self._fit_unbiased(X, encoded, dict(
                sample_weight=sample_weight, base_margin=base_margin, eval_set=eval_set,
                verbose=verbose, xgb_model=xgb_model,
                sample_weight_eval_set=sample_weight_eval_set,
                base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
            ))
        finally:
            self.objective = objective  # XGBClassifier.fit sets multi:softprob
        self._classes = classes
        return self

    def get_xgb_params(self) -> dict[str, Any]:
        """XGBoost's parameters, with the objective the Booster was trained with.

        ``XGBClassifier.fit`` trains ``multi:softprob`` (unless ``multi:softmax``) with
        ``num_class`` for more than two classes; ``set_params`` on a fitted model passes these
        parameters to the Booster, so they must say the same.
        """
        params = super().get_xgb_params()
        n_classes = getattr(self, "n_classes_", 0)
        if n_classes > 2 and not callable(self.objective):
            if params.get("objective") != "multi:softmax":
                params["objective"] = "multi:softprob"
            params["num_class"] = n_classes
        return params

    @property
    def classes_(self) -> np.ndarray:
        """The class labels, sorted (``predict_proba``'s columns)."""
        classes = getattr(self, "_classes", None)
        return np.arange(self.n_classes_) if classes is None else classes

    def predict(self, X: Any, *, output_margin: bool = False, validate_features: bool = True,
                base_margin: Any = None, iteration_range: Any = None) -> np.ndarray:
        """``XGBClassifier.predict``, in the labels given to ``fit``."""
        out = super().predict(X, output_margin=output_margin,
                              validate_features=validate_features, base_margin=base_margin,
                              iteration_range=iteration_range)
        if output_margin:
            return out
        return self.classes_[np.asarray(out, dtype=np.int64)]


def _encode_labels(y: Any, classes: np.ndarray, argument: str) -> np.ndarray:
    """Positions of ``y``'s labels in ``classes`` (sorted); unknown labels are refused."""
    y = np.asarray(y).ravel()
    index = np.searchsorted(classes, y)
    index[index == classes.size] = 0
    if not np.array_equal(classes[index], y):
        unknown = np.setdiff1d(y, classes)
        raise ValueError(f"{argument} has labels not in the training labels: "
                         f"{unknown[:10].tolist()}")
    return index
