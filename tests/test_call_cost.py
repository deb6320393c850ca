"""A call's price: the generated function's plan plus the passes over arguments before it.

The naive program's fast code trusts some parameters to be finite and the caller scans them
first (``finite-input``); optimized code that differs from the naive program runs guarded by it,
and the guard passes over every argument either program reads (backend/guard.py). The report
prices both (``plan/price.call_cost``), so the optimizer keeps the input program where a rewrite
saves less than the guard's pass costs.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import eqsat_ad as ea
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.plan.kernels import CHECK_WEIGHT, Check, total
from eqsat_ad.plan.price import INPUTS, call_cost, program_cost

MATVEC = ea.parse("""
def f(A: [N, N], x: [N]):
    D[i: N, j: N] = (i == j) * x[i]
    y[i: N] = Sum[j: N](D[i, j] * x[j])
    z[i: N] = Sum[j: N](A[i, j] * y[j])
    return Sum[i: N](x[i] * z[i] + y[i] * y[i])
""")


def _checked(summary) -> set[str]:
    return {k.detail.rsplit(" ", 1)[-1] for k in summary.cost.plan.kernels
            if isinstance(k, Check)}


def test_the_guard_row_prices_the_arguments_the_guard_reads() -> None:
    g = ea.grad(MATVEC, wrt="x", sizes={"N": 300})
    assert g.program != g.naive and not g.report.same_code
    rng = np.random.default_rng(0)
    g(rng.standard_normal((300, 300)), rng.standard_normal(300))
    fallback = g.compiled.fallback
    assert fallback is not None and fallback.calls == 0
    # the report's guard row lists the arguments the guard scanned in the call
    params = {p.name for p in g.program.params if p.kind == "tensor" and p.shape}
    assert _checked(g.report.optimized) == set(fallback.read) & params == {"A", "x"}
    row = g.report.optimized.cost.details[0]
    assert row.name == INPUTS and row.text.startswith("guard: one pass over")
    assert row.poly.evaluate({"N": 300}) == CHECK_WEIGHT * (300 * 300 + 300)


def test_the_naive_row_prices_the_callers_finite_scan() -> None:
    g = ea.grad(MATVEC, wrt="x", sizes={"N": 300})
    naive = compile_program(g.naive)
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((300, 300)), rng.standard_normal(300)
    naive(A, x)
    fn, check = naive.function_for(*naive.bind(A, x))
    assert check  # the fast code trusts what it reads: the caller scans it
    assert _checked(g.report.naive) == set(fn.finite_inputs) != set()
    cost = call_cost(program_cost(g.naive, {"N": 300}), g.naive)
    assert cost.total_poly == g.report.naive.cost.total_poly
    assert cost.total_poly - program_cost(g.naive, {"N": 300}).total_poly == total(
        k.cost for k in cost.plan.kernels if isinstance(k, Check))


def test_a_rewrite_saving_less_than_the_guard_keeps_the_input_program() -> None:
    def mlp(X, W, y):
        r = np.tanh(X @ W) - y
        return np.sum(r * r)

    rng = np.random.default_rng(2)
    small = (rng.standard_normal((4, 3)), rng.standard_normal((3, 2)),
             rng.standard_normal((4, 2)))
    g = ea.grad(mlp, wrt="W")
    want = g(*small)
    # at 4 x 3 x 2 the rewrites save less than a pass over X, W and y: the input runs, unguarded
    assert g.program == g.naive and g.compiled.fallback is None
    assert g.report.optimized.value == g.report.naive.value
    np.testing.assert_allclose(want, ea.grad(mlp, wrt="W", optimize=False)(*small), rtol=1e-12)
    # where they save more (K = 32 outputs), the optimized program runs guarded and the report
    # says it costs less, guard included
    big = (rng.standard_normal((64, 3)), rng.standard_normal((3, 32)),
           rng.standard_normal((64, 32)))
    g = ea.grad(mlp, wrt="W")
    g(*big)
    assert g.program != g.naive and g.compiled.fallback is not None
    guard = g.report.optimized.cost.details[0]
    assert guard.name == INPUTS and guard.poly.evaluate(g.report.sizes) > 0
    assert g.report.optimized.value < g.report.naive.value
    assert Fraction(g.report.optimized.value) == Fraction(
        g.report.optimized.cost.total_poly.evaluate(g.report.sizes))
