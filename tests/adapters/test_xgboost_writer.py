"""XGBoost writer: written models load in XGBoost and predict what the IR predicts."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

xgboost = pytest.importorskip("xgboost")
xgb = xgboost

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.trees import collapse_nodes, make_tree, route_rows  # noqa: E402

N = 800


def make_data(kind, seed=0, nan=0.1):
    """Float32 features with NaN, and labels for ``kind``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 6)).astype(np.float32)
    X[rng.random(X.shape) < nan] = np.nan
    s = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    noise = rng.normal(size=N)
    if kind == "binary":
        y = (s + noise > 0).astype(float)
    elif kind == "multiclass":
        y = np.digitize(s + noise, [-0.5, 0.5]).astype(float)
    else:
        y = s + noise
    return X, y


OBJECTIVES = {"regression": "reg:squarederror", "binary": "binary:logistic",
              "multiclass": "multi:softprob"}


def train(kind="regression", rounds=4, **params):
    X, y = make_data(kind)
    d = xgb.DMatrix(X, y)
    params = {"objective": OBJECTIVES[kind], "max_depth": 7, "eta": 0.3, "nthread": 2,
              "reg_lambda": 0.5, **params}
    if kind == "multiclass":
        params["num_class"] = 3
    return xgb.train(params, d, rounds), X, y, d


def cat_model(rounds=4):
    rng = np.random.default_rng(1)
    a = rng.normal(size=N).astype(np.float32)
    a[rng.random(N) < 0.1] = np.nan
    c = rng.integers(0, 12, N)
    frame = pd.DataFrame({"a": a, "c": pd.Categorical(c, categories=range(12))})
    frame.loc[rng.random(N) < 0.1, "c"] = np.nan
    y = np.nan_to_num(a) + np.isin(c, [1, 4, 5, 9]) * 2.0 + rng.normal(size=N) * 0.3
    d = xgb.DMatrix(frame, y, enable_categorical=True)
    bst = xgb.train({"max_depth": 7, "max_cat_to_onehot": 1, "nthread": 2, "reg_lambda": 0.1},
                    d, rounds)
    codes = frame["c"].cat.codes.to_numpy().astype(np.float64)
    codes[codes < 0] = np.nan
    return bst, np.column_stack([frame["a"].to_numpy(np.float64), codes]), d


def margin(bst, d):
    return bst.predict(d, output_margin=True).reshape(d.num_row(), -1)


def trees_json(bst):
    return json.loads(bst.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]


def random_collapse(forest, seed=0, rate=0.2):
    rng = np.random.default_rng(seed)
    trees = [collapse_nodes(t, rng.random(t.n_nodes) < rate)[0] for t in forest.trees]
    return forest.with_trees(trees)


@pytest.fixture(scope="module", params=["regression", "binary", "multiclass", "categorical"])
def model(request):
    if request.param == "categorical":
        return cat_model()
    bst, X, y, d = train(request.param)
    return bst, X.astype(np.float64), d


def test_round_trip_is_the_identity(model):
    bst, X, d = model
    read = ax.read_model(bst)
    assert max(t.max_depth for t in read.forest.trees) >= 6  # the deep-tree predictor path
    new = ax.write_model(bst, read.forest)
    assert isinstance(new, xgb.Booster) and new is not bst
    np.testing.assert_allclose(margin(new, d), margin(bst, d), atol=1e-6, rtol=0)
    # every per-node array is written back as read (XGBoost's ids have siblings adjacent)
    for old, written in zip(trees_json(bst), trees_json(new)):
        assert old == written
    lmp = json.loads(new.save_raw("json"))["learner"]["learner_model_param"]
    assert lmp == json.loads(bst.save_raw("json"))["learner"]["learner_model_param"]


def test_collapsed_model_predicts_the_ir(model):
    bst, X, d = model
    read = ax.read_model(bst)
    pruned = random_collapse(read.forest)
    assert sum(t.n_nodes for t in pruned.trees) < sum(t.n_nodes for t in read.forest.trees)
    new = ax.write_model(bst, pruned)
    np.testing.assert_allclose(margin(new, d), pruned.raw_score(X), atol=1e-5, rtol=0)
    # pred_leaf gives the new ids, and the re-read model is the written forest
    leaves = new.predict(d, pred_leaf=True).reshape(len(X), -1).astype(int)
    reread = ax.read_model(new).forest
    for t, tree in enumerate(pruned.trees):
        np.testing.assert_array_equal(leaves[:, t], route_rows(tree, X))
        np.testing.assert_array_equal(reread.trees[t].left, tree.left)
        np.testing.assert_array_equal(reread.trees[t].value[tree.is_leaf],
                                      np.float32(tree.value[tree.is_leaf]))
    # collapsed nodes keep XGBoost's own leaf value for them: eta * base_weight
    for old, written in zip(trees_json(bst), trees_json(new)):
        leaf = np.asarray(written["left_children"]) < 0
        assert np.array_equal(np.asarray(written["base_weights"])[leaf],
                              np.asarray(written["split_conditions"])[leaf])
        inner_old = np.asarray(old["base_weights"])[np.asarray(old["left_children"]) >= 0]
        inner_new = np.asarray(written["base_weights"])[~leaf]
        assert set(inner_new.tolist()) <= set(inner_old.tolist())


def test_collapse_to_stumps_and_single_leaves():
    bst, X, y, d = train("binary")
    read = ax.read_model(bst)
    trees = []
    for i, t in enumerate(read.forest.trees):
        collapse = np.zeros(t.n_nodes, dtype=bool)
        collapse[0 if i % 2 else t.left[0]] = True
        trees.append(collapse_nodes(t, collapse)[0])
    forest = read.forest.with_trees(trees)
    new = ax.write_model(bst, forest)
    assert trees_json(new)[1]["tree_param"]["num_nodes"] == "1"
    np.testing.assert_allclose(margin(new, d), forest.raw_score(X), atol=1e-5, rtol=0)


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_written_model_loads_in_a_fresh_process(tmp_path, fmt):
    bst, X, d = cat_model()
    read = ax.read_model(bst)
    pruned = random_collapse(read.forest, seed=3)
    new = ax.write_model(bst, pruned)
    path = tmp_path / f"model.{fmt}"
    new.save_model(str(path))
    np.save(tmp_path / "X.npy", X)
    code = (
        "import sys, numpy as np, xgboost as xgb\n"
        "b = xgb.Booster(model_file=sys.argv[1])\n"
        "X = np.load(sys.argv[2])\n"
        "d = xgb.DMatrix(X, feature_names=['a', 'c'], feature_types=['float', 'c'],"
        " enable_categorical=True)\n"
        "np.save(sys.argv[3], b.predict(d, output_margin=True))\n"
    )
    out = tmp_path / "pred.npy"
    subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "X.npy"), str(out)],
                   check=True, capture_output=True, timeout=120)
    np.testing.assert_allclose(np.load(out), pruned.raw_score(X)[:, 0], atol=1e-5, rtol=0)


def test_training_params_are_kept():
    bst, X, y, d = train("regression", eta=0.1, reg_lambda=2.0, max_depth=6)
    new = ax.write_model(bst, random_collapse(ax.read_model(bst).forest))
    param = json.loads(new.save_config())["learner"]["gradient_booster"]["tree_train_param"]
    assert float(param["eta"]) == pytest.approx(0.1) and float(param["lambda"]) == 2.0
    assert float(param["max_depth"]) == 6
    assert ax.read_model(new).warnings == ()


@pytest.mark.parametrize("cls, kind", [(xgb.XGBRegressor, "regression"),
                                       (xgb.XGBClassifier, "binary"),
                                       (xgb.XGBClassifier, "multiclass")])
def test_sklearn_model_in_same_class_out(cls, kind):
    X, y = make_data(kind)
    est = cls(n_estimators=4, max_depth=6, learning_rate=0.2).fit(X, y)
    before = est.get_booster().save_raw("json")
    before_pred = est.predict(X)
    read = ax.read_model(est)
    pruned = random_collapse(read.forest, seed=5)
    out = ax.write_model(est, pruned)
    assert type(out) is cls and out is not est and out.get_booster() is not est.get_booster()
    np.testing.assert_allclose(out.predict(X, output_margin=True).reshape(len(X), -1),
                               pruned.raw_score(X), atol=1e-5, rtol=0)
    assert out.get_params() == est.get_params()
    assert out.feature_importances_.shape == (X.shape[1],)
    if cls is xgb.XGBClassifier:
        assert out.predict_proba(X).shape == (len(X), max(int(y.max()) + 1, 2))
        np.testing.assert_array_equal(out.classes_, est.classes_)
    # the caller's model is untouched
    assert est.get_booster().save_raw("json") == before
    np.testing.assert_array_equal(est.predict(X), before_pred)


def test_changed_base_score_is_written():
    from dataclasses import replace

    bst, X, y, d = train("binary")
    forest = ax.read_model(bst).forest
    shifted = replace(forest, base_score=forest.base_score + 0.25)
    new = ax.write_model(bst, shifted)
    np.testing.assert_allclose(margin(new, d), shifted.raw_score(X), atol=1e-5, rtol=0)
    text = json.loads(new.save_raw("json"))["learner"]["learner_model_param"]["base_score"]
    assert text.startswith("[")


def test_non_adjacent_siblings_are_renumbered():
    bst, X, y, d = train("regression", max_depth=7)
    forest = ax.read_model(bst).forest
    tree = forest.trees[0]
    # swap the ids of the children of every deepest split: siblings stay adjacent but in the
    # wrong order (deep, below the levels XGBoost's predictor lays out as an array)
    perm = np.arange(tree.n_nodes)
    inner = tree.internal_nodes
    deep = inner[tree.depth[inner] == tree.depth[inner].max()]
    assert tree.depth[deep[0]] >= 6
    perm[tree.left[deep]], perm[tree.right[deep]] = tree.right[deep], tree.left[deep]
    inv = np.argsort(perm)

    def move(a):
        return np.asarray(a)[inv]

    def ids(child):
        return np.where(child >= 0, perm[np.maximum(child, 0)], -1)

    cats = {int(perm[v]): tree.category_set(v) for v in np.flatnonzero(tree.categorical)}
    swapped = make_tree(
        move(ids(tree.left)), move(ids(tree.right)), move(tree.feature), move(tree.threshold),
        move(tree.value), default_left=move(tree.default_left), missing=move(tree.missing),
        categorical=move(tree.categorical), cat_sets=cats, host_gain=move(tree.host_gain),
        host_hessian=move(tree.host_hessian), shrinkage=tree.shrinkage, rules=tree.rules,
    )
    forest2 = forest.with_trees((swapped,) + forest.trees[1:])
    np.testing.assert_array_equal(forest2.raw_score(X), forest.raw_score(X))
    new = ax.write_model(bst, forest2)
    np.testing.assert_allclose(margin(new, d), margin(bst, d), atol=1e-6, rtol=0)


def test_dart_with_unit_weights_round_trip():
    bst, X, y, d = train("regression", booster="dart", rate_drop=0.0, max_depth=6)
    forest = random_collapse(ax.read_model(bst).forest)
    new = ax.write_model(bst, forest)
    np.testing.assert_allclose(margin(new, d), forest.raw_score(X), atol=1e-5, rtol=0)


def test_tombstoned_model_is_written_compact():
    bst, X, y, d = train("regression", tree_method="exact", gamma=3.0, max_depth=6, rounds=3)
    read = ax.read_model(bst)
    new = ax.write_model(bst, read.forest)
    assert all(t["tree_param"]["num_deleted"] == "0" for t in trees_json(new))
    np.testing.assert_allclose(margin(new, d), margin(bst, d), atol=1e-6, rtol=0)


def test_unsupported_models_are_refused():
    X, y = make_data("regression")
    d = xgb.DMatrix(X, y)
    linear = xgb.train({"booster": "gblinear"}, d, 2)
    dart = xgb.train({"booster": "dart", "rate_drop": 0.5, "skip_drop": 0.0, "max_depth": 3},
                     d, 4)
    tree_model, *_ = train("regression", rounds=4)
    forest = ax.read_model(tree_model).forest
    for bad in (linear, dart):
        with pytest.raises(UnsupportedModelError):
            ax.write_model(bad, forest)
    lgb_like = forest.with_trees(
        [collapse_nodes(t, np.zeros(t.n_nodes, bool))[0] for t in forest.trees]
    )
    from dataclasses import replace

    from unbiased_criteria.trees import DecisionRules

    other = lgb_like.with_trees([replace(t, rules=DecisionRules()) for t in lgb_like.trees])
    with pytest.raises(ValueError, match="decision rules"):
        ax.write_model(tree_model, other)
    three = ax.read_model(train("multiclass", rounds=1)[0]).forest
    with pytest.raises(ValueError, match="outputs"):
        ax.write_model(tree_model, three)
