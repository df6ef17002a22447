"""XGBoost's model JSON as every part of the adapter reads it.

The facts the reader, router, writer and grower share: XGBoost's decision rules, where the
``gbtree`` model sits in the learner (the DART layouts of 3.2 and 3.4), a tree's per-node arrays,
and the map from XGBoost's node ids to IR node ids for trees with tombstones (nodes the
``prune`` updater deleted, marked by ``split_indices == 2147483647``: the IR keeps only the
reachable nodes, in increasing id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xgboost

from unbiased_criteria.model import UnsupportedModelError
from unbiased_criteria.trees import DecisionRules, Tree

#: XGBoost's routing: ``x < t`` goes left, a category in the set goes right, NaN goes to the
#: default side at categorical nodes too
RULES = DecisionRules(
    operator="<", categories_go="right", categorical_nan="default", negative_is_invalid=True
)

_DELETED = 2147483647  # split_indices of a node the prune updater deleted
#: model attribute set by the writer (pruned or refit leaves no longer fit node statistics)
_WRITTEN_ATTR = "unbiased_criteria_written"
#: model attribute set by the writer when trees were shrunk by different etas: their list
_SHRINKAGE_ATTR = "unbiased_criteria_shrinkage"
#: model attribute set by the writer: the training parameters the trees' leaves were fit with
#: (eta, lambda, alpha, max_delta_step, monotone_constraints), as JSON. A Booster loaded from
#: a file reports XGBoost's defaults, and a written model's leaves cannot tell them
_PARAMS_ATTR = "unbiased_criteria_params"
#: model attribute set by the writer of a pruned model: the sketches of the held-out row sets
#: that pruned it (Model.pruned_on), as a JSON list; saved and loaded with the model
_PRUNED_ON_ATTR = "unbiased_criteria_pruned_on"


def _booster(model: Any, argument: str = "model") -> xgboost.Booster:
    """The Booster of a Booster or a fitted ``XGBModel``."""
    if isinstance(model, xgboost.Booster):
        return model
    if isinstance(model, xgboost.XGBModel):
        # asked, not inferred from an exception: any other failure is not "not fitted"
        if not model.__sklearn_is_fitted__():
            raise ValueError(f"{argument} is not fitted: call fit or load_model first")
        return model.get_booster()
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


def _outputs(learner: Mapping) -> tuple[int, int]:
    """``(n_outputs, n_targets)`` of a model JSON's learner: one tree per output and
    iteration, an output per class (``num_class``) or per target (``num_target``)."""
    lmp = learner["learner_model_param"]
    n_target = int(lmp.get("num_target", 1))
    return max(int(lmp.get("num_class", 0)), n_target, 1), n_target


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


def _reachable(left: np.ndarray, right: np.ndarray, index: int = 0) -> np.ndarray:
    """Mask of the nodes reachable from the root, level by level, checking the children first.

    XGBoost's loader does not check them: a child below -1 is taken for a leaf and crashes
    ``pred_leaf``, a child past the last node reads out of bounds. Each level costs one test
    of all its faults at once (the first offender is found only when there is one), and a
    node reached twice shows as a level that marks fewer new nodes than it holds (no sort).
    A tree whose ids prove that every node is reached once (:func:`_every_node_reached`, every
    tree XGBoost grew and did not prune) needs no walk: 10 array operations instead of one
    loop step per level.
    """
    n = left.size
    if n == 0 or right.size != n:
        raise ValueError(f"tree {index}: left_children and right_children have {n} and "
                         f"{right.size} entries")
    if _every_node_reached(left, right):
        return np.ones(n, dtype=bool)
    return _walk(left, right, index)


def _walk(left: np.ndarray, right: np.ndarray, index: int) -> np.ndarray:
    """:func:`_reachable`'s walk from the root, level by level."""
    n = left.size
    seen = np.zeros(n, dtype=bool)
    level = np.zeros(1, dtype=np.int64)
    marked = 0
    while level.size:
        again = seen[level]
        seen[level] = True
        marked += level.size
        if again.any() or np.count_nonzero(seen) != marked:
            v = level[again][0] if again.any() else int(np.argmax(np.bincount(level)))
            raise ValueError(f"tree {index}, node {v}: left_children/right_children reach it "
                             "twice (a cycle or a shared child)")
        lc, rc = left[level], right[level]
        if (np.minimum(lc, rc).min() < -1 or np.maximum(lc, rc).max() >= n
                or ((lc == -1) != (rc == -1)).any()):
            _child_fault(level, lc, rc, left, right, n, index)
        inner = lc >= 0
        level = np.concatenate([lc[inner], rc[inner]])
    return seen


def _every_node_reached(left: np.ndarray, right: np.ndarray) -> bool:
    """Whether every node is reached once from the root, without a walk: true when each
    node has both children or none (-1 each), every child's id exceeds its parent's
    (XGBoost numbers a node's children after it, so a tree it grew and never pruned
    qualifies) and every node but the root is exactly one node's child. Then each node's
    one parent has a smaller id, so by induction on the ids the root reaches all of them,
    once each; no cycle, no id out of range. Otherwise (tombstones, faults) the caller walks."""
    n = left.size
    inner = left >= 0
    if not (np.array_equal(inner, right >= 0) and left.min() >= -1 and right.min() >= -1):
        return False
    ids = np.arange(n)
    lc, rc = left[inner], right[inner]
    if lc.size != n // 2 or not ((lc > ids[inner]).all() and (rc > ids[inner]).all()
                                 and max(lc.max(initial=0), rc.max(initial=0)) < n):
        return False
    parents = np.bincount(lc, minlength=n) + np.bincount(rc, minlength=n)
    return bool(parents[0] == 0 and (parents[1:] == 1).all())


def _child_fault(level, lc, rc, left, right, n: int, index: int) -> None:
    """Raise for the first faulty node of ``level``: a child outside -1..n-1, or one child."""
    for key, child in (("left_children", lc), ("right_children", rc)):
        bad = np.flatnonzero((child < -1) | (child >= n))
        if bad.size:
            raise ValueError(f"tree {index}, node {level[bad[0]]}: {key} is "
                             f"{child[bad[0]]}, outside -1..{n - 1}")
    v = level[np.flatnonzero((lc == -1) != (rc == -1))[0]]
    raise ValueError(f"tree {index}, node {v}: left_children is {left[v]} and "
                     f"right_children {right[v]}: a node has two children or none")


def _tree_arrays(tree: Mapping, index: int) -> dict[str, np.ndarray]:
    """The per-node arrays of one tree JSON, checked for length, and ``reached``: the nodes
    reachable from the root (:func:`_reachable`)."""
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
    # the layout code and XGBoost's pred_leaf index with these: check them first
    reached = _reachable(arrays["left"], arrays["right"], index)
    inner = np.flatnonzero(reached & (arrays["left"] >= 0))
    split = arrays["split"][inner]
    n_features = int(param.get("num_feature", 0))
    bad = np.flatnonzero((split < 0) | ((split >= n_features) & (split != _DELETED)))
    if bad.size and n_features > 0:
        raise ValueError(f"tree {index}, node {inner[bad[0]]}: split_indices is "
                         f"{split[bad[0]]}, outside 0..{n_features - 1}")
    arrays["reached"] = reached
    return arrays


def _node_map(tree: Mapping, index: int = 0, keep: np.ndarray | None = None
              ) -> np.ndarray | None:
    """XGBoost node id -> IR node id for a tree with tombstones (-1 = dropped), else None.
    ``keep``: the reachable nodes when already known (:func:`_tree_arrays`)."""
    if keep is None:
        left = np.asarray(tree["left_children"], dtype=np.int64)
        right = np.asarray(tree["right_children"], dtype=np.int64)
        keep = _reachable(left, right, index)
    if keep.all():
        return None
    new_id = np.full(keep.size, -1, dtype=np.int32)
    new_id[keep] = np.arange(int(keep.sum()), dtype=np.int32)
    return new_id


def _read_node_map(tree: Mapping, read: Tree, index: int = 0) -> np.ndarray | None:
    """:func:`_node_map` of a tree JSON already read into the IR tree ``read``: None without
    another walk when the IR kept every node of the JSON (no tombstone to map)."""
    if len(tree["left_children"]) == read.n_nodes:
        return None
    return _node_map(tree, index)
