"""The tree IR: one decision tree as flat node arrays, and a forest of them.

Like scikit-learn's ``Tree``, a tree is a set of parallel arrays indexed by node id, node 0
being the root. Unlike it, the IR states the host's decision rules exactly (the comparison
operator, where missing values and categories go), so that reading a model and writing it back
is the identity and no threshold is ever nudged to fake another operator.

Invariants (checked by :func:`check_tree`):

* ``left[i] == right[i] == -1`` for a leaf, both valid distinct node ids otherwise;
* every node but the root has exactly one parent, and every node is reachable from the root;
* ``feature[i] >= 0`` for an internal node, ``-1`` for a leaf;
* a numeric node sends ``x`` left iff ``x <= threshold[i]`` (rules.operator ``"<="``) or
  ``x < threshold[i]`` (``"<"``); a categorical node keeps its category set in
  ``cat_values[cat_offsets[i]:cat_offsets[i + 1]]`` and sends the set to ``rules.categories_go``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
from scipy import sparse

__all__ = [
    "MISSING_NONE",
    "MISSING_ZERO",
    "MISSING_NAN",
    "DecisionRules",
    "Descendants",
    "Tree",
    "Forest",
    "check_tree",
    "make_tree",
    "route_rows",
    "collapse_nodes",
    "leaf_of_nodes",
    "leaves_from_scores",
    "iteration_leaves_from_scores",
    "HostScores",
]

#: missing-value handling of a numeric node: NaN is read as 0.0 and compared (LightGBM "None")
MISSING_NONE = 0
#: |x| <= 1e-35f and NaN go to the default side (LightGBM "Zero")
MISSING_ZERO = 1
#: NaN goes to the default side (LightGBM "NaN", every XGBoost node)
MISSING_NAN = 2

#: LightGBM's kZeroThreshold, the float 1e-35f read as a double
_ZERO_TOL = float(np.float32(1e-35))


@dataclass(frozen=True)
class DecisionRules:
    """How a host routes a row at a node; one instance per host.

    Parameters
    ----------
    operator : {"<=", "<"}
        Numeric nodes send ``x`` left iff ``x <= t`` (LightGBM) or ``x < t`` (XGBoost).
    categories_go : {"left", "right"}
        Side that receives the categories in a node's set (LightGBM: left, XGBoost: right).
        Every other value, including negative and unseen codes, goes to the other side.
    categorical_nan : {"other", "default"}
        Where NaN goes at a categorical node: with the non-members (LightGBM) or to the
        default side (XGBoost).
    negative_is_invalid : bool
        A negative category value is a non-member even when it truncates to 0 (XGBoost
        checks the sign before truncating: -0.5 is invalid; LightGBM truncates first: -0.5
        is category 0).
    tiny_is_zero : bool
        A numeric value with ``|x| <= 1e-35f`` is read as 0.0 (LightGBM's predictor keeps
        only values above its ``kZeroThreshold``; the others are absent, that is zero).
    """

    operator: Literal["<=", "<"] = "<="
    categories_go: Literal["left", "right"] = "left"
    categorical_nan: Literal["other", "default"] = "other"
    negative_is_invalid: bool = False
    tiny_is_zero: bool = False


def _array(values, dtype, n: int | None = None, fill=None) -> np.ndarray:
    if values is None:
        return np.full(n, fill, dtype=dtype)
    out = np.array(values, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Descendants:
    """Each node's subtree as CSR rows: row ``a``, ``indices[indptr[a]:indptr[a + 1]]``,
    holds ``a`` and every node below it, ascending (so never empty)."""

    indptr: np.ndarray
    indices: np.ndarray

    def sums(self, per_node: np.ndarray) -> np.ndarray:
        """``per_node`` (``(n_nodes,)`` or ``(n_nodes, m)``, e.g. sums over each leaf's rows,
        0 at internal nodes) summed over every node's subtree: one gather, one ``reduceat``."""
        return np.add.reduceat(per_node[self.indices], self.indptr[:-1], axis=0)

    def row_pairs(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, node)`` pairs: every node of the subtree of each ``nodes[which]``, grouped
        by ``which`` in ascending node order."""
        start, size = self.indptr[nodes], self.indptr[nodes + 1] - self.indptr[nodes]
        which = np.repeat(np.arange(nodes.size), size)
        at = np.arange(which.size) - np.repeat(np.cumsum(size) - size, size) + start[which]
        return which, self.indices[at]


class _computed_once:
    """A per-instance cache of a derived value, without a lock.

    ``functools.cached_property`` takes one class-wide lock on Python < 3.12, so the first
    access to ``ancestors`` of one tree would wait for every other tree's. Here two threads
    reaching a fresh tree at once may both compute the value; both results are equal and
    the instance keeps one.
    """

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.name] = value  # later lookups find it before this descriptor
        return value


@dataclass(frozen=True, eq=False)
class Tree:
    """One tree as flat node arrays (see the module docstring for the invariants).

    Attributes
    ----------
    left, right : int32 arrays
        Child ids, ``-1`` for a leaf.
    feature : int32 array
        Split feature, ``-1`` for a leaf.
    threshold : float64 array
        Numeric threshold; NaN for leaves and categorical nodes.
    default_left : bool array
        Side taken by missing values.
    missing : int8 array
        ``MISSING_NONE``, ``MISSING_ZERO`` or ``MISSING_NAN`` (see the module constants).
    categorical : bool array
        Whether the node splits on a category set.
    cat_offsets, cat_values : int64 arrays
        The set of node ``i`` is ``cat_values[cat_offsets[i]:cat_offsets[i + 1]]``.
    value : float64 array
        Output of each leaf as the host adds it to the raw score (already shrunk, and for
        LightGBM's first trees including the folded init score). NaN or the host's internal
        value for internal nodes.
    shrinkage : float
        Factor the host multiplied this tree's outputs by (learning rate).
    bias : float
        Constant the host folded into every leaf of this tree (LightGBM's boost_from_average
        init score in the first iteration's trees, else 0).
    l2_extra : float64 array
        Extra L2 the host adds when it scores the children of split ``i`` and values them as
        leaves (LightGBM's ``cat_l2`` for a many-vs-many categorical split), else 0.
    host_gain, host_hessian, host_count : arrays
        Statistics the host stored (split gain, hessian sum / cover, row count); NaN or -1 when
        the host did not store them.
    rules : DecisionRules
        The host's routing rules.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    missing: np.ndarray
    categorical: np.ndarray
    cat_offsets: np.ndarray
    cat_values: np.ndarray
    value: np.ndarray
    l2_extra: np.ndarray
    host_gain: np.ndarray
    host_hessian: np.ndarray
    host_count: np.ndarray
    shrinkage: float = 1.0
    bias: float = 0.0
    rules: DecisionRules = field(default_factory=DecisionRules)

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])

    @_computed_once
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    @_computed_once
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    @_computed_once
    def internal_nodes(self) -> np.ndarray:
        return np.flatnonzero(~self.is_leaf)

    @_computed_once
    def parent(self) -> np.ndarray:
        parent = np.full(self.n_nodes, -1, dtype=np.int32)
        inner = self.internal_nodes
        parent[self.left[inner]] = inner
        parent[self.right[inner]] = inner
        return parent

    @_computed_once
    def leaf_l2_extra(self) -> np.ndarray:
        """Extra L2 of every node valued as a leaf: its parent's ``l2_extra`` (the host
        values a split's children with it, LightGBM's cat_l2), 0 at the root."""
        parent = self.parent
        return np.where(parent >= 0, self.l2_extra[np.maximum(parent, 0)], 0.0)

    @_computed_once
    def depth(self) -> np.ndarray:
        """Depth of every node (root 0), found level by level."""
        depth = np.full(self.n_nodes, -1, dtype=np.int32)
        level, d = np.array([0]), 0
        while level.size:
            depth[level] = d
            inner = level[~self.is_leaf[level]]
            level = np.concatenate([self.left[inner], self.right[inner]])
            d += 1
        return depth

    @_computed_once
    def max_depth(self) -> int:
        return int(self.depth.max())

    @_computed_once
    def descendants(self) -> Descendants:
        """Every node's subtree (the node and all nodes below it) as CSR rows, walked up the
        tree from every node at once: no sparse matrix is made (scipy's constructor and
        product cost more than the sums of a small tree)."""
        n = self.n_nodes
        parent = self.parent
        rows, cols = [np.arange(n)], [np.arange(n)]
        node, up = rows[0], parent
        while True:  # one step up the tree for every node not yet at the root
            keep = np.flatnonzero(up >= 0)
            if not keep.size:
                break
            node, up = node[keep], up[keep]
            rows.append(up)
            cols.append(node)
            up = parent[up]
        r, c = np.concatenate(rows), np.concatenate(cols)
        order = np.argsort(r * n + c)  # no pair twice: a total order
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
        indices = c[order].astype(np.int64)
        indptr.setflags(write=False)
        indices.setflags(write=False)
        return Descendants(indptr, indices)

    @_computed_once
    def ancestors(self) -> sparse.csr_matrix:
        """``A[a, v] = 1`` iff ``a`` is ``v`` or an ancestor of ``v`` (n_nodes x n_nodes):
        :attr:`descendants` as a scipy matrix (canonical CSR), ``A @ leaf_sums`` the node
        sums."""
        d = self.descendants
        return sparse.csr_matrix(
            (np.ones(d.indices.size), d.indices.astype(np.int32), d.indptr.astype(np.int32)),
            shape=(self.n_nodes, self.n_nodes),
        )

    def category_set(self, node: int) -> np.ndarray:
        return self.cat_values[self.cat_offsets[node] : self.cat_offsets[node + 1]]

    def node_sums(self, nodes: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """Sum ``values`` over the rows of every node, given each row's leaf node id.

        ``values`` is ``(n,)`` or ``(n, m)``; ``None`` counts rows. Returns ``(n_nodes,)`` or
        ``(n_nodes, m)`` float64: an internal node's sum is the sum over its leaves.
        """
        if values is None:
            leaf = np.bincount(nodes, minlength=self.n_nodes).astype(np.float64)
        elif values.ndim == 1:
            leaf = np.bincount(nodes, weights=values, minlength=self.n_nodes)
        else:
            leaf = np.stack(
                [np.bincount(nodes, weights=v, minlength=self.n_nodes) for v in values.T],
                axis=1,
            )
        return self.descendants.sums(leaf)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Leaf value of every row of dense ``X`` (NaN = missing)."""
        return self.value[route_rows(self, X)]


def make_tree(
    left,
    right,
    feature,
    threshold=None,
    value=None,
    *,
    default_left=None,
    missing=None,
    categorical=None,
    cat_sets: dict[int, np.ndarray] | None = None,
    l2_extra=None,
    host_gain=None,
    host_hessian=None,
    host_count=None,
    shrinkage: float = 1.0,
    bias: float = 0.0,
    rules: DecisionRules | None = None,
) -> Tree:
    """Build and check a :class:`Tree`; the one constructor readers and the pruner use.

    ``cat_sets`` maps a categorical node id to its category codes.
    """
    left = _array(left, np.int32)
    n = left.shape[0]
    cat_sets = cat_sets or {}
    sizes = np.zeros(n, dtype=np.int64)
    for node, cats in cat_sets.items():
        sizes[node] = len(cats)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = np.zeros(offsets[-1], dtype=np.int64)
    for node, cats in cat_sets.items():
        values[offsets[node] : offsets[node + 1]] = np.sort(np.asarray(cats, dtype=np.int64))
    if categorical is None:
        categorical = np.zeros(n, dtype=bool)
        categorical[list(cat_sets)] = True
    tree = Tree(
        left=left,
        right=_array(right, np.int32),
        feature=_array(feature, np.int32),
        threshold=_array(threshold, np.float64, n, np.nan),
        default_left=_array(default_left, bool, n, False),
        missing=_array(missing, np.int8, n, MISSING_NAN),
        categorical=_array(categorical, bool),
        cat_offsets=_array(offsets, np.int64),
        cat_values=_array(values, np.int64),
        value=_array(value, np.float64, n, np.nan),
        l2_extra=_array(l2_extra, np.float64, n, 0.0),
        host_gain=_array(host_gain, np.float64, n, np.nan),
        host_hessian=_array(host_hessian, np.float64, n, np.nan),
        host_count=_array(host_count, np.int64, n, -1),
        shrinkage=float(shrinkage),
        bias=float(bias),
        rules=rules or DecisionRules(),
    )
    check_tree(tree)
    return tree


def check_tree(tree: Tree) -> None:
    """Raise ``ValueError`` unless ``tree`` satisfies the IR invariants."""
    n = tree.n_nodes
    if n == 0:
        raise ValueError("tree has no nodes")
    for name in (
        "right", "feature", "threshold", "default_left", "missing", "categorical",
        "value", "l2_extra", "host_gain", "host_hessian", "host_count",
    ):
        if getattr(tree, name).shape != (n,):
            raise ValueError(f"tree.{name} must have shape ({n},)")
    if tree.cat_offsets.shape != (n + 1,) or tree.cat_offsets[-1] != tree.cat_values.size:
        raise ValueError("tree.cat_offsets does not index tree.cat_values")
    leaf = tree.left < 0
    if np.any((tree.right < 0) != leaf):
        raise ValueError("a node has exactly one child")
    inner = np.flatnonzero(~leaf)
    children = np.concatenate([tree.left[inner], tree.right[inner]])
    if children.size and (children.min() < 1 or children.max() >= n):
        raise ValueError("child ids must lie in 1..n_nodes-1")
    if np.unique(children).size != children.size or children.size != n - 1:
        raise ValueError("every node but the root needs exactly one parent")
    if np.any(tree.feature[inner] < 0):
        raise ValueError("internal nodes need a feature")
    if (tree.depth < 0).any():
        raise ValueError("some nodes are not reachable from the root")
    numeric = inner[~tree.categorical[inner]]
    if np.isnan(tree.threshold[numeric]).any():
        raise ValueError("numeric nodes need a threshold")
    if np.isnan(tree.value[leaf]).any():
        raise ValueError("leaves need a value")


def _go_left(tree: Tree, nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Direction of rows currently at internal ``nodes`` with feature values ``x``."""
    rules = tree.rules
    nan = np.isnan(x)
    missing = tree.missing[nodes]
    cat = tree.categorical[nodes]
    default = tree.default_left[nodes]

    # numeric nodes
    xv = np.where(nan & (missing == MISSING_NONE), 0.0, x)
    if rules.tiny_is_zero:
        xv = np.where(np.abs(xv) <= _ZERO_TOL, 0.0, xv)
    thr = tree.threshold[nodes]
    with np.errstate(invalid="ignore"):
        left = xv <= thr if rules.operator == "<=" else xv < thr
    to_default = (nan & (missing != MISSING_NONE)) | (
        (missing == MISSING_ZERO) & (np.abs(xv) <= _ZERO_TOL)
    )
    left = np.where(to_default, default, left)

    if cat.any():
        idx = np.flatnonzero(cat)
        code = np.where(nan[idx], -1, np.trunc(np.nan_to_num(x[idx], nan=-1.0)))
        if rules.negative_is_invalid:
            code = np.where(x[idx] < 0, -1, code)
        member = _in_sets(tree, nodes[idx], code)
        set_left = rules.categories_go == "left"
        go = np.where(member, set_left, not set_left)
        if rules.categorical_nan == "default":
            go = np.where(nan[idx], default[idx], go)
        left[idx] = go
    return left


def _in_sets(tree: Tree, nodes: np.ndarray, code: np.ndarray) -> np.ndarray:
    """Whether category ``code[j]`` is in the set of ``nodes[j]`` (vectorised by keys)."""
    sizes = np.diff(tree.cat_offsets)
    owner = np.repeat(np.arange(tree.n_nodes, dtype=np.int64), sizes)
    span = np.int64(max(int(tree.cat_values.max(initial=0)), 0) + 2)
    keys = owner * span + tree.cat_values  # sorted: owners ascend, values sorted per node
    valid = (code >= 0) & (code < span - 1)
    query = nodes.astype(np.int64) * span + np.where(valid, code, span - 1).astype(np.int64)
    pos = np.searchsorted(keys, query)
    pos = np.minimum(pos, max(keys.size - 1, 0))
    return valid & (keys.size > 0) & (keys[pos] == query) if keys.size else np.zeros_like(valid)


def route_rows(tree: Tree, X: np.ndarray) -> np.ndarray:
    """Leaf node id of every row of dense float ``X`` (NaN = missing), level by level."""
    X = np.asarray(X, dtype=np.float64)
    node = np.zeros(X.shape[0], dtype=np.int32)
    active = np.flatnonzero(~tree.is_leaf[node])
    while active.size:
        at = node[active]
        x = X[active, tree.feature[at]]
        left = _go_left(tree, at, x)
        node[active] = np.where(left, tree.left[at], tree.right[at])
        active = active[~tree.is_leaf[node[active]]]
    return node


def leaf_of_nodes(tree: Tree, keep: np.ndarray) -> np.ndarray:
    """Map every node to its highest ancestor-or-self that ``keep`` marks as a leaf.

    ``keep`` is a bool mask of the nodes that become leaves (collapsed internal nodes, or
    leaves). Nodes under a collapsed node map to it; the rest map to themselves.
    """
    target = np.arange(tree.n_nodes, dtype=np.int32)
    order = np.argsort(tree.depth, kind="stable")
    # top-down: a node inherits its parent's target when the parent is (or is under) a collapse
    for d in range(1, tree.max_depth + 1):
        nodes = order[tree.depth[order] == d]
        par = tree.parent[nodes]
        inherit = target[par] != par
        inherit |= keep[par] & ~tree.is_leaf[par]
        target[nodes] = np.where(inherit, target[par], nodes)
    return target


def collapse_nodes(
    tree: Tree, collapse: np.ndarray, value: np.ndarray | None = None
) -> tuple[Tree, np.ndarray]:
    """Turn the internal nodes marked in ``collapse`` into leaves and drop their subtrees.

    ``value`` (length n_nodes), if given, is read at every leaf of the result: the collapsed
    nodes and the kept leaves (pass ``tree.value`` there to keep them). Returns the compacted
    tree, numbered breadth-first with siblings adjacent (what XGBoost needs), and
    ``old_to_new``: for every old node the new id of the node its rows now end in.
    """
    collapse = np.asarray(collapse, dtype=bool) & ~tree.is_leaf
    target = leaf_of_nodes(tree, collapse)
    alive = target == np.arange(tree.n_nodes)
    new_leaf = tree.is_leaf | collapse

    # breadth-first renumbering of the surviving nodes, (left, right) pairs adjacent
    order = [np.array([0])]
    level = np.array([0])
    while level.size:
        inner = level[~new_leaf[level]]
        level = np.stack([tree.left[inner], tree.right[inner]], axis=1).ravel()
        if level.size:
            order.append(level)
    old_ids = np.concatenate(order)
    new_id = np.full(tree.n_nodes, -1, dtype=np.int32)
    new_id[old_ids] = np.arange(old_ids.size, dtype=np.int32)
    assert np.array_equal(np.sort(old_ids), np.flatnonzero(alive))

    leaf_new = new_leaf[old_ids]
    left = np.where(leaf_new, -1, new_id[tree.left[old_ids]])
    right = np.where(leaf_new, -1, new_id[tree.right[old_ids]])
    vals = tree.value[old_ids].copy()
    if value is not None:
        value = np.asarray(value, dtype=np.float64)
        vals[leaf_new] = value[old_ids][leaf_new]
    cat_sets = {
        int(new_id[o]): tree.category_set(o)
        for o in old_ids[tree.categorical[old_ids] & ~leaf_new]
    }

    def keep(a, leaf_fill):
        out = a[old_ids].copy()
        out[leaf_new] = leaf_fill
        return out

    gain = tree.host_gain[old_ids].copy()
    gain[leaf_new] = np.nan
    new = make_tree(
        left,
        right,
        keep(tree.feature, -1),
        keep(tree.threshold, np.nan),
        vals,
        default_left=keep(tree.default_left, False),
        missing=tree.missing[old_ids],
        categorical=keep(tree.categorical, False),
        cat_sets=cat_sets,
        l2_extra=tree.l2_extra[old_ids],
        host_gain=gain,
        host_hessian=tree.host_hessian[old_ids],
        host_count=tree.host_count[old_ids],
        shrinkage=tree.shrinkage,
        bias=tree.bias,
        rules=tree.rules,
    )
    return new, new_id[target]


@dataclass(frozen=True, eq=False)
class Forest:
    """A boosted ensemble in the IR.

    Attributes
    ----------
    trees : tuple of Tree
        In the host's order (iteration-major, class-minor).
    tree_class : int array
        Output (class) each tree adds to.
    tree_iteration : int array
        Boosting iteration of each tree: the trees of one iteration share its gradients.
    base_score : float64 array, shape (n_outputs,)
        Raw score every row starts from before the first tree (XGBoost's base margin;
        0 for LightGBM, which folds its init score into the first trees, see ``Tree.bias``).
    n_features : int
    feature_names : tuple of str
    score_dtype : numpy dtype
        Precision in which the host accumulates raw scores (float64 LightGBM, float32 XGBoost).
    """

    trees: tuple[Tree, ...]
    tree_class: np.ndarray
    tree_iteration: np.ndarray
    base_score: np.ndarray
    n_features: int
    feature_names: tuple[str, ...]
    score_dtype: type = np.float64

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_outputs(self) -> int:
        return int(self.base_score.shape[0])

    def with_trees(self, trees) -> Forest:
        return replace(self, trees=tuple(trees))

    def raw_score(self, X: np.ndarray) -> np.ndarray:
        """Raw scores ``(n, n_outputs)`` of dense ``X`` by the IR's own routing."""
        # a host that reads features as float32 compares them as float32
        X = np.asarray(X, dtype=np.float64).astype(self.score_dtype).astype(np.float64)
        out = np.tile(self.base_score.astype(self.score_dtype), (X.shape[0], 1))
        for tree, k in zip(self.trees, self.tree_class):
            out[:, k] += tree.predict(X).astype(self.score_dtype)
        return out


class ScoreWork:
    """Reusable row buffers of :func:`leaves_from_scores` for ``n`` rows (one float64, one
    intp). A hook calls it every round on the same rows: fresh 100k-row temporaries cost
    page faults on every call, more than the passes over them."""

    def __init__(self, n: int) -> None:
        self.real = np.empty(n, dtype=np.float64)
        self.index = np.empty(n, dtype=np.intp)


class HostScores:
    """A host's own running scores of its training rows, from round to round, and the leaves
    their change over a round names (:func:`iteration_leaves_from_scores`): what a hook's
    grower keeps so that the training rows need no routing.

    ``read(out)`` returns the host's scores now, ``(n,)`` or ``(n, K)`` float64, written into
    ``out`` when given and of the right shape, or None when this host cannot read them. Two
    score arrays alternate (the scores after one round are those before the next: one read
    per round), and the change, the leaf ids and the lookup's temporaries live in arrays
    reused every round (fresh 100k-row arrays cost page faults on every round). ``eps``: the
    host's score precision.
    """

    def __init__(self, read: Callable[[np.ndarray | None], np.ndarray | None],
                 eps: float = float(np.finfo(np.float64).eps)) -> None:
        self._read, self._eps = read, eps
        self._scores: np.ndarray | None = None  # the latest read
        self._spare: np.ndarray | None = None  # the one before: the next read goes there
        self._change: np.ndarray | None = None
        self._before: np.ndarray | None = None  # the scores before the last round
        self._ids: np.ndarray | None = None
        self._work: ScoreWork | None = None
        self._fresh = False  # the change is that of the last round
        #: rounds whose training rows' leaves came from the change (not from routing)
        self.named = 0

    @property
    def started(self) -> bool:
        """Whether the scores were read already."""
        return self._scores is not None

    def _take(self) -> np.ndarray | None:
        scores = self._read(self._spare)
        if scores is None:
            return None
        self._spare, self._scores = self._scores, scores
        return scores.reshape(scores.shape[0], -1)

    def current(self) -> np.ndarray | None:
        """The host's scores ``(n, K)`` now (read once at the start), or None; valid until
        the round after next."""
        if self._scores is None:
            return self._take()
        return self._scores.reshape(self._scores.shape[0], -1)

    def before_round(self) -> np.ndarray | None:
        """:meth:`current`, and forget the last round's change: call before the host grows."""
        self._fresh = False
        return self.current()

    def after_round(self, before: np.ndarray | None) -> None:
        """Read the scores after the round and keep ``before`` (what :meth:`before_round`
        gave; nothing when it was None): their change is taken only if :meth:`leaves` asks."""
        if before is None:
            return
        if self._take() is None:
            return
        self._before, self._fresh = before, True

    def _last_change(self, after: np.ndarray) -> np.ndarray:
        if self._change is None or self._change.shape != after.shape:
            self._change = np.empty_like(after)
        return np.subtract(after, self._before, out=self._change)

    def leaves(self, trees: list[Tree], n_rows: int | None = None) -> np.ndarray | None:
        """The ``(n, K)`` int32 leaf ids of the last round's trees named by the change, or
        None (no change read, ``n_rows`` other than the host's rows, or leaves that the
        change cannot tell apart); valid until the next round."""
        if not self._fresh:
            return None
        after = self.current()
        if n_rows is not None and after.shape[0] != n_rows:
            return None
        change = self._last_change(after)
        if self._work is None or self._work.real.shape[0] != change.shape[0]:
            self._work = ScoreWork(change.shape[0])
        ids = iteration_leaves_from_scores(change, after, trees, self._eps, out=self._ids,
                                           work=self._work)
        if ids is not None:
            self.named += 1
            self._ids = ids
        return ids


def leaves_from_scores(change: np.ndarray, after: np.ndarray, tree: Tree,
                       eps: float = float(np.finfo(np.float64).eps), *,
                       out: np.ndarray | None = None, work: ScoreWork | None = None,
                       ) -> np.ndarray | None:
    """Each row's leaf node id in ``tree`` from the change of its raw score over the iteration
    that added ``tree`` (a host's own running scores: ``after = before + value[leaf]``), or
    None when that cannot name the leaf for sure. No routing: the host already did it.

    ``eps`` is the machine epsilon of the host's scores (float32 for XGBoost). The change
    differs from the leaf value by the rounding of the host's addition and of the
    subtraction, each at most ``eps / 2`` of the larger magnitude: the tolerance is
    ``2 eps (max |after| + max |value|)``. The leaves are told apart when their sorted values
    are more than two tolerances apart, and every row must lie within one tolerance of its
    leaf's value (else None: the host did not add exactly the tree's leaf values). Cost:
    :func:`_nearest_sorted`, then one gather, one subtraction and two reductions for the
    check and one gather of the ids. ``out`` (int32, one per row) receives the ids; ``work``
    (:class:`ScoreWork` of as many rows) spares the temporaries; ``change`` is not modified.
    """
    leaf = np.flatnonzero(tree.is_leaf)
    value = tree.value[leaf]
    if change.size == 0 or not np.all(np.isfinite(value)):
        return None
    order = np.argsort(value, kind="stable")
    value, leaf = value[order], leaf[order].astype(np.int32)
    if work is None or work.real.shape != change.shape:
        work = ScoreWork(change.shape[0])
    with np.errstate(invalid="ignore"):  # NaN scores fail the tests below
        # max |after| without a temporary (NaN propagates through both reductions)
        top = max(float(np.max(after)), -float(np.min(after)))
        tol = 2 * eps * (top + float(np.max(np.abs(value))))
        if not np.isfinite(tol) or (value.size > 1 and float(np.min(np.diff(value))) <= 2 * tol):
            return None
        # a row within tol of a leaf lies in [value[0] - tol, value[-1] + tol]: the lookup's
        # cells span that (no pass for min and max); rows outside fail the check below
        pos = _nearest_sorted(value, change, work=work,
                              bounds=(float(value[0]) - tol, float(value[-1]) + tol))
        # work.index is free once _nearest_sorted has its positions in work.real
        off = value.take(pos, out=work.index.view(np.float64), mode="clip")
        off -= change  # a NaN change fails both comparisons
        if not (float(np.max(off)) <= tol and -float(np.min(off)) <= tol):
            return None
    return leaf.take(pos, out=out, mode="clip")  # clip: no buffer (pos is in range)


def _nearest_sorted(value: np.ndarray, x: np.ndarray, n_cells: int = 4096,
                    work: ScoreWork | None = None,
                    bounds: tuple[float, float] | None = None) -> np.ndarray:
    """Index of the entry of sorted ``value`` nearest to each ``x`` (the number of midpoints
    ``< x``, as ``np.searchsorted(midpoints, x)``), NaN rows index 0 (their caller rejects
    them). With ``work``, both its buffers are overwritten and the result is ``work.real``'s
    memory viewed as intp. ``bounds`` (lo, hi), finite, ``lo < hi``, holding every midpoint:
    the cells span them instead of ``[min x, max x]`` (two passes fewer), and the answer is
    exact only for the rows inside; a row outside (or NaN) gets some index in range.

    A binary search costs about 20 ns a row. Instead, ``[min x, max x]`` is cut into
    ``n_cells`` equal cells by ``c(x) = int((x - min x) * scale)``, rounded arithmetic that is
    monotone in ``x``: a midpoint whose cell is below ``c(x)`` lies below ``x`` and one above
    lies above, so for a row whose cell holds no midpoint the answer is the cell's count of
    midpoints below, exactly. Rows are clustered at the leaf values, far from the midpoints:
    only rows in a cell that holds a midpoint (a leaf value within a cell width of another's)
    take the binary search. Passes: two reductions, a subtraction, a product, a cast, a gather.
    """
    mid = (value[1:] + value[:-1]) / 2
    if mid.size == 0:
        return np.zeros(x.shape, dtype=np.intp)
    if bounds is not None and np.isfinite(bounds[0]) and np.isfinite(bounds[1]) \
            and bounds[0] < mid[0] and mid[-1] < bounds[1]:
        lo, hi = bounds
    else:
        lo, hi = float(np.min(x)), float(np.max(x))
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        pos = np.searchsorted(mid, x)
        pos[np.isnan(x)] = 0
        return pos
    scale = n_cells / (hi - lo)

    def cell(v, real=None, index=None, clip=False):  # the same operations, the same rounding
        t = np.subtract(v, lo, out=real)
        t *= scale
        if clip:  # midpoints far outside [lo, hi]: cells -1 and n_cells + 1 (no row's)
            np.clip(t, -1.0, n_cells + 1.0, out=t)
        if index is None:
            return t.astype(np.intp)  # truncation: a floor for the rows (t >= 0)
        index[...] = t
        return index

    cm = cell(mid, clip=True)  # non-decreasing, as the midpoints
    below = np.searchsorted(cm, np.arange(n_cells + 2))  # midpoints in a lower cell
    table = below.copy()
    table[cm[cm >= 0]] = -1  # a midpoint inside: binary search
    if work is None:
        pos = table.take(cell(x), mode="clip")  # take: faster than []; clip: rows out of bounds
    else:
        # the ids go to work.real's memory, free once the cells are cast (no overlap)
        pos = table.take(cell(x, work.real, work.index), out=work.real.view(np.intp),
                         mode="clip")
    if int(np.min(pos)) < 0:
        slow = np.flatnonzero(pos < 0)
        pos[slow] = np.searchsorted(mid, x[slow])
    return pos


def iteration_leaves_from_scores(change: np.ndarray, after: np.ndarray, trees: list[Tree],
                                 eps: float = float(np.finfo(np.float64).eps), *,
                                 out: np.ndarray | None = None, work: ScoreWork | None = None,
                                 ) -> np.ndarray | None:
    """:func:`leaves_from_scores` for the K trees of one iteration: ``change`` and ``after``
    are ``(n, K)``, column ``k`` the scores tree ``k`` added to; ``(n, K)`` int32 leaf ids
    (in ``out`` when given), or None when the shapes do not match the trees or any tree
    cannot name its leaves."""
    if change.ndim != 2 or change.shape[1] != len(trees):
        return None
    if out is None or out.shape != change.shape or out.dtype != np.int32:
        out = np.empty(change.shape, dtype=np.int32)
    for k, tree in enumerate(trees):  # K trees (classes), not rows
        column = out[:, k] if out.shape[1] > 1 else out.reshape(-1)
        got = leaves_from_scores(np.ascontiguousarray(change[:, k]), after[:, k], tree, eps,
                                 out=column if column.flags.c_contiguous else None, work=work)
        if got is None:
            return None
        if got is not column:
            out[:, k] = got
    return out
