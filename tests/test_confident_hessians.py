"""Held-out rows of (practically) no curvature are no evidence.

A confident multiclass model's held-out rows of a class it rules out have gradient about -1
and a float32 hessian ``p(1-p)`` that underflows to 0 or a subnormal (LightGBM and
scikit-learn compute it in float32 without a floor): a drawn hessian sum of 1e-40 made the
ratio ``sum g' / sum h'`` 1e40, U 1e31..1e47 on noise features, and in validation-only mode
B -1e46. The oracle is the host's own gain B (U estimates the same loss reduction on other
rows: it is on B's scale) and the data's design (only column 0 carries information).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import unbiased_criteria as uc
from unbiased_criteria import importance
from unbiased_criteria.gains import MIN_HESSIAN, has_curvature, unbiased_gain
from unbiased_criteria.trees import make_tree

lgb = pytest.importorskip("lightgbm")

K = 6  # classes, each a band of column 0; columns 1..3 are noise


def _bands(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, np.floor((X[:, 0] + 3) / 6 * K).clip(0, K - 1).astype(int)


@pytest.fixture(scope="module")
def confident():
    """LightGBM at learning rate 0.5, 20 rounds: certain of its classes on most rows (before,
    max |U| 8.7e31, on a noise feature)."""
    X, y = _bands(2000, 0)
    Xv, yv = _bands(1000, 100)
    model = lgb.train({"objective": "multiclass", "num_class": K, "verbose": -1,
                       "num_threads": 1, "num_leaves": 8, "seed": 0, "learning_rate": 0.5},
                      lgb.Dataset(X, y), 20)
    return model, X, y, Xv, yv


def _assert_sane(report, informative: str = "Column_0") -> None:
    frame, splits = report.to_frame(), report.splits
    assert np.isfinite(splits["unbiased_gain"]).all()
    # U estimates B's loss reduction on other rows: on its scale, not 1e23 times above it
    assert splits["unbiased_gain"].abs().max() <= 10 * splits["biased_gain"].abs().max()
    assert frame["unbiased_gain"].idxmax() == informative
    noise = frame.drop(index=informative)
    t = noise["unbiased_gain"] / noise["std_error"]
    assert (t < stats.t.ppf(0.95, 19)).all(), t  # no noise feature significantly positive
    assert frame.loc[informative, "unbiased_gain"] > 100 * noise["unbiased_gain"].max()


def test_confident_multiclass_lightgbm_has_finite_sane_gains(confident):
    model, X, y, Xv, yv = confident
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_jobs=1)
    _assert_sane(report)
    assert report.splits["usable"].mean() > 0.5  # the rule bites only where it must


def test_confident_multiclass_validation_only_b_is_not_negative(confident):
    """B on held-out rows that play the training rows was -1e46 (cancellation of scores of
    nodes whose hessians had vanished); it is now >= 0 up to float rounding, and the splits
    with such a node are unusable with U = 0."""
    model, _, _, Xv, yv = confident
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # most splits have too few rows
        warnings.simplefilter("error", RuntimeWarning)
        report = uc.unbiased_importance(model, None, None, Xv, yv, random_state=0, n_jobs=1)
    splits = report.splits
    B, U = splits["biased_gain"], splits["unbiased_gain"]
    assert np.isfinite(B).all() and np.isfinite(U).all()
    assert (B >= -1e-9 * B.abs().max()).all(), B.min()
    assert B.max() < 1e12 and U.abs().max() < 1e12
    assert (U[~splits["usable"]] == 0).all()


def test_no_evidence_warning_names_vanishing_hessians(confident):
    """No weights were passed: the warning blamed 'weight 0' alone."""
    model, _, _, Xv, yv = confident
    sel = yv < K // 2
    with pytest.warns(UserWarning, match="splits have no usable evidence") as record:
        uc.unbiased_importance(model, None, None, Xv[sel], yv[sel], random_state=0, n_jobs=1)
    message = next(str(w.message) for w in record if "usable evidence" in str(w.message))
    assert "no curvature" in message and "confidently wrong" in message


def test_prune_leaks_no_numpy_overflow_warning(confident):
    model, X, y, Xv, yv = confident
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0, n_jobs=1)
    assert np.isfinite(pruned.predict(Xv, raw_score=True)).all()


def test_stored_gains_beyond_float32_are_clipped_without_a_warning():
    """A pruned model stores its later trees' gains as float32: one of 1e45 overflowed in the
    cast with numpy's RuntimeWarning. It is stored as float32's largest."""
    from unbiased_criteria.host_gains import _with_own_gains

    tree = make_tree(left=[1, -1, -1], right=[2, -1, -1], feature=[0, -1, -1],
                     threshold=[0.5, np.nan, np.nan], value=[np.nan, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _with_own_gains([tree, tree], np.array([0, 1]), 0,
                              {1: (np.array([1e45, np.nan, np.nan]), None)})
    big = float(np.finfo(np.float32).max)
    assert out[1].host_gain[0] == big and np.isnan(out[1].host_gain[1:]).all()


def test_training_hook_estimator_confident_multiclass_ranks_the_informative_feature():
    """UnbiasedLGBMClassifier on 10 classes at learning rate 0.5 (before: unbiased_gain_ of
    the noise features -5e14 and -6e15, the informative one 4e7)."""
    pytest.importorskip("sklearn")
    from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    y = np.floor((X[:, 0] + 3) / 6 * 10).clip(0, 9).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = UnbiasedLGBMClassifier(n_estimators=20, num_leaves=8, learning_rate=0.5,
                                     verbose=-1, n_jobs=1, random_state=0).fit(X, y)
    gain = est.unbiased_gain_
    assert np.isfinite(gain).all()
    assert np.argmax(gain) == 0 and gain[0] > 100 * np.abs(gain[1:]).max()


def test_histgradientboosting_confident_multiclass_has_finite_sane_gains():
    """HistGradientBoosting computes the hessian in float32 too (before: U 6e43 on a noise
    feature)."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, y = _bands(2000, 0)
    Xv, yv = _bands(1000, 100)
    model = ensemble.HistGradientBoostingClassifier(
        max_iter=20, learning_rate=0.5, max_leaf_nodes=8, early_stopping=False,
        random_state=0).fit(X, y)
    report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, n_jobs=1)
    frame, splits = report.to_frame(), report.splits
    assert np.isfinite(splits["unbiased_gain"]).all()
    assert splits["unbiased_gain"].abs().max() <= 10 * splits["biased_gain"].abs().max()
    assert frame["unbiased_gain"].idxmax() == frame.index[0]
    noise = frame.iloc[1:]
    assert (noise["unbiased_gain"] / noise["std_error"] < stats.t.ppf(0.95, 19)).all()


def test_core_ratio_without_curvature_is_no_evidence():
    """One split; the right child's held-out rows have gradient -1 and hessian 1e-40 but for
    one row: its drawn hessian sum, scaled to the node, is far below MIN_HESSIAN whenever the
    one row is not drawn, and the split is then unusable (U was 1e40)."""
    tree = make_tree(left=[1, -1, -1], right=[2, -1, -1], feature=[0, -1, -1],
                     threshold=[0.5, np.nan, np.nan], value=[np.nan, 0.0, 0.0])
    n = 200
    nodes = np.repeat([1, 2], n // 2)
    g = np.where(nodes == 2, -1.0, 0.1)
    h = np.where(nodes == 2, 1e-40, 0.25)
    G = np.array([-90.0, 10.0, -100.0])
    u = unbiased_gain(tree, G, nodes, g, h, rng=np.random.default_rng(0))
    assert not u.usable[0] and u.gain[0] == 0.0
    old = unbiased_gain(tree, G, nodes, g, h, rng=np.random.default_rng(0), min_hessian=0.0)
    assert old.usable[0] and abs(old.gain[0]) > 1e30  # the old rule: only 0/0 was refused
    # replicates under the same rule: finite, and 0 where the split is unusable
    blocks = np.arange(n) % 5
    u = unbiased_gain(tree, G, nodes, g, h, rng=np.random.default_rng(0), blocks=blocks,
                      n_blocks=5, n_node=np.array([100, 50, 50]))
    assert np.all(u.jackknife[:, 0] == 0.0)
    # the rule itself: scaled to the node, compared without dividing by the drawn rows
    assert not has_curvature(np.array(1e-40), 5, 5, np.array(100))[()]
    assert has_curvature(np.array(MIN_HESSIAN * 5 / 100), 5, 5, np.array(100))[()]
    assert has_curvature(np.array(0.0), 0, 0, np.array(0)) == np.False_  # 0/0 stays no evidence
    assert has_curvature(np.array(1e-40), 5, 5, np.array(0))[()]  # G = 0: the term is 0 anyway


def _without_rule(monkeypatch) -> None:
    """The scoring as before the rule: only 0/0 is no evidence, and no split is dropped for a
    node of held-out rows without curvature."""
    monkeypatch.setattr(importance, "MIN_HESSIAN", 0.0)


@pytest.mark.parametrize("objective", ["regression", "binary"])
@pytest.mark.parametrize("validation_only", [False, True])
def test_ordinary_models_are_unchanged_bit_for_bit(monkeypatch, objective, validation_only):
    """Squared error (the paper's example) and a logistic model of moderate confidence: the
    rule does not bite, every number of the report is what it was."""
    from unbiased_criteria.datasets import paper_example

    if objective == "regression":
        X, y = paper_example(2000, random_state=0)
        Xv, yv = paper_example(2000, random_state=1)
    else:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(4000, 5))
        y = (rng.random(4000) < 1 / (1 + np.exp(-(2 * X[:, 0] - X[:, 1])))).astype(int)
        X, Xv, y, yv = X[:2000], X[2000:], y[:2000], y[2000:]
    model = lgb.train({"objective": objective, "verbose": -1, "num_threads": 1},
                      lgb.Dataset(X, y), 30)
    train = (None, None) if validation_only else (X, y)
    now = uc.unbiased_importance(model, *train, Xv, yv, random_state=0, n_jobs=1,
                                 n_blocks=20)
    _without_rule(monkeypatch)
    before = uc.unbiased_importance(model, *train, Xv, yv, random_state=0, n_jobs=1,
                                    n_blocks=20)
    pd.testing.assert_frame_equal(now.splits, before.splits, check_exact=True)
    np.testing.assert_array_equal(now.jackknife, before.jackknife)


def test_the_floor_is_in_the_weights_units():
    """Multiplying every weight by c multiplies every hessian sum and the floor alike: the
    same splits are usable and U scales by c (an absolute floor made ordinary nodes unusable
    under weights normalised to sum to 1, and U biased under the null there)."""
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 4))
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    w = rng.uniform(0.5, 2.0, n)
    model = lgb.train({"objective": "binary", "verbose": -1, "num_threads": 1,
                       "min_sum_hessian_in_leaf": 0}, lgb.Dataset(X[:1000], y[:1000]), 20)
    reports = [uc.unbiased_importance(model, X[:1000], y[:1000], X[1000:], y[1000:],
                                      train_weight=w[:1000] * c, valid_weight=w[1000:] * c,
                                      random_state=0, n_jobs=1)
               for c in (1.0, 1.0 / n)]
    a, b = (r.splits for r in reports)
    np.testing.assert_array_equal(a["usable"], b["usable"])
    # weighted gradients are float32 products, as the hosts make them: equal to 1e-6
    np.testing.assert_allclose(b["unbiased_gain"], a["unbiased_gain"] / n, rtol=1e-6,
                               atol=1e-7 * np.abs(a["unbiased_gain"]).max() / n)


def _regression_case():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8000, 4))
    y = 0.5 * X[:, 0] + rng.normal(size=8000)
    model = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1,
                       "min_data_in_leaf": 5, "seed": 0}, lgb.Dataset(X[:4000], y[:4000]), 20)
    return model, X[:4000], y[:4000], X[4000:], y[4000:], rng.uniform(0.5, 1.5, 4000)


def test_held_out_weights_scaled_alone_change_nothing():
    """The held-out weights enter U only through ratios ``sum(w g') / sum(w h')``: held-out
    weights normalised to sum to 1 give the report and the pruned model of the weights
    themselves (before: the floor's unit came from the training rows, and 90 of 557 usable
    splits became unusable, a noise feature's U flipping sign)."""
    model, X, y, Xv, yv, wv = _regression_case()
    a, b = (uc.unbiased_importance(model, X, y, Xv, yv, valid_weight=w, random_state=0,
                                   n_jobs=1) for w in (wv, wv / wv.sum()))
    np.testing.assert_array_equal(a.splits["usable"], b.splits["usable"])
    # weighted gradients are float32 products, as the hosts make them; U cancels terms
    np.testing.assert_allclose(b.splits["unbiased_gain"], a.splits["unbiased_gain"],
                               rtol=1e-6, atol=1e-7 * np.abs(a.splits["unbiased_gain"]).max())
    pa, pb = (uc.prune(model, X, y, Xv, yv, valid_weight=w, random_state=0, n_jobs=1)
              for w in (wv, wv / wv.sum()))
    np.testing.assert_array_equal(pa.predict(Xv), pb.predict(Xv))


def test_training_weights_scaled_alone_scale_u_and_change_no_usability():
    """Weighted training rows (mean weight 1e6) against unweighted held-out rows: G, and so
    U, scale with the training weights; which splits are usable does not change."""
    model, X, y, Xv, yv, _ = _regression_case()
    a, b = (uc.unbiased_importance(model, X, y, Xv, yv, train_weight=np.full(len(y), c),
                                   random_state=0, n_jobs=1) for c in (1.0, 1e6))
    np.testing.assert_array_equal(a.splits["usable"], b.splits["usable"])
    np.testing.assert_allclose(b.splits["unbiased_gain"], 1e6 * a.splits["unbiased_gain"],
                               rtol=1e-6, atol=1e-6 * np.abs(b.splits["unbiased_gain"]).max())


@pytest.mark.parametrize("host", ["lightgbm", "histgradientboosting"])
def test_class_weights_set_the_floors_unit(host):
    """A classifier's class_weight multiplies the rows' weights: the floor's unit is the
    weighted rows' mean, as when the same weights are passed (before: the unit ignored the
    class weights, and class weights 1e-4 : 3e-4 left 382 of 1200 LightGBM splits usable
    against 919 with the weights passed explicitly)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 5))
    y = (rng.random(6000) < 1 / (1 + np.exp(-X[:, 0]))).astype(int)
    X, Xv, y, yv = X[:3000], X[3000:], y[:3000], y[3000:]
    cw = {0: 1e-4, 1: 3e-4}
    wt, wv = (np.where(labels == 1, cw[1], cw[0]) for labels in (y, yv))
    if host == "lightgbm":
        est = lgb.LGBMClassifier(n_estimators=40, min_child_samples=3, min_child_weight=1e-12,
                                 class_weight=cw, verbose=-1, n_jobs=1).fit(X, y)
        explicit = est.booster_
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        def hgb(**kw):
            return HistGradientBoostingClassifier(max_iter=30, min_samples_leaf=3,
                                                  early_stopping=False, random_state=0, **kw)

        est = hgb(class_weight=cw).fit(X, y)
        explicit = hgb().fit(X, y, sample_weight=wt)
        np.testing.assert_allclose(est.predict_proba(Xv), explicit.predict_proba(Xv))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split-count warnings, alike in both
        a = uc.unbiased_importance(est, X, y, Xv, yv, random_state=0, n_jobs=1)
        b = uc.unbiased_importance(explicit, X, y, Xv, yv, train_weight=wt, valid_weight=wv,
                                   random_state=0, n_jobs=1)
    np.testing.assert_array_equal(a.splits["usable"], b.splits["usable"])
    np.testing.assert_allclose(a.splits["unbiased_gain"], b.splits["unbiased_gain"],
                               rtol=1e-5, atol=1e-7 * np.abs(b.splits["unbiased_gain"]).max())
