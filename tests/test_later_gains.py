"""The gains of every tree after the first iteration are held to the model's own (split_gain /
loss_chg): where the scores replayed from the trees are not those the trees were grown from
(DART's dropout, a model continued from a DART model, a DART dump that lost weight_drop),
importance warns and pruning refuses; models whose replay is their training pass silently,
pruned or not. Oracles: the hosts' own stored gains and predictions."""

import json
import warnings

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

import unbiased_criteria as uc
from unbiased_criteria.model import UnsupportedModelError

LATER = "misses the model's own gains at .* splits of the trees after the first iteration"


def make(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    return X, X[:, 0] + 0.5 * X[:, 1] ** 2 + r.normal(size=n)


X, y = make(3000, 0)
Xv, yv = make(3000, 1)
LGB = dict(objective="regression", learning_rate=0.1, num_leaves=8, verbose=-1, num_threads=1)
XGB = dict(objective="reg:squarederror", eta=0.1, max_depth=3, nthread=1)


def xgb_dump_params(bst, **extra):
    config = json.loads(bst.save_config())["learner"]["learner_model_param"]
    return {"objective": "reg:squarederror", "base_score": float(config["base_score"].strip("[]")),
            "eta": 0.1, "lambda": 1.0, **extra}


@pytest.fixture(scope="module")
def xgb_dart():
    bst = xgb.train({**XGB, "booster": "dart", "rate_drop": 0.3}, xgb.DMatrix(X, y), 20)
    return bst.get_dump(dump_format="json", with_stats=True), xgb_dump_params(bst)


@pytest.fixture(scope="module")
def lgb_dart():
    return lgb.train({**LGB, "boosting": "dart", "drop_rate": 0.3}, lgb.Dataset(X, y), 15)


def cases(xgb_dart, lgb_dart):
    dump, params = xgb_dart
    continued = lgb.train(LGB, lgb.Dataset(X, y), 5, init_model=lgb_dart)
    return [(dump, params), (lgb_dart.dump_model(), {"lambda_l2": 0.0}), (continued, None)]


def test_a_dump_whose_reader_assumed_a_default_is_still_checked():
    """A binary LightGBM DART dump was pruned silently: its reader's note that the dump does
    not store scale_pos_weight (a default assumed, which the first iteration's gains check)
    switched off the later trees' check, as if it explained their gains."""
    yb, yvb = (y > np.median(y)).astype(float), (yv > np.median(yv)).astype(float)
    dart = lgb.train({**LGB, "objective": "binary", "boosting": "dart", "drop_rate": 0.3},
                     lgb.Dataset(X, yb), 15)
    with pytest.raises(UnsupportedModelError, match=LATER + r".*pruning .* is refused"), \
            pytest.warns(UserWarning, match="does not store scale_pos_weight"):
        uc.prune(dart.dump_model(), X, yb, Xv, yvb, host_params={"lambda_l2": 0.0})
    with warnings.catch_warnings():  # the same model grown as gbdt: no more than the note
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "the dump does not store scale_pos_weight")
        gbdt = lgb.train({**LGB, "objective": "binary"}, lgb.Dataset(X, yb), 15)
        uc.prune(gbdt.dump_model(), X, yb, Xv, yvb, host_params={"lambda_l2": 0.0})


def test_dart_trees_that_do_not_come_as_a_dart_model_are_warned_of_and_not_pruned(
        xgb_dart, lgb_dart):
    """An XGBoost DART dump (get_dump leaves out weight_drop), a LightGBM DART dump_model()
    and a gbdt model continued from a DART one were scored and pruned without a word, their
    biased_gain off the hosts' own by a median ~50%: the first iteration, the only one checked,
    drops nothing."""
    for model, params in cases(xgb_dart, lgb_dart):
        with pytest.warns(UserWarning, match=LATER + r".*DART"):
            report = uc.unbiased_importance(model, X, y, Xv, yv, host_params=params)
        s = report.splits
        off = (s.biased_gain - s.host_gain).abs() > 1e-2 * s.host_gain.abs()
        assert off[s.tree > 0].mean() > 0.5  # the hosts' gains say the same
        assert not off[s.tree == 0].any()
        with pytest.raises(UnsupportedModelError, match=LATER + r".*pruning .* is refused"):
            uc.prune(model, X, y, Xv, yv, host_params=params)
        # pruning changes the first trees (threshold 1e9 collapses every split): the later
        # trees are still held to the model's gains, at its own scores
        with pytest.raises(UnsupportedModelError, match=LATER):
            uc.prune(model, X, y, Xv, yv, host_params=params, threshold=1e9)


def test_a_dump_said_to_be_dart_or_gblinear_is_refused(xgb_dart):
    dump, params = xgb_dart
    with pytest.raises(UnsupportedModelError, match="DART models cannot be replayed from a "
                                                     "dump: get_dump leaves out"):
        uc.unbiased_importance(dump, X, y, Xv, yv, host_params={**params, "booster": "dart"})
    with pytest.raises(UnsupportedModelError, match="gblinear models have no trees"):
        uc.unbiased_importance(dump, X, y, Xv, yv, host_params={**params, "booster": "gblinear"})
    with pytest.raises(ValueError, match="host_params: booster must be 'gbtree'"):
        uc.unbiased_importance(dump, X, y, Xv, yv, host_params={**params, "booster": "tree"})


def test_gblinear_dumps_get_the_boosters_error(tmp_path):
    """A gblinear get_dump list with host_params was told host_params is for dumps; its JSON
    string was 'no such file'."""
    m = xgb.train({**XGB, "booster": "gblinear"}, xgb.DMatrix(X, y), 3)
    dump = m.get_dump(dump_format="json")
    path = tmp_path / "linear.json"
    m.dump_model(str(path), dump_format="json")
    params = {"objective": "reg:squarederror", "base_score": 0.5}
    for model, kw in [(m, {}), (dump, {"host_params": params}), (dump[0], {}), (dump, {}),
                      (json.loads(dump[0]), {}), (str(path), {}), (path.read_text(), {})]:
        with pytest.raises(UnsupportedModelError, match="gblinear models have no trees to "
                                                        "score"):
            uc.unbiased_importance(model, X, y, Xv, yv, **kw)


def test_models_replayed_as_trained_pass_silently_pruned_or_not():
    """gbdt models of both hosts, as Boosters and dumps: every later tree checked, no
    warning; pruning that changes the first trees still checks the later ones (at the
    model's own scores) and passes; a pruned model keeps its record and is not held to the
    gains its trees were grown with."""
    lgb_model = lgb.train(LGB, lgb.Dataset(X, y), 40)
    bst = xgb.train(XGB, xgb.DMatrix(X, y), 40)
    for model, params in [(lgb_model, None), (lgb_model.dump_model(), {"lambda_l2": 0.0}),
                          (bst, None), (bst.get_dump(dump_format="json", with_stats=True),
                                        xgb_dump_params(bst))]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            uc.unbiased_importance(model, X, y, Xv, yv, host_params=params)
            pruned = uc.prune(model, X, y, Xv, yv, host_params=params, threshold=5.0)
            if params is None:  # a Booster keeps the record of the rows that pruned it
                uc.unbiased_importance(pruned, X, y, *make(3000, 2))
                uc.prune(pruned, X, y, *make(3000, 2), threshold=5.0)


def test_the_check_follows_the_unpruned_scores_exactly():
    """Where pruning changed an early tree, the later trees' gains are rebuilt at the model's
    own scores: with a model whose first tree is pruned, the rebuilt gains match the host's
    to float rounding (a wrong rebuild would miss them and refuse)."""
    from unbiased_criteria.host_gains import _PrunedLaterGains

    bst = xgb.train({**XGB, "max_depth": 4}, xgb.DMatrix(X, y), 30)
    seen = []
    original = _PrunedLaterGains.add

    def spy(self, step, scores):
        original(self, step, scores)
        if self.changed_at is not None and self.parts and self.parts[-1][0] == step.index:
            seen.append(self.parts[-1])

    _PrunedLaterGains.add = spy
    try:
        uc.prune(bst, X, y, Xv, yv, threshold=50.0)
    finally:
        _PrunedLaterGains.add = original
    assert len(seen) >= 10  # rebuilt trees were compared ...
    assert sum(p[1] for p in seen) > 50 and sum(p[2] for p in seen) == 0  # ... and match
    # and so do their hessian sums at the rebuilt scores (index, compared, off, hessians,
    # below, above)
    assert sum(p[3] for p in seen) > 50 and sum(p[4] + p[5] for p in seen) == 0


def test_a_pruned_model_stores_its_own_gains_and_is_read_back_silently():
    """A pruned model saved where its record is lost (LightGBM text, an XGBoost dump) was
    warned of, and pruning it again refused: its later trees kept the gains they were grown
    with, before the trees in front of them were pruned. The writers now store B at the
    pruned model's own scores for those trees. Oracle: XGBoost's refresh updater, which
    recomputes loss_chg at the model's own scores."""
    lgb_model = lgb.train(LGB, lgb.Dataset(X, y), 40)
    bst = xgb.train(XGB, xgb.DMatrix(X, y), 40)
    X2, y2 = make(3000, 2)
    for model in (lgb_model, bst):
        pruned = uc.prune(model, X, y, Xv, yv, threshold=5.0)
        if isinstance(model, lgb.Booster):
            lost, params = lgb.Booster(model_str=pruned.model_to_string()), None
        else:
            lost = pruned.get_dump(dump_format="json", with_stats=True)
            params = xgb_dump_params(bst)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            uc.unbiased_importance(lost, X, y, X2, y2, host_params=params)
            uc.prune(lost, X, y, X2, y2, host_params=params, threshold=5.0)
    refreshed = xgb.train({**XGB, "process_type": "update", "updater": "refresh",
                           "refresh_leaf": False}, xgb.DMatrix(X, y), 40, xgb_model=pruned)

    def gains(booster):
        trees = [json.loads(t) for t in booster.get_dump(dump_format="json", with_stats=True)]
        out = []
        for tree in trees:
            stack = [tree]
            while stack:
                node = stack.pop()
                if "children" in node:
                    out.append(node["gain"])
                    stack.extend(node["children"])
        return np.array(out)

    ours, host = gains(pruned), gains(refreshed)
    assert ours.size == host.size > 50
    np.testing.assert_allclose(ours, host, rtol=2e-3, atol=1e-3 * np.abs(host).max())
    assert not np.allclose(gains(bst)[:ours.size], ours)  # the gains did change


def test_a_hook_model_whose_record_is_lost_is_pruned_as_the_hook_model(tmp_path):
    """A model the training hook grew, its record lost (saved with the host's save_model and
    loaded, a LightGBM hook Booster deep-copied), was refused by prune as DART / edited trees,
    the hook never named: the hook pruned the first iteration to stumps (nothing to check),
    and the later trees' stored gains are those of each round's fit rows. Their stored
    hessian sums fall short of the training rows' at every node, which says so: a warning
    naming the hook, and the pruning is that of the model that keeps its record (oracle: the
    same prune of the object the hook returned)."""
    import copy

    from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMRegressor
    from unbiased_criteria.adapters.xgboost import UnbiasedXGBRegressor

    from unbiased_criteria.datasets import paper_example

    Xp, yp = paper_example(2000, random_state=0)
    Xq, yq = paper_example(1000, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lgb_est = UnbiasedLGBMRegressor(n_estimators=20, verbose=-1, n_jobs=1).fit(Xp, yp)
        xgb_est = UnbiasedXGBRegressor(n_estimators=20, n_jobs=1,
                                       enable_categorical=True).fit(Xp, yp)
        hook = uc.adapters.lightgbm.train({"objective": "regression", "verbose": -1,
                                           "num_threads": 1}, lgb.Dataset(Xp, yp), 20)
    lgb_est.booster_.save_model(tmp_path / "hook.txt")
    xgb_est.get_booster().save_model(tmp_path / "hook.json")
    dq = xgb.DMatrix(Xq, enable_categorical=True)
    for live, lost, margin in [
            (lgb_est, str(tmp_path / "hook.txt"), lambda m: m.predict(Xq, raw_score=True)),
            (xgb_est, str(tmp_path / "hook.json"),
             lambda m: (m.get_booster() if isinstance(m, xgb.XGBModel) else m).predict(
                 dq, output_margin=True)),
            (hook, copy.deepcopy(hook), lambda m: m.predict(Xq, raw_score=True))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the record's: held-out rows
            own = uc.prune(live, Xp, yp, Xq, yq, random_state=0)
        with pytest.warns(UserWarning, match="training hook grew with held-out rows") as w:
            again = uc.prune(lost, Xp, yp, Xq, yq, random_state=0)
        assert not any("DART" in str(m.message) for m in w)
        np.testing.assert_array_equal(margin(again), margin(own))
        with pytest.warns(UserWarning, match="training hook grew with held-out rows"):
            uc.unbiased_importance(lost, Xp, yp, Xq, yq, random_state=0)


def test_dart_is_still_refused_and_told_from_the_hook(lgb_dart):
    """The hessian sums of DART trees do not fall short of the rows' at nearly every node
    (squared error: equal), so DART stays refused, its message saying why it is not the
    hook's held-out rows."""
    with pytest.raises(UnsupportedModelError, match=LATER) as info:
        uc.prune(lgb_dart.dump_model(), X, y, Xv, yv, host_params={"lambda_l2": 0.0})
    assert "Not a model the training hook grew" in str(info.value)


@pytest.mark.parametrize("offset", [1e3, 1e5])
def test_a_pruning_move_beside_a_large_init_score_is_a_change(offset):
    """Labels around 1000 with a spread of 1: the first tree holds the init score, and
    pruning's moves of its leaves (about 0.08) were taken for a refit's rounding (1e-4 of
    the leaves' size), so the later trees were held to the model's gains at the pruned
    scores and prune refused the model as DART."""
    r = np.random.default_rng(3)
    Xo, Xvo = r.normal(size=(1500, 6)), r.normal(size=(1500, 6))
    yo = 0.8 * Xo[:, 0] + r.normal(size=1500) + offset
    yvo = 0.8 * Xvo[:, 0] + r.normal(size=1500) + offset
    m = lgb.train({**LGB, "num_leaves": 15}, lgb.Dataset(Xo, yo), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(m, Xo, yo, Xvo, yvo, random_state=0)
    assert pruned.num_trees() == 30
    assert np.abs(pruned.predict(Xvo) - m.predict(Xvo)).max() > 1e-2  # it did prune


def test_the_unpruned_scores_are_summed_as_the_host_summed_them():
    """XGBoost's float32 margins near 1e4: the unpruned scores were rebuilt as the pruned
    ones plus what pruning moved, which rounds otherwise than XGBoost's own sums, and late
    trees' small gains missed by more than 1% (prune refused the model as DART)."""
    r = np.random.default_rng(4)
    Xo, Xvo = r.normal(size=(1500, 6)), r.normal(size=(1500, 6))
    yo = 0.8 * Xo[:, 0] + r.normal(size=1500) + 1e4
    yvo = 0.8 * Xvo[:, 0] + r.normal(size=1500) + 1e4
    m = xgb.train({"nthread": 1, "max_depth": 4}, xgb.DMatrix(Xo, yo), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(m, Xo, yo, Xvo, yvo, random_state=0)
    # the gains it stores for the later trees are XGBoost's own at its scores (refresh)
    X2 = r.normal(size=(1500, 6))
    again = uc.unbiased_importance(pruned, Xo, yo, X2, 0.8 * X2[:, 0] + 1e4, random_state=1)
    s = again.splits
    assert ((s.biased_gain - s.host_gain).abs() <= 1e-2 * s.host_gain.abs() + 1e-6).mean() > 0.99


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("rounds", [1, 3])
def test_small_models_grown_from_unkept_starting_scores_are_warned_of(host, rounds):
    """Stumps trained from per-row starting scores the model does not keep (LightGBM
    init_score with boost_from_average=False, XGBoost base_margin): biased_gain was 2-4x
    the hosts' own gains at every split, and nothing said so, because a warning needed three
    splits to miss. Oracle: the host's stored gain of the first tree. Every split of the
    first iteration misses: one warning naming the starting scores."""
    r = np.random.default_rng(0)
    init = r.normal(size=X.shape[0]) + 0.5 * X[:, 0]
    if host == "lightgbm":
        model = lgb.train({**LGB, "num_leaves": 2, "boost_from_average": False},
                          lgb.Dataset(X, y, init_score=init), rounds)
    else:
        model = xgb.train({**XGB, "max_depth": 1}, xgb.DMatrix(X, y, base_margin=init), rounds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_jobs=1).splits
    first = s[s.tree == 0]
    assert (np.abs(first.biased_gain - first.host_gain) > 0.5 * first.host_gain.abs()).all()
    said = [str(w.message) for w in caught if "misses the model's own gains" in str(w.message)]
    assert len(said) == 1 and "base_margin or init_score" in said[0]
    assert "after the first iteration" not in said[0]


def test_a_stray_miss_is_not_a_mismatch_but_most_large_gains_missing_is():
    """The floor against float32 cancellation keeps its purpose: one stray miss among many
    splits, or two among a hundred, does not warn; a model whose few large gains (far above
    rounding) mostly miss does, whatever its size."""
    from unbiased_criteria.host_gains import gain_misses, gains_mismatch

    host = np.array([100.0, 50.0, 20.0, 10.0, 1e-5])
    assert gains_mismatch(*gain_misses(host, host * [1, 1, 1, 1, 3], 1e-3)) is False
    assert gains_mismatch(*gain_misses(host, host * [1.2, 1, 1, 1, 1], 1e-3)) is False
    assert gains_mismatch(*gain_misses(host, host * [1.2, 1.2, 1.2, 1, 1], 1e-3)) is True
    assert gains_mismatch(*gain_misses(host[:1], host[:1] * 2, 1e-3)) is True
    many = np.linspace(1.0, 100.0, 100)
    assert gains_mismatch(*gain_misses(many, many * np.r_[[1.1, 1.1], np.ones(98)], 1e-3)) \
        is False


def test_the_later_trees_message_does_not_claim_a_first_iteration_that_missed():
    """The later trees' refusal said 'the first iteration matches' and blamed DART where the
    first iteration's gains also missed (below the count that warns alone) and starting
    scores were the cause: it says what the first iteration showed and names them."""
    from unbiased_criteria.adapters import xgboost as ax

    from unbiased_criteria.host_gains import LaterGains, check_later_gains

    read = ax.read_model(xgb.train(XGB, xgb.DMatrix(X, y), 2))
    found = LaterGains(compared=10, off=10, first_tree=1, large=10, large_off=10)
    host = np.linspace(1.0, 10.0, 300)
    first = [(None, None, host, host * np.r_[1.5, np.ones(299)])]
    with pytest.raises(UnsupportedModelError) as err:
        check_later_gains(found, read, "prune", first=first)
    text = str(err.value)
    assert "first iteration matches" not in text
    assert "misses at 1 of its 300 splits" in text and "base_margin or init_score" in text
    first = [(None, None, host, host)]
    with pytest.raises(UnsupportedModelError, match="the first iteration matches"):
        check_later_gains(found, read, "prune", first=first)


def _adjacent_float32(n, seed):
    """Prices 1000.xxxx on adjacent float32 values, 20% missing: XGBoost's exact method puts
    thresholds onto training values there, and stores the gain of the partition that sends
    the rows at the threshold to the other side than the tree does."""
    r = np.random.default_rng(seed)
    k = r.integers(0, 40, n)
    x = np.float32(1000) + k * float(np.spacing(np.float32(1000)))
    x = np.where(r.random(n) < 0.2, np.nan, x)
    return np.column_stack([x, r.normal(size=n)]), k / 10 + r.normal(size=n)


@pytest.mark.parametrize("seed", [0, 2])
def test_ties_at_an_exact_threshold_are_not_taken_for_other_scores(seed):
    """An ordinary gbtree model grown with tree_method='exact' was refused by prune as DART
    or edited trees, and unbiased_importance warned so: its stored gains (loss_chg, the
    oracle) describe x <= t where the tree routes x < t at splits whose threshold is a
    training value at the node. biased_gain stays that of the tree as it routes (it still
    misses loss_chg there); the checks compare those splits with the other side of the tie,
    which matches, so nothing is warned and prune goes ahead. Its first tree edited (leaves
    and weights tripled) on the same rows is still refused: the other side of a tie does
    not excuse later trees grown from other scores."""
    Xa, ya = _adjacent_float32(1000, seed)
    Xb, yb = _adjacent_float32(1000, seed + 100)
    params = {"tree_method": "exact", "max_depth": 2, "eta": 0.3, "nthread": 1}
    bst = xgb.train(params, xgb.DMatrix(Xa, ya), 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = uc.unbiased_importance(bst, Xa, ya, Xb, yb, random_state=0, n_jobs=1).splits
        uc.prune(bst, Xa, ya, Xb, yb, random_state=0, n_jobs=1)
    assert not [w for w in caught if "own gains" in str(w.message)]
    off = (s.biased_gain - s.host_gain).abs() > 0.01 * s.host_gain.abs()
    assert off.sum() > 10  # the ties are there: B is the routed partition's
    js = json.loads(bst.save_raw("json"))
    tree = js["learner"]["gradient_booster"]["model"]["trees"][0]
    tree["split_conditions"] = [c * 3 if left == -1 else c for c, left in
                                zip(tree["split_conditions"], tree["left_children"])]
    tree["base_weights"] = [w * 3 for w in tree["base_weights"]]
    edited = xgb.Booster(model_file=bytearray(json.dumps(js).encode()))
    edited.set_param({"eta": 0.3, "lambda": 1})
    with pytest.raises(UnsupportedModelError, match="after the first iteration"):
        uc.prune(edited, Xa, ya, Xb, yb, random_state=0, n_jobs=1)


@pytest.mark.parametrize("kind", ["frame", "sparse", "missing=-999", "multiclass"])
def test_ties_are_read_as_xgboost_reads_the_rows(kind):
    """The rows' values at a threshold are read as XGBoost compares them: a DataFrame's
    column, a sparse matrix's absent entries as missing, an estimator's own ``missing``
    value, each class's trees of a multi-class model. Each of these exact models on adjacent
    float32 values was warned of as grown with other parameters or scores (its own
    loss_chg, the oracle, holds the other side of the ties)."""
    from scipy import sparse

    Xa, ya = _adjacent_float32(1500, 0)
    Xb, yb = _adjacent_float32(1500, 100)
    params = {"tree_method": "exact", "max_depth": 2, "eta": 0.3, "nthread": 1}
    if kind == "frame":
        Xa, Xb = pd_frame(Xa), pd_frame(Xb)
        model = xgb.train(params, xgb.DMatrix(Xa, ya), 20)
    elif kind == "sparse":  # absent entries are XGBoost's missing values
        Xa, Xb = (sparse.csr_matrix(np.nan_to_num(A, nan=0.0)) for A in (Xa, Xb))
        model = xgb.train(params, xgb.DMatrix(Xa, ya), 20)
    elif kind == "missing=-999":
        Xa, Xb = (np.nan_to_num(A, nan=-999.0) for A in (Xa, Xb))
        model = xgb.XGBRegressor(tree_method="exact", max_depth=2, n_estimators=20,
                                 missing=-999.0, n_jobs=1).fit(Xa, ya)
    else:
        ya, yb = np.digitize(ya, [1.5, 2.8]), np.digitize(yb, [1.5, 2.8])
        model = xgb.train({**params, "objective": "multi:softprob", "num_class": 3},
                          xgb.DMatrix(Xa, ya), 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        uc.unbiased_importance(model, Xa, ya, Xb, yb, random_state=0, n_jobs=2)
    assert not [w for w in caught if "own gains" in str(w.message)]


def pd_frame(A):
    import pandas as pd

    return pd.DataFrame(A, columns=["price", "noise"])
