"""optimize on the worked examples and on random programs: equal values, the promised costs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad.hessian import hessian_program
from eqsat_ad.ad.reverse import vjp
from eqsat_ad.cost.model import materialized_sizes, program_cost
from eqsat_ad.cost.poly import degree
from eqsat_ad.cost.report import CostReport
from eqsat_ad.egraph.optimize import Limits, Optimized, optimize
from eqsat_ad.examples import example, k_reads, k_traces
from eqsat_ad.ir.checks import check_program


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
    assert _degree(naive) == 2
    assert _degree(res.program) == 1


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
    assert _degree(naive) == 3
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
    for _ in range(100):
        x = x * 0.5 + np.tanh(x)
    return np.sum(x)


def _unrolled_adjoint():
    from eqsat_ad.frontend.numpy_subset import translate

    return vjp(translate(_unrolled, {"x": ("N",)}), "x")


def test_a_100_step_loop_is_optimized_within_the_time_limit_and_stays_correct():
    import time

    naive = _unrolled_adjoint()
    assert len(naive.statements) > 200
    start = time.perf_counter()
    # only the clock can stop it: too big to saturate in a second
    res = optimize(naive, limits=Limits(seconds=1.0, nodes=10**6, iterations=10**6))
    wall = time.perf_counter() - start
    assert res.report.stats.stop_reason == "time limit"
    assert wall < 12.0  # generous: pricing the 200-statement report is most of it
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
