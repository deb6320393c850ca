"""The semantics of docs/semantics.md: IEEE arithmetic outside brackets, strong zeros, and what
they mean for derivatives (interpreter, unoptimized and optimized compiled code alike)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# One margin of 1216: exp(1216) overflows to inf.
X = np.array([[1.0, 2.0, 0.5], [-3.0, 1.0, 2.0], [400.0, 400.0, 32.0]])
Y = np.array([1.0, -1.0, -1.0])
W = np.array([1.0, 2.0, 0.5])


def naive_logistic(X, y, w):
    return np.sum(np.log(1 + np.exp(-y * (X @ w))))


def stable_logistic(X, y, w):
    return np.sum(np.logaddexp(0, -y * (X @ w)))


def exact_logistic_gradient(X, y, w):
    z = -y * (X @ w)
    return X.T @ (-y / (1 + np.exp(-z)))


def test_naive_logistic_loss_gradient_is_nan_not_wrong():
    assert (-Y * (X @ W))[2] == 1216.0
    for optimize in (False, True):
        g = ea.grad(naive_logistic, wrt=2, optimize=optimize)(X, Y, W)
        # 1 / (1 + inf) * inf: nan (before: a silently wrong finite gradient)
        assert np.isnan(g).all(), (optimize, g)


def test_logaddexp_logistic_loss_gradient_is_exact():
    want = exact_logistic_gradient(X, Y, W)
    assert np.isfinite(want).all()
    for optimize in (False, True):
        g = ea.grad(stable_logistic, wrt=2, optimize=optimize)
        np.testing.assert_allclose(g(X, Y, W), want, rtol=1e-12)
    value = ea.compile(stable_logistic)(X, Y, W)
    assert value == pytest.approx(float(stable_logistic(X, Y, W)), rel=1e-12)


def _all_three(src: str, **inputs):
    """The interpreter's value and compiled code's (unoptimized, optimized) of ``src``."""
    prog = ea.parse(src)
    want = evaluate(prog, **inputs)
    plain = compile_program(prog)(**inputs)
    opt = ea.compile(prog)(**inputs)
    return want, plain, opt


def test_bracket_guards_and_ieee_products_agree_across_stages():
    src = """
def f(x: [N], w: []):
    a[i: N] = (i < 1) * log(x[i])
    b[i: N] = w * x[i]
    return a, b
"""
    x = np.array([1.0, -1.0, 0.0])
    for got in _all_three(src, x=x, w=np.inf):
        a, b = got
        np.testing.assert_array_equal(a, [0.0, 0.0, 0.0])  # log(-1), log(0) guarded away
        np.testing.assert_array_equal(b, [np.inf, -np.inf, np.nan])  # inf * 0.0 = nan


def test_derivative_of_a_guarded_term_is_guarded():
    # d/dx Σ_i [i < 1] log(x[i]) is 1/x[0] at 0 and 0 elsewhere, even where log is nan.
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N]((i < 1) * log(x[i]))")
    x = np.array([2.0, -1.0, 0.0])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.grad(prog, optimize=optimize)(x), [0.5, 0.0, 0.0])


def test_structurally_zero_derivative_is_dropped_not_multiplied_by_inf():
    # d/dx (c * x) = c, with c = inf: the product rule's dc * x term is not computed (0 * x
    # would be nan at x = 0... and dc * x with dc = 0 at x = inf).
    prog = ea.parse("def f(c: [], x: [N]):\n    return Sum[i: N](c * x[i])")
    for optimize in (False, True):
        g = ea.grad(prog, wrt="x", optimize=optimize)
        np.testing.assert_array_equal(g(np.inf, np.array([0.0, np.inf])), [np.inf, np.inf])


@pytest.mark.parametrize("fn, x, want", [
    ("sigmoid", -1000.0, 0.0),
    ("sigmoid", 1000.0, 0.0),
    ("tanh", 400.0, 0.0),
    ("softplus", 1000.0, 1.0),
    ("softplus", -1000.0, 0.0),
    ("log1p", -0.5, 2.0),
    ("expm1", 1e-10, 1.0 + 1e-10),
])
def test_derivatives_stay_finite_where_the_function_is(fn, x, want):
    prog = ea.parse(f"def f(x: [N]):\n    return Sum[i: N]({fn}(x[i]))")
    for optimize in (False, True):
        g = ea.grad(prog, optimize=optimize)(np.array([x]))
        assert g[0] == pytest.approx(want, abs=1e-300), (optimize, g)


def test_logaddexp_derivative_is_stable_in_both_arguments():
    prog = ea.parse("def f(x: [N], y: [N]):\n    return Sum[i: N](logaddexp(x[i], y[i]))")
    x, y = np.array([1000.0, -1000.0, 0.5]), np.array([0.0, 0.0, -0.25])
    sig = 1 / (1 + np.exp(-(x - y)))
    for optimize in (False, True):
        gx, gy = ea.grad(prog, wrt=("x", "y"), optimize=optimize)(x, y)
        np.testing.assert_allclose(gx, sig, rtol=1e-12)
        np.testing.assert_allclose(gy, 1 - sig, rtol=1e-12)


def test_where_is_a_select_in_values_and_gradients():
    def f(x):
        return np.sum(np.where(x > 0, np.sqrt(x), -x))

    x = np.array([4.0, -1.0, 0.0, 2.25])
    assert ea.compile(f)(x) == pytest.approx(2 + 1 + 0 + 1.5)
    for optimize in (False, True):
        g = ea.grad(f, optimize=optimize)(x)
        np.testing.assert_allclose(g, [0.25, -1.0, -1.0, 1 / 3])


def test_stored_zero_times_inf_is_nan_everywhere():
    src = """
def f(w: []):
    t[i: 2] = (i == 0) * 1.0
    return Sum[i: 2](w * t[i])
"""
    want, plain, _ = _all_three(src, w=np.inf)
    assert np.isnan(want) and np.isnan(plain)


@pytest.mark.parametrize("x", [[1.0, -1.0], [2.0, -1.0], [0.0, 1.0]])
def test_factoring_an_infinite_weight_out_of_a_sum_is_not_done(x):
    # Σ_i w * x[i] with w = inf: the optimizer keeps the product under the sum (w is not known
    # to be finite), so optimized code gives the interpreter's nan, not inf * Σ x = inf or nan.
    src = """
def f(w: [], x: [N], v: [N], A: [N, N]):
    s = Sum[i: N](w * x[i])
    y[i: N] = Sum[j: N](v[i] * A[i, j])
    return s, y
"""
    x = np.array(x)
    v = np.array([np.inf, 1.0])
    a = np.array([[1.0, -1.0], [2.0, 3.0]])
    want, plain, opt = _all_three(src, w=np.inf, x=x, v=v, A=a)
    for got in (plain, opt):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert np.isnan(want[1][0])  # inf * 1 + inf * -1


@pytest.mark.parametrize("body", [
    "log1p(x[i] ** 2) * y[i]",
    "expm1(x[i]) * y[i]",
    "logaddexp(x[i], y[i] * 3)",
    "softplus(x[i] * y[i])",
    "logaddexp(softplus(x[i]), expm1(y[i]))",
])
def test_new_builtin_gradients_match_central_differences(body):
    prog = ea.parse(f"def f(x: [N], y: [N]):\n    return Sum[i: N]({body})")
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-2, 2, 5), rng.uniform(-2, 2, 5)

    def value(xv, yv):
        return evaluate(prog, xv, yv)

    h = 1e-6
    for optimize in (False, True):
        gx, gy = ea.grad(prog, wrt=("x", "y"), optimize=optimize)(x, y)
        for k in range(5):
            e = np.zeros(5)
            e[k] = h
            assert gx[k] == pytest.approx((value(x + e, y) - value(x - e, y)) / (2 * h), rel=1e-6,
                                          abs=1e-8)
            assert gy[k] == pytest.approx((value(x, y + e) - value(x, y - e)) / (2 * h), rel=1e-6,
                                          abs=1e-8)


def test_new_builtins_in_the_numpy_front_end():
    def f(x, y):
        return np.sum(np.log1p(x * x) + np.expm1(y) + np.logaddexp(x, y))

    rng = np.random.default_rng(4)
    x, y = rng.normal(size=4), rng.normal(size=4)
    assert ea.compile(f)(x, y) == pytest.approx(float(f(x, y)), rel=1e-12)
    gx, gy = ea.grad(f, wrt=(0, 1))(x, y)
    sig = 1 / (1 + np.exp(y - x))
    np.testing.assert_allclose(gx, 2 * x / (1 + x * x) + sig, rtol=1e-12)
    np.testing.assert_allclose(gy, np.exp(y) + 1 - sig, rtol=1e-12)
