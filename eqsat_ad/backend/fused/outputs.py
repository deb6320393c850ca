"""The caller's output arrays of a fused program's call (``out=``), checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.errors import ShapeError
from ...ir.expr import Access, Expr
from ...ir.index import Dim, dim_value
from ...ir.program import Program

__all__ = ["caller_buffers"]


def caller_buffers(program: Program, outputs: Sequence[Expr],
                   shapes: Mapping[str, tuple[Dim, ...]], out: Any, sizes: dict[str, int],
                   dt: np.dtype, arrays: list[Any]) -> tuple[np.ndarray | None, ...]:
    """The caller's output arrays, one per output of ``program`` (``outputs``: each one's
    stored array, of ``shapes``; None: allocate), checked."""
    n = len(program.outputs)
    if out is None:
        return (None,) * n
    several = program.returns_tuple
    given = tuple(out) if several and isinstance(out, tuple | list) else (out,)
    where = f"out= of {program.name}"
    if len(given) != n:
        raise ShapeError(f"{where}: expected {n} array(s) (None where not wanted), "
                         f"got {len(given)}")
    for k, (b, o) in enumerate(zip(given, outputs, strict=True)):
        if b is None:
            continue
        assert isinstance(o, Access)
        shape = tuple(dim_value(d, sizes) for d in shapes[o.name])
        if not isinstance(b, np.ndarray) or not shape:
            raise ShapeError(f"{where}: output {k} needs " + (
                f"a NumPy array of shape {shape}, got {type(b).__name__}" if shape
                else "no buffer (it is a scalar): pass None"))
        if b.shape != shape or b.dtype != dt or not b.flags.writeable:
            raise ShapeError(f"{where}: output {k} is {dt.name} of shape {shape}; got a "
                             f"{'read-only ' if not b.flags.writeable else ''}"
                             f"{b.dtype.name} array of shape {b.shape}")
        if any(isinstance(a, np.ndarray) and np.may_share_memory(a, b) for a in arrays):
            raise ShapeError(f"{where}: output {k} shares memory with an input")
    return given
