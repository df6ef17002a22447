"""A model file an ``UnbiasedXGBClassifier`` saved stores its labels (``classes_``): scored
from the file (``model=<path>``, the command line) they go through them as its loaded
estimator takes them. Before, the labels were read as class indices: labels 1, 2, 3 as the
classes 1, 2 and one that does not exist (silently accepted where the held-out rows lacked
the last class: an unbiased gain of 39572 where the estimator gives 450), text labels refused.
The oracle: the loaded estimator's report on the same rows.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest

xgboost = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")

from unbiased_criteria.adapters.xgboost import UnbiasedXGBClassifier  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cli import load_model, main  # noqa: E402


def _rows(labels: np.ndarray, n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    return X, labels[(X.a > 0).astype(int) + (X.b > 0.5)]


LABELS = {"numbers": np.array([1, 2, 3]), "text": np.array(["hi", "lo", "mid"])}


@pytest.fixture(scope="module", params=sorted(LABELS))
def saved(request, tmp_path_factory):
    labels = LABELS[request.param]
    d = tmp_path_factory.mktemp(request.param)
    X, y = _rows(labels, 1500, 0)
    Xv, yv = _rows(labels, 800, 1)
    keep = yv != labels[-1]  # held-out rows without the last class
    est = UnbiasedXGBClassifier(n_estimators=10, n_jobs=1, max_depth=3).fit(X, y)
    est.save_model(d / "m.json")
    loaded = UnbiasedXGBClassifier()
    loaded.load_model(d / "m.json")
    Xv[keep].assign(y=yv[keep]).to_csv(d / "valid.csv", index=False)
    return d, labels, loaded, Xv[keep], yv[keep]


def _report(model, Xv, yv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return uc.unbiased_importance(model, None, None, Xv, yv, random_state=0, n_jobs=1)


def test_path_is_scored_as_the_loaded_estimator(saved):
    d, labels, loaded, Xv, yv = saved
    want = _report(loaded, Xv, yv).to_frame()
    got = _report(str(d / "m.json"), Xv, yv).to_frame()
    pd.testing.assert_frame_equal(got, want)
    assert want["unbiased_gain"].abs().max() < 5000  # the index reading gave 39572


def test_command_line_is_scored_as_the_loaded_estimator(saved, capsys):
    d, labels, loaded, Xv, yv = saved
    want = _report(loaded, Xv, yv).to_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["importance", str(d / "m.json"), "--valid", str(d / "valid.csv"),
                     "--label", "y", "--seed", "0", "--n-jobs", "1", "--format", "csv"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out), index_col=0)
    np.testing.assert_allclose(got["unbiased_gain"], want["unbiased_gain"], rtol=1e-9)


def test_loaded_file_has_the_classes_and_refuses_other_labels(saved):
    d, labels, loaded, Xv, yv = saved
    booster = load_model(d / "m.json").model
    np.testing.assert_array_equal(booster.classes_, labels)
    other = np.where(yv == labels[0], labels[1], labels[0]).astype(object)
    other[:3] = "unknown"
    with pytest.raises(ValueError, match="not fitted on.*'unknown'"):
        _report(str(d / "m.json"), Xv, other)


def test_booster_object_keeps_the_boosters_indices(saved):
    """A Booster object the user passes is scored on the booster's own class indices, as
    before (only a file the library loads takes the stored labels)."""
    d, labels, loaded, Xv, yv = saved
    booster = xgboost.Booster(model_file=str(d / "m.json"))
    codes = np.searchsorted(labels, yv)
    pd.testing.assert_frame_equal(_report(booster, Xv, codes).to_frame(),
                                  _report(loaded, Xv, yv).to_frame())


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52,
                    reason="longdouble is float64 here: JSON holds it")
def test_file_without_its_labels_says_so(tmp_path):
    """Labels the file could not hold: loaded by path (or the command line) it says its
    classes are the codes, as the estimator's load_model does."""
    X, y = _rows(np.array([2**62 + 1, 2**62 + 3, 2**62 + 5], dtype=np.longdouble), 600, 0)
    est = UnbiasedXGBClassifier(n_estimators=3, n_jobs=1).fit(X, y)
    with pytest.warns(UserWarning, match="cannot be stored"):
        est.save_model(tmp_path / "m.json")
    with pytest.warns(UserWarning, match="could not store"):
        assert not hasattr(load_model(tmp_path / "m.json").model, "classes_")
