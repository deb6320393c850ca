"""Findings of the 10,000-program fuzz runs at commits 8908cbe (seeds 2039, 2040) and b88077f
(seeds 2041, 2042; experiments/results/fuzz.md), one regression test per class, checked against
the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.fuzz import check_case, make_case, outcome_of
from eqsat_ad.fuzz.rounding import within_rounding
from eqsat_ad.ir.draws import every_sum_sequential

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


# Σ C over a 4 x 4 array holding -1.3, 1e300, 1e154 and -1e300 among ordinary values: NumPy's
# pairwise sum keeps the ordinary ones, the unrolled chain of adds loses them to 1e300
# (fuzz 2042 #4141: the square of the sum over x[0], 33.9 against 2.17)
_C = np.array([[-1.30852080e+000, -1.34834025e+000, -1.63905531e+000, 4.94065646e-324],
               [1.41197818e+000, 1.00000000e-300, -1.00000000e-300, 1.00000000e-300],
               [-1.68916797e+000, -1.60118113e+000, -1.79673077e+000, -9.17328046e-001],
               [1.92773847e+000, 1.00000000e+300, 1.00000000e+154, -1.00000000e+300]])
_TOTAL = "def f(C: [4, 4]):\n    t1 = Sum[i: 4, j: 4](C[i, j])\n    return t1 ** 2\n"


def test_a_sum_added_in_order_is_a_rounding_draw() -> None:
    prog = ea.parse(_TOTAL)
    pairwise = ea.evaluate(prog, C=_C)
    chain = 0.0
    for v in _C.ravel():
        chain += v
    with every_sum_sequential():
        assert ea.evaluate(prog, C=_C) == chain ** 2 != pairwise
    for optimize in (False, True):  # the compiled code unrolls the 16 adds in that order
        got = ea.compile(prog, optimize=optimize)(C=_C)
        assert got == chain ** 2
        assert within_rounding(prog, {"C": _C}, pairwise, got)
    # a well-conditioned point: the orders agree, so a wrong value stays a defect
    c = np.arange(16.0).reshape(4, 4) / 7
    want = ea.evaluate(prog, C=c)
    with every_sum_sequential():
        assert ea.evaluate(prog, C=c) == pytest.approx(want, rel=1e-15)
    assert not within_rounding(prog, {"C": c}, want, want + 1.0)


def test_a_sequential_sum_keeps_strong_zeros() -> None:
    prog = ea.parse("def f(a: [N], w: []):\n    return w * Sum[i: N]((i > 5) * a[i])\n")
    args = {"a": np.array([1.0, 2.0, 3.0]), "w": np.inf}
    with every_sum_sequential():
        assert ea.evaluate(prog, **args) == ea.evaluate(prog, **args) == 0.0


def test_fuzz_2042_4141_is_rounding() -> None:
    case, inputs = make_case(2042, 4141)
    found = check_case(case, inputs)
    assert outcome_of(found["extreme"]) == "ill-conditioned", found["extreme"]
    assert all(outcome_of(f) in ("agree", "ieee-gradient") for k, f in found.items()
               if k != "extreme")
