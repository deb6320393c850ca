"""Stepped loops: a statement that is 0 off the multiples of ``c`` along its innermost index.

The adjoint of a strided read ``x[2 * i]`` reads ``w[i/2]``: a fractional index reads 0, so the
value is 0 at every odd point. Written point by point, each point tests ``i % 2 == 0`` and
reads ``w[i // 2]`` (a division and a branch per point: no vector code). A loop compiler steps
instead: the kernel writer (:mod:`.nests`) runs ``k`` over the multiples ``v = c·k``, the body
rewritten with ``v := c·k`` (``w[k]``, integral: an ordinary, partitioned loop over ``k``), and
stores ``0.0`` at the ``c - 1`` points after each one (:func:`stepping`, :func:`stepped`).

The rewriting is only done where the body's value off the multiples is exactly ``+0.0`` for
every input (:func:`zero_off`): a fractional read (an ordinary 0; a relation's, a strong zero),
sums and differences of such values, a product with a strong zero (a relation read) or of two
such values, a positive constant times one. A product of an ordinary 0 with a value that may
be inf or nan is nan, and a negation is -0.0: neither is rewritten.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from ...ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Const,
    Expr,
    Pow,
    Rel,
    Sum,
    all_index_names,
    fresh_name,
    substitute,
)
from ...ir.index import Affine, IndexVar, size
from ...ir.program import Statement

__all__ = ["Step", "stepped", "stepping", "zero_off"]


def _fractional(a: Affine, v: str) -> int | None:
    """``c`` when ``a`` is integral exactly where ``v`` is a multiple of ``c`` > 1 (``v``'s
    coefficient ``p/c`` in lowest terms, every other term integral)."""
    k = a.coeff(v)
    if k.denominator == 1:
        return None
    rest = a - Affine.var(v).scale(k)
    return k.denominator if rest.is_integral() else None


def zero_off(e: Expr, v: str, relations: Collection[str]) -> tuple[int, bool] | None:
    """``(c, strong)`` when ``e`` is ``+0.0`` at every point where ``v`` is not a multiple of
    ``c`` > 1, whatever the inputs (``strong``: a strong zero there, 0 in any product)."""
    if isinstance(e, Access):
        cs = {c for a in e.indices if (c := _fractional(a, v)) is not None}
        return (cs.pop(), e.name in relations) if len(cs) == 1 else None
    if isinstance(e, Bracket):  # a relation read in a bracket: a strong zero
        for q in e.pred.preds if isinstance(e.pred, And) else (e.pred,):
            if isinstance(q, Rel):
                cs = {c for a in q.indices if (c := _fractional(a, v)) is not None}
                if len(cs) == 1:
                    return cs.pop(), True
        return None
    if isinstance(e, Sum):
        if any(iv.name == v for iv in e.indices):
            return None
        inner = zero_off(e.body, v, relations)
        return None if inner is None else (inner[0], False)
    if isinstance(e, Pow):
        inner = zero_off(e.base, v, relations)
        return None if inner is None or not e.exponent > 0 else (inner[0], False)
    if not isinstance(e, Binary):
        return None
    a, b = zero_off(e.lhs, v, relations), zero_off(e.rhs, v, relations)
    if e.op in "+-":  # +0.0 ± +0.0 is +0.0
        return (a[0], False) if a is not None and b is not None and a[0] == b[0] else None
    if e.op == "*":
        if a is not None and b is not None:
            return (a[0], a[1] or b[1]) if a[0] == b[0] else None
        one, other = (a, e.rhs) if a is not None else (b, e.lhs)
        if one is None:
            return None
        if one[1]:  # a strong zero: 0 whatever the other factor is
            return one
        positive = isinstance(other, Const) and 0 < other.value < float("inf")
        return (one[0], False) if positive else None
    if e.op == "/" and a is not None:
        positive = isinstance(e.rhs, Const) and 0 < e.rhs.value < float("inf")
        return (a[0], False) if positive else None
    return None


class Step(NamedTuple):
    """A group's innermost loop runs ``k`` over the multiples ``v = c·k``."""

    c: int
    k: str


STEPS = "_Ks"
"""The number of whole steps, ``extent // c`` (a local of the kernel)."""
LAST = "_Kc"
"""The number of multiples in the extent, ``ceil(extent / c)``."""


def stepping(group: list[Statement], relations: Collection[str]) -> Step | None:
    """The step of a group whose every statement is +0.0 off the multiples of the same ``c``
    along its innermost index; None otherwise."""
    cs = set()
    for s in group:
        if not s.indices:
            return None
        z = zero_off(s.body, s.indices[-1].name, relations)
        if z is None:
            return None
        cs.add(z[0])
    if len(cs) != 1:
        return None
    avoid = {n for s in group for n in all_index_names(s.body)}
    avoid |= {iv.name for s in group for iv in s.indices}
    return Step(cs.pop(), fresh_name(f"{group[0].indices[-1].name}_k", avoid))


def stepped(group: list[Statement], step: Step, extent: str) -> list[Statement]:
    """The group over ``step.k`` (``extent`` names its number of points): the innermost index
    ``v`` replaced by ``c·k``."""
    out = []
    for s in group:
        v = s.indices[-1].name
        body = substitute(s.body, {v: Affine.var(step.k).scale(step.c)})
        out.append(Statement(s.name, (*s.indices[:-1], IndexVar(step.k, size(extent))), body,
                             s.loc))
    return out
