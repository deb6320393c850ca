"""A boolean mask of data used as a number is NumPy's 0.0/1.0 array: ``False * inf`` is nan.

The front end wrote ``(x > 5) * np.exp(y)`` as the data comparison ``gt(x[i], 5) * exp(y[i])``,
whose false comparison is a strong zero (docs/semantics.md): 0 where ``exp`` overflows, and 0
where ``y`` holds inf or nan, against NumPy's nan. A mask of data (a comparison, ``&``/``|``/``~``
of comparisons) that meets a factor or divisor which may be inf, nan, zero or
negative is now stored first, an ordinary array of 0.0 and 1.0, as a select
(``np.where(c, 1.0, 0.0)``) already was. Everything below is checked against NumPy itself:
values, nan patterns and signs of zero, through the interpreter, ``optimize=False`` and the
optimized code.

Integer comparisons of loop indices (``(i == j) * A[i, j]`` in a loop) stay Iverson brackets,
and bool arguments relations, strong zeros, by choice (docs/semantics.md, "The NumPy front
end"); the optimized costs of masked programs are unchanged: the optimizer inlines a stored mask
where every value is finite.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from ieee_compare import same_ieee as _same

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# x decides the masks; y meets them with every IEEE case: inf, nan, -inf, an exp overflow
# (800), 0 and -0 (0 / 0 and signs), negative values (-0.0 = False * -3)
X = np.array([np.inf, -2.0, np.nan, 3.0, 0.0, -0.0, -np.inf, 800.0, 6.0, -1.0, 7.0, -5.0])
Y = np.array([1.0, np.inf, 2.0, np.nan, -np.inf, 800.0, 3.0, 800.0, 1.0, 0.0, -0.0, -3.0])


def mask_times_exp(x, y):
    return (x > 5) * np.exp(y)


def mask_variable_times(x, y):
    mask = x > 0
    return mask * y


def data_times_mask(x, y):
    return y * (x > 0)


def astype_times(x, y):
    return (x > 0).astype(float) * y


def where_one_zero_times(x, y):
    return np.where(x > 0, 1.0, 0.0) * y


def combined_mask_times_log(x, y):
    return ((x > 0) & (y < 5.0)) * np.log(y)


def negated_mask_times(x, y):
    return (~(x > 0)) * y


def mask_over(x, y):
    return (x >= 0) / y


def mask_times_negative_constant_reciprocal(x, y):
    # False * -2.0 is -0.0 in NumPy: 1 / it is -inf
    return 1.0 / ((x > 0) * -2.0)


def np_multiply_mask(x, y):
    return np.multiply(x < 1, np.exp(y))


def sum_of_masked(x, y):
    return np.sum((x > 0) * y)


def masked_outer(x, y):
    return (x[:, None] > 0) * y[None, :]


def reciprocal_of_mask_times_zero_minus(x, y):
    # False * (0.0 - y) is +0.0 at y = ±0.0 (1 / it is +inf), True * (0.0 - y) too
    return 1.0 / ((x > 0.5) * (0.0 - y))


MASKED = [mask_times_exp, mask_variable_times, data_times_mask, astype_times,
          where_one_zero_times, combined_mask_times_log, negated_mask_times, mask_over,
          mask_times_negative_constant_reciprocal, np_multiply_mask, sum_of_masked, masked_outer,
          reciprocal_of_mask_times_zero_minus]


@pytest.mark.parametrize("fn", MASKED, ids=lambda f: f.__name__)
def test_a_mask_of_data_times_data_is_numpy(fn) -> None:
    with np.errstate(all="ignore"):
        want = fn(X, Y)
    assert np.isnan(want).any() or np.signbit(want[want == 0]).any() or np.isinf(want).any()
    prog = translate(fn, {"x": X.shape, "y": Y.shape})
    _same(evaluate(prog, x=X, y=Y), want)
    for optimize in (False, True):
        _same(ea.compile(fn, optimize=optimize)(X, Y), want)


def test_the_mask_is_stored_only_where_it_meets_data() -> None:
    """An ordinary 0.0 is needed only where it meets something: ``(x > 5) * np.exp(y)`` stores
    the mask, ``(x > 5) * 2.0`` and a mask of masks do not (no inf, nan or sign to meet)."""
    stored = translate(mask_times_exp, {"x": (4,), "y": (4,)})
    assert len(stored.statements) == 2 and "mask" in stored.statements[0].name

    def mask_times_constant(x):
        return (x > 5) * 2.0

    def mask_times_mask(x, y):
        return (x > 5) * (y > 0)

    assert len(translate(mask_times_constant, {"x": (4,)}).statements) == 1
    assert len(translate(mask_times_mask, {"x": (4,), "y": (4,)}).statements) == 1


def bool_argument_times(m, y):
    return m * y


def masked_distances(x, m):
    return np.sum(m * (x[:, None] - x[None, :]) ** 2)


def test_a_bool_argument_stays_a_relation() -> None:
    """The documented choice: a bool array argument is a relation (it may be passed as a SciPy
    sparse matrix, docs/sparse.md), whose reads are strong zeros: ``m * y`` is 0 where ``m`` is
    False even at ``y = inf`` (NumPy: nan), and a masked sum's gradient stays a gather and a
    segment sum over the members, O(nnz)."""
    m = np.array([True, False, True, False, False])
    y = np.array([np.inf, np.inf, 1.0, np.nan, -2.0])
    want = np.array([np.inf, 0.0, 1.0, 0.0, 0.0])
    with np.errstate(all="ignore"):
        assert np.isnan((m * y)[1])  # what NumPy gives, deliberately not followed
    for optimize in (False, True):
        _same(ea.compile(bool_argument_times, optimize=optimize)(m, y), want)
    rng = np.random.default_rng(1)
    n = 30
    dense = rng.random((n, n)) < 0.1
    x = rng.normal(size=n)
    g = ea.grad(masked_distances)
    gx = g(x, sp.csr_array(dense))
    d = dense * (x[:, None] - x[None, :])
    np.testing.assert_allclose(gx, 2 * (d.sum(axis=1) - d.sum(axis=0)), rtol=1e-12, atol=1e-12)
    assert "segment_sum" in g.source and "dense" not in g.source


def masked_loss(x, y):
    return np.sum((x > 0) * x * y)


def test_masked_gradients_are_numpy_and_keep_their_optimized_cost() -> None:
    """The gradient of a masked loss: finite inputs give the masked product (as JAX), and the
    optimized program is the one-pass select it was before masks were stored (2 N), plus the
    guard's pass over x and y (N / 2 each)."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=8), rng.normal(size=8)
    g = ea.grad(masked_loss)
    gx = g(x, y)
    np.testing.assert_allclose(gx, (x > 0) * y, rtol=1e-12)
    row = [ln for ln in str(g.report).splitlines() if ln.strip().startswith("cost ")][0]
    assert row.split()[-1] == "3*N", row
    # at an inf the masked-off entries meet it as NumPy's 0.0: nan, as jax.grad gives
    y_inf = y.copy()
    y_inf[x <= 0] = np.inf
    with np.errstate(all="ignore"):
        got = g(x, y_inf)
    assert np.isnan(got[x <= 0]).all() and np.isfinite(got[x > 0]).all()


def eye_times(A):
    return np.sum(np.eye(A.shape[0]) * A)


def test_an_eye_times_a_matrix_keeps_its_linear_gradient() -> None:
    """``np.eye(n) * A`` is NumPy's (stored, nan off the diagonal at an inf); its gradient is
    still the diagonal written in O(N)."""
    g = ea.grad(eye_times)
    np.testing.assert_array_equal(g(np.ones((5, 5))), np.eye(5))
    assert "A_bar[_j_1, _j_1] = 1" in g.source  # the diagonal written (its only term)
    A = np.ones((3, 3))
    A[0, 1] = np.inf
    with np.errstate(all="ignore"):
        want = eye_times(A)
    assert np.isnan(want)
    for optimize in (False, True):
        assert np.isnan(ea.compile(eye_times, optimize=optimize)(A))


def loop_trace(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = s + (i == j) * A[i, j]
    return s


def test_a_comparison_of_loop_indices_stays_an_iverson_bracket() -> None:
    """The documented choice: ``(i == j) * A[i, j]`` of loop indices is the bracket
    ``[i == j]``, a strong zero, so an inf off the diagonal is not looked at (NumPy: nan), and
    the loop's gradient is the O(N) diagonal."""
    A = np.ones((3, 3))
    A[0, 1] = np.inf
    prog = translate(loop_trace, {"A": A.shape})
    assert evaluate(prog, A=A) == 3.0
    for optimize in (False, True):
        assert ea.compile(loop_trace, optimize=optimize)(A) == 3.0
    with np.errstate(all="ignore"):
        assert np.isnan(loop_trace(A))  # what NumPy gives, deliberately not followed
    g = ea.grad(loop_trace)
    np.testing.assert_array_equal(g(np.ones((4, 4))), np.eye(4))
    assert "A_bar[_j_1, _j_1] = 1" in g.source  # the diagonal written (its only term)
