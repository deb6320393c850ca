"""Index ranges: the equalities of a term solved and its one-index conditions narrowed into
ranges, so that what is left of a statement term is a product over a grid of ranges (a slice
write), a scatter at solved coordinates, or masks.

:class:`Axis` is an index with its (narrowed) range; :func:`eliminate` solves equalities for
indices, :func:`fold` narrows ranges, :func:`pull_out` takes the conditions of a summed factor
that do not mention its own indices out of the sum, and :func:`statement_term` does all three for
one term of a statement, as the backend then writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import NamedTuple

from ..ir.expr import Expr, free_indices
from ..ir.index import Affine, Dim, IndexVar
from .normal import (
    Cond,
    Term,
    common_denominator,
    decide_static,
    divisions_out_of_sums,
    sign_known,
    to_integral,
)

__all__ = [
    "Axis", "StatementTerm", "SumTerm", "eliminate", "fold", "pull_out", "statement_term",
    "sum_term",
]




@dataclass(frozen=True)
class Axis:
    """An index ranging over ``max(lo) <= v < min(hi)`` (bounds free of index variables)."""

    name: str
    extent: Dim
    lo: tuple[Affine, ...]
    hi: tuple[Affine, ...]

    @staticmethod
    def full(iv: IndexVar) -> Axis:
        return Axis(iv.name, iv.extent, (Affine.constant(0),), (Affine.of_dim(iv.extent),))

    def is_full(self) -> bool:
        return self.lo == (Affine.constant(0),) and self.hi == (Affine.of_dim(self.extent),)

    def with_lo(self, b: Affine) -> Axis:
        return replace(self, lo=_add_bound(self.lo, b, lower=True))

    def with_hi(self, b: Affine) -> Axis:
        return replace(self, hi=_add_bound(self.hi, b, lower=False))


def _add_bound(bounds: tuple[Affine, ...], b: Affine, lower: bool) -> tuple[Affine, ...]:
    """Add a bound to a max (lower) or min (upper) list, dropping dominated ones."""
    sign = 1 if lower else -1
    for x in bounds:
        if sign_known((x - b).scale(sign)) == 1:  # x already at least as tight
            return bounds
    kept = tuple(x for x in bounds if sign_known((b - x).scale(sign)) != 1)
    return kept + (b,)


def eliminate(t: Term, candidates: Sequence[str], grid_extent: Mapping[str, Dim]
              ) -> tuple[Term, dict[str, Affine]] | None:
    """Solve equalities of ``t`` for indices in ``candidates`` (earliest first).

    Returns the term with the solved indices substituted (their ranges and the integrality
    of their values added as conditions) and the solutions; None when ``t`` is 0.
    """
    solved: dict[str, Affine] = {}
    cands = list(candidates)
    while True:
        best = None
        for k, c in enumerate(t.conds):
            if c.kind != "eq":
                continue
            for v in cands:
                coeff = c.aff.coeff(v)
                if coeff == 0:
                    continue
                rank = (0 if abs(coeff) == 1 else 1, cands.index(v))
                if best is None or rank < best[0]:
                    best = (rank, k, v, coeff)
        if best is None:
            break
        _, k, v, coeff = best
        c = t.conds[k]
        rest = c.aff - Affine.var(v).scale(coeff)
        sol = rest.scale(Fraction(-1) / coeff)
        conds = t.conds[:k] + t.conds[k + 1:]
        t = replace(t, conds=conds)
        t = Term(t.coef, [iv for iv in t.sums if iv.name != v], t.factors, t.conds)
        # Substitute inside (sums[] already dropped v, so Term.substitute reaches it).
        t = t.substitute({v: sol})
        ext = Affine.of_dim(grid_extent[v])
        extra = [Cond("ge", to_integral(sol)), Cond("ge", to_integral(ext - sol - 1))]
        if common_denominator(sol) != 1:
            extra.append(Cond("int", sol))
        t = replace(t, conds=t.conds + extra)
        solved = {k2: a.substitute({v: sol}) for k2, a in solved.items()}
        solved[v] = sol
        cands.remove(v)
    t = decide_static(t)
    return None if t is None else (t, solved)


def fold(t: Term, axes: dict[str, Axis], names: Sequence[str]) -> Term:
    """Narrow the ranges in ``axes`` of ``names`` by one-index conditions of ``t``."""
    kept: list[Cond] = []
    for c in t.conds:
        ix = c.indices()
        if c.kind == "ge" and len(ix) == 1 and next(iter(ix)) in names:
            v = next(iter(ix))
            k = c.aff.coeff(v)
            rest = c.aff - Affine.var(v).scale(k)
            if k == 1:
                axes[v] = axes[v].with_lo(-rest)
                continue
            if k == -1:
                axes[v] = axes[v].with_hi(rest + 1)
                continue
        kept.append(c)
    return replace(t, conds=kept)




def pull_out(t: Term, eliminated: list[str]) -> Term | None:
    """``t`` as one product whose summed factors lost their equalities (solved for their own
    indices: ``[i == k]`` inside ``Σ_k`` becomes a plain access) and the conditions that do
    not mention their own indices (which the product then carries); None where ``t`` is 0.
    ``eliminated`` receives the summed indices the equalities removed, in order."""
    if t.sums:
        t = Term(1.0 if t.coef == 1 else t.coef, [], [replace(t, coef=1.0)], [])
    factors: list[Expr | Term] = []
    conds = list(t.conds)
    coef = t.coef
    for f in t.factors:
        if not isinstance(f, Term) or not f.sums:
            factors.append(f)
            continue
        res = eliminate(f, [iv.name for iv in f.sums], {iv.name: iv.extent for iv in f.sums})
        if res is None:
            return None
        g, solved = res
        eliminated.extend(solved)
        j = {iv.name for iv in g.sums}
        out = [c for c in g.conds if not (c.indices() & j)]
        inner = [c for c in g.conds if c.indices() & j]
        conds += out
        if not g.sums:
            coef *= g.coef
            factors += g.factors
            conds += inner
        else:
            factors.append(Term(g.coef, g.sums, g.factors, inner))
    return decide_static(Term(coef, [], factors, conds))


class StatementTerm(NamedTuple):
    """A statement term as the backend writes it: over the grid ``axes`` of the generators not
    ``solved`` (their ranges narrowed by the term's one-index conditions), at coordinates given
    by the ``solved`` ones (a scatter where there are any)."""

    term: Term
    axes: dict[str, Axis]
    solved: dict[str, Affine]


def statement_term(t: Term, indices: Sequence[IndexVar], eliminated: list[str]
                   ) -> StatementTerm | None:
    """A term of a statement over ``indices`` with its sums' equalities eliminated and their
    outer conditions pulled out (:func:`pull_out`, which fills ``eliminated``), then its
    equalities solved for the generators and its ranges narrowed; None where it is 0."""
    gens = {iv.name: iv.extent for iv in indices}
    pulled = pull_out(t, eliminated)
    if pulled is None:
        return None
    res = eliminate(pulled, list(gens), gens)
    if res is None:
        return None
    t, solved = res
    axes = {iv.name: Axis.full(iv) for iv in indices if iv.name not in solved}
    return StatementTerm(fold(t, axes, list(axes)), axes, solved)


class SumTerm(NamedTuple):
    """A term's sum as the backend runs it (:func:`sum_term`)."""

    term: Term
    """The term, its sums' equalities eliminated and ranges narrowed."""
    inner: dict[str, Axis]
    """The summed indices left, with their ranges."""
    summed: tuple[list[Expr | Term], list[Cond]]
    """The factors and conditions that carry a summed index: what the sum runs over."""
    outside: tuple[list[Expr | Term], list[Cond]]
    """The factors and conditions free of the summed indices: taken out of the sum."""


def sum_term(t: Term, eliminated: list[str], divide_out: bool) -> SumTerm | None:
    """``t``'s sum with its equalities solved for the summed indices (``eliminated`` receives
    them, in order), their ranges narrowed by one-index conditions, and the factors and
    conditions free of them taken out; None where ``t`` is 0. ``divide_out``: quotients by
    something free of the summed indices leave the sum (:func:`divisions_out_of_sums`; the
    strict code keeps a quotient whole: ``a * b ** -1`` is nan where ``b`` is subnormal and
    ``a`` is 0, ``1 / b`` overflowing, but ``a / b`` is 0)."""
    res = eliminate(t, [iv.name for iv in t.sums], {iv.name: iv.extent for iv in t.sums})
    if res is None:
        return None
    t, solved = res
    eliminated.extend(solved)
    inner = {iv.name: Axis.full(iv) for iv in t.sums}
    t = fold(t, inner, list(inner))
    j = set(inner)
    inner_f: list[Expr | Term] = []
    outer_f: list[Expr | Term] = []
    for f in divisions_out_of_sums(t.factors, j) if divide_out else t.factors:
        fv = f.free() if isinstance(f, Term) else set(free_indices(f))
        (inner_f if fv & j else outer_f).append(f)
    return SumTerm(t, inner, (inner_f, [c for c in t.conds if c.indices() & j]),
                   (outer_f, [c for c in t.conds if not (c.indices() & j)]))
