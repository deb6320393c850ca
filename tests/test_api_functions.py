"""ea.grad / compile / hessian of NumPy-subset Python functions (Tangent-style).

The functions here are plain NumPy, so every gradient is checked against central finite
differences of the function itself, run by NumPy; costs are checked as polynomials in the size
symbols the API gives each call's dimensions.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import eqsat_ad as ea
from eqsat_ad.api import Specialization
from eqsat_ad.ir import ProgramError, ShapeError

FAST = ea.Limits(iterations=4, nodes=3000, seconds=1.0)


def numeric_grad(fn, args, pos, eps=1e-6):
    """Central differences of the scalar ``fn(*args)`` with respect to ``args[pos]``."""
    x = np.array(args[pos], dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sign in (1, -1):
            y = x.copy()
            y[idx] += sign * eps
            moved = list(args)
            moved[pos] = y if y.ndim else float(y)
            g[idx] += sign * fn(*moved)
    return g / (2 * eps)


# ------------------------------------------------------------------------------------------------
# Functions under test
# ------------------------------------------------------------------------------------------------


def mlp_loss(W1, W2, X, Y):
    h = np.tanh(W1 @ X)
    z = W2 @ h
    return np.sum((z - Y) ** 2)


def quadratic(A, x):
    return x @ A @ x


def scaled_norm(x, a):
    return a * np.sum(x * x)


def repeated_tanh(x, n):
    for _ in range(n):
        x = np.tanh(x)
    return np.sum(x)


def chosen(x, square):
    if square:
        return np.sum(x * x)
    return np.sum(np.sin(x))


def static_first(n, x):
    return np.sum(x**2) * n


def first_half(x):
    n = x.shape[0] // 2  # needs a concrete extent
    return np.sum(x[:n] ** 2)


def bias_loss(x, b):
    return np.sum(np.tanh(x + b) ** 2)


def shadowing(N, x):  # noqa: N803 - a parameter named like the first size symbol
    return np.sum(N * x**2)


def mlp_args(rng, H=4, D=3, O=2, B=5):  # noqa: N803, E741 - the sizes of the MLP
    return [rng.normal(size=s) for s in [(H, D), (O, H), (D, B), (O, B)]]


# ------------------------------------------------------------------------------------------------
# Symbolic sizes
# ------------------------------------------------------------------------------------------------


def test_mlp_gradient_is_symbolic_with_a_cubic_cost_polynomial():
    rng = np.random.default_rng(1)
    args = mlp_args(rng)
    g = ea.grad(mlp_loss, wrt=("W1", "W2"), limits=FAST)
    gw1, gw2 = g(*args)
    np.testing.assert_allclose(gw1, numeric_grad(mlp_loss, args, 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gw2, numeric_grad(mlp_loss, args, 1), rtol=1e-5, atol=1e-7)

    spec = g.specialization
    assert isinstance(spec, Specialization) and spec.symbolic and spec.fallback is None
    assert spec.sizes == {"N": 4, "M": 3, "K": 2, "L": 5}
    assert spec.shapes == {"W1": ("N", "M"), "W2": ("K", "N"), "X": ("M", "L"), "Y": ("K", "L")}
    assert spec.origins["L"] == "X.shape[1]"
    assert [d.name for d in g.program.params[0].shape] == ["N", "M"]

    report = g.report
    total = report.optimized_total
    assert {s.name for s in total.free_symbols} == {"N", "M", "K", "L"}
    poly = sympy.Poly(total, *[s for s in total.free_symbols])
    assert poly.total_degree() == 3
    assert report.optimized.big_o.startswith("O(") and "L*M*N" in report.optimized.big_o
    # The report's cost at sizes is the polynomial evaluated at the call's sizes.
    at = {s: spec.sizes[s.name] for s in total.free_symbols}
    assert int(total.subs(at)) == report.optimized.value
    assert report.sizes == spec.sizes


def test_equal_dimensions_share_a_symbol_and_one_stays_one():
    rng = np.random.default_rng(2)
    A, x = rng.normal(size=(3, 3)), rng.normal(size=3)
    g = ea.grad(quadratic, wrt="x", optimize=False)
    np.testing.assert_allclose(g(A, x), (A + A.T) @ x, rtol=1e-12)
    assert g.specialization.shapes == {"A": ("N", "N"), "x": ("N",)}

    x, b = rng.normal(size=(4, 3)), rng.normal(size=(1, 3))
    gb = ea.grad(bias_loss, wrt="b", optimize=False)
    np.testing.assert_allclose(gb(x, b), numeric_grad(bias_loss, [x, b], 1), rtol=1e-6)
    assert gb.specialization.shapes == {"x": ("N", "M"), "b": (1, "M")}


def test_size_symbols_avoid_names_the_function_uses():
    x = np.arange(1.0, 5.0)
    g = ea.grad(shadowing, wrt="x", optimize=False)
    np.testing.assert_allclose(g(2.0, x), 4 * x)
    (symbol,) = g.specialization.sizes
    assert symbol != "N" and g.specialization.sizes[symbol] == 4


def test_declared_shapes_stay_symbolic_and_serve_every_fitting_call():
    g = ea.grad(quadratic, wrt="x", shapes={"A": ("n", "n"), "x": ("n",)}, optimize=False)
    assert [d.name for d in g.program.params[1].shape] == ["n"]
    rng = np.random.default_rng(3)
    for n in (2, 5):
        A, x = rng.normal(size=(n, n)), rng.normal(size=n)
        np.testing.assert_allclose(g(A, x), (A + A.T) @ x, rtol=1e-12)
    assert len(g.specializations) == 1 and g.specialization.symbolic
    # Shapes that do not fit are translated anew; here NumPy's own rule rejects them.
    with pytest.raises(ProgramError, match="not aligned"):
        g(rng.normal(size=(3, 2)), rng.normal(size=3))
    with pytest.raises(ShapeError):
        g(rng.normal(size=(2, 2)))


def test_fall_back_to_concrete_shapes_is_recorded():
    g = ea.grad(first_half, optimize=False)
    for n in (6, 8):
        x = np.arange(float(n))
        np.testing.assert_allclose(g(x), numeric_grad(first_half, [x], 0), atol=1e-6)
        spec = g.specialization
        assert not spec.symbolic and spec.shapes == {"x": (n,)}
        assert "not affine" in spec.fallback
    assert len(g.specializations) == 2
    assert "concrete shapes" in g.specialization.describe()


def test_fall_back_is_printed_in_verbose_output(capsys):
    g = ea.grad(first_half, optimize=False, verbose=True)
    g(np.arange(4.0))
    out = capsys.readouterr().out
    assert "symbolic translation failed" in out and "x: [4]" in out


# ------------------------------------------------------------------------------------------------
# The cache
# ------------------------------------------------------------------------------------------------


def test_one_specialization_per_shape_signature():
    rng = np.random.default_rng(4)
    g = ea.grad(scaled_norm, wrt="x", optimize=False)
    x3, x5 = rng.normal(size=3), rng.normal(size=5)
    np.testing.assert_allclose(g(x3, 2.0), 4 * x3)
    first = g.program
    np.testing.assert_allclose(g(x3 + 1, 3.0), 6 * (x3 + 1))  # same signature: a cache hit
    assert len(g.specializations) == 1 and g.program is first
    np.testing.assert_allclose(g(x5, 2.0), 4 * x5)
    assert len(g.specializations) == 2
    np.testing.assert_allclose(g(x=x3, a=0.5), x3)  # keywords: still the first signature
    assert len(g.specializations) == 2 and g.program is first


def test_float32_arguments_give_float32_gradients_from_the_same_specialization():
    rng = np.random.default_rng(5)
    A, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    g = ea.grad(quadratic, wrt="x", optimize=False)
    r64 = g(A, x)
    r32 = g(A.astype(np.float32), x.astype(np.float32))
    assert r64.dtype == np.float64 and r32.dtype == np.float32
    np.testing.assert_allclose(r32, r64, rtol=1e-5)
    assert len(g.specializations) == 1  # the program does not depend on the float width


# ------------------------------------------------------------------------------------------------
# Static arguments
# ------------------------------------------------------------------------------------------------


def test_python_int_is_a_static_constant_part_of_the_cache_key():
    rng = np.random.default_rng(6)
    x = rng.normal(size=4)
    g = ea.grad(repeated_tanh, optimize=False)
    for n in (2, 3):
        np.testing.assert_allclose(
            g(x, n), numeric_grad(repeated_tanh, [x, n], 0), rtol=1e-6, atol=1e-8
        )
        assert g.specialization.statics == {"n": n}
        assert sum(s.name.startswith("x") for s in g.forward.statements) == n
    g(x, 2)
    assert len(g.specializations) == 2
    assert [p.name for p in g.program.params] == ["x"]


def test_bool_is_static_and_decides_an_if():
    x = np.linspace(-1, 1, 5)
    g = ea.grad(chosen, optimize=False)
    np.testing.assert_allclose(g(x, True), 2 * x)
    np.testing.assert_allclose(g(x, False), np.cos(x))
    assert [s.statics for s in g.specializations] == [{"square": True}, {"square": False}]


def test_python_float_stays_a_scalar_input():
    x = np.array([1.0, 2.0, 3.0])
    g = ea.grad(scaled_norm, wrt="a", optimize=False)
    assert g(x, 2.0) == pytest.approx(14.0)
    assert g.specialization.statics == {}


def test_static_argument_cannot_be_differentiated_but_default_wrt_skips_it():
    x = np.array([1.0, -2.0])
    with pytest.raises(ProgramError, match="static constant"):
        ea.grad(repeated_tanh, wrt="n", optimize=False)(x, 2)
    g = ea.grad(static_first, optimize=False)  # default: the first float parameter, x
    np.testing.assert_allclose(g(3, x), 6 * x)
    np.testing.assert_allclose(g(np.float64(3.0), x), np.sum(x**2))  # a float n is data


# ------------------------------------------------------------------------------------------------
# wrt, preserve_result, verbose
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wrt", ["A", 0, ("A",), [0, "x"], (1, 0), -1])
def test_wrt_by_name_position_and_tuple(wrt):
    rng = np.random.default_rng(7)
    A, x = rng.normal(size=(3, 3)), rng.normal(size=3)
    want = {"A": np.outer(x, x), "x": (A + A.T) @ x}
    names = ["A", "x"]
    several = isinstance(wrt, (tuple, list))
    order = [names[w] if isinstance(w, int) else w for w in (wrt if several else [wrt])]
    g = ea.grad(quadratic, wrt=wrt, optimize=False)
    for call in (lambda: g(A, x), lambda: g(x=x, A=A), lambda: g(A, x=x)):
        got = call()
        if several:
            assert isinstance(got, tuple) and len(got) == len(order)
            for r, n in zip(got, order, strict=True):
                np.testing.assert_allclose(r, want[n], rtol=1e-12)
        else:
            np.testing.assert_allclose(got, want[order[0]], rtol=1e-12)


def test_preserve_result_for_a_python_function():
    rng = np.random.default_rng(8)
    args = mlp_args(rng, 3, 2, 2, 4)
    g = ea.grad(mlp_loss, wrt="W2", preserve_result=True, optimize=False)
    grad_w2, value = g(*args)
    assert value == pytest.approx(mlp_loss(*args), rel=1e-12)
    np.testing.assert_allclose(grad_w2, numeric_grad(mlp_loss, args, 1), rtol=1e-5, atol=1e-7)
    g2 = ea.grad(mlp_loss, wrt=(0, 1), preserve_result=True, limits=FAST)
    gw1, gw2, value2 = g2(*args)
    assert value2 == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(gw2, grad_w2, rtol=1e-10)
    np.testing.assert_allclose(gw1, numeric_grad(mlp_loss, args, 0), rtol=1e-5, atol=1e-7)


def test_preserve_result_for_a_program():
    prog = ea.parse("def f(x: [N], w: []):\n    return w * Sum[i: N](x[i] * x[i])\n")
    g = ea.grad(prog, wrt="x", preserve_result=True, optimize=False)
    x = np.array([1.0, 2.0])
    grad_x, value = g(x, 3.0)
    np.testing.assert_allclose(grad_x, 6 * x)
    assert value == pytest.approx(15.0)


def test_verbose_prints_the_program_naive_and_optimized_adjoint_for_a_function(capsys):
    x = np.array([0.5, -1.0, 2.0])
    g = ea.grad(repeated_tanh, verbose=True, limits=FAST)
    g(x, 2)
    out = capsys.readouterr().out
    for part in ("Tensor SSA program", "naive program", "optimized program",
                 "generated NumPy source", "Cost report", "n = 2 (static)",
                 "N = x.shape[0] = 3", "def repeated_tanh(x: [N])"):
        assert part in out, part
    g(x, 2)
    assert capsys.readouterr().out == ""  # a cache hit compiles and prints nothing


def test_verbose_prints_the_program_naive_and_optimized_adjoint_for_a_program(capsys):
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i] * x[i])\n")
    ea.grad(prog, verbose=True, limits=FAST)
    out = capsys.readouterr().out
    for part in ("Tensor SSA program", "naive program", "optimized program",
                 "generated NumPy source", "Cost report", "def f(x: [N])"):
        assert part in out, part


# ------------------------------------------------------------------------------------------------
# compile and hessian of functions
# ------------------------------------------------------------------------------------------------


def test_compile_and_hessian_of_a_function_are_symbolic():
    rng = np.random.default_rng(9)
    A, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    f = ea.compile(quadratic, optimize=False)
    assert f(A, x) == pytest.approx(quadratic(A, x), rel=1e-12)
    assert f.specialization.shapes == {"A": ("N", "N"), "x": ("N",)}
    h = ea.hessian(quadratic, wrt="x", limits=FAST)
    np.testing.assert_allclose(h(A, x), A + A.T, rtol=1e-12)
    assert h.specialization.symbolic


def masked_norm(x, m):
    return np.sum(np.where(m, x * x, 0.0))


def weighted_norm(x, m):
    return np.sum(x * x * m)


def test_boolean_arrays_are_masks_and_part_of_the_signature():
    x = np.array([1.0, -2.0, 3.0])
    m = np.array([True, False, True])
    g = ea.grad(masked_norm, wrt="x", optimize=False)
    np.testing.assert_allclose(g(x, m), 2 * x * m)
    assert g.specialization.shapes == {"x": ("N",), "m": ("N",)}
    with pytest.raises(ProgramError, match="np.where"):  # a float "mask" is data
        g(x, m.astype(float))
    assert len(g.specializations) == 1
    weighted = ea.grad(weighted_norm, wrt="x", optimize=False)
    np.testing.assert_allclose(weighted(x, m), 2 * x * m)
    np.testing.assert_allclose(weighted(x, 0.5 * m), x * m)
    assert [s.shapes["m"] for s in weighted.specializations] == [("N",), ("N",)]


def test_declared_sizes_reach_the_report():
    g = ea.grad(quadratic, wrt="x", shapes={"A": ("n", "n"), "x": ("n",)}, sizes={"n": 7},
                optimize=False)
    assert g.specialization.sizes == {"n": 7} and g.report.sizes == {"n": 7}
    assert "n" in str(g.report.optimized_total)


def test_repeated_positional_calls_follow_their_own_specialization():
    """The fast path for repeated array calls keeps .source/.forward on the call's shapes."""

    def f(x, A):
        return np.sum(A @ x) + np.sum(x * x)

    g = ea.grad(f, wrt=("x", "A"))
    rng = np.random.default_rng(0)
    small = (rng.standard_normal(3), rng.standard_normal((3, 3)))
    wide = (rng.standard_normal(4), rng.standard_normal((2, 4)))
    for _ in range(2):
        for x, A in (small, wide):
            gx, gA = g(x, A)
            np.testing.assert_allclose(gx, A.T @ np.ones(A.shape[0]) + 2 * x)
            np.testing.assert_allclose(gA, np.outer(np.ones(A.shape[0]), x))
            assert sorted(g.specialization.sizes.values()) == sorted(set(A.shape + x.shape))
            assert len(g.forward.params) == 2
    assert len(g.specializations) == 2
    with pytest.raises(ea.EqsatError, match="not aligned"):
        g(small[0], wide[1])


def test_repeated_keyword_calls_skip_binding_and_follow_their_own_specialization(monkeypatch):
    """Calls by keyword take the fast path too (no signature binding after the first call of a
    signature): each by its own names, shapes and float types, with the same results as
    positional calls and as a fresh binding."""

    def f(x, A):
        return np.sum(A @ x) + np.sum(x * x)

    g = ea.grad(f, wrt=("x", "A"))
    rng = np.random.default_rng(1)
    small = {"x": rng.standard_normal(3), "A": rng.standard_normal((3, 3))}
    wide = {"A": rng.standard_normal((2, 4)), "x": rng.standard_normal(4)}  # (another order)
    binds = []
    real = g._prepare
    monkeypatch.setattr(g, "_prepare", lambda a, k: binds.append(sorted(k)) or real(a, k))
    for _ in range(3):
        for args in (small, wide, {k: v.astype(np.float32) for k, v in small.items()}):
            gx, gA = g(**args)
            x, A = args["x"], args["A"]
            assert gx.dtype == x.dtype and gA.dtype == A.dtype
            tol = 1e-5 if x.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(gx, A.T @ np.ones(A.shape[0]) + 2 * x, rtol=tol)
            np.testing.assert_allclose(gA, np.outer(np.ones(A.shape[0]), x), rtol=tol)
            assert sorted(g.specialization.sizes.values()) == sorted(set(A.shape + x.shape))
            px, pA = g(x, A)  # positional: the same values
            np.testing.assert_array_equal(px, gx)
            np.testing.assert_array_equal(pA, gA)
    # one binding per signature (three by keyword, three by position); none after the first
    assert len(binds) == 6
    assert len(g.specializations) == 2
    reordered = {"A": small["A"], "x": small["x"]}  # other names' order: its own entry, bound
    np.testing.assert_array_equal(g(**reordered)[0], g(**small)[0])
    assert len(binds) == 7
    # a static argument by keyword is never served from the fast path
    h = ea.grad(repeated_tanh, optimize=False)
    x = rng.normal(size=4)
    for n in (2, 3, 2):
        np.testing.assert_allclose(h(x=x, n=n), numeric_grad(repeated_tanh, [x, n], 0),
                                   rtol=1e-6, atol=1e-8)
        assert h.specialization.statics == {"n": n}
