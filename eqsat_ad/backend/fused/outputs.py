"""The output arrays of a fused program's call: the caller's (``out=``), checked, or the
program's own last ones, reused once the caller has dropped them."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.errors import ShapeError
from ...ir.expr import Access, Expr
from ...ir.index import Dim, dim_value
from ...ir.program import Program

__all__ = ["Recycled", "caller_buffers"]


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


def _alone() -> int:
    """What ``sys.getrefcount`` gives for an array held by one local name only."""
    a = np.empty(1)
    return sys.getrefcount(a)


_ALONE = _alone()


class Recycled:
    """The arrays a program returned last, one per output written in place by a loop nest,
    handed back as that output's buffer at the next call once nothing else holds them.

    A fresh multi-megabyte output costs its page faults at first touch whenever the allocator
    has returned the memory to the system (the same cost as the kernel itself for a memory-bound
    gradient); an array the caller has dropped (its only reference is this store: no name,
    container or view holds it) can be written again with no one able to tell. Taking is under
    a lock, so two threads never get the same array."""

    def __init__(self) -> None:
        self._last: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def take(self, positions: Iterable[int], shapes: Mapping[int, tuple[int, ...]],
             dt: np.dtype) -> dict[int, np.ndarray]:
        """For each output position in ``positions``, its last array where free and still of
        ``shapes[k]`` and ``dt`` (a free array of another shape or type is let go)."""
        found: dict[int, np.ndarray] = {}
        for k in positions:
            with self._lock:
                prev = self._last.pop(k, None)
            # (held by ``prev`` alone; a caller's name, a container or a view's base would add
            # a reference)
            if prev is not None and sys.getrefcount(prev) == _ALONE and prev.shape == shapes[k] \
                    and prev.dtype == dt and prev.flags.writeable:
                found[k] = prev
        return found

    def keep(self, values: Mapping[int, Any]) -> None:
        """Remember the arrays just returned (by output position)."""
        with self._lock:
            for k, v in values.items():
                if isinstance(v, np.ndarray) and v.base is None:
                    self._last[k] = v
