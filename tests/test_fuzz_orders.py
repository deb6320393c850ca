"""The rounding model's orders of a product and rounded sums (eqsat_ad/fuzz/rounding.py,
docs/semantics.md "Consequences for rewrite rules"): the four programs of the two 10,000-program
runs that still disagreed after the recheck (experiments/results/fuzz.md: 2030 #4109, 2031
#1513, #1377, 2029 #4035), each minimized, are ``ill-conditioned``: the order of an overflow or
underflow in a product of finite values, a tie made by absorption. And the model still flags a
value no order or rounding gives."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.numpy import CompiledProgram
from eqsat_ad.fuzz import Case, check_case
from eqsat_ad.fuzz.report import DEFECTS
from eqsat_ad.ir.draws import every_product_reordered, every_sum_rounded


def _outcomes(case: Case, kind: str, inputs: dict[str, Any]) -> set[str]:
    return {f.outcome for f in check_case(case, {kind: inputs}, fd=False)[kind]}


def _index(src: str, n: int) -> Case:
    return Case("index", src, {"x": ("N",)}, {"N": n})


def _numpy(body: str, shapes: dict[str, tuple[str, ...]], sizes: dict[str, int]) -> Case:
    return Case("numpy", f"import numpy as np\n\n\ndef f({', '.join(shapes)}):\n"
                f"    return {body}\n", shapes, sizes)


def _patched(monkeypatch: pytest.MonkeyPatch, wrong: Any) -> None:
    """Every compiled call (values and gradients) returns ``wrong(result)``."""
    real = CompiledProgram.__call__
    monkeypatch.setattr(CompiledProgram, "__call__",
                        lambda self, *a, **k: wrong(real(self, *a, **k)))


# 2030 #4109: the product's constants folded (2 * 0.5 = 1) keep 2 x² from overflowing
_OVERFLOW_ORDER = _index("def f(x: [N]):\n    return x[0] * (2 * x[0] * (0.5 * x[1]))\n", 2)
_OVERFLOW_AT = {"x": np.array([1e154, 1e-154])}


def test_the_order_of_a_product_decides_an_overflow() -> None:
    """The interpreter multiplies left to right: ``1e154 · 2 · 1e154`` overflows, inf; the
    compiled code (the constants first, ``1 · x · x · 0.5 y``) gives 1e154, the exact value:
    ``ill-conditioned``, and so is the gradient (inf against 1e308)."""
    prog = ea.parse(_OVERFLOW_ORDER.source)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert ea.evaluate(prog, **_OVERFLOW_AT) == np.inf
        assert ea.compile(prog, optimize=False)(**_OVERFLOW_AT) == 1e154
        with every_product_reordered("constants-first"):
            assert ea.evaluate(prog, **_OVERFLOW_AT) == 1e154
        with every_product_reordered("reversed"):
            assert ea.evaluate(prog, **_OVERFLOW_AT) == 1e154
    assert _outcomes(_OVERFLOW_ORDER, "extreme", _OVERFLOW_AT) == {"ill-conditioned"}


def test_the_gradient_of_a_dot_with_sqrt_of_a_square_at_1e154() -> None:
    """2030 #4109 minimized: the gradient of ``C[:, 0] · sqrt(C[:, 0]²)`` at ``C[1, 0] = 1e154``
    is inf interpreted (``t̄ · 2 C · 0.5 (C²)^-0.5`` left to right) and 2e154 compiled."""
    case = _numpy("np.dot(C[:, 0], np.square(C[:, 0]) ** 0.5)", {"C": ("N", "N")}, {"N": 2})
    assert _outcomes(case, "extreme", {"C": np.array([[1.0, 0.5], [1e154, 2.0]])}) == {
        "ill-conditioned"}


@pytest.mark.parametrize("wrong", [1e153, -1e154, np.nan, -np.inf])
def test_a_value_no_order_gives_is_still_a_defect(monkeypatch: pytest.MonkeyPatch,
                                                  wrong: float) -> None:
    """Every order gives inf or 1e154 there (a finite value may lie from 1e154 up toward the
    inf): 1e153, -1e154, nan or -inf is a defect."""
    _patched(monkeypatch, lambda out: out if isinstance(out, tuple) else wrong)
    assert _outcomes(_OVERFLOW_ORDER, "extreme", _OVERFLOW_AT) & set(DEFECTS)


# 2031 #1513: a Σ of a product of finite factors runs as einsum in the interpreter
_EINSUM_ORDER = _index("def f(x: [N]):\n    return Sum[i: 2](x[0] * (x[1] * step(x[2])))\n", 3)
_EINSUM_AT = {"x": np.array([2e300, -1e300, -1.0])}


def test_an_einsum_path_and_the_written_order_decide_an_overflow_times_zero() -> None:
    """The interpreter's einsum multiplies ``t · step`` (-0.0) first: 0; the strict code as
    written, ``s t`` overflows, ``-inf · 0``: nan. Both orders of one product of finite
    values: ``ill-conditioned``."""
    prog = ea.parse(_EINSUM_ORDER.source)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert ea.evaluate(prog, **_EINSUM_AT) == 0.0
        assert np.isnan(ea.compile(prog)(**_EINSUM_AT))
        with every_product_reordered("written"):
            assert np.isnan(ea.evaluate(prog, **_EINSUM_AT))
    assert _outcomes(_EINSUM_ORDER, "extreme", _EINSUM_AT) == {"ill-conditioned"}


# 3009 #867 (numpy-subset, extreme inputs), minimized: a scalar statement times a read, in a Σ
_SCALAR_LAST = Case("index", "def f(s: [N, N], a: [N]):\n    z = 0\n"
                    "    t[i: N] = Sum[j: N](s[j, i] * (z * a[i]))\n"
                    "    u = t[0] / t[N - 1]\n    return t[0]\n",
                    {"s": ("N", "N"), "a": ("N",)}, {"N": 2})
_SCALAR_LAST_AT = {"s": np.array([[1e300, 1.0], [1e300, 1.0]]), "a": np.array([1e300, 1.0])}


def test_the_strict_code_multiplies_a_scalar_statement_into_the_sum_last() -> None:
    """The interpreter multiplies ``s · (z · a)``: 0; the compiled code (its strict code: the
    unused ``0 / 0`` of ``u`` sends the call there) contracts the indexed factors, ``Σ_j s ·
    a`` (inf), then multiplies the scalar ``z`` in: nan. That order
    (``scalars-last``) is among the rounding model's, so the value is ``ill-conditioned``;
    a value no order gives stays a defect."""
    prog = ea.parse(_SCALAR_LAST.source)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert ea.evaluate(prog, **_SCALAR_LAST_AT) == 0.0
        assert np.isnan(ea.compile(prog, optimize=False)(**_SCALAR_LAST_AT))
        with every_product_reordered("scalars-last"):
            assert np.isnan(ea.evaluate(prog, **_SCALAR_LAST_AT))
        with every_product_reordered("summed-first"):
            assert ea.evaluate(prog, **_SCALAR_LAST_AT) == 0.0
    assert _outcomes(_SCALAR_LAST, "extreme", _SCALAR_LAST_AT) <= {"ill-conditioned", "ok"}


# 3018 #832 (index, extreme inputs), minimized on the Numba backend (its NumPy part)
_DISTRIBUTED = Case("index", "def f(x: [1]):\n"
                    "    t0 = x[0] ** (-2) * Sum[i: 2, j: 1](x[i] * x[j])\n    return t0\n",
                    {"x": (1,)}, {})
_DISTRIBUTED_AT = {"x": np.array([-1e300])}


def test_the_fast_code_multiplies_a_factor_into_each_term_of_a_sum_first() -> None:
    """The interpreter multiplies ``x ** -2`` (1e-600: 0) by the Σ (``x · x`` overflows: inf):
    nan. The fast code flattens ``w · Σ_J x x`` into ``Σ_J w x x`` and multiplies left to
    right, ``0 · x · x``: 0, with no overflow to send it to the strict code. That order
    (``distributed``) is among the rounding model's, so the value is ``ill-conditioned``; a
    value no order gives (inf, 5) stays a defect."""
    prog = ea.parse(_DISTRIBUTED.source)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert np.isnan(ea.evaluate(prog, **_DISTRIBUTED_AT))
        assert ea.compile(prog)(**_DISTRIBUTED_AT) == 0.0
        with every_product_reordered("distributed"):
            assert ea.evaluate(prog, **_DISTRIBUTED_AT) == 0.0
        with every_product_reordered("constants-first"):  # not a literal: the Σ stays a factor
            assert np.isnan(ea.evaluate(prog, **_DISTRIBUTED_AT))
    assert _outcomes(_DISTRIBUTED, "extreme", _DISTRIBUTED_AT) <= {"ill-conditioned", "ok"}


@pytest.mark.parametrize("wrong", [5.0, np.inf])
def test_a_distributed_order_does_not_allow_any_value(monkeypatch: pytest.MonkeyPatch,
                                                      wrong: float) -> None:
    """The orders give nan or 0: 5.0 or inf stays a defect."""
    _patched(monkeypatch, lambda out: out if isinstance(out, tuple) else wrong)
    assert _outcomes(_DISTRIBUTED, "extreme", _DISTRIBUTED_AT) & set(DEFECTS)


def test_the_distributed_order_keeps_a_factor_that_uses_a_summed_name_outside() -> None:
    """``x[i] · Σ_i x[i]``: the factor's ``i`` is not the Σ's, so it is not moved inside (it
    would be captured); the value is the written one."""
    prog = ea.parse("def f(x: [N]):\n    t[i: N] = x[i] * Sum[i: N](x[i])\n    return t\n")
    x = np.array([1.0, 2.0, 3.0])
    with every_product_reordered("distributed"):
        np.testing.assert_array_equal(ea.evaluate(prog, x=x), x * 6.0)


@pytest.mark.parametrize("wrong", [5.0, np.inf])
def test_an_einsum_order_does_not_allow_any_value(monkeypatch: pytest.MonkeyPatch,
                                                  wrong: float) -> None:
    """The orders give 0 or nan: 5.0 or inf stays a defect."""
    _patched(monkeypatch, lambda out: out if isinstance(out, tuple) else wrong)
    assert _outcomes(_EINSUM_ORDER, "extreme", _EINSUM_AT) & set(DEFECTS)


# 2031 #1377: a tie that the absorption of 1e-300 and 5e-324 into 100 makes
_ABSORBED_TIE = _numpy("np.max(A[:-1] + 100.0)", {"A": ("M", "N")}, {"M": 2, "N": 2})
_TIE_AT = {"A": np.array([[1e-300, 5e-324], [1.0, 1.0]])}


def test_a_tie_made_by_absorption_may_be_broken_by_exact_algebra() -> None:
    """``max(a + 100, b + 100)`` is a tie in the interpreter (gradient 1/2, 1/2); the optimizer
    cancels the 100s in the tie test ``step((a + 100) - (b + 100))`` and compares ``a`` with
    ``b`` (1, 0: the exact gradient). With each sum's result moved by 1e-13 the interpreter's
    tie breaks either way (the draw and its mirror image): ``ill-conditioned``."""
    prog = ea.parse("def f(x: [N]):\n    return step(x[0] + 100 - (x[1] + 100))\n")
    at = {"x": np.array([1e-300, 5e-324])}
    assert ea.evaluate(prog, **at) == 0.5
    seen = set()
    for sign in (1.0, -1.0):
        with every_sum_rounded(np.random.default_rng(1), sign * 1e-13):
            seen.add(float(ea.evaluate(prog, **at)))
    assert seen == {0.0, 1.0}
    assert _outcomes(_ABSORBED_TIE, "extreme", _TIE_AT) == {"ill-conditioned"}


def test_a_broken_tie_allows_only_the_two_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken either way the gradient is [1, 0] or [0, 1]; a gradient [-1, 0] (no side of the
    tie) stays a defect, and so does a gradient moved at an ordinary point, where no tie is."""
    def negated(out: Any) -> Any:
        return tuple(-np.asarray(g) for g in out) if isinstance(out, tuple) else out

    _patched(monkeypatch, negated)
    assert "gradient" in _outcomes(_ABSORBED_TIE, "extreme", _TIE_AT)
    ordinary = {"A": np.array([[1.5, 0.5], [1.0, 1.0]])}
    assert "gradient" in _outcomes(_ABSORBED_TIE, "extreme", ordinary)


def test_a_sum_rounded_keeps_zeros_and_strong_zeros() -> None:
    """The sums' moves are relative: an exact 0.0, inf and nan stay, and so does a strong
    zero (``[p] (x - x) * inf`` is 0 where p is false)."""
    prog = ea.parse("def f(x: [N]):\n    y[i: N] = (x[i] - x[i]) + (i > 5) * (x[0] + x[1]) "
                    "* (1 / 0)\n    return y\n")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        with every_sum_rounded(np.random.default_rng(3), 1e-13):
            got = ea.evaluate(prog, x=np.array([1.0, np.inf, np.nan]))
    assert got[0] == 0.0 and np.isnan(got[1]) and np.isnan(got[2])


# 2029 #4035: the mean's 1/8 multiplied first underflows a subnormal
_UNDERFLOW_ORDER = _numpy("np.mean(C[::2] * np.log(C[::2]))", {"C": ("M", "N")},
                          {"M": 3, "N": 4})
_UNDERFLOW_AT = {"C": np.array([[5e-324, 1.0, 0.95, 0.96], [0.79, 1.16, 0.95, 1.0],
                                [0.48, 1.61, 1.94, 0.60]])}


def test_a_coefficient_first_underflows_a_subnormal() -> None:
    """The gradient of ``np.mean(C * log(C))`` at ``C[0, 0] = 5e-324``: the interpreter
    ``(C · (1 / C)) / 8`` is inf, the strict code ``0.125 · C · (1 / C)`` nan (``0.125 C``
    underflows to 0). The constants-first order (``/ 8`` as ``· 0.125``) gives nan."""
    prog = ea.parse("def f(x: [N]):\n    return (x[0] * (1 / x[0])) / 8\n")
    at = {"x": np.array([5e-324])}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert ea.evaluate(prog, **at) == np.inf
        with every_product_reordered("constants-first"):
            assert np.isnan(ea.evaluate(prog, **at))
    assert _outcomes(_UNDERFLOW_ORDER, "extreme", _UNDERFLOW_AT) == {"ill-conditioned"}


def test_an_underflow_order_does_not_allow_minus_inf(monkeypatch: pytest.MonkeyPatch) -> None:
    """inf or nan there: a compiled -inf is a defect."""
    def minus_inf(out: Any) -> Any:
        if not isinstance(out, tuple):
            return out
        g = np.array(out[0], dtype=float)
        g[0, 0] = -np.inf
        return (g, *out[1:])

    _patched(monkeypatch, minus_inf)
    assert "gradient" in _outcomes(_UNDERFLOW_ORDER, "extreme", _UNDERFLOW_AT)


def test_an_unknown_product_order_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown product order"), \
            every_product_reordered("sorted"):
        pass


def test_constants_first_takes_a_quotient_by_a_literal_as_its_reciprocal_only_if_finite() -> None:
    """``3 x / 4`` is ``0.75 · x`` with the constants first; ``3 x / 5e-324`` stays a quotient
    (its reciprocal overflows: a product with inf is no rounding of it)."""
    x = {"x": np.array([1e-320])}
    quarter = ea.parse("def f(x: [N]):\n    return 3 * x[0] / 4\n")
    subnormal = ea.parse("def f(x: [N]):\n    return 3 * x[0] / 5e-324\n")
    plain = ea.evaluate(subnormal, **x)
    assert np.isfinite(plain)
    with every_product_reordered("constants-first"):
        assert ea.evaluate(quarter, **x) == 0.75 * 1e-320
        assert ea.evaluate(subnormal, **x) == plain


def test_a_pole_that_rounding_decides_allows_any_finite_value_but_not_any_kind() -> None:
    """2028 #4783 (``... / (A - A).sum()`` at ±1e300): the interpreter divides by the exact
    0.0 (inf); a move of each read makes the sum ±1e287, of either sign, so the quotient is a
    pole that rounding decides: any finite value (-6.6 compiled: ``Σ A - Σ A`` absorbed into
    -2.0). Its -inf or nan no draw gives stays a defect; and where the draws' finite values
    have one sign only (no pole), a finite value on the other side of them is a defect."""
    from eqsat_ad.fuzz.rounding import within_rounding

    prog = ea.parse("def f(x: [N]):\n    return x[2] / Sum[i: 2](x[i] - x[i])\n")
    at = {"x": np.array([1e300, -1e300, 13.2])}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ref = ea.evaluate(prog, **at)
        assert ref == np.inf
        assert within_rounding(prog, at, ref, -6.6)
        assert not within_rounding(prog, at, ref, -np.inf)
        assert not within_rounding(prog, at, ref, np.nan)
        one_sided = ea.parse(_OVERFLOW_ORDER.source)
        assert within_rounding(one_sided, _OVERFLOW_AT, np.inf, 1e154)
        assert not within_rounding(one_sided, _OVERFLOW_AT, np.inf, -1e154)
