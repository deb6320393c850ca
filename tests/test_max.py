"""The max-reduction ``Max[j: N](e)`` and ``logsumexp[j: N](e)``: every stage against numbers."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.errors import ProgramError
from eqsat_ad.ir.expr import Max, bound_indices, free_indices, substitute
from eqsat_ad.ir.index import Affine
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.printer import print_program
from eqsat_ad.plan.price import program_plan

ROWMAX = """
def f(X: [N, M], w: [M]):
    m[i: N] = Max[j: M](X[i, j] * w[j])
    return Sum[i: N](m[i] * m[i])
"""

LSE = """
def f(X: [N, M]):
    l[i: N] = logsumexp[j: M](X[i, j])
    return Sum[i: N](l[i])
"""


def _fd(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _same(a, b) -> None:
    """Equal values and equal nan/inf patterns."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    assert (np.isnan(a) == np.isnan(b)).all(), (a, b)
    fin = ~np.isnan(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=1e-12, atol=1e-12)


# --- IR, parser, printer, checks -------------------------------------------------------------


def test_max_round_trips_and_binds_its_indices():
    p = ea.parse("""
def f(A: [N, M]):
    return Sum[i: N](Max[j: M, k: N](A[i, j] * A[k, j]))
""")
    assert ea.parse(print_program(p)) == p
    body = p.outputs[0].body
    assert isinstance(body, Max) and [iv.name for iv in body.indices] == ["j", "k"]
    assert free_indices(body) == {"i"} and bound_indices(body) == {"j", "k"}
    # capture-avoiding: substituting i := j renames the Max's own j
    moved = substitute(body, {"i": Affine.var("j")})
    assert free_indices(moved) == {"j"} and "j" not in {iv.name for iv in moved.indices}


def test_logsumexp_is_defined_through_max_and_round_trips():
    p = ea.parse(LSE)
    text = print_program(p)
    assert "Max[" in text and "logsumexp" not in text
    assert ea.parse(text) == p


@pytest.mark.parametrize("src, message", [
    ("def f(x: [N]):\n    return Max[j: N]\n", "must be applied to a body"),
    ("def f(x: [N]):\n    return Max[j: N](x[j], x[j])\n", "exactly one body"),
    ("def f(x: [N]):\n    return Max[j](x[j])\n", "with its extent"),
    ("def f(x: [N]):\n    return Max[j: N, j: N](x[j])\n", "duplicate index"),
    ("def f(x: [N]):\n    y[i: N] = Max[j: N](x[j])\n    return x[j]\n", "free index 'j'"),
])
def test_bad_max_gets_a_located_error(src, message):
    with pytest.raises(ProgramError, match=message):
        ea.parse(src)


# --- interpreter and compiled code -------------------------------------------------------------


def test_interpreter_max_matches_numpy_and_empty_is_minus_inf():
    p = ea.parse("""
def f(X: [N, M]):
    m[i: N] = Max[j: M](X[i, j])
    return m
""")
    X = np.random.default_rng(0).standard_normal((3, 5))
    np.testing.assert_array_equal(evaluate(p, X), X.max(axis=1))
    assert (evaluate(p, np.zeros((2, 0))) == -np.inf).all()


NONFINITE = [
    np.array([[1.0, np.nan, 2.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, -np.inf]]),
    np.array([[0.0, -0.0, -1.0], [1e308, 1e308, -1e308], [5e-324, -5e-324, 0.0]]),
]


@pytest.mark.parametrize("k", range(len(NONFINITE)))
def test_compiled_max_agrees_with_interpreter_on_nonfinite_inputs(k):
    src = """
def f(X: [N, M]):
    m[i: N] = Max[j: M](X[i, j])
    s[i: N] = Max[j: M](X[i, j + 1])
    c[i: N] = Max[j: M]((j < 1) * X[i, j])
    return m, s, c
"""
    p = ea.parse(src)
    X = NONFINITE[k]
    want = evaluate(p, X)
    for opt in (False, True):
        got = ea.compile(p, optimize=opt)(X)
        for a, b in zip(got, want, strict=True):
            _same(a, b)
    # an out-of-range read is an ordinary 0.0 that takes part: max(X[i, 1:], 0)
    np.testing.assert_array_equal(np.isnan(want[1]), np.isnan(X[:, 1:]).any(axis=1))


def test_max_of_strong_zeros_is_an_ordinary_zero():
    # every term of the Max is a strong zero; the Max is an ordinary 0.0: inf * 0 = nan
    p = ea.parse("""
def f(x: [N], w: []):
    return w * Max[j: N]((j < 0) * x[j])
""")
    x = np.array([1.0, 2.0])
    assert np.isnan(evaluate(p, x, np.inf))
    for opt in (False, True):
        assert np.isnan(ea.compile(p, optimize=opt)(x, np.inf))
        assert ea.compile(p, optimize=opt)(x, 3.0) == 0.0


def test_max_is_priced_as_a_reduction_kernel():
    plan = program_plan(ea.parse(ROWMAX))
    kinds = [(k.kind, k.detail) for k in plan.kernels]
    assert ("reduce", "max") in kinds


# --- derivatives -------------------------------------------------------------------------------


@pytest.mark.parametrize("optimize", [False, True])
def test_max_gradient_matches_finite_differences(optimize):
    p = ea.parse(ROWMAX)
    rng = np.random.default_rng(3)
    X, w = rng.standard_normal((4, 5)), rng.standard_normal(5)
    gX, gw = ea.grad(p, wrt=("X", "w"), optimize=optimize)(X, w)
    np.testing.assert_allclose(gX, _fd(lambda x: evaluate(p, x, w), X), atol=1e-7)
    np.testing.assert_allclose(gw, _fd(lambda v: evaluate(p, X, v), w), atol=1e-7)


def test_max_adjoint_identity():
    p = ea.parse("""
def f(X: [N, M]):
    m[i: N] = Max[j: M](exp(X[i, j]) * X[i, j])
    return m
""")
    rng = np.random.default_rng(4)
    X, dX, ybar = (rng.standard_normal((3, 6)), rng.standard_normal((3, 6)),
                   rng.standard_normal(3))
    jv = evaluate(ea.jvp(p, "X"), X, dX)
    vj = evaluate(ea.vjp(p, "X"), X, ybar)
    assert np.isclose(np.dot(ybar, jv), np.sum(vj * dX), rtol=1e-12)


def test_max_gradient_splits_ties_equally():
    p = ea.parse("def f(x: [N]):\n    return Max[j: N](x[j])\n")
    x = np.array([1.0, 3.0, 3.0, -2.0])
    want = np.array([0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(evaluate(ea.vjp(p, "x"), x, 1.0), want)
    for opt in (False, True):
        np.testing.assert_array_equal(ea.grad(p, wrt="x", optimize=opt)(x), want)


@pytest.mark.parametrize("optimize", [False, True])
def test_logsumexp_is_stable_with_the_softmax_gradient(optimize):
    p = ea.parse(LSE)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, 4)) * 1000
    m = X.max(axis=1, keepdims=True)
    want = float(np.sum(m[:, 0] + np.log(np.exp(X - m).sum(axis=1))))
    assert np.isclose(evaluate(p, X), want, rtol=1e-14)
    assert np.isclose(ea.compile(p, optimize=optimize)(X), want, rtol=1e-14)
    soft = np.exp(X - m) / np.exp(X - m).sum(axis=1, keepdims=True)
    g = ea.grad(p, wrt="X", optimize=optimize)(X)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, soft, atol=1e-15)
    small = X / 1000
    np.testing.assert_allclose(ea.grad(p, wrt="X", optimize=optimize)(small),
                               _fd(lambda x: evaluate(p, x), small), atol=1e-7)


# --- NumPy front end ---------------------------------------------------------------------------


def row_max(x):
    return np.max(x, axis=1)


def col_max_keep(x):
    return np.amax(x, axis=0, keepdims=True) * x


def method_max(x):
    return x.max() + x.min(axis=1)


@pytest.mark.parametrize("fn, ref", [
    (row_max, lambda x: np.max(x, axis=1)),
    (col_max_keep, lambda x: np.amax(x, axis=0, keepdims=True) * x),
    (method_max, lambda x: x.max() + x.min(axis=1)),
])
def test_numpy_max_lowers_to_max_at_symbolic_sizes(fn, ref):
    prog = ea.translate(fn, {"x": ("N", "M")})
    assert any(isinstance(e, Max) for e in _nodes(prog))
    x = np.random.default_rng(6).standard_normal((3, 4))
    np.testing.assert_allclose(evaluate(prog, x), ref(x))
    np.testing.assert_allclose(ea.compile(prog, optimize=False)(x), ref(x))


def _nodes(prog):
    from eqsat_ad.ir.expr import children

    stack = [s.body for s in prog.statements] + list(prog.outputs)
    while stack:
        e = stack.pop()
        yield e
        stack.extend(children(e))


def softmax_xent(z, y):
    m = np.max(z, axis=1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return np.sum(lse - np.sum(y * z, axis=1, keepdims=True))


@pytest.mark.parametrize("optimize", [False, True])
def test_softmax_cross_entropy_with_the_max_trick_at_large_logits(optimize):
    rng = np.random.default_rng(7)
    z = rng.standard_normal((5, 6)) * 1000
    y = np.eye(6)[rng.integers(0, 6, 5)]
    shapes = {"z": ("N", "K"), "y": ("N", "K")}
    prog = ea.translate(softmax_xent, shapes)
    assert any(isinstance(e, Max) for e in _nodes(prog))
    m = z.max(axis=1, keepdims=True)
    soft = np.exp(z - m) / np.exp(z - m).sum(axis=1, keepdims=True)
    want = float(np.sum(m[:, 0] + np.log(np.exp(z - m).sum(axis=1)) - (y * z).sum(axis=1)))
    assert np.isclose(ea.compile(prog, optimize=optimize)(z, y), want, rtol=1e-14)
    g = ea.grad(softmax_xent, wrt="z", optimize=optimize, shapes=shapes)(z, y)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, soft - y, atol=1e-15)
    # away from overflow the gradient matches central differences
    zs = z / 1000
    np.testing.assert_allclose(
        ea.grad(softmax_xent, wrt="z", optimize=optimize, shapes=shapes)(zs, y),
        _fd(lambda v: evaluate(prog, v, y), zs), atol=1e-7)


def test_max_survives_optimization_shifted_reads_and_second_derivatives():
    # a shifted read of a Max statement (the e-graph substitutes into the binder's body), the
    # Max shared with a logsumexp of the same body, and the Hessian through the arg-max weights
    p = ea.parse("""
def f(A: [N, M], x: [N]):
    m[i: N] = Max[j: M](A[i, j] * x[i])
    return Sum[i: N](m[i + 1] * x[i] + logsumexp[j: M](A[i, j] * x[i]))
""")
    rng = np.random.default_rng(8)
    A, x = rng.standard_normal((4, 3)), rng.standard_normal(4)
    want = evaluate(p, A, x)
    assert np.isclose(evaluate(ea.optimize(p).program, A, x), want, rtol=1e-13)
    assert np.isclose(ea.compile(p)(A, x), want, rtol=1e-13)
    g = ea.grad(p, wrt="x", optimize=False)
    fd = np.array([(g(A, x + e) - g(A, x - e)) / 2e-6 for e in np.eye(4) * 1e-6])
    np.testing.assert_allclose(ea.hessian(p, wrt="x")(A, x), fd, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# Max through the iterative traversals, the outliner and inside a rolled loop (Fold)
# ------------------------------------------------------------------------------------------------


def test_max_of_a_body_deeper_than_the_recursion_limit() -> None:
    from dataclasses import replace

    from eqsat_ad.ir.checks import check_program
    from eqsat_ad.ir.expr import Access, Binary, Const
    from eqsat_ad.ir.outline import MAX_HEIGHT, max_height, outline
    from eqsat_ad.ir.printer import print_expr
    from eqsat_ad.ir.traverse import height

    n = 3000  # (the parser reads long chains only at the top level: build the body directly)

    def body() -> Binary:
        x = Access("x", (Affine.var("j"),))
        e: Binary = Binary("*", Const(1.0), x)
        for k in range(1, n):
            e = Binary("+", e, Binary("*", Const(float(k % 5 + 1)), x))
        return e

    small = ea.parse("def f(x: [N], y: [N]):\n    return Max[j: N](x[j]) + Sum[j: N](y[j])\n")
    out0 = small.outputs[0]
    out = replace(out0, lhs=replace(out0.lhs, body=body()))
    prog = replace(small, outputs=(out,))
    assert height(out) > n
    check_program(prog)
    twin = replace(out0, lhs=replace(out0.lhs, body=body()))
    assert twin == out and hash(twin) == hash(out)
    text = print_expr(out)
    assert text.startswith("Max[j: N](1 * x[j] + 2 * x[j] + 3 * x[j]") and len(text) > 10 * n
    mx = out.lhs
    assert isinstance(mx, Max) and free_indices(mx) == frozenset()
    assert bound_indices(mx) == {"j"}
    # substitution leaves the bound j alone, and renames the binder rather than capture
    assert substitute(mx, {"j": Affine.var("k")}) == mx
    x, y = np.array([0.5, -2.0, 1.5]), np.array([1.0, 2.0, 3.0])
    coef = 1 + sum(k % 5 + 1 for k in range(1, n))
    assert ea.evaluate(prog, x, y) == pytest.approx(coef * 1.5 + 6.0)
    flat = outline(prog)
    assert max_height(flat) <= MAX_HEIGHT
    check_program(flat)
    assert ea.evaluate(flat, x, y) == pytest.approx(ea.evaluate(prog, x, y))
    x_bar, _ = ea.evaluate(ea.vjp(prog, ["x", "y"]), x, y, 1.0)
    np.testing.assert_allclose(x_bar, [0.0, 0.0, coef])


def test_substitute_renames_a_max_binder_that_would_capture() -> None:
    prog = ea.parse("def f(A: [N, N]):\n    y[i: N] = Max[j: N](A[i, j])\n    return y\n")
    mx = prog.statements[0].body
    moved = substitute(mx, {"i": Affine.var("j")})
    assert isinstance(moved, Max) and moved.indices[0].name != "j"
    assert free_indices(moved) == {"j"}


def test_max_inside_a_fold_body_matches_the_unrolled_loop_and_its_gradient() -> None:
    src = """
def f(x: [T, N], a: []):
    def step(s: [], xt: [N], a: []):
        return (a * s + Max[j: N](xt[j]),)
    z = 0
    s = Fold[T](step, carry=(z,), scan=(x,), const=(a,))
    return s
"""
    prog = ea.parse(src)
    assert ea.parse(str(prog)) == prog
    x = np.array([[1.0, 4.0, 2.0], [-1.0, -3.0, 0.5], [2.0, 2.5, 7.0]])
    a = 0.5
    s = 0.0
    for t in range(3):
        s = a * s + x[t].max()
    assert ea.evaluate(prog, x, a) == pytest.approx(s)
    x_bar, a_bar = ea.evaluate(ea.vjp(prog, ["x", "a"]), x, a, 1.0)
    want = np.zeros_like(x)
    for t in range(3):
        want[t, np.argmax(x[t])] = a ** (2 - t)
    np.testing.assert_allclose(x_bar, want)
    fd = (ea.evaluate(prog, x, a + 1e-6) - ea.evaluate(prog, x, a - 1e-6)) / 2e-6
    assert a_bar == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("optimize", [False, True])
def test_a_max_of_a_constant_over_an_axis_it_ignores(optimize):
    # fuzz seed 2028 #3477: np.max of a broadcast integer literal with initial=-inf raised
    # OverflowError in the generated code; the maximum is taken in the float type
    prog = ea.parse("""
def f(x: [N]):
    y[i: N] = -Max[j: N](-3) + x[i]
    z[i: N] = Max[j: 3](2 * (j >= 1)) * x[i]
    return Sum[i: N](y[i] + z[i])
""")
    x = np.array([1.0, np.inf, -2.0])
    c = ea.compile(prog, optimize=optimize)
    _same(c(x=x), evaluate(prog, x))
    _same(c(x=x[:1]), evaluate(prog, x[:1]))
