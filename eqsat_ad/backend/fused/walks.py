"""Walks over an expression that the schedule's prices (:mod:`.schedule`) and the loop writers
share: its children as the prices see them, its sums outside other sums, its sums over no free
index, the arrays it reads and whether a read walks down a column."""

from __future__ import annotations

from ...ir.expr import Access, And, Binary, Bracket, Call, Expr, Neg, Pow, Rel, Sum, free_indices

__all__ = ["array_reads", "children", "closed_sums", "strided", "top_sums"]


def children(e: Expr) -> tuple[Expr, ...]:
    """The operands the prices walk (a ``Max`` has none: the loop writer does not lower it)."""
    if isinstance(e, Binary):
        return (e.lhs, e.rhs)
    if isinstance(e, Neg):
        return (e.arg,)
    if isinstance(e, Pow):
        return (e.base,)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Sum):
        return (e.body,)
    return ()


def strided(a: Access | Rel, inner: str) -> bool:
    """``a`` walks its array across rows along the loop variable ``inner``: ``inner`` is in
    an index before the last and not in the last (a column of a row-major array)."""
    if len(a.indices) < 2 or inner in a.indices[-1].free_indices():
        return False
    return any(inner in ix.free_indices() for ix in a.indices[:-1])


def top_sums(e: Expr) -> list[Sum]:
    """The sums of ``e`` outside other sums."""
    if isinstance(e, Sum):
        return [e]
    return [s for c in children(e) for s in top_sums(c)]


def array_reads(e: Expr) -> list[Access | Rel]:
    """The arrays ``e`` reads: accesses and the relations of its brackets."""
    if isinstance(e, Access):
        return [e]
    if isinstance(e, Bracket):
        preds = e.pred.preds if isinstance(e.pred, And) else (e.pred,)
        return [p for p in preds if isinstance(p, Rel)]
    return [a for c in children(e) for a in array_reads(c)]


def closed_sums(e: Expr) -> list[Sum]:
    """The sums in ``e`` over no free index (:func:`work` prices each as a read), each once.
    (Unpriced, ``Σ_i Σ_j p[i, j] / Σ_k e[i, k]`` cost 2 and ran as B·N² loops.)"""
    out: list[Sum] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Sum) and not free_indices(x) and x not in out:
            out.append(x)
        stack.extend(children(x))
    return out
