"""Command line: ``unbiased-criteria importance | prune | select | demo``.

A thin wrapper over the Python API (:func:`unbiased_criteria.unbiased_importance`,
:func:`unbiased_criteria.api.prune_forest`). It reads data files (CSV or Parquet, by suffix)
and model files through :mod:`unbiased_criteria.model_files` (LightGBM text, XGBoost JSON or
UBJ, recognised from their content); it makes no host call itself.

Modules: ``arguments`` (the parser; adding a command is one function and one parser entry),
``files`` (model and data files), ``commands`` (importance, prune), ``select``, ``demo``,
``output`` (messages, tables, plots).

Input errors (:class:`~unbiased_criteria.errors.InputError` and the API's other
ValueErrors, file errors) go to stderr as one line ``unbiased-criteria: error: ...``
with exit code 2 (the traceback too with ``--debug``). Anything else is a bug: its traceback
is shown and the exit code is 1. Warnings go to stderr as one line
``unbiased-criteria: warning: ...``. Results go to stdout (or ``--output``). SIGTERM and
SIGHUP end the command through ``SystemExit`` (exit code 128 + the signal's number), so that
a file being written leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import traceback
import warnings

from ..errors import HostVersionError, InputError, ObjectiveNeeded
from ..model_files import ModelFile, Schema
from .arguments import build_parser
from .files import load_model, model_schema, prepare_data, read_table
from .output import PROG, show_warning

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

#: the command's input errors (one line, exit 2): the library's :class:`InputError`
UserError = InputError


#: what a command-line user can do where the API asks for ``objective=``
_OBJECTIVE_HINT = (
    "on the command line --objective takes an objective name only, and a callable objective "
    "needs the Python API: unbiased_criteria.unbiased_importance(model, ..., objective=f) or "
    "unbiased_criteria.prune(model, ..., objective=f)")


def _user_message(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ObjectiveNeeded):  # the API's advice names objective=, a Python argument
        text = f"{text}; {_OBJECTIVE_HINT}"
    return text


def _exit_on_signal(signum, frame) -> None:
    raise SystemExit(128 + signum)  # unwinds: write_atomic removes its temporary file


@contextlib.contextmanager
def _signals_exit():
    """SIGTERM and SIGHUP raise SystemExit while the command runs (their default action ends
    the process at once, leaving a half-written temporary file). An ignored signal stays
    ignored (``nohup``); the previous handlers are restored after."""
    previous = {}
    if threading.current_thread() is threading.main_thread():  # signal() works only there
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _exit_on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _log_records_shown():
    """Log records of WARNING and above on stderr as ``unbiased-criteria: LEVEL: ...`` while
    the command runs, where nothing configured logging (``logging.basicConfig``'s rule: a
    root logger with handlers is the caller's configuration and stays as it is). The handler
    and the root level are taken back after: :func:`main` runs in-process too (tests,
    notebooks), where ``basicConfig`` left every later record of any library in the CLI's
    format."""
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    handler = logging.StreamHandler()  # the sys.stderr of now, as basicConfig's
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``unbiased-criteria`` console script.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 success (and ``--help``); 2 usage or input error (argparse's usage
        errors, :class:`InputError`, the API's other ValueErrors for bad input, file errors),
        one line on stderr; 1 an installed host the library cannot work with
        (:class:`~unbiased_criteria.errors.HostVersionError`), one line, or a bug (any
        other exception), with its traceback.

    Raises
    ------
    SystemExit
        SIGTERM or SIGHUP arrived (code 128 + its number), after the file being written,
        if any, was cleaned up.

    Notes
    -----
    Called in-process, it leaves matplotlib's backend, the root logger, the signal handlers
    and ``warnings.showwarning`` as it found them.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's usage errors (2) and --help (0): the status
        return exc.code if isinstance(exc.code, int) else 2
    debug = getattr(args, "debug", False)
    previous = warnings.showwarning
    warnings.showwarning = show_warning
    try:
        with _signals_exit(), _log_records_shown():
            return args.func(args)
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    except (ValueError, OSError) as exc:  # InputError, the API's bad-input ValueErrors
        if debug:
            raise
        print(f"{PROG}: error: {_user_message(exc)}", file=sys.stderr)
        return 2
    except HostVersionError as exc:  # the installed host, not a bug: what to install
        if debug:
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: never reported as bad input, always with its traceback
        if debug:
            raise
        traceback.print_exc()
        print(f"{PROG}: internal error (a bug, please report it with the traceback above): "
              f"{type(exc).__name__}: {_user_message(exc)}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
