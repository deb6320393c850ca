"""Regression tests for the disagreement classes of the 10,000-program fuzz run (seeds 2028,
2029) fixed on branch sem7 (experiments/results/fuzz.md, "Fixed on branch sem7"): each compares
the reference interpreter with the compiled code, ``optimize=False`` and optimized, or checks
that the fuzzer's ``ill-conditioned`` outcome allows rounding and still flags a wrong value."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.numpy import CompiledProgram
from eqsat_ad.fuzz import Case, check_case
from eqsat_ad.fuzz.report import DEFECTS


def _same(a: Any, b: Any) -> bool:
    """Equal values with equal nan/inf patterns (and the sign of a zero), entry by entry."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a == b) & (np.signbit(a) == np.signbit(b))
                                              | np.isnan(a) & np.isnan(b)))


def _all_stages(src: str, **args: Any) -> list[Any]:
    prog = ea.parse(src)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref = ea.evaluate(prog, **args)
        return [ref] + [ea.compile(prog, optimize=opt)(**args) for opt in (False, True)]


def test_a_factor_that_overflows_is_not_taken_out_of_a_sum() -> None:
    """2029 #97 (``x[0] ** 2 * np.minimum(x[1], x[i])`` at ±1e300): the fast code took the
    finite-looking ``x[0] ** 2`` (inf after overflow) out of a sum as a finite factor, so
    ``inf * (0 + 1)`` is inf where the interpreter's ``inf * 0 + inf * 1`` is nan; an overflow
    in the fast code now reruns the strict code."""
    src = "def f(x: [N], y: [N]):\n    return Sum[i: N](x[0] ** 2 * y[i])\n"
    ref, plain, opt = _all_stages(src, x=np.array([1e300, 1.0]), y=np.array([0.0, 1.0]))
    assert np.isnan(ref) and np.isnan(plain) and np.isnan(opt)
    src = "def f(x: [N], y: [N]):\n    z[i: N] = Sum[j: N](x[0] ** 2 * y[j] * x[i])\n    return z\n"
    outs = _all_stages(src, x=np.array([1e300, 1.0]), y=np.array([0.0, 1.0]))
    assert all(np.isnan(o).all() for o in outs), outs
    # finite values stay on the fast code and agree
    ref, plain, opt = _all_stages(src, x=np.array([3.0, 1.0]), y=np.array([0.5, 1.0]))
    assert np.allclose(plain, ref) and np.allclose(opt, ref)


def test_the_gradient_of_a_tied_minimum_times_an_overflowed_factor() -> None:
    """The reproducer s2029_gradient_numpy_grad_001: the interpreted gradient is nan at both
    entries (the stored adjoint 0.0 times inf), and so is the compiled one."""
    case = Case("numpy", "import numpy as np\n\n\ndef f(x):\n    for i in range(len(x)):\n"
                "        s1 = x[0] ** 2 * np.minimum(x[1], x[i])\n    return s1\n",
                {"x": ("M",)}, {"M": 2})
    findings = check_case(case, {"extreme": {"x": np.array([-1e300, 1e300])}})["extreme"]
    assert [f for f in findings if f.outcome in DEFECTS] == [], findings


@pytest.mark.parametrize("src", [
    "def f(A: [N], w: []):\n    return Sum[i: N](gt(A[i], 1.0)) / (w * w)\n",
    "def f(A: [N], w: []):\n    return w * Sum[i: N](gt(A[i], 1.0)) / (w * w)\n",
    "def f(A: [N], w: []):\n    return (Sum[i: N]((i < 5) * gt(A[i], 1.0)) * w) ** 2 / (w * w)\n",
])
def test_a_quotient_of_a_sum_of_false_comparisons_is_a_strong_zero(src: str) -> None:
    """2028 #2636: ``Σ_i gt(A[i], 1) * ... / d`` where every comparison is false is a strong
    zero (a Σ of strong zeros), so the quotient is 0 even where ``d`` underflows to 0 (0 / 0);
    the generated code divided the masked 0.0 by it (nan). The quotient is now masked by the
    Σ's count of live terms."""
    for A in (np.array([0.5, -2.0]), np.array([0.5, 3.0])):
        ref, plain, opt = _all_stages(src, A=A, w=1e-200)
        assert _same(plain, ref) and _same(opt, ref), (A, ref, plain, opt)
    ref, plain, opt = _all_stages(src, A=np.array([0.5, 3.0]), w=2.0)
    assert ref != 0 and np.isclose(plain, ref) and np.isclose(opt, ref)


@pytest.mark.parametrize("bracket", ["i < 0", "i == 1"])
def test_a_term_guarded_away_adds_its_positive_zero(bracket: str) -> None:
    """2029 #3200: ``t[i] = w * x[i] + [p] * x[i]`` where p is false is ``-0.0 + 0`` = +0.0
    in the interpreter (a strong zero adds as +0.0, docs/semantics.md); the strict code wrote
    the dense term and added the other only over its region, leaving -0.0, and ``1 / t[0]``
    was -inf against +inf."""
    src = f"def f(x: [N], w: []):\n    t[i: N] = w * x[i] + ({bracket}) * x[i]\n" \
          "    return 1 / t[0]\n"
    ref, plain, opt = _all_stages(src, x=np.array([0.0, 1.0]), w=-1.0)
    assert ref == np.inf and plain == np.inf and opt == np.inf
    ref, plain, opt = _all_stages(src, x=np.array([2.0, 1.0]), w=-1.0)
    assert ref == plain == opt == -0.5


# (the slice makes the size static: the sum is unrolled into its 32 reads)
_SUM_OF_DIFFERENCE = Case("numpy", "import numpy as np\n\n\ndef f(B):\n    t2 = B[1:]\n"
                          "    return np.sum(B - B)\n", {"B": ("N", "N")}, {"N": 4})
_EXTREME_B = np.array([[-0.0, 1e-300, 1.0, 1e300], [1.0, 0.0, 1.0, -1e300],
                       [1.0, 1.0, -1e300, -1e300], [-1e-300, 5e-324, 1.0, 1.0]])


def test_a_distributed_sum_of_cancelling_reads_is_rounding() -> None:
    """Class 4 (s2028_value_numpy_compile_009): ``np.sum(B - B)`` at ±1e300 is 0.0
    interpreted and -2.0 compiled (the sum distributed over ``-``: Σ B - Σ B, each absorbing
    the ones). Moving each read of ``B`` on its own by 1e-13 relative (the rounding model of a
    reassociated sum) moves the interpreter's value by ~1e287, so the fuzzer reports
    ``ill-conditioned``, not a defect."""
    findings = check_case(_SUM_OF_DIFFERENCE, {"extreme": {"B": _EXTREME_B}})["extreme"]
    assert findings and {f.outcome for f in findings} == {"ill-conditioned"}, findings


def test_a_wrong_value_is_still_a_defect_where_rounding_is_allowed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``ill-conditioned`` outcome is a real check: the compiled value must lie within the
    span of the rounded draws (``np.sum(B)``, -2e300, instead of ``np.sum(B - B)`` does not),
    and at an ordinary point no rounding moves the value, so a difference stays ``value``."""
    real = CompiledProgram.__call__
    wrong: dict[str, Any] = {}

    def broken(self: CompiledProgram, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        B = np.asarray(kwargs["B"] if "B" in kwargs else args[0])
        return out if isinstance(out, tuple) else wrong["f"](out, B)

    monkeypatch.setattr(CompiledProgram, "__call__", broken)
    ordinary = np.arange(16.0).reshape(4, 4) / 7
    for f, B in ((lambda out, B: np.sum(B), _EXTREME_B), (lambda out, B: out + 1.0, ordinary)):
        wrong["f"] = f
        outcomes = {g.outcome for g in check_case(_SUM_OF_DIFFERENCE, {"x": {"B": B}})["x"]}
        assert "value" in outcomes, (B, outcomes)


def test_a_nan_pattern_that_rounding_decides_is_rounding_but_not_any_pattern(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """2029 #3768: ``inf * (x[1] - (x[1] - x[2]))`` with ``x[1] = 1e154`` is nan interpreted
    (the difference absorbs ``x[2]`` to 0.0) and inf compiled (``a - (a - b) = b``): rounding
    decides the pattern (a move of each read makes it ±inf), so ``ill-conditioned``. A compiled
    0.0 there (what an unsound ``x - x = 0`` would give) is a kind no rounding gives: it stays
    ``nan-pattern``."""
    case = Case("index", "def f(x: [N]):\n    return x[0] * (x[1] - (x[1] - x[2]))\n",
                {"x": ("N",)}, {"N": 3})
    inputs = {"nonfinite": {"x": np.array([np.inf, 1e154, 1.3])}}
    # the compiled code itself (the strict code keeps the difference as written) is no defect
    findings = check_case(case, inputs)["nonfinite"]
    assert not [f for f in findings if f.outcome in DEFECTS], findings
    # the distributed form's inf (a - (a - b) = b) is rounding
    monkeypatch.setattr(CompiledProgram, "__call__", lambda self, *a, **k: np.inf)
    findings = check_case(case, inputs)["nonfinite"]
    compiled = [f for f in findings if f.stage.startswith("compile")]
    assert compiled and {f.outcome for f in compiled} == {"ill-conditioned"}, findings
    monkeypatch.setattr(CompiledProgram, "__call__", lambda self, *a, **k: 0.0)
    findings = check_case(case, inputs)["nonfinite"]
    assert "nan-pattern" in {f.outcome for f in findings}, findings


def test_numpy_itself_may_round_an_ill_conditioned_value_otherwise() -> None:
    """2029 #1341: ``cos`` of dot products of entries near 1e23 (an argument near 1e47, where
    the cosine is decided by rounding): NumPy's BLAS order gives -0.00063, the interpreter
    -0.00094, its rounded draws spread by 0.0016: ``ill-conditioned``, as for compiled code."""
    case = Case("numpy", "import numpy as np\n\n\ndef f(A):\n    for _ in range(3):\n"
                "        A = ((A.T * np.trace(A)) * (A.T * np.trace(A)))\n"
                "    return (np.mean((np.full((A[::2].shape[0], A[1:].shape[0],), 1e-3) / "
                "np.full((A[::2].shape[0], A[1:].shape[0],), 1.0)), axis=0) @ "
                "np.cos(np.dot(A[:-1], A[-1]))), A\n", {"A": ("N", "N")}, {"N": 4})
    A = np.array([[-1.6367880725322168, -1.3574524200952045, 0.3283335708682234,
                   -1.6615575905237798],
                  [1.3674851707583229, 1.0169700768013699, -0.5245259808455843,
                   -1.6726561237220023],
                  [1.5010377732518068, 1.699193900414485, -0.7802465780324712,
                   -0.3087695076430608],
                  [0.40303592775029506, 0.43874291812612, -0.8404602535840602,
                   -1.2963743917485762]])
    findings = check_case(case, {"finite": {"A": A}}, fd=False)["finite"]
    assert [f for f in findings if f.outcome in DEFECTS] == [], findings
    assert ("ill-conditioned", "translate") in {(f.outcome, f.stage) for f in findings}


_SQRT_OF_A_COMPUTED_ZERO = Case("index", "def f(x: [N]):\n    return sqrt(x[0] - x[0]) * x[1]\n",
                                {"x": ("N",)}, {"N": 3})


def test_sqrt_of_a_computed_zero_is_the_ieee_chain_rule() -> None:
    """2028 #2241 (``np.sqrt(np.mean(M @ (x[::2] - x[::2])))``): the function is 0 whatever
    ``x``, but its gradient is ``sqrt'(0) = inf`` times the two reads' adjoints ``+a`` and
    ``-a``: inf - inf = nan, as ``jax.grad`` gives. With every inf a division makes saturated,
    the gradient program gives the finite differences' 0: ``ieee-gradient``, not ``fd``."""
    case = Case("numpy", "import numpy as np\n\n\ndef f(x):\n"
                "    return np.sqrt(np.mean(3.0 * (x[::2] - x[::2])))\n", {"x": ("N",)}, {"N": 3})
    inputs = {"finite": {"x": np.array([1.2, 1.3, -0.7])}}
    for c in (case, _SQRT_OF_A_COMPUTED_ZERO):
        findings = check_case(c, inputs)["finite"]
        assert [f.outcome for f in findings] == ["ieee-gradient"], findings
        assert "saturated" in findings[0].detail and findings[0].actual == "nan"


def test_an_inf_that_does_not_cancel_exactly_stays_an_fd_finding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The saturating diagnosis explains only an exact cancellation: a gradient program that
    computes ``t a - 0.5 t a`` with ``t = sqrt'(0)`` (a wrong derivative) saturates to 5e99·a,
    not the finite differences' 0, so it stays ``fd``."""
    import eqsat_ad.api as api

    wrong = ea.parse("def f_grad(x: [N]):\n    t = 1 / (2 * sqrt(x[0] - x[0]))\n"
                     "    x_bar[i: N] = (i == 0) * (t * x[1] - 0.5 * t * x[1])\n"
                     "    return (x_bar,)\n")
    monkeypatch.setattr(api, "gradient_program", lambda *a, **k: wrong)
    inputs = {"finite": {"x": np.array([1.2, 1.3, -0.7])}}
    findings = check_case(_SQRT_OF_A_COMPUTED_ZERO, inputs)["finite"]
    assert "fd" in {f.outcome for f in findings}, findings
