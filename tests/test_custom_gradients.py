"""Custom derivative rules (eqsat_ad.ad.custom): straight-through estimators, gradient clipping,
binary functions, explicit tangent rules, stop_gradient — and their composition with jvp, vjp
and second derivatives."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import sympy
from test_ad import central_difference, walk, well_formed

import eqsat_ad as ea
import eqsat_ad.ad.custom as custom_module
from eqsat_ad.ad import (
    DifferentiationError,
    custom_adjoint,
    hessian_program,
    jvp,
    stop_gradient,
    vjp,
)
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import Call, register_function
from eqsat_ad.ir.interpreter import evaluate

# Registered once for the whole module (names are global in the function table).
ST_ROUND = custom_adjoint("cg_st_round", np.round, adjoint=lambda x, g: g)
CLIP = custom_adjoint(
    "cg_clip_grad", lambda x: x, adjoint=lambda x, g: g * sympy.Heaviside(1 - x**2)
)
PRODUCT = custom_adjoint(
    "cg_mul", lambda a, b: a * b, adjoint=lambda x, y, g: (g * y, g * x)
)
# A deliberately different tangent rule, to see that forward mode uses it.
TWICE_FWD = custom_adjoint(
    "cg_twice_fwd", lambda x: x, adjoint=lambda x, g: g, jvp=lambda x, dx: 2 * dx
)


def test_straight_through_round() -> None:
    prog = parse("def f(x: [N]):\n    return Sum[i: N](cg_st_round(x[i]) * x[i])\n")
    x = np.array([0.4, 1.6, -2.2])
    assert evaluate(prog, x=x) == pytest.approx(np.sum(np.round(x) * x))
    grad = well_formed(vjp(prog, "x"))
    # d/dx round(x)·x with round' := 1 is x + round(x)
    np.testing.assert_allclose(evaluate(grad, x=x, ybar=1.0), x + np.round(x))
    tangent = well_formed(jvp(prog, "x"))
    dot = np.array([1.0, -1.0, 2.0])
    assert evaluate(tangent, x=x, x_dot=dot) == pytest.approx(np.sum(dot * (x + np.round(x))))


def test_callable_runs_forward() -> None:
    assert ST_ROUND(np.array([1.4, 2.6])).tolist() == [1.0, 3.0]
    assert ST_ROUND.name == "cg_st_round" and ST_ROUND.arity == 1
    with pytest.raises(TypeError, match="takes 1 argument"):
        ST_ROUND(1.0, 2.0)


def test_gradient_clipping_rule() -> None:
    prog = parse("def f(x: [N]):\n    return Sum[i: N](cg_clip_grad(x[i]) * 3)\n")
    x = np.array([0.5, -2.0, 0.9, 1.5])
    grad = well_formed(vjp(prog, "x"))
    assert any(isinstance(e, Call) and e.fn == "step" for e in walk(grad.statement("x_bar").body))
    np.testing.assert_allclose(evaluate(grad, x=x, ybar=1.0), 3.0 * (np.abs(x) < 1))


def test_binary_custom_function_matches_finite_differences() -> None:
    prog = parse(
        "def f(x: [N], w: [N]):\n    return Sum[i: N](cg_mul(x[i], w[i] ** 2) * x[i])\n"
    )
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal(3), "w": rng.standard_normal(3)}
    gx, gw = evaluate(well_formed(vjp(prog, ("x", "w"))), **inputs, ybar=1.0)
    np.testing.assert_allclose(gx, central_difference(prog, inputs, "x"), rtol=1e-6)
    np.testing.assert_allclose(gw, central_difference(prog, inputs, "w"), rtol=1e-6)


def test_explicit_jvp_rule_is_used_by_forward_mode_only() -> None:
    prog = parse("def f(x: [N]):\n    return Sum[i: N](cg_twice_fwd(x[i]))\n")
    x, dot = np.array([1.0, 2.0]), np.array([0.5, 0.25])
    assert evaluate(jvp(prog, "x"), x=x, x_dot=dot) == pytest.approx(2 * np.sum(dot))
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), np.ones(2))


def test_custom_rules_compose_to_second_order() -> None:
    """vjp of jvp and hessian_program differentiate the custom coefficients in turn."""
    prog = parse(
        "def f(x: [N]):\n    return Sum[i: N](cg_mul(x[i], x[i]) * cg_st_round(x[i]))\n"
    )
    x = np.array([0.3, 1.7, -0.6])
    # f = Σ x² round(x), round' := 1: f' = 2x·round(x) + x², f'' = 2 round(x) + 4x
    np.testing.assert_allclose(
        evaluate(vjp(prog, "x"), x=x, ybar=1.0), 2 * x * np.round(x) + x**2
    )
    H = evaluate(well_formed(hessian_program(prog, "x")), x=x)
    np.testing.assert_allclose(H, np.diag(2 * np.round(x) + 4 * x))
    v = np.array([1.0, -1.0, 0.5])
    hv = evaluate(well_formed(vjp(jvp(prog, "x"), "x")), x=x, x_dot=v, ybar=1.0)
    np.testing.assert_allclose(hv, H @ v)


def test_stop_gradient_is_the_identity_in_python_and_constant_in_programs() -> None:
    a = np.array([1.0, 2.0])
    assert stop_gradient(a) is a
    assert ea.stop_gradient(3.5) == 3.5
    prog = parse("def f(x: [N]):\n    return Sum[i: N](stop_gradient(x[i] ** 2) * x[i])\n")
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=a, ybar=1.0), a**2)


def test_replacing_a_custom_function_by_a_plain_one_drops_the_rule() -> None:
    custom_adjoint("cg_replaced", np.round, adjoint=lambda x, g: g)
    register_function("cg_replaced", sympy.Symbol("x") ** 2)
    prog = parse("def f(x: [N]):\n    return Sum[i: N](cg_replaced(x[i]))\n")
    x = np.array([1.5, -0.5])
    np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), 2 * x)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "exp", "adjoint": lambda x, g: g}, "built-in"),
        ({"name": "not a name", "adjoint": lambda x, g: g}, "identifier"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g**2}, "linear in g"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g + 1}, "linear in g"),
        ({"name": "cg_bad", "adjoint": lambda g: g}, "adjoint\\(x, g\\)"),
        ({"name": "cg_bad", "adjoint": lambda x, y, g: g}, "2 value"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g * sympy.erf(x)}, "not a registered"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g * sympy.Symbol("z")}, "unknown symbols"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g, "jvp": lambda x: x}, "2 arguments"),
        ({"name": "cg_bad", "adjoint": lambda x, g: g, "jvp": lambda x, d: d * d}, "linear"),
        ({"name": "cg_bad", "adjoint": lambda x, g: [][0]}, "failed on symbolic"),
        ({"name": "cg_bad", "adjoint": "g"}, "callables"),
    ],
)
def test_bad_custom_rules(kwargs: dict, message: str) -> None:
    with pytest.raises(DifferentiationError, match=message):
        custom_adjoint(forward=np.round, **kwargs)


def test_docstring_example() -> None:
    result = doctest.testmod(custom_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
