"""Spreading sums of reads over the contractions they sit in (the fast code's choice).

A summed term with a factor that is a sum of plain reads differing in the summed indices they
read (``Σ_k W[i, k] · (x[i, j] - x[k, j])``) is a broadcast over indices the reads do not share:
the factor alone is an N x N array built from two columns. Distributed over the term, each addend
is a contraction of arrays already there (``x[i, j] · Σ_k W[i, k] - Σ_k W[i, k] x[k, j]``, a
matrix product). The statement lowering prices both forms at the call's sizes and keeps the
spread one where it is priced no higher (:meth:`eqsat_ad.plan.lower.statements.Codegen.statement`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Binary, free_indices
from .normal import FreshNames, Term, expand, reads_only

__all__ = ["SPREAD_LIMIT", "spread_reads"]

SPREAD_LIMIT = 16
"""The most terms one term may be spread into by :func:`spread_reads`."""


def spread_reads(terms: Sequence[Term], names: FreshNames) -> list[Term] | None:
    """``terms`` with each summed term's factor that is a sum of plain reads differing in the
    summed indices they read distributed over the term; None if no term has one.

    ``Σ_k W[i, k] · (x[i, j] - x[k, j])`` becomes ``Σ_k W[i, k] x[i, j] - Σ_k W[i, k] x[k, j]``:
    the factor is a broadcast over indices its reads do not share (an N x N array built from
    two columns, per ``j``), while each new term is a contraction of arrays already there
    (``x[i, j] · Σ_k W[i, k]``, a matrix product ``W @ x``). Exact for finite values only (the
    caller lowers the fast code with it, and prices both forms: a term whose other factors
    cover more indices pays its contraction once per addend)."""
    out: list[Term] = []
    changed = False
    for t in terms:
        parts = _spread(t, names)
        changed |= parts[0] is not t
        out += parts
    return out if changed else None


def _spread(t: Term, names: FreshNames) -> list[Term]:
    summed = {iv.name for iv in t.sums}
    if not summed:
        return [t]
    for k, f in enumerate(t.factors):
        if not (isinstance(f, Binary) and f.op in "+-"):
            continue
        parts = expand(f, names)
        if (not 2 <= len(parts) <= 4 or any(p.sums or p.conds for p in parts)
                or not reads_only(parts)):
            continue
        if len({_reads(p) & summed for p in parts}) < 2:
            continue
        rest = t.factors[:k] + t.factors[k + 1:]
        spread = [Term(t.coef * p.coef, list(t.sums), [*rest, *p.factors], list(t.conds))
                  for p in parts]
        out = [u for s in spread for u in _spread(s, names)]
        return out if len(out) <= SPREAD_LIMIT else [t]
    return [t]


def _reads(t: Term) -> frozenset[str]:
    out: set[str] = set()
    for f in t.factors:
        out |= f.free() if isinstance(f, Term) else set(free_indices(f))
    return frozenset(out)
