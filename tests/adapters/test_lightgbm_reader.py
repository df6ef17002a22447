"""LightGBM reader and router: LightGBM itself is the oracle (predict, pred_leaf, node stats)."""

from __future__ import annotations

import numpy as np
import pytest
from _lightgbm_data import labels
from _lightgbm_data import make_data as _make_data

lightgbm = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")
from scipy import sparse  # noqa: E402
from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402
from unbiased_criteria.adapters.lightgbm.writer import split_text  # noqa: E402

from unbiased_criteria import gains, trees  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.objectives import (  # noqa: E402
    AbsoluteError,
    Fair,
    Gamma,
    Huber,
    Logistic,
    Mape,
    OneVsRest,
    Poisson,
    Quantile,
    Softmax,
    SquaredError,
    Tweedie,
)

N = 600
BASE = dict(
    num_leaves=7, learning_rate=0.2, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1.0,
    verbose=-1, deterministic=True, num_threads=1,
)


def make_data(n: int = N, seed: int = 0):
    return _make_data(n, seed)



def train(kind="regression", rounds=5, weight=None, keep=False, X=None, y=None, **params):
    Xd, signal, rng = make_data()
    X = Xd if X is None else X
    y = labels(kind, signal, rng) if y is None else y
    p = {**BASE, "objective": kind, **params}
    if kind in ("multiclass", "multiclassova"):
        p.setdefault("num_class", 3)
    ds = lightgbm.Dataset(X, y, weight=weight, categorical_feature=[2, 3], free_raw_data=False)
    booster = lightgbm.train(p, ds, rounds, keep_training_booster=keep)
    return booster, X, y


def host_raw(booster, X) -> np.ndarray:
    return booster.predict(X, raw_score=True, num_iteration=-1).reshape(X.shape[0], -1)


# --------------------------------------------------------------------------- IR evaluation


@pytest.mark.parametrize(
    "kind,params",
    [
        ("regression", {}),
        ("binary", {}),
        ("multiclass", {}),
        ("regression", {"use_missing": False}),
        ("regression", {"zero_as_missing": True}),
        ("poisson", {"lambda_l2": 1.0}),
    ],
)
def test_ir_evaluation_equals_host_raw_score(kind, params):
    booster, X, _ = train(kind, **params)
    read = adapter.read_model(booster)
    np.testing.assert_allclose(read.forest.raw_score(X), host_raw(booster, X), rtol=0, atol=1e-9)
    # rows that probe the routing rules: NaN, exact zero, tiny, unseen / negative / fractional
    # categories
    probe = np.array(
        [[np.nan, 0.0, 9.0, np.nan], [0.0, 1e-40, -1.0, 2.9], [1e-36, np.nan, 2.9, 7.0],
         [-0.0, -1e-36, np.nan, -3.0], [5.0, 0.0, 100.0, 0.0]]
    )
    np.testing.assert_allclose(
        read.forest.raw_score(probe), host_raw(booster, probe), rtol=0, atol=1e-9
    )


def test_missing_types_are_read():
    for params, code in [({"use_missing": False}, trees.MISSING_NONE),
                         ({"zero_as_missing": True}, trees.MISSING_ZERO),
                         ({}, trees.MISSING_NAN)]:
        booster, _, _ = train("regression", rounds=8, **params)
        read = adapter.read_model(booster)
        numeric = [
            t.missing[i] for t in read.forest.trees for i in t.internal_nodes
            if not t.categorical[i] and t.feature[i] in (0, 1)
        ]
        assert code in numeric, params


def test_multiclass_trees_are_iteration_major():
    booster, X, _ = train("multiclass", rounds=4)
    read = adapter.read_model(booster)
    forest = read.forest
    assert forest.n_trees == 12 and forest.n_outputs == 3
    np.testing.assert_array_equal(forest.tree_class, np.tile([0, 1, 2], 4))
    np.testing.assert_array_equal(forest.tree_iteration, np.repeat([0, 1, 2, 3], 3))
    # each tree's own contribution equals the host's contribution of that tree
    for t in (0, 4, 11):
        it, k = divmod(t, 3)
        host = booster.predict(X, raw_score=True, start_iteration=it, num_iteration=1)
        np.testing.assert_allclose(forest.trees[t].predict(X), host[:, k], atol=1e-12)
    assert isinstance(read.objective, Softmax)
    assert read.objective.n_classes == 3 and read.objective.hessian_factor == 1.5


def test_categorical_sets_and_cat_l2():
    booster, X, _ = train("regression", rounds=8, cat_l2=7.0)
    read = adapter.read_model(booster)
    dump = booster.dump_model(num_iteration=-1)
    cats = {2: set(), 3: set()}
    for t, info in zip(read.forest.trees, dump["tree_info"]):
        stack = [info["tree_structure"]]
        while stack:
            node = stack.pop()
            if "split_index" not in node:
                continue
            i = node["split_index"]
            if node["decision_type"] == "==":
                assert t.categorical[i] and np.isnan(t.threshold[i])
                left = sorted(int(c) for c in node["threshold"].split("||"))
                np.testing.assert_array_equal(t.category_set(i), left)
                # eight categories: many-vs-many, cat_l2; three: one-hot, none
                assert t.l2_extra[i] == (7.0 if node["split_feature"] == 2 else 0.0)
                cats[node["split_feature"]].add(i)
            else:
                assert not t.categorical[i] and t.threshold[i] == node["threshold"]
            stack += [node["left_child"], node["right_child"]]
    assert cats[2] and cats[3], "the data must produce both kinds of categorical split"


def test_pandas_category_dtype():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    frame = pd.DataFrame(
        {
            "a": X[:, 0],
            "b": X[:, 1],
            # categories in an order that differs from the codes LightGBM stores
            "c": pd.Categorical.from_codes(X[:, 2].astype(int), list("hgfedcba")),
            "d": pd.Categorical.from_codes(X[:, 3].astype(int), ["z", "x", "y"]),
        }
    )
    booster = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(frame, y), 6)
    read = adapter.read_model(booster)
    assert read.forest.feature_names == ("a", "b", "c", "d")
    assert any(t.categorical.any() for t in read.forest.trees)
    # the IR routes pandas codes (what pandas_categorical maps categories to)
    np.testing.assert_allclose(read.forest.raw_score(X), host_raw(booster, frame), atol=1e-9)
    router = adapter.make_router(booster, read, frame, "X")
    nodes = router.leaf_nodes(0, read.forest.n_trees)
    for t, tree in enumerate(read.forest.trees):
        np.testing.assert_array_equal(nodes[:, t], trees.route_rows(tree, X))


def test_single_leaf_trees():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    # no split is possible: LightGBM keeps one constant tree holding the init score
    booster = lightgbm.train(
        {**BASE, "objective": "regression", "min_data_in_leaf": 10 * N}, lightgbm.Dataset(X, y), 3
    )
    read = adapter.read_model(booster)
    tree = read.forest.trees[0]
    assert tree.n_nodes == 1 and tree.is_leaf[0]
    np.testing.assert_allclose(read.forest.raw_score(X), host_raw(booster, X), atol=1e-12)
    assert tree.bias == pytest.approx(np.mean(np.float32(y)), rel=1e-6)
    router = adapter.make_router(booster, read, X, "X")
    assert np.all(router.leaf_nodes(0, read.forest.n_trees) == 0)


def test_single_leaf_tree_inside_a_forest():
    """A hand-edited model whose second tree is a single leaf (LightGBM's own format)."""
    booster, X, _ = train("regression", rounds=3)
    text = booster.model_to_string(num_iteration=-1)
    header, blocks, trailer = split_text(text)
    stump = (
        "num_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\ndecision_type=\n"
        "left_child=\nright_child=\nleaf_value=0.25\nleaf_weight=\nleaf_count=600\n"
        "internal_value=\ninternal_weight=\ninternal_count=\nis_linear=0\nshrinkage=0.2\n\n"
    )
    body = "".join(f"Tree={t}\n{b}" for t, b in enumerate([blocks[0], stump, blocks[2]]))
    header = "\n".join(line for line in header.split("\n") if not line.startswith("tree_sizes"))
    edited = lightgbm.Booster(model_str=header + body + trailer)
    read = adapter.read_model(edited)
    assert read.forest.trees[1].n_nodes == 1 and read.forest.trees[1].value[0] == 0.25
    np.testing.assert_allclose(read.forest.raw_score(X), host_raw(edited, X), atol=1e-12)


# --------------------------------------------------------------------------- metadata


def test_forest_metadata_and_shrinkage():
    booster, X, _ = train("regression", rounds=4, lambda_l1=0.5, lambda_l2=2.0,
                          max_delta_step=0.7)
    read = adapter.read_model(booster)
    forest = read.forest
    assert read.host == "lightgbm"
    assert forest.n_features == 4
    assert forest.feature_names == tuple(f"Column_{i}" for i in range(4))
    np.testing.assert_array_equal(forest.base_score, [0.0])
    assert forest.score_dtype == np.float64
    # tree 0 shows shrinkage 1 after AddBias; the IR keeps the learning rate
    assert [t.shrinkage for t in forest.trees] == [0.2] * 4
    assert booster.dump_model()["tree_info"][0]["shrinkage"] == 1
    # and LightGBM's kEpsilon (1e-15f), which it adds to every child's hessian sum
    assert read.split_score == gains.SplitScore(l1=0.5, l2=2.0, max_delta_step=0.7,
                                                hessian_epsilon=float(np.float32(1e-15)))
    for tree in forest.trees:
        assert tree.rules == adapter.RULES
        inner = tree.internal_nodes
        assert np.all(tree.host_count[inner] > 0) and np.all(np.isfinite(tree.host_gain[inner]))


def test_num_iteration_minus_one_reads_every_tree():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    ds = lightgbm.Dataset(X[:400], y[:400])
    valid = lightgbm.Dataset(X[400:], y[400:], reference=ds)
    booster = lightgbm.train(
        {**BASE, "objective": "regression", "learning_rate": 0.8}, ds, 30, valid_sets=[valid],
        callbacks=[lightgbm.early_stopping(2, verbose=False)], keep_training_booster=True,
    )
    assert booster.best_iteration < booster.current_iteration()
    read = adapter.read_model(booster)
    assert read.forest.n_trees == booster.num_trees()
    assert read.source.best_iteration == booster.best_iteration
    # predict stops at best_iteration: the reader says so, and how to score only those
    note = [w for w in read.notes
            if f"best_iteration is {booster.best_iteration} of {booster.current_iteration()}" in w]
    assert len(note) == 1
    # the cut was chosen on valid_sets: the note says not to measure U on those rows
    assert "held-out rows that did not choose best_iteration" in note[0]
    assert "biased upward" in note[0]
    cut = lightgbm.Booster(
        model_str=booster.model_to_string(num_iteration=booster.best_iteration))
    read_cut = adapter.read_model(cut)
    assert read_cut.forest.n_trees == booster.best_iteration
    assert not any("best_iteration" in w for w in read_cut.warnings)


# --------------------------------------------------------------------------- init score


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass", "poisson",
                                  "cross_entropy", "gamma", "multiclassova"])
def test_data_free_bias_matches_init_score(kind):
    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    w = rng.uniform(0.5, 2.0, N)
    booster, _, _ = train(kind, rounds=2, y=y, weight=w)
    read = adapter.read_model(booster)
    assert read.bias_from_labels
    init = read.objective.init_score(y, w)
    K = read.forest.n_outputs
    for k in range(K):
        assert read.forest.trees[k].bias == pytest.approx(init[k], rel=1e-7, abs=1e-9)
    assert all(t.bias == 0 for t in read.forest.trees[K:])


@pytest.mark.parametrize(
    "kind,params",
    [("huber", {}), ("regression", {"lambda_l1": 1.0}), ("binary", {"scale_pos_weight": 2.0}),
     ("regression", {"max_delta_step": 0.1}), ("regression_l1", {}),
     ("regression", {"bagging_fraction": 0.5, "bagging_freq": 1})],
)
def test_bias_without_exact_estimate_is_nan(kind, params):
    booster, _, _ = train(kind, rounds=2, **params)
    read = adapter.read_model(booster)
    assert read.bias_from_labels and np.isnan(read.forest.trees[0].bias)
    assert read.forest.trees[1].bias == 0


def test_no_bias_without_boost_from_average_or_with_custom_objective():
    booster, _, _ = train("regression", rounds=2, boost_from_average=False)
    read = adapter.read_model(booster)
    assert not read.bias_from_labels and read.forest.trees[0].bias == 0
    assert read.forest.trees[0].shrinkage == 0.2

    X, signal, rng = make_data()
    y = labels("regression", signal, rng)

    def l2(preds, data):
        return preds - data.get_label(), np.ones_like(preds)

    custom = lightgbm.train({**BASE, "objective": l2}, lightgbm.Dataset(X, y), 2)
    read = adapter.read_model(custom)
    assert read.objective is None and not read.bias_from_labels
    obj = adapter.make_objective("regression", read)
    assert isinstance(obj, SquaredError) and obj.precision == "float64"


# --------------------------------------------------------------------------- objectives


@pytest.mark.parametrize(
    "kind,params,expected",
    [
        ("regression", {}, SquaredError(precision="float64")),
        ("binary", {"sigmoid": 1.5, "scale_pos_weight": 2.5},
         Logistic(precision="float64", sigmoid=1.5, pos_weight=2.5)),
        ("multiclassova", {"sigmoid": 2.0},
         OneVsRest(precision="float64", n_classes=3, sigmoid=2.0)),
        ("poisson", {"poisson_max_delta_step": 0.3},
         Poisson(precision="float64", max_delta_step=0.3)),
        ("gamma", {}, Gamma(precision="float64")),
        ("tweedie", {"tweedie_variance_power": 1.3},
         Tweedie(precision="float64", variance_power=1.3)),
        ("huber", {"alpha": 0.7}, Huber(precision="float64", alpha=0.7)),
        ("fair", {"fair_c": 2.0}, Fair(precision="float64", c=2.0)),
        ("regression_l1", {}, AbsoluteError(precision="float64")),
        ("quantile", {"alpha": 0.3}, Quantile(precision="float64", alpha=0.3)),
        ("mape", {}, Mape(precision="float64")),
    ],
)
def test_objective_translation(kind, params, expected):
    booster, _, _ = train(kind, rounds=1, **params)
    read = adapter.read_model(booster)
    assert read.objective == expected
    assert adapter.make_objective(kind, read) == expected


def test_make_objective_names_callables_and_is_unbalance():
    booster, _, y = train("binary", rounds=2, is_unbalance=True)
    read = adapter.read_model(booster)
    assert read.objective is None
    assert any("is_unbalance" in w for w in read.notes)
    with pytest.raises(ValueError, match="y_train"):
        adapter.make_objective("binary", read)
    obj = adapter.make_objective("binary", read, y_train=y)
    pos, neg = int(y.sum()), int(y.size - y.sum())
    assert obj.pos_weight * obj.neg_weight == pytest.approx(max(pos, neg) / min(pos, neg))
    assert adapter.make_objective("squared_error", read) == SquaredError(precision="float64")
    custom = adapter.make_objective(lambda y, f, w: (f - y, np.ones_like(f)), read)
    g, h = custom.grad_hess(np.zeros(3), np.ones(3))
    np.testing.assert_array_equal(g, 1.0)
    with pytest.raises(ValueError, match="neither"):
        adapter.make_objective("no_such_loss", read)


def test_is_unbalance_objective_reproduces_the_first_tree():
    booster, X, y = train("binary", rounds=1, is_unbalance=True, keep=True)
    read = adapter.read_model(booster)
    obj = adapter.make_objective("binary", read, y_train=y)
    tree = read.forest.trees[0]
    init = obj.init_score(y)[0]
    g, h = obj.grad_hess(y, np.full(N, init))
    sums = gains.node_sums(tree, trees.route_rows(tree, X), g, h)
    inner = tree.internal_nodes
    B = gains.biased_gain(tree, sums, read.split_score)
    np.testing.assert_allclose(B[inner], tree.host_gain[inner], rtol=1e-6)


# --------------------------------------------------------------------------- first tree stats


@pytest.mark.parametrize(
    "kind,params,weighted",
    [
        ("regression", {}, False),
        ("regression", {}, True),
        ("binary", {}, False),
        ("multiclass", {}, True),
        ("poisson", {}, False),
        ("regression", {"lambda_l1": 0.5, "lambda_l2": 2.0}, False),
        ("binary", {"max_delta_step": 0.3, "lambda_l2": 1.0}, True),
        ("binary", {"cat_l2": 3.0, "max_cat_to_onehot": 2}, False),
    ],
)
def test_first_trees_node_stats_and_gain(kind, params, weighted):
    """The first iteration is grown at the init score: no replay needed."""
    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    w = rng.uniform(0.5, 2.0, N) if weighted else None
    booster, _, _ = train(kind, rounds=2, y=y, weight=w, keep=True, **params)
    read = adapter.read_model(booster)
    router = adapter.make_router(booster, read, X, "X_train")
    K = read.forest.n_outputs
    nodes = router.leaf_nodes(0, K)
    init = read.objective.init_score(y, w)
    raw = np.tile(init, (N, 1))
    g, h = read.objective.grad_hess(y, raw if K > 1 else raw[:, 0], w)
    g, h = g.reshape(N, K), h.reshape(N, K)
    n_checked = 0
    for k in range(K):
        tree = read.forest.trees[k]
        inner = tree.internal_nodes
        sums = gains.node_sums(tree, nodes[:, k], g[:, k], h[:, k])
        # float32 hessians summed in double: equal up to the rounding of single rows
        np.testing.assert_allclose(sums.H, tree.host_hessian, rtol=1e-7)
        np.testing.assert_array_equal(sums.n, tree.host_count)
        B = gains.biased_gain(tree, sums, read.split_score)
        np.testing.assert_allclose(B[inner], tree.host_gain[inner], rtol=1e-6)
        n_checked += inner.size
    assert n_checked >= 3 * K - 1


# --------------------------------------------------------------------------- unsupported


@pytest.mark.parametrize(
    "params,match",
    [
        ({"boosting": "dart"}, "DART"),
        ({"linear_tree": True}, "linear trees"),
        ({"objective": "regression", "reg_sqrt": True}, "reg_sqrt"),
    ],
)
def test_unsupported_models_are_refused(params, match):
    params = {"objective": "regression", **params}
    kind = params.pop("objective")
    booster, _, _ = train(kind, rounds=2, **params)
    with pytest.raises(UnsupportedModelError, match=match):
        adapter.read_model(booster)


def test_ranking_is_refused():
    X, signal, rng = make_data()
    y = np.clip(np.round(signal), 0, 3)
    ds = lightgbm.Dataset(X, y, group=[100] * 6)
    booster = lightgbm.train({**BASE, "objective": "lambdarank"}, ds, 2)
    with pytest.raises(UnsupportedModelError, match="ranking"):
        adapter.read_model(booster)


@pytest.mark.parametrize(
    "params,word",
    [
        ({"bagging_fraction": 0.5, "bagging_freq": 1}, "bagging"),
        ({"pos_bagging_fraction": 0.5, "bagging_freq": 1}, "bagging"),
        ({"data_sample_strategy": "goss"}, "GOSS"),
        ({"use_quantized_grad": True}, "use_quantized_grad"),
        ({"monotone_constraints": [1, 0, 0, 0]}, "monotone"),
        ({"feature_contri": [0.5, 1, 1, 1]}, "feature_contri"),
        ({"path_smooth": 1.0}, "path_smooth"),
        ({"cegb_penalty_split": 0.1}, "cegb"),
    ],
)
def test_modes_that_break_host_gain_warn(params, word):
    kind = "binary" if word == "bagging" and "pos_bagging_fraction" in params else "regression"
    booster, _, _ = train(kind, rounds=2, **params)
    read = adapter.read_model(booster)
    assert any(w.startswith(word) and "unbiased gain stays valid" in w for w in read.warnings)


def test_forced_splits_are_said_and_scored_from_the_rows(tmp_path):
    """forcedsplits_filename: from the second tree on, LightGBM stores for the forced split a
    gain that is not its gain on the rows. biased_gain is that gain (numpy sums of the
    gradients at the model's own predictions: the oracle), and the reader says why
    host_gain differs (it was silent)."""
    import json

    import unbiased_criteria as uc

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3))
    y = X[:, 0] + rng.normal(size=3000)
    forced = tmp_path / "forced.json"
    forced.write_text(json.dumps({"feature": 1, "threshold": 0.0}))
    booster = lightgbm.train({**BASE, "objective": "regression", "num_leaves": 7,
                              "forcedsplits_filename": str(forced)}, lightgbm.Dataset(X, y), 3)
    assert any(w.startswith("forcedsplits_filename") for w in adapter.read_model(booster).warnings)
    with pytest.warns(UserWarning, match="forcedsplits_filename"):
        splits = uc.unbiased_importance(booster, X, y, X[:500], y[:500], random_state=0).splits
    roots = splits[splits["node"] == 0].set_index("tree")
    for t in range(3):
        g = booster.predict(X, num_iteration=t, raw_score=True) - y if t else None
        if g is None:  # the first tree starts at the mean (boost_from_average)
            g = np.full(len(y), y.mean()) - y
        left = X[:, 1] <= roots.loc[t, "threshold"]
        B = g[left].sum() ** 2 / left.sum() + g[~left].sum() ** 2 / (~left).sum() \
            - g.sum() ** 2 / len(g)
        assert roots.loc[t, "feature"] == "Column_1"
        np.testing.assert_allclose(roots.loc[t, "biased_gain"], B, rtol=1e-4)
    assert not np.isclose(roots.loc[1, "host_gain"], roots.loc[1, "biased_gain"], rtol=1e-2)


def test_plain_model_has_no_warnings():
    booster, _, _ = train("regression", rounds=2, feature_fraction=0.5, extra_trees=True)
    assert adapter.read_model(booster).warnings == ()


def test_sklearn_estimators_are_read():
    X, signal, rng = make_data()
    y = labels("multiclass", signal, rng)
    clf = lightgbm.LGBMClassifier(n_estimators=3, num_leaves=5, verbose=-1).fit(X, y)
    read = adapter.read_model(clf)
    assert read.forest.n_trees == 9
    np.testing.assert_allclose(read.forest.raw_score(X), clf.predict(X, raw_score=True),
                               atol=1e-9)
    with pytest.raises(ValueError, match="unfitted"):
        adapter.read_model(lightgbm.LGBMRegressor())
    with pytest.raises(TypeError, match="lightgbm.Booster"):
        adapter.read_model("model.txt")
    folds = lightgbm.cv({**BASE, "objective": "regression"}, lightgbm.Dataset(X, signal), 2,
                        nfold=2, stratified=False, return_cvbooster=True)["cvbooster"]
    with pytest.raises(TypeError, match="got CVBooster: it holds one Booster per fold"):
        adapter.read_model(folds)


# --------------------------------------------------------------------------- router


@pytest.mark.parametrize("kind", ["regression", "multiclass"])
def test_router_ids_are_leaves_and_agree_with_route_rows(kind):
    booster, X, _ = train(kind, rounds=4)
    read = adapter.read_model(booster)
    forest = read.forest
    router = adapter.make_router(booster, read, X, "X")
    assert router.n_rows == N
    whole = router.leaf_nodes(0, forest.n_trees)
    assert whole.dtype == np.int32 and whole.shape == (N, forest.n_trees)
    for t, tree in enumerate(forest.trees):
        assert tree.is_leaf[whole[:, t]].all()
        np.testing.assert_array_equal(whole[:, t], trees.route_rows(tree, X))
    # the leaf ids rebuild the host's raw scores
    raw = np.zeros((N, forest.n_outputs))
    for t, tree in enumerate(forest.trees):
        raw[:, forest.tree_class[t]] += tree.value[whole[:, t]]
    np.testing.assert_allclose(raw, host_raw(booster, X), atol=1e-12)

    # a tiny budget: chunks of whole iterations, same ids
    small = adapter.make_router(booster, read, X, "X", memory_budget=1)
    K = forest.n_outputs
    assert small.chunk == K
    chunks = [ids for _, _, ids in small.chunks(forest.n_trees)]
    np.testing.assert_array_equal(np.concatenate(chunks, axis=1), whole)
    # ranges that do not start or end on an iteration boundary
    np.testing.assert_array_equal(small.leaf_nodes(1, forest.n_trees - 1), whole[:, 1:-1])


def test_router_accepts_sparse_and_frames_without_modifying_them():
    booster, X, _ = train("regression", rounds=3)
    read = adapter.read_model(booster)
    expected = adapter.make_router(booster, read, X, "X").leaf_nodes(0, 3)
    dense = np.nan_to_num(X)  # sparse inputs have no NaN
    csr = sparse.csr_matrix(dense)
    want = adapter.make_router(booster, read, dense, "X").leaf_nodes(0, 3)
    for matrix in (csr, csr.tocsc(), csr.tocoo()):
        router = adapter.make_router(booster, read, matrix, "X")
        np.testing.assert_array_equal(router.leaf_nodes(0, 3), want)
    frame = pd.DataFrame(X, columns=[f"Column_{i}" for i in range(4)])
    before = frame.copy()
    np.testing.assert_array_equal(
        adapter.make_router(booster, read, frame, "X").leaf_nodes(0, 3), expected
    )
    pd.testing.assert_frame_equal(frame, before)


def test_router_bad_input():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    booster = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(frame, y), 2)
    read = adapter.read_model(booster)
    copy = X.copy()
    with pytest.raises(ValueError, match="X_valid has 3 features but the model expects 4"):
        adapter.make_router(booster, read, X[:, :3], "X_valid")
    with pytest.raises(ValueError, match="X_valid's column names"):
        adapter.make_router(booster, read, frame.rename(columns={"c": "e"}), "X_valid")
    with pytest.raises(ValueError, match="X_train is empty"):
        adapter.make_router(booster, read, X[:0], "X_train")
    with pytest.raises(ValueError, match="X_train must be 2-D"):
        adapter.make_router(booster, read, X[0], "X_train")
    np.testing.assert_array_equal(X, copy)
    # numpy input against a model trained on named columns: no names to check
    adapter.make_router(booster, read, X, "X_valid")
    other, _, _ = train("regression", rounds=1)
    with pytest.raises(ValueError, match="model_ir"):
        adapter.make_router(other, read, X, "X_valid")


def test_feature_names_with_spaces_match_lightgbms_underscores():
    X, signal, rng = make_data()
    frame = pd.DataFrame(X, columns=["x 0", "x 1", "x2", "x3"])
    y = labels("regression", signal, rng)
    booster = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(frame, y), 2)
    read = adapter.read_model(booster)
    assert read.forest.feature_names == ("x_0", "x_1", "x2", "x3")
    adapter.make_router(booster, read, frame, "X_valid")
    with pytest.raises(ValueError, match="'x 2'"):
        adapter.make_router(booster, read, frame.rename(columns={"x2": "x 2"}), "X_valid")


@pytest.mark.parametrize("rates", [[0.6] * 3 + [0.05] * 9, [0.5] + [0.02] * 11],
                         ids=["schedule", "first_round_only"])
def test_learning_rate_schedule_reads_the_first_iterations_rate_from_its_gains(rates):
    """``lightgbm.reset_parameter`` changes the rate between rounds; each tree prints its own
    shrinkage, but the first iteration's (the init score folded in, shrinkage reset to 1) is
    not stored and the parameters show the last rate. Where only the first round's rate
    differed the reader took that last rate for tree 0 without a word (refit with nothing
    pruned: predictions off by 0.2 on rmse 1.19); with a schedule it kept tree 0 as grown. The
    tree's own split gains against its leaf values tell its rate: read at the schedule's."""
    import unbiased_criteria as uc

    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    booster = lightgbm.train({**BASE, "objective": "regression"},
                             lightgbm.Dataset(X[:400], y[:400]), 12,
                             callbacks=[lightgbm.reset_parameter(learning_rate=rates)])
    read = adapter.read_model(booster)
    assert [t.shrinkage for t in read.forest.trees] == pytest.approx(rates, rel=1e-12)
    assert any(f"grown at learning rate {rates[0]:g}, not the model's learning_rate="
               f"{rates[-1]:g}" in w for w in read.notes)
    with pytest.warns(UserWarning, match="read from their split gains"):
        refit = uc.prune(booster, X[:400], y[:400], X[400:], y[400:], threshold=-np.inf,
                         refit_leaves=True, random_state=0)
    np.testing.assert_allclose(refit.predict(X), booster.predict(X), rtol=0, atol=1e-9)


def test_learning_rate_schedule_without_readable_gains_keeps_the_first_iteration_as_grown():
    """Where the first trees' values are not ``bias + rate * (-G/(H + l2))`` (here L1
    regularisation soft-thresholds G) their gains cannot tell the rate: with a schedule the
    first iteration stays as grown, and a note says why."""
    import unbiased_criteria as uc

    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    rates = [0.6] * 3 + [0.05] * 9
    booster = lightgbm.train({**BASE, "objective": "regression", "lambda_l1": 1.0},
                             lightgbm.Dataset(X[:400], y[:400]), 12,
                             callbacks=[lightgbm.reset_parameter(learning_rate=rates)])
    read = adapter.read_model(booster)
    assert any("learning rate changed during training" in w for w in read.notes)
    assert np.isnan(read.forest.trees[0].shrinkage)
    assert [t.shrinkage for t in read.forest.trees[1:]] == pytest.approx(rates[1:])
    with pytest.warns(UserWarning, match="learning rate changed"):
        refit = uc.prune(booster, X[:400], y[:400], X[400:], y[400:], threshold=-np.inf,
                         refit_leaves=True, random_state=0)
    np.testing.assert_allclose(refit.predict(X), booster.predict(X), rtol=0, atol=1e-9)
    with pytest.warns(UserWarning, match="learning rate changed"):
        pruned = uc.prune(booster, X[:400], y[:400], X[400:], y[400:], random_state=0)
    first = [t["tree_structure"] for t in (booster.dump_model()["tree_info"][0],
                                          pruned.dump_model()["tree_info"][0])]
    assert first[0] == first[1]


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass", "poisson"])
@pytest.mark.parametrize("params", [{}, {"lambda_l2": 3.0, "min_gain_to_split": 0.5},
                                    {"max_cat_to_onehot": 2, "cat_l2": 5.0}],
                         ids=["plain", "l2_min_gain", "categorical"])
def test_first_iterations_rate_read_from_its_gains_is_the_learning_rate(kind, params):
    """Without a schedule the first trees' gains give back the model's own learning rate
    (every class's tree, L2, min_gain_to_split, many-vs-many categorical splits), without a
    note."""
    booster, _, _ = train(kind, rounds=3, learning_rate=0.3, **params)
    read = adapter.read_model(booster)
    K = read.forest.n_outputs
    assert [t.shrinkage for t in read.forest.trees[:K]] == [0.3] * K
    assert not any("learning rate" in w for w in read.notes)


def test_single_leaf_trees_do_not_look_like_a_learning_rate_schedule():
    """LightGBM writes a tree of one leaf with shrinkage 1 whatever the rate (here the trees
    of a class absent from the labels): read as 'the learning rate changed', which warned and
    kept the first iteration's trees from pruning."""
    import warnings

    import unbiased_criteria as uc

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(1500, 4)), rng.normal(size=(1500, 4))
    y = np.digitize(X[:, 0] + rng.normal(size=1500), [-1, 0, 1])  # classes 0..3 of 5
    yv = np.digitize(Xv[:, 0] + rng.normal(size=1500), [-1, 0, 1])
    model = lightgbm.train({"objective": "multiclass", "num_class": 5, "verbose": -1,
                            "num_threads": 1, "learning_rate": 0.1}, lightgbm.Dataset(X, y), 4)
    leaves = [t["num_leaves"] for t in model.dump_model()["tree_info"]]
    assert leaves[4::5] == [1, 1, 1, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read = adapter.read_model(model)
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
        kept = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                        random_state=0)
    assert [t.shrinkage for t in read.forest.trees[:4]] == [0.1] * 4
    after = [t["num_leaves"] for t in pruned.dump_model()["tree_info"]]
    assert any(a < b for a, b in zip(after[:4], leaves[:4]))  # the first iteration too
    np.testing.assert_allclose(kept.predict(Xv, raw_score=True),
                               model.predict(Xv, raw_score=True), rtol=0, atol=1e-12)


def test_a_model_trained_from_a_dataset_init_score_is_said():
    """A Dataset init_score leaves no trace in the model but the first trees' shrinkage (the
    learning rate where boost_from_average would have reset it to 1): replayed from 0, its
    gains were off by up to 100% without a word. Labels whose init score is 0 (a 50/50 binary
    task) give the same trees without an init_score: no warning there."""
    import warnings

    import unbiased_criteria as uc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4))
    y = 3 + X[:, 0] + rng.normal(size=1000)
    params = {"objective": "regression", "verbose": -1, "num_threads": 1}
    given = lightgbm.train(params, lightgbm.Dataset(X, y, init_score=np.full(1000, 2.5)), 3)
    assert adapter.read_model(given).init_score_unseen
    with pytest.warns(UserWarning, match="first trees hold no init score, where training "
                                         "from its labels would have added 3"):
        uc.unbiased_importance(given, X, y, X[:300] + 1e-3, y[:300])
    balanced = np.tile([0.0, 1.0], 500)
    binary = lightgbm.train({**params, "objective": "binary"}, lightgbm.Dataset(X, balanced), 3)
    assert adapter.read_model(binary).init_score_unseen  # 0: nothing was added
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = uc.unbiased_importance(binary, X, balanced, X[:300] + 1e-3, balanced[:300])
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-5)
    plain = lightgbm.train(params, lightgbm.Dataset(X, y), 3)
    assert not adapter.read_model(plain).init_score_unseen


@pytest.mark.parametrize("names", [
    ["dir\\temp", "a\\u0041", "c\\/d", "k\\q"],  # JSON escapes: read as a tab, "aA", "c/d"
    ["x\\d", "e\\", "a\tb", "k"],  # no JSON escape, a trailing backslash, a tab
    ["aA", "a\\u0041", "kA", "k\\u0041"],  # distinct names that read alike as JSON
])
def test_feature_names_are_lightgbms_whatever_their_backslashes(names):
    """LightGBM writes feature names into its dump JSON unescaped: read as JSON, a backslash
    began an escape (a tab, "aA"; or invalid JSON, as was a tab). The names are LightGBM's own
    (Booster.feature_name(), the text's feature_names= line), for a frame or numpy rows, and
    each feature gets its own gain and categories (LightGBM's gain importance)."""
    import unbiased_criteria as uc

    def frame(seed):
        r = np.random.default_rng(seed)
        X = pd.DataFrame(r.normal(size=(600, 3)), columns=names[:3])
        X[names[3]] = pd.Categorical(r.choice(["p\\q", "r", "s\\u0041"], 600))
        y = X.iloc[:, 0] + X.iloc[:, 2] + 2 * (X[names[3]] == "r") + r.normal(size=600)
        return X, y.to_numpy()

    X, y = frame(0)
    Xv, yv = frame(1)
    model = lightgbm.train({"objective": "regression", "verbose": -1, "num_threads": 1,
                            "min_data_per_group": 5, "cat_smooth": 1.0},
                           lightgbm.Dataset(X, y), 5)
    assert model.feature_name() == names
    text_names = model.model_to_string().split("\nfeature_names=")[1].split("\n")[0]
    assert text_names.split(" ") == names
    read = adapter.read_model(model)
    assert read.forest.feature_names == tuple(names)
    assert read.forest.trees[0].categorical.any()  # the category column's own infos
    frame_report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).to_frame()
    assert list(frame_report.index) == names
    np.testing.assert_allclose(frame_report["host_gain"],
                               model.feature_importance("gain"), rtol=1e-6)
    codes = X.assign(**{names[3]: X[names[3]].cat.codes}).to_numpy(float)
    codes_v = Xv.assign(**{names[3]: Xv[names[3]].cat.codes}).to_numpy(float)
    array_report = uc.unbiased_importance(model, codes, y, codes_v, yv,
                                          random_state=0).to_frame()
    assert list(array_report.index) == names
    np.testing.assert_allclose(array_report.to_numpy(), frame_report.to_numpy())


def test_a_dump_that_is_not_json_is_one_clear_error():
    """LightGBM refuses a '"' in a feature name, yet loads a text model edited to hold one:
    its dump is then not JSON, one error saying so."""
    from unbiased_criteria.errors import InputError

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "c"])
    model = lightgbm.train({"objective": "regression", "verbose": -1},
                           lightgbm.Dataset(X, X["c"].to_numpy()), 2)
    text = model.model_to_string().replace("\nfeature_names=a c\n", '\nfeature_names=a" c\n')
    with pytest.raises(InputError, match="dump of this model is not valid JSON"):
        adapter.read_model(lightgbm.Booster(model_str=text))


def _continued(first: dict, second: dict):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = 5 + X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=3000)
    Xv = rng.normal(size=(3000, 5))
    yv = 5 + Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=3000)
    p = dict(objective="regression", learning_rate=0.1, num_leaves=8, verbose=-1,
             num_threads=1)
    stage1 = lightgbm.train({**p, **first}, lightgbm.Dataset(X, y), 10)
    model = lightgbm.train({**p, **second}, lightgbm.Dataset(X, y), 10, init_model=stage1)
    same = lightgbm.train(p, lightgbm.Dataset(X, y), 10,
                          init_model=lightgbm.train(p, lightgbm.Dataset(X, y), 10))
    return model, same, X, y, Xv, yv


def test_init_score_in_the_first_trees_is_read_from_the_trees_not_the_last_stage():
    """Continued with boost_from_average=False from a model trained with it: the first tree
    holds the init score (shrinkage 1) but the reader went by the last stage's parameter, so
    refit_leaves at -inf moved LightGBM's predictions by 1.59 and tree 0's U changed."""
    import warnings

    import unbiased_criteria as uc

    model, same, X, y, Xv, yv = _continued({}, {"boost_from_average": False})
    read = adapter.read_model(model)
    assert read.bias_from_labels and read.forest.trees[0].shrinkage == 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        refit = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True)
        np.testing.assert_allclose(refit.predict(Xv), model.predict(Xv), rtol=0, atol=1e-9)
        a = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
    b = uc.unbiased_importance(same, X, y, Xv, yv, random_state=0).splits
    np.testing.assert_allclose(a[a.tree == 0].unbiased_gain, b[b.tree == 0].unbiased_gain,
                               rtol=1e-9)


def test_first_trees_without_init_score_under_boost_from_average_name_both_causes():
    """First stage boost_from_average=False, continued with the default: the warning said the
    model was trained from a Dataset init_score, which it was not (its replay is its
    training: biased_gain matches LightGBM's split_gain)."""
    import unbiased_criteria as uc

    model, _, X, y, Xv, yv = _continued({"boost_from_average": False}, {})
    with pytest.warns(UserWarning, match=r"first trees hold no init score.*either its first "
                                         r"training stage ran with boost_from_average=False "
                                         r".*or it was trained from given scores") as record:
        s = uc.unbiased_importance(model, X, y, Xv, yv).splits
    assert not any("it was trained from given scores (a Dataset init_score), which the model "
                   "does not keep, so the replay" in str(w.message) for w in record)
    np.testing.assert_allclose(s.biased_gain, s.host_gain, rtol=1e-5)
