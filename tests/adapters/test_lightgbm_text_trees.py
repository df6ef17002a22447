"""The reader takes a LightGBM model's trees from its text, not from its JSON dump (several
times faster): tree by tree, every array equals what the JSON gives (the oracle: LightGBM's
own ``dump_model()``), for every kind of node the IR holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters.lightgbm import read_model  # noqa: E402
from unbiased_criteria.adapters.lightgbm.reader import (  # noqa: E402
    categorical_options,
    parse_tree,
    parse_tree_text,
)
from unbiased_criteria.adapters.lightgbm.text_model import check_model_text  # noqa: E402


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.normal(size=n),
        "many": pd.Categorical(rng.integers(0, 40, n)),  # many-vs-many splits (cat_l2)
        "nan": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n)),
        "few": pd.Categorical(rng.integers(0, 3, n)),  # one-vs-rest splits
        "zero": np.where(rng.random(n) < 0.3, 0.0, rng.normal(size=n)),
    })
    y = X["a"] + (X["many"].cat.codes % 3) + 0.5 * np.nan_to_num(X["nan"]) \
        + rng.normal(size=n)
    return X, y.to_numpy()


CASES = {
    "regression": ({"objective": "regression"}, lambda y: y),
    "binary": ({"objective": "binary"}, lambda y: (y > 1).astype(int)),
    "multiclass": ({"objective": "multiclass", "num_class": 3},
                   lambda y: np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))),
    "zero_as_missing": ({"objective": "regression", "zero_as_missing": True}, lambda y: y),
    "no_missing": ({"objective": "regression", "use_missing": False}, lambda y: y),
    "stumps": ({"objective": "regression", "min_data_in_leaf": 1400}, lambda y: y),
    # no split is worth it: one tree of a single leaf (the init score)
    "single_leaf": ({"objective": "regression", "min_gain_to_split": 1e12}, lambda y: y),
    "one_hot": ({"objective": "regression", "max_cat_to_onehot": 64}, lambda y: y),
    "odd_rate": ({"objective": "huber", "learning_rate": 0.0123456789, "lambda_l2": 3.3},
                 lambda y: y * 1e6),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_text_trees_equal_the_json_trees(case):
    params, label = CASES[case]
    X, y = _data()
    booster = lgb.train({**params, "verbose": -1, "num_leaves": 31, "num_threads": 1},
                        lgb.Dataset(X, label(y)), 40)
    fields = check_model_text(booster.model_to_string(num_iteration=-1))
    dump = booster.dump_model(num_iteration=-1)
    assert len(fields) == len(dump["tree_info"]) > 0
    options = categorical_options(dump, read_model(booster).source)
    kinds = set()
    for info, block in zip(dump["tree_info"], fields):
        want, got = parse_tree(info, **options), parse_tree_text(block, **options)
        assert float(block["shrinkage"]) == float(info["shrinkage"])
        assert want.keys() == got.keys()
        assert want["cat_sets"].keys() == got["cat_sets"].keys()
        for node, cats in want["cat_sets"].items():
            np.testing.assert_array_equal(got["cat_sets"][node], cats)
        inner = want["left"] >= 0
        for key in want.keys() - {"cat_sets", "value", "host_hessian"}:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        # leaves bit for bit; internal values and hessian sums are 6-digit decimals that
        # LightGBM's own number parser rounds to the neighbouring double now and then
        for key in ("value", "host_hessian"):
            np.testing.assert_array_equal(got[key][~inner], want[key][~inner], err_msg=key)
            np.testing.assert_allclose(got[key][inner], want[key][inner], rtol=1e-15,
                                       err_msg=key)
        kinds.update({"single leaf"} if not inner.any() else set())
        kinds.update({"stump"} if inner.sum() == 1 else set())
        kinds.update({"categorical"} if want["cat_sets"] else set())
        kinds.update({"cat_l2"} if np.any(want["l2_extra"] > 0) else set())
        kinds.update({f"missing {m}" for m in np.unique(want["missing"][inner])})
    if case in ("stumps", "single_leaf"):
        assert {"stumps": "stump", "single_leaf": "single leaf"}[case] in kinds
    if case in ("regression", "binary"):
        assert {"categorical", "cat_l2"} <= kinds
    if case == "one_hot":
        assert "categorical" in kinds and "cat_l2" not in kinds


def test_a_booster_kept_in_training_is_read_from_its_json():
    """A Booster that still holds its training data (``keep_training_booster=True``) has
    gains at full float32 precision, which its text rounds to 6 digits: the reader takes its
    trees from the JSON, as before; a Booster loaded from its text reads the same trees."""
    X, y = _data(1500, seed=1)
    kept = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                     lgb.Dataset(X, y), 10, keep_training_booster=True)
    dump = kept.dump_model(num_iteration=-1)
    gains = np.concatenate([parse_tree(info, **categorical_options(
        dump, read_model(kept).source))["host_gain"] for info in dump["tree_info"]])
    read = np.concatenate([t.host_gain for t in read_model(kept).forest.trees])
    np.testing.assert_array_equal(read, gains)
    loaded = lgb.Booster(model_str=kept.model_to_string())
    text_gains = np.concatenate([t.host_gain for t in read_model(loaded).forest.trees])
    inner = np.isfinite(gains)
    assert not np.array_equal(text_gains[inner], gains[inner])  # 6 digits, as written
    np.testing.assert_allclose(text_gains[inner], gains[inner], rtol=1e-5)
