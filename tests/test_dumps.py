"""Dumped models (LightGBM dump_model(), XGBoost get_dump JSON) scored without a Booster:
the report equals the Booster's (same draws), pruning gives a dump of the pruned trees."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc

lgb = pytest.importorskip("lightgbm")

COLS = ["tree", "node", "feature_index", "n_train", "n_valid", "k", "biased_gain",
        "unbiased_gain", "host_gain", "usable"]



def _same_trees(ours, host) -> None:
    """The dumps are equal, but for the gains of the trees after the first pruned iteration:
    the pruned model stores its own (B at its scores), which the replays of a Booster and of
    its dump (leaf values printed in fewer digits) compute alike to float rounding."""
    if isinstance(ours, dict):
        assert ours.keys() == host.keys()
        for key in ours:
            if key in ("split_gain", "gain"):
                assert ours[key] == pytest.approx(host[key], rel=1e-5, abs=1e-6)
            else:
                _same_trees(ours[key], host[key])
    elif isinstance(ours, list):
        assert len(ours) == len(host)
        for a, b in zip(ours, host):
            _same_trees(a, b)
    else:
        assert ours == host

def _frame(n: int, seed: int):
    """Features a, b with NaN rows that behave like high a / low b values (so the hosts send
    missing values right at some nodes, left at others) and a categorical c."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 10, 0] = np.nan
    X[n // 10: n // 5, 1] = np.nan
    c = pd.Categorical(rng.integers(0, 8, n))
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": c})
    y = (np.where(np.isnan(X[:, 0]), 2.0, 0.5 * X[:, 0])
         + np.where(np.isnan(X[:, 1]), -2.0, X[:, 1]) + 1.5 * (c.codes % 2)
         + rng.normal(size=n))
    return df, y


def _same(r1, r2, tol=1e-9):
    a, b = r1.splits[COLS].to_numpy(float), r2.splits[COLS].to_numpy(float)
    assert a.shape == b.shape and a.shape[0] > 0
    np.testing.assert_allclose(a, b, rtol=0, atol=tol)


def _walk(node):
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.get("children", []))
        stack.extend(node[k] for k in ("left_child", "right_child") if k in node)


def _default_sides(dump):
    return {n["default_left"] for t in dump["tree_info"] for n in _walk(t["tree_structure"])
            if "default_left" in n}


def _lgb(params, df, y, rounds=5):
    base = {"verbose": -1, "num_leaves": 6, "min_data_per_group": 5, "cat_smooth": 1,
            "learning_rate": 0.1, "num_threads": 1}
    return lgb.train({**base, **params}, lgb.Dataset(df, y), rounds)


def test_lightgbm_dump_reads_an_unseen_category_as_missing():
    """A held-out category the model never saw is missing to LightGBM: the dump's router
    codes it so by value (pandas deprecates building a Categorical over values outside its
    categories, which it did), and the report equals the Booster's."""
    df, y = _frame(600, 0)
    b = _lgb({"objective": "regression"}, df[:300], y[:300])
    valid = df[300:].copy()
    valid["c"] = valid["c"].cat.add_categories([99])
    valid.loc[valid.index[:40], "c"] = 99
    args = (df[:300], y[:300], valid, y[300:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message="the dump does not store")
        r2 = uc.unbiased_importance(b.dump_model(), *args, random_state=0,
                                    host_params={"cat_l2": 10})
    _same(uc.unbiased_importance(b, *args, random_state=0), r2)


@pytest.mark.parametrize("form", ["dict", "json", "file"])
def test_lightgbm_dump_report_equals_booster(form, tmp_path):
    df, y = _frame(600, 0)
    b = _lgb({"objective": "regression", "lambda_l2": 2.0}, df[:300], y[:300])
    d = b.dump_model()
    model = {"dict": d, "json": json.dumps(d)}.get(form)
    if form == "file":
        model = tmp_path / "model.json"
        model.write_text(json.dumps(d))
    args = (df[:300], y[:300], df[300:], y[300:])
    r1 = uc.unbiased_importance(b, *args, random_state=0)
    r2 = uc.unbiased_importance(model, *args, random_state=0,
                                host_params={"lambda_l2": 2.0, "cat_l2": 10})
    _same(r1, r2)
    assert r2.rows_near_threshold == {"X_train": 0, "X_valid": 0}
    # categorical splits and splits on the feature with NaN (both default sides) are covered
    assert r1.splits["categorical"].any() and (r1.splits["feature"] == "a").any()
    assert _default_sides(b.dump_model()) == {True, False}


def test_lightgbm_dump_infers_l2_and_warns_defaults():
    df, y = _frame(600, 1)
    b = _lgb({"objective": "regression", "lambda_l2": 5.0}, df[:300], y[:300])
    args = (df[:300], y[:300], df[300:], y[300:])
    r1 = uc.unbiased_importance(b, *args, random_state=3)
    with pytest.warns(UserWarning, match="cat_l2") as caught:
        r2 = uc.unbiased_importance(b.dump_model(), *args, random_state=3)
    # the first iteration's gains were checked against its rate with LightGBM's default L2
    # (0), which does not fit them: an unedited model was told it was "pruned or edited"
    assert not [w for w in caught if "learning rate is not stored" in str(w.message)]
    # inferred from the leaves and replayed G, H: B within float precision of the host's
    np.testing.assert_allclose(r2.splits["biased_gain"], r1.splits["biased_gain"], rtol=1e-6)
    np.testing.assert_allclose(r2.splits["unbiased_gain"], r1.splits["unbiased_gain"],
                               rtol=0, atol=1e-9)


def test_lightgbm_dump_without_training_rows_asks_for_lambda_l2():
    """Validation-only mode: the L2 penalty of a LightGBM dump cannot be inferred. The
    message spoke of XGBoost's eta and lambda and set_param; LightGBM's is lambda_l2 in
    host_params (the dump stores the learning rate)."""
    df, y = _frame(600, 1)
    d = _lgb({"objective": "regression", "lambda_l2": 5.0}, df[:300], y[:300]).dump_model()
    hp = {"cat_l2": 10, "max_cat_to_onehot": 4}
    with pytest.warns(UserWarning, match=r"host_params=\{'lambda_l2': \.\.\.\}") as record:
        uc.unbiased_importance(d, None, None, df[300:], y[300:], host_params=hp)
    assert not any("XGBoost" in str(w.message) or "eta" in str(w.message) for w in record)
    with pytest.raises(ValueError, match="does not store its L2 penalty \\(lambda_l2\\)"):
        uc.prune(d, None, None, df[300:], y[300:], host_params=hp)
    uc.prune(d, None, None, df[300:], y[300:], host_params={**hp, "lambda_l2": 5.0})


def test_lightgbm_dump_multiclass_and_objective_params():
    df, y = _frame(900, 2)
    yc = np.digitize(y, [-0.5, 0.8])
    b = _lgb({"objective": "multiclass", "num_class": 3}, df[:450], yc[:450], rounds=3)
    args = (df[:450], yc[:450], df[450:], yc[450:])
    _same(uc.unbiased_importance(b, *args, random_state=1),
          uc.unbiased_importance(b.dump_model(), *args, random_state=1,
                                 host_params={"lambda_l2": 0, "cat_l2": 10}))
    yt = np.exp(y / 3)
    bt = _lgb({"objective": "tweedie", "tweedie_variance_power": 1.2}, df[:450], yt[:450])
    args = (df[:450], yt[:450], df[450:], yt[450:])
    with pytest.warns(UserWarning, match="tweedie_variance_power"):
        uc.unbiased_importance(bt.dump_model(), *args, random_state=1,
                               host_params={"lambda_l2": 0, "cat_l2": 10})
    _same(uc.unbiased_importance(bt, *args, random_state=1),
          uc.unbiased_importance(bt.dump_model(), *args, random_state=1,
                                 host_params={"lambda_l2": 0, "cat_l2": 10,
                                              "tweedie_variance_power": 1.2}))


def test_bad_dumps_one_clear_error(tmp_path):
    df, y = _frame(200, 3)
    args = (df[:100], y[:100], df[100:], y[100:])
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "tree", "tree_info": [oops')
    with pytest.raises(ValueError, match="not a valid JSON dump"):
        uc.unbiased_importance(str(bad), *args)
    with pytest.raises(ValueError, match="no such file"):
        uc.unbiased_importance(str(tmp_path / "absent.json"), *args)
    with pytest.raises(ValueError, match="not a valid LightGBM dump_model"):
        uc.unbiased_importance({"name": "tree", "tree_info": [{}]}, *args)
    with pytest.raises(ValueError, match="host_params is for dumped models"):
        uc.unbiased_importance(_lgb({"objective": "regression"}, df[:100], y[:100]), *args,
                               host_params={"eta": 0.1})


# --- XGBoost get_dump JSON -------------------------------------------------------------------

def _xgb(params, df, y, rounds=4):
    xgb = pytest.importorskip("xgboost")
    base = {"eta": 0.3, "max_depth": 3, "tree_method": "hist", "max_cat_to_onehot": 1,
            "lambda": 2.0, "nthread": 1}
    return xgb.train({**base, **params}, xgb.DMatrix(df, y, enable_categorical=True), rounds)


def _xgb_params(booster, **extra):
    """What the dump lacks, as the Booster's own configuration gives it."""
    cfg = json.loads(booster.save_config())["learner"]
    base = json.loads(cfg["learner_model_param"]["base_score"])
    return {"objective": cfg["objective"]["name"],
            "base_score": base if len(base) > 1 else base[0],
            "feature_names": booster.feature_names, **extra}


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_xgboost_dump_report_equals_booster(objective):
    df, y = _frame(800, 4)
    extra = {}
    if objective == "binary:logistic":
        y = (y > 0.5).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(y, [-0.5, 0.8]).astype(float)
        extra = {"num_class": 3}
    b = _xgb({"objective": objective, **extra}, df[:400], y[:400], rounds=3)
    dump = b.get_dump(dump_format="json", with_stats=True)   # JSON strings, as returned
    args = (df[:400], y[:400], df[400:], y[400:])
    r1 = uc.unbiased_importance(b, *args, random_state=0)
    r2 = uc.unbiased_importance(dump, *args, random_state=0,
                                host_params=_xgb_params(b, eta=0.3, reg_lambda=2.0, **extra))
    _same(r1, r2)
    assert r2.rows_near_threshold == {"X_train": 0, "X_valid": 0}
    assert r1.splits["categorical"].any() and (r1.splits["feature"] == "a").any()
    # missing values go to "yes" at some nodes and to "no" at others
    nodes = [json.loads(t) for t in dump]
    assert {n["missing"] == n["yes"] for t in nodes for n in _walk(t) if "yes" in n} == \
        {True, False}


def test_xgboost_dump_infers_eta_lambda():
    df, y = _frame(800, 5)
    b = _xgb({"objective": "reg:squarederror", "eta": 0.2}, df[:400], y[:400])
    args = (df[:400], y[:400], df[400:], y[400:])
    r1 = uc.unbiased_importance(b, *args, random_state=0)
    r2 = uc.unbiased_importance(b.get_dump(dump_format="json", with_stats=True), *args,
                                random_state=0, host_params=_xgb_params(b))
    np.testing.assert_allclose(r2.splits["unbiased_gain"], r1.splits["unbiased_gain"],
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(r2.splits["biased_gain"], r1.splits["biased_gain"], rtol=1e-5)


@pytest.mark.parametrize("fmt", ["text", "dot"])
@pytest.mark.parametrize("host_params", [None, {"objective": "reg:squarederror",
                                                "base_score": 0.0, "eta": 0.3}])
def test_xgboost_dump_in_another_format_one_clear_error(fmt, host_params):
    """``get_dump()`` in its default text format (or dot) is refused as such, with what to
    pass, with host_params or without; with them it was called a host model ("a host model
    stores its parameters")."""
    df, y = _frame(400, 6)
    b = _xgb({"objective": "reg:squarederror"}, df[:200], y[:200], rounds=2)
    args = (df[:200], y[:200], df[200:], y[200:])
    with pytest.raises(TypeError, match=r"text or dot format: dumps must be JSON, "
                                        r"get_dump\(dump_format='json'"):
        uc.unbiased_importance(b.get_dump(dump_format=fmt, with_stats=True), *args,
                               host_params=host_params)


@pytest.mark.parametrize("model", [{"a": 1}, [1, 2], ["not a tree"]])
def test_plain_data_with_host_params_is_refused_as_without(model):
    """Data that is no dump gets the one error naming what a model may be, whether
    host_params came along or not (with them, it was called a host model)."""
    df, y = _frame(200, 7)
    args = (df[:100], y[:100], df[100:], y[100:])
    with pytest.raises(TypeError) as without:
        uc.unbiased_importance(model, *args)
    with pytest.raises(TypeError) as given:
        uc.unbiased_importance(model, *args, host_params={"lambda_l2": 1.0})
    assert str(given.value) == str(without.value)
    assert "dumped model (dump_model() / get_dump(dump_format='json') JSON)" in str(given.value)


def _round_thresholds(tree: dict, digits: int) -> dict:
    out = dict(tree)
    if "children" in out:
        if not isinstance(out["split_condition"], list):
            out["split_condition"] = float(f"{out['split_condition']:.{digits}g}")
        out["children"] = [_round_thresholds(c, digits) for c in out["children"]]
    return out


def test_xgboost_dump_printed_precision_warns_and_counts():
    df, y = _frame(800, 6)
    b = _xgb({"objective": "reg:squarederror"}, df[:400], y[:400])
    trees = [_round_thresholds(json.loads(t), 5)
             for t in b.get_dump(dump_format="json", with_stats=True)]
    hp = _xgb_params(b, eta=0.3, reg_lambda=2.0)
    # hist thresholds are training values: training rows lie on them, and may route
    # differently from the Booster
    with pytest.warns(UserWarning, match="rows of X_train have a value within the printed"):
        r0 = uc.unbiased_importance(trees, df[:400], y[:400], df[400:], y[400:],
                                    random_state=0, host_params=hp)
    assert r0.rows_near_threshold["X_train"] > 0
    # validation-only mode, no held-out row within 5 digits of a threshold: the same report
    r1 = uc.unbiased_importance(b, None, None, df[400:], y[400:], random_state=0)
    r2 = uc.unbiased_importance(trees, None, None, df[400:], y[400:], random_state=0,
                                host_params=hp)
    assert r2.rows_near_threshold == {"X_valid": 0}
    _same(r1, r2)
    # a held-out row at a threshold the dump printed to 5 digits
    model = json.loads(b.save_raw("json"))["learner"]["gradient_booster"]["model"]
    t0 = model["trees"][0]
    node = next(i for i, (f, c) in enumerate(zip(t0["split_indices"], t0["left_children"]))
                if c >= 0 and f == 1)
    Xv = df[400:].copy()
    Xv.iloc[0, 1] = float(np.float32(t0["split_conditions"][node]))
    if float(f"{Xv.iloc[0, 1]:.5g}") == Xv.iloc[0, 1]:
        pytest.skip("the threshold prints exactly with 5 digits")
    with pytest.warns(UserWarning, match="1 rows of X_valid have a value within the printed"):
        r3 = uc.unbiased_importance(trees, None, None, Xv, y[400:], random_state=0,
                                    host_params=hp)
    assert r3.rows_near_threshold == {"X_valid": 1}
    # the same dump printed to 9 digits (XGBoost's own) determines every float32 threshold
    exact = uc.unbiased_importance(b.get_dump(dump_format="json", with_stats=True), None,
                                   None, Xv, y[400:], random_state=0, host_params=hp)
    assert exact.rows_near_threshold == {"X_valid": 0}


def test_xgboost_dump_requires_what_it_lacks():
    df, y = _frame(300, 7)
    b = _xgb({"objective": "reg:squarederror"}, df[:150], y[:150], rounds=2)
    dump = b.get_dump(dump_format="json", with_stats=True)
    args = (df[:150], y[:150], df[150:], y[150:])
    with pytest.raises(ValueError, match="does not store its objective and base_score"):
        uc.unbiased_importance(dump, *args)
    with pytest.raises(ValueError, match="names its features"):
        uc.unbiased_importance(dump, *args, host_params={"objective": "reg:squarederror",
                                                         "base_score": 0.5})
    with pytest.raises(ValueError, match="needs num_class"):
        uc.unbiased_importance(dump, *args, host_params=_xgb_params(
            b, objective="multi:softprob"))
    broken = json.loads(dump[0])
    broken["children"][0]["nodeid"] = 0
    with pytest.raises(ValueError, match="tree 0 repeats"):
        uc.unbiased_importance([broken], *args, host_params=_xgb_params(b))


def test_dumps_route_sparse_rows_as_the_hosts():
    """Absent sparse entries: missing for XGBoost, 0 for LightGBM."""
    from scipy import sparse

    rng = np.random.default_rng(11)
    X = sparse.random(800, 4, density=0.3, random_state=11, format="csr")
    y = X.toarray()[:, 0] * 2 + rng.normal(size=800)
    args = (X[:400], y[:400], X[400:], y[400:])
    bx = _xgb({"objective": "reg:squarederror"}, X[:400], y[:400], rounds=3)
    hp = {**_xgb_params(bx, eta=0.3, reg_lambda=2.0), "feature_names": None, "n_features": 4}
    _same(uc.unbiased_importance(bx, *args, random_state=0),
          uc.unbiased_importance(bx.get_dump(dump_format="json", with_stats=True), *args,
                                 random_state=0, host_params=hp))
    bl = _lgb({"objective": "regression"}, X[:400], y[:400], rounds=3)
    _same(uc.unbiased_importance(bl, *args, random_state=0),
          uc.unbiased_importance(bl.dump_model(), *args, random_state=0,
                                 host_params={"lambda_l2": 0}))


def test_dump_router_within_a_small_memory_budget():
    """Rows read and routed a slice at a time, trees a chunk at a time: the same report."""
    df, y = _frame(3000, 12)
    b = _lgb({"objective": "regression"}, df[:1500], y[:1500], rounds=6)
    args = (df[:1500], y[:1500], df[1500:], y[1500:])
    hp = {"lambda_l2": 0, "cat_l2": 10}
    small = uc.unbiased_importance(b.dump_model(), *args, random_state=0, host_params=hp,
                                   memory_budget=2**15)   # 256-row slices, 1 tree per call
    _same(uc.unbiased_importance(b, *args, random_state=0), small)


# --- pruning a dump --------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["dict", "json", "file"])
def test_prune_lightgbm_dump_gives_the_pruned_boosters_dump(form, tmp_path):
    df, y = _frame(600, 9)
    b = _lgb({"objective": "regression", "lambda_l2": 1.0}, df[:300], y[:300], rounds=8)
    d = b.dump_model()
    model = {"dict": d, "json": json.dumps(d)}.get(form)
    if form == "file":
        model = tmp_path / "model.json"
        model.write_text(json.dumps(d))
    args = (df[:300], y[:300], df[300:], y[300:])
    pruned_booster = uc.prune(b, *args, random_state=0)
    pruned = uc.prune(model, *args, random_state=0, host_params={"lambda_l2": 1.0, "cat_l2": 10})
    assert isinstance(pruned, dict if form == "dict" else str)
    content = pruned if form == "dict" else json.loads(pruned)
    _same_trees(content["tree_info"], pruned_booster.dump_model()["tree_info"])
    assert sum(t["num_leaves"] for t in content["tree_info"]) < \
        sum(t["num_leaves"] for t in d["tree_info"])
    assert d == b.dump_model()  # the caller's dump is not modified


def test_prune_xgboost_dump_gives_the_pruned_boosters_dump():
    df, y = _frame(800, 8)
    b = _xgb({"objective": "reg:squarederror"}, df[:400], y[:400])
    dump = b.get_dump(dump_format="json", with_stats=True)
    hp = _xgb_params(b, eta=0.3, reg_lambda=2.0)
    args = (df[:400], y[:400], df[400:], y[400:])
    pruned_booster = uc.prune(b, *args, random_state=0)
    pruned = uc.prune(dump, *args, random_state=0, host_params=hp)
    assert isinstance(pruned, list) and isinstance(pruned[0], str)   # as get_dump gives
    ref = [json.loads(t) for t in pruned_booster.get_dump(dump_format="json",
                                                          with_stats=True)]
    _same_trees([json.loads(t) for t in pruned], ref)
    assert sum(t.count('"leaf"') for t in pruned) < sum(t.count('"leaf"') for t in dump)
    # the pruned dump is a dump again: its report matches the pruned Booster's
    _same(uc.unbiased_importance(pruned_booster, *args, random_state=1),
          uc.unbiased_importance(pruned, *args, random_state=1, host_params=hp))


# --- the command line ------------------------------------------------------------------------

def test_cli_reads_and_prunes_dumps(tmp_path, capsys):
    from unbiased_criteria.cli import main

    df, y = _frame(600, 10)
    X = df[["a", "b", "c"]]
    data = df.assign(y=y)
    data[:300].to_csv(tmp_path / "train.csv", index=False)
    data[300:].to_csv(tmp_path / "valid.csv", index=False)
    b = _lgb({"objective": "regression", "lambda_l2": 2.0}, X[:300], y[:300])
    (tmp_path / "lgb.json").write_text(json.dumps(b.dump_model()))
    bx = _xgb({"objective": "reg:squarederror"}, X[:300], y[:300])
    bx.dump_model(str(tmp_path / "xgb.json"), dump_format="json", with_stats=True)
    hp = _xgb_params(bx)
    rows = ["--train", str(tmp_path / "train.csv"), "--valid", str(tmp_path / "valid.csv"),
            "--label", "y", "--seed", "0", "--format", "json"]
    lgb_params = ["--param", "lambda_l2=2", "--param", "cat_l2=10"]
    xgb_params = ["--param", 'feature_names=["a", "b", "c"]', "--param",
                  "objective=reg:squarederror", "--param", f"base_score={hp['base_score']!r}",
                  "--param", "eta=0.3", "--param", "lambda=2"]
    args = (X[:300], y[:300], X[300:], y[300:])
    for model, params, booster in (("lgb.json", lgb_params, b), ("xgb.json", xgb_params, bx)):
        capsys.readouterr()
        assert main(["importance", str(tmp_path / model), *rows, *params, "--splits"]) == 0
        splits = pd.read_json(io.StringIO(capsys.readouterr().out))
        ref = uc.unbiased_importance(booster, *args, random_state=0).splits
        np.testing.assert_allclose(splits["unbiased_gain"], ref["unbiased_gain"], atol=1e-9)
        out = tmp_path / f"pruned-{model}"
        assert main(["prune", str(tmp_path / model), *rows[:-2], *params,
                     "--output", str(out)]) == 0
        pruned_booster = uc.prune(booster, *args, random_state=0)
        if model == "lgb.json":
            _same_trees(json.loads(out.read_text())["tree_info"],
                        pruned_booster.dump_model()["tree_info"])
        else:
            _same_trees(json.loads(out.read_text()), [
                json.loads(t) for t in pruned_booster.get_dump(dump_format="json",
                                                               with_stats=True)])
    # what the dump lacks: one line naming it, exit 2
    capsys.readouterr()
    assert main(["importance", str(tmp_path / "xgb.json"), *rows, *xgb_params[:2]]) == 2
    assert "does not store its objective and base_score" in capsys.readouterr().err


def _one_leaf_tree_model(kind):
    """A LightGBM model holding trees of one leaf beside trees with splits, and its data:
    ``"multiclass"``, a class of 3 rows whose trees stay one leaf (LightGBM stores 0 there,
    with shrinkage 1); ``"regression"``, a first iteration without a split (one leaf holding
    the initial score)."""
    def data(seed, n=3000):
        rng = np.random.default_rng(seed)
        X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 6, n),
                             rng.normal(size=n)]).astype(float)
        if kind == "regression":
            return X, 0.5 * X[:, 0] + rng.normal(size=n)
        y = np.where(rng.random(n) < 0.3 + 0.3 * X[:, 0], 1, 0)
        y[rng.random(n) < 0.3] = 2
        y[rng.choice(n, 3, replace=False)] = 3
        return X, y
    (X, y), (Xv, yv) = data(0), data(1)
    params = {"objective": kind, "learning_rate": 0.3, "lambda_l2": 2.0, "num_leaves": 8,
              "min_sum_hessian_in_leaf": 5.0, "verbose": -1, "num_threads": 1}
    callbacks = []
    if kind == "multiclass":
        params["num_class"] = 4
    else:  # no split can pay 1e9 in the first iteration
        callbacks = [lgb.reset_parameter(min_gain_to_split=[1e9] + [0.0] * 7)]
    b = lgb.train(params, lgb.Dataset(X, y), 8, callbacks=callbacks)
    return b, (X, y, Xv, yv)


def _leaf_values(node):
    return [n["leaf_value"] for n in _walk(node) if "leaf_value" in n]


@pytest.mark.parametrize("kind", ["multiclass", "regression"])
@pytest.mark.parametrize("threshold", [0.0, -np.inf])
def test_prune_lightgbm_dump_with_one_leaf_trees_infers_l2(kind, threshold):
    """Oracle: the pruned Booster (which stores lambda_l2). A dump holding trees of one leaf
    beside trees with splits was refused ("the trees have different learning rates", "likely
    trained with L1"): the inference of lambda_l2 took the one-leaf trees' constants and
    shrinkage 1 for Newton steps."""
    b, args = _one_leaf_tree_model(kind)
    d = b.dump_model()
    sizes = [t["num_leaves"] for t in d["tree_info"]]
    assert 1 in sizes and max(sizes) > 1  # the case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # splits without usable evidence
        host = uc.prune(b, *args, threshold=threshold, refit_leaves=True,
                        random_state=0).dump_model()["tree_info"]
        ours = uc.prune(d, *args, threshold=threshold, refit_leaves=True,
                        random_state=0)["tree_info"]
    assert [t["num_leaves"] for t in ours] == [t["num_leaves"] for t in host]
    for a, h in zip(ours, host, strict=True):
        np.testing.assert_allclose(_leaf_values(a["tree_structure"]),
                                   _leaf_values(h["tree_structure"]), rtol=0, atol=1e-9)
    if threshold == 0.0:
        assert sum(t["num_leaves"] for t in ours) < sum(sizes)


def test_lightgbm_dump_without_a_split_needs_no_l2():
    """A dump whose trees are all one leaf has no gain to score and no leaf to refit, so it
    needs no lambda_l2: it is scored without a warning and pruned to itself (the inference
    was tried and failed: importance warned, prune raised)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = X[:, 0] + rng.normal(size=600)
    b = lgb.train({"objective": "regression", "min_gain_to_split": 1e9, "verbose": -1,
                   "num_threads": 1}, lgb.Dataset(X[:300], y[:300]), 3)
    d = b.dump_model()
    assert {t["num_leaves"] for t in d["tree_info"]} == {1}  # the case
    args = (X[:300], y[:300], X[300:], y[300:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = uc.unbiased_importance(d, *args, random_state=0)
        pruned = uc.prune(d, *args, random_state=0)
    assert len(report.splits) == 0
    assert pruned["tree_info"] == d["tree_info"]


def test_lightgbm_dump_without_lambda_l2_still_reads_a_scheduled_first_rate():
    """A dump stores no lambda_l2: its first iteration's gains are read under LightGBM's
    default (0). Skipping that read altogether (so that an L2-penalised model is not told it
    was edited) lost a learning-rate schedule's first rate, and the L2 inference then blamed
    L1 or clipping; gains that agree on a rate still give it."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"x{j}": rng.normal(size=2500) for j in range(3)})
    y = X.x0 + 0.5 * X.x1 + rng.normal(size=2500) + 3
    b = lgb.train({"verbose": -1, "num_threads": 1, "num_leaves": 7}, lgb.Dataset(X, y), 10,
                  callbacks=[lgb.reset_parameter(
                      learning_rate=lambda i: 0.5 if i == 0 else 0.1)])
    with pytest.warns(UserWarning, match="grown at learning rate 0.5, not the model's"):
        uc.unbiased_importance(b.dump_model(), X[:1500], y[:1500], X[1500:], y[1500:],
                               random_state=0)


def test_lightgbm_dump_whose_gains_confirm_the_default_l2_needs_no_lambda_l2():
    """Without training rows a dump's L2 penalty cannot be fitted, but where its leaves
    reproduce every stored gain with LightGBM's default (0) it is confirmed: the warning
    that B 'will not match the host's gain' was false there (B matched it to 1e-6), and
    prune refused a model it can prune. A wrong L2 (5) still warns and refuses (above)."""
    df, y = _frame(600, 1)
    b = _lgb({"objective": "regression"}, df[:300], y[:300])
    hp = {"cat_l2": 10, "max_cat_to_onehot": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = uc.unbiased_importance(b.dump_model(), None, None, df[300:], y[300:],
                                   host_params=hp, random_state=0)
        pruned = uc.prune(b.dump_model(), None, None, df[300:], y[300:], host_params=hp,
                          threshold=-np.inf, random_state=0)
    assert r.g_source == "model"
    np.testing.assert_allclose(r.splits["biased_gain"], r.splits["host_gain"], rtol=1e-5)
    assert pruned["tree_info"] and len(pruned["tree_info"]) == len(b.dump_model()["tree_info"])
