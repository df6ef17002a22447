"""The model-file interface (``unbiased_criteria.model_files``) and each adapter's side of it.

Each adapter recognises its own files and not the other host's; a file written by
``serialise_model`` loads back in the host alone with the same predictions; a host that is not
installed gives one clear error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from unbiased_criteria import model_files
from unbiased_criteria.errors import InputError

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


@pytest.fixture(scope="module")
def files() -> dict:
    """The bytes of a LightGBM text model and an XGBoost JSON and UBJ model, with the data."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a b": rng.random(300), "c": pd.Categorical(rng.choice(["u", "v", "w"],
                                                                            300))})
    y = X["a b"] + 0.3 * (X["c"] == "v") + 0.1 * rng.random(300)
    lb = lgb.train({"num_leaves": 4, "verbose": -1, "min_data_per_group": 5, "cat_smooth": 1},
                   lgb.Dataset(X, y), 3)
    xb = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y, enable_categorical=True),
                   3)
    return {"X": X, "lgb": lb, "xgb": xb,
            "text": lb.model_to_string().encode(), "json": bytes(xb.save_raw("json")),
            "ubj": bytes(xb.save_raw("ubj"))}


def test_each_adapter_recognises_its_own_files_only(files):
    lgb_files = model_files.host_adapter("lightgbm")
    xgb_files = model_files.host_adapter("xgboost")
    assert lgb_files.recognise_model_file(files["text"])
    assert not lgb_files.recognise_model_file(files["json"])
    assert not lgb_files.recognise_model_file(files["ubj"])
    assert xgb_files.recognise_model_file(files["json"])
    assert xgb_files.recognise_model_file(files["ubj"])
    assert not xgb_files.recognise_model_file(files["text"])
    for fmt, host in (("text", "lightgbm"), ("json", "xgboost"), ("ubj", "xgboost")):
        mf = model_files.load_model_file(files[fmt], "model m")
        assert (mf.host, mf.format, mf.source) == (host, fmt, "model m")


@pytest.mark.parametrize("fmt,suffix,written", [("text", ".txt", "text"),
                                                ("json", ".ubj", "ubj"),
                                                ("ubj", ".json", "json"),
                                                ("json", ".model", "json")])
def test_serialise_round_trip_predicts_as_the_host(files, fmt, suffix, written):
    mf = model_files.load_model_file(files[fmt], "model m")
    blob = model_files.serialise_model(mf, mf.model, suffix)
    X = files["X"]
    if mf.host == "lightgbm":
        expected = files["lgb"].predict(X)
        got = lgb.Booster(model_str=blob.decode()).predict(X)
    else:
        assert model_files.load_model_file(blob, "out").format == written
        dm = xgb.DMatrix(X, enable_categorical=True)
        expected = files["xgb"].predict(dm)
        got = xgb.Booster(model_file=bytearray(blob)).predict(dm)
    np.testing.assert_array_equal(got, expected)


def test_lightgbm_written_as_text_whatever_the_suffix_warns(files):
    mf = model_files.load_model_file(files["text"], "model m")
    with pytest.warns(UserWarning, match="LightGBM text model, not as .json"):
        blob = model_files.serialise_model(mf, mf.model, ".JSON")
    assert blob.startswith(b"tree\n")


def test_xgboost_and_scikit_learn_written_under_another_host_suffix_warn(files):
    """An XGBoost model named *.txt (LightGBM's text) was written as JSON or UBJ, and a
    scikit-learn estimator named *.json as a pickle, without a word (LightGBM warned)."""
    pickle = pytest.importorskip("pickle")
    hgb_cls = pytest.importorskip("sklearn.ensemble").HistGradientBoostingRegressor
    xmf = model_files.load_model_file(files["ubj"], "model m")
    with pytest.warns(UserWarning, match=r"XGBoost's UBJ format \(.json or .ubj choose\), "
                                         r"not as a text model"):
        blob = model_files.serialise_model(xmf, xmf.model, ".txt")
    assert model_files.load_model_file(blob, "out").format == "ubj"
    rng = np.random.default_rng(0)
    hgb = hgb_cls(max_iter=3).fit(rng.normal(size=(50, 2)), rng.normal(size=50))
    smf = model_files.load_model_file(pickle.dumps(hgb), "model m", trusted=True)
    with pytest.warns(UserWarning, match="a scikit-learn estimator is written as a pickle, "
                                         "not as .json"):
        blob = model_files.serialise_model(smf, smf.model, ".json")
    assert type(pickle.loads(blob)) is hgb_cls


def test_feature_schema_from_each_host(files):
    lgb_schema = model_files.feature_schema(model_files.load_model_file(files["text"], "m"))
    assert lgb_schema.names == ["a_b", "c"] and lgb_schema.n_features == 2
    assert lgb_schema.stored_name("a b") == "a_b"
    assert lgb_schema.categorical == {1: ["u", "v", "w"]}
    xgb_schema = model_files.feature_schema(model_files.load_model_file(files["json"], "m"))
    assert xgb_schema.names == ["a b", "c"] and xgb_schema.stored_name is None
    assert xgb_schema.categorical == {1: ["u", "v", "w"]}


def test_training_params_only_for_xgboost(files):
    xmf = model_files.load_model_file(files["json"], "m")
    model_files.set_training_params(xmf, {"eta": "0.05"})
    assert json_eta(xmf.model) == pytest.approx(0.05)
    lmf = model_files.load_model_file(files["text"], "m")
    with pytest.raises(InputError, match="LightGBM model files store their training"):
        model_files.set_training_params(lmf, {"eta": "0.05"})


def json_eta(booster) -> float:
    import json

    return float(json.loads(booster.save_config())["learner"]["gradient_booster"]
                 ["tree_train_param"]["eta"])


def test_missing_host_is_one_clear_error(monkeypatch, files):
    real = model_files.importlib.util.find_spec

    def without_lightgbm(name, *args):
        return None if name == "lightgbm" else real(name, *args)

    monkeypatch.setattr(model_files.importlib.util, "find_spec", without_lightgbm)
    with pytest.raises(InputError, match=r"^needs lightgbm \(pip install lightgbm\)$"):
        model_files.host_adapter("lightgbm")
    assert [h for h in model_files.installed_hosts() if h != "sklearn"] == ["xgboost"]
    with pytest.raises(InputError, match=r"not a model file .*other kinds need lightgbm"):
        model_files.load_model_file(files["text"], "model m")
    assert model_files.load_model_file(files["json"], "m").host == "xgboost"


def test_unrecognised_and_empty_files_are_input_errors():
    with pytest.raises(InputError, match="model m: is empty"):
        model_files.load_model_file(b"  \n", "model m")
    with pytest.raises(InputError, match="model m: not a model file .*LightGBM text"):
        model_files.load_model_file(b"a,b\n1,2\n", "model m")
