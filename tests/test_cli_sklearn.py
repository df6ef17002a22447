"""The command line on a pickled scikit-learn HistGradientBoosting estimator: refused without
``--trust-pickle``, the same numbers as the Python API with it, and a pruned pickle that
scikit-learn predicts with."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("joblib")
import joblib  # noqa: E402
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cli import main  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hgb")
    X, y = paper_example(600, random_state=0)
    Xv, yv = paper_example(600, random_state=1)
    # categories as text in the files, a pandas categorical for the estimator
    X["X2"] = pd.Categorical(np.array(list("abcdef"))[X["X2"].cat.codes])
    Xv["X2"] = pd.Categorical(np.array(list("abcdef"))[Xv["X2"].cat.codes])
    model = HistGradientBoostingRegressor(max_iter=20, learning_rate=0.3,
                                          early_stopping=False, random_state=0).fit(X, y)
    with open(d / "hgb.pkl", "wb") as f:
        pickle.dump(model, f)
    joblib.dump(model, d / "hgb.joblib")
    with open(d / "forest.pkl", "wb") as f:
        pickle.dump(RandomForestRegressor(n_estimators=2).fit(X[["X1", "X3"]], y), f)
    X.assign(y=y).to_csv(d / "train.csv", index=False)
    Xv.assign(y=yv).to_csv(d / "valid.csv", index=False)
    return d, model, X, y, Xv, yv


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_pickle_needs_trust_pickle(files, capsys):
    d, *_ = files
    code, out, err = run(capsys, "importance", d / "hgb.pkl", "--valid", d / "valid.csv",
                         "--label", "y")
    assert code == 2 and "--trust-pickle" in err and "runs code" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["hgb.pkl", "hgb.joblib"])
def test_importance_matches_the_python_api(files, capsys, name):
    d, model, X, y, Xv, yv = files
    code, out, err = run(capsys, "importance", d / name, "--trust-pickle", "--train",
                         d / "train.csv", "--valid", d / "valid.csv", "--label", "y",
                         "--format", "csv", "--seed", "3")
    assert code == 0, err
    got = pd.read_csv(pd.io.common.StringIO(out), index_col=0)
    want = uc.unbiased_importance(model, X, y, Xv, yv, random_state=3).to_frame()
    pd.testing.assert_frame_equal(got.loc[want.index], want, check_names=False, rtol=1e-12)


def test_prune_writes_a_pickle_scikit_learn_predicts_with(files, capsys, tmp_path):
    d, model, X, y, Xv, yv = files
    out_path = tmp_path / "pruned.pkl"
    code, out, err = run(capsys, "prune", d / "hgb.pkl", "--trust-pickle", "--train",
                         d / "train.csv", "--valid", d / "valid.csv", "--label", "y",
                         "--output", out_path)
    assert code == 0, err
    with open(out_path, "rb") as f:
        pruned = pickle.load(f)
    want = uc.prune(model, X, y, Xv, yv, random_state=0)
    assert type(pruned) is HistGradientBoostingRegressor
    np.testing.assert_array_equal(pruned.predict(Xv), want.predict(Xv))
    assert "leaves after" in out


def test_other_pickles_are_refused(files, capsys):
    d, *_ = files
    code, out, err = run(capsys, "importance", d / "forest.pkl", "--trust-pickle", "--valid",
                         d / "valid.csv", "--label", "y")
    assert code == 2 and "HistGradientBoosting" in err
    assert len(err.strip().splitlines()) == 1


def test_classifier_with_text_labels(tmp_path, capsys):
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = paper_example(500, random_state=0)
    Xv, yv = paper_example(500, random_state=1)
    label = np.where(y > 0, "Yes", "No")
    label_v = np.where(yv > 0, "Yes", "No")
    model = HistGradientBoostingClassifier(max_iter=10, early_stopping=False,
                                           random_state=0).fit(X, label)
    with open(tmp_path / "clf.pkl", "wb") as f:
        pickle.dump(model, f)
    Xv.assign(y=label_v).to_csv(tmp_path / "valid.csv", index=False)
    code, out, err = run(capsys, "importance", tmp_path / "clf.pkl", "--trust-pickle",
                         "--valid", tmp_path / "valid.csv", "--label", "y", "--format", "csv")
    assert code == 0, err
    got = pd.read_csv(pd.io.common.StringIO(out), index_col=0)
    want = uc.unbiased_importance(model, None, None, Xv, label_v, random_state=0).to_frame()
    pd.testing.assert_frame_equal(got.loc[want.index], want, check_names=False, rtol=1e-12)


def test_recognised_by_content_and_compressed_joblib_loads(files, capsys, tmp_path):
    from unbiased_criteria import model_files

    d, model, *_ = files
    joblib.dump(model, tmp_path / "hgb.z", compress=3)  # zlib
    joblib.dump(model, tmp_path / "hgb.gz", compress=("gzip", 3))
    adapter = model_files.host_adapter("sklearn")
    for name in ("hgb.pkl", "hgb.joblib"):
        assert adapter.recognise_model_file((d / name).read_bytes())
    for path in (tmp_path / "hgb.z", tmp_path / "hgb.gz"):
        assert adapter.recognise_model_file(path.read_bytes())
        assert model_files.load_model_file(path.read_bytes(), "m", trusted=True).host == \
            "sklearn"
    for other in (b"x1,x2\n1,2\n", b"X1,X2\n", b"tree\nversion=v4\n", b'{"learner": {}}'):
        assert not adapter.recognise_model_file(other)
    code, out, err = run(capsys, "importance", d / "hgb.pkl", "--trust-pickle", "--valid",
                         d / "valid.csv", "--label", "y", "--param", "eta=0.1")
    assert code == 2 and "--param: is for XGBoost models" in err
