"""HistGradientBoosting fitted again with warm_start=True after set_params changed the learning
rate, l2_regularization or loss (the estimator keeps the last fit's only), the stored gains
held to the replay's (roots with their term), and the roots' gains a pruned model stores."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
from _sklearn_data import one_thread  # noqa: E402, F401
from sklearn.ensemble import HistGradientBoostingRegressor  # noqa: E402
from unbiased_criteria.adapters import sklearn as ask  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import gains  # noqa: E402
from unbiased_criteria.leaf_params import tree_params  # noqa: E402
from unbiased_criteria.model import UnsupportedModelError  # noqa: E402
from unbiased_criteria.replay import RowSet, replay  # noqa: E402

N = 1500


def rows(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    return X, X[:, 0] + 0.5 * X[:, 1] ** 2 + 3 * (X[:, 2] > 1) + rng.normal(size=N)


X, y = rows(0)
Xv, yv = rows(1)
# positive labels (Poisson), shifted alike
shift = 1.0 - min(y.min(), yv.min())


def continued(labels=y, **change):
    """6 iterations of squared error at learning_rate 0.1 and no L2, then 6 more after
    ``change``."""
    model = HistGradientBoostingRegressor(max_iter=6, learning_rate=0.1, max_leaf_nodes=15,
                                          early_stopping=False, random_state=0,
                                          warm_start=True).fit(X, labels)
    return model.set_params(max_iter=12, **change).fit(X, labels)


def quiet(call, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call(*args, **kwargs)
    return out, [str(w.message) for w in caught]


def test_another_learning_rate_is_read_per_tree():
    model = continued(learning_rate=0.5)
    # nothing pruned, every leaf refit: the estimator's own predictions back (each tree at
    # its own rate; at the last one, the first trees' leaves were 5x too large: moved by 1.2)
    pruned, said = quiet(uc.prune, model, X, y, Xv, yv, threshold=-np.inf, refit_leaves=True,
                         random_state=0)
    assert said == []
    np.testing.assert_allclose(pruned.predict(Xv), model.predict(Xv), rtol=0, atol=1e-9)
    report, said = quiet(uc.unbiased_importance, model, X, y, Xv, yv, random_state=0)
    assert said == []  # B and U do not depend on the learning rate
    # a real pruning: the first trees' new leaves at their own rate
    pruned, said = quiet(uc.prune, model, X, y, Xv, yv, random_state=0)
    assert sum(p.nodes.shape[0] for it in pruned._predictors for p in it) < \
        sum(p.nodes.shape[0] for it in model._predictors for p in it)


@pytest.mark.parametrize("change, name", [({"l2_regularization": 50.0}, "l2_regularization"),
                                          ({"learning_rate": 0.5, "l2_regularization": 5.0},
                                           "learning_rate, l2_regularization"),
                                          ({"loss": "poisson"}, "loss")])
def test_another_penalty_or_loss_is_refused_for_pruning_and_warned(change, name):
    y_, yv_ = (y + shift, yv + shift) if name == "loss" else (y, yv)
    model = continued(y_, **change)
    before = copy.deepcopy(model.get_params())
    with pytest.raises(UnsupportedModelError, match=f"warm_start=True.*changed {name}"):
        quiet(uc.prune, model, X, y_, Xv, yv_, threshold=-np.inf, refit_leaves=True)
    report, said = quiet(uc.unbiased_importance, model, X, y_, Xv, yv_, random_state=0)
    assert len(said) == 1 and "warm_start=True" in said[0] and f"changed {name}" in said[0]
    assert model.get_params() == before
    if name != "loss":  # the first trees' B was computed with the current L2: it misses
        s = report.splits
        first = s[(s.tree < 6) & (s.node > 0)]
        rel = np.abs(first.biased_gain - first.host_gain) / first.host_gain.abs()
        assert rel.max() > 0.01


def test_without_training_rows_a_warm_start_estimator_is_refused_for_pruning():
    model = continued()  # nothing changed: with training rows it prunes silently
    quiet(uc.prune, model, X, y, Xv, yv, random_state=0)
    with pytest.raises(UnsupportedModelError, match="warm_start=True.*without training rows"):
        uc.prune(model, None, None, Xv, yv, random_state=0)
    once = copy.deepcopy(model).set_params(warm_start=False)
    quiet(uc.prune, once, None, None, Xv, yv, random_state=0)
    # importance does not need the parameters (B is not compared without training rows)
    report, said = quiet(uc.unbiased_importance, model, None, None, Xv, yv, random_state=0)
    assert not any("warm_start" in m for m in said)


def test_tree_params_recovers_each_trees_rate_and_penalty():
    model = continued(learning_rate=0.5, l2_regularization=5.0)
    read = ask.read_model(model)
    found = []

    def visit(step):
        tree = step.tree
        sums = gains.node_sums(tree, step.nodes_train, step.g_train, step.h_train)
        use = np.arange(tree.n_nodes) > 0
        found.append(tree_params(tree.value[use], sums.G[use], sums.H[use], tree.is_leaf[use],
                                 0.5, 5.0))

    replay(read, read.objective, train=RowSet(ask.make_router(model, read, X, "X"), y),
           visit=visit)
    assert [p.fits for p in found] == ["both"] * 6 + ["read"] * 6
    np.testing.assert_allclose([p.shrinkage for p in found[:6]], 0.1, rtol=1e-9)
    np.testing.assert_allclose([p.l2 for p in found[:6]], 0.0, atol=1e-6)


def edited(model):
    """A copy whose fourth tree's leaves are doubled: the later trees were grown from other
    scores than the replay rebuilds."""
    out = copy.deepcopy(model)
    nodes = out._predictors[3][0].nodes
    nodes["value"] = np.where(nodes["is_leaf"], 2 * nodes["value"], nodes["value"])
    return out


def test_later_gains_are_held_to_the_stored_ones():
    model = HistGradientBoostingRegressor(max_iter=12, learning_rate=0.3, max_leaf_nodes=15,
                                          early_stopping=False, random_state=0).fit(X, y)
    report, said = quiet(uc.unbiased_importance, model, X, y, Xv, yv, random_state=0)
    assert said == []  # roots compared with their term: every stored gain matches
    report, said = quiet(uc.unbiased_importance, edited(model), X, y, Xv, yv, random_state=0)
    assert len(said) == 1 and "trees after the first iteration" in said[0]
    with pytest.raises(UnsupportedModelError, match="trees after the first iteration"):
        quiet(uc.prune, edited(model), X, y, Xv, yv, random_state=0)


def test_unpassed_weights_are_warned_by_the_first_trees_gains():
    w = np.random.default_rng(3).uniform(0.2, 3.0, N)
    model = HistGradientBoostingRegressor(max_iter=4, early_stopping=False, random_state=0
                                          ).fit(X, y, sample_weight=w)
    report, said = quiet(uc.unbiased_importance, model, X, y, Xv, yv, train_weight=w,
                         random_state=0)
    assert said == []
    report, said = quiet(uc.unbiased_importance, model, X, y, Xv, yv, random_state=0)
    assert len(said) == 1 and "biased_gain misses the model's own gains" in said[0]


def test_a_pruned_model_stores_its_roots_gains_as_scikit_learn_does():
    model = HistGradientBoostingRegressor(max_iter=20, max_leaf_nodes=15, l2_regularization=1.0,
                                          early_stopping=False, random_state=0).fit(X, y)
    pruned, _ = quiet(uc.prune, model, X, y, Xv, yv, random_state=0)
    changed = 0
    for name, m in (("model", model), ("pruned", pruned)):
        # the oracle: each root's G over the training rows at the model's own raw scores
        # (squared error: G = sum(raw - y), H = n) and its B from its children's gains
        raw = np.vstack([np.full(N, m._baseline_prediction.item()),
                         np.asarray(list(m._staged_raw_predict(X)))[:-1, :, 0]])
        G = (raw - y).sum(axis=1)
        report, said = quiet(uc.unbiased_importance, m, X, y, Xv[:500], yv[:500],
                             random_state=0)
        assert not any("misses" in s for s in said), name
        roots = report.splits[report.splits.node == 0].set_index("tree")
        stored = np.array([p.nodes["gain"][0] for it in m._predictors for p in it])
        has_split = np.array([p.nodes.shape[0] > 1 for it in m._predictors for p in it])
        expected = roots.biased_gain.to_numpy() + G[has_split] ** 2 / (N + 1.0)
        np.testing.assert_allclose(stored[has_split], expected, rtol=1e-9)
        changed += name == "pruned" and not np.array_equal(stored, np.array(
            [p.nodes["gain"][0] for it in model._predictors for p in it]))
    assert changed  # the pruned model's later roots were rewritten


def test_a_pruned_model_is_not_taken_for_a_warm_start_fit():
    """A pruned model's later trees hold values fitted at its unpruned scores: read against
    the pruned replay they looked like a warm_start fit whose loss had changed, so its
    importance warned and a second prune refused."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    def rows(seed, n=1500):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 6))
        X[:, 1] = rng.integers(0, 2, n)
        return X, (0.8 * X[:, 0] + 0.5 * X[:, 1] + rng.logistic(size=n) > 0).astype(int)

    (X, y), (Xv, yv), (Xv2, yv2) = rows(0), rows(1), rows(2)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0,
                                           early_stopping=False).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pruned = uc.prune(model, X, y, Xv, yv, random_state=0)
        uc.unbiased_importance(pruned, X, y, Xv2, yv2, random_state=0)
        uc.prune(pruned, X, y, Xv2, yv2, random_state=0)


def test_weights_not_passed_are_named_for_histgradientboosting():
    """Its nodes store row counts only, so weights given to fit and not as train_weight show
    in the gains alone; the warning named parameters and XGBoost's set_param instead."""
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(2000, 4)), rng.normal(size=(1000, 4))
    y, yv = X[:, 0] + rng.normal(size=2000), Xv[:, 0] + rng.normal(size=1000)
    w = rng.uniform(0.2, 3.0, 2000)
    model = HistGradientBoostingRegressor(max_iter=10, early_stopping=False).fit(X, y,
                                                                                sample_weight=w)
    with pytest.warns(UserWarning, match="sample_weight given to fit but not as train_weight"):
        uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uc.unbiased_importance(model, X, y, Xv, yv, train_weight=w, random_state=0)
