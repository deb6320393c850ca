"""Programs whose generated loop nests are the same share one loaded module; the NumPy code of
the statements they leave to NumPy is bound on it, so programs whose NumPy parts differ must
not share it (fuzz 3010 #585: ``return 1.0, x`` after ``return 0.0, x``, both named ``f``,
returned 0.0)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea

pytest.importorskip("numba")

SOURCE = "def f(x: [N]):\n    y[i: N] = 2 * x[i]\n    return {c}, y\n"


def test_programs_with_other_numpy_parts_keep_their_own() -> None:
    ones = ea.compile(ea.parse(SOURCE.format(c="1.0")), backend="numba", optimize=False)
    zeros = ea.compile(ea.parse(SOURCE.format(c="0.0")), backend="numba", optimize=False)
    x = np.array([1.0, -2.0, 3.0])
    for _ in range(2):  # each compiled, then each called again after the other
        a, b = ones(x), zeros(x)
        assert a[0] == 1.0 and b[0] == 0.0
        np.testing.assert_array_equal(a[1], 2 * x)
        np.testing.assert_array_equal(b[1], 2 * x)
    assert "numpy" in ones.compiled.schedule.placement.values()  # (a NumPy part: the constant)
    assert ones.compiled.source != zeros.compiled.source
