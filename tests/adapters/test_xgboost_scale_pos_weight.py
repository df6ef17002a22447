"""XGBoost's ``scale_pos_weight`` against XGBoost itself.

XGBoost's ``RegLossObj`` losses (squared error, the logistic ones, gamma) multiply the weight
of the rows whose label is *exactly* 1 (``if (label == 1.0f) w *= scale_pos_weight``), soft
labels in (0, 1) not; the other losses ignore it. The library weighted every label above 0
(LightGBM's rule) and ignored it for squared error and gamma: the replayed gradients of every
soft row were wrong (B off a median 2.1x, a refit with nothing pruned moved margins by 1.0,
the hook with pruning off was not ``xgb.train``). The oracles: the model's own gains and
hessian sums, its predictions, ``xgb.train``'s margins.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost.objectives import takes_scale_pos_weight  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.objectives import LabelOneWeighted, make_objective  # noqa: E402

N = 1500


def _labels(objective: str, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Labels with many exactly 1 and many others (soft ones for the logistic losses)."""
    s = X[:, 0] + 0.5 * X[:, 1]
    if objective in ("reg:logistic", "binary:logistic", "binary:logitraw"):
        y = 1.0 / (1.0 + np.exp(-2 * s))
        y[::3] = np.round(y[::3])  # a third exactly 0 or 1, the rest soft
        return y
    if objective == "reg:gamma":  # positive, a quarter exactly 1
        return np.where(rng.random(X.shape[0]) < 0.25, 1.0, np.exp(0.5 * s))
    return np.where(rng.random(X.shape[0]) < 0.3, 1.0, s + rng.normal(size=X.shape[0]))


def _data(objective: str, seed: int, weights: bool, targets: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    if targets > 1:
        y = np.column_stack([_labels(objective, np.roll(X, -j, axis=1), rng)
                             for j in range(targets)])
    else:
        y = _labels(objective, X, rng)
    w = rng.uniform(0.3, 2.0, N) if weights else None
    return X, y, w


# the RegLossObj family of the installed XGBoost (>= 2.1: gamma too)
CASES = [
    ("reg:logistic", False, 1), ("binary:logistic", True, 1), ("binary:logitraw", False, 1),
    ("reg:squarederror", True, 1), ("reg:gamma", False, 1), ("reg:squarederror", True, 2),
]


def _margin(bst, X):
    return bst.predict(xgb.DMatrix(X), output_margin=True)


@pytest.mark.parametrize("objective, weights, targets", CASES)
def test_post_hoc_gains_and_refit_match_xgboost(objective, weights, targets):
    X, y, w = _data(objective, 0, weights, targets)
    Xv, yv, wv = _data(objective, 1, weights, targets)
    params = {"objective": objective, "scale_pos_weight": 4.0, "max_depth": 3, "nthread": 1}
    bst = xgb.train(params, xgb.DMatrix(X, y, weight=w), 12)
    assert isinstance(ax.read_model(bst).objective.base if targets > 1
                      else ax.read_model(bst).objective, LabelOneWeighted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the first iteration's hessian sums and gains match
        report = uc.unbiased_importance(bst, X, y, Xv, yv, train_weight=w, valid_weight=wv,
                                        random_state=0, n_jobs=1)
    s = report.splits
    big = s.host_gain.abs() > 1e-6 * s.host_gain.abs().max()
    rel = ((s.biased_gain - s.host_gain).abs() / s.host_gain.abs())[big]
    assert rel.max() < 1e-3 and rel.median() < 1e-5
    # a refit with nothing pruned gives the model back
    refit = uc.prune(bst, X, y, Xv, yv, train_weight=w, valid_weight=wv, threshold=-np.inf,
                     refit_leaves=True, random_state=0, n_jobs=1)
    np.testing.assert_allclose(_margin(refit, Xv), _margin(bst, Xv), atol=1e-4)


@pytest.mark.parametrize("objective, weights, targets", CASES)
def test_hook_without_pruning_is_xgb_train(objective, weights, targets):
    X, y, w = _data(objective, 0, weights, targets)
    params = {"objective": objective, "scale_pos_weight": 4.0, "max_depth": 3, "nthread": 1}
    ref = xgb.train(params, xgb.DMatrix(X, y, weight=w), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nothing held out
        hook = ax.train(params, xgb.DMatrix(X, y, weight=w), 10, prune_threshold=None,
                        holdout_fraction=0, verbose_eval=False)
    np.testing.assert_allclose(_margin(hook, X), _margin(ref, X), atol=1e-5)


@pytest.mark.parametrize("objective", ["reg:pseudohubererror", "count:poisson", "reg:tweedie",
                                       "reg:squaredlogerror"])
def test_losses_xgboost_does_not_weight_ignore_it(objective):
    """XGBoost ignores scale_pos_weight for these (no RegLossObj): so does the replay."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, 4))
    y = np.where(rng.random(N) < 0.3, 1.0, np.exp(0.3 * X[:, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # XGBoost: "scale_pos_weight" is not used
        bst = xgb.train({"objective": objective, "scale_pos_weight": 4.0, "max_depth": 3,
                         "nthread": 1}, xgb.DMatrix(X, y), 6)
    assert not takes_scale_pos_weight(objective)
    assert not isinstance(ax.read_model(bst).objective, LabelOneWeighted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = uc.unbiased_importance(bst, X, y, X[:500] + 0.1, y[:500], random_state=0,
                                   n_jobs=1).splits
    assert np.allclose(s.biased_gain, s.host_gain, rtol=1e-3)


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:logistic"])
def test_dump_takes_scale_pos_weight(objective):
    """A dump stores no objective parameter: host_params gives scale_pos_weight, for squared
    error too (it was dropped there), and the dump's gains are the host's."""
    X, y, _ = _data(objective, 0, False)
    Xv, yv, _ = _data(objective, 1, False)
    bst = xgb.train({"objective": objective, "scale_pos_weight": 3.0, "max_depth": 3,
                     "nthread": 1}, xgb.DMatrix(X, y), 6)
    config = json.loads(bst.save_config())["learner"]["learner_model_param"]
    host_params = {"objective": objective, "eta": 0.3, "lambda": 1.0, "scale_pos_weight": 3,
                   "base_score": json.loads(config["base_score"])[0]}
    dump = bst.get_dump(dump_format="json", with_stats=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = uc.unbiased_importance(dump, X, y, Xv, yv, host_params=host_params,
                                   random_state=0, n_jobs=1).splits
    rel = np.abs(s.biased_gain - s.host_gain) / np.abs(s.host_gain)
    assert np.median(rel) <= 1e-6 and np.quantile(rel, 0.95) <= 1e-3


def test_label_one_weighted_is_xgboosts_rule():
    """Only labels exactly 1 are weighted, in float32 as XGBoost (w *= spw, then g * w)."""
    base = make_objective("binary_logistic", precision="float32", soft_labels=True,
                          hessian_floor=1e-16)
    obj = LabelOneWeighted(base=base, weight=3.0)
    y = np.array([0.0, 0.3, 1.0, 0.999, 1.0])
    raw = np.array([0.1, -0.4, 0.7, 2.0, -1.0])
    w = np.array([1.0, 2.0, 0.5, 1.0, 1.5])
    g, h = obj.grad_hess(y, raw, w)
    g0, h0 = base.grad_hess(y, raw, w * np.where(y == 1, 3.0, 1.0))
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)
    gb, hb = base.grad_hess(y, raw, w)
    assert np.array_equal(g[[0, 1, 3]], gb[[0, 1, 3]])  # soft and 0 labels untouched
    np.testing.assert_allclose(g[[2, 4]], 3 * gb[[2, 4]], rtol=1e-6)
    assert obj.name == "binary_logistic" and obj.precision == "float32"
    with pytest.raises(ValueError, match="weight"):
        LabelOneWeighted(base=base, weight=-1.0)


def test_hessian_warning_does_not_claim_unbiased_gain_is_unaffected():
    """The first iteration's hessian warning said "unbiased_gain does not depend on it",
    shown also where the gradients themselves were not the training's (weights not given,
    scale_pos_weight on the wrong rows), which unbiased_gain does depend on."""
    X, y, w = _data("reg:squarederror", 0, True)
    bst = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y, weight=w), 4)
    with pytest.warns(UserWarning, match="hessian sums differ") as caught:
        uc.unbiased_importance(bst, X, y, X[:600] + 0.1, y[:600], random_state=0, n_jobs=1)
    text = " ".join(str(c.message) for c in caught)
    assert "does not depend on it" not in text
    assert "with weights or an objective other than the training's it measures that other " \
           "loss" in text
