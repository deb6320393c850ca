"""The normal form of what a statement executes, and the index ranges it runs over.

A statement body is expanded into a sum of *terms* (:class:`Term`), each
``coef · Σ_J Π conditions · Π factors``, in the spirit of ATL's normalized contraction form:
the generator indices are the statement's, ``J`` the summed indices, the conditions the
Iverson brackets (:class:`Cond`, normalized to ``a >= 0``, ``a == 0``, ``a != 0``, integrality
or relation membership) and the factors everything else. Products of sums are flattened into
one sum (``Σ_I f · Σ_J g = Σ_{I,J} f · g``) so that a contraction is ordered as a whole.

Equalities solved and index ranges narrowed are in :mod:`eqsat_ad.plan.ranges`; windows, bands
and scans (summed indices confined by their conditions) in :mod:`eqsat_ad.plan.windows`; sums
of reads spread over the contractions they sit in, in :mod:`eqsat_ad.plan.spread`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..ir.errors import ProgramError
from ..ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
    product_factors,
    substitute,
)
from ..ir.functions import lookup
from ..ir.index import Affine, IndexVar

# ================================================================================================
# Conditions (what brackets become once normalized)
# ================================================================================================


@dataclass(frozen=True)
class Cond:
    """A condition on integer indices: ``aff >= 0`` (ge), ``aff == 0`` (eq), ``aff != 0`` (ne),
    ``aff`` is an integer (int), or membership in a relation (rel).

    ``aff`` has integer coefficients for ge/eq/ne (scaled by the common denominator), so that
    ``<`` becomes ``>= 1`` exactly.
    """

    kind: str
    aff: Affine = Affine()
    rel: Rel | None = None

    def indices(self) -> frozenset[str]:
        if self.rel is not None:
            out: frozenset[str] = frozenset()
            for a in self.rel.indices:
                out |= a.free_indices()
            return out
        return self.aff.free_indices()

    def sides(self) -> tuple[Affine, Affine]:
        """``aff`` as ``lhs - rhs`` with no negative coefficient on either side, so the condition
        prints as ``N - 1 >= 2 * i`` rather than ``N - 2 * i - 1 >= 0``."""
        a = self.aff
        pos = Affine.make({n: k for n, k in a.index if k > 0},
                          {n: k for n, k in a.sizes if k > 0}, max(a.const, 0))
        return pos, pos - a

    def substitute(self, mapping: Mapping[str, Affine]) -> Cond:
        if self.rel is not None:
            r = Rel(self.rel.name, tuple(a.substitute(mapping) for a in self.rel.indices))
            return Cond("rel", rel=r)
        a = self.aff.substitute(mapping)
        return Cond(self.kind, a if self.kind == "int" else to_integral(a))


def common_denominator(a: Affine) -> int:
    """The least common denominator of ``a``'s coefficients and constant (1: integral)."""
    q = a.const.denominator
    for _, c in a.index + a.sizes:
        q = math.lcm(q, c.denominator)
    return q


def to_integral(a: Affine) -> Affine:
    """``a`` scaled by a positive integer so that every coefficient is an integer."""
    q = common_denominator(a)
    return a if q == 1 else a.scale(q)


def conditions(p: Pred) -> list[Cond]:
    """The predicate of a bracket as a conjunction of normalized conditions."""
    match p:
        case And(preds):
            return [c for q in preds for c in conditions(q)]
        case Rel():
            return [Cond("rel", rel=p)]
        case Cmp(op, lhs, rhs):
            d = to_integral(lhs - rhs)
            match op:
                case "==":
                    return [Cond("eq", d)]
                case "!=":
                    return [Cond("ne", d)]
                case "<":
                    return [Cond("ge", -d - 1)]
                case "<=":
                    return [Cond("ge", -d)]
                case ">":
                    return [Cond("ge", d - 1)]
                case ">=":
                    return [Cond("ge", d)]
    raise ProgramError(f"not a predicate: {p!r}")


def sign_known(a: Affine) -> int | None:
    """+1 if ``a >= 0`` for all sizes >= 1, -1 if ``a < 0`` for all sizes >= 1, else None.

    ``a`` must be free of index variables.
    """
    cs = [c for _, c in a.sizes]
    at_one = a.const + sum(cs, Fraction(0))
    if all(c >= 0 for c in cs) and at_one >= 0:
        return 1
    if all(c <= 0 for c in cs) and at_one < 0:
        return -1
    return None


def static_truth(c: Cond) -> bool | None:
    """The truth of an index-free condition when the sizes do not matter, else None."""
    if c.kind == "rel":
        return None
    a = c.aff
    if c.kind == "int":
        return True if common_denominator(a) == 1 else (None if a.sizes else False)
    if c.kind == "ge":
        s = sign_known(a)
        return None if s is None else s > 0
    if a.is_constant():
        return (a.const == 0) == (c.kind == "eq")
    return None


# ================================================================================================
# Terms: Σ_J coef · Π conds · Π factors
# ================================================================================================


@dataclass
class Term:
    coef: float
    sums: list[IndexVar]
    factors: list[Expr | Term]
    conds: list[Cond]

    def key(self) -> tuple:
        """The term as a hashable value: equal keys, equal terms (structurally)."""
        return (self.coef, tuple(self.sums),
                tuple(f.key() if isinstance(f, Term) else f for f in self.factors),
                tuple(self.conds))

    def free(self) -> set[str]:
        out: set[str] = set()
        for f in self.factors:
            out |= f.free() if isinstance(f, Term) else set(free_indices(f))
        for c in self.conds:
            out |= c.indices()
        return out - {iv.name for iv in self.sums}

    def substitute(self, mapping: Mapping[str, Affine]) -> Term:
        mapping = {k: v for k, v in mapping.items() if k not in {iv.name for iv in self.sums}}
        if not mapping:
            return self
        return Term(
            self.coef,
            list(self.sums),
            [f.substitute(mapping) if isinstance(f, Term) else substitute(f, mapping)
             for f in self.factors],
            [c.substitute(mapping) for c in self.conds],
        )


class FreshNames:
    """Fresh index names for the binders of sums (so merged scopes never capture).

    ``flatten``: a product of sums becomes one sum (``Σ_I f · Σ_J g = Σ_{I,J} f · g``, the
    normal form the cost model prices and the contraction order is chosen for). Off in the
    strict lowering, where a factor may be inf and strong zero must see the nesting.
    """

    def __init__(self, used: set[str], flatten: bool = False) -> None:
        self.used = set(used)
        self.flatten = flatten

    def fresh(self, base: str) -> str:
        stem = base.rstrip("0123456789") or base
        for k in itertools.count():
            name = base if k == 0 else f"{stem}{k}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError


def decide_static(t: Term) -> Term | None:
    """``t`` without its index-free conditions known true; ``None`` if one is known false."""
    kept: list[Cond] = []
    for c in t.conds:
        if not c.indices():
            s = static_truth(c)
            if s is False:
                return None
            if s is True:
                continue
        kept.append(c)
    return replace(t, conds=kept)


def by_component(t: Term) -> Term:
    """A flattened ``Σ_{I,J} f(I) · g(J)`` regrouped as ``(Σ_I f) · (Σ_J g)``: one factor per
    group of factors linked by summed indices (the output of an outer product)."""
    if not t.sums or t.conds:
        return t
    summed = {iv.name for iv in t.sums}
    groups: list[tuple[set[str], list[Expr | Term]]] = []
    for f in t.factors:
        own = (f.free() if isinstance(f, Term) else set(free_indices(f))) & summed
        merged: list[Expr | Term] = [f]
        keep = []
        for ix, fs in groups:
            if ix & own:
                own |= ix
                merged = fs + merged
            else:
                keep.append((ix, fs))
        groups = [*keep, (own, merged)]
    if any(not ix for ix, _ in groups) and len(groups) == 1:
        return t
    factors: list[Expr | Term] = []
    for ix, fs in groups:
        sums = [iv for iv in t.sums if iv.name in ix]
        factors += [Term(1.0, sums, fs, [])] if sums else fs
    rest = [iv for iv in t.sums if not any(iv.name in ix for ix, _ in groups)]
    if rest:
        return t  # a summed index in no factor: a scaling, left to the general path
    return Term(t.coef, [], factors, [])


def outer_groups(
    factors: Sequence[Any], gens: Sequence[str],
    free: Callable[[Any], set[str]] = lambda f: set(free_indices(f)),
) -> list[tuple[tuple[str, ...], list[Any]]] | None:
    """The factors of a product split into groups of consecutive output indices that share no
    index (``x[i] * y[j]`` → ``[((i,), [x[i]]), ((j,), [y[j]])]``), index-free factors in a
    leading group ``()``; None unless there are at least two groups covering ``gens`` in order.
    ``free``: a factor's free indices (the backend passes its own terms)."""
    groups: list[tuple[set[str], list[Any]]] = []
    scalars: list[Any] = []
    for f in factors:
        fv = free(f)
        if not fv:
            scalars.append(f)
            continue
        group: tuple[set[str], list[Any]] = (set(fv), [f])
        for g in [g for g in groups if g[0] & fv]:
            group[0].update(g[0])
            group[1][:0] = g[1]
            groups.remove(g)
        groups.append(group)
    if any(n not in gens for g in groups for n in g[0]):
        return None
    groups.sort(key=lambda g: min(gens.index(n) for n in g[0]))
    ordered = [tuple(n for n in gens if n in g[0]) for g in groups]
    if len(groups) < 2 or [n for o in ordered for n in o] != list(gens):
        return None
    out = [(o, g[1]) for o, g in zip(ordered, groups, strict=True)]
    return ([((), scalars)] if scalars else []) + out


def reads_only(terms: list[Term]) -> bool:
    """Every term a product of plain reads (no sum, no other factor)."""
    return all(
        not t.sums and all(isinstance(f, Access) for f in t.factors) for t in terms
    )


def _scaling(terms: list[Term], other: list[Term]) -> bool:
    """One term of a constant and brackets only: distributing it over the sum ``other`` is
    exact (up to rounding) whatever values the sum holds, and keeps the sign of its zero where
    the constant is positive."""
    return (len(terms) == 1 and not terms[0].factors and not terms[0].sums
            and (terms[0].coef > 0 or len(other) == 1))


def _merge(a: Term, b: Term) -> Term:
    """The product of two terms, without moving data factors into a sum."""
    if not a.sums and not b.sums:
        return Term(a.coef * b.coef, [], a.factors + b.factors, a.conds + b.conds)
    if a.sums and not b.sums and not b.factors:
        return Term(a.coef * b.coef, a.sums, a.factors, a.conds + b.conds)
    if b.sums and not a.sums and not a.factors:
        return Term(a.coef * b.coef, b.sums, b.factors, b.conds + a.conds)
    if not b.sums:
        a, b = b, a
    if not a.sums:  # b is a sum: keep it as one factor
        return Term(a.coef * b.coef, [], a.factors + [replace(b, coef=1.0)], a.conds)
    return Term(a.coef * b.coef, [], [replace(a, coef=1.0), replace(b, coef=1.0)], [])


def _negated(terms: list[Term], e: Expr, names: FreshNames) -> list[Term]:
    """``-e`` for ``e`` expanded into ``terms``. The strict lowering keeps the negation of a
    sum of two or more terms outside it: ``-(a + b)`` is -0.0 where ``a + b`` is +0.0 (``a =
    -b``), but ``-a - b`` is +0.0 there, a sign a division by it sees (docs/semantics.md: the
    unoptimized code agrees with the interpreter on every value)."""
    if len(terms) > 1 and not names.flatten:
        return [Term(-1.0, [], [e], [])]
    return [replace(t, coef=-t.coef) for t in terms]


def _comparisons(terms: list[Term]) -> list[Expr]:
    """The data comparisons (``gt(x, y)``, ...) among the factors of a single term: like
    brackets, each makes the term a strong zero where it is false."""
    if len(terms) != 1:
        return []
    return [f for f in terms[0].factors if _is_comparison(f)]


def _is_comparison(e: Expr | Term) -> bool:
    if not isinstance(e, Call):
        return False
    f = lookup(e.fn)
    return f is not None and f.strong


def without_brackets(e: Expr) -> Expr:
    """The product tree ``e`` with its bracket and data-comparison factors left out (1 if
    nothing is left)."""
    if isinstance(e, Bracket) or _is_comparison(e):
        return Const(1.0)
    if isinstance(e, Binary) and e.op == "*":
        a, b = without_brackets(e.lhs), without_brackets(e.rhs)
        if a == Const(1.0):
            return b
        return a if b == Const(1.0) else Binary("*", a, b)
    if isinstance(e, Neg):
        return Neg(without_brackets(e.arg))
    return e


def expand(e: Expr, names: FreshNames) -> list[Term]:
    """``e`` as a sum of terms (sums distribute over ``+``; products of sums stay products)."""
    match e:
        case Const(v):
            return [] if v == 0 else [Term(v, [], [], [])]
        case Binary("+", lhs, rhs):
            return expand(lhs, names) + expand(rhs, names)
        case Binary("-", lhs, rhs):
            return expand(lhs, names) + _negated(expand(rhs, names), rhs, names)
        case Neg(arg):
            return _negated(expand(arg, names), arg, names)
        case Binary("/", lhs, Const(v)) if v != 0 and math.isfinite(v):
            terms = expand(lhs, names)
            if v < 0 and len(terms) > 1 and not names.flatten:  # (as -(a + b), _negated)
                return [Term(1.0 / v, [], [lhs], [])]
            return [replace(t, coef=t.coef / v) for t in terms]
        case Binary("/", lhs, rhs):
            # ([p] e) / d = [p] (e / d): a strong zero divided by anything is one (a bracket
            # or data comparison guards the quotient, 0 / nan included)
            terms = expand(lhs, names)
            if not terms:
                return []
            guards = _comparisons(terms)
            if len(terms) == 1 and (terms[0].conds or guards) and not terms[0].sums:
                return [Term(1.0, [], [*guards, Binary("/", without_brackets(lhs), rhs)],
                             terms[0].conds)]
            # (Σ_J [p] e) / d = Σ_J [p] (e · d⁻¹), d free of J: where no term survives the
            # guard the sum is a strong zero and so is its quotient (docs/semantics.md), so an
            # empty masked sum over d = 0 is 0, not 0 / 0 (the lowering takes d⁻¹ out of the sum
            # again where it is finite)
            if (len(terms) == 1 and terms[0].sums and (terms[0].conds or guards)
                    and not free_indices(rhs) & {iv.name for iv in terms[0].sums}):
                t = terms[0]
                return [Term(t.coef, t.sums, [*t.factors, Pow(rhs, -1.0)], t.conds)]
        case Binary("*", lhs, rhs):
            left, right = expand(lhs, names), expand(rhs, names)
            if not left or not right:
                return []
            if len(left) == 1 and len(right) == 1:
                if names.flatten:
                    a, b = left[0], right[0]
                    return [Term(a.coef * b.coef, a.sums + b.sums, a.factors + b.factors,
                                 a.conds + b.conds)]
                return [_merge(left[0], right[0])]
            # Distribute only to bring brackets to the top of terms (where they become writes
            # into parts of the output); otherwise a product of sums stays one factor.
            # Under inf/nan (the strict lowering, names.flatten off) only a multiplier of
            # brackets and a constant distributes: a (b + c) = a b + a c fails for a = inf
            # with b + c finite (or for b = -inf, c finite), as IEEE products do.
            # (A negative constant keeps the sum whole there too: -2 (a + b) is -0.0 where
            # a + b is +0.0, -2 a - 2 b is +0.0, as for -(a + b), _negated.)
            if (
                len(left) * len(right) <= 16
                and (reads_only(left) or reads_only(right))
                and any(t.conds for t in left + right)
                and (names.flatten or _scaling(left, right) or _scaling(right, left))
            ):
                return [_merge(a, b) for a in left for b in right]
            lt = left[0] if len(left) == 1 else Term(1.0, [], [lhs], [])
            rt = right[0] if len(right) == 1 else Term(1.0, [], [rhs], [])
            return [_merge(lt, rt)]
        case Bracket(p):
            return [Term(1.0, [], [], conditions(p))]
        case Pow(base, k) if k > 0:
            # ([p] e) ** k = [p] e ** k: the bracket still guards the term (a strong zero to a
            # positive power is one), instead of being computed as 0.0 ** k inside the power
            terms = expand(base, names)
            if not terms:
                return []
            guards = _comparisons(terms)
            if len(terms) == 1 and (terms[0].conds or guards) and not terms[0].sums:
                return [Term(1.0, [], [*guards, Pow(without_brackets(base), k)],
                             terms[0].conds)]
        case Sum(ivs, body):
            mapping: dict[str, Affine] = {}
            new: list[IndexVar] = []
            for iv in ivs:
                nn = names.fresh(iv.name)
                new.append(IndexVar(nn, iv.extent))
                if nn != iv.name:
                    mapping[iv.name] = Affine.var(nn)
            inner = substitute(body, mapping) if mapping else body
            if names.flatten:
                return [Term(t.coef, new + t.sums, t.factors, t.conds)
                        for t in expand(inner, names)]
            # The strict lowering keeps a coefficient written inside the sum as a factor: the
            # term's own coefficient is then one the program applies outside (-Σ_j x[j]), which
            # keeps the sign of a zero sum; Σ_j -x[j] is +0.0 where every x[j] is 0
            return [Term(1.0, new + t.sums, t.factors if t.coef == 1 else
                         [Const(t.coef), *t.factors], t.conds) for t in expand(inner, names)]
    return [Term(1.0, [], [e], [])]


def divisions_out_of_sums(factors: list[Expr | Term], summed: set[str]
                           ) -> list[Expr | Term]:
    """``a / b`` inside a sum over ``a``'s indices as the factors ``a`` and ``b ** -1``.

    With ``b`` free of the summed indices the division leaves the sum (``Σ_s V[s, d] / Z[t]``
    is ``(Σ_s V[s, d]) / Z[t]``, no T x T x D array); otherwise ``b ** -1`` is one more operand
    of the contraction, which the contraction order multiplies into its smallest partner
    (``Σ_t W[t, d] · E[t, s] / Z[t]`` scales W (T x D), not E (T x T))."""
    out: list[Expr | Term] = []
    for f in factors:
        if (isinstance(f, Binary) and f.op == "/" and not isinstance(f.rhs, Const)
                and free_indices(f.lhs) & summed):
            out += [*product_factors(f.lhs), Pow(f.rhs, -1.0)]
        else:
            out.append(f)
    return out

