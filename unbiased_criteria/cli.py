"""Command line: ``unbiased-criteria importance | prune | demo``.

A thin wrapper over the Python API (:func:`unbiased_criteria.unbiased_importance`,
:func:`unbiased_criteria.api.prune_forest`). It reads data files (CSV or Parquet, by suffix)
and model files (LightGBM text, XGBoost JSON or UBJ, recognised from their content).

User errors go to stderr as one line ``unbiased-criteria: error: ...`` with exit code 2;
nothing prints a traceback unless ``--debug`` is given. Warnings go to stderr as one line
``unbiased-criteria: warning: ...``. Results go to stdout (or ``--output``).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import logging
import math
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .files import write_atomic

__all__ = [
    "main",
    "build_parser",
    "load_model",
    "read_table",
    "model_schema",
    "prepare_data",
    "ModelFile",
    "Schema",
    "UserError",
]

PROG = "unbiased-criteria"


class UserError(Exception):
    """An error caused by the command's input, reported without a traceback."""


# ------------------------------------------------------------------------------ model files


@dataclass(frozen=True)
class ModelFile:
    """A model loaded from a file.

    Attributes
    ----------
    path : pathlib.Path
    host : {"lightgbm", "xgboost"}
    format : {"text", "json", "ubj"}
        The file's format: LightGBM text, XGBoost JSON or XGBoost UBJ.
    booster : lightgbm.Booster or xgboost.Booster
    text : str
        The LightGBM model text ("" for XGBoost).
    """

    path: Path
    host: str
    format: str
    booster: Any
    text: str = field(default="", repr=False)


def _import_host(host: str, why: str) -> Any:
    if importlib.util.find_spec(host) is None:
        raise UserError(f"{why} needs {host}, which is not installed (pip install {host})")
    return importlib.import_module(host)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _xgboost_reason(err: BaseException) -> str:
    """XGBoost's own reason, without its ``[time] file:line:`` prefix and stack trace."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Stack trace", "[bt]"))]
    text = lines[0] if lines else type(err).__name__
    return re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", text)


def _readable_file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} {path}: no such file")
    if p.is_dir():
        raise UserError(f"{what} {path}: is a directory, not a file")
    return p


def load_model(path: str | Path) -> ModelFile:
    """Load a LightGBM or XGBoost model file, recognising the format from the file's content.

    LightGBM text models start with ``tree`` on a line of its own; anything else is handed to
    ``xgboost.Booster`` (JSON starts with ``{`` followed by a quote, UBJ with ``{`` and binary
    markers), whatever the file's suffix.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    ModelFile

    Raises
    ------
    UserError
        The file is missing, unreadable, or none of the formats above.
    """
    p = _readable_file(path, "model")
    try:
        data = p.read_bytes()
    except OSError as err:
        raise UserError(f"model {path}: cannot be read: {err.strerror or err}") from None
    if not data.strip():
        raise UserError(f"model {path}: is empty, not a model file")
    if data.startswith((b"tree\n", b"tree\r\n")):
        lightgbm = _import_host("lightgbm", f"model {path} (a LightGBM text model)")
        from unbiased_criteria.adapters.lightgbm.text_model import check_model_text

        try:
            text = data.decode("utf-8")
            # LightGBM aborts the process on some corrupt files: check the text first
            check_model_text(text)
            booster = lightgbm.Booster(model_str=text)
        except (UnicodeDecodeError, ValueError, lightgbm.basic.LightGBMError) as err:
            raise UserError(
                f"model {path}: not a valid LightGBM text model: {_first_line(err)}"
            ) from None
        return ModelFile(p, "lightgbm", "text", booster, text)
    not_a_model = (
        f"model {path}: not a model file (neither a LightGBM text model, which starts with "
        "'tree', nor an XGBoost JSON or UBJ model)"
    )
    if not data.lstrip().startswith(b"{"):
        raise UserError(not_a_model)
    xgboost = _import_host("xgboost", f"model {path} (an XGBoost model)")
    fmt = "json" if re.match(rb"\s*\{\s*[\"}]", data) else "ubj"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            booster = xgboost.Booster(model_file=bytearray(data))
        except xgboost.core.XGBoostError as err:
            raise UserError(f"model {path}: not a model file: XGBoost rejects it as "
                            f"{fmt.upper()}: {_xgboost_reason(err)}") from None
    return ModelFile(p, "xgboost", fmt, booster)


# ------------------------------------------------------------------------------ data files

_PARQUET = (".parquet", ".pq", ".parq")
_CSV = (".csv", ".txt")
_TSV = (".tsv", ".tab")
_COMPRESSED = ("", ".gz", ".bz2", ".zip", ".xz", ".zst")


def _has_suffix(name: str, suffixes: tuple[str, ...]) -> bool:
    return any(name.endswith(s + c) for s in suffixes for c in _COMPRESSED)


def read_table(path: str | Path, option: str = "data") -> pd.DataFrame:
    """Read a CSV (``.csv``, ``.tsv``, optionally compressed) or Parquet file by its suffix.

    Parameters
    ----------
    path : str or pathlib.Path
    option : str
        The command-line option that named the file, for error messages.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    UserError
        Missing, unreadable or empty file, unknown suffix.
    """
    p = _readable_file(path, option)
    name = p.name.lower()
    try:
        if _has_suffix(name, _PARQUET):
            if importlib.util.find_spec("pyarrow") is None and \
                    importlib.util.find_spec("fastparquet") is None:
                raise UserError(f"{option} {path}: reading Parquet needs pyarrow "
                                "(pip install pyarrow)")
            frame = pd.read_parquet(p)
        elif _has_suffix(name, _CSV):
            frame = pd.read_csv(p)
        elif _has_suffix(name, _TSV):
            frame = pd.read_csv(p, sep="\t")
        else:
            raise UserError(
                f"{option} {path}: unknown data format; name the file *.csv, *.tsv or "
                "*.parquet"
            )
    except UserError:
        raise
    except (ValueError, OSError, ImportError) as err:  # ParserError, ArrowInvalid, ...
        raise UserError(f"{option} {path}: cannot be read: {_first_line(err)}") from None
    if frame.shape[0] == 0:
        raise UserError(f"{option} {path}: has no rows")
    frame.columns = [str(c) for c in frame.columns]
    return frame


@dataclass(frozen=True)
class Schema:
    """The features a model expects, as far as its file tells.

    Attributes
    ----------
    n_features : int
    names : list of str or None
        Feature names, or None when the model has none (columns are then taken by position).
    categorical : dict of int to list or None
        Categorical features by index: the categories the model was trained with (pandas
        categories of a LightGBM model, XGBoost's stored categories), or None when the model
        stores none (the data must then hold the integer codes).
    host : str
    """

    n_features: int
    names: list[str] | None
    categorical: dict[int, list | None]
    host: str


def _lightgbm_schema(mf: ModelFile) -> Schema:
    booster = mf.booster
    names = [str(n) for n in booster.feature_name()]
    n = len(names)
    default = names == [f"Column_{i}" for i in range(n)]
    cat: set[int] = set()
    m = re.search(r"^\[categorical_feature: ([^\]]*)\]", mf.text, flags=re.MULTILINE)
    if m and m.group(1).strip():
        spec = m.group(1).strip()
        if spec.startswith("name:"):
            cat |= {names.index(s) for s in spec[5:].split(",") if s in names}
        else:
            cat |= {int(s) for s in spec.split(",") if s.strip().lstrip("-").isdigit()}
    m = re.search(r"^feature_infos=(.*)$", mf.text, flags=re.MULTILINE)
    if m:  # used categorical features: "c1:c2:..." (numeric ones are "[lo:hi]" or "none")
        infos = m.group(1).split(" ")
        cat |= {i for i, s in enumerate(infos) if s and s != "none" and not s.startswith("[")}
    cat = {i for i in cat if 0 <= i < n}
    pandas_cats = getattr(booster, "pandas_categorical", None)
    categorical: dict[int, list | None] = {i: None for i in sorted(cat)}
    if pandas_cats:
        if len(pandas_cats) != len(categorical):
            raise UserError(
                f"model {mf.path}: {len(pandas_cats)} pandas category lists for "
                f"{len(categorical)} categorical features; cannot tell which is which"
            )
        categorical = {i: list(c) for i, c in zip(sorted(cat), pandas_cats)}
    return Schema(n, None if default else names, categorical, "lightgbm")


def _xgboost_categories(booster: Any, n: int) -> list[list | None]:
    try:
        pairs = booster.get_categories(export_to_arrow=True).to_arrow()
    except Exception:  # older XGBoost, or a model without stored categories
        return [None] * n
    if not pairs or len(pairs) != n:
        return [None] * n
    return [None if arr is None else list(arr.to_pylist()) for _, arr in pairs]


def _xgboost_schema(mf: ModelFile) -> Schema:
    booster = mf.booster
    n = int(booster.num_features())
    names = booster.feature_names
    types = booster.feature_types or []
    cat_index = [i for i, t in enumerate(types) if t == "c"]
    stored = _xgboost_categories(booster, n) if cat_index else []
    categorical = {i: (stored[i] or None) for i in cat_index}
    return Schema(n, None if not names else [str(s) for s in names], categorical, "xgboost")


def model_schema(mf: ModelFile) -> Schema:
    """The feature names, count and categorical features of a loaded model.

    Parameters
    ----------
    mf : ModelFile

    Returns
    -------
    Schema
    """
    return _lightgbm_schema(mf) if mf.host == "lightgbm" else _xgboost_schema(mf)


def _is_text(s: pd.Series) -> bool:
    return (pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)) \
        and not isinstance(s.dtype, pd.CategoricalDtype)


def _match_columns(frame: pd.DataFrame, schema: Schema, option: str, path: str) -> list[str]:
    """The frame's columns in the model's feature order (all other columns are dropped)."""
    columns = list(frame.columns)
    if schema.names is None:
        if len(columns) != schema.n_features:
            raise UserError(
                f"{option} {path}: {len(columns)} feature columns ({_short(columns)}) but the "
                f"model has {schema.n_features} features (and no feature names to match by)"
            )
        return columns
    lookup = {c: c for c in columns}
    if schema.host == "lightgbm":  # LightGBM stores names with spaces replaced by "_"
        for c in columns:
            lookup.setdefault(c.replace(" ", "_"), c)
    missing = [n for n in schema.names if n not in lookup]
    if missing:
        raise UserError(
            f"{option} {path}: missing the model's feature(s) {_short(missing)} (the file's "
            f"columns: {_short(columns)}; the model's features: {_short(schema.names)})"
        )
    chosen = [lookup[n] for n in schema.names]
    extra = [c for c in columns if c not in set(chosen)]
    if extra:
        _warn(f"{option} {path}: ignoring column(s) the model does not use: {_short(extra)}")
    return chosen


def _short(items: list, limit: int = 8) -> str:
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _coerce_like(values: pd.Series, categories: list) -> pd.Series:
    """``values`` converted to the type of ``categories`` (text vs numbers) where possible."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    if all(isinstance(c, str) for c in categories):
        if pd.api.types.is_numeric_dtype(values.dtype):
            def as_text(v):
                if isinstance(v, float) and v.is_integer():
                    v = int(v)
                return str(v)

            return values.map(as_text, na_action="ignore").astype(object)
        return values.astype(object)
    if all(isinstance(c, (int, float, np.number)) and not isinstance(c, bool)
           for c in categories):
        return pd.to_numeric(values, errors="coerce") if _is_text(values) else values
    return values


def _to_category(values: pd.Series, categories: list | None, column: str, option: str,
                 path: str) -> pd.Series:
    if categories is None:  # the model stores no categories: the data holds integer codes
        if _is_text(values):
            raise UserError(
                f"{option} {path}: column {column!r} holds text, but the model stores no "
                "category names for it: give the integer category codes it was trained with"
            )
        if isinstance(values.dtype, pd.CategoricalDtype):
            return values
        codes = pd.to_numeric(values, errors="coerce")
        top = codes.max()
        n_codes = int(top) + 1 if pd.notna(top) and top >= 0 else 0
        return pd.Series(pd.Categorical(codes.where(codes >= 0), categories=range(n_codes)),
                         index=values.index, name=values.name)
    coerced = _coerce_like(values, categories)
    known = coerced.isin(categories)
    unseen = int((coerced.notna() & ~known).sum())
    if unseen:
        _warn(f"{option} {path}: {unseen} value(s) of column {column!r} are not among the "
              "categories the model was trained with; they are treated as unseen categories")
    return pd.Series(pd.Categorical(coerced.where(known), categories=categories),
                     index=values.index, name=values.name)


def prepare_data(frame: pd.DataFrame, schema: Schema, label: str, weight: str | None,
                 option: str, path: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray | None]:
    """Split a data file into features (in the model's order and types), labels and weights.

    Parameters
    ----------
    frame : pandas.DataFrame
        As read by :func:`read_table`; not modified.
    schema : Schema
        :func:`model_schema` of the model.
    label, weight : str
        Column names (``weight`` optional).
    option, path : str
        The option and file name, for error messages.

    Returns
    -------
    X : pandas.DataFrame
        The model's features, in its order; categorical features as pandas categoricals with
        the model's categories where the model stores them.
    y : numpy.ndarray
    w : numpy.ndarray or None

    Raises
    ------
    UserError
        Missing label, weight or feature columns, text in a numeric feature.
    """
    for kind, col in (("label", label), ("weight", weight)):
        if col is not None and col not in frame.columns:
            raise UserError(
                f"{option} {path}: no {kind} column {col!r} (columns: {_short(list(frame))})"
            )
    y = frame[label]
    if _is_text(y) or isinstance(y.dtype, pd.CategoricalDtype):
        raise UserError(f"{option} {path}: label column {label!r} must hold numbers")
    w = None
    if weight is not None:
        w = pd.to_numeric(frame[weight], errors="coerce").to_numpy(dtype=np.float64)
        if np.isnan(w).any():
            raise UserError(f"{option} {path}: weight column {weight!r} has missing or "
                            "non-numeric values")
    rest = frame.drop(columns=[c for c in (label, weight) if c is not None])
    X = rest[_match_columns(rest, schema, option, path)].copy()
    for i, column in enumerate(X.columns):
        s = X[column]
        if i in schema.categorical:
            X[column] = _to_category(s, schema.categorical[i], column, option, path)
        elif _is_text(s):
            raise UserError(
                f"{option} {path}: column {column!r} holds text, but the model treats it as "
                "a numeric feature"
            )
        elif isinstance(s.dtype, pd.CategoricalDtype):
            try:
                X[column] = s.astype(np.float64)
            except (TypeError, ValueError):
                raise UserError(
                    f"{option} {path}: column {column!r} is categorical, but the model treats "
                    "it as a numeric feature"
                ) from None
        elif s.dtype == bool:
            X[column] = s.astype(np.float64)
    return X, y.to_numpy(dtype=np.float64), w


# ------------------------------------------------------------------------------ helpers


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    text = " ".join(str(message).split())
    # the adapter's advice in command-line terms
    text = re.sub(r"with read_model\(model, params=\{.*?\}\)",
                  "with --param eta=VALUE --param lambda=VALUE", text)
    _warn(text)


@dataclass(frozen=True)
class _Inputs:
    model: ModelFile
    X_train: pd.DataFrame | None
    y_train: np.ndarray | None
    w_train: np.ndarray | None
    X_valid: pd.DataFrame
    y_valid: np.ndarray
    w_valid: np.ndarray | None


def _apply_params(mf: ModelFile, params: list[tuple[str, str]]) -> None:
    if not params:
        return
    if mf.host != "xgboost":
        raise UserError("--param is for XGBoost models; LightGBM model files store their "
                        "parameters")
    try:
        mf.booster.set_param(dict(params))
    except Exception as err:  # XGBoostError
        raise UserError(f"--param: {_first_line(err)}") from None


def _load_inputs(args) -> _Inputs:
    mf = load_model(args.model)
    _apply_params(mf, args.param)
    schema = model_schema(mf)
    train: tuple = (None, None, None)
    if args.train is not None:
        train = prepare_data(read_table(args.train, "--train"), schema, args.label,
                             args.weight, "--train", args.train)
    valid = prepare_data(read_table(args.valid, "--valid"), schema, args.label, args.weight,
                         "--valid", args.valid)
    return _Inputs(mf, *train, *valid)


def _api_options(args) -> dict[str, Any]:
    return {
        "objective": args.objective, "n_draws": args.n_draws, "min_k": args.min_k,
        "random_state": args.seed, "progress": args.progress,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return None if math.isnan(value) else value
    if value is None or (not isinstance(value, (str, list)) and pd.isna(value)):
        return None
    return value


def format_frame(frame: pd.DataFrame, fmt: str, index: bool) -> str:
    """Render a result table as text.

    Parameters
    ----------
    frame : pandas.DataFrame
    fmt : {"table", "csv", "json"}
        An aligned text table, CSV (floats at full precision) or a JSON list of records
        (NaN as null).
    index : bool
        Include the index (the feature names) as the first column.

    Returns
    -------
    str
        Ends with a newline.
    """
    if fmt == "csv":
        return frame.to_csv(index=index)
    out = frame.reset_index() if index else frame
    if fmt == "json":
        records = [{str(k): _jsonable(v) for k, v in row.items()}
                   for row in out.to_dict(orient="records")]
        return json.dumps(records, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
    return out.to_string(index=False) + "\n"


def _write_output(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        write_atomic(output, text)
    except OSError as err:
        raise UserError(f"--output {output}: cannot be written: {err.strerror or err}") from None


def _save_plot(report, path: str, title: str) -> None:
    """Write ``report.plot()`` to ``path`` and say so on stderr (stdout may hold the table)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UserError("--plot needs matplotlib, which is not installed (pip install matplotlib)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = report.plot(title=title)
    try:
        # the format from the suffix as savefig(path) would; written whole or not at all
        buffer = io.BytesIO()
        fmt = Path(path).suffix.lstrip(".").lower() or None
        ax.figure.savefig(buffer, format=fmt, bbox_inches="tight", dpi=100)
        write_atomic(path, buffer.getvalue())
    except (ValueError, OSError) as err:
        raise UserError(f"--plot {path}: cannot be written: {_first_line(err)}") from None
    finally:
        plt.close(ax.figure)
    print(f"{PROG}: wrote plot to {path}", file=sys.stderr)


# ------------------------------------------------------------------------------ commands


def cmd_importance(args) -> int:
    """``unbiased-criteria importance``: the per-feature (or per-split) unbiased gain."""
    from .api import unbiased_importance

    if args.splits and args.alpha is not None:
        raise UserError("--alpha applies to the per-feature table, not to --splits")
    data = _load_inputs(args)
    report = unbiased_importance(
        data.model.booster, data.X_train, data.y_train, data.X_valid, data.y_valid,
        train_weight=data.w_train, valid_weight=data.w_valid, **_api_options(args),
    )
    if args.splits:
        text = format_frame(report.splits, args.format, index=False)
    else:
        frame = report.to_frame()
        if args.alpha is not None:
            frame["selected"] = frame.index.isin(report.select(args.alpha))
        text = format_frame(frame, args.format, index=True)
    _write_output(text, args.output)
    if args.plot:
        _save_plot(report, args.plot, f"{data.model.path.name}: unbiased vs biased gain")
    return 0


def _model_bytes(mf: ModelFile, booster: Any, output: Path) -> bytes:
    if mf.host == "lightgbm":
        if output.suffix.lower() in (".json", ".ubj"):
            _warn(f"--output {output}: a LightGBM model is written as a LightGBM text model, "
                  f"whatever the suffix")
        return booster.model_to_string(num_iteration=-1).encode("utf-8")
    suffix = output.suffix.lower()
    fmt = {".json": "json", ".ubj": "ubj"}.get(suffix, mf.format)
    return bytes(booster.save_raw(fmt))


def cmd_prune(args) -> int:
    """``unbiased-criteria prune``: remove the splits with unbiased gain <= threshold."""
    from .api import prune_forest

    data = _load_inputs(args)
    output = Path(args.output)
    if output.is_dir():
        raise UserError(f"--output {args.output}: is a directory")
    result = prune_forest(
        data.model.booster, data.X_train, data.y_train, data.X_valid, data.y_valid,
        threshold=args.threshold, refit_leaves=args.refit_leaves,
        train_weight=data.w_train, valid_weight=data.w_valid, **_api_options(args),
    )
    pruned = result.adapter.write_model(data.model.booster, result.forest)
    blob = _model_bytes(data.model, pruned, output)
    try:
        # never in place: --output may be the input model, and a kill mid-write must not
        # leave a truncated model
        write_atomic(output, blob)
    except OSError as err:
        raise UserError(f"--output {args.output}: cannot be written: "
                        f"{err.strerror or err}") from None
    before, after = result.leaves_before, result.leaves_after
    n_trees = len(result.forest.trees)
    share = after / before if before else 1.0
    print(f"leaves before: {before}")
    print(f"leaves after:  {after} ({share:.1%} kept, {n_trees} trees)")
    print(f"wrote {output}")
    return 0


def _demo_core(args) -> pd.DataFrame:
    """Best split of a pure-noise feature, many replications: mean B vs mean U."""
    from .gains import SplitScore, biased_gain, node_sums, tree_generator, unbiased_gain
    from .trees import make_tree

    n, levels, reps = args.rows, 20, args.replications
    rows = []
    for r in range(reps):
        rng = tree_generator(args.seed, r)
        x, y = rng.integers(0, levels, 2 * n), rng.standard_normal(2 * n)
        g, h = -y, np.ones(2 * n)  # squared error at F = 0
        tr, va = slice(0, n), slice(n, 2 * n)
        # threshold chosen as the argmax of B on the training half
        best, best_t = -np.inf, 0
        for t in range(levels - 1):
            left = x[tr] <= t
            GL, HL = g[tr][left].sum(), left.sum()
            GR, HR = g[tr][~left].sum(), (~left).sum()
            if HL and HR:
                b = GL**2 / HL + GR**2 / HR - g[tr].sum() ** 2 / n
                if b > best:
                    best, best_t = b, t
        tree = make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [best_t, np.nan, np.nan],
                         [np.nan, 0.0, 0.0])
        nodes_tr = np.where(x[tr] <= best_t, 1, 2)
        nodes_va = np.where(x[va] <= best_t, 1, 2)
        sums = node_sums(tree, nodes_tr, g[tr], h[tr])
        u = unbiased_gain(tree, sums.G, nodes_va, g[va], h[va], rng=rng)
        rows.append((biased_gain(tree, sums, SplitScore())[0], u.gain[0]))
    arr = np.array(rows)
    se = arr.std(axis=0, ddof=1) / np.sqrt(reps)
    return pd.DataFrame(
        {"mean": arr.mean(axis=0), "std_error": se, "mean / std_error": arr.mean(axis=0) / se},
        index=pd.Index(["biased gain B", "unbiased gain U"], name="best split on noise"),
    )


def _demo_plot_path(path: str, host: str, n_hosts: int) -> str:
    if n_hosts == 1:
        return path
    p = Path(path)
    return str(p.with_name(f"{p.stem}_{host}{p.suffix}"))


def cmd_demo(args) -> int:
    """``unbiased-criteria demo``: the paper's example on generated data."""
    from .demo import CLAIMS, DEMO_SETTINGS, demo_run

    hosts = [h for h in ("lightgbm", "xgboost") if importlib.util.find_spec(h)]
    if args.core or not hosts:
        if not args.core:
            print("(neither lightgbm nor xgboost is installed: showing the core demo; "
                  "pip install lightgbm xgboost for the real one)\n")
        args.rows = 2000 if args.rows is None else args.rows
        print(f"The best of 19 thresholds on a 20-level noise feature, {args.rows} training "
              f"and {args.rows} held-out rows, {args.replications} replications:\n")
        print(_demo_core(args).round(4).to_string())
        return 0
    s = DEMO_SETTINGS
    rows = s["rows"] if args.rows is None else args.rows
    print("The paper's example: y = 0.1*X1 + N(0,1); X1 binary, X2 six categories, X3 N(0,1).")
    print(f"Only X1 carries information. {s['trees']} trees (LightGBM {s['leaves']} leaves, "
          f"XGBoost depth {s['depth']}), learning rate {s['learning_rate']},\n{rows} training "
          f"and {rows} held-out rows, seed {args.seed}.\n")
    for host in hosts:
        run = demo_run(host, seed=args.seed, rows=rows)
        table = run.table.round({"host gain share": 3, "unbiased gain": 1, "± SE": 1})
        print(f"{host}:\n{table.to_string()}")
        for key, text in CLAIMS.items():
            mark = "yes" if run.claims[key] else "NO "
            print(f"  [{mark}] {text.format(host=host)}")
        print()
        if args.plot:
            _save_plot(run.report, _demo_plot_path(args.plot, host, len(hosts)),
                       f"{host}: the paper's example")
    print("Why boosted totals of noise features are negative, not 0: once earlier trees have "
          "fit a noise\nfeature, a further split on it raises the held-out loss, which is what "
          "U measures.")
    measured = "" if rows == s["rows"] else f" at {s['rows']} rows"
    print(f"Each claim above held in at least 95% of 100 seeds{measured} "
          "(benchmarks/demo_claims.py).")
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="LightGBM text model, XGBoost JSON or UBJ model (format read from "
                        "the file's content)")
    p.add_argument("--train", metavar="FILE",
                   help="training rows (CSV or Parquet); leave out for the validation-only "
                        "mode (held-out rows split in two halves)")
    p.add_argument("--valid", metavar="FILE", required=True,
                   help="held-out rows the model has not seen (CSV or Parquet)")
    p.add_argument("--label", metavar="COL", required=True, help="label column")
    p.add_argument("--weight", metavar="COL", help="row weight column (in every data file)")
    p.add_argument("--objective", metavar="NAME",
                   help="objective name, required for models trained with a custom objective")
    p.add_argument("--n-draws", type=_positive_int, default=1, metavar="N",
                   help="k-draws averaged per split (default 1)")
    p.add_argument("--min-k", type=_positive_int, default=5, metavar="K",
                   help="splits with fewer held-out rows in a child score 0 (default 5)")
    p.add_argument("--param", action="append", type=_key_value, default=[],
                   metavar="KEY=VALUE",
                   help="an XGBoost training parameter its model files do not store (eta, "
                        "lambda, alpha, max_delta_step); repeatable")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="random seed of the draws (default 0)")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show tracebacks")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _alpha(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``unbiased-criteria`` command.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Unbiased split gain and feature importance for LightGBM and XGBoost.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    imp = sub.add_parser(
        "importance", help="unbiased vs biased gain per feature (or per split)",
        description="Unbiased and biased gain of every split of MODEL, summed per feature "
                    "(with the block-jackknife standard error of the unbiased sum).",
    )
    _add_common(imp)
    imp.add_argument("--format", choices=("table", "csv", "json"), default="table",
                     help="output format (default table)")
    imp.add_argument("--output", metavar="FILE", help="write the table here, not to stdout")
    imp.add_argument("--plot", metavar="FILE.png", help="save a bar chart (needs matplotlib)")
    imp.add_argument("--splits", action="store_true", help="one row per split, not per feature")
    imp.add_argument("--alpha", type=_alpha, metavar="A",
                     help="add a 'selected' column: unbiased gain significantly > 0 at level A "
                          "(one-sided jackknife t test, no multiplicity correction)")
    imp.set_defaults(func=cmd_importance)

    pr = sub.add_parser(
        "prune", help="remove the splits whose unbiased gain is <= a threshold",
        description="Prune MODEL top-down: every split whose unbiased gain is <= THRESHOLD "
                    "becomes a leaf. Writes a model of the same host (LightGBM text; XGBoost "
                    "JSON or UBJ by the output suffix .json/.ubj, else the input's format).",
    )
    _add_common(pr)
    pr.add_argument("--threshold", type=float, default=0.0, metavar="T",
                    help="remove splits with unbiased gain <= T (default 0)")
    pr.add_argument("--refit-leaves", action="store_true",
                    help="recompute every leaf value, not only those of new leaves")
    pr.add_argument("--output", metavar="FILE", required=True, help="pruned model file")
    pr.set_defaults(func=cmd_prune)

    demo = sub.add_parser("demo", help="the paper's example on generated data (no files)")
    demo.add_argument("--rows", type=_positive_int, default=None,
                      help="training rows, as many held-out (default 10000; core demo 2000)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--replications", type=int, default=2000,
                      help="replications of the core demo")
    demo.add_argument("--core", action="store_true",
                      help="show the host-free demonstration of the estimator")
    demo.add_argument("--plot", metavar="FILE.png",
                      help="save the importance plot (FILE_HOST.png per host when both hosts "
                           "are installed)")
    demo.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                      help="show tracebacks")
    demo.set_defaults(func=cmd_demo)
    return parser


def _user_message(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``unbiased-criteria`` console script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 success, 2 usage or input error, 1 unexpected error.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    debug = getattr(args, "debug", False)
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    except (UserError, ValueError, TypeError, LookupError, OSError) as exc:
        if debug:
            raise
        print(f"{PROG}: error: {_user_message(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        print(f"{PROG}: error: unexpected {type(exc).__name__}: {_user_message(exc)} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
