"""XGBoost ``get_dump(dump_format="json", with_stats=True)`` without a Booster: read, route,
write back.

The adapter protocol of :mod:`unbiased_criteria.model` for a
:class:`~unbiased_criteria.dumps.Dump`. Each tree of the dump is a nested JSON object: split
nodes hold ``nodeid``, ``split`` (the feature's name, ``f<i>`` without names),
``split_condition`` (a threshold, or the list of categories of a categorical split), ``yes``,
``no``, ``missing``, ``gain``, ``cover`` and ``children``; leaves hold ``leaf`` (the value
added to the margin, eta included) and ``cover``. XGBoost sends ``x < split_condition`` to
``yes``, a category in the list to ``yes``, and missing values to ``missing``.

A dump lacks what the model JSON's learner holds: the objective, ``base_score``, the number
of classes, the feature names and count, and the training parameters (eta, lambda...). They
come from ``host_params``; ``objective`` and ``base_score`` are required, eta and lambda are
inferred from the leaves when absent.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from unbiased_criteria.adapters.xgboost import compat
from unbiased_criteria.adapters.xgboost.layout import RULES
from unbiased_criteria.adapters.xgboost.objectives import _core_objective, parse_base_score
from unbiased_criteria.adapters.xgboost.objectives import make_objective as _make_objective
from unbiased_criteria.adapters.xgboost.reader import (
    _DEFAULT_TRAIN,
    _monotone_constraints,
    train_param,
)
from unbiased_criteria.adapters.xgboost.router import match_categories, reads_category_codes

from unbiased_criteria.dumps import Dump, as_dump
from unbiased_criteria.errors import InputError
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.ir_router import dense_features, make_ir_router, rows_near_thresholds
from unbiased_criteria.model import Model, Router, UnsupportedModelError
from unbiased_criteria.trees import MISSING_NAN, Forest, Tree, make_tree

__all__ = ["read_model", "make_router", "match_categories", "reads_category_codes",
           "make_objective", "write_model",
           "dump_tree",
           "dump_schema"]

#: objective parameters a dump does not store, by XGBoost objective, with XGBoost's defaults
#: (count:poisson's max_delta_step also clips its trees: XGBoost's one duplicated parameter)
_OBJECTIVE_PARAMS = {
    "binary:logistic": {"scale_pos_weight": 1.0}, "reg:logistic": {"scale_pos_weight": 1.0},
    "binary:logitraw": {"scale_pos_weight": 1.0}, "count:poisson": {"max_delta_step": 0.7},
    "reg:pseudohubererror": {"huber_slope": 1.0},
    "reg:tweedie": {"tweedie_variance_power": 1.5}, "reg:quantileerror": {"quantile_alpha": 0.5},
}
_KNOWN = {"objective", "base_score", "num_class", "num_parallel_tree", "booster", "eta",
          "learning_rate", "lambda", "reg_lambda", "alpha", "reg_alpha", "max_delta_step",
          "feature_names", "n_features", "monotone_constraints",
          *(key for keys in _OBJECTIVE_PARAMS.values() for key in keys)}
_ALIASES = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha"}
_FEATURE = re.compile(r"f(\d+)$")


def _value(value: Any) -> Any:
    """A ``--param`` string as JSON where it is JSON (``0.5``, ``[0.1, 0.2]``, a list of
    names), else as it is (``reg:squarederror``)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _params(dump: Dump) -> dict[str, Any]:
    params = {_ALIASES.get(k, k): _value(v) for k, v in dump.host_params.items()}
    unknown = sorted(set(dump.host_params) - _KNOWN)
    if unknown:
        raise InputError(f"host_params: unknown key(s) {unknown} for an XGBoost dump; "
                         f"expected some of {sorted(_KNOWN)}")
    for key in set(params) & set(_DEFAULT_TRAIN):
        try:
            train_param(key, params[key])
        except ValueError as err:
            raise InputError(f"host_params: {err}") from None
    booster = params.get("booster", "gbtree")
    if booster == "gblinear":
        raise UnsupportedModelError("gblinear models have no trees to score")
    if booster == "dart":
        # get_dump leaves out DART's weight_drop: the leaves are not the trees' outputs
        raise UnsupportedModelError(
            "DART models cannot be replayed from a dump: get_dump leaves out each tree's "
            "weight_drop, so the dumped leaves are not what the model adds, and the trees were "
            "grown with random earlier trees dropped (a DART Booster or its model JSON whose "
            "weight_drop are all 1 is read)")
    if booster != "gbtree":
        raise InputError(f"host_params: booster must be 'gbtree', 'dart' or 'gblinear', got "
                         f"{booster!r}")
    missing = [k for k in ("objective", "base_score") if k not in params]
    if missing:
        raise InputError(
            f"an XGBoost dump does not store its {' and '.join(missing)}: pass host_params="
            "{'objective': 'reg:squarederror', 'base_score': 0.5, ...} with the model's own "
            "(booster.save_config() shows both; base_score in output space, as the training "
            "parameter; XGBoost >= 2 estimates it from the labels; command line: --param "
            "objective=... --param base_score=...)")
    return params


def _nodes(tree: Mapping, index: int) -> list[Mapping]:
    """Every node of one nested tree, without recursion (trees can be deep)."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping) or "nodeid" not in node:
            raise InputError(f"XGBoost dump: tree {index} has a node without 'nodeid'")
        out.append(node)
        stack.extend(node.get("children", []))
    return out


def _read_tree(tree: Mapping, index: int, feature_index: Mapping[str, int],
               shrinkage: float) -> tuple[Tree, np.ndarray]:
    """One dumped tree in the IR, and its thresholds as printed (per node)."""
    nodes = _nodes(tree, index)
    ids = np.array([int(n["nodeid"]) for n in nodes], dtype=np.int64)
    if np.unique(ids).size != ids.size or ids.min() < 0:
        raise InputError(f"XGBoost dump: tree {index} repeats or has negative node ids")
    new_id = {int(v): i for i, v in enumerate(np.sort(ids))}  # compact ids (tombstones)
    if new_id.get(0) != 0 or int(tree["nodeid"]) != 0:
        raise InputError(f"XGBoost dump: tree {index} does not start at node 0")
    n = ids.size
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    threshold = np.full(n, np.nan)
    value = np.full(n, np.nan)
    default_left = np.zeros(n, bool)
    gain = np.full(n, np.nan)
    cover = np.full(n, np.nan)
    cat_sets: dict[int, np.ndarray] = {}
    printed = np.full(n, np.nan)
    for node in nodes:
        i = new_id[int(node["nodeid"])]
        cover[i] = float(np.float32(node.get("cover", np.nan)))
        if "leaf" in node:
            value[i] = float(np.float32(node["leaf"]))
            continue
        try:
            name, cond = str(node["split"]), node["split_condition"]
            yes, no, miss = new_id[int(node["yes"])], new_id[int(node["no"])], \
                new_id[int(node["missing"])]
        except KeyError as err:
            raise InputError(f"XGBoost dump: tree {index}, node {node['nodeid']} lacks "
                             f"{err} or names a child that is not in the tree") from None
        if name not in feature_index:
            raise InputError(f"XGBoost dump: tree {index} splits on {name!r}, which is not "
                             "among the feature names")
        feature[i] = feature_index[name]
        gain[i] = float(np.float32(node.get("gain", np.nan)))
        if isinstance(cond, list):  # categories in the list go to "yes", the IR's right
            cat_sets[i] = np.asarray(cond, dtype=np.int64)
            left[i], right[i] = no, yes
        else:
            printed[i] = float(cond)
            threshold[i] = float(np.float32(cond))
            left[i], right[i] = yes, no
        if miss not in (yes, no):
            raise InputError(f"XGBoost dump: tree {index}, node {node['nodeid']}: missing "
                             "is neither yes nor no")
        default_left[i] = miss == left[i]
    try:
        tree = make_tree(left, right, feature, threshold, value, default_left=default_left,
                         missing=np.full(n, MISSING_NAN, np.int8), cat_sets=cat_sets,
                         host_gain=gain, host_hessian=cover, shrinkage=shrinkage, rules=RULES)
        return tree, printed
    except ValueError as err:
        raise InputError(f"XGBoost dump: tree {index}: {err}") from None


def _feature_index(trees: list, params: Mapping) -> tuple[list[str], dict[str, int], bool]:
    """Feature names, name -> index, and whether the count was inferred from the splits."""
    names = params.get("feature_names")
    if names is not None:
        names = [str(s) for s in names]
        return names, {s: i for i, s in enumerate(names)}, False
    used = {str(node["split"]) for t, tree in enumerate(trees) for node in _nodes(tree, t)
            if "leaf" not in node and "split" in node}
    bad = sorted(s for s in used if not _FEATURE.match(s))
    if bad:
        raise InputError(f"the XGBoost dump names its features ({bad[:3]}...): pass "
                         "host_params={'feature_names': [...]} (the model's feature names, "
                         "in order; command line: --param 'feature_names=[...]')")
    count = params.get("n_features")
    inferred = count is None
    if inferred:
        count = max((int(_FEATURE.match(s).group(1)) for s in used), default=-1) + 1
    names = [f"f{i}" for i in range(int(count))]
    return names, {s: i for i, s in enumerate(names)}, inferred


def dump_schema(dump: Dump) -> tuple[list[str], list[int]]:
    """Feature names and the indices of the features with categorical splits."""
    params = {_ALIASES.get(k, k): _value(v) for k, v in dump.host_params.items()}
    names, index, _ = _feature_index(dump.content, params)
    cat = {index[str(node["split"])] for t, tree in enumerate(dump.content)
           for node in _nodes(tree, t) if isinstance(node.get("split_condition"), list)
           and str(node.get("split")) in index}
    return names, sorted(cat)


def read_model(model: Any) -> Model:
    """The IR of an XGBoost dump (a :class:`~unbiased_criteria.dumps.Dump` or anything
    :func:`~unbiased_criteria.dumps.as_dump` recognises), with ``host_params``.

    Without both ``eta`` and ``lambda``, ``Model.leaf_params_unknown`` is set: the core infers
    them from the leaves and the training rows.
    """
    dump = as_dump(model)
    if not isinstance(dump, Dump) or dump.host != "xgboost":
        raise TypeError("model must be an XGBoost get_dump(dump_format='json') list, JSON "
                        "string or file")
    params = _params(dump)
    obj_name = str(params["objective"])
    base = np.atleast_1d(np.asarray(params["base_score"], dtype=np.float64))
    n_class = int(params.get("num_class", base.size if base.size > 1 else 0))
    if obj_name.startswith("multi:") and n_class < 2:
        raise InputError(f"host_params: objective {obj_name!r} needs num_class (the dump does "
                         "not store it)")
    n_outputs = max(n_class, 1)
    notes = []
    objective_params = {}
    for key, default in _OBJECTIVE_PARAMS.get(obj_name, {}).items():
        if key not in params:
            notes.append(f"the dump does not store {key}: XGBoost's default {default:g} is "
                         f"assumed; pass host_params={{'{key}': ...}} (--param {key}=... "
                         "on the command line) if the model used another")
            params[key] = default
        objective_params[key] = json.dumps(params[key], ensure_ascii=False)
    if "scale_pos_weight" in params:  # squared error and gamma take it too (default 1, rare)
        objective_params["scale_pos_weight"] = json.dumps(params["scale_pos_weight"],
                                                          ensure_ascii=False)
    objective = _core_objective(obj_name, objective_params, n_outputs)
    try:
        base_score = parse_base_score(json.dumps(base.tolist() if base.size > 1 else
                                                 float(base[0]), ensure_ascii=False),
                                      obj_name, n_outputs)
    except ValueError as err:
        raise InputError(f"host_params: base_score: {err}") from None
    n_parallel = int(params.get("num_parallel_tree", 1))
    given = "eta" in params and "lambda" in params
    eta = float(np.float32(params.get("eta", 0.3)) / np.float32(n_parallel))
    names, index, inferred = _feature_index(dump.content, params)
    read = [_read_tree(t, i, index, eta) for i, t in enumerate(dump.content)]
    trees = tuple(t for t, _ in read)
    per_iteration = n_outputs * n_parallel
    t = np.arange(len(trees), dtype=np.int64)
    forest = Forest(trees=trees, tree_class=(t % per_iteration) // n_parallel,
                    tree_iteration=t // per_iteration, base_score=base_score,
                    n_features=len(names), feature_names=tuple(names),
                    score_dtype=np.float32)
    split_score = SplitScore(
        l1=float(np.float32(params.get("alpha", 0.0))),
        l2=float(np.float32(params.get("lambda", 1.0))),
        max_delta_step=float(np.float32(params.get("max_delta_step", 0.0))),
        weight_float32=True,
        raw_gradient_score=compat.scores_with_raw_gradient(compat.model_version()),
        monotone=_monotone_constraints(params, names),
    )
    assumed = tuple(notes)  # defaults for what the dump does not store
    if objective is None:
        notes.append(f"objective {obj_name!r} has no equivalent in the core: pass objective= "
                     "(a callable f(y, raw_score, weight) -> (grad, hess))")
    return Model(forest=forest, objective=objective, split_score=split_score, host="xgboost",
                 leaf_params_unknown=not given and bool(trees), warnings=tuple(notes),
                 assumed=assumed,
                 source={"n_features_inferred": inferred, "objective": obj_name,
                         "printed": [p for _, p in read]})


def make_objective(spec, read: Model):
    """As :func:`unbiased_criteria.adapters.xgboost.make_objective`."""
    return _make_objective(spec, read)


def make_router(model: Any, read: Model, X: Any, argument: str,
                memory_budget: int = 512 * 2**20) -> Router:
    """Route ``X`` by the IR's rules: float32 values as XGBoost compares them, NaN and absent
    sparse entries missing, pandas category columns by their codes. Warns when values lie
    within the printed precision of a threshold (the original model may route them
    differently); the count goes to the report (``rows_near_threshold``).

    Where the feature count was inferred from the dump's ``f<i>`` names, ``X`` may have more
    columns: the trailing ones, which no tree splits on, are left out.
    """
    forest = read.forest
    n = forest.n_features
    if read.source.get("n_features_inferred") and getattr(X, "ndim", 2) == 2 \
            and X.shape[1] > n:
        X = X.iloc[:, :n] if hasattr(X, "iloc") else X[:, :n]
    dense = dense_features(X, forest, argument, feature_dtype=np.float32, sparse_missing=True,
                           memory_budget=memory_budget)
    near = rows_near_thresholds(forest, dense, np.float32, read.source["printed"])
    if near:
        warnings.warn(
            f"{near:,} rows of {argument} have a value within the printed precision of a "
            "threshold of the dump: the model it was dumped from may route them differently "
            "(report.rows_near_threshold counts them)", UserWarning, stacklevel=4)
    return make_ir_router(forest, dense, memory_budget=memory_budget, near_threshold=near)


def dump_tree(tree: Tree, names: tuple[str, ...]) -> dict:
    """One IR tree as a ``get_dump(dump_format="json", with_stats=True)`` tree (XGBoost's
    9 significant digits; node ids as in the IR)."""
    if tree.rules != RULES:
        raise ValueError("the tree does not use XGBoost's decision rules")

    def f32(x) -> float:
        return float(f"{float(np.float32(x)):.9g}")

    depth = tree.depth
    nodes: list[dict] = []
    for i in range(tree.n_nodes):
        if tree.is_leaf[i]:
            nodes.append({"nodeid": i, "leaf": f32(tree.value[i]),
                          "cover": f32(np.nan_to_num(tree.host_hessian[i]))})
            continue
        cat = bool(tree.categorical[i])
        yes, no = (int(tree.right[i]), int(tree.left[i])) if cat else \
            (int(tree.left[i]), int(tree.right[i]))
        nodes.append({
            "nodeid": i, "depth": int(depth[i]), "split": names[tree.feature[i]],
            "split_condition": ([int(c) for c in tree.category_set(i)] if cat
                                else f32(tree.threshold[i])),
            "yes": yes, "no": no,
            "missing": int(tree.left[i] if tree.default_left[i] else tree.right[i]),
            "gain": f32(np.nan_to_num(tree.host_gain[i])),
            "cover": f32(np.nan_to_num(tree.host_hessian[i])), "children": [],
        })
    for i in tree.internal_nodes:
        nodes[i]["children"] = [nodes[tree.left[i]], nodes[tree.right[i]]]
    return nodes[0]


def write_model(model: Any, forest: Forest, split_score: Any = None,
                pruned_on: tuple[str, ...] = ()) -> Any:
    """An XGBoost dump of ``forest``'s trees, in the form ``model`` came in: a list of tree
    dicts for a list of dicts, of JSON strings for a list of strings (``get_dump``'s), a JSON
    string (a list of trees, as ``Booster.dump_model(fname,
    dump_format="json")`` writes) for a JSON string or a file. A dump holds no training
    parameters: ``split_score`` is ignored (pass them again as ``host_params``), and so is
    ``pruned_on`` (plain data keeps no attribute)."""
    dump = as_dump(model)
    names = forest.feature_names
    trees = [dump_tree(t, names) for t in forest.trees]
    if dump.form == "json":
        return json.dumps(trees, ensure_ascii=False)
    if dump.form == "strings":
        return [json.dumps(t, ensure_ascii=False) for t in trees]
    return trees
