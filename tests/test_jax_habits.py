"""The first habits of a ``jax.grad`` user, written as that user would, checked against numbers
(closed forms and central finite differences)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea

RNG = np.random.default_rng(7)


def fd_grad(f, args, k, eps=1e-6):
    """Central finite differences of scalar ``f`` in argument ``k``."""
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        a = list(args)
        a[k] = up
        fu = f(*a)
        a[k] = down
        g[i] = (fu - f(*a)) / (2 * eps)
    return g


def loss(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


W0 = RNG.standard_normal((3, 4))
X0 = RNG.standard_normal(4)


def test_argnums_int_and_tuple():
    gx = ea.grad(loss, argnums=1)(W0, X0)
    np.testing.assert_allclose(gx, fd_grad(loss, (W0, X0), 1), rtol=1e-5, atol=1e-8)
    gW, gx2 = ea.grad(loss, argnums=(0, 1))(W0, X0)
    np.testing.assert_allclose(gW, fd_grad(loss, (W0, X0), 0), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gx2, gx, rtol=1e-12)


def test_argnums_and_wrt_together_or_badly_typed_are_type_errors():
    with pytest.raises(TypeError, match="not both"):
        ea.grad(loss, 0, argnums=1)
    with pytest.raises(TypeError, match="argnums"):
        ea.grad(loss, argnums="x")


def test_has_aux_returns_gradient_and_aux():
    def f(x):
        y = x * x
        return np.sum(y), y

    g, aux = ea.grad(f, has_aux=True)(X0)
    np.testing.assert_allclose(g, 2 * X0)
    np.testing.assert_allclose(aux, X0 * X0)


def test_value_and_grad_and_with_aux():
    value, g = ea.value_and_grad(loss)(W0, X0)
    assert value == pytest.approx(loss(W0, X0))
    np.testing.assert_allclose(g, fd_grad(loss, (W0, X0), 0), rtol=1e-5, atol=1e-8)

    def f(x):
        return np.sum(np.exp(x)), np.max(x)

    (value, aux), g = ea.value_and_grad(f, has_aux=True)(X0)
    assert value == pytest.approx(np.sum(np.exp(X0)))
    assert aux == pytest.approx(np.max(X0))
    np.testing.assert_allclose(g, np.exp(X0))


def test_lambda():
    g = ea.grad(lambda x: np.sum(np.sin(x)))
    np.testing.assert_allclose(g(X0), np.cos(X0))
    # two lambdas on one line with different parameter names
    g1, g2 = ea.grad(lambda a: np.sum(a * a)), ea.grad(lambda b: np.sum(3 * b))
    np.testing.assert_allclose(g1(X0), 2 * X0)
    np.testing.assert_allclose(g2(X0), 3 * np.ones_like(X0))


def test_closure_over_a_number_and_an_array():
    scale = 2.5
    A = RNG.standard_normal((4, 4))

    def f(x):
        return scale * np.sum((A @ x) ** 2)

    g = ea.grad(f)
    np.testing.assert_allclose(g(X0), 2 * scale * A.T @ (A @ X0), rtol=1e-10)
    A[:] = np.eye(4)  # the captured array is read again at each call, as a constant
    np.testing.assert_allclose(g(X0), 2 * scale * X0, rtol=1e-10)


def make_model(W):
    return lambda x: np.sum(W @ x)


def test_closure_from_a_factory_of_a_captured_matrix_of_another_shape():
    W = RNG.standard_normal((5, 4))
    g = ea.grad(make_model(W))
    np.testing.assert_allclose(g(X0), W.sum(axis=0), rtol=1e-12)


MODULE_W = RNG.standard_normal((4,))


def uses_a_global(x):
    return np.sum(MODULE_W * x * x)


def test_module_level_array_is_a_constant():
    np.testing.assert_allclose(ea.grad(uses_a_global)(X0), 2 * MODULE_W * X0, rtol=1e-12)


def test_jvp_of_a_function_returns_values():
    def f(x):
        return np.sin(x) * x

    t = RNG.standard_normal(4)
    y, y_dot = ea.jvp(f, (X0,), (t,))
    np.testing.assert_allclose(y, np.sin(X0) * X0)
    np.testing.assert_allclose(y_dot, (np.cos(X0) * X0 + np.sin(X0)) * t, rtol=1e-10)


def test_vjp_of_a_function_returns_value_and_pullback():
    def f(W, x):
        return np.tanh(W @ x)

    y, f_vjp = ea.vjp(f, W0, X0)
    np.testing.assert_allclose(y, np.tanh(W0 @ X0))
    ct = RNG.standard_normal(3)
    gW, gx = f_vjp(ct)
    d = ct * (1 - np.tanh(W0 @ X0) ** 2)
    np.testing.assert_allclose(gW, np.outer(d, X0), rtol=1e-10)
    np.testing.assert_allclose(gx, W0.T @ d, rtol=1e-10)


def test_jacobian_of_a_small_vector_output():
    def f(x):
        return np.tanh(W0 @ x)

    J = ea.jacobian(f)(X0)
    expected = (1 - np.tanh(W0 @ X0) ** 2)[:, None] * W0
    assert J.shape == (3, 4)
    np.testing.assert_allclose(J, expected, rtol=1e-10)
    JW = ea.jacobian(lambda W, x: np.tanh(W @ x), argnums=0)(W0, X0)
    assert JW.shape == (3, 3, 4)
    eps = 1e-6
    for i in range(3):
        for j in range(4):
            d = np.zeros_like(W0)
            d[i, j] = eps
            col = (np.tanh((W0 + d) @ X0) - np.tanh((W0 - d) @ X0)) / (2 * eps)
            np.testing.assert_allclose(JW[:, i, j], col, rtol=1e-5, atol=1e-9)


def test_programs_keep_returning_programs():
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i] * x[i])\n")
    assert isinstance(ea.vjp(prog, "x"), ea.Program)
    assert isinstance(ea.vjp(prog, wrt="x"), ea.Program)
    assert isinstance(ea.jvp(prog, "x"), ea.Program)
    value, g = ea.value_and_grad(prog)(X0)
    assert value == pytest.approx(X0 @ X0)
    np.testing.assert_allclose(g, 2 * X0)


def test_user_errors_are_standard_exceptions():
    with pytest.raises(ValueError, match="not a parameter"):
        ea.grad(loss, wrt="y")
    with pytest.raises(ValueError):
        ea.parse("def f(x: [N]):\n    return x[i]\n")
    with pytest.raises(ValueError):  # shapes that do not fit
        ea.grad(ea.parse("def f(A: [N, N]):\n    return Sum[i: N](A[i, i])\n"))(np.ones(3))
    with pytest.raises(TypeError):
        ea.grad(3.0)
    with pytest.raises(TypeError):
        ea.optimize("not a program")
    with pytest.raises(ea.EqsatError):  # the library's own base class still catches them all
        ea.grad(3.0)
