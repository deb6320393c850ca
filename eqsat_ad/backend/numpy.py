"""The NumPy backend: lower a Tensor SSA program to readable Python source and run it.

Lowering (docs/design.md, "The backend") works on one statement ``y[I] = body`` at a time:

1. The body is expanded into a sum of *terms*, each ``coef · Σ_J Π brackets · Π factors``
   (:class:`Term`; a factor may itself be a nested term, so a product of a sum with something
   else stays a product and nothing is hoisted into a sum).
2. Equality brackets are solved: an equality on a summed index eliminates the sum (``Σ_j [j = t]
   e → e{j := t}``, keeping the range of ``j`` and the integrality of ``t`` as conditions); an
   equality on a generator index turns the term into a *scatter*: the output is written at the
   points ``i = t(...)`` only (a diagonal fill, or a point write when every generator is fixed).
   So ``[i == j] · e`` never becomes an N×N bracket array.
3. Conditions on one index (``[i >= 1]``, ``[i + 1 < N]``, the range of an eliminated index)
   narrow that index's range: the term is evaluated on a slice and written into a slice. Other
   conditions (``[i < j]``, relations, integrality) become boolean masks (``np.where``).
4. What is left is evaluated on a *grid* of index ranges: accesses as slices (zero padded by
   :func:`eqsat_ad.backend.runtime.window` when not provably in range), diagonals as einsum views,
   anything else by :func:`eqsat_ad.backend.runtime.gather`; a product under Σ of plain factors as
   ``np.einsum`` with an explicit pairwise path (the cost model's :func:`contraction_path` when it
   is available); other sums as a broadcast product and ``.sum``; built-ins as NumPy ufuncs.

Every program lowers (the general path handles whatever the fast patterns do not), and the result
equals the reference interpreter's: out-of-range and fractional reads are 0, a false bracket
gives 0 whatever its factor is (strong zero, via ``np.where``), every other product is IEEE
754 (``0 * inf`` is nan; docs/semantics.md), empty sums are 0.

Public: :func:`lower`, :func:`lower_program` (source plus the lowering's decisions),
:func:`compile_program` and :class:`CompiledProgram`.
"""

from __future__ import annotations

import itertools
import keyword
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir.errors import EqsatError, ProgramError, ShapeError
from ..ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
    substitute,
)
from ..ir.functions import lookup, on_register
from ..ir.index import Affine, Dim, IndexVar
from ..ir.printer import print_expr, print_statement
from ..ir.program import Program, Statement
from . import runtime
from .structured import Outer, Sparse

__all__ = [
    "CompiledProgram",
    "Decision",
    "Lowered",
    "compile_program",
    "lower",
    "lower_program",
]

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_RESERVED = frozenset({"np", "max", "min", "range", "float", "int", "abs", "sum", "len", "print"})
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Precedence levels of generated code (higher binds tighter).
_ADD, _MUL, _UNARY, _POW, _ATOM = 1.0, 2.0, 2.5, 2.8, 3.0


# ================================================================================================
# Conditions (what brackets become once normalized)
# ================================================================================================


@dataclass(frozen=True)
class Cond:
    """A condition on integer indices: ``aff >= 0`` (ge), ``aff == 0`` (eq), ``aff != 0`` (ne),
    ``aff`` is an integer (int), or membership in a relation (rel).

    ``aff`` has integer coefficients for ge/eq/ne (scaled by the common denominator), so that
    ``<`` becomes ``>= 1`` exactly.
    """

    kind: str
    aff: Affine = Affine()
    rel: Rel | None = None

    def indices(self) -> frozenset[str]:
        if self.rel is not None:
            out: frozenset[str] = frozenset()
            for a in self.rel.indices:
                out |= a.free_indices()
            return out
        return self.aff.free_indices()

    def substitute(self, mapping: Mapping[str, Affine]) -> Cond:
        if self.rel is not None:
            r = Rel(self.rel.name, tuple(a.substitute(mapping) for a in self.rel.indices))
            return Cond("rel", rel=r)
        a = self.aff.substitute(mapping)
        return Cond(self.kind, a if self.kind == "int" else _integral(a))


def _denominator(a: Affine) -> int:
    q = a.const.denominator
    for _, c in a.index + a.sizes:
        q = math.lcm(q, c.denominator)
    return q


def _integral(a: Affine) -> Affine:
    """``a`` scaled by a positive integer so that every coefficient is an integer."""
    q = _denominator(a)
    return a if q == 1 else a.scale(q)


def _conds(p: Pred) -> list[Cond]:
    match p:
        case And(preds):
            return [c for q in preds for c in _conds(q)]
        case Rel():
            return [Cond("rel", rel=p)]
        case Cmp(op, lhs, rhs):
            d = _integral(lhs - rhs)
            match op:
                case "==":
                    return [Cond("eq", d)]
                case "!=":
                    return [Cond("ne", d)]
                case "<":
                    return [Cond("ge", -d - 1)]
                case "<=":
                    return [Cond("ge", -d)]
                case ">":
                    return [Cond("ge", d - 1)]
                case ">=":
                    return [Cond("ge", d)]
    raise ProgramError(f"not a predicate: {p!r}")


def _sign_known(a: Affine) -> int | None:
    """+1 if ``a >= 0`` for all sizes >= 1, -1 if ``a < 0`` for all sizes >= 1, else None.

    ``a`` must be free of index variables.
    """
    cs = [c for _, c in a.sizes]
    at_one = a.const + sum(cs, Fraction(0))
    if all(c >= 0 for c in cs) and at_one >= 0:
        return 1
    if all(c <= 0 for c in cs) and at_one < 0:
        return -1
    return None


def _static(c: Cond) -> bool | None:
    """The truth of an index-free condition when the sizes do not matter, else None."""
    if c.kind == "rel":
        return None
    a = c.aff
    if c.kind == "int":
        return True if _denominator(a) == 1 else (None if a.sizes else False)
    if c.kind == "ge":
        s = _sign_known(a)
        return None if s is None else s > 0
    if a.is_constant():
        return (a.const == 0) == (c.kind == "eq")
    return None


# ================================================================================================
# Terms: Σ_J coef · Π conds · Π factors
# ================================================================================================


@dataclass
class Term:
    coef: float
    sums: list[IndexVar]
    factors: list[Expr | Term]
    conds: list[Cond]

    def free(self) -> set[str]:
        out: set[str] = set()
        for f in self.factors:
            out |= f.free() if isinstance(f, Term) else set(free_indices(f))
        for c in self.conds:
            out |= c.indices()
        return out - {iv.name for iv in self.sums}

    def substitute(self, mapping: Mapping[str, Affine]) -> Term:
        mapping = {k: v for k, v in mapping.items() if k not in {iv.name for iv in self.sums}}
        if not mapping:
            return self
        return Term(
            self.coef,
            list(self.sums),
            [f.substitute(mapping) if isinstance(f, Term) else substitute(f, mapping)
             for f in self.factors],
            [c.substitute(mapping) for c in self.conds],
        )


class _Names:
    """Fresh index names for the binders of sums (so merged scopes never capture)."""

    def __init__(self, used: set[str]) -> None:
        self.used = set(used)

    def fresh(self, base: str) -> str:
        stem = base.rstrip("0123456789") or base
        for k in itertools.count():
            name = base if k == 0 else f"{stem}{k}"
            if name not in self.used:
                self.used.add(name)
                return name
        raise AssertionError



def _decide_static(t: Term) -> Term | None:
    """``t`` without its index-free conditions known true; ``None`` if one is known false."""
    kept: list[Cond] = []
    for c in t.conds:
        if not c.indices():
            s = _static(c)
            if s is False:
                return None
            if s is True:
                continue
        kept.append(c)
    return replace(t, conds=kept)

def _cheap(terms: list[Term]) -> bool:
    return all(
        not t.sums and all(isinstance(f, Access) for f in t.factors) for t in terms
    )


def _merge(a: Term, b: Term) -> Term:
    """The product of two terms, without moving data factors into a sum."""
    if not a.sums and not b.sums:
        return Term(a.coef * b.coef, [], a.factors + b.factors, a.conds + b.conds)
    if a.sums and not b.sums and not b.factors:
        return Term(a.coef * b.coef, a.sums, a.factors, a.conds + b.conds)
    if b.sums and not a.sums and not a.factors:
        return Term(a.coef * b.coef, b.sums, b.factors, b.conds + a.conds)
    if not b.sums:
        a, b = b, a
    if not a.sums:  # b is a sum: keep it as one factor
        return Term(a.coef * b.coef, [], a.factors + [replace(b, coef=1.0)], a.conds)
    return Term(a.coef * b.coef, [], [replace(a, coef=1.0), replace(b, coef=1.0)], [])


def _without_brackets(e: Expr) -> Expr:
    """The product tree ``e`` with its bracket factors left out (1 if nothing is left)."""
    if isinstance(e, Bracket):
        return Const(1.0)
    if isinstance(e, Binary) and e.op == "*":
        a, b = _without_brackets(e.lhs), _without_brackets(e.rhs)
        if a == Const(1.0):
            return b
        return a if b == Const(1.0) else Binary("*", a, b)
    if isinstance(e, Neg):
        return Neg(_without_brackets(e.arg))
    return e


def expand(e: Expr, names: _Names) -> list[Term]:
    """``e`` as a sum of terms (sums distribute over ``+``; products of sums stay products)."""
    match e:
        case Const(v):
            return [] if v == 0 else [Term(v, [], [], [])]
        case Binary("+", lhs, rhs):
            return expand(lhs, names) + expand(rhs, names)
        case Binary("-", lhs, rhs):
            return expand(lhs, names) + [replace(t, coef=-t.coef) for t in expand(rhs, names)]
        case Neg(arg):
            return [replace(t, coef=-t.coef) for t in expand(arg, names)]
        case Binary("/", lhs, Const(v)) if v != 0 and math.isfinite(v):
            return [replace(t, coef=t.coef / v) for t in expand(lhs, names)]
        case Binary("/", lhs, rhs):
            # ([p] e) / d = [p] (e / d): a strong zero divided by anything is one
            terms = expand(lhs, names)
            if len(terms) == 1 and terms[0].conds and not terms[0].sums:
                return [Term(1.0, [], [Binary("/", _without_brackets(lhs), rhs)],
                             terms[0].conds)]
        case Binary("*", lhs, rhs):
            left, right = expand(lhs, names), expand(rhs, names)
            if not left or not right:
                return []
            if len(left) == 1 and len(right) == 1:
                return [_merge(left[0], right[0])]
            # Distribute only to bring brackets to the top of terms (where they become writes
            # into parts of the output); otherwise a product of sums stays one factor.
            if (
                len(left) * len(right) <= 16
                and (_cheap(left) or _cheap(right))
                and any(t.conds for t in left + right)
            ):
                return [_merge(a, b) for a in left for b in right]
            lt = left[0] if len(left) == 1 else Term(1.0, [], [lhs], [])
            rt = right[0] if len(right) == 1 else Term(1.0, [], [rhs], [])
            return [_merge(lt, rt)]
        case Bracket(p):
            return [Term(1.0, [], [], _conds(p))]
        case Pow(base, k) if k > 0:
            # ([p] e) ** k = [p] e ** k: the bracket still guards the term (a strong zero to a
            # positive power is one), instead of being computed as 0.0 ** k inside the power
            terms = expand(base, names)
            if len(terms) == 1 and terms[0].conds and not terms[0].sums:
                return [Term(1.0, [], [Pow(_without_brackets(base), k)], terms[0].conds)]
        case Sum(ivs, body):
            mapping: dict[str, Affine] = {}
            new: list[IndexVar] = []
            for iv in ivs:
                nn = names.fresh(iv.name)
                new.append(IndexVar(nn, iv.extent))
                if nn != iv.name:
                    mapping[iv.name] = Affine.var(nn)
            inner = substitute(body, mapping) if mapping else body
            return [Term(t.coef, new + t.sums, t.factors, t.conds) for t in expand(inner, names)]
    return [Term(1.0, [], [e], [])]


# ================================================================================================
# Ranges, grids and values
# ================================================================================================


@dataclass(frozen=True)
class Axis:
    """An index ranging over ``max(lo) <= v < min(hi)`` (bounds free of index variables)."""

    name: str
    extent: Dim
    lo: tuple[Affine, ...]
    hi: tuple[Affine, ...]

    @staticmethod
    def full(iv: IndexVar) -> Axis:
        return Axis(iv.name, iv.extent, (Affine.constant(0),), (Affine.of_dim(iv.extent),))

    def is_full(self) -> bool:
        return self.lo == (Affine.constant(0),) and self.hi == (Affine.of_dim(self.extent),)

    def with_lo(self, b: Affine) -> Axis:
        return replace(self, lo=_add_bound(self.lo, b, lower=True))

    def with_hi(self, b: Affine) -> Axis:
        return replace(self, hi=_add_bound(self.hi, b, lower=False))


def _add_bound(bounds: tuple[Affine, ...], b: Affine, lower: bool) -> tuple[Affine, ...]:
    """Add a bound to a max (lower) or min (upper) list, dropping dominated ones."""
    sign = 1 if lower else -1
    for x in bounds:
        if _sign_known((x - b).scale(sign)) == 1:  # x already at least as tight
            return bounds
    kept = tuple(x for x in bounds if _sign_known((b - x).scale(sign)) != 1)
    return kept + (b,)


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
    ``window`` (general zero-padded reads), ``eliminated`` (a sum removed by an equality);
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

    def kinds(self, statement: str | None = None) -> list[str]:
        return [d.kind for d in self.decisions if statement is None or d.statement == statement]


# ================================================================================================
# The code generator
# ================================================================================================


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


class _Codegen:
    def __init__(self, prog: Program, sizes: Mapping[str, int] | None, strict: bool,
                 structured: bool = False) -> None:
        self.prog = prog
        self.sizes = dict(sizes or {})
        self.strict = strict
        self.lines: list[str] = []
        self.decisions: list[Decision] = []
        self.extras: dict[str, Any] = {}
        self.shapes: dict[str, tuple[Dim, ...]] = {p.name: p.shape for p in prog.params}
        self.kinds: dict[str, str] = {p.name: p.kind for p in prog.params}
        self.risky_vars: set[str] = {p.name for p in prog.params} if strict else set()
        used = set(prog.param_names) | {s.name for s in prog.statements} | set(prog.size_names())
        for s in prog.statements:
            used |= {iv.name for iv in s.indices}
        self.names = _Names(used)
        self.py: dict[str, str] = {}
        taken = set(used)
        for n in list(prog.param_names) + [s.name for s in prog.statements] + list(
            prog.size_names()
        ):
            self.py[n] = self._pyname(n, taken)
        self.stmt = ""
        self.tmp = 0
        self.aranges: dict[tuple, str] = {}
        self.memo: dict[str, str] = {}  # code -> temporary already holding it
        self.facts: list[Affine] = []  # index-free a >= 0 known to hold (guarded by an if)
        # Statements returned whole: they must be fresh arrays (others may be read-only views).
        self.returned = {o.name for o in prog.outputs if isinstance(o, Access) and not o.indices}
        # Outputs that may be returned as a Diagonal / Sparse: returned whole and read by nothing.
        self.structured: frozenset[str] = prog.unread_outputs() if structured else frozenset()

    @staticmethod
    def _pyname(name: str, taken: set[str]) -> str:
        if name in _RESERVED or keyword.iskeyword(name) or name.startswith("_"):
            base = f"v{name}" if name.startswith("_") else f"{name}_"
            while base in taken:
                base += "_"
            taken.add(base)
            return base
        return name

    # --- small helpers -------------------------------------------------------------------------
    def nonneg(self, a: Affine) -> bool:
        """``a >= 0`` provably, for sizes >= 1 and the conditions known to hold here."""
        return _sign_known(a) == 1 or any(_sign_known(a - f) == 1 for f in self.facts)

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def decide(self, kind: str, detail: str = "", axes: Sequence[str] = (), in_sum=False) -> None:
        self.decisions.append(Decision(self.stmt, kind, detail, tuple(axes), in_sum))

    def assign(self, name: str, code: str) -> None:
        """``name = code``; a temporary just computed is renamed instead of copied."""
        last = self.lines[-1] if self.lines else ""
        if re.fullmatch(r"_t\d+", code) and last.startswith(f"    {code} = "):
            self.lines[-1] = f"    {name} = {last[len(code) + 7:]}"
            # the temporary no longer exists: later uses of its code recompute it (a statement
            # variable may still be written in place, so it cannot stand for the code)
            for k in [k for k, t in self.memo.items() if t == code]:
                del self.memo[k]
            return
        self.emit(f"{name} = {code}")

    def shared(self, v: Value, create: bool) -> Value:
        """``v`` read from the temporary that already holds its code (or a new one if
        ``create``): common subexpressions are computed once."""
        if v.code in self.memo or create:
            return replace(v, code=self.temp(v.code), prec=_ATOM)
        return v

    def temp(self, code: str, base: str = "_t") -> str:
        """A temporary holding ``code``; the same code computed before is reused (values are
        immutable, so this is common-subexpression elimination across statements)."""
        if code in self.memo:
            return self.memo[code]
        self.tmp += 1
        name = f"{base}{self.tmp}"
        self.emit(f"{name} = {code}")
        self.memo[code] = name
        return name

    def dim_code(self, d: Dim) -> str:
        return str(d) if isinstance(d, int) else self.py[d.name]

    def aff_code(self, a: Affine) -> str:
        """Code of an index-free affine expression with integer coefficients."""
        parts: list[tuple[bool, str]] = []
        for n, c in a.sizes:
            if c.denominator != 1:
                raise AssertionError(f"fractional size coefficient in bound {a}")
            k = abs(c.numerator)
            text = self.py[n] if k == 1 else f"{k} * {self.py[n]}"
            parts.append((c < 0, text))
        if a.const != 0 or not parts:
            if a.const.denominator != 1:
                raise AssertionError(f"fractional constant in bound {a}")
            parts.append((a.const < 0, str(abs(a.const.numerator))))
        out = ("-" if parts[0][0] else "") + parts[0][1]
        for neg, text in parts[1:]:
            out += (" - " if neg else " + ") + text
        return out

    def bound_code(self, bounds: tuple[Affine, ...], lower: bool) -> str:
        codes = [self.aff_code(b) for b in bounds]
        if len(codes) == 1:
            return codes[0]
        return f"{'max' if lower else 'min'}({', '.join(codes)})"

    def count_code(self, ax: Axis) -> str:
        """Number of points of an axis (0 for an empty range)."""
        if ax.is_full():
            return self.dim_code(ax.extent)
        if len(ax.lo) == 1 and len(ax.hi) == 1:
            diff = ax.hi[0] - ax.lo[0]
            if self.nonneg(diff):
                return self.aff_code(diff)
            return f"max({self.aff_code(diff)}, 0)"
        lo, hi = self.bound_code(ax.lo, True), self.bound_code(ax.hi, False)
        return f"max({hi} - ({lo}), 0)" if " " in lo else f"max({hi} - {lo}, 0)"

    def arange(self, ax: Axis) -> Value:
        key = (ax.lo, ax.hi, ax.extent if ax.is_full() else None)
        if key not in self.aranges:
            code = (
                f"np.arange({self.dim_code(ax.extent)})"
                if ax.is_full()
                else f"np.arange({self.bound_code(ax.lo, True)}, {self.bound_code(ax.hi, False)})"
            )
            self.aranges[key] = self.temp(code, f"_{ax.name}_")
        return Value(self.aranges[key], (ax.name,))

    # --- alignment -----------------------------------------------------------------------------
    @staticmethod
    def order(grid: Mapping[str, Axis], *axes_lists: Sequence[str]) -> tuple[str, ...]:
        names: set[str] = set()
        for a in axes_lists:
            names |= set(a)
        return tuple(n for n in grid if n in names)

    @staticmethod
    def align(v: Value, target: Sequence[str], need: float | bool = _ATOM) -> str:
        """Code of ``v`` transposed and expanded to broadcast over ``target``.

        ``need``: the precedence the context needs (False: none, e.g. a call argument).
        """
        present = [a for a in target if a in v.axes]
        perm = [v.axes.index(a) for a in present]
        if not v.axes or (perm == list(range(len(perm))) and len(present) == len(target)):
            return v.paren(float(need)) if need is not False else v.code
        code = v.paren()
        if perm != list(range(len(perm))):
            code = f"{code}.T" if len(perm) == 2 else f"np.transpose({code}, {tuple(perm)})"
        if len(present) < len(target):
            idx = ", ".join(":" if a in v.axes else "None" for a in target)
            code = f"{code}[{idx}]"
        return code

    def to_num(self, v: Value) -> Value:
        if not v.mask:
            return v
        if not v.axes:
            return Value(f"float({v.code})", ())
        return Value(f"{v.paren()}.astype(_dt)", v.axes)

    def binop(self, op: str, a: Value, b: Value, grid: Mapping[str, Axis]) -> Value:
        a, b = self.shared(self.to_num(a), False), self.shared(self.to_num(b), False)
        target = self.order(grid, a.axes, b.axes)
        risky = a.risky or b.risky or op == "/"
        level = _ADD if op in "+-" else _MUL
        left = self.align(a, target, level)
        right = self.align(b, target, level + (0.5 if op in "-/" else 0))
        if op == "/" and not target:
            # two Python numbers: 1 / 0 would raise ZeroDivisionError, NumPy's gives inf
            return Value(f"np.divide({self.align(a, target, False)}, "
                         f"{self.align(b, target, False)}, dtype=_dt)", target, risky=True)
        return Value(f"{left} {op} {right}", target, risky=risky, prec=level)

    def where(self, mask: Value, v: Value, grid: Mapping[str, Axis]) -> Value:
        target = self.order(grid, mask.axes, v.axes)
        v = self.to_num(v)
        if not v.axes:
            v = Value(f"_dt({v.code})", (), risky=v.risky)  # np.where(m, N, 0) is an int array
        return Value(
            f"np.where({self.align(mask, target, False)}, {self.align(v, target, False)}, 0)",
            target,
            risky=False,
        )

    def conj(self, masks: list[Value], grid: Mapping[str, Axis]) -> Value | None:
        if not masks:
            return None
        if len(masks) == 1:
            return masks[0]
        target = self.order(grid, *(m.axes for m in masks))
        code = " & ".join(f"{self.align(m, target)}" for m in masks)
        return Value(code, target, mask=True, prec=_ADD)

    # --- index arithmetic ----------------------------------------------------------------------
    def index_value(self, a: Affine, grid: Mapping[str, Axis]) -> tuple[Value, int]:
        """Integer code over the grid of ``q * a`` and the denominator ``q``."""
        q = _denominator(a)
        s = a.scale(q) if q != 1 else a
        terms: list[Value] = []
        for n, c in s.index:
            if n not in grid:
                raise ProgramError(f"index {n!r} is not bound by a generator or a Sum")
            ar = self.arange(grid[n])
            k = int(c)
            terms.append(ar if k == 1 else Value(f"{k} * {ar.code}", ar.axes, prec=_MUL))
        rest = Affine((), s.sizes, s.const)
        target = self.order(grid, *(t.axes for t in terms))
        code = " + ".join(self.align(t, target, _ADD) for t in terms)
        if rest != Affine() or not terms:
            rc = self.aff_code(rest)
            if not terms:
                code = rc
            elif rc.startswith("-"):
                code += f" - {rc[1:]}"  # aff_code writes "-N + 1" as (-N) + 1
            else:
                code += f" + {rc}"
        simple = len(terms) == 1 and rest == Affine() and int(s.index[0][1]) == 1
        return Value(code, target, prec=_ATOM if simple else _ADD), q

    def cond_mask(self, c: Cond, grid: Mapping[str, Axis], in_sum: bool = False) -> Value:
        if c.kind == "rel":
            assert c.rel is not None
            v = self.access(c.rel.name, c.rel.indices, grid, relation=True)
            self.decide("mask", f"relation {c.rel.name}", v.axes, in_sum)
            return replace(v, mask=True)
        if c.kind == "int":
            iv, q = self.index_value(c.aff, grid)
            code = f"{iv.paren()} % {q} == 0"
            axes = iv.axes
        else:
            # a >= 0 printed as (positive part) >= (negated negative part): N - 1 >= 2 * i.
            a = c.aff
            pos = Affine.make({n: k for n, k in a.index if k > 0},
                              {n: k for n, k in a.sizes if k > 0}, max(a.const, 0))
            lhs, _ = self.index_value(pos, grid)
            rhs, _ = self.index_value(pos - a, grid)
            axes = self.order(grid, lhs.axes, rhs.axes)
            op = dict(ge=">=", eq="==", ne="!=")[c.kind]
            code = f"{self.align(lhs, axes, _ADD)} {op} {self.align(rhs, axes, _ADD)}"
        self.decide("mask", code, axes, in_sum)
        return Value(f"({code})", axes, mask=True)

    # --- accesses ------------------------------------------------------------------------------
    def access(
        self, name: str, idx: tuple[Affine, ...], grid: Mapping[str, Axis], relation=False,
        defer: bool = False,
    ) -> Value:
        """``name[idx]`` over the grid.

        Outside the strict lowering, the code trusts float parameters to be finite: a read
        records the parameter as one the caller scans before the call (``finite-input``), or,
        with ``defer``, leaves it ``unchecked`` for the contraction that consumes the value.
        """
        v = self.read(name, idx, grid, relation)
        if relation or v.risky or name not in self.prog.param_names:
            return v
        if defer:
            return replace(v, unchecked=frozenset({name}))
        self.note_finite("finite-input", name)
        return v

    def note_finite(self, kind: str, param: str) -> None:
        """Record (once) how the finiteness of a parameter is established: ``finite-input``
        (scanned by the caller before the call) or ``finite-result`` (a contraction reading it
        checks its result; see :meth:`CompiledProgram.__call__`)."""
        d = Decision("<inputs>", kind, param)
        if d not in self.decisions:
            self.decisions.append(d)

    def read(
        self, name: str, idx: tuple[Affine, ...], grid: Mapping[str, Axis], relation=False
    ) -> Value:
        if name not in self.shapes:
            raise ProgramError(f"unknown name {name!r} (not a parameter or an earlier variable)")
        shape = self.shapes[name]
        if len(shape) != len(idx):
            raise ProgramError(f"{name!r} has {len(shape)} indices but is accessed with {len(idx)}")
        if relation != (self.kinds.get(name) == "relation"):
            raise ProgramError(
                f"{name!r} is used as a {'relation' if relation else 'value'} but is not one"
            )
        py = self.py[name]
        risky = name in self.risky_vars
        if not idx:
            return Value(py, (), mask=relation, risky=risky, fresh=False)
        for a in idx:
            for n in a.free_indices():
                if n not in grid:
                    raise ProgramError(f"index {n!r} in {name}[...] is not bound")
        # One index per dimension (fractions only next to an index: w[k/2]).
        simple = all(len(a.index) == 1 or (not a.index and _denominator(a) == 1) for a in idx)
        vars_ = [a.index[0][0] for a in idx if a.index]
        if simple and len(set(vars_)) == len(vars_):
            return self.window(name, py, idx, shape, grid, relation, risky)
        if (
            not relation
            and all(a.as_var() is not None for a in idx)
            and all(grid[a.as_var()].is_full() and grid[a.as_var()].extent == d
                    for a, d in zip(idx, shape, strict=True))
        ):
            letters = {v: _LETTERS[k] for k, v in enumerate(dict.fromkeys(vars_))}
            ins = "".join(letters[v] for v in vars_)
            out = "".join(letters[v] for v in dict.fromkeys(vars_))
            self.decide("diagonal-view", f"{name}[{', '.join(map(str, idx))}]", tuple(out))
            return Value(f"np.einsum('{ins}->{out}', {py})", tuple(dict.fromkeys(vars_)),
                         risky=risky, fresh=False)
        nums: list[Value] = []
        dens: list[int] = []
        for a in idx:
            v, q = self.index_value(a, grid)
            nums.append(v)
            dens.append(q)
        target = self.order(grid, *(v.axes for v in nums))
        codes = ", ".join(self.align(v, target) if v.axes else v.code for v in nums)
        self.decide("gather", f"{name}[{', '.join(map(str, idx))}]", target)
        return Value(
            f"_rt.gather({py}, ({codes},), {tuple(dens)})", target, mask=relation, risky=risky
        )

    def window(self, name, py, idx, shape, grid, relation, risky) -> Value:
        parts: list[str] = []
        specs: list[str] = []
        axes: list[str] = []
        provable = True
        for a, n in zip(idx, shape, strict=True):
            nd = Affine.of_dim(n)
            if not a.index:
                parts.append(self.aff_code(a))
                specs.append(self.aff_code(a))
                provable &= self.nonneg(a) and self.nonneg(nd - a - 1)
                continue
            q = _denominator(a)
            scaled = a.scale(q) if q != 1 else a  # index = scaled / q
            v, c = scaled.index[0][0], int(scaled.index[0][1])
            ax = grid[v]
            off = Affine((), scaled.sizes, scaled.const)
            axes.append(v)
            lo = ax.lo[0] if len(ax.lo) == 1 else None
            hi = ax.hi[0] if len(ax.hi) == 1 else None
            den = f", {q}" if q != 1 else ""
            if lo is not None:
                start = lo.scale(c) + off
                specs.append(f"({self.aff_code(start)}, {c}, {self.count_code(ax)}{den})")
            else:
                lo_c = self.bound_code(ax.lo, True)
                specs.append(
                    f"({c} * {lo_c} + {self.aff_code(off)}, {c}, {self.count_code(ax)}{den})"
                )
            if lo is None or hi is None or q != 1:
                provable = False
                continue
            if c < 0:
                # Reversed: x[start:stop:c] reads start, start + c, ..., last (>= 0).
                start = lo.scale(c) + off
                last = (hi - 1).scale(c) + off
                # (start >= 0 too: an empty range may put start below last)
                if not (self.nonneg(start) and self.nonneg(nd - 1 - start) and self.nonneg(last)):
                    provable = False
                    continue
                sc = "" if start == nd - 1 else self.aff_code(start)
                stop = last - 1
                if stop == Affine.constant(-1):
                    parts.append(f"{sc}::{c}")
                elif self.nonneg(stop):
                    parts.append(f"{sc}:{self.aff_code(stop)}:{c}")
                else:
                    provable = False
                continue
            start = lo.scale(c) + off
            stop = hi.scale(c) + off - (c - 1)  # one past the last index read, for c > 0
            if not (self.nonneg(start) and self.nonneg(stop) and self.nonneg(nd - stop)):
                provable = False
                continue
            if ax.is_full() and ax.extent == n and c == 1 and off == Affine():
                parts.append(":")
            else:
                sc = self.aff_code(start)
                step = "" if c == 1 else f":{c}"
                parts.append(f"{'' if sc == '0' else sc}:{self.aff_code(stop)}{step}")
        if provable:
            code = f"{py}[{', '.join(parts)}]" if any(p != ":" for p in parts) else py
            return Value(code, tuple(axes), mask=relation, risky=risky, fresh=False)
        self.decide("window", f"{name}[{', '.join(map(str, idx))}]", tuple(axes))
        spec = ", ".join(specs)
        return Value(
            f"_rt.window({py}, ({spec},))", tuple(axes), mask=relation, risky=risky, fresh=False
        )

    # --- expressions ---------------------------------------------------------------------------
    def ev(self, e: Expr, grid: dict[str, Axis]) -> Value:
        match e:
            case Const(v):
                return Value(_num(v), (), prec=_ATOM if v >= 0 and math.isfinite(v) else _UNARY,
                             risky=not math.isfinite(v))
            case Access(name, idx):
                return self.access(name, idx, grid)
            case Bracket(p):
                masks = [self.cond_mask(c, grid) for c in _conds(p)]
                m = self.conj(masks, grid)
                assert m is not None
                return m
            case Neg(arg):
                v = self.to_num(self.ev(arg, grid))
                return Value(f"-{v.paren(_UNARY)}", v.axes, risky=v.risky, prec=_UNARY)
            case Pow(base, k):
                v = self.to_num(self.ev(base, grid))
                risky = v.risky or k < 0 or k != int(k)
                kc = _num(k) if k >= 0 else f"({_num(k)})"
                if not v.axes:  # a Python number: 0 ** -1 raises, (-1) ** 0.5 is complex
                    return Value(f"np.power({v.code}, {kc}, dtype=_dt)", (), risky=risky)
                return Value(f"{v.paren()} ** {kc}", v.axes, risky=risky, prec=_POW)
            case Binary("/", lhs, rhs):
                return self.binop("/", self.ev(lhs, grid), self.ev(rhs, grid), grid)
            case Call(fn, args):
                return self.call(e, fn, args, grid)
        return self.combine(expand(e, self.names), grid)

    def call(self, e: Call, fn: str, args: tuple[Expr, ...], grid: dict[str, Axis]) -> Value:
        f = lookup(fn)
        if f is None:
            raise ProgramError(f"unknown function {fn!r}", e.loc)
        if len(args) != f.arity:
            raise ProgramError(f"{fn} takes {f.arity} argument(s), got {len(args)}", e.loc)
        vals = [self.to_num(self.ev(a, grid)) for a in args]
        risky = any(v.risky for v in vals) or not f.finite
        if fn == "stop_gradient":
            return vals[0]
        target = self.order(grid, *(v.axes for v in vals))
        codes = ", ".join(self.align(v, target, False) for v in vals)
        if f.numpy_name is not None:
            head = f.numpy_name
        else:
            head = f"_fn_{fn}"
            self.extras[head] = f.numpy
        code = f"{head}({codes})"
        if f.strong:
            # a data comparison is a condition (boolean array): a product applies it with
            # np.where, so a false comparison is a strong zero as in the interpreter
            return Value(code, target, mask=True)
        if not target:  # np.tanh(0.5) is a float64 scalar: keep float32 programs in float32
            code = f"_dt({code})"
        return self.shared(Value(code, target, risky=risky), create=False)

    def combine(self, terms: list[Term], grid: dict[str, Axis]) -> Value:
        """The sum of terms on one grid, as one expression (negative terms subtracted)."""
        out: Value | None = None
        for t in terms:
            if out is not None and t.coef < 0:
                out = self.binop("-", out, self.term_value(replace(t, coef=-t.coef), grid), grid)
                continue
            v = self.term_value(t, grid)
            out = v if out is None else self.binop("+", out, v, grid)
        return Value("0", ()) if out is None else out

    # --- terms ---------------------------------------------------------------------------------
    def eliminate(self, t: Term, candidates: Sequence[str], grid_extent: Mapping[str, Dim]
                  ) -> tuple[Term, dict[str, Affine]] | None:
        """Solve equalities of ``t`` for indices in ``candidates`` (earliest first).

        Returns the term with the solved indices substituted (their ranges and the integrality
        of their values added as conditions) and the solutions; None when ``t`` is 0.
        """
        solved: dict[str, Affine] = {}
        cands = list(candidates)
        while True:
            best = None
            for k, c in enumerate(t.conds):
                if c.kind != "eq":
                    continue
                for v in cands:
                    coeff = c.aff.coeff(v)
                    if coeff == 0:
                        continue
                    rank = (0 if abs(coeff) == 1 else 1, cands.index(v))
                    if best is None or rank < best[0]:
                        best = (rank, k, v, coeff)
            if best is None:
                break
            _, k, v, coeff = best
            c = t.conds[k]
            rest = c.aff - Affine.var(v).scale(coeff)
            sol = rest.scale(Fraction(-1) / coeff)
            conds = t.conds[:k] + t.conds[k + 1:]
            t = replace(t, conds=conds)
            t = Term(t.coef, [iv for iv in t.sums if iv.name != v], t.factors, t.conds)
            # Substitute inside (sums[] already dropped v, so Term.substitute reaches it).
            t = t.substitute({v: sol})
            ext = Affine.of_dim(grid_extent[v])
            extra = [Cond("ge", _integral(sol)), Cond("ge", _integral(ext - sol - 1))]
            if _denominator(sol) != 1:
                extra.append(Cond("int", sol))
            t = replace(t, conds=t.conds + extra)
            solved = {k2: a.substitute({v: sol}) for k2, a in solved.items()}
            solved[v] = sol
            cands.remove(v)
        t = _decide_static(t)
        return None if t is None else (t, solved)

    def fold(self, t: Term, axes: dict[str, Axis], names: Sequence[str]) -> Term:
        """Narrow the ranges in ``axes`` of ``names`` by one-index conditions of ``t``."""
        kept: list[Cond] = []
        for c in t.conds:
            ix = c.indices()
            if c.kind == "ge" and len(ix) == 1 and next(iter(ix)) in names:
                v = next(iter(ix))
                k = c.aff.coeff(v)
                rest = c.aff - Affine.var(v).scale(k)
                if k == 1:
                    axes[v] = axes[v].with_lo(-rest)
                    continue
                if k == -1:
                    axes[v] = axes[v].with_hi(rest + 1)
                    continue
            kept.append(c)
        return replace(t, conds=kept)

    def term_value(self, t: Term, grid: dict[str, Axis]) -> Value:
        """A term evaluated on ``grid`` (its sums reduced)."""
        sums = {iv.name: iv.extent for iv in t.sums}
        res = self.eliminate(t, [iv.name for iv in t.sums], sums)
        if res is None:
            return Value("0", ())
        t, solved = res
        for v in solved:
            self.decide("eliminated", f"sum over {v} removed by an equality")
        inner_axes = {iv.name: Axis.full(iv) for iv in t.sums}
        t = self.fold(t, inner_axes, list(inner_axes))
        g2 = dict(grid)
        g2.update(inner_axes)
        j = set(inner_axes)
        outer_conds = [c for c in t.conds if not (c.indices() & j)]
        inner_conds = [c for c in t.conds if c.indices() & j]
        inner_f: list[Expr | Term] = []
        outer_f: list[Expr | Term] = []
        for f in t.factors:
            fv = f.free() if isinstance(f, Term) else set(free_indices(f))
            (inner_f if fv & j else outer_f).append(f)
        outer = [self.term_value(f, grid) if isinstance(f, Term) else self.ev(f, grid)
                 for f in outer_f]
        vals: list[Value] = []
        if j:
            # A factor free of the summed indices leaves the sum only where it is finite:
            # inf * (a + b) is not inf * a + inf * b when a and b differ in sign.
            risky = [v for v in outer if v.risky]
            if risky and self.strict:
                # (the strict code exists for inf/nan: the product stays under the sum)
                outer = [v for v in outer if not v.risky]
                vals.append(self.reduce(t, inner_axes, [*inner_f, *risky], inner_conds, g2))
            else:
                # fast code: a non-finite factor raises NonFinite and the strict code reruns
                outer = [replace(v, code=self.temp(f"_rt.checked({v.code})"), risky=False)
                         if v.risky else v for v in outer]
                vals.append(self.reduce(t, inner_axes, inner_f, inner_conds, g2))
        vals += outer
        out = self.product(t.coef, vals, grid)
        masks = [self.cond_mask(c, grid) for c in outer_conds]
        m = self.conj(masks, grid)
        return out if m is None else self.where(m, out, grid)

    def product(self, coef: float, vals: list[Value], grid: Mapping[str, Axis]) -> Value:
        masks = [v for v in vals if v.mask]
        if masks:  # conditions (data comparisons) guard the product: np.where, not * 0/1
            out = self.product(coef, [v for v in vals if not v.mask], grid)
            m = self.conj(masks, grid)
            assert m is not None
            return self.where(m, out, grid)
        vals = [self.to_num(v) for v in vals]
        if not vals:
            return Value(_num(coef), (), prec=_ATOM if coef >= 0 else _UNARY)
        out = vals[0]
        for v in vals[1:]:
            out = self.binop("*", out, v, grid)
        if coef == 1:
            return out
        if coef == -1:
            return Value(f"-{out.paren(_UNARY)}", out.axes, risky=out.risky, prec=_UNARY)
        return Value(f"{_num(coef)} * {out.paren(_MUL)}", out.axes, risky=out.risky, prec=_MUL)

    def reduce(self, t: Term, inner: dict[str, Axis], factors: list[Expr | Term | Value],
               conds: list[Cond], g2: dict[str, Axis]) -> Value:
        """Σ over the axes ``inner`` of the product of ``factors`` (values already evaluated
        on the outer grid are taken as they are) and ``conds``."""
        # Parameters read directly by a contraction may be checked by their result (deferred).
        vals = [f if isinstance(f, Value) else self.term_value(f, g2) if isinstance(f, Term)
                else self.access(f.name, f.indices, g2, defer=True) if isinstance(f, Access)
                and self.kinds.get(f.name) != "relation" else self.ev(f, g2) for f in factors]
        masks = [self.cond_mask(c, g2, in_sum=True) for c in conds]
        vals = [self.to_num(v) if not v.mask else v for v in vals]
        masks += [v for v in vals if v.mask]
        vals = [v for v in vals if not v.mask]
        vals_axes = set().union(*(set(v.axes) for v in vals)) if vals else set()
        if masks or len(vals) < 2 or len(vals_axes | set(inner)) > len(_LETTERS):
            vals = [self.settle(v) for v in vals]  # no contraction step to check a result
        used: set[str] = set()
        for v in vals + masks:
            used |= set(v.axes)
        absent = [a for a in inner if a not in used]
        summed = [a for a in inner if a in used]
        mult = " * ".join(_factor(self.count_code(inner[a])) for a in absent)
        if not summed:
            vals = [self.settle(v) for v in vals]
            return self.scale_by_count(mult, self.product(1.0, vals, g2))
        if not masks and len(vals) == 1:
            v = self.shared(vals[0], create="(" in vals[0].code)
            pos = tuple(k for k, a in enumerate(v.axes) if a in summed)
            self.decide("reduce", f"sum over {', '.join(summed)}", v.axes, in_sum=True)
            ax = "" if len(pos) == len(v.axes) else f"axis={pos if len(pos) > 1 else pos[0]}"
            # (the method: np.sum's dispatch costs about as much as summing a small array)
            res = Value(self.temp(f"{v.paren()}.sum({ax})"),
                        tuple(a for a in v.axes if a not in summed), risky=v.risky)
        elif not masks and vals and len(vals_axes | set(inner)) <= len(_LETTERS) and not (
            # A contraction sums an operand over indices private to it, i.e. takes the others
            # out of that sum: not exact when one may be inf (inf * (a + b) is not
            # inf * a + inf * b for a, b of opposite signs). Then: the product, summed.
            any(v.risky for v in vals) and any(not set(summed) <= set(v.axes) for v in vals)
        ):
            res = self.einsum(vals, summed, g2)
        else:
            if not vals:
                prod = Value("1", ())
            else:
                prod = self.product(1.0, vals, g2)
            m = self.conj(masks, g2)
            if m is not None:
                prod = self.where(m, prod, g2)
            axes = self.order(g2, prod.axes)
            pos = tuple(k for k, a in enumerate(axes) if a in summed)
            if set(summed) - set(prod.axes):
                # A summed index only in a mask that the product does not carry: broadcast it.
                full = self.order(g2, prod.axes, summed)
                prod = Value(
                    f"np.broadcast_to({self.align(prod, full)}, "
                    f"{self._shape_code([g2[a] for a in full])})", full, risky=prod.risky,
                )
                axes = full
                pos = tuple(k for k, a in enumerate(axes) if a in summed)
            self.decide("reduce", f"sum over {', '.join(summed)}", axes, in_sum=True)
            code = f"{prod.paren()}.sum(axis={pos if len(pos) > 1 else pos[0]})"
            name = self.temp(code)
            res = Value(name, tuple(a for a in axes if a not in summed), risky=prod.risky)
        return self.scale_by_count(mult, res)

    def settle(self, v: Value) -> Value:
        """``v`` with its unchecked parameters left to the caller's scan before the call."""
        for name in sorted(v.unchecked):
            self.note_finite("finite-input", name)
        return replace(v, unchecked=frozenset()) if v.unchecked else v

    @staticmethod
    def scale_by_count(mult: str, v: Value) -> Value:
        """``v`` times the number of points of the summed indices it does not depend on."""
        if not mult:
            return v
        if v.code == "1" and not v.axes:
            return Value(mult, (), prec=_MUL if "*" in mult else _ATOM)
        if v.risky:  # an empty range has no term: 0 even times inf (a strong zero)
            return Value(f"_rt.smul({mult}, {v.code})", v.axes, risky=True)
        return Value(f"{mult} * {v.paren(_MUL)}", v.axes, prec=_MUL)

    def _shape_code(self, axes: Sequence[Axis]) -> str:
        codes = [self.count_code(a) for a in axes]
        return f"({codes[0]},)" if len(codes) == 1 else f"({', '.join(codes)})"

    def einsum(self, vals: list[Value], summed: list[str], g2: dict[str, Axis]) -> Value:
        """Σ over ``summed`` of the product of ``vals``, one pairwise step at a time in the order
        of the cost model's contraction path; each step that is a matrix product runs on BLAS."""
        allaxes = self.order(g2, *(v.axes for v in vals))
        letters = {a: _LETTERS[k] for k, a in enumerate(allaxes)}
        out_axes = tuple(a for a in allaxes if a not in summed)
        spec = ",".join("".join(letters[a] for a in v.axes) for v in vals)
        spec += "->" + "".join(letters[a] for a in out_axes)
        # Computed operands become temporaries, shared with every later use of the same code.
        vals = [self.shared(v, create=v.prec < _ATOM or "(" in v.code) for v in vals]
        path = self.path([v.axes for v in vals], out_axes, g2)
        self.decide("einsum", f"{spec} path={path}", allaxes, in_sum=True)
        if len(vals) == 1:
            return self.contract(vals, out_axes, letters, g2)
        ops = list(vals)
        for step in path[1:]:
            picked = [ops[k] for k in step]
            rest = [o for k, o in enumerate(ops) if k not in step]
            keep = set(out_axes).union(*(o.axes for o in rest))
            here = self.order(g2, *(o.axes for o in picked))
            ops = [*rest, self.contract(picked, tuple(a for a in here if a in keep), letters, g2)]
        return ops[0]

    def contract(self, ops: list[Value], out: tuple[str, ...], letters: Mapping[str, str],
                 g2: Mapping[str, Axis]) -> Value:
        """One contraction step (one or two operands) with the result's axes in order ``out``.

        A matrix product (or matrix-vector product, batched or not) becomes ``@`` on transposed
        views; anything else stays ``np.einsum``. An operand that may hold inf/nan is checked
        first, and a non-finite one takes ``einsum_sz``, the plain sum of products (what BLAS
        computes need not be: it may skip a zero factor, hiding 0 * inf = nan).

        An ``unchecked`` parameter operand is verified by the result instead when that is the
        smaller array: every operand entry meets the result in some product, and 0 * inf, inf
        and nan all make the sum they enter non-finite, so a finite result proves that each
        product was finite (plain product == strong zero) and the result needs no guard
        downstream. ``_rt.checked`` raises ``NonFinite`` otherwise, and the caller reruns the
        strict lowering.
        """
        risky = [v for v in ops if v.risky]
        unchecked = frozenset().union(*(v.unchecked for v in ops))
        if unchecked and (risky or self.numel(out, g2) >= sum(
            self.numel(v.axes, g2) for v in ops if v.unchecked
        )):
            ops = [self.settle(v) for v in ops]  # scanning the operands is cheaper (or needed)
            unchecked = frozenset()
        for name in sorted(unchecked):
            self.note_finite("finite-result", name)

        def checked(code: str) -> str:
            return f"_rt.checked({code})" if unchecked else code

        if len(ops) == 2 and set(ops[0].axes) | set(ops[1].axes) <= set(out):
            # Nothing summed: an elementwise or outer product, broadcast.
            a, b = (self.align(v, out, False if risky else _MUL) for v in ops)
            code = f"{a} * {b}" if risky else checked(f"{a} * {b}")
            return Value(self.temp(code), out, risky=bool(risky))
        spec_of = ",".join("".join(letters[a] for a in v.axes) for v in ops)
        blas = self.matmul(ops, out) if len(ops) == 2 else None
        if blas is None:
            spec = f"{spec_of}->{''.join(letters[a] for a in out)}"
            args = ", ".join(v.code for v in ops)
            if risky:
                return Value(self.temp(f"_rt.einsum_sz('{spec}', False, {args})"), out,
                             risky=True)
            return Value(self.temp(checked(f"np.einsum('{spec}', {args})")), out)
        code, axes = blas
        code = checked(code)
        if risky:
            # The matmul result's axes (not ``out``'s order) for the exact fallback.
            spec = f"{spec_of}->{''.join(letters[a] for a in axes)}"
            guard = ", ".join(v.code for v in risky)
            args = ", ".join(v.code for v in ops)
            code = f"{code} if _rt.finite({guard}) else _rt.einsum_sz('{spec}', False, {args})"
        res = Value(self.temp(code), axes, risky=bool(risky))
        if axes == out:
            return res
        perm = tuple(axes.index(a) for a in out)
        view = f"{res.code}.T" if len(out) == 2 else f"{res.code}.transpose({perm})"
        return Value(self.temp(view), out, risky=res.risky)

    def numel(self, axes: Sequence[str], g2: Mapping[str, Axis]) -> int:
        """The number of entries of an array over ``axes`` (unknown sizes count 1000)."""
        return math.prod(_extent_value(g2[a].extent, self.sizes)[1] for a in axes)

    @staticmethod
    def matmul(ops: list[Value], out: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
        """``a @ b`` code for a pairwise contraction that is a (batched) matrix product or a
        matrix-vector product, and the result's axes; None when BLAS does not fit."""
        a, b = ops
        shared = [x for x in a.axes if x in b.axes]
        con = [x for x in shared if x not in out]
        batch = [x for x in shared if x in out]
        fa = [x for x in a.axes if x not in b.axes]
        fb = [x for x in b.axes if x not in a.axes]
        if len(con) != 1 or not set(fa + fb) <= set(out) or len(fa) > 1 or len(fb) > 1:
            return None
        if not fa and not fb:
            return None  # a dot product (batched or not): einsum's inner loop is as good
        if batch and not (fa and fb):
            return None
        if fa and fb and out.index(fb[0]) < out.index(fa[0]):
            a, b, fa, fb = b, a, fb, fa  # (b @ a) needs no transpose of the result

        def view(v: Value, order: list[str]) -> str:
            if list(v.axes) == order:
                return v.code
            if len(order) == 2:
                return f"{v.code}.T"
            return f"{v.code}.transpose({tuple(v.axes.index(x) for x in order)})"

        left = view(a, batch + fa + con)
        right = view(b, batch + con + fb)
        return f"{left} @ {right}", tuple(batch + fa + fb)

    def path(self, operands: list[tuple[str, ...]], out: tuple[str, ...],
             g2: Mapping[str, Axis]) -> list[object] | bool:
        if len(operands) < 2:
            return False
        extents = {a: g2[a].extent for ops in operands for a in ops}
        return ["einsum_path", *contraction_steps(operands, out, extents, self.sizes)]

    # --- statements ----------------------------------------------------------------------------
    def statement(self, s: Statement) -> None:
        self.stmt = s.name
        self.emit(f"# {print_statement(s)}")
        gens = [iv.name for iv in s.indices]
        py = self.py[s.name]
        shape = self._shape_code([Axis.full(iv) for iv in s.indices]) if gens else "()"
        terms = expand(s.body, self.names)
        full = {iv.name: Axis.full(iv) for iv in s.indices}
        risky = False
        plans = []
        for t in terms:
            plan = self.plan_term(t, s)
            if plan is not None:
                plans.append(plan)
        if not gens:
            total = self.combine([t for t, _, _ in plans], {})
            self.decide("assign", "scalar")
            self.emit(f"{py} = _dt({self.to_num(total).code})")
            self.risky_vars.discard(s.name)
            if total.risky:
                self.risky_vars.add(s.name)
            self.shapes[s.name] = ()
            self.kinds[s.name] = "tensor"
            return
        dense = [p for p in plans if not p[2] and all(a.is_full() for a in p[1].values())]
        rest = [p for p in plans if p not in dense]
        if s.name in self.structured and all(solved for _, _, solved in plans):
            # Every term writes at points fixed by equalities: return those points only.
            self.structured_output(py, s, plans, shape)
            self.shapes[s.name] = s.shape
            self.kinds[s.name] = "tensor"
            return
        if s.name in self.structured and len(plans) == 1 and self.outer_output(py, s, plans[0]):
            self.shapes[s.name] = s.shape
            self.kinds[s.name] = "tensor"
            return
        if dense:
            # Terms over the whole output: one expression, assigned (not added to zeros).
            v = self.combine([t for t, _, _ in dense], full)
            self.decide("assign", "dense", tuple(gens))
            v = self.to_num(v)
            final = not rest and s.name not in self.returned
            if v.axes == tuple(gens) and (v.fresh or final):
                # A fresh array, or a view read only by later statements (never mutated).
                self.assign(py, v.code)
            elif final:
                code = self.align(v, gens, False) if v.axes else f"_dt({v.code})"
                self.emit(f"{py} = np.broadcast_to({code}, {shape})")
            elif v.axes == tuple(gens) and v.code.startswith("_rt."):
                self.emit(f"{py} = _rt.fresh({v.code}, _dt)")  # copies only a view
            elif v.axes == tuple(gens):
                self.emit(f"{py} = np.array({v.code}, dtype=_dt)")
            else:
                self.emit(
                    f"{py} = np.broadcast_to({self.align(v, gens, False)}, {shape}).astype(_dt)"
                )
            risky = v.risky
        else:
            self.emit(f"{py} = np.zeros({shape}, dtype=_dt)")
        for t, axes, solved in rest:
            risky |= self.write(py, s, t, axes, solved)
        if risky:
            self.risky_vars.add(s.name)
        self.shapes[s.name] = s.shape
        self.kinds[s.name] = "tensor"

    def plan_term(self, t: Term, s: Statement):
        """Eliminate and fold a statement-level term: (term, generator axes, solved generators)."""
        gens = {iv.name: iv.extent for iv in s.indices}
        # Pull conditions that do not mention a sum's own indices out of sum factors, after
        # eliminating the sums' equalities (so [i == k] inside Σ_k becomes a plain access).
        t = self.pull_out(t)
        if t is None:
            return None
        res = self.eliminate(t, list(gens), gens)
        if res is None:
            return None
        t, solved = res
        axes = {iv.name: Axis.full(iv) for iv in s.indices if iv.name not in solved}
        t = self.fold(t, axes, list(axes))
        return t, axes, solved

    def pull_out(self, t: Term) -> Term | None:
        if t.sums:
            t = Term(1.0, [], [replace(t, coef=1.0)], []) if t.coef == 1 else Term(
                t.coef, [], [replace(t, coef=1.0)], []
            )
        factors: list[Expr | Term] = []
        conds = list(t.conds)
        coef = t.coef
        for f in t.factors:
            if not isinstance(f, Term) or not f.sums:
                factors.append(f)
                continue
            res = self.eliminate(f, [iv.name for iv in f.sums], {iv.name: iv.extent
                                                                  for iv in f.sums})
            if res is None:
                return None
            g, solved = res
            for v in solved:
                self.decide("eliminated", f"sum over {v} removed by an equality")
            j = {iv.name for iv in g.sums}
            out = [c for c in g.conds if not (c.indices() & j)]
            inner = [c for c in g.conds if c.indices() & j]
            conds += out
            if not g.sums:
                coef *= g.coef
                factors += g.factors
                conds += inner
            else:
                factors.append(Term(g.coef, g.sums, g.factors, inner))
        return _decide_static(Term(coef, [], factors, conds))

    def structured_output(self, py: str, s: Statement, plans: list, shape: str) -> None:
        """A returned statement whose terms are all scatters, as a Diagonal or a Sparse."""
        if len(plans) == 1:
            t, axes, solved = plans[0]
            (rem,) = axes if len(axes) == 1 else (None,)
            diagonal = (
                rem is not None and axes[rem].is_full() and not t.conds
                and len({iv.extent for iv in s.indices}) == 1
                and all(a == Affine(((rem, Fraction(1)),)) for a in solved.values())
            )
            if diagonal:
                v = self.to_num(self.term_value(t, dict(axes)))
                code = self.align(v, [rem], False) if v.axes else v.code
                self.decide("diagonal", f"{py} on the diagonal", (rem,))
                self.emit(f"{py} = _rt.Diagonal({code}, {shape}, _dt)")
                return
        self.decide("sparse", f"{py}: {len(plans)} term(s)")
        self.emit(f"{py} = _rt.SparseBuilder({shape}, _dt)")
        for t, axes, solved in plans:
            self.write(py, s, t, axes, solved, sparse=True)
        self.emit(f"{py} = {py}.build()")

    def outer_output(self, py: str, s: Statement, plan: tuple) -> bool:
        """A returned ``y[I, J] = u(I) * v(J)`` as an Outer of its factors; False if not one.

        The factors must split the generators into groups of consecutive axes that share no
        index (``x[i] * x[j]``, ``ybar * a[i, j] * b[k]``); index-free factors join the first.
        """
        from ..cost.model import outer_groups

        t, axes, solved = plan
        gens = [iv.name for iv in s.indices]
        if solved or len(gens) < 2 or t.sums or t.conds:
            return False
        if not all(ax.is_full() for ax in axes.values()):
            return False
        groups = outer_groups(t.factors, gens, lambda f: f.free() if isinstance(f, Term)
                              else set(free_indices(f)))
        if groups is None:
            return False  # an index shared by all factors, or groups that interleave
        if not groups[0][0]:  # index-free factors join the first group
            groups = [(groups[1][0], groups[0][1] + groups[1][1]), *groups[2:]]
        grid = dict(axes)
        codes = []
        for k, (order, fs) in enumerate(groups):
            vals = [self.term_value(f, grid) if isinstance(f, Term) else self.ev(f, grid)
                    for f in fs]
            v = self.to_num(self.product(t.coef if k == 0 else 1.0, vals, grid))
            code = self.align(v, order, False)
            if set(v.axes) != set(order):
                shp = self._shape_code([axes[n] for n in order])
                code = f"np.broadcast_to({code}, {shp})"
            codes.append(code)
        shape = self._shape_code([axes[n] for n in gens])
        self.decide("outer", f"{py}: {len(groups)} factors", tuple(gens))
        self.emit(f"{py} = _rt.Outer(({', '.join(codes)}), {shape}, _dt)")
        return True

    def write(self, py: str, s: Statement, t: Term, axes: dict[str, Axis],
              solved: dict[str, Affine], sparse: bool = False) -> bool:
        sign = 1
        if t.coef < 0:
            sign, t = -1, replace(t, coef=-t.coef)
        op = "+=" if sign > 0 else "-="
        grid = dict(axes)
        # Conditions on the remaining generators: masks applied at the write.
        mask_conds = list(t.conds)
        t = replace(t, conds=[])
        if not axes:
            self.facts = [c.aff for c in mask_conds if c.kind == "ge" and not c.indices()]
        v = self.to_num(self.term_value(t, grid))
        self.facts = []
        rem = list(axes)
        masks = [self.cond_mask(c, grid) for c in mask_conds]
        m = self.conj(masks, grid)
        if not solved:
            region = []
            for iv in s.indices:
                ax = axes[iv.name]
                if ax.is_full():
                    region.append(":")
                else:
                    lo, hi = self.bound_code(ax.lo, True), self.bound_code(ax.hi, False)
                    if not all(self.nonneg(h) for h in ax.hi):
                        hi = f"max({hi}, 0)"  # a negative stop would count from the end
                    region.append(f"{'' if lo == '0' else lo}:{hi}")
            target = rem
            val = v if m is None else self.where(m, v, grid)
            lhs = py if all(r == ":" for r in region) else f"{py}[{', '.join(region)}]"
            kind = "slice-write" if lhs != py else "add"
            self.decide(kind, lhs, tuple(rem))
            self.emit(f"{lhs} {op} {self.align(val, target, False)}")
            return v.risky
        # Scatter: output coordinates from the remaining generators.
        coords: list[str] = []
        for iv in s.indices:
            if iv.name in solved:
                a = solved[iv.name]
                iv_val, q = self.index_value(a, grid)
                code = self.align(iv_val, rem) if iv_val.axes else iv_val.code
                if q != 1:
                    code = f"({code}) // {q}"
                coords.append(code)
            else:
                coords.append(self.align(self.arange(axes[iv.name]), rem))
        if not rem:
            self.decide("point-write", ", ".join(coords))
            line = f"{py}[{', '.join(coords)}] {op} {v.code}"
            if sparse:
                point = f"({coords[0]},)" if len(coords) == 1 else f"({', '.join(coords)})"
                value = f"-{v.paren(_UNARY)}" if sign < 0 else v.code
                line = f"{py}.points.append(({point}, {value}))"
            if m is None:
                self.emit(line)
            else:
                cond = m.code[1:-1] if m.prec == _ATOM and m.code.startswith("(") else m.code
                self.emit(f"if {cond}:")
                self.emit(f"    {line}")
            return v.risky
        self.decide("scatter", f"{py}[{', '.join(coords)}]", tuple(rem))
        if sparse:
            args = [f"({', '.join(coords)},)", self.align(v, rem, False)]
            if m is not None or sign < 0:
                args.append("True" if m is None else self.align(m, rem, False))
            if sign < 0:
                args.append("-1")
            self.emit(f"{py}.add({', '.join(args)})")
        elif m is None:
            self.emit(f"{py}[{', '.join(coords)}] {op} {self.align(v, rem, False)}")
        else:
            self.emit(
                f"_rt.scatter_add({py}, ({', '.join(coords)},), {self.align(v, rem, False)}, "
                f"{self.align(m, rem, False)}, {sign})"
            )
        return v.risky

    # --- the program ---------------------------------------------------------------------------
    def program(self) -> Lowered:
        prog = self.prog
        fname = self.py.get(prog.name, prog.name) if prog.name.isidentifier() else "f"
        if keyword.iskeyword(fname) or fname in _RESERVED:
            fname = f"{fname}_"
        params = ", ".join(self.py[p] for p in prog.param_names)
        header = [f"def {fname}({params}):"]
        doc = [f'    """Generated by eqsat_ad from the index-language program {prog.name!r}."""']
        floats = [self.py[p.name] for p in prog.params if p.kind == "tensor"]
        self.emit(f"_dt = _rt.float_type({', '.join(floats)})")
        seen: set[str] = set()
        for p in prog.params:
            for k, d in enumerate(p.shape):
                if not isinstance(d, int) and d.name not in seen:
                    seen.add(d.name)
                    self.emit(f"{self.py[d.name]} = {self.py[p.name]}.shape[{k}]")
        for s in prog.statements:
            self.statement(s)
        self.stmt = "<return>"
        outs = []
        for o in prog.outputs:
            if isinstance(o, Access) and not o.indices:
                if o.name in {p.name for p in prog.params}:
                    src = self.py[o.name]
                    if self.kinds.get(o.name) == "relation":
                        outs.append(f"np.array({src})")
                    else:
                        outs.append(f"np.array({src}, dtype=_dt)"
                                    if self.shapes[o.name] else f"_dt({src})")
                else:
                    outs.append(self.py[o.name])
                continue
            if free_indices(o):
                raise ProgramError(
                    "an output has free index(es) "
                    f"{', '.join(sorted(free_indices(o)))}; return a tensor variable", o.loc
                )
            self.emit(f"# return {print_expr(o)}")
            v = self.to_num(self.ev(o, {}))
            outs.append(f"_dt({v.code})")
        if prog.returns_tuple:
            ret = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
        else:
            if len(outs) != 1:
                raise ProgramError(f"program {prog.name!r} returns {len(outs)} values")
            ret = outs[0]
        body = self.lines + [f"    return {ret}"]
        src = "\n".join(header + doc + body) + "\n"
        return Lowered(src, tuple(self.decisions), fname, dict(self.extras))


# ================================================================================================
# Contraction order
# ================================================================================================


def contraction_steps(
    operands: Sequence[tuple[str, ...]],
    out: tuple[str, ...],
    extents: Mapping[str, Dim],
    sizes: Mapping[str, int] | None = None,
) -> list[tuple[int, ...]]:
    """Pairwise contraction path (NumPy's format) for operands over named axes.

    Uses the cost model's ``contraction_path`` when it is available, so the backend executes the
    order the cost model priced; otherwise a greedy choice of the cheapest pair (the product of
    the extents of the indices it touches, compared asymptotically, then at ``sizes``).
    """
    try:
        from ..cost.model import contraction_path  # type: ignore[attr-defined]
    except ImportError:
        contraction_path = None
    if contraction_path is not None:
        try:
            path = contraction_path(list(operands), tuple(out), dict(extents), sizes)
            steps = [tuple(p) for p in getattr(path, "steps", path)]
            if _valid_path(steps, len(operands)):
                return steps
        except (TypeError, ValueError, KeyError, AttributeError, EqsatError):
            pass
    return _greedy_path(operands, out, extents, sizes)


def _valid_path(steps: list[tuple], n: int) -> bool:
    for st in steps:
        if not 1 <= len(st) <= 2 or len(set(st)) != len(st):
            return False
        if not all(isinstance(k, int) and 0 <= k < n for k in st):
            return False
        n -= len(st) - 1
    return n == 1


def _extent_value(d: Dim, sizes: Mapping[str, int] | None) -> tuple[int, int]:
    """(degree, value) of an extent: symbolic sizes count as degree 1 and 1000 by default."""
    if isinstance(d, int):
        return 0, d
    return 1, (sizes or {}).get(d.name, 1000)


def _greedy_path(operands, out, extents, sizes) -> list[tuple[int, ...]]:
    ops = [tuple(o) for o in operands]
    steps: list[tuple[int, int]] = []
    while len(ops) > 1:
        best = None
        for a, b in itertools.combinations(range(len(ops)), 2):
            touched = set(ops[a]) | set(ops[b])
            deg = sum(_extent_value(extents[x], sizes)[0] for x in touched)
            val = math.prod(_extent_value(extents[x], sizes)[1] for x in touched)
            if best is None or (deg, val) < best[0]:
                best = ((deg, val), a, b)
        assert best is not None
        _, a, b = best
        others = [o for k, o in enumerate(ops) if k not in (a, b)]
        keep = set(out).union(*others) if others else set(out)
        merged = tuple(x for x in dict.fromkeys(ops[a] + ops[b]) if x in keep)
        steps.append((a, b))
        ops = others + [merged]
    return steps


# ================================================================================================
# Public API
# ================================================================================================


def lower_program(
    prog: Program, sizes: Mapping[str, int] | None = None, *, strict: bool = False,
    structured: bool = False,
) -> Lowered:
    """Lower ``prog`` to NumPy source, recording the lowering's decisions.

    ``sizes`` (optional) break ties between contraction orders; ``strict`` treats every input as
    possibly non-finite (strong-zero products everywhere: used when an argument holds inf/nan).
    ``structured``: an output whose terms all write at points fixed by equality brackets
    (``[i == j] * e``, point reads) is returned as a :class:`~eqsat_ad.backend.structured.Diagonal`
    or :class:`~eqsat_ad.backend.structured.Sparse` instead of a dense array, and one that is a
    product of factors over disjoint indices as an :class:`~eqsat_ad.backend.structured.Outer`.
    """
    if not isinstance(prog, Program):
        raise ProgramError(f"expected a Program, got {type(prog).__name__}")
    return _Codegen(prog, sizes, strict, structured).program()


def lower(prog: Program, sizes: Mapping[str, int] | None = None) -> str:
    """Python source of a function taking ``prog``'s parameters in order (arrays) and returning
    its outputs, using ``np`` (NumPy) and ``_rt`` (:mod:`eqsat_ad.backend.runtime`)."""
    return lower_program(prog, sizes).source


def _load(lowered: Lowered) -> Any:
    ns: dict[str, Any] = {"np": np, "_rt": runtime, **lowered.namespace_extras}
    code = compile(lowered.source, f"<eqsat_ad generated {lowered.function_name}>", "exec")
    exec(code, ns)  # noqa: S102 - our own generated source
    fn = ns[lowered.function_name]
    # The parameters whose finiteness the fast code trusts without checking it itself.
    fn.finite_inputs = tuple(d.detail for d in lowered.decisions if d.kind == "finite-input")
    return fn


class CompiledProgram:
    """A program compiled to NumPy: call it like the program (positional or keyword arguments).

    ``.source`` is the generated Python source (sizes symbolic), ``.program`` the program it
    runs, ``.decisions`` the lowering's choices. Each shape/dtype signature of the arguments gets
    its own compiled function (the same code; contraction orders may use the concrete sizes).
    """

    def __init__(self, prog: Program, structured: bool = False) -> None:
        self.program = prog
        self.structured = structured
        self._lowered = lower_program(prog, structured=structured)
        self._by_signature: dict[tuple, Any] = {}
        self._by_arrays: dict[tuple, tuple] = {}  # (shape, dtype) per argument -> fn, sizes
        self._lock = threading.Lock()
        self._param_index = {n: k for k, n in enumerate(prog.param_names)}
        self._param_names = prog.param_names
        # Each parameter's dimensions: ints, or size names.
        self._dims = [tuple(d if isinstance(d, int) else d.name for d in p.shape)
                      for p in prog.params]

    @property
    def source(self) -> str:
        return self._lowered.source

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return self._lowered.decisions

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}({', '.join(self.program.param_names)})>"

    def bind(self, *args: Any, **kwargs: Any) -> tuple[list[np.ndarray], dict[str, int]]:
        """Check and convert arguments; returns them in parameter order and the sizes.

        Arrays are used as they are when they already fit (no copy); anything unusual goes
        through the interpreter's binder, whose errors name the parameter.
        """
        params = self.program.params
        try:
            if len(args) > len(params):
                raise _Slow
            given = dict(zip(self._param_names, args, strict=False))
            for k, v in kwargs.items():
                if k in given or k not in self._param_index:
                    raise _Slow
                given[k] = v
            if len(given) != len(params):
                raise _Slow
            return self._fast_bind(given)
        except _Slow:
            from ..ir.interpreter import bind_arguments

            bind_arguments(self.program, *args, **kwargs)  # raises a ShapeError with details
            raise ShapeError(f"arguments do not fit {self!r}") from None

    def _fast_bind(self, given: Mapping[str, Any]) -> tuple[list[np.ndarray], dict[str, int]]:
        raw: list[np.ndarray] = []
        strong: list[np.dtype] = []  # dtypes of real arrays (Python numbers are weak)
        sizes: dict[str, int] = {}
        for p, dims in zip(self.program.params, self._dims, strict=True):
            v = given[p.name]
            try:
                a = v if type(v) is np.ndarray else np.asarray(v)
            except (ValueError, TypeError):  # a ragged list: the slow path names the argument
                raise _Slow from None
            if a.ndim != len(dims):
                raise _Slow
            for d, n in zip(dims, a.shape, strict=True):
                if type(d) is int:
                    if d != n:
                        raise _Slow
                elif sizes.setdefault(d, n) != n:
                    raise _Slow
            if p.kind == "relation":
                if a.dtype != bool:
                    if a.dtype.kind not in "iuf" or not np.all((a == 0) | (a == 1)):
                        raise _Slow
                    a = a.astype(bool)
            else:
                if a.dtype.kind not in "biuf":
                    raise _Slow
                if isinstance(v, (np.ndarray, np.generic)):
                    strong.append(a.dtype)
            raw.append(a)
        # (dtype objects, not scalar types: comparing a dtype with a type converts it per call)
        dt = _F64
        if strong and all(d == _F32 for d in strong):
            dt = _F32
        out = [a if p.kind == "relation" or a.dtype == dt else a.astype(dt)
               for a, p in zip(raw, self.program.params, strict=True)]
        return out, sizes

    def function_for(
        self, arrays: Sequence[np.ndarray], sizes: Mapping[str, int], strict: bool = False
    ) -> tuple[Any, bool]:
        """The generated function for this signature, and whether non-finite inputs need the
        strict lowering (False when it is the same code: nothing trusts finiteness)."""
        key = (strict, tuple(sizes.items()), tuple(a.dtype.char for a in arrays))
        hit = self._by_signature.get(key)
        if hit is None:
            with self._lock:
                hit = self._by_signature.get(key)
                if hit is None:
                    lowered = lower_program(self.program, sizes, strict=strict,
                                            structured=self.structured)
                    check = not strict and (
                        lower_program(self.program, sizes, strict=True,
                                      structured=self.structured).source != lowered.source
                    )
                    hit = (_load(lowered), check)
                    self._by_signature[key] = hit
        return hit

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = hit = None
        if not kwargs and len(args) == len(self._param_names) and all(
            type(a) is np.ndarray for a in args
        ):
            # Repeated calls with arrays of one signature skip the binder's checks.
            key = tuple((a.shape, a.dtype) for a in args)
            hit = self._by_arrays.get(key)
        if hit is not None:
            fn, check, sizes, casts = hit
            arrays = [a if c is None else a.astype(c) for a, c in zip(args, casts, strict=True)]
        else:
            arrays, sizes = self.bind(*args, **kwargs)
            if 0 in sizes.values():
                # Empty tensors: nothing to compute fast; the interpreter defines the zeros.
                from ..ir.interpreter import evaluate

                return evaluate(self.program, *args, **kwargs)
            fn, check = self.function_for(arrays, sizes)
            casts = tuple(None if b is a else b.dtype
                          for a, b in zip(args, arrays, strict=False))
            relation_cast = any(c is not None and p.kind == "relation"
                                for c, p in zip(casts, self.program.params, strict=False))
            # (a relation given as numbers is checked to hold 0/1 at every call: not cached)
            if key is not None and not relation_cast and len(self._by_arrays) < 64:
                self._by_arrays[key] = (fn, check, sizes, casts)
        with np.errstate(all="ignore"):
            if check:
                # The fast code trusts the parameters it reads to be finite (it guards only
                # what it computes that may overflow): it checks some through the results of
                # their products (raising NonFinite), the caller scans the others here. An
                # inf/nan argument takes strong-zero products everywhere (the strict code).
                try:
                    if runtime.finite(*(arrays[self._param_index[n]] for n in fn.finite_inputs)):
                        return _finish(fn(*arrays), self.program)
                except runtime.NonFinite:
                    pass
                fn = self.function_for(arrays, sizes, strict=True)[0]
            result = fn(*arrays)
        return _finish(result, self.program)


class _Slow(Exception):
    """Arguments need the careful (error-reporting) binder."""


def _finish(result: Any, prog: Program) -> Any:
    def one(x: Any) -> Any:
        if (isinstance(x, np.ndarray) and x.ndim > 0) or isinstance(x, Sparse | Outer):
            return x
        x = np.asarray(x)
        if x.dtype == bool:
            return x
        return float(x) if x.dtype == np.float64 else x.dtype.type(x)

    if prog.returns_tuple:
        return tuple(one(x) for x in result)
    return one(result)


_CACHE: dict[tuple[Program, bool], CompiledProgram] = {}
_CACHE_LIMIT = 256
# Generated code binds registered functions by name: a re-registration invalidates it.
on_register(_CACHE.clear)


def compile_program(prog: Program, structured: bool = False) -> CompiledProgram:
    """The compiled form of ``prog`` (cached per program; per shape/dtype inside).

    ``structured``: return diagonal / point-sparse outputs as such (see :func:`lower_program`).
    """
    if not isinstance(prog, Program):
        raise ProgramError(f"expected a Program, got {type(prog).__name__}")
    key = (prog, bool(structured))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    compiled = CompiledProgram(prog, bool(structured))
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = compiled
    return compiled
