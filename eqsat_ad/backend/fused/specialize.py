"""A program with some size symbols fixed to their values at a call.

A pair loop (:mod:`.pairs`) unrolls its output's other indices, which must be a few constant
values; the NumPy front end names every axis by a size symbol, so N-body's coordinate axis
(``x: [N, M]``, M = 3 at the call) is not constant in the program. :func:`small_sizes` finds
the size symbols a pair loop would unroll; the backend fixes them to their values at a call
(:func:`fix_sizes`) and compiles that program once per value (the schedule decides it as
for any program, by its prices).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import sympy

from ...ir.expr import Sum, children
from ...ir.index import Affine, IndexVar
from ...ir.program import Program, Statement

__all__ = ["fix_sizes", "small_sizes"]


def small_sizes(prog: Program) -> frozenset[str]:
    """The size symbols that are extents of a statement's indices after its first, where its
    body sums an index over the first one's extent (a pair loop's form, :mod:`.pairs`)."""
    out: set[str] = set()
    for s in prog.statements:
        if not isinstance(s, Statement) or len(s.indices) < 2:
            continue
        first = s.indices[0].extent
        if not any(len(e.indices) == 1 and e.indices[0].extent == first
                   for e in _sums(s.body)):
            continue
        out |= {iv.extent.name for iv in s.indices[1:] if isinstance(iv.extent, sympy.Symbol)}
    return frozenset(out)


def _sums(e: Any) -> list[Sum]:
    if isinstance(e, Sum):
        return [e]
    return [s for c in children(e) for s in _sums(c)]


def fix_sizes(prog: Program, values: Mapping[str, int]) -> Program:
    """``prog`` with each size symbol of ``values`` replaced by its value (in shapes, index
    extents and affine index expressions)."""

    def fix(v: Any) -> Any:
        if isinstance(v, Affine):
            if not any(n in values for n, _ in v.sizes):
                return v
            const = v.const + sum((c * values[n] for n, c in v.sizes if n in values),
                                  Fraction(0))
            return Affine(v.index, tuple((n, c) for n, c in v.sizes if n not in values), const)
        if isinstance(v, sympy.Symbol):
            return values.get(v.name, v)
        if isinstance(v, IndexVar):
            return IndexVar(v.name, fix(v.extent))
        if isinstance(v, tuple):
            return tuple(fix(x) for x in v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            changes = {f.name: fix(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
            if all(changes[k] is getattr(v, k) for k in changes):
                return v
            return dataclasses.replace(v, **changes)
        return v

    return fix(prog)
