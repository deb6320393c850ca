"""optimize on the worked examples and on random programs: equal values, the promised costs."""

from __future__ import annotations

import re
from dataclasses import replace as dc_replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import equality_sums, programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad.hessian import hessian_program
from eqsat_ad.ad.reverse import vjp
from eqsat_ad.cost import materialized_sizes, program_cost
from eqsat_ad.cost.poly import degree
from eqsat_ad.cost.report import CostReport
from eqsat_ad.egraph.optimize import Limits, Optimized, optimize
from eqsat_ad.egraph.share import drop_unit_factors, share_statement_bodies
from eqsat_ad.examples import example, k_reads, k_traces
from eqsat_ad.ir import Access, Binary, IndexVar, Neg, Statement, Sum, children
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.expr import accessed_names, add, const, free_indices, mul, rename


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _check_gradient(ex, prog, sizes=None):
    """``prog`` (an adjoint of ``ex``) at ybar = 1 equals the hand-written NumPy gradient."""
    inputs = ex.inputs(sizes)
    args = {p.name: inputs.get(p.name, 1.0) for p in prog.params}
    got = _as_tuple(ea.evaluate(prog, **args))
    want = ex.numpy_grad(**inputs)
    for name, g in zip(ex.wrt, got, strict=True):
        np.testing.assert_allclose(g, want[name], rtol=1e-8, atol=1e-10)


def _optimized_adjoint(ex_id: str) -> tuple:
    ex = example(ex_id)
    naive = vjp(ex.program(), ex.wrt)
    res = optimize(naive, sizes=dict(ex.default_sizes))
    return ex, naive, res


def _degree(prog) -> int:
    return program_cost(prog).total_poly.degree()


@pytest.mark.parametrize(
    "ex_id", ["E1", "E2", "E3", "E4", "E5", "E6", "E8", "E9", "E10", "E11", "E12", "chain"]
)
def test_worked_example_gradients_match_the_closed_form(ex_id):
    ex, naive, res = _optimized_adjoint(ex_id)
    assert isinstance(res, Optimized) and isinstance(res.report, CostReport)
    check_program(res.program)
    _check_gradient(ex, naive)
    _check_gradient(ex, res.program)
    # never costlier than the naive adjoint
    assert _degree(res.program) <= _degree(naive)


@pytest.mark.parametrize("ex_id", ["E3", "E8", "E9"])
def test_sum_elimination_makes_these_gradients_linear(ex_id):
    ex = example(ex_id)
    naive = vjp(ex.program(), "x")  # E3: B's adjoint is a dense N x N output
    res = optimize(naive)
    # the naive adjoint sums N x N bracket products as written (the backend solves those
    # brackets while lowering: E8's and E9's naive plans are linear already, E3's is quadratic
    # because it materializes B's dense adjoint); the optimized plan is linear and never dearer
    assert equality_sums(naive) > 0
    assert equality_sums(res.program) <= equality_sums(naive)
    assert _degree(naive) == (2 if ex_id == "E3" else 1)
    assert _degree(res.program) == 1
    assert res.report.optimized.value <= res.report.naive.value


@pytest.mark.parametrize("ex_id", ["E6", "E10"])
def test_gradient_keeps_the_degree_of_the_forward(ex_id):
    ex, _, res = _optimized_adjoint(ex_id)
    assert _degree(res.program) == _degree(ex.program())


def test_k_traces_cost_the_same_for_one_and_for_32():
    costs = []
    for k in (1, 32):
        ex = k_traces(k)
        res = optimize(vjp(ex.program(), ex.wrt))
        _check_gradient(ex, res.program, {"N": 7})
        costs.append(program_cost(res.program).total)
    assert costs[0] == costs[1]


def test_k_point_reads_are_priced_n_plus_k():
    totals = {}
    for k in (4, 12):
        ex = k_reads(k)
        res = optimize(vjp(ex.program(), ex.wrt))
        _check_gradient(ex, res.program, {"N": 20})
        totals[k] = program_cost(res.program).total_poly
        assert totals[k].degree() == 1
    # the N term does not grow with k: O(N + k), not O(k N)
    diff = totals[12] - totals[4]
    assert diff.degree() == 0 and diff.constant_term() > 0


def test_symbolic_hessian_is_quadratic_with_no_cubic_temporaries():
    ex = example("E7")
    naive = hessian_program(ex.program(), "x")
    res = optimize(naive, sizes={"N": 64})
    assert equality_sums(naive) > 0 and equality_sums(res.program) == 0
    assert _degree(naive) >= 2
    assert _degree(res.program) == 2
    largest = max(
        degree(e) for es in materialized_sizes(res.program).values() for e in es
    )
    assert largest <= 2
    inputs = ex.inputs({"N": 6})
    want = ex.numpy_hessian(**inputs)
    got = ea.evaluate(res.program, **{p.name: inputs[p.name] for p in res.program.params})
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_matrix_chain_gradients_avoid_n_squared():
    ex, naive, res = _optimized_adjoint("chain")
    poly = program_cost(res.program).total_poly
    assert "N**2" not in str(program_cost(res.program).total)
    assert poly.degree() == 2
    _check_gradient(ex, res.program, {"N": 9, "R": 3})


def test_report_names_the_saturation():
    _, _, res = _optimized_adjoint("E8")
    stats = res.report.stats
    assert stats.stop_reason in ("saturated", "iteration limit", "node limit", "time limit")
    assert stats.nodes > 0 and stats.iterations >= 1
    assert stats.rule_counts.get("sum-elim", 0) >= 1
    program, report = res  # Optimized unpacks
    assert program is res.program and report is res.report


def _close(a, b) -> bool:
    return all(
        np.allclose(x, y, rtol=1e-6, atol=1e-8)
        for x, y in zip(_as_tuple(a), _as_tuple(b), strict=True)
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    programs(scalar_output=True, max_depth=3), sizes_strategy(), st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_optimized_adjoints_of_random_programs_are_equal(prog, sizes, seed, adjoint):
    if adjoint:
        wrt = tensor_params(prog)
        assume(wrt)
        prog = vjp(prog, wrt[: 1 + seed % len(wrt)])
    res = optimize(prog, limits=Limits(iterations=6, nodes=3000, seconds=3))
    check_program(res.program)
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))


# --- big programs: bounded time, linear-size results ----------------------------------------------


def _unrolled(x):
    # two loops below the front end's fold threshold: unrolled, 100 steps in all (one loop of
    # 100 would be a fold)
    for _ in range(50):
        x = x * 0.5 + np.tanh(x)
    for _ in range(50):
        x = x * 0.5 + np.tanh(x)
    return np.sum(x)


def _unrolled_adjoint():
    from eqsat_ad.frontend.numpy_subset import translate

    return vjp(translate(_unrolled, {"x": ("N",)}), "x")


def test_a_100_step_loop_is_optimized_within_the_time_limit_and_stays_correct():
    naive = _unrolled_adjoint()
    assert len(naive.statements) > 200
    # only the clock can stop it: too big to saturate in a second of CPU time
    res = optimize(naive, limits=Limits(seconds=1.0, nodes=10**6, iterations=10**6))
    assert res.report.stats.stop_reason == "time limit"
    # the limit is CPU time (the worker's and this process's), whatever the machine's load;
    # the same work takes more CPU time on a loaded machine (1.01-1.03 s idle, 1.51 s in one
    # CI run beside two test processes)
    assert res.report.stats.seconds <= 1.2 * 1.0 + 0.4
    check_program(res.program)
    inputs = {"x": np.random.default_rng(0).normal(size=5), "ybar": 1.3}
    np.testing.assert_allclose(
        ea.evaluate(res.program, **inputs), ea.evaluate(naive, **inputs), rtol=1e-9
    )


def test_statements_read_several_times_are_not_inlined_into_an_exponential_tree():
    from eqsat_ad.egraph.encode import inlinable, read_counts
    from eqsat_ad.ir.printer import print_expr, print_program

    naive = _unrolled_adjoint()
    counts = read_counts(naive)
    offered = inlinable(naive)
    # a loop state x_k is read by x_{k+1} twice (x * 0.5 and tanh(x)) and by its adjoint: it is
    # offered for inlining only while the copies stay within the budget, which a chain of
    # inlined states soon exceeds
    many = [s.name for s in naive.statements if counts[s.name] > 1 and "tanh" in print_expr(s.body)]
    assert len(many) >= 100 and len(set(many) - offered) >= len(many) // 3
    once = [s.name for s in naive.statements if counts[s.name] == 1]
    assert once and set(once) <= offered
    res = optimize(naive, limits=Limits(seconds=2.0))
    assert len(print_program(res.program)) <= 2 * len(print_program(naive))


# --- reuse of materialized statements (a pass after extraction) ----------------------------------


def test_the_mlp_adjoint_reads_t_bar_instead_of_recomputing_it():
    # Reverse mode writes the adjoint of tanh's argument once per use of it: b_bar recomputes
    # h_bar * (1 - h ** 2), which t_bar holds. After optimize, b_bar sums t_bar.
    prog = ea.parse(
        """
def f(x: [B, N], W: [N, N], b: [N], h_bar: [B, N]):
    h[i: B, j: N] = tanh(Sum[k: N](x[i, k] * W[k, j]) + b[j])
    t_bar[i: B, j: N] = h_bar[i, j] * (1 - h[i, j] ** 2)
    W_bar[i: N, j: N] = Sum[l: B](t_bar[l, j] * x[l, i])
    b_bar[j: N] = Sum[l: B](h_bar[l, j] * (1 - h[l, j] ** 2))
    return W_bar, b_bar
"""
    )
    shared = share_statement_bodies(prog)
    b_bar = {s.name: s for s in shared.statements}["b_bar"]
    assert b_bar.body == ea.parse(
        "def g(t_bar: [B, N]):\n    b_bar[j: N] = Sum[l: B](t_bar[l, j])\n    return b_bar\n"
    ).statements[0].body
    res = optimize(prog, sizes={"B": 4, "N": 6})
    assert accessed_names({s.name: s for s in res.program.statements}["b_bar"].body) == {"t_bar"}
    inputs = random_inputs(prog, {"B": 4, "N": 6}, np.random.default_rng(0))
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(shared, **inputs))


def test_sharing_needs_the_reads_in_range():
    # u's body over a longer range than t's generator: reading t there would read zeros.
    prog = ea.parse(
        """
def f(x: [5]):
    t[i: 3] = x[i] * x[i] + 1
    u[i: 5] = x[i] * x[i] + 1
    v[i: 2] = x[i] * x[i] + 1
    return u, v
"""
    )
    shared = {s.name: s for s in share_statement_bodies(prog).statements}
    assert accessed_names(shared["u"].body) == {"x"} and accessed_names(shared["v"].body) == {"t"}
    x = np.arange(5.0)
    assert _close(ea.evaluate(prog, x=x), ea.evaluate(share_statement_bodies(prog), x=x))


def _node_count(e) -> int:
    return 1 + sum(_node_count(c) for c in children(e))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=3, scalar_output=False), sizes_strategy(), st.integers(0, 2**16),
       st.booleans(), st.booleans())
def test_sharing_earlier_bodies_keeps_values(prog, sizes, seed, summed, adjoint):
    # Copies of each statement's body (generators renamed, or summed over) in later statements
    # are read from the statement; values stay those of the input.
    if adjoint:
        wrt = tensor_params(prog)
        if wrt and len(prog.outputs) == 1:
            prog = vjp(prog, wrt[0])
    extra, sources = [], {}
    for s in prog.statements:
        if not s.indices:
            continue
        new = tuple(IndexVar(f"rr{k}", iv.extent) for k, iv in enumerate(s.indices))
        body = rename(s.body, {iv.name: n.name for iv, n in zip(s.indices, new, strict=True)})
        if summed:
            t = Statement(f"{s.name}_sum", (), Sum(new, mul(const(2.0), body)))
        else:
            t = Statement(f"{s.name}_copy", new, add(body, const(1.0)))
        extra.append(t)
        sources[t.name] = s
    assume(extra)
    big = dc_replace(prog, statements=prog.statements + tuple(extra),
                     outputs=prog.outputs + tuple(Access(t.name) for t in extra),
                     returns_tuple=True)
    check_program(big)
    shared = share_statement_bodies(big)
    check_program(shared)
    inputs = random_inputs(big, sizes, np.random.default_rng(seed))
    assert _close(ea.evaluate(big, **inputs), ea.evaluate(shared, **inputs))
    after = {s.name: s for s in shared.statements}
    for name, s in sources.items():
        untouched = after[s.name].body == s.body
        if (untouched and free_indices(s.body) == {iv.name for iv in s.indices}
                and _node_count(s.body) >= 3):
            assert s.name in accessed_names(after[name].body), (s, after[name])


def test_extraction_reads_back_a_class_holding_one_times_itself():
    # fold-mul-nested must not subsume c * x where x's class holds 1 * x: the rewrite's result is
    # the matched node itself, and the class kept no other node (the MLP adjoint's t2_bar was
    # "not read back", so optimize returned the naive program).
    prog = ea.parse(
        """
def f(y: [16, 10], t2: [16]):
    t3_bar[i: 16] = -1 * (1 / 16)
    logp_bar[i: 16, j: 10] = t3_bar[i] * y[i, j]
    t2_bar[i: 16] = Sum[j: 10](-(logp_bar[i, j] * (1 / t2[i])))
    return t2_bar
"""
    )
    inputs = random_inputs(prog, {}, np.random.default_rng(1))
    # Priced for the Numba backend: the NumPy backend's guard would scan t2's exact range (no
    # box around 0 bounds 1 / t2), which this small program's saving does not pay for.
    # One iteration already merged such a class: extraction must still read the program back.
    res = optimize(prog, limits=Limits(iterations=1), backend="numba")
    assert res.program != prog
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))
    # (priced for NumPy, the unrolled Σ_j's coefficient applied once: read back as well)
    res = optimize(prog, limits=Limits(iterations=1))
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))
    # Saturated: 1 / t2[i] leaves the sum over j, and the scalar chain is folded into it.
    res = optimize(prog, backend="numba")
    (t2_bar,) = res.program.statements
    assert isinstance(t2_bar.body, Binary | Neg) and not isinstance(t2_bar.body, Sum)
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))


def test_unit_factors_are_dropped_from_optimized_programs():

    prog = ea.parse(
        "def f(x: [N], A: [N, N]):\n"
        "    y[i: N] = 1 * Sum[j: N](1 * (A[i, j] * x[j])) * 1.0\n"
        "    return Sum[i: N](y[i] * 1) + 0.1 * Sum[i: N](x[i])"
    )
    tidy = drop_unit_factors(prog)
    text = str(tidy)
    assert not re.search(r"(?<![\d.])1(\.0)? \*|\* 1(\.0)?\b", text), text
    assert "0.1 *" in text
    rng = np.random.default_rng(0)
    x, A = rng.standard_normal(4), rng.standard_normal((4, 4))
    assert ea.evaluate(tidy, x=x, A=A) == pytest.approx(ea.evaluate(prog, x=x, A=A))
    assert drop_unit_factors(tidy) is tidy
    for ex_id in ("E6", "E7", "E10"):
        g = ea.grad(example(ex_id).program(), wrt=example(ex_id).wrt)
        assert not re.search(r"(?<![\d.])1(\.0)? \*", str(g.program)), str(g.program)
