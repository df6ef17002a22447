"""LightGBM writer: LightGBM loads what we write and predicts what the IR predicts."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from _lightgbm_data import labels
from _lightgbm_data import make_data as _make_data

lightgbm = pytest.importorskip("lightgbm")
pd = pytest.importorskip("pandas")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.trees import collapse_nodes, route_rows  # noqa: E402

N = 500
BASE = dict(
    num_leaves=8, learning_rate=0.2, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1.0,
    verbose=-1, deterministic=True, num_threads=1,
)


def make_data(n: int = N, seed: int = 0):
    return _make_data(n, seed)



def train(kind="regression", rounds=5, keep=False, **params):
    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    p = {**BASE, "objective": kind, **params}
    if kind == "multiclass":
        p["num_class"] = 3
    ds = lightgbm.Dataset(X, y, categorical_feature=[2, 3])
    return lightgbm.train(p, ds, rounds, keep_training_booster=keep), X, y


def raw(booster, X):
    return booster.predict(X, raw_score=True, num_iteration=-1).reshape(X.shape[0], -1)


def collapse_some(forest, seed=0, root_of=(0,)):
    """Collapse the root of the trees in ``root_of`` and one or two deeper internal nodes of
    the others (categorical ones first), with new random leaf values."""
    rng = np.random.default_rng(seed)
    new = []
    for t, tree in enumerate(forest.trees):
        collapse = np.zeros(tree.n_nodes, dtype=bool)
        inner = tree.internal_nodes
        if t in root_of and inner.size:
            collapse[0] = True
        elif inner.size > 2:
            cats = inner[tree.categorical[inner] & (inner > 0)]
            pick = cats[:1] if cats.size else inner[-1:]
            collapse[pick] = True
            collapse[inner[rng.integers(1, inner.size)]] = True
        values = np.where(tree.is_leaf, tree.value, rng.normal(size=tree.n_nodes))
        new.append(collapse_nodes(tree, collapse, values)[0])
    return forest.with_trees(new)


CASES = [
    ("regression", {}),
    ("binary", {}),
    ("multiclass", {}),
    ("regression", {"zero_as_missing": True}),
    ("regression", {"use_missing": False}),
    ("binary", {"max_cat_to_onehot": 8}),  # one-hot categorical splits
]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("kind,params", CASES)
def test_round_trip_is_the_identity(kind, params, keep):
    booster, X, _ = train(kind, keep=keep, **params)
    read = adapter.read_model(booster)
    # same bytes as LightGBM's own text (header, tree_sizes, importances, formatting)
    assert adapter.model_text(read.source, read.forest) == booster.model_to_string(
        num_iteration=-1
    )
    written = adapter.write_model(booster, read.forest)
    assert isinstance(written, lightgbm.Booster) and written is not booster
    np.testing.assert_allclose(raw(written, X), raw(booster, X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(
        written.predict(X, pred_contrib=True), booster.predict(X, pred_contrib=True)
    )


def test_round_trip_pandas_categorical():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    frame = pd.DataFrame(
        {"a": X[:, 0], "b": X[:, 1],
         "c": pd.Categorical.from_codes(X[:, 2].astype(int), list("hgfedcba")),
         "d": X[:, 3]}
    )
    booster = lightgbm.train({**BASE, "objective": "regression"}, lightgbm.Dataset(frame, y), 4)
    read = adapter.read_model(booster)
    written = adapter.write_model(booster, collapse_some(read.forest))
    assert written.pandas_categorical == booster.pandas_categorical
    np.testing.assert_allclose(
        written.predict(frame), collapse_some(read.forest).raw_score(X)[:, 0], atol=1e-12
    )


@pytest.mark.parametrize("kind,params", CASES)
def test_collapsed_forest_predicts_as_the_ir(kind, params):
    booster, X, _ = train(kind, rounds=4, **params)
    read = adapter.read_model(booster)
    pruned = collapse_some(read.forest, root_of=(0, 5))
    assert sum(t.n_leaves for t in pruned.trees) < sum(t.n_leaves for t in read.forest.trees)
    written = adapter.write_model(booster, pruned)
    np.testing.assert_allclose(raw(written, X), pruned.raw_score(X), rtol=0, atol=1e-12)
    # LightGBM re-serialises our text unchanged: counts, importances and tree_sizes agree
    assert written.model_to_string(num_iteration=-1) == adapter.model_text(read.source, pruned)
    # pred_leaf of the written model routes rows to the pruned IR trees' leaves
    reread = adapter.read_model(written)
    nodes = adapter.make_router(written, reread, X, "X").leaf_nodes(0, pruned.n_trees)
    for t, (tree, new) in enumerate(zip(pruned.trees, reread.forest.trees)):
        assert new.n_leaves == tree.n_leaves
        np.testing.assert_array_equal(new.value[nodes[:, t]], tree.value[route_rows(tree, X)])
        assert new.shrinkage == tree.shrinkage


def test_collapsed_categorical_nodes_shrink_the_bitsets():
    booster, X, _ = train("regression", rounds=3, num_leaves=12)
    read = adapter.read_model(booster)
    tree = read.forest.trees[1]
    cats = tree.internal_nodes[tree.categorical[tree.internal_nodes]]
    assert cats.size >= 1
    collapse = np.zeros(tree.n_nodes, dtype=bool)
    collapse[cats[-1]] = True
    new, _ = collapse_nodes(tree, collapse, np.where(tree.is_leaf, tree.value, 0.5))
    pruned = read.forest.with_trees([read.forest.trees[0], new, read.forest.trees[2]])
    written = adapter.write_model(booster, pruned)
    n_cat = written.dump_model()["tree_info"][1]["num_cat"]
    assert n_cat == int(new.categorical.sum()) < cats.size
    np.testing.assert_allclose(raw(written, X), pruned.raw_score(X), atol=1e-12)


def test_written_file_loads_in_a_fresh_process(tmp_path):
    booster, X, _ = train("multiclass", rounds=3)
    read = adapter.read_model(booster)
    pruned = collapse_some(read.forest)
    path = tmp_path / "pruned.txt"
    adapter.write_model(booster, pruned).save_model(str(path))
    np.save(tmp_path / "X.npy", X)
    code = textwrap.dedent(
        f"""
        import numpy as np, lightgbm
        b = lightgbm.Booster(model_file={str(path)!r})
        X = np.load({str(tmp_path / "X.npy")!r})
        np.save({str(tmp_path / "out.npy")!r}, b.predict(X, raw_score=True))
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), pruned.raw_score(X), atol=1e-12)


def test_best_iteration_is_kept():
    X, signal, rng = make_data()
    y = labels("regression", signal, rng)
    ds = lightgbm.Dataset(X[:400], y[:400])
    valid = lightgbm.Dataset(X[400:], y[400:], reference=ds)
    booster = lightgbm.train(
        {**BASE, "objective": "regression", "learning_rate": 0.8}, ds, 30, valid_sets=[valid],
        callbacks=[lightgbm.early_stopping(2, verbose=False)], keep_training_booster=True,
    )
    assert 0 < booster.best_iteration < booster.current_iteration()
    written = adapter.write_model(booster, adapter.read_model(booster).forest)
    assert written.best_iteration == booster.best_iteration
    np.testing.assert_array_equal(written.predict(X), booster.predict(X))
    assert written.num_trees() == booster.num_trees()


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_sklearn_estimator_in_same_class_out(kind):
    X, signal, rng = make_data()
    y = labels(kind, signal, rng)
    cls = lightgbm.LGBMRegressor if kind == "regression" else lightgbm.LGBMClassifier
    model = cls(n_estimators=4, num_leaves=6, min_child_samples=5, verbose=-1)
    model.fit(X, y, categorical_feature=[2, 3])
    text_before = model.booster_.model_to_string(num_iteration=-1)
    pred_before = model.predict(X)
    state_before = pickle.dumps(model.get_params())
    read = adapter.read_model(model)
    pruned = collapse_some(read.forest)
    out = adapter.write_model(model, pruned)

    assert type(out) is cls and out is not model and out.booster_ is not model.booster_
    # the caller's model is unchanged
    assert model.booster_.model_to_string(num_iteration=-1) == text_before
    np.testing.assert_array_equal(model.predict(X), pred_before)
    assert pickle.dumps(model.get_params()) == state_before
    # the new estimator is usable as a fitted one
    assert out.n_features_in_ == 4
    np.testing.assert_allclose(out.predict(X, raw_score=True).reshape(N, -1),
                               pruned.raw_score(X), atol=1e-12)
    np.testing.assert_array_equal(out.feature_importances_, out.booster_.feature_importance())
    assert out.feature_importances_.sum() < model.feature_importances_.sum()
    if kind != "regression":
        np.testing.assert_array_equal(out.classes_, model.classes_)
        proba = out.predict_proba(X)
        assert proba.shape == (N, model.n_classes_)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert set(np.unique(out.predict(X))) <= set(model.classes_)
    # it survives pickling and copying like any estimator
    again = pickle.loads(pickle.dumps(out))
    np.testing.assert_array_equal(again.predict(X), out.predict(X))
    np.testing.assert_array_equal(copy.deepcopy(out).predict(X), out.predict(X))


def test_input_booster_is_not_modified():
    booster, X, _ = train("binary")
    before = booster.model_to_string(num_iteration=-1)
    read = adapter.read_model(booster)
    adapter.write_model(booster, collapse_some(read.forest))
    assert booster.model_to_string(num_iteration=-1) == before


@pytest.mark.parametrize(
    "params,match",
    [({"linear_tree": True}, "linear trees"), ({"boosting": "dart"}, "DART")],
)
def test_unsupported_models_are_refused(params, match):
    booster, _, _ = train("regression", rounds=2, **params)
    with pytest.raises(UnsupportedModelError, match=match):
        # the forest of a plain model: the refusal comes from the model kind
        adapter.write_model(booster, adapter.read_model(train("regression", rounds=2)[0]).forest)


def test_mismatched_forest_is_refused():
    booster, _, _ = train("multiclass", rounds=2)
    forest = adapter.read_model(booster).forest
    with pytest.raises(ValueError, match="multiple of 3"):
        adapter.write_model(booster, forest.with_trees(forest.trees[:4]))
    other, _, _ = train("regression", rounds=2)
    from dataclasses import replace

    with pytest.raises(ValueError, match="features"):
        adapter.write_model(other, replace(adapter.read_model(other).forest, n_features=5))


def _large_label_model(scale, **params):
    """A regression model on labels times ``scale`` (1e20: every split gain beyond float32,
    LightGBM stores and writes it as ``inf``)."""
    X, signal, rng = make_data()
    y = scale * labels("regression", signal, rng)
    ds = lightgbm.Dataset(X, y, categorical_feature=[2, 3])
    return lightgbm.train({**BASE, "objective": "regression", **params}, ds, 5), X, y


def test_gains_beyond_float32_are_written_as_lightgbm_writes_them():
    """Oracle: LightGBM's own text and gain importance. Gains LightGBM stores as ``inf`` were
    written 0: the text was no longer LightGBM's and the gain importance said no feature
    mattered."""
    booster, X, y = _large_label_model(1e20)
    text = booster.model_to_string(num_iteration=-1)
    assert "split_gain=inf" in text  # the case
    read = adapter.read_model(booster)
    assert adapter.model_text(read.source, read.forest) == text
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's overflow warnings
        written = adapter.write_model(booster, read.forest)
    assert written.model_to_string(num_iteration=-1) == text
    np.testing.assert_array_equal(written.feature_importance("gain"),
                                  booster.feature_importance("gain"))
    assert np.isinf(written.feature_importance("gain")).any()
    # prune at -inf keeps every split: the same text again (README, Oracles)
    X_valid, signal, rng = make_data(seed=1)
    y_valid = 1e20 * labels("regression", signal, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # splits without usable evidence
        warnings.simplefilter("error", RuntimeWarning)
        pruned = uc.prune(booster, X, y, X_valid, y_valid, threshold=-np.inf, random_state=0)
    assert pruned.model_to_string(num_iteration=-1) == text


@pytest.mark.parametrize("scale", [1.0, 1e8, 3e8, 1e20])
def test_gain_importances_are_printed_as_lightgbm_prints_them(scale):
    """Oracle: LightGBM's text with ``saved_feature_importance_type=1`` (gain), which prints
    each total as ``size_t``: totals in [2**63, 2**64) (at 1e8 and 3e8 here) are printed,
    larger ones and ``inf`` left out. The writer cast to int64 (dropping the first, with a
    numpy warning)."""
    booster, _, _ = _large_label_model(scale, saved_feature_importance_type=1)
    read = adapter.read_model(booster)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        text = adapter.model_text(read.source, read.forest)
    assert text == booster.model_to_string(num_iteration=-1, importance_type="gain")
