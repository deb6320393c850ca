"""The NumPy-subset front end: every construct is translated, evaluated by the reference
interpreter and compared with running the original NumPy function on the same inputs; gradients of
the translated programs (reverse mode) are compared with finite differences of the NumPy function.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from numpy_frontend_checks import RNG, check, check_grad, count_sums

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir import Bracket, Call, Program, children
from eqsat_ad.ir.interpreter import evaluate

# ================================================================================================
# Arithmetic and broadcasting
# ================================================================================================


def arith(x, y, w):
    return (x + 2.0) * y - x / (y * y + 1.0) - w + -x


def broadcast_outer(a, b, c):
    return a[:, None] * b[None, :] + c - 3


def broadcast_keep(A, r, c):
    return A / r + c * A


def powers(x):
    return x**3 + np.sqrt(x) + x**0.5 + np.square(x) - np.power(x, 2) + 2.0**x


def elementwise(x):
    return np.exp(x) + np.log(x) + np.tanh(x) + np.sin(x) * np.cos(x) + np.abs(x - 1.0)


def elementwise_total(x):
    return np.sum(elementwise(x) * x)


def test_arithmetic_with_scalars():
    check(arith, {"x": (4, 3), "y": (4, 3), "w": ()})


def test_broadcasting_rules():
    check(broadcast_outer, {"a": (4,), "b": (3,), "c": (3,)})
    check(broadcast_keep, {"A": (4, 3), "r": (4, 1), "c": (3,)})
    check(broadcast_keep, {"A": (4, 3), "r": (1, 3), "c": ()})


def test_broadcasting_symbolic_sizes():
    prog = check(broadcast_keep, {"A": (4, 3), "r": (4, 1), "c": (3,)},
                 symbolic={"A": ("N", "M"), "r": ("N", 1), "c": ("M",)})
    assert prog.size_names() == ("N", "M")


def test_elementwise_functions_and_powers():
    check(elementwise, {"x": (5,)}, positive=True)
    check(powers, {"x": (2, 3)}, positive=True)


# ================================================================================================
# Products: @, dot, matmul, einsum, outer, trace, diag, transpose
# ================================================================================================


def matmul_all(A, B, v, u):
    return (A @ B) @ v + np.sum(B.T @ u) + u @ A @ B @ v + np.matmul(A, u) + u @ (A @ B)[:, :3]


def batched(T, B):
    return T @ B


def dots(A, B, v, u, T, s):
    return np.dot(A, B), np.dot(A, v), np.dot(u, v), np.dot(s, v), np.dot(T, B), v.dot(u)


def einsums(A, B, v, T):
    return (
        np.einsum("ij,jk->ik", A, B),
        np.einsum("ii->", A),
        np.einsum("ii->i", A),
        np.einsum("ij->ji", A),
        np.einsum("i,i", v, v),
        np.einsum("bij,jk->bik", T, B),
        np.einsum("ij,jk", A, B),
    )


def outer_trace_diag(A, v, u):
    return (
        np.outer(v, u),
        np.trace(A),
        np.trace(A, offset=1),
        A.trace(),
        np.diag(v),
        np.diag(v, k=1),
        np.diag(v, -2),
        np.diag(A),
        np.diag(A, 1),
        np.diag(A, k=-1),
        A.diagonal(),
    )


def transposes(A, T):
    return A.T, np.transpose(T, (2, 0, 1)), T.transpose(1, 0, 2), np.transpose(T), T.swapaxes(0, 2)


def test_matmul_all_rank_combinations():
    check(matmul_all, {"A": (3, 3), "B": (3, 4), "v": (4,), "u": (3,)})
    check(batched, {"T": (2, 3, 4), "B": (4, 5)})
    check(batched, {"T": (2, 3, 4), "B": (1, 4, 5)})


def test_dot_cases():
    check(dots, {"A": (3, 4), "B": (4, 2), "v": (4,), "u": (4,), "T": (2, 3, 4), "s": ()})


def test_einsum_subscripts():
    check(einsums, {"A": (3, 3), "B": (3, 4), "v": (3,), "T": (2, 5, 3)})


def test_outer_trace_diag():
    check(outer_trace_diag, {"A": (4, 4), "v": (4,), "u": (3,)})
    prog = check(outer_trace_diag, {"A": (3, 5), "v": (3,), "u": (2,)})
    assert prog.returns_tuple and len(prog.outputs) == 11


def test_transposes_are_views_not_statements():
    check(transposes, {"A": (3, 4), "T": (2, 3, 4)})

    def t_only(A):
        return A.T @ A

    prog = translate(t_only, {"A": ("N", "M")})
    assert len(prog.statements) == 1


def test_trace_and_diag_symbolic():
    def f(A, v):
        return np.trace(A) + np.sum(np.diag(v) * A) + np.sum(np.diag(A))

    check(f, {"A": (4, 4), "v": (4,)}, symbolic={"A": ("N", "N"), "v": ("N",)})


# ================================================================================================
# Reductions
# ================================================================================================


def reductions(T):
    return (
        np.sum(T),
        np.sum(T, axis=0),
        np.sum(T, axis=-1, keepdims=True),
        np.sum(T, axis=(0, 2)),
        T.sum(1),
        np.mean(T, axis=1),
        T.mean(),
        np.mean(T, axis=(1, 2), keepdims=True),
    )


def extremes(T):
    return (
        np.max(T),
        np.max(T, axis=1),
        np.min(T, axis=0, keepdims=True),
        T.max(axis=-1),
        np.amin(T, axis=(0, 2)),
    )


def test_sum_and_mean_with_axis_and_keepdims():
    check(reductions, {"T": (2, 3, 4)})


def test_mean_over_symbolic_size_divides_by_the_size():
    def f(x):
        return np.mean(x) + x.shape[0]

    check(f, {"x": (6,)}, symbolic={"x": ("N",)})


def test_max_min_reductions_are_pairwise_tournaments():
    prog = check(extremes, {"T": (2, 3, 4)})
    assert any(isinstance(e, Call) and e.fn == "max" for e in _walk_program(prog))
    for n in (1, 2, 5, 7, 64):
        prog = check(extremes, {"T": (3, n, 2)})

    def row_max(A):
        return np.sum(np.max(A, axis=1) ** 2) + np.min(A)

    # One statement per level: floor(log2(n)) statements, not a tree expression of n leaves.
    prog = translate(row_max, {"A": (3, 1000)})
    assert sum(1 for s in prog.statements if s.name.startswith("mx")) == 9
    # Odd levels set their last element aside: pairs only, so no level needs a bracket.
    assert not any(isinstance(e, Bracket) for s in prog.statements if s.name.startswith("mx")
                   for e in _walk_expr(s.body))
    check_grad(row_max, {"A": (3, 7)}, "A")


def _max_all(x):
    return np.max(x)


def _min_rows_weighted(A):
    return np.sum(np.min(A, axis=1) * A[:, 0])


@pytest.mark.parametrize("n", range(1, 12))
def test_max_tournament_gradients_at_ties_are_subgradients(n):
    # Ties everywhere (odd levels set elements aside): the gradient of max is a convex
    # combination of the maximal entries, as np.max's subdifferential says.
    rng = np.random.default_rng(n)
    x = rng.integers(0, 3, size=n).astype(float)
    g = ea.grad(_max_all, wrt="x")(x)
    assert g.sum() == pytest.approx(1.0)
    assert np.all(g >= 0) and np.all(g[x < x.max()] == 0)
    A = rng.integers(0, 3, size=(3, n)).astype(float)
    gA = ea.grad(_min_rows_weighted, wrt="A")(A)
    lo = A.min(axis=1, keepdims=True)
    # d/dA of min(A[r]) * A[r, 0]: A[r, 0] times a convex combination of the minimal entries,
    # plus min(A[r]) at column 0.
    part = gA - np.where(np.arange(n) == 0, lo, 0.0)
    for r in range(3):
        w = part[r] / A[r, 0] if A[r, 0] else None
        if w is not None:
            assert w.sum() == pytest.approx(1.0)
            assert np.all(w >= -1e-12) and np.all(w[A[r] > lo[r]] == 0)
        else:
            assert np.all(part[r] == 0)


def _walk_expr(e):
    stack = [e]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(children(e))


def _walk_program(prog: Program):
    stack = [s.body for s in prog.statements] + list(prog.outputs)
    while stack:
        e = stack.pop()
        yield e
        stack.extend(children(e))


# ================================================================================================
# Data-dependent choices
# ================================================================================================


def choices(x, y):
    return (
        np.maximum(x, 0.0),
        np.minimum(x, y),
        np.where(x > y, x, y * 2.0),
        np.where(x <= 0.5, 1.0, x),
        np.where((x > 0) & (y < 0), x - y, 0.0),
        np.where((x > 0) | ~(y >= 0), x, y),
        np.where(x == x, x, 0.0),
        np.where(x != y, 1.0, 2.0),
        (x > 0) * x,
        np.clip(x, -0.5, 0.5),
        np.sign(x),
        max(x[0, 0], y[1, 1]),
        abs(x),
    )


def where_guard(x):
    # where() must not let the unselected branch leak (strong zero): log of a negative is nan.
    return np.where(x > 0, np.log(np.abs(x) + (x <= 0) * 1.0), 0.0)


def test_where_maximum_minimum_comparisons():
    check(choices, {"x": (3, 4), "y": (3, 4)})
    x = np.array([[1.0, -2.0], [0.0, 3.0]])
    check(choices, {}, inputs={"x": x, "y": x.T.copy()}, symbolic={"x": (2, 2), "y": (2, 2)})


def test_where_is_a_strong_zero_select():
    def f(x):
        return np.where(x > 0, np.sqrt(x), -x)

    x = np.array([4.0, -1.0, 0.0, 2.25])
    prog = translate(f, {"x": (4,)})
    with np.errstate(invalid="ignore"):
        want = f(x)
    np.testing.assert_allclose(evaluate(prog, x=x), want)
    check(where_guard, {"x": (5,)})


def test_boolean_parameter_is_a_relation_mask():
    def f(M, A):
        return np.sum(np.where(M, A, 0.0)) + np.sum(M * A)

    prog = translate(f, {"M": (3, 3), "A": (3, 3)}, dtypes={"M": bool})
    assert prog.param("M").kind == "relation"
    M = RNG.random((3, 3)) > 0.5
    A = RNG.normal(size=(3, 3))
    np.testing.assert_allclose(evaluate(prog, M=M, A=A), f(M, A))


# ================================================================================================
# Indexing
# ================================================================================================


def indexing(A, v):
    return (
        A[0],
        A[-1, 2],
        A[:, 0],
        A[1:, :],
        A[::2, 1:4:2],
        A[::-1],
        A[-2:, ::-2],
        A[:, None, 1],
        A[..., 0],
        v[None, :] * A[:, :1],
        A[1, ...],
        v[len(v) - 1] + A[A.shape[0] - 1, 0],
    )


def test_integer_slice_none_ellipsis_indexing():
    check(indexing, {"A": (4, 5), "v": (3,)})


def test_symbolic_indexing_keeps_sizes():
    def f(A, v):
        return A[:, 0] + v[::-1] + A[-1] + A[A.shape[0] - 1] + v[: A.shape[0]]

    check(f, {"A": (4, 4), "v": (4,)}, symbolic={"A": ("N", "N"), "v": ("N",)})


def test_shape_and_len():
    def f(A):
        n, m = A.shape
        return A * (n + 2 * m) + len(A) + A.ndim + A.size + A.shape[-1]

    check(f, {"A": (3, 4)})


def test_reshape_concatenate_stack():
    def f(v, A, B):
        return (
            v.reshape(2, 3),
            v.reshape((3, -1)),
            A.reshape(1, 2, 3),
            np.reshape(A[:, :, None], (2, 3)),
            np.concatenate([A, B], axis=0),
            np.concatenate((A, A * 2.0), axis=1),
            np.stack([A, B], axis=1),
            np.stack((v, v)),
        )

    check(f, {"v": (6,), "A": (2, 3), "B": (2, 3)})


def test_constructors():
    def f(x):
        return np.zeros(3) + x, np.ones((2, 3)) * x, np.full(3, 2.0) * x, np.eye(3) * x, \
            np.zeros_like(x) + np.ones_like(x), np.identity(3) @ x, np.eye(3, 4, k=1)

    check(f, {"x": (3,)})


# ================================================================================================
# Helpers, stop_gradient, custom adjoints
# ================================================================================================


def _softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def _layer(x, W, b):
    return np.tanh(x @ W + b)


def mlp_loss(x, W, b, V):
    p = _softmax(_layer(x, W, b) @ V)
    return -np.mean(np.log(p[:, 0]))


def stopped(x):
    return np.sum(ea.stop_gradient(x) * x) + np.sum(ea.ad.stop_gradient(x[0]) * x)


def test_helpers_are_inlined():
    prog = check(mlp_loss, {"x": (4, 3), "W": (3, 5), "b": (5,), "V": (5, 3)})
    assert prog.param_names == ("x", "W", "b", "V")


def test_stop_gradient_becomes_call_with_zero_derivative():
    prog = check(stopped, {"x": (4,)})
    assert any(isinstance(e, Call) and e.fn == "stop_gradient" for e in _walk_program(prog))
    x = RNG.normal(size=4)
    g = evaluate(ea.vjp(prog, wrt="x"), x=x, ybar=1.0)
    np.testing.assert_allclose(g, x + x[0])


_st_round = ea.custom_adjoint("np_test_st_round", np.round, adjoint=lambda x, g: g)
_clip_grad = ea.custom_adjoint(
    "np_test_clip_grad", lambda x: x, adjoint=lambda x, g: g * sympy.Heaviside(1 - x**2)
)


def custom(x):
    return np.sum(_st_round(x * 3.0) * x) + np.sum(_clip_grad(x) ** 2)


def test_custom_adjoint_functions_become_calls():
    prog = translate(custom, {"x": (5,)})
    names = {e.fn for e in _walk_program(prog) if isinstance(e, Call)}
    assert {"np_test_st_round", "np_test_clip_grad"} <= names
    x = np.array([0.2, -0.4, 1.7, -3.0, 0.55])
    np.testing.assert_allclose(evaluate(prog, x=x), custom(x))
    g = evaluate(ea.vjp(prog, wrt="x"), x=x, ybar=1.0)
    # st_round' := 1: d/dx round(3x)·x = 3x + round(3x); clip_grad' := [x² < 1].
    want = 3 * x + np.round(3 * x) + 2 * x * (np.abs(x) < 1)
    np.testing.assert_allclose(g, want)


# ================================================================================================
# Gradients vs finite differences
# ================================================================================================


@pytest.mark.parametrize(
    ("fn", "shapes", "wrt", "positive"),
    [
        (mlp_loss, {"x": (3, 4), "W": (4, 5), "b": (5,), "V": (5, 3)}, ("W", "b", "V"), False),
        (elementwise_total, {"x": (4,)}, "x", True),
    ],
)
def test_gradients_match_finite_differences(fn, shapes, wrt, positive):
    check_grad(fn, shapes, wrt, positive=positive)


def test_gradient_of_selections_away_from_ties():
    def f(x, y):
        return np.sum(np.where(x > y, x * x, 3.0 * y) + np.maximum(x, y) * np.minimum(x, 0.0))

    check_grad(f, {"x": (5,), "y": (5,)}, ("x", "y"))


def test_gradient_of_products_and_einsum():
    def f(A, B, v):
        return np.einsum("ij,jk,k->", A, B, v) + np.trace(A @ B) + v @ np.diag(A)

    check_grad(f, {"A": (3, 3), "B": (3, 3), "v": (3,)}, ("A", "B", "v"))


def test_gradient_through_indexing_and_structure():
    def f(A, v):
        B = np.concatenate([A[::2, 1:], A[1:2, ::-1][:, :3]], axis=0)
        C = np.stack([v, v[::-1] * 2.0], axis=1).reshape(3, 2, 2)
        return np.sum(B**2 * np.diag(v)[:B.shape[0], :3]) + np.sum(C[:, 0, :] @ A[:2, :3]) \
            + np.trace(A, offset=1) * v[-1]

    check(f, {"A": (4, 4), "v": (6,)})
    check_grad(f, {"A": (4, 4), "v": (6,)}, ("A", "v"))


# ================================================================================================
# Program shape
# ================================================================================================


def test_program_prints_and_parses_back():
    for fn, shapes in [
        (mlp_loss, {"x": ("B", "D"), "W": ("D", "H"), "b": ("H",), "V": ("H", 3)}),
        (choices, {"x": (3, 4), "y": (3, 4)}),
    ]:
        prog = translate(fn, shapes)
        again = ea.parse(str(prog))
        assert again == prog


def test_parameters_follow_the_function_and_defaults_are_constants():
    def f(b, a, k=3):
        return a * k + b

    prog = translate(f, {"a": (2,), "b": ()})
    assert prog.param_names == ("b", "a") and prog.name == "f"
    np.testing.assert_allclose(evaluate(prog, 1.0, np.array([1.0, 2.0])), [4.0, 7.0])


def test_wrapping_negative_loop_index_is_unrolled_exactly():
    def f(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i - 1]  # x[-1] at i = 0, as in NumPy
        return s

    prog = check(f, {"x": (5,)})
    assert count_sums(prog) == 0  # may wrap: not summed over, unrolled
