"""The library called from several threads at once leaves Python's warnings machinery as it
found it: ``warnings.catch_warnings`` swaps process-wide state, so two threads inside it at
once restore each other's filters (a filter left behind silences every later warning)."""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example


def _state():
    return list(warnings.filters), warnings.showwarning, warnings._showwarnmsg_impl


def test_cross_fitting_in_threads_leaves_the_warnings_as_they_were():
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(600, random_state=0)
    est = lgb.LGBMRegressor(n_estimators=8, num_leaves=4, verbose=-1, n_jobs=1)
    before = _state()
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(lambda i: uc.cross_fitted_importance(
            est, X, y, cv=3, random_state=0, n_jobs=1), range(8)))
    assert _state() == before
    first = reports[0].to_frame()
    for r in reports[1:]:
        np.testing.assert_array_equal(r.to_frame().to_numpy(), first.to_numpy())
    with pytest.warns(UserWarning, match="still shown"):
        warnings.warn("still shown", UserWarning, stacklevel=2)


def test_xgboost_model_files_loaded_in_threads_leave_the_warnings_as_they_were(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(2, 800, 3))
    y, yv = X[:, 0] + rng.normal(size=800), Xv[:, 0] + rng.normal(size=800)
    path = tmp_path / "model.json"
    xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 4).save_model(path)
    before = _state()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: uc.unbiased_importance(
            str(path), X, y, Xv, yv, random_state=0, n_jobs=1), range(24)))
    assert _state() == before
    with pytest.warns(UserWarning, match="same rows"):  # the library's own still shows
        uc.unbiased_importance(str(path), X, y, X, y, random_state=0, n_jobs=1)
