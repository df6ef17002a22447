"""The core training loop (``boosting.boost``) on a stand-in grower: the running scores add
each row's leaf value, held-out rows reach the grower with zero gradient, and node ids
outside the tree are refused before any unchecked gather."""

from __future__ import annotations

import numpy as np
import pytest

from unbiased_criteria.boosting import EvalSet, boost
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.importance import GainOptions
from unbiased_criteria.objectives import make_objective
from unbiased_criteria.trees import make_tree

NAN = np.nan


class _StumpGrower:
    """Every round a stump on the sign of x: leaf 1 (value -0.25) or leaf 2 (value 0.5)."""

    def __init__(self, x, x_eval, bad_id=None):
        self.x, self.x_eval, self.bad_id = x, x_eval, bad_id
        self.seen = []

    def grow(self, grad, hess):
        self.seen.append((grad.copy(), hess.copy()))
        return [make_tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [0.0, NAN, NAN],
                          [NAN, -0.25, 0.5])]

    def leaf_nodes(self, which):
        x = self.x if which == 0 else self.x_eval
        ids = np.where(x <= 0, 1, 2).astype(np.int32)[:, None]
        if self.bad_id is not None and which == 0:
            ids[3] = self.bad_id
        return ids


def _run(grower, y, y_eval, **options):
    return boost(grower, make_objective("squared_error"), y, None, num_boost_round=3,
                 split_score=SplitScore(), init_score=np.array([0.1]),
                 options=GainOptions(random_state=0, **options),
                 eval_sets=[EvalSet("valid", y_eval)])


def test_running_scores_add_leaf_values_and_hide_held_out_rows():
    rng = np.random.default_rng(0)
    x, x_eval = rng.normal(size=400), rng.normal(size=150)
    y, y_eval = rng.normal(size=400), rng.normal(size=150)
    for fraction, threshold in [(0.0, None), (0.25, None), (0.25, -1e300)]:
        grower = _StumpGrower(x, x_eval)
        result = _run(grower, y, y_eval, holdout_fraction=fraction, prune_threshold=threshold)
        step = np.where(x <= 0, -0.25, 0.5)
        want = 0.1 + step + step + step  # in the loop's order of additions
        np.testing.assert_array_equal(result.raw_train[:, 0], want)
        step_eval = np.where(x_eval <= 0, -0.25, 0.5)
        np.testing.assert_array_equal(result.raw_eval[0][:, 0],
                                      0.1 + step_eval + step_eval + step_eval)
        for grad, hess in grower.seen:  # a quarter of the rows hidden, or none
            assert int(np.sum(hess[:, 0] == 0)) == round(fraction * x.size)
            assert np.all(grad[hess[:, 0] == 0] == 0)
        assert (result.splits is not None) == (threshold is not None)


@pytest.mark.parametrize("bad_id", [-1, 3, 99])
def test_node_ids_outside_the_tree_are_refused(bad_id):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=50), rng.normal(size=50)
    with pytest.raises(RuntimeError, match="outside tree 0"):
        _run(_StumpGrower(x, x[:5], bad_id=bad_id), y, y[:5], holdout_fraction=0.0,
             prune_threshold=None)


class _TrackingGrower(_StumpGrower):
    """The stump grower with host scores: its own running sums from ``start``."""

    def __init__(self, x, x_eval, start):
        super().__init__(x, x_eval)
        self.scores = np.full((x.size, 1), start)
        self.leaf_calls = 0

    def grow(self, grad, hess):
        trees = super().grow(grad, hess)
        self.scores[:, 0] += np.where(self.x <= 0, -0.25, 0.5)
        return trees

    def leaf_nodes(self, which):
        self.leaf_calls += which == 0
        return super().leaf_nodes(which)

    def train_scores(self):
        return self.scores


@pytest.mark.parametrize("start", [0.1, 0.0])
@pytest.mark.parametrize("threshold", [None, -1e300])
def test_host_scores_used_only_from_the_same_start_and_without_scoring(start, threshold):
    rng = np.random.default_rng(2)
    x, x_eval, y = rng.normal(size=300), rng.normal(size=40), rng.normal(size=300)
    grower = _TrackingGrower(x, x_eval, start)
    result = _run(grower, y, y[:40], holdout_fraction=0.3, prune_threshold=threshold)
    used = start == 0.1 and threshold is None  # init_score is 0.1; scoring needs the leaves
    assert result.host_score_rounds == (3 if used else 0)
    assert grower.leaf_calls == (0 if used else 3)
    step = np.where(x <= 0, -0.25, 0.5)
    np.testing.assert_array_equal(result.raw_train[:, 0], 0.1 + step + step + step)


def _three_leaves():
    return make_tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 0, -1, -1, -1],
                     [0.0, -1.0, NAN, NAN, NAN], [NAN, NAN, 0.5, -0.5, -0.25])


class _ThreeLeafGrower(_StumpGrower):
    """Every round the same three-leaf tree: x <= 0, then x <= -1 on the left."""

    def grow(self, grad, hess):
        self.seen.append((grad.copy(), hess.copy()))
        return [_three_leaves()]

    def leaf_nodes(self, which):
        x = self.x if which == 0 else self.x_eval
        return np.select([x > 0, x <= -1], [2, 3], 4).astype(np.int32)[:, None]


@pytest.mark.parametrize("objective", ["squared_error", "binary_logistic"])
def test_each_round_records_score_tree_on_that_rounds_rows(objective):
    """What the loop records of each round's tree is score_tree on that round's rows, bit for
    bit: its fit rows' and held-out rows' leaves and gradients (at the scores before the
    round), the held-out rows in their drawn order with their jackknife blocks. Squared
    error has the same hessian on every row (the loop does not gather it), the log loss not."""
    from unbiased_criteria.boosting import HoldoutPlan
    from unbiased_criteria.importance import jackknife_blocks, score_tree
    from unbiased_criteria.replay import TreeStep

    rng = np.random.default_rng(4)
    n = 2000
    x, x_eval = rng.normal(size=n), rng.normal(size=10)
    y = (x + rng.normal(size=n) > 0).astype(float)
    obj = make_objective(objective)
    options = GainOptions(random_state=3, prune_threshold=-1e300, min_k=2, n_blocks=5)
    grower = _ThreeLeafGrower(x, x_eval)
    result = boost(grower, obj, y, None, num_boost_round=3, split_score=SplitScore(),
                   init_score=np.array([0.1]), options=options,
                   eval_sets=[EvalSet("valid", y[:10])])
    leaves = grower.leaf_nodes(0)[:, 0]
    step = np.array([NAN, NAN, 0.5, -0.5, -0.25])[leaves]
    blocks = jackknife_blocks(n, options)
    plan = HoldoutPlan.of(options)
    for it in range(3):
        g, h = obj.grad_hess(y, 0.1 + sum([step] * it) if it else np.full(n, 0.1), None)
        held = plan.held_rows(n, it, options)
        fit = np.setdiff1d(np.arange(n), held)
        tree = _three_leaves()
        want = score_tree(TreeStep(it, tree, leaves[fit], g[fit], h[fit], None,
                                   leaves[held], g[held], h[held], None),
                          SplitScore(), options, blocks=blocks[held], ranked=True)
        got = result.splits[result.splits["tree"] == it]
        inner = tree.internal_nodes
        np.testing.assert_array_equal(got["unbiased_gain"], want.unbiased[inner])
        np.testing.assert_array_equal(got["biased_gain"], want.biased[inner])
        np.testing.assert_array_equal(got["n_train"], want.n_train[inner])
        np.testing.assert_array_equal(result.jackknife[got.index], want.jackknife[:, inner].T)
    assert np.isfinite(result.splits["unbiased_gain"]).all()


@pytest.mark.parametrize("name, extra", [("smooth_absolute_error", {}),
                                         ("smooth_quantile", {"alpha": 0.3})])
def test_a_loss_scaled_each_round_takes_the_fit_rows_scale(name, extra):
    """XGBoost 3.4's smoothed L1 losses: each round's scale is a statistic of the rows that
    build the tree (the held-out rows are not among them), and those rows reach the grower
    with the gradients of that round's loss."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=300), rng.standard_t(3, size=300)
    y[rng.random(300) < 0.3] *= 8.0  # rows whose residuals would move the scale
    objective = make_objective(name, precision="float32", **extra)
    grower = _StumpGrower(x, x[:10])
    boost(grower, objective, y, None, num_boost_round=3, split_score=SplitScore(),
          init_score=np.array([0.1]), options=GainOptions(random_state=0, holdout_fraction=0.4,
                                                          prune_threshold=None),
          eval_sets=[])
    step = np.where(x <= 0, -0.25, 0.5)
    for r, (grad, hess) in enumerate(grower.seen):
        raw = (0.1 + r * step).astype(np.float32) if r < 2 else np.float32(0.1) + step + step
        fit = hess[:, 0] != 0
        at = objective.at_iteration(y[fit], raw[fit])
        g, h = at.grad_hess(y, raw)
        np.testing.assert_array_equal(grad[fit, 0], g[fit])
        np.testing.assert_array_equal(hess[fit, 0], h[fit])
        assert at.scale != objective.at_iteration(y, raw).scale  # all rows: another loss
