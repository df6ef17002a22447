"""The adapters' compatibility modules: the branch taken for the installed hosts, and a clear
error where a host lacks a private API (a fake object without it)."""

import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import _estimators  # noqa: E402
from unbiased_criteria.adapters._compat import HostVersionError, private  # noqa: E402
from unbiased_criteria.adapters.lightgbm import compat as lgb_compat  # noqa: E402
from unbiased_criteria.adapters.xgboost import compat as xgb_compat  # noqa: E402


class Bare:
    """A host object of an unknown layout: none of the private names."""


def test_private_names_the_host_version_and_the_missing_name():
    with pytest.raises(HostVersionError, match=r"^lightgbm 9\.9 has no Bare\._gone, which "
                                               r"unbiased-criteria relies on \(known to work "
                                               r"with lightgbm 4\.0 to 4\.7\)"):
        private(Bare, "_gone", "lightgbm", "9.9", "4.0 to 4.7")
    assert issubclass(HostVersionError, RuntimeError)


# LightGBM -----------------------------------------------------------------------------------

def test_lightgbm_installed_layout_has_every_private_name():
    assert lgb_compat.VERSION == lgb.__version__
    for owner, name in [(lgb.basic, "_choose_param_value"), (lgb.Booster, "_Booster__boost"),
                        (lgb.Dataset, "_update_params"), (lgb.Dataset, "_set_predictor"),
                        (lgb.Dataset, "_reverse_update_params"),
                        (lgb.LGBMModel, "_process_params")]:
        assert hasattr(owner, name), name
    ds = lgb.Dataset(np.zeros((3, 1)), np.arange(3.0))
    assert not lgb_compat.is_constructed(ds)
    assert lgb_compat.is_constructed(ds.construct())


def test_lightgbm_missing_private_names_raise_clearly(monkeypatch):
    with pytest.raises(HostVersionError, match="has no Bare._handle"):
        lgb_compat.is_constructed(Bare())
    with pytest.raises(HostVersionError, match="has no Bare._update_params"):
        lgb_compat.bind_params(Bare(), [], {})
    with pytest.raises(HostVersionError, match="has no Bare._reverse_update_params"):
        lgb_compat.unbind_params([Bare()])
    monkeypatch.delattr(lgb.basic, "_choose_param_value")
    with pytest.raises(HostVersionError, match=r"has no lightgbm\.basic\._choose_param_value"):
        lgb_compat._private(lgb.basic, "_choose_param_value")  # what the import runs
    monkeypatch.delattr(lgb.LGBMModel, "_process_params")
    with pytest.raises(HostVersionError, match=r"has no LGBMModel\._process_params"):
        lgb_compat.check_estimator_layout()


def test_lightgbm_dump_model_text_is_what_dump_model_decodes(monkeypatch):
    """The dump's raw text: LightGBM's own dump_model() is its json.loads (plain names); a
    first buffer too short for it is retried at the length LightGBM asks for."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    b = lgb.train({"verbose": -1, "num_threads": 1}, lgb.Dataset(X, X[:, 0]), 3)
    own = b.dump_model()
    del own["pandas_categorical"]  # added by Python, not in LightGBM's text
    assert json.loads(lgb_compat.dump_model_text(b)) == own
    monkeypatch.setattr(lgb_compat, "DUMP_BUFFER", 64)
    text = lgb_compat.dump_model_text(b, start_iteration=1, num_iteration=1)
    assert len(text) > 64
    assert json.loads(text) | {"pandas_categorical": None} == b.dump_model(
        start_iteration=1, num_iteration=1)
    with pytest.raises(HostVersionError, match="has no Bare._handle"):
        lgb_compat.dump_model_text(Bare())


class FakeBooster:
    def __init__(self):
        self.calls = []

    def update(self, fobj):
        self.calls.append(("update", fobj(None, None)))


class FakeBoosterWithBoost(FakeBooster):
    def _Booster__boost(self, grad, hess):
        self.calls.append(("__boost", (grad, hess)))


def test_lightgbm_boost_branches():
    g, h = np.ones(2), np.zeros(2)
    new = FakeBoosterWithBoost()
    lgb_compat.boost_one_iteration(new, g, h)  # the installed versions' branch
    assert [c[0] for c in new.calls] == ["__boost"]
    old = FakeBooster()  # a layout without Booster.__boost: update(fobj=...)
    lgb_compat.boost_one_iteration(old, g, h)
    assert old.calls[0][0] == "update" and old.calls[0][1] == (g, h)


def test_lightgbm_estimator_booster_is_the_fitted_object():
    X, y = np.arange(40.0).reshape(-1, 1), np.arange(40.0)
    model = lgb.LGBMRegressor(n_estimators=2, verbose=-1)
    assert lgb_compat.estimator_booster(model) is None
    model.fit(X, y)
    assert lgb_compat.estimator_booster(model) is model.booster_


# XGBoost ------------------------------------------------------------------------------------

def test_xgboost_installed_boost_takes_the_iteration():
    if int(xgb.__version__.split(".")[0]) >= 3:  # 3.x: boost(dtrain, iteration, *, grad, hess)
        assert xgb_compat.BOOST_TAKES_ITERATION


class NewBoost:
    def boost(self, dtrain, iteration, *, grad=None, hess=None):
        self.called = (dtrain, iteration, grad, hess)


class OldBoost:
    def boost(self, dtrain, grad, hess):
        self.called = (dtrain, grad, hess)


def test_xgboost_boost_branches():
    g, h = np.ones(2), np.zeros(2)
    new, old = NewBoost(), OldBoost()
    xgb_compat.boost_one_iteration(new, "d", 3, g, h)
    assert new.called == ("d", 3, g, h)
    xgb_compat.boost_one_iteration(old, "d", 3, g, h)
    assert old.called == ("d", g, h)


def test_xgboost_missing_private_names_raise_clearly(monkeypatch):
    xgb_compat.check_estimator_layout()
    monkeypatch.delattr(xgb.XGBModel, "_wrapper_params")
    with pytest.raises(HostVersionError, match=r"^xgboost .* has no XGBModel\._wrapper_params"):
        xgb_compat.check_estimator_layout()


def test_xgboost_older_than_the_floor_is_refused():
    # the adapter tests fail on each of these (measured: compat's docstring)
    for version in ("2.0.3", "2.1.4", "3.0.5", "3.1.3", "3.1.0rc1"):
        with pytest.raises(HostVersionError, match=rf"^xgboost {re.escape(version)} is older "
                                                   r"than 3\.2, .*xgboost>=3\.2"):
            xgb_compat.check_version(version)
    for version in ("3.2.0", "3.4.1", "3.10.0", "4.0.0", xgb.__version__):
        xgb_compat.check_version(version)


def test_xgboost_import_refuses_an_older_installed_version():
    # the installed XGBoost, made to report 2.1.4 before the adapter is imported: the
    # library's XGBoost entry points fail at once, naming the version and the floor
    code = ("import xgboost; xgboost.__version__ = '2.1.4'\n"
            "import unbiased_criteria as uc\n"
            "try:\n"
            "    uc.adapters.xgboost.train\n"
            "except RuntimeError as err:\n"
            "    print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.startswith("HostVersionError xgboost 2.1.4 is older than 3.2"), out


def test_the_command_line_reports_an_older_xgboost_in_one_line(tmp_path):
    """An installed host the library cannot work with is the user's to change, not a bug:
    one line naming the version and the remedy, exit status 1, no traceback (it was an
    'internal error (a bug, please report it...)' with a traceback)."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    xgb.train({}, xgb.DMatrix(X, X[:, 0]), 3).save_model(tmp_path / "m.json")
    pd.DataFrame(X, columns=["f0", "f1", "f2"]).assign(y=X[:, 0]).to_csv(
        tmp_path / "d.csv", index=False)
    code = ("import sys, xgboost; xgboost.__version__ = '2.1.4'\n"
            "from unbiased_criteria.cli import main\n"
            "sys.exit(main(['importance', 'm.json', '--valid', 'd.csv', '--label', 'y']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "unbiased-criteria: error: " + done.stderr.split("error: ", 1)[1].strip()]
    assert "xgboost 2.1.4 is older than 3.2" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_pip_refuses_what_the_adapter_refuses():
    # every xgboost requirement of pyproject.toml (the extras) is the adapter's floor
    text = (pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text()
    floors = re.findall(r'"xgboost\s*>=\s*([0-9][0-9.]*)"', text)
    assert len(floors) >= 3, floors  # the xgboost, notebooks and test extras
    assert {tuple(int(p) for p in f.split(".")[:2]) for f in floors} == {xgb_compat.MIN_VERSION}
    assert xgb_compat.KNOWN_VERSIONS.startswith("3.2 ")


def test_xgboost_more_tags_without_the_hosts():
    class Host:
        pass

    class Ours(Host):
        pass

    assert xgb_compat.host_more_tags(Ours(), Ours) == {}

    class HostWithTags:
        def _more_tags(self):
            return {"x": 1}

    class Ours2(HostWithTags):
        pass

    assert xgb_compat.host_more_tags(Ours2(), Ours2) == {"x": 1}


# the shared function cloning -----------------------------------------------------------------

def test_hosts_fit_calls_train_in_the_installed_versions():
    for fit in (lgb.LGBMModel.fit, xgb.XGBRegressor.fit, xgb.XGBClassifier.fit):
        _estimators.with_train(fit, lambda *a, **k: None)  # no error


def test_with_train_refuses_a_fit_that_does_not_call_train():
    def fit(self, X, y):
        return self

    with pytest.raises(HostVersionError, match="does not call train"):
        _estimators.with_train(fit, lambda *a, **k: None)
    with pytest.raises(HostVersionError, match="does not call train"):
        _estimators.with_train(np.add, lambda *a, **k: None)  # not a Python function
