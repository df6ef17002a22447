"""The training hook's Datasets: checked and constructed as ``lightgbm.train`` does.

:func:`construct` takes the raw rows and labels of the training and validation Datasets (before
construction may free them), constructs the Datasets and two Boosters, and returns the row sets
the loop trains on and evaluates (:class:`Rows`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters.lightgbm.compat import (
    bind_params,
    choose_param_value,
    is_constructed,
    unbind_params,
)
from unbiased_criteria.adapters.lightgbm.source import (
    LightGBMSource,
    dump_model,
    parse_parameters,
)

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.model import UnsupportedModelError
from unbiased_criteria.validation import check_labels, check_unique_names

__all__ = ["Labels", "Rows", "Setup", "check_sets", "construct", "check_balanced_bagging",
           "check_min_hessian"]

#: LightGBM's defaults of the parameters that decide on balanced bagging
_BAGGING_DEFAULTS = {"data_sample_strategy": "bagging", "bagging_freq": "0",
                     "pos_bagging_fraction": "1", "neg_bagging_fraction": "1"}


class Labels(np.ndarray):
    """Labels of one set of rows that know those rows (``rows``).

    The core's loop hands every evaluation set's labels, unchanged, to the metrics and to
    ``feval``; the training hook's wrappers find the set's Dataset and init score from them.
    """

    rows: Rows | None

    def __array_finalize__(self, obj):
        self.rows = getattr(obj, "rows", None)


@dataclass(eq=False)
class Rows:
    """One set of rows: its Dataset, raw data (what ``predict`` routes), labels and offsets."""

    name: str
    dataset: lightgbm.Dataset
    data: Any
    y: np.ndarray
    weight: np.ndarray | None
    offset: np.ndarray | None  # (n, K): the Dataset's init_score, None if it has none

    def labels(self) -> Labels:
        out = self.y.view(Labels)
        out.rows = self
        return out

    def shifted(self, raw: np.ndarray) -> np.ndarray:
        """Raw scores plus the Dataset's init score, as LightGBM scores the set."""
        if self.offset is None:
            return raw
        return raw + (self.offset if raw.ndim == 2 else self.offset[:, 0])


def check_sets(train_set, valid_sets, valid_names):
    """Type checks of the Datasets, as ``lightgbm.train`` makes them."""
    if not isinstance(train_set, lightgbm.Dataset):
        raise TypeError(f"train_set must be a lightgbm.Dataset, got {type(train_set).__name__}")
    if valid_sets is None:
        valid_sets = []
    elif isinstance(valid_sets, lightgbm.Dataset):
        valid_sets = [valid_sets]
    for i, ds in enumerate(valid_sets):
        if not isinstance(ds, lightgbm.Dataset):
            raise TypeError(f"valid_sets[{i}] must be a lightgbm.Dataset, got {type(ds).__name__}")
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    check_unique_names(valid_names or [], "valid_names")
    return list(valid_sets), valid_names


def _raw_rows(ds: lightgbm.Dataset, argument: str) -> Any:
    """The raw data of ``ds``, which ``predict(pred_leaf=True)`` routes every round."""
    if getattr(ds, "used_indices", None) is not None:
        raise ValueError(
            f"{argument} is a subset of another Dataset (Dataset.subset); pass a Dataset "
            "built from its own data"
        )
    data = ds.data
    if data is None:
        raise ValueError(
            f"{argument} no longer holds its raw data (it was constructed with "
            "free_raw_data=True): the training hook routes the raw rows through every new "
            "tree; pass an unconstructed Dataset or one made with free_raw_data=False"
        )
    if isinstance(data, str | os.PathLike):
        raise ValueError(
            f"{argument} reads its data from the file {str(data)!r}: load the data and build "
            "the Dataset from an array, DataFrame or sparse matrix"
        )
    if isinstance(data, lightgbm.Sequence) or (
        isinstance(data, list) and data and isinstance(data[0], lightgbm.Sequence)
    ):
        raise ValueError(f"{argument} is built from lightgbm.Sequence objects, not supported")
    if isinstance(data, list):
        data = np.asarray(data, dtype=np.float64)
    return data


def _check_given_labels(ds: lightgbm.Dataset, argument: str) -> None:
    """Check that ``ds`` has numeric labels without NaN, before construction."""
    label = ds.get_label() if is_constructed(ds) else ds.label
    if label is None:
        raise ValueError(f"{argument} has no labels: build it with lightgbm.Dataset(X, label=y)")
    try:
        y = np.asarray(label, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{argument}'s labels must be numeric") from None
    check_labels(y, y.shape[0] if y.ndim else 0, f"{argument}'s label", _objectives.Objective())


def _init_offset(ds: lightgbm.Dataset, K: int) -> np.ndarray | None:
    """The constructed Dataset's init_score as ``(n, K)`` (LightGBM's flat layout is
    class-major), or None."""
    init = ds.get_init_score()
    if init is None:
        return None
    init = np.asarray(init, dtype=np.float64)
    n = ds.num_data()
    if init.ndim == 2:
        return init.reshape(n, K)
    return init.reshape(K, n).T.copy()


def _row_set(ds, data, name, argument, K) -> Rows:
    """A constructed Dataset's rows, labels (float32, as LightGBM stores them) and weights."""
    y = np.asarray(ds.get_label(), dtype=np.float32).astype(np.float64)
    w = ds.get_weight()
    w = None if w is None else np.asarray(w, dtype=np.float32).astype(np.float64)
    if w is not None and (not np.all(np.isfinite(w)) or np.any(w < 0)):
        raise ValueError(f"{argument}'s weights must be finite and non-negative")
    return Rows(name, ds, data, y, w, _init_offset(ds, K))


@dataclass
class Setup:
    """The constructed Datasets and Boosters of one training run."""

    host: lightgbm.Booster | None  # objective 'none': grows the trees (set last)
    source: LightGBMSource  # header and parameters of the model lightgbm.train would write
    metric_info: list[tuple[str, bool]]  # LightGBM's metric names and higher_is_better
    n_outputs: int
    dump: dict  # the host's dump_model() before training: feature names and infos
    train_rows: Rows
    eval_rows: list[Rows]  # the training set first if it is evaluated, then the others


def construct(params, name, train_set, valid_sets, valid_names,
              start: Callable[[Setup], np.ndarray | None] | None = None) -> Setup:
    """Construct the Datasets as ``lightgbm.train`` does, and the two Boosters.

    A Booster with the real objective (never trained) gives the written model's header and
    ``parameters:`` and LightGBM's metric names; a Booster with ``objective='none'`` grows the
    trees. Raw data and labels are taken first: construction may free them. ``start(setup)``
    (``setup.host`` still None) gives the loop's init score ``(K,)``; the growing Booster's
    own training scores start from it (:func:`_host_booster`).
    """
    train_data = _raw_rows(train_set, "train_set")
    _check_given_labels(train_set, "train_set")
    train_name, reduced = "training", []
    for i, ds in enumerate(valid_sets):
        if ds is train_set:
            if valid_names is not None:
                train_name = valid_names[i]
            continue
        argument = f"valid_sets[{i}]"
        data = _raw_rows(ds, argument)
        _check_given_labels(ds, argument)
        nm = valid_names[i] if valid_names is not None and len(valid_names) > i else f"valid_{i}"
        reduced.append((ds, data, nm, argument))
    has_train_eval = any(ds is train_set for ds in valid_sets)

    host_params = choose_param_value(params, "metric")
    host_params.update(objective="none", metric="None")
    bind_params(train_set, [ds for ds, *_ in reduced], params)
    try:
        template = lightgbm.Booster(params=params, train_set=train_set)
        for ds, *_ in reduced:
            ds.construct()
        text = template.model_to_string(num_iteration=-1)
        metric_info = [(r.metric_name, bool(r.maximize)) for r in template.eval_train()]
        K = template.num_model_per_iteration()
        dump = dump_model(template, num_iteration=-1)
        del template
        train_rows = _row_set(train_set, train_data, train_name, "train_set", K)
        if train_rows.weight is not None and not train_rows.weight.sum() > 0:
            raise ValueError("train_set's weights sum to zero: no row would count")
        eval_rows = [train_rows] if has_train_eval else []
        eval_rows += [_row_set(ds, data, nm, arg, K) for ds, data, nm, arg in reduced]
        source = LightGBMSource(text=text, params=parse_parameters(text), objective=name,
                                n_leaves=np.zeros(0, dtype=np.int64))
        setup = Setup(None, source, metric_info, K, dump, train_rows, eval_rows)
        init = None if start is None else start(setup)
        setup.host = _host_booster(train_set, host_params, init)
    finally:
        unbind_params([train_set] + [ds for ds, *_ in reduced])
    if has_train_eval:
        setup.host.set_train_data_name(train_name)
    return setup


def check_balanced_bagging(param: Callable[[str], Any], n_positive: int,
                           when: str = "") -> None:
    """Refuse balanced bagging where ``lightgbm.train`` would apply it.

    LightGBM bags positive and negative rows at their own rates (``pos_bagging_fraction``,
    ``neg_bagging_fraction``) only when its objective counts positive rows: its binary
    objective, with at least one label > 0 (``ObjectiveFunction::NumPositiveData``), bagging
    on (``bagging_freq > 0``, ``data_sample_strategy='bagging'``). The hook grows the trees on
    a Booster with objective ``'none'``, which counts none: LightGBM would silently bag no
    row there. Its bags (LightGBM's own random streams, rows left out of the histograms) cannot
    be reproduced with zero gradients either, so they are refused.

    Parameters
    ----------
    param : callable
        ``param(name)``: LightGBM's value of parameter ``name`` (aliases resolved), None or
        ``""`` where it is not set.
    n_positive : int
        Training rows with a label > 0 when the objective is LightGBM's binary one, else 0.
    when : str
        Where the parameters were set, for the message (e.g. ``" set by a callback"``).

    Raises
    ------
    UnsupportedModelError
        Balanced bagging that LightGBM would apply.
    """
    if n_positive <= 0:
        return

    def value(name: str) -> str:
        v = param(name)
        return _BAGGING_DEFAULTS[name] if v is None or v == "" else str(v)

    if value("data_sample_strategy").lower() != "bagging" or float(value("bagging_freq")) <= 0:
        return
    given = {k: float(value(k)) for k in ("pos_bagging_fraction", "neg_bagging_fraction")}
    given = {k: v for k, v in given.items() if v < 1.0}
    if given:
        named = ", ".join(f"{k}={v:g}" for k, v in given.items())
        raise UnsupportedModelError(
            f"balanced bagging ({named}){when} is not supported by the training hook: LightGBM "
            "applies it only with its own binary objective, which counts the positive rows, "
            "and the hook grows the trees from its own gradients (objective 'none'), where "
            "LightGBM would silently bag no row; use bagging_fraction with bagging_freq "
            "(one rate for all rows) instead"
        )


def check_min_hessian(value: Any, when: str = "") -> None:
    """Refuse ``min_sum_hessian_in_leaf <= 0`` (called only when rows are held out).

    LightGBM estimates a child's row count from its share of the hessian. Held-out rows have
    hessian 0, so a split whose child holds no row can look like one with rows; only
    ``min_sum_hessian_in_leaf > 0`` rules it out, and with 0 LightGBM picks it and aborts
    (``Check failed: (best_split_info.left_count) > (0)``). No positive floor is safe for
    every data set (rounding of the hessian sums grows with them), so the choice is the user's.

    Parameters
    ----------
    value : Any
        LightGBM's value of ``min_sum_hessian_in_leaf`` (aliases resolved).
    when : str
        Where it was set, for the message (e.g. ``", set by a callback before round 3"``);
        empty for the user's ``params``.

    Raises
    ------
    ValueError
        ``value`` is a number ``<= 0``.
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return  # not a number: LightGBM's own check names it
    if not number > 0:
        whose = "" if when else "params' "
        raise ValueError(
            f"{whose}min_sum_hessian_in_leaf (or an alias such as "
            f"min_child_weight) is {number:g}{when}: with held-out rows (holdout_fraction > 0, "
            "zero hessian) LightGBM then can choose a split with an empty child and abort; set "
            "it > 0 (LightGBM's default is 1e-3) or holdout_fraction=0"
        )


def _host_booster(train_set: lightgbm.Dataset, params: dict[str, Any],
                  init: np.ndarray | None) -> lightgbm.Booster:
    """The Booster that grows the trees, its training scores starting from ``init`` (K,).

    LightGBM copies a Dataset's init_score into the Booster's training scores when it makes
    the Booster, so the init score is set on ``train_set`` (which has none: the loop's init
    is 0 otherwise) just for that, then cleared. Those scores then add the same leaf values
    to the same start as the loop's (a grower's ``train_scores``).
    """
    if init is None or not np.any(init):
        return lightgbm.Booster(params=params, train_set=train_set)
    if train_set.get_init_score() is not None:
        raise RuntimeError("the loop's init score must be 0 when train_set has an init_score")
    n = train_set.num_data()
    # class-major, as LightGBM lays out multiclass init scores
    train_set.set_field("init_score", np.repeat(np.asarray(init, dtype=np.float64), n))
    try:
        return lightgbm.Booster(params=params, train_set=train_set)
    finally:
        train_set.set_field("init_score", None)
        train_set.init_score = None
