"""scikit-learn model files for the command line (the interface of
:mod:`unbiased_criteria.model_files`): a fitted HistGradientBoosting estimator saved with
``pickle`` or ``joblib.dump``, in and out.

Unpickling runs code from the file: :func:`load_model_file` refuses unless the user vouches for
the file (``ModelBytes.trusted``, the command line's ``--trust-pickle``).
"""

from __future__ import annotations

import io
import pickle
import warnings
import zlib
from typing import Any

import pandas as pd
from unbiased_criteria.adapters.sklearn import compat

from unbiased_criteria.errors import InputError
from unbiased_criteria.model_files import ModelBytes, ModelFile, Schema, decompress

__all__ = [
    "MODEL_FILE_KINDS",
    "recognise_model_file",
    "load_model_file",
    "feature_schema",
    "set_training_params",
    "output_format",
    "serialise_model",
    "fit_example",
    "make_estimator",
]

MODEL_FILE_KINDS = ("a pickle or joblib file of a fitted scikit-learn HistGradientBoosting "
                    "estimator (with --trust-pickle)")
#: lz4 frames, which joblib writes with the lz4 package; the others: model_files.decompress
_LZ4 = b"\x04\x22\x4d\x18"


def _is_pickle(head: bytes) -> bool:
    """A pickle of protocol 2 to 5 (joblib's uncompressed files too), from its first bytes."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def recognise_model_file(data: bytes) -> bool:
    """A pickle of protocol 2 to 5 (also joblib's uncompressed files) or a joblib file
    compressed by zlib, gzip, bz2, xz or lz4, from its first bytes: a compressed stream is
    one when the start of its content is a pickle (a gzip-compressed text or JSON model is
    not, and loads decompressed: it was taken for a pickle, and unpickled)."""
    if _is_pickle(data[:2]):
        return True
    if data.startswith(_LZ4):  # no standard-library reader: taken for joblib's, as written
        return True
    try:
        packed = decompress(data, limit=16)
    except ValueError:  # corrupt: model_files.load_model_file says why
        return False
    return packed is not None and _is_pickle(packed[1])


def load_model_file(file: ModelBytes) -> ModelFile:
    """The fitted estimator of a pickle or joblib file, if ``file.trusted``."""
    if not file.trusted:
        raise InputError(
            f"{file.source}: a pickle or joblib file; loading one runs code from the file: "
            "pass --trust-pickle only if you trust it (in Python: load it with joblib.load "
            "and pass the estimator)"
        )
    try:
        import joblib
    except ImportError:  # joblib is a scikit-learn dependency; plain pickles load without it
        joblib = None
    try:
        if joblib is not None:
            model = joblib.load(io.BytesIO(file.data))
        else:
            model = pickle.loads(file.data)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError,
            TypeError, IndexError, KeyError, zlib.error, OSError) as err:
        text = " ".join(str(err).split()) or type(err).__name__
        raise InputError(f"{file.source}: cannot be unpickled: {text}") from None
    if not compat.is_hgb(model):
        raise InputError(
            f"{file.source}: a pickled {type(model).__module__}.{type(model).__name__}; a "
            "pickled model must be a fitted scikit-learn HistGradientBoostingRegressor or "
            "HistGradientBoostingClassifier (save LightGBM and XGBoost models in their own "
            "formats)"
        )
    try:
        compat.check_estimator(model)
    except ValueError as err:
        raise InputError(f"{file.source}: {err}") from None
    return ModelFile(model, "sklearn", "pickle", file.source)


def feature_schema(model) -> Schema:
    """Count and names (``feature_names_in_``) of the input features; categorical ones with
    the categories the estimator's encoder knows; text labels allowed for a classifier."""
    names = getattr(model, "feature_names_in_", None)
    return Schema(int(model.n_features_in_), None if names is None else [str(n) for n in names],
                  compat.input_categories(model), text_labels=hasattr(model, "classes_"),
                  classes=tuple(model.classes_) if hasattr(model, "classes_") else None)


def set_training_params(model, params: dict[str, str]) -> None:
    """scikit-learn estimators store their parameters: none can be set."""
    if params:
        raise InputError("is for XGBoost models; scikit-learn estimators store their "
                         "parameters")


def output_format(suffix: str, input_format: str) -> str:
    """Always a pickle (``joblib.load`` reads it too), with a warning for a suffix of
    another host's format."""
    if suffix in (".txt", ".json", ".ubj"):
        warnings.warn(f"a scikit-learn estimator is written as a pickle, not as {suffix}",
                      UserWarning, stacklevel=2)
    return "pickle"


def serialise_model(model, fmt: str) -> bytes:
    """``pickle.dumps(model)``."""
    if fmt != "pickle":
        raise InputError(f"format: scikit-learn estimators are written as 'pickle', got {fmt!r}")
    return pickle.dumps(model)


def fit_example(X: pd.DataFrame, y: Any, *, seed: int, settings: dict[str, Any]) -> Any:
    """``HistGradientBoostingRegressor`` with ``settings`` (trees, learning_rate, leaves),
    no early stopping."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        max_iter=settings["trees"], learning_rate=settings["learning_rate"],
        max_leaf_nodes=settings["leaves"], early_stopping=False, random_state=seed,
    ).fit(X, y)


def make_estimator(task: str, params: dict[str, Any]) -> Any:
    """``HistGradientBoostingClassifier`` or ``HistGradientBoostingRegressor`` with ``params``,
    for the ``select`` command."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    if task not in ("classification", "regression"):
        raise InputError(f"task: expected 'classification' or 'regression', got {task!r}")
    estimator = (HistGradientBoostingClassifier if task == "classification"
                 else HistGradientBoostingRegressor)
    unknown = sorted(set(params) - set(estimator().get_params()))
    if unknown:  # else a TypeError from the constructor, reported as an internal error
        raise InputError(f"--param {', '.join(unknown)}: not a parameter of "
                         f"{estimator.__name__}")
    return estimator(**params)
