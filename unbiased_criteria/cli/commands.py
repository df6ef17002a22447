"""The commands that read a model and data files: ``importance`` and ``prune``.

A command is a function ``cmd_NAME(args) -> int`` (exit status) registered with its parser in
:func:`unbiased_criteria.cli.arguments.build_parser`; :func:`load_inputs` and
:func:`api_options` turn the shared arguments (``arguments.add_model_arguments``) into the API's
inputs.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import model_files
from ..errors import InputError
from ..files import write_atomic
from ..model_files import ModelFile
from ..validation import same_rows
from .files import load_model, model_schema, prepare_data, read_table
from .output import (
    check_plot_target,
    check_target,
    format_frame,
    output_format,
    save_plot,
    write_output,
)

__all__ = ["Inputs", "load_inputs", "api_options", "cmd_importance", "cmd_prune"]


@dataclass(frozen=True)
class Inputs:
    """The model and the rows of ``--train`` (None in the validation-only mode) and
    ``--valid``."""

    path: Path
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
    try:
        model_files.set_training_params(mf, dict(params))
    except InputError as err:
        raise InputError(f"--param: {err}") from None


def load_inputs(args) -> Inputs:
    """Load ``args.model``, apply ``--param`` and read ``--train`` / ``--valid`` in the model's
    feature order and types."""
    mf = load_model(args.model, trusted=args.trust_pickle)
    _apply_params(mf, args.param)
    schema = model_schema(mf)
    train: tuple = (None, None, None)
    columns = {"schema": schema, "label": args.label, "weight": args.weight}
    if args.train is not None:
        train = prepare_data(read_table(args.train, "--train", **columns), schema, args.label,
                             args.weight, "--train", args.train)
    valid = prepare_data(read_table(args.valid, "--valid", **columns), schema, args.label,
                         args.weight, "--valid", args.valid)
    if train[0] is not None and same_rows(train[0], train[1], valid[0], valid[1]):
        raise InputError(
            "--valid holds the same rows as --train: the unbiased gain needs held-out rows "
            "that did not train the model; pass other rows, or leave out --train to score "
            "the held-out rows alone")
    return Inputs(Path(args.model), mf, *train, *valid)


def api_options(args) -> dict[str, Any]:
    """The API's keyword arguments shared by the commands."""
    return {
        "objective": args.objective, "n_draws": args.n_draws, "min_k": args.min_k,
        "random_state": args.seed, "progress": args.progress, "n_jobs": args.n_jobs,
    }

def cmd_importance(args) -> int:
    """``unbiased-criteria importance``: the per-feature (or per-split) unbiased gain."""
    from ..api import unbiased_importance

    if args.splits and args.alpha is not None:
        raise InputError("--alpha applies to the per-feature table, not to --splits")
    if args.correction != "none" and args.alpha is None:
        raise InputError("--correction corrects the --alpha test: give --alpha too")
    inputs = {"MODEL": args.model, "--train": args.train, "--valid": args.valid}
    check_target(args.output, "--output", inputs)
    check_plot_target(args.plot, {**inputs, "--output": args.output})
    args.format = output_format(args.format, args.output)
    data = load_inputs(args)
    report = unbiased_importance(
        data.model.model, data.X_train, data.y_train, data.X_valid, data.y_valid,
        train_weight=data.w_train, valid_weight=data.w_valid, **api_options(args),
    )
    if args.splits:
        text = format_frame(report.splits, args.format, index=False)
    else:
        frame = report.to_frame()
        if args.alpha is not None:
            correction = None if args.correction == "none" else args.correction
            frame["selected"] = frame.index.isin(report.select(args.alpha, correction))
        text = format_frame(frame, args.format, index=True)
    write_output(text, args.output)
    if args.plot:
        save_plot(report, args.plot, f"{data.path.name}: unbiased vs biased gain")
    return 0


#: ``prune --output`` suffixes of a compressed file, and how to compress the model for them
_COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": lambda blob: gzip.compress(blob, mtime=0), ".bz2": bz2.compress,
    ".xz": lzma.compress,
}


def cmd_prune(args) -> int:
    """``unbiased-criteria prune``: remove the splits with unbiased gain <= threshold."""
    from ..api import prune_forest

    if args.output == "-":  # check_target lets "-" (stdout) through, as for the tables
        raise InputError("--output -: prune writes a model file, give its name (standard "
                         "output, '-', is for the tables of importance and select)")
    # --output may be MODEL (written atomically), never a data file
    check_target(args.output, "--output", {"--train": args.train, "--valid": args.valid})
    data = load_inputs(args)
    output = Path(args.output)
    result = prune_forest(
        data.model.model, data.X_train, data.y_train, data.X_valid, data.y_valid,
        threshold=args.threshold, refit_leaves=args.refit_leaves,
        train_weight=data.w_train, valid_weight=data.w_valid, **api_options(args),
    )
    pruned = result.write(data.model.model)
    # model.txt.gz: the format of .txt, compressed as .gz (MODEL may be compressed too)
    compress = _COMPRESSORS.get(output.suffix.lower())
    blob = model_files.serialise_model(
        data.model, pruned, Path(output.stem).suffix if compress else output.suffix)
    if compress is not None:
        blob = compress(blob)
    try:
        # never in place: --output may be the input model, and a kill mid-write must not
        # leave a truncated model
        write_atomic(output, blob)
    except OSError as err:
        raise InputError(f"--output {args.output}: cannot be written: "
                        f"{err.strerror or err}") from None
    before, after = result.leaves_before, result.leaves_after
    n_trees = len(result.forest.trees)
    share = after / before if before else 1.0
    # the model went to stdout (--output /dev/stdout): the summary must not follow it there
    summary = sys.stderr if _is_stdout(args.output) else sys.stdout
    print(f"leaves before: {before}", file=summary)
    print(f"leaves after:  {after} ({share:.1%} kept, {n_trees} trees)", file=summary)
    print(f"wrote {output}", file=summary)
    return 0


def _is_stdout(path: str) -> bool:
    """``path`` is the file or pipe standard output writes to."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, AttributeError, ValueError):  # no stdout, or one with no descriptor
        return False
