"""Session-9 probes of the XGBoost adapter: cases users meet that the other tests did not
cover, each checked against XGBoost's own numbers (its trees' base_weights, ``xgb.train``
with the same callbacks, its predictions)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

OFF = {"prune_threshold": None, "holdout_fraction": 0.0}  # the hook is then xgb.train


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)).astype(np.float32)
    Xv = rng.normal(size=(n // 2, 5)).astype(np.float32)

    def label(A):
        return A[:, 0] + 0.5 * A[:, 1] ** 2 + rng.normal(size=A.shape[0])

    return xgb.DMatrix(X, label(X)), xgb.DMatrix(Xv, label(Xv))


PARAMS = {"max_depth": 4, "eta": 0.3, "seed": 0, "nthread": 1}


def _trees(bst):
    return json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]


class _GrownTrees(xgb.callback.TrainingCallback):
    """Keeps each round's tree as the Booster grew it (before the hook prunes it)."""

    def __init__(self):
        super().__init__()
        self.trees = []

    def after_iteration(self, model, epoch, evals_log):
        self.trees.append(_trees(model[epoch : epoch + 1])[0])
        return False


# ------------------------------------------------------- callbacks that change the learning rate


def test_learning_rate_scheduler_collapsed_nodes_take_their_rounds_eta():
    """XGBoost's LearningRateScheduler sets eta between rounds: a node the hook collapses gets
    what XGBoost would give it as a leaf in *that* round, ``eta_round * base_weight``; it got
    the first round's eta (6x too large at eta 0.05)."""
    dtrain, _ = _data()
    rates = [0.3, 0.05, 0.8, 0.1, 0.5, 0.02]
    grown = _GrownTrees()
    # XGBoost's scheduler sets learning_rates(epoch) after round epoch: round r uses rates[r]
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: rates[(epoch + 1) % 6])
    bst = ax.train(PARAMS, dtrain, 6, callbacks=[grown, schedule], verbose_eval=False,
                   random_state=0)
    collapsed_later = 0
    for r, (tree, pruned) in enumerate(zip(grown.trees, _trees(bst))):
        inner = np.asarray(tree["left_children"]) >= 0
        cond = np.asarray(tree["split_conditions"], dtype=np.float32)
        weight = np.asarray(tree["base_weights"], dtype=np.float32)
        # XGBoost's own leaf values in this round are eta_r * w: the schedule applied
        leaf_values = set(cond[~inner].tolist())
        as_leaf = set((np.float32(rates[r]) * weight[inner]).tolist())
        leaf = np.asarray(pruned["left_children"]) < 0
        new = [v for v in np.asarray(pruned["split_conditions"], np.float32)[leaf].tolist()
               if v not in leaf_values]
        assert all(v in as_leaf for v in new), (r, new, sorted(as_leaf))
        collapsed_later += len(new) if r > 0 else 0
    assert collapsed_later > 0  # the test saw collapsed nodes in rounds with another eta


def test_callback_changing_lambda_is_refused():
    """lambda fixes every collapsed node's value: a callback changing it mid-run is refused
    (the hook would otherwise keep the first value silently)."""
    dtrain, _ = _data(n=400)

    class Lambda(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            model.set_param("reg_lambda", 5.0)
            return False

    with pytest.raises(ValueError, match="lambda"):
        ax.train(PARAMS, dtrain, 3, callbacks=[Lambda()], verbose_eval=False)


# -------------------------------------------------------------- callbacks that stop training


def test_early_stopping_callback_stops_as_in_xgb_train():
    """``EarlyStopping(save_best=True)`` as a callback (XGBoost's documented pattern): with
    pruning off the hook is ``xgb.train``, which stops when the callback says so and returns
    the rounds up to the best one; the hook trained every round and warned instead."""
    dtrain, dvalid = _data()
    params = {**PARAMS, "eta": 0.9}

    def stopper():
        return xgb.callback.EarlyStopping(rounds=3, save_best=True)

    host_log, our_log = {}, {}
    host = xgb.train(params, dtrain, 40, evals=[(dvalid, "v")], callbacks=[stopper()],
                     evals_result=host_log, verbose_eval=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ax.train(params, dtrain, 40, evals=[(dvalid, "v")], callbacks=[stopper()],
                        evals_result=our_log, verbose_eval=False, **OFF)
    assert len(host_log["v"]["rmse"]) < 40  # the host stopped early
    assert len(our_log["v"]["rmse"]) == len(host_log["v"]["rmse"])
    assert ours.num_boosted_rounds() == host.num_boosted_rounds()
    assert ours.best_iteration == host.best_iteration
    np.testing.assert_allclose(ours.predict(dvalid), host.predict(dvalid), atol=1e-6)


def test_save_best_record_holds_only_the_returned_trees():
    """After ``EarlyStopping(save_best=True)`` slices the model, the training record (and so
    ``feature_importances_``) covers the returned trees only, as documented; it held every
    round's splits."""
    dtrain, dvalid = _data()
    stopper = xgb.callback.EarlyStopping(rounds=3, save_best=True)
    bst = ax.train({**PARAMS, "eta": 0.9}, dtrain, 40, evals=[(dvalid, "v")],
                   callbacks=[stopper], verbose_eval=False, random_state=0)
    splits = ax.training_splits(bst)
    assert bst.num_boosted_rounds() == bst.best_iteration + 1 < 40
    assert splits["iteration"].max() == bst.best_iteration
    # the kept splits are exactly the returned model's splits
    n_splits = sum(int(np.sum(np.asarray(t["left_children"]) >= 0)) for t in _trees(bst))
    assert int(splits["kept"].sum()) == n_splits


def test_save_best_with_a_schedule_keeps_the_returned_trees_etas():
    """A LearningRateScheduler stores each tree's eta with the model; EarlyStopping(save_best=
    True) then sliced the model and kept every round's etas: pruning it afterwards warned
    that it could not tell which tree had which and refit leaves with one eta (off by 0.75).
    The returned model's etas are its own trees', and pruning it keeps it as it is."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(3)
    X, Xv = rng.normal(size=(1500, 4)), rng.normal(size=(600, 4))
    y, yv = X[:, 0] + rng.normal(size=1500), Xv[:, 0] + rng.normal(size=600)
    rates = [0.3, 0.1, 0.05]
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: rates[epoch % 3])
    stopper = xgb.callback.EarlyStopping(rounds=3, save_best=True)
    bst = ax.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 40,
                   evals=[(xgb.DMatrix(Xv, yv), "v")], callbacks=[schedule, stopper],
                   verbose_eval=False, random_state=0)
    assert bst.num_boosted_rounds() < 40
    etas = json.loads(bst.attr("unbiased_criteria_shrinkage"))
    assert len(etas) == bst.num_boosted_rounds()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*hessian sums differ|.*training hook grew")
        warnings.filterwarnings("error", message=".*learning rates")
        kept = uc.prune(bst, X, y, Xv, yv, threshold=-np.inf, refit_leaves=False,
                        random_state=0)
    d = xgb.DMatrix(Xv)
    np.testing.assert_allclose(kept.predict(d), bst.predict(d), atol=1e-6)


def _switching_data():
    """Few noisy rows and deep trees: the validation error is best within a few rounds."""
    rng = np.random.default_rng(5)
    X, Xv = rng.normal(size=(600, 4)), rng.normal(size=(600, 4))
    return X, X[:, 0] + 2 * rng.normal(size=600), Xv, Xv[:, 0] + 2 * rng.normal(size=600)


#: eta 0.2 for the first rounds, then 0.01 (the configuration ends at 0.01)
SWITCH = 8
SWITCH_PARAMS = {"max_depth": 5, "eta": 0.2, "nthread": 1, "seed": 0}


def _switching_callbacks():
    return [xgb.callback.LearningRateScheduler(lambda epoch: 0.2 if epoch < SWITCH - 1
                                               else 0.01),
            xgb.callback.EarlyStopping(rounds=10, save_best=True)]


def _etas(model):
    return [t.shrinkage for t in ax.read_model(model).forest.trees]


def _saved_and_loaded(bst, path):
    bst.save_model(path)
    return xgb.Booster(model_file=path)


@pytest.mark.parametrize("api", ["train", "estimator"])
def test_save_best_keeping_rounds_of_one_eta_reads_them_at_that_eta(api, tmp_path):
    """A LearningRateScheduler that moved from 0.2 to 0.01 after the best round, and
    EarlyStopping(save_best=True): every returned tree was grown at 0.2. The hook's model
    (pruning off: xgb.train's model) was read at the scheduler's last eta, 0.01, so
    refitting its leaves made them 20x too small; it is read at 0.2, as xgb.train's own model
    is read from its weights, also sliced and saved and loaded, and refitting every leaf with
    nothing pruned gives XGBoost's predictions back."""
    import unbiased_criteria as uc

    X, y, Xv, yv = _switching_data()
    if api == "train":
        log = {}
        host = xgb.train(SWITCH_PARAMS, xgb.DMatrix(X, y), 100,
                         evals=[(xgb.DMatrix(Xv, yv), "v")], callbacks=_switching_callbacks(),
                         verbose_eval=False)
        ours = ax.train(SWITCH_PARAMS, xgb.DMatrix(X, y), 100,
                        evals=[(xgb.DMatrix(Xv, yv), "v")], callbacks=_switching_callbacks(),
                        evals_result=log, verbose_eval=False, **OFF)
        assert len(log["v"]["rmse"]) > SWITCH  # rounds at 0.01 were grown, then cut
    else:
        kw = {"n_estimators": 100, "max_depth": 5, "learning_rate": 0.2, "n_jobs": 1,
              "random_state": 0}
        fit = {"eval_set": [(Xv, yv)], "verbose": False}
        host = xgb.XGBRegressor(**kw, callbacks=_switching_callbacks()).fit(X, y, **fit)
        ours = ax.UnbiasedXGBRegressor(**kw, callbacks=_switching_callbacks(),
                                       **OFF).fit(X, y, **fit)
        ours, host = ours.get_booster(), host.get_booster()
    assert ours.num_boosted_rounds() == host.num_boosted_rounds() < SWITCH
    assert ours.best_iteration == host.best_iteration
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(ours.predict(dv), host.predict(dv), atol=1e-6)
    expected = _etas(host)  # read from XGBoost's own weights: 0.2
    np.testing.assert_allclose(expected, np.float32(0.2), rtol=1e-6)
    assert _etas(ours) == expected
    assert _etas(ours[: ours.best_iteration + 1]) == expected
    assert _etas(ours[:2]) == expected[:2]
    for name in ("m.json", "m.ubj"):  # a loaded Booster's configuration says eta 0.3
        assert _etas(_saved_and_loaded(ours, str(tmp_path / name))) == expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refit = uc.prune(ours, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
    np.testing.assert_allclose(refit.predict(dv), host.predict(dv), atol=1e-5)


class _FirstRounds(xgb.callback.TrainingCallback):
    """Returns the first ``n`` rounds of the model, or what ``how`` says."""

    def __init__(self, n, how="slice"):
        super().__init__()
        self.n, self.how = n, how

    def after_training(self, model):
        if self.how == "copy":
            return model.copy()
        if self.how == "later":
            return model[1 : self.n + 1]
        return model[: self.n]


@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softprob"])
def test_any_slice_of_first_rounds_keeps_attributes_of_its_trees(objective, tmp_path):
    """Pruning on: a callback returning the first rounds of a run whose learning rate changed
    later. The attributes the hook left were the whole run's (the trees' etas differ, so no
    single eta was stored) less the list of etas: its trees were read at the configuration's
    eta, 0.01 (0.3 saved and loaded). They describe the trees returned: the eta of their
    rounds, the number of trees."""
    X, y, Xv, yv = _switching_data()
    params = {**SWITCH_PARAMS, "objective": objective}
    if objective.startswith("multi"):
        params["num_class"] = 3
        y = np.digitize(y, [-1.0, 1.0]).astype(float)
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: 0.2 if epoch < SWITCH - 1
                                                  else 0.01)
    bst = ax.train(params, xgb.DMatrix(X, y), SWITCH + 4,
                   callbacks=[schedule, _FirstRounds(5)], verbose_eval=False, random_state=0)
    K = 3 if objective.startswith("multi") else 1
    assert bst.num_boosted_rounds() == 5
    stored = json.loads(bst.attr("unbiased_criteria_params"))
    assert stored["n_trees"] == 5 * K and stored["eta"] == pytest.approx(0.2)
    assert bst.attr("unbiased_criteria_shrinkage") is None  # one eta: none per tree
    for model in (bst, bst[:3], _saved_and_loaded(bst, str(tmp_path / "m.json"))):
        np.testing.assert_allclose(_etas(model), np.float32(0.2), rtol=1e-6)
    assert ax.training_splits(bst)["iteration"].max() <= 4


def test_after_training_returning_other_trees_is_refused():
    """A callback's ``after_training`` may return the model, a copy or a slice of its first
    rounds (what the hook's attributes and record can describe); other trees are one error
    naming the callback, not a model read with another tree's learning rate."""
    X, y, _, _ = _switching_data()
    dtrain = xgb.DMatrix(X, y)
    copied = ax.train(SWITCH_PARAMS, dtrain, 4, callbacks=[_FirstRounds(4, "copy")],
                      verbose_eval=False)
    assert copied.num_boosted_rounds() == 4 and len(ax.training_splits(copied))
    with pytest.raises(ValueError, match=r"callbacks\[1\]\.after_training returned a model "
                                         "whose trees are not the first boosting rounds"):
        ax.train(SWITCH_PARAMS, dtrain, 4,
                 callbacks=[_FirstRounds(4, "copy"), _FirstRounds(2, "later")],
                 verbose_eval=False)


def test_before_iteration_is_called_and_stops_as_in_xgb_train():
    """``before_iteration`` runs before each round and returning True stops before it, as in
    ``xgb.train``; the hook never called it."""
    dtrain, _ = _data(n=400)

    class StopBefore(xgb.callback.TrainingCallback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def before_iteration(self, model, epoch, evals_log):
            self.seen.append(epoch)
            return epoch == 2

    host_cb, our_cb = StopBefore(), StopBefore()
    host = xgb.train(PARAMS, dtrain, 5, callbacks=[host_cb], verbose_eval=False)
    ours = ax.train(PARAMS, dtrain, 5, callbacks=[our_cb], verbose_eval=False, **OFF)
    assert our_cb.seen == host_cb.seen == [0, 1, 2]
    assert ours.num_boosted_rounds() == host.num_boosted_rounds() == 2


# ------------------------------------------------------------------- continued training


@pytest.mark.parametrize("kind", ["booster", "file"])
def test_xgb_model_is_refused_naming_it(kind, tmp_path):
    """``xgb_model=`` (continued training, a Booster or a file) is one clear error, as the
    estimators give; it was Python's "unexpected keyword argument"."""
    dtrain, _ = _data(n=300)
    start = xgb.train(PARAMS, dtrain, 2)
    if kind == "file":
        start.save_model(tmp_path / "start.json")
        start = str(tmp_path / "start.json")
    with pytest.raises(ValueError, match="xgb_model .continued training. is not supported"):
        ax.train(PARAMS, dtrain, 2, xgb_model=start, verbose_eval=False)
    bst = ax.train(PARAMS, dtrain, 1, xgb_model=None, verbose_eval=False)
    assert bst.num_boosted_rounds() == 1


# ------------------------------------------------------------------- XGBoost's random draws


@pytest.mark.parametrize("sampling", [{"subsample": 0.7}, {"colsample_bynode": 0.5},
                                      {"colsample_bytree": 0.6, "seed": 3}])
def test_pruning_off_with_sampling_is_xgb_train(sampling):
    """With pruning off and nothing held out the hook is ``xgb.train``, row and column
    sampling included: the throwaway Booster that estimates the intercept drew from
    XGBoost's global random engine after the growing Booster had seeded it, so the growing
    Booster sampled other rows and columns (margins off by 1.4)."""
    dtrain, dvalid = _data()
    params = {**PARAMS, **sampling}
    host = xgb.train(params, dtrain, 5)
    ours = ax.train(params, dtrain, 5, verbose_eval=False, **OFF)
    np.testing.assert_allclose(ours.predict(dvalid, output_margin=True),
                               host.predict(dvalid, output_margin=True), atol=1e-6)


# --------------------------------------------------------------- exact and approx tree methods


@pytest.mark.parametrize("method", [{"tree_method": "exact", "gamma": 2.0},
                                    {"tree_method": "approx", "max_bin": 32},
                                    {"tree_method": "approx", "grow_policy": "lossguide",
                                     "max_leaves": 8}])
def test_exact_and_approx_models_match_the_host_without_a_warning(method):
    """Models of the exact (whose prune updater removes splits below gamma as it grows) and
    approx tree methods replay as hist ones do: the recomputed B is XGBoost's loss_changes,
    the node hessian sums its sum_hessian, and refitting every leaf with nothing pruned gives
    its predictions; they were warned about as unverified."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(4)
    X, Xv = rng.normal(size=(1200, 5)), rng.normal(size=(800, 5))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=1200)
    yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=800)
    w = rng.uniform(0.3, 2.0, size=1200)
    bst = xgb.train({**PARAMS, **method}, xgb.DMatrix(X, y, weight=w), 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        splits = uc.unbiased_importance(bst, X, y, Xv, yv, train_weight=w,
                                        random_state=0).splits
        refit = uc.prune(bst, X, y, Xv, yv, train_weight=w, threshold=-np.inf,
                         refit_leaves=True)
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert len(splits) > 50 and np.median(rel) <= 1e-6 and np.quantile(rel, 0.95) <= 1e-3
    np.testing.assert_allclose(splits["sum_hessian"], splits["host_hessian"], rtol=1e-6)
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(refit.predict(dv), bst.predict(dv), atol=1e-5)


# ------------------------------------------- models loaded from a file: clipped leaf weights


def _count_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, rng.poisson(np.exp(0.6 * X[:, 0] + 0.3 * X[:, 1] ** 2)).astype(float)


def _loaded(bst, tmp_path):
    bst.save_model(tmp_path / "model.json")
    return xgb.Booster(model_file=str(tmp_path / "model.json"))


@pytest.mark.parametrize("extra", [{}, {"max_delta_step": 0.3}])
def test_loaded_poisson_model_keeps_its_max_delta_step(extra, tmp_path):
    """count:poisson clips leaf weights at max_delta_step (0.7 unless given), a parameter the
    model file keeps only in its objective; a loaded Booster's configuration reports 0. The
    loaded model was scored and refit unclipped: B up to 7x the host's gain, refit
    predictions off by 0.3, silently."""
    import unbiased_criteria as uc

    X, y = _count_data(1500, 0)
    Xv, yv = _count_data(1000, 1)
    bst = xgb.train({"objective": "count:poisson", "max_depth": 5, **extra},
                    xgb.DMatrix(X, y), 10)
    loaded = _loaded(bst, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        splits = uc.unbiased_importance(loaded, X, y, Xv, yv, random_state=0).splits
        refit = uc.prune(loaded, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert np.median(rel) <= 1e-6 and np.quantile(rel, 0.95) <= 1e-3
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(refit.predict(dv, output_margin=True),
                               bst.predict(dv, output_margin=True), atol=1e-5)


def test_loaded_model_with_some_clipped_leaves_is_not_read_with_the_defaults(tmp_path):
    """A loaded Booster reports eta 0.3, lambda 1 and no max_delta_step. When the trees were
    clipped (max_delta_step) at a few nodes only, the defaults passed the check (a median
    over the nodes) and pruning wrote unclipped values (refit predictions off by 0.8); the
    misfit is now seen, and pruning asks for the parameters as documented."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(5)
    X, Xv = rng.normal(size=(1500, 5)), rng.normal(size=(1000, 5))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=1500)
    yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=1000)
    bst = xgb.train({"max_depth": 4, "max_delta_step": 1.5}, xgb.DMatrix(X, y), 10)
    weights = np.concatenate([t["base_weights"] for t in _trees(bst)])
    assert 0 < np.mean(np.abs(weights) >= 1.5 - 1e-6) < 0.1  # a few clipped nodes
    loaded = _loaded(bst, tmp_path)
    with pytest.raises(ValueError, match="max_delta_step"):
        uc.prune(loaded, X, y, Xv, yv, refit_leaves=True)
    loaded.set_param({"max_delta_step": 1.5})  # given, as the error says: exact again
    refit = uc.prune(loaded, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(refit.predict(dv), bst.predict(dv), atol=1e-5)


@pytest.mark.parametrize("extra", [{}, {"max_delta_step": 0.3}])
def test_poisson_dump_clips_at_its_max_delta_step(extra):
    """A count:poisson dump: the trees are clipped at max_delta_step (0.7 unless given) and
    the objective's hessian uses it too; the dump was read with 0 for the trees (B up to 7x
    the host's gain) and host_params could not give it to the objective."""
    import unbiased_criteria as uc

    X, y = _count_data(1500, 0)
    Xv, yv = _count_data(1000, 1)
    bst = xgb.train({"objective": "count:poisson", "max_depth": 5, **extra},
                    xgb.DMatrix(X, y), 10)
    config = json.loads(bst.save_config())["learner"]["learner_model_param"]
    host_params = {"objective": "count:poisson", "eta": 0.3, "lambda": 1.0,
                   "base_score": json.loads(config["base_score"])[0], **extra}
    dump = bst.get_dump(dump_format="json", with_stats=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        splits = uc.unbiased_importance(dump, X, y, Xv, yv, host_params=host_params,
                                        random_state=0).splits
    # XGBoost's default, assumed with a warning where it was not given
    assert [str(w.message)[:40] for w in caught] == (
        [] if extra else ["the dump does not store max_delta_step: "])
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert np.median(rel) <= 1e-6 and np.quantile(rel, 0.95) <= 1e-3
    np.testing.assert_allclose(splits["sum_hessian"], splits["host_hessian"], rtol=1e-5)


@pytest.mark.parametrize("objective, extra", [
    ("binary:logistic", {"scale_pos_weight": 3.0}),
    ("reg:pseudohubererror", {"huber_slope": 0.4}),
    ("reg:tweedie", {"tweedie_variance_power": 1.2}),
])
def test_dump_takes_its_objective_parameters(objective, extra):
    """A dump does not store its objective's parameters: ``host_params`` takes them (it
    refused them as unknown keys, so such a dump could only be scored with the defaults'
    gradients), and a default assumed is a warning naming it, as for LightGBM dumps."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(6)
    X, Xv = rng.normal(size=(1500, 5)), rng.normal(size=(1000, 5))

    def label(A):
        s = A[:, 0] + 0.5 * A[:, 1] ** 2 + rng.normal(size=A.shape[0])
        if objective == "binary:logistic":
            return (s > 1.0).astype(float)
        return np.exp(0.3 * s) if objective == "reg:tweedie" else s

    y, yv = label(X), label(Xv)
    bst = xgb.train({"objective": objective, "max_depth": 4, **extra}, xgb.DMatrix(X, y), 8)
    config = json.loads(bst.save_config())["learner"]["learner_model_param"]
    host_params = {"objective": objective, "eta": 0.3, "lambda": 1.0,
                   "base_score": json.loads(config["base_score"])[0]}
    dump = bst.get_dump(dump_format="json", with_stats=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        splits = uc.unbiased_importance(dump, X, y, Xv, yv, host_params={**host_params, **extra},
                                        random_state=0).splits
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert np.median(rel) <= 1e-6 and np.quantile(rel, 0.95) <= 1e-3
    (key,) = extra
    with pytest.warns(UserWarning, match=f"does not store {key}"):
        uc.unbiased_importance(dump, X, y, Xv, yv, host_params=host_params, random_state=0)


def test_loaded_monotone_model_is_refused_naming_monotone_constraints(tmp_path):
    """A model file does not keep monotone_constraints either (a loaded Booster reports
    none), and the clamped leaves do not fit the defaults: the refusal names monotone
    constraints among what to pass (it named only eta, lambda, alpha and max_delta_step, and
    passing those alone prunes without the constraints); given, pruning keeps them."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(7)
    X, Xv = rng.normal(size=(1500, 5)), rng.normal(size=(1000, 5))
    y = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=1500)
    yv = Xv[:, 0] - 0.5 * Xv[:, 1] + rng.normal(size=1000)
    constraints = "(1,-1,0,0,0)"
    bst = xgb.train({"max_depth": 4, "monotone_constraints": constraints},
                    xgb.DMatrix(X, y), 10)
    loaded = _loaded(bst, tmp_path)
    with pytest.raises(ValueError, match="monotone_constraints"):
        uc.prune(loaded, X, y, Xv, yv)
    loaded.set_param({"monotone_constraints": constraints})
    with pytest.warns(UserWarning, match="monotone"):
        pruned = uc.prune(loaded, X, y, Xv, yv, random_state=0)
    grid = np.zeros((50, 5))
    grid[:, 0] = np.linspace(-3, 3, 50)
    assert np.all(np.diff(pruned.predict(xgb.DMatrix(grid))) >= 0)


# ----------------------------------------- post-hoc: a model trained with a changing eta


@pytest.mark.parametrize("first", [0.1, 0.3])
def test_model_trained_with_a_learning_rate_schedule_is_read_per_tree(first):
    """``xgb.train`` with a LearningRateScheduler shrinks each tree by its own round's eta;
    the configuration keeps one. Each tree's eta is read from its own weights (leaves shrunk,
    internal nodes not): refitting every leaf with nothing pruned gives the host's model
    again. Before, one eta served every tree: refit predictions off by 0.8 under a warning
    whose advice (pass the real eta) could not be followed, or (eta 0.3 configured) pruning
    was refused."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(8)
    X, Xv = rng.normal(size=(1500, 5)), rng.normal(size=(1000, 5))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=1500)
    yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=1000)
    rates = [first, 0.3, 0.05, 0.2, 0.15, 0.1]
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: rates[(epoch + 1) % 6])
    bst = xgb.train({"max_depth": 4, "eta": first}, xgb.DMatrix(X, y), 6,
                    callbacks=[schedule])
    with pytest.warns(UserWarning, match="learning rates"):
        report = uc.unbiased_importance(bst, X, y, Xv, yv, random_state=0)
    splits = report.splits
    rel = np.abs(splits["biased_gain"] - splits["host_gain"]) / np.abs(splits["host_gain"])
    assert np.median(rel) <= 1e-6
    with pytest.warns(UserWarning, match="learning rates"):
        refit = uc.prune(bst, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(refit.predict(dv), bst.predict(dv), atol=1e-5)


def test_hook_model_trained_with_a_schedule_is_read_with_each_rounds_eta():
    """The hook's model trained with a LearningRateScheduler (pruned trees, often with too
    few parents of two leaves to read their eta from) keeps each tree's eta in an attribute:
    reading it back gives each tree its round's eta, and post-hoc pruning gives a collapsed
    node ``eta_round * -G / (H + lambda)``; it took the configured eta for every tree."""
    import unbiased_criteria as uc

    dtrain, dvalid = _data()
    rates = [0.3, 0.05, 0.8, 0.1, 0.5]
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: rates[(epoch + 1) % 5])
    # base_score far from the labels' mean: the collapsed roots below are far from 0
    params = {**PARAMS, "base_score": 5.0}
    bst = ax.train(params, dtrain, 5, callbacks=[schedule], verbose_eval=False,
                   random_state=0)
    read = ax.read_model(bst)
    np.testing.assert_allclose([t.shrinkage for t in read.forest.trees], rates, rtol=1e-6)
    X, y = dtrain.get_data().toarray(), dtrain.get_label()
    Xv, yv = dvalid.get_data().toarray(), dvalid.get_label()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the hook grew each tree on part of the rows: said, and expected here
        warnings.filterwarnings("ignore", message="the training hook grew this model")
        stumps = uc.prune(bst, X, y, Xv, yv, threshold=np.inf)  # every tree to its root
    # and the pruned model keeps them (a model written from trees of one eta stores none)
    kept = [t.shrinkage for t in ax.read_model(stumps).forest.trees]
    np.testing.assert_allclose(kept, rates, rtol=1e-6)
    assert "unbiased_criteria_shrinkage" not in ax.train(
        params, dtrain, 2, verbose_eval=False).attributes()
    # squared error, every tree a root: each adds -eta_t * n (F - mean y) / (n + lambda) to
    # every row's margin F
    margin, expected = 5.0, []
    for eta in rates:
        expected.append(-eta * y.size * (margin - y.mean()) / (y.size + 1.0))
        margin += expected[-1]
    values = [t["split_conditions"][0] for t in _trees(stumps)]
    np.testing.assert_allclose(values, expected, rtol=1e-4)


@pytest.mark.parametrize("depth", [4, 1])
def test_slice_of_a_model_with_stored_etas_is_not_read_with_one_eta_silently(depth):
    """A slice keeps the model's attributes but renumbers its trees: the stored etas no
    longer say which tree is which. Each tree's eta is then read from its weights where
    they tell (depth 4), else (stumps: one parent of two leaves each) a warning says the
    configured eta serves every tree; it did silently."""
    dtrain, _ = _data()
    rates = [0.3, 0.05, 0.8, 0.1, 0.5]
    schedule = xgb.callback.LearningRateScheduler(lambda epoch: rates[(epoch + 1) % 5])
    bst = ax.train({**PARAMS, "max_depth": depth}, dtrain, 5, callbacks=[schedule],
                   verbose_eval=False, random_state=0)
    read = ax.read_model(bst[1:3])  # its warnings go out where the model is used
    etas = [t.shrinkage for t in read.forest.trees]
    if depth > 1:
        np.testing.assert_allclose(etas, rates[1:3], rtol=1e-5)
        assert read.warnings == ()
    else:
        assert [w for w in read.notes if "a slice" in w]


def test_given_eta_that_does_not_fit_the_trees_is_warned_about():
    """An eta given by the user that the trees' own weights contradict: the trees' is used
    (their leaves are that eta times their weights), and a warning says so rather than
    replacing the given value silently."""
    dtrain, _ = _data(n=600)
    bst = xgb.train({**PARAMS, "eta": 0.3}, dtrain, 3)
    read = ax.read_model(bst, params={"eta": 0.1})
    np.testing.assert_allclose([t.shrinkage for t in read.forest.trees], 0.3, rtol=1e-7)
    assert [w for w in read.notes if "eta=0.1" in w and "0.3" in w]


def test_objective_given_silences_the_readers_request_for_it():
    """A model whose objective has no core equivalent (binary:hinge) asks for objective=;
    once it is given, no warning asks for it again (one did)."""
    import warnings

    import unbiased_criteria as uc

    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(float)
    bst = xgb.train({"objective": "binary:hinge", "max_depth": 2, "nthread": 1},
                    xgb.DMatrix(X, y), 3)

    def logistic(y, raw, w):
        p = 1 / (1 + np.exp(-raw))
        return p - y, p * (1 - p)

    with pytest.raises(ValueError, match="binary:hinge.*pass objective="):
        uc.unbiased_importance(bst, X, y, X, y, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # logistic is not the hinge loss the trees were grown with: their later gains say so
        warnings.filterwarnings("ignore", message=".*splits of the trees after the first")
        uc.unbiased_importance(bst, X[:200], y[:200], X[200:], y[200:],
                               objective=logistic, random_state=0)
