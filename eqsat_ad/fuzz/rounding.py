"""Whether a compiled result differs from the interpreter's only by rounding (``ill-conditioned``).

docs/semantics.md allows the rules and the backend to reassociate finite sums and products:
the result then differs from the interpreter's by rounding, and an overflow of a finite
intermediate is rounding too. A reassociated sum is the exact sum of its terms, each moved by a
few ulps (backward stability), so the values rounding can give are modelled by evaluating the
reference program again with small relative moves:

* of the inputs (each entry on its own, 1e-13 relative, three draws): an ill-conditioned
  point, e.g. ``1e154 + 1 - 1e154``;
* of every read of a tensor, each read on its own (:func:`~eqsat_ad.ir.draws.every_read_rounded`,
  1e-13 relative, two draws and their mirror images): two reads of one entry that cancel exactly
  in the interpreter's order (``Σ(B - B)``, ``a - (a - b)`` with ``a`` absorbing ``b``) but not
  once the sum is distributed; in the same draws the result of every ``+`` and ``-``
  (:func:`~eqsat_ad.ir.draws.every_sum_rounded`): a sum that absorbed a term, ``(a + 100) -
  (b + 100)`` exactly 0 where ``a - b`` (the 100s cancelled) is not, a tie of ``max`` broken;
* of the order of every product's factors (:func:`~eqsat_ad.ir.draws.every_product_reordered`:
  as written, constants first, reversed, a Σ's summed reads first, and that with every quotient
  taken as a reciprocal factor, scalars last, the factors outside a Σ multiplied into each of
  its terms first; no move): a product of
  finite values that overflows or underflows in one order and not in another
  (``2 x · x · 0.5 y`` at ``x = 1e154``; a mean
  ``Σ(x · x) / n`` whose Σ overflows while ``Σ x · x / n`` does not; ``s · t ·
  0`` against ``s · (t · 0)`` at ``s t = inf``; ``0.125 · 5e-324 · inf``; ``x ** -2 · Σ x x``
  at ``x = -1e300``, ``0 · inf`` against ``0 · x · x``), where the order
  decides inf, nan or a finite value;
* of the association of a Σ of a sum or difference (:func:`~eqsat_ad.ir.draws.every_sum_split`:
  ``Σ_i (a - b)`` as ``Σ_i a - Σ_i b``, the normal form's terms each summed on its own): a term
  absorbed by a large one and cancelled with it, exactly 0 split where it is not per term;
* of the order of every chain of ``+`` and ``-``
  (:func:`~eqsat_ad.ir.draws.every_sum_finite_first`: each entry's finite terms first):
  like terms merged before an infinite one, ``(1e308 + 1e308) - inf`` nan where ``-inf + 1e308
  + 1e308`` is -inf;
* of the order of every Σ's terms (:func:`~eqsat_ad.ir.draws.every_sum_sequential`: one after
  another, as an unrolled Σ or a loop nest adds them, not NumPy's pairwise sum): small terms
  absorbed by 1e300 in one order and kept in the other.

A result is ``ill-conditioned`` (not a defect) only where it stays inside what those draws
show, entry by entry: a nan or ±inf of the compiled result must be one that the reference or a
draw has there, and a finite value must lie no farther from the reference than the farthest
draw (where the reference is not finite: within the span of the draws' finite values;
unbounded toward +inf or -inf where one of them overflows to it, and on both sides at a pole:
an infinite reference whose draws are finite of both signs, a quotient by a sum that rounding
decides around 0), up to the comparison's tolerance (relative to the finite bounds, so an
unbounded side does not open the other). A wrong value at a well-conditioned point, or a kind
no rounding gives (a 0 where every draw is nan), stays a defect.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.program import Program
from .compare import RTOL

__all__ = ["MOVE", "rounded_results", "within_rounding"]

MOVE = 1e-13  # relative move of an input entry or of a read (about 1000 ulps)


def rounded_results(reference: Program, inputs: dict[str, Any]) -> list[Any] | None:
    """The reference's results under the moves of the module docstring (``None``: a draw
    failed, no diagnosis)."""
    from ..ir.draws import (
        PRODUCT_ORDERS,
        every_product_reordered,
        every_read_rounded,
        every_sum_finite_first,
        every_sum_rounded,
        every_sum_sequential,
        every_sum_split,
    )
    from ..ir.interpreter import evaluate

    out: list[Any] = []
    rng = np.random.default_rng(0)
    try:
        for _ in range(3):
            moved: dict[str, Any] = {}
            for k, v in inputs.items():
                a = np.asarray(v)
                if a.dtype.kind != "f":
                    moved[k] = v
                    continue
                b = a * (1 + MOVE * rng.uniform(-1.0, 1.0, size=a.shape))
                moved[k] = float(b) if a.ndim == 0 else b
            out.append(evaluate(reference, **moved))
        for seed in (1, 2):
            for sign in (1.0, -1.0):  # the same draw mirrored: both sides of the value
                rng = np.random.default_rng(seed)
                with every_read_rounded(rng, sign * MOVE), every_sum_rounded(rng, sign * MOVE):
                    out.append(evaluate(reference, **inputs))
        for order in PRODUCT_ORDERS:
            with every_product_reordered(order):
                out.append(evaluate(reference, **inputs))
        with every_sum_split():
            out.append(evaluate(reference, **inputs))
        with every_sum_finite_first():
            out.append(evaluate(reference, **inputs))
        with every_sum_sequential():
            out.append(evaluate(reference, **inputs))
    except Exception:  # noqa: BLE001 - no diagnosis: the finding stands
        return None
    return out


def within_rounding(reference: Program, inputs: dict[str, Any], expected: Any,
                    got: Any) -> bool:
    """Whether ``got`` differs from the reference's ``expected`` only as rounding can (module
    docstring)."""
    draws = rounded_results(reference, inputs)
    return draws is not None and _inside(expected, got, draws)


def _inside(ref: Any, got: Any, draws: list[Any]) -> bool:
    if isinstance(ref, tuple) or isinstance(got, tuple):
        if not (isinstance(ref, tuple) and isinstance(got, tuple)) or len(ref) != len(got) \
                or any(not isinstance(d, tuple) or len(d) != len(ref) for d in draws):
            return False
        return all(_inside(r, g, [d[k] for d in draws])
                   for k, (r, g) in enumerate(zip(ref, got, strict=True)))
    try:
        a = np.asarray(ref, dtype=np.float64)
        b = np.asarray(got, dtype=np.float64)
        ds = [np.asarray(d, dtype=np.float64) for d in draws]
    except (TypeError, ValueError):
        return False
    if b.shape != a.shape or any(d.shape != a.shape for d in ds):
        return False
    seen = np.stack([a, *ds])  # the reference and every draw, entry by entry
    for kind in (np.isnan, np.isposinf, np.isneginf, np.isfinite):
        if (kind(b) & ~kind(seen).any(axis=0)).any():
            return False  # a kind of value no rounding of the reference gives there
    fin = np.isfinite(b)
    if not fin.any():
        return True
    finite = np.where(np.isfinite(seen), seen, np.nan)
    with np.errstate(all="ignore"):
        lo, hi = np.fmin.reduce(finite, axis=0), np.fmax.reduce(finite, axis=0)
        # around a finite reference: as far on either side as the farthest draw (a few draws
        # of a value that rounding makes chaotic, cos of 1e15, need not bracket it)
        r = np.maximum(a - lo, hi - a)
        lo, hi = np.where(np.isfinite(a), a - r, lo), np.where(np.isfinite(a), a + r, hi)
        # a pole: an infinite reference whose draws are finite of both signs (a quotient by a
        # sum that rounding decides around 0, 1 / (Σ B - Σ B)) may be any finite value
        pole = ~np.isfinite(a) & (lo < 0) & (hi > 0)
        lo = np.where(np.isneginf(seen).any(axis=0) | pole, -np.inf, lo)
        hi = np.where(np.isposinf(seen).any(axis=0) | pole, np.inf, hi)
        # (the absolute floor of the comparison: the two results' own magnitudes)
        scale = max(1.0, float(np.max(np.abs(b[fin]))),
                    float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0)))
        # (relative to the finite bounds: an unbounded side must not open the other one)
        mag = np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0),
                         np.where(np.isfinite(hi), np.abs(hi), 0.0))
        tol = RTOL * mag + 1e-9 * scale
        ok = (b >= lo - tol) & (b <= hi + tol)
    return bool(ok[fin].all())
