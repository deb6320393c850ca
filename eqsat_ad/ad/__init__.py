"""Automatic differentiation of Tensor SSA programs (docs/design.md, "Differentiation").

* :func:`jvp` — forward mode: the tangent program;
* :func:`vjp` — reverse mode: the purely functional adjoint program (brackets, no ``+=``);
* :func:`hessian_program` — forward-over-reverse with an indicator seed;
* :func:`custom_adjoint`, :func:`stop_gradient` — user-defined derivative rules.

Every result is an ordinary :class:`~eqsat_ad.ir.Program`, so the transformations compose.
"""

from .common import DifferentiationError
from .custom import custom_adjoint, stop_gradient
from .forward import jvp
from .hessian import hessian_program
from .reverse import vjp

__all__ = [
    "DifferentiationError",
    "custom_adjoint",
    "hessian_program",
    "jvp",
    "stop_gradient",
    "vjp",
]
