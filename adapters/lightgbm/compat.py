"""Every private LightGBM API the adapter uses, in one place.

Known to work with LightGBM 4.0 to 4.7 (``pyproject.toml``: ``lightgbm>=4.0``; the tests run
on the installed version, 4.7.0 when this was written). What is used, and why:

* ``lightgbm.basic._choose_param_value``: a parameter's value through its aliases, exactly as
  ``lightgbm.train`` resolves it (:func:`choose_param_value`);
* ``Dataset._update_params``, ``Dataset._set_predictor``, ``Dataset._reverse_update_params``:
  construct the Datasets with the training parameters as ``lightgbm.train`` does, then restore
  them (:func:`bind_params`, :func:`unbind_params`);
* ``Dataset._handle``: whether a Dataset is constructed (:func:`is_constructed`);
* ``Booster._Booster__boost``: one iteration from given gradients without resetting the
  objective (:func:`boost_one_iteration`; ``Booster.update(fobj=...)`` first sets
  ``objective='none'``, which fails when LightGBM kept no usable feature);
* ``Booster._Booster__inner_predict``: the Booster's own raw scores of its training rows, whose
  change over one iteration gives each row's leaf without routing it again
  (:func:`train_scores`; without it the grower routes the rows with ``predict``);
* ``LGBMModel._Booster``: a fitted estimator's Booster object itself (:func:`estimator_booster`);
* ``LGBMModel._process_params``: overridden by the estimators to drop their own parameters;
* ``LGBMModel.fit`` calling the global ``train``: the estimators run a copy of it with our
  ``train`` (:func:`unbiased_criteria.adapters._estimators.with_train` checks it);
* ``Booster.train_set``: set while a Booster holds its training Dataset (``lightgbm.train``
  drops it with ``free_dataset()`` after its text round trip, unless
  ``keep_training_booster=True``): such a Booster's trees may hold more digits than its text
  (:func:`holds_training_data`);
* ``lightgbm.basic._LIB.LGBM_BoosterDumpModel``, ``lightgbm.basic._safe_call`` and
  ``Booster._handle``: the dump's JSON text as LightGBM writes it, before ``json.loads``
  (:func:`dump_model_text`; ``Booster.dump_model`` decodes the feature names LightGBM writes
  unescaped, so ``\\t`` in a name becomes a tab and ``\\d`` fails);
* ``lightgbm.basic.EvalResult`` where it exists (a NamedTuple; older 4.x pass plain tuples):
  the type of callbacks' ``evaluation_result_list`` entries (:data:`EVAL_RESULT`).

The names needed to read any model are checked at import, the others where used; a missing one
raises :class:`~unbiased_criteria.adapters._compat.HostVersionError`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import lightgbm
import lightgbm.basic
import numpy as np
from unbiased_criteria.adapters._compat import HostVersionError, private

__all__ = [
    "KNOWN_VERSIONS", "HostVersionError", "choose_param_value", "bind_params", "unbind_params",
    "is_constructed", "boost_one_iteration", "train_scores", "estimator_booster",
    "set_estimator_booster", "EVAL_RESULT", "holds_training_data",
    "check_estimator_layout", "dump_model_text",
]

#: LightGBM versions the adapter is known to work with
KNOWN_VERSIONS = "4.0 to 4.7"
VERSION = lightgbm.__version__


def _private(owner: Any, name: str) -> Any:
    return private(owner, name, "lightgbm", VERSION, KNOWN_VERSIONS)


_choose_param_value = _private(lightgbm.basic, "_choose_param_value")

#: ``lightgbm.basic.EvalResult`` (a NamedTuple), None where LightGBM passes plain tuples
EVAL_RESULT: type | None = getattr(lightgbm.basic, "EvalResult", None)


def choose_param_value(params: dict[str, Any], name: str, default: Any = None) -> dict[str, Any]:
    """A copy of ``params`` with LightGBM parameter ``name`` resolved through its aliases (the
    aliases removed), as ``lightgbm.train`` resolves it."""
    return _choose_param_value(main_param_name=name, params=params, default_value=default)


def bind_params(train_set: lightgbm.Dataset, others: list[lightgbm.Dataset],
                params: dict[str, Any]) -> None:
    """Give the Datasets the training ``params`` (and ``others`` ``train_set`` as reference),
    as ``lightgbm.train`` does before constructing them."""
    _private(train_set, "_update_params")(params)
    _private(train_set, "_set_predictor")(None)
    for ds in others:
        _private(ds, "_update_params")(params).set_reference(train_set)


def unbind_params(datasets: list[lightgbm.Dataset]) -> None:
    """Restore the Datasets' own parameters after construction."""
    for ds in datasets:
        _private(ds, "_reverse_update_params")()


def is_constructed(ds: lightgbm.Dataset) -> bool:
    """Whether ``ds`` has been constructed (holds a native handle)."""
    return _private(ds, "_handle") is not None


def boost_one_iteration(booster: lightgbm.Booster, grad, hess) -> None:
    """One iteration of ``booster`` from the given gradients and hessians.

    ``Booster.__boost`` (LightGBM 4.x) takes them as they are; without it, ``update(fobj=...)``
    does the same except that it first resets the objective to ``'none'``.
    """
    step = getattr(booster, "_Booster__boost", None)
    if step is not None:
        step(grad=grad, hess=hess)
    else:
        booster.update(fobj=lambda preds, data: (grad, hess))


def train_scores(booster: lightgbm.Booster, out: np.ndarray | None = None):
    """A copy of the Booster's own raw scores of its training rows, ``(n,)`` or ``(n, K)``
    float64 (into ``out`` when it has that shape), or None where this LightGBM has no
    ``Booster.__inner_predict``."""
    inner = getattr(booster, "_Booster__inner_predict", None)
    if inner is None:
        return None
    scores = inner(data_idx=0)  # its buffer is reused: a copy
    if out is None or out.shape != scores.shape or out.dtype != np.float64:
        return np.array(scores, dtype=np.float64)
    np.copyto(out, scores)
    return out


def estimator_booster(model: lightgbm.LGBMModel) -> lightgbm.Booster | None:
    """A LightGBM estimator's Booster object, None when it is not fitted."""
    return getattr(model, "_Booster", None)


def set_estimator_booster(model: lightgbm.LGBMModel, booster: lightgbm.Booster) -> None:
    """Make ``booster`` the Booster of the (fitted) estimator ``model``."""
    model._Booster = booster


def check_estimator_layout() -> None:
    """Fail now, with a clear message, if ``LGBMModel`` lacks what the estimators override."""
    _private(lightgbm.LGBMModel, "_process_params")


def holds_training_data(booster: lightgbm.Booster) -> bool:
    """Whether ``booster`` was made for training and still holds its Dataset: its gains and
    internal values may then have more digits than its text model writes (6), which a Booster
    loaded from text, or returned by ``lightgbm.train`` (a text round trip), does not."""
    return getattr(booster, "train_set", None) is not None


#: the first buffer for a dump's text (bytes), as ``Booster.dump_model``'s
DUMP_BUFFER = 1 << 20


def dump_model_text(booster: lightgbm.Booster, start_iteration: int = 0,
                    num_iteration: int = -1) -> str:
    """The JSON text of ``booster.dump_model(start_iteration, num_iteration)`` (split
    importances) as LightGBM writes it, not decoded: its strings are written unescaped."""
    lib = _private(lightgbm.basic, "_LIB")
    safe_call = _private(lightgbm.basic, "_safe_call")
    handle = _private(booster, "_handle")

    def call(size: int) -> tuple[bytes, int]:
        buffer = ctypes.create_string_buffer(size)
        needed = ctypes.c_int64(0)
        safe_call(lib.LGBM_BoosterDumpModel(
            handle, ctypes.c_int(start_iteration), ctypes.c_int(num_iteration),
            ctypes.c_int(0), ctypes.c_int64(size), ctypes.byref(needed),
            ctypes.c_char_p(ctypes.addressof(buffer))))
        return buffer.value, needed.value

    text, needed = call(DUMP_BUFFER)
    if needed > DUMP_BUFFER:  # the first call tells the length the text needs
        text, _ = call(needed)
    return text.decode("utf-8")
