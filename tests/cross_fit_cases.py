"""What the cross-fitting tests share: a small LightGBM regressor and the cross-fitted
report's oracle, ``unbiased_importance`` of a clone fitted on each fold with the fold's seed.
Import after ``pytest.importorskip("lightgbm")`` and ``("sklearn")``."""

from __future__ import annotations

import lightgbm
import numpy as np
from sklearn.base import clone

import unbiased_criteria as uc


def lgb_regressor(**kw):
    params = dict(n_estimators=10, learning_rate=0.1, num_leaves=7, min_child_samples=20,
                  verbose=-1, n_jobs=1, random_state=0)
    params.update(kw)
    return lightgbm.LGBMRegressor(**params)


def by_hand(estimator, X, y, folds, random_state, **kw):
    """``unbiased_importance`` of a clone fitted on each fold, with the fold's seed."""
    seeds = np.random.SeedSequence(random_state).spawn(len(folds))
    reports = []
    for (train, held), seed in zip(folds, seeds):
        model = clone(estimator).fit(X.iloc[train], y[train])
        reports.append(uc.unbiased_importance(model, X.iloc[train], y[train], X.iloc[held],
                                              y[held], random_state=seed, **kw))
    return reports
