"""Programs far deeper than Python's recursion limit: long sums, long statement chains, unrolled
loops, through every stage (issue 11, item 1). Sizes are chosen so each test stays a few seconds;
experiments/scale.py runs the full 5,000-term gradients through the optimizer and backend."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph.encode import encode_program
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.expr import Access, Binary
from eqsat_ad.ir.outline import MAX_HEIGHT, max_height, outline
from eqsat_ad.ir.traverse import height

RNG = np.random.default_rng(11)


def sum_of_squares(n: int) -> str:
    return "def f(x: [N]):\n    return " + " + ".join(f"x[{i}] * x[{i}]" for i in range(n)) + "\n"


def statement_chain(n: int) -> str:
    lines = ["def f(x: [N]):", "    s0 = x[0] * x[0]"]
    lines += [f"    s{i} = s{i - 1} + x[{i % 7}] * x[{i % 5}]" for i in range(1, n)]
    return "\n".join(lines + [f"    return s{n - 1}"]) + "\n"


def chain_gradient(n: int, x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[0] += 2 * x[0]
    for i in range(1, n):
        g[i % 7] += x[i % 5]
        g[i % 5] += x[i % 7]
    return g


def test_5000_term_expression_parse_print_evaluate_and_differentiate() -> None:
    n = 5000
    prog = ea.parse(sum_of_squares(n))
    assert height(prog.outputs[0]) > 5000
    check_program(prog)
    assert ea.parse(str(prog)) == prog  # the printer and the parser, both ways
    assert hash(ea.parse(str(prog))) == hash(prog)
    x = RNG.standard_normal(n)
    assert ea.evaluate(prog, x) == pytest.approx(float(x @ x))
    adjoint = ea.vjp(prog, "x")
    assert max_height(adjoint) <= MAX_HEIGHT  # outlined: what the backend compiles is shallow
    np.testing.assert_allclose(ea.evaluate(adjoint, x, 0.5), x, rtol=1e-12)
    tangent = ea.jvp(prog, "x")
    v = RNG.standard_normal(n)
    assert ea.evaluate(tangent, x, v) == pytest.approx(2 * float(x @ v))
    enc = encode_program(prog)
    assert enc.text.count("(Add ") >= n - 1


def test_5000_statement_program_gradient_matches_finite_differences() -> None:
    n = 5000
    prog = ea.parse(statement_chain(n))
    x = RNG.standard_normal(8)
    g = ea.evaluate(ea.vjp(prog, "x"), x, 1.0)
    np.testing.assert_allclose(g, chain_gradient(n, x), rtol=1e-10)
    h = 1e-6
    fd = np.array([
        (ea.evaluate(prog, x + h * e) - ea.evaluate(prog, x - h * e)) / (2 * h)
        for e in np.eye(8)[:2]
    ])
    np.testing.assert_allclose(g[:2], fd, rtol=1e-5)


def test_numpy_loop_unrolled_5000_times() -> None:
    n = 5000

    def ema(x):
        s = 0.0
        for i in range(5000):
            s = 0.9 * s + x[i] * x[i]
        return s

    x = RNG.standard_normal(n)
    prog = ea.translate(ema, shapes={"x": (n,)})
    g = ea.evaluate(ea.vjp(prog, "x"), x, 1.0)
    np.testing.assert_allclose(g, 2 * 0.9 ** np.arange(n - 1, -1, -1) * x, rtol=1e-10)


def test_compiled_gradient_and_hessian_of_a_long_sum() -> None:
    """Through the backend (generated code flat enough for CPython) and the optimizer."""
    n = 600  # 1,200 levels deep: more than Python's recursion limit
    prog = ea.parse(sum_of_squares(n))
    x = RNG.standard_normal(n)
    g = ea.grad(prog, "x", optimize=False)
    compile(g.source, "<generated>", "exec")
    np.testing.assert_allclose(g(x), 2 * x, rtol=1e-12)
    opt = ea.grad(prog, "x", limits=ea.Limits(iterations=1, nodes=2000, seconds=2))
    np.testing.assert_allclose(opt(x), 2 * x, rtol=1e-12)
    hess = ea.hessian(ea.parse(sum_of_squares(300)), "x", optimize=False)
    np.testing.assert_allclose(hess(x[:300]), 2 * np.eye(300), atol=1e-12)


def test_outline_keeps_values_and_shallow_programs() -> None:
    shallow = ea.parse(sum_of_squares(10))
    assert outline(shallow) is shallow
    src = (
        "def f(A: [N, N]):\n    y[i: N] = Sum[j: N]("
        + " + ".join(f"A[i, j] * {k + 1}" for k in range(200))
        + ")\n    return Sum[i: N](y[i] * y[i])\n"
    )
    prog = ea.parse(src)
    flat = outline(prog, limit=16)
    assert max_height(flat) <= 16
    assert len(flat.statements) > len(prog.statements)
    check_program(flat)
    A = RNG.standard_normal((4, 4))
    assert ea.evaluate(flat, A) == pytest.approx(ea.evaluate(prog, A))


def test_deep_structural_equality_and_hash() -> None:
    a: ea.ir.Expr = Access("x")
    b: ea.ir.Expr = Access("x")
    for _ in range(20000):
        a, b = Binary("+", a, Access("x")), Binary("+", b, Access("x"))
    assert a == b and hash(a) == hash(b)
    assert Binary("-", a, Access("x")) != Binary("+", b, Access("x"))
