"""Findings of the 10,000-program fuzz run at commit f6d926c (seeds 2037, 2038;
experiments/results/fuzz.md), one regression test per class, checked against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.fuzz import check_case, make_case, outcome_of
from eqsat_ad.fuzz.rounding import within_rounding
from eqsat_ad.ir.draws import every_product_reordered, every_sum_finite_first, every_sum_split

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# Σ_i (x[i/2] - t1[i]) with t1 a copy of x[0] and zeros: per term x[0] - x[0] + 0 + x[1]; split,
# Σ x[i/2] - Σ t1[i] = (x[0] + x[1]) - x[0], where -1e300 absorbs 1e154: exactly 0
_ABSORBED = ("def f(x: [N]):\n    t0[i: 2] = x[i/2]\n    t1[i: N] = t0[i]\n"
             "    return x[N - 1] / Sum[i: N](x[i/2] - t1[i]) ** 0.5\n")


def test_a_sum_split_into_its_terms_absorbs_as_the_normal_form_does() -> None:
    prog = ea.parse(_ABSORBED)
    x = np.array([-1e300, 1e154, 1.5])
    per_term = ea.evaluate(prog, x=x)
    assert per_term == pytest.approx(1.5 / 1e77)
    with every_sum_split():
        assert ea.evaluate(prog, x=x) == np.inf  # (-1e300 + 1e154) - (-1e300) is 0
    for optimize in (False, True):  # the compiled code sums each term on its own
        assert ea.compile(prog, optimize=optimize)(x=x) == np.inf
    assert within_rounding(prog, {"x": x}, per_term, np.inf)
    # a well-conditioned point: splitting changes nothing, so a wrong value stays a defect
    y = np.array([1.0, 4.0, 2.0])
    want = ea.evaluate(prog, x=y)
    with every_sum_split():
        assert ea.evaluate(prog, x=y) == want
    assert not within_rounding(prog, {"x": y}, want, np.inf)
    assert not within_rounding(prog, {"x": y}, want, 2 * want)


def test_a_split_sum_keeps_its_strong_zeros() -> None:
    """Σ_i ([i > 5] a - [i > 6] b) over 3 points is a strong zero split or not: 0 times inf."""
    prog = ea.parse("def f(a: [N], w: []):\n"
                    "    return w * Sum[i: N]((i > 5) * a[i] - (i > 6) * a[i])\n")
    args = {"a": np.array([1.0, 2.0, 3.0]), "w": np.inf}
    assert ea.evaluate(prog, **args) == 0.0
    with every_sum_split():
        assert ea.evaluate(prog, **args) == 0.0


def test_fuzz_2038_442_is_rounding() -> None:
    case, inputs = make_case(2038, 442)
    found = check_case(case, inputs)
    assert outcome_of(found["extreme"]) == "ill-conditioned", found["extreme"]
    assert all(outcome_of(f) == "agree" for k, f in found.items() if k != "extreme")


def test_a_scan_over_a_narrowed_range_reads_its_bounds_from_the_range_start() -> None:
    """``Σ_j [1 < j < M - 1 - 2 i] e(j)``: the running sums run over j from 2 (the range the
    condition j > 1 narrows), so the bound M - 1 - 2 i is read 2 positions earlier; it was read
    as a position from 0, summing e(2) where no j qualifies (fuzz 2037 #2048)."""
    prog = ea.parse("def f(a: [N], e: [M]):\n"
                    "    t[i: N] = Sum[j: M]((j > 1 and j < M - 1 - 2 * i) * e[j] * e[j])\n"
                    "    return Sum[i: N](a[i] * t[i])\n")
    rng = np.random.default_rng(4)
    for n, m in ((2, 3), (3, 9), (5, 12), (1, 2)):
        args = {"a": rng.normal(size=n), "e": rng.normal(size=m)}
        want = ea.evaluate(prog, **args)
        for optimize in (False, True):
            np.testing.assert_allclose(ea.compile(prog, optimize=optimize)(**args), want,
                                       rtol=1e-12, atol=1e-300)
        gwant = ea.evaluate(ea.vjp(prog, "e"), **args, ybar=1.0)
        np.testing.assert_allclose(ea.grad(prog, "e")(**args), gwant, rtol=1e-12, atol=1e-300)
    case, inputs = make_case(2037, 2048)
    assert all(outcome_of(f) == "agree" for f in check_case(case, inputs).values())


def test_a_bracket_kept_with_a_nested_sum_still_guards_the_outer_term() -> None:
    """The gradient ``a_bar = Σ_i t2_bar · ([1 < i <= N] · 2 Σ_k [1 < k <= N] a)`` has no live
    term at N = 2: the strong zero, 0, though ``t2_bar`` is inf (a quotient by Σ t2 = 0). The
    strict normal form keeps the bracket on ``i`` with the nested sum's conditions; the count
    of live terms left it out and multiplied inf by the empty sum's 0.0: nan (fuzz 2038
    #3166; an inf in A, which no term reads, sends the call to the strict code)."""
    prog = ea.parse("def f(A: [N, N], a: [], R: rel[N]):\n"
                    "    t2 = Sum[i: N]((i <= N and i > 1) * a) ** 2\n"
                    "    return R[N - 1] * sin(A[1, 1]) / Sum[i: N, j: N](t2)\n")
    args = {"A": np.array([[1.0, np.inf], [0.5, -1.5]]), "a": -0.6,
            "R": np.array([False, True])}
    want = ea.evaluate(ea.vjp(prog, "a"), **args, ybar=1.0)
    assert want == 0.0
    for optimize in (False, True):
        assert ea.grad(prog, "a", optimize=optimize)(**args) == 0.0, optimize
    case, inputs = make_case(2038, 3166)
    assert all(outcome_of(f) == "agree" for f in check_case(case, inputs).values())


# like terms: -a + b + b with a = inf and b = 1e308 is -inf as written, nan with the finite
# terms merged first (the backend's normal form: 2 b - a)
_LIKE_TERMS = "def f(a: [], b: []):\n    return -a + b + b\n"


def test_finite_terms_first_is_a_rounding_draw() -> None:
    prog = ea.parse(_LIKE_TERMS)
    args = {"a": np.inf, "b": 1e308}
    assert ea.evaluate(prog, **args) == -np.inf
    with every_sum_finite_first():
        assert np.isnan(ea.evaluate(prog, **args))
    assert within_rounding(prog, args, -np.inf, np.nan)
    # no overflow among the finite terms: the order changes nothing, nan stays a defect
    small = {"a": np.inf, "b": 1.0}
    with every_sum_finite_first():
        assert ea.evaluate(prog, **small) == -np.inf
    assert not within_rounding(prog, small, -np.inf, np.nan)
    assert not within_rounding(prog, {"a": 1.0, "b": 2.0}, 3.0, 4.0)


def test_finite_terms_first_keeps_strong_zeros() -> None:
    """A chain of bracketed terms, all false, is a strong zero in either order: 0 times inf."""
    prog = ea.parse("def f(a: [N], w: []):\n"
                    "    return w * ((N > 5) * a[0] - (N > 6) * a[1] + (N > 7) * a[2])\n")
    args = {"a": np.array([1.0, np.inf, 3.0]), "w": np.inf}
    assert ea.evaluate(prog, **args) == 0.0
    with every_sum_finite_first():
        assert ea.evaluate(prog, **args) == 0.0


# Σ_i t[i] (x[i] (a[i] / d[i])) at t = 0, d = 1e-308: a / d overflows, 0 · inf is nan as
# written; the normal form multiplies by d's reciprocal (1e308, finite) after t: 0
_QUOTIENT = "def f(t: [N], x: [N], a: [N], d: [N]):\n" \
            "    return Sum[i: N](t[i] * (x[i] * (a[i] / d[i])))\n"


def test_a_quotient_as_a_reciprocal_factor_is_a_rounding_draw() -> None:
    prog = ea.parse(_QUOTIENT)
    args = {"t": np.zeros(2), "x": np.ones(2), "a": np.full(2, 2.0), "d": np.full(2, 1e-308)}
    assert np.isnan(ea.evaluate(prog, **args))
    with every_product_reordered("reciprocals"):
        assert ea.evaluate(prog, **args) == 0.0
    assert within_rounding(prog, args, np.nan, 0.0)
    # without the overflow the quotient is finite in both orders: 0 instead of nan is a defect
    args["d"] = np.full(2, 0.5)
    args["x"] = np.array([np.inf, 1.0])
    assert np.isnan(ea.evaluate(prog, **args))
    with every_product_reordered("reciprocals"):
        assert np.isnan(ea.evaluate(prog, **args))
    assert not within_rounding(prog, args, np.nan, 0.0)


@pytest.mark.parametrize(("seed", "number"), [(2037, 2617), (2038, 1808)])
def test_fuzz_overflows_in_another_order_are_rounding(seed: int, number: int) -> None:
    case, inputs = make_case(seed, number)
    found = check_case(case, inputs)
    for kind, findings in found.items():
        assert outcome_of(findings) in ("agree", "ill-conditioned", "ieee-gradient"), \
            (kind, findings)
    assert "ill-conditioned" in {outcome_of(f) for f in found.values()}
