"""The gradient program: reverse mode with the output cotangent fixed to 1.

:func:`gradient_program` turns a scalar program's adjoint (:func:`eqsat_ad.ad.vjp`) into one
program with the same parameters that returns the gradients (and, when asked, the value and an
auxiliary output), the program :func:`eqsat_ad.grad` optimizes and compiles.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.errors import ProgramError
from ..ir.expr import Access, Const, Expr
from ..ir.program import Fold, Program, Statement, Step
from ..ir.traverse import rebuild
from .common import in_dependency_order, is_tensor_output, prune
from .reverse import vjp as ad_vjp

__all__ = ["gradient_program"]


def gradient_program(
    prog: Program, wrt: Sequence[str], *, as_tuple: bool = False, preserve_result: bool = False,
    has_aux: bool = False,
) -> Program:
    """The gradient of ``prog``'s scalar output with respect to ``wrt`` (seed 1), as a Program.

    Same parameters as ``prog``; returns the gradients in order (a tuple when ``as_tuple`` or
    several names), followed by the function's value when ``preserve_result``. Built from
    :func:`eqsat_ad.ad.vjp` with the cotangent fixed to 1. ``has_aux``: ``prog`` returns a pair
    (value, aux); the gradient is the value's, and aux is returned last, as computed.
    """
    aux: tuple[Expr, ...] = ()
    if has_aux:
        if not prog.returns_tuple or len(prog.outputs) != 2:
            raise ProgramError(
                f"has_aux=True: {prog.name!r} must return a pair (value, aux); it returns "
                + (f"{len(prog.outputs)} values" if prog.returns_tuple else "one value")
            )
        aux = prog.outputs[1:]
        prog = Program(prog.params, prog.statements, prog.outputs[:1], False, prog.name)
    if prog.returns_tuple or len(prog.outputs) != 1 or is_tensor_output(prog, prog.outputs[0]):
        raise ProgramError(
            f"grad needs a program with one scalar output; {prog.name!r} returns "
            + ("a tuple" if prog.returns_tuple else "a tensor")
            + " (use ea.vjp for a vector-Jacobian product)"
        )
    names = tuple(wrt)
    adjoint = ad_vjp(prog, names if len(names) > 1 else names[0])
    (seed,) = [p for p in adjoint.params if p.name not in prog.param_names]
    one = Const(1.0)
    primal = {n for s in prog.statements for n in s.defines}
    # a fold the adjoint needs keeps its states: it replaces the original where that stood
    saving = {s.names[0]: s for s in adjoint.statements if isinstance(s, Fold)
              and s.names[0] in primal}
    stmts: list[Step] = [saving.get(s.names[0], s) if isinstance(s, Fold) else s
                         for s in prog.statements]
    for s in adjoint.statements:
        if primal.issuperset(s.defines) or s.defines[0] in primal:
            continue
        if isinstance(s, Fold):
            if seed.name in s.reads():
                raise ProgramError("internal: a fold reads the output seed")  # bars are statements
            stmts.append(s)
        else:
            stmts.append(Statement(s.name, s.indices, _replace_access(s.body, seed.name, one),
                                   s.loc))
    stmts = in_dependency_order(stmts)
    outputs = tuple(_replace_access(o, seed.name, one) for o in adjoint.outputs)
    if preserve_result:
        outputs += (prog.outputs[0],)
    outputs += aux
    several = as_tuple or len(names) > 1 or preserve_result or has_aux
    return prune(prog.params, stmts, outputs, several, f"{prog.name}_grad")


def _replace_access(e: Expr, name: str, value: Expr) -> Expr:
    """``e`` with every read of the scalar ``name`` replaced by ``value``."""

    def post(x: Expr, _ctx: object) -> Expr:
        if isinstance(x, Access) and x.name == name and not x.indices:
            return value
        return x

    return rebuild(e, post)
