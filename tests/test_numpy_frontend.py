"""The NumPy-subset front end: every construct is translated, evaluated by the reference
interpreter and compared with running the original NumPy function on the same inputs; gradients of
the translated programs (reverse mode) are compared with finite differences of the NumPy function.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir import Bracket, Call, Program, Sum, children
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.interpreter import evaluate

RNG = np.random.default_rng(20260529)


def _inputs(shapes: dict[str, tuple[int, ...]], positive: bool = False) -> dict[str, np.ndarray]:
    out = {}
    for name, shape in shapes.items():
        a = RNG.normal(size=shape)
        out[name] = np.abs(a) + 0.5 if positive else a
    return out


def check(fn, shapes, *, symbolic=None, dtypes=None, positive=False, inputs=None) -> Program:
    """Translate ``fn`` and compare the interpreter with NumPy on random inputs."""
    prog = translate(fn, symbolic or shapes, dtypes)
    check_program(prog)
    assert ea.parse(str(prog)) == prog  # prints as index language and parses back
    args = inputs if inputs is not None else _inputs(shapes, positive)
    got = evaluate(prog, **args)
    want = fn(**args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    return prog


def check_grad(fn, shapes, wrt, *, positive=False, inputs=None) -> None:
    """Reverse-mode gradient of the translation vs central differences of the NumPy function."""
    prog = translate(fn, shapes)
    args = inputs if inputs is not None else _inputs(shapes, positive)
    grads = evaluate(ea.vjp(prog, wrt=wrt), **args, ybar=1.0)
    grads = grads if isinstance(grads, tuple) else (grads,)
    names = (wrt,) if isinstance(wrt, str) else wrt
    h = 1e-6
    for name, g in zip(names, grads, strict=True):
        x = args[name]
        fd = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[k] += h
            xm[k] -= h
            fd[k] = (fn(**{**args, name: xp}) - fn(**{**args, name: xm})) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def count_sums(prog: Program) -> int:
    def go(e) -> int:
        return (1 if isinstance(e, Sum) else 0) + sum(go(c) for c in children(e))

    return sum(go(s.body) for s in prog.statements) + sum(go(o) for o in prog.outputs)


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
# Loops
# ================================================================================================


def sum_of_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def sum_of_squares_plain(x):
    s = 0
    for i in range(len(x)):
        s = s + x[i] ** 2
    return s


def nested_sum(A, x):
    total = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            total = A[i, j] * x[j] + total
    return total


def loop_locals(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        d = x[i] - x[i - 1]
        s += d * d
    return s + d


def loop_with_index_if(x):
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        if i >= 2 and i != 4:
            s += x[i]
        else:
            t -= x[i] * 2
        if i < 3:
            t += x[i - 0] ** 2
    return s + t


def loop_vector_accumulate(A):
    acc = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        acc += A[i, :] * (i + 1)
    return acc


def loop_reverse_and_step(x):
    s = 0.0
    for i in range(x.shape[0] - 1, -1, -1):
        s += x[i] * (i + 1.0)
    for j in range(0, x.shape[0], 2):
        s -= x[j]
    return s


def rnn(W, x):
    h = np.zeros(W.shape[0])
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return np.sum(h)


def product(x):
    p = 1.0
    for i in range(x.shape[0]):
        p = p * x[i]
    return p


def inner_cumulative(x):
    s = 0.0
    for i in range(x.shape[0]):
        c = 0.0
        for j in range(i + 1):
            c += x[j]
        s += c * c
    return s


def loop_over_rows(A):
    s = 0.0
    for row in A:
        s = s + np.sum(row * row)
    for k, row in enumerate(A):
        s = s + k * row[0]
    return s + sum(A) @ A[0] + sum([A[0, 0], A[1, 1]], 2.0)


def test_scalar_loop_is_one_sum_statement():
    prog = check(sum_of_squares, {"x": (7,)}, symbolic={"x": ("N",)})
    assert len(prog.statements) == 1
    assert isinstance(prog.statements[0].body, Sum)
    assert count_sums(prog) == 1
    # The translation does not grow with n: still one statement at n = 64000.
    big = translate(sum_of_squares, {"x": (64000,)})
    assert len(big.statements) == 1 and count_sums(big) == 1
    prog2 = check(sum_of_squares_plain, {"x": (6,)})
    assert len(prog2.statements) == 1 and count_sums(prog2) == 1


def test_nested_accumulation_loops_are_one_double_sum():
    prog = check(nested_sum, {"A": (3, 4), "x": (4,)}, symbolic={"A": ("N", "M"), "x": ("M",)})
    assert len(prog.statements) == 1 and count_sums(prog) == 2


def test_loop_locals_are_vectorized_and_keep_last_value():
    prog = check(loop_locals, {"x": (6,)})
    assert len(prog.statements) <= 3
    check(loop_locals, {"x": (6,)}, symbolic={"x": ("N",)})


def test_if_on_loop_index_becomes_bracket():
    prog = check(loop_with_index_if, {"x": (6,)})
    assert len(prog.statements) <= 3


def test_vector_accumulator_and_index_as_data():
    check(loop_vector_accumulate, {"A": (5, 3)})
    check(loop_vector_accumulate, {"A": (5, 3)}, symbolic={"A": ("N", "M")})


def test_reverse_and_strided_ranges():
    check(loop_reverse_and_step, {"x": (7,)})
    check(loop_reverse_and_step, {"x": (8,)})


def test_carried_state_loops_are_unrolled():
    check(rnn, {"W": (3, 3), "x": (4, 3)})
    prog = check(product, {"x": (5,)})
    assert len(prog.statements) >= 4
    check(loop_over_rows, {"A": (3, 4)})
    # % on the loop index is not affine: the loop is unrolled, still exact.
    def every_other(x):
        s = 0.0
        for i in range(x.shape[0]):
            if i % 2 == 0:
                s += x[i]
        return s

    prog = check(every_other, {"x": (5,)})
    assert count_sums(prog) == 0


def test_triangular_loop_is_a_guarded_sum():
    prog = check(inner_cumulative, {"x": (5,)})
    assert len(prog.statements) == 2 and count_sums(prog) == 2
    check(inner_cumulative, {"x": (5,)}, symbolic={"x": ("N",)})


def test_symbolic_loop_bound_minus_constant():
    def f(x):
        s = 0.0
        for i in range(x.shape[0] - 1):
            s += x[i] * x[i + 1]
        return s

    prog = check(f, {"x": (6,)}, symbolic={"x": ("N",)})
    assert len(prog.statements) == 1


def test_static_if_on_shapes_and_constants():
    def f(x, scale=2.0, mode="sum"):
        if x.ndim == 2 and x.shape[0] > 1:
            y = x * scale
        elif x.shape[0] == 1:
            y = x
        else:
            y = -x
        if mode == "sum":
            return np.sum(y)
        return np.max(y)

    check(f, {"x": (3, 2)})
    check(f, {"x": (1, 2)})
    check(f, {"x": (3,)})
    prog = translate(f, {"x": (3, "M")})
    np.testing.assert_allclose(evaluate(prog, x=np.ones((3, 2))), 12.0)


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
        (sum_of_squares, {"x": (6,)}, "x", False),
        (loop_locals, {"x": (5,)}, "x", False),
        (nested_sum, {"A": (3, 2), "x": (2,)}, ("A", "x"), False),
        (rnn, {"W": (3, 3), "x": (3, 3)}, ("W", "x"), False),
        (elementwise_total, {"x": (4,)}, "x", True),
        (inner_cumulative, {"x": (4,)}, "x", False),
        (loop_with_index_if, {"x": (5,)}, "x", False),
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
        (loop_locals, {"x": ("N",)}),
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


# ================================================================================================
# Random NumPy expressions (hypothesis): translation == NumPy
# ================================================================================================

_GEN_SHAPES = {"a": (3, 4), "b": (4,), "c": ()}


def _expr(data, shape: str, depth: int) -> str:
    """A random NumPy expression of the given shape ('34', '43', '4', '3' or '0')."""
    d = depth - 1
    leaf = depth <= 0
    opts = {
        "34": ["a"] if leaf else [
            "a", "({x} {op} {y})", "({x} {op} {v})", "({x} {op} {s})", "np.tanh({x})",
            "np.maximum({x}, {s})", "np.where({x} > {v}, {x}, {s})", "{t}.T", "{x}[::-1]",
            "np.outer({w}, {v})", "np.exp(-np.abs({x}))", "({x} ** 2)",
        ],
        "43": ["a.T"] if leaf else ["{x}.T", "np.transpose({x})", "np.einsum('ij->ji', {x})"],
        "4": ["b"] if leaf else [
            "b", "({v} {op} {v2})", "np.sum({x}, axis=0)", "{x}[1]", "{v}[::-1]",
            "({w} @ {x})", "np.min({x}, axis=0)", "np.dot({t}, {w})",
        ],
        "3": ["a[:, 0]"] if leaf else [
            "np.sum({x}, axis=1)", "({x} @ {v})", "{x}[:, 2]", "np.max({x}, axis=1)",
            "np.mean({x}, axis=-1)",
        ],
        "0": ["c", "1.5"] if leaf else [
            "c", "np.sum({v})", "np.mean({x})", "{v}[0]", "np.trace({x}[:, :3])", "2.0",
            "({s} {op} {s2})",
        ],
    }[shape]
    template = data.draw(st.sampled_from(opts))
    parts = {
        "x": lambda: _expr(data, "34", d), "y": lambda: _expr(data, "34", d),
        "t": lambda: _expr(data, "43", d), "v": lambda: _expr(data, "4", d),
        "v2": lambda: _expr(data, "4", d), "w": lambda: _expr(data, "3", d),
        "s": lambda: _expr(data, "0", d), "s2": lambda: _expr(data, "0", d),
        "op": lambda: data.draw(st.sampled_from(["+", "-", "*"])),
    }
    return template.format(**{k: f() for k, f in parts.items() if "{" + k + "}" in template})


_GENERATED = iter(range(10**9))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_numpy_expressions_translate_exactly(data):
    body = _expr(data, data.draw(st.sampled_from(["34", "4", "0"])), 3)
    src = f"import numpy as np\n\n\ndef f(a, b, c):\n    return {body}\n"
    with tempfile.NamedTemporaryFile("w", suffix=f"_np{next(_GENERATED)}.py", delete=False) as fh:
        fh.write(src)
    try:
        spec = importlib.util.spec_from_file_location(Path(fh.name).stem, fh.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        check(module.f, _GEN_SHAPES)
    finally:
        os.unlink(fh.name)


def test_integer_counters_stay_integers():
    def f(x):
        k = 0
        tri = 0
        for i in range(x.shape[0]):
            k += 1
            tri += i
        return x[k - 1] * tri + x[tri - 2 * k + 1]

    prog = check(f, {"x": (4,)})
    assert len(prog.statements) == 0  # indices resolved at translation: x[3] * 6 + x[-1]

    def count(x):
        k = 0
        for _i in range(len(x)):
            k += 1
        return x[k - 1]

    check(count, {"x": (5,)}, symbolic={"x": ("N",)})


_LOOP_TERMS = [
    "b[i]", "a[1, i]", "b[3 - i]", "b[i - 1]", "b[(2 * i) % 4]", "np.sum(a[:, i] * b[i])",
    "np.max(a[:, i])", "c * i", "np.tanh(b[i]) * b[3 - i]", "a[i % 3, i]", "t",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_loops_translate_exactly(data):
    """Accumulation loops with locals, index guards and wrapping indices: summed or unrolled,
    always equal to running the loop."""
    lines = ["s = 0.0", "v = np.zeros(3)", "for i in range(4):", "    t = a[0, i] * 2.0"]
    for _ in range(data.draw(st.integers(1, 3))):
        term = data.draw(st.sampled_from(_LOOP_TERMS))
        other = data.draw(st.sampled_from(_LOOP_TERMS))
        target = data.draw(st.sampled_from(["s", "v"]))
        guard = data.draw(st.sampled_from(["", "i > 1", "i != 2", "i <= 2 and i >= 1"]))
        op = data.draw(st.sampled_from(["+=", "-="]))
        stmt = f"{target} {op} {term} * {other}"
        if guard:
            lines += [f"    if {guard}:", f"        {stmt}"]
        else:
            lines.append(f"    {stmt}")
    lines.append("return s + np.sum(v * v) + t")
    src = "import numpy as np\n\n\ndef f(a, b, c):\n" + "".join(f"    {x}\n" for x in lines)
    with tempfile.NamedTemporaryFile("w", suffix=f"_lp{next(_GENERATED)}.py", delete=False) as fh:
        fh.write(src)
    try:
        spec = importlib.util.spec_from_file_location(Path(fh.name).stem, fh.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        check(module.f, _GEN_SHAPES)
    finally:
        os.unlink(fh.name)


def test_item_assignment_on_local_arrays_is_a_functional_update():
    def f(x, A):
        y = np.zeros(x.shape[0])
        y[0] = x[0]
        for i in range(1, x.shape[0]):
            y[i] = y[i - 1] + x[i]  # cumulative sum: carried, unrolled
        B = A.copy()
        B[1:, ::-1] = x[:3, None] * 2.0
        B[0] += 1.0
        B[..., 2] -= x[1]
        z = x * 1.0
        z[:] = 3.0
        return y, B, z

    check(f, {"x": (5,), "A": (4, 3)})
    check_grad(updated_sum, {"x": (5,)}, "x")


def updated_sum(x):
    y = x * 1.0
    y[1:3] = np.exp(x[:2])
    y[-1] *= x[0]
    return np.sum(y * y)
