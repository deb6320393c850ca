"""Cross-stage tests: every stage of the pipeline against the reference interpreter.

parse / strategies -> ad.vjp / ad.jvp -> egraph.optimize -> backend.numpy.compile_program.
Random well-formed programs (tests/strategies.py) and their naive adjoints are optimized; the
optimized program must evaluate (reference interpreter) to what the naive one does, and the
compiled code of both must equal the interpreter. Tensor-output programs check the adjoint
identity ⟨ȳ, jvp(ẋ)⟩ = ⟨vjp(ȳ), ẋ⟩ through optimized, compiled code.

Saturation is bounded by iterations and e-graph size only (a generous wall-time bound that is
never reached), and hypothesis runs derandomized: the optimizer's output, and so each test,
is the same on a busy machine as on an idle one. Every bug these tests found has a
deterministic regression test below.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad import hessian_program, jvp, vjp
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.egraph.optimize import Limits, optimize
from eqsat_ad.ir import Access, Program, dim_value
from eqsat_ad.ir.interpreter import bind_arguments, evaluate

# The default bounds without the wall clock: iterations and nodes stop saturation, so the
# result does not depend on how busy the machine is.
LIMITS = replace(Limits(), seconds=120.0)
# Saturation cut short on purpose: what is extracted must still be correct (docs/design.md).
SHORT_LIMITS = (
    replace(LIMITS, iterations=0),
    replace(LIMITS, iterations=1),
    replace(LIMITS, iterations=2),
    replace(LIMITS, nodes=300),
)

PIPELINE_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_close(got, want, what: str, rtol: float = 1e-8) -> None:
    """Equal up to rounding (sums may be reordered between stages); tuples elementwise."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{what}[{k}]", rtol)
        return
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=what)


def seed_inputs(adjoint: Program, prog: Program, sizes, rng) -> dict:
    """Random values for the parameters ``adjoint`` adds to ``prog`` (cotangents, tangents)."""
    out = {}
    for p in adjoint.params:
        if p.name in prog.param_names:
            continue
        shape = tuple(dim_value(d, sizes) for d in p.shape)
        out[p.name] = rng.uniform(-1.0, 1.0, shape) if shape else float(rng.uniform(-1.0, 1.0))
    return out


def assert_float64(result, what: str) -> None:
    """Compiled code returns float64 arrays for float64 inputs (never ints, never float32)."""
    for value in result if isinstance(result, tuple) else (result,):
        assert np.asarray(value).dtype == np.float64, f"{what}: dtype {np.asarray(value).dtype}"


def check_every_stage(prog: Program, inputs: dict, limits: Limits = LIMITS) -> Program:
    """optimize(prog) evaluates like prog and prints as index language that parses back to it;
    compiled naive and optimized programs equal the interpreter. Returns the optimized program."""
    reference = evaluate(prog, **inputs)
    result = optimize(prog, limits=limits)
    optimized = result.program
    assert optimized.param_names == prog.param_names
    assert ea.parse(str(optimized)) == optimized, f"does not round-trip:\n{optimized}"
    assert_close(evaluate(optimized, **inputs), reference, f"optimized program\n{optimized}")
    for what, stage in (("naive", prog), ("optimized", optimized)):
        compiled = compile_program(stage)(**inputs)
        assert_close(compiled, reference, f"compiled {what} program\n{stage}")
        assert_float64(compiled, f"compiled {what} program\n{stage}")
    return optimized


# ================================================================================================
# Random programs and their naive adjoints through every stage
# ================================================================================================


@PIPELINE_SETTINGS
@given(programs(max_statements=2, max_depth=2), sizes_strategy(), st.integers(0, 2**16),
       st.integers(0, 5))
def test_optimized_adjoint_equals_naive_adjoint_on_every_stage(prog, sizes, seed, pick):
    """For q = vjp(p, wrt): optimize(q) evaluates like q, and the compiled naive and optimized
    adjoints equal the reference interpreter."""
    names = tensor_params(prog)
    wrt = names[pick % len(names)]
    adjoint = vjp(prog, wrt)
    rng = np.random.default_rng(seed)
    inputs = random_inputs(prog, sizes, rng)
    inputs |= seed_inputs(adjoint, prog, sizes, rng)
    check_every_stage(adjoint, inputs)


@PIPELINE_SETTINGS
@given(programs(max_statements=2, max_depth=2, scalar_output=False), sizes_strategy(),
       st.integers(0, 2**16))
def test_optimized_forward_equals_forward_on_every_stage(prog, sizes, seed):
    """optimize(p) of the forward program itself (scalar, tensor and tuple outputs) evaluates
    like p, and both compile to code that equals the interpreter."""
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    check_every_stage(prog, inputs)


@settings(PIPELINE_SETTINGS, max_examples=20)
@given(programs(max_statements=2, max_depth=2), sizes_strategy(), st.integers(0, 2**16),
       st.sampled_from(SHORT_LIMITS))
def test_saturation_cut_short_still_gives_a_correct_adjoint(prog, sizes, seed, limits):
    """Hitting an iteration or node bound is not an error: the program extracted from the
    partial e-graph is still equal to the naive adjoint, and still compiles correctly."""
    wrt = tensor_params(prog)[0]
    adjoint = vjp(prog, wrt)
    rng = np.random.default_rng(seed)
    inputs = random_inputs(prog, sizes, rng) | seed_inputs(adjoint, prog, sizes, rng)
    check_every_stage(adjoint, inputs, limits)


@settings(PIPELINE_SETTINGS, max_examples=15)
@given(programs(max_statements=2, max_depth=2, smooth=True), sizes_strategy(max_value=3),
       st.integers(0, 2**16))
def test_optimized_hessian_equals_naive_hessian_on_every_stage(prog, sizes, seed):
    """The symbolic Hessian (forward over reverse, one program of rank 2·rank(x)) survives
    optimization and compilation unchanged."""
    hessian = hessian_program(prog, tensor_params(prog)[0])
    check_every_stage(hessian, random_inputs(prog, sizes, np.random.default_rng(seed)))


# ================================================================================================
# The adjoint identity through compiled code
# ================================================================================================


def output_shapes(prog: Program, sizes) -> list[tuple[int, ...]]:
    shapes = []
    for o in prog.outputs:
        if isinstance(o, Access) and not o.indices and o.name not in prog.param_names:
            shapes.append(tuple(dim_value(d, sizes) for d in prog.shape_of(o.name)))
        else:
            shapes.append(())
    return shapes


@settings(PIPELINE_SETTINGS, max_examples=25)
@given(programs(max_statements=2, max_depth=2, scalar_output=False, smooth=True),
       sizes_strategy(), st.integers(0, 2**16), st.integers(0, 5))
def test_adjoint_identity_through_optimized_compiled_code(prog, sizes, seed, pick):
    """For tensor (and tuple) outputs y = f(x): Σ_k ⟨ȳ_k, ẏ_k⟩ = ⟨x̄, ẋ⟩, where ẏ comes from the
    compiled optimized jvp and x̄ from the compiled optimized vjp (ea.compile of each)."""
    names = tensor_params(prog)
    wrt = names[pick % len(names)]
    rng = np.random.default_rng(seed)
    inputs = random_inputs(prog, sizes, rng)
    tangent_prog, adjoint_prog = jvp(prog, wrt), vjp(prog, wrt)
    dots = seed_inputs(tangent_prog, prog, sizes, rng)
    bars = seed_inputs(adjoint_prog, prog, sizes, rng)
    tangent = ea.compile(tangent_prog, limits=LIMITS)(**inputs, **dots)
    x_bar = ea.compile(adjoint_prog, limits=LIMITS)(**inputs, **bars)

    tangents = tangent if prog.returns_tuple else (tangent,)
    shapes = output_shapes(prog, sizes)
    seeds = [bars[p.name] for p in adjoint_prog.params if p.name in bars]
    assert len(tangents) == len(seeds) == len(shapes)
    lhs = sum(float(np.sum(np.asarray(y_bar) * np.asarray(y_dot)))
              for y_bar, y_dot in zip(seeds, tangents, strict=True))
    (x_dot,) = dots.values()
    rhs = float(np.sum(np.asarray(x_bar) * np.asarray(x_dot)))
    for y_dot, shape in zip(tangents, shapes, strict=True):
        assert np.shape(y_dot) == shape
    assert np.shape(x_bar) == np.shape(x_dot)
    scale = max(1.0, abs(lhs), abs(rhs))
    assert abs(lhs - rhs) <= 1e-8 * scale, f"<ybar, jvp> = {lhs}, <vjp, xdot> = {rhs}\n{prog}"


# ================================================================================================
# Regressions: bugs found by the tests above, each as a minimal program
# ================================================================================================


def run_all_stages(source: str, inputs: dict, wrt: str | None = None) -> None:
    prog = ea.parse(source)
    if wrt is not None:
        adjoint = vjp(prog, wrt)
        _, sizes = bind_arguments(prog, **inputs)
        inputs = inputs | seed_inputs(adjoint, prog, sizes, np.random.default_rng(0))
        prog = adjoint
    check_every_stage(prog, inputs)


def test_bare_inequality_bracket_plus_point_scatter_stays_float():
    """y[i] = [i == 2]·x[i] + [i != 1]: the bracket term must not fix the output's dtype (it
    once did: an int array from np.where(m, 1, 0) truncated the scattered float)."""
    source = "def f(x: [N]):\n    y[i: 3] = (i == 2) * x[i] + (i != 1)\n    return y\n"
    x = np.array([0.5, 0.25, 0.75])
    prog = ea.parse(source)
    np.testing.assert_array_equal(evaluate(prog, x=x), [1.0, 0.0, 1.75])
    got = compile_program(prog)(x=x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1.0, 0.0, 1.75])


def test_sum_elimination_then_inlining_keeps_the_range_guard():
    """y[i] = Σ_j [i == j+1]·d[j] with d[j] = [j+1 < N]·(x[j+1] - x[j]): y[0] reads d[-1] = 0,
    so inlining d[i - 1] must keep [i >= 1] (once lost: E8's gradient was wrong at i = 0)."""
    source = (
        "def f(x: [N]):\n"
        "    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])\n"
        "    y[i: N] = Sum[j: N]((i == j + 1) * d[j])\n"
        "    return y\n"
    )
    x = np.array([0.5, 0.25, 1.0, 2.0])
    np.testing.assert_array_equal(evaluate(ea.parse(source), x=x), [0.0, -0.25, 0.75, 1.0])
    run_all_stages(source, {"x": x})
    run_all_stages(source, {"x": x}, wrt="x")


def test_adjoint_keeps_the_strong_zero_guard_of_a_bracket():
    """f = Σ_i [i == 0]·log(x[i]) is finite at x = (1.5, 0, -1) and depends on x[0] only, so
    ∇f = (1/1.5, 0, 0): the naive adjoint, the optimized and the compiled gradients say so."""
    source = "def f(x: [N]):\n    return Sum[i: N]((i == 0) * log(x[i]))\n"
    prog = ea.parse(source)
    x = np.array([1.5, 0.0, -1.0])
    want = np.array([1 / 1.5, 0.0, 0.0])
    tangent = jvp(prog, "x")
    assert [evaluate(tangent, x=x, x_dot=e) for e in np.eye(3)] == pytest.approx(want)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(evaluate(vjp(prog, "x"), x=x, ybar=1.0), want)
        np.testing.assert_allclose(ea.grad(prog, wrt="x", optimize=False)(x=x), want)
        np.testing.assert_allclose(ea.grad(prog, wrt="x", limits=LIMITS)(x=x), want)


def test_shared_adjoint_of_a_constant_statement_keeps_its_binders():
    """The adjoint of sum(A @ B @ C) with constant extents (as the NumPy frontend makes it):
    t_bar feeds both A_bar and B_bar, t1_bar is the constant 1. (Once, a Sum lost its binder
    here and optimize raised ProgramError: index 'l' is not bound.)"""
    source = (
        "def g(A: [5, 3], B: [3, 5], C: [5, 3]):\n"
        "    t1_bar[i: 5, j: 3] = 1\n"
        "    t_bar[i: 5, j: 5] = Sum[k: 3](t1_bar[i, k] * C[j, k])\n"
        "    A_bar[i: 5, j: 3] = Sum[k: 5](t_bar[i, k] * B[j, k])\n"
        "    B_bar[i: 3, j: 5] = Sum[k: 5](t_bar[k, j] * A[k, i])\n"
        "    return A_bar, B_bar\n"
    )
    rng = np.random.default_rng(1)
    shapes = {"A": (5, 3), "B": (3, 5), "C": (5, 3)}
    run_all_stages(source, {name: rng.uniform(-1, 1, shape) for name, shape in shapes.items()})


# Regression: strided elimination of Σ_l [i == 2l + c] once substituted l := (i - c)/2 into an
# e-class that also held a statement's inlined body, which does not vanish at fractional l.


@pytest.mark.parametrize(
    ("source", "x", "want"),
    [
        # t[1/2] must read 0; the optimizer returns (3 > i/2) * x[0]
        ("def f(x: [N]):\n    t[l: 3] = x[0]\n"
         "    y[i: 2] = Sum[l: 3]((i == 2*l) * t[l])\n    return y\n",
         [0.75, -0.5, 0.25], [0.75, 0.0]),
        # i = 2 has no l with 2l + 1 = 2; the optimizer returns (...) * x[i - 1]
        ("def f(x: [N]):\n    t[l: N] = x[2*l]\n"
         "    y[i: 3] = Sum[l: 3]((i == 2*l + 1) * t[l])\n    return y\n",
         [0.75, -0.5, 0.25, 1.0, 2.0], [0.0, 0.75, 0.0]),
    ],
    ids=["t-constant", "t-strided"],
)
def test_strided_sum_elimination_then_inlining_keeps_integrality(source, x, want):
    """y[i] = Σ_l [i == 2l + c]·t[l] is zero where i - c is odd, whatever t is."""
    x = np.array(x)
    np.testing.assert_array_equal(evaluate(ea.parse(source), x=x), want)
    run_all_stages(source, {"x": x})


@pytest.mark.parametrize(
    ("source", "want"),
    [
        # f = x[0] + x[2]; the optimizer returned x_bar[i] = [2 > i/2]: [1, 1, 1, 1, 0]
        ("def f(x: [N]):\n    y[l: 2] = x[2*l]\n    return Sum[l: 2](y[l])\n",
         [1.0, 0.0, 1.0, 0.0, 0.0]),
        # f = Σ_i x[2i]^2; the optimizer returned 2·x at every index, odd ones included
        ("def f(x: [N]):\n    t[l: N] = x[l]\n    y[i: N] = t[2*i]\n"
         "    return Sum[i: N](y[i] * y[i])\n",
         [2.0, 0.0, 6.0, 0.0, 10.0]),
    ],
    ids=["strided-statement", "statement-read-strided"],
)
def test_gradient_of_a_strided_read_through_a_statement(source, want):
    """ea.grad where a statement is read (or written) at 2i: odd entries of x̄ are 0."""
    prog = ea.parse(source)
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(ea.grad(prog, wrt="x", optimize=False)(x=x), want)
    np.testing.assert_array_equal(ea.grad(prog, wrt="x", limits=LIMITS)(x=x), want)
