"""Which arguments the NumPy backend's guard scans for their exact range, priced before a call.

Optimized code that is not the unoptimized program's own runs guarded by it (backend/guard.py):
each call bounds every tensor argument the programs read by one pass (the root of its sum of
squares) and proves both programs finite on that box by interval arithmetic. Where the
magnitude bound is too wide (an ``exp`` of an argument: ``exp(√n)`` overflows), it takes the
widest arguments' exact ranges (two more passes each: the smallest and the largest entry), one
at a time, until the proof holds; an argument that once needed it is scanned that way from then
on (two passes instead of one).

The price cannot see the data, so it assumes arguments of unit scale (standard normal entries):
a magnitude bound of ``√n`` and an exact range of ``±√(2 ln n)`` (the expected extreme of ``n``
such entries) for an argument of ``n`` entries. :func:`exact_ranges` runs the guard's own proof
on those boxes at the report's sizes: the arguments it returns are priced with two passes
instead of one. An argument the proof cannot settle at unit scale is priced as scanned exactly
too (what the guard does before it gives up); the price then assumes the data prove it (data of
another scale may: positive values under a ``log``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..ir.bounds import program_is_finite
from ..ir.index import dim_value
from ..ir.program import Program

__all__ = ["exact_ranges", "unit_extreme", "unit_magnitude"]


def unit_magnitude(n: int) -> float:
    """The guard's magnitude bound on ``n`` entries of unit scale: ``√(Σ x²) ≈ √n``."""
    return math.sqrt(max(n, 1))


def unit_extreme(n: int) -> float:
    """The largest of ``n`` standard normal entries, about ``√(2 ln n)`` (1 for a few)."""
    return math.sqrt(2 * math.log(n)) if n > 2 else 1.0


def exact_ranges(naive: Program, optimized: Program, sizes: Mapping[str, int]
                 ) -> frozenset[str]:
    """The tensor arguments whose exact range the guard of ``optimized`` (guarded by
    ``naive``) scans on arguments of unit scale at ``sizes``, in the guard's order: none when
    the magnitude bounds prove both programs finite, else the widest first until they do (all
    of them when they never do)."""
    read = (naive.names_read() | optimized.names_read()) & frozenset(naive.param_names)
    entries: dict[str, int] = {}
    for p in naive.params:
        if p.kind == "tensor" and p.name in read:
            try:
                entries[p.name] = math.prod(dim_value(d, sizes) for d in p.shape)
            except KeyError:
                return frozenset()  # sizes unknown: the one-pass price stands
    box = {p.name: (0.0, 0.0) for p in naive.params if p.kind == "tensor"}
    for name, n in entries.items():
        box[name] = (-unit_magnitude(n), unit_magnitude(n))

    def proven() -> bool:
        return program_is_finite(naive, box, sizes) and program_is_finite(optimized, box, sizes)

    exact: set[str] = set()
    if proven():
        return frozenset()
    for name in sorted(entries, key=lambda n: -unit_magnitude(entries[n])):
        box[name] = (-unit_extreme(entries[name]), unit_extreme(entries[name]))
        exact.add(name)
        if proven():
            break
    return frozenset(exact)
