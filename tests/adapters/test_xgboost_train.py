"""The XGBoost training hook against the host: with pruning off it is ``xgboost.train``; with
pruning on, the returned model predicts the loop's own margins, keeps only splits with
``U > threshold``, stops where a manual evaluation of its rounds says, and shrinks on noise."""

from __future__ import annotations

import json

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost.layout import _find  # noqa: E402
from unbiased_criteria.adapters.xgboost.training import run_training as _run  # noqa: E402

from unbiased_criteria.boosting import HoldoutPlan  # noqa: E402
from unbiased_criteria.importance import GainOptions  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402

N, P = 1200, 6


def labels(objective, X, rng):
    """Labels for ``objective``; ``"name/T"`` gives a multi-target model's ``(n, T)`` labels
    (each target another signal)."""
    objective, _, targets = objective.partition("/")
    if targets:
        columns = [labels(objective, np.roll(X, -j, axis=1), rng) for j in range(int(targets))]
        return np.column_stack(columns)
    s = X[:, 0] + 0.5 * X[:, 1] ** 2
    noise = rng.normal(size=X.shape[0])
    if objective in ("binary:logistic", "reg:logistic", "binary:logitraw"):
        return (s + noise > 0.5).astype(float)
    if objective.startswith("multi:"):
        return np.digitize(s + noise, [0.0, 1.2]).astype(float)
    if objective == "count:poisson":
        return rng.poisson(np.exp(0.4 * np.clip(s, -3, 3))).astype(float)
    if objective in ("reg:gamma", "reg:tweedie", "reg:squaredlogerror"):
        return np.exp(0.3 * np.clip(s, -3, 3)) * rng.gamma(2.0, 0.5, size=X.shape[0])
    return s + noise


def dmatrices(objective, *, weights=True, seed=0, n=N):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P)).astype(np.float32)
    Xv = rng.normal(size=(n // 2, P)).astype(np.float32)
    y, yv = labels(objective, X, rng), labels(objective, Xv, rng)
    w = rng.uniform(0.3, 2.0, size=n) if weights else None
    wv = rng.uniform(0.3, 2.0, size=n // 2) if weights else None
    return xgb.DMatrix(X, y, weight=w), xgb.DMatrix(Xv, yv, weight=wv)


def params_for(objective, **extra):
    objective = objective.partition("/")[0]  # "name/T": T targets, from the labels
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "seed": 0, "nthread": 1}
    if objective.startswith("multi:"):
        params["num_class"] = 3
    return {**params, **extra}


def run_training(params, dtrain, rounds, **kw):
    """:func:`run_training` with :func:`train`'s defaults (the record of the loop, for tests)."""
    args = dict(evals=(), obj=None, maximize=None, custom_metric=None,
                early_stopping_rounds=None, evals_result=None, verbose_eval=False,
                callbacks=None, holdout_fraction=0.5, redraw_holdout=True, prune_threshold=0.0,
                n_draws=1, min_k=5, n_blocks=20, random_state=None, progress=False)
    return _run(params, dtrain, rounds, **{**args, **kw})


def margins(bst, dmat):
    out = bst.predict(dmat, output_margin=True)
    return out.reshape(dmat.num_row(), -1)


def assert_history_equal(got, want, rtol=1e-6):
    assert list(got) == list(want)
    for set_name in want:
        assert list(got[set_name]) == list(want[set_name])
        for metric in want[set_name]:
            np.testing.assert_allclose(got[set_name][metric], want[set_name][metric], rtol=rtol,
                                       atol=1e-9, err_msg=f"{set_name}-{metric}")


def n_splits(bst):
    trees = json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    return sum(int(np.sum(np.asarray(t["left_children"]) >= 0)) for t in trees)


def n_leaves(bst):
    trees = json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    return sum(int(np.sum(np.asarray(t["left_children"]) < 0)) for t in trees)


OFF = {"prune_threshold": None, "holdout_fraction": 0.0}


# ----------------------------------------------------------------------- oracle: xgb.train


# "name/T": a multi-target model of T label columns (one tree per target and iteration)
MODELS = ["reg:squarederror", "binary:logistic", "multi:softprob", "reg:squarederror/2",
          "binary:logistic/3"]


@pytest.mark.parametrize("objective", MODELS)
def test_pruning_off_is_xgboost_train(objective):
    dtrain, dvalid = dmatrices(objective)
    params = params_for(objective)
    evals = [(dtrain, "train"), (dvalid, "valid")]
    want_log, got_log = {}, {}
    ref = xgb.train(params, dtrain, 12, evals=evals, evals_result=want_log, verbose_eval=False)
    bst = ax.train(params, dtrain, 12, evals=evals, evals_result=got_log, verbose_eval=False,
                   **OFF)
    assert bst.num_boosted_rounds() == ref.num_boosted_rounds() == 12
    for dmat in (dtrain, dvalid):  # the README's figure: equal to xgb.train to 5e-7
        np.testing.assert_allclose(margins(bst, dmat), margins(ref, dmat), rtol=0, atol=5e-7)
        np.testing.assert_allclose(bst.predict(dmat), ref.predict(dmat), rtol=0, atol=5e-7)
    if objective == "multi:softprob":
        assert bst.predict(dvalid).shape == (dvalid.num_row(), 3)
    lmp = [json.loads(b.save_raw("json"))["learner"]["learner_model_param"] for b in (bst, ref)]
    assert lmp[0]["base_score"] == lmp[1]["base_score"]  # the intercept xgb.train estimates
    assert_history_equal(got_log, want_log)
    # the training parameters survive the rewrite
    config = json.loads(bst.save_config())
    assert float(_find(config, "tree_train_param")["max_depth"]) == 4
    assert float(_find(config, "tree_train_param")["eta"]) == pytest.approx(0.3)


def test_zero_rounds_is_xgboost_train():
    dtrain, dvalid = dmatrices("binary:logistic", n=300)
    params = params_for("binary:logistic")
    ref, bst = xgb.train(params, dtrain, 0), ax.train(params, dtrain, 0, verbose_eval=False)
    assert bst.num_boosted_rounds() == 0
    np.testing.assert_array_equal(bst.predict(dvalid), ref.predict(dvalid))


@pytest.mark.parametrize(
    "objective, extra",
    [
        ("reg:squaredlogerror", {}),
        ("reg:logistic", {"eval_metric": ["rmse", "logloss", "error", "error@0.7", "auc"]}),
        ("reg:pseudohubererror", {"huber_slope": 1.5}),
        ("binary:logitraw", {}),
        ("binary:logistic", {"scale_pos_weight": 2.0, "max_delta_step": 0.7,
                             "eval_metric": ["logloss", "auc"]}),
        ("multi:softmax", {"eval_metric": ["merror", "mlogloss"]}),
        ("count:poisson", {}),
        ("reg:gamma", {"eval_metric": ["gamma-deviance", "gamma-nloglik"]}),
        ("reg:tweedie", {"tweedie_variance_power": 1.3}),
        ("reg:squarederror", {"eval_metric": ["mae", "mape", "rmsle", "mphe"],
                              "reg_lambda": 2.0, "alpha": 0.5}),
    ],
)
def test_objectives_and_metrics_match_xgboost(objective, extra):
    dtrain, dvalid = dmatrices(objective, n=600)
    if extra.get("eval_metric") and "mape" in extra["eval_metric"]:
        # mape and rmsle want positive labels
        dtrain.set_label(np.abs(dtrain.get_label()) + 1.0)
        dvalid.set_label(np.abs(dvalid.get_label()) + 1.0)
    params = params_for(objective, **extra)
    want_log, got_log = {}, {}
    ref = xgb.train(params, dtrain, 6, evals=[(dvalid, "valid")], evals_result=want_log,
                    verbose_eval=False)
    bst = ax.train(params, dtrain, 6, evals=[(dvalid, "valid")], evals_result=got_log,
                   verbose_eval=False, **OFF)
    np.testing.assert_allclose(margins(bst, dvalid), margins(ref, dvalid), rtol=1e-6, atol=1e-6)
    assert_history_equal(got_log, want_log, rtol=2e-6)


@pytest.mark.filterwarnings("ignore:Since 2.1.0:FutureWarning")  # flat arrays, on purpose
def test_custom_objective_and_metric_match_xgboost():
    """obj= with flat row-major multiclass gradients; custom_metric on margins; base_score
    stays the parameter, as in xgb.train."""
    dtrain, dvalid = dmatrices("multi:softprob")
    K = 3

    def softmax_obj(preds, dmat):
        assert preds.shape == (dmat.num_row(), K) and preds.dtype == np.float32
        p = np.exp(preds - preds.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        onehot = np.eye(K)[dmat.get_label().astype(int)]
        w = dmat.get_weight()[:, None]
        return ((p - onehot) * w).ravel(), np.maximum(2 * p * (1 - p) * w, 1e-16).ravel()

    def accuracy(preds, dmat):
        return [("acc", float(np.mean(preds.argmax(axis=1) == dmat.get_label()))),
                ("mean_margin", float(preds.mean()))]

    params = {"num_class": K, "max_depth": 3, "eta": 0.4, "disable_default_eval_metric": 1,
              "nthread": 1}
    evals = [(dtrain, "train"), (dvalid, "valid")]
    want_log, got_log = {}, {}
    ref = xgb.train(params, dtrain, 8, evals=evals, obj=softmax_obj, custom_metric=accuracy,
                    evals_result=want_log, verbose_eval=False)
    bst = ax.train(params, dtrain, 8, evals=evals, obj=softmax_obj, custom_metric=accuracy,
                   evals_result=got_log, verbose_eval=False, **OFF)
    for dmat in (dtrain, dvalid):
        np.testing.assert_allclose(margins(bst, dmat), margins(ref, dmat), rtol=0, atol=1e-6)
    assert list(got_log["valid"]) == ["acc", "mean_margin"]
    assert_history_equal(got_log, want_log)


def _softmax_obj(preds, dmat):
    """XGBoost's custom-softmax demo: float32 margins (n, K), weighted gradients."""
    p = np.exp(preds - preds.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    onehot = np.eye(preds.shape[1])[dmat.get_label().astype(int)]
    w = dmat.get_weight()[:, None]
    return (p - onehot) * w, np.maximum(2 * p * (1 - p) * w, 1e-16) * w


def _predictions(preds, dmat):
    """A custom metric that sees the predictions xgb.train gives it."""
    return "mean_prediction", float(np.mean(preds))


@pytest.mark.parametrize(
    "extra, obj, metric",
    [
        ({}, None, None),  # the default metric of XGBoost's choice, multi:softmax: mlogloss
        ({"eval_metric": ["merror", "mlogloss"]}, None, _predictions),  # predict: classes
        ({}, _softmax_obj, _predictions),  # obj=: mlogloss still on multi:softmax's link
        ({"num_class": 1}, None, None),  # one class: reg:squarederror, rmse
    ],
    ids=["default-metric", "metrics", "obj", "one-class"],
)
def test_without_an_objective_params_train_xgboosts_choice(extra, obj, metric):
    """params with num_class and no objective: xgb.train trains multi:softmax (XGBoost's
    choice, also with obj=), with its default metric on its link. The hook evaluated
    reg:squarederror's rmse on raw margins (refused: "metric 'rmse' does not fit objective
    'reg:squarederror' with 3 output(s)") or mlogloss on margins (7.98 where 0.97), and early
    stopping followed those numbers."""
    dtrain, dvalid = dmatrices("multi:softmax", n=600)
    params = {"num_class": 3, "max_depth": 3, "eta": 0.3, "seed": 0, "nthread": 1, **extra}
    if params["num_class"] == 1:
        dtrain, dvalid = dmatrices("reg:squarederror", n=600)
    evals = [(dtrain, "train"), (dvalid, "valid")]
    want_log, got_log = {}, {}
    kw = dict(evals=evals, obj=obj, custom_metric=metric, early_stopping_rounds=3,
              verbose_eval=False)
    ref = xgb.train(params, dtrain, 40, evals_result=want_log, **kw)
    bst = ax.train(params, dtrain, 40, evals_result=got_log, **kw, **OFF)
    names = [json.loads(b.save_config())["learner"]["objective"]["name"] for b in (ref, bst)]
    assert names == (["reg:squarederror"] * 2 if params["num_class"] == 1
                     else ["multi:softmax"] * 2)
    assert list(want_log["valid"])  # a metric is recorded: the case
    assert_history_equal(got_log, want_log)
    assert bst.best_iteration == ref.best_iteration
    assert bst.num_boosted_rounds() == ref.num_boosted_rounds()
    for dmat in (dtrain, dvalid):
        np.testing.assert_allclose(margins(bst, dmat), margins(ref, dmat), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(bst.predict(dmat), ref.predict(dmat))


def test_held_out_rows_do_not_build_trees():
    """holdout without pruning = xgb.train whose gradients vanish on the same held-out rows."""
    dtrain, dvalid = dmatrices("binary:logistic")
    params = params_for("binary:logistic", base_score=0.4)
    plan = HoldoutPlan(0.3, redraw=False)
    held = plan.mask(N, 0, GainOptions(random_state=7))
    assert held.sum() == 360

    def masked_logistic(preds, dmat):
        p = 1.0 / (1.0 + np.exp(-preds.astype(np.float32)))
        y, w = dmat.get_label(), dmat.get_weight()
        g, h = (p - y) * w, np.maximum(p * (1 - p), 1e-16) * w
        g[held], h[held] = 0.0, 0.0
        return g, h

    ref = xgb.train(params, dtrain, 6, obj=masked_logistic)
    bst = ax.train(params, dtrain, 6, holdout_fraction=0.3, redraw_holdout=False,
                   prune_threshold=None, random_state=7, verbose_eval=False)
    np.testing.assert_allclose(margins(bst, dvalid), margins(ref, dvalid), rtol=0, atol=1e-5)
    # and the held-out rows mattered: training on all rows gives another model
    full = ax.train(params, dtrain, 6, verbose_eval=False, **OFF)
    assert np.abs(margins(full, dvalid) - margins(bst, dvalid)).max() > 1e-2


def test_verbose_eval_prints_like_xgboost(capsys):
    dtrain, dvalid = dmatrices("reg:squarederror")
    params = params_for("reg:squarederror", eval_metric=["mae", "rmse"])
    evals = [(dtrain, "train"), (dvalid, "valid")]
    xgb.train(params, dtrain, 8, evals=evals, verbose_eval=3)
    want = capsys.readouterr().out
    ax.train(params, dtrain, 8, evals=evals, verbose_eval=3, **OFF)
    got = capsys.readouterr().out
    assert got == want and got.count("\n") == 4  # rounds 0, 3, 6 and the last one, 7
    ax.train(params, dtrain, 8, evals=evals, verbose_eval=False, random_state=0)
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------------------ pruning switched on


@pytest.fixture(scope="module", params=MODELS)
def pruned(request):
    objective = request.param
    dtrain, dvalid = dmatrices(objective, seed=3)
    log = {}
    bst = ax.train(params_for(objective, max_depth=5), dtrain, 15,
                   evals=[(dtrain, "train"), (dvalid, "valid")], evals_result=log,
                   verbose_eval=False, random_state=0)
    return objective, dtrain, dvalid, bst, log


def test_pruned_model_predicts_the_tracked_scores(pruned):
    objective, dtrain, dvalid, bst, log = pruned
    run = run_training(params_for(objective, max_depth=5), dtrain, 15,
                       evals=[(dtrain, "train"), (dvalid, "valid")], random_state=0)
    assert run.booster.save_raw("json") == bst.save_raw("json")
    np.testing.assert_allclose(margins(bst, dtrain), run.result.raw_train, rtol=0, atol=1e-6)
    np.testing.assert_allclose(margins(bst, dtrain), run.raw_eval[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(margins(bst, dvalid), run.raw_eval[1], rtol=0, atol=1e-6)
    # the evaluation log is the host's own metric on the returned model
    metric = list(log["valid"])[-1]
    host = float(bst.eval_set([(dvalid, "valid")], 14).split(f"valid-{metric}:")[1])
    assert log["valid"][metric][-1] == pytest.approx(host, rel=1e-6)


def test_kept_splits_have_positive_unbiased_gain(pruned):
    objective, dtrain, dvalid, bst, _ = pruned
    splits = ax.training_splits(bst)
    assert len(splits) > 0 and 0 < splits["kept"].sum() < len(splits)
    kept = splits[splits["kept"]]
    assert (kept["unbiased_gain"] > 0).all()
    # every split of the returned model is a kept one, and vice versa
    assert n_splits(bst) == len(kept)
    frame = bst.trees_to_dataframe()
    inner = frame[frame["Feature"] != "Leaf"]
    got = sorted(zip(inner["Tree"], inner["Feature"], inner["Split"].astype(np.float32)))
    want = sorted(zip(kept["tree"], kept["feature"], kept["threshold"].astype(np.float32)))
    assert got == want
    # and a split whose ancestor was collapsed is gone even if its own U is positive
    assert ((splits["unbiased_gain"] > 0) & ~splits["kept"]).any()


def test_leaves_are_xgboost_weights_of_the_rows_that_built_them():
    """Every leaf of the first pruned tree, host leaf or collapsed node, holds XGBoost's
    ``eta * float32(-G / (H + lambda))`` over the rows that built the tree (held-out ones
    excluded): the adapter hands the core XGBoost's eta and lambda."""
    dtrain, _ = dmatrices("reg:squarederror", seed=9)
    params = params_for("reg:squarederror", eta=0.4, reg_lambda=3.0, max_depth=5)
    bst = ax.train(params, dtrain, 1, verbose_eval=False, random_state=4,
                   holdout_fraction=0.2)
    assert not ax.training_splits(bst)["kept"].all()  # something was collapsed
    fit = ~HoldoutPlan(0.2).mask(N, 0, GainOptions(random_state=4))
    init = np.float32(run_training(params, dtrain, 1, random_state=4,
                                   holdout_fraction=0.2).result.init_score[0])
    y, w = dtrain.get_label(), dtrain.get_weight()
    g, h = (init - y) * w, w
    leaf = bst.predict(dtrain, pred_leaf=True).astype(int)
    tree = json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][0]
    for node in np.unique(leaf):
        rows = fit & (leaf == node)
        weight = np.float32(-g[rows].sum(dtype=np.float64) / (h[rows].sum(dtype=np.float64)
                                                              + 3.0))
        assert tree["split_conditions"][node] == pytest.approx(np.float32(0.4) * weight,
                                                               rel=1e-5)


def test_threshold_is_respected():
    dtrain, _ = dmatrices("reg:squarederror", seed=4)
    bst = ax.train(params_for("reg:squarederror"), dtrain, 8, prune_threshold=20.0,
                   verbose_eval=False, random_state=1)
    splits = ax.training_splits(bst)
    assert (splits.loc[splits["kept"], "unbiased_gain"] > 20.0).all()
    assert (splits["unbiased_gain"] > 0).sum() > splits["kept"].sum()  # 20 did prune more
    assert splits["kept"].sum() == n_splits(bst)
    # the report sums U over every scored split, kept or not
    imp = ax.training_report(bst).to_frame()
    assert list(imp.index) == [f"f{i}" for i in range(P)]
    assert imp["splits"].sum() == len(splits)
    np.testing.assert_allclose(imp["unbiased_gain"],
                               [splits.loc[splits["feature"] == f"f{i}", "unbiased_gain"].sum()
                                for i in range(P)])


def test_noise_is_pruned_away():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 8))
    dtrain = xgb.DMatrix(X, rng.normal(size=2000))
    params = params_for("reg:squarederror", max_depth=6)
    kwargs = dict(verbose_eval=False, random_state=0, holdout_fraction=0.2)
    unpruned = ax.train(params, dtrain, 20, prune_threshold=None, **kwargs)
    pruned_ = ax.train(params, dtrain, 20, **kwargs)
    leaves, leaves_off = n_leaves(pruned_), n_leaves(unpruned)
    assert leaves_off > 20 * 30  # the host fits the noise
    assert leaves < 0.1 * leaves_off, (leaves, leaves_off)


def test_early_stopping_matches_a_manual_evaluation():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1500, 6)).astype(np.float32)
    y = 0.5 * X[:, 0] + rng.normal(size=1500)
    dtrain, dvalid = xgb.DMatrix(X[:1000], y[:1000]), xgb.DMatrix(X[1000:], y[1000:])
    log = {}
    rounds = 5
    params = params_for("reg:squarederror", max_depth=6, eval_metric=["rmse", "mae"])
    # XGBoost watches the last metric (mae) on the last eval set (valid, not train)
    bst = ax.train(params, dtrain, 200, evals=[(dtrain, "train"), (dvalid, "valid")],
                   evals_result=log, early_stopping_rounds=rounds, verbose_eval=False,
                   random_state=2)
    n_rounds = bst.num_boosted_rounds()
    assert rounds < n_rounds < 200  # it stopped, and kept every tree up to there
    yv = dvalid.get_label().astype(np.float64)
    manual = [np.mean(np.abs(bst[: i + 1].predict(dvalid, output_margin=True) - yv))
              for i in range(n_rounds)]
    np.testing.assert_allclose(log["valid"]["mae"], manual, rtol=1e-6)
    best = int(np.argmin(manual))  # first minimum: XGBoost needs a strict improvement
    assert bst.best_iteration == best > 0
    assert n_rounds - 1 == best + rounds  # stopped `rounds` rounds after the best
    assert float(bst.attr("best_score")) == pytest.approx(manual[best], rel=1e-6)
    assert len(log["train"]["rmse"]) == n_rounds
    assert ax.training_splits(bst)["kept"].mean() < 0.5  # pruning was on


def test_early_stopping_on_a_custom_metric_uses_the_last_one():
    dtrain, dvalid = dmatrices("binary:logistic", seed=8)

    def metrics(preds, dmat):
        y = dmat.get_label()
        return [("neg_acc", -float(np.mean((preds > 0.5) == y))), ("brier", float(np.mean(
            (preds - y) ** 2)))]

    log = {}
    bst = ax.train(params_for("binary:logistic", max_depth=6, eta=0.6), dtrain, 100,
                   evals=[(dvalid, "valid")], custom_metric=metrics, evals_result=log,
                   early_stopping_rounds=3, verbose_eval=False, random_state=0)
    assert list(log["valid"]) == ["logloss", "neg_acc", "brier"]
    brier = np.asarray(log["valid"]["brier"])
    assert bst.best_iteration == int(np.argmin(brier))
    assert bst.num_boosted_rounds() == bst.best_iteration + 4
    manual = [np.mean((bst[: i + 1].predict(dvalid) - dvalid.get_label()) ** 2)
              for i in range(bst.num_boosted_rounds())]
    np.testing.assert_allclose(brier, manual, atol=1e-6)  # recorded as "%f"


def test_callbacks_are_called_like_xgboost():
    dtrain, dvalid = dmatrices("reg:squarederror")
    seen = []

    class Recorder(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append((epoch, len(evals_log["valid"]["rmse"])))
            return epoch == 2

    # returning True stops after that round, as in xgb.train
    bst = ax.train(params_for("reg:squarederror"), dtrain, 4, evals=[(dvalid, "valid")],
                   callbacks=[Recorder()], verbose_eval=False, random_state=0)
    assert seen == [(0, 1), (1, 2), (2, 3)]
    assert bst.num_boosted_rounds() == 3


def test_record_belongs_to_the_returned_booster_only():
    dtrain, _ = dmatrices("reg:squarederror")
    bst = ax.train(params_for("reg:squarederror"), dtrain, 3, verbose_eval=False)
    assert len(ax.training_splits(bst)) > 0
    with pytest.raises(KeyError, match="not returned by"):
        ax.training_record(bst[:2])
    with pytest.raises(KeyError, match="not returned by"):
        ax.training_record(xgb.train(params_for("reg:squarederror"), dtrain, 1))
    off = ax.train(params_for("reg:squarederror"), dtrain, 2, verbose_eval=False, **OFF)
    assert ax.training_splits(off).empty and "unbiased_gain" in ax.training_splits(off)


# ------------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def small():
    return dmatrices("reg:squarederror", n=200)


def test_unknown_objective(small):
    with pytest.raises(ValueError, match=r"unknown objective 'reg:nonsense'"):
        ax.train({"objective": "reg:nonsense"}, small[0], 2, verbose_eval=False)


@pytest.mark.parametrize("fraction", [1.0, -0.1, 1.5])
def test_holdout_fraction_outside_range(small, fraction):
    with pytest.raises(ValueError, match=r"holdout_fraction must be in \[0, 1\)"):
        ax.train(params_for("reg:squarederror"), small[0], 2, holdout_fraction=fraction,
                 verbose_eval=False)


def test_dtrain_without_labels(small):
    unlabelled = xgb.DMatrix(np.zeros((50, P), dtype=np.float32))
    with pytest.raises(ValueError, match="dtrain has no labels"):
        ax.train(params_for("reg:squarederror"), unlabelled, 2, verbose_eval=False)


@pytest.mark.parametrize(
    "params, kwargs, error, match",
    [
        ({"objective": "binary:hinge"}, {}, UnsupportedModelError, "no hinge loss"),
        # XGBoost 3.4 drops trees on gbtree too with these (the hook was not xgb.train there)
        ({"rate_drop": 0.3}, {}, UnsupportedModelError, r"'rate_drop': 0.3\} \(dropout\)"),
        ({"one_drop": 1}, {}, UnsupportedModelError, "dropout"),
        ({"num_parallel_tree": 2}, {}, UnsupportedModelError, "num_parallel_tree"),
        ({"booster": "dart"}, {}, UnsupportedModelError, "booster"),
        ({"eval_metric": "ndcg"}, {"evals": "valid"}, ValueError, "metric 'ndcg'"),
        ({}, {"early_stopping_rounds": 2}, ValueError, "needs at least one eval set"),
        ({"objective": "multi:softprob", "num_class": 2}, {}, ValueError,
         "class indices 0..1"),
        ({}, {"obj": "squared"}, TypeError, "obj must be a callable"),
    ],
)
def test_other_refusals(small, params, kwargs, error, match):
    dtrain, dvalid = small
    if kwargs.get("evals") == "valid":
        kwargs = {**kwargs, "evals": [(dvalid, "valid")]}
    if params.get("objective") == "multi:softprob":
        dtrain = xgb.DMatrix(np.zeros((3, P)), label=[0.0, 1.0, 2.0])
    with pytest.raises(error, match=match):
        ax.train({"max_depth": 2, "nthread": 1, **params}, dtrain, 2, verbose_eval=False,
                 **kwargs)


def test_eval_set_with_other_features(small):
    dtrain, _ = small
    other = xgb.DMatrix(np.zeros((10, P + 1)), label=np.zeros(10))
    with pytest.raises(ValueError, match=r"evals\[0\] \('other'\) has 7 features"):
        ax.train(params_for("reg:squarederror"), dtrain, 2, evals=[(other, "other")],
                 verbose_eval=False)


def test_eval_set_with_other_category_codes_is_routed_on_dtrains():
    """The hook routes eval rows through single iterations (Booster slices), which XGBoost
    does not recode by category name: an eval frame with dtrain's categories in another
    order, or only some of them (``astype("category")`` on the split), gave another metric
    (1.21 against 0.37 here) and early stopping on it, silently. Its codes are now mapped to
    dtrain's: the metrics are those of the same rows coded as dtrain's, which are
    ``xgb.train``'s (nothing held out, nothing pruned), missing values included. A category
    dtrain does not hold is an error naming it."""
    pytest.importorskip("pyarrow")  # the DMatrix's categories are read through arrow
    if not hasattr(xgb.DMatrix, "get_categories"):
        pytest.skip("XGBoost < 3.1 stores no categories (nor recodes them)")
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"x": rng.normal(size=n), "c": pd.Categorical(rng.choice(list("abcde"), n))})
    X.loc[[5, 310], "x"] = np.nan
    X.loc[[311, 350], "c"] = np.nan
    y = (X["x"].fillna(0.0) + 2.0 * (X["c"] == "b") + 0.3 * rng.normal(size=n)).to_numpy()
    dtrain = xgb.DMatrix(X[:300], y[:300], enable_categorical=True)
    held = X[300:]
    same = xgb.DMatrix(held, y[300:], enable_categorical=True)
    kept = held["c"] != "e"  # a split without one category, its codes shifted
    other_order = held.assign(c=held["c"].cat.reorder_categories(list("edcba")))
    subset = held[kept].assign(c=held["c"][kept].astype(str).replace("nan", np.nan)
                               .astype("category"))
    assert list(subset["c"].cat.categories) == list("abcd")

    def metrics(evals, train=ax.train, **hook):
        out = {}
        train({"nthread": 1, "max_depth": 3}, dtrain, 5, evals=evals, evals_result=out,
              verbose_eval=False, **hook)
        return out

    plain = dict(prune_threshold=None, holdout_fraction=0.0)
    hosts = metrics([(same, "v"), (xgb.DMatrix(held[kept], y[300:][kept],
                                               enable_categorical=True), "w")], xgb.train)
    ours = metrics([(xgb.DMatrix(other_order, y[300:], enable_categorical=True), "v"),
                    (xgb.DMatrix(subset, y[300:][kept], enable_categorical=True), "w")],
                   **plain)
    for name in ("v", "w"):
        np.testing.assert_allclose(ours[name]["rmse"], hosts[name]["rmse"], rtol=1e-5)
    # and as used: the reordered set scores as the same rows in dtrain's order
    used = metrics([(xgb.DMatrix(other_order, y[300:], enable_categorical=True), "v")],
                   random_state=0)
    np.testing.assert_array_equal(used["v"]["rmse"],
                                  metrics([(same, "v")], random_state=0)["v"]["rmse"])
    unseen = held.assign(c=held["c"].cat.add_categories("z"))
    unseen.loc[unseen.index[0], "c"] = "z"
    with pytest.raises(ValueError, match=r"evals\[0\] \('u'\): feature 'c' holds categories "
                                         r"dtrain does not: 'z'"):
        metrics([(xgb.DMatrix(unseen, y[300:], enable_categorical=True), "u")])
