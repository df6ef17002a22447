"""cross_fitted_importance and UnbiasedSelector check n_jobs, fit_params and sample_weight
as unbiased_importance checks its arguments: one ValueError naming the argument, before any
fold is fitted. n_jobs=0 was accepted, n_jobs='2' reached LightGBM as a TypeError, and
fit_params='x' or weights 'abc' failed with numpy's or dict's conversion errors."""

from __future__ import annotations

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

import unbiased_criteria as uc  # noqa: E402

N = 200
N_JOBS = r"^n_jobs must be a positive integer, a negative one \(-1: all cores"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3))
    return X, X[:, 0] + rng.normal(size=N)


class NeverFitted(lightgbm.LGBMRegressor):
    """Fails the test if a fold is fitted: the arguments are refused before any fit."""

    def fit(self, *args, **kwargs):
        raise AssertionError("a fold was fitted before the arguments were checked")


@pytest.mark.parametrize("n_jobs", [0, "2", 1.5, True])
def test_bad_n_jobs_is_refused_as_unbiased_importance_refuses_it(data, n_jobs):
    X, y = data
    model = lightgbm.train({"verbose": -1, "num_threads": 1}, lightgbm.Dataset(X, y), 2)
    with pytest.raises(ValueError, match=N_JOBS):  # the oracle: the library's own words
        uc.unbiased_importance(model, X, y, X, y, n_jobs=n_jobs)
    with pytest.raises(ValueError, match=N_JOBS):
        uc.cross_fitted_importance(NeverFitted(verbose=-1), X, y, cv=2, n_jobs=n_jobs)
    with pytest.raises(ValueError, match=N_JOBS):
        uc.UnbiasedSelector(NeverFitted(verbose=-1), cv=2, n_jobs=n_jobs).fit(X, y)


def test_good_n_jobs_reaches_every_clone(data):
    X, y = data
    seen = []

    class Recording(lightgbm.LGBMRegressor):
        def fit(self, *args, **kwargs):
            seen.append(self.n_jobs)
            return super().fit(*args, **kwargs)

    uc.cross_fitted_importance(Recording(n_estimators=2, verbose=-1), X, y, cv=2,
                               n_jobs=np.int64(-1))
    assert seen == [-1, -1]


@pytest.mark.parametrize("fit_params,match", [
    ("x", r"^fit_params must be a dict of keyword arguments of estimator\.fit, got str"),
    ([("a", 1)], r"^fit_params must be a dict .*, got list"),
    ({"sample_weight": np.ones(N)}, r"^fit_params: pass the row weights as sample_weight="),
])
def test_bad_fit_params_name_it(data, fit_params, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        uc.cross_fitted_importance(NeverFitted(verbose=-1), X, y, cv=2, fit_params=fit_params)


@pytest.mark.parametrize("weight,match", [
    ("abc", r"^sample_weight must be an array of numbers \(one weight per row\), got 'abc'"),
    ([object()] * N, r"^sample_weight must be an array of numbers .* got a list"),
    (np.ones(N - 1), rf"^sample_weight has {N - 1} weights but the data has {N} rows"),
    (np.full(N, 1e39), r"^sample_weight has weights beyond the float32 range"),
    (np.zeros(N), r"^sample_weight is zero for every row"),
])
def test_bad_sample_weight_names_it(data, weight, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        uc.cross_fitted_importance(NeverFitted(verbose=-1), X, y, cv=2, sample_weight=weight)
    with pytest.raises(ValueError, match=match):
        uc.UnbiasedSelector(NeverFitted(verbose=-1), cv=2).fit(X, y, sample_weight=weight)


@pytest.mark.parametrize("argument", ["train_weight", "valid_weight"])
@pytest.mark.parametrize("weight", ["abc", [object()] * N])
def test_unbiased_importance_weights_that_are_not_numbers_name_the_argument(data, argument,
                                                                             weight):
    X, y = data
    model = lightgbm.train({"verbose": -1, "num_threads": 1}, lightgbm.Dataset(X, y), 2)
    with pytest.raises(ValueError, match=rf"^{argument} must be an array of numbers"):
        uc.unbiased_importance(model, X, y, X + 1, y, **{argument: weight})
