"""Generated code never fails where the interpreter returns a value, and user mistakes get
located errors of standard types (issue: semantics and soundness, the fuzzer's defect list)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import eqsat_ad as ea
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.ir.errors import ProgramError, ShapeError
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _same(got, want) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(w, float), rtol=1e-10,
                                   atol=1e-12, equal_nan=True)


def _agree(src: str, *args) -> None:
    prog = ea.parse(src)
    want = evaluate(prog, *args)
    _same(compile_program(prog)(*args), want)
    _same(ea.compile(prog)(*args), want)


def lse_rows(X):
    m = np.max(X, axis=1, keepdims=True)
    return np.sum(m + np.log(np.sum(np.exp(X - m), axis=1, keepdims=True)))


def test_rowwise_logsumexp_gradient_compiles_without_optimization():
    # the unoptimized adjoint shares exp(X - m) between two statements (was NameError: _t2)
    X = np.random.default_rng(0).normal(size=(3, 4))
    z = np.exp(X - X.max(axis=1, keepdims=True))
    want = z / z.sum(axis=1, keepdims=True)
    for optimize in (False, True):
        np.testing.assert_allclose(ea.grad(lse_rows, optimize=optimize)(X), want, rtol=1e-12)


def test_two_statements_sharing_exp():
    _agree("""
def f(X: [N, M]):
    a[i: N, j: M] = exp(X[i, j]) * 2
    b[i: N] = Sum[j: M](exp(X[i, j]))
    c[i: N] = Sum[j: M](X[i, j] * exp(X[i, j]))
    return a, b, c
""", np.random.default_rng(1).normal(size=(3, 4)))


def test_point_reads_outside_the_tensor_read_zero():
    _agree("def f(A: [1], x: [M]):\n    return A[M - 1] * Sum[i: M](x[i])", np.ones(1), np.ones(3))
    _agree("def f(x: [N]):\n    t[i: N] = x[i] * 2\n    return t[1]", np.ones(1))


def test_python_number_arithmetic_follows_ieee():
    # (i == 7) * (1 / 0), 0 ** -1 and (-1) ** 0.5 on Python numbers: inf, nan, never an exception
    _agree("""
def f(x: [N]):
    a = 1 / 0 + 0 * x[0]
    b = (0 - 1) ** 0.5
    c = (x[0] - x[0]) ** -1
    d[i: N] = x[i] + (i == 7) * (1 / 0)
    return a, b, c, d
""", np.ones(2))


def mean_of_empty_slice(x):
    return np.mean(x[2:2]) + np.sum(x)


def test_mean_of_an_empty_slice():
    x = np.ones(3)
    assert np.isnan(ea.compile(mean_of_empty_slice)(x))
    for optimize in (False, True):
        g = ea.grad(mean_of_empty_slice, optimize=optimize)(x)
        assert g.shape == (3,)


def test_constant_folding_to_inf_keeps_the_program_printable():
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i] * (1e308 * 10))")
    x = np.ones(3)
    assert ea.compile(prog)(x) == np.inf
    assert ea.grad(prog)(x).tolist() == [np.inf] * 3
    assert "1e+308" in str(ea.optimize(prog).program)  # no inf literal needed


def test_index_constants_beyond_64_bits_are_located_parse_errors():
    with pytest.raises(ProgramError, match=r"<source>:2:\d+: index constant .* too large"):
        ea.parse("def f(x: [N]):\n    return x[9223372036854775808]")
    with pytest.raises(ProgramError, match=r"<source>:1:\d+: dimension .* too large"):
        ea.parse("def f(x: [9223372036854775808]):\n    return x[0]")


def test_ragged_list_argument_is_a_shape_error():
    prog = ea.parse("def f(x: [N, M]):\n    return Sum[i: N, j: M](x[i, j])")
    for run in (compile_program(prog), ea.compile(prog)):
        with pytest.raises(ShapeError, match="argument 'x' is not an array"):
            run([[1.0, 2.0], [3.0]])


def test_register_function_accepts_a_string_or_says_what_it_wants():
    f = ea.register_function("sq_semantics", "x**2")
    assert f.arity == 1
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](sq_semantics(x[i]))")
    np.testing.assert_allclose(ea.grad(prog)(np.array([1.0, -2.0])), [2.0, -4.0])
    with pytest.raises(TypeError, match="SymPy expression or a string"):
        ea.register_function("bad_semantics", 5j)
    with pytest.raises(ValueError, match="may only use the symbols"):
        ea.register_function("bad_semantics", "z**2")


def test_register_function_derivative_override():
    # softplus written naively, with its derivative given as sigmoid: stable at x = 1000
    ea.register_function("softplus_semantics", "log(1 + exp(x))",
                         numpy_fn=lambda x: np.logaddexp(0.0, x), derivative="sigmoid(x)")
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](softplus_semantics(x[i]))")
    x = np.array([1000.0, 0.0, -1000.0])
    for optimize in (False, True):
        np.testing.assert_allclose(ea.grad(prog, optimize=optimize)(x), [1.0, 0.5, 0.0])
    ea.register_function("cube_semantics", sympy.Symbol("x") ** 3, derivative=["3*x**2"])
    with pytest.raises(ValueError, match="needs 2 formula"):
        ea.register_function("bad_semantics", "x * y", derivative="y")


def shifted_products(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i] * x[min(i + 1, n - 1)]
    return s


def test_min_of_indices_in_a_loop():
    x = np.arange(4.0)
    assert ea.compile(shifted_products)(x) == pytest.approx(17.0)
    for optimize in (False, True):
        np.testing.assert_allclose(ea.grad(shifted_products, optimize=optimize)(x), [1, 2, 4, 8])
