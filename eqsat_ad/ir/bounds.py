"""Interval bounds of every value a program computes, from the bounds of its arguments.

Used to decide whether a call of optimized code may be trusted (backend/guard.py): the
optimizer's finite-only rewrites (a statement read inlined, so a stored plain zero becomes a
strong zero) are exact when every value the *unoptimized* program computes is finite. That
holds when each of its expressions, evaluated over intervals, stays within ``LIMIT`` in
magnitude, every divisor and negative power keeps away from zero, every ``log``/``sqrt``/
fractional power has a non-negative argument, and ``exp`` cannot overflow. The analysis is
sound (each interval contains every value of its expression at every point, zero included for
out-of-range reads and strong zeros) and coarse (one interval per tensor): it may fail to
prove a program finite, never the reverse. Its cost is one pass over the program, independent
of the sizes.

Public: :func:`program_is_finite`, ``LIMIT``, ``TINY``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .expr import Access, Binary, Bracket, Call, Const, Expr, Max, Neg, Pow, Sum
from .index import dim_value
from .program import Program, Statement

__all__ = ["LIMIT", "TINY", "program_is_finite"]

LIMIT = 1e300
"""The largest magnitude a bound may reach (far enough below overflow that the rounding of
the bounds' own arithmetic cannot matter)."""
TINY = 1e-290
"""The smallest magnitude a divisor, a negative power's base or a log's argument may reach."""

Interval = tuple[float, float]


class _Unproven(Exception):
    """Some value may be inf or nan (or the analysis does not know the operation)."""


def _ok(lo: float, hi: float) -> Interval:
    if not (-LIMIT <= lo <= hi <= LIMIT):  # also false for nan
        raise _Unproven
    return lo, hi


def _with_zero(b: Interval) -> Interval:
    return min(b[0], 0.0), max(b[1], 0.0)


def _mul(a: Interval, b: Interval) -> Interval:
    p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _ok(min(p), max(p))


def _recip(b: Interval) -> Interval:
    lo, hi = b
    if lo > TINY or hi < -TINY:
        return _ok(1.0 / hi, 1.0 / lo)
    raise _Unproven


def _pow(b: Interval, k: float) -> Interval:
    lo, hi = b
    if k == 0:
        return 1.0, 1.0
    if k < 0:
        if not (lo > TINY or hi < -TINY):
            raise _Unproven
        if not k.is_integer() and lo <= 0:
            raise _Unproven
    elif not k.is_integer() and lo < 0:
        raise _Unproven
    try:
        ends = (math.pow(lo, k), math.pow(hi, k))
    except (OverflowError, ValueError, ZeroDivisionError):
        raise _Unproven from None
    out_lo, out_hi = min(ends), max(ends)
    if k > 0 and k.is_integer() and int(k) % 2 == 0 and lo < 0 < hi:
        out_lo = 0.0  # an even power of an interval around zero
    return _ok(out_lo, out_hi)


def _monotone(fn: Any, b: Interval) -> Interval:
    try:
        return _ok(fn(b[0]), fn(b[1]))
    except (OverflowError, ValueError):
        raise _Unproven from None


_LOG2 = math.log(2.0)


def _call(fn: str, args: list[Interval]) -> Interval:
    a = args[0]
    match fn:
        case "exp":
            if a[1] > 700:
                raise _Unproven
            return _monotone(math.exp, a)
        case "expm1":
            if a[1] > 700:
                raise _Unproven
            return _monotone(math.expm1, a)
        case "log":
            if a[0] < TINY:
                raise _Unproven
            return _monotone(math.log, a)
        case "log1p":
            if a[0] <= -1 + 1e-15:
                raise _Unproven
            return _monotone(math.log1p, a)
        case "sqrt":
            if a[0] < 0:
                raise _Unproven
            return _monotone(math.sqrt, a)
        case "sin" | "cos" | "tanh" | "sign":
            return -1.0, 1.0
        case "sigmoid" | "step" | "gt0" | "gt" | "ge" | "eq" | "ngt" | "nge" | "ne":
            return 0.0, 1.0
        case "abs":
            m = max(abs(a[0]), abs(a[1]))
            return (0.0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1]))), m
        case "stop_gradient":
            return a
        case "max":
            return max(a[0], args[1][0]), max(a[1], args[1][1])
        case "min":
            return min(a[0], args[1][0]), min(a[1], args[1][1])
        case "softplus":
            return 0.0, _ok(0.0, max(a[1], 0.0) + _LOG2)[1]
        case "logaddexp":
            return _ok(max(a[0], args[1][0]), max(a[1], args[1][1]) + _LOG2)
    raise _Unproven  # a registered function: nothing is known about it


def _count(e: Sum | Max, sizes: Mapping[str, int]) -> int:
    n = 1
    for iv in e.indices:
        n *= dim_value(iv.extent, sizes)
    return n


class _Scope:
    """What reads need: each tensor's concrete shape, each index variable's largest extent."""

    def __init__(self, sizes: Mapping[str, int], shapes: Mapping[str, tuple[int, ...]],
                 extents: Mapping[str, int]) -> None:
        self.sizes, self.shapes, self.extents = sizes, shapes, extents

    def in_range(self, x: Access) -> bool:
        """Whether every point of ``x`` reads inside its tensor at an integer position (else
        the read may be an ordinary 0)."""
        shape = self.shapes.get(x.name)
        if shape is None or len(shape) != len(x.indices):
            return False
        for a, n in zip(x.indices, shape, strict=True):
            if not a.is_integral():
                return False
            lo = hi = a.const + sum(c * self.sizes[v] for v, c in a.sizes)
            for v, c in a.index:
                ext = self.extents.get(v)
                if ext is None or ext <= 0:
                    return False
                lo += min(0, c * (ext - 1))
                hi += max(0, c * (ext - 1))
            if lo < 0 or hi > n - 1:
                return False
        return True


def _extents(s: Statement, sizes: Mapping[str, int]) -> dict[str, int]:
    """Each index variable of ``s`` (generators and bound indices) with its largest extent."""
    out: dict[str, int] = {}

    def note(ivs: Any) -> None:
        for iv in ivs:
            n = dim_value(iv.extent, sizes)
            out[iv.name] = max(out.get(iv.name, n), n)

    note(s.indices)
    stack: list[Expr] = [s.body]
    while stack:
        x = stack.pop()
        match x:
            case Binary(_, lhs, rhs):
                stack += (lhs, rhs)
            case Neg(arg) | Pow(arg, _):
                stack.append(arg)
            case Call(_, args):
                stack += args
            case Sum(ivs, body) | Max(ivs, body):
                note(ivs)
                stack.append(body)
    return out


def _bound(e: Expr, known: Mapping[str, Interval], scope: _Scope) -> Interval:
    """The interval of ``e`` at every point (iteratively: expressions may be deep)."""
    done: dict[int, Interval] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, ready = stack.pop()
        if id(x) in done:
            continue
        kids: tuple[Expr, ...] = ()
        match x:
            case Binary(_, lhs, rhs):
                kids = (lhs, rhs)
            case Neg(arg) | Pow(arg, _):
                kids = (arg,)
            case Call(_, args):
                kids = args
            case Sum(_, body) | Max(_, body):
                kids = (body,)
        if kids and not ready:
            stack.append((x, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        done[id(x)] = _node(x, [done[id(k)] for k in kids], known, scope)
    return done[id(e)]


def _node(x: Expr, kids: list[Interval], known: Mapping[str, Interval],
          scope: _Scope) -> Interval:
    match x:
        case Const(v):
            return _ok(v, v)
        case Access(name):
            got = known.get(name)
            if got is None:
                raise _Unproven
            # an out-of-range or fractional read is 0
            return got if scope.in_range(x) else _with_zero(got)
        case Bracket():
            return 0.0, 1.0
        case Neg():
            return -kids[0][1], -kids[0][0]
        case Pow(_, k):
            return _pow(kids[0], k)
        case Call(fn):
            return _call(fn, kids)
        case Sum():
            n = _count(x, scope.sizes)  # n terms, each in the body's interval (0 if none)
            lo, hi = kids[0] if n else (0.0, 0.0)
            return _ok(n * lo, n * hi)
        case Max():
            if not _count(x, scope.sizes):
                raise _Unproven  # an empty range's maximum is -inf
            return kids[0]
        case Binary(op, lhs, rhs):
            a, b = kids
            if op == "+":
                return _ok(a[0] + b[0], a[1] + b[1])
            if op == "-":
                return _ok(a[0] - b[1], a[1] - b[0])
            if op == "*":
                if lhs is rhs or isinstance(lhs, Access) and lhs == rhs:
                    return _pow(a, 2.0)
                return _mul(a, b)
            return _mul(a, _recip(b))
    raise _Unproven


def program_is_finite(prog: Program, args: Mapping[str, Interval],
                      sizes: Mapping[str, int]) -> bool:
    """Whether every value ``prog`` computes is finite when each tensor argument lies in its
    interval in ``args`` (relations need none): True is a proof, False means "not proven"
    (also for programs with folds, which the analysis does not enter)."""
    known: dict[str, Interval] = {}
    for p in prog.params:
        if p.kind == "relation":
            known[p.name] = (0.0, 1.0)
        elif p.name in args:
            lo, hi = args[p.name]
            if not (-LIMIT <= lo <= hi <= LIMIT):
                return False
            known[p.name] = (float(lo), float(hi))
        else:
            return False
    try:
        shapes = {p.name: tuple(dim_value(d, sizes) for d in p.shape) for p in prog.params}
        for s in prog.statements:
            if not isinstance(s, Statement):
                return False  # a fold
            shapes[s.name] = tuple(dim_value(iv.extent, sizes) for iv in s.indices)
            known[s.name] = _bound(s.body, known, _Scope(sizes, shapes, _extents(s, sizes)))
        for o in prog.outputs:
            _bound(o, known, _Scope(sizes, shapes, {}))
    except (_Unproven, KeyError):
        return False
    return True
