"""The kernels the backend runs, each with its iteration space and what it allocates.

A program's plan is the list of kernels its generated code calls, in order, each tied to the
generated source line that runs it. Sizes are polynomials in the size symbols (:class:`Poly`):
``space`` is the number of points the kernel visits, ``alloc`` the number of elements of the new
array it writes (0 for a view or an in-place update of an existing array).

Price of a kernel (elements touched): ``space`` for a kernel that writes each point it visits
once (elementwise passes, masks, gathers, fills, slice updates, scatters, scans), ``space +
alloc`` for one that visits more points than it writes (contractions, reductions). A plan's price
is the sum over its kernels; its largest intermediate is its largest ``alloc``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

from .memory import Lifetime, PeakMemory, line_peak, peak_memory
from .poly import ZERO, Poly, compare

__all__ = [
    "CHECK_WEIGHT", "KERNEL_KINDS", "Check", "Contract", "Elementwise", "Fill", "Gather",
    "Kernel", "Mask", "Plan",
    "RUNNING_SUM_WEIGHT", "Reduce", "RelationGather", "RunningSum", "Scan", "Scatter",
    "STRIDED_UPDATE_WEIGHT", "SegmentSum", "SliceUpdate", "StridedSliceUpdate", "View",
]


@dataclass(frozen=True)
class Kernel:
    """One operation of the generated code."""

    statement: str
    space: Poly
    alloc: Poly
    detail: str = ""
    line: int = field(default=-1, compare=False)
    """1-based line of the generated source that runs it (-1 before emission)."""
    args: tuple[int, ...] | None = field(default=None, compare=False)
    """For a kernel that writes a new array from arrays its line computed just before it: how
    many kernels computed each operand (they precede it on the line; an operand read from a
    variable has none). Its operands are freed once it has run. None: not known (what came
    before it on the line is counted as held until the line ends)."""

    kind: ClassVar[str] = "kernel"
    reduces: ClassVar[bool] = False

    @property
    def cost(self) -> Poly:
        return self.space + self.alloc if self.reduces else self.space

    def __str__(self) -> str:
        return f"{self.kind}[{self.space}] -> {self.alloc}: {self.detail}"


@dataclass(frozen=True)
class Contract(Kernel):
    """A pairwise contraction step (``@`` or ``np.einsum``): space = the indices it touches."""

    kind: ClassVar[str] = "contract"
    reduces: ClassVar[bool] = True


@dataclass(frozen=True)
class Reduce(Kernel):
    """A sum over some axes of one array (``.sum(axis=...)``)."""

    kind: ClassVar[str] = "reduce"
    reduces: ClassVar[bool] = True


@dataclass(frozen=True)
class Elementwise(Kernel):
    """An arithmetic pass, a ufunc, a cast or a broadcast copy over its result's axes."""

    kind: ClassVar[str] = "elementwise"


@dataclass(frozen=True)
class Mask(Kernel):
    """A boolean array from index comparisons or a relation, or a mask applied (``np.where``)."""

    kind: ClassVar[str] = "mask"


@dataclass(frozen=True)
class View(Kernel):
    """A slice, shifted or strided view, transpose or diagonal view: nothing allocated."""

    kind: ClassVar[str] = "view"


@dataclass(frozen=True)
class Gather(Kernel):
    """Reads at computed coordinates, or a zero-padded window copy."""

    kind: ClassVar[str] = "gather"


@dataclass(frozen=True)
class Fill(Kernel):
    """A new array: zero-fill, index range (``np.arange``) or structured output storage."""

    kind: ClassVar[str] = "fill"


@dataclass(frozen=True)
class SliceUpdate(Kernel):
    """``y[region] += v`` into an existing array (no allocation of its own)."""

    kind: ClassVar[str] = "slice-update"


STRIDED_UPDATE_WEIGHT = 2
"""Points per element of a slice update whose region is not one contiguous block (an inner axis
is cut, ``b[1:H, 1:W] += v``: NumPy runs it row by row, unaligned). Calibrated by
``experiments/calibrate_kernels.py`` (experiments/results/calibration.md): 3.1x (spread
2.7..4.1) an elementwise pass per element at 316 x 316 and 2.5x (0.9..2.7) at 1000 x 1000 (an
earlier run: 3.3x and 1.8x), against 1.0..1.1x for the same update shifted along rows only (one
block)."""


@dataclass(frozen=True)
class StridedSliceUpdate(SliceUpdate):
    """A :class:`SliceUpdate` of a region cut along an inner axis, priced at
    :data:`STRIDED_UPDATE_WEIGHT` points per element."""

    @property
    def cost(self) -> Poly:
        return self.space * STRIDED_UPDATE_WEIGHT


@dataclass(frozen=True)
class Scatter(Kernel):
    """Writes at points fixed by equalities: a diagonal fill or point writes."""

    kind: ClassVar[str] = "scatter"


@dataclass(frozen=True)
class Scan(Kernel):
    """A cumulative sum along one axis (``np.cumsum``)."""

    kind: ClassVar[str] = "scan"


RUNNING_SUM_WEIGHT = 18
"""Points per element a NumPy running sum (``np.cumsum``) is priced at, in units of one element
of an elementwise pass (``0.125 * x``): it is sequential (each sum waits for the one before: no
SIMD). Calibrated on the sweep's machine by ``taskset -c 1 python experiments/calibrate_kernels.py
--n 100000 --n 1000000 --repeats 9`` (one BLAS thread, interleaved medians; the machine shared):
``np.cumsum`` 15.1x (spread over repeats 12.6..17.5) an elementwise pass per element at N = 1e5
and 10.9x (2.8..18.8) at N = 1e6 (experiments/results/calibration.md, load 4.7; two runs at load
1.0..1.3: 11.9x and 17.6x, 7.1x and 11.3x); a whole band read by running sums
(``_rt.scan_shift``, priced ``RUNNING_SUM_WEIGHT + 3``: the running sum, two reads at the bounds,
their difference) 52x and 28x (earlier 42x and 21x, 15x and 28x). End to end, the trailing mean
over 8 samples by a scan of a scan ran 1.11..1.25x slower than its 14 shifted-slice adds (sweep,
N = 1e6), which these prices put at ``2 * (w + 3) + 1`` against ``37`` per element: w = 17..20.
Every other 1-D kernel measured within 0.9..1.7x of an elementwise pass (slice update 0.9..1.1,
reduction 0.9..1.7, zero-fill 1.0..1.2, padded window copy 1.5..1.6, read at a scan bound
1.2..1.5) and keeps weight 1. With running sums at 8 the scan of a scan was priced 1.6x cheaper
and chosen."""


@dataclass(frozen=True)
class RunningSum(Scan):
    """The running sum of a scan itself (``np.cumsum``, reversed or not), priced at
    :data:`RUNNING_SUM_WEIGHT` points per element; the reads at the bounds are plain Scans."""

    @property
    def cost(self) -> Poly:
        return self.space * RUNNING_SUM_WEIGHT


@dataclass(frozen=True)
class RelationGather(Kernel):
    """An array read at the members of a sparse relation (``x[M.coords[k]]``): space = the
    member count (``nnz_M``) times the axes kept."""

    kind: ClassVar[str] = "relation-gather"


@dataclass(frozen=True)
class SegmentSum(Kernel):
    """A sum over the members of a sparse relation into one of its dimensions
    (``np.bincount`` or a sparse incidence product), or over all of them."""

    kind: ClassVar[str] = "segment-sum"
    reduces: ClassVar[bool] = True


CHECK_WEIGHT = Fraction(1, 2)
"""Points per element of a read-only pass over an argument (a finite check: nothing written).
Calibrated by ``experiments/calibrate_kernels.py`` (experiments/results/calibration.md): the
guard's ``np.dot(x, x)`` 0.39x (spread 0.35..0.40) an elementwise pass per element at N = 1e6
and 0.54x at N = 1e5; the caller's finite scan (``runtime.finite``) 0.44x and 1.17x."""


@dataclass(frozen=True)
class Check(Kernel):
    """A pass over an argument before the generated function runs, reading it only: the
    caller's finite scan of a parameter the fast code trusts (``finite-input``), or the guard's
    pass over every argument of optimized code (backend/guard.py). Priced at
    :data:`CHECK_WEIGHT` points per element."""

    kind: ClassVar[str] = "check"

    @property
    def cost(self) -> Poly:
        return self.space * CHECK_WEIGHT


KERNEL_KINDS: tuple[type[Kernel], ...] = (
    Contract, Reduce, Elementwise, Mask, View, Gather, Fill, SliceUpdate, Scatter, Scan,
    RelationGather, SegmentSum, Check,
)


@dataclass(frozen=True)
class Plan:
    """The kernels of a lowered program, in the order the generated code runs them, and the
    arrays its variables hold (:mod:`eqsat_ad.plan.memory`)."""

    kernels: tuple[Kernel, ...]
    lifetimes: tuple[Lifetime, ...] = ()

    @property
    def cost(self) -> Poly:
        total = ZERO
        for k in self.kernels:
            total = total + k.cost
        return total

    @property
    def products(self) -> Poly:
        """The price of its matrix products (contractions of degree 3 or more: BLAS)."""
        total = ZERO
        for k in self.kernels:
            if isinstance(k, Contract) and k.space.degree() >= 3:
                total = total + k.cost
        return total

    def statement_cost(self, name: str) -> Poly:
        total = ZERO
        for k in self.kernels:
            if k.statement == name:
                total = total + k.cost
        return total

    def allocations(self) -> tuple[Kernel, ...]:
        """The kernels that allocate a new array."""
        return tuple(k for k in self.kernels if not k.alloc.is_zero())

    def largest(self, sizes: Mapping[str, int] | None = None) -> Kernel | None:
        """The kernel allocating the largest array (asymptotically, then at ``sizes``)."""
        best: Kernel | None = None
        for k in self.allocations():
            if best is None or compare(k.alloc, best.alloc, sizes) > 0:
                best = k
        return best

    def peak(self, sizes: Mapping[str, int] | None = None) -> PeakMemory:
        """The most elements the code holds at once (its arrays and a line's temporaries; the
        lines compared at ``sizes``, asymptotically when None)."""
        by_line: dict[int, list[Kernel]] = {}
        for k in self.kernels:
            by_line.setdefault(k.line, []).append(k)
        return peak_memory(self.lifetimes, {n: line_peak(ks, sizes)
                                            for n, ks in by_line.items()}, sizes)

    def kinds(self) -> list[str]:
        return [k.kind for k in self.kernels]

    def on_line(self, line: int) -> tuple[Kernel, ...]:
        return tuple(k for k in self.kernels if k.line == line)

    def value(self, sizes: Mapping[str, int]) -> Fraction:
        return Fraction(self.cost.evaluate(sizes))

    def __str__(self) -> str:
        return "\n".join(f"{k.line:4d} {k.statement:>10} {k}" for k in self.kernels)


def total(polys: Iterable[Poly]) -> Poly:
    out = ZERO
    for p in polys:
        out = out + p
    return out
