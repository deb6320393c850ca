"""Findings of the 10,000-program fuzz run at commit 8908cbe (seeds 2039, 2040;
experiments/results/fuzz.md), one regression test per class, checked against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.fuzz import check_case, make_case, outcome_of

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# s is 1 / x[1] where x[0] > 0: a masked quotient, inf at x[1] = 5e-324. It must stay under the
# sum in the strict code: inf · step(x[i]) is nan where step is 0, so the Σ is nan; taken out,
# inf · Σ step(x[i]) is inf (fuzz 2040 #3569: the mask had made the quotient look finite)
_MASKED = ("def f(x: [N]):\n"
           "    s = ge(x[0], 0.0) * (1 / x[1])\n"
           "    return Sum[i: N](s * step(x[i]))\n")


@pytest.mark.parametrize("optimize", [False, True])
def test_a_masked_quotient_stays_under_the_sum(optimize: bool) -> None:
    prog = ea.parse(_MASKED)
    x = np.array([1.0, 5e-324, -2.0, 3.0])
    assert np.isnan(ea.evaluate(prog, x=x))
    assert np.isnan(ea.compile(prog, optimize=optimize)(x=x))
    y = np.array([1.0, 0.5, -2.0, 3.0])  # finite: the sum's value, whatever the code
    assert ea.compile(prog, optimize=optimize)(x=y) == pytest.approx(ea.evaluate(prog, x=y))
    z = np.array([-1.0, 5e-324, -2.0, 3.0])  # the mask is false: a strong zero, 0
    assert ea.compile(prog, optimize=optimize)(x=z) == ea.evaluate(prog, x=z) == 0.0


def test_fuzz_2040_3569_agrees() -> None:
    case, inputs = make_case(2040, 3569)
    found = check_case(case, inputs)
    assert all(outcome_of(f) in ("agree", "ill-conditioned", "ieee-gradient")
               for f in found.values()), found
