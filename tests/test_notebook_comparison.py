"""The notebooks' shared code (``notebooks/comparison.py``): ``library_gain_on_heldout``.

It passes the held-out rows as training rows on purpose (the gain on held-out rows, the
quantity of XGBoost's ``refresh`` updater). It must silence exactly the library's warnings
that this use makes expected, and no other: none are left for a model trained on other rows,
and a warning of another kind (too few held-out rows) still shows.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from unbiased_criteria.datasets import paper_example  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
sys.dont_write_bytecode, _before = True, sys.dont_write_bytecode  # no __pycache__ in notebooks/
try:
    import comparison as C  # noqa: E402
finally:
    sys.dont_write_bytecode = _before


def _model(host: str):
    X, y = paper_example(800, random_state=0)
    return C.fit_host(host, "regression", X, y, n_estimators=20, learning_rate=0.1, seed=0)


@pytest.mark.parametrize("host", ["lightgbm", "xgboost", "hgb"])
def test_gain_on_heldout_leaves_no_expected_warning(host):
    model = _model(host)
    Xv, yv = paper_example(800, random_state=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gain = C.library_gain_on_heldout(model, Xv, yv, seed=0)
    assert [str(w.message) for w in caught] == []
    assert np.isfinite(gain.to_numpy()).all()


def test_gain_on_heldout_equals_xgboost_refresh():
    """The oracle: XGBoost's own refresh updater on the same held-out rows."""
    model = _model("xgboost")
    Xv, yv = paper_example(800, random_state=1)
    host = C.xgboost_refresh_gain(model, Xv, yv)
    ours = C.library_gain_on_heldout(model, Xv, yv, seed=0).reindex(host.index)
    np.testing.assert_allclose(ours.to_numpy(), host.to_numpy(), rtol=1e-5)


def test_gain_on_heldout_keeps_other_warnings():
    """Too few held-out rows: the library's warning of it is not one the filter expects."""
    model = _model("lightgbm")
    Xv, yv = paper_example(40, random_state=1)
    with pytest.warns(UserWarning, match="splits have no usable evidence"):
        C.library_gain_on_heldout(model, Xv, yv, seed=0)
