"""LightGBM training hook: callbacks that change the growing Booster's parameters.

The hook values every collapsed node and scores every split with parameters it reads once
(``lambda_l1``, ``lambda_l2``, ``max_delta_step``, ``path_smooth``, ``cat_l2``,
``max_cat_to_onehot``, ``monotone_constraints``) and takes the gradients of the objective it
started with: a callback changing one of them, under any of LightGBM's names or on the Booster
directly (``env.model.reset_parameter``), is one error. It follows the learning rate. It
re-checks what it checks at the start (``min_sum_hessian_in_leaf > 0`` with held-out rows,
balanced bagging) after every callback. The oracle of what a callback changed is LightGBM:
``lightgbm.train`` with the same callback, and the parameters its Booster reports.
"""

from __future__ import annotations

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm")

from unbiased_criteria.adapters import lightgbm as adapter  # noqa: E402
from unbiased_criteria.adapters.lightgbm.source import parse_parameters  # noqa: E402

from unbiased_criteria.model import UnsupportedModelError  # noqa: E402

P = {"objective": "regression", "learning_rate": 0.3, "num_threads": 1, "verbose": -1,
     "num_leaves": 15, "lambda_l2": 1.0, "deterministic": True}
ROUNDS = 6


def regression_data(n: int = 800):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 6))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n)
    return X, y


def on_booster(params: dict, at: int, before: bool):
    """A callback that calls ``env.model.reset_parameter(params)`` in round ``at``, before
    the round grows (``before``) or after it."""
    def callback(env):
        if env.iteration == at:
            env.model.reset_parameter(params)
    callback.before_iteration = before
    return callback


def make_callback(route: str, key: str, start, new):
    """``key`` changed from ``start`` to ``new`` for round 1 on: through
    ``lightgbm.reset_parameter``, or on the Booster before round 1 or after round 0."""
    if route == "reset_parameter":
        return lightgbm.reset_parameter(**{key: [start] + [new] * (ROUNDS - 1)})
    return on_booster({key: new}, *((1, True) if route == "before" else (0, False)))


def lightgbm_reports(params: dict, callback) -> dict[str, str]:
    """The parameters of the Booster ``lightgbm.train`` grows with ``callback``."""
    X, y = regression_data()
    model = lightgbm.train(params, lightgbm.Dataset(X, y), ROUNDS, callbacks=[callback])
    return parse_parameters(model.model_to_string())


@pytest.mark.parametrize("route", ["reset_parameter", "before", "after"])
@pytest.mark.parametrize("key", ["lambda_l2", "reg_lambda", "lambda", "l2_regularization"])
def test_changing_lambda_l2_is_refused_under_every_name_and_route(key, route):
    """LightGBM grows the later trees with the new lambda_l2 whichever name or route a
    callback uses; the hook valued every collapsed node with the old one (tree 2's root
    +0.012121 where LightGBM's was +0.009097) unless the callback said ``lambda_l2`` to
    ``lightgbm.reset_parameter``."""
    assert lightgbm_reports(P, make_callback(route, key, 1.0, 500.0))["lambda_l2"] == "500"
    X, y = regression_data()
    with pytest.raises(ValueError, match="a callback changed lambda_l2 from 1 to 500 during "
                                         "training"):
        adapter.train(P, lightgbm.Dataset(X, y), ROUNDS, prune_threshold=1e9,
                      callbacks=[make_callback(route, key, 1.0, 500.0)])


@pytest.mark.parametrize("main, key, start, new", [
    ("lambda_l1", "reg_alpha", 0.0, 2.0),
    ("lambda_l1", "l1_regularization", 0.0, 2.0),
    ("max_delta_step", "max_leaf_output", 0.0, 0.05),
    ("max_delta_step", "max_tree_output", 0.0, 0.05),
    ("path_smooth", "path_smooth", 0.0, 5.0),
    ("cat_l2", "cat_l2", 10.0, 1.0),
    ("max_cat_to_onehot", "max_cat_to_onehot", 4, 32),
    ("monotone_constraints", "mc", None, [1, 0, 0, 0, 0, 0]),
    ("monotone_constraints", "monotonic_cst", None, [1, 0, 0, 0, 0, 0]),
])
@pytest.mark.parametrize("route", ["before", "after"])
def test_changing_what_values_a_leaf_is_refused_under_every_name(main, key, start, new, route):
    """Every parameter the hook values collapsed nodes or scores splits with, set on the
    Booster under an alias: LightGBM takes it (its Booster reports it), the hook refuses."""
    reported = lightgbm_reports(P, make_callback(route, key, start, new))
    assert reported[main] != parse_parameters(
        lightgbm.train(P, lightgbm.Dataset(*regression_data()), 1).model_to_string())[main]
    X, y = regression_data()
    with pytest.raises(ValueError, match=f"a callback changed {main} from "):
        adapter.train(P, lightgbm.Dataset(X, y), ROUNDS,
                      callbacks=[make_callback(route, key, start, new)])


@pytest.mark.parametrize("key", ["objective", "app", "loss"])
def test_changing_the_objective_is_refused(key):
    """``lightgbm.train`` switches to the new objective's gradients (and LightGBM renews
    leaves from residuals for some); the hook computes its first objective's gradients."""
    assert lightgbm_reports(P, make_callback("before", key, None, "huber"))["objective"] == \
        "huber"
    X, y = regression_data()
    with pytest.raises(ValueError, match="a callback set objective to 'huber' during training"):
        adapter.train(P, lightgbm.Dataset(X, y), ROUNDS,
                      callbacks=[make_callback("before", key, None, "huber")])


def test_a_change_below_lightgbms_printed_digits_is_refused():
    """LightGBM prints its parameters to 6 digits; a change through ``reset_parameter`` is
    compared with what was passed, to the last digit."""
    X, y = regression_data()
    with pytest.raises(ValueError, match=r"changed lambda_l2 from 1 to 1\.0000001 "):
        adapter.train(P, lightgbm.Dataset(X, y), ROUNDS,
                      callbacks=[make_callback("reset_parameter", "reg_lambda", 1.0, 1.0000001)])


def test_learning_rate_and_unchanged_values_are_lightgbm_train():
    """The learning rate under its aliases, set by ``lightgbm.reset_parameter`` or on the
    Booster, is followed; a callback that sets lambda_l2 (by an alias) to the value it has
    changes nothing and is not refused: with pruning off and nothing held out, the model is
    ``lightgbm.train``'s with the same callbacks."""
    X, y = regression_data()

    def callbacks():
        # round 4: eta stays 0.02 in params, so reset_parameter keeps the Booster's 0.07
        return [lightgbm.reset_parameter(eta=[0.5, 0.05, 0.3, 0.02, 0.02, 0.1]),
                on_booster({"shrinkage_rate": 0.07, "reg_lambda": 1.0}, 3, False)]

    ref = lightgbm.train(P, lightgbm.Dataset(X, y), ROUNDS, callbacks=callbacks())
    got = adapter.train(P, lightgbm.Dataset(X, y), ROUNDS, prune_threshold=None,
                        holdout_fraction=0.0, callbacks=callbacks())
    shrinkage = [t["shrinkage"] for t in got.dump_model()["tree_info"]]
    assert shrinkage[1:] == pytest.approx([0.05, 0.3, 0.02, 0.07, 0.1])
    np.testing.assert_allclose(got.predict(X, raw_score=True), ref.predict(X, raw_score=True),
                               rtol=0, atol=1e-12)
    # with pruning on, the same callbacks are taken
    adapter.train(P, lightgbm.Dataset(X, y), ROUNDS, callbacks=callbacks())


def test_balanced_bagging_set_under_an_alias_is_refused():
    """``params`` holds ``pos_bagging_fraction=1`` and a callback sets its alias
    ``pos_sub_row``: LightGBM applies the alias (it is all it was given); the hook had
    resolved the run's params, where the main name wins, and saw no change."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(float)
    params = {"objective": "binary", "verbose": -1, "num_threads": 1, "seed": 1,
              "bagging_freq": 1, "pos_bagging_fraction": 1.0}

    def schedule():
        return lightgbm.reset_parameter(pos_sub_row=[1.0, 1.0, 0.3, 0.3, 0.3])

    host = lightgbm.train(params, lightgbm.Dataset(X, y), 5, callbacks=[schedule()])
    assert parse_parameters(host.model_to_string())["pos_bagging_fraction"] == "0.3"
    with pytest.raises(UnsupportedModelError, match=r"balanced bagging "
                       r"\(pos_bagging_fraction=0.3\) set by a callback"):
        adapter.train(params, lightgbm.Dataset(X, y), 5, prune_threshold=None,
                      holdout_fraction=0.0, callbacks=[schedule()])


# min_sum_hessian_in_leaf = 0 with held-out rows: LightGBM counts rows from hessians, the
# held-out rows have none, and it aborts (Check failed: left_count > 0) partway
CRASHING = {"objective": "binary", "min_sum_hessian_in_leaf": 1e-3, "min_data_in_leaf": 1,
            "num_leaves": 255, "verbose": -1, "num_threads": 1}


def binary_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(float)
    return X, y


@pytest.mark.parametrize("route", [
    "reset_parameter/min_sum_hessian_in_leaf", "reset_parameter/min_child_weight",
    "after/min_hessian", "before/min_sum_hessian",
])
def test_zero_min_hessian_set_by_a_callback_is_refused_clearly(route):
    """As at the start: one ValueError naming it before LightGBM aborts (it raised
    LightGBM's ``Check failed: (best_split_info.left_count) > (0)`` in round 2); without
    held-out rows the hook is ``lightgbm.train`` with the same schedule."""
    how, key = route.split("/")

    def callback():
        if how == "reset_parameter":
            return lightgbm.reset_parameter(**{key: lambda i: 1e-3 if i == 0 else 0.0})
        return on_booster({key: 0.0}, *((1, True) if how == "before" else (0, False)))

    X, y = binary_data()
    host = lightgbm.train(CRASHING, lightgbm.Dataset(X, y), 20, callbacks=[callback()])
    assert host.current_iteration() == 20
    assert parse_parameters(host.model_to_string())["min_sum_hessian_in_leaf"] == "0"
    with pytest.raises(ValueError, match=r"min_sum_hessian_in_leaf \(or an alias such as "
                                         r"min_child_weight\) is 0, set by a callback before "
                                         r"round 1: with held-out rows .* set it > 0"):
        adapter.train(CRASHING, lightgbm.Dataset(X, y), 20, callbacks=[callback()])
    ours = adapter.train(CRASHING, lightgbm.Dataset(X, y), 20, holdout_fraction=0.0,
                         prune_threshold=None, callbacks=[callback()])
    np.testing.assert_allclose(ours.predict(X, raw_score=True), host.predict(X, raw_score=True),
                               rtol=1e-12, atol=1e-12)
