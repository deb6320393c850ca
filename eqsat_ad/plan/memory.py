"""Peak memory of a plan: the arrays its code holds at each line, from their live ranges.

The generated code releases every array after its last use (``del``, placed by
:mod:`eqsat_ad.backend.liveness`), so what it holds at a line is the arrays defined before it and
released after it, plus what the line itself allocates while it runs (each kernel's ``alloc``:
the temporaries of an expression and the array it defines). The plan's peak is the largest such
sum over its lines. Counting every allocation of a line as held at once makes the peak an upper
bound on what NumPy holds (it frees an expression's temporaries as it goes, and reuses some in
place); arguments are the caller's and are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .poly import ZERO, Poly, compare

__all__ = ["Lifetime", "PeakMemory", "peak_memory"]


@dataclass(frozen=True)
class Lifetime:
    """An array the generated code holds in a variable: from the line after the one that
    defines it (that line's allocations count it) to the line that releases it (its ``del``, or
    the ``return``), both 1-based lines of the generated source. ``elements`` is 0 for a name that
    only refers to another array (a view or an alias): that array's lifetime covers it instead.
    ``redefined``: defined in a loop and not released in it, so while the line that defines it
    runs, the previous iteration's array is still held."""

    name: str
    elements: Poly
    start: int
    end: int
    redefined: bool = False


@dataclass(frozen=True)
class PeakMemory:
    """The most elements the code holds at once, the line where it does, and what it holds."""

    elements: Poly
    line: int
    held: tuple[str, ...]

    def value(self, sizes: Mapping[str, int]) -> int:
        return int(self.elements.evaluate({n: sizes.get(n, 1000)
                                           for n in self.elements.size_names()}))


def peak_memory(lifetimes: Sequence[Lifetime], allocs: Mapping[int, Poly],
                sizes: Mapping[str, int] | None = None) -> PeakMemory:
    """The peak of ``lifetimes`` plus ``allocs`` (line -> what its kernels allocate), the lines
    compared at ``sizes`` (asymptotically when None)."""
    # held at line L: the lifetimes with start < L <= end (changes at start + 1 and end + 1)
    events: dict[int, Poly] = {}
    for lt in lifetimes:
        if lt.elements.is_zero():
            continue
        events[lt.start + 1] = events.get(lt.start + 1, ZERO) + lt.elements
        events[lt.end + 1] = events.get(lt.end + 1, ZERO) - lt.elements
    shadow: dict[int, Poly] = {}
    for lt in lifetimes:
        if lt.redefined:
            shadow[lt.start] = shadow.get(lt.start, ZERO) + lt.elements
    held = ZERO
    best_total, best_line = ZERO, -1
    for line in sorted(set(allocs) | set(events) | set(shadow)):
        held = held + events.get(line, ZERO)
        total = held + allocs.get(line, ZERO) + shadow.get(line, ZERO)
        if best_line < 0 or compare(total, best_total, sizes) > 0:
            best_total, best_line = total, line
    names = tuple(lt.name for lt in lifetimes
                  if lt.start < best_line <= lt.end and not lt.elements.is_zero())
    return PeakMemory(best_total, best_line, names)
