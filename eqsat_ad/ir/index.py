"""Sizes, index variables and affine index expressions.

A *size* (dimension) is a non-negative integer or a SymPy symbol such as ``N``; size symbols are
bound from the shapes of a program's arguments. An *affine index expression* is
``c0 + Σ c_v · v`` where each ``v`` is an index variable or a size and each coefficient is a
rational number (integers in the common case; ``k/2`` appears when strides are inverted, and a
fractional index reads 0, as in the paper's reference language).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import sympy

Dim = int | sympy.Symbol
Coeff = Fraction


@cache
def size(name: str) -> sympy.Symbol:
    """The size symbol called ``name`` (always built with the same assumptions)."""
    return sympy.Symbol(name, integer=True, positive=True)


def as_dim(d: Dim | str) -> Dim:
    """Normalize a dimension given as int, str or symbol."""
    if isinstance(d, bool):
        raise TypeError("a dimension cannot be a bool")
    if isinstance(d, int):
        if d < 0:
            raise ValueError(f"a dimension must be non-negative, got {d}")
        return d
    if isinstance(d, str):
        return size(d)
    if isinstance(d, sympy.Symbol):
        return size(d.name)
    if isinstance(d, sympy.Integer):
        return int(d)
    raise TypeError(f"not a dimension: {d!r}")


def dim_str(d: Dim) -> str:
    return str(d) if isinstance(d, int) else d.name


def dim_value(d: Dim, sizes: Mapping[str, int]) -> int:
    """The concrete value of a dimension under a binding of size names."""
    if isinstance(d, int):
        return d
    return sizes[d.name]


@dataclass(frozen=True, slots=True)
class IndexVar:
    """An index variable with its extent: it ranges over ``0 .. extent-1``."""

    name: str
    extent: Dim

    def __post_init__(self) -> None:
        object.__setattr__(self, "extent", as_dim(self.extent))

    def __str__(self) -> str:
        return f"{self.name}: {dim_str(self.extent)}"


def _coeff(c: int | Fraction) -> Fraction:
    return c if isinstance(c, Fraction) else Fraction(c)


@dataclass(frozen=True, slots=True)
class Affine:
    """``const + Σ coeff·index + Σ coeff·size`` with rational coefficients.

    ``index`` and ``sizes`` are tuples of ``(name, coefficient)`` sorted by name with no zero
    coefficients, so structurally equal affine expressions compare and hash equal.
    """

    index: tuple[tuple[str, Fraction], ...] = ()
    sizes: tuple[tuple[str, Fraction], ...] = ()
    const: Fraction = Fraction(0)

    @staticmethod
    def make(
        index: Mapping[str, int | Fraction] | None = None,
        sizes: Mapping[str, int | Fraction] | None = None,
        const: int | Fraction = 0,
    ) -> Affine:
        ix = tuple(sorted((k, _coeff(v)) for k, v in (index or {}).items() if v != 0))
        sz = tuple(sorted((k, _coeff(v)) for k, v in (sizes or {}).items() if v != 0))
        return Affine(ix, sz, _coeff(const))

    @staticmethod
    def var(name: str) -> Affine:
        return Affine(((name, Fraction(1)),), (), Fraction(0))

    @staticmethod
    def constant(c: int | Fraction) -> Affine:
        return Affine((), (), _coeff(c))

    @staticmethod
    def of_dim(d: Dim) -> Affine:
        if isinstance(d, int):
            return Affine.constant(d)
        return Affine((), ((d.name, Fraction(1)),), Fraction(0))

    # --- queries -------------------------------------------------------------------------------
    def free_indices(self) -> frozenset[str]:
        return frozenset(n for n, _ in self.index)

    def size_names(self) -> frozenset[str]:
        return frozenset(n for n, _ in self.sizes)

    def coeff(self, name: str) -> Fraction:
        for n, c in self.index:
            if n == name:
                return c
        return Fraction(0)

    def is_constant(self) -> bool:
        return not self.index and not self.sizes

    def is_integral(self) -> bool:
        """All coefficients integers (so the value is an integer for integer inputs)."""
        return all(c.denominator == 1 for _, c in self.index + self.sizes) and (
            self.const.denominator == 1
        )

    def as_var(self) -> str | None:
        """The index name if this is exactly a single index variable."""
        if len(self.index) == 1 and not self.sizes and self.const == 0 and self.index[0][1] == 1:
            return self.index[0][0]
        return None

    # --- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other: Affine | int | Fraction) -> Affine:
        if not isinstance(other, Affine):
            other = Affine.constant(other)
        ix = dict(self.index)
        for n, c in other.index:
            ix[n] = ix.get(n, Fraction(0)) + c
        sz = dict(self.sizes)
        for n, c in other.sizes:
            sz[n] = sz.get(n, Fraction(0)) + c
        return Affine.make(ix, sz, self.const + other.const)

    __radd__ = __add__

    def __neg__(self) -> Affine:
        return self.scale(-1)

    def __sub__(self, other: Affine | int | Fraction) -> Affine:
        if not isinstance(other, Affine):
            other = Affine.constant(other)
        return self + (-other)

    def __rsub__(self, other: int | Fraction) -> Affine:
        return Affine.constant(other) - self

    def scale(self, k: int | Fraction) -> Affine:
        k = _coeff(k)
        return Affine.make(
            {n: c * k for n, c in self.index}, {n: c * k for n, c in self.sizes}, self.const * k
        )

    def substitute(self, mapping: Mapping[str, Affine]) -> Affine:
        """Replace index variables by affine expressions."""
        if not any(n in mapping for n, _ in self.index):
            return self
        out = Affine((), self.sizes, self.const)
        for n, c in self.index:
            term = mapping[n].scale(c) if n in mapping else Affine(((n, c),), (), Fraction(0))
            out = out + term
        return out

    def rename(self, mapping: Mapping[str, str]) -> Affine:
        return self.substitute({k: Affine.var(v) for k, v in mapping.items()})

    def evaluate(self, index: Mapping[str, int], sizes: Mapping[str, int]) -> Fraction:
        v = self.const
        for n, c in self.index:
            v += c * index[n]
        for n, c in self.sizes:
            v += c * sizes[n]
        return v

    def to_sympy(self) -> sympy.Expr:
        e: sympy.Expr = sympy.Rational(self.const.numerator, self.const.denominator)
        for n, c in self.index:
            e += sympy.Rational(c.numerator, c.denominator) * sympy.Symbol(n, integer=True)
        for n, c in self.sizes:
            e += sympy.Rational(c.numerator, c.denominator) * size(n)
        return e

    # --- printing ------------------------------------------------------------------------------
    def __str__(self) -> str:
        parts: list[tuple[bool, str]] = []  # (negative, text)
        for n, c in self.index + self.sizes:
            a = abs(c)
            if a == 1:
                text = n
            elif a.denominator == 1:
                text = f"{a.numerator}*{n}"
            elif a.numerator == 1:
                text = f"{n}/{a.denominator}"
            else:
                text = f"{a.numerator}*{n}/{a.denominator}"
            parts.append((c < 0, text))
        if self.const != 0 or not parts:
            a = abs(self.const)
            text = str(a.numerator) if a.denominator == 1 else f"{a.numerator}/{a.denominator}"
            parts.append((self.const < 0, text))
        out = ("-" if parts[0][0] else "") + parts[0][1]
        for neg, text in parts[1:]:
            out += (" - " if neg else " + ") + text
        return out
