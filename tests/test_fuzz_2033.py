"""Defects found by the 10,000-program fuzz run at commit d6ad598 (seeds 2033, 2034;
experiments/results/fuzz.md), one regression test per class, checked against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.plan.lower import lower_program

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# a read t0[j + 1] that only the write's guard (j + 1 < N) keeps inside t0, in a loop over a
# small axis: its last trip reads past the end
_SHIFTED = ("def f(x: [N]):\n    t0[i: N] = x[i - 1]\n"
            "    return Sum[i: N, j: N](x[i + j] ** (-2) - t0[j])\n")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_guarded_point_read_past_the_end_is_not_evaluated(n: int, dtype: type) -> None:
    prog = ea.parse(_SHIFTED)
    adj = ea.vjp(prog, "x")
    x = np.linspace(1.0, 2.0, n).astype(dtype)
    want = ea.evaluate(adj, x=x.astype(np.float64), ybar=1.0)
    for optimize in (False, True):
        got = ea.grad(prog, "x", optimize=optimize)(x=x)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_the_scalar_guard_is_a_conditional_expression_at_concrete_sizes() -> None:
    adj = ea.vjp(ea.parse(_SHIFTED), "x")
    src = lower_program(adj, {"N": 2}).source
    assert "for " in src  # the small axis runs as a loop: the case this is about
    assert " if (N >= " in src and "np.where((N >= " not in src
