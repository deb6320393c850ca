"""The public API: grad / compile / hessian / jvp / vjp on programs and NumPy-subset functions.

Gradients are checked against the hand-written gradients of the worked examples and against
central finite differences of the program itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.api import Compiled, gradient_program
from eqsat_ad.examples import WORKED_EXAMPLES, example
from eqsat_ad.ir import EqsatError, Program, ProgramError, ShapeError
from eqsat_ad.ir.interpreter import evaluate


def finite_difference(f, inputs, name, eps=1e-6):
    """Central differences of the scalar ``f(**inputs)`` with respect to ``inputs[name]``."""
    x = np.array(inputs[name], dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sign in (1, -1):
            y = x.copy()
            y[idx] += sign * eps
            g[idx] += sign * f(**{**inputs, name: y if y.ndim else float(y)})
    return g / (2 * eps)


# ================================================================================================
# grad on the worked examples
# ================================================================================================


@pytest.mark.parametrize("ex_id", [ex.id for ex in WORKED_EXAMPLES if ex.id != "E7"])
def test_grad_matches_hand_written_gradients(ex_id):
    ex = example(ex_id)
    g = ea.grad(ex.program(), wrt=tuple(ex.wrt))
    inputs = ex.inputs(seed=11)
    got = g(**inputs)
    want = ex.numpy_grad(**inputs)
    assert isinstance(got, tuple) and len(got) == len(ex.wrt)
    for value, name in zip(got, ex.wrt, strict=True):
        np.testing.assert_allclose(value, want[name], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("ex_id", ["E6", "E8", "E9", "mlp"])
def test_grad_matches_finite_differences(ex_id):
    ex = example(ex_id)
    prog = ex.program()
    inputs = ex.inputs({k: min(v, 4) for k, v in ex.default_sizes.items()}, seed=12)
    f = ea.compile(prog, optimize=False)
    for name in ex.wrt[:2]:
        g = ea.grad(prog, wrt=name)
        np.testing.assert_allclose(
            g(**inputs), finite_difference(f, inputs, name), rtol=1e-5, atol=1e-6
        )


def test_unoptimized_grad_runs_the_naive_adjoint_through_the_backend():
    ex = example("E8")
    prog = ex.program()
    naive = ea.grad(prog, wrt="x", optimize=False)
    assert naive.program == gradient_program(prog, ("x",))
    assert naive.report is not None and naive.report.stats.stop_reason == "not run"
    inputs = ex.inputs(seed=13)
    np.testing.assert_allclose(naive(**inputs), ex.numpy_grad(**inputs)["x"], rtol=1e-10)
    np.testing.assert_allclose(naive(**inputs), ea.grad(prog, wrt="x")(**inputs), rtol=1e-10)


def test_optimizer_options_pass_through():
    ex = example("E2")
    inputs = ex.inputs(seed=23)
    want = ex.numpy_grad(**inputs)["A"]
    short = ea.grad(ex.program(), wrt="A", limits=ea.Limits(iterations=1, nodes=200),
                    rules=["indicator"], sizes={"N": 64})
    np.testing.assert_allclose(short(**inputs), want)
    assert short.report.stats.stop_reason in {"saturated", "iteration limit", "node limit",
                                              "time limit"}


def test_grad_exposes_source_program_and_report():
    g = ea.grad(example("E3").program(), wrt="x")
    assert isinstance(g, Compiled)
    assert g.source.startswith("def ") and "x_bar" in g.source
    assert isinstance(g.program, Program) and "x_bar" in str(g.program)
    assert "Cost report" in str(g.report)


# ================================================================================================
# wrt, arguments, results
# ================================================================================================


def test_wrt_by_name_position_default_and_tuple():
    ex = example("E6")  # quad_form(A, x)
    prog = ex.program()
    inputs = ex.inputs(seed=14)
    want = ex.numpy_grad(**inputs)
    np.testing.assert_allclose(ea.grad(prog)(**inputs), want["A"])  # first parameter
    np.testing.assert_allclose(ea.grad(prog, wrt=1)(**inputs), want["x"])
    np.testing.assert_allclose(ea.grad(prog, wrt=-1)(**inputs), want["x"])
    (only,) = ea.grad(prog, wrt=("x",))(**inputs)
    np.testing.assert_allclose(only, want["x"])
    a_bar, x_bar = ea.grad(prog, wrt=("A", 1))(inputs["A"], inputs["x"])  # positional args
    np.testing.assert_allclose(a_bar, want["A"])
    np.testing.assert_allclose(x_bar, want["x"])
    mixed = ea.grad(prog, wrt="x")(inputs["A"], x=inputs["x"])
    np.testing.assert_allclose(mixed, want["x"])


def test_preserve_result_returns_the_value_too():
    ex = example("E6")
    inputs = ex.inputs(seed=15)
    x_bar, value = ea.grad(ex.program(), wrt="x", preserve_result=True)(**inputs)
    np.testing.assert_allclose(x_bar, ex.numpy_grad(**inputs)["x"])
    assert value == pytest.approx(ex.numpy_f(**inputs))


def test_compile_runs_the_forward_program():
    ex = example("chain")
    inputs = ex.inputs(seed=16)
    f = ea.compile(ex.program())
    assert f(**inputs) == pytest.approx(ex.numpy_f(**inputs))
    assert "np.einsum" in f.source


def test_float32_gradients_stay_float32():
    ex = example("E10")
    inputs = {k: np.asarray(v, np.float32) for k, v in ex.inputs(seed=17).items()}
    got = ea.grad(ex.program(), wrt="A")(**inputs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ex.numpy_grad(**inputs)["A"], rtol=1e-4, atol=1e-4)


def test_verbose_prints_program_code_and_report(capsys):
    ea.grad(example("E1").program(), wrt="A", verbose=True)
    out = capsys.readouterr().out
    assert "A_bar" in out and "def " in out and "Cost report" in out


# ================================================================================================
# hessian, jvp, vjp
# ================================================================================================


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    ex = example("E7")
    inputs = ex.inputs({"N": 6}, seed=18)
    h = ea.hessian(ex.program(), wrt="x")
    np.testing.assert_allclose(h(**inputs), inputs["A"] + inputs["A"].T, rtol=1e-12)
    # Lowered without rank-3 work (no N one-hot products, no N^3 temporaries).
    assert all(len(d.axes) <= 2 for d in h.compiled.decisions)


def test_hessian_matches_finite_differences_of_the_gradient():
    prog = ea.parse(
        """
def f(x: [N]):
    return Sum[i: N](sin(x[i]) * x[i + 1] + x[i] ** 3)
"""
    )
    x = np.random.default_rng(19).normal(size=5)
    g = ea.grad(prog, wrt="x")
    h = ea.hessian(prog, wrt="x")
    rows = [finite_difference(lambda x, k=k: g(x=x)[k], {"x": x}, "x") for k in range(5)]
    np.testing.assert_allclose(h(x=x), np.array(rows), rtol=1e-5, atol=1e-6)


def test_jvp_and_vjp_return_programs_satisfying_the_adjoint_identity():
    ex = example("E6")
    prog = ex.program()
    j = ea.jvp(prog, wrt="x")
    v = ea.vjp(prog, wrt="x")
    assert isinstance(j, Program) and isinstance(v, Program)
    assert "x_dot" in j.param_names and "ybar" in v.param_names
    inputs = ex.inputs(seed=20)
    dx = np.random.default_rng(21).normal(size=inputs["x"].shape)
    tangent = ea.compile(j, optimize=False)(**inputs, x_dot=dx)
    cot = ea.compile(v, optimize=False)(**inputs, ybar=1.5)
    assert 1.5 * tangent == pytest.approx(float(np.dot(cot, dx)))


# ================================================================================================
# Random programs: gradients against finite differences
# ================================================================================================


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=2, smooth=True, allow_relations=False), sizes_strategy(max_value=3),
       st.integers(0, 2**16))
def test_random_smooth_programs_grad_vs_finite_differences(prog, sizes, seed):
    names = tensor_params(prog)
    if not names:
        return
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    name = names[0]
    g = ea.grad(prog, wrt=name, optimize=False)(**inputs)

    def f(**kw):
        return evaluate(prog, **kw)

    np.testing.assert_allclose(g, finite_difference(f, inputs, name), rtol=1e-4, atol=1e-5)


# ================================================================================================
# Python functions (Tangent-style)
# ================================================================================================


def tanh_layer_loss(x, W):
    return np.sum(np.tanh(W @ x) ** 2)


def sum_of_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def test_grad_of_a_numpy_function_binds_shapes_at_the_first_call():
    rng = np.random.default_rng(22)
    g = ea.grad(tanh_layer_loss, wrt="W")
    with pytest.raises(EqsatError, match="first call"):
        _ = g.source
    for n in (3, 5):
        x, w = rng.normal(size=n), rng.normal(size=(n, n))
        t = np.tanh(w @ x)
        np.testing.assert_allclose(g(x, w), np.outer(2 * t * (1 - t**2), x), rtol=1e-10)
        np.testing.assert_allclose(g(x=x, W=w), np.outer(2 * t * (1 - t**2), x), rtol=1e-10)
    assert len(g._stages) == 2  # one specialization per shape signature
    assert "def tanh_layer_loss_grad" in g.source


def test_grad_of_a_numpy_function_ahead_of_time_and_by_position():
    g = ea.grad(sum_of_squares, wrt=0, shapes={"x": (6,)})
    assert "x_bar" in g.source  # compiled before any call
    x = np.arange(6.0)
    np.testing.assert_allclose(g(x), 2 * x)


def test_jvp_of_a_numpy_function_needs_primals_and_tangents_or_shapes():
    with pytest.raises(TypeError, match="shapes"):
        ea.jvp(sum_of_squares)
    assert isinstance(ea.vjp(sum_of_squares, shapes={"x": ("N",)}), Program)


# ================================================================================================
# Errors
# ================================================================================================


def test_grad_needs_a_scalar_output():
    prog = ea.parse("def f(x: [N]):\n    y[i: N] = 2 * x[i]\n    return y\n")
    with pytest.raises(ProgramError, match="scalar output"):
        ea.grad(prog, wrt="x")


def test_bad_wrt_is_a_clear_error():
    prog = example("E12").program()  # relation(x, w, R)
    with pytest.raises(ProgramError, match="not a parameter"):
        ea.grad(prog, wrt="z")
    with pytest.raises(ProgramError, match="out of range"):
        ea.grad(prog, wrt=7)
    with pytest.raises(EqsatError, match="relation"):
        ea.grad(prog, wrt="R")
    with pytest.raises(TypeError, match="names or positions"):
        ea.grad(prog, wrt=1.5)  # type: ignore[arg-type]


def test_bad_arguments_to_a_gradient_are_shape_errors():
    g = ea.grad(example("E6").program(), wrt="x")
    with pytest.raises(ShapeError):
        g(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ShapeError):
        ea.grad(tanh_layer_loss)(np.ones(3))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_shape_error_names_the_argument_and_carries_no_internal_context(backend: str):
    if backend == "numba":
        pytest.importorskip("numba")
    prog = ea.parse("def f(x: [N], y: [N]):\n    return Sum[i: N](x[i] * y[i])\n")
    g = ea.grad(prog, wrt="x", backend=backend)
    g(x=np.ones(4), y=np.ones(4))  # (a signature seen before: the repeat path too)
    for call in (lambda: g(x=np.ones(4), y=np.ones(3)), lambda: g(np.ones(4), np.ones(3))):
        with pytest.raises(ShapeError, match="argument 'y' has shape \\(3,\\)") as info:
            call()
        # (the binder's internal signal is not shown as the error's context)
        assert info.value.__context__ is None and info.value.__cause__ is None


def test_not_a_program_or_function():
    with pytest.raises(TypeError, match="expected a Program") as info:
        ea.grad(42)  # type: ignore[arg-type]
    assert isinstance(info.value, EqsatError)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=3), sizes_strategy(), st.integers(0, 2**16), st.booleans())
def test_random_gradients_match_interpreter_in_float64_and_float32(prog, sizes, seed, f32):
    names = tensor_params(prog)
    if not names:
        return
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    if f32:
        inputs = {
            k: np.float32(v) if isinstance(v, float) else v if v.dtype == bool
            else v.astype(np.float32)
            for k, v in inputs.items()
        }
    g = ea.grad(prog, wrt=tuple(names), optimize=False)
    got = g(**inputs)
    want = evaluate(g.program, **inputs)
    tol = {"rtol": 1e-4, "atol": 1e-5} if f32 else {"rtol": 1e-7, "atol": 1e-9}
    for a, b in zip(got, want, strict=True):
        assert (np.asarray(a).dtype == np.float32) == f32
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)
