"""Split a small axis into a loop: the choice between materializing an iteration space whole and
running it one slice of a small axis at a time, priced with what each allocates.

A statement whose iteration space has a small axis (a generator or a summed index of a few
points, such as the 3 coordinates of a point or the K taps of a filter) over a large product
space may run as a Python loop over that axis: each iteration writes one slice of the output (a
generator) or adds one term of the sum into it (a summed index), so nothing is allocated over the
small axis times the large space (no N x N x 3 array of differences, no K x N array of shifted
reads). Elements touched are about the same either way; what differs is what is allocated, and
the loop's calls. So the choice is priced by :func:`split_price`:

    price = Σ kernels' cost (elements touched; a loop body's kernels times its trip count)
            + ALLOC_WEIGHT · Σ elements allocated (once per line: an iteration reuses the
              blocks the one before freed)
            + CALL_OVERHEAD · number of kernel calls run (a loop body's: times the trip count)
            + PEAK_WEIGHT · elements of the largest array allocated

and the lowering keeps the split form when it allocates a smaller largest array (a split that
saves no array over the small axis only adds calls) and is priced lower (:func:`prefer`;
:meth:`eqsat_ad.plan.lower.loops.Loops.statement_split`).
An array over a small axis that is computed elementwise and read by others is a candidate for
recomputation where it is read (:func:`inline_small_arrays`): the whole program is lowered both
ways and the cheaper plan kept. Splitting reorders a sum (Σ_k Σ_rest, not Σ_rest Σ_k): exact for
finite values, so only the fast code splits; the strict code (inputs with inf/nan) runs the
statement whole, as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import NamedTuple

from ..ir.expr import (
    Access,
    Cmp,
    Expr,
    Max,
    Sum,
    children,
    free_indices,
    has_reduction,
    map_children,
    substitute,
)
from ..ir.index import Affine, Dim, dim_value
from ..ir.program import Program, Statement
from ..ir.traverse import has_strong_zero
from .kernels import Kernel

__all__ = [
    "ALLOC_WEIGHT", "CALL_OVERHEAD", "MAX_TRIPS", "PEAK_WEIGHT", "SplitPrice",
    "inline_small_arrays", "is_small", "prefer", "split_price",
]

MAX_TRIPS = 16
"""The most points an axis may have to be run as a loop (the loop's trip count)."""

ALLOC_WEIGHT = 2
"""Price of one element allocated, in elements touched: a new array's first write faults its
pages in (NumPy's large blocks are fresh mappings) and evicts what the cache held, and what reads
it later reads it from memory: about two more passes over it."""

PEAK_WEIGHT = 16
"""Price of one element of the largest array a lowering allocates: the working set it streams
through memory (and the peak it holds), and the strided passes over its middle axes. Calibrated on
the N-body gradient at N = 1000, one core: with its 3e6-element array of differences it ran in
69 ms, split into loops over the 3 coordinates (largest array N x N) in 53 ms (1.3x), while the
rest of the price (elements touched, allocations, calls) is 19 % higher for the split form; 16
makes the price ratio the measured one."""

CALL_OVERHEAD = 1000
"""Price of one kernel call, in elements touched: a NumPy call costs about a microsecond before
it touches an element, about what an elementwise pass over 1000 elements costs."""


def is_small(d: Dim, sizes: Mapping[str, int]) -> bool:
    """Whether an axis of extent ``d`` is short enough to loop over (at ``sizes``; a size not
    given is not small)."""
    if isinstance(d, int):
        return 1 < d <= MAX_TRIPS
    return d.name in sizes and 1 < dim_value(d, sizes) <= MAX_TRIPS


class SplitPrice(NamedTuple):
    """A lowering's price (:func:`split_price`) and the elements of its largest array."""

    price: float
    peak: float


def prefer(split: SplitPrice, whole: SplitPrice) -> bool:
    """Whether a split (or recomputing) lowering is kept instead of the whole one."""
    return split.peak < whole.peak and split.price < whole.price


def split_price(kernels: Iterable[Kernel], calls: int, sizes: Mapping[str, int]) -> SplitPrice:
    """The price of a lowering that runs ``kernels`` (costs with a loop's trip count already in
    them) in ``calls`` kernel calls (see the module doc); a size not given counts 1000, as the
    lowering's own tie-breaks do."""
    total = peak = 0.0
    for k in kernels:
        at = {n: sizes.get(n, 1000) for n in k.space.size_names() | k.alloc.size_names()}
        alloc = float(k.alloc.evaluate(at))
        total += float(k.cost.evaluate(at)) + ALLOC_WEIGHT * alloc
        peak = max(peak, alloc)
    return SplitPrice(total + PEAK_WEIGHT * peak + CALL_OVERHEAD * calls, peak)


def inline_small_arrays(prog: Program, sizes: Mapping[str, int]) -> Program | None:
    """``prog`` with each array over a small axis that is computed elementwise (no sum), not
    returned and read by later statements recomputed where it is read; None if there is none.

    (The caller prices both programs: recomputation pays when the readers then loop over the
    small axis instead of reading an array over it.)

    An array read where its reader's ranges do not prove the read inside it is not recomputed:
    a read outside it is an ordinary 0.0 (zero padded), which the fast code may meet with an
    inf the finite arguments make (``t1[3, N - 1] * log(0.0)``: nan, which reruns the strict
    code), while the recomputed body behind a false bracket is a strong zero that removes the
    whole term, its inf unseen."""
    kept: set[str] = set()
    while True:
        missed: set[str] = set()
        got = _inline_small(prog, sizes, frozenset(kept), missed)
        if not missed:
            return got
        kept |= missed


def _inline_small(prog: Program, sizes: Mapping[str, int], kept: frozenset[str],
                  missed: set[str]) -> Program | None:
    """:func:`inline_small_arrays` recomputing no array in ``kept``; the arrays read where a
    read is not proven inside them are added to ``missed``."""
    returned = {o.name for o in prog.outputs if isinstance(o, Access)}
    relations = frozenset(p.name for p in prog.params if p.kind == "relation")
    out: list = []
    bodies: dict[str, Statement] = {}
    for s in prog.statements:
        if isinstance(s, Statement) and bodies:
            s = replace(s, body=_inline(s.body, bodies, {iv.name: iv.extent for iv in s.indices},
                                        missed))
        if (isinstance(s, Statement) and s.name not in returned and s.indices
                and s.name not in kept
                and not has_reduction(s.body)
                and any(is_small(iv.extent, sizes) for iv in s.indices)
                and any(not is_small(iv.extent, sizes) for iv in s.indices)
                and any(s.name in t.reads() for t in prog.statements
                        if isinstance(t, Statement))
                and not _fractional_reads(s.name, prog)
                # (a stored 0.0 of a bracket meets nan as nan, a recomputed bracket removes
                # the term: t_bar[i] = [i == 1]; Σ_i t_bar[i] (1 / sqrt(x)) at x < 0)
                and not has_strong_zero(s.body, relations)):
            bodies[s.name] = s
            continue
        out.append(s)
    if not bodies or any(not isinstance(s, Statement) and set(s.reads()) & set(bodies)
                         for s in out):
        return None
    if any(isinstance(o, Expr) and _reads(o, bodies) for o in prog.outputs):
        return None
    return replace(prog, statements=tuple(out))


def _fractional_reads(name: str, prog: Program) -> bool:
    """Some statement reads ``name`` at a fractional index (``y[k/2]`` reads 0 at odd k, where
    ``y``'s body need not vanish: such a read is not inlined)."""
    def walk(e: Expr) -> bool:
        if isinstance(e, Access) and e.name == name and not all(
                a.is_integral() for a in e.indices):
            return True
        return any(walk(c) for c in children(e))
    return any(walk(t.body) for t in prog.statements if isinstance(t, Statement))


def _reads(e: Expr, bodies: Mapping[str, Statement]) -> bool:
    if isinstance(e, Access) and e.name in bodies:
        return True
    return any(_reads(c, bodies) for c in children(e))


def _inline(e: Expr, bodies: Mapping[str, Statement], ranges: Mapping[str, Dim],
            missed: set[str]) -> Expr:
    """``e`` with each read of a statement in ``bodies`` replaced by its body at the read's
    indices, where they are inside it (the bodies hold no sums: no binder can capture).
    ``ranges``: the extents of the indices bound around ``e``; ``missed`` collects the
    statements read where that is not proven."""
    if isinstance(e, Access) and e.name in bodies:
        s = bodies[e.name]
        mapping: dict[str, Affine] = {iv.name: a for iv, a in zip(s.indices, e.indices,
                                                                   strict=True)}
        assert not free_indices(s.body) - set(mapping)
        body = substitute(s.body, mapping)
        # a read outside the array is 0 (zero padded), not the body (t[1, N] of t[i: 1, j: N]
        # = x is 0, not x): where the ranges do not prove 0 <= a < extent, the array is kept
        outside = tuple(c for iv, a in zip(s.indices, e.indices, strict=True)
                        for c in (Cmp(">=", a, Affine.constant(0)),
                                  Cmp("<", a, Affine.of_dim(iv.extent)))
                        if not _holds(c, ranges))
        if outside:
            missed.add(e.name)
        return body
    if isinstance(e, Sum | Max):
        inner = {**ranges, **{iv.name: iv.extent for iv in e.indices}}
        return replace(e, body=_inline(e.body, bodies, inner, missed))
    return map_children(e, lambda c: _inline(c, bodies, ranges, missed))


def _holds(c: Cmp, ranges: Mapping[str, Dim]) -> bool:
    """``c`` (``a >= 0`` or ``a < n``) holds at every point of ``ranges``, whatever the
    sizes."""
    d = c.lhs - c.rhs if c.op == ">=" else c.rhs - c.lhs - 1  # (holds: d >= 0)
    low = Affine((), d.sizes, d.const)  # the least value of d over the ranges
    for name, k in d.index:
        if name not in ranges:
            return False
        if k < 0:
            low = low + (Affine.of_dim(ranges[name]) - 1).scale(k)
    # (for all sizes >= 0: a size read at N - 1 may be 0 where the reader's ranges are not empty)
    return all(k >= 0 for _, k in low.sizes) and low.const >= 0
