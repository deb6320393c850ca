"""Peak memory of a plan: the arrays its code holds at each line, from their live ranges.

The generated code releases every array after its last use (``del``, placed by
:mod:`eqsat_ad.plan.lower.liveness`), so what it holds at a line is the arrays defined before it and
released after it, plus what the line itself holds while it runs (:func:`line_peak`: the
temporaries of its expression, each freed once the kernel that reads it has run, and the array it
defines). The plan's peak is the largest such sum over its lines. It is an upper bound on what
NumPy holds where the kernels' operands are known (NumPy also reuses a temporary in place where
it can); arguments are the caller's and are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .poly import ZERO, Poly, compare

if TYPE_CHECKING:
    from .kernels import Kernel

__all__ = ["Lifetime", "PeakMemory", "line_peak", "peak_memory"]


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


ELIDE_MIN = 32768
"""Elements (of float64) a temporary must have for NumPy to compute an operator into it
(``a * b``, ``a ** 2`` where ``a`` is a temporary no name refers to: NumPy's temporary elision,
256 KiB and up)."""

# Kernels that are Python operators (NumPy elides their temporaries): the operand positions a
# result may be written into. ``**`` has its base as its one operand (``e ** k``); a one-operand
# ``-`` may be ``0.0 - e``, so it is not counted.
_ELIDED = {"+": (0, 1), "*": (0, 1), "scale": (0, 1), "-": (0,), "/": (0,), "**": (0,)}


def line_peak(kernels: Sequence[Kernel], sizes: Mapping[str, int] | None = None) -> Poly:
    """The most elements one line's kernels (in the order they run: each operand's kernels
    before the kernel that reads it) hold at once: what is computed and not yet read, and what
    the running kernel writes. A kernel whose operands are not known (``args`` None) frees
    nothing: what came before it is counted until the line ends. An operator whose operand is
    a temporary of its result's size (of :data:`ELIDE_MIN` elements or more) writes into it
    and allocates nothing."""
    stack: list[tuple[Poly, int]] = []  # (elements held, kernels that computed them)
    best = ZERO
    for k in kernels:
        want = sum(k.args) if k.args is not None else 0
        taken = j = 0
        while j < len(stack) and taken < want:
            j += 1
            taken += stack[-j][1]
        operands = stack[len(stack) - j:] if taken == want and want else []
        alloc = ZERO if _elided(k, operands, sizes) else k.alloc
        total = alloc
        for held, _ in stack:
            total = total + held
        if compare(total, best, sizes) > 0:
            best = total
        if operands:
            del stack[len(stack) - j:]  # its operands, freed
        else:
            taken = 0
        stack.append((k.alloc, 1 + taken))
    return best


def _elided(k: Kernel, operands: Sequence[tuple[Poly, int]],
            sizes: Mapping[str, int] | None) -> bool:
    """Whether ``k`` writes into one of its ``operands`` (their stack entries: each computed
    operand's, in order) by NumPy's temporary elision."""
    where = _ELIDED.get(k.detail) if k.kind == "elementwise" else None
    if where is None or k.args is None or len(k.args) > 2 or k.alloc.is_zero():
        return False
    computed = [n for n, a in enumerate(k.args) if a]
    if [c for _, c in operands] != [k.args[n] for n in computed]:
        return False
    if sizes is not None and k.alloc.evaluate(
            {n: sizes.get(n, 1000) for n in k.alloc.size_names()}) < ELIDE_MIN:
        return False
    return any(n in where and held == k.alloc for n, (held, _) in zip(computed, operands,
                                                                         strict=True))


def peak_memory(lifetimes: Sequence[Lifetime], allocs: Mapping[int, Poly],
                sizes: Mapping[str, int] | None = None) -> PeakMemory:
    """The peak of ``lifetimes`` plus ``allocs`` (line -> what it holds while it runs,
    :func:`line_peak`), the lines compared at ``sizes`` (asymptotically when None)."""
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
