"""Read a fitted HistGradientBoosting estimator into the IR: :func:`read_model`.

IR node ids are the predictors' node ids (depth-first, node 0 the root). IR feature indices are
the estimator's *input* columns (the trees count the categorical columns first when a
preprocessor ordinal-encodes them; :mod:`.compat` maps them back). Leaves keep the stored
values, which already include the learning rate (``Tree.shrinkage``); internal nodes keep the
stored (unshrunk) node value ``-G/(H + l2)``, 0 at the root, which no prediction reads. A leaf
keeps in ``host_gain`` the stored gain of the best split the grower found there but did not make
(``max_leaf_nodes`` reached), NaN where it found none.

Host facts (scikit-learn 1.9, ``splitting.pyx`` and ``grower.py``):

* the stored ``gain`` is on the hosts' scale, without the 1/2:
  ``G_L²/(H_L + l2) + G_R²/(H_R + l2) − G²/(H + l2)`` (``+ 1e-15`` in every denominator),
  with ``l2 = l2_regularization``; **except at the root**, which the grower scores from a
  node value of 0, so the root's stored gain lacks the parent term: it is ``B + G²/(H + l2)``
  (``G``, ``H`` the root's sums);
* leaves hold ``-learning_rate * G/(H + l2)``; ``count`` is the node's number of training
  rows; node hessian sums are not stored (``host_hessian`` is NaN);
* a numeric node sends ``x`` left iff ``x <= num_threshold`` (``inf`` for a split that
  separates the missing values), NaN to the ``missing_go_to_left`` side; a categorical node
  sends the categories of its bitset left, the other known categories right, and NaN,
  negative and unknown categories to the ``missing_go_to_left`` side (for the IR's router,
  :func:`.router.tree_matrix` turns the last two into NaN).
"""

from __future__ import annotations

import numpy as np
from unbiased_criteria.adapters._record import pruned_on_of
from unbiased_criteria.adapters.sklearn import compat
from unbiased_criteria.adapters.sklearn.objectives import core_objective

from unbiased_criteria.gains import SplitScore
from unbiased_criteria.model import Model
from unbiased_criteria.trees import MISSING_NAN, DecisionRules, Forest, Tree, make_tree

__all__ = ["RULES", "read_model", "bitset_values"]

#: HistGradientBoosting's routing on raw (preprocessed) values; unknown and negative
#: categories are NaN by then
RULES = DecisionRules(operator="<=", categories_go="left", categorical_nan="default",
                      negative_is_invalid=True)


def bitset_values(bitsets: np.ndarray) -> list[np.ndarray]:
    """The members of every 256-bit set, ``(n_sets, 8)`` uint32 words, bit ``c`` of word
    ``c // 32`` for value ``c``."""
    words = np.ascontiguousarray(np.asarray(bitsets).astype("<u4"))
    if words.size == 0:
        return []
    bits = np.unpackbits(words.view(np.uint8).reshape(words.shape[0], -1), axis=1,
                         bitorder="little")
    return [np.flatnonzero(b) for b in bits]


def _read_tree(nodes: np.ndarray, raw_bitsets: np.ndarray, columns: np.ndarray,
               shrinkage: float) -> Tree:
    leaf = nodes["is_leaf"].astype(bool)
    cat = nodes["is_categorical"].astype(bool) & ~leaf
    sets = bitset_values(raw_bitsets)
    cat_sets = {int(i): sets[int(nodes["bitset_idx"][i])] for i in np.flatnonzero(cat)}
    return make_tree(
        np.where(leaf, -1, nodes["left"].astype(np.int64)),
        np.where(leaf, -1, nodes["right"].astype(np.int64)),
        np.where(leaf, -1, columns[nodes["feature_idx"].astype(np.int64)]),
        np.where(leaf | cat, np.nan, nodes["num_threshold"]),
        nodes["value"],
        default_left=nodes["missing_go_to_left"].astype(bool),
        missing=np.full(leaf.size, MISSING_NAN, dtype=np.int8),
        categorical=cat,
        cat_sets=cat_sets,
        # a leaf keeps the gain of the split the grower found but did not make (-1: none)
        host_gain=np.where(leaf & (nodes["gain"] == -1), np.nan, nodes["gain"]),
        host_hessian=None,
        host_count=nodes["count"],
        shrinkage=shrinkage,
        bias=0.0,
        rules=RULES,
    )


def _monotonic(model, names: tuple[str, ...]) -> tuple[int, ...]:
    """``monotonic_cst`` per feature (a list, or a dict by feature name), or ()."""
    mono = getattr(model, "monotonic_cst", None)
    if mono is None:
        return ()
    if isinstance(mono, dict):
        found = tuple(int(mono.get(name, 0)) for name in names)
    else:
        found = tuple(int(v) for v in np.asarray(mono).ravel())
    return found if any(found) else ()


def _notes() -> tuple[str, ...]:
    """What to say that gives the gains no reason to differ from the stored ones."""
    if compat.version_verified():
        return ()
    return (f"scikit-learn {compat.sklearn.__version__} was not verified with this adapter "
            f"(verified: {', '.join(compat.VERIFIED_VERSIONS)}); its layout matched",)


def _warnings(model) -> tuple[str, ...]:
    """Why the recomputed gains and counts may differ from the stored ones."""
    out = []
    mono = getattr(model, "monotonic_cst", None)
    if mono is not None and (isinstance(mono, dict) and any(mono.values())
                             or not isinstance(mono, dict) and np.any(np.asarray(mono) != 0)):
        out.append("monotonic constraints clip node values: recomputed gains may not match "
                   "the stored ones (the unbiased gain stays valid)")
    if (getattr(model, "do_early_stopping_", False) and model.validation_fraction is not None
            and len(getattr(model, "validation_score_", ())) > 0):
        out.append(
            f"the estimator stopped early on validation data (validation_fraction="
            f"{model.validation_fraction:g}): unless X_val was passed to fit, its trees were "
            "grown on a random part of the fitted rows only, and stored counts and gains "
            "match those rows alone"
        )
    return tuple(out)


def read_model(model) -> Model:
    """Read a fitted ``HistGradientBoostingRegressor`` / ``Classifier`` into the IR.

    Parameters
    ----------
    model : fitted sklearn.ensemble.HistGradientBoostingRegressor or
        HistGradientBoostingClassifier
        Read, never modified. All ``n_iter_`` iterations (early stopping keeps them all).

    Returns
    -------
    Model
        ``host`` is ``"sklearn"``; ``forest.base_score`` is ``_baseline_prediction``;
        ``split_score.l2`` is ``l2_regularization``; every tree's ``shrinkage`` is
        ``learning_rate``; feature names are ``feature_names_in_`` or ``x0, x1, ...``.

    Raises
    ------
    TypeError
        ``model`` is not a HistGradientBoosting estimator (another scikit-learn estimator,
        a Pipeline).
    ValueError
        ``model`` is not fitted.
    UnsupportedModelError
        A loss the adapter does not know.
    unbiased_criteria.adapters._compat.HostVersionError
        A scikit-learn whose private layout the adapter does not know.
    """
    compat.check_estimator(model)
    st = compat.state(model)
    n_outputs = st.baseline.size
    trees, classes, iterations = [], [], []
    for i, iteration in enumerate(st.predictors):
        if len(iteration) != n_outputs:
            raise ValueError(f"iteration {i} has {len(iteration)} trees, expected {n_outputs}")
        for k, (nodes, raw_bitsets) in enumerate(iteration):
            trees.append(_read_tree(nodes, raw_bitsets, st.columns, st.learning_rate))
            classes.append(k)
            iterations.append(i)
    forest = Forest(
        trees=tuple(trees),
        tree_class=np.asarray(classes, dtype=np.int64),
        tree_iteration=np.asarray(iterations, dtype=np.int64),
        base_score=st.baseline,
        n_features=st.n_features,
        feature_names=st.feature_names,
        score_dtype=np.float64,
    )
    return Model(
        forest=forest,
        objective=core_objective(st.loss, n_outputs, st.quantile),
        split_score=SplitScore(l2=st.l2_regularization,
                               monotone=_monotonic(model, st.feature_names)),
        host="sklearn",
        warnings=(said := _warnings(model)),
        gain_only=said,  # both say why the training rows' gains differ, nothing else
        notes=_notes(),
        source=st,
        # class_weight multiplied the training weights: the core weights the rows alike
        class_weight=_class_weight(model),
        pruned_on=pruned_on_of(model, compat.fitted_trees(model)),
    )


def _class_weight(model) -> dict | str | None:
    """The classifier's ``class_weight`` keyed by its labels: scikit-learn applies a dict to
    the encoded labels 0..K-1 (``_finalize_sample_weight`` after ``_encode_y``), so its keys
    are class indices."""
    class_weight = getattr(model, "class_weight", None)
    if not isinstance(class_weight, dict):
        return class_weight
    classes = np.asarray(model.classes_)
    return {classes[int(k)].item(): v for k, v in class_weight.items()
            if 0 <= int(k) < classes.size}
