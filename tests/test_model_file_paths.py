"""A model file's path as ``model``: the host model in it, read as the command line reads it.

Oracle: the same call on the host model the file was saved from.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc
from unbiased_criteria.datasets import paper_example

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def data():
    X, y = paper_example(1500, random_state=0)
    Xv, yv = paper_example(1500, random_state=1)
    return X, y, Xv, yv


def test_lightgbm_text_file(data, tmp_path):
    X, y, Xv, yv = data
    booster = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y), 15)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    want = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=0)
    for given in (str(path), path):
        got = uc.unbiased_importance(given, X, y, Xv, yv, random_state=0)
        pd.testing.assert_frame_equal(got.splits, want.splits)
    pruned = uc.prune(path, X, y, Xv, yv, random_state=0)
    assert isinstance(pruned, lgb.Booster)
    np.testing.assert_array_equal(pruned.predict(Xv),
                                  uc.prune(booster, X, y, Xv, yv, random_state=0).predict(Xv))
    assert path.read_text() == booster.model_to_string()  # the file is left alone


def test_xgboost_ubj_file_and_refusals(data, tmp_path):
    X, y, Xv, yv = data
    booster = xgb.train({"eta": 0.3, "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y, enable_categorical=True), 10)
    path = tmp_path / "model.ubj"
    booster.save_model(path)
    report = uc.unbiased_importance(str(path), X, y, Xv, yv, random_state=0)
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-4)
    # a pickle runs code when loaded: refused, with the way to load it
    hgb = pytest.importorskip("sklearn.ensemble").HistGradientBoostingRegressor(max_iter=2)
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(hgb.fit(X[["X1", "X3"]], y)))
    with pytest.raises(ValueError, match="a pickle or joblib file.*joblib.load"):
        uc.unbiased_importance(tmp_path / "model.pkl", X, y, Xv, yv)
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ValueError, match="notes.txt: not a model file"):
        uc.prune(Path(tmp_path / "notes.txt"), X, y, Xv, yv)
    with pytest.raises(ValueError, match="absent.txt: no such file"):
        uc.unbiased_importance(str(tmp_path / "absent.txt"), X, y, Xv, yv)
