"""The predictions the training hook's metrics see are XGBoost's own, to the last bit but rarely.

XGBoost computes its links in float32 with the C library's ``expf``, which is almost always
correctly rounded (glibc: all but about 1 argument in 1,000 here); numpy's float32 ``exp`` is
off by one unit in the last place for a sixth to a third of the values these tests draw, and
one unit decides a tie for a rank metric such as AUC (a binary model whose 14 distinct margins
gave 13 distinct numpy probabilities and 14 of XGBoost's: its AUC differed by 2e-4). The
oracle: a Booster with no trees predicts the link of each row's base margin.
"""

from __future__ import annotations

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters.xgboost.metrics import _eval_transform  # noqa: E402
from unbiased_criteria.adapters.xgboost.objectives import expf  # noqa: E402


def host_transform(objective, margins, **params):
    rows = margins.shape[0]
    label = (np.arange(rows) % params.get("num_class", 2)).astype(np.float32)
    d = xgb.DMatrix(np.zeros((rows, 1), dtype=np.float32), label,
                    base_margin=margins.reshape(rows, -1))
    bst = xgb.train({"objective": objective, "nthread": 1, **params}, d, 0)
    return bst.predict(d).reshape(margins.shape)


@pytest.mark.parametrize("objective, params, scale", [
    ("binary:logistic", {}, 4.0), ("count:poisson", {}, 3.0), ("reg:gamma", {}, 3.0),
    ("multi:softprob", {"num_class": 3}, 4.0),
])
def test_links_are_xgboosts_but_rarely_one_ulp_off(objective, params, scale):
    rng = np.random.default_rng(0)
    shape = (20000, params["num_class"]) if "num_class" in params else (20000,)
    margins = (rng.uniform(-scale, scale, size=shape)).astype(np.float32)
    margins[:2] = np.float32(0.6526959)  # numpy's float32 exp is one ulp off here
    want = host_transform(objective, margins, **params)
    got = _eval_transform(objective, margins)
    np.testing.assert_array_max_ulp(got, want, maxulp=2)  # softmax: 1 + its division
    assert np.mean(got != want) < 0.005  # numpy's float32 exp: 0.17-0.77 here
    np.testing.assert_array_equal(got[:2], want[:2])


def test_expf_is_correctly_rounded():
    x = np.float32(-0.6526959)
    assert expf(np.array([x]))[0] == np.float32(np.exp(np.float64(x)))
    assert expf(np.array([np.float32(100.0)]))[0] == np.inf  # overflow to inf, no warning
