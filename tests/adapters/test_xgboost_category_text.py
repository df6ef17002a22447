"""XGBoost models with non-ASCII string categories, integer column labels and MultiIndex
columns: the library routes rows exactly as XGBoost's own ``pred_leaf`` does on the frame
it is given, or refuses it with one clear error; never a false statement about the data.

XGBoost 3.2's pandas reader records non-ASCII categories with character counts as byte
offsets ('Berlin', 'Köl', 'nMünch' for 'Berlin', 'Köln', 'München'), in the model and in each
frame it predicts; :func:`misrecord` writes such a record into a model of any version."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

xgb = pytest.importorskip("xgboost")
pytest.importorskip("pyarrow")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.xgboost import compat  # noqa: E402

import unbiased_criteria as uc  # noqa: E402

CITIES = ["Berlin", "Köln", "München"]
FALSE_CLAIM = "not trained with"
UNREADABLE = "cannot be read reliably"


def frame(n, seed, cats=CITIES, labels=("city", "x")):
    rng = np.random.default_rng(seed)
    s = rng.choice(cats, n)
    y = (s == cats[1]) * 2.0 + (s == cats[2]) * 1.0 + rng.normal(size=n)
    return pd.DataFrame({labels[0]: pd.Categorical(s, categories=list(cats)),
                         labels[1]: rng.normal(size=n)}), y


def fit(df, y, rounds=6):
    return xgb.train({"nthread": 1, "max_depth": 3, "max_cat_to_onehot": 1},
                     xgb.DMatrix(df, y, enable_categorical=True), rounds)


def host_leaves(bst, X):
    return bst.predict(xgb.DMatrix(X, enable_categorical=True), pred_leaf=True)


def variants(df, cats):
    """The same rows with the categories listed in another order, and a subset of them."""
    reordered = df.assign(city=df["city"].cat.reorder_categories(list(cats)[::-1]))
    keep = df["city"] != cats[0]
    subset = df[keep].assign(city=lambda d: d["city"].cat.remove_unused_categories())
    return {"same": df, "reordered": reordered, "subset": subset}


def routes_as_xgboost_or_refuses(bst, X, argument="X_valid"):
    """The library's leaves for ``X`` equal XGBoost's on ``X`` (whole model and a slice of
    trees), or it refuses ``X`` saying the stored categories cannot be read reliably.
    True where it routed."""
    read = ax.read_model(bst)
    try:
        router = ax.make_router(bst, read, X, argument)
    except ValueError as err:
        assert UNREADABLE in str(err) and FALSE_CLAIM not in str(err), str(err)
        assert argument in str(err)
        return False
    n = read.forest.n_trees
    mine = router.leaf_nodes(0, n)
    try:
        theirs = host_leaves(bst, X)
    except xgb.core.XGBoostError as err:  # XGBoost refuses it: so must the library
        pytest.fail(f"the library routed a frame XGBoost refuses: {err}")
    np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(router.leaf_nodes(2, n), theirs[:, 2:])
    return True


@pytest.mark.parametrize("cats", [CITIES, ["a", "ü", "b"], ["ä", "b", "c"]])
def test_non_ascii_categories_route_as_xgboost_does(cats):
    df, y = frame(1500, 0, cats)
    dv, yv = frame(1500, 1, cats)
    bst = fit(df, y)
    # the frame in the training order: XGBoost reads it right, so does the library
    assert routes_as_xgboost_or_refuses(bst, dv)
    report = uc.unbiased_importance(bst, df, y, dv, yv, random_state=0)
    assert np.isfinite(report.to_frame()["unbiased_gain"]).all()
    assert isinstance(uc.prune(bst, df, y, dv, yv, random_state=0), xgb.Booster)
    for name, X in variants(dv, cats).items():
        routed = routes_as_xgboost_or_refuses(bst, X)
        if compat.records_text_faithfully():  # XGBoost matches them by value: so must we
            assert routed, name
    for fmt in ("json", "ubj"):
        loaded = xgb.Booster(model_file=bytearray(bst.save_raw(fmt)))
        for X in variants(dv, cats).values():
            routes_as_xgboost_or_refuses(loaded, X)


def test_a_held_out_category_the_model_lacks_is_still_named():
    df, y = frame(1000, 0)
    bst = fit(df, y)
    dv, _ = frame(200, 1, ["Berlin", "Köln", "Zürich"])
    with pytest.raises(ValueError) as err:
        ax.make_router(bst, ax.read_model(bst), dv, "X_valid")
    message = str(err.value)
    # either it is named, or (XGBoost misrecording the text) the record cannot be read
    assert ("'Zürich'" in message and FALSE_CLAIM in message) or UNREADABLE in message
    assert "'Köln'" not in message.split("(it stores")[0]


def misrecord(js: dict, feature: int, cats: list[str]) -> dict:
    """``js`` (a model's JSON) with feature ``feature``'s categories recorded as XGBoost 3.2
    records a pandas frame's: character offsets over the UTF-8 bytes, cut to their count."""
    js = json.loads(json.dumps(js))
    model = js["learner"]["gradient_booster"]["model"]
    offsets = np.cumsum([0] + [len(c) for c in cats]).tolist()
    data = "".join(cats).encode("utf-8")[:offsets[-1]]
    enc = model["cats"]["enc"][feature]
    enc["offsets"] = offsets
    enc["values"] = np.frombuffer(data, dtype=np.int8).tolist()
    pieces = [data[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    start = model["cats"]["feature_segments"][feature]
    model["cats"]["sorted_idx"][start:start + len(cats)] = np.argsort(
        np.array(pieces, dtype=object), kind="stable").tolist()
    js["version"] = [3, 2, 0]
    return js


def test_the_misrecording_helper_writes_what_xgboost_3_2_writes():
    df, y = frame(600, 0)
    bst = fit(df, y, rounds=2)
    js = json.loads(bst.save_raw("json"))
    if not compat.records_text_faithfully():  # this XGBoost writes it so itself
        enc = js["learner"]["gradient_booster"]["model"]["cats"]["enc"][0]
        assert enc == misrecord(js, 0, CITIES)["learner"]["gradient_booster"]["model"][
            "cats"]["enc"][0]
    assert compat.encode_categories(CITIES) in (
        [c.encode() for c in CITIES], [b"Berlin", "Köl".encode(), "nMünch".encode()])


def test_a_misrecorded_model_is_refused_or_routed_as_xgboost_does(tmp_path):
    """A model file XGBoost 3.2 wrote: whatever XGBoost is installed, the library never
    claims the user's categories are not the model's, nor lets a decoding error escape."""
    df, y = frame(1500, 0)
    dv, yv = frame(1500, 1)
    bst = fit(df, y)
    js = misrecord(json.loads(bst.save_raw("json")), 0, CITIES)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(js))
    loaded = xgb.Booster(model_file=str(path))
    for X in variants(dv, CITIES).values():
        routes_as_xgboost_or_refuses(loaded, X)
    for model in (str(path), loaded):  # the file read as the command line reads it, too
        for X in variants(dv, CITIES).values():
            try:
                uc.unbiased_importance(model, df, y, X, yv, random_state=0)
            except ValueError as err:
                assert UNREADABLE in str(err) and FALSE_CLAIM not in str(err), str(err)
    # the command line: one clear error (exit 2), or a report
    df.assign(y=y).to_csv(tmp_path / "t.csv", index=False)
    dv.assign(y=yv).to_csv(tmp_path / "v.csv", index=False)
    done = subprocess.run(
        [sys.executable, "-m", "unbiased_criteria.cli", "importance", str(path), "--train",
         str(tmp_path / "t.csv"), "--valid", str(tmp_path / "v.csv"), "--label", "y"],
        capture_output=True, text=True)
    assert done.returncode in (0, 2), done.stderr
    if done.returncode == 2:
        assert UNREADABLE in done.stderr and "Traceback" not in done.stderr
        assert "not among the categories" not in done.stderr


def test_undecodable_stored_text_is_one_error_not_a_decoding_error():
    js_cats = ["a", "b", "ü"]  # misrecorded: 'a', 'b', b'\xc3' (half a character)
    df, y = frame(800, 0, js_cats)
    bst = fit(df, y, rounds=2)
    bad = xgb.Booster(model_file=bytearray(json.dumps(
        misrecord(json.loads(bst.save_raw("json")), 0, js_cats)).encode()))
    with pytest.raises(compat.UnreadableCategories, match=UNREADABLE):
        compat.stored_categories(bad)
    assert compat.category_records(bad)[0][1] == [b"a", b"b", b"\xc3"]


def test_to_xgboost_with_non_ascii_categories_round_trips():
    pytest.importorskip("sklearn")
    df, y = frame(1500, 0)
    dv, yv = frame(800, 1)
    est = uc.UnbiasedGBMRegressor(n_estimators=5, random_state=0).fit(df, y)
    bst = est.to_xgboost()
    expected = est.predict(dv)
    for fmt in ("json", "ubj"):
        loaded = xgb.Booster(model_file=bytearray(bst.save_raw(fmt)))
        got = loaded.predict(xgb.DMatrix(dv, enable_categorical=True))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        for X in variants(dv, CITIES).values():
            routes_as_xgboost_or_refuses(loaded, X)


def test_integer_column_labels_with_reordered_categories():
    """Column labels 0 and 1 (integers): recoding column 1 replaced it by label, where a
    new column '1' was added beside it (XGBoost: duplicate feature names)."""
    cats = list("abcd")
    df, y = frame(1500, 0, cats, labels=(1, 0))
    dv, yv = frame(1500, 1, cats, labels=(1, 0))
    bst = fit(df, y)
    expected = uc.unbiased_importance(bst, df, y, dv, yv, random_state=0).to_frame()
    reordered = dv.copy()
    reordered[1] = reordered[1].cat.reorder_categories(cats[::-1])
    before = reordered.copy()
    got = uc.unbiased_importance(bst, df, y, reordered, yv, random_state=0).to_frame()
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(reordered, before)  # not modified
    assert routes_as_xgboost_or_refuses(bst, reordered)
    assert isinstance(uc.prune(bst, df, y, reordered, yv, random_state=0), xgb.Booster)


def multi(X):
    cols = pd.MultiIndex.from_tuples([("g", "a"), ("g", "b"), ("h", 1), ("h", "b")])
    return pd.DataFrame(X, columns=cols)


def test_multiindex_columns_are_named_as_xgboost_names_them():
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(1500, 4)), rng.normal(size=(1500, 4))
    y, yv = X[:, 0] + rng.normal(size=1500), Xv[:, 0] + rng.normal(size=1500)
    df, dv = multi(X), multi(Xv)
    est = xgb.XGBRegressor(n_estimators=6, max_depth=3, n_jobs=1).fit(df, y)
    assert est.get_booster().feature_names == ["g a", "g b", "h 1", "h b"]
    assert routes_as_xgboost_or_refuses(est.get_booster(), dv)
    flat = dv.set_axis(["g a", "g b", "h 1", "h b"], axis=1)
    expected = uc.unbiased_importance(est, df, y, flat, yv, random_state=0).to_frame()
    got = uc.unbiased_importance(est, df, y, dv, yv, random_state=0).to_frame()
    pd.testing.assert_frame_equal(got, expected)
    pruned = uc.prune(est, df, y, dv, yv, random_state=0)
    assert pruned.get_booster().feature_names == est.get_booster().feature_names
    # the columns in another order are still refused, naming the argument
    with pytest.raises(ValueError, match="X_valid's column names do not match"):
        uc.unbiased_importance(est, df, y, dv.iloc[:, ::-1], yv, random_state=0)


def test_selector_takes_a_multiindex_frame():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 4))
    y = X[:, 0] + rng.normal(size=1500)
    df = multi(X)
    sel = uc.UnbiasedSelector(xgb.XGBRegressor(n_estimators=6, max_depth=3, n_jobs=1),
                              cv=3).fit(df, y)
    assert sel.transform(df).shape[0] == 1500


def test_an_ascii_model_takes_frames_listing_non_ascii_categories_as_xgboost_reads_them():
    """The model stores ASCII categories; the held-out frame also lists a non-ASCII one (its
    categories set on the whole data set). Refused as if the model's categories could not
    be read, though they read as they are: XGBoost recodes the frame by its own record of
    the frame's categories, which is right for the ones listed before the first non-ASCII
    one, so the library follows it there and refuses only where a row would be misread."""
    cats = ["Berlin", "Paris", "Rome"]
    df, y = frame(1500, 0, cats=cats)
    dv, yv = frame(600, 1, cats=cats)
    bst = fit(df, y)
    plain = uc.unbiased_importance(bst, df, y, dv, yv, random_state=0).to_frame()
    last = dv.assign(city=dv["city"].cat.set_categories(cats + ["Köln"]))
    try:  # XGBoost 3.4 refuses a frame listing a category the model lacks, even unused
        np.testing.assert_array_equal(host_leaves(bst, last), host_leaves(bst, dv))
    except xgb.core.XGBoostError:
        assert compat.records_text_faithfully()
    pd.testing.assert_frame_equal(
        uc.unbiased_importance(bst, df, y, last, yv, random_state=0).to_frame(), plain)
    held = last.copy()
    held.iloc[0, 0] = "Köln"  # a row of a category the model was not trained with
    with pytest.raises(ValueError, match="not trained with: 'Köln'"):
        uc.unbiased_importance(bst, df, y, held, yv, random_state=0)
    middle = dv.assign(city=dv["city"].cat.set_categories(["Berlin", "Köln", "Paris", "Rome"]))
    if compat.records_text_faithfully():  # XGBoost 3.4+: read by value
        pd.testing.assert_frame_equal(
            uc.unbiased_importance(bst, df, y, middle, yv, random_state=0).to_frame(), plain)
    else:  # 3.2 would read 'Paris' rows as another category: refused, naming it
        with pytest.raises(ValueError, match="it would read 'Paris', 'Rome' as other categories"):
            uc.unbiased_importance(bst, df, y, middle, yv, random_state=0)


def test_the_hook_evaluates_an_eval_set_listing_an_unused_non_ascii_category():
    """dtrain's categories are ASCII, the eval frame lists one more, non-ASCII and unused:
    xgboost.train evaluates it; the hook refused it, blaming the model's categories."""
    cats = ["Berlin", "Paris", "Rome"]
    df, y = frame(1500, 0, cats=cats)
    dv, yv = frame(600, 1, cats=cats)
    dv = dv.assign(city=dv["city"].cat.set_categories(cats + ["Köln"]))
    params = {"nthread": 1, "max_depth": 3}
    dtrain = xgb.DMatrix(df, y, enable_categorical=True)
    deval = xgb.DMatrix(dv, yv, enable_categorical=True)
    host, ours, plain = {}, {}, {}
    ax.train(params, dtrain, 5, evals=[(deval, "eval")], evals_result=ours,
             verbose_eval=False, prune_threshold=None, holdout_fraction=0.0)
    try:
        xgb.train(params, dtrain, 5, evals=[(deval, "eval")], evals_result=host,
                  verbose_eval=False)
    except xgb.core.XGBoostError:  # 3.4 refuses the unused category; the hook recodes it
        assert compat.records_text_faithfully()
        xgb.train(params, dtrain, 5, evals_result=plain, verbose_eval=False,
                  evals=[(xgb.DMatrix(dv.assign(city=dv["city"].cat.set_categories(cats)),
                                      yv, enable_categorical=True), "eval")])
        host = plain
    np.testing.assert_allclose(ours["eval"]["rmse"], host["eval"]["rmse"], rtol=1e-6)
