"""The symbolic Hessian: forward-over-reverse with an indicator seed.

For a scalar program f and an input x of rank r, the gradient program computes x̄ = ∇f. Its
tangent in direction ``dx[K] = [K = M]`` for new generator indices M is the M-th column of the
Hessian; keeping M as generators of every tangent statement yields all columns at once as
ordinary statements ``y_d[M, I] = ...`` — one program, no N one-hot products. The final
statement ``x_bar_d[M, K]`` is the Hessian ∂²f / ∂x[M] ∂x[K] (a tensor of rank 2r). The naive
program is correct but not cheap; the optimizer turns it into the closed form (A + Aᵀ for xᵀAx).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.expr import Access, Expr
from ..ir.index import Affine
from ..ir.outline import outline
from ..ir.program import Program
from .common import (
    DifferentiationError,
    Names,
    bracket,
    eq_pred,
    is_tensor_output,
    normalize_wrt,
    prune,
    transformation,
)
from .forward import forward_statements, output_tangents
from .reverse import gradient_statements


@transformation
def hessian_program(prog: Program, wrt: str | Sequence[str]) -> Program:
    """The Hessian of the scalar output of ``prog`` with respect to one input ``wrt``.

    The result has ``prog``'s parameters and returns a tensor of rank ``2 * rank(wrt)``:
    ``H[m..., k...] = ∂²f / ∂wrt[m...] ∂wrt[k...]``.
    """
    if not isinstance(prog, Program):
        raise DifferentiationError(f"hessian_program expects a Program, got {type(prog).__name__}")
    names = normalize_wrt(prog, wrt)
    if len(names) != 1:
        raise DifferentiationError(
            f"hessian_program differentiates with respect to one input, got {len(names)}"
        )
    if prog.returns_tuple or len(prog.outputs) != 1 or is_tensor_output(prog, prog.outputs[0]):
        raise DifferentiationError(
            f"hessian_program needs a program with one scalar output; {prog.name!r} returns "
            + ("a tuple" if prog.returns_tuple else "a tensor")
        )
    (x,) = names
    shape = prog.param(x).shape
    taken = Names(prog)
    stmts, x_bar = gradient_statements(prog, x, taken)
    # the gradient's sums may be long: outline them before differentiating again
    gradient = outline(Program(prog.params, tuple(stmts), (Access(x_bar),), False, prog.name))
    taken.variables |= {n for s in gradient.statements for n in s.defines}

    def indicator(name: str, idx: tuple[Affine, ...], extra: tuple[str, ...]) -> Expr:
        # dx[a] = [a = M]: the tangent family of all unit directions at once.
        return bracket([eq_pred(a, Affine.var(m)) for a, m in zip(idx, extra, strict=True)])

    all_stmts, tangent_of = forward_statements(gradient, names, indicator, shape, taken)
    more, outputs = output_tangents(gradient, names, indicator, shape, tangent_of, taken)
    return prune(prog.params, all_stmts + more, outputs, False, f"{prog.name}_hessian")
