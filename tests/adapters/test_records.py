"""What the library keeps with a model describes that model only: a training record whose
Booster was continued or changed is not used as its own, a pruning sketch kept with an
estimator goes when the estimator is fit again, and a training-hook estimator pruned by
``uc.prune`` has no training record (both hosts alike)."""

from __future__ import annotations

import copy
import io
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")
pytest.importorskip("sklearn")
joblib = pytest.importorskip("joblib")

from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from unbiased_criteria.adapters import lightgbm as al  # noqa: E402
from unbiased_criteria.adapters import sklearn as ask  # noqa: E402
from unbiased_criteria.adapters import xgboost as ax  # noqa: E402

import unbiased_criteria as uc  # noqa: E402

XGB_PARAMS = {"nthread": 1, "eta": 0.3, "max_depth": 3, "objective": "binary:logistic"}
LGB_PARAMS = {"objective": "binary", "verbose": -1, "num_threads": 1, "num_leaves": 7}


def binary_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 1] + 0.5 * X[:, 0] + rng.normal(size=n) > 0).astype(float)
    return X, y


def regression_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, 1.5 * X[:, 0] + rng.normal(size=n)


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


# --- 1. a record describes the trees the hook grew, not a model changed since ---------------

@pytest.fixture(scope="module")
def xgb_hooked():
    X, y = binary_data(1200, 0)
    d = xgboost.DMatrix(X, y)
    return ax.train(XGB_PARAMS, d, 6, verbose_eval=False, random_state=0), d


def test_xgboost_continued_booster_does_not_pass_off_the_hooks_record(xgb_hooked):
    hooked, d = xgb_hooked
    splits = ax.training_splits(hooked)
    continued = xgboost.train(XGB_PARAMS, d, 4, xgb_model=hooked)  # plain XGBoost trees
    assert continued.num_boosted_rounds() == 10
    for view in (ax.training_splits, ax.training_report, ax.training_record):
        with pytest.raises(ValueError, match="10 boosting rounds where the training hook "
                                             "grew 6"):
            view(continued)
    # the hook's Booster itself is untouched; copies and a 0-round continuation keep it
    for same in (hooked, pickle.loads(pickle.dumps(hooked)), hooked.copy(),
                 copy.deepcopy(hooked), xgboost.train(XGB_PARAMS, d, 0, xgb_model=hooked)):
        pd.testing.assert_frame_equal(ax.training_splits(same), splits)


def test_xgboost_booster_changed_in_place_is_refused(xgb_hooked):
    hooked, d = xgb_hooked
    updated = hooked.copy()
    updated.update(d, 6)  # one more round in the very Booster that holds the record
    with pytest.raises(ValueError, match="7 boosting rounds where the training hook grew 6"):
        ax.training_splits(updated)
    # as many rounds, other leaves: XGBoost's refresh updater on other labels
    refreshed = quiet(xgboost.train, {**XGB_PARAMS, "process_type": "update",
                                      "updater": "refresh"},
                      xgboost.DMatrix(d.get_data(), 1 - d.get_label()), 6, xgb_model=hooked)
    assert refreshed.num_boosted_rounds() == 6
    assert not np.allclose(refreshed.predict(d), hooked.predict(d))
    with pytest.raises(ValueError, match="not those the training hook grew"):
        ax.training_splits(refreshed)


def test_post_hoc_reading_of_a_continued_booster_does_not_claim_the_whole_model(xgb_hooked):
    hooked, d = xgb_hooked
    own = ax.read_model(hooked)
    assert any("the training hook grew this model holding out 0.5" in w
               for w in own.gain_only)
    continued = xgboost.train(XGB_PARAMS, d, 4, xgb_model=hooked)
    read = ax.read_model(continued)
    assert not any("grew this model" in w for w in read.warnings)
    assert any("record of 6 boosting rounds" in w and "changed after" in w
               for w in read.gain_only)


def test_xgboost_estimator_whose_booster_changed_has_no_importance():
    X, y = regression_data(500, 3)
    model = ax.UnbiasedXGBRegressor(n_estimators=5, max_depth=3, n_jobs=1).fit(X, y)
    model.get_booster().update(xgboost.DMatrix(X, y), 5)
    assert not hasattr(model, "feature_importances_")
    with pytest.raises(AttributeError, match="no longer describes it"):
        _ = model.training_splits_


def test_lightgbm_record_follows_its_trees():
    X, y = binary_data(1200, 1)
    hooked = al.train(LGB_PARAMS, lightgbm.Dataset(X, y), 5, random_state=0)
    splits = al.training_splits(hooked)
    loaded = pickle.loads(pickle.dumps(hooked))
    pd.testing.assert_frame_equal(al.training_splits(loaded), splits)
    # continued training makes a new Booster (LightGBM copies no attribute): no record
    continued = lightgbm.train(LGB_PARAMS, lightgbm.Dataset(X, y), 3, init_model=hooked)
    assert continued.num_trees() == 8
    with pytest.raises(ValueError, match="not trained by"):
        al.training_splits(continued)
    # a leaf set in the Booster that holds the record: the record is no longer its trees'
    loaded.set_leaf_output(0, 0, 1.0)
    with pytest.raises(ValueError, match="not those the training hook grew"):
        al.training_splits(loaded)
    assert any("changed after" in w for w in al.read_model(loaded).gain_only)


# --- 2. a pruning sketch kept with an estimator describes its pruned trees only -------------

@pytest.mark.parametrize("make, read", [
    (lambda: lightgbm.LGBMRegressor(n_estimators=8, num_leaves=7, verbose=-1, n_jobs=1),
     al.read_model),
    (lambda: HistGradientBoostingRegressor(max_iter=8, random_state=0), ask.read_model),
    (lambda: xgboost.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1), ax.read_model),
], ids=["lightgbm", "sklearn", "xgboost"])
def test_refit_pruned_estimator_drops_the_old_sketch(make, read):
    X, y = regression_data(800, 0)
    Xv, yv = regression_data(600, 1)
    X2, y2 = regression_data(800, 5)
    pruned = quiet(uc.prune, make().fit(X, y), X, y, Xv, yv, random_state=0)
    sketches = read(pruned).pruned_on
    assert len(sketches) == 1
    buffer = io.BytesIO()
    joblib.dump(pruned, buffer)
    for same in (pickle.loads(pickle.dumps(pruned)), copy.deepcopy(pruned),
                 joblib.load(io.BytesIO(buffer.getvalue()))):
        assert read(same).pruned_on == sketches
    pruned.fit(X2, y2)  # a new model, never pruned
    assert read(pruned).pruned_on == ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        uc.unbiased_importance(pruned, X2, y2, Xv, yv, random_state=0)
    assert not [w for w in caught if "pruned this model" in str(w.message)]


def test_warm_start_keeps_the_sketch_of_the_pruned_trees_it_extends():
    X, y = regression_data(800, 0)
    Xv, yv = regression_data(600, 1)
    pruned = quiet(uc.prune, HistGradientBoostingRegressor(max_iter=8, random_state=0)
                   .fit(X, y), X, y, Xv, yv, random_state=0)
    sketches = ask.read_model(pruned).pruned_on
    pruned.set_params(warm_start=True, max_iter=12).fit(X, y)  # 4 trees added to the 8
    assert pruned.n_iter_ == 12
    assert ask.read_model(pruned).pruned_on == sketches


# --- 3. a training-hook estimator pruned by uc.prune has no training record -----------------

_ATTRIBUTES = ("feature_importances_", "unbiased_gain_", "importance_report_",
               "training_splits_")


def _n_splits(model) -> int:
    """Splits in the model's trees, as the host counts them."""
    if isinstance(model, lightgbm.LGBMModel):
        return sum(t["num_leaves"] - 1 for t in model.booster_.dump_model()["tree_info"])
    frame = model.get_booster().trees_to_dataframe()
    return int((frame["Feature"] != "Leaf").sum())


@pytest.mark.parametrize("make", [
    lambda: al.UnbiasedLGBMRegressor(n_estimators=10, num_leaves=7, verbose=-1, n_jobs=1),
    lambda: ax.UnbiasedXGBRegressor(n_estimators=10, max_depth=3, n_jobs=1),
], ids=["lightgbm", "xgboost"])
def test_pruned_hook_estimator_has_no_training_record(make):
    X, y = regression_data(1500, 0)
    Xv, yv = regression_data(1000, 1)
    model = make().fit(X, y)
    before = model.feature_importances_.copy()
    assert int(model.training_splits_["kept"].sum()) == _n_splits(model)
    pruned = quiet(uc.prune, model, X, y, Xv, yv, random_state=0)
    assert _n_splits(pruned) < _n_splits(model)
    buffer = io.BytesIO()
    joblib.dump(pruned, buffer)
    for same in (pruned, pickle.loads(pickle.dumps(pruned)), copy.deepcopy(pruned),
                 joblib.load(io.BytesIO(buffer.getvalue()))):
        for name in _ATTRIBUTES:
            assert not hasattr(same, name)
            with pytest.raises(AttributeError, match="pruned after training.*"
                                                     "unbiased_importance"):
                getattr(same, name)
        # its trees were still grown with held-out rows: the reader says so, for both hosts
        read = (al.read_model if isinstance(same, lightgbm.LGBMModel) else ax.read_model)(same)
        assert any("pruned from trees the training hook grew holding out 0.5" in w
                   for w in read.gain_only)
    # the original keeps its own; fitting the pruned copy again makes a record of its trees
    np.testing.assert_array_equal(model.feature_importances_, before)
    pruned.fit(X, y)
    assert int(pruned.training_splits_["kept"].sum()) == _n_splits(pruned)
    np.testing.assert_array_equal(pruned.feature_importances_, before)


# --- 4. what the library keeps is plain data: the host loads the model without the library --

# a process where the library is not installed: importing any of it fails, as it would there
_WITHOUT_LIBRARY = """
import sys

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "unbiased_criteria" or name.startswith("unbiased_criteria."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
import joblib
import numpy as np

model = joblib.load(sys.argv[1])
X = np.load(sys.argv[2])
if type(model).__module__.startswith("xgboost") and type(model).__name__ == "Booster":
    import xgboost
    X = xgboost.DMatrix(X)
np.save(sys.argv[3], model.predict(X))
assert not any(m.startswith("unbiased_criteria") for m in sys.modules)
"""


def _hooked_pruned_booster(host, X, y, Xv, yv):
    train = al.train if host == "lightgbm" else ax.train
    if host == "lightgbm":
        grown = train(LGB_PARAMS, lightgbm.Dataset(X, (y > 0).astype(float)), 6, random_state=0)
    else:
        grown = train(XGB_PARAMS, xgboost.DMatrix(X, (y > 0).astype(float)), 6,
                      verbose_eval=False, random_state=0)
    return quiet(uc.prune, grown, X, (y > 0).astype(float), Xv, (yv > 0).astype(float),
                 random_state=0)


_MODELS = {
    "sklearn_pruned": lambda X, y, Xv, yv: quiet(
        uc.prune, HistGradientBoostingRegressor(max_iter=8, random_state=0).fit(X, y),
        X, y, Xv, yv, random_state=0),
    "lightgbm_estimator_pruned": lambda X, y, Xv, yv: quiet(
        uc.prune, lightgbm.LGBMRegressor(n_estimators=8, num_leaves=7, verbose=-1,
                                         n_jobs=1).fit(X, y), X, y, Xv, yv, random_state=0),
    "lightgbm_booster_pruned": lambda X, y, Xv, yv: quiet(
        uc.prune, lightgbm.train({"verbose": -1, "num_leaves": 7}, lightgbm.Dataset(X, y), 8),
        X, y, Xv, yv, random_state=0),
    "xgboost_estimator_pruned": lambda X, y, Xv, yv: quiet(
        uc.prune, xgboost.XGBRegressor(n_estimators=8, max_depth=3, n_jobs=1).fit(X, y),
        X, y, Xv, yv, random_state=0),
    "xgboost_booster_pruned": lambda X, y, Xv, yv: quiet(
        uc.prune, xgboost.train({"max_depth": 3, "nthread": 1}, xgboost.DMatrix(X, y), 8),
        X, y, Xv, yv, random_state=0),
    "lightgbm_hook_booster": lambda X, y, Xv, yv: al.train(
        LGB_PARAMS, lightgbm.Dataset(X, (y > 0).astype(float)), 6, random_state=0),
    "xgboost_hook_booster": lambda X, y, Xv, yv: ax.train(
        XGB_PARAMS, xgboost.DMatrix(X, (y > 0).astype(float)), 6, verbose_eval=False,
        random_state=0),
    "lightgbm_hook_booster_pruned": lambda *a: _hooked_pruned_booster("lightgbm", *a),
    "xgboost_hook_booster_pruned": lambda *a: _hooked_pruned_booster("xgboost", *a),
}


def _predict(model, X):
    if isinstance(model, xgboost.Booster):
        return model.predict(xgboost.DMatrix(X))
    return model.predict(X)


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_pickled_models_load_and_predict_without_the_library(name, tmp_path):
    """A pruned model and a training hook's Booster are the host's own objects: their pickle
    loads and predicts, identically, where the library is not installed (the attributes the
    library keeps with them are plain data); with the library, they still say what they did
    (the rows that pruned them, the hook's record and held-out share)."""
    import subprocess
    import sys

    X, y = regression_data(800, 0)
    Xv, yv = regression_data(600, 1)
    model = _MODELS[name](X, y, Xv, yv)
    path, rows, out = tmp_path / "model.joblib", tmp_path / "X.npy", tmp_path / "pred.npy"
    joblib.dump(model, path)
    np.save(rows, X)
    run = subprocess.run([sys.executable, "-c", _WITHOUT_LIBRARY, str(path), str(rows),
                          str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(out), _predict(model, X))
    # with the library: what it kept is read back from the same file
    loaded = joblib.load(path)
    host = al if "lightgbm" in name else ax if "xgboost" in name else ask
    read, before = quiet(host.read_model, loaded), quiet(host.read_model, model)
    assert read.pruned_on == before.pruned_on
    assert len(read.pruned_on) == ("pruned" in name)
    assert read.gain_only == before.gain_only
    if "hook" in name:  # held out 0.5 of the rows: said, pruned or not
        assert any("holding out 0.5" in w for w in read.gain_only)
    if name.endswith("hook_booster"):
        pd.testing.assert_frame_equal(host.training_splits(loaded),
                                      host.training_splits(model))
