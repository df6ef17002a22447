"""What the Dask engine does with the training labels at the client: it computes them once
(class_weight='balanced' and the init score both need them), and refuses all-zero training
weights with the in-memory call's error. Oracles: a count of the label partitions' runs, and
the in-memory call's error."""

from __future__ import annotations

import numpy as np
import pytest

import unbiased_criteria as uc

da = pytest.importorskip("dask.array")
lightgbm = pytest.importorskip("lightgbm")


def _binary(n, seed):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 5))
    return X, (X[:, 0] + r.normal(size=n) > 0.5).astype(np.int64)


def _counted(a, path):
    if a.shape[0]:  # not dask's meta calls
        with open(path, "a") as f:
            f.write("run\n")
    return a


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_training_labels_are_computed_once_for_the_client(client, tmp_path, class_weight):
    (X, y), (Xv, yv) = _binary(3000, 0), _binary(2000, 1)
    model = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1, n_jobs=1,
                                    class_weight=class_weight).fit(X, y)
    log = tmp_path / "runs.log"
    log.touch()
    y_train = da.from_array(y, chunks=1000).map_blocks(_counted, str(log), dtype=np.int64)
    uc.unbiased_importance(model, da.from_array(X, chunks=(1000, 5)), y_train,
                           da.from_array(Xv, chunks=(1000, 5)), da.from_array(yv, chunks=1000),
                           random_state=0)
    # 3 partitions: once on the workers (the partitions), once to the client (the init
    # score, and with 'balanced' the classes' counts)
    assert len(log.read_text().split()) == 2 * 3


def test_all_zero_training_weights_are_refused_as_in_memory(client):
    (X, y), (Xv, yv) = _binary(3000, 0), _binary(2000, 1)
    model = lightgbm.LGBMClassifier(n_estimators=5, verbose=-1, n_jobs=1).fit(X, y)
    w = np.zeros(3000)
    with pytest.raises(ValueError) as in_memory:
        uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, random_state=0)

    def d(a):
        return da.from_array(a, chunks=(1000,) + a.shape[1:])

    with pytest.raises(ValueError) as dask:
        uc.unbiased_importance(model, d(X), d(y), d(Xv), d(yv), train_weight=d(w),
                               random_state=0)
    assert str(dask.value) == str(in_memory.value)
    assert "train_weight is 0 for every row" in str(dask.value)
