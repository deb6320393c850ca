"""The NumPy-subset front end's loops: accumulations become sums, loop locals are vectorized,
carried state is unrolled; each translation is compared with running the function, and the
gradients of the loop programs with central differences."""

from __future__ import annotations

import numpy as np
import pytest
from numpy_frontend_checks import check, check_grad, count_sums

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir import Sum
from eqsat_ad.ir.interpreter import evaluate

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


@pytest.mark.parametrize(
    ("fn", "shapes", "wrt"),
    [
        (sum_of_squares, {"x": (6,)}, "x"),
        (loop_locals, {"x": (5,)}, "x"),
        (nested_sum, {"A": (3, 2), "x": (2,)}, ("A", "x")),
        (rnn, {"W": (3, 3), "x": (3, 3)}, ("W", "x")),
        (inner_cumulative, {"x": (4,)}, "x"),
        (loop_with_index_if, {"x": (5,)}, "x"),
    ],
)
def test_loop_gradients_match_finite_differences(fn, shapes, wrt):
    check_grad(fn, shapes, wrt)


def test_a_loop_program_over_a_symbolic_size_prints_and_parses_back():
    prog = translate(loop_locals, {"x": ("N",)})
    assert ea.parse(str(prog)) == prog
