"""A running sum is never fused into its reader.

A statement whose loop nest carries a running sum along its points (a prefix sum
``c[i] = Σ_j [j <= i] x[j]``) costs O(1) a point alone; fused into a reader, each evaluation is
the whole sum, so the unoptimized prefix-sum gradient ran in O(N²) (minutes at N = 10⁶).
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from eqsat_ad.backend.fused.schedule import loop_price  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")

PREFIX = ea.parse("""
def prefix(x: [N], w: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
""")


@pytest.mark.parametrize("optimize", [False, True])
def test_a_prefix_sum_runs_as_its_own_loop_nest(optimize: bool) -> None:
    g = ea.grad(PREFIX, "x", backend="numba", optimize=optimize)
    schedule = g.compiled.schedule
    assert schedule.placement["c"] == "loop", schedule.why
    # every statement's loop nest is linear in N: no sum re-run per point
    for s in g.program.statements:
        if schedule.placement[s.name] == "loop":
            assert loop_price(s).degree() == 1, (s.name, loop_price(s))
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        x, w = rng.standard_normal(37).astype(dtype), rng.standard_normal(37).astype(dtype)
        got = g(x=x, w=w)
        assert got.dtype == dtype
        want = evaluate(g.naive, x=x.astype(np.float64), w=w.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10)
