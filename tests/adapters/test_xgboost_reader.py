"""XGBoost reader and router: the host is the oracle (predict, pred_leaf, sum_hessian,
loss_changes)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost import compat  # noqa: E402

from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.objectives import CustomObjective  # noqa: E402
from unbiased_criteria.trees import route_rows  # noqa: E402

#: the installed XGBoost's L1 objectives are smoothed surrogates (3.4+)
SMOOTH_L1 = compat.model_version() >= compat.SMOOTH_L1_FROM

N = 600


def make_data(n=N, p=5, nan=0.0, seed=0):
    """Float32 features (the host reads float32), optional NaN, and a latent signal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(np.float32)
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    return X, signal, rng


def labels(kind, signal, rng):
    if kind in ("binary:logistic", "reg:logistic", "binary:logitraw", "binary:hinge"):
        return (signal + rng.normal(size=signal.size) > 0.5).astype(np.float64)
    if kind.startswith("multi:"):
        return np.digitize(signal + rng.normal(size=signal.size), [0.0, 1.0]).astype(float)
    if kind == "count:poisson":
        return rng.poisson(np.exp(0.5 * np.clip(signal, -3, 3))).astype(float)
    if kind in ("reg:gamma", "reg:tweedie"):
        return rng.gamma(2.0, np.exp(0.3 * np.clip(signal, -3, 3)))
    if kind == "reg:squaredlogerror":
        return np.exp(0.3 * signal + 0.2 * rng.normal(size=signal.size))
    return signal + rng.normal(size=signal.size)


def train(objective="reg:squarederror", rounds=4, nan=0.0, weights=False, seed=0, **params):
    X, signal, rng = make_data(nan=nan, seed=seed)
    y = labels(objective, signal, rng)
    w = rng.uniform(0.2, 2.0, size=y.size) if weights else None
    d = xgb.DMatrix(X, y, weight=w)
    params = {"objective": objective, "max_depth": 5, "eta": 0.3, "nthread": 2, **params}
    if objective.startswith("multi:"):
        params.setdefault("num_class", 3)
    return xgb.train(params, d, rounds), X, y, w, d


def cat_frame(n=N, seed=0, nan=0.0):
    """A frame with one numeric and two categorical columns (8 and 3 categories)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n).astype(np.float32)
    c = rng.integers(0, 8, n)
    o = rng.choice(["x", "y", "z"], n)
    y = a + np.isin(c, [1, 3, 5]) * 2.0 + (o == "y") * 1.0 + rng.normal(size=n) * 0.3
    frame = pd.DataFrame({
        "a": a,
        "c": pd.Categorical(c, categories=range(8)),
        "o": pd.Categorical(o, categories=["x", "y", "z"]),
    })
    if nan:
        frame.loc[rng.random(n) < nan, "c"] = np.nan
        frame.loc[rng.random(n) < nan, "a"] = np.nan
    return frame, y


def dense_codes(frame):
    """The frame as the float codes the IR routes on (NaN = missing)."""
    cols = []
    for name in frame.columns:
        col = frame[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            cols.append(codes)
        else:
            cols.append(col.to_numpy(dtype=np.float64))
    return np.column_stack(cols)


def host_margin(bst, d):
    return bst.predict(d, output_margin=True).reshape(d.num_row(), -1)


def all_leaves(router, n_trees):
    return np.concatenate([leaves for _, _, leaves in router.chunks(n_trees)], axis=1)


# ------------------------------------------------------------------ IR evaluation == host


@pytest.mark.parametrize(
    "objective, params, nan",
    [
        ("reg:squarederror", {}, 0.0),
        ("binary:logistic", {}, 0.0),
        ("multi:softprob", {}, 0.0),
        ("count:poisson", {}, 0.0),
        ("reg:squarederror", {}, 0.2),
        ("binary:logistic", {"num_parallel_tree": 2, "subsample": 0.7}, 0.1),
        ("multi:softmax", {"num_parallel_tree": 2}, 0.1),
        ("reg:gamma", {"max_depth": 7}, 0.0),
        ("reg:squarederror", {"grow_policy": "lossguide", "max_leaves": 20, "max_depth": 0},
         0.1),
    ],
)
def test_raw_score_equals_host_margin(objective, params, nan):
    bst, X, y, w, d = train(objective, nan=nan, **params)
    read = ax.read_model(bst)
    forest = read.forest
    ref = host_margin(bst, d)
    assert forest.raw_score(X).shape == ref.shape
    np.testing.assert_allclose(forest.raw_score(X), ref, rtol=0, atol=1e-5)
    assert forest.score_dtype == np.float32
    assert all(t.rules == ax.RULES for t in forest.trees)
    # XGBoost allocates siblings as (left, left + 1), lossguide included: the writer keeps ids
    for tree in forest.trees:
        inner = tree.internal_nodes
        np.testing.assert_array_equal(tree.right[inner], tree.left[inner] + 1)
    # the IR ids are XGBoost's: a leaf's value is split_conditions at pred_leaf's id
    leaves = bst.predict(d, pred_leaf=True).reshape(len(X), -1).astype(int)
    for t, tree in enumerate(forest.trees):
        np.testing.assert_array_equal(route_rows(tree, X), leaves[:, t])


@pytest.mark.parametrize("onehot", [True, False])
def test_categorical_raw_score(onehot):
    frame, y = cat_frame(nan=0.1)
    d = xgb.DMatrix(frame, y, enable_categorical=True)
    # max_cat_to_onehot above every cardinality: one-hot splits; 1: partition splits
    bst = xgb.train({"max_depth": 5, "max_cat_to_onehot": 16 if onehot else 1, "nthread": 2},
                    d, 4)
    forest = ax.read_model(bst).forest
    cat_nodes = [t.category_set(v) for t in forest.trees for v in np.flatnonzero(t.categorical)]
    assert cat_nodes, "the model must split on categories"
    sizes = {len(s) for s in cat_nodes}
    assert (sizes == {1}) if onehot else (max(sizes) > 1)
    assert forest.feature_names == ("a", "c", "o")
    np.testing.assert_allclose(forest.raw_score(dense_codes(frame)), host_margin(bst, d),
                               atol=1e-5, rtol=0)


def test_dart_with_unit_weights_is_read():
    bst, X, y, w, d = train(booster="dart", rate_drop=0.0)
    forest = ax.read_model(bst).forest
    np.testing.assert_allclose(forest.raw_score(X), host_margin(bst, d), atol=1e-5, rtol=0)


def test_tombstones_are_dropped_and_routed():
    # exact + gamma runs the prune updater, which leaves deleted nodes in place
    bst, X, y, w, d = train(tree_method="exact", gamma=3.0, max_depth=6, rounds=3)
    js = json.loads(bst.save_raw("json"))
    trees = js["learner"]["gradient_booster"]["model"]["trees"]
    assert any(int(t["tree_param"]["num_deleted"]) > 0 for t in trees)
    read = ax.read_model(bst)
    for tree, t in zip(read.forest.trees, trees):
        kept = int(t["tree_param"]["num_nodes"]) - int(t["tree_param"]["num_deleted"])
        assert tree.n_nodes == kept
    np.testing.assert_allclose(read.forest.raw_score(X), host_margin(bst, d), atol=1e-5,
                               rtol=0)
    router = ax.make_router(bst, read, X, "X")
    leaves = all_leaves(router, read.forest.n_trees)
    for t, tree in enumerate(read.forest.trees):
        np.testing.assert_array_equal(leaves[:, t], route_rows(tree, X))


# ------------------------------------------------------------------ base_score


def test_base_score_scalar_and_list_forms():
    assert ax.parse_base_score("5E-1", "reg:squarederror") == pytest.approx([0.5])
    assert ax.parse_base_score("[5E-1]", "reg:squarederror") == pytest.approx([0.5])
    np.testing.assert_array_equal(ax.parse_base_score("5E-1", "binary:logistic"), [0.0])
    np.testing.assert_array_equal(ax.parse_base_score("[5E-1]", "binary:logistic"), [0.0])
    np.testing.assert_array_equal(ax.parse_base_score("[5E-1]", "binary:logitraw"), [0.5])
    assert ax.parse_base_score("[2.79E0]", "count:poisson")[0] == pytest.approx(np.log(2.79))
    assert ax.parse_base_score("2.79E0", "reg:gamma")[0] == pytest.approx(np.log(2.79))
    multi = ax.parse_base_score("[-5.007744E-3,3.359179E-1,-3.3090997E-1]", "multi:softprob", 3)
    np.testing.assert_array_equal(multi, np.float32([-5.007744e-3, 3.359179e-1, -3.3090997e-1]))
    # an old multiclass model stores one scalar
    np.testing.assert_array_equal(ax.parse_base_score("5E-1", "multi:softprob", 3), [0.5] * 3)
    with pytest.raises(ValueError):
        ax.parse_base_score("[1E0,2E0]", "multi:softprob", 3)


@pytest.mark.parametrize("objective", ["binary:logistic", "count:poisson", "reg:tweedie",
                                       "reg:squarederror"])
@pytest.mark.parametrize("base", [0.1234567, 0.5123, 0.80254847, 0.9999])
def test_base_margin_is_the_hosts_float32_link(objective, base):
    # eta = 0: every leaf is 0, so the host's margin is the base margin alone
    X, signal, rng = make_data(n=20)
    y = labels(objective, signal, rng)
    bst = xgb.train({"objective": objective, "eta": 0.0, "base_score": base, "max_depth": 1},
                    xgb.DMatrix(X, y), 1)
    margin = bst.predict(xgb.DMatrix(X), output_margin=True)[0]
    read = ax.read_model(bst)
    assert read.forest.base_score[0] == margin  # exactly, in float32


def _hand_model(base_score: str, objective: str = "reg:squarederror") -> dict:
    """A two-tree model written by hand: a numeric/categorical tree and a single leaf."""
    tree0 = {
        "base_weights": [0.1, -1.0, 2.0, 0.5, 0.7], "categories": [1, 3],
        "categories_nodes": [2], "categories_segments": [0], "categories_sizes": [2],
        "default_left": [1, 0, 0, 0, 0], "id": 0, "left_children": [1, -1, 3, -1, -1],
        "loss_changes": [5.0, 0.0, 1.5, 0.0, 0.0], "parents": [2147483647, 0, 0, 2, 2],
        "right_children": [2, -1, 4, -1, -1],
        "split_conditions": [0.25, -0.3, 1e-45, 0.15, 0.21], "split_indices": [0, 0, 1, 0, 0],
        "split_type": [0, 0, 1, 0, 0], "sum_hessian": [10.0, 4.0, 6.0, 2.0, 4.0],
        "tree_param": {"num_deleted": "0", "num_feature": "2", "num_nodes": "5",
                       "size_leaf_vector": "1"},
    }
    tree1 = {
        "base_weights": [0.05], "categories": [], "categories_nodes": [],
        "categories_segments": [], "categories_sizes": [], "default_left": [0], "id": 1,
        "left_children": [-1], "loss_changes": [0.0], "parents": [2147483647],
        "right_children": [-1], "split_conditions": [0.05], "split_indices": [0],
        "split_type": [0], "sum_hessian": [10.0],
        "tree_param": {"num_deleted": "0", "num_feature": "2", "num_nodes": "1",
                       "size_leaf_vector": "1"},
    }
    return {
        "learner": {
            "attributes": {}, "feature_names": ["num", "cat"], "feature_types": ["float", "c"],
            "gradient_booster": {"model": {
                "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": "2"},
                "iteration_indptr": [0, 1, 2], "tree_info": [0, 0], "trees": [tree0, tree1],
            }, "name": "gbtree"},
            "learner_model_param": {"base_score": base_score, "boost_from_average": "1",
                                    "num_class": "0", "num_feature": "2", "num_target": "1"},
            "objective": {"name": objective, "reg_loss_param": {"scale_pos_weight": "1"}},
        },
        "version": [3, 2, 0],
    }


@pytest.mark.parametrize("layout", ["3.2", "3.4"])
@pytest.mark.parametrize("weights, ok", [([1.0, 1.0], True), ([1.0, 0.5], False)])
def test_hand_written_dart_layouts(layout, weights, ok):
    js = _hand_model("[5E-1]")
    learner = js["learner"]
    model = learner["gradient_booster"]["model"]
    if layout == "3.2":  # {"name": "dart", "gbtree": {"model": ...}, "weight_drop": [...]}
        learner["gradient_booster"] = {"name": "dart", "weight_drop": weights,
                                       "gbtree": {"name": "gbtree", "model": model}}
    else:  # {"name": "gbtree", "model": {..., "weight_drop": [...]}}
        model["weight_drop"] = weights
    if ok:
        assert ax.parse_model(js).forest.n_trees == 2
    else:
        with pytest.raises(UnsupportedModelError, match="weight_drop"):
            ax.parse_model(js)


@pytest.mark.parametrize("base_score", ["5E-1", "[5E-1]"])
def test_hand_written_model_parses_and_matches_host(base_score):
    js = _hand_model(base_score)
    read = ax.parse_model(js)
    tree = read.forest.trees[0]
    np.testing.assert_array_equal(tree.left, [1, -1, 3, -1, -1])
    np.testing.assert_array_equal(tree.feature, [0, -1, 1, -1, -1])
    assert tree.threshold[0] == np.float32(0.25) and np.isnan(tree.threshold[2])
    assert tree.categorical.tolist() == [False, False, True, False, False]
    np.testing.assert_array_equal(tree.category_set(2), [1, 3])
    assert tree.value[1] == np.float32(-0.3) and tree.value[0] == pytest.approx(0.3 * 0.1)
    assert np.isnan(tree.host_gain[1]) and tree.host_gain[2] == 1.5
    assert read.forest.trees[1].n_nodes == 1
    np.testing.assert_array_equal(read.forest.tree_iteration, [0, 1])
    assert read.forest.base_score.tolist() == [0.5]
    assert read.split_score == gains.SplitScore(
        l1=0.0, l2=1.0, weight_float32=True, raw_gradient_score=True
    )
    # the host reads the same JSON and agrees with the IR
    bst = xgb.Booster(model_file=bytearray(json.dumps(js).encode()))
    X = np.array([[0.0, 1], [0.3, 1], [0.3, 3], [0.3, 2], [0.3, np.nan], [np.nan, 3],
                  [0.25, 0], [0.3, 7], [0.3, -1]], dtype=np.float32)
    d = xgb.DMatrix(X, feature_names=["num", "cat"], feature_types=["float", "c"],
                    enable_categorical=True)
    np.testing.assert_allclose(read.forest.raw_score(X)[:, 0],
                               bst.predict(d, output_margin=True), atol=1e-6)
    np.testing.assert_array_equal(route_rows(tree, X),
                                  bst[0:1].predict(d, pred_leaf=True).astype(int))


def test_hand_written_tombstones():
    js = _hand_model("[5E-1]")
    tree = js["learner"]["gradient_booster"]["model"]["trees"][0]
    # node 2 collapsed by the prune updater: 3 and 4 are tombstones
    tree["left_children"][2] = tree["right_children"][2] = -1
    tree["split_indices"][3] = tree["split_indices"][4] = 2147483647
    tree["split_type"][2] = 0
    tree["split_conditions"][2] = 0.6
    tree["categories"], tree["categories_nodes"] = [], []
    tree["categories_segments"], tree["categories_sizes"] = [], []
    tree["tree_param"]["num_deleted"] = "2"
    read = ax.parse_model(js)
    t0 = read.forest.trees[0]
    assert t0.n_nodes == 3 and t0.n_leaves == 2 and t0.value[2] == np.float32(0.6)


# ------------------------------------------------------------------ objectives and params


@pytest.mark.parametrize(
    "objective, params, name, attrs",
    [
        ("reg:squarederror", {}, "squared_error", {}),
        ("reg:squaredlogerror", {}, "squared_log_error", {}),
        # scale_pos_weight weighs the rows whose label is exactly 1 (XGBoost's rule)
        ("binary:logistic", {"scale_pos_weight": 2.5}, "binary_logistic",
         {"weight": 2.5, "base.hessian_floor": 1e-16, "base.pos_weight": 1.0}),
        ("reg:squarederror", {"scale_pos_weight": 3.0}, "squared_error", {"weight": 3.0}),
        ("reg:gamma", {"scale_pos_weight": 3.0}, "gamma", {"weight": 3.0}),
        ("reg:logistic", {}, "binary_logistic", {"pos_weight": 1.0}),
        ("binary:logitraw", {}, "binary_logistic", {}),
        ("multi:softprob", {}, "multiclass_softmax",
         {"n_classes": 3, "hessian_factor": 2.0, "hessian_floor": 1e-16}),
        ("multi:softmax", {}, "multiclass_softmax", {"n_classes": 3}),
        ("count:poisson", {"max_delta_step": 0.4}, "poisson", {"max_delta_step": 0.4}),
        ("count:poisson", {}, "poisson", {"max_delta_step": 0.7}),
        ("reg:gamma", {}, "gamma", {}),
        ("reg:tweedie", {"tweedie_variance_power": 1.3}, "tweedie", {"variance_power": 1.3}),
        ("reg:pseudohubererror", {"huber_slope": 2.0}, "pseudo_huber", {"slope": 2.0}),
        ("reg:absoluteerror", {}, "absolute_error", {}),
        ("reg:quantileerror", {"quantile_alpha": 0.3}, "quantile", {"alpha": 0.3}),
    ],
)
def test_objective_mapping(objective, params, name, attrs):
    bst, *_ = train(objective, rounds=1, max_depth=2, **params)
    if SMOOTH_L1 and name in ("absolute_error", "quantile"):
        name = f"smooth_{name}"  # XGBoost 3.4's surrogates, leaves no longer renewed
    obj = ax.read_model(bst).objective
    assert obj.renews_leaves is (name in ("absolute_error", "quantile"))
    assert obj.name == name and obj.precision == "float32"
    for key, value in attrs.items():
        owner = obj.base if key.startswith("base.") else obj
        assert getattr(owner, key.removeprefix("base.")) == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"booster": "gblinear", "max_depth": None}, "gblinear"),
        ({"booster": "dart", "rate_drop": 0.5, "skip_drop": 0.0}, "DART"),
        ({"objective": "rank:pairwise"}, "rank:pairwise"),
        ({"objective": "survival:cox"}, "survival:cox"),
        ({"multi_strategy": "multi_output_tree", "objective": "multi:softprob",
          "num_class": 3}, "multi-output"),
        # multi-target models are read (test_xgboost_multi_target), not with every loss
        ({"objective": "reg:absoluteerror", "two_targets": True}, "multi-target"),
    ],
)
def test_unsupported_models_are_refused(params, match):
    X, signal, rng = make_data(n=200)
    y = labels(params.get("objective", "reg:squarederror"), signal, rng)
    d = xgb.DMatrix(X, y)
    if params.get("objective", "").startswith("rank:"):
        d.set_group([100, 100])
    if params.get("objective") == "survival:cox":
        d.set_label(np.abs(y) + 0.1)
    if params.pop("two_targets", False):
        d.set_label(np.column_stack([y, -y]))
    params = {k: v for k, v in {"max_depth": 2, **params}.items() if v is not None}
    bst = xgb.train(params, d, 4)
    with pytest.raises(UnsupportedModelError, match=match):
        ax.read_model(bst)


def test_split_score_and_shrinkage_from_config():
    bst, *_ = train(eta=0.1, reg_lambda=3.0, alpha=0.5, max_delta_step=0.7)
    read = ax.read_model(bst)
    # XGBoost holds them as float32
    assert read.split_score == gains.SplitScore(
        l1=0.5, l2=3.0, max_delta_step=float(np.float32(0.7)), weight_float32=True,
        raw_gradient_score=not SMOOTH_L1,  # XGBoost 3.4 changed both
    )
    assert all(t.shrinkage == np.float32(0.1) for t in read.forest.trees)
    assert read.warnings == ()


def test_parallel_trees_are_shrunk_by_eta_over_their_number():
    bst, *_ = train(eta=0.3, num_parallel_tree=3)
    read = ax.read_model(bst)
    assert read.forest.trees[0].shrinkage == np.float32(np.float32(0.3) / np.float32(3))
    np.testing.assert_array_equal(read.forest.tree_iteration, np.repeat(np.arange(4), 3))
    assert read.warnings == ()


def test_model_loaded_from_file_is_marked_and_params_override():
    bst, *_ = train(eta=0.1, reg_lambda=3.0)
    assert not ax.read_model(bst).leaf_params_unknown
    loaded = xgb.Booster(model_file=bst.save_raw("json"))
    read = ax.read_model(loaded)
    assert read.forest.trees[0].shrinkage == np.float32(0.3)  # XGBoost's default
    # the defaults do not fit the trees: the core infers them (no warning here)
    assert read.leaf_params_unknown
    assert read.warnings == ()
    read = ax.read_model(loaded, params={"learning_rate": 0.1, "reg_lambda": 3.0})
    assert read.forest.trees[0].shrinkage == np.float32(0.1)
    assert read.split_score.l2 == 3.0
    assert read.warnings == () and not read.leaf_params_unknown
    # values the user gives win, with a warning when they do not fit the trees
    read = ax.read_model(loaded, params={"eta": 0.2})
    assert not read.leaf_params_unknown
    assert any("do not reproduce" in m for m in read.warnings)
    # a model trained with XGBoost's defaults fits them when loaded
    bst, *_ = train()
    assert not ax.read_model(xgb.Booster(model_file=bst.save_raw("json"))).leaf_params_unknown


def test_sklearn_models_and_custom_objectives():
    X, signal, rng = make_data()
    y = labels("binary:logistic", signal, rng)
    clf = xgb.XGBClassifier(n_estimators=3, max_depth=3).fit(X, y)
    read = ax.read_model(clf)
    assert read.objective.name == "binary_logistic"
    np.testing.assert_allclose(read.forest.raw_score(X)[:, 0],
                               clf.predict(X, output_margin=True), atol=1e-5)
    reg = xgb.XGBRegressor(n_estimators=2, objective=lambda yt, p: (p - yt, np.ones_like(p)))
    read = ax.read_model(reg.fit(X, y))
    assert read.objective is None
    # xgb.train(obj=...) cannot be told apart: a warning points to objective=
    bst = xgb.train({"max_depth": 2}, xgb.DMatrix(X, y), 2,
                    obj=lambda p, d: (p - d.get_label(), np.ones_like(p)))
    assert any("custom objective" in m for m in ax.read_model(bst).notes)
    assert ax.read_model(bst).forest.feature_names == tuple(f"f{i}" for i in range(5))
    with pytest.raises(ValueError, match="not fitted"):
        ax.read_model(xgb.XGBRegressor())
    with pytest.raises(TypeError, match="xgboost.Booster"):
        ax.read_model(object())


def test_objective_without_core_equivalent():
    bst, *_ = train("binary:hinge", rounds=2)
    read = ax.read_model(bst)
    assert read.objective is None
    assert any("binary:hinge" in m and "objective=" in m for m in read.notes)


def test_sklearn_missing_value_is_used_by_the_router():
    X, signal, rng = make_data(nan=0.2)
    y = labels("reg:squarederror", signal, rng)
    coded = np.where(np.isnan(X), -999.0, X).astype(np.float32)
    est = xgb.XGBRegressor(n_estimators=3, max_depth=4, missing=-999.0).fit(coded, y)
    read = ax.read_model(est)
    leaves = ax.make_router(est, read, coded, "X").leaf_nodes(0, 3)
    for t, tree in enumerate(read.forest.trees):
        np.testing.assert_array_equal(leaves[:, t], route_rows(tree, X))


def test_make_objective():
    bst, *_ = train("binary:logistic", rounds=1, scale_pos_weight=3.0)
    read = ax.read_model(bst)
    assert ax.make_objective("binary:logistic", read).weight == 3.0
    assert ax.make_objective("reg:logistic", read).pos_weight == 1.0
    assert ax.make_objective("binary_logistic", read).hessian_floor == 1e-16
    soft = ax.make_objective("multiclass_softmax", ax.read_model(train("multi:softprob",
                                                                       rounds=1)[0]))
    assert (soft.n_classes, soft.hessian_factor, soft.precision) == (3, 2.0, "float32")
    custom = ax.make_objective(lambda y, raw, w: (raw - y, np.ones_like(raw)), read)
    assert isinstance(custom, CustomObjective)
    assert ax.make_objective(read.objective, read) is read.objective
    with pytest.raises(ValueError):
        ax.make_objective("binary:hinge", read)
    with pytest.raises(ValueError):
        ax.make_objective("no_such_objective", read)


# ------------------------------------------------------------------ router


@pytest.mark.parametrize("params", [{}, {"num_parallel_tree": 2},
                                    {"objective": "multi:softprob", "num_parallel_tree": 2}])
def test_router_leaves_chunks_and_ranges(params):
    bst, X, y, w, d = train(rounds=5, nan=0.1, **params)
    read = ax.read_model(bst)
    forest = read.forest
    full = ax.make_router(bst, read, X, "X")
    assert full.chunk == forest.n_trees
    ref = full.leaf_nodes(0, forest.n_trees)
    assert ref.dtype == np.int32 and ref.shape == (len(X), forest.n_trees)
    for t, tree in enumerate(forest.trees):
        assert tree.is_leaf[ref[:, t]].all()
        np.testing.assert_array_equal(ref[:, t], route_rows(tree, X))
    # a budget of 3 trees per chunk (12 bytes per leaf id): chunks hold whole iterations
    small = ax.make_router(bst, read, X, "X", memory_budget=len(X) * 12 * 3)
    per_iteration = forest.n_trees // 5
    assert small.chunk == max(3 - 3 % per_iteration, 1) if per_iteration <= 3 else 3
    np.testing.assert_array_equal(all_leaves(small, forest.n_trees), ref)
    # ranges that cut through iterations
    for start, stop in [(1, 4), (3, 4), (forest.n_trees - 1, forest.n_trees)]:
        np.testing.assert_array_equal(full.leaf_nodes(start, stop), ref[:, start:stop])


def test_router_single_tree_and_inputs():
    bst, X, y, w, d = train(rounds=1)
    read = ax.read_model(bst)
    router = ax.make_router(bst, read, X, "X")
    ref = router.leaf_nodes(0, 1)
    assert ref.shape == (len(X), 1)
    from scipy import sparse

    Xs = X.copy()
    Xs[np.abs(Xs) < 0.5] = 0.0
    Xn = Xs.copy()
    Xn[Xn == 0.0] = np.nan  # absent sparse entries are missing
    sp = ax.make_router(bst, read, sparse.csr_matrix(Xs), "X").leaf_nodes(0, 1)
    np.testing.assert_array_equal(sp[:, 0], route_rows(read.forest.trees[0], Xn))
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    np.testing.assert_array_equal(ax.make_router(bst, read, frame, "X").leaf_nodes(0, 1), ref)


def test_router_categorical_frame_and_codes():
    frame, y = cat_frame(nan=0.1)
    d = xgb.DMatrix(frame, y, enable_categorical=True)
    bst = xgb.train({"max_depth": 4, "max_cat_to_onehot": 1}, d, 3)
    read = ax.read_model(bst)
    leaves = ax.make_router(bst, read, frame, "X").leaf_nodes(0, 3)
    codes = dense_codes(frame)
    for t, tree in enumerate(read.forest.trees):
        np.testing.assert_array_equal(leaves[:, t], route_rows(tree, codes))
    # a numpy array of codes is read with the model's feature types
    np.testing.assert_array_equal(ax.make_router(bst, read, codes, "X").leaf_nodes(0, 3),
                                  leaves)


def test_router_bad_input():
    bst, X, y, w, d = train(rounds=2, nan=0.1)
    read = ax.read_model(bst)
    before = X.copy()
    with pytest.raises(ValueError, match="X_valid has 4 features but the model expects 5"):
        ax.make_router(bst, read, X[:, :4], "X_valid")
    with pytest.raises(ValueError, match=r"X_valid is empty"):
        ax.make_router(bst, read, X[:0], "X_valid")
    with pytest.raises(ValueError, match=r"X_valid must be 2-D"):
        ax.make_router(bst, read, X[:, 0], "X_valid")
    with pytest.raises(ValueError, match=r"X_valid must hold numbers"):
        ax.make_router(bst, read, X.astype(str), "X_valid")
    np.testing.assert_array_equal(X, before)

    frame, yc = cat_frame()
    dc = xgb.DMatrix(frame, yc, enable_categorical=True)
    named = xgb.train({"max_depth": 3}, dc, 2)
    read = ax.read_model(named)
    copy = frame.copy()
    with pytest.raises(ValueError, match="X_train.s column names do not match"):
        ax.make_router(named, read, frame.rename(columns={"a": "b"}), "X_train")
    with pytest.raises(ValueError, match="X_train.s column names do not match"):
        ax.make_router(named, read, frame[["c", "a", "o"]], "X_train")
    with pytest.raises(ValueError, match="X_train has 2 features"):
        ax.make_router(named, read, frame[["a", "c"]], "X_train")
    pd.testing.assert_frame_equal(frame, copy)


# ------------------------------------------------------------------ node statistics


@pytest.mark.parametrize(
    "objective, params, weights",
    [
        ("reg:squarederror", {}, False),
        ("reg:squarederror", {"reg_lambda": 3.0, "alpha": 0.5}, True),
        ("binary:logistic", {}, False),
        ("binary:logistic", {"max_delta_step": 0.3, "scale_pos_weight": 2.0}, True),
        ("multi:softprob", {}, False),
        ("multi:softprob", {"reg_lambda": 0.0}, True),
        ("count:poisson", {}, False),
        ("reg:gamma", {}, True),
        ("reg:tweedie", {}, False),
        ("reg:pseudohubererror", {}, False),
        ("reg:squaredlogerror", {}, False),
        ("reg:absoluteerror", {}, False),
        ("reg:squarederror", {"num_parallel_tree": 2}, False),
    ],
)
def test_first_iteration_node_sums_and_gains(objective, params, weights):
    bst, X, y, w, d = train(objective, rounds=2, nan=0.1, weights=weights, max_depth=6,
                            **params)
    read = ax.read_model(bst)
    forest, score = read.forest, read.split_score
    first = np.flatnonzero(forest.tree_iteration == 0)
    router = ax.make_router(bst, read, X, "X")
    leaves = router.leaf_nodes(0, first.size)
    raw = np.tile(forest.base_score.astype(np.float32), (len(X), 1))
    g, h = read.objective.grad_hess(y, raw if forest.n_outputs > 1 else raw[:, 0], w)
    g, h = g.reshape(len(X), -1), h.reshape(len(X), -1)
    checked = 0
    for t in first:
        tree, k = forest.trees[t], forest.tree_class[t]
        sums = gains.node_sums(tree, leaves[:, t], g[:, k], h[:, k])
        np.testing.assert_allclose(sums.H, tree.host_hessian, rtol=1e-6, atol=1e-9)
        inner = tree.internal_nodes
        B = gains.biased_gain(tree, sums, score)[inner]
        L, R = tree.left[inner], tree.right[inner]
        children = (gains.node_score(sums.G[L], sums.H[L], score, weight_form=True)
                    + gains.node_score(sums.G[R], sums.H[R], score, weight_form=True))
        parent = gains.node_score(sums.G[inner], sums.H[inner], score)
        tol = 1e-5 * np.maximum(np.abs(children), np.abs(parent))
        np.testing.assert_array_less(np.abs(B - tree.host_gain[inner]), tol + 1e-12)
        checked += inner.size
    assert checked >= 10


@pytest.mark.parametrize("version, raw_gradient", [([3, 2, 0], True), ([3, 3, 0], True),
                                                  ([3, 4, 1], False), ([4, 0, 0], False)])
def test_rules_follow_the_version_that_wrote_the_model(version, raw_gradient):
    """XGBoost 3.4 scores a clipped weight with L1's own term (the soft-thresholded form) and
    made its L1 objectives smoothed surrogates: the model's version decides, not the
    installed one (the installed XGBoost's own gains and hessians check both:
    test_alpha_with_max_delta_step, test_first_iteration_node_sums_and_gains)."""
    bst, *_ = train("reg:squarederror", rounds=1, max_depth=2, alpha=0.5, max_delta_step=0.4)
    js = json.loads(bst.save_raw("json"))
    js["version"] = version
    assert ax.parse_model(js).split_score.raw_gradient_score is raw_gradient
    for objective, name in (("reg:absoluteerror", "absolute_error"),
                            ("reg:quantileerror", "quantile")):
        js["learner"]["objective"] = json.loads(
            train(objective, rounds=1, max_depth=2, quantile_alpha=0.3)[0].save_config()
        )["learner"]["objective"]
        read = ax.parse_model(js).objective
        assert read.name == (name if raw_gradient else f"smooth_{name}")
        assert read.renews_leaves is raw_gradient


@pytest.mark.parametrize("left, right, message", [
    ([1, -1, 0], [2, -1, 1], "node 0: left_children/right_children reach it twice"),  # a cycle
    ([1, 3, -1, -1], [2, 3, -1, -1], "node 3: left_children/right_children reach it twice"),
    ([1, -1], [-1, -1], "node 0: left_children is 1 and right_children -1: a node has two"),
    ([1, -2, -1], [2, -1, -1], "node 1: left_children is -2, outside -1..2"),
    ([1, -1, -1], [5, -1, -1], "node 0: right_children is 5, outside -1..2"),
])
def test_reachable_names_the_first_faulty_node(left, right, message):
    """The walk from the root refuses children XGBoost's loader would crash on or misread,
    naming the first faulty node; unreached nodes are not inspected."""
    from unbiased_criteria.adapters.xgboost.layout import _reachable

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _reachable(np.array(left), np.array(right), 7)
    # a tombstone (unreached) may hold anything
    np.testing.assert_array_equal(_reachable(np.array([1, -1, -1, 9]), np.array([2, -1, -1, -5])),
                                  [True, True, True, False])


def test_reachable_without_a_walk_only_where_the_walk_reaches_every_node():
    """The walk is skipped only when the ids prove every node is reached once: on random
    child arrays (well formed, shuffled, cyclic, shared, out of range) the shortcut never
    answers where the walk would raise or leave a node out, and it answers for real trees."""
    from unbiased_criteria.adapters.xgboost.layout import _every_node_reached, _walk

    rng = np.random.default_rng(3)
    shortcut = walked_all = 0
    for case in range(3000):
        n = int(rng.integers(1, 12)) * 2 - 1
        left, right = np.full(n, -1), np.full(n, -1)
        free = list(range(1, n))  # grow a well-formed tree with children after parents
        open_ = [0]
        while free:
            v = open_.pop(int(rng.integers(len(open_))))
            left[v], right[v] = free.pop(0), free.pop(0)
            open_ += [left[v], right[v]]
        if case % 3:  # then break it, or not
            kind = int(rng.integers(4))
            a = left if rng.random() < 0.5 else right
            at = int(rng.integers(n))
            if kind == 0:
                a[at] = int(rng.integers(-3, n + 2))
            elif kind == 1:
                perm = rng.permutation(n)
                perm[0] = 0 if rng.random() < 0.5 else perm[0]
                inv = np.argsort(perm)
                left = np.where(left >= 0, inv[np.maximum(left, 0)], left)[perm]
                right = np.where(right >= 0, inv[np.maximum(right, 0)], right)[perm]
            elif kind == 2:
                left, right = np.append(left, -1), np.append(right, -1)  # a tombstone
            else:
                a[at] = a[int(rng.integers(n))]
        fast = _every_node_reached(left, right)
        try:
            reached = _walk(left, right, 0)
        except ValueError:
            reached = None
        everything = reached is not None and bool(reached.all())
        assert not fast or everything, (left, right)
        shortcut += fast
        walked_all += everything
    assert shortcut > 1000 and walked_all > shortcut  # both kinds were drawn
    booster = train(rounds=3, max_depth=0, max_leaves=15, grow_policy="lossguide")[0]
    for tree in json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"][
            "trees"]:
        assert _every_node_reached(np.array(tree["left_children"]),
                                   np.array(tree["right_children"]))


DATA = __import__("pathlib").Path(__file__).parent / "data"


def _relabel_version(raw: bytes, fmt: str, minor: int) -> bytes:
    """``raw`` (a model of the installed XGBoost) as if XGBoost 3.``minor`` had written it."""
    if fmt == "json":
        js = json.loads(raw)
        js["version"] = [3, minor, 0]
        return json.dumps(js).encode()
    at = raw.rfind(b"version")
    head, tail = raw[:at], raw[at:]
    major, old_minor = (int(v) for v in xgboost.__version__.split(".")[:2])
    old = b"i" + bytes([major]) + b"i" + bytes([old_minor])
    assert old in tail
    return head + tail.replace(old, b"i\x03i" + bytes([minor]), 1)


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_a_model_file_is_read_by_the_rules_of_the_version_that_wrote_it(fmt, tmp_path):
    """XGBoost 3.4 loading a 3.2 file records 3.4 in the Booster's JSON: the file was read by
    the installed version's rules (B off where alpha and max_delta_step meet). The loader
    keeps the file's version."""
    from unbiased_criteria.cli import load_model

    bst = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(np.random.default_rng(0)
                                                                 .normal(size=(50, 2)),
                                                                 np.arange(50.0)), 2)
    installed = compat.model_version(None)
    other = 2 if installed >= (3, 4) else 4  # the other side of the 3.4 rule change
    path = tmp_path / f"m.{fmt}"
    path.write_bytes(_relabel_version(bytes(bst.save_raw(fmt)), fmt, other))
    loaded = load_model(path).model
    read = ax.read_model(loaded)
    js = json.loads(loaded.save_raw("json"))
    assert compat.model_version(js) == (3, other)
    assert read.split_score.raw_gradient_score == compat.scores_with_raw_gradient((3, other))
    # a file of the installed version carries no attribute
    same = tmp_path / f"same.{fmt}"
    same.write_bytes(bytes(bst.save_raw(fmt)))
    assert compat.FILE_VERSION_ATTR not in load_model(same).model.attributes()


def test_a_3_2_model_file_matches_its_own_loss_changes():
    """Oracle on any installed version (the CI's 3.4 step is the one that tells): a model
    XGBoost 3.2 wrote with alpha and max_delta_step, given as a file path."""
    import unbiased_criteria as uc
    from unbiased_criteria.cli import load_model

    model = load_model(DATA / "xgboost_3.2_alpha_max_delta_step.json").model
    model.set_param({"alpha": 3.0, "max_delta_step": 0.2})  # a file does not keep them
    rng = np.random.default_rng(12)  # the rows the model was trained on
    X = rng.normal(size=(600, 4)).astype(np.float32)
    y = X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=600)
    report = uc.unbiased_importance(model, X, y, X[:300], y[:300], random_state=0)
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=2e-3, atol=1e-5)


def test_an_objective_the_core_does_not_have_is_one_clear_error():
    """binary:hinge: the reader's note was wrapped in a second 'pass objective=' sentence."""
    import unbiased_criteria as uc

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(float)
    bst = xgb.train({"objective": "binary:hinge", "max_depth": 2, "nthread": 1},
                    xgb.DMatrix(X, y), 3)
    with pytest.raises(ValueError) as err:
        uc.unbiased_importance(bst, X, y, X, y)
    assert str(err.value) == ("objective 'binary:hinge' has no equivalent in the core: pass "
                              "objective= (a callable f(y, raw_score, weight) -> (grad, hess))")
    with pytest.raises(ValueError, match="'binary:hinge' has no equivalent in the core: pass"):
        uc.unbiased_importance(bst, X, y, X[:100], y[:100], objective="binary:hinge")
    # the callable it asks for works
    report = uc.unbiased_importance(
        bst, X, y, X[:100], y[:100],
        objective=lambda y, raw, w: (raw - y, np.ones_like(raw)))
    assert len(report.splits) > 0


def test_plain_values_in_a_categorical_feature_are_said_to_be_codes():
    """A model trained on a category column of integers (3, 7, 11, 50, 100), given the
    column as plain int64: XGBoost (and so the replay) reads the values as category codes,
    silently; U of that feature changed sign. A warning now says so."""
    import unbiased_criteria as uc

    if compat._version_tuple(xgboost.__version__) < (3, 1):
        pytest.skip("the model stores its categories from XGBoost 3.1")
    rng = np.random.default_rng(0)
    vals = np.array([3, 7, 11, 50, 100])
    c = vals[rng.integers(0, 5, 1000)]
    X = pd.DataFrame({"c": pd.Categorical(c, categories=vals), "x": rng.normal(size=1000)})
    y = (c == 7) * 1.0 + X["x"].to_numpy() + rng.normal(size=1000)
    bst = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X[:500], y[:500],
                                                              enable_categorical=True), 4)
    plain = X[500:].assign(c=X["c"][500:].astype("int64"))
    with pytest.warns(UserWarning, match=r"X_valid's column 'c' is a categorical feature of "
                                         r"the model \(categories \[3, 7, 11, 50, 100\]\) but "
                                         r"holds int64 values: they are read as category "
                                         r"codes 0..4"):
        uc.unbiased_importance(bst, X[:500], y[:500], plain, y[500:])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the category column itself: nothing to say
        uc.unbiased_importance(bst, X[:500], y[:500], X[500:], y[500:])
    # text is not codes either: one error naming the column, before XGBoost's own
    text = X[500:].assign(c=X["c"][500:].astype(str))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"X_valid's column 'c' is a categorical feature "
                                             r"of the model .* holds (object|str) values: "
                                             r"pass it as a pandas category"):
            uc.unbiased_importance(bst, X[:500], y[:500], text, y[500:])


def test_best_iteration_note_names_the_slice_the_estimator_predicts_with():
    """The note said the scikit-learn predict stops at best_iteration but not how to score
    those iterations only: the slice it names predicts as the estimator does (the oracle) and
    reads without the note."""
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(1500, 3)), rng.normal(size=(1500, 3))
    y, yv = X[:, 0] + rng.normal(size=1500), Xv[:, 0] + rng.normal(size=1500)
    est = xgb.XGBRegressor(n_estimators=200, max_depth=3, early_stopping_rounds=3,
                           n_jobs=1).fit(X, y, eval_set=[(Xv, yv)], verbose=False)
    booster = est.get_booster()
    assert est.best_iteration + 1 < booster.num_boosted_rounds()
    note = [m for m in ax.read_model(est).notes if "best_iteration" in m]
    assert len(note) == 1
    # the cut was chosen on eval_set: the note says not to measure U on those rows
    assert "held-out rows that did not choose best_iteration" in note[0]
    assert "biased upward" in note[0]
    stop = int(re.search(r"booster\[:(\d+)\]", note[0]).group(1))
    cut = booster[:stop]
    np.testing.assert_array_equal(cut.predict(xgb.DMatrix(Xv)), est.predict(Xv))
    assert not [m for m in ax.read_model(cut).notes if "best_iteration" in m]


def test_custom_objective_note_is_answered_by_objective():
    """A Booster trained with obj= keeps reg:squarederror and base_score 0.5: the reader asks
    for objective=, and giving it (a name or a callable) silences the request; it did not."""
    import warnings

    import unbiased_criteria as uc

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3))
    y, yv = X[:, 0] + rng.normal(size=1000), Xv[:, 0] + rng.normal(size=1000)
    bst = xgb.train({"nthread": 1, "max_depth": 3}, xgb.DMatrix(X, y), 5,
                    obj=lambda p, d: (p - d.get_label(), np.ones_like(p)))
    with pytest.warns(UserWarning, match=r"custom objective \(obj=\) leaves: if the model "
                                         r"was trained with one, pass objective="):
        uc.unbiased_importance(bst, X, y, Xv, yv)
    for objective in ("reg:squarederror", lambda y, raw, w: (raw - y, np.ones_like(raw))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            uc.unbiased_importance(bst, X, y, Xv, yv, objective=objective)
            uc.prune(bst, X, y, Xv, yv, objective=objective)


def test_custom_objective_note_with_num_class_and_no_objective():
    """xgb.train({"num_class": 3}, obj=f) stores multi:softmax, XGBoost's choice for params
    naming no objective, and base_score 0.5, which XGBoost 3.1+ estimates for several
    classes otherwise: the reader's note asks for objective= as it does for
    reg:squarederror (it said nothing); a model XGBoost trained itself gets no note."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = np.digitize(X[:, 0] + rng.normal(size=500), [-1.0, 0.5]).astype(float)

    def softmax(preds, dmat):
        p = np.exp(preds - preds.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return p - np.eye(3)[dmat.get_label().astype(int)], 2 * p * (1 - p)

    params = {"num_class": 3, "max_depth": 2, "nthread": 1}
    custom = xgb.train(params, xgb.DMatrix(X, y), 2, obj=softmax)
    own = xgb.train(params, xgb.DMatrix(X, y), 2)
    assert json.loads(custom.save_config())["learner"]["objective"]["name"] == "multi:softmax"
    noted = [m for m in ax.read_model(custom).notes if "custom objective" in m]
    if compat.model_version() >= (3, 1):  # multi-class intercepts estimated from 3.1
        assert noted and "base_score is 0.5 with multi:softmax" in noted[0]
    else:
        assert not noted
    assert not [m for m in ax.read_model(own).notes if "custom objective" in m]


def test_no_best_iteration_note_when_it_is_the_last_iteration():
    """EarlyStopping(save_best=True) returns the model up to best_iteration, and early
    stopping that runs to the last round keeps it there: the note asked to pass the slice
    of the whole model (LightGBM's reader already said nothing then)."""
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(800, 3)), rng.normal(size=(400, 3))
    y, yv = X[:, 0] + rng.normal(size=800), Xv[:, 0] + rng.normal(size=400)
    stopper = xgb.callback.EarlyStopping(rounds=2, save_best=True)
    bst = xgb.train({"max_depth": 2, "nthread": 1, "eta": 0.5}, xgb.DMatrix(X, y), 60,
                    evals=[(xgb.DMatrix(Xv, yv), "v")], callbacks=[stopper],
                    verbose_eval=False)
    assert bst.num_boosted_rounds() == bst.best_iteration + 1 < 60
    assert not [m for m in ax.read_model(bst).notes if "best_iteration" in m]
    longer = xgb.train({"max_depth": 2, "nthread": 1, "eta": 0.5}, xgb.DMatrix(X, y),
                       bst.num_boosted_rounds() + 5, evals=[(xgb.DMatrix(Xv, yv), "v")],
                       early_stopping_rounds=50, verbose_eval=False)
    if longer.best_iteration + 1 < longer.num_boosted_rounds():
        assert [m for m in ax.read_model(longer).notes if "best_iteration" in m]
