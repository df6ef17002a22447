"""The estimators' ``feature_importances_`` as scikit-learn's own tools read it, for every
family (LightGBM and XGBoost hooks, native grower; regressor and classifier).

``feature_importances_`` is non-negative, ``max(0, unbiased_gain_)``: scikit-learn's
``SelectFromModel`` (``abs``) and ``RFE`` (square) read it as a magnitude, and kept the noise
features (strongly negative signed sums) on the paper's example. Oracle: the features
scikit-learn's selectors keep; the one informative feature is known.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from estimator_families import FAMILIES  # noqa: E402
from sklearn.feature_selection import RFE, SelectFromModel  # noqa: E402
from unbiased_criteria.adapters.lightgbm import (  # noqa: E402
    UnbiasedLGBMRegressor,
)

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402


def paper_with_null(classifier: bool, effect: float = 0.25, seed: int = 0):
    """The paper's example (only X1 informative) and a fourth, null, N(0, 1) column."""
    X, y = paper_example(4000, random_state=seed, effect=effect)
    X["null"] = np.random.default_rng(100 + seed).normal(size=len(X))
    return X, ((y > 0).astype(int) if classifier else y)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_selectors_keep_the_informative_feature_and_drop_the_null_one(family):
    make, classifier = FAMILIES[family]
    X, y = paper_with_null(classifier)

    def est():
        return make(n_estimators=100, learning_rate=0.05)

    model = est().fit(X, y)
    signed, importance = model.unbiased_gain_, model.feature_importances_
    # the signed sums, as the report has them; the importance is them clipped at 0
    np.testing.assert_allclose(signed, model.importance_report_.to_frame()["unbiased_gain"])
    np.testing.assert_array_equal(importance, np.maximum(signed, 0.0))
    # the noise features' signed sums are strongly negative: read as magnitudes (as
    # SelectFromModel reads them: |importance| >= its mean) a noise feature is kept too
    assert signed[3] < 0 and importance[3] == 0  # the null column
    magnitude = np.abs(signed)
    assert (magnitude[1:] >= magnitude.mean()).any(), signed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = SelectFromModel(est()).fit(X, y).get_feature_names_out()
        last = RFE(est(), n_features_to_select=1).fit(X, y).get_feature_names_out()
    assert list(kept) == ["X1"], (signed, kept)
    assert list(last) == ["X1"], (signed, last)


def test_selectors_on_the_papers_example_as_given():
    """The paper's example itself (effect 0.1, three features), LightGBM's regressor: its
    noise features summed to -140 and -132 against X1's 34, and the selectors kept them."""
    X, y = paper_example(4000, random_state=0)

    def est():
        return UnbiasedLGBMRegressor(n_estimators=100, learning_rate=0.05, verbose=-1,
                                     n_jobs=1)

    assert list(SelectFromModel(est()).fit(X, y).get_feature_names_out()) == ["X1"]
    assert list(RFE(est(), n_features_to_select=1).fit(X, y).get_feature_names_out()) == ["X1"]


def test_no_evidence_is_zero_and_nan_stays_nan():
    """Null data: every signed sum below 0 is importance 0 (none negative); nothing scored:
    NaN, with the warning, both for the importance and the signed sums."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(1500, 3)), rng.normal(size=1500)
    for family in ("lightgbm-regressor", "xgboost-regressor", "native-regressor"):
        model = FAMILIES[family][0](n_estimators=60, learning_rate=0.1).fit(X, y)
        assert (model.feature_importances_ >= 0).all(), family
        negative = model.unbiased_gain_ < 0
        assert negative.any(), (family, model.unbiased_gain_)
        assert (model.feature_importances_[negative] == 0).all()
    off = UnbiasedLGBMRegressor(n_estimators=5, verbose=-1, prune_threshold=None).fit(X, y)
    for attribute in ("feature_importances_", "unbiased_gain_"):
        with pytest.warns(UserWarning, match="is NaN: no split was scored"):
            assert np.isnan(getattr(off, attribute)).all()
    biased = uc.UnbiasedGBMRegressor(n_estimators=5, criterion="biased").fit(X, y)
    assert np.isnan(biased.feature_importances_).all()
    assert np.isnan(biased.unbiased_gain_).all()




def test_training_report_refuses_a_run_that_scored_nothing():
    """With pruning off, the hooks' training_report returned a table of U = 0 for every
    feature (what a host that made no split gives) and select() said the model had no
    splits, without a word; it is refused now, as the estimators' importance_report_."""
    import lightgbm
    import xgboost
    from unbiased_criteria.adapters import lightgbm as ulgb
    from unbiased_criteria.adapters import xgboost as uxgb

    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(600, 3)), rng.normal(size=600)
    lgb_model = ulgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                           lightgbm.Dataset(X, y), 3, prune_threshold=None)
    xgb_model = uxgb.train({"nthread": 1}, xgboost.DMatrix(X, y), 3, prune_threshold=None)
    assert (lgb_model.trees_to_dataframe()["split_feature"].notna()).any()
    for report_of, model in ((ulgb.training_report, lgb_model),
                             (uxgb.training_report, xgb_model)):
        with pytest.raises(ValueError, match="no split was scored during training"):
            report_of(model)
    est = UnbiasedLGBMRegressor(n_estimators=3, verbose=-1, n_jobs=1,
                                prune_threshold=None).fit(X, y)
    with pytest.raises(ValueError, match="no split was scored during training"):
        ulgb.training_report(est)
