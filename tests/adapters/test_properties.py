"""Property tests over small random data and host parameters, both hosts.

For any data and parameters the hosts accept: the recomputed gain B equals the host's own
gain, the replayed raw scores equal the host's predictions, a model written back from its IR
predicts as the original, and pruning returns a model the host loads and predicts with as the
IR does. Nothing may crash or hang (hypothesis' deadline).

The CI budget is small (``HYPOTHESIS_PROFILE=ci``, the default); for a longer local run:
``HYPOTHESIS_PROFILE=long python -m pytest tests/adapters/test_properties.py``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.api import adapter_for, prune_forest  # noqa: E402
from unbiased_criteria.replay import RowSet, replay, resolve_bias  # noqa: E402

settings.register_profile(
    "ci", max_examples=20, deadline=20_000, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long", max_examples=300, deadline=60_000,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def problems(draw):
    """Data: 30-300 rows, 1-4 features (some with NaN or few distinct values), an objective,
    weights or not."""
    n = draw(st.integers(30, 300))
    n_features = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    for j in range(n_features):
        kind = draw(st.sampled_from(["continuous", "levels", "nan"]))
        if kind == "levels":
            X[:, j] = rng.integers(0, draw(st.integers(2, 6)), n)
        elif kind == "nan":
            X[rng.random(n) < 0.3, j] = np.nan
    signal = np.nan_to_num(X[:, 0]) * draw(st.floats(0.0, 2.0))
    objective = draw(st.sampled_from(["regression", "binary", "multiclass", "poisson"]))
    noise = rng.normal(size=n)
    if objective == "binary":
        y = (signal + noise > 0).astype(float)
        y[:2] = [0.0, 1.0]
    elif objective == "multiclass":
        y = np.digitize(signal + noise, [-0.5, 0.5]).astype(float)
        y[:3] = [0.0, 1.0, 2.0]
    elif objective == "poisson":
        y = rng.poisson(np.exp(0.5 * np.clip(signal, -2, 2))).astype(float)
        y[0] = 1.0
    else:
        y = signal + noise
    w = rng.uniform(0.2, 3.0, n) if draw(st.booleans()) else None
    return X, y, w, objective


def _lightgbm(data, draw_params):
    X, y, w, objective = data
    params = {
        "objective": objective, "verbose": -1, "num_threads": 1, "deterministic": True,
        "num_leaves": draw_params["leaves"], "min_data_in_leaf": draw_params["min_rows"],
        "min_sum_hessian_in_leaf": 1e-3, "learning_rate": draw_params["eta"],
        "lambda_l2": draw_params["l2"], "min_data_in_bin": 1,
    }
    if objective == "multiclass":
        params["num_class"] = 3
    ds = lightgbm.Dataset(X, y, weight=w)
    return lightgbm.train(params, ds, draw_params["rounds"], keep_training_booster=True)


def _xgboost(data, draw_params):
    X, y, w, objective = data
    name = {"regression": "reg:squarederror", "binary": "binary:logistic",
            "multiclass": "multi:softprob", "poisson": "count:poisson"}[objective]
    params = {
        "objective": name, "nthread": 1, "max_depth": draw_params["depth"],
        "min_child_weight": draw_params["min_rows"] / 20, "eta": draw_params["eta"],
        "lambda": draw_params["l2"],
    }
    if objective == "multiclass":
        params["num_class"] = 3
    return xgboost.train(params, xgboost.DMatrix(X, y, weight=w), draw_params["rounds"])


PARAMS = st.fixed_dictionaries({
    "leaves": st.integers(2, 12), "depth": st.integers(1, 4), "min_rows": st.integers(1, 20),
    "eta": st.floats(0.05, 1.0), "l2": st.sampled_from([0.0, 0.5, 3.0]),
    "rounds": st.integers(1, 5),
})


def _raw(host, model, X):
    if host == "lightgbm":
        return model.predict(X, raw_score=True).reshape(X.shape[0], -1)
    out = model.predict(xgboost.DMatrix(X), output_margin=True)
    return out.reshape(X.shape[0], -1)


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
@settings(settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci")))
@given(data=problems(), params=PARAMS)
def test_gains_scores_and_written_models_agree_with_the_host(host, data, params):
    X, y, w, _ = data
    model = (_lightgbm if host == "lightgbm" else _xgboost)(data, params)
    adapter = adapter_for(model)
    read = adapter.read_model(model)
    read = resolve_bias(read, read.objective, y, w)

    # replayed raw scores are the host's
    router = adapter.make_router(model, read, X, "X_train")
    result = replay(read, read.objective, train=RowSet(router, y, w))
    tol = 1e-9 if host == "lightgbm" else 2e-5
    np.testing.assert_allclose(result.raw_train, _raw(host, model, X), rtol=0,
                               atol=tol * max(1.0, np.abs(result.raw_train).max()))

    # B is the host's gain, on the scale of the node's score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny data: "most splits unusable" is expected
        report = uc.unbiased_importance(model, X, y, X, y, train_weight=w, valid_weight=w,
                                        random_state=0, n_blocks=0)
    s = report.splits
    if len(s):
        scale = np.maximum(np.abs(s["host_gain"]), 1e-3 * np.abs(s["host_gain"]).max() + 1e-9)
        rel = np.abs(s["biased_gain"] - s["host_gain"]) / scale
        assert rel.max() <= (1e-5 if host == "lightgbm" else 1e-3), rel.max()
        assert np.isfinite(s["unbiased_gain"]).all()

    # the unchanged IR written back predicts as the original
    same = adapter.write_model(model, read.forest)
    np.testing.assert_allclose(_raw(host, same, X), _raw(host, model, X), rtol=0,
                               atol=1e-12 if host == "lightgbm" else 1e-6)

    # pruning gives a model the host predicts with as the IR does
    if not read.objective.renews_leaves:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the written model is checked, not the statistics: held-out rows may be the
            # training features with other rows' labels (prune refuses the training rows)
            pruned = prune_forest(model, X, y, X[:0:-1], np.roll(y, 1)[:0:-1], train_weight=w,
                                  random_state=1)
        written = adapter.write_model(model, pruned.forest)
        np.testing.assert_allclose(_raw(host, written, X), pruned.replay.raw_train, rtol=0,
                                   atol=tol * max(1.0, np.abs(pruned.replay.raw_train).max()))
