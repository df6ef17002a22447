"""The LightGBM grower's training-row leaves from LightGBM's own score change: the host's
``predict(pred_leaf=True)`` of the same iteration is the oracle (NaN, categories, bagging,
multiclass), and where the change cannot name a leaf the grower routes the rows itself."""

from __future__ import annotations

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402
from unbiased_criteria.adapters.lightgbm.grower import LGBMGrower  # noqa: E402

from unbiased_criteria.trees import leaves_from_scores, make_tree  # noqa: E402


def _data(kind: str, n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(n) < 0.2, 0] = np.nan
    X[:, 3] = rng.integers(0, 8, n)
    signal = np.nan_to_num(X[:, 0], nan=1.5) + (X[:, 3] % 3) + 0.5 * X[:, 1]
    y = signal + rng.normal(size=n)
    if kind == "multiclass":
        y = np.digitize(y, [0.5, 2.0]).astype(np.float64)
    return X, y


@pytest.mark.parametrize("kind, extra", [
    ("regression", {}),
    ("regression", {"bagging_fraction": 0.6, "bagging_freq": 1, "lambda_l1": 0.5}),
    ("multiclass", {"num_class": 3}),
])
def test_training_leaves_equal_pred_leaf(monkeypatch, kind, extra):
    X, y = _data(kind)
    seen = []
    original = LGBMGrower.leaf_nodes

    def spy(self, which):
        got = original(self, which)
        if which == 0 and self._iteration is not None:
            want = self.booster.predict(X, start_iteration=self._iteration, num_iteration=1,
                                        pred_leaf=True).reshape(len(X), -1) + self._offsets
            seen.append((self, got.copy(), want))
        return got

    monkeypatch.setattr(LGBMGrower, "leaf_nodes", spy)
    params = dict(objective=kind, num_leaves=15, learning_rate=0.3, min_data_in_leaf=5,
                  verbose=-1, num_threads=1, seed=0, **extra)
    adapter.train(params, lightgbm.Dataset(X, y, categorical_feature=[3]), 12, random_state=0)
    assert len(seen) == 12
    for _, got, want in seen:
        np.testing.assert_array_equal(got, want)
    # the score change named the leaves in most rounds (multiclass: one round has two leaves
    # one ulp apart, routed by predict)
    assert seen[0][0].leaves_from_scores >= 10


def _tree(values):
    # root 0 -> (1, 2), node 2 -> (3, 4): leaves 1, 3, 4
    return make_tree([1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [0, -1, 1, -1, -1],
                     [0.0, np.nan, 0.0, np.nan, np.nan], values)


def test_leaves_from_scores_names_leaves_or_declines():
    tree = _tree([0.0, 0.1, 0.0, -0.2, 0.3])
    before = np.array([1.0, -3.0, 7.5, 0.0])
    value = np.array([0.1, -0.2, 0.3, 0.1])
    after = before + value
    np.testing.assert_array_equal(leaves_from_scores(after - before, after, tree), [1, 3, 4, 1])
    # two leaves of the same value cannot be told apart
    assert leaves_from_scores(after - before, after, _tree([0.0, 0.1, 0.0, 0.1, 0.3])) is None
    # a change that is no leaf's value: LightGBM added something else
    assert leaves_from_scores(after - before + 0.05, after, tree) is None
    assert leaves_from_scores(np.array([np.nan]), np.array([1.0]), tree) is None


def _run(params, X, y, **options):
    from unbiased_criteria.adapters.lightgbm.training import run_training

    kw = dict(valid_sets=None, valid_names=None, feval=None, callbacks=None,
              redraw_holdout=True, n_draws=1, min_k=5, n_blocks=0, random_state=0,
              progress=False)
    return run_training(params, lightgbm.Dataset(X, y, categorical_feature=[3]), 10,
                        **kw, **options)


@pytest.mark.parametrize("kind, extra", [
    ("regression", {"boost_from_average": False}),
    ("regression", {}),  # init score mean(y): LightGBM's scores start from it as well
    ("multiclass", {"num_class": 3, "boost_from_average": False}),
    ("multiclass", {"num_class": 3}),  # one init score per class
    ("regression", {"min_gain_to_split": 50}),  # later iterations have no split (dropped)
])
def test_host_scores_are_the_loop_scores_bit_for_bit(monkeypatch, kind, extra):
    """Nothing scored and the same start: the loop takes LightGBM's own training scores for
    its running scores; they equal, bit for bit, the routed sums they replace and the written
    model's raw predictions. Fails if the two drift apart by one ulp anywhere. No round needs
    its trees then: they are read once, at the end (``read_grown``), into the same model."""
    X, y = _data(kind)
    params = dict(objective=kind, num_leaves=15, learning_rate=0.3, min_data_in_leaf=5,
                  verbose=-1, num_threads=1, seed=0, **extra)
    reads = []
    original = LGBMGrower.read_grown

    def spy(self):
        reads.append(original(self))
        return reads[-1]

    monkeypatch.setattr(LGBMGrower, "read_grown", spy)
    used = _run(params, X, y, holdout_fraction=0.4, prune_threshold=None)
    assert used.result.host_score_rounds == 10
    K = 3 if kind == "multiclass" else 1
    assert [len(r) for r in reads] == [10 * K]
    if "min_gain_to_split" in extra:  # some iterations dropped, some not
        assert 0 < sum(t.n_leaves == 1 for t in used.result.trees) < 10
    monkeypatch.setattr(LGBMGrower, "train_scores", lambda self: None)
    routed = _run(params, X, y, holdout_fraction=0.4, prune_threshold=None)
    assert routed.result.host_score_rounds == 0
    np.testing.assert_array_equal(used.result.raw_train, routed.result.raw_train)
    assert used.booster.model_to_string() == routed.booster.model_to_string()
    raw = used.booster.predict(X, raw_score=True).reshape(len(X), -1)
    np.testing.assert_array_equal(raw, used.result.raw_train)


def test_host_start_leaves_the_callers_dataset_without_init_score():
    """The growing Booster's scores start from the loop's init score, set on the training
    Dataset only while that Booster is made: the caller's Dataset has none afterwards, and a
    plain lightgbm.train on it starts from the average as before."""
    X, y = _data("regression")
    ds = lightgbm.Dataset(X, y, free_raw_data=False)
    params = dict(objective="regression", num_leaves=7, verbose=-1, num_threads=1, seed=0)
    run = _run_on(ds, params)
    assert run.result.host_score_rounds == 10
    assert ds.get_init_score() is None and ds.init_score is None
    again = lightgbm.train(params, ds, 3)
    fresh = lightgbm.train(params, lightgbm.Dataset(X, y), 3)
    np.testing.assert_array_equal(again.predict(X), fresh.predict(X))


def _run_on(ds, params):
    from unbiased_criteria.adapters.lightgbm.training import run_training

    return run_training(params, ds, 10, valid_sets=None, valid_names=None, feval=None,
                        callbacks=None, holdout_fraction=0.0, redraw_holdout=True, n_draws=1,
                        min_k=5, n_blocks=0, random_state=0, progress=False,
                        prune_threshold=None)
