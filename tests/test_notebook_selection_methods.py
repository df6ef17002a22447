"""Notebook 3's helpers (``notebooks/selection_methods.py``) against the library and BorutaShap.

* ``best_cut`` (the ``iterations="best"`` report read off a report of all iterations) equals
  ``cross_fitted_importance(iterations="best")``: the same cuts and the same importances.
* ``import_borutashap`` makes BorutaShap 1.0.17 run on NumPy 2 / SciPy >= 1.12 without
  changing scipy or numpy for anyone else, and BorutaShap accepts the one informative feature.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

lightgbm = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

import unbiased_criteria as uc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import selection_methods as S  # noqa: E402


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["x1", "x2", "x3", "x4"])
    y = X["x1"].to_numpy() + 0.3 * X["x2"].to_numpy() + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("host", ["lightgbm", "xgboost"])
def test_best_cut_equals_iterations_best(host):
    pytest.importorskip(host)
    X, y = _data()
    est = S.host_estimator(host, "regression", n_estimators=40, learning_rate=0.2, seed=0)
    full = uc.cross_fitted_importance(est, X, y, cv=3, random_state=1)
    best = uc.cross_fitted_importance(est, X, y, cv=3, random_state=1, iterations="best")
    mine = S.best_cut(full)
    assert mine.iterations_kept == best.iterations_kept
    assert min(best.iterations_kept) < 40  # the cut bites, so the check is not vacuous
    pd.testing.assert_frame_equal(mine.to_frame(), best.to_frame())


def test_borutashap_runs_and_leaves_scipy_and_numpy_alone():
    if importlib.util.find_spec("BorutaShap") is None:  # importing it unshimmed fails
        pytest.skip("needs BorutaShap (the `notebooks` extra)")
    pytest.importorskip("shap")
    import scipy.stats

    X, y = _data(n=400, seed=3)
    kept = S.borutashap_selection("lightgbm", "regression", X, y, seed=0, host_params={},
                                  n_trials=8, n_estimators=30, learning_rate=0.1)
    assert "x1" in kept["accepted"]
    assert set(kept["accepted"]).isdisjoint(kept["tentative"])
    assert not hasattr(scipy.stats, "binom_test")
    assert not hasattr(np, "NaN")
