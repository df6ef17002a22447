"""XGBoost 3.4's reg:absoluteerror and reg:quantileerror: smoothed surrogates whose scale is a
statistic of all training rows in each iteration, with leaves no longer renewed.

The oracles run where XGBoost 3.4+ is installed (Python 3.12+; `.ci/run` runs this file
there): every node's hessian sum and gain against XGBoost's ``sum_hessian`` and
``loss_changes`` in every iteration (each iteration's scale included), and leaves refit with
nothing pruned against XGBoost's own model. Where an older XGBoost is installed the
same models renew their leaves: pruning refuses them. The replay's rule, that every row set
takes the scale of the training rows, is checked on any version.
"""

from __future__ import annotations

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

from unbiased_criteria.adapters import xgboost as ax  # noqa: E402
from unbiased_criteria.adapters.dask.engine import _read  # noqa: E402
from unbiased_criteria.adapters.xgboost import compat  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.objectives import make_objective  # noqa: E402
from unbiased_criteria.replay import RowSet, replay  # noqa: E402

SMOOTH = compat.model_version() >= compat.SMOOTH_L1_FROM


def data(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.standard_t(3, size=n)
    return X, y, rng.uniform(0.2, 2.0, size=n)


CASES = [("reg:absoluteerror", {}, False), ("reg:absoluteerror", {"alpha": 0.5}, True),
         ("reg:quantileerror", {"quantile_alpha": 0.2}, False),
         ("reg:quantileerror", {"quantile_alpha": 0.9}, True)]


@pytest.mark.parametrize("objective, params, weighted", CASES)
def test_replay_is_xgboosts_in_every_iteration(objective, params, weighted):
    X, y, w = data(0, 1500)
    Xv, yv, _ = data(1, 600)
    weight = w if weighted else None
    bst = xgb.train({"objective": objective, "max_depth": 4, "nthread": 1, **params},
                    xgb.DMatrix(X, y, weight=weight), 15)
    read = ax.read_model(bst)
    if not SMOOTH:  # XGBoost < 3.4 renews these leaves from its own residuals
        assert read.objective.renews_leaves
        with pytest.raises(ValueError, match="renews their leaf values"):
            uc.prune(bst, X, y, Xv, yv, train_weight=weight, random_state=0)
        return
    assert read.objective.name.startswith("smooth_") and not read.objective.renews_leaves
    router = ax.make_router(bst, read, X, "X")
    checked = []

    def visit(step):
        tree = step.tree
        sums = gains.node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        np.testing.assert_allclose(sums.H, tree.host_hessian, rtol=1e-5)
        inner = tree.internal_nodes
        B = gains.biased_gain(tree, sums, read.split_score)[inner]
        np.testing.assert_allclose(B, tree.host_gain[inner], rtol=1e-3,
                                   atol=1e-5 * np.abs(tree.host_gain[inner]).max())
        checked.append(inner.size)

    replay(read, read.objective, train=RowSet(router, y, weight), visit=visit)
    assert len(checked) == 15 and sum(checked) > 100
    # leaves refit from the replayed sums, nothing pruned: XGBoost's own model (to an ulp:
    # the C library's tanhf and hypotf against numpy's, rarely one unit apart)
    refit = uc.prune(bst, X, y, Xv, yv, train_weight=weight, threshold=-np.inf,
                     refit_leaves=True, random_state=0)
    dv = xgb.DMatrix(Xv)
    np.testing.assert_allclose(refit.predict(dv, output_margin=True),
                               bst.predict(dv, output_margin=True), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name, extra", [("smooth_absolute_error", {}),
                                         ("smooth_quantile", {"alpha": 0.3})])
def test_every_row_set_takes_the_training_rows_scale(name, extra):
    X, y, w = data(2, 800)
    Xv, yv, _ = data(3, 400)
    yv = yv * 3.0  # held-out residuals of another size: their own scale would differ
    bst = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 3)
    read = ax.read_model(bst)
    objective = make_objective(name, precision="float32", **extra)
    train = RowSet(ax.make_router(bst, read, X, "X"), y, w)
    valid = RowSet(ax.make_router(bst, read, Xv, "Xv"), yv, None)
    seen = []

    def visit(step):
        at = objective.at_iteration(y, step.raw_train, w)
        g, h = at.grad_hess(yv, step.raw_valid, None)
        np.testing.assert_array_equal(step.g_valid, g)
        np.testing.assert_array_equal(step.h_valid, h)
        own = objective.grad_hess(yv, step.raw_valid, None)[1]
        seen.append(np.abs(own - h).max())

    replay(read, objective, train=train, valid=valid, visit=visit)
    assert len(seen) == 3 and max(seen) > 0  # the held-out rows' own scale is another loss


def test_dask_inputs_refuse_them():
    X, y, _ = data(4, 300)
    bst = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), 2)
    with pytest.raises(UnsupportedModelError, match="smooth_absolute_error.*dask inputs"):
        _read(bst, "smooth_absolute_error", None, "importance", with_train=True)


@pytest.mark.parametrize("objective, extra", [("reg:absoluteerror", {}),
                                              ("reg:quantileerror", {"quantile_alpha": 0.3})])
def test_hook(objective, extra):
    """Under XGBoost 3.4 the hook drives them: pruning off and nothing held out, it is
    ``xgb.train`` (margins and the default metric, mae or quantile, bit for bit); as used it
    prunes. Before 3.4 XGBoost renews their leaves from its own cache: refused."""
    X, y, w = data(5, 800)
    Xv, yv, _ = data(6, 300)
    dtrain, dvalid = xgb.DMatrix(X, y, weight=w), xgb.DMatrix(Xv, yv)
    params = {"objective": objective, "max_depth": 3, "eta": 0.3, "nthread": 1, **extra}
    if not SMOOTH:
        with pytest.raises(UnsupportedModelError, match="renews its leaf values"):
            ax.train(params, dtrain, 3, verbose_eval=False)
        return
    want, got = {}, {}
    ref = xgb.train(params, dtrain, 6, evals=[(dvalid, "valid")], evals_result=want,
                    verbose_eval=False)
    off = ax.train(params, dtrain, 6, evals=[(dvalid, "valid")], evals_result=got,
                   verbose_eval=False, prune_threshold=None, holdout_fraction=0.0)
    np.testing.assert_array_equal(off.predict(dvalid, output_margin=True),
                                  ref.predict(dvalid, output_margin=True))
    assert got == want and list(want["valid"]) == ["mae" if "abs" in objective else "quantile"]
    used = ax.train(params, dtrain, 6, verbose_eval=False, random_state=0)
    kept = ax.training_splits(used)
    assert 0 < kept["kept"].sum() < len(kept)
