"""Division by a negative zero keeps NumPy's sign: ``x / -0.0`` is -inf for ``x > 0``.

The sign was lost in the NumPy front end, not in the rules, the printer or the backends: NumPy's
``-0.0`` became Tensor SSA's literal 0, a strong zero whose value is +0.0 also negated
(docs/semantics.md), so ``x / -0.0`` was ``x / 0 = +inf``; ``0.0 - y`` was folded to ``-y``
(-0.0 at ``y = +0.0``, where NumPy's is +0.0).
The front end now writes ``x / -0.0`` as ``-(x / 0)``, and ``0.0 - y`` with the 0 stored, an
ordinary 0.0 (``zero - y``). Each is checked against NumPy (values, nan patterns, signs of zero)
through the interpreter, ``optimize=False`` and the optimized code, which reruns the unoptimized
program wherever a divisor may be 0 (docs/semantics.md, "Optimized code is a fast path").
``0.0 + y`` stays folded to ``y`` (-0.0 at ``y = -0.0``, NumPy's +0.0): a documented gap, tested
as such.

In the index language the literal ``-0.0`` is the strong zero, +0.0: ``x[i] / -0.0`` is +inf at
``x > 0`` by the documented semantics, tested last.
"""

from __future__ import annotations

import numpy as np
import pytest
from ieee_compare import same_ieee as _same

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

X = np.array([1.0, -2.0, np.inf, -np.inf, 0.0, -0.0, np.nan, 3.0, 1.0, -2.0])
Y = np.array([0.0, -0.0, 0.0, -0.0, -0.0, 0.0, 1.0, -3.0, -0.0, 0.0])


def over_negative_zero(x, y):
    return x / -0.0


def over_negative_zero_variable(x, y):
    z = -0.0
    return x / z


def np_divide_negative_zero(x, y):
    return np.divide(x, -0.0)


def over_negated_zeros(x, y):
    return x / -np.zeros(x.shape)


def over_computed_negative_zero(x, y):
    # -(y * 0.0) is -0.0 at y >= 0: a stored NumPy 0 times y, negated
    return x / -(y * 0.0)


def over_zero_minus(x, y):
    return x / (0.0 - y)


def over_zero_plus(x, y):
    return x / (0.0 + y)


def over_plus_zero(x, y):
    return x / (y + 0.0)


def over_minus_negative_zero(x, y):
    return x / (y - -0.0)


def over_negative_zero_plus(x, y):
    return x / (-0.0 + y)


def over_negated(x, y):
    return x / -y


def reciprocal_of_negative_zero_times(x, y):
    return 1.0 / (-0.0 * (y + 1.0))


def over_product_with_zero_minus(x, y):
    # the sum is a factor: no stage may drop its 0 (the strict code flattens products)
    return 1.0 / (x * (0.0 - y))


CASES = [over_negative_zero, over_negative_zero_variable, np_divide_negative_zero,
         over_negated_zeros, over_computed_negative_zero, over_zero_minus,
         over_negative_zero_plus, over_negated,
         reciprocal_of_negative_zero_times, over_product_with_zero_minus]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_division_by_a_signed_zero_is_numpy(fn) -> None:
    with np.errstate(all="ignore"):
        want = fn(X, Y)
    assert np.isneginf(want).any() and np.isposinf(want).any()  # both signs met
    prog = translate(fn, {"x": X.shape, "y": Y.shape})
    _same(evaluate(prog, x=X, y=Y), want)
    for optimize in (False, True):
        _same(ea.compile(fn, optimize=optimize)(X, Y), want)


def test_exact_zero_identities_still_fold() -> None:
    """``-0.0 + y`` is ``y`` and ``y - 0.0`` is ``y`` in IEEE (also at ±0): nothing is added;
    ``0.0 - y`` subtracts from a stored 0 (an ordinary +0.0, which no stage drops)."""
    def minus_zero(y):
        return y - 0.0

    def negative_zero_plus(y):
        return -0.0 + y

    def zero_minus(y):
        return 0.0 - y

    for fn in (minus_zero, negative_zero_plus):
        prog = translate(fn, {"y": (3,)})
        assert str(prog).splitlines()[1].strip() == "out[i: 3] = y[i]", prog
    text = str(translate(zero_minus, {"y": (3,)}))
    assert "zero = 0" in text and "zero - y[i]" in text, text


@pytest.mark.parametrize("fn", [over_zero_plus, over_plus_zero, over_minus_negative_zero],
                         ids=lambda f: f.__name__)
def test_a_zero_added_is_folded_a_documented_gap(fn) -> None:
    """``0.0 + y`` (``y + 0.0``, ``y - -0.0``) is ``y``: -0.0 at ``y = -0.0``, where NumPy's is
    +0.0, so ``x / (0.0 + y)`` is -inf there for ``x > 0`` (NumPy: +inf); everywhere else it is
    NumPy's. The same in every stage (docs/semantics.md)."""
    with np.errstate(all="ignore"):
        want = fn(X, Y)
    want_here = np.where(Y == 0, X / np.where(Y == 0, Y, 1.0), want)  # x / y with y's own sign
    assert not np.array_equal(np.signbit(want_here), np.signbit(want))  # the gap is met
    prog = translate(fn, {"x": X.shape, "y": Y.shape})
    _same(evaluate(prog, x=X, y=Y), want_here)
    for optimize in (False, True):
        _same(ea.compile(fn, optimize=optimize)(X, Y), want_here)


def test_the_index_language_literal_negative_zero_is_the_strong_zero() -> None:
    """The documented semantics of Tensor SSA: the literal 0 is a strong zero, +0.0 even when
    negated, so ``x[i] / -0.0`` and ``x[i] / -(z[i] * 0.0)`` are +inf at ``x > 0`` (a NumPy
    function's -0.0 is translated to keep NumPy's sign, above)."""
    x = np.array([1.0, -1.0, 0.0])
    z = np.array([2.0, 2.0, 2.0])
    want = np.array([np.inf, -np.inf, np.nan])
    for src, args in (
        ("def f(x: [N]):\n    y[i: N] = x[i] / -0.0\n    return y\n", (x,)),
        ("def f(x: [N], z: [N]):\n    y[i: N] = x[i] / -(z[i] * 0.0)\n    return y\n", (x, z)),
    ):
        prog = ea.parse(src)
        _same(ea.evaluate(prog, *args), want)
        for optimize in (False, True):
            _same(ea.compile(prog, optimize=optimize)(*args), want)
