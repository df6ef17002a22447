"""XGBoost multi-target models (one tree per target and iteration, labels ``(n, T)``): the
loss applied target by target; its oracles are in test_xgboost_replay (``targets`` cases)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402

N = 1200


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2 * N, 4))
    Y = np.column_stack([X[:, 0] + rng.normal(size=2 * N),
                         2.0 + X[:, 1] + rng.normal(size=2 * N)])
    return X[:N], Y[:N], X[N:], Y[N:]


def fit(X, Y, objective="reg:squarederror", rounds=6):
    return xgb.train({"objective": objective, "max_depth": 3, "nthread": 1},
                     xgb.DMatrix(X, Y), rounds)


def test_labels_must_have_one_column_per_target(data):
    X, Y, Xv, Yv = data
    bst = fit(X, Y)
    for bad in (Y[:, 0], np.column_stack([Y, Y[:, :1]])):
        with pytest.raises(ValueError, match=r"y_train must have shape \(n_rows, 2\) for a "
                                             r"model of 2 targets"):
            uc.unbiased_importance(bst, X, bad, Xv, Yv)
    with pytest.raises(ValueError, match="y_valid must be one-dimensional"):
        uc.unbiased_importance(fit(X, Y[:, 0]), X, Y[:, 0], Xv, Yv)


def test_objective_given_by_name_or_callable_is_applied_target_by_target(data):
    X, Y, Xv, Yv = data
    bst = fit(X, Y)
    want = uc.unbiased_importance(bst, X, Y, Xv, Yv, random_state=0).splits
    assert want["tree"].nunique() == 12 and want["unbiased_gain"].abs().sum() > 0

    def squared(y, raw, weight):
        assert y.shape == raw.shape == (N, 2)
        return raw - y, np.ones_like(raw)

    for objective in ("reg:squarederror", "squared_error"):
        got = uc.unbiased_importance(bst, X, Y, Xv, Yv, random_state=0,
                                     objective=objective).splits
        pd.testing.assert_frame_equal(got, want)
    # the callable's float64 residuals against XGBoost's float32 ones: within rounding
    got = uc.unbiased_importance(bst, X, Y, Xv, Yv, random_state=0, objective=squared).splits
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-5, atol=1e-5)


def test_multi_label_classifier_reads_its_labels_through_classes(data):
    X, Y, Xv, Yv = data
    labels, labels_v = (Y > 1.0).astype(int), (Yv > 1.0).astype(int)
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1).fit(X, labels)
    got = uc.unbiased_importance(clf, X, labels, Xv, labels_v, random_state=0).splits
    booster = uc.unbiased_importance(clf.get_booster(), X, labels, Xv, labels_v,
                                     random_state=0).splits
    pd.testing.assert_frame_equal(got, booster)
    rel = np.abs(got["biased_gain"] - got["host_gain"]) / got["host_gain"].abs()
    assert np.median(rel) <= 1e-6
    with pytest.raises(ValueError, match="labels the classifier was not fitted on"):
        uc.unbiased_importance(clf, X, labels + 1, Xv, labels_v)


def test_losses_that_are_not_target_by_target_are_refused(data):
    X, Y, Xv, Yv = data
    bst = fit(X, Y, "reg:absoluteerror", rounds=2)
    with pytest.raises(UnsupportedModelError, match=r"multi-target models \(num_target=2\) "
                                                    "with objective 'reg:absoluteerror'"):
        uc.unbiased_importance(bst, X, Y, Xv, Yv)
    # the same in the hook
    with pytest.raises(UnsupportedModelError, match="'reg:absoluteerror'"):
        ax.train({"objective": "reg:absoluteerror", "max_depth": 2}, xgb.DMatrix(X, Y), 2,
                 verbose_eval=False)
    # metrics that are not elementwise neither (XGBoost refuses AUC on them too)
    labels = (Y > 1.0).astype(float)
    with pytest.raises(ValueError, match="metric 'auc' does not fit"):
        ax.train({"objective": "binary:logistic", "eval_metric": "auc"},
                 xgb.DMatrix(X, labels), 2, evals=[(xgb.DMatrix(Xv, (Yv > 1.0) * 1.0), "v")],
                 verbose_eval=False)


def test_estimator_trains_on_several_label_columns(data):
    # the hook's oracles for multi-target models: test_xgboost_train (MODELS "name/T")
    X, Y, Xv, Yv = data
    est = ax.UnbiasedXGBRegressor(n_estimators=8, max_depth=3, n_jobs=1, random_state=0)
    est.fit(X, Y)
    assert est.predict(Xv).shape == (N, 2)
    imp = est.feature_importances_
    assert imp.shape == (4,) and imp[0] > 0 and imp[1] > 0  # each target's signal feature
    assert abs(imp[2:]).max() < 0.1 * min(imp[0], imp[1])
    splits = est.training_splits_
    assert splits["tree"].max() == 15  # 8 rounds x 2 targets


def test_selector_takes_several_label_columns(data):
    X, Y, Xv, Yv = data
    X_all = np.vstack([X, Xv])
    Y_all = np.vstack([Y, Yv])
    noise = np.random.default_rng(1).normal(size=(2 * N, 3))
    selector = uc.UnbiasedSelector(xgb.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1),
                                   cv=3, random_state=0)
    selector.fit(np.hstack([X_all[:, :2], noise]), Y_all)
    # each target's signal feature is kept, the noise is not
    np.testing.assert_array_equal(selector.get_support(), [True, True, False, False, False])


def test_command_line_takes_one_label_option_per_target(data, tmp_path, capsys):
    from unbiased_criteria.cli import main

    X, Y, Xv, Yv = data
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])  # named: t2 is not a feature
    bst = fit(X, Y)
    bst.save_model(tmp_path / "m.json")
    for name, (rows, labels) in {"train": (X.to_numpy(), Y), "valid": (Xv, Yv)}.items():
        frame = pd.DataFrame(rows, columns=[f"f{i}" for i in range(4)])
        frame.assign(t1=labels[:, 0], t2=labels[:, 1]).to_csv(tmp_path / f"{name}.csv",
                                                               index=False)
    common = ["importance", str(tmp_path / "m.json"), "--train", str(tmp_path / "train.csv"),
              "--valid", str(tmp_path / "valid.csv"), "--format", "csv", "--seed", "0"]
    assert main([*common, "--label", "t1", "--label", "t2"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=0)
    want = uc.unbiased_importance(bst, X, Y, pd.DataFrame(Xv, columns=X.columns), Yv,
                                  random_state=0).to_frame()
    np.testing.assert_allclose(got["unbiased_gain"], want["unbiased_gain"], rtol=1e-9)
    # one label for two targets, or a label named twice: one line each
    assert main([*common, "--label", "t1"]) == 2
    assert "must have shape (n_rows, 2) for a model of 2 targets" in capsys.readouterr().err
    assert main([*common, "--label", "t1", "--label", "t1"]) == 2
    assert "a column is named twice" in capsys.readouterr().err


def test_multi_label_estimator_is_xgbclassifier_without_pruning(data):
    X, Y, Xv, Yv = data
    labels, labels_v = (Y > 1.0).astype(int), (Yv > 1.0).astype(int)
    small = dict(n_estimators=6, max_depth=3, n_jobs=1, random_state=0)
    off = ax.UnbiasedXGBClassifier(**small, holdout_fraction=0.0, prune_threshold=None)
    off.fit(X, labels, eval_set=[(Xv, labels_v)], verbose=False)
    ref = xgb.XGBClassifier(**small).fit(X, labels, eval_set=[(Xv, labels_v)], verbose=False)
    np.testing.assert_allclose(off.predict_proba(Xv), ref.predict_proba(Xv), rtol=0, atol=5e-7)
    np.testing.assert_array_equal(off.predict(Xv), ref.predict(Xv))
    np.testing.assert_allclose(off.evals_result()["validation_0"]["logloss"],
                               ref.evals_result()["validation_0"]["logloss"], rtol=1e-6)
    used = ax.UnbiasedXGBClassifier(**small).fit(X, labels)
    assert used.predict(Xv).shape == (N, 2) and used.feature_importances_.shape == (4,)
    with pytest.raises(ValueError, match="multi-label targets must hold 0 and 1"):
        ax.UnbiasedXGBClassifier(**small).fit(X, labels * 2)
    with pytest.raises(ValueError, match=r"eval_set\[0\] must have shape \(n_rows, 2\)"):
        ax.UnbiasedXGBClassifier(**small).fit(X, labels, eval_set=[(Xv, labels_v[:, 0])])


def test_several_quantiles_match_the_host():
    # reg:quantileerror with a list of quantile_alpha: one output per alpha on one label
    # column; XGBoost 3.4 smooths each output's loss at its own scale in each iteration
    from unbiased_criteria.adapters.xgboost import compat

    from unbiased_criteria.replay import RowSet, replay

    smooth = compat.model_version() >= compat.SMOOTH_L1_FROM
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2 * N, 4))
    y = X[:, 0] + rng.normal(size=2 * N) * (1.0 + np.abs(X[:, 1]))
    w = rng.uniform(0.5, 2.0, 2 * N)
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9],
              "max_depth": 3, "nthread": 1}
    dtrain = xgb.DMatrix(X[:N], y[:N], weight=w[:N])
    bst = xgb.train(params, dtrain, 8)
    read = ax.read_model(bst)
    assert read.forest.n_outputs == 3 and read.objective.n_outputs == 3
    assert read.objective.iteration_scaled is smooth
    splits = uc.unbiased_importance(bst, X[:N], y[:N], X[N:], y[N:], train_weight=w[:N],
                                    random_state=0).splits
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / splits["host_gain"].abs()
    assert len(splits) > 50 and np.median(rel) <= 1e-6 and rel.max() <= 1e-4
    np.testing.assert_allclose(splits["sum_hessian"], splits["host_hessian"], rtol=1e-5)
    router = ax.make_router(bst, read, X[:N], "X_train")
    result = replay(read, read.objective, train=RowSet(router, y[:N], w[:N]))
    np.testing.assert_allclose(result.raw_train, bst.predict(dtrain, output_margin=True),
                               rtol=0, atol=1e-6)
    if not smooth:  # XGBoost before 3.4 renews quantile leaves: importance only
        with pytest.raises(ValueError, match="pruning .* models is not supported"):
            uc.prune(bst, X[:N], y[:N], X[N:], y[N:])
        return
    same = uc.prune(bst, X[:N], y[:N], X[N:], y[N:], train_weight=w[:N],
                    threshold=-np.inf, refit_leaves=True)
    np.testing.assert_allclose(same.predict(dtrain, output_margin=True),
                               bst.predict(dtrain, output_margin=True), rtol=0, atol=1e-6)
    # the hook: pruning off and nothing held out is xgb.train, its quantile metric too (the
    # predictions sorted per row, as XGBoost 3.4 sorts its quantiles)
    dvalid = xgb.DMatrix(X[N:], y[N:])
    logs: list[dict] = [{}, {}]
    ref = xgb.train(params, dtrain, 8, evals=[(dvalid, "v")], evals_result=logs[0],
                    verbose_eval=False)
    got = ax.train(params, dtrain, 8, evals=[(dvalid, "v")], evals_result=logs[1],
                   verbose_eval=False, prune_threshold=None, holdout_fraction=0.0)
    np.testing.assert_allclose(got.predict(dvalid), ref.predict(dvalid), rtol=0, atol=1e-6)
    np.testing.assert_allclose(logs[1]["v"]["quantile"], logs[0]["v"]["quantile"], rtol=1e-6)
