"""Findings of the 10,000-program fuzz run at commit ec56296 (seeds 2035, 2036;
experiments/results/fuzz.md), one regression test per class, checked against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.fuzz import check_case, make_case, outcome_of
from eqsat_ad.ir.draws import every_product_reordered

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

_NEGATED = [
    "-Sum[i: N](R[i, 1])",  # no factor outside the sum: its coefficient is -1
    "-Sum[i: N](R[i, 1] * A)",
    "-2 * Sum[i: N](R[i, 1] * A)",
    "-Sum[i: N](R[i, 1] * (A - A))",  # a live term of 0.0 (-0.0 negated) where R[0, 1] holds
    "-(Sum[i: N](R[i, 1] * A) - Sum[i: N](R[i, 1] * A))",
    "-Sum[i: N](gt(A, 3) * A)",
    "-Sum[i: N]((i > 5) * A)",
    "Sum[i: N](-R[i, 1])",
]


@pytest.mark.parametrize("body", _NEGATED)
@pytest.mark.parametrize("live", [False, True])
def test_a_negated_sum_of_guarded_terms_is_a_positive_strong_zero(body: str, live: bool) -> None:
    """A Σ whose terms are all guarded away is a strong zero, +0.0 also negated
    (docs/semantics.md), so ``A / -Σ_i R[i, 1]`` divides by +0.0 where no ``R[i, 1]`` holds (it
    divided by -0.0: fuzz 2035 #120); with a live term the negation is IEEE's."""
    prog = ea.parse(f"def f(A: [], R: rel[N, 2]):\n    return A / ({body})\n")
    rel = np.array([[live, live], [False, False], [True, False]])  # column 1: R[0, 1] = live
    args = {"A": -1.95, "R": rel}
    want = ea.evaluate(prog, **args)
    for optimize in (False, True):
        got = ea.compile(prog, optimize=optimize)(**args)
        assert np.signbit(got) == np.signbit(want) and (got == want or np.isnan(want)), \
            (optimize, got, want)
    if not live and "(i > 5)" not in body:
        assert want == -np.inf  # the strong zero's +0.0


def test_fuzz_2035_120_agrees() -> None:
    case, inputs = make_case(2035, 120)
    assert all(outcome_of(f) == "agree" for f in check_case(case, inputs).values())


def test_constants_first_scales_the_terms_of_a_sum() -> None:
    """The rounding model's ``constants-first`` order is the normal form's ``coef · Σ_J Π
    factors``: a mean whose Σ overflows as written (inf, as ``np.mean``) is finite with the
    constant in the terms, so the compiled 1e308 is rounding, not a defect (fuzz 2035 #289)."""
    prog = ea.parse("def f(A: [N]):\n    return Sum[i: N](A[i] * A[i]) / 2\n")
    a = np.array([1e154, 1e154])
    assert ea.evaluate(prog, A=a) == np.inf
    with every_product_reordered("constants-first"):
        assert ea.evaluate(prog, A=a) == 1e308
    with every_product_reordered("written"):
        assert ea.evaluate(prog, A=a) == np.inf
    case, inputs = make_case(2035, 289)
    found = check_case(case, inputs)
    assert outcome_of(found["extreme"]) == "ill-conditioned", found["extreme"]
    assert all(outcome_of(f) == "agree" for k, f in found.items() if k != "extreme")


def test_a_scaled_sum_that_stays_finite_is_still_a_defect_when_wrong() -> None:
    """The constants-first draw widens what counts as rounding only by what it evaluates: a
    result off by a factor of 2 at a well-conditioned point is still outside every draw."""
    from eqsat_ad.fuzz.rounding import within_rounding

    prog = ea.parse("def f(A: [N]):\n    return Sum[i: N](A[i] * A[i]) / 2\n")
    a = np.array([1.5, -0.5])
    want = ea.evaluate(prog, A=a)
    assert within_rounding(prog, {"A": a}, want, want)
    assert not within_rounding(prog, {"A": a}, want, 2 * want)


def test_summed_first_multiplies_a_sums_reads_before_the_factors_free_of_them() -> None:
    """The strict code multiplies a Σ's factors that read the summed index first and a risky
    factor free of it last; where a finite intermediate overflows in that order only, its nan
    is rounding (fuzz 2036 #1914: ``t[0] d[0] x`` overflows before ``3 / (x x) ** 2`` = 0)."""
    prog = ea.parse("def f(x: [], t: [N], d: [N]):\n"
                    "    return Sum[i: N](t[i] * (x * (3 / (x * x) ** 2) * d[i]))\n")
    args = {"x": 1e154, "t": np.array([1.0, 0.0]), "d": np.array([6e299, 1.0])}
    assert ea.evaluate(prog, **args) == 0.0
    with every_product_reordered("written"):
        assert ea.evaluate(prog, **args) == 0.0
    with every_product_reordered("summed-first"):
        assert np.isnan(ea.evaluate(prog, **args))
    case, inputs = make_case(2036, 1914)
    found = check_case(case, inputs)
    assert outcome_of(found["extreme"]) == "ill-conditioned", found["extreme"]


def test_a_read_outside_its_tensor_does_not_narrow_a_term_with_a_pole() -> None:
    """The fast code narrows a window term's region to where its shifted reads lie inside their
    arrays (outside, a read is 0.0); with a factor that may be inf there (a negative power of
    a difference that is 0), the interpreter's term is 0.0 * inf = nan, so the region is not
    narrowed and the divide flag sends the call to the strict code (fuzz 2035 #4922)."""
    case, inputs = make_case(2035, 4922)
    for kind, found in check_case(case, inputs).items():
        assert outcome_of(found) in ("agree", "ieee-gradient"), (kind, found)
    prog = ea.parse("def f(x: [N], y: [M]):\n"
                    "    t[j: M] = Sum[a: 2](x[j - a] * (y[j] - 3.0) ** -2)\n"
                    "    return Sum[j: M](t[j])\n")  # the pole y[2] = 3 where x[2 - a] is 0.0
    args = {"x": np.array([1.0]), "y": np.array([1.0, 2.0, 3.0])}
    want = ea.evaluate(prog, **args)
    assert np.isnan(want)
    for optimize in (False, True):
        assert np.isnan(ea.compile(prog, optimize=optimize)(**args)), optimize
