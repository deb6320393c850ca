"""Comparing results as IEEE values: equal numbers, nan patterns and signs (of zeros and
infinities), for the tests that hold compiled code to NumPy's own results."""

from __future__ import annotations

import numpy as np


def same_ieee(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, nan patterns and signs (of infinities and zeros)."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
