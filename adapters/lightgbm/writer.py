"""Write IR trees back as a LightGBM text model.

The writer renders IR trees as LightGBM text-model tree blocks between the original header and
trailer (``tree_sizes`` and ``feature_importances:`` recomputed), so reading a model and
writing it back gives the same text, byte for byte.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters._record import (
    attach_written,
    drop_estimator_record,
    grown_holdout,
)
from unbiased_criteria.adapters.lightgbm.compat import estimator_booster, set_estimator_booster
from unbiased_criteria.adapters.lightgbm.reader import read_model
from unbiased_criteria.adapters.lightgbm.source import (
    RULES,
    LightGBMSource,
    booster_of,
)

from unbiased_criteria.errors import InputError
from unbiased_criteria.trees import Forest, Tree

__all__ = ["model_text", "write_model", "split_text", "booster_from_forest", "NATIVE_OBJECTIVES"]


def _g(x: float) -> str:
    """C++ ``{:g}`` (6 significant digits), as LightGBM writes gains and internal stats."""
    return f"{float(x):g}"


def _g17(x: float) -> str:
    """C++ ``{:.17g}``, as LightGBM writes thresholds and leaf values (exact)."""
    return f"{float(x):.17g}"


def _d(x) -> str:
    """An integer, as C++ writes it."""
    return str(int(x))


def _stored_gain(gain) -> np.ndarray:
    """Split gains as LightGBM stores them (C++ ``float``): a gain beyond float32's range is
    ``inf``, as ``static_cast<float>`` makes it (LightGBM writes ``inf`` and loads it back);
    an unknown gain (NaN) is 0."""
    gain = np.asarray(gain, dtype=np.float64)
    with np.errstate(over="ignore"):  # the overflow to inf is LightGBM's own
        stored = gain.astype(np.float32)
    return np.where(np.isnan(stored), np.float32(0.0), stored)


def _join(fmt: Callable, values) -> str:
    # Python numbers from tolist(): formatting numpy scalars one by one cost twice as much
    return " ".join(map(fmt, np.asarray(values).tolist()))


def split_text(text: str) -> tuple[str, list[str], str]:
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
        "split_feature=" + _join(_d, tree.feature[inner]),
        "split_gain=" + _join(_g, _stored_gain(tree.host_gain[inner])),
        "threshold=" + _join(_g17, threshold),
        "decision_type=" + _join(_d, dtype),
        "left_child=" + _join(_d, child[tree.left[inner]]),
        "right_child=" + _join(_d, child[tree.right[inner]]),
        "leaf_value=" + _join(_g17, tree.value[leaves]),
        "leaf_weight=" + weight_line,
        "leaf_count=" + _join(_d, counts(tree.host_count[leaves])),
        "internal_value=" + _join(_g, finite(tree.value[inner])),
        "internal_weight=" + _join(_g, finite(tree.host_hessian[inner])),
        "internal_count=" + _join(_d, counts(tree.host_count[inner])),
    ]
    if cat_nodes.size:
        lines.append("cat_boundaries=" + _join(_d, boundaries))
        lines.append("cat_threshold=" + _join(_d, words))
    lines.append("is_linear=0")
    lines.append(f"shrinkage={_g(shrinkage)}")
    return "\n".join(lines) + "\n\n"


def _feature_importances(forest: Forest, importance_type: str) -> str:
    """The informational ``feature_importances:`` block, as GBDT::SaveModelToString writes it."""
    total = np.zeros(forest.n_features)
    for tree in forest.trees:
        inner = tree.internal_nodes
        gain = _stored_gain(tree.host_gain[inner])
        used = gain > 0  # LightGBM counts only splits with a positive gain (inf included)
        add = np.ones(inner.size) if importance_type == "0" else gain.astype(np.float64)
        np.add.at(total, tree.feature[inner][used], add[used])
    # LightGBM prints static_cast<size_t>(importance): a total of 2**64 or more (or inf) gives
    # 0 there (observed with LightGBM 4.7), so the feature is left out, as below
    ints = np.where(np.isfinite(total) & (total < 2.0**64), total, 0.0).astype(np.uint64)
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
    header, _, trailer = split_text(source.text)
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
    model: lightgbm.Booster | lightgbm.LGBMModel, forest: Forest, split_score: Any = None,
    pruned_on: tuple[str, ...] = (),
) -> lightgbm.Booster | lightgbm.LGBMModel:
    """A new LightGBM model of the same type as ``model`` holding ``forest``'s trees.

    Parameters
    ----------
    model : lightgbm.Booster or fitted lightgbm.LGBMModel
        The original model; not modified. Its header, parameters and pandas categories are
        kept.
    forest : Forest
        IR trees (e.g. pruned by ``trees.collapse_nodes``), in LightGBM's order.
    split_score : SplitScore, optional
        Ignored: the model text keeps its own parameters.
    pruned_on : tuple of str
        Digests of the held-out rows that pruned the trees (:attr:`Model.pruned_on`): kept
        with the new Booster object (the model text has no place for them), and with the new
        estimator for that Booster (a re-fit drops them).

    Returns
    -------
    lightgbm.Booster or LGBMModel
        A Booster built from the new text model, or a copy of the estimator holding it; the
        copy of a training-hook estimator (``UnbiasedLGBM*``) has no training record: it
        described the trees before they were written.
    """
    model_ir = read_model(model)  # also refuses DART and linear trees
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
    # the hook's held-out share goes along: the written trees' kept splits still hold its sums
    holdout = grown_holdout(booster_of(model), model)
    attach_written(booster, pruned_on, holdout_fraction=holdout)
    if isinstance(model, lightgbm.Booster):
        return booster
    # a copy of the estimator whose booster is the new one (the old one is not copied)
    new = copy.deepcopy(model, memo={id(estimator_booster(model)): booster})
    if estimator_booster(new) is not booster:
        # lightgbm.dask estimators deep-copy their state in __getstate__, past the memo
        set_estimator_booster(new, booster)
    # the estimator keeps them too, for this Booster: LightGBM's deepcopy of a Booster
    # rebuilds it from text (without them), a deep copy of the estimator maps the reference
    attach_written(new, pruned_on, model=booster, holdout_fraction=holdout)
    drop_estimator_record(new)  # the record of the trees before they were written
    return new


#: canonical objective of a natively grown forest -> LightGBM's objective line
NATIVE_OBJECTIVES = {
    "squared_error": lambda K: "regression",
    "binary_logistic": lambda K: "binary sigmoid:1",
    "multiclass_softmax": lambda K: f"multiclass num_class:{K}",
    "poisson": lambda K: "poisson",
}


def _native_header(forest: Forest, objective_line: str, names: list[str]) -> str:
    K = forest.n_outputs
    return (
        "tree\nversion=v4\n"
        f"num_class={K}\nnum_tree_per_iteration={K}\nlabel_index=0\n"
        f"max_feature_idx={forest.n_features - 1}\n"
        f"objective={objective_line}\n"
        f"feature_names={' '.join(names)}\n"
        f"feature_infos={' '.join(['none'] * forest.n_features)}\n"
        "tree_sizes=\n\n"
    )


#: characters LightGBM refuses in a feature name ("Do not support special JSON characters in
#: feature name"); a backslash or a control character it accepts, but writes into its JSON
#: dump unescaped, which then does not read back (or reads back as another name)
_NAME_REFUSED = set('",:[]{}\\') | {chr(c) for c in range(0x20)}

#: LightGBM's kZeroThreshold (1e-35f): its predictor reads values no larger in size as 0
_ZERO_THRESHOLD = float(np.float32(1e-35))


def _lightgbm_names(names: Sequence[Any]) -> list[str]:
    """``names`` as LightGBM writes them (whitespace replaced by underscores).

    Raises
    ------
    InputError
        A name holds a character LightGBM refuses or cannot dump (:data:`_NAME_REFUSED`).
    """
    written = [re.sub(r"\s", "_", str(name)) for name in names]
    refused = [str(name) for name, text in zip(names, written, strict=True)
               if _NAME_REFUSED.intersection(text)]
    if refused:
        raise InputError(
            "feature names: LightGBM refuses names containing any of \" , : [ ] { } (and "
            "cannot read back its dump of names with a backslash or a control character), "
            f"got {refused}; rename those features (columns) and fit again")
    return written


def _to_lightgbm_rules(tree: Tree, names: Sequence[str]) -> tuple[Tree, set[str]]:
    """A natively grown tree (LightGBM's rules but numeric values compared as they are) under
    LightGBM's rules (``|x| <= 1e-35f`` read as 0), and the features of its numeric splits
    whose threshold lies in ``[-1e-35f, 1e-35f)``: the only ones where that changes a row's
    way (such a value goes where 0 goes in LightGBM, by its own comparison in the tree)."""
    if tree.rules == RULES:
        return tree, set()
    if dataclasses.replace(tree.rules, tiny_is_zero=True) != RULES:
        raise ValueError(f"tree rules {tree.rules} are not LightGBM's {RULES}")
    inner = tree.internal_nodes
    numeric = inner[~tree.categorical[inner]]
    # t >= tol: every tiny value goes left, as 0 does; t < -tol: right, as 0 does
    t = tree.threshold[numeric]
    band = numeric[(t >= -_ZERO_THRESHOLD) & (t < _ZERO_THRESHOLD)]
    return (dataclasses.replace(tree, rules=RULES),
            {str(names[f]) for f in tree.feature[band]})


def booster_from_forest(forest: Forest, objective: str,
                        pandas_categorical: list | None = None,
                        params: Mapping[str, float] | None = None) -> lightgbm.Booster:
    """A LightGBM Booster holding ``forest``, made without a LightGBM model to copy.

    For forests grown outside LightGBM (:mod:`unbiased_criteria.gbm`): the header (objective,
    feature names) and the ``parameters:`` block (LightGBM's objective name and ``num_class``,
    as LightGBM writes them, so that ``Booster.refit`` and ``booster.params`` work) are
    written from the arguments, ``forest.base_score`` is folded into the first iteration's
    trees as LightGBM folds its init score (``Tree.bias``), and the model predicts
    ``forest.raw_score`` (LightGBM's own transform on top).

    Parameters
    ----------
    forest : Forest
        Trees with LightGBM's decision rules (or the native grower's: the same, except that a
        value with ``|x| <= 1e-35f`` is compared as it is, where LightGBM reads it as 0),
        iteration-major, ``n_outputs`` per iteration; at least one iteration.
    objective : str
        Canonical objective name: one of ``NATIVE_OBJECTIVES``.
    pandas_categorical : list of lists, optional
        The categories of each pandas categorical column, in column order (LightGBM's
        ``pandas_categorical``): a DataFrame passed to ``predict`` is coded with them.
    params : dict, optional
        Training parameters written to the model's ``parameters:`` block (e.g. ``lambda_l2``,
        ``max_delta_step``: the penalties the leaves were fit with), so that the model is read
        with them; LightGBM's defaults where absent.

    Raises
    ------
    InputError
        A feature name LightGBM refuses (``"``, ``,``, ``:``, ``[``, ``]``, ``{``, ``}``) or
        cannot read back from its own dump (a backslash, a control character).

    Warns
    -----
    UserWarning
        A numeric split of a native tree has its threshold within ``[-1e-35, 1e-35)``:
        LightGBM reads values with ``|x| <= 1e-35f`` as 0, so such rows of that feature go
        where 0 goes, which the grower's own prediction need not do.
    """
    if objective not in NATIVE_OBJECTIVES:
        raise ValueError(
            f"objective must be one of {sorted(NATIVE_OBJECTIVES)}, got {objective!r}")
    K = forest.n_outputs
    if forest.n_trees == 0 or forest.n_trees % K:
        raise ValueError(f"forest needs a positive multiple of {K} trees, has {forest.n_trees}")
    # LightGBM replaces whitespace in feature names by underscores
    names = _lightgbm_names(forest.feature_names)
    trees, banded = [], set()
    for tree in forest.trees:
        tree, near_zero = _to_lightgbm_rules(tree, forest.feature_names)
        trees.append(tree)
        banded |= near_zero
    if banded:
        warnings.warn(
            f"features {sorted(banded)} have splits with a threshold within 1e-35 of 0: "
            "LightGBM reads values with |x| <= 1e-35 as 0, so in the LightGBM model such "
            "values go where 0 goes, which this model's own predict need not do",
            UserWarning, stacklevel=3)
    for k in range(K):  # LightGBM folds the init score into the first iteration (AddBias)
        base = float(forest.base_score[k])
        if base != 0.0:
            t = trees[k]
            value = np.where(t.is_leaf, t.value + base, t.value)
            trees[k] = dataclasses.replace(t, value=value, bias=t.bias + base)
    objective_line = NATIVE_OBJECTIVES[objective](K)
    header = _native_header(forest, objective_line, names)
    # the block names the objective as LightGBM does (what booster.params, refit and a
    # continued lgb.train read): the header line's first word, the class count on its own
    lines = "".join(f"[{key}: {float(value):.17g}]\n" for key, value in (params or {}).items())
    block = (f"parameters:\n[boosting: gbdt]\n[objective: {objective_line.split()[0]}]\n"
             f"[num_class: {K}]\n{lines}end of parameters\n")
    cats = json.dumps(pandas_categorical, ensure_ascii=False) if pandas_categorical else "null"
    trailer = ("end of trees\n\nfeature_importances:\n\n" + block
               + f"\npandas_categorical:{cats}\n")
    source = LightGBMSource(text=header + trailer, params={}, objective=objective,
                            n_leaves=np.zeros(0, dtype=np.int64))
    text = model_text(source, dataclasses.replace(forest, trees=tuple(trees)))
    return lightgbm.Booster(model_str=text)
