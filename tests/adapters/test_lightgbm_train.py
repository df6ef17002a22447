"""LightGBM training hook: ``lightgbm.train`` is the oracle.

With pruning off and nothing held out, ``train`` must give the model ``lightgbm.train`` gives;
with pruning on, the returned model must predict exactly the loop's running scores, keep only
splits with ``U > threshold`` and stop where a manual evaluation of those scores stops.
"""

from __future__ import annotations

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402
from unbiased_criteria.adapters.lightgbm.training import run_training  # noqa: E402

from unbiased_criteria.model import UnsupportedModelError  # noqa: E402

BASE = dict(
    num_leaves=8, learning_rate=0.2, min_data_in_leaf=5, verbose=-1, num_threads=1,
    deterministic=True,
)
N, N_VALID = 600, 300


def make_data(kind: str, n: int, seed: int):
    """Numeric with NaN, numeric, numeric noise, 6 categories; labels for ``kind``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(n) < 0.1, 0] = np.nan
    X[:, 3] = rng.integers(0, 6, n)
    signal = np.nan_to_num(X[:, 0]) + (X[:, 3] % 2) + 0.5 * X[:, 1]
    noise = rng.normal(size=n)
    if kind == "binary":
        y = (signal + noise > 0.8).astype(np.float64)
    elif kind == "multiclass":
        y = np.digitize(signal + noise, [0.0, 1.0]).astype(np.float64)
    else:
        y = signal + noise
    return X, y, rng.uniform(0.5, 2.0, n)


def params_for(kind: str, **extra) -> dict:
    p = {**BASE, "objective": kind, **extra}
    if kind == "multiclass":
        p["num_class"] = 3
    return p


def datasets(kind: str, *, weights: bool = True, seed: int = 0, init_score=None):
    X, y, w = make_data(kind, N, seed)
    Xv, yv, wv = make_data(kind, N_VALID, seed + 100)
    train = lightgbm.Dataset(X, y, weight=w if weights else None, categorical_feature=[3],
                             init_score=init_score, free_raw_data=False)
    valid = lightgbm.Dataset(Xv, yv, weight=wv if weights else None, reference=train)
    return train, valid, (X, y, w), (Xv, yv, wv)


def run_train(params, train_set, rounds, **kw):
    kw.setdefault("holdout_fraction", 0.2)
    kw.setdefault("random_state", 0)
    return run_training(
        params, train_set, rounds, valid_sets=kw.pop("valid_sets", None),
        valid_names=kw.pop("valid_names", None), feval=kw.pop("feval", None),
        callbacks=kw.pop("callbacks", None), redraw_holdout=kw.pop("redraw_holdout", True),
        prune_threshold=kw.pop("prune_threshold", 0.0), n_draws=1, min_k=5, progress=False,
        **kw,
    )


def n_leaves(booster) -> int:
    return sum(t["num_leaves"] for t in booster.dump_model(num_iteration=-1)["tree_info"])


def assert_evals_equal(a: dict, b: dict):
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].keys() == b[name].keys()
        for metric in a[name]:
            np.testing.assert_allclose(b[name][metric], a[name][metric], rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_no_pruning_no_holdout_is_lightgbm_train(kind):
    params = params_for(kind, metric=["auc", "binary_logloss", "binary_error"] if kind == "binary"
                        else "")
    rounds = 12
    train, valid, (X, _, _), (Xv, _, _) = datasets(kind)
    expected_evals: dict = {}
    expected = lightgbm.train(params, train, rounds, valid_sets=[train, valid],
                              callbacks=[lightgbm.record_evaluation(expected_evals)])
    train, valid, _, _ = datasets(kind)
    evals: dict = {}
    got = adapter.train(params, train, rounds, valid_sets=[train, valid],
                        callbacks=[lightgbm.record_evaluation(evals)], prune_threshold=None,
                        holdout_fraction=0.0)
    assert got.num_trees() == expected.num_trees()
    for data in (X, Xv):
        # the README's figure: equal to LightGBM's own train to 1e-15
        np.testing.assert_allclose(got.predict(data, raw_score=True),
                                   expected.predict(data, raw_score=True), rtol=0, atol=1e-15)
        # the objective survives: predict applies LightGBM's link
        np.testing.assert_allclose(got.predict(data), expected.predict(data), rtol=0, atol=1e-15)
    assert_evals_equal(expected_evals, evals)
    assert list(evals) == ["training", "valid_1"]
    assert got.best_iteration == expected.best_iteration == 0
    assert_evals_equal({k: {m: [v] for m, v in d.items()} for k, d in expected.best_score.items()},
                       {k: {m: [v] for m, v in d.items()} for k, d in got.best_score.items()})
    # the model reads back with its objective and AddBias'd first trees
    read = adapter.read_model(got)
    assert read.objective is not None and read.bias_from_labels
    assert adapter.training_splits(got).empty


def test_early_stopping_from_params_is_lightgbm_train():
    params = params_for("regression", learning_rate=0.5, num_leaves=16, min_data_in_leaf=2,
                        metric=["l2", "l1"], early_stopping_round=3)
    train, valid, _, (Xv, _, _) = datasets("regression", weights=False)
    expected_evals: dict = {}
    expected = lightgbm.train(params, train, 200, valid_sets=[valid], valid_names=["v"],
                              callbacks=[lightgbm.record_evaluation(expected_evals)])
    train, valid, _, _ = datasets("regression", weights=False)
    evals: dict = {}
    got = adapter.train(params, train, 200, valid_sets=[valid], valid_names=["v"],
                        callbacks=[lightgbm.record_evaluation(evals)], prune_threshold=None,
                        holdout_fraction=0.0)
    assert 0 < expected.best_iteration < 200  # it did stop early
    assert got.best_iteration == expected.best_iteration
    assert got.num_trees() == expected.num_trees()
    assert_evals_equal(expected_evals, evals)
    np.testing.assert_allclose(got.predict(Xv), expected.predict(Xv), rtol=0, atol=1e-15)


def test_custom_objective_and_init_scores_are_lightgbm_train():
    """A callable objective (LightGBM 4 style) and Dataset init scores on train and valid."""
    X, y, w = make_data("binary", N, 3)
    Xv, yv, _ = make_data("binary", N_VALID, 4)
    rng = np.random.default_rng(5)
    init, init_v = rng.normal(size=N), rng.normal(size=N_VALID)

    def logloss(preds, data):
        p = 1.0 / (1.0 + np.exp(-preds))
        return (p - data.get_label()) * data.get_weight(), p * (1 - p) * data.get_weight()

    def feval(preds, data):  # raw scores with a custom objective
        p = 1.0 / (1.0 + np.exp(-preds))
        loss = -np.log(np.where(data.get_label() > 0, p, 1 - p))
        return "my_logloss", float(np.mean(loss)), False

    def run(fn):
        train = lightgbm.Dataset(X, y, weight=w, init_score=init, free_raw_data=False)
        valid = lightgbm.Dataset(Xv, yv, init_score=init_v, reference=train)
        evals: dict = {}
        booster = fn({**BASE, "objective": logloss, "metric": "None"}, train, 10,
                     valid_sets=[valid], feval=feval,
                     callbacks=[lightgbm.record_evaluation(evals)])
        return booster, evals

    expected, expected_evals = run(lightgbm.train)
    got, evals = run(lambda *a, **k: adapter.train(*a, prune_threshold=None,
                                                   holdout_fraction=0.0, **k))
    # neither model contains the Dataset's init score
    np.testing.assert_allclose(got.predict(Xv, raw_score=True),
                               expected.predict(Xv, raw_score=True), rtol=0, atol=1e-9)
    assert_evals_equal(expected_evals, evals)
    assert adapter.read_model(got).objective is None  # custom objective, as LightGBM writes it


# --------------------------------------------------------------------------- pruning on


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
def test_model_predicts_the_tracked_scores(kind):
    train, valid, (X, _, _), (Xv, _, _) = datasets(kind, seed=7)
    run = run_train(params_for(kind), train, 15, valid_sets=[valid], valid_names=["v"])
    booster, K = run.booster, 3 if kind == "multiclass" else 1
    assert adapter.training_splits(booster)["kept"].mean() < 1  # something was pruned
    tracked_train = run.result.raw_train
    tracked_valid = np.asarray(run.raw_eval["v"]).reshape(N_VALID, -1)
    np.testing.assert_allclose(booster.predict(X, raw_score=True).reshape(N, K), tracked_train,
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(booster.predict(Xv, raw_score=True).reshape(N_VALID, K),
                               tracked_valid, rtol=0, atol=1e-12)


@pytest.mark.parametrize("threshold", [0.0, 2.0])
def test_no_kept_split_has_u_at_or_below_threshold(threshold):
    train, _, _, _ = datasets("regression", seed=11)
    booster = run_train(params_for("regression", num_leaves=16), train, 15,
                        prune_threshold=threshold).booster
    splits = adapter.training_splits(booster)
    kept = splits[splits["kept"]]
    assert len(kept) > 0 and len(kept) < len(splits)
    assert (kept["unbiased_gain"] > threshold).all()
    assert not splits.loc[splits["unbiased_gain"] <= threshold, "kept"].any()
    # the model holds exactly the kept splits
    per_tree = kept.groupby("tree").size()
    infos = booster.dump_model(num_iteration=-1)["tree_info"]
    assert [t["num_leaves"] - 1 for t in infos] == [int(per_tree.get(i, 0)) for i in
                                                    range(len(infos))]
    # the per-feature report sums U over every scored split, kept or not
    frame = adapter.training_report(booster).to_frame()
    np.testing.assert_allclose(frame["unbiased_gain"].sum(), splits["unbiased_gain"].sum())
    assert frame["splits"].sum() == len(splits)


def test_pure_noise_gives_far_fewer_leaves():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(1000, 5)), rng.normal(size=1000)
    params = params_for("regression", num_leaves=16, learning_rate=0.1, min_data_in_leaf=10)
    plain = lightgbm.train(params, lightgbm.Dataset(X, y), 20)
    pruned = adapter.train(params, lightgbm.Dataset(X, y), 20, random_state=0)
    assert n_leaves(plain) == 20 * 16
    assert n_leaves(pruned) < n_leaves(plain) / 4  # measured: 33 of 320
    # what is left fits the noise far less: raw scores spread a fraction as much
    assert pruned.predict(X).std() < plain.predict(X).std() / 3


def test_early_stopping_picks_the_manual_best_round():
    """Recorded metrics equal the metric of ``predict(num_iteration=i)`` of the same run
    without early stopping, and early stopping picks that metric's best round."""
    params = params_for("binary", num_leaves=16, learning_rate=0.5, min_data_in_leaf=3,
                        metric="binary_logloss")
    train, valid, _, (Xv, yv, wv) = datasets("binary", seed=21)
    evals: dict = {}
    run = run_train(params, train, 100, valid_sets=[train, valid],
                    callbacks=[lightgbm.early_stopping(4, verbose=False),
                               lightgbm.record_evaluation(evals)], random_state=3)
    stopped = run.booster
    recorded = np.array(evals["valid_1"]["binary_logloss"])
    assert stopped.best_iteration < recorded.size < 100  # stopped early, after pruning
    # the loop itself stopped then, not after 100 rounds
    assert len(run.result.trees) == recorded.size
    # the same run, all rounds kept: identical trees up to the stop
    train, _, _, _ = datasets("binary", seed=21)
    full = adapter.train(params, train, recorded.size, random_state=3, holdout_fraction=0.2)
    y32 = yv.astype(np.float32).astype(np.float64)
    w32 = wv.astype(np.float32).astype(np.float64)
    manual = []
    for i in range(1, recorded.size + 1):
        p = np.clip(full.predict(Xv, num_iteration=i), 1e-15, 1 - 1e-15)
        manual.append(np.sum(-w32 * np.log(np.where(y32 > 0, p, 1 - p))) / np.sum(w32))
    np.testing.assert_allclose(recorded, manual, rtol=1e-10)
    assert stopped.best_iteration == int(np.argmin(manual)) + 1
    assert stopped.num_trees() == stopped.best_iteration
    np.testing.assert_allclose(stopped.predict(Xv), full.predict(Xv, num_iteration=stopped.
                                                                  best_iteration), atol=1e-12)
    assert stopped.best_score["valid_1"]["binary_logloss"] == pytest.approx(min(manual))
    splits = adapter.training_splits(stopped)
    assert splits["iteration"].max() < stopped.best_iteration


def test_feval_sees_lightgbm_arguments_and_log_evaluation_runs(capsys):
    params = params_for("multiclass", metric="multi_error")
    train, valid, _, (Xv, yv, _) = datasets("multiclass", seed=31)
    seen = []

    def feval(preds, data):
        seen.append((preds.shape, data is valid))
        hit = preds.argmax(axis=1) == data.get_label()
        return [("top1", float(np.average(hit, weights=data.get_weight())), True)]

    evals: dict = {}
    adapter.train(params, train, 4, valid_sets=[valid], valid_names=["hold"], feval=feval,
                  callbacks=[lightgbm.log_evaluation(2), lightgbm.record_evaluation(evals)])
    assert seen == [((N_VALID, 3), True)] * 4  # probabilities (n, K) and the set's Dataset
    assert list(evals["hold"]) == ["multi_error", "top1"]
    np.testing.assert_allclose(np.array(evals["hold"]["multi_error"]) + evals["hold"]["top1"],
                               1.0)
    logged = capsys.readouterr().out
    lines = logged.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["[2]", "[4]"]
    assert lines[1].split("\t")[1:] == [
        f"hold's multi_error: {evals['hold']['multi_error'][3]:g}",
        f"hold's top1: {evals['hold']['top1'][3]:g}",
    ]


# --------------------------------------------------------------------------- bad input


def test_bad_input_gives_one_clear_error():
    X, y, _ = make_data("regression", 100, 0)
    with pytest.raises(ValueError, match="unknown objective 'regresion'"):
        adapter.train({"objective": "regresion"}, lightgbm.Dataset(X, y))
    with pytest.raises(UnsupportedModelError, match="renews its leaf values"):
        adapter.train({"objective": "quantile"}, lightgbm.Dataset(X, y))
    for boosting in ("rf", "dart"):  # a trained forest is pruned post-hoc instead
        with pytest.raises(UnsupportedModelError, match=f"boosting='{boosting}' is not "
                                                        "supported by the training hook"):
            adapter.train({**BASE, "boosting": boosting}, lightgbm.Dataset(X, y))
    # a trained DART model cannot be pruned either: its message does not say it can
    with pytest.raises(UnsupportedModelError, match="nor are trained DART models") as error:
        adapter.train({**BASE, "boosting": "dart"}, lightgbm.Dataset(X, y))
    assert "prune" not in str(error.value)
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match=r"holdout_fraction must be in \[0, 1\)"):
            adapter.train(BASE, lightgbm.Dataset(X, y), holdout_fraction=bad)
    with pytest.raises(ValueError, match="train_set has no labels"):
        adapter.train(BASE, lightgbm.Dataset(X))
    with pytest.raises(ValueError, match=r"valid_sets\[0\] has no labels"):
        adapter.train(BASE, lightgbm.Dataset(X, y), valid_sets=[lightgbm.Dataset(X)])
    y_nan = y.copy()
    y_nan[3] = np.nan
    with pytest.raises(ValueError, match="train_set's label contains NaN labels"):
        adapter.train(BASE, lightgbm.Dataset(X, y_nan))
    freed = lightgbm.Dataset(X, y).construct()
    with pytest.raises(ValueError, match="no longer holds its raw data"):
        adapter.train(BASE, freed)
    with pytest.raises(ValueError, match="a callback changed lambda_l2 from 0 to 2"):
        adapter.train(BASE, lightgbm.Dataset(X, y), 3,
                      callbacks=[lightgbm.reset_parameter(lambda_l2=[0.0, 2.0, 2.0])])
    # lightgbm.train's own keywords: one error naming each, not Python's unexpected keyword
    model = lightgbm.train(BASE, lightgbm.Dataset(X, y), 2)
    for init in (model, "model.txt"):
        with pytest.raises(ValueError, match=r"init_model \(continued training\)"):
            adapter.train(BASE, lightgbm.Dataset(X, y), 2, init_model=init)
    with pytest.raises(ValueError, match="keep_training_booster=True is not supported"):
        adapter.train(BASE, lightgbm.Dataset(X, y), 2, keep_training_booster=True)
    assert adapter.train(BASE, lightgbm.Dataset(X, y), 2, keep_training_booster=False,
                         init_model=None).num_trees() == 2


def _walk(node, leaves, internal):
    if "leaf_value" in node:
        leaves.append(node["leaf_value"])
        return
    internal.append(node["internal_value"])
    _walk(node["left_child"], leaves, internal)
    _walk(node["right_child"], leaves, internal)


def test_reset_parameter_learning_rates_as_in_lightgbm_train():
    """``lightgbm.reset_parameter`` runs before each round on the growing Booster, as in
    ``lightgbm.train``: with pruning off the hook is ``lightgbm.train`` with the schedule; with
    pruning, a node collapsed in a round takes LightGBM's own value of that node as a leaf
    (its ``internal_value``, shrunk by that round's rate). The hook refused the callback."""
    train, valid, _, (Xv, _, _) = datasets("regression")
    rates = [0.5, 0.05, 0.3, 0.02, 0.4, 0.1, 0.25, 0.05]
    params = params_for("regression", learning_rate=0.2)
    ref = lightgbm.train(params, train, 8,
                         callbacks=[lightgbm.reset_parameter(learning_rate=rates)])
    off = adapter.train(params, train, 8, prune_threshold=None, holdout_fraction=0.0,
                        callbacks=[lightgbm.reset_parameter(learning_rate=rates)])
    np.testing.assert_allclose(off.predict(Xv), ref.predict(Xv), rtol=0, atol=1e-12)

    grown = []

    def keep_grown(env):  # the growing Booster's tree of this round, before pruning
        grown.append(env.model.dump_model(start_iteration=env.iteration,
                                          num_iteration=1)["tree_info"][0])

    pruned = adapter.train(params, train, 8, random_state=0,
                           callbacks=[lightgbm.reset_parameter(learning_rate=rates), keep_grown])
    trees = pruned.dump_model()["tree_info"]
    collapsed = 0
    for r in range(1, 8):  # round 0's values also hold the init score
        assert trees[r]["shrinkage"] == pytest.approx(rates[r])
        leaves, internal, mine, _ = [], [], [], []
        _walk(grown[r]["tree_structure"], leaves, internal)
        _walk(trees[r]["tree_structure"], mine, [])
        new = [v for v in mine if not np.isclose(leaves, v, rtol=1e-12, atol=0).any()]
        for v in new:  # LightGBM prints internal values to 6 significant digits
            assert np.isclose(internal, v, rtol=1e-5, atol=1e-9).any(), (r, v, internal)
        collapsed += len(new)
    assert collapsed > 0


# ------------------------------------------------------------------- balanced bagging


def _raw(booster, X):
    return booster.predict(X, raw_score=True)


@pytest.mark.parametrize("bagging", [
    {"pos_bagging_fraction": 0.5, "neg_bagging_fraction": 0.8, "bagging_freq": 1},
    {"pos_subsample": 0.5, "subsample_freq": 2},  # aliases
    {"neg_sub_row": 0.6, "bagging_freq": 1, "bagging_fraction": 0.9},
])
def test_balanced_bagging_is_refused_where_lightgbm_applies_it(bagging):
    """LightGBM bags positive and negative rows at their own rates only with its binary
    objective, which counts the positive rows; the hook grows on a Booster with objective
    'none', where LightGBM silently bagged no row (pruning off: raw scores off by 1.3, the
    model of lightgbm.train without them). It is one error naming them."""
    _, _, (X, y, w), _ = datasets("binary")
    params = params_for("binary", seed=1, **bagging)
    host = lightgbm.train(params, lightgbm.Dataset(X, y, weight=w), 10)
    plain = lightgbm.train({k: v for k, v in params.items() if k not in bagging},
                           lightgbm.Dataset(X, y, weight=w), 10)
    assert np.abs(_raw(host, X) - _raw(plain, X)).max() > 0.1  # LightGBM applies them
    given = next(k for k in bagging if k.startswith(("pos", "neg")))
    main = {"pos": "pos_bagging_fraction", "neg": "neg_bagging_fraction"}[given[:3]]
    for kw in ({"prune_threshold": None, "holdout_fraction": 0.0}, {}):
        with pytest.raises(UnsupportedModelError, match=rf"balanced bagging \({main}=.*"
                           r"binary objective.*use bagging_fraction"):
            adapter.train(params, lightgbm.Dataset(X, y, weight=w), 10, **kw)


@pytest.mark.parametrize("kind, extra", [
    ("regression", {"bagging_freq": 1}),  # not binary: LightGBM ignores them
    ("cross_entropy", {"bagging_freq": 1}),
    ("binary", {"bagging_freq": 0}),  # bagging off
    ("binary", {"bagging_freq": 1, "data_sample_strategy": "goss"}),
    ("binary/custom", {"bagging_freq": 1}),  # objective 'none' in lightgbm.train too
    ("binary/no positive", {"bagging_freq": 1}),  # LightGBM's binary counts none
])
def test_balanced_bagging_lightgbm_ignores_is_lightgbm_train(kind, extra):
    """Where LightGBM itself does not apply balanced bagging, the hook takes the parameters
    and is lightgbm.train (pruning off, nothing held out)."""
    objective, _, case = kind.partition("/")
    X, y, w = make_data("binary", N, 0)
    if case == "no positive":
        y = np.zeros_like(y)
    params = params_for(objective, pos_bagging_fraction=0.5, neg_bagging_fraction=0.7,
                        seed=1, **extra)
    if case == "custom":
        def logloss(preds, data):
            p = 1 / (1 + np.exp(-preds))
            return p - data.get_label(), p * (1 - p)
        params["objective"] = logloss
    host = lightgbm.train(dict(params), lightgbm.Dataset(X, y, weight=w), 10)
    got = adapter.train(dict(params), lightgbm.Dataset(X, y, weight=w), 10,
                        prune_threshold=None, holdout_fraction=0.0)
    np.testing.assert_allclose(_raw(got, X), _raw(host, X), rtol=0, atol=1e-12)


def test_balanced_bagging_set_by_a_callback_is_refused():
    """``lightgbm.reset_parameter`` can switch balanced bagging on mid-run, which LightGBM's
    binary objective then may apply (whether it does varies from run to run in LightGBM 4.7:
    it compares the new values with a configuration it has already replaced): the same error,
    saying so."""
    _, _, (X, y, w), _ = datasets("binary")
    params = params_for("binary", seed=1, bagging_freq=1)
    schedule = {"pos_bagging_fraction": [1.0, 1.0, 0.3, 0.3, 0.3]}
    with pytest.raises(UnsupportedModelError, match=r"balanced bagging "
                       r"\(pos_bagging_fraction=0.3\) set by a callback"):
        adapter.train(params, lightgbm.Dataset(X, y, weight=w), 5, prune_threshold=None,
                      holdout_fraction=0.0, callbacks=[lightgbm.reset_parameter(**schedule)])


def test_estimator_refuses_balanced_bagging():
    """The estimators pass the parameters through the hook: the same error from ``fit``
    (``UnbiasedLGBMClassifier`` gave LGBMClassifier's model without bagging, probabilities
    off by 0.27)."""
    X, y, _ = make_data("binary", N, 0)
    kw = dict(n_estimators=5, num_leaves=8, verbose=-1, n_jobs=1, subsample_freq=1,
              pos_bagging_fraction=0.5)
    with pytest.raises(UnsupportedModelError, match=r"balanced bagging "
                       r"\(pos_bagging_fraction=0.5\)"):
        adapter.UnbiasedLGBMClassifier(**kw, holdout_fraction=0.0, prune_threshold=None).fit(X, y)


@pytest.mark.parametrize("names", [["dir\\temp", "a\\u0041", "x\\d", "k\\"],
                                   ["a\tb", "c", "d", "k"]])
def test_feature_names_with_backslashes_are_lightgbms(names):
    """LightGBM writes feature names into its dump JSON unescaped: the hook reads the names
    of each grown iteration from that dump; they are LightGBM's own (Booster.feature_name()),
    in the written model and its training report, whatever backslashes they hold (a tab or
    "aA" before, or no model: invalid JSON)."""
    import pandas as pd

    X, y, _ = make_data("regression", N, 0)
    frame = pd.DataFrame(X, columns=names)
    train = lightgbm.Dataset(frame, y, categorical_feature=[names[3]])
    booster = adapter.train(BASE | {"objective": "regression"}, train, 5, random_state=0,
                            holdout_fraction=0.2, progress=False)
    own = lightgbm.train(BASE | {"objective": "regression"}, lightgbm.Dataset(frame, y), 1)
    assert booster.feature_name() == own.feature_name() == names
    assert list(adapter.training_report(booster).to_frame().index) == names
