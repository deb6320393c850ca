"""Diagnostic evaluation orders of the reference evaluator (:mod:`eqsat_ad.ir.labeled`).

None of these is the semantics (docs/semantics.md): each is a context manager under which the
reference evaluates a program in another order, or with small moves, that the semantics allows a
backend to use (a reassociated finite sum or product, an overflow of a finite intermediate). The
fuzzer's rounding model (:mod:`eqsat_ad.fuzz.rounding`) evaluates the reference under each to
tell rounding from a defect; one ``contextvars`` setting per diagnostic, read by the evaluator.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

__all__ = ["PRODUCT_ORDERS", "every_infinity_saturates", "every_product_reordered",
           "every_read_rounded", "every_sum_finite_first", "every_sum_rounded",
           "every_sum_sequential", "every_sum_split", "every_zero_absorbs"]

_ZERO_ABSORBS: contextvars.ContextVar[bool] = contextvars.ContextVar("zero_absorbs", default=False)
_SATURATES: contextvars.ContextVar[float] = contextvars.ContextVar("saturates", default=0.0)
_READ_ROUNDING: contextvars.ContextVar[tuple[np.random.Generator, float] | None] = \
    contextvars.ContextVar("read_rounding", default=None)
_SUM_ROUNDING: contextvars.ContextVar[tuple[np.random.Generator, float] | None] = \
    contextvars.ContextVar("sum_rounding", default=None)
_PRODUCT_ORDER: contextvars.ContextVar[str | None] = \
    contextvars.ContextVar("product_order", default=None)
_SUMS_SPLIT: contextvars.ContextVar[bool] = contextvars.ContextVar("sums_split", default=False)
_FINITE_FIRST: contextvars.ContextVar[bool] = \
    contextvars.ContextVar("finite_first", default=False)
_SEQUENTIAL: contextvars.ContextVar[bool] = contextvars.ContextVar("sequential", default=False)
_SUMMED: contextvars.ContextVar[frozenset[str]] = \
    contextvars.ContextVar("summed", default=frozenset())
PRODUCT_ORDERS = ("written", "constants-first", "reversed", "summed-first", "reciprocals",
                  "scalars-last", "distributed")


@contextlib.contextmanager
def _bound[T](var: contextvars.ContextVar[T], value: T) -> Iterator[None]:
    """``var`` set to ``value`` for the block (each diagnostic below is one such setting)."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


@contextlib.contextmanager
def every_zero_absorbs() -> Iterator[None]:
    """Evaluate with every 0.0 factor absorbing inf and nan (``0.0 * inf = 0``), not only strong
    zeros: NOT the semantics (docs/semantics.md), a diagnostic. The fuzzer uses it to tell the
    specified chain rule's ``0 * inf = nan`` (class 2 of experiments/results/fuzz.md) from a
    gradient that is wrong for another reason."""
    with _bound(_ZERO_ABSORBS, True):
        yield


@contextlib.contextmanager
def every_infinity_saturates(magnitude: float = 1e100) -> Iterator[None]:
    """Evaluate with every inf that a division, a power or a function makes replaced by
    ±``magnitude``: NOT the semantics, a diagnostic. The fuzzer uses it to tell an infinite
    local derivative that meets an exact cancellation (``sqrt'(0) a - sqrt'(0) a``: inf - inf,
    nan under IEEE as in JAX; the chain rule's IEEE of docs/semantics.md) from a gradient that
    is wrong for another reason. (A moderate ``magnitude``, such as 2 ** 30, absorbs no term of
    ordinary size added before the cancellation: ``1 + M - M`` is 1 only for M below 2 ** 53.)"""
    if not magnitude > 0:
        raise ValueError(f"the saturation magnitude must be positive, got {magnitude!r}")
    with _bound(_SATURATES, float(magnitude)):
        yield


def _saturated(data: np.ndarray) -> np.ndarray:
    if m := _SATURATES.get():
        return np.where(np.isinf(data), np.copysign(m, data), data)
    return data


@contextlib.contextmanager
def every_read_rounded(rng: np.random.Generator, rel: float) -> Iterator[None]:
    """Evaluate with every entry of every read of a tensor (each access, each time it is
    evaluated) multiplied by its own ``1 + rel * u``, ``u`` uniform in [-1, 1) from ``rng``:
    NOT the semantics, a diagnostic. It models the rounding of a reassociated sum (which is the
    exact sum of its terms each moved by a few ulps, docs/semantics.md): two reads of one entry
    move apart, so ``x - x`` is no longer exactly 0 and ``a - (a - b)`` no longer exactly 0 where
    ``a`` absorbs ``b``. A read of 0.0, inf or nan, and every strong zero, stays what it is."""
    with _bound(_READ_ROUNDING, (rng, rel)):
        yield


@contextlib.contextmanager
def every_sum_rounded(rng: np.random.Generator, rel: float) -> Iterator[None]:
    """Evaluate with every entry of the result of every ``+`` and ``-`` multiplied by its own
    ``1 + rel * u`` as :func:`every_read_rounded` does for reads: NOT the semantics, a
    diagnostic. It models a sum that rounding has absorbed a term into and that a rewrite exact
    in real arithmetic removes: ``(a + 100) - (b + 100)`` is exactly 0 where 100 absorbs both
    ``a = 1e-300`` and ``b = 5e-324``, but ``a - b``, what cancelling the 100s gives, is not;
    with each sum moved on its own the difference is no longer exactly 0 either. A result of
    0.0, inf or nan, and a strong zero, stays what it is."""
    with _bound(_SUM_ROUNDING, (rng, rel)):
        yield


@contextlib.contextmanager
def every_sum_split() -> Iterator[None]:
    """Evaluate every Σ of a sum or difference as the sum or difference of the Σs of its terms
    (``Σ_i (a - b)`` as ``Σ_i a - Σ_i b``), as the backend's normal form runs a statement's terms
    each summed on its own: NOT the semantics, a diagnostic. In exact arithmetic the two are
    equal; in floating point a term absorbed by a large one and cancelled with it shows
    (``Σ_i (x[i] - c[i])`` with ``c`` a copy of ``x`` but for one 1e154 beside -1e300: 1e154
    per term, 0 split). Strong zeros are where they were: a Σ is one where each term is."""
    with _bound(_SUMS_SPLIT, True):
        yield


@contextlib.contextmanager
def every_product_reordered(order: str) -> Iterator[None]:
    """Evaluate every product of three or more factors, and every Σ of a product, in the given
    order of its factors (:data:`PRODUCT_ORDERS`), each step an IEEE product: NOT the
    semantics, a diagnostic. The reference multiplies a product's factors left to right, but a
    Σ of a product of finite factors by an einsum path of NumPy's choosing; the backend's
    normal form multiplies a term's constant coefficient first. Where an intermediate product
    of finite values overflows or underflows in one order and not in another
    (``2 x (0.5 / x) x`` at 1e154, ``0.125 · 5e-324 · inf``), the order decides inf, nan or a
    finite value: rounding, as docs/semantics.md allows a backend to reassociate finite
    products. Orders: ``written`` (left to right, no einsum), ``constants-first`` (the
    literal factors first, a quotient by a non-zero literal ``e / c`` taken as the factor
    ``1 / c``, then the others left to right: the normal form's ``coef · Π factors``; literals
    times one Σ scale each of its terms, the normal form's ``coef · Σ_J Π factors``),
    ``reversed`` (right to left), ``summed-first`` (inside a Σ, the factors that read a summed
    index first, then the others, each group as written: the strict code's product under a
    sum, a risky factor free of the summed indices last), ``reciprocals`` (as ``summed-first``,
    with every quotient ``a / d`` taken as the factors of ``a`` and the factor ``d ** -1``: the
    normal form's powers, whose reciprocal joins a product outside the quotient, so ``Σ t · (x
    · (a / d))`` at ``t = 0``, ``d = 1e-308`` is 0, not ``0 · inf``), ``scalars-last`` (the
    factors that read a summed index, then the others that have an index, then those that have
    none, each group as written: the strict code contracts the indexed factors and multiplies
    a scalar statement into the result, so ``Σ_j s[j, i] · (z · a[i])`` at ``s = a = 1e300``,
    ``z = 0`` is nan, ``s · a`` overflowing, where the other orders give 0: fuzz 3009 #867),
    ``distributed`` (a product of one Σ with other factors as the Σ of the others, as written,
    times the Σ's body: the fast code's normal form, which flattens ``w · Σ_j x[j]`` into ``Σ_j
    w x[j]``, so ``x ** -2 · Σ x x`` at ``x = -1e300`` is ``0 · x · x = 0``, not ``0 · inf``:
    fuzz 3018 #832). Strong zeros stay strong whatever the order."""
    if order not in PRODUCT_ORDERS:
        raise ValueError(f"unknown product order {order!r}: one of {PRODUCT_ORDERS}")
    with _bound(_PRODUCT_ORDER, order):
        yield


@contextlib.contextmanager
def every_sum_finite_first() -> Iterator[None]:
    """Evaluate every chain of ``+`` and ``-`` (``a + b - c + ...``, flattened through both) with
    its finite terms added first, entry by entry, in the written order, and its infinite or nan
    terms after them: NOT the semantics, a diagnostic. The backend's normal form merges like
    terms and adds a statement's terms in its own order; where finite terms overflow together
    and meet an infinite one (``-inf + 1e308 + 1e308`` is -inf as written, ``(1e308 + 1e308) -
    inf`` is nan), the order decides: rounding, as docs/semantics.md allows a backend to
    reassociate finite sums. Strong zeros are where they were: a chain is one where every term
    is."""
    with _bound(_FINITE_FIRST, True):
        yield


@contextlib.contextmanager
def every_sum_sequential() -> Iterator[None]:
    """Evaluate every Σ by adding its terms one after another in the order of its indices (the
    first index outermost), not as NumPy sums (pairwise, or an einsum path): NOT the semantics,
    a diagnostic. The backend unrolls a small Σ as such a chain of adds (``C[0, 0] + C[0, 1] +
    ...``) and a loop nest accumulates in that order; where terms of very different size absorb
    one another (``-3 + 1e300 + 1e154 - 1e300``), the order decides how much of the small ones
    survives: rounding, as docs/semantics.md allows a backend to reassociate finite sums."""
    with _bound(_SEQUENTIAL, True):
        yield
