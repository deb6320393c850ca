"""Loop partitioning: the interior of the innermost output loop, where no read needs a guard.

A stencil's reads are guarded (``x[j - 1] if 0 <= j - 1 < W else 0``) because near the edges
they fall outside their arrays; the branches keep the loop from being vectorized. As Halide
partitions a loop, the kernel writer runs the innermost output index ``v`` in three ranges:
``[0, lo)`` and ``[hi, E)`` with every guard, ``[lo, hi)`` (the interior) without the guards
that cannot fail there. A guard ``0 <= a < d`` is dropped in the interior when ``a`` is
``±v`` plus terms whose ranges are known (loop variables of sums and taps, sizes): it then
holds for every ``v`` in ``[lo_a, hi_a)``, and the interior is the intersection of those
ranges, computed at run time from the sizes. The values are the same (a dropped guard was true).
A tap that an equality bracket solves for a summed index (``i1 = i - a + 1`` in a window's
adjoint, ``a`` a loop variable of the window) is bounded as such a read is, from the spans of
the loop variables in it: where the interior proves it, it is neither guarded nor signed.

A guard on ``k·v`` (a strided read ``x[2 * i]``) holds on a range whose ends are ceilings of
quotients of sizes (:class:`Ceil`). The interior, once its bounds are known, also proves
brackets: an affine condition that holds at every point of ``[lo, hi)`` (:func:`holds_on`) is
written as its true branch there (a select the interior cannot take is not computed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from ...ir.expr import And, Binary, Bracket, Cmp, Expr, Pred
from ...ir.index import Affine, Dim

__all__ = ["Ceil", "Index", "bounds_of", "exact_of", "holds_on", "least_of", "requirement",
           "signed", "size_bound", "support", "unproved"]


@dataclass(frozen=True)
class Index:
    """An index in scope: its code (a loop variable or an integer expression), its extent when
    it is a loop variable running over the whole of it, and what is known of its value in
    terms of the partitioned loop variable and the sizes: ``exact`` (its value) or ``span``
    (inclusive bounds, free of loop variables)."""

    code: str
    extent: Dim | None = None
    exact: Affine | None = None
    span: tuple[Affine, Affine] | None = None
    inside: bool = False  # a tap the interior proves in its axis (read unsigned there)


def _rest(a: Affine) -> Affine:
    return Affine((), a.sizes, a.const)


def exact_of(a: Affine, env: Mapping[str, Index]) -> Affine | None:
    """``a`` (over the statement's index names) as an affine of the partitioned variable and
    the sizes, when every index in it has an exact form."""
    out = _rest(a)
    for name, c in a.index:
        ix = env.get(name)
        if ix is None or ix.exact is None:
            return None
        out = out + ix.exact.scale(c)
    return out


def bounds_of(a: Affine, env: Mapping[str, Index]) -> tuple[Affine, Affine] | None:
    """The least and greatest value of ``a`` over the spans of its indices (exact ones kept)."""
    lo = hi = _rest(a)
    for name, c in a.index:
        ix = env.get(name)
        if ix is None:
            return None
        if ix.exact is not None:
            lo, hi = lo + ix.exact.scale(c), hi + ix.exact.scale(c)
        elif ix.span is not None:
            s_lo, s_hi = ix.span
            lo, hi = (lo + s_lo.scale(c), hi + s_hi.scale(c)) if c > 0 else \
                (lo + s_hi.scale(c), hi + s_lo.scale(c))
        else:
            return None
    return lo, hi


class Ceil(NamedTuple):
    """A loop bound ``ceil(num / den)`` (``den`` > 1; an integral affine of sizes ``num``)."""

    num: Affine
    den: int


Bound = Affine | Ceil
"""An end of a range of the partitioned variable: an integral affine of sizes, or a ceiling."""


def _ceil(num: Affine, den: int) -> Bound:
    if num.is_constant():
        return Affine.constant(-(-num.const // den))
    return num if den == 1 else Ceil(num, den)


def requirement(var: str, lo: Affine, hi: Affine, extent: Dim
                ) -> tuple[Bound, Bound] | None:
    """The range ``[low, high)`` of ``var`` on which ``0 <= a < extent`` holds for every value of
    ``a`` in ``[lo, hi]`` (affines of ``var`` with an integer coefficient ``k`` and of sizes);
    None when the guard is not of that form."""
    k = lo.coeff(var)
    if k == 0 or k.denominator != 1 or hi.coeff(var) != k or not (
            lo.is_integral() and hi.is_integral()):
        return None
    r_lo, r_hi = lo - Affine.var(var).scale(k), hi - Affine.var(var).scale(k)
    if r_lo.free_indices() or r_hi.free_indices():
        return None
    ext = Affine.of_dim(extent)
    m = abs(int(k))
    if k > 0:  # k·var + r_lo >= 0 and k·var + r_hi <= extent - 1
        return _ceil(-r_lo, m), _ceil(ext - r_hi, m)
    # -m·var + r_lo >= 0 (var <= r_lo / m) and -m·var + r_hi <= extent - 1
    return _ceil(r_hi - ext + 1, m), _ceil(r_lo + 1, m)


def _nonneg(a: Affine) -> bool:
    """``a`` (free of indices) is >= 0 for every value of the sizes (which are >= 0)."""
    return not a.free_indices() and a.const >= 0 and all(c >= 0 for _, c in a.sizes)


def _parts(b: Bound) -> tuple[Affine, int]:
    return (b.num, b.den) if isinstance(b, Ceil) else (b, 1)


Least = tuple[Fraction, Affine]
"""A condition ``b >= 0`` by the least value of ``b`` at a point of the partitioned variable
``var``: ``k·var + r`` as ``(k, r)`` (``r`` an affine of sizes)."""


def least_of(var: str, cond: Cmp, env: Mapping[str, Index]) -> Least | None:
    """The affine condition ``cond`` as ``b >= 0``, by the least value of ``b`` over the spans
    of the indices other than ``var`` (None when not of that form)."""
    if not isinstance(cond, Cmp) or cond.op not in ("<", "<=", ">", ">="):
        return None
    a = cond.lhs - cond.rhs
    den = a.const.denominator
    for _, c in a.index + a.sizes:
        den = den * c.denominator // math.gcd(den, c.denominator)
    a = a.scale(den)  # a positive factor keeps the order; the scaled affine is integral
    b = {">=": a, ">": a - 1, "<=": -a, "<": -a - 1}[cond.op]  # cond <=> b >= 0
    span = bounds_of(b, env)
    if span is None:
        return None
    k = span[0].coeff(var)
    r = span[0] - Affine.var(var).scale(k)
    if r.free_indices() or k.denominator != 1:
        return None
    return k, r


def holds_on(least: Least, lows: Sequence[Bound], highs: Sequence[Bound]) -> bool:
    """Whether ``k·var + r >= 0`` at every point of ``[max(lows), min(highs))``: for ``k > 0``
    a low ``l >= n / d`` with ``k·n + d·r >= 0`` proves it, for ``k < 0`` a high ``h`` (whose
    largest point is ``h - 1 <= (n - 1) / d``) with ``k·(n - 1) + d·r >= 0``."""
    k, r = least
    if k == 0:
        return _nonneg(r)
    for n, d in map(_parts, lows if k > 0 else highs):
        if _nonneg(n.scale(k) + r.scale(d) if k > 0 else (n - 1).scale(k) + r.scale(d)):
            return True
    return False


def size_bound(b: Bound, affine_code: Callable[[Affine], str]) -> str:
    """Code of a loop bound (``affine_code`` writes an integral affine of sizes)."""
    n, d = _parts(b)
    code = affine_code(n)
    return code if d == 1 else f"-(-({code}) // {d})"


def support(body: Expr, var: str) -> tuple[Expr, list[Bound], list[Bound]] | None:
    """The bracket factors of ``body`` (products at its top) whose conditions bound ``var`` by
    sizes alone: ``body`` without them, and the lows and highs of the range where they all
    hold (outside it the body is their strong zero, +0.0 whatever the other factors are).
    A removed factor leaves its sibling in its place, as the loop writer writes ``[c] * X``
    (``X``): the products are the same. None: no such factor."""
    lows: list[Bound] = []
    highs: list[Bound] = []

    def strip(e: Expr) -> Expr | None:
        if isinstance(e, Bracket) and isinstance(e.pred, Cmp):
            least = least_of(var, e.pred, {var: Index(var, exact=Affine.var(var))})
            if least is not None and least[0] != 0:
                k, r = least  # k·var + r >= 0
                m = abs(int(k))
                if k > 0:
                    lows.append(_ceil(-r, m))
                else:  # var <= r / m
                    highs.append(_ceil(r + 1, m))
                return None
            return e
        if isinstance(e, Binary) and e.op == "*":
            a, b = strip(e.lhs), strip(e.rhs)
            if a is None or b is None:
                return a if b is None else b
            return e if (a is e.lhs and b is e.rhs) else Binary("*", a, b, e.loc)
        return e

    out = strip(body)
    if out is None or not (lows or highs):  # (a bare bracket: its 1 is no body)
        return None
    return out, lows, highs


def unproved(p: Pred, var: str, env: Mapping[str, Index], known: tuple[list, list] | None,
             conditions: list[Least]) -> Pred | None:
    """``p`` in the interior of ``var`` less the affine conditions that hold at every point of
    it (its bounds ``known``); None when nothing is left. Before the bounds are known, the
    conditions that might are noted in ``conditions`` (whether a second writing would gain)."""
    parts = p.preds if isinstance(p, And) else (p,)
    kept: list[Pred] = []
    for q in parts:
        least = least_of(var, q, env) if isinstance(q, Cmp) else None
        if least is not None and known is None:
            conditions.append(least)
        if least is None or known is None or not holds_on(least, *known):
            kept.append(q)
    if not kept:
        return None
    return p if len(kept) == len(parts) else kept[0] if len(kept) == 1 else And(tuple(kept))


def signed(code: str) -> str:
    """Index code ``code`` without its unsigned conversion (a value to compute with: Numba
    makes the sum of an unsigned and a signed integer a float)."""
    if code.startswith("min(np.uintp("):  # a clamped strided read: its index
        depth = 0
        for k, ch in enumerate(code[len("min("):], start=len("min(")):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and ch == ")":
                return signed(code[len("min("):k + 1])
    if code.startswith("np.uintp(") and code.endswith(")"):
        return code[len("np.uintp("):-1]
    return code
