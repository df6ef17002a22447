"""Objectives: gradients and hessians against numerical derivatives, host conventions,
label checks and init scores."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from unbiased_criteria.objectives import OBJECTIVES, make_objective

F64 = {"precision": "float64"}


def f32(a):
    """Values exactly representable in float32 (the objectives read labels as float32)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def num_derivs(loss, y, F, eps1=1e-6, eps2=1e-4):
    """Central first and second differences of a per-row loss, in float64."""
    g = (loss(y, F + eps1) - loss(y, F - eps1)) / (2 * eps1)
    h = (loss(y, F + eps2) - 2 * loss(y, F) + loss(y, F - eps2)) / eps2**2
    return g, h


def num_derivs_multi(loss, y, F, eps1=1e-6, eps2=1e-4):
    """Per-column first and diagonal second differences of a multiclass per-row loss."""
    g, h = np.empty_like(F), np.empty_like(F)
    for k in range(F.shape[1]):
        e1, e2 = np.zeros_like(F), np.zeros_like(F)
        e1[:, k], e2[:, k] = eps1, eps2
        g[:, k] = (loss(y, F + e1) - loss(y, F - e1)) / (2 * eps1)
        h[:, k] = (loss(y, F + e2) - 2 * loss(y, F) + loss(y, F - e2)) / eps2**2
    return g, h


def close(a, b, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), b, rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)
N = 200
F_REAL = RNG.uniform(-3, 3, N)


# --------------------------------------------------------------------------- independent losses
# For objectives without a ``loss`` method: the textbook loss each one is the gradient of.


def _sig(z):
    return 1 / (1 + np.exp(-z))


def tweedie_loss(rho):
    return lambda y, F: -y * np.exp((1 - rho) * F) / (1 - rho) + np.exp((2 - rho) * F) / (2 - rho)


def pseudo_huber_loss(d):
    return lambda y, F: d * d * (np.sqrt(1 + ((F - y) / d) ** 2) - 1)


def fair_loss(c):
    return lambda y, F: c * np.abs(F - y) - c * c * np.log1p(np.abs(F - y) / c)


def cross_entropy_loss(y, F):
    return -(y * np.log(_sig(F)) + (1 - y) * np.log(1 - _sig(F)))


def squared_log_loss(y, F):
    return 0.5 * (np.log1p(F) - np.log1p(y)) ** 2


def ova_loss(K, s):
    def loss(y, F):
        onehot = y[:, None] == np.arange(K)
        return np.where(onehot, np.logaddexp(0, -s * F), np.logaddexp(0, s * F)).sum(axis=1)
    return loss


# --------------------------------------------------------------------------- gradients


def labels(name, n=N, rng=None):
    rng = rng or np.random.default_rng(1)
    if name in ("binary_logistic",):
        return rng.integers(0, 2, n).astype(np.float64)
    if name in ("poisson",):
        return rng.poisson(2.0, n).astype(np.float64)
    if name in ("gamma", "tweedie"):
        return f32(rng.gamma(2.0, 1.5, n))
    if name == "cross_entropy":
        return f32(rng.uniform(0, 1, n))
    if name == "squared_log_error":
        return f32(rng.uniform(0, 5, n))
    return f32(rng.normal(0, 2, n))




@pytest.mark.parametrize(
    "name, params",
    [
        ("squared_error", {}),
        ("binary_logistic", {}),
        ("binary_logistic", {"sigmoid": 2.0}),
        ("binary_logistic", {"sigmoid": 0.5}),
        ("poisson", {"max_delta_step": 0.0}),
        ("gamma", {}),
    ],
)
def test_gradient_hessian_are_derivatives_of_loss(name, params):
    obj = make_objective(name, **params, **F64)
    y, F = labels(name), F_REAL.copy()
    if name in ("poisson", "gamma"):
        F = F / 2
    g, h = obj.grad_hess(y, F)
    gn, hn = num_derivs(obj.loss, y, F)
    close(g, gn)
    close(h, hn, rtol=1e-4, atol=1e-5)


def test_squared_error_host_convention():
    """Both hosts: gradient F - y and hessian 1 (derivatives of (F - y)^2 / 2)."""
    obj = make_objective("squared_error", **F64)
    y, F = labels("squared_error"), F_REAL
    g, h = obj.grad_hess(y, F)
    gn, hn = num_derivs(lambda y, F: 0.5 * (F - y) ** 2, y, F)
    close(g, gn)
    close(h, hn, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name, params, loss",
    [
        ("tweedie", {"variance_power": 1.5}, tweedie_loss(1.5)),
        ("tweedie", {"variance_power": 1.2}, tweedie_loss(1.2)),
        ("pseudo_huber", {"slope": 1.0}, pseudo_huber_loss(1.0)),
        ("pseudo_huber", {"slope": 2.5}, pseudo_huber_loss(2.5)),
        ("fair", {"c": 1.0}, fair_loss(1.0)),
        ("fair", {"c": 0.3}, fair_loss(0.3)),
        ("cross_entropy", {}, cross_entropy_loss),
        ("squared_log_error", {}, squared_log_loss),
    ],
)
def test_gradient_hessian_of_objectives_without_loss_method(name, params, loss):
    obj = make_objective(name, **params, **F64)
    y, F = labels(name), F_REAL.copy()
    if name == "tweedie":
        F = F / 2
    if name == "squared_log_error":
        F = f32(np.random.default_rng(2).uniform(0, 5, N))  # the loss needs F > -1
    g, h = obj.grad_hess(y, F)
    gn, hn = num_derivs(loss, y, F)
    close(g, gn)
    if name == "squared_log_error":
        hn = np.maximum(hn, 1e-6)  # documented floor of XGBoost's hessian
    close(h, hn, rtol=1e-4, atol=1e-5)


def _kinked_rows():
    """Labels and scores at least 0.05 away from each other (away from the kinks)."""
    y = labels("huber")
    side = np.where(np.random.default_rng(3).random(N) < 0.5, -1, 1)
    return y, y + side * np.random.default_rng(4).uniform(0.05, 3, N)


def test_huber_and_mape_gradients_and_unit_hessian():
    """Non-smooth losses: gradients match away from the kinks, hessians are the hosts' 1."""
    y, F = _kinked_rows()
    alpha = 0.9
    huber = make_objective("huber", alpha=alpha, **F64)
    gn, _ = num_derivs(lambda y, F: np.where(np.abs(F - y) <= alpha, 0.5 * (F - y) ** 2,
                                             alpha * np.abs(F - y) - 0.5 * alpha**2), y, F)
    g, h = huber.grad_hess(y, F)
    close(g, gn)
    np.testing.assert_array_equal(h, 1)
    mape = make_objective("mape", **F64)
    gn, _ = num_derivs(lambda y, F: np.abs(F - y) / np.maximum(1, np.abs(y)), y, F)
    g, h = mape.grad_hess(y, F)
    close(g, gn)
    np.testing.assert_array_equal(h, 1)




@pytest.mark.parametrize("alpha", [
    0.1, 0.2, 0.9,
    0.5,
])
def test_quantile_gradient_is_the_pinball_derivative(alpha):
    """LightGBM RegressionQuantileloss / XGBoost quantile: (1 - alpha) if F >= y else -alpha,
    hessian 1, for every alpha."""
    y, F = _kinked_rows()
    quant = make_objective("quantile", alpha=alpha, **F64)
    gn, _ = num_derivs(lambda y, F: np.where(F >= y, (1 - alpha) * (F - y), alpha * (y - F)),
                       y, F)
    g, h = quant.grad_hess(y, F)
    close(g, gn)
    np.testing.assert_array_equal(h, 1)
    # at F == y the hosts take the (1 - alpha) branch
    g0, _ = quant.grad_hess(np.array([1.5]), np.array([1.5]))
    assert g0[0] == pytest.approx(1 - alpha)


@pytest.mark.parametrize("K, factor", [(3, None), (3, 2.0), (4, 4 / 3), (2, 2.0)])
def test_softmax_gradient_and_hessian_factor(K, factor):
    params = {"n_classes": K} | ({} if factor is None else {"hessian_factor": factor})
    obj = make_objective("multiclass_softmax", **params, **F64)
    factor = obj.hessian_factor
    if K == 3 and "hessian_factor" not in params:
        assert factor == pytest.approx(K / (K - 1))  # LightGBM's default K/(K-1)
    rng = np.random.default_rng(5)
    y = rng.integers(0, K, N).astype(np.float64)
    F = rng.normal(0, 2, (N, K))
    g, h = obj.grad_hess(y, F)
    assert g.shape == h.shape == (N, K) and obj.n_outputs == K
    gn, hn = num_derivs_multi(obj.loss, y, F)
    close(g, gn)
    close(h, factor * hn, rtol=1e-4, atol=1e-5)  # the host's factor times p(1-p)
    close(g.sum(axis=1), 0, atol=1e-6)


@pytest.mark.parametrize("s", [1.0, 2.0])
def test_one_vs_rest_gradient_and_hessian(s):
    K = 4
    obj = make_objective("multiclass_ova", n_classes=K, sigmoid=s, **F64)
    rng = np.random.default_rng(6)
    y = rng.integers(0, K, N).astype(np.float64)
    F = rng.normal(0, 2, (N, K))
    g, h = obj.grad_hess(y, F)
    assert g.shape == h.shape == (N, K) and obj.n_outputs == K
    gn, hn = num_derivs_multi(ova_loss(K, s), y, F)
    close(g, gn)
    close(h, hn, rtol=1e-4, atol=1e-5)


def test_poisson_hessian_convention():
    """Both hosts use exp(F + max_delta_step) as the hessian (not the true exp(F))."""
    y, F = labels("poisson"), F_REAL / 2
    for mds in (0.7, 0.0, 0.3):
        obj = make_objective("poisson", max_delta_step=mds, **F64)
        g, h = obj.grad_hess(y, F)
        gn, hn = num_derivs(obj.loss, y, F)
        close(g, gn)
        close(h, np.exp(mds) * hn, rtol=1e-4, atol=1e-5)
    assert make_objective("poisson").max_delta_step == 0.7


def test_logistic_conventions():
    y = labels("binary_logistic")
    F = F_REAL
    # pos_weight / neg_weight multiply the positive / negative rows
    base = make_objective("binary_logistic", **F64)
    g0, h0 = base.grad_hess(y, F)
    w = make_objective("binary_logistic", pos_weight=3.0, neg_weight=0.5, **F64)
    g1, h1 = w.grad_hess(y, F)
    factor = np.where(y > 0, 3.0, 0.5)
    close(g1, factor * g0)
    close(h1, factor * h0)
    # hessian floor (XGBoost's 1e-16) at saturated scores
    floor = make_objective("binary_logistic", hessian_floor=1e-16, precision="float32")
    _, h = floor.grad_hess(np.array([1.0, 0.0]), np.array([60.0, -60.0]))
    assert np.all(h >= np.float32(1e-16))
    # float32 (XGBoost) and float64 (LightGBM) arithmetic agree to float32 rounding
    g32, h32 = make_objective("binary_logistic", precision="float32").grad_hess(y, F)
    close(g32, g0, rtol=1e-5, atol=1e-6)
    close(h32, h0, rtol=1e-5, atol=1e-6)


def test_sample_weights_multiply_gradient_and_hessian():
    rng = np.random.default_rng(7)
    w = f32(rng.uniform(0.1, 3, N))
    for name in sorted(OBJECTIVES):
        obj = make_objective(name, **F64)
        y = labels(name)
        if obj.n_outputs > 1:
            y = rng.integers(0, obj.n_outputs, N).astype(np.float64)
            F = rng.normal(size=(N, obj.n_outputs))
            ww = w[:, None]
        else:
            F = f32(rng.uniform(0.1, 2, N)) if name == "squared_log_error" else F_REAL / 2
            ww = w
        if obj.iteration_scaled:  # weights also move the scale the training rows set
            obj = obj.at_iteration(y, F)
        g, h = obj.grad_hess(y, F)
        gw, hw = obj.grad_hess(y, F, w)
        close(gw, ww * g, rtol=1e-5, atol=1e-6)
        close(hw, ww * h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_output_is_float32_with_the_right_shape(name, precision):
    obj = make_objective(name, precision=precision)
    K = obj.n_outputs
    rng = np.random.default_rng(8)
    if K > 1:
        y, F = rng.integers(0, K, 50).astype(np.float64), rng.normal(size=(50, K))
    else:
        y, F = labels(name, 50), rng.uniform(0.1, 1, 50)
    g, h = obj.grad_hess(y, F)
    assert g.dtype == np.float32 and h.dtype == np.float32
    assert g.shape == h.shape == ((50,) if K == 1 else (50, K))
    assert np.isfinite(g).all() and np.isfinite(h).all()


def test_labels_are_read_as_float32():
    """A label is rounded to float32 before use (both hosts store labels so)."""
    obj = make_objective("squared_error", **F64)
    y = np.array([0.1])  # not representable in float32
    g, _ = obj.grad_hess(y, np.array([0.0]))
    assert g[0] == np.float32(-np.float64(np.float32(0.1)))


def test_custom_objective():
    def func(y, raw, weight):
        return raw - y, np.full_like(raw, 2.0)

    obj = make_objective(func)
    g, h = obj.grad_hess(np.array([1.0, 2.0]), np.array([0.5, 0.5]))
    assert g.dtype == np.float32 and g.tolist() == [-0.5, -1.5] and h.tolist() == [2.0, 2.0]
    multi = make_objective(lambda y, raw, w: (raw.ravel(), raw.ravel()), n_outputs=3)
    g, _ = multi.grad_hess(np.zeros(4), np.ones((4, 3)))
    assert g.shape == (4, 3) and multi.n_outputs == 3


def test_custom_objective_with_a_wrong_result_names_the_objective():
    """A callable that returns one value or the wrong number of values used to fail inside
    numpy (cannot unpack / cannot reshape); the error names the objective and what it
    returned."""
    def single(y, raw, weight):
        return raw - y

    with pytest.raises(ValueError, match=r"'custom \(single\)' must return \(grad, hess\)"):
        make_objective(single).grad_hess(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="must return"):
        make_objective(lambda y, raw, w: None).grad_hess(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match=r"returned 2 gradients for raw scores of shape \(3,\)"):
        make_objective(lambda y, raw, w: (np.zeros(2), np.ones(3))).grad_hess(np.zeros(3),
                                                                            np.zeros(3))
    with pytest.raises(ValueError, match="returned 4 hessians"):
        make_objective(lambda y, raw, w: (np.zeros(3), np.ones(4))).grad_hess(np.zeros(3),
                                                                            np.zeros(3))


def test_custom_objective_cannot_change_the_callers_scores():
    """The callers hand over their running raw scores: a callable that writes into its
    ``raw_score`` argument gets a copy, so post-hoc importance is the same either way."""
    def scribbler(y, raw, weight):
        g, h = raw - y, np.ones_like(raw)
        raw += 1e6
        return g, h

    raw = np.array([0.5, 0.25])
    obj = make_objective(scribbler)
    obj.grad_hess(np.zeros(2), raw)
    assert raw.tolist() == [0.5, 0.25]


def test_unknown_objective_name():
    with pytest.raises(ValueError, match="objective must be one of"):
        make_objective("not_a_loss")


# --------------------------------------------------------------------------- labels


BAD_LABELS = [
    ("squared_error", {}, [np.nan]),
    ("squared_error", {}, [np.inf]),
    ("binary_logistic", {}, [2.0]),
    ("binary_logistic", {}, [-1.0]),
    ("binary_logistic", {}, [0.5]),
    ("binary_logistic", {}, [np.nan]),
    ("multiclass_softmax", {"n_classes": 3}, [3.0]),
    ("multiclass_softmax", {"n_classes": 3}, [-1.0]),
    ("multiclass_softmax", {"n_classes": 3}, [1.5]),
    ("multiclass_softmax", {"n_classes": 3}, [np.nan]),
    ("poisson", {}, [-1.0]),
    ("poisson", {}, [np.nan]),
    ("gamma", {}, [0.0]),
    ("gamma", {}, [-2.0]),
    ("cross_entropy", {}, [1.5]),
    ("cross_entropy", {}, [-0.1]),
    ("squared_log_error", {}, [-1.0]),
    ("tweedie", {}, [-1.0]),
    ("multiclass_ova", {"n_classes": 3}, [3.0]),
    ("multiclass_ova", {"n_classes": 3}, [np.nan]),
]


@pytest.mark.parametrize("name, params, bad", BAD_LABELS)
def test_check_labels_rejects_out_of_range_naming_the_argument(name, params, bad):
    obj = make_objective(name, **params)
    y = np.concatenate([[1.0, 0.0, 1.0], bad]) if name != "gamma" else np.array([1.0] + bad)
    with pytest.raises(ValueError, match="y_valid"):
        obj.check_labels(y, "y_valid")
    with pytest.raises(ValueError, match="my_labels"):
        obj.check_labels(y, "my_labels")


@pytest.mark.parametrize(
    "name, params, good",
    [
        ("squared_error", {}, [-3.0, 0.0, 5.5]),
        ("binary_logistic", {}, [0.0, 1.0, 1.0]),
        ("multiclass_softmax", {"n_classes": 3}, [0.0, 1.0, 2.0]),
        ("poisson", {}, [0.0, 3.0]),
        ("gamma", {}, [0.1, 3.0]),
        ("cross_entropy", {}, [0.0, 0.3, 1.0]),
        ("tweedie", {}, [0.0, 2.0]),
        ("multiclass_ova", {"n_classes": 3}, [0.0, 2.0]),
    ],
)
def test_check_labels_accepts_valid_labels(name, params, good):
    make_objective(name, **params).check_labels(np.array(good), "y_train")


# --------------------------------------------------------------------------- init scores


def _weights(n, weighted):
    return f32(np.random.default_rng(9).uniform(0.2, 2.0, n)) if weighted else None


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "name, params",
    [
        ("squared_error", {}),
        ("binary_logistic", {}),
        ("binary_logistic", {"sigmoid": 2.0}),
        ("poisson", {}),
        ("gamma", {}),
    ],
)
def test_init_score_minimises_the_loss(name, params, weighted):
    obj = make_objective(name, **params)
    rng = np.random.default_rng(10)
    y = labels(name, 300, rng)
    if name == "binary_logistic":
        y = (rng.random(300) < 0.3).astype(np.float64)
    w = _weights(y.size, weighted)
    ww = np.ones_like(y) if w is None else w
    init = obj.init_score(y, w)
    assert init.shape == (1,)

    def risk(c):
        return float(np.sum(ww * obj.loss(y, np.full_like(y, c))))

    best = optimize.minimize_scalar(risk, bracket=(-2.0, 2.0), tol=1e-12)
    assert init[0] == pytest.approx(best.x, abs=2e-6)
    assert risk(init[0]) <= risk(best.x) + 1e-9 * abs(risk(best.x))


@pytest.mark.parametrize("weighted", [False, True])
def test_tweedie_and_cross_entropy_init_scores(weighted):
    """Objectives without loss method, against the test's own losses."""
    rng = np.random.default_rng(11)
    for name, loss in (("tweedie", tweedie_loss(1.5)), ("cross_entropy", cross_entropy_loss)):
        obj = make_objective(name)
        y = labels(name, 300, rng)
        w = _weights(y.size, weighted)
        ww = np.ones_like(y) if w is None else w
        best = optimize.minimize_scalar(
            lambda c, y=y, ww=ww, loss=loss: float(np.sum(ww * loss(y, np.full_like(y, c)))),
            bracket=(-1.0, 1.0), tol=1e-12)
        assert obj.init_score(y, w)[0] == pytest.approx(best.x, abs=2e-6)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("K", [3, 5])
def test_softmax_init_score_minimises_the_loss(K, weighted):
    obj = make_objective("multiclass_softmax", n_classes=K)
    rng = np.random.default_rng(12)
    y = rng.choice(K, 400, p=np.arange(1, K + 1) / np.arange(1, K + 1).sum()).astype(float)
    w = _weights(y.size, weighted)
    ww = np.ones_like(y) if w is None else w
    init = obj.init_score(y, w)
    assert init.shape == (K,)

    def risk(c):
        return float(np.sum(ww * obj.loss(y, np.tile(c, (y.size, 1)))))

    best = optimize.minimize(risk, np.zeros(K), method="BFGS", options={"gtol": 1e-10})
    assert risk(init) <= best.fun + 1e-9 * abs(best.fun)
    # the raw scores are defined up to a constant: compare the probabilities
    p_init, p_best = np.exp(init - init.max()), np.exp(best.x - best.x.max())
    np.testing.assert_allclose(p_init / p_init.sum(), p_best / p_best.sum(), atol=1e-5)


def test_one_vs_rest_init_score_minimises_each_class_loss():
    K = 3
    obj = make_objective("multiclass_ova", n_classes=K)
    y = np.random.default_rng(13).integers(0, K, 300).astype(float)
    init = obj.init_score(y)
    for k in range(K):
        yk = (y == k).astype(float)
        best = optimize.minimize_scalar(
            lambda c, yk=yk: float(np.sum(np.where(yk > 0, np.logaddexp(0, -c),
                                                   np.logaddexp(0, c)))),
            bracket=(-1.0, 1.0), tol=1e-12)
        assert init[k] == pytest.approx(best.x, abs=2e-6)


def test_predict_is_the_inverse_link():
    F = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(make_objective("binary_logistic").predict(F), _sig(F))
    np.testing.assert_allclose(make_objective("binary_logistic", sigmoid=2.0).predict(F),
                               _sig(2 * F))
    np.testing.assert_allclose(make_objective("poisson").predict(F), np.exp(F))
    np.testing.assert_allclose(make_objective("squared_error").predict(F), F)
    P = make_objective("multiclass_softmax").predict(np.stack([F, 0 * F, -F], axis=1))
    np.testing.assert_allclose(P.sum(axis=1), 1)


# --------------------------------------------------------------------------- host fidelity

LGB_EPS = float(np.float32(1e-15))  # LightGBM's kEpsilon = 1e-15f (include/LightGBM/meta.h)


@pytest.mark.parametrize(
    "name, params, y, want",
    [
        ("binary_logistic", {}, [0.0, 0.0, 0.0], [np.log(LGB_EPS / (1 - LGB_EPS))]),
        ("multiclass_ova", {"n_classes": 3}, [0.0, 1.0, 1.0],
         [np.log(1 / 2), np.log(2), np.log(LGB_EPS / (1 - LGB_EPS))]),
        ("multiclass_softmax", {"n_classes": 3}, [0.0, 1.0, 1.0],
         [np.log(1 / 3), np.log(2 / 3), np.log(LGB_EPS)]),
    ],
)
def test_init_score_of_an_absent_class_is_lightgbms(name, params, y, want):
    with np.errstate(divide="ignore"):
        got = make_objective(name, **params).init_score(np.array(y))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_logistic_sigmoid_in_float32_precision():
    obj = make_objective("binary_logistic", sigmoid=2.0, precision="float32")
    y, F = labels("binary_logistic"), F_REAL
    g, h = obj.grad_hess(y, F)
    gn, hn = num_derivs(obj.loss, y, F)
    close(g, gn, rtol=1e-4, atol=1e-5)
    close(h, hn, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_labels_read_once_give_the_same_gradients(name):
    """A loop converts labels and weights once (``read_labels``) instead of on every call:
    every built-in objective then gives the very gradients and hessians it gives from the
    labels as passed (float64 labels that are not float32 values, so each call rounds them)."""
    rng = np.random.default_rng(3)
    params = {"n_classes": 3} if name.startswith("multiclass") else {}
    obj = make_objective(name, **params)
    if name.startswith("multiclass"):
        y, F = rng.integers(0, 3, N).astype(np.float64), rng.normal(size=(N, 3))
    else:
        y = labels(name).astype(np.float64) + (rng.normal(size=N) * 1e-9
                                                 if name not in ("binary_logistic", "poisson")
                                                 else 0.0)
        y = np.clip(y, 1e-3, None) if name in ("gamma", "tweedie", "squared_log_error") else y
        y = np.clip(y, 0.0, 1.0) if name == "cross_entropy" else y
        F = F_REAL.copy() / 2
    w = rng.uniform(0.5, 2.0, N)
    y_read, w_read = obj.read_labels(y, w)
    assert y_read.dtype == np.float32 and w_read.dtype == np.float32
    for weight, weight_read in ((None, None), (w, w_read)):
        want = obj.grad_hess(y, F, weight)
        got = obj.grad_hess(y_read, F, weight_read)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_read_labels_leaves_custom_objectives_their_labels():
    from unbiased_criteria.objectives import CustomObjective, Float64Objective

    y, w = np.array([0.1, 0.2]), np.array([1.0, 2.0])
    for obj in (CustomObjective(func=lambda y, raw, w: (raw - y, np.ones_like(y))),
                Float64Objective()):
        got = obj.read_labels(y, w)
        assert got[0] is y and got[1] is w


def test_multi_target_applies_the_loss_column_by_column():
    from unbiased_criteria.objectives import MultiTarget

    rng = np.random.default_rng(3)
    y = rng.normal(size=(50, 3))
    raw = rng.normal(size=(50, 3))
    w = rng.uniform(0.5, 2.0, 50)
    for name, yy in (("squared_error", y), ("binary_logistic", (y > 0).astype(float))):
        base = make_objective(name, precision="float32")
        multi = MultiTarget(base=base, n_targets=3)
        assert multi.n_outputs == multi.label_columns == 3
        assert multi.precision == "float32"
        for weight in (None, w):
            g, h = multi.grad_hess(yy, raw, weight)
            assert g.shape == h.shape == (50, 3) and g.dtype == np.float32
            for j in range(3):  # each column is the single-output loss, bit for bit
                gj, hj = base.grad_hess(yy[:, j], raw[:, j], weight)
                np.testing.assert_array_equal(g[:, j], gj)
                np.testing.assert_array_equal(h[:, j], hj)
        np.testing.assert_array_equal(
            multi.init_score(yy, w), [base.init_score(yy[:, j], w)[0] for j in range(3)])
    with pytest.raises(ValueError, match="cannot be applied target by target"):
        MultiTarget(base=make_objective("absolute_error"), n_targets=2)
    with pytest.raises(ValueError, match="n_targets must be at least 2"):
        MultiTarget(base=make_objective("squared_error"), n_targets=1)
