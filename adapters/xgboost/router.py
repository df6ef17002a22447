"""Route rows through an XGBoost model's trees with XGBoost's own ``pred_leaf``:
:func:`make_router`.

``predict(pred_leaf=True)`` returns XGBoost's node ids, which are the IR's (trees with
tombstones are mapped, see :mod:`.layout`). Missing values (NaN, absent sparse entries, an
estimator's ``missing``) go where XGBoost sends them, since XGBoost routes.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xgboost
from scipy import sparse
from unbiased_criteria.adapters.xgboost.compat import (
    UnreadableCategories,
    category_records,
    decode_record,
    encode_categories,
    is_text,
    misrecorded_reading,
    model_version,
    records_text_faithfully,
    shown_record,
    unreadable_message,
)
from unbiased_criteria.adapters.xgboost.layout import _booster, _gbtree, _read_node_map
from unbiased_criteria.adapters.xgboost.model_file import error_reason

from unbiased_criteria.model import Model, Router, chunk_size, host_call_trees
from unbiased_criteria.validation import check_column_names, check_matrix


def _feature_types(js: Mapping) -> list[str] | None:
    types = js["learner"].get("feature_types") or None
    return list(types) if types else None


def host_column_names(columns: pd.Index) -> list[str]:
    """The feature names XGBoost gives a DataFrame's ``columns``: each label as text, a
    MultiIndex's levels joined by a space (``("g", "a")`` is ``"g a"``), as its
    ``DMatrix`` names them."""
    if isinstance(columns, pd.MultiIndex):
        return [" ".join(str(level) for level in c) for c in columns]
    return [str(c) for c in columns]


def _check_X(X: Any, model_ir: Model, argument: str, missing: float) -> tuple[Any, dict]:
    """``X`` checked against the model (never modified) and the DMatrix keywords for it."""
    forest = model_ir.forest
    js = model_ir.source
    has_names = bool(js["learner"].get("feature_names"))
    names = list(forest.feature_names) if has_names else None
    types = _feature_types(js)
    categorical = bool(types and "c" in types)
    X = check_matrix(X, forest.n_features, argument)
    kwargs: dict[str, Any] = {"missing": missing}
    if isinstance(X, pd.DataFrame):
        if names is not None:
            check_column_names(host_column_names(X.columns), names, argument)
        kwargs["enable_categorical"] = True
    else:
        kwargs.update(feature_names=names)
        if categorical:
            kwargs.update(feature_types=types, enable_categorical=True)
    if sparse.issparse(X) and X.format not in ("csr", "csc"):
        X = X.tocsr()  # row slices below
    return X, kwargs


def _stored_records(bst: xgboost.Booster) -> dict[str, list] | None:
    """Per feature name, the categories the model stores (XGBoost 3.1+; text as its stored
    bytes, :func:`~unbiased_criteria.adapters.xgboost.compat.category_records`); None when
    they cannot be read here (older XGBoost, no pyarrow)."""
    try:
        pairs = category_records(bst)
    except ImportError:
        return None
    return None if pairs is None else {name: rec for name, rec in pairs if rec is not None}


def _on_stored(X: pd.DataFrame, c: Any, record: list, writer: tuple[int, int],
               argument: str) -> pd.Series | None:
    """Column ``c`` of ``X`` (a pandas category) on the categories the model stores, as
    XGBoost recodes it by value when the whole model predicts; None where XGBoost reads it as
    it is (its categories are the stored ones, in their order).

    Non-ASCII text is matched only where XGBoost is known to match it by value: XGBoost 3.2
    records a pandas frame's such categories with character counts as byte offsets (cut and
    shifted names), in the model and in the frame it predicts alike, so only a frame listing
    the training categories in their order is read right; any other is refused.
    """
    frame_cats = list(X[c].cat.categories)
    if list(record) == frame_cats:
        return None
    text = is_text(record) and all(isinstance(v, str) for v in frame_cats)
    # the model's own text may be misrecorded: only non-ASCII text is
    non_ascii_record = text and not all(v.isascii() for v in record)
    if non_ascii_record:
        if encode_categories(frame_cats) == record:
            return None  # XGBoost records the frame's categories as the model's: read as is
        cats = decode_record(str(c), record, writer)  # UnreadableCategories if it cannot
        if not records_text_faithfully():  # the frame's would be misrecorded
            raise UnreadableCategories(unreadable_message(str(c), record))
    else:
        if text and not all(v.isascii() for v in frame_cats):
            # the model's categories read as they are; the frame's non-ASCII ones may be
            # misrecorded by XGBoost, which then recodes the frame by its record of them
            _check_frame_record(X, c, frame_cats, record)
        cats = [v.decode("ascii") if isinstance(v, bytes) else v for v in record]
    if frame_cats == cats:
        return None
    values = X[c].dropna()
    unseen = pd.unique(values[~values.isin(cats)])
    if len(unseen):
        if non_ascii_record and misrecorded_reading(record, frame_cats):
            raise UnreadableCategories(unreadable_message(str(c), record))
        raise ValueError(
            f"{argument}'s column {c!r} holds categories the model was not trained with: "
            f"{', '.join(repr(v) for v in unseen[:5])} (it stores {shown_record(record)})")
    return X[c].cat.set_categories(cats)


def _check_frame_record(X: pd.DataFrame, c: Any, frame_cats: list, record: list) -> None:
    """Refuse column ``c`` of ``X`` where XGBoost, recoding it onto the model's ASCII
    categories ``record`` by its own record of the frame's categories, would give a row
    another category than its value (non-ASCII categories XGBoost 3.2 miscounts shift the
    ones listed after them); only categories some row holds matter (an unseen one held by
    a row is the caller's error)."""
    recorded = encode_categories(frame_cats)
    if recorded is None:
        return
    position = {v: j for j, v in enumerate(record)}
    by_xgboost = [position.get(v) for v in recorded]
    by_value = [position.get(v.encode("utf-8")) for v in frame_cats]
    used = set(pd.unique(X[c].cat.codes[X[c].cat.codes >= 0]))
    wrong = [frame_cats[i] for i in range(len(frame_cats))
             if by_xgboost[i] != by_value[i] and i in used]
    if wrong:
        raise UnreadableCategories(
            "it lists non-ASCII categories, which the installed "
            f"XGBoost {xgboost.__version__} records with character counts taken as byte "
            f"offsets, so it would read {', '.join(repr(v) for v in wrong[:5])} as other "
            "categories than they are: list the non-ASCII categories after the others "
            "(X[c].cat.reorder_categories), drop the unused ones "
            "(X[c].cat.remove_unused_categories()), or use XGBoost 3.4 or later")


def _recode_categories(X: pd.DataFrame, bst: xgboost.Booster, argument: str,
                       writer: tuple[int, int]) -> tuple[pd.DataFrame, bool]:
    """``X`` with its category columns on the categories the model stores, as XGBoost
    recodes them when it predicts with the whole model; and whether a sliced Booster may
    route it. A slice forgets the stored categories and reads the codes as they are, so a
    held-out frame with categories reordered or missing was routed by the wrong codes.
    ``writer``: the XGBoost version that wrote the model."""
    if not X.columns.is_unique:  # X[c] would be a frame; XGBoost names features by column
        dup = pd.unique(X.columns[X.columns.duplicated()])
        raise ValueError(f"{argument} has duplicate column names "
                         f"({', '.join(repr(c) for c in dup[:5])}): XGBoost needs one name "
                         "per feature")
    cat_columns = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    stored = _stored_records(bst)
    # the model's name of each column (XGBoost's: MultiIndex levels joined by a space)
    names = dict(zip(X.columns, host_column_names(X.columns), strict=True))
    plain = [c for c in X.columns if stored and stored.get(names[c]) is not None
             and c not in cat_columns]
    text = [c for c in plain if not (pd.api.types.is_numeric_dtype(X[c].dtype)
                                     or pd.api.types.is_bool_dtype(X[c].dtype))]
    if text:  # not codes either: XGBoost cannot read them at all
        c = text[0]
        raise ValueError(
            f"{argument}'s column {c!r} is a categorical feature of the model (categories "
            f"{shown_record(stored[names[c]])}) but holds "
            f"{X[c].dtype} values: pass it as a pandas category, as when the model was "
            f"trained (.astype('category'))"
            + (f"; so must {', '.join(repr(t) for t in text[1:])}" if len(text) > 1 else ""))
    if plain:  # XGBoost takes such values as category codes: say so, as it does not
        c = plain[0]
        warnings.warn(
            f"{argument}'s column {c!r} is a categorical feature of the model (categories "
            f"{shown_record(stored[names[c]])}) but holds "
            f"{X[c].dtype} values: they are read as category codes "
            f"0..{len(stored[names[c]]) - 1}, as XGBoost predicts such a frame; pass the "
            "column as a pandas category to match its values to the model's categories"
            + (f" ({len(plain)} such columns)" if len(plain) > 1 else ""),
            UserWarning, stacklevel=5)
    if not cat_columns:
        return X, True
    if stored is None:  # cannot recode here: route with the whole model, which recodes
        return X, False
    recoded = {}
    for c in cat_columns:
        record = stored.get(names[c])
        if record is None:
            continue
        try:
            column = _on_stored(X, c, record, writer, argument)
        except UnreadableCategories as err:
            raise ValueError(f"{argument}'s column {c!r} cannot be matched to the model's "
                             f"categories: {err}") from None
        if column is not None:
            recoded[c] = column
    if not recoded:
        return X, True
    out = X.copy(deep=False)  # by label: X.assign(**{str(c): ...}) added a column beside 1
    for c, v in recoded.items():
        out[c] = v
    return out, True


def _stores_no_categories(model: Any, model_ir: Model) -> bool | None:
    """True for a model known to store no categories (a dump, or trained before XGBoost
    3.1): its trees split on category codes; False for one that stores them; None where the
    installed XGBoost cannot say (3.1+ without pyarrow: it may store them)."""
    if not isinstance(model_ir.source, Mapping) or "learner" not in model_ir.source:
        return True  # a dump: it stores none
    try:
        pairs = category_records(_booster(model))
    except ImportError:
        return None
    return pairs is None or not any(cats is not None for _, cats in pairs)


def reads_category_codes(model: Any, model_ir: Model) -> bool:
    """Whether ``model`` is known to read category codes (it stores no categories), so that
    :func:`match_categories` codes a held-out frame's as the training frame's and refuses
    what it cannot match."""
    return bool(_stores_no_categories(model, model_ir))


def match_categories(model: Any, model_ir: Model, X_train: Any, X_valid: Any,
                     argument: str = "X_valid") -> Any:
    """``X_valid`` with its category columns coded as ``X_train``'s, for a model that stores
    no categories (trained before XGBoost 3.1, or loaded under it): such a model's trees
    split on category codes, and each frame's are the positions of its own categories, so a
    held-out frame listing them in another order, or a subset of them, was routed by other
    codes than the training rows in the same call. The training frame's coding is taken as
    the model's (the check of its first iteration's hessian sums against the model's own
    tells where it is not). A model that stores its categories matches each frame to them
    by value (:func:`make_router`): ``X_valid`` is returned as it is. Not modified.

    Raises
    ------
    ValueError
        A held-out category the training frame does not list (it has no code there), or a
        column that is a pandas category in one frame and not in the other (codes on one
        side, values read as codes on the other).
    """
    if not (isinstance(X_train, pd.DataFrame) and isinstance(X_valid, pd.DataFrame)):
        return X_valid
    stores_none = _stores_no_categories(model, model_ir)
    if stores_none is False:
        return X_valid
    # None (it may store them, then XGBoost matches): matched where harmless, not refused
    known = stores_none is True
    recoded = {}
    for c in X_valid.columns:
        if c not in X_train.columns or not X_train.columns.is_unique:
            continue
        train_cat = isinstance(X_train[c].dtype, pd.CategoricalDtype)
        valid_cat = isinstance(X_valid[c].dtype, pd.CategoricalDtype)
        if not (train_cat or valid_cat):
            continue
        if train_cat != valid_cat:
            if not known:
                continue
            raise ValueError(
                f"{argument}'s column {c!r} is {'a' if valid_cat else 'not a'} pandas category "
                f"and X_train's is {'a' if train_cat else 'not a'} category: the model stores "
                "no categories (trained before XGBoost 3.1), so it reads category codes, and "
                "the two frames would give it different ones; pass the column the same way "
                "in both (.astype('category') with the same categories)")
        cats = X_train[c].cat.categories
        if X_valid[c].cat.categories.equals(cats):
            continue
        values = X_valid[c].dropna()
        unseen = pd.unique(values[~values.isin(cats)])
        if len(unseen):
            if not known:
                continue
            raise ValueError(
                f"{argument}'s column {c!r} holds categories X_train's does not list: "
                f"{', '.join(repr(v) for v in unseen[:5])}; the model stores no categories "
                "(trained before XGBoost 3.1), so its trees split on X_train's category codes, "
                "which these values have none of")
        recoded[c] = X_valid[c].cat.set_categories(cats)
    if not recoded:
        return X_valid
    out = X_valid.copy(deep=False)
    for c, v in recoded.items():
        out[c] = v
    return out


_CAST_BLOCK = 1 << 14  # values cast per step (a 64 KB temporary at most)


def _dmatrix(X: Any, start: int, stop: int, kwargs: dict, argument: str) -> xgboost.DMatrix:
    """Rows ``start:stop`` of ``X`` as a DMatrix."""
    part = X if (start == 0 and stop == X.shape[0]) else (
        X.iloc[start:stop] if isinstance(X, pd.DataFrame) else X[start:stop]
    )
    try:
        return xgboost.DMatrix(part, **kwargs)
    except (ValueError, TypeError, xgboost.core.XGBoostError) as err:
        raise ValueError(f"{argument} cannot be read as XGBoost data: "
                         f"{error_reason(err)}") from None


def _plan(n_rows: int, n_features: int, n_trees: int, per_iteration: int,
          memory_budget: int) -> tuple[int, int]:
    """(trees per call, rows per DMatrix) within ``memory_budget``.

    A DMatrix holds 8 bytes per value (index and float32) and building it may take a float32
    copy of the rows: 16 bytes per value with our share; per row and tree, XGBoost's float32
    output, its copy and our int32 ids take 16. One DMatrix of all rows, built once, with as
    many trees per call as then fit (at most the third of the budget our ids may take, and
    :func:`~unbiased_criteria.model.host_call_trees` of XGBoost's float32 ids), unless not even
    one iteration would: then rows in several DMatrix objects, built anew for each call.
    (Building a DMatrix costs about as much as routing its rows through a dozen trees, so one
    build beats many; at 1M rows and 20 features one DMatrix of all rows takes 13 trees
    per call where row chunks took 44 trees per call and 36 builds over 500 trees.)
    """
    chunk = chunk_size(n_rows, n_trees, memory_budget // 3)
    per_value = 16 * max(n_features, 1)
    whole = (memory_budget - per_value * n_rows) // max(16 * n_rows, 1)
    if whole >= per_iteration:
        cap = max(host_call_trees(n_rows, 4), per_iteration)
        chunk = int(min(chunk, whole, cap))
        if chunk >= per_iteration:
            chunk -= chunk % per_iteration  # whole iterations: no tree is predicted twice
        return max(chunk, 1), max(n_rows, 1)
    if chunk >= per_iteration:
        chunk -= chunk % per_iteration
    per_row = per_value + 12 * chunk
    left = memory_budget - 4 * n_rows * chunk
    rows = n_rows if per_row * n_rows <= left else max(256, left // per_row)
    return max(int(chunk), 1), max(int(min(rows, n_rows)), 1)


def make_router(
    model: xgboost.Booster | xgboost.XGBModel,
    model_ir: Model,
    X: Any,
    argument: str,
    memory_budget: int = 512 * 2**20,
) -> Router:
    """Route the rows of ``X`` through the model's trees with XGBoost's own ``pred_leaf``.

    Parameters
    ----------
    model : xgboost.Booster or fitted xgboost.XGBModel
        The model ``model_ir`` was read from.
    model_ir : Model
    X : numpy array, pandas DataFrame (category dtype allowed) or scipy sparse matrix
        Absent sparse entries and NaN are missing values (for an XGBModel, its ``missing``
        value too). Its feature count, and for a DataFrame its column names, must match the
        model. ``X`` is not modified.
    argument : str
        Name of ``X`` in error messages.
    memory_budget : int
        Bytes allowed for one chunk of leaf ids and the DMatrix they are predicted from: when
        a DMatrix of all rows does not fit beside the ids, each call builds DMatrix objects
        of a slice of rows at a time (slower, bounded memory).

    Returns
    -------
    Router
        ``leaf_nodes(start, stop)`` gives IR node ids (int32, ``(n, stop - start)``); ``chunk``
        is a whole number of iterations whenever the budget allows one.
    """
    bst = _booster(model)
    forest = model_ir.forest
    missing = getattr(model, "missing", np.nan) if isinstance(model, xgboost.XGBModel) \
        else np.nan
    X, kwargs = _check_X(X, model_ir, argument, np.nan if missing is None else missing)
    may_slice = True
    if isinstance(X, pd.DataFrame):
        X, may_slice = _recode_categories(X, bst, argument, model_version(model_ir.source))
    n_rows = int(X.shape[0])
    trees_json = _gbtree(model_ir.source["learner"])[0]["trees"]
    if len(trees_json) != forest.n_trees or bst.num_boosted_rounds() != (
        int(forest.tree_iteration[-1]) + 1 if forest.n_trees else 0
    ):
        raise ValueError("model_ir was not read from model")
    maps = [_read_node_map(t, forest.trees[i], i) for i, t in enumerate(trees_json)]
    iteration = np.asarray(forest.tree_iteration, dtype=np.int64)
    n_iter = int(iteration[-1]) + 1 if iteration.size else 0
    first = np.searchsorted(iteration, np.arange(n_iter + 1))  # first tree of each iteration
    per_iteration = int(np.bincount(iteration).max()) if iteration.size else 1
    chunk, rows = _plan(n_rows, forest.n_features, forest.n_trees, per_iteration,
                        memory_budget)
    row_starts = list(range(0, n_rows, rows)) or [0]
    # one DMatrix of all rows when it fits the budget (built once); else one per row chunk,
    # built for each call (the first one now: bad data fails here)
    first_dmat = _dmatrix(X, 0, min(rows, n_rows), kwargs, argument)
    whole = first_dmat if len(row_starts) == 1 else None

    def leaf_nodes(start: int, stop: int) -> np.ndarray:
        if not 0 <= start < stop <= forest.n_trees:
            raise ValueError(f"tree range [{start}, {stop}) outside 0..{forest.n_trees}")
        # slicing a Booster selects iterations; take the iterations covering the range
        it0, it1 = int(iteration[start]), int(iteration[stop - 1]) + 1
        if not may_slice:
            it0, it1 = 0, n_iter
        part = bst if (it0 == 0 and it1 == n_iter) else bst[it0:it1]
        offset = start - int(first[it0])
        if whole is not None:
            raw = part.predict(whole, pred_leaf=True).reshape(n_rows, -1)
            if raw.dtype == np.float32 and raw.flags.writeable and raw.flags.c_contiguous:
                # cast XGBoost's float32 ids to int32 in their own buffer, 16k values at a
                # time: one call over the whole overlapping buffer made numpy copy the chunk
                # first (first touching fresh memory cost more than the cast)
                ids = raw.view(np.int32)
                flat, flat_ids = raw.reshape(-1), ids.reshape(-1)
                for s in range(0, flat.size, _CAST_BLOCK):
                    flat_ids[s : s + _CAST_BLOCK] = flat[s : s + _CAST_BLOCK]
                out = ids[:, offset : offset + stop - start]
            else:
                out = raw[:, offset : offset + stop - start].astype(np.int32)
            del raw
        else:
            out = np.empty((n_rows, stop - start), dtype=np.int32)
            for r0 in row_starts:
                r1 = min(r0 + rows, n_rows)
                dmat = _dmatrix(X, r0, r1, kwargs, argument)
                raw = part.predict(dmat, pred_leaf=True).reshape(r1 - r0, -1)
                out[r0:r1] = raw[:, offset : offset + stop - start]
                del dmat, raw
        for j, t in enumerate(range(start, stop)):
            if maps[t] is not None:
                out[:, j] = maps[t][out[:, j]]
        return out

    @functools.lru_cache(maxsize=4)  # a tree's few features, read once (copies: n_rows each)
    def feature_values(j: int) -> np.ndarray:
        """The rows' values of feature ``j`` as XGBoost compares them: float32, NaN missing
        (NaN, the estimator's ``missing`` value, an absent sparse entry)."""
        if isinstance(X, pd.DataFrame):
            col = X.iloc[:, j]
            if isinstance(col.dtype, pd.CategoricalDtype):
                codes = col.cat.codes.to_numpy()
                values = np.where(codes < 0, np.nan, codes.astype(np.float64))
            else:
                values = col.to_numpy(np.float64, na_value=np.nan)
        elif sparse.issparse(X):
            column = sparse.csc_matrix(X[:, [j]])
            values = np.full(n_rows, np.nan)
            values[column.indices] = column.data
        else:
            values = np.array(X[:, j], dtype=np.float64)
        if missing is not None and not np.isnan(missing):
            values[values == missing] = np.nan
        values = values.astype(np.float32).astype(np.float64)
        values.setflags(write=False)  # shared by the cache
        return values

    del first_dmat
    return Router(n_rows=n_rows, leaf_nodes=leaf_nodes, chunk=chunk,
                  feature_values=feature_values)
