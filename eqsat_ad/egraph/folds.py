"""Optimizing a program with rolled loops: each fold body once, the rest around them.

The e-graph sees fold-free programs only. A fold's body is a program of its own: it is optimized
ONCE, whatever the trip count. The statements around the folds form one more program in which
each fold's results are parameters (opaque values) and each fold's inputs extra outputs (so they
are kept and can be found again); after its optimization the folds are put back where their
inputs are defined (a topological order), reading the optimized inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..ad.common import in_dependency_order, prune
from ..ir.checks import check_program
from ..ir.errors import ProgramError
from ..ir.expr import Access, accessed_names, fresh_name
from ..ir.program import Fold, Param, Program, Statement, Step

Optimizer = Callable[[Program], tuple[Program, Any]]
"""Optimizes a fold-free program: returns the optimized program and its report (or None)."""


def optimize_with_folds(prog: Program, run: Optimizer) -> tuple[Program, Any]:
    """``prog`` with every fold body optimized once and the statements around them optimized
    as one program; returns it and the report of the outer optimization (None if it failed and
    the outer statements were kept as they were)."""
    folds: dict[int, Fold] = {}
    for k, s in enumerate(prog.statements):
        if isinstance(s, Fold):
            body = optimize_with_folds(s.body, run)[0] if s.body.folds else run(s.body)[0]
            folds[k] = replace(s, body=body)
    kept = tuple(folds.get(k, s) for k, s in enumerate(prog.statements))
    if not any(isinstance(s, Statement) for s in prog.statements):
        return tidy(replace(prog, statements=kept)), None
    try:
        result, report = _optimize_around(replace(prog, statements=kept), list(folds.values()),
                                          run)
    except ProgramError:
        return tidy(replace(prog, statements=kept)), None
    return tidy(result), report


def tidy(prog: Program) -> Program:
    """``prog`` with what its folds do not need dropped: per-step outputs nobody reads (the
    stacked states an optimized adjoint no longer uses) and scanned or constant inputs their
    optimized body no longer reads. Each is an array passed or written at every step."""
    read: set[str] = set()
    for o in prog.outputs:
        read |= accessed_names(o)
    steps: list[Step] = []
    for s in reversed(prog.statements):
        if isinstance(s, Fold):
            s = _tidy_fold(s, read)
        read |= s.reads()
        steps.append(s)
    return replace(prog, statements=tuple(reversed(steps)))


def _tidy_fold(f: Fold, read: set[str]) -> Fold:
    body, ncarry, nscan = f.body, len(f.carry), len(f.scan)
    keep_out = [k for k in range(len(f.names)) if k < ncarry or f.names[k] in read]
    outputs = tuple(body.outputs[k] for k in keep_out)
    body = prune(body.params, body.statements, outputs, True, body.name)
    used: set[str] = set()
    for st in body.statements:
        used |= st.reads()
    for o in outputs:
        used |= accessed_names(o)
    keep_in = [k for k, p in enumerate(body.params) if k < ncarry or p.name in used]
    body = replace(body, params=tuple(body.params[k] for k in keep_in))
    inputs = f.inputs
    return replace(
        f, names=tuple(f.names[k] for k in keep_out), body=body,
        scan=tuple(inputs[k] for k in keep_in if ncarry <= k < ncarry + nscan),
        const=tuple(inputs[k] for k in keep_in if k >= ncarry + nscan),
    )


def _optimize_around(prog: Program, folds: list[Fold], run: Optimizer) -> tuple[Program, Any]:
    defined = {s.name for s in prog.statements if isinstance(s, Statement)}
    inputs = list(dict.fromkeys(n for f in folds for n in f.inputs if n in defined))
    results = [Param(n, f.result_shape(n)) for f in folds for n in f.names]
    outer = Program(
        prog.params + tuple(results),
        tuple(s for s in prog.statements if isinstance(s, Statement)),
        prog.outputs + tuple(Access(n) for n in inputs), True, prog.name,
    )
    opt, report = run(outer)
    taken = {p.name for p in opt.params} | {n for s in opt.statements for n in s.defines}
    extra: list[Statement] = []
    where: dict[str, str] = {}
    for n, o in zip(inputs, opt.outputs[len(prog.outputs):], strict=True):
        if isinstance(o, Access) and not o.indices:
            where[n] = o.name
            continue
        name = fresh_name(n, taken)
        taken.add(name)
        extra.append(Statement(name, (), o))
        where[n] = name

    def moved(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(where.get(n, n) for n in names)

    placed = [replace(f, carry=moved(f.carry), scan=moved(f.scan), const=moved(f.const))
              for f in folds]
    steps = in_dependency_order([*opt.statements, *extra, *placed])
    result = Program(opt.params[: len(prog.params)], tuple(steps),
                     opt.outputs[: len(prog.outputs)], prog.returns_tuple, prog.name)
    check_program(result)
    return result, report
