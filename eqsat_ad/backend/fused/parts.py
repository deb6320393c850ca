"""NumPy parts: the statements a fused program runs as the NumPy backend's code.

A statement the schedule places ``numpy`` runs as a program of its own, compiled by the NumPy
backend (:func:`..numpy.compile_program`), which the fused module calls. Consecutive such
statements run as one part: one call, its binding and flag checks once rather than per
statement (mlp's gradient: six parts became two), and the NumPy backend lowers the run as one
function. A part returns what later statements or the program's outputs read; a statement
only its own run reads stays inside.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from ...ir.expr import Access, accessed_names
from ...ir.index import Dim
from ...ir.printer import print_program
from ...ir.program import Param, Program, Statement
from ...plan.lower import lower_program
from ...plan.poly import ZERO, Poly

__all__ = ["Part", "alone_price", "part_call", "part_lines", "part_program", "read_after"]


class Part:
    """A run of statements as one NumPy program: its function's name in the module, the
    arrays it reads (the program's parameters, then stored arrays), the statements whose
    values it returns, and the digest of its program (for the module's source)."""

    def __init__(self, prog: Program, shapes: Mapping[str, tuple[Dim, ...]],
                 run: Sequence[Statement], returned: Sequence[str],
                 signed: frozenset[str]) -> None:
        reads: set[str] = set()
        for s in run:
            reads |= accessed_names(s.body)
        # (a run's own statements are computed inside it; a lone statement's part reads what
        # its body reads, as it always did)
        defined = {s.name for s in run} if len(run) > 1 else set()
        stored = sorted(reads - set(prog.param_names) - defined)
        params = prog.params + tuple(Param(n, shapes[n]) for n in stored)
        self.name = f"_np_{run[0].name}"
        self.reads = [*prog.param_names, *stored]
        self.returned = list(returned)
        self.single = len(run) == 1
        # (one statement: the program it always was, so a module's source, and Numba's cache
        # of it, stay as they were)
        self.program = (
            Program(params, (run[0],), (Access(run[0].name),), False, self.name) if self.single
            else Program(params, tuple(run), tuple(Access(n) for n in returned), True,
                         self.name))
        text = f"{print_program(self.program)}\n{sorted(signed)}"
        self.digest = hashlib.sha1(text.encode()).hexdigest()[:16]


def part_program(prog: Program, shapes: Mapping[str, tuple[Dim, ...]], s: Statement) -> Program:
    """The one statement ``s`` as a program of its own: every parameter of ``prog`` (they bind
    the size symbols), then the stored arrays it reads (``shapes``: theirs)."""
    return Part(prog, shapes, (s,), (s.name,), frozenset()).program


def alone_price(prog: Program, shapes: Mapping[str, tuple[Dim, ...]], s: Statement,
                signed: frozenset[str]) -> Poly:
    """The price of ``s``'s NumPy code run on its own (what a NumPy-placed statement runs),
    less the copy that keeps a program's output apart from its inputs (the fused program
    passes the part's result on without one); ``signed``: as :func:`.lower_program` takes it."""
    price = ZERO
    for k in lower_program(part_program(prog, shapes, s), signed=signed).plan.kernels:
        if k.detail != "copy":
            price = price + k.cost
    return price


def _call(part: Part, shapes: Mapping[str, tuple[Dim, ...]]) -> str:
    """``part``'s function called on the arrays it reads (a scalar as a 0-d array), after
    ``_fin``: whether the guard proved every value finite before the run (then the part runs
    the NumPy backend's code without its checks: ``CompiledProgram.fused_call``)."""
    args = ", ".join(r if shapes[r] else f"{r}.reshape(())" for r in part.reads)
    return f"{part.name}(_fin, {args})"


def part_call(part: Part, shapes: Mapping[str, tuple[Dim, ...]]) -> str:
    """The expression calling a one-statement ``part``: its value as an array of the float
    type ``F``."""
    return f"np.asarray({_call(part, shapes)}, dtype=F)"


def part_lines(part: Part, shapes: Mapping[str, tuple[Dim, ...]]) -> list[str]:
    """The run function's lines calling ``part`` and binding what it returns (a scalar as an
    array of one entry, as the loop nests read it)."""
    if part.single:
        (name,) = part.returned
        return [f"    {name} = {part_call(part, shapes)}" + ("" if shapes[name] else ".reshape(1)")]
    lines = [f"    _r = {_call(part, shapes)}"]
    for k, name in enumerate(part.returned):
        lines.append(f"    {name} = np.asarray(_r[{k}], dtype=F)"
                     + ("" if shapes[name] else ".reshape(1)"))
    return lines


def read_after(statements: Sequence[Statement], run: Sequence[Statement],
               outputs: Iterable[str]) -> list[str]:
    """The statements of ``run`` (consecutive NumPy statements of ``statements``, in order)
    whose values its part returns: those the program's ``outputs`` name or another statement
    after the run's first reads (a fused statement between two of the run's, evaluated in a
    later loop nest, reads the part's values too); at least the last."""
    statements = list(statements)
    mine = {t.name for t in run}
    later = set(outputs)
    for t in statements[statements.index(run[0]) + 1:]:
        if t.name not in mine:
            later |= accessed_names(t.body)
    return [t.name for t in run if t.name in later] or [run[-1].name]
