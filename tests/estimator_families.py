"""The library's scikit-learn estimators, one factory per family (LightGBM and XGBoost
training hooks, native grower; regressor and classifier), for tests that hold them all to one
contract."""

from unbiased_criteria.adapters.lightgbm import UnbiasedLGBMClassifier, UnbiasedLGBMRegressor
from unbiased_criteria.adapters.xgboost import UnbiasedXGBClassifier, UnbiasedXGBRegressor

import unbiased_criteria as uc

#: every family, regressor and classifier: name -> (factory, is a classifier)
FAMILIES = {
    "lightgbm-regressor": (lambda **kw: UnbiasedLGBMRegressor(verbose=-1, n_jobs=1, **kw), False),
    "lightgbm-classifier": (lambda **kw: UnbiasedLGBMClassifier(verbose=-1, n_jobs=1, **kw),
                            True),
    "xgboost-regressor": (lambda **kw: UnbiasedXGBRegressor(n_jobs=1, enable_categorical=True,
                                                            **kw), False),
    "xgboost-classifier": (lambda **kw: UnbiasedXGBClassifier(n_jobs=1, enable_categorical=True,
                                                              **kw), True),
    "native-regressor": (lambda **kw: uc.UnbiasedGBMRegressor(**kw), False),
    "native-classifier": (lambda **kw: uc.UnbiasedGBMClassifier(**kw), True),
}
HOOKS = [name for name in FAMILIES if not name.startswith("native")]
