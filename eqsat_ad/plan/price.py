"""The price of a program: the price of the plan the backend runs for it.

:func:`program_plan` lowers a program (the NumPy backend's lowering records every kernel it
emits, see :mod:`eqsat_ad.plan.kernels`) and :func:`program_cost` sums those kernels per
statement. So the figure the report prints, the figure the optimizer's safety net compares and
the code that runs are one object: there is no second model of execution to disagree with.

:func:`eager_cost` prices what a tape-based system (autograd, PyTorch eager) pays for the same
adjoint: each term of a statement (one per indexing operation of the forward program) is its own
dense array of the statement's shape, accumulated into the adjoint.

:func:`backend_price` prices what a fusing backend runs instead (``backend="numba"``: loop nests
between NumPy statements, its schedule's price), for extraction, the safety net and the report.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import sympy

from ..ir.errors import EqsatError
from ..ir.expr import Binary, Expr, Neg
from ..ir.printer import print_expr, print_fold, print_statement
from ..ir.program import Fold, Param, Program
from ..ir.selection import needs_guard
from .guard_price import exact_ranges
from .kernels import Check, Kernel, Plan, total
from .poly import ZERO, Poly, big_o, compare

__all__ = [
    "Materialized", "ProgramCost", "StatementCost", "backend_price", "call_cost",
    "eager_cost", "materialized_sizes", "member_count_names", "normalize_sizes",
    "program_cost", "program_plan", "sparse_relations", "statement_terms_count",
]


@dataclass(frozen=True)
class Materialized:
    """One array the generated code allocates: its statement, what it is, its element count."""

    statement: str
    what: str
    elements: Poly


@dataclass(frozen=True)
class StatementCost:
    """The price of one statement (or the returned expressions, ``kind == "output"``)."""

    name: str
    text: str
    poly: Poly
    materialized: tuple[Materialized, ...]
    kind: str = "statement"

    @functools.cached_property
    def cost(self) -> sympy.Expr:
        return self.poly.to_sympy()

    @property
    def writes(self) -> Poly:
        """Elements of the largest array the statement allocates."""
        return max((m.elements for m in self.materialized),
                   key=functools.cmp_to_key(compare), default=ZERO)


@dataclass(frozen=True)
class ProgramCost:
    """Per-statement and total prices of a program's plan (SymPy views computed on demand)."""

    details: tuple[StatementCost, ...]
    sizes: Mapping[str, int] | None = None
    plan: Plan = Plan(())

    @functools.cached_property
    def total_poly(self) -> Poly:
        out = ZERO
        for d in self.details:
            out = out + d.poly
        return out

    @functools.cached_property
    def total(self) -> sympy.Expr:
        return self.total_poly.to_sympy()

    @functools.cached_property
    def statements(self) -> dict[str, sympy.Expr]:
        """Statement name → expanded SymPy cost polynomial (outputs excluded)."""
        return {d.name: d.cost for d in self.details if d.kind == "statement"}

    @property
    def materialized(self) -> tuple[Materialized, ...]:
        return tuple(m for d in self.details for m in d.materialized)

    def largest_intermediate(self) -> Materialized | None:
        """The largest array allocated (by :func:`compare`, ties: first), or None."""
        best: Materialized | None = None
        for m in self.materialized:
            if best is None or compare(m.elements, best.elements, self.sizes) > 0:
                best = m
        return best

    def value(self, sizes: Mapping[str, int] | None = None) -> Fraction:
        """The total at concrete sizes (default: the sizes it was priced with)."""
        sizes = self.sizes if sizes is None else sizes
        if sizes is None:
            raise EqsatError("no sizes given to evaluate the cost at")
        return Fraction(self.total_poly.evaluate(sizes))

    def big_o(self) -> str:
        return big_o(self.total_poly)

    def __str__(self) -> str:
        lines = [f"total {self.total}  {self.big_o()}"]
        lines += [f"  {d.name}: {d.cost}  ({big_o(d.poly)})" for d in self.details]
        return "\n".join(lines)


def normalize_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    """``sizes`` as a plain ``dict[str, int]`` (NumPy integers accepted), or a clear error."""
    if not isinstance(sizes, Mapping):
        raise EqsatError(f"sizes must map size names to integers, got {type(sizes).__name__}")
    out: dict[str, int] = {}
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise EqsatError(f"size {k!r} must be a non-negative integer, got {v!r}")
        out[str(k)] = int(v)
    return out


def _check(prog: Program, sizes: Mapping[str, int] | None) -> dict[str, int] | None:
    if not isinstance(prog, Program):
        raise EqsatError(f"expected a Program, got {type(prog).__name__}")
    if sizes is None:
        return None
    out = normalize_sizes(sizes)
    missing = [n for n in prog.size_names() if n not in out]
    if missing:
        raise EqsatError(f"no value given for the size(s) {', '.join(missing)}")
    return out


def sparse_relations(prog: Program, sizes: Mapping[str, int] | None) -> frozenset[str]:
    """The relation parameters priced by their members: those whose member count
    ``nnz_<name>`` is given in ``sizes`` (as a SciPy sparse or index-array argument runs)."""
    if not sizes:
        return frozenset()
    return frozenset(p.name for p in prog.params
                     if p.kind == "relation" and f"nnz_{p.name}" in sizes)


def member_count_names(prog: Program, sizes: Mapping[str, int] | None) -> list[str]:
    """The size symbols ``nnz_<name>`` of :func:`sparse_relations` (priced like sizes)."""
    return [f"nnz_{n}" for n in sorted(sparse_relations(prog, sizes))]


def program_plan(prog: Program, sizes: Mapping[str, int] | None = None,
                 structured: bool = False) -> Plan:
    """The kernels the backend runs for ``prog`` (contraction orders chosen at ``sizes``; a
    relation with ``nnz_<name>`` in ``sizes`` runs by its members)."""
    return _lowered(prog, sizes, structured).plan


def program_code(prog: Program, sizes: Mapping[str, int] | None = None,
                 structured: bool = False) -> tuple[str, ...]:
    """The lines of code the backend runs for ``prog`` (the lowering :func:`program_plan`
    prices, reused, not redone; each statement's comment, which prints it as written, left
    out): two programs with the same lines run the same code."""
    source = _lowered(prog, sizes, structured).source
    return tuple(line for line in source.splitlines() if not line.lstrip().startswith("#"))


def _lowered(prog: Program, sizes: Mapping[str, int] | None, structured: bool) -> Any:
    """The backend's lowering of ``prog`` at ``sizes`` (cached by the backend: the plan and the
    code come from one lowering)."""
    from .lower import lower_program

    checked = _check(prog, sizes)
    return lower_program(prog, checked, structured=structured,
                         sparse=sparse_relations(prog, checked))


def program_cost(
    prog: Program, sizes: Mapping[str, int] | None = None, *, structured: bool = False,
    lowered: bool = True,
) -> ProgramCost:
    """The price of the plan the backend runs for ``prog``, per statement.

    ``sizes`` choose contraction orders (as the compiled code does at those sizes) and let
    :meth:`ProgramCost.value` evaluate the total. ``structured``: price outputs as
    ``structured=True`` compiles them (diagonal / point-sparse / outer-product storage).
    ``lowered`` is accepted for compatibility: there is one price, the plan's.
    """
    del lowered
    checked = _check(prog, sizes)
    if prog.folds:
        return _with_folds(prog, checked, structured)
    plan = program_plan(prog, checked, structured)
    texts = {s.name: print_statement(s) for s in prog.statements}
    # the kernels grouped by statement once (in plan order), not rescanned per statement
    by_statement: dict[str, list[Kernel]] = {}
    for k in plan.kernels:
        by_statement.setdefault(k.statement, []).append(k)
    details: list[StatementCost] = []
    for name in [s.name for s in prog.statements] + ["<return>"]:
        ks = by_statement.get(name, [])
        poly = ZERO
        for k in ks:
            poly = poly + k.cost
        mats = tuple(Materialized(name, f"{k.kind} {k.detail}".strip(), k.alloc)
                     for k in ks if not k.alloc.is_zero())
        if name == "<return>":
            text = "return " + ", ".join(print_expr(o) for o in prog.outputs)
            details.append(StatementCost(name, text, poly, mats, "output"))
        else:
            details.append(StatementCost(name, texts[name], poly, mats))
    return ProgramCost(tuple(details), checked, plan)


INPUTS = "<inputs>"
"""The row of the passes over arguments that run before the generated function."""


def _checks(prog: Program, names: Iterable[str], what: str
            ) -> tuple[StatementCost, tuple[Check, ...]] | None:
    """The row ``<inputs>`` and its kernels: a read-only pass over each tensor parameter of
    ``prog`` named in ``names`` (None when there is none)."""
    wanted = set(names)
    scanned = [p for p in prog.params if p.kind == "tensor" and p.name in wanted and p.shape]
    if not scanned:
        return None
    checks = tuple(Check(INPUTS, Poly.product_of_dims(p.shape), ZERO, f"{what} {p.name}")
                   for p in scanned)
    row = StatementCost(INPUTS, f"{what} {', '.join(p.name for p in scanned)}",
                        total(k.cost for k in checks), (), "check")
    return row, checks


def call_cost(cost: ProgramCost, prog: Program, structured: bool = False,
              guarded_by: Program | None = None,
              guard_sizes: Mapping[str, int] | None = None) -> ProgramCost:
    """``cost`` (:func:`program_cost` of ``prog``: its generated function) with the passes over
    the arguments that a call runs before it, as the row ``<inputs>``: the caller's finite scan
    of each parameter the fast code trusts (``finite-input``); or, for optimized code guarded by
    the unoptimized program ``guarded_by`` (backend/guard.py), the guard's pass over every
    tensor argument either program reads (one BLAS dot each: a bound on its values, which
    proves both programs finite) instead. ``guard_sizes``: the NumPy backend's guard at these
    sizes, which scans the exact range of the arguments whose magnitude bound proves too little
    on data of unit scale (two passes each instead of the dot:
    :func:`~eqsat_ad.plan.guard_price.exact_ranges`)."""
    if prog.folds:  # (a rolled loop's body scans its own inputs: priced by the body's plan)
        return cost
    if guarded_by is not None and needs_guard(guarded_by, prog):
        # (_checks keeps the parameters among the names read)
        read = guarded_by.names_read() | prog.names_read()
        exact = frozenset() if guard_sizes is None else exact_ranges(guarded_by, prog,
                                                                     guard_sizes)
        found = _guard_checks(prog, read, exact)
    else:
        decisions = _lowered(prog, cost.sizes, structured).decisions
        found = _checks(prog, (d.detail for d in decisions if d.kind == "finite-input"),
                        "finite scan of")
    if found is None:
        return cost
    row, checks = found
    return ProgramCost((row, *cost.details), cost.sizes,
                       Plan((*checks, *cost.plan.kernels), cost.plan.lifetimes))


def _guard_checks(prog: Program, read: frozenset[str], exact: frozenset[str]
                  ) -> tuple[StatementCost, tuple[Check, ...]] | None:
    """The guard's row ``<inputs>``: one pass over each argument read, two (its smallest and
    largest entry) over each one in ``exact``."""
    one = _checks(prog, read - exact, "guard: one pass over")
    two = _checks(prog, read & exact, "guard: exact range of")
    if two is None:
        return one
    checks = (*(one[1] if one else ()),
              *(replace(k, detail=f"{end} {k.detail}") for k in two[1] for end in ("min:", "max:")))
    text = "; ".join(r[0].text for r in (one, two) if r is not None)
    return StatementCost(INPUTS, text, total(k.cost for k in checks), (), "check"), checks


def _fold_cost(f: Fold, sizes: Mapping[str, int] | None) -> StatementCost:
    """A rolled loop: T times the price of its body's plan (priced once), plus the stacks it
    writes (what the backend's loop allocates)."""
    body = program_cost(f.body, None if sizes is None else
                        {n: sizes[n] for n in f.body.size_names() if n in sizes})
    stored = tuple(Materialized(f.names[0], f"stack {n}",
                                Poly.product_of_dims(f.result_shape(n)))
                   for n in f.names[len(f.carry):])
    work = body.total_poly * Poly.of_dim(f.trip)
    for m in stored:
        work = work + m.elements
    return StatementCost(f.names[0], print_fold(f), work, stored, "statement")


def _with_folds(prog: Program, sizes: Mapping[str, int] | None, structured: bool
                ) -> ProgramCost:
    """A program with rolled loops: each fold priced by its body, the other statements by the
    plan of the program that reads the folds' results as parameters (as the backend runs it)."""
    results = [Param(n, f.result_shape(n)) for f in prog.folds for n in f.names]
    rest = Program(
        (*prog.params, *results),
        tuple(s for s in prog.statements if not isinstance(s, Fold)),
        prog.outputs, prog.returns_tuple, prog.name,
    )
    around = program_cost(rest, sizes, structured=structured)
    by_name = {d.name: d for d in around.details}
    details: list[StatementCost] = []
    for s in prog.statements:
        details.append(_fold_cost(s, sizes) if isinstance(s, Fold) else by_name[s.name])
    details.append(by_name["<return>"])
    return ProgramCost(tuple(details), sizes, around.plan)


def materialized_sizes(
    prog: Program, sizes: Mapping[str, int] | None = None
) -> dict[str, tuple[sympy.Expr, ...]]:
    """Statement (or ``<return>``) name → element counts of every array its code allocates.

    Counting, not timing: ``max(degree(e) for es in materialized_sizes(p).values() for e in es)``
    is the exponent of the largest temporary the generated code allocates.
    """
    cost = program_cost(prog, sizes)
    return {d.name: tuple(m.elements.to_sympy() for m in d.materialized) for d in cost.details}


def statement_terms_count(body: Expr) -> int:
    """The number of top-level terms of a statement body (split at ``+``, ``-``, unary ``-``)."""
    match body:
        case Binary("+" | "-", lhs, rhs):
            return statement_terms_count(lhs) + statement_terms_count(rhs)
        case Neg(arg):
            return statement_terms_count(arg)
    return 1


def eager_cost(prog: Program, sizes: Mapping[str, int] | None = None,
               structured: bool = False, plan_cost: ProgramCost | None = None) -> Poly:
    """What a tape-based AD system pays for the adjoint ``prog``: the naive plan plus one dense
    array of the statement's shape for every term beyond the first (a tape materializes each
    indexing operation's adjoint on its own and sums them; the naive plan writes them all into
    one array). ``Σ_t A[t, t]`` for 32 traces: ``32·N²``."""
    cost = plan_cost if plan_cost is not None else program_cost(prog, sizes,
                                                                structured=structured)
    extra = ZERO
    for s in prog.statements:
        if isinstance(s, Fold):  # a loop's steps are priced by its body, as the naive plan
            continue
        k = statement_terms_count(s.body)
        if s.indices and k > 1:
            extra = extra + Poly.product_of_dims(s.shape) * (k - 1)
    return cost.total_poly + extra


def backend_price(prog: Program, backend: str,
                  sizes: Mapping[str, int] | None = None) -> Poly | None:
    """What ``backend`` runs for ``prog`` at ``sizes`` (those known) priced as a whole, where
    that is not the NumPy plan's price: for ``"numba"``, its fused schedule's (loop nests and
    NumPy statements, :func:`eqsat_ad.backend.fused.price.fused_price`); None for ``"numpy"``,
    and for a program with rolled loops, which runs as the NumPy backend runs it under either
    backend."""
    if backend != "numba" or prog.folds:
        return None
    # (the fused schedule is priced by the module that writes its loop nests)
    from ..backend.fused.price import fused_price

    return fused_price(prog, sizes)
