"""What the code generator passes around: generated values, decisions and the lowered program."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..kernels import (
    Kernel,
    Plan,
)
from ..poly import ONE, Poly

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_RESERVED = frozenset({"np", "max", "min", "range", "float", "int", "abs", "sum", "len", "print"})
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Precedence levels of generated code (higher binds tighter).
_ADD, _MUL, _UNARY, _POW, _ATOM = 1.0, 2.0, 2.5, 2.8, 3.0


@dataclass(frozen=True)
class Value:
    """Generated code for an array with one axis per name in ``axes`` (ranges from the grid)."""

    code: str
    axes: tuple[str, ...]
    mask: bool = False  # a boolean array (a condition)
    risky: bool = False  # may hold inf/nan (products with it must be strong-zero)
    fresh: bool = True  # a new array (not a view of a variable)
    prec: float = 3  # Python precedence of the code's top operator (_ATOM: none)
    # Parameters read here whose finiteness is not checked before the call: the contraction
    # that consumes this value checks its own result instead (see _Codegen.contract).
    unchecked: frozenset[str] = frozenset()
    # The kernels that running ``code`` calls (its operands' inlined code included) and the
    # number of elements of the array it denotes: the plan records them where ``code`` is emitted.
    kernels: tuple[Kernel, ...] = ()
    size: Poly = ONE

    def paren(self, need: float = 3) -> str:
        """The code as an operand that needs precedence at least ``need``."""
        return self.code if self.prec >= need else f"({self.code})"


@dataclass(frozen=True)
class Decision:
    """One choice the lowering made, for people and for tests that check structure.

    ``kind``: ``assign`` (the terms over the whole output, in one expression), ``add`` /
    ``slice-write`` (a term added to the whole output / to a sub-range), ``scatter`` (a term
    written at the points given by solved equalities: diagonals), ``point-write`` (every output
    index fixed), ``einsum`` (``detail`` holds the spec and the path), ``reduce`` (``.sum``,
    of a broadcast product when ``in_sum``), ``mask`` (a boolean array over ``axes``; ``in_sum``
    when it is inside a sum), ``diagonal-view`` (``np.einsum('ii->i')``), ``gather`` /
    ``window`` (general zero-padded reads), ``eliminated`` (a sum removed by an equality),
    ``spread`` (sums of reads distributed over their contractions,
    :func:`eqsat_ad.plan.spread.spread_reads`);
    under the pseudo-statement ``<inputs>``, one per parameter, ``finite-input`` (the caller
    scans it for inf/nan before the call) and ``finite-result`` (a product reading it checks
    its own result instead; ``detail`` is the parameter).
    ``axes``: the index names the step works over (its size is their product).
    """

    statement: str
    kind: str
    detail: str = ""
    axes: tuple[str, ...] = ()
    in_sum: bool = False


@dataclass(frozen=True)
class Lowered:
    """A lowered program: its Python source and the decisions taken per statement."""

    source: str
    decisions: tuple[Decision, ...]
    function_name: str
    namespace_extras: Mapping[str, Any] = field(default_factory=dict)
    plan: Plan = field(default_factory=lambda: Plan(()))
    """The kernels the source runs, each with the line that runs it."""

    def kinds(self, statement: str | None = None) -> list[str]:
        return [d.kind for d in self.decisions if statement is None or d.statement == statement]


def _factor(code: str) -> str:
    """An integer expression as an operand of ``*`` (``N - 1`` needs parentheses)."""
    return f"({code})" if (" + " in code or " - " in code) and not code.startswith("max(") else code


def _num(v: float) -> str:
    if math.isnan(v):
        return "np.nan"
    if math.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)
