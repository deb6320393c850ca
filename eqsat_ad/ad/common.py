"""Shared pieces of the AD transformations: errors, folding constructors, naming, clean-up.

Folding is deliberately trivial (``0*e -> 0``, ``1*e -> e``, ``e+0 -> e`` and friends): every
algebraic simplification beyond that belongs to the optimizer. ``0*e -> 0`` is sound for every
``e`` because the literal 0 is a strong zero (docs/semantics.md): a derivative that is
identically zero is never multiplied by anything, even inf.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence

from ..ir.errors import ProgramError
from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Loc,
    Neg,
    Pow,
    Pred,
    Sum,
    accessed_names,
    all_index_names,
    conj,
    fresh_name,
    rename,
)
from ..ir.index import Affine, IndexVar
from ..ir.program import Param, Program, Statement


class DifferentiationError(ProgramError):
    """A program, ``wrt`` or derivative rule that automatic differentiation cannot handle."""


def transformation[**P, R](fn: Callable[P, R]) -> Callable[P, R]:
    """Report a too deeply nested program as our error, not as a RecursionError traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise DifferentiationError(
                f"{fn.__name__}: the program is nested too deeply for Python's recursion "
                "limit; split long expressions into several statements"
            ) from None

    return wrapper


# ================================================================================================
# Folding constructors
# ================================================================================================

ZERO = Const(0.0)
ONE = Const(1.0)


def is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 0.0


def is_one(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 1.0


def f_add(a: Expr, b: Expr) -> Expr:
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    if isinstance(b, Neg):
        return Binary("-", a, b.arg)
    return Binary("+", a, b)


def f_sub(a: Expr, b: Expr) -> Expr:
    if is_zero(b):
        return a
    if is_zero(a):
        return f_neg(b)
    if isinstance(b, Neg):
        return Binary("+", a, b.arg)
    return Binary("-", a, b)


def f_neg(a: Expr) -> Expr:
    if isinstance(a, Const):
        return Const(-a.value) if a.value != 0.0 else ZERO
    if isinstance(a, Neg):
        return a.arg
    return Neg(a)


def f_mul(a: Expr, b: Expr) -> Expr:
    # The literal 0 is a strong zero: 0 * e is 0 even where e is not finite.
    if is_zero(a) or is_zero(b):
        return ZERO
    if is_one(a):
        return b
    if is_one(b):
        return a
    if isinstance(a, Const) and isinstance(b, Const) and a.value * b.value != 0 and math.isfinite(
            a.value * b.value):  # (no 0 from nonzero numbers, no inf: docs/semantics.md)
        return Const(a.value * b.value)
    if isinstance(a, Const) and a.value == -1.0:
        return f_neg(b)
    if isinstance(b, Const) and b.value == -1.0:
        return f_neg(a)
    if isinstance(a, Neg):
        return f_neg(f_mul(a.arg, b))
    if isinstance(b, Neg):
        return f_neg(f_mul(a, b.arg))
    # a * (1 / d) is NOT folded to a / d: for a tiny d, 1 / d overflows to inf, so the product
    # is nan where a is 0.0 but the quotient is 0 (IEEE, docs/semantics.md).
    return Binary("*", a, b)


def f_div(a: Expr, b: Expr) -> Expr:
    if is_zero(a):
        return ZERO
    if is_one(b):
        return a
    if isinstance(a, Neg):
        return f_neg(f_div(a.arg, b))
    return Binary("/", a, b)


def f_pow(base: Expr, k: float) -> Expr:
    if k == 0.0:
        return ONE
    if k == 1.0:
        return base
    return Pow(base, k)


def f_sum(ivs: Sequence[IndexVar], body: Expr, loc: Loc | None = None) -> Expr:
    if is_zero(body):
        return ZERO
    if not ivs:
        return body
    return Sum(tuple(ivs), body, loc)


def f_product(factors: Iterable[Expr]) -> Expr:
    out: Expr = ONE
    for f in factors:
        out = f_mul(out, f)
    return out


def bracket(preds: Sequence[Pred]) -> Expr:
    """``[p1 and p2 ...]``; the empty conjunction is 1."""
    return Bracket(conj(*preds)) if preds else ONE


def eq_pred(a: Affine, b: Affine) -> Cmp:
    return Cmp("==", a, b)


# ================================================================================================
# Names
# ================================================================================================


def program_names(prog: Program) -> set[str]:
    """Every tensor, relation and size name of ``prog`` (the names a new variable must avoid)."""
    names = {p.name for p in prog.params} | {s.name for s in prog.statements}
    names |= set(prog.size_names())
    for s in prog.statements:
        for iv in s.indices:
            if not isinstance(iv.extent, int):
                names.add(iv.extent.name)
    return names


def program_index_names(prog: Program) -> set[str]:
    out: set[str] = set()
    for s in prog.statements:
        out |= {iv.name for iv in s.indices}
        out |= all_index_names(s.body)
    for o in prog.outputs:
        out |= all_index_names(o)
    return out


INDEX_POOL = ("i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "t", "u", "v")


def pick_indices(count: int, avoid: set[str]) -> list[str]:
    """``count`` distinct readable index names not in ``avoid`` (pool names first)."""
    out = [n for n in INDEX_POOL if n not in avoid][:count]
    taken = set(avoid) | set(out)
    while len(out) < count:
        name = fresh_name("i", taken)
        taken.add(name)
        out.append(name)
    return out


class Names:
    """The names taken in a program under construction.

    New variables (statements, parameters) must differ from every tensor, size AND index name;
    new index names only from tensor and size names (index names are scoped per statement).
    """

    def __init__(self, prog: Program) -> None:
        self.variables = program_names(prog)
        self.indices = program_index_names(prog)

    def variable(self, base: str) -> str:
        """A fresh variable name: ``base`` itself when free."""
        name = fresh_name(base, self.variables | self.indices)
        self.variables.add(name)
        return name

    def is_free(self, name: str) -> bool:
        return name not in self.variables and name not in self.indices

    def take(self, name: str) -> str:
        self.variables.add(name)
        return name

    def pick_indices(self, count: int, also_avoid: Iterable[str] = ()) -> list[str]:
        """``count`` readable index names for a new statement."""
        out = pick_indices(count, self.variables | set(also_avoid))
        self.indices.update(out)
        return out


def deshadow(e: Expr, outer: set[str]) -> Expr:
    """Rename binders of ``e`` that re-bind a name already bound outside them.

    Shadowing is legal but confusing (and some checks reject it); adjoint bodies are assembled
    from pieces of different statements, so this is where it would creep in.
    """
    match e:
        case Sum(ivs, body, loc):
            avoid = outer | all_index_names(body)
            renames: dict[str, str] = {}
            new_ivs: list[IndexVar] = []
            for iv in ivs:
                if iv.name in outer:
                    nn = fresh_name(iv.name, avoid)
                    avoid.add(nn)
                    renames[iv.name] = nn
                    new_ivs.append(IndexVar(nn, iv.extent))
                else:
                    new_ivs.append(iv)
            if renames:
                body = rename(body, renames)
            inner = outer | {iv.name for iv in new_ivs}
            return Sum(tuple(new_ivs), deshadow(body, inner), loc)
        case Binary(op, lhs, rhs, loc):
            return Binary(op, deshadow(lhs, outer), deshadow(rhs, outer), loc)
        case Neg(arg, loc):
            return Neg(deshadow(arg, outer), loc)
        case Pow(base, k, loc):
            return Pow(deshadow(base, outer), k, loc)
        case Call(fn, args, loc):
            return Call(fn, tuple(deshadow(a, outer) for a in args), loc)
    return e


# ================================================================================================
# Validation and clean-up
# ================================================================================================


def normalize_wrt(prog: Program, wrt: str | Sequence[str]) -> tuple[str, ...]:
    """Check ``wrt`` names float tensor parameters, once each; return them as a tuple."""
    names = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    if not names:
        raise DifferentiationError("wrt is empty: name at least one parameter")
    seen: set[str] = set()
    for n in names:
        if not isinstance(n, str):
            raise DifferentiationError(f"wrt must hold parameter names, got {n!r}")
        try:
            p = prog.param(n)
        except KeyError:
            known = ", ".join(prog.param_names) or "none"
            raise DifferentiationError(
                f"cannot differentiate with respect to {n!r}: not a parameter of "
                f"{prog.name!r} (parameters: {known})"
            ) from None
        if p.kind == "relation":
            raise DifferentiationError(
                f"cannot differentiate with respect to relation {n!r}: relations are boolean "
                "data and have no derivative",
                p.loc,
            )
        if n in seen:
            raise DifferentiationError(f"{n!r} appears twice in wrt")
        seen.add(n)
    return names


def active_names(prog: Program, wrt: Iterable[str]) -> set[str]:
    """Names whose value depends on a ``wrt`` parameter (forward activity analysis)."""
    active = set(wrt)
    for s in prog.statements:
        if s.reads() & active:
            active.add(s.name)
    return active


def prune(
    params: tuple[Param, ...],
    statements: Sequence[Statement],
    outputs: tuple[Expr, ...],
    returns_tuple: bool,
    name: str,
) -> Program:
    """The program with statements the outputs do not need removed (dead code)."""
    needed: set[str] = set()
    for o in outputs:
        needed |= accessed_names(o)
    kept: list[Statement] = []
    for s in reversed(statements):
        if s.name in needed:
            kept.append(s)
            needed |= s.reads()
    return Program(params, tuple(reversed(kept)), outputs, returns_tuple, name)


def is_tensor_output(prog: Program, out: Expr) -> bool:
    """A bare access ``y`` to a tensor (rank > 0) variable, as allowed in ``return y``."""
    if not (isinstance(out, Access) and not out.indices):
        return False
    try:
        return len(prog.shape_of(out.name)) > 0
    except KeyError:
        return False
