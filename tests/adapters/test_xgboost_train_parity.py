"""The XGBoost training hook against ``xgboost.train`` as the oracle: the calls its callbacks
get (with and without early stopping, callbacks that stop training, the model
``before_training`` returns) and the eval sets it accepts (a ``QuantileDMatrix`` must be
built with ``ref=dtrain``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

OFF = {"prune_threshold": None, "holdout_fraction": 0.0}  # the hook is then xgb.train
PARAMS = {"max_depth": 3, "eta": 0.6, "seed": 0, "nthread": 1}


def _data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X, Xv = rng.normal(size=(n, 4)), rng.normal(size=(n // 2, 4))
    return X, X[:, 0] + rng.normal(size=n), Xv, Xv[:, 0] + rng.normal(size=n // 2)


class Recorder(xgb.callback.TrainingCallback):
    """Records every call; ``stop_before`` / ``stop_after``: the epoch whose
    ``before_iteration`` / ``after_iteration`` returns True."""

    def __init__(self, stop_before=None, stop_after=None):
        super().__init__()
        self.calls, self.stop_before, self.stop_after = [], stop_before, stop_after

    def before_training(self, model):
        self.calls.append(("before_training", model.num_boosted_rounds()))
        return model

    def before_iteration(self, model, epoch, evals_log):
        self.calls.append(("before", epoch, _logged(evals_log)))
        return epoch == self.stop_before

    def after_iteration(self, model, epoch, evals_log):
        self.calls.append(("after", epoch, _logged(evals_log)))
        return epoch == self.stop_after

    def after_training(self, model):
        self.calls.append(("after_training", model.num_boosted_rounds()))
        return model


def _logged(evals_log):
    return {s: {m: len(v) for m, v in d.items()} for s, d in evals_log.items()}


CASES = {
    "early stopping": dict(early_stopping_rounds=2),
    "all rounds": dict(),
    "after_iteration stops": dict(recorders=[Recorder(stop_after=3), Recorder()]),
    "before_iteration stops": dict(recorders=[Recorder(), Recorder(stop_before=4)]),
    "stops with early stopping": dict(early_stopping_rounds=2, recorders=[Recorder(stop_after=2)]),
    "stops at round 0": dict(recorders=[Recorder(stop_before=0)]),
    "verbose early stopping": dict(early_stopping_rounds=2, verbose_eval=True),
}


def _run(train, case, rounds=40, **kw):
    X, y, Xv, yv = _data()
    recorders = case.get("recorders") or [Recorder()]
    recorders = [Recorder(r.stop_before, r.stop_after) for r in recorders]  # fresh ones
    log = {}
    dtrain = xgb.DMatrix(X, y)
    bst = train(PARAMS, dtrain, rounds, evals=[(dtrain, "t"), (xgb.DMatrix(Xv, yv), "v")],
                callbacks=recorders, evals_result=log,
                early_stopping_rounds=case.get("early_stopping_rounds"),
                verbose_eval=case.get("verbose_eval", False), **kw)
    return bst, [r.calls for r in recorders], log


@pytest.mark.parametrize("name", list(CASES))
def test_callbacks_get_xgboost_trains_calls(name, capsys):
    """Every callback gets the calls ``xgboost.train`` makes, in its order; after early
    stopping the hook called ``before_iteration`` of a round it never grew."""
    case = CASES[name]
    host, host_calls, host_log = _run(xgb.train, case)
    host_out = capsys.readouterr().out
    ours, our_calls, our_log = _run(ax.train, case, **OFF)
    assert our_calls == host_calls
    assert ours.num_boosted_rounds() == host.num_boosted_rounds()
    assert our_log.keys() == host_log.keys()
    for s in host_log:
        for m in host_log[s]:
            np.testing.assert_allclose(our_log[s][m], host_log[s][m], rtol=1e-5)
    # early stopping sets best_iteration and best_score where xgb.train does
    assert (ours.attr("best_iteration"), ours.attr("best_score") is None) == \
        (host.attr("best_iteration"), host.attr("best_score") is None)
    if host.attr("best_score") is not None:
        assert float(ours.attr("best_score")) == pytest.approx(float(host.attr("best_score")),
                                                               rel=1e-5)
    assert len(capsys.readouterr().out.splitlines()) == len(host_out.splitlines())
    # and the model is xgb.train's (stopped at round 0: its intercept, never estimated)
    dvalid = xgb.DMatrix(_data()[2])
    np.testing.assert_allclose(ours.predict(dvalid), host.predict(dvalid), rtol=0, atol=1e-6)


def test_with_pruning_no_round_is_announced_that_is_not_grown():
    """With pruning on (other rounds than xgb.train's), early stopping still ends with the
    last grown round's after_iteration: no before_iteration of a round never grown."""
    bst, (calls,), log = _run(ax.train, CASES["early stopping"], random_state=0)
    n = bst.num_boosted_rounds()
    assert n < 40  # it stopped early
    epochs = [c[:2] for c in calls[1:-1]]
    assert epochs == [(kind, e) for e in range(n) for kind in ("before", "after")]
    assert len(log["v"]["rmse"]) == n
    assert int(bst.attr("best_iteration")) == int(np.argmin(log["v"]["rmse"]))


class _Returns(xgb.callback.TrainingCallback):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def before_training(self, model):
        return self.model if self.model != "given" else model


def test_before_training_returns_the_model_as_xgboost_train_requires():
    """xgb.train passes each ``before_training`` the model the one before returned, and
    trains the last one; it must be a Booster. The hook ignored what they returned."""
    X, y, _, _ = _data(n=200)
    dtrain = xgb.DMatrix(X, y)
    with pytest.raises(AssertionError):  # xgb.train's own refusal
        xgb.train(PARAMS, dtrain, 2, callbacks=[_Returns(None)])
    with pytest.raises(TypeError, match=r"callbacks\[1\]\.before_training must return the "
                                        r"model \(an xgboost.Booster\).*returned NoneType"):
        ax.train(PARAMS, dtrain, 2, callbacks=[_Returns("given"), _Returns(None)],
                 verbose_eval=False)
    other = xgb.train(PARAMS, dtrain, 1)
    host = xgb.train(PARAMS, dtrain, 2, callbacks=[_Returns(other)])
    assert host.num_boosted_rounds() == 3  # xgb.train trained the returned model on
    with pytest.raises(ValueError, match=r"callbacks\[0\]\.before_training returned another "
                                         "Booster"):
        ax.train(PARAMS, dtrain, 2, callbacks=[_Returns(other)], verbose_eval=False)
    seen = Recorder()  # the model returned is passed on, and trained
    bst = ax.train(PARAMS, dtrain, 2, callbacks=[_Returns("given"), seen], verbose_eval=False,
                   **OFF)
    assert seen.calls[0] == ("before_training", 0) and bst.num_boosted_rounds() == 2


def test_after_training_must_return_a_booster():
    X, y, _, _ = _data(n=200)

    class Bad(xgb.callback.TrainingCallback):
        def after_training(self, model):
            return None

    with pytest.raises(TypeError, match=r"callbacks\[0\]\.after_training must return"):
        ax.train(PARAMS, xgb.DMatrix(X, y), 2, callbacks=[Bad()], verbose_eval=False)


class _StopBefore(xgb.callback.TrainingCallback):
    def before_iteration(self, model, epoch, evals_log):
        return True


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic", "count:poisson",
                                       "multi:softprob"])
@pytest.mark.parametrize("options", [OFF, {"random_state": 0}])
def test_stopped_before_round_0_the_intercept_is_xgboost_trains(objective, options):
    """A callback stopping before round 0: ``xgboost.train`` grows nothing, so never
    estimates base_score, and returns 0 trees predicting from the parameter's (0.5). The hook
    estimated it before the callbacks could stop (the labels' mean: 3.0, not 0.5)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4))
    y = X[:, 0] + 3 + rng.normal(size=1000)
    y = {"binary:logistic": (y > 3.5).astype(float), "count:poisson": np.abs(y),
         "multi:softprob": np.digitize(y, [2.0, 3.5]).astype(float)}.get(objective, y)
    params = {**PARAMS, "objective": objective,
              **({"num_class": 3} if objective.startswith("multi") else {})}

    def base_score(bst):
        return json.loads(bst.save_raw("json"))["learner"]["learner_model_param"]["base_score"]

    host = xgb.train(params, xgb.DMatrix(X, y), 10, callbacks=[_StopBefore()])
    ours = ax.train(params, xgb.DMatrix(X, y), 10, callbacks=[_StopBefore()],
                    verbose_eval=False, **options)
    assert ours.num_boosted_rounds() == host.num_boosted_rounds() == 0
    assert base_score(ours) == base_score(host)
    d = xgb.DMatrix(X[:50])
    np.testing.assert_array_equal(ours.predict(d), host.predict(d))
    np.testing.assert_array_equal(ours.predict(d, output_margin=True),
                                  host.predict(d, output_margin=True))


# -------------------------------------------------------------------- QuantileDMatrix


@pytest.mark.parametrize("ref", [None, "other"])
def test_eval_quantile_dmatrix_needs_dtrain_as_reference(ref):
    """An eval QuantileDMatrix built without ``ref=dtrain`` is binned on its own cuts:
    xgboost.train refuses it; the hook took it and recorded metrics that were not the returned
    model's (v-rmse 1.05513 recorded, 1.05889 the model's), early stopping on them."""
    X, y, Xv, yv = _data()
    dtrain = xgb.QuantileDMatrix(X, y)
    reference = None if ref is None else xgb.QuantileDMatrix(X, y)

    def dvalid():
        return xgb.QuantileDMatrix(Xv, yv, ref=reference)

    with pytest.raises(ValueError, match="Training dataset should be used as a reference"):
        xgb.train(PARAMS, dtrain, 3, evals=[(dvalid(), "v")], verbose_eval=False)
    with pytest.raises(ValueError, match=r"evals\[1\] \('v'\) is a QuantileDMatrix not built "
                                         r"with ref=dtrain.*ref=dtrain\)"):
        ax.train(PARAMS, dtrain, 3, evals=[(dtrain, "t"), (dvalid(), "v")], verbose_eval=False)


@pytest.mark.parametrize("options", [OFF, {"random_state": 0}])
def test_eval_quantile_dmatrix_with_dtrain_as_reference_records_the_models_metric(options):
    """Built with ``ref=dtrain`` it is accepted: pruning off, the history is xgb.train's; the
    recorded metric is the returned model's on those rows either way."""
    X, y, Xv, yv = _data()
    dtrain = xgb.QuantileDMatrix(X, y)
    host_log, log = {}, {}
    xgb.train(PARAMS, dtrain, 8, evals=[(xgb.QuantileDMatrix(Xv, yv, ref=dtrain), "v")],
              evals_result=host_log, verbose_eval=False)
    bst = ax.train(PARAMS, dtrain, 8, evals=[(xgb.QuantileDMatrix(Xv, yv, ref=dtrain), "v")],
                   evals_result=log, verbose_eval=False, **options)
    if options is OFF:
        np.testing.assert_allclose(log["v"]["rmse"], host_log["v"]["rmse"], rtol=1e-6)
    rmse = float(np.sqrt(np.mean((bst.predict(xgb.DMatrix(Xv)) - yv) ** 2)))
    assert log["v"]["rmse"][-1] == pytest.approx(rmse, rel=1e-6)
