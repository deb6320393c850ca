"""The plan: what is priced is what runs.

* Contraction order: optimal (checked against NumPy's own optimal path on the issue's 8-matrix
  chain) and the order the generated code runs.
* Priced equals run: on random programs and their adjoints, the generated code is run line by
  line under ``tracemalloc``; every line allocates no more than the kernels the plan lists for
  it (up to a constant factor and the helpers' small bookkeeping), the largest allocation of the
  plan (the report's largest intermediate) is really allocated, and the calls of each line are
  the kernels listed for it.
* ``optimize`` never returns a program whose plan is priced above the naive program's plan.
* Windows are shifted slices: the 3x3 blur's gradient allocates nothing beyond H x W arrays.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_probe import line_peaks
from strategies import programs, random_inputs, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad import vjp
from eqsat_ad.backend.numpy import _load
from eqsat_ad.cost import CostReport, program_cost
from eqsat_ad.egraph.optimize import Limits, optimize
from eqsat_ad.examples import example
from eqsat_ad.ir.index import size
from eqsat_ad.plan import OPTIMAL_LIMIT, contraction_path
from eqsat_ad.plan.lower import lower_program
from eqsat_ad.plan.poly import Poly, degree

CHAIN_SIZES = (64, 4, 4, 64, 64, 16, 256, 1024, 64)
LETTERS = "ijklmnopq"


def _flops(spec: str, shapes: list[tuple[int, ...]], path: list) -> float:
    ops = [np.empty(s) for s in shapes]
    text = np.einsum_path(spec, *ops, optimize=path)[1]
    return float(re.search(r"Optimized FLOP count:\s*(\S+)", text).group(1))


@pytest.mark.parametrize("output", ["", "iq"])
def test_eight_matrix_chain_order_is_within_1_1x_of_numpy_optimal(output):
    shapes = [(CHAIN_SIZES[k], CHAIN_SIZES[k + 1]) for k in range(8)]
    operands = [LETTERS[k] + LETTERS[k + 1] for k in range(8)]
    spec = ",".join(operands) + "->" + output
    extents = {LETTERS[k]: size(f"S{k}") for k in range(9)}
    sizes = {f"S{k}": CHAIN_SIZES[k] for k in range(9)}
    path = contraction_path(operands, output, extents, sizes)
    ours = _flops(spec, shapes, path.einsum_path())
    best = _flops(spec, shapes, "optimal")
    assert ours <= 1.1 * best, (ours, best, path.steps)
    naive_left_to_right = _flops(spec, shapes, ["einsum_path", *[(0, 1)] * 7])
    assert ours <= naive_left_to_right


def test_optimal_search_covers_the_operand_counts_that_occur():
    # a 12-operand chain is still searched exactly (no outer products), quickly
    n = OPTIMAL_LIMIT
    ops = [(f"a{k}", f"a{k + 1}") for k in range(n)]
    extents = {f"a{k}": size("N") if k % 3 else size("R") for k in range(n + 1)}
    path = contraction_path(ops, (), extents, {"N": 1000, "R": 3})
    assert degree(path.cost) == 2  # every step touches two indices only
    assert len([s for s in path.steps if len(s) == 2]) == n - 1


def test_the_compiled_chain_gradient_runs_the_priced_order():
    args = ", ".join(f"A{k}: [S{k}, S{k + 1}]" for k in range(8))
    body = " * ".join(f"A{k}[{LETTERS[k]}, {LETTERS[k + 1]}]" for k in range(8))
    sums = ", ".join(f"{c}: S{k}" for k, c in enumerate(LETTERS))
    prog = ea.parse(f"def chain({args}):\n    return Sum[{sums}]({body})\n")
    sizes = {f"S{k}": CHAIN_SIZES[k] for k in range(9)}
    g = ea.grad(prog, wrt="A3", sizes=sizes)
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((CHAIN_SIZES[k], CHAIN_SIZES[k + 1])) for k in range(8)]
    left = np.linalg.multi_dot(mats[:3]).sum(axis=0)
    right = np.linalg.multi_dot(mats[4:]).sum(axis=1)
    np.testing.assert_allclose(g(*mats), np.outer(left, right), rtol=1e-9)
    # nothing larger than the largest operand or the output is allocated
    largest = program_cost(g.program, sizes).largest_intermediate()
    assert largest is not None and largest.elements.evaluate(sizes) <= 256 * 1024


# ================================================================================================
# Priced equals run
# ================================================================================================

SLACK = 16384  # bytes: the Python-level bookkeeping of a runtime helper call (lists, tuples)
PER_ELEMENT = 32  # bytes per planned element: float64 plus the temporaries NumPy keeps alive
SIZES = (64, 40)


def _arrays(prog, sizes, seed=0):
    args = random_inputs(prog, sizes, np.random.default_rng(seed))
    out = []
    for p in prog.params:
        v = args[p.name]
        out.append(np.float64(v) if isinstance(v, float) else np.asarray(v))
    return out


_EINSUM = re.compile(r"einsum(?:_sz)?\('([a-zA-Z,]*)->([a-zA-Z]*)'")


def _calls(line: str) -> dict[str, int]:
    """The kernels a line of generated code calls, read from its text."""
    specs = _EINSUM.findall(line)
    return {
        "contract": line.count(" @ ") + sum(1 for ins, _ in specs if "," in ins),
        "fill": line.count("np.zeros(") + line.count("np.arange("),
        "gather": line.count("_rt.gather(") + line.count("_rt.window("),
        "scan": line.count("np.cumsum(") + line.count("_rt.suffix_sum(")
        + line.count("_rt.scan_sum(") + line.count("_rt.scan_shift("),
        "where": line.count("np.where("),
        "reduce": line.count(".sum(") + sum(1 for ins, out in specs
                                            if "," not in ins and len(set(ins)) > len(out)),
    }


def _listed(kernels) -> dict[str, int]:
    return {
        "contract": sum(1 for k in kernels if k.kind == "contract"),
        "fill": sum(1 for k in kernels if k.kind == "fill" and k.detail in ("zero-fill",
                                                                             "np.arange")),
        "gather": sum(1 for k in kernels if k.kind == "gather"),
        "scan": sum(1 for k in kernels if k.kind == "scan" and "running sum" in k.detail),
        "where": sum(1 for k in kernels if k.kind == "mask" and k.detail == "np.where"),
        "reduce": sum(1 for k in kernels if k.kind == "reduce"),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(prog=programs(max_statements=3), data=st.data())
def test_the_code_allocates_and_calls_what_the_plan_lists(prog, data):
    if data.draw(st.booleans(), label="adjoint") and tensor_params(prog):
        prog = vjp(prog, data.draw(st.sampled_from(tensor_params(prog)), label="wrt"))
    sizes = dict(zip(prog.size_names(), SIZES, strict=False))
    lowered = lower_program(prog, sizes)
    plan = lowered.plan
    lines = lowered.source.splitlines()
    fn, args = _load(lowered), _arrays(prog, sizes)
    # two measured calls, the smaller peak per line: a one-off allocation (a cache filled on
    # first use) is not what the line allocates
    first, second = line_peaks(fn, args), line_peaks(fn, args)
    peaks = {k: min(v, second.get(k, v)) for k, v in first.items()}
    by_line: dict[int, list] = {}
    for k in plan.kernels:
        by_line.setdefault(k.line, []).append(k)
    for line, measured in peaks.items():
        planned = sum(int(k.alloc.evaluate(sizes)) for k in by_line.get(line, []))
        assert measured <= PER_ELEMENT * planned + SLACK, (lines[line - 1], measured, planned)
    for line, ks in by_line.items():
        assert _calls(lines[line - 1]) == _listed(ks), (lines[line - 1], [str(k) for k in ks])
    # the plan's largest allocation is the report's largest intermediate, and it happens
    report = CostReport.build(prog, prog, sizes)
    top = plan.largest(sizes)
    if top is None:
        assert report.naive.largest is None
        return
    assert report.naive.largest is not None
    assert report.naive.largest.elements == top.alloc
    elements = int(top.alloc.evaluate(sizes))
    if elements >= 1024:
        assert peaks.get(top.line, 0) >= elements, (lines[top.line - 1], str(top))


def test_a_broadcast_statement_is_a_view_and_its_sum_allocates_nothing():
    prog = ea.parse("def f(x: [N]):\n    y1[i: N, j: N] = x[i]\n"
                    "    return x[0] + Sum[k: N, l: N](y1[k, l])\n")
    sizes = {"N": 200}
    lowered = lower_program(prog, sizes)
    assert lowered.plan.statement_cost("y1").is_zero()  # np.broadcast_to: a view
    peaks = line_peaks(_load(lowered), _arrays(prog, sizes))
    assert max(peaks.values()) <= SLACK


def test_a_planned_quadratic_temporary_is_measured():
    # the probe is sharp: an outer product's N x M array shows up in bytes on its line
    prog = ea.parse("def f(x: [N], y: [M]):\n    return Sum[i: N, j: M](exp(x[i] * y[j]))\n")
    sizes = {"N": 300, "M": 200}
    lowered = lower_program(prog, sizes)
    peaks = line_peaks(_load(lowered), _arrays(prog, sizes))
    top = lowered.plan.largest(sizes)
    assert top is not None and top.alloc == Poly.symbol("M") * Poly.symbol("N")
    assert peaks[top.line] >= 8 * 300 * 200


# ================================================================================================
# Never above naive; windows as slices
# ================================================================================================


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(prog=programs(max_statements=2, smooth=True), data=st.data())
def test_optimize_never_returns_a_plan_priced_above_the_naive_one(prog, data):
    naive = vjp(prog, data.draw(st.sampled_from(tensor_params(prog))))
    res = optimize(naive, limits=Limits(iterations=6, nodes=2000, seconds=1.0))
    assert res.report.optimized.value <= res.report.naive.value
    big = {n: 2**20 for n in naive.size_names()}
    assert (program_cost(res.program).total_poly.evaluate(big)
            <= program_cost(naive).total_poly.evaluate(big))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_lower_order_saving_that_costs_more_at_the_callers_sizes_is_not_taken(backend):
    """The MLP's gradient at B = 128, D = 256, H = 512, K = 10: the e-graph drops the unit
    ``lse_bar`` (B x K work saved), which then needs the guard's pass over every argument,
    the D x H weight W1 included. At equal sizes that is cheaper (same big-O, a smaller
    lower-order term); at the caller's sizes it is not, so the naive program is kept. (For
    ``backend="numba"`` the prices compared are those of the fused programs it runs.)"""
    ex = example("mlp")
    sizes = {"B": 128, "D": 256, "H": 512, "K": 10}
    naive = ea.grad(ea.parse(ex.source), list(ex.wrt), optimize=False).program
    res = optimize(naive, sizes=sizes, backend=backend, cache=False)
    report = res.report
    assert report.optimized.big_o == report.naive.big_o
    if backend == "numpy":
        assert report.optimized.value <= report.naive.value
    else:  # what the fused backend runs for each is what its optimizer compares
        assert report.fused is not None
        assert report.fused.optimized.evaluate(sizes) <= report.fused.naive.evaluate(sizes)


BLUR = """
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""


def _nine_tap_gradient(w: np.ndarray) -> np.ndarray:
    h, wd = w.shape
    p = np.zeros((h + 2, wd + 2))
    for a in range(3):
        for c in range(3):
            p[2 - a:2 - a + h, 2 - c:2 - c + wd] += w
    return p[1:h + 1, 1:wd + 1] / 9.0


@pytest.mark.parametrize("optimized", [True, False])
def test_window_blur_gradient_is_shifted_slices(optimized):
    g = ea.grad(ea.parse(BLUR), wrt="x", optimize=optimized, sizes={"H": 1024, "W": 1024})
    cost = program_cost(g.program)
    hw = Poly.symbol("H") * Poly.symbol("W")
    assert all(degree(m.elements) <= 2 for m in cost.materialized)
    assert cost.largest_intermediate().elements == hw
    assert "np.where" not in g.source and "_rt.window" not in g.source
    assert g.source.count("+=") == 8  # eight shifted slice updates around the centre tap
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((7, 9)), rng.standard_normal((7, 9))
    np.testing.assert_allclose(g(x, w), _nine_tap_gradient(w), rtol=1e-12, atol=1e-14)


# ================================================================================================
# Scans: triangular and banded bracket sums are running sums
# ================================================================================================

PREFIX = """
def prefix(x: [N], w: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
"""
MOVING = """
def moving(x: [N], w: [N], k: [K]):
    c[i: N] = Sum[j: N]((i - K < j and j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
"""


@pytest.mark.parametrize("optimized", [True, False])
def test_prefix_sum_and_its_gradient_are_running_sums(optimized):
    prog = ea.parse(PREFIX)
    g = ea.grad(prog, wrt="x", optimize=optimized)
    cost = program_cost(g.program)
    assert degree(cost.total_poly) == 1
    assert all(degree(m.elements) <= 1 for m in cost.materialized)
    assert cost.plan.kinds().count("scan") >= 2  # the forward running sum and the adjoint's
    assert "np.where" not in g.source
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(40), rng.standard_normal(40)
    c = np.cumsum(x)
    want = np.cumsum((2 * w * c)[::-1])[::-1]
    np.testing.assert_allclose(g(x, w), want, rtol=1e-10)
    f = ea.compile(prog)
    assert f(x, w) == pytest.approx(float(np.sum(w * c * c)))


def test_moving_window_is_a_difference_of_running_sums_for_finite_values():
    prog = ea.parse(MOVING)
    g = ea.grad(prog, wrt="x")
    assert re.search(r"_rt\.scan_(sum|shift)\(", g.source) and "np.where" not in g.source
    assert degree(program_cost(g.program).total_poly) == 1
    rng = np.random.default_rng(6)
    x, w, k = rng.standard_normal(30), rng.standard_normal(30), np.zeros(4)
    want = ea.evaluate(ea.grad(prog, wrt="x", optimize=False).program, x=x, w=w, k=k)
    np.testing.assert_allclose(g(x, w, k), want, rtol=1e-10, atol=1e-12)
    # the difference form is for finite values only: an inf input reruns the masked sums
    f = ea.compile(prog)
    x[3] = np.inf
    assert re.search(r"_rt\.scan_(sum|shift)\(", f.source)
    with np.errstate(all="ignore"):
        got, ref = f(x, w, k), ea.evaluate(prog, x=x, w=w, k=k)
    assert (np.isnan(got) and np.isnan(ref)) or got == ref


ATTENTION = """
def attention(Q: [T, D], K: [T, D], V: [T, D], Wo: [T, D]):
    E[t: T, s: T] = exp(0.125 * Sum[d: D](Q[t, d] * K[s, d]))
    Z[t: T] = Sum[s: T](E[t, s])
    O[t: T, d: D] = Sum[s: T](E[t, s] * V[s, d]) / Z[t]
    return Sum[t: T, d: D](Wo[t, d] * O[t, d])
"""


@pytest.mark.parametrize("optimized", [True, False])
def test_attention_gradient_allocates_no_t_by_t_by_d_array(optimized):
    # a division by a factor free of the summed indices leaves the sum: (Σ_s V[s, d]) / Z[t]
    g = ea.grad(ea.parse(ATTENTION), wrt=("Q", "K", "V"), optimize=optimized,
                sizes={"T": 512, "D": 64})
    cost = program_cost(g.program, {"T": 512, "D": 64})
    assert all(degree(m.elements) <= 2 for m in cost.materialized)
    rng = np.random.default_rng(7)
    args = {n: rng.standard_normal((5, 3)) for n in ("Q", "K", "V", "Wo")}
    naive = ea.grad(ea.parse(ATTENTION), wrt=("Q", "K", "V"), optimize=False).program
    want = ea.evaluate(naive, **args)
    for got, ref in zip(g(**args), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("optimized", [True, False])
def test_attention_gradient_scales_the_small_operands_and_shares_its_t_by_t_product(optimized):
    # Counted, not timed: five T x T arrays (the scores, their exp, Σ_d W V / Z, E_bar and
    # E ∘ E_bar, shared by Q_bar and K_bar); the 0.125 and the 1 / Z[t] of the contractions
    # scale a T x D operand, never a T x T one, and every T x T array is contiguous.
    sizes = {"T": 512, "D": 64}
    g = ea.grad(ea.parse(ATTENTION), wrt=("Q", "K", "V"), optimize=optimized, sizes=sizes)
    plan = program_cost(g.program, sizes).plan
    tt = Poly.symbol("T") * Poly.symbol("T")
    squares = [k for k in plan.allocations() if k.alloc == tt]
    assert len(squares) == 5, [str(k) for k in squares]
    assert not [k for k in plan.kernels if k.kind == "elementwise" and k.space == tt
                and k.detail in ("scale", "transposed read")], str(plan)
    assert "E.T /" not in g.source and ".T * " not in g.source


def test_an_empty_range_is_priced_as_no_points_never_negative():
    """``(i < 0) * (i > N - 1)`` leaves no i: the slice it writes has no points (hypothesis once
    priced it ``-2*N``: the length of the range ``[N:0]``)."""
    from eqsat_ad.plan.price import program_cost

    prog = ea.parse(
        "def f(A: [N, N]):\n"
        "    y3[i: N] = A[i, i] * (i < 0) * (i > N - 1)\n"
        "    return Sum[i: N](y3[i])\n"
    )
    cost = program_cost(prog)
    for n in (1, 7, 1000):
        assert all(k.cost.evaluate({"N": n}) >= 0 for k in cost.plan.kernels)
        assert all(k.alloc.evaluate({"N": n}) >= 0 for k in cost.plan.kernels)
    assert str(cost.statements["y3"]) == "N"  # the zero-fill of y3, nothing else
    A = np.arange(9.0).reshape(3, 3)
    assert ea.compile(prog)(A) == ea.evaluate(prog, A) == 0.0


def nbody(x, m):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d * d, axis=2) + 0.01
    return np.sum(m[:, None] * m[None, :] / np.sqrt(r2))


def test_nbody_gradient_allocates_no_n_by_n_by_3_array():
    # Counted: the function builds d = x[:, None] - x[None] (N x N x 3); neither gradient
    # allocates an array that size (the naive adjoint's d_bar = 2 t_bar d included): d is
    # recomputed where it is read, one coordinate at a time (a loop over the small axis priced
    # below the array, eqsat_ad.plan.split), with no finite-only identity.
    rng = np.random.default_rng(8)
    x, m = rng.standard_normal((6, 3)), rng.random(6) + 0.5
    sizes = {"N": 1000, "M": 3}
    counts = {}
    for optimized in (True, False):
        g = ea.grad(nbody, optimize=optimized)
        got = g(x, m)
        plan = program_cost(g.program, sizes).plan
        counts[optimized] = sum(1 for k in plan.allocations() if k.alloc.evaluate(sizes) >= 3e6)
        d = x[:, None, :] - x[None, :, :]
        c = np.outer(m, m) * (np.sum(d * d, axis=2) + 0.01) ** -1.5
        np.testing.assert_allclose(got, -2 * (c.sum(axis=1)[:, None] * x - c @ x), rtol=1e-10)
    assert counts == {True: 0, False: 0}


def test_a_divided_product_is_contracted_factor_by_factor():
    # Σ_k A[i, k] B[k, j] / (z[i] + A[i, k]²): the divisor depends on the summed k, so it is one
    # more operand (its reciprocal), and so is each factor of the product it divides: the order
    # contracts them pairwise, never through an N x K x M array.
    prog = ea.parse("""
def f(A: [N, K], B: [K, M], z: [N]):
    D[i: N, j: M] = Sum[k: K](A[i, k] * B[k, j] / (z[i] + A[i, k] * A[i, k]))
    return Sum[i: N, j: M](D[i, j] * D[i, j])
""")
    sizes = {"N": 300, "K": 20, "M": 200}
    for optimized in (True, False):
        g = ea.grad(prog, wrt=("A", "B"), optimize=optimized, sizes=sizes)
        plan = program_cost(g.program, sizes).plan
        assert all(degree(k.alloc) <= 2 for k in plan.allocations()), str(plan)
        rng = np.random.default_rng(9)
        args = {"A": rng.standard_normal((5, 3)), "B": rng.standard_normal((3, 4)),
                "z": rng.random(5) + 1.0}
        want = ea.evaluate(ea.grad(prog, wrt=("A", "B"), optimize=False).program, **args)
        for got, ref in zip(g(**args), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_a_factor_over_one_operands_indices_joins_the_contraction():
    from eqsat_ad.plan.order import joining_operands

    # Σ_i W[t, i] V[s, i] · (1 / Z[t]) · c[s, t]: 1 / Z[t] joins (a subset of W's indices) and
    # is multiplied into W by the contraction order; c[s, t] is over no operand's indices
    operands = [{"t", "i"}, {"s", "i"}]
    outside = [frozenset({"t"}), frozenset({"s", "t"}), None, frozenset()]
    assert joining_operands(outside, operands, conditioned=False) == [0, 3]
    assert joining_operands(outside, operands, conditioned=True) == []  # a masked sum
    assert joining_operands(outside, operands[:1], conditioned=False) == []  # no contraction
