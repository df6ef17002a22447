"""Models of labels, weights or hessian sums far from 1 are read, checked and pruned as any
other: every tolerance is in the data's own units, and the hosts' own constants are
replayed. Oracles: the hosts' stored gains, their predictions and the parameters the models
were trained with; where labels are scaled, the same model at scale 1."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost.reader import parse_model  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.api import _prepare  # noqa: E402

N = 3000


def make(seed: int, n: int = N):
    r = np.random.default_rng(seed)
    X = np.column_stack([r.integers(0, 2, n), r.integers(0, 6, n), r.normal(size=n)])
    return X.astype(float), 0.5 * X[:, 0] + r.normal(size=n)


X, y = make(0)
Xv, yv = make(1)
LGB = dict(objective="regression", learning_rate=0.1, num_leaves=8, verbose=-1, num_threads=1)


# XGBoost: eta and lambda of a loaded model whose leaves are small

@pytest.mark.parametrize("scale", [1e-3, 1e-6])
def test_a_loaded_xgboost_model_of_small_leaves_infers_eta_and_lambda(scale):
    """Labels of ``scale`` with weights of ``1 / scale`` (XGBoost splits only on a loss
    change above its absolute 1e-6) give leaves of about ``scale``: the check of a loaded
    model's defaults (eta 0.3, lambda 1) against its trees left out every node below an
    absolute 1e-6, so the defaults "fit" and a refit that pruned nothing moved predictions
    by 1.5 times their range, without a word. Oracles: the live Booster's predictions and
    the parameters it was trained with (lambda ``5 / scale`` is lambda 5 in these hessians'
    units)."""
    w = np.full(N, 1 / scale)
    live = xgb.train({"objective": "reg:squarederror", "eta": 0.05, "lambda": 5 / scale,
                      "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y * scale, weight=w), 30)
    model = xgb.Booster(model_file=live.save_raw("json"))
    assert ax.read_model(model).leaf_params_unknown  # the defaults do not fit
    prep = _prepare(model, X, y * scale, Xv, yv * scale, w, w, None, 2**20)
    assert prep.model.forest.trees[0].shrinkage == pytest.approx(0.05, rel=1e-4)
    assert prep.model.split_score.l2 == pytest.approx(5 / scale, rel=1e-3)
    d = xgb.DMatrix(Xv)
    before = live.predict(d, output_margin=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = uc.prune(model, X, y * scale, Xv, yv * scale, train_weight=w, valid_weight=w,
                        threshold=-np.inf, refit_leaves=True, random_state=0, n_jobs=1)
    np.testing.assert_allclose(kept.predict(d, output_margin=True), before,
                               atol=1e-5 * np.ptp(before))


def test_each_xgboost_trees_eta_is_read_from_weights_of_any_scale():
    """The per-tree reading of eta left out parents whose ``w (H + lambda)`` was below an
    absolute 1e-12: a model of small gradients (its leaves and weights scaled by 2**-50, as
    labels scaled so would give) lost every reading, and the configured eta served every
    tree. Oracle: the two etas the model was trained with (0.3, then 0.05 continued)."""
    params = {"objective": "reg:squarederror", "nthread": 1, "max_depth": 3}
    first = xgb.train({**params, "eta": 0.3}, xgb.DMatrix(X, y), 10)
    model = xgb.train({**params, "eta": 0.05}, xgb.DMatrix(X, y), 10, xgb_model=first)
    js = json.loads(model.save_raw("json"))
    for tree in js["learner"]["gradient_booster"]["model"]["trees"]:
        leaf = np.asarray(tree["left_children"]) < 0
        cond = np.asarray(tree["split_conditions"], dtype=np.float64)
        tree["split_conditions"] = np.where(leaf, cond * 2.0**-50, cond).tolist()
        tree["base_weights"] = (np.asarray(tree["base_weights"]) * 2.0**-50).tolist()
    read = parse_model(js, {"eta": 0.05, "lambda": 1.0})
    etas = np.array([t.shrinkage for t in read.forest.trees])
    np.testing.assert_allclose(etas, np.repeat([0.3, 0.05], 10), rtol=1e-6)
    assert not any("do not reproduce" in m for m in read.warnings)


# the later trees' check while pruning: a pruning move at a small scale is a move

@pytest.mark.parametrize("host", ["lightgbm", "hgb"])
def test_a_pruning_move_of_small_labels_is_a_change(host):
    """Labels scaled by 1e-12 (the same trees, every gain scaled by 1e-24): the check that a
    pruning moved a tree's leaves allowed an absolute 1e-12 of rounding, so every move was
    taken for rounding, the later trees were held to the model's gains at the pruned
    scores, and prune refused the model as DART. Oracle: the same model at label scale 1,
    whose pruning (kept splits, leaves) this one must equal, scaled."""

    def fit(scale):
        if host == "lightgbm":
            return lgb.train(LGB, lgb.Dataset(X, y * scale), 30)
        return HistGradientBoostingRegressor(max_iter=30, max_leaf_nodes=8,
                                             early_stopping=False).fit(X, y * scale)

    expected = uc.prune(fit(1.0), X, y, Xv, yv, random_state=0, n_jobs=1).predict(Xv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(fit(1e-12), X, y * 1e-12, Xv, yv * 1e-12, random_state=0, n_jobs=1)
    np.testing.assert_allclose(pruned.predict(Xv) / 1e-12, expected, rtol=1e-6,
                               atol=1e-6 * np.ptp(expected))


# LightGBM's kEpsilon: hessian sums as small as it

@pytest.mark.parametrize("weight", [1e-12, 1e-16])
def test_lightgbm_gains_and_leaves_of_tiny_hessian_sums_are_its_own(weight):
    """LightGBM adds kEpsilon (1e-15) to each child's hessian sum and twice it to the
    parent's in its split gains and leaf outputs. Not replayed, a model of hessian sums
    that small (min_sum_hessian_in_leaf=0, every weight 1e-16) had biased_gain off its
    split_gain by 2.3 times, a warning blaming the parameters read from the model, and a
    refit that pruned nothing moved its predictions by 0.21 (1e-4 and 1.5e-5 at weights
    1e-12). Oracles: LightGBM's split_gain (kept training Booster: exact gains) and its
    predictions."""
    w = np.full(N, weight)
    model = lgb.train({**LGB, "min_sum_hessian_in_leaf": 0.0},
                      lgb.Dataset(X, y, weight=w), 30, keep_training_booster=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, valid_weight=w,
                                   random_state=0, n_jobs=1).splits
        kept = uc.prune(model, X, y, Xv, yv, train_weight=w, valid_weight=w,
                        threshold=-np.inf, refit_leaves=True, random_state=0, n_jobs=1)
    np.testing.assert_allclose(s.biased_gain, s.host_gain, rtol=1e-6)
    before = model.predict(Xv)
    np.testing.assert_allclose(kept.predict(Xv), before, rtol=0, atol=1e-12 * np.ptp(before))


def test_a_lightgbm_dump_of_tiny_hessian_sums_infers_its_l2_without_kepsilon():
    """A dump stores no lambda_l2, so it is inferred from the leaves: with LightGBM's
    kEpsilon in the replay but not in the leaves' hessian sums the fit took it for an L2 of
    1e-15, which the replay then added to kEpsilon once more: a refit that pruned nothing
    moved the leaves by 5% of their range, with a warning. Oracle: the dump's own leaves."""

    def leaves(dump):
        out = []

        def walk(node):
            if "leaf_value" in node:
                out.append(node["leaf_value"])
            else:
                walk(node["left_child"])
                walk(node["right_child"])

        for tree in dump["tree_info"]:
            walk(tree["tree_structure"])
        return np.array(out)

    w = np.full(N, 1e-16)
    model = lgb.train({**LGB, "min_sum_hessian_in_leaf": 0.0}, lgb.Dataset(X, y, weight=w), 30,
                      keep_training_booster=True)
    dump = model.dump_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = uc.prune(dump, X, y, Xv, yv, train_weight=w, valid_weight=w,
                        threshold=-np.inf, refit_leaves=True, random_state=0, n_jobs=1)
    before = leaves(dump)
    np.testing.assert_allclose(leaves(kept), before, rtol=0, atol=1e-12 * np.ptp(before))


def test_the_native_growers_lightgbm_export_of_tiny_weights_is_read_without_kepsilon():
    """The grower values its leaves ``-G/(H + lambda)``: its LightGBM export is read without
    LightGBM's kEpsilon (with it, at weights 1e-16, B missed the stored gains by up to 106%
    under a warning, and a refit that prunes nothing moved predictions by 0.135)."""
    w = np.full(N, 1e-16)
    model = uc.UnbiasedGBMRegressor(n_estimators=10, min_child_weight=0,
                                    random_state=0).fit(X, y, sample_weight=w).to_lightgbm()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, valid_weight=w,
                                        random_state=0)
        pruned = uc.prune(model, X, y, Xv, yv, train_weight=w, valid_weight=w,
                          threshold=-np.inf, refit_leaves=True, random_state=0)
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-5)
    np.testing.assert_allclose(pruned.predict(Xv), model.predict(Xv), rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", ["tiny_weights", "labels_beyond_float32_gains"])
def test_an_ordinary_lightgbm_model_gets_no_first_rate_note(case):
    """A model trained at one learning rate and never edited: its first iteration's rate is
    read from its gains with kEpsilon, and gains LightGBM stores as inf (beyond float32) are
    no evidence either way, not a sign of an edit (both gave 'their split gains and leaf
    values do not tell it (trees pruned or edited after training?)')."""
    if case == "tiny_weights":
        w, scale, extra = np.full(N, 1e-14), 1.0, {"min_sum_hessian_in_leaf": 0}
    else:
        w, scale, extra = None, 1e20, {}
    model = lgb.train({**LGB, **extra}, lgb.Dataset(X, y * scale, weight=w), 10)
    if case != "tiny_weights":  # the premise: LightGBM's own gains overflow float32
        gains = [line for line in model.model_to_string().splitlines()
                 if line.startswith("split_gain=")]
        assert any("inf" in line for line in gains)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, X, y * scale, Xv, yv * scale, train_weight=w,
                               valid_weight=w, random_state=0)
