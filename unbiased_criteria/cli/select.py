"""``unbiased-criteria select``: features kept by cross-fitted unbiased importance.

A thin wrapper over :class:`unbiased_criteria.UnbiasedSelector` on one data file: the host's
estimator comes from :func:`unbiased_criteria.model_files.host_estimator` (no host call here).
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import numpy as np
import pandas as pd

from .. import model_files
from ..errors import InputError
from .files import _is_text, feature_values, read_table, weight_values
from .output import (
    PROG,
    check_target,
    first_line,
    format_frame,
    name_list,
    output_format,
    short,
    warn,
    write_output,
)

__all__ = ["cmd_select", "param_value"]


def param_value(text: str) -> Any:
    """A ``--param`` value as the estimator expects it: int, float, bool or text."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _task(y: pd.Series, task: str | None, label: str) -> str:
    """``--task``, or classification for a text, boolean, categorical or two-valued label."""
    if task is not None:
        return task
    values = y.nunique(dropna=False)
    if _is_text(y) or y.dtype == bool or isinstance(y.dtype, pd.CategoricalDtype) \
            or values == 2:
        warn(f"--label {label}: {values} distinct values, treated as classes; pass --task "
             "regression to treat them as numbers")
        return "classification"
    return "regression"


#: rows of each class (classification) or in all (regression) the host is refitted on to
#: find the --param it refused: a parameter's type is checked before any training
_PROBE_ROWS = 40


def _probe_rows(labels: np.ndarray, task: str) -> np.ndarray:
    """A few rows, every class among them (XGBoost's classifier refuses missing classes)."""
    if task != "classification":
        return np.arange(min(labels.size, _PROBE_ROWS))
    return np.sort(np.concatenate([np.flatnonzero(labels == c)[:_PROBE_ROWS]
                                   for c in np.unique(labels)]))


def _refused_params(host: str, task: str, given: list[tuple[str, str]], frame: pd.DataFrame,
                    labels: np.ndarray, weight: np.ndarray | None,
                    err: Exception) -> list[str] | None:
    """The ``--param`` values (``KEY=VALUE``) the host refused with ``err``, or None
    when ``err`` is not theirs (a bug: it stays an internal error).

    Hosts refuse some values with a plain Python error from their ``fit`` (LightGBM and
    XGBoost: ``n_estimators=abc`` a TypeError that names no parameter), which tells nothing
    apart from a bug of this library. The host decides: its estimator is fitted on a few of
    the rows with each value alone; a value is refused where that raises ``err``'s kind of
    error and the fit with none of the values does not.
    """
    if not given:
        return None
    rows = _probe_rows(labels, task)

    def raises(params: dict[str, Any]) -> bool:
        estimator = model_files.host_estimator(host, task, params)
        kwargs = {} if weight is None else {"sample_weight": weight[rows]}
        try:
            estimator.fit(frame.iloc[rows], labels[rows], **kwargs)
        except type(err):
            return True
        except Exception:  # refused otherwise: not the error to explain
            return False
        return False

    values = [(key, param_value(text), text) for key, text in given]
    refused = [f"{key}={text}" for key, value, text in values if raises({key: value})]
    if not refused and len(values) > 1 and raises({k: v for k, v, _ in values}):
        refused = [f"{key}={text}" for key, _, text in values]  # only together
    if not refused or raises({}):  # the error without any --param value: not theirs
        return None
    return refused


def cmd_select(args) -> int:
    """``unbiased-criteria select``: the kept columns and the per-feature table."""
    if importlib.util.find_spec("sklearn") is None:
        raise InputError("select needs scikit-learn, which is not installed "
                         "(pip install scikit-learn)")
    from .. import UnbiasedSelector

    check_target(args.output, "--output", {"DATA": args.data})  # before the cross-fit
    args.format = output_format(args.format, args.output)
    frame = read_table(args.data, "DATA")
    for option, column in (("label", args.label), ("weight", args.weight)):
        if column is not None and column not in frame.columns:
            raise InputError(f"DATA {args.data}: no {option} column {column!r} (columns: "
                             f"{short(list(frame.columns))})")
    if args.weight is not None and args.weight == args.label:
        raise InputError(f"--weight {args.weight}: that is the label column")
    for column in args.drop:
        if column not in frame.columns:
            raise InputError(f"--drop {column}: DATA {args.data} has no such column")
        for option, used in (("--label", args.label), ("--weight", args.weight)):
            if column == used:
                raise InputError(f"--drop {column}: that is the {option[2:]} column "
                                 f"({option})")
    frame = frame.drop(columns=args.drop)
    y = frame.pop(args.label)
    if y.isna().any():
        raise InputError(f"DATA {args.data}: the label column {args.label!r} has "
                         f"{int(y.isna().sum())} missing values")
    weight = None if args.weight is None else \
        weight_values(frame.pop(args.weight), "DATA", args.data)
    if frame.shape[1] == 0:
        raise InputError(f"DATA {args.data}: no feature column besides the label")
    # each column as importance and prune read it (text and categories categorical): the
    # host's estimator got the file's own dtypes, and failed on some (TypeError: a bug)
    frame = pd.DataFrame({column: feature_values(
        frame[column], column, "DATA", args.data, categories=True,
        hint=f"; convert it, or leave it out with --drop {column}") for column in frame.columns},
        index=frame.index)
    task = _task(y, args.task, args.label)
    # classes as 0..K-1 in sorted order (XGBoost's classifier accepts nothing else)
    if task == "classification":
        labels = pd.Categorical(y).codes
    else:
        if not (pd.api.types.is_numeric_dtype(y.dtype) or pd.api.types.is_bool_dtype(y.dtype)
                or _is_text(y) or isinstance(y.dtype, pd.CategoricalDtype)):
            # pd.to_numeric reads dates and durations as their nanoseconds, silently
            raise InputError(f"--label {args.label}: --task regression needs numbers, the "
                             f"column holds values of type {y.dtype}")
        numbers = pd.to_numeric(y, errors="coerce")
        if numbers.isna().any():
            text = short([str(v) for v in pd.unique(y[numbers.isna()])])
            raise InputError(f"--label {args.label}: --task regression needs numbers, the "
                             f"column holds text ({text})")
        labels = numbers.to_numpy(np.float64)
    params = {key: param_value(value) for key, value in args.param}
    estimator = model_files.host_estimator(args.host, task, params)
    selector = UnbiasedSelector(
        estimator, cv=args.cv, alpha=args.alpha, max_features=args.max_features,
        correction=None if args.correction == "none" else args.correction,
        threshold=args.threshold, iterations=args.iterations, n_draws=args.n_draws,
        min_k=args.min_k, random_state=args.seed,
    )
    try:
        selector.fit(frame, labels, sample_weight=weight)
    except model_files.host_fit_errors(args.host) as err:  # e.g. --param num_leaves=1
        raise InputError(f"{args.host} refused the parameters or the rows: "
                         f"{first_line(err)}") from None
    except (ValueError, OSError):  # input errors already (main reports them)
        raise
    except Exception as err:  # a TypeError from the host's fit (n_estimators=abc), or a bug
        refused = _refused_params(args.host, task, args.param, frame, labels, weight, err)
        if refused is None:
            raise
        raise InputError(f"--param {', '.join(refused)}: {args.host} refused "
                         f"{'it' if len(refused) == 1 else 'them'}: "
                         f"{type(err).__name__}: {first_line(err)}") from None
    kept = list(selector.get_feature_names_out())
    table = selector.importances_.sort_values("unbiased_gain", ascending=False, kind="stable")
    line = f"kept {len(kept)} of {frame.shape[1]}: {name_list(kept) or '(none)'}"
    if args.format == "table":
        text = f"{line}\n\n{format_frame(table, 'table', index=True)}"
    else:  # stdout stays machine-readable
        print(f"{PROG}: {line}", file=sys.stderr)
        text = format_frame(table, args.format, index=True)
    write_output(text, args.output)
    return 0
