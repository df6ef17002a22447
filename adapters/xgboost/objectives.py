"""XGBoost objectives in the core: names, links and callables.

An XGBoost objective name (with its ``<x>_param`` block of the model JSON) becomes a core
:class:`~unbiased_criteria.objectives.Objective` with XGBoost's conventions (float32
arithmetic, hessian floors, the softmax factor 2); its link turns ``base_score`` (output
space) into the initial margin and back; a callable ``obj(preds, dtrain)`` of
``xgboost.train`` becomes a core objective too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xgboost
from unbiased_criteria.adapters.xgboost import compat
from unbiased_criteria.adapters.xgboost.layout import _outputs

from unbiased_criteria import objectives as _objectives
from unbiased_criteria.errors import ObjectiveNeeded
from unbiased_criteria.model import Model, UnsupportedModelError
from unbiased_criteria.objectives import Objective

_HESSIAN_FLOOR = 1e-16  # kRtEps, XGBoost's floor of the logistic and softmax hessians
#: objectives whose base_score is a probability (logit link) or a mean (log link)
_LOGIT_LINK = frozenset({"binary:logistic", "reg:logistic"})
_LOG_LINK = frozenset({"count:poisson", "reg:gamma", "reg:tweedie"})
#: objectives XGBoost runs as ``RegLossObj`` in every version, which multiplies the weight
#: of rows whose label is exactly 1 by ``scale_pos_weight`` (``if (label == 1.0f) w *=
#: scale_pos_weight``; :func:`takes_scale_pos_weight` adds gamma and squared log error)
_REG_LOSS = frozenset({"reg:squarederror", "reg:linear", "reg:logistic", "binary:logistic",
                       "binary:logitraw"})


def parse_base_score(text: str, objective: str, n_outputs: int = 1) -> np.ndarray:
    """The initial margin of every output from ``learner_model_param.base_score``.

    Parameters
    ----------
    text : str
        ``"5E-1"`` (XGBoost <= 3.0) or ``"[5E-1]"`` / ``"[a,b,c]"`` (3.1+), in output space.
    objective : str
        XGBoost objective name: selects the link (logit for binary:logistic and reg:logistic,
        log for count:poisson, reg:gamma and reg:tweedie, identity otherwise; the multiclass
        vector of 3.2+ is already a margin).
    n_outputs : int
        A single value is repeated for every output (old multiclass models).

    Returns
    -------
    float64 array (n_outputs,) holding float32 values
        Computed as XGBoost does: ``-logf(1/p - 1)`` and ``logf(p)`` in float32.
    """
    value = np.atleast_1d(np.asarray(json.loads(text), dtype=np.float32))
    if value.ndim != 1 or value.size not in (1, n_outputs):
        raise ValueError(f"base_score {text!r} does not have {n_outputs} value(s)")
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective in _LOGIT_LINK:
            # ProbToMargin: -logf(1.0f / p - 1.0f); logf is correctly rounded
            ratio = np.float32(1) / value - np.float32(1)
            value = -np.log(ratio.astype(np.float64)).astype(np.float32)
        elif objective in _LOG_LINK:
            value = np.log(value.astype(np.float64)).astype(np.float32)
    return np.broadcast_to(value, (n_outputs,)).astype(np.float64)


def expf(x: np.ndarray) -> np.ndarray:
    """XGBoost's float32 ``expf``: the correctly rounded float32 of ``exp(x)``.

    numpy's float32 ``exp`` is off by one unit in the last place for some arguments (e.g.
    ``exp(-0.6526959f)``), which splits values XGBoost ties or ties values it splits;
    rank metrics such as AUC see that.
    """
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(x, dtype=np.float64)).astype(np.float32)


def _margin_to_base_score(margin: np.ndarray, objective: str) -> np.ndarray:
    """Inverse of the link of :func:`parse_base_score` (output space, float32)."""
    m = np.asarray(margin, dtype=np.float32)
    if objective in _LOGIT_LINK:
        return np.float32(1) / (np.float32(1) + expf(-m))
    if objective in _LOG_LINK:
        return expf(m)
    return m


def _format_base_score(values: np.ndarray, as_list: bool) -> str:
    text = [np.format_float_scientific(np.float32(v), unique=True) for v in values]
    text = [t.replace("e+", "E").replace("e", "E") for t in text]
    return "[" + ",".join(text) + "]" if as_list else text[0]


def _objective_params(obj: Mapping) -> dict[str, str]:
    """Flatten ``{"name": ..., "<x>_param": {...}}`` into one dict of strings."""
    params: dict[str, str] = {}
    for key, value in obj.items():
        if key != "name" and isinstance(value, Mapping):
            params.update({k: str(v) for k, v in value.items()})
    return params


def model_objective_params(learner: Mapping) -> dict[str, str]:
    """The objective parameters of a model JSON's ``learner``: its ``objective`` block's,
    and those the model file recorded where the installed XGBoost dropped them on loading it
    (the Booster attribute :data:`~.compat.FILE_OBJECTIVE_ATTR`, for the same objective; a
    parameter the Booster holds, set since, wins)."""
    obj_json = learner.get("objective", {"name": "reg:squarederror"})
    params = _objective_params(obj_json)
    text = (learner.get("attributes") or {}).get(compat.FILE_OBJECTIVE_ATTR)
    if text is None:
        return params
    recorded = json.loads(text)
    if not isinstance(recorded, Mapping) or recorded.get("name") != obj_json.get("name"):
        return params  # the objective was changed since (set_param): the file's do not apply
    return {**_objective_params(recorded), **params}


def takes_scale_pos_weight(name: str, version: tuple[int, int] | None = None) -> bool:
    """Whether XGBoost ``version`` (None: the installed one) applies ``scale_pos_weight`` to
    objective ``name``: its ``RegLossObj`` losses do (squared error, the logistic ones, gamma
    from 2.1, squared log error up to 3.0.2), the others ignore it. A model JSON stores the
    parameter (``reg_loss_param``) exactly for these, in the version that wrote it."""
    version = version or compat.model_version()
    if name == "reg:gamma":
        return version >= (2, 1)
    if name == "reg:squaredlogerror":
        return version <= (3, 0)  # (3.0.3 moved it out; the JSON tells the patch versions)
    return name in _REG_LOSS


def _core_objective(name: str, params: Mapping[str, str], n_outputs: int,
                    version: tuple[int, int] | None = None) -> Objective | None:
    """The core objective of XGBoost objective ``name`` (None: no core equivalent).

    ``version`` is the (major, minor) XGBoost that trained the model (None: the installed one).
    Raises UnsupportedModelError for ranking, survival and multi-quantile objectives. From
    XGBoost 3.4 the L1 objectives are its smoothed surrogates (leaves not renewed).
    ``params["scale_pos_weight"]``, where XGBoost applies it (:func:`takes_scale_pos_weight`),
    weighs the rows whose label is exactly 1 (XGBoost's rule, soft labels included).
    """
    objective = _unweighted_objective(name, params, n_outputs, version)
    spw = params.get("scale_pos_weight")
    if objective is None or spw is None or not takes_scale_pos_weight(name, version):
        return objective
    weight = float(np.float32(spw))
    if weight == 1.0:
        return objective
    return _objectives.LabelOneWeighted(base=objective, weight=weight)


def _unweighted_objective(name: str, params: Mapping[str, str], n_outputs: int,
                          version: tuple[int, int] | None) -> Objective | None:
    """:func:`_core_objective` without ``scale_pos_weight``."""
    f32 = {"precision": "float32"}
    smooth = (version or compat.model_version()) >= compat.SMOOTH_L1_FROM
    make = _objectives.make_objective
    if name.startswith(("rank:", "survival:")):
        raise UnsupportedModelError(
            f"objective {name!r} is not supported: ranking and survival objectives cannot be "
            "replayed row by row"
        )
    if name in ("reg:squarederror", "reg:linear"):
        return make("squared_error", **f32)
    if name == "reg:squaredlogerror":
        return make("squared_log_error", **f32)
    if name in ("reg:logistic", "binary:logistic", "binary:logitraw"):
        return make("binary_logistic", hessian_floor=_HESSIAN_FLOOR, soft_labels=True, **f32)
    if name in ("multi:softprob", "multi:softmax"):
        return make(
            "multiclass_softmax", n_classes=n_outputs, hessian_factor=2.0,
            hessian_floor=_HESSIAN_FLOOR, **f32,
        )
    if name == "count:poisson":
        return make("poisson", max_delta_step=float(params.get("max_delta_step", 0.7)), **f32)
    if name == "reg:gamma":
        return make("gamma", **f32)
    if name == "reg:tweedie":
        power = float(params.get("tweedie_variance_power", 1.5))
        return make("tweedie", variance_power=power, **f32)
    if name == "reg:pseudohubererror":
        return make("pseudo_huber", slope=float(params.get("huber_slope", 1.0)), **f32)
    if name == "reg:absoluteerror":
        return make("smooth_absolute_error" if smooth else "absolute_error", **f32)
    if name == "reg:quantileerror":
        alpha = np.atleast_1d(json.loads(params.get("quantile_alpha", "0.5")))
        kind = "smooth_quantile" if smooth else "quantile"
        if alpha.size == 1:
            return make(kind, alpha=float(alpha[0]), **f32)
        # one output per quantile, on the same labels (num_target = the number of alphas)
        return _objectives.Quantiles(bases=tuple(make(kind, alpha=float(a), **f32)
                                                 for a in alpha))
    return None


def make_objective(spec: str | Callable | Objective, model_ir: Model) -> Objective:
    """The core objective for ``spec``.

    Parameters
    ----------
    spec : str, callable or Objective
        An XGBoost objective name (``"binary:logistic"``; its parameters are the model's when
        the model has the same objective, else XGBoost's defaults), a canonical core name
        (``"binary_logistic"``, float32 arithmetic, XGBoost's hessian floors and softmax
        factor), a callable ``f(y, raw_score, weight) -> (grad, hess)``, or a core Objective.
    model_ir : Model
        The model read by :func:`read_model` (number of outputs, objective parameters).

    Returns
    -------
    Objective
    """
    n_outputs = model_ir.forest.n_outputs
    learner = (model_ir.source or {}).get("learner")
    n_target = _outputs(learner)[1] if learner else 1  # dumps: no learner, one target
    if n_target > 1:  # a multi-target model: labels (n, n_target), the loss target by target
        if callable(spec) and not isinstance(spec, Objective):
            return _objectives.make_objective(spec, n_outputs=n_target, label_columns=n_target)
        if isinstance(spec, Objective):
            return spec
        return multi_target(_single_objective(spec, model_ir, 1), spec, n_target)
    given = _objectives.objective_given(spec, n_outputs)
    if given is not None:
        return given
    return _single_objective(spec, model_ir, n_outputs)


def _single_objective(spec: str, model_ir: Model, n_outputs: int) -> Objective:
    """:func:`make_objective` of a name, for ``n_outputs`` outputs."""
    if ":" in spec:
        learner = (model_ir.source or {}).get("learner", {})
        same = learner.get("objective", {}).get("name") == spec
        params = model_objective_params(learner) if same else {}
        objective = _core_objective(spec, params, n_outputs,
                                    compat.model_version(model_ir.source))
        if objective is None:
            raise ObjectiveNeeded(f"XGBoost objective {spec!r} has no equivalent in the core: "
                                  "pass objective= a callable f(y, raw_score, weight) -> "
                                  "(grad, hess)")
        return objective
    params: dict[str, Any] = {"precision": "float32"}
    if spec == "binary_logistic":
        params["hessian_floor"] = _HESSIAN_FLOOR
    elif spec == "multiclass_softmax":
        params.update(n_classes=n_outputs, hessian_factor=2.0, hessian_floor=_HESSIAN_FLOOR)
    elif spec == "multiclass_ova":
        params["n_classes"] = n_outputs
    return _objectives.make_objective(spec, **params)


def multi_target(objective: Objective | None, name: str, n_target: int) -> Objective | None:
    """The objective of a model of ``n_target`` label columns: its loss target by target.

    None stays None (a custom objective: ``objective=`` then takes ``(n, n_target)`` labels
    and raw scores). Losses that do not apply target by target are refused.
    """
    if objective is None or objective.n_outputs == n_target:  # None, or several quantiles
        return objective
    if objective.n_outputs > 1:
        raise UnsupportedModelError(
            f"objective {name!r} gives {objective.n_outputs} outputs but the model has "
            f"{n_target} targets: several quantiles are supported with one label column")
    try:
        return _objectives.MultiTarget(base=objective, n_targets=n_target)
    except ValueError:
        raise UnsupportedModelError(
            f"multi-target models (num_target={n_target}) with objective {name!r} are not "
            "supported: its gradients are not computed target by target as they are replayed"
        ) from None


def _custom_objective(obj: Callable, dtrain: xgboost.DMatrix, n_outputs: int,
                      label_columns: int = 1) -> Objective:
    """XGBoost's ``obj(preds, dtrain) -> (grad, hess)`` as the core's ``f(y, raw, weight)``.

    ``preds`` are float32 margins ``(n,)`` or ``(n, K)``; flat results are row-major, as
    XGBoost reads them. The callable applies weights itself (it has ``dtrain``).
    """
    n = int(dtrain.num_row())

    def func(y, raw, weight):
        grad, hess = obj(np.array(raw, dtype=np.float32), dtrain)
        for what, value in (("grad", grad), ("hess", hess)):
            if np.size(value) != n * n_outputs:
                raise ValueError(
                    f"obj returned {np.size(value)} {what} values, expected {n * n_outputs} "
                    f"({n} rows x {n_outputs} outputs; flat arrays are row-major)"
                )
        return grad, hess

    return _objectives.make_objective(func, n_outputs=n_outputs, label_columns=label_columns)
