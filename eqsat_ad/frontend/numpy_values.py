"""Values the NumPy translator computes with while it reads a function.

The translator never runs the user's code. It interprets the function's syntax tree over symbolic
values:

* Python statics (``int``, ``float``, ``bool``, ``None``, ``str``, tuples, slices, modules,
  functions) are evaluated as Python would, at translation time ("specialization");
* :class:`~eqsat_ad.ir.index.Affine` stands for an integer that is not a Python constant: a
  symbolic size (``N - 1``) or the index of a loop being turned into a sum;
* :class:`PredVal` is a comparison of such integers (an Iverson bracket in waiting);
* :class:`TVal` is an array (or a 0-d array): a scalar IR expression with one free index variable
  per axis. Elementwise operations compose bodies, indexing substitutes affine indices,
  reductions wrap a ``Sum``.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Pred,
    Sum,
    substitute,
    substitute_pred,
)
from ..ir.index import Affine, Dim, dim_str, size


@dataclass(frozen=True, slots=True)
class TVal:
    """An array value: ``shape``, one free index name per axis, and the element expression.

    ``base`` names the materialized array this value is a view of (NumPy basic indexing and
    transposes return views), so that in-place updates can be checked for aliasing. ``boolean``
    marks 0/1 values made by comparisons or relations (allowed as ``np.where`` conditions).
    """

    shape: tuple[Dim, ...]
    axes: tuple[str, ...]
    body: Expr
    base: str | None = None
    boolean: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def at(self, indices: Sequence[Affine]) -> Expr:
        """The element at the given affine indices (one per axis)."""
        return subst(self.body, dict(zip(self.axes, indices, strict=True)))


class NotSummable(Exception):
    """A loop cannot become a sum; the translator unrolls it instead (``reason`` says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PredVal:
    """A comparison of integers that depends on a summed loop index: ``[pred]`` as a value."""

    pred: Pred


@dataclass(frozen=True, slots=True)
class IndexChoice:
    """``min``/``max`` of integer index expressions (``min(i + 1, n - 1)``): each candidate
    with the comparisons under which it is the one chosen (the first of equal ones)."""

    pieces: tuple[tuple[tuple[Pred, ...], Affine], ...]

    @staticmethod
    def of(fn: str, args: Sequence[Affine]) -> IndexChoice:
        better, tie = ("<", "<=") if fn == "min" else (">", ">=")
        pieces = []
        for k, a in enumerate(args):
            conds = tuple(Cmp(better if m < k else tie, a, b) for m, b in enumerate(args) if m != k)
            pieces.append((conds, a))
        return IndexChoice(tuple(pieces))


@dataclass(frozen=True, slots=True)
class NpFunc:
    """A NumPy function referred to by the user's code (``np.exp``, ``from numpy import dot``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Method:
    """A bound method of an array value (``x.sum``), called later."""

    obj: TVal
    name: str


@dataclass(frozen=True, slots=True)
class Builtin:
    """A Python built-in the translator understands (``range``, ``len``, ``abs``, ...)."""

    name: str


@dataclass(frozen=True, slots=True)
class EqsatFunc:
    """``stop_gradient`` or a function registered with a custom adjoint: a scalar ``Call``."""

    name: str


def subst_affine(a: Affine, m: Mapping[str, Affine]) -> Affine:
    """``a`` with index variables replaced (fast path for a bare variable, the common case)."""
    if len(a.index) == 1 and not a.sizes and a.const == 0 and a.index[0][1] == 1:
        return m.get(a.index[0][0], a)
    if not any(n in m for n, _ in a.index):
        return a
    return a.substitute(m)


def subst(e: Expr, m: Mapping[str, Affine]) -> Expr:
    """Substitution of index variables, as :func:`eqsat_ad.ir.expr.substitute` but faster.

    The translator's index names are fresh, so a binder never captures a replacement's variable;
    should one, the IR's capture-avoiding substitution takes over.
    """
    if not m:
        return e
    match e:
        case Const():
            return e
        case Access(name, idx):
            return Access(name, tuple(subst_affine(a, m) for a in idx), e.loc)
        case Bracket(p):
            return Bracket(substitute_pred(p, m), e.loc)
        case Binary(op, lhs, rhs):
            return Binary(op, subst(lhs, m), subst(rhs, m), e.loc)
        case Neg(arg):
            return Neg(subst(arg, m), e.loc)
        case Pow(base, k):
            return Pow(subst(base, m), k, e.loc)
        case Call(fn, args):
            return Call(fn, tuple(subst(a, m) for a in args), e.loc)
        case Sum(ivs, body) | Max(ivs, body):
            bound = {iv.name for iv in ivs}
            inner = {k: v for k, v in m.items() if k not in bound}
            if any(bound & v.free_indices() for v in inner.values()):
                return substitute(e, m)
            return type(e)(ivs, subst(body, inner), e.loc)
    raise TypeError(e)


def const(v: float) -> Const:
    return Const(float(v))


def scalar(e: Expr, boolean: bool = False) -> TVal:
    return TVal((), (), e, None, boolean)


def is_const(e: Expr, v: float | None = None) -> bool:
    return isinstance(e, Const) and (v is None or e.value == v)


# Builders that fold the identities a reader would not write by hand (0 + e, 1 * e, ...).
# Only exact identities under strong-zero multiplication are folded.


def add(a: Expr, b: Expr) -> Expr:
    if is_const(a, 0.0):
        return b
    if is_const(b, 0.0):
        return a
    if isinstance(a, Const) and isinstance(b, Const) and _foldable(a.value + b.value):
        return const(a.value + b.value)
    return Binary("+", a, b)


def sub(a: Expr, b: Expr) -> Expr:
    if is_const(b, 0.0):
        return a
    if isinstance(a, Const) and isinstance(b, Const) and _foldable(a.value - b.value):
        return const(a.value - b.value)
    if is_const(a, 0.0):
        return Neg(b)
    return Binary("-", a, b)


def _foldable(v: float) -> bool:
    """A folded constant must mean what the unfolded one does: not a 0 made of nonzero numbers
    (the literal 0 is a strong zero, docs/semantics.md), not inf or nan (no literal for them)."""
    return v != 0 and math.isfinite(v)


def mul(a: Expr, b: Expr) -> Expr:
    # The literal 0 is a strong zero: 0 * e == 0 for every e, so folding is exact.
    if is_const(a, 0.0) or is_const(b, 0.0):
        return const(0.0)
    if is_const(a, 1.0):
        return b
    if is_const(b, 1.0):
        return a
    if isinstance(a, Const) and isinstance(b, Const) and _foldable(a.value * b.value):
        return const(a.value * b.value)
    return Binary("*", a, b)


def div(a: Expr, b: Expr) -> Expr:
    if is_const(b, 1.0):
        return a
    return Binary("/", a, b)


def neg(a: Expr) -> Expr:
    if isinstance(a, Const):
        return const(-a.value)
    if isinstance(a, Neg):
        return a.arg
    return Neg(a)


def power(a: Expr, k: float) -> Expr:
    if k == 1.0:
        return a
    return Pow(a, k)


def call(fn: str, *args: Expr) -> Expr:
    return Call(fn, tuple(args))


def bracket(p: Pred) -> Expr:
    return Bracket(p)


def dim_as_affine(d: Dim) -> Affine | int:
    """A dimension as a translator value: ``int`` or a symbolic ``Affine``."""
    return d if isinstance(d, int) else Affine.of_dim(d)


def affine_as_dim(a: Affine) -> Dim | None:
    """The dimension an integer value denotes, or None when it is not an int or a bare size."""
    if a.index:
        return None
    if not a.sizes:
        c = a.const
        return int(c) if c.denominator == 1 and c >= 0 else None
    if len(a.sizes) == 1 and a.sizes[0][1] == 1 and a.const == 0:
        return size(a.sizes[0][0])
    return None


def provably_nonneg(a: Affine) -> bool:
    """``a >= 0`` for every value of its (positive integer) sizes; index variables not allowed."""
    if a.index:
        return False
    if any(c < 0 for _, c in a.sizes):
        return False
    return a.const + sum((c for _, c in a.sizes), Fraction(0)) >= 0


def shape_str(shape: Sequence[Dim]) -> str:
    inner = ", ".join(dim_str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def describe(v: Any) -> str:
    """What a translator value is, for error messages."""
    if isinstance(v, TVal):
        return f"an array of shape {shape_str(v.shape)}" if v.ndim else "a scalar"
    if isinstance(v, Affine):
        return "a loop index" if v.index else "a symbolic size"
    if isinstance(v, PredVal):
        return "an index comparison"
    if isinstance(v, NpFunc):
        return f"np.{v.name}"
    if isinstance(v, types.ModuleType):
        return f"module {v.__name__}"
    if isinstance(v, types.FunctionType):
        return f"function {v.__name__}"
    return type(v).__name__


def is_static_number(v: Any) -> bool:
    return isinstance(v, int | float | bool | np.integer | np.floating | np.bool_)


def as_int_if_const(v: Any) -> Any:
    """A constant integer value as a Python int (other values unchanged)."""
    if isinstance(v, Affine) and v.is_constant() and v.const.denominator == 1:
        return int(v.const)
    if isinstance(v, np.integer):
        return int(v)
    return v
