"""Windows, bands and scans: summed indices confined to ranges by their conditions.

A summed index confined to a band of constant width (:func:`_band`) becomes an offset of constant
extent; small constant sums are unrolled into shifted reads (:func:`unroll_windows`), whose
in-range conditions (:func:`read_ranges`) narrow the region a term writes: the backend then runs
slice updates of shifted views, never a mask over a product of index spaces. A summed index
bounded by one other index on either side is a running sum (:func:`scan_bounds`);
:func:`scan_split` says which factors and conditions of a sum the running sums take.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from ..ir.expr import Access, Binary, Call, Expr, Pow
from ..ir.functions import lookup
from ..ir.index import Affine, Dim, IndexVar
from ..ir.traverse import fold
from .normal import Cond, Term, decide_static, to_integral
from .ranges import Axis, eliminate

__all__ = [
    "WINDOW_TERMS", "ScanSplit", "read_ranges", "scan_bounds", "scan_split", "unroll_windows",
]

WINDOW_TERMS = 27
"""A sum over at most this many constant offsets (a 3×3×3 window) is unrolled into slices."""


def _band(t: Term, iv: IndexVar) -> Term:
    """``t`` with the summed ``iv`` written as ``lo + a`` (``a`` a new summed index of constant
    extent) when two conditions confine it to ``lo <= iv <= lo + c``; else ``t``."""
    k = iv.name
    lows: list[tuple[int, Affine]] = []
    highs: list[tuple[int, Affine]] = []
    for n, c in enumerate(t.conds):
        if c.kind != "ge" or abs(c.aff.coeff(k)) != 1:
            continue
        rest = c.aff - Affine.var(k).scale(c.aff.coeff(k))
        (lows if c.aff.coeff(k) == 1 else highs).append((n, -rest if c.aff.coeff(k) == 1
                                                         else rest))
    for n1, lo in lows:
        for n2, hi in highs:
            width = hi - lo
            if width.is_constant() and 0 <= width.const < WINDOW_TERMS:
                a = IndexVar(f"{k}_off", int(width.const) + 1)
                at = lo + Affine.var(a.name)
                conds = [c for n, c in enumerate(t.conds) if n not in (n1, n2)]
                body = Term(t.coef, [], t.factors, conds).substitute({k: at})
                ext = Affine.of_dim(iv.extent)
                extra = [Cond("ge", to_integral(at)), Cond("ge", to_integral(ext - at - 1))]
                sums = [x for x in t.sums if x.name != k] + [a]
                return Term(t.coef, sums, body.factors, body.conds + extra)
    return t


def read_ranges(factors: Sequence[Expr | Term], shapes: Mapping[str, tuple[Dim, ...]]
                ) -> list[Cond]:
    """The in-range conditions of shifted reads ``x[i + c]`` (outside, a read is 0 anyway):
    stated, they narrow the region written instead of padding the array read."""
    out: list[Cond] = []
    for f in factors:
        if not isinstance(f, Access) or f.name not in shapes:
            continue
        for a, d in zip(f.indices, shapes[f.name], strict=False):
            if len(a.index) == 1 and abs(a.index[0][1]) == 1 and a.is_integral():
                out += [Cond("ge", a), Cond("ge", Affine.of_dim(d) - a - 1)]
    return out


def unroll_windows(t: Term, shapes: Mapping[str, tuple[Dim, ...]], narrow: bool = True
                   ) -> list[Term] | None:
    """A statement term whose sums are windows, as one term per window offset; None if not one.

    Equalities on summed indices are solved first; then a summed index confined to a band of
    constant width (``i - 1 <= k <= i + 1``) is written as ``k = i - 1 + a`` with ``a`` in
    ``0..2``; when every sum left has a constant extent and there are at most
    :data:`WINDOW_TERMS` offsets, the sum is unrolled. Each offset's accesses are then shifted
    reads whose in-range conditions narrow the output region: the term is a slice update of the
    output from a shifted slice (no mask, no padded copy). ``narrow`` False (the strict code)
    keeps the reads zero padded instead: a read outside is an ordinary 0.0, which an inf
    factor makes nan, where a false condition would be a strong zero.
    """
    if not t.sums:
        return None
    res = eliminate(t, [iv.name for iv in t.sums], {iv.name: iv.extent for iv in t.sums})
    if res is None:
        return []
    g, _ = res
    for iv in list(g.sums):
        if not isinstance(iv.extent, int):
            g = _band(g, iv)
    if not g.sums or not all(isinstance(iv.extent, int) for iv in g.sums):
        return None
    if math.prod(int(iv.extent) for iv in g.sums) > WINDOW_TERMS:
        return None
    out: list[Term] = []
    names = [iv.name for iv in g.sums]
    for combo in itertools.product(*(range(int(iv.extent)) for iv in g.sums)):
        at = {n: Affine.constant(v) for n, v in zip(names, combo, strict=True)}
        h = Term(g.coef, [], list(g.factors), list(g.conds)).substitute(at)
        # (an out-of-range read is an ordinary 0.0: a factor that may be inf or nan at finite
        # arguments, a quotient or a power or function with a pole, makes the term nan there,
        # not 0: fuzz 2035 #4922, x[i - 1] (...) ** -3; the fast code evaluates it everywhere
        # and its divide flag sends the call to the strict code)
        ranges = read_ranges(h.factors, shapes) if narrow and not any(
            _may_be_infinite(f) for f in h.factors) else []
        h = decide_static(replace(h, conds=h.conds + ranges))
        if h is not None:
            out.append(h)
    return out


def scan_bounds(j: str, conds: Sequence[Cond]
                ) -> tuple[str, Affine | None, Affine | None] | None:
    """``(i, lo, hi)`` when ``conds`` confine the summed ``j`` to ``lo(i) <= j < hi(i)`` (either
    bound may be missing, not both) for one other index ``i``: a running-sum (scan) pattern."""
    if not conds:
        return None
    lo: list[Affine] = []
    hi: list[Affine] = []
    outer: set[str] = set()
    for c in conds:
        k = c.aff.coeff(j)
        if c.kind != "ge" or abs(k) != 1:
            return None
        rest = c.aff - Affine.var(j).scale(k)
        if len(rest.free_indices()) != 1 or not rest.is_integral():
            return None
        outer |= rest.free_indices()
        (lo if k == 1 else hi).append(-rest if k == 1 else rest + 1)
    if len(outer) != 1 or len(lo) > 1 or len(hi) > 1:
        return None
    return next(iter(outer)), (lo[0] if lo else None), (hi[0] if hi else None)


class ScanSplit(NamedTuple):
    """How ``Σ_inner Π conds Π factors`` runs as a scan over ``j`` (:func:`scan_split`)."""

    bounds: tuple[str, Affine | None, Affine | None]
    """:func:`scan_bounds` of ``j``: the other index ``i`` and the bounds on ``j``."""
    conds_j: list[Cond]
    """The conditions on ``j`` (the bounds)."""
    with_j: list[Any]
    """The factors with ``j``: the operand of the running sums."""
    private: dict[str, Axis]
    """The summed indices only ``with_j`` carry: summed out before the scan."""
    rest: list[Any]
    """The other factors, multiplied in after the scan."""
    rest_conds: list[Cond]
    """The other conditions, applied after the scan."""


def scan_split(j: str, inner: Mapping[str, Axis], factors: Sequence[Any], conds: Sequence[Cond],
               free: Callable[[Any], set[str]]) -> ScanSplit | None:
    """How ``Σ_inner Π conds Π factors`` runs as a scan over ``j``, or None when ``j`` is not a
    scan: its conditions are not bounds in one other index ``i``, or its factors hold ``i`` or
    share a summed index with the rest. ``free``: a factor's free indices (the backend passes
    its computed values too)."""
    cj = [c for c in conds if j in c.indices()]
    found = scan_bounds(j, cj)
    if found is None:
        return None
    i = found[0]
    rest_conds = [c for c in conds if j not in c.indices()]
    with_j: list[Any] = []
    rest: list[Any] = []
    free_j: set[str] = set()
    free_rest: set[str] = set()
    for f in factors:
        fv = free(f)
        if j in fv:
            with_j.append(f)
            free_j |= fv
        else:
            rest.append(f)
            free_rest |= fv
    if not with_j or i in free_j:
        return None
    in_conds = set().union(*(c.indices() for c in rest_conds)) if rest_conds else set()
    shared = (free_j & set(inner)) - {j}
    private = {a: inner[a] for a in shared if a not in free_rest and a not in in_conds}
    if shared - set(private):
        return None
    if not rest and not rest_conds and i not in inner:
        with_j = list(factors)  # the simple scan: every factor is the operand
    return ScanSplit(found, cj, with_j, private, rest, rest_conds)


def _may_be_infinite(e: Expr | Term) -> bool:
    """``e`` may be inf or nan where every argument is finite, other than by overflow: it has a
    quotient, a negative or fractional power, or a function not finite on finite arguments."""
    if isinstance(e, Term):
        return any(_may_be_infinite(f) for f in e.factors)

    def pole(node: Expr, below: list[bool]) -> bool:
        if any(below) or isinstance(node, Binary) and node.op == "/":
            return True
        if isinstance(node, Pow):
            return node.exponent < 0 or node.exponent != int(node.exponent)
        if isinstance(node, Call):
            f = lookup(node.fn)
            return f is None or not (f.finite or f.strong)
        return False
    return fold(e, pole)

