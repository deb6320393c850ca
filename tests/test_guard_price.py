"""The price of the NumPy backend's guard (plan/guard_price.py): the arguments whose exact range
it scans on data of unit scale are the ones the real guard scans, and the optimizer weighs
those passes against what the rewrite saves."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.guard import Fallback, proven_finite
from eqsat_ad.plan.guard_price import exact_ranges, unit_extreme, unit_magnitude
from eqsat_ad.plan.kernels import CHECK_WEIGHT

LOGSUMEXP = """
def logsumexp(x: [B, N], w: [B]):
    s[b: B] = log(Sum[n: N](exp(x[b, n])))
    return Sum[b: B](w[b] * s[b])
"""

SQUARES = """
def squares(x: [N], w: [N]):
    y[i: N] = (i + 1 < N) * (x[i + 1] - x[i]) * w[i]
    return Sum[i: N](y[i] * y[i])
"""


def _pair(src: str, sizes: dict[str, int]) -> tuple[ea.Program, ea.Program]:
    g = ea.grad(ea.parse(src), wrt=("x", "w"), sizes=sizes, backend="numba")
    assert g.program != g.naive
    return g.naive, g.program


def _unit_arguments(prog: ea.Program, sizes: dict[str, int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(d if isinstance(d, int) else sizes[d.name]
                                      for d in p.shape)) for p in prog.params]


@pytest.mark.parametrize("src, sizes", [
    (LOGSUMEXP, {"B": 64, "N": 512}),
    (LOGSUMEXP, {"B": 1024, "N": 2048}),
    (SQUARES, {"N": 4096}),
])
def test_the_priced_exact_ranges_are_the_ones_the_guard_scans(src: str,
                                                              sizes: dict[str, int]) -> None:
    naive, fast = _pair(src, sizes)
    predicted = exact_ranges(naive, fast, sizes)
    for seed in range(3):
        fallback = Fallback(naive)
        arrays = _unit_arguments(fast, sizes, seed)
        assert proven_finite(fallback, fast, arrays, sizes)  # unit data: proven finite
        assert fallback.exact == predicted, seed


def test_exp_of_an_argument_needs_its_exact_range_a_difference_does_not() -> None:
    naive, fast = _pair(LOGSUMEXP, {"B": 1024, "N": 2048})
    assert exact_ranges(naive, fast, {"B": 1024, "N": 2048}) == {"x"}
    naive, fast = _pair(SQUARES, {"N": 4096})
    assert exact_ranges(naive, fast, {"N": 4096}) == frozenset()


def test_unit_scale_bounds() -> None:
    rng = np.random.default_rng(0)
    for n in (100, 10_000, 1_000_000):
        x = rng.standard_normal(n)
        assert 0.9 < np.sqrt(x @ x) / unit_magnitude(n) < 1.1
        assert 0.7 < np.abs(x).max() / unit_extreme(n) < 1.3


def _guard_row(report: object) -> str:
    rows = [r for r in report.optimized.rows if r.name == "<inputs>"]  # type: ignore[attr-defined]
    return rows[0].text if rows else ""


def test_the_numpy_price_counts_the_exact_range_passes() -> None:
    sizes = {"B": 1024, "N": 2048}
    naive, fast = _pair(LOGSUMEXP, sizes)
    numpy = ea.CostReport.build(naive, fast, sizes)
    numba = ea.CostReport.build(naive, fast, sizes, backend="numba")
    assert "exact range of x" in _guard_row(numpy) and "one pass over w" in _guard_row(numpy)
    assert _guard_row(numba) == "guard: one pass over x, w"
    # two passes over x (its smallest and largest entry) instead of one dot
    assert numpy.optimized.value - numba.optimized.value == CHECK_WEIGHT * sizes["B"] * sizes["N"]


def test_the_optimizer_keeps_logsumexp_for_numpy_and_rewrites_it_for_numba() -> None:
    """The rewrite saves ~2B of a price of ~5.5 B N; the NumPy guard's exact range of x costs
    2 B N more than its dot: the input is the cheaper call there. The Numba backend's loops
    check the arguments they read, so its price keeps the rewrite."""
    sizes = {"B": 1024, "N": 2048}
    prog = ea.parse(LOGSUMEXP)
    g_np = ea.grad(prog, wrt=("x", "w"), sizes=sizes)
    g_nb = ea.grad(prog, wrt=("x", "w"), sizes=sizes, backend="numba")
    assert g_np.report.same_code and g_np.report.optimized.value <= g_np.report.naive.value
    assert not g_nb.report.same_code
    assert g_nb.report.optimized.value < g_nb.report.naive.value
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((8, 16)), rng.standard_normal(8)
    for a, b in zip(g_np(x=x, w=w), g_nb(x=x, w=w), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_an_unknown_backend_is_named() -> None:
    with pytest.raises(ea.EqsatError, match="unknown backend 'jax'"):
        ea.optimize(ea.parse(SQUARES), backend="jax")




ATTENTION = """
def attention(Q: [T, D], K: [T, D], V: [T, D], Wo: [T, D]):
    E[t: T, s: T] = exp(0.125 * Sum[d: D](Q[t, d] * K[s, d]))
    Z[t: T] = Sum[s: T](E[t, s])
    O[t: T, d: D] = Sum[s: T](E[t, s] * V[s, d]) / Z[t]
    return Sum[t: T, d: D](Wo[t, d] * O[t, d])
"""  # (the sweep's attention, as in tests/test_plan.py)


def test_a_numba_program_without_loops_is_priced_with_the_numpy_guard() -> None:
    """Attention's Numba schedule runs the NumPy program whole (BLAS and NumPy passes): its
    guard is the NumPy backend's, exact ranges included, so its program is the one the NumPy
    backend's price chooses, not the one the loops' in-place checks would have allowed."""
    sizes = {"T": 512, "D": 64}
    prog = ea.parse(ATTENTION)
    wrt = ("Q", "K", "V")
    numba_priced = ea.optimize(ea.grad(prog, wrt=wrt, optimize=False).naive, sizes=sizes,
                               backend="numba").program
    g_np = ea.grad(prog, wrt=wrt, sizes=sizes)
    g_nb = ea.grad(prog, wrt=wrt, sizes=sizes, backend="numba")
    assert numba_priced != g_np.program  # the two prices differ here
    assert g_nb.compiled.numpy_only
    assert g_nb.program == g_np.program and g_nb.report.same_code
