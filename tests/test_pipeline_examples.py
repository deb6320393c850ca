"""The worked examples end to end: parse -> grad/hessian -> optimize -> NumPy backend.

Every gradient is compared with the example's hand-written NumPy gradient (never derived by the
library), with and without the optimizer. The asymptotic targets of the paper's table
(docs/design.md, "Worked examples") are checked by counting with the cost model: cost polynomials,
their degree and O-class, and the element counts of everything the backend materializes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy
from strategies import equality_sums

import eqsat_ad as ea
from eqsat_ad.cost import big_o, degree, materialized_sizes, program_cost
from eqsat_ad.cost.poly import compare
from eqsat_ad.egraph.optimize import Limits
from eqsat_ad.examples import WORKED_EXAMPLES, example, k_reads, k_traces
from eqsat_ad.ir.index import size
from eqsat_ad.plan.price import call_cost

N = size("N")

# Small sizes keep the naive adjoints (O(N^3) for some) quick; big enough that no extent
# coincides with a constant index of a program.
SMALL = {"N": 9, "M": 7, "R": 3, "B": 5, "D": 6, "H": 7, "K": 4}

ALL_IDS = [ex.id for ex in WORKED_EXAMPLES]

# The default saturation bounds without the wall clock: iterations and e-graph size decide when
# saturation stops, so the optimized programs (and their costs) do not depend on machine load.
LIMITS = replace(Limits(), seconds=120.0)


def small_sizes(ex) -> dict[str, int]:
    return {k: SMALL[k] for k in ex.default_sizes}


def assert_gradients_equal(got, want: dict[str, np.ndarray], wrt: tuple[str, ...], rtol: float):
    assert isinstance(got, tuple) and len(got) == len(wrt)
    for value, name in zip(got, wrt, strict=True):
        assert np.shape(value) == np.shape(want[name]), name
        scale = max(1.0, float(np.max(np.abs(want[name]))))
        np.testing.assert_allclose(value, want[name], rtol=rtol, atol=rtol * scale, err_msg=name)


# ================================================================================================
# Gradients against the hand-written ones
# ================================================================================================


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "naive"])
@pytest.mark.parametrize("ex_id", ALL_IDS)
def test_grad_equals_hand_written_gradient(ex_id: str, optimize: bool):
    """ea.grad (optimized or not) of every worked example equals its hand-written gradient."""
    ex = example(ex_id)
    g = ea.grad(ex.program(), wrt=ex.wrt, optimize=optimize, limits=LIMITS)
    for seed, sizes in ((1, small_sizes(ex)), (2, None)):  # small sizes and the defaults
        inputs = ex.inputs(sizes, seed=seed)
        assert_gradients_equal(g(**inputs), ex.numpy_grad(**inputs), ex.wrt, rtol=1e-9)


@pytest.mark.parametrize("ex_id", ALL_IDS)
def test_optimized_gradient_program_agrees_with_interpreter(ex_id: str):
    """The program ea.grad runs evaluates (reference interpreter) to what the backend returns."""
    ex = example(ex_id)
    g = ea.grad(ex.program(), wrt=ex.wrt, limits=LIMITS)
    inputs = ex.inputs(small_sizes(ex), seed=3)
    reference = ea.evaluate(g.program, **inputs)
    naive = ea.evaluate(g.naive, **inputs)
    for a, b, c in zip(g(**inputs), reference, naive, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(b, c, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "naive"])
def test_e7_hessian_is_a_plus_a_transpose(optimize: bool):
    """ea.hessian of x^T A x is A + A^T, through the optimizer and without it."""
    ex = example("E7")
    h = ea.hessian(ex.program(), wrt="x", optimize=optimize, limits=LIMITS)
    for seed, n in ((4, 1), (5, 6), (6, 33)):
        inputs = ex.inputs({"N": n}, seed=seed)
        got = h(**inputs)
        assert got.shape == (n, n)
        np.testing.assert_allclose(got, ex.numpy_hessian(**inputs), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, inputs["A"] + inputs["A"].T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ex_id", ALL_IDS)
def test_compiled_forward_equals_numpy_function(ex_id: str):
    """ea.compile of the forward program (optimized or not) equals the example's NumPy f."""
    ex = example(ex_id)
    inputs = ex.inputs(small_sizes(ex), seed=10)
    want = ex.numpy_f(**inputs)
    for optimize in (True, False):
        got = ea.compile(ex.program(), optimize=optimize, limits=LIMITS)(**inputs)
        assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


HESSIAN_CASES = [(ex.id, name) for ex in WORKED_EXAMPLES if ex.id != "mlp" for name in ex.wrt]


def finite_difference_jacobian(grad, inputs: dict, name: str, eps: float = 1e-6) -> np.ndarray:
    """J[m..., k...] = ∂ grad(inputs)[k...] / ∂ inputs[name][m...] by central differences."""
    x = inputs[name]
    rows = []
    for m in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[m] = eps
        plus, minus = grad(**{**inputs, name: x + step}), grad(**{**inputs, name: x - step})
        rows.append((plus - minus) / (2 * eps))
    return np.array(rows).reshape(x.shape + x.shape)


@pytest.mark.parametrize(("ex_id", "name"), [*HESSIAN_CASES, ("mlp", "b2")])
def test_hessian_equals_differences_of_hand_written_gradient(ex_id: str, name: str):
    """ea.hessian (optimized and naive) equals central differences of the hand-written gradient,
    for every worked example and input (the Hessian of a linear function is zero)."""
    ex = example(ex_id)
    sizes = {k: min(SMALL[k], 4) for k in ex.default_sizes}
    inputs = ex.inputs(sizes, seed=12)
    want = finite_difference_jacobian(lambda **kw: ex.numpy_grad(**kw)[name], inputs, name)
    optimized = ea.hessian(ex.program(), wrt=name, limits=LIMITS)(**inputs)
    naive = ea.hessian(ex.program(), wrt=name, optimize=False)(**inputs)
    np.testing.assert_allclose(optimized, naive, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(optimized, want, rtol=1e-5, atol=1e-6)


# NumPy-subset versions of the examples whose own NumPy function is a lambda (the translator
# reads a def's source); the others use the example's function itself.
def trace(A):
    return np.trace(A)


def quad_form(A, x):
    return x @ (A @ x)


def diff_sq(x):
    return np.sum((x[1:] - x[:-1]) ** 2)


def weighted_matmul(A, B, W):
    return np.sum(W * (A @ B))


def relation(x, w, R):
    return w @ (np.where(R, 1.0, 0.0) @ x)


def matrix_chain(A, B, C):
    return np.sum(A @ B @ C)


NUMPY_FUNCTIONS = {"E1": trace, "E6": quad_form, "E8": diff_sq, "E10": weighted_matmul,
                   "E12": relation, "chain": matrix_chain}


@pytest.mark.parametrize(
    "ex_id", ["E1", "E3", "E6", "E8", "E9", "E10", "E11", "E12", "mlp", "chain"]
)
def test_grad_of_numpy_function_equals_hand_written_gradient(ex_id: str):
    """Tangent-style: ea.grad of the example written as a NumPy-subset function (shapes bound
    at the first call) equals the hand-written gradient."""
    ex = example(ex_id)
    fn = NUMPY_FUNCTIONS.get(ex_id, ex.numpy_f)
    g = ea.grad(fn, wrt=ex.wrt, limits=LIMITS)
    inputs = ex.inputs(small_sizes(ex), seed=13)
    assert_gradients_equal(g(**inputs), ex.numpy_grad(**inputs), ex.wrt, rtol=1e-9)


# ================================================================================================
# Costs: never worse than naive, and the report tells the truth
# ================================================================================================


@pytest.mark.parametrize("ex_id", ALL_IDS)
def test_optimized_cost_is_not_worse_than_naive(ex_id: str):
    """The optimized gradient is priced no higher than the naive adjoint, and the report's
    totals are the cost model's prices of the two programs ea.grad holds."""
    ex = example(ex_id)
    g = ea.grad(ex.program(), wrt=ex.wrt, limits=LIMITS)
    # a call's price: the generated function and the passes over arguments before it (the
    # optimized code is guarded by the naive program where the two differ)
    guard = None if g.report.same_code or g.program == g.naive else g.naive
    naive = call_cost(program_cost(g.naive), g.naive)
    optimized = call_cost(program_cost(g.program), g.program, guarded_by=guard)
    assert compare(optimized.total_poly, naive.total_poly) <= 0, (
        f"optimized {optimized.total} is dearer than naive {naive.total}"
    )
    assert sympy.expand(g.report.naive.total - naive.total) == 0
    assert sympy.expand(g.report.optimized.total - optimized.total) == 0
    assert g.report.optimized.value <= g.report.naive.value
    assert not g.report.stats.note  # extraction read a program back (no silent fallback)


def grad_cost(ex, wrt=None):
    g = ea.grad(ex.program(), wrt=ex.wrt if wrt is None else wrt, limits=LIMITS)
    return program_cost(g.program)


def largest_degree(prog) -> int:
    return max(degree(e) for es in materialized_sizes(prog).values() for e in es)


def test_e2_k_traces_cost_is_independent_of_k():
    """E2: the k trace adjoints merge; the gradient costs the same polynomial for k = 1 and 32."""
    one, many = grad_cost(k_traces(1)), grad_cost(k_traces(32))
    assert sympy.expand(one.total - many.total) == 0, f"k=1: {one.total}, k=32: {many.total}"
    assert big_o(many.total_poly) == "O(N**2)"  # the dense N x N output, nothing more


@pytest.mark.parametrize(("ex_id", "wrt"), [("E3", ("x",)), ("E8", ("x",)), ("E9", ("x", "w"))])
def test_linear_examples_are_linear(ex_id: str, wrt: tuple[str, ...]):
    """E3 (x̄ = diag B), E8 (stencil) and E9 (stride) gradients are O(N), not the naive O(N²),
    and materialize nothing larger than a vector."""
    ex = example(ex_id)
    naive = ea.grad(ex.program(), wrt=wrt, optimize=False).program
    g = ea.grad(ex.program(), wrt=wrt, limits=LIMITS)
    cost = program_cost(g.program)
    # the naive adjoint has N x N bracket sums as written (the backend solves them while
    # lowering, so its plan is linear too); the optimized one has no more of them
    assert equality_sums(naive) > 0 and equality_sums(g.program) <= equality_sums(naive)
    assert degree(program_cost(naive).total_poly) == 1
    assert big_o(cost.total_poly) == "O(N)", str(cost)
    assert largest_degree(g.program) <= 1


def test_e5_k_point_reads_cost_n_plus_k():
    """E5: the adjoint of k point reads is one zero-fill plus k point writes, O(N + k): the
    N-part of the cost does not grow with k and the rest grows linearly in k."""
    costs = {k: grad_cost(k_reads(k)).total_poly for k in (1, 2, 4, 8)}
    n_part = {k: c - c.evaluate({"N": 0}) for k, c in costs.items()}
    for k in (2, 4, 8):
        assert n_part[k] == n_part[1], f"k={k}: {costs[k]} vs k=1: {costs[1]}"
        assert degree(costs[k]) == 1
    rest = {k: costs[k].evaluate({"N": 0}) for k in costs}
    assert rest[8] - rest[4] == 2 * (rest[4] - rest[2]) > 0  # linear in k


@pytest.mark.parametrize("ex_id", ["E6", "E10"])
def test_gradient_keeps_the_forward_degree(ex_id: str):
    """E6 (x̄ = Ax + Aᵀx) and E10 (Ā = W Bᵀ) cost the forward program's degree: O(N²), O(N³)."""
    ex = example(ex_id)
    forward = program_cost(ex.program())
    grad = grad_cost(ex)
    assert degree(grad.total_poly) == degree(forward.total_poly), f"{forward.total} vs {grad.total}"


def test_e7_hessian_is_quadratic_without_cubic_temporaries():
    """E7: the symbolic Hessian costs O(N²) and no array with N³ elements is materialized."""
    h = ea.hessian(example("E7").program(), wrt="x", limits=LIMITS)
    cost = program_cost(h.program)
    assert big_o(cost.total_poly) == "O(N**2)", str(cost)
    assert largest_degree(h.program) <= 2


def test_matrix_chain_gradients_are_priced_n_times_r():
    """chain: the gradients of sum(A B C) are O(N·R) and never form an N x N product."""
    g = ea.grad(example("chain").program(), wrt=("A", "B", "C"), limits=LIMITS)
    cost = program_cost(g.program)
    assert big_o(cost.total_poly) == "O(N*R)", str(cost)
    for name, elements in materialized_sizes(g.program).items():
        for e in elements:
            assert sympy.degree(sympy.expand(e), N) <= 1, f"{name} materializes {e}"


# ================================================================================================
# Calling conventions: dtype, positional vs keyword, tuple wrt
# ================================================================================================


@pytest.mark.parametrize("ex_id", ["E1", "E6", "E8", "E9", "E10", "E12", "chain", "mlp"])
def test_float32_inputs_give_float32_gradients(ex_id: str):
    """float32 arguments stay float32 through ea.grad (optimized and naive), within float32
    accuracy of the float64 hand-written gradient."""
    ex = example(ex_id)
    inputs64 = ex.inputs(small_sizes(ex), seed=7)
    inputs32 = {k: v.astype(np.float32) if v.dtype.kind == "f" else v
                for k, v in inputs64.items()}
    want = ex.numpy_grad(**inputs64)
    for optimize in (True, False):
        got = ea.grad(ex.program(), wrt=ex.wrt, optimize=optimize, limits=LIMITS)(**inputs32)
        for value in got:
            assert value.dtype == np.float32
        assert_gradients_equal(got, want, ex.wrt, rtol=2e-4)


@pytest.mark.parametrize("ex_id", ["E3", "E6", "E11", "E12", "mlp"])
def test_positional_and_keyword_calls_agree(ex_id: str):
    """A gradient called with positional arguments (parameter order), keywords in another order,
    or a mix returns the same arrays."""
    ex = example(ex_id)
    prog = ex.program()
    g = ea.grad(prog, wrt=ex.wrt, limits=LIMITS)
    inputs = ex.inputs(small_sizes(ex), seed=8)
    order = prog.param_names
    by_keyword = g(**{n: inputs[n] for n in reversed(order)})
    by_position = g(*(inputs[n] for n in order))
    mixed = g(inputs[order[0]], **{n: inputs[n] for n in order[1:]})
    for a, b, c in zip(by_keyword, by_position, mixed, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_tuple_wrt_returns_one_gradient_per_name_in_order():
    """wrt=(a, b) gives (ā, b̄) in that order, each equal to the single-name gradient;
    a one-name tuple gives a one-element tuple, a bare name a bare array."""
    ex = example("E6")
    prog = ex.program()
    inputs = ex.inputs(small_sizes(ex), seed=9)
    want = ex.numpy_grad(**inputs)
    x_bar, a_bar = ea.grad(prog, wrt=("x", "A"), limits=LIMITS)(**inputs)
    np.testing.assert_allclose(x_bar, want["x"], rtol=1e-12)
    np.testing.assert_allclose(a_bar, want["A"], rtol=1e-12)
    (only,) = ea.grad(prog, wrt=("x",), limits=LIMITS)(**inputs)
    bare = ea.grad(prog, wrt="x", limits=LIMITS)(**inputs)
    assert isinstance(bare, np.ndarray)
    np.testing.assert_allclose(only, want["x"], rtol=1e-12)
    np.testing.assert_array_equal(only, bare)
