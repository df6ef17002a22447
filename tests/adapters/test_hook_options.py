"""Options through every entry point (hooks, estimators, importance, prune): one check, one
message; the default seed rule; LightGBM's min_sum_hessian_in_leaf with held-out rows."""

import re
import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor  # noqa: E402
from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.options import GainOptions, host_seed_int  # noqa: E402

N = 300


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 4))
    y = X[:, 0] + 0.5 * rng.normal(size=N)
    return X, y


def message_of(**option):
    with pytest.raises(ValueError) as err:
        GainOptions(**option)
    return str(err.value)


BAD = [
    {"n_draws": 0}, {"min_k": True}, {"n_blocks": -1}, {"random_state": -3},
    {"prune_threshold": float("nan")}, {"holdout_fraction": 1.0}, {"redraw_holdout": "no"},
]
LGB_PARAMS = {"objective": "regression", "verbose": -1, "num_leaves": 4, "num_threads": 1}
XGB_PARAMS = {"objective": "reg:squarederror", "max_depth": 2, "nthread": 1}


def entry_points(X, y):
    """Each entry point as ``f(**option)``."""
    return {
        "lightgbm.train": lambda **o: uc.adapters.lightgbm.train(
            LGB_PARAMS, lgb.Dataset(X, y), 2, **o),
        "xgboost.train": lambda **o: uc.adapters.xgboost.train(
            XGB_PARAMS, xgb.DMatrix(X, y), 2, verbose_eval=False, **o),
        "UnbiasedLGBMRegressor": lambda **o: UnbiasedLGBMRegressor(
            n_estimators=2, verbose=-1, **o).fit(X, y),
        "UnbiasedXGBRegressor": lambda **o: UnbiasedXGBRegressor(
            n_estimators=2, **o).fit(X, y),
    }


@pytest.mark.parametrize("option", BAD, ids=lambda o: next(iter(o)))
def test_a_bad_option_gives_the_same_message_everywhere(data, option):
    X, y = data
    expected = message_of(**option)
    name, value = next(iter(option.items()))
    calls = entry_points(X, y)
    model = lgb.train(LGB_PARAMS, lgb.Dataset(X, y), 2)
    if name in ("n_draws", "min_k", "n_blocks", "random_state"):
        calls["unbiased_importance"] = lambda **o: uc.unbiased_importance(
            model, X, y, X, y, **o)
    if name in ("n_draws", "min_k", "random_state"):
        calls["prune"] = lambda **o: uc.prune(model, X, y, X, y, **o)
    for call in calls.values():
        with pytest.raises(ValueError, match="^" + re.escape(expected) + "$"):
            call(**option)


@pytest.mark.parametrize("cls", [UnbiasedLGBMRegressor, UnbiasedXGBRegressor])
def test_every_seed_the_message_offers_fits_the_estimators(data, cls):
    # a SeedSequence passed the library's check and then failed inside the host
    X, y = data
    kw = {"n_estimators": 4, "n_jobs": 1, "subsample": 0.5}  # the host's seed in use
    kw.update({"subsample_freq": 1, "verbose": -1} if cls is UnbiasedLGBMRegressor else {})

    def fit(seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls(random_state=seed, **kw).fit(X, y)

    for seed in (None, 3, np.random.SeedSequence(3), np.random.default_rng(3),
                 np.random.RandomState(3)):
        fit(seed)
    seq = np.random.SeedSequence(11)
    state = (seq.entropy, seq.spawn_key, seq.n_children_spawned)
    est = fit(seq)
    assert est.random_state is seq  # the parameter as given (clone, get_params)
    assert (seq.entropy, seq.spawn_key, seq.n_children_spawned) == state
    # the host gets the sequence's integer seed: the same model as that int's, every fit
    again = fit(host_seed_int(np.random.SeedSequence(11)))
    np.testing.assert_array_equal(est.predict(X), again.predict(X))
    np.testing.assert_array_equal(est.feature_importances_, again.feature_importances_)
    np.testing.assert_array_equal(fit(np.random.SeedSequence(11)).predict(X), est.predict(X))
    assert not np.array_equal(fit(np.random.SeedSequence(12)).predict(X), est.predict(X))


def test_refit_leaves_and_progress_take_bools_only(data, capsys):
    # refit_leaves="False" (truthy) refitted every leaf; progress="no" showed the bar
    X, y = data
    model = lgb.train(LGB_PARAMS, lgb.Dataset(X, y), 5)
    rng = np.random.default_rng(1)
    Xv = rng.normal(size=X.shape)
    yv = Xv[:, 0] + 0.5 * rng.normal(size=N)
    # gradients from rows the model was not fit on: refitting changes every leaf (on its
    # own rows it gives back the host's leaves)
    X2 = rng.normal(size=X.shape)
    y2 = X2[:, 0] + 0.5 * rng.normal(size=N)
    kw = {"random_state": 0, "n_jobs": 1}
    for bad in ("False", 0, None, np.array([True])):
        with pytest.raises(ValueError, match=re.escape(
                f"refit_leaves must be True or False, got {bad!r}")):
            uc.prune(model, X2, y2, Xv, yv, refit_leaves=bad, **kw)
    calls = {
        **entry_points(X, y),
        "unbiased_importance": lambda **o: uc.unbiased_importance(
            model, X, y, Xv, yv, **kw, **o),
        "prune": lambda **o: uc.prune(model, X2, y2, Xv, yv, **kw, **o),
        "cross_fitted_importance": lambda **o: uc.cross_fitted_importance(
            lgb.LGBMRegressor(n_estimators=2, verbose=-1), X, y, cv=2, **o),
    }
    calls = {k: v for k, v in calls.items() if not k.startswith("Unbiased")}  # no progress
    for call in calls.values():
        for bad in ("no", 1, None):
            with pytest.raises(ValueError, match="^" + re.escape(
                    f"progress must be True or False, got {bad!r}") + "$"):
                call(progress=bad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(progress=np.False_)  # numpy's bools are bools
    assert capsys.readouterr().err == ""  # no bar was shown
    # numpy's bools are taken for what they say
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refit = uc.prune(model, X2, y2, Xv, yv, refit_leaves=True, **kw).predict(Xv)
        kept = uc.prune(model, X2, y2, Xv, yv, refit_leaves=False, **kw).predict(Xv)
        np.testing.assert_array_equal(
            uc.prune(model, X2, y2, Xv, yv, refit_leaves=np.True_, **kw).predict(Xv), refit)
        np.testing.assert_array_equal(
            uc.prune(model, X2, y2, Xv, yv, refit_leaves=np.False_, **kw).predict(Xv), kept)
    assert not np.array_equal(refit, kept)


def test_prune_refuses_a_nan_threshold_by_its_name(data):
    X, y = data
    model = lgb.train(LGB_PARAMS, lgb.Dataset(X, y), 2)
    hook = message_of(prune_threshold=float("nan"))
    with pytest.raises(ValueError) as err:
        uc.prune(model, X, y, X, y, threshold=float("nan"))
    # the same message by prune()'s name, without the hooks' None ("no pruning")
    assert str(err.value) == hook.replace("prune_threshold", "threshold").replace(
        " or None (no pruning)", "")


def xgb_model_text(booster):
    return bytes(booster.save_raw("json"))


def test_xgboost_hook_default_seed_repeats_and_follows_the_params_seed(data):
    X, y = data

    def run(params, **kw):
        return xgb_model_text(uc.adapters.xgboost.train(
            {**XGB_PARAMS, "max_depth": 4, **params}, xgb.DMatrix(X, y), 8,
            verbose_eval=False, **kw))

    default = run({})
    assert run({}) == default  # was a fresh seed every run
    assert run({}, random_state=0) == default
    assert run({"seed": 7}) == run({"seed": 7}, random_state=7) != default


def test_lightgbm_hook_default_seed_follows_the_params_seed(data):
    X, y = data

    def run(params, **kw):
        return uc.adapters.lightgbm.train(
            {**LGB_PARAMS, "num_leaves": 8, "min_data_in_leaf": 5, **params},
            lgb.Dataset(X, y), 8, **kw).model_to_string()

    default = run({})
    assert run({}, random_state=0) == default
    assert run({"seed": 7}) == run({"seed": 7}, random_state=7) != default


def test_xgboost_estimator_default_seed_repeats(data):
    X, y = data
    a = UnbiasedXGBRegressor(n_estimators=8, max_depth=4, n_jobs=1).fit(X, y).predict(X)
    b = UnbiasedXGBRegressor(n_estimators=8, max_depth=4, n_jobs=1).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)


# min_sum_hessian_in_leaf=0 with held-out rows: LightGBM counts rows from hessians, the held-out
# rows have none, and this configuration made it abort (Check failed: left_count > 0)
CRASHING = {"objective": "binary", "min_sum_hessian_in_leaf": 0, "min_data_in_leaf": 1,
            "num_leaves": 255, "verbose": -1}


def binary_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(float)
    return X, y


def test_zero_min_hessian_with_held_out_rows_is_refused_clearly():
    X, y = binary_data()
    lgb.train(CRASHING, lgb.Dataset(X, y), 20)  # plain LightGBM trains
    with pytest.raises(ValueError, match=r"min_sum_hessian_in_leaf .* is 0: with held-out "
                                         r"rows .* set it > 0"):
        uc.adapters.lightgbm.train(CRASHING, lgb.Dataset(X, y), 20)
    with pytest.raises(ValueError, match="min_sum_hessian_in_leaf"):
        UnbiasedLGBMRegressor(min_child_weight=0.0, verbose=-1).fit(X, y)
    # without held-out rows it is LightGBM's model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = uc.adapters.lightgbm.train(CRASHING, lgb.Dataset(X, y), 5, holdout_fraction=0,
                                          prune_threshold=None)
    host = lgb.train(CRASHING, lgb.Dataset(X, y), 5)
    np.testing.assert_allclose(ours.predict(X, raw_score=True), host.predict(X, raw_score=True),
                               rtol=1e-12, atol=1e-12)
    # a small positive value trains
    uc.adapters.lightgbm.train({**CRASHING, "min_sum_hessian_in_leaf": 1e-10},
                               lgb.Dataset(X, y), 20)


@pytest.mark.parametrize("entry", ["lightgbm.train", "xgboost.train", "UnbiasedLGBMRegressor",
                                   "UnbiasedXGBRegressor"])
def test_pruning_with_nothing_held_out_is_warned_the_same_everywhere(data, entry):
    fit = entry_points(*data)[entry]
    with pytest.warns(UserWarning, match="holdout_fraction=0 leaves no held-out rows") as seen:
        fit(holdout_fraction=0.0)
    assert sum("holdout_fraction=0" in str(w.message) for w in seen) == 1
    with warnings.catch_warnings():  # asked for on purpose: the host's own model, no warning
        warnings.simplefilter("error")
        fit(holdout_fraction=0.0, prune_threshold=None)


def _weighted_fits(X, y, w):
    """Every way the estimators take weights, by the argument name their errors give."""
    return {
        "sample_weight": [
            lambda: UnbiasedLGBMRegressor(n_estimators=2, verbose=-1).fit(X, y, w),
            lambda: UnbiasedXGBRegressor(n_estimators=2).fit(X, y, sample_weight=w)],
        r"eval_sample_weight\[1\]": [lambda: UnbiasedLGBMRegressor(n_estimators=2, verbose=-1)
                                     .fit(X, y, eval_set=[(X, y)] * 2,
                                          eval_sample_weight=[None, w])],
        r"sample_weight_eval_set\[0\]": [lambda: UnbiasedXGBRegressor(n_estimators=2).fit(
            X, y, eval_set=[(X, y)], sample_weight_eval_set=[w], verbose=False)],
    }


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf, "short"],
                         ids=["negative", "nan", "inf", "short"])
def test_the_estimators_refuse_bad_sample_weights_by_their_names(data, bad):
    """XGBoost itself fails in C++ ("Check failed: valid", or "h_weights.size() ==
    batch.Size()" for weights of another length, a stack trace), LightGBM names its Dataset:
    the estimators name fit's own arguments, before the host sees them; the weights' count
    is checked against X's and each eval_set X's rows."""
    X, y = data
    if bad == "short":
        w, reason = np.ones(N - 1), f"has {N - 1} weights but the data has {N} rows"
    else:
        w, reason = np.ones(N), "must be finite and non-negative"
        w[7] = bad
    for name, calls in _weighted_fits(X, y, w).items():
        for call in calls:
            with pytest.raises(ValueError, match=f"^{name} {reason}$"):
                call()


def test_the_xgboost_classifier_names_missing_labels_and_empty_y(data):
    from unbiased_criteria.adapters.xgboost import UnbiasedXGBClassifier

    X, _ = data
    y = np.where(X[:, 0] > 0, "a", "b").astype(object)
    y[[3, 9]] = None
    with pytest.raises(ValueError, match=r"^y contains 2 missing label\(s\) \(None or NaN\)"):
        UnbiasedXGBClassifier(n_estimators=2).fit(X, y)
    y_eval = np.where(X[:, 0] > 0, "a", "b").astype(object)
    y_eval[5] = None  # an eval label numpy cannot order among the classes
    with pytest.raises(ValueError, match=r"^eval_set\[0\] contains 1 missing label\(s\)"):
        UnbiasedXGBClassifier(n_estimators=2).fit(
            X, np.where(X[:, 0] > 0, "a", "b"), eval_set=[(X, y_eval)], verbose=False)
    with pytest.raises(ValueError, match="^y has no rows"):
        UnbiasedXGBClassifier(n_estimators=2).fit(X[:0], y[:0])
    with pytest.raises(ValueError, match=r"have 1 class \(\['a'\]\)"):
        UnbiasedXGBClassifier(n_estimators=2).fit(X, np.full(N, "a"))


def test_the_estimators_errors_name_fits_arguments(data):
    """The training hook's checks named its own arguments (dtrain, evals[0]
    ('validation_0'), valid_sets[0]) where the user passed y and eval_set to fit."""
    X, y = data
    with pytest.raises(ValueError, match="^y must be non-negative for poisson$"):
        UnbiasedXGBRegressor(n_estimators=2, objective="count:poisson").fit(X, y - 10)
    with pytest.raises(ValueError, match=r"^eval_set\[0\] labels must be non-negative"):
        UnbiasedXGBRegressor(n_estimators=2, objective="count:poisson").fit(
            X, np.abs(y), eval_set=[(X, y - 10)], verbose=False)
    bad = y.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match=r"^eval_set\[0\]'s label"):
        UnbiasedLGBMRegressor(n_estimators=2, verbose=-1).fit(X, y, eval_set=[(X, bad)])


def test_eval_sets_of_one_name_are_refused(data):
    """The hooks keep each evaluation set's results by name: two sets named alike kept the
    last one's only (early stopping then watched one set, where the host watches both)."""
    X, y = data
    with pytest.raises(ValueError, match=r"valid_names: each set needs its own name, got "
                                         r"\['v'\] more than once"):
        uc.adapters.lightgbm.train({"verbose": -1}, lgb.Dataset(X, y), 2,
                                   valid_sets=[lgb.Dataset(X, y), lgb.Dataset(X, y)],
                                   valid_names=["v", "v"])
    d = xgb.DMatrix(X, y)
    with pytest.raises(ValueError, match=r"evals: each set needs its own name, got \['v'\]"):
        uc.adapters.xgboost.train({"nthread": 1}, d, 2, evals=[(d, "v"), (d, "v")])
