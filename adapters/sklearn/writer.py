"""Write IR trees back as a fitted HistGradientBoosting estimator: :func:`write_model`.

The result is a deep copy of the template estimator whose predictors hold the IR's trees:
node records of scikit-learn's own dtype, numbered as the IR numbers them (root 0), with both
bitset arrays. Writing a tree that was read gives the same node records and bitsets. The
binned fields (``bin_threshold``, binned category bitsets) that scikit-learn uses on binned
data (``warm_start``, early stopping) are rebuilt from the estimator's bin edges; a binned
category set holds the missing-values bin where missing values go left and the feature had
missing values in training, as scikit-learn's do (the template's own sets of that feature
tell; a feature none of them tells of is marked wherever missing values go left, which binned
training rows without missing values cannot tell apart).
"""

from __future__ import annotations

import numpy as np
from unbiased_criteria.adapters._record import attach_written
from unbiased_criteria.adapters.sklearn import compat
from unbiased_criteria.adapters.sklearn.reader import RULES

from unbiased_criteria.trees import MISSING_NAN, Forest, Tree

__all__ = ["write_model", "tree_arrays"]

_BITS = 256


def _pack(members: list[np.ndarray]) -> np.ndarray:
    """256-bit sets as ``(n_sets, 8)`` uint32 words (bit ``c`` of word ``c // 32``)."""
    bits = np.zeros((len(members), _BITS), dtype=np.uint8)
    for i, m in enumerate(members):
        bits[i, np.asarray(m, dtype=np.int64)] = 1
    packed = np.packbits(bits, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u4").astype(np.uint32).reshape(len(members), 8)


def _bin_thresholds(tree: Tree, nodes: np.ndarray, feature: np.ndarray, edges: list,
                    n_bins: np.ndarray, index: int) -> np.ndarray:
    """The bin index of every numeric split's threshold (the last non-missing bin for ``inf``)."""
    out = np.zeros(tree.n_nodes, dtype=np.int64)
    for f in np.unique(feature[nodes]):
        at = nodes[feature[nodes] == f]
        thr = tree.threshold[at]
        e = np.asarray(edges[f], dtype=np.float64)
        pos = np.minimum(np.searchsorted(e, thr), max(e.size - 1, 0))
        nan_split = np.isposinf(thr)
        exact = e.size > 0 and np.all((e[pos] == thr) | nan_split)
        if not exact:
            raise ValueError(f"tree {index}: a threshold of feature {f} is not one of the "
                             "estimator's bin edges")
        out[at] = np.where(nan_split, n_bins[f] - 1, pos)
    return out


def tree_arrays(tree: Tree, index: int, model, st: compat.HGBState | None = None,
                marked: dict[int, bool] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One IR tree as ``(nodes, binned_left_cat_bitsets, raw_left_cat_bitsets)``;
    ``marked``: :func:`.compat.missing_bin_marked` of ``model``."""
    if tree.rules != RULES:
        raise ValueError(f"tree {index} does not use HistGradientBoosting's decision rules")
    st = st or compat.state(model)
    marked = compat.missing_bin_marked(model) if marked is None else marked
    leaf = tree.is_leaf
    inner = tree.internal_nodes
    if np.any(tree.missing[inner] != MISSING_NAN):
        raise ValueError(f"tree {index}: HistGradientBoosting sends only NaN to the "
                         "missing side")
    if not np.all(np.isfinite(tree.value[leaf])):
        raise ValueError(f"tree {index} has a leaf without a finite value")
    if np.any(tree.host_count < 0):
        raise ValueError(f"tree {index}: every node needs its training row count "
                         "(host_count), which HistGradientBoosting's partial dependence reads")
    tree_feature = np.zeros(st.n_features, dtype=np.int64)
    tree_feature[st.columns] = np.arange(st.n_features)
    feature = np.where(leaf, 0, tree_feature[np.maximum(tree.feature, 0)])
    cat = tree.categorical & ~leaf
    edges, n_bins, missing_bin = compat.bin_layout(model)

    nodes = np.zeros(tree.n_nodes, dtype=compat.node_dtype(model))
    nodes["value"] = tree.value
    nodes["count"] = tree.host_count
    nodes["feature_idx"] = feature
    nodes["num_threshold"] = np.where(leaf | cat, 0.0, tree.threshold)
    nodes["missing_go_to_left"] = tree.default_left
    nodes["left"] = np.where(leaf, 0, tree.left)
    nodes["right"] = np.where(leaf, 0, tree.right)
    nodes["gain"] = np.where(np.isnan(tree.host_gain), -1.0, tree.host_gain)
    nodes["depth"] = tree.depth
    nodes["is_leaf"] = leaf
    nodes["is_categorical"] = cat
    numeric = inner[~cat[inner]]
    nodes["bin_threshold"] = _bin_thresholds(tree, numeric, feature, edges, n_bins, index)

    cat_nodes = np.flatnonzero(cat)
    nodes["bitset_idx"][cat_nodes] = np.arange(cat_nodes.size)
    raw_sets = [tree.category_set(v) for v in cat_nodes]
    binned_sets = []
    for v, members in zip(cat_nodes, raw_sets):
        known = np.asarray(edges[feature[v]], dtype=np.float64)
        bins = np.flatnonzero(np.isin(known, members))
        if tree.default_left[v] and marked.get(int(feature[v]), True):
            bins = np.append(bins, missing_bin)
        binned_sets.append(bins)
    return nodes, _pack(binned_sets), _pack(raw_sets)


def write_model(model, forest: Forest, split_score=None, pruned_on: tuple[str, ...] = ()):
    """A new fitted estimator holding ``forest``'s trees; ``model`` is unchanged.

    Parameters
    ----------
    model : fitted HistGradientBoostingRegressor or HistGradientBoostingClassifier
        The template: everything but the predictors is copied (``train_score_`` and
        ``validation_score_`` still describe the template's training).
    forest : Forest
        Trees with HistGradientBoosting's rules (as :func:`read_model` and
        :func:`unbiased_criteria.trees.collapse_nodes` give), ``n_trees_per_iteration_`` trees
        per iteration in class order, the template's baseline and features. Every node needs
        its row count (``host_count``) and every numeric threshold must be one of the
        estimator's bin edges (both hold for trees read from it and pruned).
    split_score : SplitScore, optional
        Ignored: the estimator keeps its own parameters.
    pruned_on : tuple of str
        Digests of the held-out rows that pruned the trees (:attr:`Model.pruned_on`), kept
        with the new estimator (and its pickles and deep copies) for these trees: a re-fit
        of the estimator drops them.

    Returns
    -------
    A fitted estimator of ``model``'s class; it pickles and passes ``check_is_fitted``.
    """
    compat.check_estimator(model)
    st = compat.state(model)
    n_outputs = st.baseline.size
    if forest.n_features != st.n_features:
        raise ValueError(f"forest has {forest.n_features} features, the model {st.n_features}")
    if forest.n_outputs != n_outputs or not np.array_equal(forest.base_score, st.baseline):
        raise ValueError("forest's base scores differ from the estimator's baseline")
    expected_class = np.tile(np.arange(n_outputs), forest.n_trees // max(n_outputs, 1))
    expected_iter = np.repeat(np.arange(forest.n_trees // max(n_outputs, 1)), n_outputs)
    if (forest.n_trees % n_outputs or not np.array_equal(forest.tree_class, expected_class)
            or not np.array_equal(forest.tree_iteration, expected_iter)):
        raise ValueError(f"forest must hold {n_outputs} tree(s) per iteration, in class order")
    marked = compat.missing_bin_marked(model)
    arrays = [tree_arrays(t, i, model, st, marked) for i, t in enumerate(forest.trees)]
    predictors = [arrays[i : i + n_outputs] for i in range(0, len(arrays), n_outputs)]
    new = compat.with_predictors(model, predictors)
    attach_written(new, pruned_on, model=compat.fitted_trees(new))
    return new
