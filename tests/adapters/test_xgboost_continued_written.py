"""Training continued (``xgb_model=``) from a model this library wrote (pruned, or grown by
the training hook): the parameters it stored hold for its own trees only. The trees added
later are read with the Booster's configuration, as any XGBoost model's, and checked as such.
Before, the stored eta and lambda served every tree, silently: the new trees' biased_gain
missed XGBoost's own loss_chg by a median 28%. Oracle: XGBoost's stored gains."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")
from unbiased_criteria.adapters.xgboost import read_model  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402

rng = np.random.default_rng(0)
X = rng.normal(size=(3000, 5))
y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=3000)
Xv = rng.normal(size=(2000, 5))
yv = Xv[:, 0] + 0.5 * Xv[:, 1] ** 2 + rng.normal(size=2000)
Xt = rng.normal(size=(2000, 5))
yt = Xt[:, 0] + 0.5 * Xt[:, 1] ** 2 + rng.normal(size=2000)
P = {"objective": "reg:squarederror", "eta": 0.1, "max_depth": 4, "nthread": 1, "lambda": 3.0}


@pytest.fixture(scope="module")
def pruned():
    return uc.prune(xgb.train(P, xgb.DMatrix(X, y), 30), X, y, Xv, yv, random_state=0)


def _new_trees_match_xgboost(model, n_written):
    splits = uc.unbiased_importance(model, X, y, Xt, yt, random_state=0).splits
    new = splits[splits.tree >= n_written]
    assert len(new) > 30
    np.testing.assert_allclose(new.biased_gain, new.host_gain, rtol=1e-3)


def test_continued_with_other_penalties_is_read_with_them_and_warned(pruned):
    cont = xgb.train({**P, "eta": 0.3, "lambda": 20.0}, xgb.DMatrix(X, y), 10, xgb_model=pruned)
    read = read_model(cont)
    assert read.split_score.l2 == 20.0 and read.written_trees == 30
    shrinkage = np.array([t.shrinkage for t in read.forest.trees])
    np.testing.assert_array_equal(shrinkage[:30], np.float32(0.1))
    np.testing.assert_array_equal(shrinkage[30:], np.float32(0.3))
    with pytest.warns(UserWarning, match=r"first 30 trees .* lambda=3.* lambda=20"):
        _new_trees_match_xgboost(cont, 30)


def test_continued_with_another_eta_is_read_silently_and_its_new_trees_checked(pruned):
    cont = xgb.train({**P, "eta": 0.3}, xgb.DMatrix(X, y), 10, xgb_model=pruned)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _new_trees_match_xgboost(cont, 30)
        uc.prune(cont, X, y, Xt, yt, random_state=0)
    # the added trees are held to their own gains (a pruned model's were not checked at
    # all): edited gains in them are refused as any model's
    js = json.loads(cont.save_raw("json"))
    for tree in js["learner"]["gradient_booster"]["model"]["trees"][30:]:
        tree["loss_changes"] = [2.0 * g for g in tree["loss_changes"]]
    edited = xgb.Booster(model_file=bytearray(json.dumps(js).encode()))
    edited.load_config(cont.save_config())
    with pytest.raises(UnsupportedModelError, match="trees after the first iteration"):
        uc.prune(edited, X, y, Xt, yt, random_state=0)


def test_a_hook_booster_continued_is_read_with_the_continuations_lambda():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hook = uc.adapters.xgboost.train(dict(P), xgb.DMatrix(X, y), 15)
    cont = xgb.train({**P, "lambda": 20.0}, xgb.DMatrix(X, y), 5, xgb_model=hook)
    read = read_model(cont)
    assert read.split_score.l2 == 20.0 and read.written_trees == 15
    assert any("lambda=3" in m and "lambda=20" in m for m in read.warnings)
    assert read_model(hook).split_score.l2 == 3.0 and read_model(hook).written_trees == 15


def test_loaded_continuation_is_not_said_to_have_changed_penalties(pruned, tmp_path):
    """Continued with the same lambda, saved and loaded: the file's configuration reports
    XGBoost's defaults (lambda=1), which were taken for a change of lambda; only the unknown
    parameters are said."""
    cont = xgb.train(P, xgb.DMatrix(X, y), 10, xgb_model=pruned)
    cont.save_model(tmp_path / "cont.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        uc.unbiased_importance(xgb.Booster(model_file=str(tmp_path / "cont.json")), X, y, Xt,
                               yt, random_state=0)
    said = [str(w.message) for w in caught]
    assert not any("training continued from them with" in m for m in said), said
    assert any("does not store its learning rate and L2 penalty" in m for m in said), said
