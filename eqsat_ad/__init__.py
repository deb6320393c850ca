"""eqsat_ad: differentiate tensor programs, then make the derivatives cheap by equality saturation.

The public API (docs/api.md). Names are imported on first use so that importing
the package stays fast and each stage can be used on its own.
"""

from __future__ import annotations

import importlib
from typing import Any

from .ir import (
    ArgumentTypeError,
    EqsatError,
    EqsatTypeError,
    EqsatValueError,
    Program,
    ProgramError,
    ShapeError,
    register_function,
)

# public name -> module that defines it
_LAZY: dict[str, str] = {
    # relations stored by their members (SciPy sparse matrices, index arrays)
    "SparseRelation": "eqsat_ad.ir.relations",
    # frontend
    "parse": "eqsat_ad.frontend.index_lang",
    "tensor_fn": "eqsat_ad.frontend.index_lang",
    "translate": "eqsat_ad.frontend.numpy_subset",
    # reference interpreter
    "evaluate": "eqsat_ad.ir.interpreter",
    # automatic differentiation
    "jvp": "eqsat_ad.api",
    "vjp": "eqsat_ad.api",
    "custom_adjoint": "eqsat_ad.ad.custom",
    "stop_gradient": "eqsat_ad.ad.custom",
    # optimizer
    "optimize": "eqsat_ad.egraph.optimize",
    "Optimized": "eqsat_ad.egraph.optimize",
    "Limits": "eqsat_ad.egraph.optimize",
    "Progress": "eqsat_ad.egraph.progress",
    "check_rules": "eqsat_ad.egraph.check",
    "CostReport": "eqsat_ad.cost.report",
    "program_cost": "eqsat_ad.plan.price",
    # compiled functions
    "grad": "eqsat_ad.api",
    "compile": "eqsat_ad.api",
    "hessian": "eqsat_ad.api",
    # JAX-style transformations
    "value_and_grad": "eqsat_ad.transforms",
    "jacobian": "eqsat_ad.transforms",
    # seeing the optimizer's reasoning
    "explain": "eqsat_ad.why",
    # repeated calls without page faults (glibc's allocator keeps freed memory)
    "keep_freed_memory": "eqsat_ad.backend.memory",
    # structured outputs (structured=True)
    "Diagonal": "eqsat_ad.backend.structured",
    "Outer": "eqsat_ad.backend.structured",
    "Sparse": "eqsat_ad.backend.structured",
}

__all__ = [
    "ArgumentTypeError", "EqsatError", "EqsatTypeError", "EqsatValueError", "Program",
    "ProgramError", "ShapeError",
    "register_function", *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'eqsat_ad' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
