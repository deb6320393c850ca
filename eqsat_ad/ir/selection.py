"""Programs that only move data: each value is one argument entry times a constant, or zero.

The optimizer's rewrites are *finite-only* (docs/semantics.md): inlining a stored value turns a
stored 0.0 into a strong zero, which differs where the value multiplies an inf or a nan, and
rules such as ``x - x = 0`` hold for finite ``x`` only. So optimized code runs guarded by the
unoptimized program (backend/guard.py): a pass over each argument per call.

A program none of whose values meets arithmetic between data cannot tell the two zeros apart:
a *selection program* is one whose every value (statements and outputs) is built from

* reads of arguments and stored arrays, constants and brackets;
* negation, and products where every factor but one is a bracket or a constant, the constants'
  product of a moderate magnitude (:data:`SCALE_RANGE`: ``[p] * c * x[i]``, never a stored
  zero times data, never ``0 * x``, no constant that rounds to 0 or inf in float32), and
  quotients by such a constant;
* sums whose every summed index an equality bracket of the body fixes (``Sum[j: N]([i == 2*j]
  * x[j])``): at most one term survives.

Each of its values is then, at every point, ``c * x[p]`` for one argument entry ``x[p]`` and
one constant ``c`` fixed by the indices (and by relation arguments, 0 or 1), a constant, or
zero. When the optimized and the unoptimized program are both selection programs and agree on
finite arguments (the optimizer's guarantee, up to the rounding of constants), they read the
same entry with constants of the same sign at every point, so they agree on inf and nan
arguments too: the guard would never rerun, and its pass is skipped (:func:`needs_guard`).
Strides, transposes, diagonals, shifts, reversals and padding are such programs, and so are
their gradients.
"""

from __future__ import annotations

import numpy as np

from .expr import (
    Access,
    And,
    Binary,
    Bracket,
    Cmp,
    Const,
    Expr,
    Neg,
    Sum,
    product_factors,
)
from .program import Program, Statement

__all__ = ["SCALE_RANGE", "moves_data", "needs_guard", "selects"]


def _constant(e: Expr) -> float | None:
    """The value of an arithmetic expression of constants (None when ``e`` is none)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Neg):
        v = _constant(e.arg)
        return None if v is None else -v
    if isinstance(e, Binary) and e.op in "*/":
        a, b = _constant(e.lhs), _constant(e.rhs)
        if a is None or b is None:
            return None
        with np.errstate(all="ignore"):
            return float(np.float64(a) * b if e.op == "*" else np.float64(a) / b)
    return None


def _scale(v: float) -> bool:
    """A constant that multiplies data as it is, in float32 too: not 0, inf or nan, and far
    from float32's overflow and underflow (so that no rounding of it becomes one of those)."""
    return SCALE_RANGE[0] <= abs(v) <= SCALE_RANGE[1]


SCALE_RANGE = (1e-30, 1e30)
"""The magnitudes of the constants a selection multiplies data by."""


def _one_term(e: Sum) -> bool:
    """Every summed index of ``e`` is fixed by an equality bracket among its body's factors,
    given the indices outside the sum and those fixed before it."""
    equalities = [p for f in product_factors(e.body) if isinstance(f, Bracket)
                  for p in (f.pred.preds if isinstance(f.pred, And) else (f.pred,))
                  if isinstance(p, Cmp) and p.op == "=="]
    open_ = {iv.name for iv in e.indices}
    progress = True
    while open_ and progress:
        progress = False
        for p in equalities:
            d = p.lhs - p.rhs
            unknown = [n for n, c in d.index if n in open_ and c != 0]
            if len(unknown) == 1:
                open_.discard(unknown[0])
                progress = True
    return not open_


def selects(e: Expr) -> bool:
    """``e`` is a selection (module docstring)."""
    if isinstance(e, Access | Const | Bracket):
        return True
    if isinstance(e, Neg):
        return selects(e.arg)
    if isinstance(e, Binary) and e.op == "*":
        factors = product_factors(e)
        constants = [_constant(f) for f in factors]
        values = [v for v in constants if v is not None]
        data = [f for f, v in zip(factors, constants, strict=True)
                if v is None and not isinstance(f, Bracket)]
        if values and len(values) < len(factors):  # (a constant alone is no multiplier)
            with np.errstate(all="ignore"):
                if not _scale(float(np.prod(values, dtype=np.float64))):
                    return False
        return len(data) <= 1 and all(selects(f) for f in data)
    if isinstance(e, Binary) and e.op == "/":
        v = _constant(e.rhs)
        return v is not None and _scale(v) and selects(e.lhs)
    if isinstance(e, Sum):
        return _one_term(e) and selects(e.body)
    return False


def moves_data(prog: Program) -> bool:
    """Whether ``prog`` is a selection program: each statement (no rolled loop) and each output
    a selection."""
    return all(isinstance(s, Statement) and selects(s.body) for s in prog.statements) and \
        all(selects(o) for o in prog.outputs)


def needs_guard(naive: Program, optimized: Program) -> bool:
    """Whether ``optimized`` needs the guard of the unoptimized ``naive``: not where both only
    move data (module docstring)."""
    return not (moves_data(naive) and moves_data(optimized))
