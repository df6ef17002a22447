"""Read an XGBoost model into the IR: :func:`read_model`, :func:`parse_model`.

The reader parses the model JSON (``Booster.save_raw("json")``) and takes the training
hyper-parameters (eta, lambda, alpha, max_delta_step, subsample...) from
``Booster.save_config()``, since the model JSON does not hold them. It takes no data.

IR node ids are XGBoost's node ids (see :mod:`.layout` for trees with tombstones). Numeric
thresholds and leaf values are the exact float32 values of the JSON, stored as float64;
internal nodes keep the value XGBoost would give them as a leaf (``eta * base_weight``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xgboost
from unbiased_criteria.adapters._record import with_held_out_warning
from unbiased_criteria.adapters.xgboost import compat
from unbiased_criteria.adapters.xgboost.layout import (
    _DELETED,
    _PARAMS_ATTR,
    _PRUNED_ON_ATTR,
    _SHRINKAGE_ATTR,
    _WRITTEN_ATTR,
    RULES,
    _booster,
    _find,
    _gbtree,
    _node_map,
    _outputs,
    _tree_arrays,
)
from unbiased_criteria.adapters.xgboost.objectives import (
    _core_objective,
    model_objective_params,
    multi_target,
    parse_base_score,
)

from unbiased_criteria.gains import SplitScore, soft_threshold
from unbiased_criteria.model import Model
from unbiased_criteria.trees import MISSING_NAN, Forest, Tree, make_tree

# training parameters read from save_config(): XGBoost's defaults, aliases
_DEFAULT_TRAIN = {
    "eta": 0.3, "lambda": 1.0, "alpha": 0.0, "max_delta_step": 0.0, "subsample": 1.0,
    "colsample_bytree": 1.0, "colsample_bylevel": 1.0, "colsample_bynode": 1.0,
}
_ALIASES = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha"}


def _read_tree(tree: Mapping, index: int, shrinkage: float) -> Tree:
    """One XGBoost tree JSON as an IR tree (see the module docstring for the ids)."""
    a = _tree_arrays(tree, index)
    leaf = a["left"] < 0
    new_id = _node_map(tree, index, a["reached"])
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
        params[key] = train_param(key, params[key])
    return params


def train_param(key: str, value: Any) -> float:
    """XGBoost training parameter ``key`` (one of ``eta``, ``lambda``, ``alpha``,
    ``max_delta_step``, the sampling fractions) as XGBoost's float32 holds it (the config
    prints "0.699999988"); ``ValueError`` naming it unless it is a finite number in range
    (XGBoost's ``set_param`` lets NaN and inf through)."""
    try:
        number = float(np.float32(value))
    except (TypeError, ValueError):
        number = math.nan
    positive = key.startswith(("subsample", "colsample"))  # eta 0 is a model of 0 leaves
    if not (math.isfinite(number) and (number > 0 if positive else number >= 0)):
        raise ValueError(f"{key} must be a finite number {'>' if positive else '>='} 0, "
                         f"got {value!r}")
    return number


def _normal32(values: np.ndarray) -> np.ndarray:
    """Which of the float32 ``values`` keep float32's relative precision: 0 and the normal
    numbers, not the subnormals below ``finfo(float32).tiny`` (about 1.2e-38)."""
    size = np.abs(values)
    return (size == 0) | (size >= np.finfo(np.float32).tiny)


def _params_mismatch(trees: list, eta: float, lam: float, max_delta_step: float = 0.0,
                     alpha: float = 0.0) -> float:
    """Largest relative misfit of ``eta`` and ``lambda`` to the trees' own weights.

    A parent of two leaves satisfies ``base_weight = (v_L (H_L + lam) + v_R (H_R + lam)) /
    (eta (H + lam))`` (leaf value ``v = eta * -G/(H + lam)``, without alpha or clipping). The
    misfit is relative to the size of the two terms, which bounds float32 rounding (below
    2e-7 in XGBoost's models) even where they cancel; the largest, not a typical one, since
    clipping may touch a few nodes only. Parents whose weight, or a leaf's (as ``eta`` has
    it), reaches ``max_delta_step`` may be clipped and are left out. With ``alpha`` the
    leaves give ``-G = v (H + lam) / eta + sign(v) alpha`` (``v != 0``: their ``|G| >
    alpha``), and the parent ``w = T(-G_L - G_R) / (H + lam)``, soft-thresholded; parents
    of a zero leaf, whose ``G`` the leaf does not tell, are left out.
    """
    errors = []
    if eta <= 0:
        # eta = 0 makes every leaf 0 (the formula below would divide by 0 and test nothing):
        # it fits only trees whose leaves all hold 0, and is contradicted by any other leaf
        for index, tree in enumerate(trees):
            a = _tree_arrays(tree, index)
            if np.any(a["cond"][(a["left"] < 0) & a["reached"]] != 0):
                return np.inf
        return 0.0
    edge = max_delta_step * (1 - 1e-5) if max_delta_step > 0 else np.inf
    for index, tree in enumerate(trees[:20]):
        a = _tree_arrays(tree, index)
        left, right = a["left"], a["right"]
        inner = np.flatnonzero(left >= 0)
        both = inner[(left[left[inner]] < 0) & (left[right[inner]] < 0)]
        L, R = left[both], right[both]
        term_l = a["cond"][L] * (a["hess"][L] + lam)
        term_r = a["cond"][R] * (a["hess"][R] + lam)
        den = eta * (a["hess"][both] + lam)
        ok = (den > 0) & (np.abs(a["weight"][both]) < edge) & (
            np.maximum(np.abs(a["cond"][L]), np.abs(a["cond"][R])) < eta * edge)
        den = np.where(ok, den, 1.0)
        scale = (np.abs(term_l) + np.abs(term_r)) / den
        # the misfit is relative, so a parent counts at any scale of the leaves (labels of
        # 1e-6: leaves of 1e-7); an absolute cut-off (1e-6) left out every parent of such a
        # model, which then "fit" any eta and lambda. Left out: leaves of 0 (nothing to
        # compare) and float32 subnormals, which have lost their relative precision
        ok &= (scale > 0) & _normal32(a["cond"][L]) & _normal32(a["cond"][R])
        if alpha > 0:
            vl, vr = a["cond"][L], a["cond"][R]
            ok &= (vl != 0) & (vr != 0)
            minus_g = (term_l + term_r) / eta + alpha * (np.sign(vl) + np.sign(vr))
            hl = a["hess"][both] + lam
            w = soft_threshold(minus_g, alpha) / np.where(ok, hl, 1.0)
            scale = scale + 2 * alpha / np.where(ok, hl, 1.0)
            errors.append(np.abs(w - a["weight"][both])[ok] / scale[ok])
            continue
        errors.append(np.abs((term_l + term_r) / den - a["weight"][both])[ok] / scale[ok])
    errors = np.concatenate(errors) if errors else np.zeros(0)
    return float(errors.max()) if errors.size else 0.0


def _tree_shrinkages(trees: Sequence[Mapping], lam: float) -> np.ndarray | None:
    """Each tree's own learning rate, read from its weights, or None where they do not tell.

    Leaves hold ``eta * w``, internal nodes the unshrunk ``w``, so a parent of two leaves
    gives ``eta = (v_L (H_L + lam) + v_R (H_R + lam)) / (w (H + lam))``. Each tree must give
    it from at least two such parents that agree to 1e-5 (a wrong lambda, L1 or clipping
    makes them disagree; parents whose two terms cancel are too inexact to count), or from
    one where that equals, to 1e-5, exactly one of the rates the other trees gave (a model
    continued with another eta has small trees with a single such parent).
    ``xgb.train`` with a ``LearningRateScheduler`` shrinks each tree by its own round's eta,
    while the configuration keeps one.
    """
    out = np.empty(len(trees))
    single: dict[int, float] = {}  # trees with one usable parent: their one reading
    for i, tree in enumerate(trees):
        a = _tree_arrays(tree, i)
        left, right = a["left"], a["right"]
        inner = np.flatnonzero(left >= 0)
        both = inner[(left[left[inner]] < 0) & (left[right[inner]] < 0)]
        term_l = a["cond"][left[both]] * (a["hess"][left[both]] + lam)
        term_r = a["cond"][right[both]] * (a["hess"][right[both]] + lam)
        terms = term_l + term_r
        den = a["weight"][both] * (a["hess"][both] + lam)
        # any scale of the weights (no absolute cut-off): a weight of 0 or a float32 subnormal
        # tells nothing; cancelling terms are inexact
        ok = ((den != 0) & _normal32(a["weight"][both]) & _normal32(a["cond"][left[both]])
              & _normal32(a["cond"][right[both]])
              & (np.abs(terms) * 10 > np.abs(term_l) + np.abs(term_r)))
        if not ok.any():
            return None
        eta = terms[ok] / den[ok]
        middle = np.median(eta)
        if not middle > 0:
            return None
        if eta.size == 1:
            single[i] = float(middle)
            continue
        if np.abs(eta - middle).max() > 1e-5 * middle:
            return None
        out[i] = float(np.float32(middle))
    if single:
        told = np.unique(np.delete(out, list(single)))
        if told.size == 0:
            return None
        for i, value in single.items():
            match = told[np.abs(told - value) <= 1e-5 * told]
            # one rate (its trees' readings differ in their last bits at most)
            if match.size == 0 or np.ptp(match) > 1e-5 * match.max():
                return None
            out[i] = float(np.median(match))
    if out.size and np.ptp(out) <= 1e-5 * out.max():  # one eta, read to its last bits
        out[:] = float(np.float32(np.median(out)))
    return out


def _written_shrinkages(learner: Mapping, n_trees: int) -> np.ndarray | None:
    """Each tree's eta as the writer stored it (:data:`_SHRINKAGE_ATTR`, only where they
    differ), or None (absent, or not one per tree: a slice of the model)."""
    text = learner.get("attributes", {}).get(_SHRINKAGE_ATTR)
    if text is None:
        return None
    values = np.asarray(json.loads(text), dtype=np.float64)
    return values if values.shape == (n_trees,) else None


def _pruned_on(learner: Mapping) -> tuple[str, ...]:
    """The sketches of the rows that pruned the model, as the writer stored them, or ()."""
    text = learner.get("attributes", {}).get(_PRUNED_ON_ATTR)
    return () if text is None else tuple(str(d) for d in json.loads(text))


def _monotone_constraints(params: Mapping, names: Sequence[str] = ()) -> tuple[int, ...]:
    """``monotone_constraints`` per feature, or (): XGBoost's config holds ``"(1,0,-1)"``; a
    dumped model's ``host_params`` may hold a list or a dict by feature name, as
    ``xgboost.train`` accepts."""
    value = params.get("monotone_constraints", "")
    if isinstance(value, Mapping):
        found = tuple(int(value.get(name, 0)) for name in names)
    else:
        found = tuple(int(float(c)) for c in re.findall(r"-?\d+(?:\.\d*)?", str(value)))
    return found if any(found) else ()


def _monotone(params: Mapping) -> bool:
    return bool(_monotone_constraints(params))


def _params_fit(model: Mapping, params: Mapping, renews: bool, shrinkage: float,
                n_written: int = 0) -> bool:
    """Whether eta and lambda reproduce the weights of the trees after the first
    ``n_written`` (those this library wrote: :func:`written_trees`), with the model's alpha
    (True where it cannot be told: monotone constraints, renewed leaves, every tree
    written)."""
    trees = model["trees"][n_written:]
    if renews or not trees or _monotone(params):
        return True
    return _params_mismatch(trees, shrinkage, params["lambda"], params["max_delta_step"],
                            params["alpha"]) <= 1e-4


def written_trees(learner: Mapping, n_trees: int) -> int:
    """How many of the model's first trees this library wrote (pruned, refit or grown):
    those the parameters it stored (:func:`written_params`) hold for. 0 for a model it did
    not write; all ``n_trees`` where it wrote the model without storing the count (before it
    did) or the model holds fewer trees (a slice). Trees after them were added by training
    continued from the model (``xgb_model=``), with the parameters of its configuration."""
    attributes = learner.get("attributes", {})
    text = attributes.get(_PARAMS_ATTR)
    if text is None:
        return n_trees if _WRITTEN_ATTR in attributes else 0
    count = json.loads(text).get("n_trees")
    return n_trees if count is None else min(int(count), n_trees)


def _writes_max_delta_step(learner: Mapping, n_trees: int) -> bool:
    """Whether this library wrote all the model's trees and stored the ``max_delta_step``
    they were fit with (:func:`written_params`), which may differ from the objective's."""
    return (written_trees(learner, n_trees) == n_trees > 0
            and "max_delta_step" in written_params(learner))


def _written_shrinkage_head(learner: Mapping, n_written: int, n_parallel: int
                            ) -> np.ndarray | None:
    """The etas of the first ``n_written`` trees as the writer stored them (one ``eta`` for
    all, or each tree's), or None."""
    attributes = learner.get("attributes", {})
    text = attributes.get(_SHRINKAGE_ATTR)
    if text is not None:
        values = np.asarray(json.loads(text), dtype=np.float64)
        if values.shape == (n_written,):
            return values
    stored = json.loads(attributes.get(_PARAMS_ATTR, "{}"))
    if "eta" in stored:  # times n_parallel, as the writer stored it
        return np.full(n_written, float(np.float32(stored["eta"]) / np.float32(n_parallel)))
    return None


def _continued(learner: Mapping, trees_json: Sequence[Mapping], n_written: int,
               params: Mapping, eta: float, params_fit: bool, n_parallel: int,
               params_given: bool = True) -> tuple[np.ndarray, bool, bool, list[str]]:
    """Each tree's eta for a model this library wrote and training continued: the written
    trees' as stored, the later ones' as any host model's (the configured eta where it fits
    their weights, else each tree's own, where they tell it). Returns the etas, whether the
    later ones were read per tree, whether the parameters fit, and warnings: penalties that
    differ from the stored ones, where the configured ones are known (``params_given``; a
    Booster loaded from a file reports XGBoost's defaults, which say nothing)."""
    stored = json.loads(learner.get("attributes", {}).get(_PARAMS_ATTR, "{}"))
    head = _written_shrinkage_head(learner, n_written, n_parallel)
    tail, per_tree = None, False
    if not params_fit and params["max_delta_step"] == 0:
        tail = _tree_shrinkages(trees_json[n_written:], params["lambda"])
        per_tree = tail is not None
        params_fit = per_tree
    if tail is None:
        tail = np.full(len(trees_json) - n_written, eta)
    out = []
    if head is None:
        head = np.full(n_written, eta)
        out.append(f"the first {n_written} trees were written by unbiased_criteria without "
                   f"their eta, and training continued from them: eta={params['eta']:g} "
                   "serves them, so their pruned and refit leaves may be off")
    changed = {key: (train_param(key, stored[key]), params[key])
               for key in ("lambda", "alpha", "max_delta_step")
               if params_given and key in stored
               and train_param(key, stored[key]) != params[key]}
    if changed:
        was = ", ".join(f"{k}={old:g}" for k, (old, _) in changed.items())
        now = ", ".join(f"{k}={new:g}" for k, (_, new) in changed.items())
        out.append(
            f"the first {n_written} trees were written by unbiased_criteria with {was}, and "
            f"training continued from them with {now}: a model keeps one set of penalties, "
            "the last stage's, so those trees' biased_gain (and any leaf pruning or "
            "refit_leaves computes in them) use the later ones and will not match their own "
            "(continue with the same penalties to avoid this)")
    return np.concatenate([head, tail]), per_tree, params_fit, out


def _warnings(learner: Mapping, model: Mapping, params: Mapping, objective: str,
              base_score: np.ndarray, params_fit: bool, version: tuple[int, int]
              ) -> tuple[list[str], list[str], list[str]]:
    """Why recomputed gains will not match the model's own (``Model.warnings``), those of
    them that concern the training rows' gains alone (``Model.gain_only``), and what else to
    say (``Model.notes``); ``version``: the XGBoost that wrote the model."""
    out, notes = [], []
    if params["subsample"] < 1.0:
        out.append(
            f"subsample={params['subsample']:g}: the host summed each node over a random "
            "subsample, so recomputed node sums and biased gains will not match its "
            "sum_hessian and loss_changes (the unbiased gain stays valid)"
        )
    mono = _monotone(params)
    if mono:
        out.append("monotone constraints clip leaf weights: recomputed gains may not match")
    if str(params.get("device", "cpu")).startswith(("cuda", "gpu")):
        out.append("GPU training quantises gradients: recomputed gains are approximate")
    best = learner.get("attributes", {}).get("best_iteration")
    indptr = model.get("iteration_indptr") or [0]
    if best is not None and int(best) + 1 < len(indptr) - 1:  # some iterations past it
        notes.append(
            f"the model has best_iteration={best}: the IR holds all its iterations (as "
            "Booster.predict uses), while the scikit-learn predict stops at best_iteration; "
            f"to score only those, pass the slice booster[:{int(best) + 1}] "
            "(model.get_booster() for an estimator), and measure it on held-out rows that did "
            "not choose best_iteration (not the early-stopping evals / eval_set): on those the "
            "cut favours trees that happen to fit them, and U comes out biased upward"
        )
    lmp = learner["learner_model_param"]
    # xgb.train(obj=f) stores the objective XGBoost chose for params naming none
    # (multi:softmax with num_class > 1) and leaves base_score 0.5, which XGBoost estimates
    # from 2.0 (for several classes from 3.1): before, 0.5 was every model's and tells nothing
    estimated_from = {"reg:squarederror": (2, 0), "multi:softmax": (3, 1)}.get(objective)
    if (estimated_from is not None and np.all(base_score == 0.5)
            and str(lmp.get("boost_from_average", "1")) == "1" and version >= estimated_from):
        notes.append(
            f"base_score is 0.5 with {objective}, what a custom objective (obj=) leaves: "
            "if the model was trained with one, pass objective= (on the command line "
            "--objective, an objective name)"
        )
    gain_only = list(out)  # subsample, monotone clipping, GPU: the training rows' gains
    if not params_fit:
        out.append(
            f"eta={params['eta']:g} and lambda={params['lambda']:g} do not reproduce the "
            "trees' own weights: pass the real ones with read_model(model, params={'eta': "
            "..., 'lambda': ...}) (and alpha, max_delta_step, monotone_constraints if the "
            "model used them)"
        )
    return out, gain_only, notes


def parse_model(
    js: Mapping,
    train_params: Mapping[str, Any] | None = None,
    *,
    custom_objective: bool = False,
    params_given: bool = True,
) -> Model:
    """The IR of a parsed XGBoost model JSON (no data, no Booster needed).

    Parameters
    ----------
    js : dict
        ``json.loads(booster.save_raw("json"))``; it becomes ``Model.source`` (not copied).
    train_params : dict, optional
        Training parameters (``eta``, ``lambda``, ``alpha``, ``max_delta_step``,
        ``subsample``...); XGBoost's defaults where absent. They are checked against the
        trees' own weights.
    custom_objective : bool
        The model was trained with a callable objective: ``Model.objective`` is None.
    params_given : bool
        ``train_params``' eta and lambda were set by the user or by training. If False
        (XGBoost's defaults, as a Booster loaded from a file reports) and they do not fit the
        trees, ``Model.leaf_params_unknown`` is set and the core infers them; if True and
        they do not fit, a warning says so.

    Returns
    -------
    Model
    """
    learner = js["learner"]
    model, _ = _gbtree(learner)
    lmp = learner["learner_model_param"]
    n_class = int(lmp.get("num_class", 0))
    n_outputs, n_target = _outputs(learner)
    obj_json = learner.get("objective", {"name": "reg:squarederror"})
    obj_name = obj_json["name"]
    obj_params = model_objective_params(learner)
    version = compat.model_version(js)
    objective = _core_objective(obj_name, obj_params, max(n_class, 1), version)
    if n_target > 1:
        # one tree per target and iteration (tree_info names the target), as for classes;
        # vector leaves (multi_output_tree) were refused with the trees
        objective = multi_target(objective, obj_name, n_target)
    params = _train_params(None, train_params)
    if (obj_name == "count:poisson" and params["max_delta_step"] == 0
            and not _writes_max_delta_step(learner, len(model["trees"]))):
        # XGBoost's one duplicated parameter: poisson's trees are clipped at the objective's
        # max_delta_step (0.7 unless given), which the model JSON keeps and a Booster loaded
        # from it does not (its configuration reports 0). Where this library wrote the trees,
        # it stored their own (the native grower's 0, under the objective's 0.7)
        params["max_delta_step"] = float(np.float32(obj_params.get("max_delta_step", 0.7)))
    n_parallel = int(model.get("gbtree_model_param", {}).get("num_parallel_tree", 1))
    # the updaters shrink each of an iteration's parallel trees by eta / num_parallel_tree,
    # in float32
    eta = float(np.float32(params["eta"]) / np.float32(n_parallel))

    trees_json = model["trees"]
    renews = bool(objective is not None and objective.renews_leaves)
    n_written = written_trees(learner, len(trees_json))
    params_fit = _params_fit(model, params, renews, eta, n_written)
    shrinkages, slice_note, continued_warnings, per_tree = None, None, [], False
    if 0 < n_written < len(trees_json):  # trees added by training continued from ours
        shrinkages, per_tree, params_fit, continued_warnings = _continued(
            learner, trees_json, n_written, params, eta, params_fit, n_parallel, params_given)
    elif not params_fit and params["max_delta_step"] == 0:
        # one eta does not fit: each tree's own, if its weights tell (a schedule's)
        shrinkages = _tree_shrinkages(trees_json, params["lambda"])
        per_tree = shrinkages is not None
        if per_tree:
            params_fit = True
    if shrinkages is None:
        # the etas the writer stored for trees shrunk by different ones (the hook's with a
        # LearningRateScheduler), else the configured one
        shrinkages = _written_shrinkages(learner, len(trees_json))
        if shrinkages is None and _SHRINKAGE_ATTR in learner.get("attributes", {}):
            # a slice keeps the attribute and renumbers the trees: read them if they tell
            if params["max_delta_step"] == 0:
                shrinkages = _tree_shrinkages(trees_json, params["lambda"])
            if shrinkages is None:
                slice_note = (
                    f"the trees were shrunk by different learning rates, stored for "
                    f"{len(json.loads(learner['attributes'][_SHRINKAGE_ATTR]))} trees, but "
                    f"the model holds {len(trees_json)} (a slice?) and they cannot be read "
                    f"from its weights: eta={params['eta']:g} serves every tree, so pruned "
                    "and refit leaves will be off; prune the whole model, then slice it"
                )
        if shrinkages is None:
            shrinkages = np.full(len(trees_json), eta)
    trees = tuple(_read_tree(t, i, s) for i, (t, s) in enumerate(zip(trees_json, shrinkages)))
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
        weight_float32=True, raw_gradient_score=compat.scores_with_raw_gradient(version),
        monotone=_monotone_constraints(params),
    )
    # a model this library wrote before it stored the leaves' parameters, loaded from a file:
    # its configuration's defaults say nothing, and its leaves cannot be tested against them
    attributes = learner.get("attributes", {})
    unknown = (not params_fit or (_WRITTEN_ATTR in attributes
                                  and _PARAMS_ATTR not in attributes)) and not params_given
    warnings, gain_only, notes = _warnings(learner, model, params, obj_name, base,
                                           params_fit or unknown, version)
    warnings += continued_warnings
    if slice_note is not None:  # the leaves' eta: pruned and refit leaves, not the gains
        notes.append(slice_note)
    if per_tree and np.ptp(shrinkages) > 0:
        notes.append(
            f"the trees were shrunk by different learning rates "
            f"({shrinkages.min() * n_parallel:.6g} to {shrinkages.max() * n_parallel:.6g}: "
            "a LearningRateScheduler, or training continued with another eta?), not the "
            "configured "
            f"eta={params['eta']:g}: each tree's is read from its own weights"
        )
    elif per_tree and params_given:  # a loaded model's default eta is replaced silently
        notes.append(
            f"eta={params['eta']:g} does not fit the trees' own weights, which say "
            f"{shrinkages[0] * n_parallel:.6g}: that is used"
        )
    if objective is None and not custom_objective:
        notes.append(
            f"objective {obj_name!r} has no equivalent in the core: pass objective= (a "
            "callable f(y, raw_score, weight) -> (grad, hess))"
        )
    return Model(
        forest=forest,
        objective=None if custom_objective else objective,
        split_score=split_score,
        host="xgboost",
        bias_from_labels=False,
        leaf_params_unknown=unknown,
        warnings=tuple(warnings),
        notes=tuple(notes),
        gain_only=tuple(gain_only),
        source=js,
        pruned_on=_pruned_on(learner),
        written_trees=n_written,
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
        ``lambda``/``reg_lambda``, ``alpha``/``reg_alpha``, ``max_delta_step``). XGBoost
        does not store them in the model, and a Booster loaded from a file reports its
        defaults (eta 0.3, lambda 1). Where those defaults do not fit the trees and no eta or
        lambda was given (here or by ``set_param``), ``Model.leaf_params_unknown`` is set:
        :func:`unbiased_criteria.prune` and :func:`unbiased_criteria.unbiased_importance`
        then infer eta and lambda from the leaf values and the training rows. Values given
        here win (a warning if they do not fit the trees).

    Returns
    -------
    Model
        ``objective`` is None for a scikit-learn model with a callable objective. A Booster
        trained with ``xgb.train(..., obj=f)`` cannot be told apart: it stores the objective
        XGBoost configured from the params (``reg:squarederror`` unless they name one,
        ``multi:softmax`` with ``num_class`` > 1) and base_score 0.5 (a note says so), so
        pass ``objective=`` to the public functions for such models. ``source`` is the parsed
        model JSON.

    Raises
    ------
    UnsupportedModelError
        gblinear, DART with dropped trees, ranking or survival objectives, multi-output trees,
        multi-target models, reg:quantileerror with several quantiles.
    """
    bst = _booster(model)
    js = json.loads(bst.save_raw("json"))
    # no fallback to XGBoost's default eta and lambda: a Booster whose model JSON could be
    # saved has a configuration, and any failure here is not a model with defaults
    config = json.loads(bst.save_config())
    # the parameters this library's writer stored with the trees, under the user's; not
    # where training continued from the model: its configuration has the later trees'
    n_trees = len(_gbtree(js["learner"])[0]["trees"])
    continued = written_trees(js["learner"], n_trees) < n_trees
    stored = {} if continued else written_params(js["learner"])
    train = _train_params(config, {**stored, **(params or {})})
    custom = isinstance(model, xgboost.XGBModel) and callable(getattr(model, "objective", None))
    given = {_ALIASES.get(k, k) for k in (params or {})} & {"eta", "lambda"}
    # a Booster loaded from a file reports XGBoost's defaults: anything else was set
    defaults = all(train[k] == float(np.float32(_DEFAULT_TRAIN[k])) for k in ("eta", "lambda"))
    read = parse_model(js, train, custom_objective=custom,
                       params_given=bool(given) or bool(stored) or not defaults)
    return with_held_out_warning(read, bst, model)


def written_params(learner: Mapping) -> dict[str, Any]:
    """The training parameters this library's writer stored in a model (``lambda``,
    ``alpha``, ``max_delta_step``, ``monotone_constraints``, and ``eta`` when the trees share
    one), or {}. ``monotone_constraints`` in XGBoost's own text form."""
    text = learner.get("attributes", {}).get(_PARAMS_ATTR)
    if text is None:
        return {}
    stored = dict(json.loads(text))
    stored.pop("n_trees", None)  # not a parameter: the trees they hold for (written_trees)
    if "monotone_constraints" in stored:
        mono = stored.pop("monotone_constraints")
        if any(mono):
            stored["monotone_constraints"] = "(" + ",".join(str(int(c)) for c in mono) + ")"
    return stored
