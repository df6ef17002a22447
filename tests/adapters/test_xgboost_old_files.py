"""XGBoost model files written by older XGBoost, read under the installed one (3.2 and 3.4
in CI): the committed files in ``data/`` were made by ``data/make_old_xgboost_models.py``
with XGBoost 1.7.6 and 2.1.4, whose rows :func:`rows` and :func:`category_rows` draw again.

The oracles are XGBoost's own: the gains and hessian sums the file stores, its predictions,
its message for the old binary format.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters.xgboost import compat  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.cli import load_model, main  # noqa: E402
from unbiased_criteria.errors import InputError  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_old_xgboost_models",
                                               DATA / "make_old_xgboost_models.py")
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)
rows, category_rows = _gen.rows, _gen.category_rows


def _margin(model, X) -> np.ndarray:
    return model.predict(xgb.DMatrix(X), output_margin=True)


def _gains_match_without(path, warned: str):
    """Score the file on the fixture's rows: B equals the file's own gains and no warning
    says ``warned``; the rows ``(X, y, Xv, yv)``."""
    X, y = rows(0)
    Xv, yv = rows(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = uc.unbiased_importance(path, X, y, Xv, yv, random_state=0, n_jobs=1)
    assert not [w for w in caught if warned in str(w.message)]
    s = report.splits
    np.testing.assert_allclose(s["biased_gain"], s["host_gain"], rtol=1e-3, atol=1e-5)
    return X, y, Xv, yv


# -- 1. objective parameters the installed XGBoost drops ---------------------------------


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_a_2_1_squaredlogerror_file_keeps_its_scale_pos_weight(fmt):
    """XGBoost 2.1 ``reg:squaredlogerror`` with ``scale_pos_weight=3``: the file stores the
    weight (``reg_loss_param``) and XGBoost 3.0.3+ drops it when it loads the file, so the
    replay ran another loss than the trees were grown with (``biased_gain`` off XGBoost's
    own gains by a median 86%, up to 53x; a refit with nothing pruned moved margins by 0.57;
    a warning blamed the rows). The file's parameters now reach the reader."""
    path = DATA / f"xgboost_2.1_squaredlogerror_spw.{fmt}"
    loaded = load_model(path).model
    X, y, Xv, yv = _gains_match_without(path, "hessian sums differ")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pruned = uc.prune(path, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                          random_state=0)
    np.testing.assert_allclose(_margin(pruned, Xv), _margin(loaded, Xv), atol=1e-5)
    # the written model keeps what the file recorded: read again, it scores the same
    assert json.loads(pruned.attributes()[compat.FILE_OBJECTIVE_ATTR]) == {
        "name": "reg:squaredlogerror", "reg_loss_param": {"scale_pos_weight": "3"}}


def test_the_kept_parameters_follow_the_objective():
    """The file's parameters serve its own objective only: a Booster whose objective was
    changed since (``set_param``) takes that one's."""
    from unbiased_criteria.adapters.xgboost.objectives import model_objective_params

    learner = {"objective": {"name": "reg:squaredlogerror"},
               "attributes": {compat.FILE_OBJECTIVE_ATTR: json.dumps(
                   {"name": "reg:squaredlogerror",
                    "reg_loss_param": {"scale_pos_weight": "3"}})}}
    assert model_objective_params(learner) == {"scale_pos_weight": "3"}
    learner["objective"] = {"name": "reg:squarederror",
                            "reg_loss_param": {"scale_pos_weight": "1"}}
    assert model_objective_params(learner) == {"scale_pos_weight": "1"}
    # a parameter the Booster holds wins over the file's (set since)
    learner["objective"] = {"name": "reg:squaredlogerror",
                            "reg_loss_param": {"scale_pos_weight": "2"}}
    assert model_objective_params(learner) == {"scale_pos_weight": "2"}


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_file_objective_reads_json_and_ubj(fmt):
    """The objective block of both formats, as the file records it (oracle: the JSON)."""
    data = (DATA / f"xgboost_2.1_squaredlogerror_spw.{fmt}").read_bytes()
    expected = json.loads((DATA / "xgboost_2.1_squaredlogerror_spw.json").read_bytes())
    assert compat.file_objective(data) == expected["learner"]["objective"]
    bst = xgb.train({"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.7],
                     "nthread": 1}, xgb.DMatrix(*rows(2)), 1)
    raw = bytes(bst.save_raw(fmt))
    assert compat.file_objective(raw) == json.loads(bst.save_raw("json"))["learner"]["objective"]


# -- 3. base_score 0.5 before XGBoost 2.0 -------------------------------------------------


def test_a_1_7_squarederror_file_is_not_taken_for_a_custom_objective(capsys):
    """Before XGBoost 2.0, 0.5 was every model's base_score: a 1.7 ``reg:squarederror`` file
    was warned to look like a custom-objective model, on the command line too (with the
    API's ``objective=``)."""
    path = DATA / "xgboost_1.7_squarederror.json"
    _gains_match_without(path, "custom objective")


def test_the_custom_objective_note_names_the_command_line_flag(tmp_path, capsys):
    """A 2.0+ model trained with ``obj=`` (base_score 0.5, reg:squarederror) is still noted,
    and on the command line the note names ``--objective``, not only the API's keyword."""
    X, y = rows(3)
    bst = xgb.train({"nthread": 1, "max_depth": 2}, xgb.DMatrix(X, y), 3,
                    obj=lambda p, d: (p - d.get_label(), np.ones_like(p)))
    model = tmp_path / "m.json"
    bst.save_model(model)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)]).assign(y=y)
    frame.iloc[:200].to_csv(tmp_path / "t.csv", index=False)
    frame.iloc[200:].to_csv(tmp_path / "v.csv", index=False)
    code = main(["importance", str(model), "--train", str(tmp_path / "t.csv"), "--valid",
                 str(tmp_path / "v.csv"), "--label", "y"])
    assert code == 0
    err = capsys.readouterr().err
    assert "custom objective" in err and "--objective" in err


# -- 4. the old binary format ---------------------------------------------------------------


def test_an_old_binary_model_says_what_it_is_and_how_to_convert_it(capsys):
    """A 1.7 ``save_model("m.model")`` file ('binf'): called "not a model file" listing the
    formats accepted; XGBoost 3.1+ cannot read it, and the message now says so with the
    remedy (XGBoost's own reason is lost for bytes handed to it)."""
    path = DATA / "xgboost_1.7_squarederror.model"
    assert path.read_bytes()[:4] == b"binf"
    assert compat.file_version(path.read_bytes()) == (1, 7)
    if compat._version_tuple(compat.VERSION) < compat.BINARY_READ_UNTIL:
        # this XGBoost still reads it: the same trees as the JSON file
        a, b = load_model(path).model, load_model(DATA / "xgboost_1.7_squarederror.json").model
        np.testing.assert_array_equal(_margin(a, rows(1)[0]), _margin(b, rows(1)[0]))
        return
    # XGBoost itself refuses it, for the format
    with pytest.raises(xgb.core.XGBoostError, match="binary format"):
        xgb.Booster(model_file=str(path))
    X, y = rows(0)
    with pytest.raises(InputError, match=r"old binary format .*written by XGBoost 1\.7.*"
                                         r"removed in 3\.1.*re-save it as JSON or UBJ"):
        uc.unbiased_importance(path, X, y, X, y)
    assert main(["importance", str(path), "--valid", str(path), "--label", "y"]) == 2
    err = capsys.readouterr().err
    assert "old binary format" in err and "not a model file" not in err


# -- 2. categories of a model that stores none ----------------------------------------------


def _frames(categories_valid=None, keep=None):
    X, y = category_rows(1)
    Xv, yv = category_rows(2)
    if keep is not None:
        Xv, yv = Xv[keep(Xv)], yv[keep(Xv)]

    def frame(A, cats):
        F = pd.DataFrame(A, columns=list("abcd"))
        F["b"] = pd.Categorical(F["b"].astype(int), categories=cats)
        return F

    return frame(X, range(6)), y, frame(Xv, categories_valid), yv


@pytest.mark.parametrize("listed", ["subset", "reordered"])
def test_held_out_categories_match_by_value_for_a_model_that_stores_none(listed):
    """A 2.1 categorical model stores no categories: its trees split on codes, and each
    frame's codes are the positions of its own categories. A held-out frame listing a subset
    of them (inferred from rows without category 0) or another order was routed by other
    codes than the training frame's (U of the categorical feature +172 -> -280 in a probe).
    The oracle: the same rows with the training frame's category list."""
    path = DATA / "xgboost_2.1_categorical.json"
    keep = (lambda A: A[:, 1] != 0) if listed == "subset" else None
    cats = None if listed == "subset" else [5, 3, 1, 0, 2, 4]
    X, y, Xv_full, yv = _frames(range(6), keep)
    Xv_other = _frames(cats, keep)[2]
    assert list(Xv_other["b"].cat.categories) != list(range(6))
    before = Xv_other.copy()
    a = uc.unbiased_importance(path, X, y, Xv_full, yv, random_state=0, n_jobs=1)
    b = uc.unbiased_importance(path, X, y, Xv_other, yv, random_state=0, n_jobs=1)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    pd.testing.assert_frame_equal(Xv_other, before)  # not modified


def test_a_held_out_category_the_training_frame_lacks_is_one_error():
    """No code for it under the training frame's coding: one error naming the column."""
    X, y, Xv, yv = _frames(range(6))
    X = X[X["b"] != 5]
    y = y[: len(X)]
    X = X.assign(b=X["b"].cat.remove_unused_categories())
    with pytest.raises(ValueError, match=r"X_valid's column 'b' holds categories X_train's "
                                         r"does not list: 5"):
        uc.unbiased_importance(DATA / "xgboost_2.1_categorical.json", X, y, Xv, yv)


def test_a_column_category_in_one_frame_only_is_one_error():
    X, y, Xv, yv = _frames(range(6))
    Xv = Xv.assign(b=Xv["b"].astype(float))
    with pytest.raises(ValueError, match=r"X_valid's column 'b' is not a pandas category and "
                                         r"X_train's is a category"):
        uc.unbiased_importance(DATA / "xgboost_2.1_categorical.json", X, y, Xv, yv)


def test_a_dump_of_such_a_model_matches_held_out_categories_too():
    """A JSON dump stores no categories either (it is routed by the library's own copy of
    the rules, on the codes): the same held-out rows with a subset of the categories listed
    give the U of the training frame's list, which is the Booster's."""
    booster = load_model(DATA / "xgboost_2.1_categorical.json").model
    dump = booster.get_dump(dump_format="json", with_stats=True)
    base = json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"]
    params = {"eta": 0.1, "objective": "reg:squarederror", "feature_names": list("abcd"),
              "base_score": base}
    keep = lambda A: A[:, 1] != 0  # noqa: E731
    X, y, Xv_full, yv = _frames(range(6), keep)
    Xv_subset = _frames(None, keep)[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dump's printed thresholds
        a = uc.unbiased_importance(dump, X, y, Xv_subset, yv, random_state=0,
                                   host_params=params)
        b = uc.unbiased_importance(booster, X, y, Xv_full, yv, random_state=0)
    np.testing.assert_allclose(a.to_frame().unbiased_gain, b.to_frame().unbiased_gain,
                               rtol=1e-6)
