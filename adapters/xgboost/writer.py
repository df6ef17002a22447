"""Write IR trees back into XGBoost's model JSON: :func:`model_json`, :func:`write_model`.

The writer puts IR trees into a copy of the model JSON they were read from, so reading a model
and writing it back gives the same arrays. XGBoost's predictor takes the right child of node
``i`` as ``left[i] + 1``, so trees whose siblings are not adjacent are renumbered; internal
nodes get ``base_weights = value / shrinkage``. A loaded Booster forgets its training
parameters: the written one gets its template's configuration back.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xgboost
from unbiased_criteria.adapters._record import attach_written, grown_holdout
from unbiased_criteria.adapters.xgboost.layout import (
    _PARAMS_ATTR,
    _PRUNED_ON_ATTR,
    _SHRINKAGE_ATTR,
    _WRITTEN_ATTR,
    RULES,
    _booster,
    _gbtree,
    _outputs,
)
from unbiased_criteria.adapters.xgboost.objectives import (
    _format_base_score,
    _margin_to_base_score,
    parse_base_score,
)

from unbiased_criteria.gains import SplitScore
from unbiased_criteria.trees import MISSING_NAN, Forest, Tree, collapse_nodes

_NO_PARENT = 2147483647  # parents[root]
# split_conditions XGBoost writes at a categorical node (the smallest float32 denormal)
_CAT_CONDITION = float(np.float32(1e-45))


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


def leaf_params(forest: Forest, split_score: SplitScore, n_parallel: int = 1) -> dict:
    """The training parameters ``forest``'s leaves were fit with, as XGBoost names them:
    ``lambda``, ``alpha``, ``max_delta_step``, ``monotone_constraints``, and ``eta`` when
    every tree has the same (times ``n_parallel``: each parallel tree was shrunk by
    ``eta / num_parallel_tree``); ``n_trees``, the trees they hold for: training continued
    from the model (``xgb_model=``) adds trees grown with the continuation's parameters,
    which the reader takes from the configuration."""
    out: dict = {"lambda": split_score.l2, "alpha": split_score.l1,
                 "max_delta_step": split_score.max_delta_step,
                 "monotone_constraints": list(split_score.monotone),
                 "n_trees": forest.n_trees}
    shrinkage = np.array([t.shrinkage for t in forest.trees])
    if shrinkage.size and np.ptp(shrinkage) == 0:
        out["eta"] = float(np.float32(shrinkage[0]) * np.float32(n_parallel))
    return out


def leaf_attributes(forest: Forest, split_score: SplitScore | None = None,
                    n_parallel: int = 1) -> dict[str, str | None]:
    """The model attributes that tell the reader the learning rates and penalties of
    ``forest``'s trees, which their written leaves cannot.

    Parameters
    ----------
    forest : Forest
        Exactly the trees the model holds.
    split_score : SplitScore, optional
        The penalties the leaves were fit with; None: no parameters attribute.
    n_parallel : int
        The model's ``num_parallel_tree`` (see :func:`leaf_params`).

    Returns
    -------
    dict
        ``{attribute: JSON text}``: each tree's eta where they differ (a
        ``LearningRateScheduler``'s), else None (the attribute must be absent); with
        ``split_score``, :func:`leaf_params`.
    """
    shrinkage = np.array([t.shrinkage for t in forest.trees])
    out: dict[str, str | None] = {_SHRINKAGE_ATTR: None}
    if shrinkage.size and np.ptp(shrinkage) > 0:
        out[_SHRINKAGE_ATTR] = json.dumps(shrinkage.tolist(), ensure_ascii=False)
    if split_score is not None:
        out[_PARAMS_ATTR] = json.dumps(leaf_params(forest, split_score, n_parallel),
                                       ensure_ascii=False)
    return out


def model_json(js: Mapping, forest: Forest, split_score: SplitScore | None = None,
               pruned_on: tuple[str, ...] = ()) -> dict:
    """A copy of model JSON ``js`` holding ``forest``'s trees and base score; with
    ``split_score``, the leaves' training parameters as a model attribute (:func:`leaf_params`),
    which the reader takes over the configuration's; with ``pruned_on``, the sketches of the
    rows that pruned the trees as another."""
    js = copy.deepcopy(dict(js))
    learner = js["learner"]
    model, weights = _gbtree(learner)
    lmp = learner["learner_model_param"]
    n_outputs, _ = _outputs(learner)
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
    attributes = learner.setdefault("attributes", {})
    attributes[_WRITTEN_ATTR] = "1"
    # nor to read eta from them: each tree's, where they differ (a LearningRateScheduler's)
    n_parallel = int(model.get("gbtree_model_param", {}).get("num_parallel_tree", 1))
    for key, value in leaf_attributes(forest, split_score, n_parallel).items():
        if value is None:
            attributes.pop(key, None)
        else:
            attributes[key] = value
    if pruned_on:
        attributes[_PRUNED_ON_ATTR] = json.dumps(list(pruned_on), ensure_ascii=False)
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
    """A Booster loaded from model JSON ``js`` with ``template``'s training configuration,
    and the leaves' parameters where the writer stored them (:func:`model_json`)."""
    # XGBoost does not decode \u escapes: feature names must stay UTF-8
    new = xgboost.Booster(
        model_file=bytearray(json.dumps(js, ensure_ascii=False).encode("utf-8"))
    )
    # a loaded Booster has default training parameters: restore the template's (but not its
    # model parameters: base_score may have changed)
    config = json.loads(template.save_config())
    config.get("learner", {}).pop("learner_model_param", None)
    new.load_config(json.dumps(config, ensure_ascii=False))
    stored = js["learner"].get("attributes", {}).get(_PARAMS_ATTR)
    if stored is not None:  # a template loaded from a file has defaults: the real ones
        params = {k: v for k, v in json.loads(stored).items()
                  if k not in ("monotone_constraints", "n_trees")}
        new.set_param({k: str(v) for k, v in params.items()})
        _keep_objective(new, js["learner"].get("objective"))
    return new


def _keep_objective(booster: xgboost.Booster, objective: Mapping | None) -> None:
    """Give ``booster`` back the objective parameters of its model JSON (``objective``).

    XGBoost shares one name between the trees and an objective: ``max_delta_step`` clips the
    leaf weights and sets count:poisson's hessian ``exp(F + max_delta_step)``, and
    ``set_param`` sets both. The trees' value (the native grower's 0 under LightGBM's Poisson
    hessian ``exp(F + 0.7)``) overwrote the objective's, so the model's hessians were not the
    ones its trees were grown with. The configuration can hold both: the objective's is
    loaded back (a later ``set_param`` of it sets both again, as in XGBoost).
    """
    if objective is None:
        return
    config = json.loads(booster.save_config())
    learner = config.get("learner", {})
    if learner.get("objective", {}).get("name") != objective.get("name"):
        return  # not the objective the model JSON holds (none to keep)
    if learner["objective"] != objective:
        learner["objective"] = dict(objective)
        booster.load_config(json.dumps(config, ensure_ascii=False))


def write_model(model: xgboost.Booster | xgboost.XGBModel, forest: Forest,
                split_score: SplitScore | None = None, pruned_on: tuple[str, ...] = ()):
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
    split_score : SplitScore, optional
        The penalties the leaves were fit with (the read model's, inferred where the model
        did not say): stored in the model with the trees' eta (:func:`leaf_params`) and set
        on the new Booster, so that the model, saved and loaded again, is read with them.
    pruned_on : tuple of str
        Sketches of the held-out rows that pruned the trees (:attr:`Model.pruned_on`): a model
        attribute, saved and loaded with it.

    Returns
    -------
    xgboost.Booster, or a fitted estimator of ``model``'s class
        The copy of a training-hook estimator (``UnbiasedXGB*``) has no training record: it
        described the trees before they were written.
    """
    bst = _booster(model)
    new = _load_with_config(
        model_json(json.loads(bst.save_raw("json")), forest, split_score, pruned_on), bst)
    # a written Booster has no training record (a new Booster: the template's is not
    # copied); it is marked as written, so that a training-hook estimator says it was pruned,
    # with the hook's held-out share (its kept splits still hold the sums of the other rows)
    attach_written(new, pruned_on, holdout_fraction=grown_holdout(bst, model))
    if isinstance(model, xgboost.Booster):
        return new
    # a copy of the estimator (fitted attributes included) around the new Booster
    return copy.deepcopy(model, memo={id(bst): new})


#: canonical objective of a natively grown forest -> XGBoost's objective
NATIVE_OBJECTIVES = {
    "squared_error": "reg:squarederror",
    "binary_logistic": "binary:logistic",
    "multiclass_softmax": "multi:softprob",
    "poisson": "count:poisson",
}


def _to_xgboost_rules(tree: Tree) -> Tree:
    """A tree with LightGBM's rules (``v <= t``, float32 thresholds; category set left, NaN
    and other values right) under XGBoost's: ``v < t'`` with ``t'`` the next float32 above
    ``t`` (the same rule on the float32 values XGBoost reads); a categorical node's children
    swap (XGBoost sends its set right) and NaN defaults to the new left child (the others').
    A threshold at the largest float32 becomes ``v < -largest`` with its children swapped."""
    if tree.rules.operator != "<=" or tree.rules.categories_go != "left":
        raise ValueError(f"expected LightGBM's decision rules, got {tree.rules}")
    inner = tree.internal_nodes
    cat = tree.categorical & ~tree.is_leaf
    numeric = inner[~cat[inner]]
    t32 = tree.threshold.astype(np.float32)
    if np.any(t32[numeric] != tree.threshold[numeric]):
        raise ValueError("thresholds must be float32 values to convert '<=' into '<' exactly")
    # "v <= largest float32" (the grower's every value left, NaN right) has no "v < t'" (t'
    # would be inf, which model JSON cannot hold): it is written "v < -largest" with the
    # children swapped, NaN going where it went
    top = np.finfo(np.float32).max
    every = ~tree.is_leaf & ~cat & (t32 == top)
    up = np.nextafter(np.where(every, 0, t32), np.float32(np.inf)).astype(np.float64)
    threshold = np.where(tree.is_leaf | cat, np.nan, np.where(every, -float(top), up))
    swap = cat | every
    left = np.where(swap, tree.right, tree.left)
    right = np.where(swap, tree.left, tree.right)
    default_left = np.where(cat, True, np.where(every, ~tree.default_left, tree.default_left))
    arrays = {"threshold": threshold, "left": left.astype(np.int32),
              "right": right.astype(np.int32), "default_left": default_left}
    for a in arrays.values():
        a.setflags(write=False)
    return dataclasses.replace(tree, rules=RULES, **arrays)


def _template_data(names: list[str], label: np.ndarray,
                   categories: Sequence[Sequence | None] | None) -> tuple[xgboost.DMatrix, int]:
    """The rows a template Booster is trained on, and its rounds: a DataFrame with the
    pandas ``categories`` and one round where this XGBoost stores them (it stores a
    DataFrame's categories in the model only once it grows a tree), else zeros and none."""
    keeps = hasattr(xgboost.Booster, "get_categories")
    unstorable = [name for name, cats in zip(names, categories or [None] * len(names),
                                             strict=True)
                  if keeps and cats is not None and len(cats)
                  and pd.Index(cats).inferred_type not in ("string", "integer")]
    if unstorable:  # those features keep their codes; the others' categories are stored
        warnings.warn(f"XGBoost keeps only string or integer categories, not those of "
                      f"{unstorable}: the model reads their codes (predict on the training "
                      f"run's codes, or categories listed in the training run's order)",
                      UserWarning, stacklevel=4)
        categories = [None if name in unstorable else cats
                      for name, cats in zip(names, categories, strict=True)]
    if not keeps or categories is None or not any(c is not None for c in categories):
        data = np.zeros((label.size, len(names)))
        return xgboost.DMatrix(data, label=label, feature_names=names), 0
    columns = {}
    for name, cats in zip(names, categories, strict=True):
        if cats is None:
            columns[name] = np.zeros(label.size)
        else:  # code -1 (missing) where there is no category to name
            codes = np.full(label.size, 0 if len(cats) else -1)
            columns[name] = pd.Categorical.from_codes(codes, categories=list(cats))
    frame = pd.DataFrame(columns)
    return xgboost.DMatrix(frame, label=label, enable_categorical=True), 1


def booster_from_forest(forest: Forest, objective: str, categorical=None,
                        split_score: SplitScore | None = None,
                        categories: Sequence[Sequence | None] | None = None) -> xgboost.Booster:
    """An XGBoost Booster holding ``forest``, made without an XGBoost model to copy.

    For forests grown outside XGBoost (:mod:`unbiased_criteria.gbm`). Trees with the
    ``v <= t`` rule (the native grower's, float32 thresholds) are converted to XGBoost's
    ``v < t'``; XGBoost reads features as float32, so the rows go where they went.
    ``forest.base_score`` (a margin) becomes the model's ``base_score``.

    Parameters
    ----------
    forest : Forest
        Numeric trees, iteration-major, ``n_outputs`` per iteration.
    objective : str
        Canonical objective name: one of ``NATIVE_OBJECTIVES``.
    categorical : bool array (n_features,), optional
        Categorical features (XGBoost feature type ``"c"``; predict with
        ``DMatrix(..., feature_types=..., enable_categorical=True)`` or pandas categoricals).
    split_score : SplitScore, optional
        The penalties the leaves were fit with: kept with the trees' eta in the model
        (:func:`model_json`), so that reading it back needs no inference.
    categories : list, optional
        Per feature, the pandas categories its codes stand for (None for the others). XGBoost
        3.1+ keeps them in the model and codes a DataFrame's categorical columns with them at
        predict time, whatever order its own categories are listed in; before 3.1 a DataFrame
        is read by its own codes.
    """
    names = [str(name) for name in forest.feature_names]
    refused = [name for name in names if any(c in name for c in "[]<")]
    if refused:
        raise ValueError(f"feature names: XGBoost refuses names containing '[', ']' or '<', "
                         f"got {refused}; rename those features (columns) and fit again")
    if objective not in NATIVE_OBJECTIVES:
        raise ValueError(
            f"objective must be one of {sorted(NATIVE_OBJECTIVES)}, got {objective!r}")
    K = forest.n_outputs
    params = {"objective": NATIVE_OBJECTIVES[objective]}
    label = np.zeros(max(K, 2))
    if K > 1:
        params["num_class"] = K
        label = np.arange(K, dtype=np.float64)
    elif objective == "binary_logistic":
        label = np.array([0.0, 1.0])
    # a template: XGBoost's own learner configuration for this objective (its trees are
    # replaced below)
    template = xgboost.train(params, *_template_data(names, label, categories))
    trees = [_to_xgboost_rules(t) if t.rules != RULES else t for t in forest.trees]
    js = model_json(json.loads(template.save_raw("json")), forest.with_trees(trees),
                    split_score)
    if categorical is not None and np.any(categorical):
        js["learner"]["feature_types"] = ["c" if c else "float" for c in categorical]
    return _load_with_config(js, template)
