"""The tree IR: construction checks, routing, node sums and collapsing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from unbiased_criteria.trees import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    DecisionRules,
    check_tree,
    collapse_nodes,
    leaf_of_nodes,
    make_tree,
    route_rows,
)

from ._helpers import (
    LIGHTGBM_RULES,
    XGBOOST_RULES,
    random_structure,
    random_tree,
    random_X,
    reference_leaves,
    reference_membership,
    reference_path,
)

ALL_RULES = [
    LIGHTGBM_RULES,
    XGBOOST_RULES,
    DecisionRules(operator="<", categories_go="left", categorical_nan="default"),
    DecisionRules(operator="<=", categories_go="right", categorical_nan="other"),
]
RULE_IDS = ["lightgbm", "xgboost", "lt-left-default", "le-right-other"]

NAN = np.nan


# --------------------------------------------------------------------------- make / check


def good_arrays():
    """0 -> (1, 2), 1 -> (3, 4): a valid tree as keyword arrays."""
    return dict(
        left=[1, 3, -1, -1, -1],
        right=[2, 4, -1, -1, -1],
        feature=[0, 1, -1, -1, -1],
        threshold=[0.5, 1.5, NAN, NAN, NAN],
        value=[NAN, NAN, 1.0, 2.0, 3.0],
    )


def test_good_tree_passes():
    tree = make_tree(**good_arrays())
    check_tree(tree)
    assert tree.n_nodes == 5 and tree.n_leaves == 3
    assert list(tree.parent) == [-1, 0, 0, 1, 1]
    assert list(tree.depth) == [0, 1, 1, 2, 2]


BROKEN = {
    # nodes 3 and 4 are leaves that no node points to
    "orphan": dict(left=[1, -1, -1, -1, -1], right=[2, -1, -1, -1, -1],
                   feature=[0, -1, -1, -1, -1], value=[NAN, 1.0, 2.0, 3.0, 4.0]),
    # node 3 is the left child of both 1 and 2
    "two parents": dict(
        left=[1, 3, 3, -1, -1], right=[2, 4, 4, -1, -1], feature=[0, 1, 1, -1, -1],
        threshold=[0.5, 1.5, 1.5, NAN, NAN], value=[NAN, NAN, NAN, 2.0, 3.0],
    ),
    # node 1 has a left child and no right child
    "one child": dict(left=[1, 3, -1, -1, -1], right=[2, -1, -1, -1, -1]),
    # nodes 3 -> (4, 5), 4 -> (3, 6) form a cycle that the root never reaches: every node
    # still has exactly one parent and the child ids are in range
    "unreachable": dict(
        left=[1, -1, -1, 4, 3, -1, -1], right=[2, -1, -1, 5, 6, -1, -1],
        feature=[0, -1, -1, 1, 1, -1, -1], threshold=[0.5, NAN, NAN, 1.0, 1.0, NAN, NAN],
        value=[NAN, 1.0, 2.0, NAN, NAN, 3.0, 4.0],
    ),
    "numeric node without threshold": dict(threshold=[0.5, NAN, NAN, NAN, NAN]),
    "internal node without feature": dict(feature=[0, -1, -1, -1, -1]),
    "leaf without value": dict(value=[NAN, NAN, 1.0, NAN, 3.0]),
    "child id out of range": dict(left=[1, 3, -1, -1, -1], right=[2, 5, -1, -1, -1]),
    "root as a child": dict(left=[1, 0, -1, -1, -1], right=[2, 4, -1, -1, -1]),
    "wrong shape": dict(feature=[0, 1, -1, -1]),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_make_tree_rejects(case):
    kwargs = {**good_arrays(), **BROKEN[case]}
    with pytest.raises(ValueError):
        make_tree(**kwargs)


def test_make_tree_reject_messages():
    base = good_arrays()
    with pytest.raises(ValueError, match="exactly one child"):
        make_tree(**{**base, **BROKEN["one child"]})
    with pytest.raises(ValueError, match="one parent"):
        make_tree(**{**base, **BROKEN["two parents"]})
    with pytest.raises(ValueError, match="one parent"):
        make_tree(**{**base, **BROKEN["orphan"]})
    with pytest.raises(ValueError, match="reachable"):
        make_tree(**{**base, **BROKEN["unreachable"]})
    with pytest.raises(ValueError, match="threshold"):
        make_tree(**{**base, **BROKEN["numeric node without threshold"]})


def test_categorical_node_needs_no_threshold():
    kw = good_arrays()
    kw["threshold"] = [NAN, 1.5, NAN, NAN, NAN]
    tree = make_tree(**kw, cat_sets={0: [1, 3]})
    assert tree.categorical.tolist() == [True, False, False, False, False]
    assert tree.category_set(0).tolist() == [1, 3]


@pytest.mark.parametrize("case", ["one child", "two parents", "unreachable",
                                  "numeric node without threshold", "orphan"])
def test_check_tree_rejects_a_tree_built_around_make_tree(case):
    """check_tree alone catches a broken tree (e.g. one built with dataclasses.replace)."""
    kw = {**good_arrays(), **BROKEN[case]}
    n = len(kw["left"])
    # a valid tree of the same size, then its arrays swapped for the broken ones
    left = [1, 3, 5, -1, -1, -1, -1][:n] if n == 7 else [1, 3, -1, -1, -1]
    right = [2, 4, 6, -1, -1, -1, -1][:n] if n == 7 else [2, 4, -1, -1, -1]
    inner = np.array(left) >= 0
    good = make_tree(left, right, np.where(inner, 0, -1), np.where(inner, 0.0, NAN),
                     np.where(inner, NAN, 1.0))
    bad = dataclasses.replace(
        good,
        left=np.array(kw["left"], np.int32), right=np.array(kw["right"], np.int32),
        feature=np.array(kw["feature"], np.int32),
        threshold=np.array(kw["threshold"], np.float64),
        value=np.array(kw["value"], np.float64),
    )
    with pytest.raises(ValueError):
        check_tree(bad)


def test_make_tree_copies_and_freezes_inputs():
    kw = good_arrays()
    left = np.array(kw.pop("left"))
    tree = make_tree(left, **kw)
    left[0] = 2
    assert tree.left[0] == 1
    with pytest.raises(ValueError):
        tree.left[0] = 2


# --------------------------------------------------------------------------- routing


@pytest.mark.parametrize("rules", ALL_RULES, ids=RULE_IDS)
@pytest.mark.parametrize("seed", range(8))
def test_route_rows_matches_reference_walk(rules, seed):
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_internal=int(rng.integers(1, 25)), rules=rules)
    X = random_X(rng, 400)
    got = route_rows(tree, X)
    want = reference_leaves(tree, X)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"row {bad[:1]} x={X[bad[:1]]} got {got[bad[:1]]} want {want[bad[:1]]}"
    assert tree.is_leaf[got].all()
    np.testing.assert_array_equal(tree.predict(X), tree.value[want])


def _numeric_stump(threshold, missing, default_left, operator):
    return make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [threshold, NAN, NAN],
                     [NAN, -1.0, 1.0], missing=[missing, MISSING_NAN, MISSING_NAN],
                     default_left=[default_left, False, False],
                     rules=DecisionRules(operator=operator))


@pytest.mark.parametrize(
    "operator, x, threshold, missing, default_left, goes_left",
    [
        ("<=", 1.0, 1.0, MISSING_NAN, False, True),   # tie goes left with <=
        ("<", 1.0, 1.0, MISSING_NAN, True, False),    # tie goes right with <
        ("<", np.nextafter(1.0, 0), 1.0, MISSING_NAN, False, True),
        ("<=", np.nextafter(1.0, 2), 1.0, MISSING_NAN, True, False),
        ("<=", NAN, 0.5, MISSING_NAN, True, True),     # NaN -> default side
        ("<=", NAN, 0.5, MISSING_NAN, False, False),
        ("<=", NAN, 0.5, MISSING_NONE, False, True),   # NONE: NaN read as 0.0 <= 0.5
        ("<=", NAN, -0.5, MISSING_NONE, True, False),  # NONE: 0.0 > -0.5, default ignored
        ("<", NAN, 0.0, MISSING_NONE, True, False),    # NONE: 0.0 < 0.0 is false
        ("<=", 0.0, 0.5, MISSING_ZERO, False, False),  # ZERO: 0 -> default (right)
        ("<=", 1e-36, -1.0, MISSING_ZERO, True, True),  # |x| <= 1e-35 is zero
        ("<=", -1e-36, 1.0, MISSING_ZERO, False, False),
        ("<=", 1e-30, -1.0, MISSING_ZERO, True, False),  # outside the zero tolerance
        ("<=", NAN, 0.5, MISSING_ZERO, False, False),  # ZERO: NaN -> default too
        ("<=", 0.0, 0.5, MISSING_NAN, False, True),    # NAN: a zero is an ordinary value
        ("<=", -np.inf, 0.0, MISSING_NAN, False, True),
        ("<", np.inf, 0.0, MISSING_NAN, True, False),
    ],
)
def test_numeric_rules(operator, x, threshold, missing, default_left, goes_left):
    tree = _numeric_stump(threshold, missing, default_left, operator)
    want = 1 if goes_left else 2
    assert route_rows(tree, np.array([[x]]))[0] == want
    assert reference_path(tree, np.array([x]))[-1] == want  # the reference agrees


def _category_stump(rules, cats=(0, 2, 5), default_left=False):
    return make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], None, [NAN, -1.0, 1.0],
                     cat_sets={0: list(cats)}, default_left=[default_left, False, False],
                     rules=rules)


# member -> set side; non-members (including negative, unseen, huge) -> the other side
CATEGORY_CASES = [(2.0, True), (2.9, True), (5.0, True), (0.0, True), (1.0, False),
                  (1.99, False), (3.0, False), (6.0, False), (100.0, False), (1e12, False),
                  (-1.0, False), (-2.0, False), (-1.5, False), (-3.0, False)]


@pytest.mark.parametrize("x, member", CATEGORY_CASES)
def test_categories_go_left_lightgbm(x, member):
    tree = _category_stump(LIGHTGBM_RULES)
    assert route_rows(tree, np.array([[x]]))[0] == (1 if member else 2)


@pytest.mark.parametrize("x, member", CATEGORY_CASES)
def test_categories_go_right_xgboost(x, member):
    tree = _category_stump(XGBOOST_RULES)
    assert route_rows(tree, np.array([[x]]))[0] == (2 if member else 1)


@pytest.mark.parametrize("default_left", [True, False])
def test_categorical_nan(default_left):
    # LightGBM: NaN is a non-member (goes right whatever default_left says)
    lgb = _category_stump(LIGHTGBM_RULES, default_left=default_left)
    assert route_rows(lgb, np.array([[NAN]]))[0] == 2
    # XGBoost: NaN takes the default side
    xgb = _category_stump(XGBOOST_RULES, default_left=default_left)
    assert route_rows(xgb, np.array([[NAN]]))[0] == (1 if default_left else 2)


def test_lightgbm_fraction_between_minus_one_and_zero_is_category_zero():
    # LightGBM's CategoricalDecision: int_fval = static_cast<int>(-0.5) == 0, not < 0, so the
    # row is looked up as category 0
    tree = _category_stump(LIGHTGBM_RULES, cats=(0,))
    assert route_rows(tree, np.array([[-0.5]]))[0] == 1


def test_xgboost_fraction_between_minus_one_and_zero_is_not_a_member():
    # xgboost/src/common/categorical.h: InvalidCat(cat) = cat < 0 || cat >= kMaxCat, checked
    # on the float; an invalid category goes to the non-member (left) side. Checked with
    # xgboost 3.2.0: a one-split model with set {0} sends 0.0 and 0.5 right, -0.5 left
    # (pred_leaf); LightGBM 4.7 sends -0.5 with category 0, as the IR does
    tree = _category_stump(XGBOOST_RULES, cats=(0,))
    assert route_rows(tree, np.array([[-0.5]]))[0] == 1


def test_empty_category_set_and_no_categorical_nodes():
    tree = _category_stump(LIGHTGBM_RULES, cats=())
    X = np.array([[0.0], [3.0], [NAN], [-1.0]])
    np.testing.assert_array_equal(route_rows(tree, X), [2, 2, 2, 2])


def test_route_rows_accepts_integer_and_float32_input():
    rng = np.random.default_rng(7)
    tree = random_tree(rng, 10, categorical=False)
    X = rng.integers(-3, 4, size=(100, 3))
    np.testing.assert_array_equal(route_rows(tree, X), reference_leaves(tree, X.astype(float)))
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(route_rows(tree, X32), route_rows(tree, X))


def test_single_leaf_tree_routes_everything_to_root():
    tree = make_tree([-1], [-1], [-1], None, [0.25])
    np.testing.assert_array_equal(route_rows(tree, np.zeros((4, 2))), [0, 0, 0, 0])


# --------------------------------------------------------------------------- node sums


@pytest.mark.parametrize("seed", range(6))
def test_node_sums_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    tree = random_tree(rng, int(rng.integers(1, 30)))
    X = random_X(rng, 300)
    M = reference_membership(tree, X)  # rows x nodes
    leaves = route_rows(tree, X)
    v = rng.normal(size=300)
    V = rng.normal(size=(300, 3))
    np.testing.assert_allclose(tree.node_sums(leaves, v), M.T.astype(float) @ v, atol=1e-10)
    np.testing.assert_allclose(tree.node_sums(leaves, V), M.T.astype(float) @ V, atol=1e-10)
    np.testing.assert_array_equal(tree.node_sums(leaves), M.sum(axis=0))
    # only leaves were given; also every node appears, even if empty
    assert tree.node_sums(leaves).shape == (tree.n_nodes,)


def test_node_sums_counts_empty_nodes_as_zero():
    tree = make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 0, -1, -1, -1],
                     [0.0, -1.0, NAN, NAN, NAN], [NAN, NAN, 1.0, 2.0, 3.0])
    nodes = np.array([2, 2, 4])
    np.testing.assert_array_equal(tree.node_sums(nodes), [3, 1, 2, 0, 1])
    np.testing.assert_array_equal(tree.node_sums(nodes, np.array([1.0, 2.0, 4.0])),
                                  [7, 4, 3, 0, 4])


# --------------------------------------------------------------------------- collapsing


def _collapse_case(seed, n_internal=None):
    rng = np.random.default_rng(1000 + seed)
    rules = [LIGHTGBM_RULES, XGBOOST_RULES][seed % 2]
    tree = random_tree(rng, n_internal or int(rng.integers(2, 30)), rules=rules)
    collapse = rng.random(tree.n_nodes) < 0.3  # may mark leaves (ignored) and nested nodes
    value = np.where(tree.is_leaf, tree.value, np.round(rng.normal(size=tree.n_nodes), 3) + 10)
    return rng, tree, collapse, value


def _top_collapsed(tree, collapse):
    """For each node the highest collapsed internal ancestor-or-self, else -1 (by paths)."""
    top = np.full(tree.n_nodes, -1)
    for v in range(tree.n_nodes):
        chain, u = [], v
        while u >= 0:
            chain.append(u)
            u = tree.parent[u]
        marked = [u for u in chain if collapse[u] and not tree.is_leaf[u]]
        if marked:
            top[v] = marked[-1]
    return top


@pytest.mark.parametrize("seed", range(12))
def test_collapse_nodes(seed):
    rng, tree, collapse, value = _collapse_case(seed)
    new, old_to_new = collapse_nodes(tree, collapse, value)
    check_tree(new)
    top = _top_collapsed(tree, collapse)
    alive = top < 0
    alive |= np.isin(np.arange(tree.n_nodes), top[top >= 0])  # collapsed nodes survive
    # exactly the surviving nodes are kept
    assert new.n_nodes == alive.sum()
    # siblings adjacent, numbered breadth-first (depth never decreases with the id)
    inner = new.internal_nodes
    np.testing.assert_array_equal(new.right[inner], new.left[inner] + 1)
    assert np.all(np.diff(new.depth) >= 0)
    assert np.all(new.left[inner] > inner)

    # old_to_new: nodes under (or at) a collapse map to the collapsed node's new id; the
    # others keep their identity: same feature, threshold, set, value, children
    assert old_to_new.shape == (tree.n_nodes,)
    for o in range(tree.n_nodes):
        t = top[o]
        if t >= 0:
            assert old_to_new[o] == old_to_new[t]
            assert new.is_leaf[old_to_new[t]]
            assert new.value[old_to_new[t]] == value[t]
            continue
        m = old_to_new[o]
        assert new.is_leaf[m] == tree.is_leaf[o]
        if tree.is_leaf[o]:
            assert new.value[m] == value[o]
            continue
        assert new.feature[m] == tree.feature[o]
        assert new.categorical[m] == tree.categorical[o]
        np.testing.assert_array_equal(new.category_set(m), tree.category_set(o))
        np.testing.assert_equal(new.threshold[m], tree.threshold[o])
        assert new.default_left[m] == tree.default_left[o]
        assert new.missing[m] == tree.missing[o]
        assert new.l2_extra[m] == tree.l2_extra[o]
        assert new.left[m] == old_to_new[tree.left[o]]
        assert new.right[m] == old_to_new[tree.right[o]]
    # a bijection between surviving old nodes and new nodes
    assert np.unique(old_to_new[alive]).size == new.n_nodes
    assert new.rules == tree.rules

    # predictions: unchanged except rows that passed a collapsed node, which get its value
    X = random_X(rng, 300)
    old_leaf = route_rows(tree, X)
    new_leaf = route_rows(new, X)
    np.testing.assert_array_equal(new_leaf, old_to_new[old_leaf])
    want = np.where(top[old_leaf] >= 0, value[np.maximum(top[old_leaf], 0)],
                    tree.value[old_leaf])
    np.testing.assert_array_equal(new.predict(X), want)
    # and node sums carry over: a surviving node holds the same rows as before
    counts_old, counts_new = tree.node_sums(old_leaf), new.node_sums(new_leaf)
    for o in np.flatnonzero(alive):
        assert counts_new[old_to_new[o]] == counts_old[o]


def test_collapse_nothing_is_a_renumbering():
    rng = np.random.default_rng(5)
    tree = random_tree(rng, 15)
    new, old_to_new = collapse_nodes(tree, np.zeros(tree.n_nodes, bool))
    assert new.n_nodes == tree.n_nodes
    assert sorted(old_to_new) == list(range(tree.n_nodes))
    X = random_X(rng, 200)
    np.testing.assert_array_equal(new.predict(X), tree.predict(X))


def test_collapse_root_gives_a_stump_leaf():
    rng = np.random.default_rng(6)
    tree = random_tree(rng, 7)
    value = np.full(tree.n_nodes, 4.5)
    collapse = np.zeros(tree.n_nodes, bool)
    collapse[0] = True
    new, old_to_new = collapse_nodes(tree, collapse, value)
    assert new.n_nodes == 1 and new.is_leaf[0] and new.value[0] == 4.5
    np.testing.assert_array_equal(old_to_new, np.zeros(tree.n_nodes))


def test_collapse_without_values_needs_internal_values():
    tree = make_tree(**good_arrays())
    collapse = np.array([False, True, False, False, False])
    with pytest.raises(ValueError, match="leaves need a value"):
        collapse_nodes(tree, collapse)  # node 1 has no value of its own
    kw = good_arrays()
    kw["value"] = [0.0, 7.0, 1.0, 2.0, 3.0]
    new, old_to_new = collapse_nodes(make_tree(**kw), collapse)
    assert new.value[old_to_new[1]] == 7.0


@pytest.mark.parametrize("seed", range(6))
def test_leaf_of_nodes(seed):
    rng, tree, keep, _ = _collapse_case(seed)
    got = leaf_of_nodes(tree, keep)
    top = _top_collapsed(tree, keep)
    np.testing.assert_array_equal(got, np.where(top >= 0, top, np.arange(tree.n_nodes)))


def test_random_structure_helper_is_valid():
    # the helper builds valid trees with shuffled ids (guards the tests above)
    rng = np.random.default_rng(0)
    left, right = random_structure(rng, 20)
    assert (left >= 0).sum() == 20 and left.size == 41
    tree = make_tree(left, right, np.where(left >= 0, 0, -1), np.where(left >= 0, 0.0, NAN),
                     np.where(left >= 0, NAN, 1.0))
    assert not np.all(np.diff(tree.depth) >= 0)  # not breadth-first: ids really shuffled


def test_nearest_sorted_equals_binary_search():
    """The grid lookup of leaves_from_scores finds the same nearest value as a binary search,
    at midpoints, far outside the values and for NaN (index 0, rejected by the caller)."""
    from unbiased_criteria.trees import _nearest_sorted

    rng = np.random.default_rng(0)
    for _ in range(200):
        v = np.unique(rng.normal(size=int(rng.integers(1, 64))) * 10 ** rng.uniform(-4, 1))
        mid = (v[1:] + v[:-1]) / 2
        x = np.concatenate([rng.choice(v, 300) + rng.normal(size=300) * 1e-12, mid, v,
                            rng.normal(size=100) * 3 * (np.abs(v).max() + 1)])
        want = np.searchsorted(mid, x)
        got = _nearest_sorted(v, x)
        np.testing.assert_array_equal(np.abs(x - v[got]), np.abs(x - v[want]))
    assert _nearest_sorted(np.array([0.0, 1.0, 3.0]), np.array([np.nan]))[0] == 0


def test_nearest_sorted_within_bounds_equals_binary_search():
    """With ``bounds`` (what leaves_from_scores passes: the extreme values widened by its
    tolerance) the cells span the bounds, not the rows: rows inside get the binary search's
    answer, rows outside (or NaN, or huge) an index in range, with and without buffers."""
    from unbiased_criteria.trees import ScoreWork, _nearest_sorted

    rng = np.random.default_rng(2)
    for _ in range(200):
        v = np.unique(rng.normal(size=int(rng.integers(2, 64))) * 10 ** rng.uniform(-4, 1))
        mid = (v[1:] + v[:-1]) / 2
        pad = float(np.diff(v).min()) / 4
        lo, hi = float(v[0]) - pad, float(v[-1]) + pad
        inside = np.concatenate([rng.choice(v, 300) + rng.normal(size=300) * 1e-12, mid, v,
                                 rng.uniform(lo, hi, 100)])
        inside = inside[(inside >= lo) & (inside <= hi)]
        outside = np.concatenate([rng.normal(size=50) * 3 * (np.abs(v).max() + 1),
                                  [np.nan, 1e300, -1e300, np.inf]])
        outside = outside[~((outside >= lo) & (outside <= hi))]
        x = np.concatenate([inside, outside])
        for work in (None, ScoreWork(x.size)):
            with np.errstate(invalid="ignore"):  # NaN and huge rows: the cast is invalid
                got = np.array(_nearest_sorted(v, x, work=work, bounds=(lo, hi)))
            np.testing.assert_array_equal(got[: inside.size], np.searchsorted(mid, inside))
            assert got.min() >= 0 and got.max() < v.size


def test_leaves_from_scores_same_with_reused_buffers():
    """The buffers a hook reuses every round (``out``, ``ScoreWork``) give the same ids as
    fresh arrays, leave ``change`` alone, and serve again for another tree's rows."""
    from unbiased_criteria.trees import ScoreWork, _nearest_sorted, leaves_from_scores

    rng = np.random.default_rng(1)
    n = 5000
    work, out = ScoreWork(n), np.empty(n, dtype=np.int32)
    for _ in range(20):
        L = int(rng.integers(2, 40))
        left = [*range(1, L), -1] + [-1] * (L - 1)  # a chain: node i < L-1 splits into i+1
        right = [L + i for i in range(L - 1)] + [-1] * L
        left[L - 2] = L - 1
        is_leaf = np.array(left) < 0
        value = np.where(is_leaf, rng.normal(size=2 * L - 1) * 10 ** rng.uniform(-3, 1), NAN)
        tree = make_tree(left, right, np.where(is_leaf, -1, 0), np.where(is_leaf, NAN, 0.0),
                         value)
        leaf = rng.choice(np.flatnonzero(tree.is_leaf), n)
        before = rng.normal(size=n) * 5
        after = before + tree.value[leaf]
        change = after - before
        kept = change.copy()
        want = leaves_from_scores(change, after, tree)
        got = leaves_from_scores(change, after, tree, out=out, work=work)
        assert got is out
        np.testing.assert_array_equal(got, leaf)
        np.testing.assert_array_equal(want, leaf)
        np.testing.assert_array_equal(change, kept)
        v = np.sort(tree.value[tree.is_leaf])
        np.testing.assert_array_equal(_nearest_sorted(v, change, work=work),
                                      np.searchsorted((v[1:] + v[:-1]) / 2, change))
    # a change that matches no leaf is still refused with buffers
    assert leaves_from_scores(change + 0.5 * np.min(np.diff(v)), after, tree, out=out,
                              work=work) is None


def test_monotone_bounds_separate_the_sides_of_constrained_splits_or_freeze_them():
    """Root splits on feature 0 (increasing): its left side's leaves (1, 2) lie below its
    right side's (4), so nodes on the left are bounded above and nodes on the right below
    by the gap's midpoint 3. Node 2 splits on feature 1 (decreasing) with overlapping sides
    (5 > 4 is on the lesser side, 3 on the greater): its subtree is frozen. A categorical
    split or an unconstrained feature bounds nothing."""
    from unbiased_criteria.pruning import monotone_bounds

    # 0: x0 <= 0 ? 1 : 2;  1: x1 <= 0 ? 3 : 4 (unconstrained);  2: x1 <= 0 ? 5 : 6
    tree = make_tree([1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1],
                     [0, 2, 1, -1, -1, -1, -1], [0.0, 0.0, 0.0, NAN, NAN, NAN, NAN],
                     [NAN, NAN, NAN, 1.0, 2.0, 4.0, 5.0])
    lower, upper, frozen = monotone_bounds(tree, (1, -1))
    np.testing.assert_array_equal(upper, [np.inf, 3.0, np.inf, 3.0, 3.0, np.inf, np.inf])
    np.testing.assert_array_equal(lower, [-np.inf, -np.inf, 3.0, -np.inf, -np.inf, 3.0, 3.0])
    # node 2 decreasing in x1: lesser side is its right child (5.0), greater its left (4.0)
    np.testing.assert_array_equal(frozen, [False, False, False, False, False, True, True])
    lower, upper, frozen = monotone_bounds(tree, (0, 0, 1))  # node 1 on x2: 1 <= 2, t = 1.5
    np.testing.assert_array_equal(upper, [np.inf, np.inf, np.inf, 1.5, np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(lower, [-np.inf, -np.inf, -np.inf, -np.inf, 1.5, -np.inf,
                                          -np.inf])
    assert not frozen.any()
    cat = make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], value=[NAN, 5.0, 1.0],
                    cat_sets={0: [1, 2]})
    lower, upper, frozen = monotone_bounds(cat, (1,))
    assert np.isinf(lower).all() and np.isinf(upper).all() and not frozen.any()


def _host_like_monotone_tree(rng, constraints, depth=5):
    """A random tree whose leaf values a host with monotone constraints could have made:
    grown top-down, each node's children valued inside its bounds and ordered on a
    constrained split, which bounds their subtrees at their mean (XGBoost's and LightGBM's
    basic rule)."""
    left, right, feature, threshold, value = [], [], [], [], []

    def add():
        for a in (left, right, feature):
            a.append(-1)
        threshold.append(NAN)
        value.append(NAN)
        return len(left) - 1

    root = add()
    value[root] = rng.normal()
    stack = [(root, 0, -np.inf, np.inf)]
    while stack:
        v, d, lo, hi = stack.pop()
        if d >= depth or rng.random() < 0.25:
            continue
        f = int(rng.integers(len(constraints)))
        a, b = add(), add()
        left[v], right[v], feature[v], threshold[v] = a, b, f, float(rng.uniform(-1, 1))
        wa, wb = np.clip(rng.normal(size=2) * 2, lo, hi)
        if constraints[f]:
            wa, wb = sorted((wa, wb))[:: constraints[f]]  # left smaller when increasing
        value[a], value[b] = wa, wb
        mid = (wa + wb) / 2
        if constraints[f] > 0:
            stack += [(a, d + 1, lo, min(hi, mid)), (b, d + 1, max(lo, mid), hi)]
        elif constraints[f] < 0:
            stack += [(a, d + 1, max(lo, mid), hi), (b, d + 1, lo, min(hi, mid))]
        else:
            stack += [(a, d + 1, lo, hi), (b, d + 1, lo, hi)]
    return make_tree(left, right, feature, threshold, value)


def test_monotone_bounds_keep_random_trees_monotone_whatever_is_collapsed():
    """Random host-like trees (constraints +1, -1, 0 on three features), random nodes
    collapsed, random values for every new leaf (refit included): once clipped to
    monotone_bounds, predictions along each constrained feature never go the wrong way."""
    from unbiased_criteria.pruning import monotone_bounds

    rng = np.random.default_rng(8)
    constraints = (1, -1, 0)
    grid = np.linspace(-1.2, 1.2, 49)
    checked = 0
    for _ in range(150):
        tree = _host_like_monotone_tree(rng, constraints)
        lower, upper, frozen = monotone_bounds(tree, constraints)
        assert not frozen.any()  # a host-like tree has a gap at every constrained split
        assert np.all(tree.value[tree.is_leaf] >= lower[tree.is_leaf])
        assert np.all(tree.value[tree.is_leaf] <= upper[tree.is_leaf])
        collapse = ~tree.is_leaf & (rng.random(tree.n_nodes) < 0.3)
        new = np.clip(rng.normal(size=tree.n_nodes) * 3, lower, upper)
        refit = rng.random() < 0.5
        values = new if refit else np.where(tree.is_leaf, tree.value, new)
        pruned, _ = collapse_nodes(tree, collapse, values)
        base = rng.uniform(-1.2, 1.2, size=(30, 3))
        for f, sign in ((0, 1), (1, -1)):
            Z = np.repeat(base, grid.size, axis=0)
            Z[:, f] = np.tile(grid, base.shape[0])
            p = pruned.predict(Z).reshape(base.shape[0], grid.size)
            assert (np.diff(p, axis=1) * sign).min() >= 0
        checked += int(collapse.sum())
    assert checked > 100
