"""A small, fast polynomial in the size symbols, and the asymptotic order on costs.

The optimizer prices many candidate programs, and SymPy arithmetic is slow, so the cost model
computes with :class:`Poly` (a sparse map monomial -> rational coefficient) and converts to SymPy
only for display (:meth:`Poly.to_sympy`). Functions here accept either form.

Order (:func:`compare`): a cost of higher total degree is more expensive; between equal degrees
the terms of highest degree ("leading terms") decide when one dominates the other term by term;
otherwise the concrete values at the caller's ``sizes`` decide; without sizes, the leading terms
with every size equal, then the lower-degree terms in the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

import sympy

from ..ir.errors import EqsatError
from ..ir.index import Dim, size

Monomial = tuple[tuple[str, int], ...]  # ((size name, exponent), ...) sorted by name


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    if not a:
        return b
    if not b:
        return a
    d = dict(a)
    for n, e in b:
        d[n] = d.get(n, 0) + e
    return tuple(sorted(d.items()))


def _mono_degree(m: Monomial) -> int:
    return sum(e for _, e in m)


class Poly:
    """An immutable polynomial with rational coefficients in named size symbols."""

    __slots__ = ("_terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, Fraction | int] | None = None) -> None:
        clean: dict[Monomial, Fraction] = {}
        for m, c in (terms or {}).items():
            if c != 0:
                clean[m] = Fraction(c)
        self._terms = clean
        self._hash: int | None = None

    # --- construction --------------------------------------------------------------------------
    @staticmethod
    def const(c: int | Fraction) -> Poly:
        return Poly({(): c})

    @staticmethod
    def symbol(name: str) -> Poly:
        return Poly({((name, 1),): 1})

    @staticmethod
    def of_dim(d: Dim) -> Poly:
        """The extent of an index: an integer or a size symbol."""
        if isinstance(d, int):
            return Poly.const(d)
        return Poly.symbol(d.name)

    @staticmethod
    def product_of_dims(dims: Iterable[Dim]) -> Poly:
        out = ONE
        for d in dims:
            out = out * Poly.of_dim(d)
        return out

    @staticmethod
    def from_sympy(e: sympy.Expr | int) -> Poly:
        """Convert a SymPy polynomial in size symbols (raises on anything else)."""
        e = sympy.sympify(e)
        syms = sorted(e.free_symbols, key=lambda s: s.name)
        if not syms:
            return Poly.const(_rational(e))
        try:
            p = sympy.Poly(sympy.expand(e), *syms)
        except sympy.PolynomialError as exc:
            raise EqsatError(f"not a polynomial in the sizes: {e}") from exc
        terms: dict[Monomial, Fraction] = {}
        for exps, c in p.terms():
            mono = tuple((s.name, k) for s, k in zip(syms, exps, strict=True) if k)
            terms[mono] = _rational(c)
        return Poly(terms)

    # --- queries -------------------------------------------------------------------------------
    @property
    def terms(self) -> Mapping[Monomial, Fraction]:
        return self._terms

    def is_zero(self) -> bool:
        return not self._terms

    def is_constant(self) -> bool:
        return all(not m for m in self._terms)

    def constant_term(self) -> Fraction:
        return self._terms.get((), Fraction(0))

    def degree(self) -> int:
        """Total degree (0 for constants and for the zero polynomial)."""
        return max((_mono_degree(m) for m in self._terms), default=0)

    def leading(self) -> Poly:
        """The terms of highest total degree."""
        d = self.degree()
        return Poly({m: c for m, c in self._terms.items() if _mono_degree(m) == d})

    def size_names(self) -> frozenset[str]:
        return frozenset(n for m in self._terms for n, _ in m)

    def evaluate(self, sizes: Mapping[str, int | float]) -> Fraction | float:
        """Value at concrete sizes (exact when the sizes are integers)."""
        total: Fraction | float = Fraction(0)
        for m, c in self._terms.items():
            v: Fraction | float = c
            for n, e in m:
                if n not in sizes:
                    raise EqsatError(f"no value given for the size {n!r}")
                v = v * sizes[n] ** e
            total += v
        return total

    def to_sympy(self) -> sympy.Expr:
        parts = []
        for m, c in self._terms.items():
            term: sympy.Expr = sympy.Rational(c.numerator, c.denominator)
            for n, e in m:
                term = term * size(n) ** e
            parts.append(term)
        return sympy.Add(*parts)

    # --- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other: Poly | int | Fraction) -> Poly:
        other = _as_poly(other)
        if not other._terms:
            return self
        if not self._terms:
            return other
        d = dict(self._terms)
        for m, c in other._terms.items():
            d[m] = d.get(m, Fraction(0)) + c
        return Poly(d)

    __radd__ = __add__

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self._terms.items()})

    def __sub__(self, other: Poly | int | Fraction) -> Poly:
        return self + (-_as_poly(other))

    def __rsub__(self, other: int | Fraction) -> Poly:
        return _as_poly(other) - self

    def __mul__(self, other: Poly | int | Fraction) -> Poly:
        other = _as_poly(other)
        if self is ONE:
            return other
        if other is ONE:
            return self
        d: dict[Monomial, Fraction] = {}
        for m1, c1 in self._terms.items():
            for m2, c2 in other._terms.items():
                m = _mono_mul(m1, m2)
                d[m] = d.get(m, Fraction(0)) + c1 * c2
        return Poly(d)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int | Fraction):
            other = Poly.const(other)
        return isinstance(other, Poly) and self._terms == other._terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._terms.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"Poly({self})"

    def __str__(self) -> str:
        return str(self.to_sympy())


ZERO = Poly()
ONE = Poly.const(1)


def _rational(c: sympy.Expr) -> Fraction:
    c = sympy.nsimplify(c) if not c.is_Rational else c
    if not c.is_Rational:
        raise EqsatError(f"not a rational coefficient: {c}")
    return Fraction(int(c.p), int(c.q))


def _as_poly(x: Poly | sympy.Expr | int | Fraction) -> Poly:
    if isinstance(x, Poly):
        return x
    if isinstance(x, int | Fraction):
        return Poly.const(x)
    return Poly.from_sympy(x)


def as_poly(x: Poly | sympy.Expr | int | Fraction) -> Poly:
    """Accept a Poly, a SymPy polynomial in size symbols, or a number."""
    return _as_poly(x)


# ================================================================================================
# Asymptotic helpers
# ================================================================================================


def degree(cost: Poly | sympy.Expr | int) -> int:
    """Total degree of a cost polynomial (``N**2*R`` has degree 3)."""
    return _as_poly(cost).degree()


def leading_terms(cost: Poly | sympy.Expr | int) -> sympy.Expr:
    """The terms of highest total degree, as SymPy."""
    return _as_poly(cost).leading().to_sympy()


def big_o(cost: Poly | sympy.Expr | int) -> str:
    """``O(·)`` class: the monomials of highest total degree, coefficients dropped.

    ``3*N**2 + N*R + 5*N`` → ``"O(N**2 + N*R)"``; constants (and zero) → ``"O(1)"``.
    """
    lead = _as_poly(cost).leading()
    monos = [m for m, c in lead.terms.items() if c > 0 and m] or [
        m for m in lead.terms if m
    ]
    if not monos:
        return "O(1)"
    parts = sympy.Add(*(sympy.Mul(*(size(n) ** e for n, e in m)) for m in monos))
    return f"O({parts})"


def _sign(x: Fraction | float) -> int:
    return (x > 0) - (x < 0)


def compare(
    a: Poly | sympy.Expr | int,
    b: Poly | sympy.Expr | int,
    sizes: Mapping[str, int] | None = None,
) -> int:
    """Asymptotic order of two costs: -1 if ``a`` is cheaper, 1 if dearer, 0 if tied.

    Decided by the difference ``a - b``, highest degree first: its terms of highest degree
    decide when they all have one sign (a higher total degree loses; ``3*N**2`` beats
    ``2*N**2``); when their signs differ, the values at ``sizes`` decide when given, else those
    terms with all sizes equal, then the terms of the next degree the same way. (Working on the
    difference keeps sizes with negative lower terms, ``H*W - W``, in order.)
    """
    d = _as_poly(a) - _as_poly(b)
    while not d.is_zero():
        lead = d.leading()
        signs = {_sign(c) for c in lead.terms.values()}
        if len(signs) == 1:
            return signs.pop()
        if sizes is not None:
            return _sign(d.evaluate(sizes))
        s = _sign(sum(lead.terms.values(), Fraction(0)))
        if s:
            return s
        d = d - lead
    return 0


def poly_max(
    polys: Iterable[Poly], sizes: Mapping[str, int] | None = None, pick: int = 1
) -> Poly:
    """The largest cost by :func:`compare` (``pick=-1``: the smallest); zero for no costs."""
    best: Poly | None = None
    for p in polys:
        if best is None or compare(p, best, sizes) == pick:
            best = p
    return ZERO if best is None else best
