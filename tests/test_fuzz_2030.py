"""Defects found by the 10,000-program fuzz run at commit 4bff926 (seeds 2030, 2031;
experiments/results/fuzz.md), one regression test per class: the interpreter's value is stated,
and every stage (unoptimized and optimized code, values and gradients) is checked against it by
the fuzzer's own comparison."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
import eqsat_ad.api
from eqsat_ad.fuzz import Case, check_case
from eqsat_ad.fuzz.report import DEFECTS
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _agree(source: str, shapes: dict, sizes: dict, inputs: dict, generator: str = "index",
           kind: str = "nonfinite") -> None:
    """Interpreter, optimize=False and optimized code agree (values, nan/inf patterns, and the
    gradients of a scalar program)."""
    case = Case(generator, source, shapes, sizes)
    findings = check_case(case, {kind: inputs}, fd=False)[kind]
    assert [f for f in findings if f.outcome in DEFECTS] == []


def _compiled(source: str, *args: object) -> list[object]:
    return [ea.compile(ea.parse(source), optimize=optimize)(*args) for optimize in (False, True)]


@pytest.mark.parametrize("source, x, want", [
    # a negated sum that is exactly +0.0 (x[0] = -x[1]) is -0.0, so 1 / it is -inf
    ("def f(x: [N]):\n    y[i: N] = -(x[i] + x[1 - i])\n    return 1 / y[0]\n",
     [1.0, -1.0], -np.inf),
    # ... and the same behind a difference: -0.0 - (+0.0) is -0.0
    ("def f(x: [N]):\n    y[i: N] = x[2] - (x[i] + x[1 - i])\n    return 1 / y[0]\n",
     [-1.0, 1.0, -0.0], -np.inf),
    # ... a sum divided by a negative constant, or a bracketed one times one
    ("def f(x: [N]):\n    y[i: N] = (x[i] + x[1 - i]) / -2\n    return 1 / y[0]\n",
     [1.0, -1.0], -np.inf),
    ("def f(x: [N]):\n    y[i: N] = -2 * ((i == 0) * x[i] + x[1 - i])\n    return 1 / y[0]\n",
     [-0.0, 0.0], -np.inf),
    ("def f(x: [N]):\n    y[i: N] = ((i == 0) * x[i] + x[1 - i]) / -4\n    return 1 / y[0]\n",
     [1.0, -1.0], -np.inf),
    # a negated sum of guarded terms that are all false is a strong zero: +0.0, not -0.0
    ("def f(x: [N]):\n    y[i: N] = -((i == 0) * x[i] + (i == 2) * x[0])\n    return 1 / y[1]\n",
     [1.0, -1.0], np.inf),
    ("def f(x: [N]):\n    y[i: N] = -((i == 0) * x[i] + gt(x[i], 5) * x[0])\n"
     "    return 1 / y[1]\n", [np.nan, -1.0], np.inf),
])
def test_a_negated_sum_keeps_the_sign_of_its_zero(source: str, x: list, want: float) -> None:
    """fuzz 2030:537 (``x = -np.where(x <= x, x, x[-1])``, then ``x[-1] ** -1``): ``-(a +
    b)`` is -0.0 where ``a + b`` is +0.0 (``a = -b``, or ``a = -0.0`` plus the select's strong
    zero), but the normal form distributed the negation, ``-a - b``: +0.0, so a division by it
    gave +inf against the interpreter's -inf, on finite inputs too. The strict code (which the
    fast code reruns on a division by zero) now keeps the negation of a sum of terms outside
    it, and a negated sum of guarded terms stays a strong zero where none is live."""
    xs = np.array(x)
    assert _value(source, x=xs) == want
    assert _compiled(source, xs) == [want, want]
    _agree(source, {"x": ("N",)}, {"N": len(x)}, {"x": xs})


def test_np_where_then_negation_keeps_the_sign_of_zero() -> None:
    """The program of fuzz 2030:537, minimized: the select ``ge(x, x) * x + nge(x, x) * x[1]``
    at ``x = -0.0`` is +0.0 (the strong zero added to -0.0), negated -0.0."""
    src = ("import numpy as np\n\n\ndef f(x):\n    x = -(np.where(x <= x, x, x[-1]))\n"
           "    return 1.0 / x[-1]\n")
    _agree(src, {"x": ("N",)}, {"N": 2}, {"x": np.array([-0.9, -0.0])}, generator="numpy")


def _value(source: str, **inputs: object) -> object:
    return evaluate(ea.parse(source), **inputs)


@pytest.mark.parametrize("source, inputs, want", [
    # fuzz 2030:400: Σ_i t0[2i] / Σ_j A1[j] with the divisor 5e-324 and t0 = 0
    ("def f(x: [N], w: []):\n    return Sum[i: N](x[i] / w)\n",
     {"x": np.array([0.0, 0.0]), "w": 5e-324}, 0.0),
    ("def f(x: [N], w: [N]):\n    return Sum[i: N](x[i] / w[i])\n",
     {"x": np.array([0.0, 1e-300]), "w": np.array([5e-324, 1e-10])}, 1e-300 / 1e-10),
    ("def f(x: [N], w: []):\n    return Sum[i: N](x[i] / w) * w\n",
     {"x": np.array([1e-300, 0.0]), "w": 5e-324}, 1e-300),
])
def test_a_quotient_by_a_subnormal_is_not_a_product_by_its_overflowed_reciprocal(
        source: str, inputs: dict, want: float) -> None:
    """``a / b`` with ``b = 5e-324`` is finite (0 for ``a = 0``), but ``1 / b`` overflows, so
    ``a * b ** -1`` is ``0 * inf``, nan: the strict code took a quotient inside a sum apart into
    the factors ``a`` and ``b ** -1`` (to take ``b`` out of the sum, as the fast code does where
    ``b ** -1`` is checked finite). It keeps the quotient whole now."""
    assert _value(source, **inputs) == pytest.approx(want, rel=1e-12)
    got = _compiled(source, *inputs.values())
    assert got[0] == got[1] == pytest.approx(want, rel=1e-12)
    shapes = {k: ("N",) if np.ndim(v) else () for k, v in inputs.items()}
    _agree(source, shapes, {"N": 2}, inputs, kind="extreme")


def test_a_sum_divided_by_a_subnormal_sum_reruns_exactly() -> None:
    """The program of fuzz 2030:400, minimized: ``Σ_i t0[2i] / Σ_{j: 2} A1[j]`` at N = 1 with
    ``t0 = log(1 - (-0.0) / 5e-324) = 0`` and the divisor the subnormal 5e-324: 0."""
    src = ("def f(A: [1, N], A1: [N]):\n    t0[i: N] = log((1 - (A[0, i/2] / A1[i/2])))\n"
           "    return Sum[i: N](t0[2*i] / Sum[j: 2](A1[j]))\n")
    inputs = {"A": np.array([[-0.0]]), "A1": np.array([5e-324])}
    assert _value(src, **inputs) == 0.0
    assert _compiled(src, *inputs.values()) == [0.0, 0.0]
    _agree(src, {"A": (1, "N"), "A1": ("N",)}, {"N": 1}, inputs, kind="extreme")


def test_a_small_array_read_outside_it_is_not_recomputed_behind_a_false_bracket() -> None:
    """fuzz 2031:1396 (finite inputs): ``t1[i: 3, j: N] = i < j`` read at ``t1[3, N - 1]``,
    outside it: an ordinary 0.0, so the adjoint ``t1[3, N - 1] * 2 (log(0) + ...)`` is ``0 *
    -inf``, nan, as the interpreter computes. The fast code recomputed the small array where it
    is read (plan/split.py ``inline_small_arrays``) behind the read's range, a false bracket:
    the whole term vanished, its -inf unseen, so no rerun of the strict code (gradient 0). An
    array read where a read is not proven inside it is now kept."""
    src = ("def f(A: [N, N]):\n    t0[i: N, j: N] = A[i, N - 1]\n    t1[i: 3, j: N] = i < j\n"
           "    return (log(0.0) + t0[N - 1, N - 1] * t1[3, N - 1]) ** 2\n")
    p, a = ea.parse(src), np.array([[1.92]])
    want = evaluate(ea.api.gradient_program(p, ("A",), as_tuple=True), A=a)[0]
    assert np.isnan(want).all()
    for optimize in (False, True):
        assert np.isnan(ea.grad(p, wrt="A", optimize=optimize)(a)).all()
    _agree(src, {"A": ("N", "N")}, {"N": 1}, {"A": a}, kind="finite")


@pytest.mark.parametrize("body, want", [
    ("(1 != 1) + t0[1]", np.inf),
    ("t0[1] + (1 != 1 and 1 >= 2) * t0[2] / softplus(t0[0])", np.inf),
    ("-(1 != 1) + t0[1]", np.inf),
    ("t0[1] - (1 != 1)", -np.inf),  # (e - 0 is e exactly)
])
def test_a_statically_false_bracket_added_to_a_negative_zero(body: str, want: float) -> None:
    """fuzz 2030:2738 (finite inputs): ``t0[1] = x[1/2] / x[1]`` is -0.0 for ``x[1] < 0``, and
    ``(1 != 1) + t0[1]`` is the strong zero's +0.0 plus -0.0: +0.0, so ``t1 ** -1`` is +inf.
    The normal form drops the false bracket's term and kept -0.0 (-inf); such a statically
    zero addend is now added after the terms, as the literal 0 is."""
    src = (f"def f(x: [3]):\n    t0[i: 3] = x[i/2] / x[i]\n    t1 = {body}\n"
           "    return t1 ** (-1)\n")
    x = np.array([1.66, -1.63, -1.93])
    assert _value(src, x=x) == want
    assert _compiled(src, x) == [want, want]
    _agree(src, {"x": (3,)}, {}, {"x": x}, kind="finite")


def test_a_temporary_of_a_guarded_loop_term_is_not_reused_after_the_guard() -> None:
    """fuzz 2030:3306 (internal error, finite inputs): a small axis run as a loop tests a
    term's conditions on the loop variable with an ``if`` (plan/lower/loops.py); the sum both
    terms share was computed inside the first term's ``if`` and reused by the second term
    after it: UnboundLocalError where the condition was false. A temporary defined under the
    ``if`` is now forgotten after it."""
    src = ("def f(A: [N, N], B: [N, N]):\n"
           "    t0[i: 2] = (((i != i/2) * -1.5 + -(A[2*i, i/2])) * "
           "Sum[j: N](Sum[k: 2](B[k, 2*i])))\n    return t0\n")
    rng = np.random.default_rng(0)
    inputs = {"A": rng.normal(size=(3, 3)), "B": rng.normal(size=(3, 3))}
    want = _value(src, **inputs)
    for got in _compiled(src, *inputs.values()):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    _agree(src, {"A": ("N", "N"), "B": ("N", "N")}, {"N": 3}, inputs, kind="finite")


@pytest.mark.parametrize("body, want", [
    ("ne(0.0, (i > i) * 0.001)", 0.0),  # 2031 #3854: the comparison is false for every i
    ("ne(0.0, (i > i))", 0.0),
    ("ne(0.0, (i > i) * A[i, i])", 0.0),
    ("eq(0.0, (i > i) * 0.001)", 2.0),  # true for every i: counts the terms
])
def test_a_comparison_free_of_the_summed_index_guards_the_sum(body: str, want: float) -> None:
    """2031 #3854 (finite inputs): a data comparison whose value does not depend on the summed
    index (the bracket ``[i > i]`` is statically false) was dropped from the sum, which then
    counted its terms: ``Σ_i ne(0, [i > i])`` gave N, the interpreter 0."""
    source = f"def f(A: [N, N]):\n    return Sum[i: N]({body})\n"
    A = np.array([[1.03, 2.0], [3.0, 4.0]])
    assert float(evaluate(ea.parse(source), A=A)) == want
    assert [float(v) for v in _compiled(source, A)] == [want, want]
    _agree(source, {"A": ("N", "N")}, {"N": 2}, {"A": A}, kind="finite")
