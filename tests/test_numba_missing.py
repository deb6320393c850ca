"""backend="numba" without Numba: a clear error naming the extra (the import failure simulated,
so this runs whether or not Numba is installed); an unknown backend is an error."""

from __future__ import annotations

import pytest

import eqsat_ad as ea

CONV = """
def conv(x: [N], w: [K], y: [N]):
    c[i: N] = Sum[k: K](w[k] * x[i + k])
    return Sum[i: N]((c[i] - y[i]) ** 2)
"""


def test_missing_numba_names_the_extra(without_numba: None) -> None:
    with pytest.raises(ImportError, match=r"eqsat-ad\[numba\]"):
        ea.grad(ea.parse(CONV), "w", backend="numba")


def test_unknown_backend_is_an_error() -> None:
    with pytest.raises(ea.ProgramError, match="unknown backend 'jax'"):
        ea.grad(ea.parse(CONV), "w", backend="jax")
