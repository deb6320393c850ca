"""Automatic differentiation (eqsat_ad.ad): jvp, vjp and hessian_program against numbers.

Random well-formed programs (tests/strategies.py) are differentiated and checked against central
finite differences of the reference interpreter, the adjoint identity ⟨vjp(ȳ), ẋ⟩ = ⟨ȳ, jvp(ẋ)⟩,
and finite differences of the gradient for second derivatives. Structural tests check the shape
of the naive adjoint (one statement per adjoint, brackets, no relation adjoints, fresh names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad import DifferentiationError, hessian_program, jvp, vjp
from eqsat_ad.ad.derivatives import symbolic_partials
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Param,
    Program,
    Sum,
    children,
    free_indices,
    print_program,
    register_function,
)
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.index import dim_value
from eqsat_ad.ir.interpreter import evaluate

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ================================================================================================
# Helpers (also used by test_ad_examples.py and test_custom_gradients.py)
# ================================================================================================


def central_difference(
    prog: Program, inputs: Mapping[str, Any], name: str, eps: float = 1e-6
) -> np.ndarray:
    """∂ output / ∂ inputs[name] by central differences; axes: the input's, then the output's."""
    x = np.array(inputs[name], dtype=float)
    cols = []
    for idx in np.ndindex(*x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        fp = np.asarray(evaluate(prog, **{**inputs, name: plus if x.shape else float(plus)}))
        fm = np.asarray(evaluate(prog, **{**inputs, name: minus if x.shape else float(minus)}))
        cols.append((fp - fm) / (2 * eps))
    return np.array(cols).reshape(x.shape + np.shape(cols[0]))


def well_formed(prog: Program) -> Program:
    """Check ``prog`` and that its printed form parses back to the same program."""
    check_program(prog)
    assert parse(print_program(prog)) == prog
    return prog


def as_tuple(value: Any, is_tuple: bool) -> tuple:
    return value if is_tuple else (value,)


def walk(e: Expr):
    yield e
    for c in children(e):
        yield from walk(c)


def shape_of(prog: Program, name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(dim_value(d, sizes) for d in prog.param(name).shape)


sizes_st = st.fixed_dictionaries({"N": st.integers(1, 3), "M": st.integers(1, 3)})


# ================================================================================================
# Properties on random programs
# ================================================================================================


@SETTINGS
@given(programs(smooth=True), sizes_st, st.data())
def test_vjp_matches_finite_differences(prog: Program, sizes: dict, data: st.DataObject) -> None:
    names = tensor_params(prog)
    assume(names)
    wrt = data.draw(st.sampled_from(names))
    grad = well_formed(vjp(prog, wrt))
    inputs = random_inputs(prog, sizes, np.random.default_rng(0))
    got = evaluate(grad, **inputs, ybar=1.0)
    np.testing.assert_allclose(got, central_difference(prog, inputs, wrt), rtol=1e-4, atol=1e-6)


@SETTINGS
@given(programs(smooth=True, scalar_output=False), sizes_st, st.data())
def test_adjoint_identity(prog: Program, sizes: dict, data: st.DataObject) -> None:
    """⟨vjp(ȳ), ẋ⟩ = ⟨ȳ, jvp(ẋ)⟩ for tensor and tuple outputs and several wrt at once."""
    names = tensor_params(prog)
    assume(names)
    wrt = tuple(data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
    back, fwd = well_formed(vjp(prog, wrt)), well_formed(jvp(prog, wrt))
    rng = np.random.default_rng(1)
    inputs = random_inputs(prog, sizes, rng)
    dots = {n: rng.uniform(-1, 1, shape_of(prog, n, sizes)) for n in wrt}
    outputs = as_tuple(evaluate(prog, **inputs), prog.returns_tuple)
    ybars = [rng.uniform(-1, 1, np.shape(o)) for o in outputs]
    seed_names = [p.name for p in back.params[len(prog.params) :]]
    assert len(seed_names) == len(outputs)
    bars = as_tuple(evaluate(back, **inputs, **dict(zip(seed_names, ybars, strict=True))),
                    len(wrt) > 1)
    tangents = as_tuple(evaluate(fwd, **inputs, **{f"{n}_dot": dots[n] for n in wrt}),
                        prog.returns_tuple)
    lhs = sum(np.sum(b * dots[n]) for b, n in zip(bars, wrt, strict=True))
    rhs = sum(np.sum(y * t) for y, t in zip(ybars, tangents, strict=True))
    assert np.isclose(lhs, rhs, rtol=1e-6, atol=1e-9)


@SETTINGS
@given(programs(smooth=False, scalar_output=False), sizes_st, st.data())
def test_nonsmooth_programs_differentiate_to_well_formed_programs(
    prog: Program, sizes: dict, data: st.DataObject
) -> None:
    """abs/max/min/stop_gradient: adjoint and tangent agree (the identity holds exactly)."""
    names = tensor_params(prog)
    assume(names)
    wrt = data.draw(st.sampled_from(names))
    back, fwd = well_formed(vjp(prog, wrt)), well_formed(jvp(prog, wrt))
    rng = np.random.default_rng(2)
    inputs = random_inputs(prog, sizes, rng)
    dot = rng.uniform(-1, 1, shape_of(prog, wrt, sizes))
    outputs = as_tuple(evaluate(prog, **inputs), prog.returns_tuple)
    ybars = [rng.uniform(-1, 1, np.shape(o)) for o in outputs]
    seeds = dict(zip([p.name for p in back.params[len(prog.params) :]], ybars, strict=True))
    lhs = np.sum(evaluate(back, **inputs, **seeds) * dot)
    tangents = as_tuple(evaluate(fwd, **inputs, **{f"{wrt}_dot": dot}), prog.returns_tuple)
    rhs = sum(np.sum(y * t) for y, t in zip(ybars, tangents, strict=True))
    assert np.isclose(lhs, rhs, rtol=1e-6, atol=1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(smooth=True, max_statements=2), sizes_st, st.data())
def test_second_derivatives(prog: Program, sizes: dict, data: st.DataObject) -> None:
    """hessian_program, jvp∘vjp and vjp∘jvp against finite differences of the gradient."""
    names = tensor_params(prog)
    assume(names)
    x = data.draw(st.sampled_from(names))
    grad = vjp(prog, x)
    hess = well_formed(hessian_program(prog, x))
    rng = np.random.default_rng(3)
    inputs = random_inputs(prog, sizes, rng)
    expected = central_difference(grad, {**inputs, "ybar": 1.0}, x, eps=1e-5)
    got = np.asarray(evaluate(hess, **inputs))
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-5)

    v = rng.uniform(-1, 1, shape_of(prog, x, sizes))
    hv = np.tensordot(v, got, axes=np.ndim(v))
    fwd_over_rev = well_formed(jvp(grad, x))
    rev_over_fwd = well_formed(vjp(jvp(prog, x), x))
    dot = {f"{x}_dot": v if np.ndim(v) else float(v)}
    np.testing.assert_allclose(evaluate(fwd_over_rev, **inputs, ybar=1.0, **dot), hv, atol=1e-9)
    np.testing.assert_allclose(evaluate(rev_over_fwd, **inputs, ybar=1.0, **dot), hv, atol=1e-9)


# ================================================================================================
# The shape of the naive adjoint
# ================================================================================================

K_TRACES = """
def f(A: [N, N]):
{body}
    return {total}
"""


@pytest.mark.parametrize("k", [1, 3, 6])
def test_k_traces_adjoint_has_k_bracket_terms(k: int) -> None:
    body = "\n".join(f"    t{m} = Sum[i: N](A[i, i])" for m in range(1, k + 1))
    prog = parse(K_TRACES.format(body=body, total=" + ".join(f"t{m}" for m in range(1, k + 1))))
    grad = well_formed(vjp(prog, "A"))
    (a_bar,) = [s for s in grad.statements if s.name == "A_bar"]
    assert sum(isinstance(e, Bracket) for e in walk(a_bar.body)) == k
    # One assignment per name: the adjoint is a sum of k terms, not k updates.
    names = [s.name for s in grad.statements]
    assert len(names) == len(set(names))
    A = np.random.default_rng(0).standard_normal((4, 4))
    np.testing.assert_allclose(evaluate(grad, A=A, ybar=1.0), k * np.eye(4))


def test_every_use_is_summed_into_one_adjoint_statement() -> None:
    prog = parse(
        """
def f(x: [N], w: [N]):
    y[i: N] = x[i] * w[i]
    z[i: N] = exp(y[i]) + y[N - 1 - i]
    return Sum[i: N](z[i] * y[i]) + y[0]
"""
    )
    grad = well_formed(vjp(prog, ("x", "w")))
    assert [s.name for s in grad.statements].count("y_bar") == 1
    y_bar = grad.statement("y_bar")
    # Uses of y: z (two accesses), the output's sum and y[0]: four terms in one statement.
    terms = _addends(y_bar.body)
    assert len(terms) == 4
    inputs = random_inputs(prog, {"N": 4}, np.random.default_rng(5))
    gx, gw = evaluate(grad, **inputs, ybar=1.0)
    np.testing.assert_allclose(gx, central_difference(prog, inputs, "x"), rtol=1e-5)
    np.testing.assert_allclose(gw, central_difference(prog, inputs, "w"), rtol=1e-5)


def _addends(e: Expr) -> list[Expr]:
    if isinstance(e, Binary) and e.op in "+-":
        return _addends(e.lhs) + _addends(e.rhs)
    return [e]


def test_relations_never_get_adjoints() -> None:
    prog = parse(
        """
def f(x: [N], R: rel[N, N]):
    y[i: N] = Sum[j: N](R[i, j] * x[j] * x[i])
    return Sum[i: N](y[i])
"""
    )
    grad = well_formed(vjp(prog, "x"))
    assert all(not s.name.startswith("R") for s in grad.statements)
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal(4), "R": rng.random((4, 4)) < 0.5}
    np.testing.assert_allclose(
        evaluate(grad, **inputs, ybar=1.0), central_difference(prog, inputs, "x"), rtol=1e-5
    )
    with pytest.raises(DifferentiationError, match="relation 'R'"):
        vjp(prog, "R")


AFFINE = """
def f(x: [N], A: [N, N]):
    a[i: N] = x[i + 1] * x[i - 1]
    b[i: N] = x[N - 1 - i] * x[2*i]
    c[i: N, j: N] = A[i, i] * A[j, i] * x[i - j]
    d[k: N] = x[k/2] * A[0, N - 1] * A[k/3, 2*k + 1]
    return Sum[i: N](a[i] * b[i] + Sum[j: N](c[i, j]) + d[i]) + x[0] * x[N - 1]
"""


@pytest.mark.parametrize("n", [1, 2, 5, 6])
def test_affine_accesses_of_every_form(n: int) -> None:
    """Shifts, strides, reversal, diagonal, constants and fractional indices turn into brackets."""
    prog = parse(AFFINE)
    grad = well_formed(vjp(prog, ("x", "A")))
    inputs = random_inputs(prog, {"N": n}, np.random.default_rng(n))
    gx, gA = evaluate(grad, **inputs, ybar=1.0)
    np.testing.assert_allclose(gx, central_difference(prog, inputs, "x"), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gA, central_difference(prog, inputs, "A"), rtol=1e-5, atol=1e-8)
    x_bar = grad.statement("x_bar")
    assert any(isinstance(e, Bracket) for e in walk(x_bar.body))


def test_scalar_and_tuple_outputs_get_numbered_seeds() -> None:
    prog = parse(
        """
def f(x: [N], s: []):
    y[i: N] = s * x[i] ** 2
    return Sum[i: N](y[i]), y
"""
    )
    grad = well_formed(vjp(prog, ("x", "s")))
    assert [(p.name, len(p.shape)) for p in grad.params[2:]] == [("ybar0", 0), ("ybar1", 1)]
    assert grad.returns_tuple and len(grad.outputs) == 2
    rng = np.random.default_rng(0)
    x, s, yb1 = rng.standard_normal(3), 0.7, rng.standard_normal(3)
    gx, gs = evaluate(grad, x=x, s=s, ybar0=2.0, ybar1=yb1)
    np.testing.assert_allclose(gx, 2.0 * 2 * s * x + yb1 * 2 * s * x)
    np.testing.assert_allclose(gs, 2.0 * np.sum(x**2) + np.sum(yb1 * x**2))


def test_single_wrt_returns_a_single_value_and_names_are_fresh() -> None:
    prog = parse(
        """
def f(x: [N], x_bar: [N], y_d: []):
    y[i: N] = x[i] * x_bar[i]
    return Sum[i: N](y[i]) * y_d
"""
    )
    grad = well_formed(vjp(prog, "x"))
    assert not grad.returns_tuple and len(grad.outputs) == 1
    assert grad.outputs[0] != Access("x_bar")  # the parameter's name is not reused
    tangent = well_formed(jvp(prog, ("x",)))
    assert [p.name for p in tangent.params] == ["x", "x_bar", "y_d", "x_dot"]
    assert all(s.name != "y_d" for s in tangent.statements)
    inputs = random_inputs(prog, {"N": 3}, np.random.default_rng(0))
    np.testing.assert_allclose(
        evaluate(grad, **inputs, ybar=1.0), central_difference(prog, inputs, "x"), rtol=1e-6
    )
    dot = np.array([1.0, -2.0, 0.5])
    expected = np.sum(dot * inputs["x_bar"]) * inputs["y_d"]
    assert np.isclose(evaluate(tangent, **inputs, x_dot=dot), expected)


def test_tensor_output_tangent_and_unrelated_outputs() -> None:
    prog = parse(
        """
def f(x: [N], w: [N]):
    y[i: N] = sin(x[i]) * w[i]
    z[i: N] = w[i] * 2
    return y, z
"""
    )
    tangent = well_formed(jvp(prog, "x"))
    x, w, dot = np.array([0.1, 0.2]), np.array([3.0, -1.0]), np.array([1.0, 2.0])
    ty, tz = evaluate(tangent, x=x, w=w, x_dot=dot)
    np.testing.assert_allclose(ty, np.cos(x) * w * dot)
    np.testing.assert_allclose(tz, np.zeros(2))  # z does not depend on x: a zero tangent
    grad = well_formed(vjp(prog, "x"))
    np.testing.assert_allclose(
        evaluate(grad, x=x, w=w, ybar0=dot, ybar1=np.ones(2)), np.cos(x) * w * dot
    )


def test_gradient_of_constant_output_is_zero_statement() -> None:
    prog = parse("def f(x: [N], c: []):\n    return c * 2\n")
    grad = well_formed(vjp(prog, "x"))
    np.testing.assert_array_equal(evaluate(grad, x=np.ones(3), c=1.0, ybar=1.0), np.zeros(3))


def test_naive_adjoint_of_matrix_vector_product_reads_like_backprop() -> None:
    """The trivial sum elimination leaves ``A_bar[i, j] = y_bar[i] * x[j]`` (no bracket)."""
    prog = parse(
        """
def f(A: [N, M], x: [M]):
    y[i: N] = Sum[j: M](A[i, j] * x[j])
    return Sum[i: N](y[i] * y[i])
"""
    )
    grad = well_formed(vjp(prog, "A"))
    a_bar = grad.statement("A_bar")
    assert not any(isinstance(e, Bracket | Sum) for e in walk(a_bar.body))
    assert free_indices(a_bar.body) == {iv.name for iv in a_bar.indices}
    inputs = random_inputs(prog, {"N": 3, "M": 2}, np.random.default_rng(0))
    y = inputs["A"] @ inputs["x"]
    np.testing.assert_allclose(evaluate(grad, **inputs, ybar=1.0), np.outer(2 * y, inputs["x"]))


def test_hessian_of_quadratic_form_is_a_plus_a_transpose() -> None:
    prog = parse(
        """
def f(A: [N, N], x: [N]):
    y[i: N] = Sum[j: N](A[i, j] * x[j])
    return Sum[i: N](x[i] * y[i])
"""
    )
    hess = well_formed(hessian_program(prog, "x"))
    out = hess.statement(hess.outputs[0].name)
    assert out.rank == 2  # one program with an extra generator, not N one-hot products
    A = np.random.default_rng(0).standard_normal((5, 5))
    np.testing.assert_allclose(evaluate(hess, A=A, x=np.ones(5)), A + A.T)


def test_hessian_of_matrix_input_has_rank_four() -> None:
    prog = parse("def f(A: [N, M]):\n    return Sum[i: N, j: M](A[i, j] ** 3 * A[i, 0])\n")
    hess = well_formed(hessian_program(prog, "A"))
    A = np.random.default_rng(0).standard_normal((2, 3))
    H = evaluate(hess, A=A)
    assert H.shape == (2, 3, 2, 3)
    grad = vjp(prog, "A")
    np.testing.assert_allclose(H, central_difference(grad, {"A": A, "ybar": 1.0}, "A", 1e-5),
                               rtol=1e-4, atol=1e-6)


def test_hessian_with_respect_to_a_scalar() -> None:
    prog = parse("def f(x: [N], s: []):\n    return Sum[i: N](exp(s * x[i]))\n")
    hess = well_formed(hessian_program(prog, "s"))
    x = np.array([0.5, -1.0, 2.0])
    assert np.isclose(evaluate(hess, x=x, s=0.3), np.sum(x**2 * np.exp(0.3 * x)))


# ================================================================================================
# The derivative table
# ================================================================================================

UNARY_POINTS = {"exp": 0.3, "log": 1.7, "sin": 0.4, "cos": -0.8, "tanh": 0.6, "sqrt": 2.2,
                "abs": -1.3, "sigmoid": -0.7}


@pytest.mark.parametrize("fn", sorted(UNARY_POINTS))
def test_builtin_unary_derivatives(fn: str) -> None:
    prog = parse(f"def f(x: [N]):\n    return Sum[i: N]({fn}(x[i]) * x[i])\n")
    grad = well_formed(vjp(prog, "x"))
    x = np.array([UNARY_POINTS[fn], 0.9])
    np.testing.assert_allclose(evaluate(grad, x=x, ybar=1.0), central_difference(prog, {"x": x},
                               "x"), rtol=1e-6)


@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_and_min_derivatives_use_step(fn: str) -> None:
    prog = parse(f"def f(x: [N], y: [N]):\n    return Sum[i: N]({fn}(x[i], 2 * y[i]))\n")
    grad = well_formed(vjp(prog, ("x", "y")))
    assert any(isinstance(e, Call) and e.fn == "step" for s in grad.statements
               for e in walk(s.body))
    inputs = {"x": np.array([0.5, -1.0, 2.0]), "y": np.array([1.0, -2.0, 0.1])}
    gx, gy = evaluate(grad, **inputs, ybar=1.0)
    np.testing.assert_allclose(gx, central_difference(prog, inputs, "x"), atol=1e-8)
    np.testing.assert_allclose(gy, central_difference(prog, inputs, "y"), atol=1e-8)


def test_step_and_sign_are_registered_functions() -> None:
    prog = parse("def f(x: [N]):\n    return Sum[i: N](step(x[i]) + sign(x[i]) * x[i])\n")
    x = np.array([-2.0, 0.0, 3.0])
    assert evaluate(prog, x=x) == pytest.approx(0.5 + 1.0 + 2.0 + 3.0)
    # Their derivatives are zero almost everywhere: d/dx (sign(x) x) = sign(x).
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), np.sign(x))


def test_stop_gradient_has_zero_derivative() -> None:
    prog = parse("def f(x: [N]):\n    return Sum[i: N](stop_gradient(x[i]) * x[i])\n")
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(evaluate(well_formed(vjp(prog, "x")), x=x, ybar=1.0), x)
    np.testing.assert_allclose(evaluate(well_formed(jvp(prog, "x")), x=x, x_dot=np.ones(2)),
                               np.sum(x))


@pytest.mark.parametrize(
    ("fn", "derivative"),
    [
        ("tanh", lambda v: 1 - np.tanh(v) ** 2),
        ("sigmoid", lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2),
        ("exp", np.exp),
    ],
)
def test_derivative_reuses_the_statement_value(fn: str, derivative: Any) -> None:
    """tanh' = 1 - h², σ' = h (1 - h), exp' = h: the call is not recomputed in the adjoint."""
    prog = parse(f"def f(x: [N]):\n    h[i: N] = {fn}(x[i] * 3)\n    return Sum[i: N](h[i])\n")
    grad = well_formed(vjp(prog, "x"))
    x_bar = grad.statement("x_bar")
    assert not any(isinstance(e, Call) for e in walk(x_bar.body))
    x = np.array([0.1, -0.4, 30.0, -30.0])  # and both tails: no overflow to inf or nan
    np.testing.assert_allclose(evaluate(grad, x=x, ybar=1.0), 3 * derivative(3 * x), atol=1e-15)


def test_registered_function_is_differentiated_and_cache_is_cleared() -> None:
    x_sym = sympy.Symbol("x")
    register_function("ad_test_soft", sympy.log(1 + sympy.exp(x_sym)))
    assert symbolic_partials("ad_test_soft") is not None
    prog = parse("def f(x: [N]):\n    return Sum[i: N](ad_test_soft(x[i]))\n")
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), 1 / (1 + np.exp(-x)))
    register_function("ad_test_soft", x_sym**3)  # replaced: the derivative must follow
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), 3 * x**2)


def test_piecewise_functions_are_differentiated_with_data_comparisons() -> None:
    x_sym = sympy.Symbol("x")
    register_function("ad_test_relu", sympy.Piecewise((x_sym, x_sym > 0), (0, True)))
    register_function(
        "ad_test_huber",
        sympy.Piecewise((x_sym**2 / 2, sympy.Abs(x_sym) <= 1), (sympy.Abs(x_sym) - 0.5, True)),
    )
    prog = parse(
        "def f(x: [N]):\n    return Sum[i: N](3 * ad_test_relu(x[i]) + ad_test_huber(x[i]))\n"
    )
    grad = well_formed(vjp(prog, "x"))
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.3, 1.0, 1.5])
    # relu'(0) = 0 (x > 0 is false there); huber' = clip(x, -1, 1)
    np.testing.assert_allclose(evaluate(grad, x=x, ybar=1.0), 3 * (x > 0) + np.clip(x, -1, 1))


def test_function_whose_derivative_has_no_index_language_form() -> None:
    register_function("ad_test_gamma", sympy.gamma(sympy.Symbol("x")))
    prog = parse("def f(x: [N]):\n    return Sum[i: N](ad_test_gamma(x[i]))\n")
    with pytest.raises(DifferentiationError, match="ad_test_gamma") as info:
        vjp(prog, "x")
    assert "register" in str(info.value)


# ================================================================================================
# Errors
# ================================================================================================

SIMPLE = "def f(x: [N], s: []):\n    return Sum[i: N](x[i]) * s\n"


@pytest.mark.parametrize(
    ("wrt", "message"),
    [
        ("z", "not a parameter of 'f'"),
        ((), "wrt is empty"),
        (("x", "x"), "appears twice"),
        ((3,), "parameter names"),
    ],
)
def test_bad_wrt(wrt: Any, message: str) -> None:
    prog = parse(SIMPLE)
    for transform in (vjp, jvp, hessian_program):
        with pytest.raises(DifferentiationError, match=message):
            transform(prog, wrt)


def test_hessian_needs_one_scalar_output_and_one_input() -> None:
    with pytest.raises(DifferentiationError, match="one scalar output"):
        hessian_program(parse("def f(x: [N]):\n    y[i: N] = x[i]\n    return y\n"), "x")
    with pytest.raises(DifferentiationError, match="one input"):
        hessian_program(parse(SIMPLE), ("x", "s"))
    with pytest.raises(DifferentiationError, match="expects a Program"):
        vjp(SIMPLE, "x")  # type: ignore[arg-type]


def test_deeply_nested_program_is_differentiated() -> None:
    body: Expr = Access("x")
    for _ in range(5000):
        body = Binary("+", body, Access("x"))
    prog = Program((Param("x"),), (), (body,))
    adjoint = vjp(prog, "x")  # 5001 * x: the adjoint is 5001 * ybar
    assert ea.evaluate(adjoint, x=0.3, ybar=2.0) == pytest.approx(2.0 * 5001)


def test_errors_are_eqsat_errors() -> None:
    assert issubclass(DifferentiationError, ea.EqsatError)
    assert issubclass(DifferentiationError, ea.ProgramError)


def test_trivial_folding_only() -> None:
    """0*e, 1*e and e+0 fold; nothing else is simplified (that is the optimizer's job)."""
    prog = parse("def f(x: [N]):\n    return Sum[i: N](x[i] * 1 + 0 * x[i] + x[i] * x[i])\n")
    tangent = well_formed(jvp(prog, "x"))
    (out,) = tangent.outputs
    consts = [e.value for e in walk(out) if isinstance(e, Const)]
    assert 0.0 not in consts
    # x_dot[i] * x[i] + x[i] * x_dot[i] stays two terms (no like-term merging here).
    assert sum(isinstance(e, Access) and e.name == "x_dot" for e in walk(out)) == 3
    x, dot = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    assert np.isclose(evaluate(tangent, x=x, x_dot=dot), np.sum(dot + 2 * x * dot))
