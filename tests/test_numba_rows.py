"""Row sums in NumPy's pairwise order (backend/fused/rows.py).

A per-row sum over a whole row is written as a buffer of its terms added by ``_pairwise``, the
order of NumPy's ``add.reduce`` over a contiguous row: its value is the NumPy backend's
``.sum(axis=-1)`` of the same terms bit for bit, at every row length (below 8 terms, one
block of at most 128, halved blocks beyond), in float64 and float32; strong zeros and the
non-finite values keep the interpreter's patterns."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.compiled import Compiled
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

ROW_SUM = "def f(x: [N, M]):\n    t[i: N] = Sum[k: M](abs(x[i, k]))\n    return t\n"
MASKED = ("def f(x: [M], R: rel[N, M]):\n"
          "    t[i: N] = Sum[k: M](R[i, k] * x[k])\n"
          "    return t\n")


pytestmark = pytest.mark.usefixtures("numba_cache")


def _loop(src: str) -> Compiled:
    f = ea.compile(ea.parse(src), backend="numba")
    assert f.compiled.schedule.placement == {"t": "loop"}, f.compiled.schedule.why
    assert "_pairwise(_row_M, 0, M, _pw_stack, _pw_vals)" in f.source
    return f


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [1, 7, 8, 9, 127, 128, 129, 136, 144, 256, 300, 528, 1000, 2048,
                               2051])
def test_a_row_sum_is_numpys_sum_bit_for_bit(dtype: type, m: int) -> None:
    f = _loop(ROW_SUM)
    x = np.random.default_rng(m).standard_normal((3, m)).astype(dtype)
    got = f(x=x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.abs(x).sum(axis=1))
    np.testing.assert_allclose(got, evaluate(f.program, x=x.astype(np.float64)),
                               rtol=1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_sums_of_every_length_keep_numpys_order_where_order_matters(dtype: type) -> None:
    # terms of 16 decades: another grouping rounds differently; every length up to 600 (parts
    # of 129 to 256 terms that halve into two equal blocks are added two blocks side by side)
    f = _loop(ROW_SUM)
    rng = np.random.default_rng(11)
    for m in range(1, 601):
        x = (rng.standard_normal((2, m)) * 10.0 ** rng.integers(-8, 8, (2, m))).astype(dtype)
        np.testing.assert_array_equal(f(x=x), np.abs(x).sum(axis=1), err_msg=f"M = {m}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_masked_row_sum_keeps_strong_zeros_and_ieee_elsewhere(dtype: type) -> None:
    f = _loop(MASKED)
    n, m = 6, 300
    rng = np.random.default_rng(3)
    x = rng.standard_normal(m).astype(dtype)
    r = rng.random((n, m)) < 0.4
    x[::9], x[4::10], x[7::31] = np.inf, -np.inf, np.nan
    r[0, :] = False  # no pair: a strong zero, 0 (not nan) whatever x holds
    r[1, :] = False
    r[1, 9] = True  # one inf
    r[2, :] = False
    r[2, [9, 4]] = True  # inf - inf: nan
    r[3, :] = r[3, :] & np.isfinite(x)  # only finite values
    with np.errstate(all="ignore"):
        got = f(x=x, R=r)
        want = evaluate(f.program, x=x.astype(np.float64), R=r)
        numpy = np.where(r, x[None, :], dtype(0)).sum(axis=1)
    assert got[0] == 0 and not np.signbit(got[0])
    assert got[1] == np.inf and np.isnan(got[2]) and np.isfinite(got[3])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-5)
    np.testing.assert_array_equal(got, numpy)


def test_negative_zero_terms_sum_to_positive_zero() -> None:
    # -0.0 terms: +0.0, as the chain of adds from +0.0 gave, NumPy's sum and the interpreter
    f = _loop("def f(x: [N, M], y: [N, M]):\n"
              "    t[i: N] = Sum[k: M](min(x[i, k], y[i, k]))\n    return t\n")
    for m in (5, 40, 300):
        z = -np.zeros((2, m))
        got = f(x=z, y=z)
        assert not np.signbit(got).any()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.minimum(z, z).sum(axis=1)))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(evaluate(f.program, x=z, y=z)))
