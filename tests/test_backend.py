"""The NumPy backend: generated code equals the reference interpreter, and has the right shape.

Values: every worked example (forward program, naive adjoint, symbolic Hessian) and random
programs from tests/strategies.py are run through the generated code and the interpreter.
Structure: the lowering's decisions (not timings) show that brackets become diagonal fills,
point writes and slices, never dense bracket arrays inside sums.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad import hessian_program, vjp
from eqsat_ad.backend import runtime
from eqsat_ad.backend.numpy import CompiledProgram, compile_program, lower, lower_program
from eqsat_ad.examples import WORKED_EXAMPLES, example, k_reads, k_traces
from eqsat_ad.ir import ProgramError, ShapeError, print_statement
from eqsat_ad.ir.interpreter import evaluate


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def assert_same(got, want, rtol=1e-9, atol=1e-11):
    got, want = _tuple(got), _tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def run_both(prog, inputs):
    return compile_program(prog)(**inputs), evaluate(prog, **inputs)


def adjoint_inputs(prog, inputs, seed=1):
    """Inputs of ``prog`` plus random cotangents for the extra (seed) parameters."""
    rng = np.random.default_rng(seed)
    out = dict(inputs)
    sizes = {}
    for p in prog.params:
        if p.name in inputs:
            for d, n in zip(p.shape, np.shape(inputs[p.name]), strict=True):
                if not isinstance(d, int):
                    sizes[d.name] = n
    for p in prog.params:
        if p.name not in out:
            shape = tuple(d if isinstance(d, int) else sizes[d.name] for d in p.shape)
            out[p.name] = rng.uniform(-1, 1, shape) if shape else float(rng.uniform(-1, 1))
    return out


# ================================================================================================
# Worked examples
# ================================================================================================

IDS = [ex.id for ex in WORKED_EXAMPLES]


@pytest.mark.parametrize("ex_id", IDS)
@pytest.mark.parametrize("scale", [1, 3])
def test_worked_example_forward_matches_interpreter(ex_id, scale):
    ex = example(ex_id)
    prog = ex.program()
    sizes = {k: max(1, v * scale // 2) for k, v in ex.default_sizes.items()}
    inputs = ex.inputs(sizes, seed=scale)
    got, want = run_both(prog, inputs)
    assert_same(got, want)
    assert_same(got, ex.numpy_f(**inputs))


@pytest.mark.parametrize("ex_id", IDS)
def test_worked_example_naive_adjoint_matches_interpreter(ex_id):
    ex = example(ex_id)
    prog = ex.program()
    if not ex.wrt:
        pytest.skip("no wrt")
    adj = vjp(prog, ex.wrt)
    inputs = adjoint_inputs(adj, ex.inputs(seed=2))
    got, want = run_both(adj, inputs)
    assert_same(got, want)


def test_worked_examples_at_n64():
    for ex_id in ("E1", "E3", "E6", "E8", "E9", "E10"):
        ex = example(ex_id)
        adj = vjp(ex.program(), ex.wrt)
        inputs = adjoint_inputs(adj, ex.inputs({"N": 64}, seed=3))
        got, want = run_both(adj, inputs)
        assert_same(got, want)


def test_symbolic_hessian_lowers_to_a_plus_a_transpose():
    ex = example("E7")
    h = hessian_program(ex.program(), "x")
    lowered = lower_program(h)
    inputs = ex.inputs({"N": 7}, seed=4)
    got = compile_program(h)(**inputs)
    assert_same(got, evaluate(h, **inputs))
    assert_same(got, ex.numpy_hessian(**inputs))
    # Nothing of rank 3 is built: every decision is over at most the two output axes.
    assert all(len(d.axes) <= 2 for d in lowered.decisions)


# ================================================================================================
# Structure: no dense bracket arrays inside sums
# ================================================================================================


def _no_mask_in_sums(lowered):
    bad = [d for d in lowered.decisions if d.kind == "mask" and d.in_sum]
    assert not bad, bad


@pytest.mark.parametrize("k", [1, 4, 32])
def test_k_traces_adjoint_fills_diagonals(k):
    ex = k_traces(k)
    adj = vjp(ex.program(), ex.wrt)
    lowered = lower_program(adj)
    _no_mask_in_sums(lowered)
    a_bar = [d for d in lowered.decisions if d.statement.startswith("A_bar")]
    # One O(N) diagonal write per trace term, no N x N bracket array anywhere.
    assert [d.kind for d in a_bar] == ["scatter"] * k
    assert all(len(d.axes) == 1 for d in a_bar)
    assert "np.where" not in lowered.source
    inputs = adjoint_inputs(adj, ex.inputs({"N": 9}))
    assert_same(compile_program(adj)(**inputs), evaluate(adj, **inputs))


def test_diag_inner_adjoint_reads_a_diagonal():
    adj = vjp(example("E3").program(), ("x",))
    lowered = lower_program(adj)
    _no_mask_in_sums(lowered)
    x_bar = [d.kind for d in lowered.decisions if d.statement == "x_bar"]
    assert "diagonal-view" in x_bar and "reduce" not in x_bar and "einsum" not in x_bar


@pytest.mark.parametrize("k", [3, 16])
def test_point_brackets_become_point_writes(k):
    ex = k_reads(k)
    adj = vjp(ex.program(), ex.wrt)
    lowered = lower_program(adj)
    _no_mask_in_sums(lowered)
    kinds = lowered.kinds("x_bar")
    assert kinds.count("point-write") == k
    assert not {"scatter", "reduce", "einsum", "gather"} & set(kinds)
    # Zero fill once, then k point updates.
    assert lowered.source.count("np.zeros") == 1
    for n in (2, k + 3):
        inputs = adjoint_inputs(adj, ex.inputs({"N": n}))
        assert_same(compile_program(adj)(**inputs), evaluate(adj, **inputs))


def test_shifted_differences_become_slices():
    adj = vjp(example("E8").program(), ("x",))
    lowered = lower_program(adj)
    _no_mask_in_sums(lowered)
    assert lowered.kinds("x_bar") == ["eliminated", "slice-write", "slice-write"]
    assert "x_bar[1:N] += d_bar[:N - 1]" in lowered.source


def test_stride_adjoint_is_linear():
    adj = vjp(example("E9").program(), ("x", "w"))
    lowered = lower_program(adj)
    _no_mask_in_sums(lowered)
    # Every decision lives on one axis: O(N) work.
    assert all(len(d.axes) <= 1 for d in lowered.decisions)


@pytest.mark.parametrize("ex_id", ["E2", "E3", "E5", "E8", "E9"])
def test_optimized_adjoints_have_no_bracket_arrays_in_sums(ex_id):
    ex = example(ex_id)
    g = ea.grad(ex.program(), wrt=tuple(ex.wrt))
    _no_mask_in_sums(g.compiled._lowered)
    inputs = ex.inputs(seed=5)
    got = g(**inputs)
    want = ex.numpy_grad(**inputs)
    for value, name in zip(got, ex.wrt, strict=True):
        np.testing.assert_allclose(value, want[name], rtol=1e-9, atol=1e-12)


# ================================================================================================
# Semantics the generated code must keep
# ================================================================================================


def test_zero_padding_shifts_strides_reversal_fractions_and_points():
    prog = ea.parse(
        """
def f(x: [N], w: [M], A: [N, M]):
    y[i: N] = x[i + 1] + x[i - 1] + x[N - 1 - i] + x[2*i] + w[i/2] + x[7] + A[i, i]
    z[i: N, j: M] = A[i + j, j - 1] + A[N - 1 - i, 2*j]
    return y, z
"""
    )
    rng = np.random.default_rng(0)
    for n, m in ((5, 3), (9, 12), (1, 1)):
        inputs = {"x": rng.normal(size=n), "w": rng.normal(size=m), "A": rng.normal(size=(n, m))}
        got, want = run_both(prog, inputs)
        assert_same(got, want)


def test_ranges_narrowed_past_the_end_are_empty():
    prog = ea.parse(
        """
def f(x: [N]):
    y[i: N] = (i >= 1 and i < N - 5) * x[i] + (i > N - 3) * x[N - 1 - i]
    return y
"""
    )
    for n in range(1, 9):
        got, want = run_both(prog, {"x": np.arange(1.0, n + 1)})
        assert_same(got, want)


def test_sums_over_unused_narrowed_indices_count_points():
    prog = ea.parse(
        """
def f(x: [N], y: [M]):
    s = Sum[i: N, j: M]((j + 1 < M) * x[i])
    t[i: N] = Sum[j: M, k: N]((j >= 2 and k < N - 1) * x[i] * 3)
    return s, t
"""
    )
    for n, m in ((3, 1), (4, 5), (2, 2)):
        got, want = run_both(prog, {"x": np.arange(1.0, n + 1), "y": np.ones(m)})
        assert_same(got, want)
        assert got[0] == pytest.approx((m - 1) * n * (n + 1) / 2)


def test_strong_zero_guards_and_empty_sums():
    prog = ea.parse(
        """
def f(x: [N]):
    y[i: N] = (i == 0) * (1 / (x[i] - x[i])) + (i > N) * log(x[i] - 2)
    s = Sum[i: N]((i < 0) * x[i]) + Sum[i: N, j: N](x[i])
    return y, s
"""
    )
    x = np.array([0.5, -0.25, 2.0])
    got, want = run_both(prog, {"x": x})
    assert_same(got, want)
    assert np.isinf(got[0][0]) and np.all(got[0][1:] == 0)
    assert got[1] == pytest.approx(3 * x.sum())


def test_non_finite_inputs_use_ieee_products():
    prog = ea.parse(
        """
def f(x: [N], A: [N, N]):
    y[i: N] = Sum[j: N](A[i, j] * x[j])
    return y
"""
    )
    x = np.array([0.0, 1.0, 2.0])
    a = np.ones((3, 3))
    a[1, 0] = np.inf
    got, want = run_both(prog, {"x": x, "A": a})
    assert_same(got, want)
    assert np.isnan(got[1])  # inf * 0 is nan (IEEE), as in the interpreter
    # a bracket still guards: inf * [false] is 0
    guarded = ea.parse(
        """
def f(x: [N], A: [N, N]):
    y[i: N] = Sum[j: N]((j != 0) * A[i, j] * x[j])
    return y
"""
    )
    got, want = run_both(guarded, {"x": x, "A": a})
    assert_same(got, want)
    assert np.isfinite(got).all()


def test_relations_are_boolean_masks():
    ex = example("E12")
    prog = ex.program()
    inputs = ex.inputs(seed=7)
    got, want = run_both(prog, inputs)
    assert_same(got, want)
    as_ints = {k: (v.astype(int) if isinstance(v, np.ndarray) and v.dtype == bool else v)
               for k, v in inputs.items()}
    assert_same(compile_program(prog)(**as_ints), want)


def test_float32_inputs_stay_float32():
    ex = example("E6")
    prog = vjp(ex.program(), ("A", "x"))
    inputs = {k: np.asarray(v, dtype=np.float32) for k, v in
              adjoint_inputs(prog, ex.inputs(seed=8)).items()}
    got = compile_program(prog)(**inputs)
    assert all(g.dtype == np.float32 for g in got)
    assert_same(got, evaluate(prog, **inputs), rtol=1e-4, atol=1e-5)
    fwd = compile_program(ex.program())(**{k: inputs[k] for k in ("A", "x")})
    assert isinstance(fwd, np.float32)


def test_builtins_and_registered_functions():
    prog = ea.parse(
        """
def f(x: [N], y: [N]):
    z[i: N] = exp(sin(x[i])) + log(1 + y[i] ** 2) + tanh(x[i]) * cos(y[i]) + sqrt(abs(x[i]))
    u[i: N] = sigmoid(x[i]) + max(x[i], y[i]) - min(x[i], y[i]) + stop_gradient(y[i]) / 3
    return z, u
"""
    )
    rng = np.random.default_rng(9)
    got, want = run_both(prog, {"x": rng.normal(size=6), "y": rng.normal(size=6)})
    assert_same(got, want)


def test_registered_functions_run_in_generated_code():
    import sympy

    x = sympy.Symbol("x")
    ea.register_function("backend_softplus", sympy.log(1 + sympy.exp(x)))
    prog = ea.parse("def f(v: [N]):\n    return Sum[i: N](backend_softplus(v[i]))\n")
    v = np.linspace(-2, 2, 5)
    got, want = run_both(prog, {"v": v})
    assert got == pytest.approx(np.log1p(np.exp(v)).sum()) and got == pytest.approx(want)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    programs(max_statements=3, scalar_output=False),
    sizes_strategy(),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_random_programs_and_adjoints_match_interpreter(prog, sizes, seed, adjoint):
    if adjoint:
        names = tensor_params(prog)
        if not names or len(prog.outputs) != 1:
            adjoint = False
        else:
            prog = vjp(prog, names[0])
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    got, want = run_both(prog, inputs)
    assert_same(got, want, rtol=1e-7, atol=1e-9)


# ================================================================================================
# Code shape, contraction order, caching, errors
# ================================================================================================


def test_source_has_one_commented_assignment_per_statement():
    prog = example("mlp").program()
    src = lower(prog)
    for s in prog.statements:
        assert f"# {print_statement(s)}" in src
        assert re.search(rf"^    {s.name} = ", src, re.M), s.name
    compile(src, "<test>", "exec")  # valid Python


def test_contraction_uses_the_cost_model_path():
    from eqsat_ad.cost import contraction_path
    from eqsat_ad.ir import size

    ex = example("chain")
    lowered = lower_program(ex.program(), {"N": 3000, "R": 8})
    (d,) = [d for d in lowered.decisions if d.kind == "einsum"]
    spec, path = d.detail.split(" path=")
    ins, out = spec.split("->")
    ext = {"a": size("N"), "b": size("R"), "c": size("N"), "d": size("R")}
    want = contraction_path(ins.split(","), out, ext, {"N": 3000, "R": 8}).einsum_path()
    assert eval(path) == want  # noqa: S307 - our own repr of a list of tuples
    # The chosen order never forms an N x N intermediate.
    inputs = ex.inputs({"N": 40, "R": 3})
    assert_same(compile_program(ex.program())(**inputs), ex.numpy_f(**inputs))


def test_compiled_programs_are_cached_per_program_and_signature():
    prog = example("E6").program()
    c = compile_program(prog)
    assert compile_program(prog) is c and isinstance(c, CompiledProgram)
    c = CompiledProgram(prog)  # a fresh one, to count its specializations
    rng = np.random.default_rng(0)
    a, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    c(a, x)
    c(A=a, x=x)
    assert len(c._by_signature) == 1
    c(a[:3, :3], x[:3])
    c(a.astype(np.float32), x.astype(np.float32))
    assert len(c._by_signature) == 3
    assert c.program is prog and "def quad_form(A, x):" in c.source


def test_bad_arguments_are_shape_errors():
    c = compile_program(example("E6").program())
    with pytest.raises(ShapeError, match="'x'"):
        c(np.ones((3, 3)), np.ones(4))
    with pytest.raises(ShapeError, match="missing"):
        c(np.ones((3, 3)))
    with pytest.raises(ShapeError, match="unexpected"):
        c(np.ones((3, 3)), np.ones(3), z=1)


def test_not_a_program_is_an_error():
    with pytest.raises(ProgramError, match="expected a Program"):
        lower("def f(x: [N]): return x")  # type: ignore[arg-type]


def test_empty_sizes_follow_the_interpreter():
    prog = example("E8").program()
    assert compile_program(prog)(np.zeros(0)) == evaluate(prog, np.zeros(0))


# ================================================================================================
# Runtime helpers
# ================================================================================================


def test_window_pads_with_zeros_and_returns_views_inside():
    x = np.arange(6.0)
    inside = runtime.window(x, ((1, 2, 3),))
    assert np.shares_memory(inside, x) and inside.tolist() == [1, 3, 5]
    assert runtime.window(x, ((4, 1, 4),)).tolist() == [4, 5, 0, 0]
    assert runtime.window(x, ((2, -1, 4),)).tolist() == [2, 1, 0, 0]
    assert runtime.window(x, ((-2, 3, 3),)).tolist() == [0, 1, 4]
    assert runtime.window(x, (9,)).tolist() == 0.0


def test_gather_and_scatter_add():
    x = np.arange(5.0)
    assert runtime.gather(x, (np.arange(6),), (2,)).tolist() == [0, 0, 1, 0, 2, 0]
    out = np.zeros(4)
    runtime.scatter_add(out, (np.array([0, 1, 2]),), np.array([1.0, 2.0, 3.0]),
                        np.array([True, False, True]), -1)
    assert out.tolist() == [-1, 0, -3, 0]
    with np.errstate(invalid="ignore"):  # (generated code runs under np.errstate too)
        assert runtime.smul(0, np.array([np.inf, 1.0])).tolist() == [0, 0]  # no term at all


# --- matrix products on BLAS ----------------------------------------------------------------------


def test_matrix_products_lower_to_matmul_on_views():
    src = lower(example("mlp").program())
    # Forward: the two layers are X @ W1.T and hid @ W2.T (a transposed view, not an einsum).
    # (A product of parameters may be wrapped in the check of its result: _rt.checked(...).)
    assert re.search(r"= (_rt\.checked\()?X @ W1\.T\)?$", src, re.M), src
    assert re.search(r"= (_rt\.checked\()?hid @ W2\.T\)?$", src, re.M), src
    assert "np.einsum('ac,bc->ab'" not in src
    ex = example("mlp")
    inputs = ex.inputs({"B": 5, "D": 7, "H": 6, "K": 3}, seed=3)
    assert_same(*run_both(ex.program(), inputs))


@pytest.mark.parametrize(
    "body, shapes",
    [
        ("y[i: N, k: M] = Sum[j: R](A[i, j] * B[j, k])", {"A": (4, 3), "B": (3, 5)}),
        ("y[k: M, i: N] = Sum[j: R](A[i, j] * B[j, k])", {"A": (4, 3), "B": (3, 5)}),
        ("y[i: N] = Sum[j: R](A[i, j] * x[j])", {"A": (4, 3), "x": (3,)}),
        ("y[k: M] = Sum[j: R](x[j] * B[j, k])", {"x": (3,), "B": (3, 5)}),
        ("y[b: N, i: R, k: M] = Sum[j: R](C[b, i, j] * D[b, j, k])",
         {"C": (4, 3, 3), "D": (4, 3, 5)}),
    ],
)
def test_pairwise_contractions_agree_with_the_interpreter(body, shapes):
    dims = {"N": 4, "R": 3, "M": 5}
    inv = {v: k for k, v in dims.items()}
    params = ", ".join(f"{n}: [{', '.join(inv[d] for d in s)}]" for n, s in shapes.items())
    prog = ea.parse(f"def f({params}):\n    {body}\n    return y\n")
    rng = np.random.default_rng(0)
    inputs = {n: rng.normal(size=s) for n, s in shapes.items()}
    assert " @ " in lower(prog)
    assert_same(*run_both(prog, inputs))
    # A non-finite input takes the strong-zero code: inf * 0 contributes 0.
    first = next(iter(shapes))
    inputs[first] = inputs[first].copy()
    inputs[first].flat[0] = np.inf
    for n in shapes:
        if n != first:
            inputs[n] = inputs[n].copy()
            inputs[n][(0,) * inputs[n].ndim] = 0.0
            inputs[n][(slice(None),) * (inputs[n].ndim - 1) + (0,)] = 0.0
            inputs[n][(0,) + (slice(None),) * (inputs[n].ndim - 1)] = 0.0
    assert_same(*run_both(prog, inputs))


def test_overflow_inside_the_program_gives_ieee_nan_in_a_matmul():
    # exp overflows to inf on finite inputs; the bracket-free product with a zero row is
    # 0 * inf = nan there, as in the interpreter (the fast code checks the computed operand
    # before the matmul; the strict code reruns the plain sum of products, which BLAS need not
    # compute).
    prog = ea.parse(
        """
def f(x: [N, R], B: [R, M]):
    y[i: N, k: M] = Sum[j: R](exp(x[i, j]) * B[j, k])
    return y
"""
    )
    x = np.zeros((3, 2))
    x[0, 0] = 1000.0
    b = np.ones((2, 4))
    b[0, :] = 0.0
    got, want = run_both(prog, {"x": x, "B": b})
    assert_same(got, want)
    assert np.isnan(got[0]).all() and np.isfinite(got[1:]).all()
    assert "_rt.checked(np.exp(x))" in lower(prog)


def test_finite_check_is_of_inputs():
    assert runtime.finite(np.ones(3), np.zeros((2, 2)))
    assert not runtime.finite(np.ones(3), np.array([0.0, np.nan]))
    assert not runtime.finite(np.array([np.inf]))
    # large arrays: one pass by the sum; a sum that overflows on finite entries is looked at
    # again; no floating-point warning or error, whatever the caller's np.errstate
    for n in (3, 5000):
        big = np.full(n, 1e308)
        with np.errstate(all="raise"):
            assert runtime.finite(big, np.full(n, 3e38, np.float32))
            for k, bad in ((0, np.inf), (n - 1, -np.inf), (n // 2, np.nan)):
                x = big.copy()
                x[k] = bad
                assert not runtime.finite(x)
            x[0] = -np.inf
            x[1] = np.inf
            assert not runtime.finite(x)
