"""The stencil, N-body and scan programs of issue 15, shared by the fused-backend experiment
(``numba_backend.py``, at benchmark sizes) and its tests (``tests/test_numba_backend.py``, at
the small sizes given here).

Each entry: the index-language source, the parameter the gradient is taken with respect to, and
small sizes for the differential tests. :data:`BENCHMARKED` are the ones the experiment times.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BENCHMARKED", "PROGRAMS", "FusedProgram"]


class FusedProgram(NamedTuple):
    source: str
    wrt: str
    test_sizes: dict[str, int]


PROGRAMS: dict[str, FusedProgram] = {
    "blur": FusedProgram("""
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
""", "x", {"H": 9, "W": 7}),
    "tv": FusedProgram("""
def tv(u: [H, W]):
    dx[i: H, j: W] = u[i + 1, j] - u[i, j]
    dy[i: H, j: W] = u[i, j + 1] - u[i, j]
    return Sum[i: H, j: W]((i < H - 1 and j < W - 1) * sqrt(dx[i, j] ** 2 + dy[i, j] ** 2 + 0.0001))
""", "u", {"H": 8, "W": 6}),
    "nbody": FusedProgram("""
def nbody(x: [N, 3], m: [N]):
    d2[i: N, j: N] = Sum[k: 3]((x[i, k] - x[j, k]) ** 2) + 0.01
    return Sum[i: N, j: N](m[i] * m[j] / sqrt(d2[i, j]))
""", "x", {"N": 11}),
    "conv1d": FusedProgram("""
def conv(x: [N], w: [K], y: [N]):
    c[i: N] = Sum[k: K](w[k] * x[i + k])
    return Sum[i: N]((c[i] - y[i]) ** 2)
""", "x", {"N": 30, "K": 4}),
    "prefix": FusedProgram("""
def prefix(x: [N], w: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
""", "x", {"N": 17}),
    "moving": FusedProgram("""
def moving(x: [N], w: [N], k: [K]):
    c[i: N] = Sum[j: N]((i - K < j and j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
""", "x", {"N": 19, "K": 4}),
}

BENCHMARKED = ("blur", "tv", "nbody", "conv1d", "prefix")
