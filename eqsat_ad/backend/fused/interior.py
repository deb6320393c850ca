"""Loop partitioning: the interior of the innermost output loop, where no read needs a guard.

A stencil's reads are guarded (``x[j - 1] if 0 <= j - 1 < W else 0``) because near the edges
they fall outside their arrays; the branches keep the loop from being vectorized. As Halide
partitions a loop, the kernel writer runs the innermost output index ``v`` in three ranges:
``[0, lo)`` and ``[hi, E)`` with every guard, ``[lo, hi)`` (the interior) without the guards
that cannot fail there. A guard ``0 <= a < d`` is dropped in the interior when ``a`` is
``±v`` plus terms whose ranges are known (loop variables of sums and taps, sizes): it then
holds for every ``v`` in ``[lo_a, hi_a)``, and the interior is the intersection of those
ranges, computed at run time from the sizes. The values are the same (a dropped guard was true).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...ir.index import Affine, Dim

__all__ = ["Index", "bounds_of", "exact_of", "requirement"]


@dataclass(frozen=True)
class Index:
    """An index in scope: its code (a loop variable or an integer expression), its extent when
    it is a loop variable running over the whole of it, and what is known of its value in
    terms of the partitioned loop variable and the sizes: ``exact`` (its value) or ``span``
    (inclusive bounds, free of loop variables)."""

    code: str
    extent: Dim | None = None
    exact: Affine | None = None
    span: tuple[Affine, Affine] | None = None


def _rest(a: Affine) -> Affine:
    return Affine((), a.sizes, a.const)


def exact_of(a: Affine, env: Mapping[str, Index]) -> Affine | None:
    """``a`` (over the statement's index names) as an affine of the partitioned variable and
    the sizes, when every index in it has an exact form."""
    out = _rest(a)
    for name, c in a.index:
        ix = env.get(name)
        if ix is None or ix.exact is None:
            return None
        out = out + ix.exact.scale(c)
    return out


def bounds_of(a: Affine, env: Mapping[str, Index]) -> tuple[Affine, Affine] | None:
    """The least and greatest value of ``a`` over the spans of its indices (exact ones kept)."""
    lo = hi = _rest(a)
    for name, c in a.index:
        ix = env.get(name)
        if ix is None:
            return None
        if ix.exact is not None:
            lo, hi = lo + ix.exact.scale(c), hi + ix.exact.scale(c)
        elif ix.span is not None:
            s_lo, s_hi = ix.span
            lo, hi = (lo + s_lo.scale(c), hi + s_hi.scale(c)) if c > 0 else \
                (lo + s_hi.scale(c), hi + s_lo.scale(c))
        else:
            return None
    return lo, hi


def requirement(var: str, lo: Affine, hi: Affine, extent: Dim
                ) -> tuple[Affine, Affine] | None:
    """The range ``[low, high)`` of ``var`` on which ``0 <= a < extent`` holds for every value of
    ``a`` in ``[lo, hi]`` (affines of ``var`` with coefficient ±1 and of sizes); None when the
    guard is not of that form."""
    k = lo.coeff(var)
    if k not in (1, -1) or hi.coeff(var) != k or not (lo.is_integral() and hi.is_integral()):
        return None
    r_lo, r_hi = lo - Affine.var(var).scale(k), hi - Affine.var(var).scale(k)
    if r_lo.free_indices() or r_hi.free_indices():
        return None
    ext = Affine.of_dim(extent)
    if k == 1:  # var + r_lo >= 0 and var + r_hi <= extent - 1
        return -r_lo, ext - r_hi
    return r_hi - ext + 1, r_lo + 1  # -var + r_hi <= extent - 1 and -var + r_lo >= 0
