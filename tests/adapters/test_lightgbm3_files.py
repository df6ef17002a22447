"""Models written by LightGBM 3 (and 4.0): their L1 and quantile init score, an unweighted
percentile of the labels, follows an older rule (``(1 - alpha) * n`` from the largest value,
changed in 4.1 by LightGBM PR #5848). They were replayed from 4.1's: a v3 L1 model's first
tree missed its own split_gain at 3 of 7 splits by up to 8%, with a warning that named causes
that did not apply, and the file's version went unsaid.

Oracles: the fixtures under ``data/``, written by LightGBM 3.3.5 (``data/
make_lightgbm3_percentile.py``, so that the test needs no LightGBM 3): its models' own split
gains, and its own init scores (a one-leaf first tree at a learning rate of 1e-12).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402

import unbiased_criteria as uc  # noqa: E402

DATA = Path(__file__).parent / "data"


def _fixture():
    data = np.load(DATA / "lightgbm3_percentile.npz")
    return data["X"], data["y"], json.loads(str(data["init"]))


@pytest.mark.parametrize("name", ["l1", "quantile"])
def test_lightgbm3_init_score_is_its_own(name):
    X, y, init = _fixture()
    booster = lgb.Booster(model_file=str(DATA / f"lightgbm3_{name}.txt"))
    read = adapter.read_model(booster)
    assert np.float32(read.objective.init_score(y)[0]) == np.float32(init[name])
    # the fixture tells the rules apart: LightGBM 4.1's percentile is another value
    assert np.float32(uc.objectives.make_objective(
        read.objective.name, **({"alpha": 0.3} if name == "quantile" else {})
    ).init_score(y)[0]) != np.float32(init[name])
    assert any("written by LightGBM 3 or older" in m and "percentile" in m
               for m in read.notes)


@pytest.mark.parametrize("name", ["l1", "quantile"])
def test_lightgbm3_first_tree_gains_equal_split_gain(name):
    X, y, _ = _fixture()
    rng = np.random.default_rng(1)
    Xv = rng.normal(size=(300, 3))
    yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        splits = uc.unbiased_importance(str(DATA / f"lightgbm3_{name}.txt"), X, y, Xv, yv,
                                        random_state=0, n_jobs=1).splits
    said = [str(w.message) for w in caught]
    assert not any("misses the model's own gains" in m for m in said), said
    assert any("written by LightGBM 3 or older" in m for m in said)
    first = splits[splits["tree"] == 0]
    assert len(first) >= 3
    np.testing.assert_allclose(first["biased_gain"], first["host_gain"], rtol=1e-4)


def _l1_model_text(alpha_objective="l1"):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(301, 3))
    y = X[:, 0] + rng.normal(size=301)
    booster = lgb.train({"objective": alpha_objective, "alpha": 0.3, "verbose": -1,
                         "num_threads": 1, "num_leaves": 4}, lgb.Dataset(X, y), 2)
    return booster.model_to_string()


@pytest.mark.parametrize("name", ["l1", "quantile"])
def test_version_is_told_by_the_parameters_block(name):
    """A file loaded and saved again by a later LightGBM keeps its parameters block but gets
    the later version line: the block tells the version (4.1 added
    lambdarank_position_bias_regularization, 4.0 data_sample_strategy)."""
    text = _l1_model_text(name)
    read = adapter.read_model(lgb.Booster(model_str=text))
    assert read.objective.percentile_rule == "lightgbm"
    assert not any("written by" in m for m in read.notes)

    def without(text, *keys):
        return "\n".join(line for line in text.split("\n")
                         if not any(line.startswith(f"[{k}: ") for k in keys))

    read = adapter.read_model(lgb.Booster(model_str=without(
        text, "lambdarank_position_bias_regularization")))
    assert read.objective.percentile_rule == "lightgbm4.0"
    assert any("written by LightGBM 4.0" in m for m in read.notes)
    read = adapter.read_model(lgb.Booster(model_str=without(
        text, "lambdarank_position_bias_regularization", "data_sample_strategy")))
    assert read.objective.percentile_rule == "lightgbm3"


def test_percentile_rule_is_checked():
    with pytest.raises(ValueError, match="percentile_rule must be one of"):
        uc.objectives.make_objective("quantile", alpha=0.3, percentile_rule="lightgbm5")


def test_a_short_parameters_block_tells_no_version():
    """The native grower's export (and a hand-made file) prints a few parameters only: no
    note of an old LightGBM, and 4.1's rule."""
    text = _l1_model_text("l1")
    start, stop = text.index("\nparameters:\n"), text.index("\nend of parameters")
    short = text[:start] + "\nparameters:\n[boosting: gbdt]\n[objective: regression_l1]" \
        + text[stop:]
    read = adapter.read_model(lgb.Booster(model_str=short))
    assert read.objective.percentile_rule == "lightgbm"
    assert not any("written by" in m for m in read.notes)
