"""What the command prints and writes: one-line messages, result tables, plots."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..files import _descriptor, write_atomic

__all__ = ["PROG", "warn", "show_warning", "first_line", "short", "name_list",
           "format_frame", "write_output", "save_plot", "check_target", "check_plot_target",
           "output_format"]

PROG = "unbiased-criteria"


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (its class name when it has none)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def short(items: list, limit: int = 8) -> str:
    """The first ``limit`` items, comma separated, and how many there are in all."""
    shown = ", ".join(map(str, items[:limit]))
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


#: a name printed as it is in a list: letters (any script), digits, '_', '.', '-'
_PLAIN_NAME = re.compile(r"[\w.\-]+")


def name_list(names: list) -> str:
    """Names comma separated, each readable back unambiguously.

    A name of letters, digits, ``_``, ``.`` and ``-`` is printed as it is; any other (a
    comma, a space, a quote, a parenthesis, a control character, the empty name) as a Python
    string literal (``repr``): joined plainly, ``a, b`` was one name or two.
    """
    return ", ".join(name if _PLAIN_NAME.fullmatch(name) else repr(name)
                     for name in map(str, names))


def warn(message: str) -> None:
    """One line ``unbiased-criteria: warning: ...`` on stderr."""
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command: one line on stderr."""
    text = " ".join(str(message).split())
    # the adapter's advice in command-line terms
    text = re.sub(r"with read_model\(model, params=\{.*?\}\)",
                  "with --param eta=VALUE --param lambda=VALUE", text)
    warn(text)

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


_SUFFIX_FORMATS = {".csv": "csv", ".json": "json"}
#: suffixes of what the table is not: binary formats, compressed files, tab-separated text
_REFUSED_SUFFIXES = (".parquet", ".pq", ".feather", ".arrow", ".xlsx", ".pkl", ".pickle",
                     ".gz", ".bz2", ".xz", ".zip", ".zst", ".tsv")


def output_format(fmt: str | None, output: str | None) -> str:
    """``--format`` if given, else the ``--output`` file's suffix (``.csv``, ``.json``), else
    an aligned table; a suffix the table would not be (binary, compressed, ``.tsv``) is
    refused."""
    if fmt is not None:
        return fmt
    if output is None or output == "-":
        return "table"
    suffix = Path(output).suffix.lower()
    if suffix in _REFUSED_SUFFIXES:
        raise InputError(f"--output {output}: the table is written as uncompressed text "
                         "(an aligned table, csv or json); name the file .csv, .json or "
                         ".txt, or give --format")
    return _SUFFIX_FORMATS.get(suffix, "table")


def check_target(path: str | None, option: str,
                 inputs: dict[str, str | None] | None = None) -> None:
    """Refuse, before any work, a file to write that is a folder, whose folder is missing or
    takes no new file (no write permission, a read-only file system), a pipe or device
    that cannot be written (all found only after the computation, and for ``--plot`` after
    the table was printed), or that is one of ``inputs`` (option -> path): the result would
    replace that file."""
    if path is None or path == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    if path.endswith(tuple(s for s in (os.sep, os.altsep) if s)):  # Path() drops it
        raise InputError(f"{option} {path}: names a folder (it ends with {path[-1]!r}); give "
                         "a file name")
    for name, source in (inputs or {}).items():
        if source is None or source == "-":
            continue
        if target.exists() and Path(source).exists():
            same = target.samefile(source)
        else:  # another output not written yet
            same = os.path.realpath(target) == os.path.realpath(source)
        if same:
            raise InputError(f"{option} {path}: is {name} itself; write it elsewhere")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{option} {path}: cannot be written: no folder {str(folder)!r}")
    _check_writable(path, option)


def _writable(path: str | Path, mode: int) -> bool:
    """``os.access`` with the effective user and group, those of the write to come."""
    if os.access in os.supports_effective_ids:
        return os.access(path, mode, effective_ids=True)
    return os.access(path, mode)


def _check_writable(path: str, option: str) -> None:
    """Refuse a target :func:`~unbiased_criteria.files.write_atomic` could not write, found
    otherwise after the work (a folder without write permission, a read-only file system):
    its folder must take a new file (the temporary file renamed over the target), a named
    pipe or device must be writable itself (written in place), an open descriptor
    (``/dev/stdout``) is written where it stands."""
    if _descriptor(path) is not None:
        return
    try:
        st = os.stat(path)  # through symbolic links, as the write goes
    except FileNotFoundError:
        st = None
    except OSError as err:  # a folder on the way that cannot be searched, a link loop
        raise InputError(f"{option} {path}: cannot be written: {err.strerror or err}") \
            from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not _writable(path, os.W_OK):
            raise InputError(f"{option} {path}: cannot be written: no write permission")
        return
    real = Path(os.path.realpath(path))  # a symbolic link's target is replaced
    folder = real.parent
    if not folder.is_dir():  # a dangling link into a missing folder
        raise InputError(f"{option} {path}: cannot be written: no folder {str(folder)!r}")
    if not _writable(folder, os.W_OK | os.X_OK):
        reason = "is on a read-only file system" if _read_only(folder) else \
            "takes no new file (no write permission)"
        given = Path(path).parent if str(Path(path).parent) else Path(".")
        shown = given if os.path.realpath(given) == str(folder) else folder  # a link's
        raise InputError(f"{option} {path}: cannot be written: its folder {str(shown)!r} "
                         f"{reason}")


def _read_only(folder: Path) -> bool:
    """``folder`` is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        return False


def write_output(text: str, output: str | None) -> None:
    """``text`` to stdout (``output`` None or ``-``) or to ``output`` with
    :func:`~unbiased_criteria.files.write_atomic` (atomically to a regular file, in place to
    a pipe, device or descriptor)."""
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        write_atomic(output, text)
    except OSError as err:
        raise InputError(f"--output {output}: cannot be written: {err.strerror or err}") from None


def check_plot_target(path: str | None, inputs: dict[str, str | None] | None = None) -> None:
    """:func:`check_target` for ``--plot``, and before any work: matplotlib is installed and
    writes the format of the file's suffix (both were found after the computation, once the
    table was printed): a figure with text is saved in that format to memory, since a format
    matplotlib lists may still need a program it does not have (``pgf``: LaTeX)."""
    if path is None:
        return
    check_target(path, "--plot", inputs)
    fmt = _plot_format(path)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(1, 1))  # no pyplot: nothing to close, no backend switched
    figure.add_subplot().set_title("x")  # with text: the pgf backend sets it with LaTeX
    try:
        figure.savefig(io.BytesIO(), format=fmt, bbox_inches="tight", dpi=10)
    except (ValueError, RuntimeError, OSError, ImportError) as err:
        import matplotlib

        raise InputError(f"--plot {path}: cannot be written in format "
                         f"{fmt or matplotlib.rcParams['savefig.format']!r}: "
                         f"{first_line(err)}") from None


def _plot_format(path: str) -> str | None:
    """The format ``savefig(path)`` would write (None: matplotlib's default), or InputError."""
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("--plot needs matplotlib, which is not installed "
                         "(pip install matplotlib)")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fmt = Path(path).suffix.lstrip(".").lower() or None
    supported = FigureCanvasAgg.get_supported_filetypes()
    if fmt is not None and fmt not in supported:
        raise InputError(f"--plot {path}: cannot be written: format {fmt!r} is not supported "
                         f"(supported: {', '.join(sorted(supported))})")
    return fmt


#: how many features ``report.plot()`` draws by default, and its figure's size for them (as
#: ``report.plot()`` sizes the figure it makes itself: 6 inches wide, 0.3 inch per feature)
_PLOT_TOP = 20


def _plot_size(n_features: int) -> tuple[float, float]:
    return 6, 0.3 * min(n_features, _PLOT_TOP) + 1.8


def save_plot(report, path: str, title: str) -> None:
    """Write ``report.plot()`` to ``path`` and say so on stderr (stdout may hold the table).

    The figure is a :class:`matplotlib.figure.Figure` with its own Agg canvas, not one of
    pyplot's: :func:`unbiased_criteria.cli.main` runs in-process too (a notebook), whose
    pyplot backend must stay what it was (``matplotlib.use("Agg")`` switched it for good) and
    whose open figures must not gain one.
    """
    fmt = _plot_format(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..report import _draw_literally

    figure = Figure(figsize=_plot_size(len(report.to_frame())))
    FigureCanvasAgg(figure)
    ax = report.plot(ax=figure.add_subplot(), top=_PLOT_TOP, title=title)
    _draw_literally([ax.title])  # it holds a file name: 'm$_x$.txt' is no mathtext
    try:
        # the format from the suffix as savefig(path) would; written whole or not at all
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, bbox_inches="tight", dpi=100)
        write_atomic(path, buffer.getvalue())
    except OSError as err:  # its strerror: the message names our temporary file
        raise InputError(f"--plot {path}: cannot be written: {err.strerror or err}") from None
    except (ValueError, RuntimeError) as err:
        # matplotlib failed to draw (pgf: LaTeX refused a name's '&' or '#'): not the file
        import matplotlib

        raise InputError(f"--plot {path}: matplotlib could not draw the plot as "
                         f"{fmt or matplotlib.rcParams['savefig.format']!r} (nothing "
                         f"written): {first_line(err)}") from None
    print(f"{PROG}: wrote plot to {path}", file=sys.stderr)
