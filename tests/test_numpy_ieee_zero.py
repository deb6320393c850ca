"""A NumPy 0 is an ordinary IEEE 0.0 (fuzz 2033 #2055, 2034 #4111, finite inputs).

NumPy's ``0.0 * x`` is nan where ``x`` is inf or nan and -0.0 where ``x < 0``; the literal 0 of
Tensor SSA is a strong zero (docs/semantics.md), +0.0 whatever it multiplies. The front end
translated ``0.0 * log(A)`` to 0 (NumPy: nan at a negative entry) and ``1 / (0.0 * z)`` at
``z < 0`` to +inf (NumPy: -inf). A NumPy 0 multiplied by, or divided by, a computed value is
now stored, and a stored 0 is an ordinary 0.0; so is a select (``np.where(c, a, 0.0)``)
that meets a computed factor.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

X = np.array([np.inf, -2.0, np.nan, 3.0, 0.0, -0.0, -np.inf])


def zero_times(x):
    return 0.0 * x


def times_zero_variable(x):
    t = 0.0
    return x * t


def zeros_array_times(x):
    return np.zeros(x.shape) * x


def zero_over(x):
    return 0.0 / x


def reciprocal_of_zero_times(x):
    t = 0.0
    return 1.0 / (t * x)


def zero_times_log(x):
    return 0.0 * np.log(x)


def negative_zero_times(x):
    return -0.0 * x


def negative_zero_over(x):
    return -0.0 / x


def zeros_column_times(x):
    return np.zeros((2, 1)) * x


def select_times_log(x):
    # 2033 #2055 (the whole program): np.where's 0.0 is an ordinary zero in NumPy
    return np.where(x > 1.0, -1.5, 0.0) * np.log(x)


def log_times_select(x):
    return np.log(x) * np.where(x < 1.0, x, 0.0)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, nan patterns and signs of zero."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("fn", [zero_times, times_zero_variable, zeros_array_times, zero_over,
                                reciprocal_of_zero_times, zero_times_log, negative_zero_times,
                                negative_zero_over, zeros_column_times, select_times_log,
                                log_times_select])
def test_a_numpy_zero_times_a_computed_value_is_ieee(fn) -> None:
    with np.errstate(all="ignore"):
        want = fn(X)
    assert np.isnan(want).any()  # the inputs meet the IEEE cases (else the test proves nothing)
    prog = translate(fn, {"x": X.shape})
    _same(evaluate(prog, x=X), want)
    for optimize in (False, True):
        _same(ea.compile(fn, optimize=optimize)(X), want)


def test_a_zero_times_a_constant_still_folds() -> None:
    """``0.0 * 2.0`` meets no inf, nan or sign: folded, nothing stored."""
    def f(x):
        return x + 0.0 * 2.0

    prog = translate(f, {"x": (3,)})
    assert len(prog.statements) == 1
    np.testing.assert_array_equal(evaluate(prog, x=X[:3]), X[:3])
