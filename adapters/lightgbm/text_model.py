"""Check a LightGBM text model before LightGBM sees it: :func:`check_model_text` (which also
hands the reader each tree's fields).

LightGBM's loader trusts its input: a wrong ``tree_sizes`` entry, a file truncated mid-tree or an
edited ``num_leaves`` abort the process; a child index out of range or a cycle loads and then
crashes ``dump_model()``; a missing ``tree_sizes`` entry silently drops a tree.
Pure text parsing, no host call: each ``Tree=`` block's byte length against
``tree_sizes``, array lengths against ``num_leaves``, child and feature indices, and that every
node is reached once from the root.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["ModelTextError", "check_model_text"]

_BLOCK = re.compile(rb"^Tree=(\d+)\r?$", re.MULTILINE)
_END = re.compile(rb"^end of trees\r?$", re.MULTILINE)
_INTERNAL_INT = ("split_feature", "left_child", "right_child", "decision_type",
                 "internal_count")
_INDICES = ("split_feature", "left_child", "right_child", "decision_type")
_INTERNAL_FLOAT = ("split_gain", "threshold", "internal_value", "internal_weight")
_LEAF_FLOAT = ("leaf_value", "leaf_weight")


class ModelTextError(ValueError):
    """A LightGBM text model that LightGBM would crash on or misread (one line: tree, field)."""


def _header(data: bytes) -> dict[str, str]:
    lines = data.decode("utf-8", errors="replace").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _numbers(fields: dict[str, str], key: str, dtype: type | None, size: int, where: str,
             required: bool, why: str) -> np.ndarray | None:
    """Array ``key`` of a tree block, checked to hold ``size`` numbers; parsed as ``dtype``
    (``int`` or ``float``) unless ``dtype`` is None."""
    if key not in fields or (not required and not fields[key].strip()):
        if required:  # optional statistics may be left empty (one-leaf trees)
            raise ModelTextError(f"{where}: {key} is missing")
        return None
    words = fields[key].split()
    if len(words) != size:
        raise ModelTextError(f"{where}: {key} has {len(words)} entries, {why} needs {size}")
    if dtype is None:  # only the length matters (statistics)
        return None
    try:
        return np.array(list(map(dtype, words)), dtype=np.float64 if dtype is float else np.int64)
    except (ValueError, OverflowError):
        raise ModelTextError(f"{where}: {key} is not a list of numbers") from None


def _check_children(left: np.ndarray, right: np.ndarray, where: str) -> None:
    """Children in range, each node a child once, every node reached from root 0."""
    n_inner = left.size
    n_leaves = n_inner + 1
    for key, child in (("left_child", left), ("right_child", right)):
        bad = np.flatnonzero((child >= n_inner) | (child < -n_leaves) | (child == 0))
        if bad.size:
            raise ModelTextError(
                f"{where}: {key} of node {bad[0]} is {child[bad[0]]}, outside 1..{n_inner - 1} "
                f"(internal nodes) and -1..-{n_leaves} (leaves)"
            )
    both = np.concatenate([left, right])
    inner_seen = np.bincount(both[both >= 0], minlength=n_inner)
    leaf_seen = np.bincount(~both[both < 0], minlength=n_leaves)
    if np.any(inner_seen[1:] != 1) or np.any(leaf_seen != 1):
        node = np.flatnonzero(inner_seen[1:] != 1)
        if node.size:
            what, times = f"internal node {node[0] + 1}", inner_seen[node[0] + 1]
        else:
            leaf = np.flatnonzero(leaf_seen != 1)[0]
            what, times = f"leaf {leaf}", leaf_seen[leaf]
        raise ModelTextError(
            f"{where}: left_child/right_child name {what} {times} times, not once"
        )
    # each node has one parent: a node not reached from the root sits on a cycle. Follow
    # parents by pointer doubling: every node's ancestor chain must end at the root
    parent = np.zeros(n_inner, dtype=np.int64)
    inner_children = both >= 0
    parent[both[inner_children]] = np.tile(np.arange(n_inner), 2)[inner_children]
    for _ in range(max(int(n_inner).bit_length(), 1)):
        parent = parent[parent]
    if np.any(parent != 0):
        raise ModelTextError(
            f"{where}: left_child/right_child form a cycle: internal node "
            f"{np.flatnonzero(parent != 0)[0]} is not reached from the root"
        )


def _check_tree(block: bytes, index: int, n_features: int) -> dict[str, str]:
    """The checked fields of one ``Tree=`` block."""
    where = f"tree {index}"
    fields = _header(block)
    try:
        L = int(fields.get("num_leaves", ""))
        n_cat = int(fields.get("num_cat", "0"))
    except ValueError:
        raise ModelTextError(f"{where}: num_leaves or num_cat is missing or not an integer") \
            from None
    if L < 1 or n_cat < 0:
        raise ModelTextError(f"{where}: num_leaves={L}, num_cat={n_cat} out of range")
    why = f"num_leaves={L}"
    for key in _LEAF_FLOAT:
        _numbers(fields, key, None, L, where, required=key == "leaf_value", why=why)
    _numbers(fields, "leaf_count", None, L, where, required=False, why=why)
    if L == 1:
        return fields
    arrays = {}
    for key in _INTERNAL_INT:
        dtype = int if key in _INDICES else None
        arrays[key] = _numbers(fields, key, dtype, L - 1, where,
                               required=key in ("split_feature", "left_child", "right_child"),
                               why=why)
    for key in _INTERNAL_FLOAT:
        arrays[key] = _numbers(fields, key, None, L - 1, where,
                               required=key == "threshold", why=why)
    feature = arrays["split_feature"]
    bad = np.flatnonzero((feature < 0) | (feature >= n_features))
    if bad.size:
        raise ModelTextError(
            f"{where}: split_feature of node {bad[0]} is {feature[bad[0]]}, outside "
            f"0..{n_features - 1} (max_feature_idx={n_features - 1})"
        )
    _check_children(arrays["left_child"], arrays["right_child"], where)
    decision = arrays["decision_type"]
    if decision is not None and np.any(decision & 1):
        cat = np.flatnonzero(decision & 1)
        idx = _numbers(fields, "threshold", float, L - 1, where, required=True, why=why)[cat]
        bounds = _numbers(fields, "cat_boundaries", int, n_cat + 1, where, required=True,
                          why=f"num_cat={n_cat}")
        words = _numbers(fields, "cat_threshold", int, int(bounds[-1]), where,
                         required=True, why="cat_boundaries") if bounds[-1] >= 0 else None
        if np.any((idx < 0) | (idx >= n_cat) | (idx != np.floor(idx))) or words is None or \
                np.any(np.diff(bounds) < 0) or bounds[0] != 0:
            raise ModelTextError(
                f"{where}: threshold/cat_boundaries of a categorical node are out of range"
            )
    return fields


def check_model_text(text: str | bytes) -> list[dict[str, str]]:
    """Raise :class:`ModelTextError` if LightGBM would crash on or misread model ``text``.

    Parameters
    ----------
    text : str or bytes
        A LightGBM text model (``model_to_string()``, a ``.txt`` model file).

    Returns
    -------
    list of dict
        Each ``Tree=`` block's ``key=value`` lines, in order, as checked (the reader parses
        its trees from them: :func:`~unbiased_criteria.adapters.lightgbm.reader.
        parse_tree_text`).

    Raises
    ------
    ModelTextError
        One line naming the tree and the field: ``tree_sizes`` missing an entry or not the
        byte length of its ``Tree=`` block, no ``end of trees`` line (truncated text), an
        array whose length does not fit ``num_leaves``, a child index out of range, named
        twice or on a cycle, ``split_feature`` above ``max_feature_idx``.
    """
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    starts = [m.start() for m in _BLOCK.finditer(data)]
    end = _END.search(data, starts[0] if starts else 0)
    head = _header(data[: starts[0] if starts else (end.start() if end else len(data))])
    try:
        n_features = int(head["max_feature_idx"]) + 1
    except (KeyError, ValueError):
        raise ModelTextError("model header: max_feature_idx is missing or not an integer") \
            from None
    bounds = starts + [end.start() if end else len(data)]
    sizes = np.diff(np.asarray(bounds, dtype=np.int64))
    if "tree_sizes" in head:
        try:
            declared = np.array(head["tree_sizes"].split(), dtype=np.int64)
        except ValueError:
            raise ModelTextError("tree_sizes: not a list of integers") from None
        if declared.size != sizes.size:
            raise ModelTextError(
                f"tree_sizes: {declared.size} entries for {sizes.size} Tree= blocks (LightGBM "
                "would crash or silently drop trees)"
            )
        bad = np.flatnonzero(declared != sizes)
        if bad.size:
            t = int(bad[0])
            raise ModelTextError(
                f"tree {t}: tree_sizes says {declared[t]} bytes, its Tree= block has {sizes[t]}"
            )
    if end is None:
        where = f"tree {len(starts) - 1}" if starts else "model text"
        raise ModelTextError(f"{where}: no 'end of trees' line follows: the model text is "
                             "truncated")
    return [_check_tree(data[bounds[t] : bounds[t + 1]], t, n_features)
            for t in range(len(starts))]
