"""Model files: the interface between the command line and the host adapters.

The command line reads, describes and writes model files only through this module, which
dispatches over the adapters by name (lazily: importing it imports no host). Each module named
in :data:`ADAPTERS` (``unbiased_criteria.adapters.<host>.model_file``) provides

* ``MODEL_FILE_KINDS: str``: the formats it reads, for messages ("a LightGBM text model");
* ``recognise_model_file(data: bytes) -> bool``: whether ``data`` is one of the adapter's
  file formats, from the content alone (cheap: no parsing). A file compressed by gzip, bz2
  or xz that no adapter takes as it is (a compressed pickle is one, for joblib) is
  decompressed (:func:`decompress`) and its content offered to the adapters again;
* ``load_model_file(file: ModelBytes) -> ModelFile``: the host's model object; raises
  :class:`~unbiased_criteria.errors.InputError` for a corrupt file, and for a format that can
  run code on load (pickle) unless ``file.trusted``;
* ``feature_schema(model) -> Schema``: feature count, names and categorical features with
  their stored categories;
* ``set_training_params(model, params: dict[str, str]) -> None``: training parameters the
  file does not store (XGBoost's eta, lambda...); ``InputError`` when the host takes none;
* ``output_format(suffix: str, input_format: str) -> str``: the format to write for an output
  file name ending in ``suffix`` (may warn when the suffix names another format);
* ``serialise_model(model, fmt: str) -> bytes``: the model in format ``fmt``;
* ``fit_example(X, y, *, seed: int, settings: dict) -> model``: the host's own training on a
  small example (the demo), with :data:`unbiased_criteria.demo.DEMO_SETTINGS`-style settings.
* ``make_estimator(task: str, params: dict) -> estimator``: the host's own scikit-learn
  estimator, ``"classification"`` or ``"regression"``, constructed with ``params`` (the
  ``select`` command's ``--param``), not fitted.

A new kind of model file (a JSON dump, another host's pickle) is one more entry in
:data:`ADAPTERS` and these functions in its adapter; the command line does not change.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import importlib.util
import lzma
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pandas as pd

from .errors import InputError

__all__ = [
    "ADAPTERS",
    "ModelBytes",
    "ModelFile",
    "Schema",
    "host_adapter",
    "installed_hosts",
    "load_model_file",
    "feature_schema",
    "set_training_params",
    "serialise_model",
    "fit_example",
    "host_estimator",
    "decompress",
]

#: host name -> (package that must be installed, pip name, adapter module), in the order the
#: adapters are asked to recognise a file
ADAPTERS: dict[str, tuple[str, str, str]] = {
    "lightgbm": ("lightgbm", "lightgbm", "unbiased_criteria.adapters.lightgbm.model_file"),
    "xgboost": ("xgboost", "xgboost", "unbiased_criteria.adapters.xgboost.model_file"),
    "sklearn": ("sklearn", "scikit-learn", "unbiased_criteria.adapters.sklearn.model_file"),
}


@dataclass(frozen=True)
class ModelBytes:
    """The content of a model file, as handed to an adapter.

    Attributes
    ----------
    data : bytes
    source : str
        What to call the file in messages (``"model path/to/file"``).
    trusted : bool
        The user vouches for the file: formats that can run code when loaded (pickle) may be
        read. A scikit-learn estimator's pickle or joblib file needs it.
    """

    data: bytes = field(repr=False)
    source: str
    trusted: bool = False


@dataclass(frozen=True)
class ModelFile:
    """A model loaded from a file.

    Attributes
    ----------
    model : Any
        The host's model object (``lightgbm.Booster``, ``xgboost.Booster``...).
    host : str
        Key of :data:`ADAPTERS`.
    format : str
        The file's format as its adapter names it (``"text"``, ``"json"``, ``"ubj"``).
    source : str
        As in :class:`ModelBytes`.
    """

    model: Any = field(repr=False)
    host: str
    format: str
    source: str


@dataclass(frozen=True)
class Schema:
    """The features a model expects, as far as its file tells.

    Attributes
    ----------
    n_features : int
    names : list of str or None
        Feature names, or None when the model has none (columns are then taken by position).
    categorical : dict of int to list or None
        Categorical features by index: the categories the model was trained with, or None
        when the model stores none (the data must then hold the integer codes).
    stored_name : callable or None
        How the host turns a data column's name into the feature name it stores (LightGBM
        replaces spaces by ``_``); None when it keeps names as they are.
    text_labels : bool
        The model encodes its labels itself, text included (a scikit-learn classifier's
        ``classes_``); otherwise labels must be numbers.
    classes : tuple or None
        Those labels (``classes_``), where the model keeps them: text ones are read from a
        CSV file as written ("01" stays "01", a class "NA" stays one).
    unseen_as_missing : bool
        The host predicts a category it never saw as a missing value (LightGBM and
        HistGradientBoosting do); False: it refuses such a value (XGBoost).
    """

    n_features: int
    names: list[str] | None
    categorical: dict[int, list | None]
    stored_name: Callable[[str], str] | None = field(default=None, repr=False)
    text_labels: bool = False
    unseen_as_missing: bool = True
    classes: tuple | None = None


def host_adapter(host: str) -> ModuleType:
    """The adapter module of ``host``.

    Raises
    ------
    InputError
        ``host`` is unknown, or its package is not installed ("needs lightgbm (pip install
        lightgbm)").
    """
    if host not in ADAPTERS:
        raise InputError(f"host: expected one of {', '.join(ADAPTERS)}, got {host!r}")
    package, pip_name, module = ADAPTERS[host]
    if importlib.util.find_spec(package) is None:
        raise InputError(f"needs {package} (pip install {pip_name})")
    return importlib.import_module(module)


def installed_hosts() -> list[str]:
    """The hosts of :data:`ADAPTERS` whose package is installed, in order."""
    return [h for h, (package, _, _) in ADAPTERS.items()
            if importlib.util.find_spec(package) is not None]


#: compressed streams the standard library reads (whole files: ``gzip model.txt``), by their
#: first bytes; joblib writes these too (and zlib, lz4: :func:`decompress` reads zlib)
_COMPRESSIONS: dict[str, bytes] = {"gzip": b"\x1f\x8b", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}
#: zlib stream headers (32 KiB window, no preset dictionary) of its four compression levels
_ZLIB_HEADERS = (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")


def _decompressor(name: str):
    """A new incremental decompressor of ``name`` (``decompress(data, max_length)``)."""
    if name == "gzip":
        return zlib.decompressobj(wbits=31)
    if name == "zlib":
        return zlib.decompressobj()
    return bz2.BZ2Decompressor() if name == "bz2" else lzma.LZMADecompressor()


def decompress(data: bytes, limit: int | None = None) -> tuple[str, bytes] | None:
    """The compression and content of a gzip, bz2, xz or zlib stream.

    Parameters
    ----------
    data : bytes
        A file's content.
    limit : int, optional
        Decompress only the first ``limit`` bytes of the content (enough to recognise it,
        cheaply); a stream cut short is then no error.

    Returns
    -------
    (str, bytes) or None
        ``("gzip", content)`` and so on; None when ``data`` is not such a stream.

    Raises
    ------
    ValueError
        ``data`` starts as such a stream but cannot be decompressed (corrupt, or cut short
        when ``limit`` is None), with the decompressor's reason.
    """
    name = next((n for n, magic in _COMPRESSIONS.items() if data.startswith(magic)), None)
    if name is None and data[:2] in _ZLIB_HEADERS:
        name = "zlib"  # joblib's "zlib"
    if name is None:
        return None
    try:
        if limit is not None:
            return name, _decompressor(name).decompress(data, limit)
        if name == "gzip":
            return name, gzip.decompress(data)  # every member, as gunzip reads them
        if name == "zlib":
            return name, zlib.decompress(data)
        return name, (bz2.decompress if name == "bz2" else lzma.decompress)(data)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        if isinstance(err, EOFError):
            reason = f"cut short ({reason})"
        raise ValueError(f"{_a(name)}-compressed file that cannot be decompressed: "
                         f"{reason}") from None


def _a(name: str) -> str:
    """``name`` with its article: "a gzip", "an xz"."""
    return f"{'an' if name == 'xz' else 'a'} {name}"


def load_model_file(data: bytes, source: str, *, trusted: bool = False) -> ModelFile:
    """Load a model file with the first installed adapter that recognises its content.

    Parameters
    ----------
    data : bytes
        The file's content: a model file, or one compressed by gzip, bz2 or xz (read
        decompressed; only a pickle inside needs ``trusted``).
    source : str
        What to call the file in messages.
    trusted : bool
        See :class:`ModelBytes`.

    Returns
    -------
    ModelFile

    Raises
    ------
    InputError
        Empty, recognised by no installed adapter, corrupt, or compressed and corrupt.
    """
    if not data.strip():
        raise InputError(f"{source}: is empty, not a model file")
    installed = installed_hosts()
    found = _load_recognised(ModelBytes(data, source, trusted), installed)
    if found is not None:
        return found
    # a compressed model file (model.txt.gz): its content, decompressed (it was taken for a
    # joblib pickle, and unpickling the text failed)
    try:
        packed = decompress(data)
    except ValueError as err:
        raise InputError(f"{source}: {err}") from None
    what = "not a model file"
    if packed is not None:
        name, content = packed
        found = _load_recognised(ModelBytes(content, source, trusted), installed) \
            if content.strip() else None
        if found is not None:
            return found
        what = f"{_a(name)}-compressed file whose content is not a model file"
    missing = [ADAPTERS[h][1] for h in ADAPTERS if h not in installed]
    hint = f"; other kinds need {', '.join(missing)} (pip install {' '.join(missing)})" \
        if missing else ""
    kinds = "; ".join(host_adapter(h).MODEL_FILE_KINDS for h in installed)
    raise InputError(f"{source}: {what} (none of: {kinds}){hint}")


def _load_recognised(file: ModelBytes, installed: list[str]) -> ModelFile | None:
    """``file`` loaded by the first of the ``installed`` adapters that recognises it, or
    None."""
    for host in installed:
        adapter = host_adapter(host)
        if adapter.recognise_model_file(file.data):
            return adapter.load_model_file(file)
    return None


def feature_schema(model_file: ModelFile) -> Schema:
    """:class:`Schema` of a loaded model (its adapter's ``feature_schema``)."""
    return host_adapter(model_file.host).feature_schema(model_file.model)


def set_training_params(model_file: ModelFile, params: Mapping[str, str]) -> None:
    """Set training parameters the file does not store, on ``model_file.model``."""
    host_adapter(model_file.host).set_training_params(model_file.model, dict(params))


def serialise_model(model_file: ModelFile, model: Any, suffix: str) -> bytes:
    """``model`` (of ``model_file``'s host) as the bytes of a file named ``*suffix``.

    The format is the one the adapter writes for ``suffix`` (XGBoost: ``.json``, ``.ubj``),
    else ``model_file``'s own.
    """
    adapter = host_adapter(model_file.host)
    return adapter.serialise_model(model, adapter.output_format(suffix.lower(),
                                                                model_file.format))


def fit_example(host: str, X: pd.DataFrame, y: Any, *, seed: int,
                settings: Mapping[str, Any]) -> Any:
    """A ``host`` model trained by the host itself (the demo's model)."""
    return host_adapter(host).fit_example(X, y, seed=seed, settings=dict(settings))


def host_estimator(host: str, task: str, params: Mapping[str, Any]) -> Any:
    """A new ``host`` scikit-learn estimator (``task``: classification or regression)."""
    return host_adapter(host).make_estimator(task, dict(params))


def host_fit_errors(host: str) -> tuple[type[Exception], ...]:
    """The errors ``host`` raises for parameters or rows it refuses while fitting, where they
    are not ``ValueError`` (LightGBM's ``LightGBMError``): bad input, not a bug."""
    return getattr(host_adapter(host), "FIT_ERRORS", ())
