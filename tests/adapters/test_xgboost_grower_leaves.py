"""The XGBoost grower's training-row leaves from the change of XGBoost's cached margins: the
host's ``pred_leaf`` of the same iteration is the oracle (NaN, categories, lossguide,
multiclass, weights)."""

from __future__ import annotations

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost")
pd = pytest.importorskip("pandas")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost.grower import XGBGrower  # noqa: E402


def _dtrain(objective: str, n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    x[rng.random(n) < 0.2, 0] = np.nan
    cat = rng.integers(0, 8, n)
    y = np.nan_to_num(x[:, 0], nan=1.5) + (cat % 3) + 0.5 * x[:, 1] + rng.normal(size=n)
    if objective.startswith("multi:"):
        y = np.digitize(y, [0.5, 2.0]).astype(np.float64)
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2],
                          "cat": pd.Categorical(cat)})
    return xgboost.DMatrix(frame, y, weight=rng.uniform(0.5, 2.0, n), enable_categorical=True)


@pytest.mark.parametrize("params", [
    {"objective": "reg:squarederror", "max_depth": 5},
    {"objective": "reg:squarederror", "max_leaves": 15, "grow_policy": "lossguide",
     "subsample": 0.7, "max_cat_to_onehot": 1},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4},
])
def test_training_leaves_equal_pred_leaf(monkeypatch, params):
    dtrain = _dtrain(params["objective"])
    seen = []
    original = XGBGrower.leaf_nodes

    def spy(self, which):
        got = original(self, which)
        if which == 0:
            want = self._part.predict(dtrain, pred_leaf=True).reshape(dtrain.num_row(), -1)
            want = want.astype(np.int32)
            for k, node_map in enumerate(self._maps):
                if node_map is not None:
                    want[:, k] = node_map[want[:, k]]
            seen.append((self, got.copy(), want))
        return got

    monkeypatch.setattr(XGBGrower, "leaf_nodes", spy)
    ax.train({**params, "eta": 0.3, "seed": 0, "nthread": 1}, dtrain, 12, random_state=0)
    assert len(seen) == 12
    for _, got, want in seen:
        np.testing.assert_array_equal(got, want)
    # the margin change named the leaves in most rounds (float32 margins: leaves closer than
    # a few float32 ulps of the margins are routed by pred_leaf)
    assert seen[0][0].leaves_from_scores >= 10


def _run(params, dtrain, **options):
    from unbiased_criteria.adapters.xgboost.training import run_training

    kw = dict(evals=(), obj=None, maximize=None, custom_metric=None,
              early_stopping_rounds=None, evals_result=None, callbacks=None,
              redraw_holdout=True, n_draws=1, min_k=5, n_blocks=0, random_state=0,
              progress=False, verbose_eval=False)
    return run_training({**params, "eta": 0.3, "seed": 0, "nthread": 1}, dtrain, 10,
                        **kw, **options)


@pytest.mark.parametrize("params", [
    {"objective": "reg:squarederror", "max_depth": 5},
    {"objective": "binary:logistic", "max_leaves": 15, "grow_policy": "lossguide"},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 4},
])
@pytest.mark.parametrize("holdout", [0.0, 0.4])
def test_host_margins_are_the_loop_scores_bit_for_bit(monkeypatch, params, holdout):
    """Nothing scored: the loop takes XGBoost's own margins (started from the model's
    intercept) for its running scores; they equal, bit for bit, the routed sums they replace
    and the written model's margins. Fails if the two drift apart by one ulp anywhere."""
    dtrain = _dtrain(params["objective"])
    if params["objective"] == "binary:logistic":
        dtrain.set_label((dtrain.get_label() > 1.0).astype(np.float64))
    reads = []
    original = XGBGrower.read_grown

    def spy(self):  # no round needs its trees: they are read once, at the end
        reads.append(original(self))
        return reads[-1]

    monkeypatch.setattr(XGBGrower, "read_grown", spy)
    used = _run(params, dtrain, holdout_fraction=holdout, prune_threshold=None)
    assert used.result.host_score_rounds == 10
    assert [len(r) for r in reads] == [10 * (3 if "num_class" in params else 1)]
    monkeypatch.setattr(XGBGrower, "train_scores", lambda self: None)
    routed = _run(params, dtrain, holdout_fraction=holdout, prune_threshold=None)
    assert routed.result.host_score_rounds == 0
    np.testing.assert_array_equal(used.result.raw_train, routed.result.raw_train)
    assert bytes(used.booster.save_raw("json")) == bytes(routed.booster.save_raw("json"))
    margin = used.booster.predict(dtrain, output_margin=True).reshape(dtrain.num_row(), -1)
    np.testing.assert_array_equal(margin, used.result.raw_train)
