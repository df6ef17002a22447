"""The command's arguments: :func:`build_parser`.

Adding a command: a function ``cmd_NAME(args) -> int`` and one ``sub.add_parser`` entry here
(``add_model_arguments`` gives it the model and data-file arguments; ``set_defaults(func=...)``
names the function).
"""

from __future__ import annotations

import argparse

from ..demo import CORE_DEMO_MIN_ROWS
from .commands import cmd_importance, cmd_prune
from .demo import cmd_demo
from .output import PROG
from .select import cmd_select

__all__ = ["build_parser", "add_model_arguments", "positive_int", "key_value", "alpha"]


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """MODEL, the data files and the API's options, shared by the commands that score a model."""
    p.add_argument("model", metavar="MODEL",
                   help="LightGBM text model, XGBoost JSON or UBJ model (format read from "
                        "the file's content), or with --trust-pickle a pickle or joblib file "
                        "of a fitted scikit-learn HistGradientBoosting estimator")
    p.add_argument("--trust-pickle", action="store_true",
                   help="accept a pickle or joblib MODEL file (a fitted scikit-learn "
                        "HistGradientBoostingRegressor or Classifier). Loading a pickle runs "
                        "code from the file: use this only for files you trust")
    p.add_argument("--train", metavar="FILE",
                   help="training rows (CSV or Parquet); leave out for the validation-only "
                        "mode (G from the model's own sums where it stores them, else from "
                        "halves of the held-out rows, warned)")
    p.add_argument("--valid", metavar="FILE", required=True,
                   help="held-out rows the model has not seen (CSV or Parquet)")
    p.add_argument("--label", metavar="COL", required=True, action="append",
                   help="label column; repeat it for a multi-target model, one per target in "
                        "the model's order (--label y1 --label y2)")
    p.add_argument("--weight", metavar="COL", help="row weight column (in every data file)")
    p.add_argument("--objective", metavar="NAME",
                   help="objective name, required for models trained with a custom objective")
    p.add_argument("--n-draws", type=positive_int, default=1, metavar="N",
                   help="k-draws averaged per split (default 1)")
    p.add_argument("--min-k", type=positive_int, default=5, metavar="K",
                   help="splits with fewer held-out rows in a child score 0 (default 5)")
    p.add_argument("--param", action="append", type=key_value, default=[],
                   metavar="KEY=VALUE",
                   help="an XGBoost training parameter its model files do not store (eta, "
                        "lambda, alpha, max_delta_step); repeatable")
    p.add_argument("--seed", type=seed, default=0, metavar="S",
                   help="random seed of the draws (default 0)")
    p.add_argument("--n-jobs", type=thread_count, default=None, metavar="N",
                   help="threads (default: every core, as the hosts; -1 too, -2 all but "
                        "one); results do not depend on it")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show tracebacks")


def _at_least(text: str, low: int) -> int:
    """An integer >= ``low`` (argparse names the type function in its message for text
    that is no integer, so each type keeps its own name)."""
    value = int(text)
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _at_least(text, 1)


#: the largest seed every host takes: XGBoost's ``seed`` is a signed 64-bit integer (a larger
#: one failed in ``demo`` after LightGBM's part was printed, and in ``select``'s folds)
MAX_SEED = 2**63 - 1


def seed(text: str) -> int:
    """argparse type: a random seed, an integer from 0 to :data:`MAX_SEED`."""
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to 2**63 - 1 ({MAX_SEED}), got {value}")
    return value


def replications(text: str) -> int:
    """argparse type: replications of the core demo, >= 2 (its standard error needs two)."""
    return _at_least(text, 2)


def thread_count(text: str) -> int:
    """argparse type: a thread count, negative counting back from every core (not 0)."""
    value = int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must not be 0 (-1: every core)")
    return value


def key_value(text: str) -> tuple[str, str]:
    """argparse type: ``KEY=VALUE``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def alpha(text: str) -> float:
    """argparse type: a level in (0, 1)."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {value}")
    return value


def folds(text: str) -> int:
    """argparse type: a number of folds, >= 2."""
    return _at_least(text, 2)


def alpha_or_none(text: str) -> float | None:
    """argparse type: a level in (0, 1), or ``none``."""
    return None if text.lower() == "none" else alpha(text)


def iterations(text: str) -> int | str:
    """argparse type: ``best`` or an integer >= 1."""
    return "best" if text.lower() == "best" else positive_int(text)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``unbiased-criteria`` command.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Unbiased split gain and feature importance for LightGBM, XGBoost and "
                    "scikit-learn's HistGradientBoosting.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    imp = sub.add_parser(
        "importance", help="unbiased vs biased gain per feature (or per split)",
        description="Unbiased and biased gain of every split of MODEL, summed per feature "
                    "(with the block-jackknife standard error of the unbiased sum).",
    )
    add_model_arguments(imp)
    imp.add_argument("--format", choices=("table", "csv", "json"),
                     help="output format (default: csv or json by the --output suffix, "
                          "else table)")
    imp.add_argument("--output", metavar="FILE", help="write the table here, not to stdout")
    imp.add_argument("--plot", metavar="FILE.png", help="save a bar chart (needs matplotlib)")
    imp.add_argument("--splits", action="store_true", help="one row per split, not per feature")
    imp.add_argument("--alpha", type=alpha, metavar="A",
                     help="add a 'selected' column: unbiased gain significantly > 0 at level A "
                          "(one-sided jackknife t test; see --correction)")
    imp.add_argument("--correction", choices=("none", "holm", "fdr_bh"), default="none",
                     help="multiple-testing correction of --alpha: none (default), holm "
                          "(family-wise error), fdr_bh (false discovery rate)")
    imp.set_defaults(func=cmd_importance)

    pr = sub.add_parser(
        "prune", help="remove the splits whose unbiased gain is <= a threshold",
        description="Prune MODEL top-down: every split whose unbiased gain is <= THRESHOLD "
                    "becomes a leaf. Writes a model of the same host (LightGBM text; XGBoost "
                    "JSON or UBJ by the output suffix .json/.ubj, else the input's format; a "
                    "pickle for a scikit-learn estimator).",
    )
    add_model_arguments(pr)
    pr.add_argument("--threshold", type=float, default=0.0, metavar="T",
                    help="remove splits with unbiased gain <= T (default 0)")
    pr.add_argument("--refit-leaves", action="store_true",
                    help="recompute every leaf value, not only those of new leaves")
    pr.add_argument("--output", metavar="FILE", required=True, help="pruned model file")
    pr.set_defaults(func=cmd_prune)

    sel = sub.add_parser(
        "select", help="features kept by cross-fitted unbiased importance (scikit-learn)",
        description="Fit a LightGBM or XGBoost model on the other folds of DATA for every "
                    "fold (--cv), score its splits with the fold's rows, and keep the "
                    "features whose mean unbiased gain over folds is significantly above 0 "
                    "at --alpha (or above --threshold; at most --max-features). Prints the "
                    "kept columns (a name that is not one word of letters, digits, _ . - "
                    "quoted as a Python string) and the per-feature table.",
    )
    sel.add_argument("data", metavar="DATA", help="features and label (CSV or Parquet)")
    sel.add_argument("--label", metavar="COL", required=True, help="label column")
    sel.add_argument("--host", choices=("lightgbm", "xgboost", "sklearn"), required=True,
                     help="whose estimator (sklearn: HistGradientBoosting)")
    sel.add_argument("--task", choices=("regression", "classification"),
                     help="default: classification for a text, boolean or two-valued label")
    sel.add_argument("--weight", metavar="COL", help="row weight column")
    sel.add_argument("--drop", metavar="COL", action="append", default=[],
                     help="a column that is not a feature (an id...); repeatable")
    sel.add_argument("--cv", type=folds, default=5, metavar="K", help="folds (default 5)")
    sel.add_argument("--alpha", type=alpha_or_none, default=0.05, metavar="A",
                     help="keep features significantly above 0 at level A (default 0.05); "
                          "'none': no test (with --max-features: the top K)")
    sel.add_argument("--correction", choices=("none", "holm", "fdr_bh"), default="none",
                     help="multiple-testing correction of --alpha: none (default), holm "
                          "(family-wise error), fdr_bh (false discovery rate)")
    sel.add_argument("--max-features", type=positive_int, metavar="K",
                     help="keep at most K features, the largest first")
    sel.add_argument("--threshold", type=float, metavar="T",
                     help="keep features whose mean unbiased gain is above T (no test)")
    sel.add_argument("--iterations", type=iterations, metavar="N|best",
                     help="score the first N boosting iterations of every fold's model, or "
                          "'best': up to where the other folds' total unbiased gain peaks")
    sel.add_argument("--param", action="append", type=key_value, default=[],
                     metavar="KEY=VALUE",
                     help="an estimator parameter (n_estimators=200, learning_rate=0.05...); "
                          "repeatable")
    sel.add_argument("--n-draws", type=positive_int, default=1, metavar="N",
                     help="k-draws averaged per split (default 1)")
    sel.add_argument("--min-k", type=positive_int, default=5, metavar="K",
                     help="splits with fewer held-out rows in a child score 0 (default 5)")
    sel.add_argument("--seed", type=seed, default=0, metavar="S",
                     help="random seed of the folds' draws (default 0)")
    sel.add_argument("--format", choices=("table", "csv", "json"),
                     help="output format (default: csv or json by the --output suffix, "
                          "else table)")
    sel.add_argument("--output", metavar="FILE", help="write the table here, not to stdout")
    sel.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="show tracebacks")
    sel.set_defaults(func=cmd_select)

    demo = sub.add_parser("demo", help="the paper's example on generated data (no files)")
    demo.add_argument("--rows", type=positive_int, default=None,
                      help="training rows, as many held-out (default 10000; core demo 2000, "
                           f"at least {CORE_DEMO_MIN_ROWS})")
    demo.add_argument("--seed", type=seed, default=0)
    # None: not given (the demo with a host refuses it); the core demo's default 2000
    demo.add_argument("--replications", type=replications, default=None,
                      help="replications of the core demo, --core only (at least 2; default "
                           "2000)")
    demo.add_argument("--core", action="store_true",
                      help="show the host-free demonstration of the estimator")
    demo.add_argument("--plot", metavar="FILE.png",
                      help="save the importance plot (FILE_HOST.png per host when both hosts "
                           "are installed); not with --core, which draws none")
    demo.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                      help="show tracebacks")
    demo.set_defaults(func=cmd_demo)
    return parser
