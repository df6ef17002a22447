"""With dask collections, uc.unbiased_importance and uc.prune check what they check in memory.

Oracles: the in-memory calls on the same rows (their warnings, refusals, jackknife blocks, the
sketch a pruned model keeps), and the in-memory replay of a model pruned from dask
collections (its stored gains against the gains at its own scores).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import unbiased_criteria as uc
from unbiased_criteria.api import adapter_for
from unbiased_criteria.model import UnsupportedModelError

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
lightgbm = pytest.importorskip("lightgbm")

SAME = "X_valid holds the same rows as X_train"
PART = "every row of X_valid is a row of X_train"
SHARED = "X_valid holds rows of X_train"
PRUNED_ON = "X_valid holds rows that pruned this model"
LATER = "biased_gain misses the model's own gains"
INIT = "the model's first trees hold no init score"


def _data(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    X[:, 1] = r.integers(0, 6, n)
    X[:, 0] = r.integers(0, 2, n)
    return X, 0.5 * X[:, 0] + 0.3 * X[:, 3] + r.normal(size=n)


def _d(a, parts=3):
    """``a`` as a dask Array of ``parts`` partitions of rows."""
    return da.from_array(a, chunks=(-(-a.shape[0] // parts),) + a.shape[1:])


def _run(call):
    """``call()``'s outcome and warnings: ("ok" or the error's type and message, [messages])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            out = "ok"
        except (ValueError, UnsupportedModelError) as error:
            out = f"{type(error).__name__}: {error}"
    return out, [str(w.message) for w in caught]


@pytest.fixture(scope="module")
def rows():
    return _data(3000, 0), _data(3000, 1), _data(3000, 2)


@pytest.fixture(scope="module")
def model(rows):
    (X, y), _, _ = rows
    return lightgbm.train({"verbose": -1, "num_threads": 1}, lightgbm.Dataset(X, y), 30)


def test_a_model_pruned_from_dask_collections_reads_back_silently_and_prunes_again(
        client, rows, model):
    """It was taken for a DART / edited model: its later trees kept the gains of the unpruned
    model, and it kept no sketch of its pruning rows, so in memory importance warned and
    prune refused it (131 of 187 splits off). Now it stores the gains at its own scores and
    the sketch, as a model pruned in memory."""
    (X, y), (Xv, yv), (Xt, yt) = rows
    mem = uc.prune(model, X, y, Xv, yv, random_state=0)
    dsk = uc.prune(model, _d(X), _d(y), _d(Xv), _d(yv), random_state=0)
    # the sketch of the same pruning rows, merged from the partitions, is the in-memory one
    sketches = [adapter_for(m).read_model(m).pruned_on for m in (mem, dsk)]
    assert len(sketches[0]) == 1 and sketches[1] == sketches[0]
    text = lightgbm.Booster(model_str=dsk.model_to_string())  # the record is lost
    assert not adapter_for(text).read_model(text).pruned_on
    for pruned in (dsk, text):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            report = uc.unbiased_importance(pruned, X, y, Xt, yt, random_state=0)
            uc.prune(pruned, X, y, Xt, yt, random_state=0)
        # the oracle: the in-memory replay's B at the pruned model's own scores
        later = report.splits[report.splits["tree"] > 0]
        assert len(later) > 20
        np.testing.assert_allclose(later["host_gain"], later["biased_gain"], rtol=1e-3)
    # scored on the rows that pruned it: warned, in memory and with dask inputs
    for args in [(X, y, Xv, yv), (_d(X), _d(y), _d(Xv), _d(yv))]:
        with pytest.warns(UserWarning, match=PRUNED_ON) as caught:
            uc.unbiased_importance(dsk, *args, random_state=0)
        assert [w.filename for w in caught if PRUNED_ON in str(w.message)] == [__file__]


def test_later_trees_grown_from_other_scores_are_warned_or_refused_as_in_memory(client, rows):
    """A model continued from a DART model: its later trees were grown from other scores than
    the replay rebuilds, and its first trees hold no init score. With dask inputs it was
    scored and pruned without a word; now with the in-memory warnings and refusal."""
    (X, y), (Xv, yv), _ = rows
    dart = lightgbm.train({"verbose": -1, "num_threads": 1, "boosting": "dart",
                           "drop_rate": 0.5, "skip_drop": 0}, lightgbm.Dataset(X, y), 20)
    model = lightgbm.train({"verbose": -1, "num_threads": 1}, lightgbm.Dataset(X, y), 5,
                           init_model=dart)
    for call in (uc.unbiased_importance, uc.prune):
        mem = _run(lambda call=call: call(model, X, y, Xv, yv, random_state=0))
        dsk = _run(lambda call=call: call(model, _d(X), _d(y), _d(Xv), _d(yv),
                                          random_state=0))
        assert [m[:60] for m in dsk[1]] == [m[:60] for m in mem[1]]
        assert any(m.startswith(INIT) for m in dsk[1])
        if call is uc.prune:
            assert mem[0].startswith("UnsupportedModelError: " + LATER)
            assert dsk[0] == mem[0]  # the same splits compared, the same ones off
        else:
            assert dsk[0] == "ok" and any(m.startswith(LATER) for m in dsk[1])
    with pytest.warns(UserWarning, match=LATER) as caught:
        uc.unbiased_importance(model, _d(X), _d(y), _d(Xv), _d(yv))
    assert [w.filename for w in caught if LATER in str(w.message)] == [__file__]


def test_fewer_held_out_rows_than_blocks_as_in_memory(client):
    """12 held-out rows, n_blocks=20: in memory one block per row, warned; with dask inputs
    20 blocks were kept silently, 8 of them empty (their replicates the full estimate: the
    standard error shrunk, select() with 19 degrees of freedom instead of 11)."""
    r = np.random.default_rng(0)
    X = r.normal(size=(2000, 2))
    y = X[:, 0] + r.normal(size=2000)
    Xv = r.normal(size=(12, 2))
    yv = Xv[:, 0] + r.normal(size=12)
    model = lightgbm.train({"verbose": -1, "num_threads": 1, "num_leaves": 2},
                           lightgbm.Dataset(X, y), 3)
    with pytest.warns(UserWarning, match="n_blocks=20 but X_valid has 12 rows") as mem_caught:
        mem = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0, min_k=1)
    with pytest.warns(UserWarning, match="n_blocks=20 but X_valid has 12 rows") as caught:
        dsk = uc.unbiased_importance(model, _d(X, 2), _d(y, 2), _d(Xv, 2), _d(yv, 2),
                                     random_state=0, min_k=1)
    assert [str(w.message) for w in caught] == [str(w.message) for w in mem_caught]
    assert caught[0].filename == __file__
    assert dsk.jackknife.shape == mem.jackknife.shape == (3, 12)
    full = dsk.splits["unbiased_gain"].to_numpy()
    assert not any(np.allclose(dsk.jackknife[:, b], full) for b in range(12))


def test_the_training_rows_are_found_by_their_hashes(client, rows, model):
    """Held-out rows that are training rows in another collection (a copy, another order, a
    part, mixed with fresh rows): Dask compared the collections' graphs only, and accepted
    ``X + 0, y + 0``. Now as in memory: where every held-out row is a training row prune
    refuses and importance warns; a share beyond chance over 10% is warned of."""
    (X, y), (Xv, yv), _ = rows
    dX, dy = _d(X), _d(y)
    with pytest.raises(ValueError, match=SAME):
        uc.prune(model, dX, dy, dX + 0, dy + 0)
    order = np.random.default_rng(0).permutation(len(y))
    with pytest.raises(ValueError, match=SAME):
        uc.prune(model, dX, dy, _d(X[order], 4), _d(y[order], 4))
    with pytest.raises(ValueError, match=PART):
        uc.prune(model, dX, dy, _d(X[::3], 2), _d(y[::3], 2))
    with pytest.warns(UserWarning, match=SAME) as caught:
        uc.unbiased_importance(model, dX, dy, dX + 0, dy + 0)
    assert [w.filename for w in caught if SAME in str(w.message)] == [__file__]
    mixed = np.concatenate([X[:1000], Xv[:2000]]), np.concatenate([y[:1000], yv[:2000]])
    for call in (uc.unbiased_importance, uc.prune):
        with pytest.warns(UserWarning, match=SHARED + r" \(33% of its rows\)") as caught:
            call(model, dX, dy, _d(mixed[0]), _d(mixed[1]), random_state=0)
        assert [w.filename for w in caught if SHARED in str(w.message)] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, dX, dy, _d(Xv), _d(yv), random_state=0)
    # fewer distinct rows than a summary keeps: the share is exact, the in-memory warning
    small = np.concatenate([X[:200], Xv[:400]]), np.concatenate([y[:200], yv[:400]])
    mem = _run(lambda: uc.unbiased_importance(model, X, y, *small))
    dsk = _run(lambda: uc.unbiased_importance(model, dX, dy, _d(small[0]), _d(small[1])))
    assert [m for m in dsk[1] if SHARED in m] == [m for m in mem[1] if SHARED in m] != []


@pytest.mark.parametrize("case", ["normalised_held_out_weights", "class_weight"])
def test_the_curvature_floors_unit_as_in_memory(client, case):
    """The floor's unit is the held-out rows' mean weight as the model weighted them, from
    the partitions' sums: held-out weights normalised to sum to 1, and a classifier's small
    class weights, give the in-memory report (before: the unit came from the training
    weights and ignored class weights, and splits usable in memory were not over Dask)."""
    r = np.random.default_rng(3)
    X = r.normal(size=(4000, 4))
    if case == "class_weight":
        y = (r.random(4000) < 1 / (1 + np.exp(-X[:, 0]))).astype(int)
        model = lightgbm.LGBMClassifier(n_estimators=20, min_child_samples=3,
                                        min_child_weight=1e-12, class_weight={0: 1e-4, 1: 3e-4},
                                        verbose=-1, n_jobs=1).fit(X[:2000], y[:2000])
        wv = None
    else:
        y = 0.5 * X[:, 0] + r.normal(size=4000)
        model = lightgbm.train({"objective": "regression", "verbose": -1, "num_threads": 1,
                                "min_data_in_leaf": 5}, lightgbm.Dataset(X[:2000], y[:2000]),
                               20)
        wv = r.uniform(0.5, 1.5, 2000)
        wv /= 10 * wv.sum()  # normalised (to 0.1: a floor in the training rows' unit bit)
    args = (X[:2000], y[:2000], X[2000:], y[2000:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the split-count warnings, alike on both paths
        here = uc.unbiased_importance(model, *args, valid_weight=wv, random_state=0, n_jobs=1)
        there = uc.unbiased_importance(model, *map(_d, args),
                                       valid_weight=None if wv is None else _d(wv),
                                       random_state=0)
    # the draws differ from memory's (README, *Dask*): which splits are usable does not
    # here (the floor does not bite: only min_k decides)
    np.testing.assert_array_equal(here.splits["usable"], there.splits["usable"])
    assert here.splits["usable"].mean() > 0.5
    if wv is not None:  # the weights' scale changes nothing
        scaled = uc.unbiased_importance(model, *args, valid_weight=wv * wv.size,
                                        random_state=0, n_jobs=1)
        np.testing.assert_array_equal(scaled.splits["usable"], there.splits["usable"])
