"""Defects found by the 10,000-program fuzz runs with seeds 2033 and 2034, one regression test per
class: the interpreter's value is stated, and every stage (unoptimized and optimized code, values
and gradients) is checked against it by the fuzzer's own comparison."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.api import gradient_program
from eqsat_ad.fuzz import Case, check_case, make_case
from eqsat_ad.fuzz.report import DEFECTS
from eqsat_ad.ir.draws import every_infinity_saturates
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.plan.split import inline_small_arrays

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _defects(source: str, shapes: dict, sizes: dict, inputs: dict, kind: str = "finite",
             fd: bool = False) -> list:
    case = Case("index", source, shapes, sizes)
    return [f for f in check_case(case, {kind: inputs}, fd=fd)[kind] if f.outcome in DEFECTS]


@pytest.mark.parametrize("source, inputs", [
    # 2034 #3908: x ** 2.5 at x < 0 is nan; the fast code distributed the bracketed product
    # over B - t0 and multiplied the nan by the bracket's np.where(...) 0
    ("def f(x: [N], A: [], B: []):\n    t0[i: N] = x[i] ** 2.5\n"
     "    t1[i: N] = log1p(Sum[j: N, k: 3](A) * (i == 1) * (B - t0[i]))\n    return t1\n",
     {"x": np.array([-0.66, 2.0]), "A": 1.5, "B": -1.3}),
    # ... a 0 / 0 and a log of a negative number, made from finite arguments
    ("def f(x: [N], B: []):\n    t0[i: N] = x[i] / x[i]\n"
     "    t1[i: N] = (i == 1) * (B - t0[i])\n    return t1\n",
     {"x": np.array([0.0, 2.0]), "B": -1.3}),
    ("def f(x: [N], B: []):\n    t0[i: N] = log(x[i])\n"
     "    t1[i: N] = (i == 1) * B * (B - t0[i])\n    return t1\n",
     {"x": np.array([-1.0, 2.0]), "B": -1.3}),
])
def test_an_invalid_operation_on_finite_arguments_reruns_the_strict_code(
        source: str, inputs: dict) -> None:
    """The fast code trusts finite arguments to make finite values; an IEEE invalid operation
    (its nan) now reruns the strict code, as an overflow or a division by zero did."""
    want = evaluate(ea.parse(source), **inputs)
    assert want[0] == 0.0 and np.isfinite(want[0])
    for optimize in (False, True):
        got = ea.compile(ea.parse(source), optimize=optimize)(**inputs)
        np.testing.assert_array_equal(got, want)
    shapes = {k: ("N",) if np.ndim(v) else () for k, v in inputs.items()}
    assert _defects(source, shapes, {"N": 2}, inputs) == []


SQRT_BEHIND_A_READ = ("def f(x: [], R: rel[N, 1]):\n    t0[i: N, j: 3] = sqrt(x)\n"
                      "    return t0[1, 3]\n")


def test_an_array_with_a_bracket_is_not_recomputed_where_it_is_read() -> None:
    """2033 #1244: the adjoint ``t0_bar[i, j] = (i == 1 and j == 3) * 1`` is stored (its false
    bracket an ordinary 0.0), so ``Σ t0_bar[i, j] / (2 sqrt(x))`` is nan at x < 0 in the
    interpreter; the fast code recomputed ``t0_bar`` where it is read, whose false bracket
    removed the term, and gave 0.0."""
    prog = ea.parse(SQRT_BEHIND_A_READ)
    inputs = {"x": -1e300, "R": np.array([[False]])}
    gp = gradient_program(prog, ("x",), as_tuple=True)
    want = evaluate(gp, **inputs)
    assert np.isnan(want[0])
    for optimize in (False, True):
        got = ea.grad(prog, wrt=("x",), optimize=optimize)(**inputs)
        assert np.isnan(got[0])
    alt = inline_small_arrays(gp, {"N": 1})
    assert alt is None or any(s.name == "t0_bar" for s in alt.statements)
    assert _defects(SQRT_BEHIND_A_READ, {"x": (), "R": ("N", 1)}, {"N": 1}, inputs,
                    kind="nonfinite") == []


def test_an_array_without_a_bracket_is_still_recomputed() -> None:
    """The restriction above keeps the recomputation of plain elementwise arrays."""
    src = ("def f(x: [N], y: [N]):\n    t[i: N, j: 3] = x[i] * y[i]\n"
           "    s = Sum[i: N, j: 3](t[i, j] * x[i])\n    return s\n")
    alt = inline_small_arrays(ea.parse(src), {"N": 1000})
    assert alt is not None and all(s.name != "t" for s in alt.statements)


def test_an_infinite_derivative_cancelling_after_a_term_is_an_ieee_gradient() -> None:
    """2033 #2856: ``w + (w - w) ** 0.5`` has the derivative ``1 + inf - inf`` (nan, IEEE, as
    JAX) where finite differences give 1; saturating the inf at 1e100 absorbed the 1 (0.0), so
    the fuzzer reported an ``fd`` defect: a moderate saturation now recognises it."""
    src = "def f(w: []):\n    return w + (w - w) ** 0.5\n"
    gp = gradient_program(ea.parse(src), ("w",), as_tuple=True)
    assert np.isnan(evaluate(gp, w=1.0)[0])
    with every_infinity_saturates(2.0 ** 30):
        assert evaluate(gp, w=1.0)[0] == 1.0
    case = Case("index", src, {"w": ()}, {})
    findings = check_case(case, {"finite": {"w": 1.0}})["finite"]
    assert [f.outcome for f in findings] == ["ieee-gradient"]
    with pytest.raises(ValueError, match="positive"):
        with every_infinity_saturates(0.0):
            pass


def test_fuzz_2033_4468_agrees() -> None:
    """2033 #4468 (``... / min(sqrt(x[1]), w)`` with x[1] < 0: its gradient was 0.0 in the
    compiled code against the interpreter's nan), on its three input sets."""
    case, inputs = make_case(2033, 4468)
    for kind, findings in check_case(case, inputs).items():
        assert [f for f in findings if f.outcome in DEFECTS] == [], kind
