"""Category columns over Dask for an XGBoost model that stores no categories (written by
XGBoost 2.1: ``tests/adapters/data/xgboost_2.1_categorical.json``): the held-out partitions
are coded as the training frame's categories, by value, as in memory.

Oracles: the in-memory calls on the same rows (node counts per split, the sign and size of
the categorical feature's U, their errors), and XGBoost's own predictions of a model pruned
at ``-inf`` with refitted leaves.
"""

from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pandas as pd
import pytest

import unbiased_criteria as uc

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
xgb = pytest.importorskip("xgboost")

DATA = pathlib.Path(__file__).parents[1] / "adapters" / "data"
MODEL = DATA / "xgboost_2.1_categorical.json"
_spec = importlib.util.spec_from_file_location("make_old_xgboost_models",
                                               DATA / "make_old_xgboost_models.py")
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)
EXACT = ["tree", "node", "feature_index", "n_train", "n_valid", "k"]


def _frame(A: np.ndarray, categories) -> pd.DataFrame:
    F = pd.DataFrame(A, columns=list("abcd"))
    F["b"] = pd.Categorical(F["b"].astype(int), categories=categories)
    return F


def _rows(categories_valid=range(6), keep=None):
    """The fixture's training frame (categories 0..5) and held-out rows whose column ``b``
    lists ``categories_valid`` (None: inferred from the rows), ``keep`` selecting rows."""
    X, y = _gen.category_rows(1)
    Xv, yv = _gen.category_rows(2)
    if keep is not None:
        Xv, yv = Xv[keep(Xv)], yv[keep(Xv)]
    return _frame(X, range(6)), y, _frame(Xv, categories_valid), yv


def _d(F: pd.DataFrame, parts: int = 3):
    return dd.from_pandas(F, npartitions=parts)


def _ds(y: np.ndarray, parts: int = 3):
    return dd.from_pandas(pd.Series(np.asarray(y)), npartitions=parts)


def _unknown(D):
    """``D`` with the categories of its column ``b`` unknown to dask."""
    return D.assign(b=D["b"].cat.as_unknown())


def _known(D):
    """``D`` with the categories of its column ``b`` known: the training frame's, in order
    (``.cat.as_known()`` lists them as the rows come, which is not the model's coding)."""
    return D.assign(b=D["b"].cat.set_categories(range(6)))


def _booster():
    return xgb.Booster(model_file=str(MODEL))


def _u(report, feature: str) -> float:
    s = report.splits
    return float(s.loc[s.feature == feature, "unbiased_gain"].sum())


@pytest.mark.parametrize("listed", ["reordered", "subset"])
def test_held_out_partitions_are_coded_as_the_training_frame(client, listed):
    """Each frame's codes are the positions of its own categories and the model splits on
    codes: held-out categories in another order (or a subset of them) were routed by their
    own codes over Dask, silently (U of ``b`` -3962 where it is +2689 in memory). The node
    counts now equal the in-memory ones per split, and U of ``b`` keeps its sign and size."""
    keep = (lambda A: A[:, 1] != 0) if listed == "subset" else None
    cats = [5, 4, 3, 2, 1, 0] if listed == "reordered" else None
    X, y, Xv, yv = _rows(range(6), keep)
    Xv_other = _rows(cats, keep)[2]
    assert list(Xv_other["b"].cat.categories) != list(range(6))
    before = Xv_other.copy()
    booster = _booster()
    mem = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        das = uc.unbiased_importance(booster, _d(X), _ds(y), _d(Xv_other), _ds(yv),
                                     random_state=0)
    assert not caught, [str(w.message) for w in caught]
    pd.testing.assert_frame_equal(das.splits[EXACT].reset_index(drop=True),
                                  mem.splits[EXACT].reset_index(drop=True))
    assert _u(mem, "b") > 0
    assert 0.7 * _u(mem, "b") < _u(das, "b") < 1.3 * _u(mem, "b")
    pd.testing.assert_frame_equal(Xv_other, before)  # not modified


def test_prune_codes_the_held_out_partitions_too(client):
    """In memory, held-out categories in another order prune the same splits as the
    training frame's order; over Dask the same partitions and draws now do too (before,
    the reordered frame failed in XGBoost, or was routed by its own codes)."""
    X, y, Xv, yv = _rows(range(6))
    Xv_other = _rows([5, 3, 1, 0, 2, 4])[2]
    booster = _booster()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pruned = [uc.prune(booster, _d(X), _ds(y), _d(V), _ds(yv), threshold=0.0,
                           random_state=0) for V in (Xv, Xv_other)]
        in_memory = uc.prune(booster, X, y, Xv_other, yv, threshold=0.0, random_state=0)
    leaves = [len(p.trees_to_dataframe()) for p in (*pruned, in_memory)]
    assert leaves[0] == leaves[1] < len(booster.trees_to_dataframe())
    assert leaves[2] < len(booster.trees_to_dataframe())  # the in-memory call prunes too
    dm = xgb.DMatrix(Xv, enable_categorical=True)
    np.testing.assert_array_equal(pruned[0].predict(dm), pruned[1].predict(dm))


def test_a_held_out_category_the_training_frame_lacks_is_the_in_memory_error(client):
    """No code for it under the training frame's coding: the in-memory error, raised by
    the partition that holds it."""
    X, y, Xv, yv = _rows(range(6))
    kept = (X["b"] != 5).to_numpy()
    X, y = X[kept], y[kept]
    X = X.assign(b=X["b"].cat.remove_unused_categories())
    booster = _booster()
    with pytest.raises(ValueError) as in_memory:
        uc.unbiased_importance(booster, X, y, Xv, yv)
    assert "X_valid's column 'b' holds categories X_train's does not list: 5" in str(
        in_memory.value)
    with pytest.raises(ValueError) as over_dask:
        uc.unbiased_importance(booster, _d(X), _ds(y), _d(Xv), _ds(yv))
    assert str(over_dask.value) == str(in_memory.value)


def test_a_column_category_in_one_frame_only_is_the_in_memory_error(client):
    X, y, Xv, yv = _rows(range(6))
    Xv = Xv.assign(b=Xv["b"].astype(float))
    booster = _booster()
    with pytest.raises(ValueError) as in_memory:
        uc.unbiased_importance(booster, X, y, Xv, yv)
    with pytest.raises(ValueError) as over_dask:
        uc.unbiased_importance(booster, _d(X), _ds(y), _d(Xv), _ds(yv))
    assert str(over_dask.value) == str(in_memory.value)
    assert "X_valid's column 'b' is not a pandas category" in str(over_dask.value)


@pytest.mark.parametrize("which", ["X_train", "X_valid", "validation-only"])
def test_unknown_dask_categories_are_one_error(client, which):
    """Categories dask does not know may differ from partition to partition, and with
    them the codes this model reads: one error naming the frame, the column and the remedy
    (before, each partition was routed by its own codes), after which the node counts are
    the in-memory ones."""
    X, y, Xv, yv = _rows([5, 4, 3, 2, 1, 0])
    X = _rows(range(6))[0]
    dX, dXv = _d(X), _d(Xv)
    if which == "X_train":
        dX = _unknown(dX)
    else:
        dXv = _unknown(dXv)
    train = (None, None) if which == "validation-only" else (dX, _ds(y))
    booster = _booster()
    name = "X_train" if which == "X_train" else "X_valid"
    with pytest.raises(ValueError, match=rf"{name}'s column 'b' is a dask category whose "
                                         r"categories are unknown.*\.cat\.set_categories"):
        uc.unbiased_importance(booster, *train, dXv, _ds(yv), random_state=0)
    if which == "validation-only":
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        das = uc.unbiased_importance(booster, _known(dX), _ds(y), _known(dXv), _ds(yv),
                                     random_state=0)
    mem = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=0)
    pd.testing.assert_frame_equal(das.splits[EXACT].reset_index(drop=True),
                                  mem.splits[EXACT].reset_index(drop=True))


def test_a_model_that_stores_its_categories_takes_unknown_dask_categories(client):
    """A model that stores its categories (XGBoost 3.1+) matches each partition to them by
    value: unknown dask categories are not refused, and the node counts are the in-memory
    ones."""
    if not hasattr(xgb.Booster, "get_categories"):
        pytest.skip("this XGBoost stores no categories")
    X, y, Xv, yv = _rows(range(6))
    Xv = _rows([5, 4, 3, 2, 1, 0])[2]
    booster = xgb.train({"eta": 0.1, "max_depth": 3, "tree_method": "hist", "nthread": 1},
                        xgb.DMatrix(X, y, enable_categorical=True), 8)
    dX, dXv = _d(X), _d(Xv)
    das = uc.unbiased_importance(booster, _unknown(dX), _ds(y), _unknown(dXv), _ds(yv),
                                 random_state=0)
    mem = uc.unbiased_importance(booster, X, y, Xv, yv, random_state=0)
    pd.testing.assert_frame_equal(das.splits[EXACT].reset_index(drop=True),
                                  mem.splits[EXACT].reset_index(drop=True))
