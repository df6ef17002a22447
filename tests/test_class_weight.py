"""A classifier's ``class_weight`` multiplied its training weights (LightGBM's and
HistGradientBoosting's estimators; the Booster or predictors do not say): the rows are
weighted alike. LightGBM's was ignored without a word (B off by up to 2.7×, refit leaves
off by 1.6 in raw score); HistGradientBoosting's was only warned about. Oracles: the hosts'
stored gains and their own predictions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + rng.normal(size=n) > 1, "Yes", "No")
    return X, y


WEIGHTS = [{"Yes": 5.0, "No": 1.0}, "balanced", {"Yes": 3.0}]


@pytest.mark.parametrize("class_weight", WEIGHTS)
def test_lightgbm_class_weight_is_applied(class_weight):
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    Xv, yv = _data(seed=1)
    model = lgb.LGBMClassifier(n_estimators=8, num_leaves=8, verbose=-1, n_jobs=1,
                               class_weight=class_weight).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say: the weights are the model's
        splits = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
        pruned = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                          random_state=0)
    np.testing.assert_allclose(splits["biased_gain"], splits["host_gain"], rtol=1e-5)
    # LightGBM keeps weights in float32 (1500 / (2 count) is not one): to its precision
    np.testing.assert_allclose(pruned.predict(Xv, raw_score=True),
                               model.predict(Xv, raw_score=True), rtol=1e-6, atol=1e-9)
    # the user's sample weights multiply with the class weights, as in LightGBM's fit
    w = np.linspace(0.5, 2.0, len(y))
    weighted = lgb.LGBMClassifier(n_estimators=8, num_leaves=8, verbose=-1, n_jobs=1,
                                  class_weight=class_weight).fit(X, y, sample_weight=w)
    s = uc.unbiased_importance(weighted, X, y, Xv, yv, train_weight=w, random_state=0).splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-5)


# scikit-learn applies a dict to the encoded labels: its keys are class indices
@pytest.mark.parametrize("class_weight", [{0: 1.0, 1: 5.0}, "balanced", {0: 1.0, 1: 2.5}])
def test_histgradientboosting_class_weight_is_applied(class_weight):
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, y = _data()
    Xv, yv = _data(seed=1)
    model = ensemble.HistGradientBoostingClassifier(
        max_iter=8, max_leaf_nodes=8, early_stopping=False, class_weight=class_weight
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*was not verified")
        splits = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0).splits
        pruned = uc.prune(model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                          random_state=0)
    inner = splits[splits["depth"] > 0]  # scikit-learn scores each root from a value of 0
    np.testing.assert_allclose(inner["biased_gain"], inner["host_gain"], rtol=1e-5)
    np.testing.assert_allclose(pruned.decision_function(Xv), model.decision_function(Xv),
                               rtol=0, atol=1e-9)


def test_balanced_without_training_labels_uses_the_held_out_counts_and_says_so():
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    Xv, yv = _data(seed=1)
    model = lgb.LGBMClassifier(n_estimators=4, verbose=-1, n_jobs=1,
                               class_weight="balanced").fit(X, y)
    with pytest.warns(UserWarning, match="class_weight='balanced' takes each class's weight "
                                         "from the training labels' counts"):
        uc.unbiased_importance(model, None, None, Xv, yv, random_state=0)
