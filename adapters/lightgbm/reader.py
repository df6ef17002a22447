"""Read a LightGBM model into the IR; no data needed.

The reader parses ``Booster.dump_model(num_iteration=-1)`` (the tree structure and statistics)
and the ``parameters:`` block of ``Booster.model_to_string(num_iteration=-1)`` (objective
hyper-parameters, modes that break replay). Unsupported kinds of model raise
``UnsupportedModelError`` naming what is unsupported.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters._record import pruned_on_of, with_held_out_warning
from unbiased_criteria.adapters.lightgbm.compat import holds_training_data
from unbiased_criteria.adapters.lightgbm.objectives import (
    MEAN_TYPE,
    OBJECTIVE_ALIASES,
    RANKING,
    core_objective,
    objective_for,
)
from unbiased_criteria.adapters.lightgbm.source import (
    RULES,
    LightGBMSource,
    booster_of,
    dump_model,
    make_forest,
    parse_parameters,
)
from unbiased_criteria.adapters.lightgbm.text_model import check_model_text

from unbiased_criteria.gains import SplitScore
from unbiased_criteria.model import Model, UnsupportedModelError
from unbiased_criteria.model_sums import leaf_implied_sums
from unbiased_criteria.trees import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Tree, make_tree

__all__ = ["read_model", "model_from_dump", "parse_tree", "parse_tree_text", "categorical_options",
           "replay_warnings"]

_MISSING_CODE = {"None": MISSING_NONE, "Zero": MISSING_ZERO, "NaN": MISSING_NAN}


def _check_supported(dump: dict, source: LightGBMSource, text: str) -> None:
    """Raise UnsupportedModelError for model kinds the IR cannot replay or represent."""
    boosting = source.param("boosting")
    if boosting == "dart":
        raise UnsupportedModelError(
            "DART boosting is not supported: its gradients were computed with random trees "
            "dropped and its trees were rescaled afterwards"
        )
    # a line "is_linear=1" (a substring search: a regex over a large model took 25 ms)
    if source.flag("linear_tree") or "\nis_linear=1\n" in text:
        raise UnsupportedModelError(
            "linear trees (linear_tree=True) are not supported: their leaves hold linear models"
        )
    obj = source.objective
    if obj in RANKING:
        raise UnsupportedModelError(f"ranking objective {obj!r} is not supported")
    if obj == "cross_entropy_lambda":
        raise UnsupportedModelError("objective 'cross_entropy_lambda' is not supported")
    if obj == "regression" and source.flag("reg_sqrt"):
        raise UnsupportedModelError(
            "regression with reg_sqrt=True is not supported: the model was fit to sqrt(y)"
        )
    if obj is not None and obj not in OBJECTIVE_ALIASES.values():
        raise UnsupportedModelError(f"unknown LightGBM objective {obj!r}")


def replay_warnings(source: LightGBMSource) -> tuple[str, ...]:
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
    if source.flag("use_quantized_grad"):
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
    if p("forcedsplits_filename"):
        # found against numpy sums of the model's own gradients: the first tree's agree
        out.append("forcedsplits_filename: the gain LightGBM stores for a forced split of the "
                   f"second and later trees is not the split's gain on the rows; {tail}")
    return tuple(out)


def categorical_options(dump: dict, source: LightGBMSource) -> dict[str, Any]:
    """The categorical keywords of :func:`parse_tree` (and of the grower) for a model.

    ``n_categories``: categorical bins of each feature (its category list, -1 = the NaN bin);
    ``cat_l2`` and ``max_cat_to_onehot`` as the model's parameters give them.
    """
    infos = dump.get("feature_infos", {})
    return dict(
        n_categories=[
            len(infos.get(name, {}).get("values", []) or []) for name in dump["feature_names"]
        ],
        cat_l2=source.float_param("cat_l2"),
        max_cat_to_onehot=int(source.float_param("max_cat_to_onehot")),
    )


#: the per-node arrays of :func:`parse_tree` and :func:`parse_tree_text`, in order
_ARRAY_KEYS = ("left", "right", "feature", "threshold", "default_left", "missing", "value",
               "l2_extra", "host_gain", "host_hessian", "host_count")


def _blank_arrays(L: int) -> dict[str, Any]:
    """The IR arrays (``make_tree``'s keywords) of a tree of ``L`` leaves before any node is
    read: no children, no statistics, no category sets."""
    n = 2 * L - 1
    arrays: dict[str, Any] = dict(
        left=np.full(n, -1, np.int32), right=np.full(n, -1, np.int32),
        feature=np.full(n, -1, np.int32), threshold=np.full(n, np.nan),
        default_left=np.zeros(n, bool), missing=np.full(n, MISSING_NONE, np.int8),
        value=np.full(n, np.nan), l2_extra=np.zeros(n), host_gain=np.full(n, np.nan),
        host_hessian=np.full(n, np.nan), host_count=np.full(n, -1, np.int64),
    )
    arrays["cat_sets"] = {}
    return arrays


#: dump_model() prints a threshold at or beyond +-1e300 as +-1e300 (LightGBM's AvoidInf): an
#: infinite threshold ("inf" in the model text), which sends +inf left
DUMP_INF = 1e300


def _dump_threshold(printed: float) -> float:
    """A threshold as LightGBM holds it, from its ``dump_model()`` print."""
    return np.inf if printed >= DUMP_INF else -np.inf if printed <= -DUMP_INF else printed


def parse_tree(
    info: dict, n_categories: list[int], cat_l2: float, max_cat_to_onehot: int
) -> dict[str, Any]:
    """Flat IR arrays of one ``tree_info`` entry (iterative walk: trees can be deep)."""
    L = int(info["num_leaves"])
    arrays = _blank_arrays(L)
    left, right, feature, threshold, default_left, missing, value, l2_extra, gain, hess, \
        count = (arrays[k] for k in _ARRAY_KEYS)
    cat_sets: dict[int, np.ndarray] = arrays["cat_sets"]

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
            threshold[i] = _dump_threshold(float(node["threshold"]))
        stack.append(node["left_child"])
        stack.append(node["right_child"])
    return arrays


#: LightGBM's missing type (bits 2-3 of decision_type) as the IR's; 3 is routed as None
_MISSING_BITS = np.array([MISSING_NONE, MISSING_ZERO, MISSING_NAN, MISSING_NONE], np.int8)


def parse_tree_text(
    fields: dict[str, str], n_categories: list[int], cat_l2: float, max_cat_to_onehot: int
) -> dict[str, Any]:
    """Flat IR arrays of one ``Tree=`` block of a text model (its ``key=value`` fields, as
    :func:`~unbiased_criteria.adapters.lightgbm.text_model.check_model_text` returns them
    checked), equal to what :func:`parse_tree` gives for the block's ``dump_model()`` entry
    (tested tree by tree), without the JSON: LightGBM's dump of a model costs about 4 times
    its text, and the JSON's parse as much again.

    Node ids as LightGBM's: split ``i`` is node ``i``, leaf ``j`` node ``num_leaves - 1 +
    j``. ``split_gain``, ``internal_value`` and ``internal_weight`` are the text's 6
    significant digits, as in every Booster LightGBM returns or loads (the JSON of a Booster
    kept in training, ``keep_training_booster=True``, shows more); statistics a hand-made
    text leaves out are 0, as LightGBM loads them.
    """
    L = int(fields["num_leaves"])
    k = L - 1
    if fields.get("is_linear", "0").strip() not in ("", "0"):
        raise UnsupportedModelError("linear trees (leaf_coeff) are not supported")

    def numbers(key: str, size: int, dtype) -> np.ndarray:
        words = fields.get(key, "").split()
        return np.array(words, dtype=dtype) if words else np.zeros(size, dtype)

    arrays = _blank_arrays(L)
    left, right, feature, threshold, default_left, missing, value, l2_extra, gain, hess, \
        count = (arrays[k] for k in _ARRAY_KEYS)
    cat_sets: dict[int, np.ndarray] = arrays["cat_sets"]
    value[k:] = numbers("leaf_value", L, np.float64)
    if L == 1:  # its dump holds the leaf's value and count (no weight)
        if fields.get("leaf_count", "").strip():
            count[:] = numbers("leaf_count", L, np.int64)
        return arrays
    hess[k:] = numbers("leaf_weight", L, np.float64)
    count[k:] = numbers("leaf_count", L, np.int64)
    for out, key in ((left, "left_child"), (right, "right_child")):
        child = numbers(key, k, np.int64)
        out[:k] = np.where(child >= 0, child, k + ~child)  # leaf j is ~j
    feature[:k] = numbers("split_feature", k, np.int64)
    decision = numbers("decision_type", k, np.int64)
    default_left[:k] = decision & 2 != 0
    missing[:k] = _MISSING_BITS[(decision >> 2) & 3]
    cut = numbers("threshold", k, np.float64)
    categorical = decision & 1 != 0
    threshold[:k] = np.where(categorical, np.nan, cut)
    value[:k] = numbers("internal_value", k, np.float64)
    gain[:k] = numbers("split_gain", k, np.float32)  # LightGBM keeps float32 gains
    hess[:k] = numbers("internal_weight", k, np.float64)
    count[:k] = numbers("internal_count", k, np.int64)
    if categorical.any():  # a category set is a bitset of 32-bit words
        bounds = numbers("cat_boundaries", 1, np.int64)
        words = numbers("cat_threshold", 0, np.int64)
        for i in np.flatnonzero(categorical):
            j = int(cut[i])
            bits = (words[bounds[j] : bounds[j + 1], None] >> np.arange(32)) & 1
            cat_sets[int(i)] = np.flatnonzero(bits.ravel())
            # many-vs-many splits score their children with lambda_l2 + cat_l2
            if n_categories[feature[i]] > max_cat_to_onehot:
                l2_extra[i] = cat_l2
    return arrays


def _data_free_bias(tree: Tree, l2: float, eps: float = 0.0) -> float:
    """Init score folded into a first-iteration tree, from its leaves alone.

    Exact when the init score zeroes the root's gradient sum and leaf outputs are
    ``-G/(H + eps + l2)``: then ``sum_j (H_j + eps + l2_j) value_j / sum_j (H_j + eps +
    l2_j) = init``, with ``l2_j`` including the parent's ``cat_l2`` for leaves of
    many-vs-many splits and ``eps`` LightGBM's kEpsilon (``SplitScore.hessian_epsilon``).
    """
    leaf = tree.is_leaf
    if leaf.sum() == 1:
        return float(tree.value[leaf][0])
    weight = tree.host_hessian[leaf] + eps + l2 + tree.leaf_l2_extra[leaf]
    if not np.all(np.isfinite(weight)) or weight.sum() <= 0:
        return math.nan
    return float(np.sum(weight * tree.value[leaf]) / np.sum(weight))


#: objectives whose init score is a percentile of the labels by a version-dependent rule
_PERCENTILE_INIT = ("regression_l1", "quantile")
#: a first-iteration tree's splits must agree on its learning rate to this relative
#: tolerance (on the rate squared): its gains are float32 printed to 6 significant digits
_RATE_AGREEMENT = 1e-3
#: splits whose gain is below this share of the tree's largest are too imprecise to count
_RATE_MIN_GAIN_SHARE = 1e-2


def _first_iteration_rate(tree: Tree, bias: float, score: SplitScore) -> float | None:
    """The learning rate a first-iteration tree that holds the init score ``bias`` was grown
    at, from its own leaf values and split gains; NaN where they disagree on it (a tree
    edited after training), None where they hold no evidence (no split, gains beyond
    float32, which LightGBM stores as ``inf``).

    LightGBM resets such a tree's ``shrinkage`` to 1 when it folds the init score in, and its
    parameters show the last rate only. Where every leaf holds ``bias + rate * (-G/(H +
    l2))`` (the cases :func:`_data_free_bias` is exact for), each leaf gives ``rate * G``, the
    sums of those give every node's, and each split's stored gain ``B`` of the unshrunk sums
    (``min_gain_to_split`` not subtracted: checked on LightGBM 4.7's) then gives ``rate**2``:
    the values scale with the rate, the gains do not. The splits must agree
    (:data:`_RATE_AGREEMENT`); the rate is returned to 6 significant digits, what the printed
    gains carry. ``score``: the model's (no L1, no clip); its ``hessian_epsilon`` is
    LightGBM's kEpsilon, added to each child's hessian sum and twice to the parent's.
    """
    left, right = tree.left, tree.right
    if tree.is_leaf.all() or not math.isfinite(bias):
        return None
    inner = tree.internal_nodes
    l2, eps = score.l2, score.hessian_epsilon
    lam = l2 + tree.l2_extra  # children of many-vs-many splits: l2 + cat_l2
    sums = leaf_implied_sums(tree, bias, 1.0, score)  # rate * G, and H, from the leaves
    G, H = sums.G, sums.H

    def node_score(g: np.ndarray, h: np.ndarray, extra: np.ndarray) -> np.ndarray:
        return g * g / (h + extra)

    children_l2 = lam[inner]
    scaled = (node_score(G[left[inner]], H[left[inner]], children_l2 + eps)
              + node_score(G[right[inner]], H[right[inner]], children_l2 + eps)
              - node_score(G[inner], H[inner], np.full(inner.size, l2 + 2 * eps)))
    gain = tree.host_gain[inner]
    if not (np.all(np.isfinite(scaled)) and np.all(np.isfinite(gain)) and gain.max() > 0):
        return None
    use = gain >= _RATE_MIN_GAIN_SHARE * gain.max()
    squared = float(scaled[use].sum() / gain[use].sum())
    if not squared > 0 or np.any(
            np.abs(scaled[use] - squared * gain[use]) > _RATE_AGREEMENT * squared * gain[use]):
        return math.nan
    return float(f"{math.sqrt(squared):.6g}")


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
    ModelTextError
        The booster's text is corrupt (child or feature index out of range, a cycle...), which
        would crash LightGBM's ``dump_model()``; the message names the tree and the field.

    Notes
    -----
    The folded init score is detected from the first trees' ``shrinkage`` reading 1 while the
    learning rate does not. With ``learning_rate=1`` the two cannot be told apart, so a model
    trained with ``boost_from_average`` is read as holding one. A Dataset ``init_score`` used in
    training leaves no trace in the model (its predictions lack it); the replay then starts
    from 0, not from that score.
    """
    booster = booster_of(model)
    text = booster.model_to_string(num_iteration=-1)
    # a Booster built from corrupt text can crash dump_model(): check the text first
    tree_fields = check_model_text(text)
    if holds_training_data(booster):  # its JSON holds gains at more digits than its text
        dump, tree_fields = dump_model(booster, num_iteration=-1), None
    else:  # the dump's header only: the trees from the text, several times faster
        dump = dump_model(booster, start_iteration=booster.current_iteration(),
                          num_iteration=-1)
        if dump["tree_info"]:
            raise RuntimeError("LightGBM dumped trees past its last iteration")
    read = model_from_dump(dump, parse_parameters(text), text=text,
                           best_iteration=int(getattr(booster, "best_iteration", 0) or 0),
                           tree_fields=tree_fields)
    # LGBMClassifier(class_weight=...) multiplied its training weights (the Booster does not
    # say): the core weights the rows alike
    class_weight = getattr(model, "class_weight", None)
    if isinstance(model, lightgbm.LGBMClassifier) and class_weight is not None:
        read = dataclasses.replace(read, class_weight=class_weight)
    read = dataclasses.replace(read, pruned_on=pruned_on_of(booster)
                               or pruned_on_of(model, booster))
    return with_held_out_warning(read, booster, model)


def model_from_dump(dump: dict, params: dict[str, str], *, text: str = "",
                    best_iteration: int = 0,
                    tree_fields: list[dict[str, str]] | None = None,
                    l2_known: bool = True) -> Model:
    """The IR of a ``dump_model()`` dict, with the ``parameters:`` block ``params``
    (``{}`` for a bare dump: LightGBM's defaults; the learning rate then comes from the
    trees' ``shrinkage``). ``text`` is the text model, if any (the writer needs it).
    ``tree_fields``: the trees as the text's checked ``Tree=`` blocks
    (:func:`parse_tree_text`) instead of the dump's ``tree_info``, which is then ignored.
    ``l2_known``: False for a dump without ``lambda_l2`` (the core infers it later): the first
    iteration's gains are read under LightGBM's default L2 (0); where they agree on a rate it
    is used (a schedule), where they disagree that only says the L2 is not 0, not that the
    trees were edited."""
    obj_line = dump.get("objective")  # absent for a custom objective
    objective_name = None
    if obj_line is not None:
        first = obj_line.split()[0]
        objective_name = OBJECTIVE_ALIASES.get(first, first)
        if objective_name == "regression" and "sqrt" in obj_line.split()[1:]:
            params = {**params, "reg_sqrt": "1"}
    infos = dump["tree_info"] if tree_fields is None else tree_fields
    # (num_leaves, shrinkage) of every tree: both forms hold them under these names
    sizes = [(int(t["num_leaves"]), float(t.get("shrinkage", 1.0))) for t in infos]
    source = LightGBMSource(
        text=text, params=params, objective=objective_name,
        n_leaves=np.array([L for L, _ in sizes], dtype=np.int64),
        best_iteration=best_iteration,
    )
    _check_supported(dump, source, text)

    K = int(dump["num_tree_per_iteration"])
    # random forest mode: every tree is fit at the init score, which each tree holds (AddBias),
    # unshrunk; the host averages the trees' outputs (its raw scores sum them)
    forest_mode = bool(dump.get("average_output")) or source.param("boosting") in (
        "rf", "random_forest")
    fp = source.float_param
    score = source.split_score()
    warnings = list(replay_warnings(source))  # why host gains differ
    notes = []  # what else to say (no reason for the gains to differ)

    objective = from_labels = None
    if objective_name in ("binary", "multiclassova") and source.flag("is_unbalance"):
        notes.append(
            "is_unbalance: LightGBM weighted the classes by their counts in the training "
            "labels, which the model does not store; pass the training rows (X_train, "
            "y_train; --train on the command line), whose labels give the counts, or pass "
            f"objective= (e.g. unbiased_criteria.adapters.lightgbm.make_objective("
            f"'{objective_name}', model_ir, y_train=y_train))"
        )
        from_labels = functools.partial(objective_for, objective_name, source, K)
    else:
        objective = core_objective(objective_name, source, K)

    # AddBias: built-in objective, boost_from_average, and the first trees' shrinkage reset to 1
    if "learning_rate" in params:
        lr = fp("learning_rate")
    else:  # no parameters block (hand-made model): the second iteration shows the rate
        lr = sizes[K][1] if len(sizes) > K else 1.0
    # the first iteration's trees hold the init score where AddBias reset their shrinkage to
    # 1 while the learning rate is not 1: decided from the trees, since boost_from_average is
    # the last training stage's (a model continued, init_model=, with boost_from_average=False
    # from one trained with it keeps the first stage's init score in its first trees)
    first_reset = not forest_mode and lr != 1.0 and any(
        shrinkage == 1.0 for L, shrinkage in sizes[:K] if L > 1)
    bias_in_trees = (objective_name is not None and not source.flag("boost_from_average")
                     and first_reset)
    add_bias = objective_name is not None and (source.flag("boost_from_average")
                                               or bias_in_trees)
    exact_bias = (
        add_bias and objective is not None and objective_name in MEAN_TYPE
        and score.l1 == 0 and score.max_delta_step == 0 and fp("scale_pos_weight") == 1
        and not warnings  # bagging, GOSS, quantisation, monotone, path_smooth...
    )

    # a learning rate changed during training (lightgbm.reset_parameter) shows in the later
    # trees' shrinkage; the first iteration's, reset to 1 by AddBias, is then not stored
    # trees of one leaf are written with shrinkage 1 whatever the rate: they say nothing
    scheduled = add_bias and not forest_mode and any(
        not math.isclose(shrinkage, lr, rel_tol=1e-9) for L, shrinkage in sizes[K:] if L > 1)
    categorical = categorical_options(dump, source)
    parse = parse_tree if tree_fields is None else parse_tree_text
    trees = []
    any_bias = False
    first_rates = []  # the first iteration's rates, where read from their gains
    for t, info in enumerate(infos):
        arrays = parse(info, **categorical)
        tree = make_tree(**arrays, rules=RULES)
        shrinkage = sizes[t][1]
        bias = 0.0
        # the trees holding the init score: every tree of a forest, else the first iteration's
        holds_init = forest_mode or (t < K and (shrinkage == 1.0 or tree.left[0] < 0))
        if add_bias and holds_init:
            bias = (_data_free_bias(tree, score.l2, score.hessian_epsilon) if exact_bias
                    else math.nan)
            any_bias = True
            if not forest_mode:  # AddBias reset the first iteration's shrinkage to 1
                shrinkage = math.nan if scheduled else lr if lr > 0 else shrinkage
                if exact_bias and tree.left[0] >= 0:
                    # the rate is not stored (a schedule may have changed the first round's
                    # alone): where the tree's gains tell it, they decide
                    rate = _first_iteration_rate(tree, bias, score)
                    if not l2_known and rate is not None and math.isnan(rate):
                        # gains that disagree under the default L2 (0) may only say the
                        # model's L2 is another: no evidence of an edit or a schedule
                        rate = None
                    if rate is not None:  # None: no evidence either way, nothing to say
                        if math.isfinite(rate) and math.isclose(rate, lr,
                                                                rel_tol=_RATE_AGREEMENT):
                            rate = lr  # the model's own rate, to its digits
                        first_rates.append(rate)
                        # untold: kept as grown under a schedule, else the later trees'
                        # rate (a note says it was not confirmed)
                        shrinkage = rate if math.isfinite(rate) else shrinkage
        trees.append(dataclasses.replace(tree, shrinkage=float(shrinkage), bias=float(bias)))

    forest = make_forest(trees, K, int(dump["max_feature_idx"]) + 1, dump["feature_names"],
                         one_iteration=forest_mode)
    read_rates = [r for r in first_rates if math.isfinite(r)]
    if any(r != lr for r in read_rates):
        notes.append(
            "the first iteration's trees were grown at learning rate "
            f"{', '.join(sorted({f'{r:g}' for r in read_rates}))}, not the model's "
            f"learning_rate={lr:g} (the learning rate changed during training, as "
            "lightgbm.reset_parameter does): LightGBM does not store that rate (those trees "
            "hold the init score at shrinkage 1), so it was read from their split gains and "
            "leaf values; pruning and refit_leaves use it for them"
        )
    untold = len(read_rates) < len(first_rates)
    if any_bias and (scheduled and (untold or not first_rates)):
        notes.append(
            "the learning rate changed during training (its trees' shrinkage differ from "
            f"learning_rate={lr:g}, as lightgbm.reset_parameter leaves them): the first "
            "iteration's rate is not stored (its trees hold the init score at shrinkage 1)"
            + (" and their split gains and leaf values do not tell it" if untold else "")
            + ", so pruning and refit_leaves keep the first iteration's trees as they are"
        )
    elif untold:
        notes.append(
            "the first iteration's learning rate is not stored (its trees hold the init score "
            "at shrinkage 1) and their split gains and leaf values do not tell it (trees "
            "pruned or edited after training?): it is taken as the later trees' "
            f"learning_rate={lr:g}; if a schedule (lightgbm.reset_parameter) changed the "
            "first round's alone, pruning and refit_leaves give those trees wrong values"
        )
    if bias_in_trees and scheduled:
        notes.append(
            "the model's parameters say boost_from_average=False (its last training stage's), "
            "yet its first trees read shrinkage 1 where its learning rate is "
            f"{lr:g}, and its later trees' shrinkage vary: they are read as holding the init "
            "score an earlier stage with boost_from_average folded into them (continued "
            "training, init_model=), which cannot be told from a first iteration grown at "
            "learning rate 1 without one; if it was that, the first iteration's gradients, "
            "gains and unbiased gains are not those of its training (pruning keeps its trees "
            "as they are)"
        )
    before = source.written_before()
    if before is not None and (before == "4.0" or objective_name in _PERCENTILE_INIT):
        written = ("LightGBM 3 or older (version=v3, or its parameters lack "
                   "data_sample_strategy, which 4.0 added)" if before == "4.0" else
                   "LightGBM 4.0 (its parameters lack lambdarank_position_bias_regularization, "
                   "which 4.1 added)")
        notes.append(
            f"the model was written by {written}: it is read as LightGBM 4 reads it"
            + (", and its init score is replayed by that version's percentile of the labels "
               "(the unweighted one changed in 4.1, LightGBM PR #5848), not 4.1's"
               if objective_name in _PERCENTILE_INIT else ""))
    n_iterations = len(trees) // max(K, 1)
    if 0 < best_iteration < n_iterations:
        notes.append(
            f"best_iteration is {best_iteration} of {n_iterations} iterations: every iteration "
            "is scored, while LightGBM's predict stops at best_iteration by default; to score "
            "only those, pass lightgbm.Booster(model_str=model.model_to_string("
            f"num_iteration={best_iteration})), and measure it on held-out rows that did not "
            "choose best_iteration (not the early-stopping valid_sets): on those the cut "
            "favours trees that happen to fit them, and U comes out biased upward"
        )
    return Model(
        forest=forest, objective=objective, split_score=score, host="lightgbm",
        bias_from_labels=any_bias, warnings=tuple(warnings), notes=tuple(notes), source=source,
        gain_only=replay_warnings(source),
        objective_from_labels=from_labels,
        # boost_from_average adds the init score unless a Dataset init_score was given (or
        # it was 0); at learning rate 1 the two kinds of first trees cannot be told apart
        init_score_unseen=add_bias and not forest_mode and not any_bias and lr != 1.0
        and bool(infos),
    )
