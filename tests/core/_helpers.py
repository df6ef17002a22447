"""Shared test helpers: random trees in the IR and a plain per-row reference walk.

The reference walk is written from the IR's documented rules (trees.py module docstring,
``DecisionRules``) and the hosts' C++ decision functions, one row and one node at a time, so
that it shares no code with the vectorised ``route_rows``.
"""

from __future__ import annotations

import math

import numpy as np

from unbiased_criteria.trees import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    DecisionRules,
    Tree,
    make_tree,
)

LIGHTGBM_RULES = DecisionRules(operator="<=", categories_go="left", categorical_nan="other")
XGBOOST_RULES = DecisionRules(
    operator="<", categories_go="right", categorical_nan="default", negative_is_invalid=True
)

#: numeric thresholds are drawn from this grid, so rows hit them exactly
NUMERIC_GRID = np.array([-2.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0])
#: extra numeric row values: signed zeros, values inside and outside the zero tolerance
NUMERIC_EXTRA = np.array([-0.0, 1e-36, -1e-36, 1e-30, -1e-30, 3.0, -3.0, np.inf, -np.inf])
#: categorical row values: codes, fractional codes (truncated), negative, unseen, NaN
CATEGORY_POOL = np.array(
    [0, 1, 2, 3, 4, 5, 6, 7, 2.9, 3.5, 7.99, 40, 100, 1e12, -1, -3, -1.5, np.nan]
)
N_NUMERIC, N_CATEGORICAL = 3, 2


def random_structure(rng: np.random.Generator, n_internal: int):
    """Random binary tree shape with ``n_internal`` splits; ids shuffled (root stays 0)."""
    children: dict[int, tuple[int, int]] = {}
    leaves = [0]
    n = 1
    for _ in range(n_internal):
        node = leaves.pop(int(rng.integers(len(leaves))))
        children[node] = (n, n + 1)
        leaves += [n, n + 1]
        n += 2
    relabel = np.concatenate([[0], 1 + rng.permutation(n - 1)])
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    for node, (a, b) in children.items():
        left[relabel[node]] = relabel[a]
        right[relabel[node]] = relabel[b]
    return left, right


def random_tree(
    rng: np.random.Generator,
    n_internal: int,
    rules: DecisionRules = LIGHTGBM_RULES,
    categorical: bool = True,
) -> Tree:
    """A random tree on ``N_NUMERIC`` numeric then ``N_CATEGORICAL`` categorical features."""
    left, right = random_structure(rng, n_internal)
    n = left.size
    inner = left >= 0
    n_feat = N_NUMERIC + (N_CATEGORICAL if categorical else 0)
    feature = np.where(inner, rng.integers(0, n_feat, n), -1)
    is_cat = inner & (feature >= N_NUMERIC)
    threshold = np.where(inner & ~is_cat, rng.choice(NUMERIC_GRID, n), np.nan)
    value = np.where(inner, np.nan, np.round(rng.normal(size=n), 3))
    cat_sets = {
        int(i): rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 40], int(rng.integers(1, 5)), replace=False)
        for i in np.flatnonzero(is_cat)
    }
    return make_tree(
        left,
        right,
        feature,
        threshold,
        value,
        default_left=rng.random(n) < 0.5,
        missing=rng.choice([MISSING_NONE, MISSING_ZERO, MISSING_NAN], n),
        categorical=is_cat,
        cat_sets=cat_sets,
        l2_extra=np.where(inner & (rng.random(n) < 0.3), rng.uniform(0, 3, n), 0.0),
        rules=rules,
    )


def random_X(rng: np.random.Generator, n: int, categorical: bool = True) -> np.ndarray:
    """Rows mixing grid values (exact ties with thresholds), extras, NaN and noise."""
    numeric_pool = np.concatenate([NUMERIC_GRID, NUMERIC_EXTRA, [np.nan]])
    cols = []
    for _ in range(N_NUMERIC):
        col = rng.choice(numeric_pool, n)
        noisy = rng.random(n) < 0.3
        col[noisy] = rng.normal(scale=1.5, size=noisy.sum())
        cols.append(col)
    if categorical:
        for _ in range(N_CATEGORICAL):
            cols.append(rng.choice(CATEGORY_POOL, n))
    return np.column_stack(cols)


def reference_go_left(tree: Tree, node: int, v: float) -> bool:
    """Direction of one value at one internal node, written from the documented rules."""
    rules = tree.rules
    default_left = bool(tree.default_left[node])
    if tree.categorical[node]:
        set_left = rules.categories_go == "left"
        if math.isnan(v):
            if rules.categorical_nan == "default":
                return default_left
            return not set_left
        code = math.trunc(v)  # 2.9 -> 2, like the hosts' cast to int
        member = code >= 0 and code in {int(c) for c in tree.category_set(node)}
        return set_left if member else not set_left
    missing = int(tree.missing[node])
    if math.isnan(v):
        if missing == MISSING_NONE:
            v = 0.0
        else:
            return default_left
    if missing == MISSING_ZERO and abs(v) <= 1e-35:
        return default_left
    t = float(tree.threshold[node])
    return v <= t if rules.operator == "<=" else v < t


def reference_path(tree: Tree, x: np.ndarray) -> list[int]:
    """Nodes visited by row ``x`` from the root to its leaf."""
    node, path = 0, [0]
    while tree.left[node] >= 0:
        v = float(x[tree.feature[node]])
        node = int(tree.left[node] if reference_go_left(tree, node, v) else tree.right[node])
        path.append(node)
    return path


def reference_leaves(tree: Tree, X: np.ndarray) -> np.ndarray:
    return np.array([reference_path(tree, x)[-1] for x in X], dtype=np.int64)


def reference_membership(tree: Tree, X: np.ndarray) -> np.ndarray:
    """``M[i, v]`` is True iff row ``i``'s path passes through node ``v``."""
    M = np.zeros((X.shape[0], tree.n_nodes), dtype=bool)
    for i, x in enumerate(X):
        M[i, reference_path(tree, x)] = True
    return M


def one_split_tree(threshold: float = 0.5, feature: int = 0) -> Tree:
    """Root 0 splits numeric ``feature`` at ``threshold`` (``<=`` goes left); leaves 1, 2."""
    return make_tree([1, -1, -1], [2, -1, -1], [feature, -1, -1], [threshold, np.nan, np.nan],
                     [np.nan, 0.0, 0.0])
