"""LightGBM ``Booster.dump_model()`` JSON without a Booster: read, route, write back.

The adapter protocol of :mod:`unbiased_criteria.model` for a
:class:`~unbiased_criteria.dumps.Dump`: the reader is the Booster's own
(:func:`~unbiased_criteria.adapters.lightgbm.reader.model_from_dump`), with the parameters the
dump does not store taken from ``host_params`` (LightGBM's defaults otherwise, with a warning
where they matter); rows are routed by the IR's rules; the writer gives a dump again.

A dump stores the trees (thresholds and leaf values to 17 digits, the learning rate as each
tree's ``shrinkage``), the objective and the parameters its name line prints (``sigmoid``,
``num_class``), and the categories of pandas columns. It lacks the ``parameters:`` block:
``lambda_l2`` (inferred from the leaves and the training rows when not passed), ``lambda_l1``,
``max_delta_step``, ``cat_l2``, ``max_cat_to_onehot`` and objective parameters such as
``tweedie_variance_power``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pandas as pd
from unbiased_criteria.adapters.lightgbm.objectives import make_objective as _make_objective
from unbiased_criteria.adapters.lightgbm.reader import DUMP_INF, model_from_dump
from unbiased_criteria.adapters.lightgbm.source import RULES

from unbiased_criteria.dumps import Dump, as_dump
from unbiased_criteria.errors import InputError
from unbiased_criteria.ir_router import dense_features, make_ir_router
from unbiased_criteria.model import Model, Router
from unbiased_criteria.trees import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Forest, Tree

__all__ = ["read_model", "make_router", "make_objective", "write_model", "dump_tree"]

_MISSING_NAME = {MISSING_NONE: "None", MISSING_ZERO: "Zero", MISSING_NAN: "NaN"}
#: objective parameters a dump does not print, by LightGBM objective, with their defaults
_OBJECTIVE_PARAMS = {
    "binary": {"scale_pos_weight": "1"}, "poisson": {"poisson_max_delta_step": "0.7"},
    "tweedie": {"tweedie_variance_power": "1.5"}, "huber": {"alpha": "0.9"},
    "fair": {"fair_c": "1"}, "quantile": {"alpha": "0.9"},
}


#: host_params the library reads as numbers, and those of them LightGBM holds >= 0
_NUMBERS = frozenset({
    "lambda_l1", "lambda_l2", "max_delta_step", "cat_l2", "cat_smooth", "path_smooth",
    "max_cat_to_onehot", "sigmoid", "scale_pos_weight", "alpha", "fair_c",
    "poisson_max_delta_step", "tweedie_variance_power",
})
_NON_NEGATIVE = frozenset({"lambda_l1", "lambda_l2", "cat_l2", "cat_smooth", "path_smooth"})


def _params(dump: Dump) -> tuple[dict[str, str], list[str]]:
    """The ``parameters:`` block a dump lacks: its objective line's ``key:value`` tokens and
    ``host_params``; and a warning for each default assumed where it matters."""
    content = dump.content
    line = str(content.get("objective", "")).split()
    params = dict(tok.split(":", 1) for tok in line[1:] if ":" in tok)
    for key, value in dump.host_params.items():
        if isinstance(value, list | tuple | np.ndarray):  # as LightGBM prints a list
            value = ",".join(str(v) for v in np.asarray(value).ravel().tolist())
        params[str(key)] = "1" if value is True else "0" if value is False else str(value)
    if "learning_rate" in params:
        raise InputError("host_params: a LightGBM dump stores its learning rate as each "
                         "tree's shrinkage; do not pass learning_rate")
    for key in set(dump.host_params) & _NUMBERS:
        try:
            number = float(params[key])
        except ValueError:
            number = float("nan")
        if not (np.isfinite(number) and (number >= 0 or key not in _NON_NEGATIVE)):
            raise InputError(f"host_params: {key} must be a finite number"
                             f"{' >= 0' if key in _NON_NEGATIVE else ''}, got "
                             f"{dump.host_params[key]!r}")
    notes = []
    for key, default in _OBJECTIVE_PARAMS.get(line[0] if line else "", {}).items():
        if key not in params:
            notes.append(f"the dump does not store {key}: LightGBM's default {default} is "
                         f"assumed; pass host_params={{'{key}': ...}} (--param {key}=... "
                         "on the command line) if the model used another")
    has_categories = any(info.get("values") for info in content.get("feature_infos",
                                                                   {}).values())
    if has_categories and "cat_l2" not in params:
        notes.append("the dump does not store cat_l2 and max_cat_to_onehot: LightGBM's "
                     "defaults (10, 4) are assumed for categorical splits (their biased "
                     "gain, pruned leaves); pass host_params={'cat_l2': ..., "
                     "'max_cat_to_onehot': ...} (--param cat_l2=... on the command line)")
    return params, notes


def read_model(model: Any) -> Model:
    """The IR of a LightGBM dump (a :class:`~unbiased_criteria.dumps.Dump` or anything
    :func:`~unbiased_criteria.dumps.as_dump` recognises).

    Without ``lambda_l2`` in ``host_params``, ``Model.leaf_params_unknown`` is set: the core
    infers the L2 penalty (and the learning rate) from the leaves and the training rows.
    """
    dump = as_dump(model)
    if not isinstance(dump, Dump) or dump.host != "lightgbm":
        raise TypeError("model must be a LightGBM dump_model() dict, JSON string or file")
    params, notes = _params(dump)
    try:
        read = model_from_dump(dump.content, params, l2_known="lambda_l2" in params)
    except (KeyError, TypeError, IndexError) as err:
        raise InputError(f"not a valid LightGBM dump_model() JSON: missing or bad field "
                         f"{err}") from None
    unknown = "lambda_l2" not in params and read.forest.n_trees > 0
    return Model(forest=read.forest, objective=read.objective, split_score=read.split_score,
                 host="lightgbm", bias_from_labels=read.bias_from_labels,
                 leaf_params_unknown=unknown, warnings=read.warnings + tuple(notes),
                 notes=read.notes, source=read.source, gain_only=read.gain_only,
                 assumed=tuple(notes))


def make_objective(spec, read: Model):
    """As :func:`unbiased_criteria.adapters.lightgbm.make_objective`."""
    return _make_objective(spec, read)


def _categories(dump: Dump, X: Any, argument: str) -> dict[int, list]:
    """Feature index -> the pandas categories LightGBM stored (``pandas_categorical``) for
    the category columns of the frame ``X``.

    LightGBM pairs its stored lists with a frame's category columns in their order (its
    ``predict`` does), whatever the dump's categorical features are: a constant category
    column leaves no categorical feature in the dump, an integer column declared
    ``categorical_feature`` one without a list.
    """
    lists = dump.content.get("pandas_categorical") or []
    if not lists or not isinstance(X, pd.DataFrame):
        return {}  # no stored lists: LightGBM reads a frame's own codes too
    columns = [j for j, dtype in enumerate(X.dtypes) if isinstance(dtype, pd.CategoricalDtype)]
    if len(columns) != len(lists):
        raise InputError(
            f"{argument} has {len(columns)} pandas category column(s) where the model was "
            f"trained with {len(lists)} (its pandas_categorical): give the held-out rows with "
            "the training frame's category columns (LightGBM's predict refuses them too)")
    return {j: list(c) for j, c in zip(columns, lists)}


def make_router(model: Any, read: Model, X: Any, argument: str,
                memory_budget: int = 512 * 2**20) -> Router:
    """Route ``X`` by the IR's rules (LightGBM compares float64 values; absent sparse entries
    are 0; pandas category columns map through the dump's ``pandas_categorical``)."""
    dump = as_dump(model)
    dense = dense_features(X, read.forest, argument, feature_dtype=np.float64,
                           sparse_missing=False, categories=_categories(dump, X, argument),
                           stored_name=lambda name: name.replace(" ", "_"),
                           memory_budget=memory_budget)
    return make_ir_router(read.forest, dense, memory_budget=memory_budget)


def dump_tree(tree: Tree) -> dict:
    """One IR tree as ``tree_structure`` of ``dump_model()`` (internal nodes numbered in id
    order as ``split_index``, leaves as ``leaf_index``)."""
    if tree.rules != RULES:
        raise ValueError("the tree does not use LightGBM's decision rules")
    inner = tree.internal_nodes
    leaves = np.flatnonzero(tree.is_leaf)
    rank = np.zeros(tree.n_nodes, dtype=np.int64)
    rank[inner] = np.arange(inner.size)
    rank[leaves] = np.arange(leaves.size)
    nodes: list[dict] = []
    for i in range(tree.n_nodes):
        if tree.is_leaf[i] and leaves.size == 1:  # LightGBM prints no index nor weight
            node = {"leaf_value": float(tree.value[i]),
                    "leaf_count": int(max(tree.host_count[i], 0))}
        elif tree.is_leaf[i]:
            node = {"leaf_index": int(rank[i]), "leaf_value": float(tree.value[i]),
                    "leaf_weight": float(np.nan_to_num(tree.host_hessian[i])),
                    "leaf_count": int(max(tree.host_count[i], 0))}
        else:
            cat = bool(tree.categorical[i])
            node = {
                "split_index": int(rank[i]), "split_feature": int(tree.feature[i]),
                "split_gain": float(np.nan_to_num(tree.host_gain[i])),
                "threshold": ("||".join(str(int(c)) for c in tree.category_set(i)) if cat
                              else float(np.clip(tree.threshold[i], -DUMP_INF, DUMP_INF))),
                "decision_type": "==" if cat else "<=",
                "default_left": bool(tree.default_left[i]),
                "missing_type": _MISSING_NAME[int(tree.missing[i])],
                "internal_value": float(np.nan_to_num(tree.value[i])),
                "internal_weight": float(np.nan_to_num(tree.host_hessian[i])),
                "internal_count": int(max(tree.host_count[i], 0)),
            }
        nodes.append(node)
    for i in inner:
        nodes[i]["left_child"] = nodes[tree.left[i]]
        nodes[i]["right_child"] = nodes[tree.right[i]]
    return nodes[0]


def write_model(model: Any, forest: Forest, split_score: Any = None,
                pruned_on: tuple[str, ...] = ()) -> Any:
    """A LightGBM dump of ``forest``'s trees, in the form ``model`` came in: a dict for a
    dict, a JSON string for a JSON string or a file. Everything else is ``model``'s
    (``split_score`` is ignored: a dump keeps its own parameters; so is ``pruned_on``: plain
    data keeps no attribute)."""
    dump = as_dump(model)
    content = copy.deepcopy(dump.content)
    old = content["tree_info"]
    if len(old) != forest.n_trees:
        raise ValueError(f"forest has {forest.n_trees} trees, the dump {len(old)}")
    content["tree_info"] = [
        {**{k: v for k, v in info.items() if k != "tree_structure"},
         "num_leaves": tree.n_leaves,
         "num_cat": int(tree.categorical[tree.internal_nodes].sum()),
         "tree_structure": dump_tree(tree)}
        for info, tree in zip(old, forest.trees)
    ]
    gains: dict[str, float] = {}
    for tree in forest.trees:
        inner = tree.internal_nodes
        for f, g in zip(tree.feature[inner], np.nan_to_num(tree.host_gain[inner])):
            if g > 0:
                name = content["feature_names"][f]
                gains[name] = gains.get(name, 0) + 1
    if "feature_importances" in content:
        content["feature_importances"] = gains
    if dump.form == "json":
        return json.dumps(content, ensure_ascii=False)
    return content


