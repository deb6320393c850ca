"""The output arrays of a fused program's call: the caller's (``out=``), checked, or the
previous call's once the caller has dropped them (:class:`Recycler`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.errors import ShapeError
from ...ir.expr import Access, Expr
from ...ir.index import Dim, dim_value
from ...ir.program import Program
from .apart import own_memory, owner_free

__all__ = ["Recycler", "caller_buffers", "check_buffer", "given_buffers", "into_buffers"]


def caller_buffers(program: Program, outputs: Sequence[Expr],
                   shapes: Mapping[str, tuple[Dim, ...]], out: Any, sizes: dict[str, int],
                   dt: np.dtype, arrays: list[Any]) -> tuple[np.ndarray | None, ...]:
    """The caller's output arrays, one per output of ``program`` (``outputs``: each one's
    stored array, of ``shapes``; None: allocate), checked."""
    if out is None:
        return (None,) * len(program.outputs)
    where = f"out= of {program.name}"
    given = given_buffers(out, len(program.outputs), program.returns_tuple, where)
    for k, (b, o) in enumerate(zip(given, outputs, strict=True)):
        assert isinstance(o, Access)
        check_buffer(where, k, b, tuple(dim_value(d, sizes) for d in shapes[o.name]), dt,
                     arrays)
    return given


def given_buffers(out: Any, n: int, several: bool, where: str) -> tuple[Any, ...]:
    """``out=`` as one entry per output (``n`` of them; a tuple or list where the program
    returns ``several``), or a ShapeError naming ``where``."""
    given = tuple(out) if several and isinstance(out, tuple | list) else (out,)
    if len(given) != n:
        raise ShapeError(f"{where}: expected {n} array(s) (None where not wanted), "
                         f"got {len(given)}")
    return given


def check_buffer(where: str, k: int, b: Any, shape: tuple[int, ...], dt: np.dtype,
                 arrays: Sequence[Any]) -> None:
    """A ShapeError unless ``b`` (output ``k``'s entry of ``out=``; None: not wanted) is a
    writeable array of ``shape`` and ``dt`` sharing no memory with the call's ``arrays``."""
    if b is None:
        return
    if not isinstance(b, np.ndarray) or not shape:
        raise ShapeError(f"{where}: output {k} needs " + (
            f"a NumPy array of shape {shape}, got {type(b).__name__}" if shape
            else "no buffer (it is a scalar): pass None"))
    if b.shape != shape or b.dtype != dt or not b.flags.writeable:
        raise ShapeError(f"{where}: output {k} is {dt.name} of shape {shape}; got "
                         f"{'a read-only' if not b.flags.writeable else 'an'} array of "
                         f"{b.dtype.name} and shape {b.shape}")
    if any(isinstance(a, np.ndarray) and np.may_share_memory(a, b) for a in arrays):
        raise ShapeError(f"{where}: output {k} shares memory with an input")


def into_buffers(result: Any, bufs: tuple[np.ndarray | None, ...], several: bool) -> Any:
    """``result`` with each output that has a caller's array in ``bufs`` in that array (a
    loop nest wrote it in place; an output NumPy ran, or an empty one, is copied in)."""
    if all(b is None for b in bufs):
        return result
    values = list(result) if several else [result]
    for k, b in enumerate(bufs):
        if b is not None and values[k] is not b:
            np.copyto(b, values[k])
            values[k] = b
    return tuple(values) if several else values[0]


def _unshared(a: np.ndarray) -> bool:
    """Whether ``a`` is referenced only by the caller's one local name (and this argument):
    nothing else (a variable, a container, a view's ``.base``, a memoryview) can read it."""
    return sys.getrefcount(a) <= _ALONE


_ALONE = 3  # the caller's local, this function's parameter, getrefcount's argument


class Recycler:
    """Per thread, the arrays a program's last call returned, offered as the next call's
    output buffers once the caller has dropped every reference to them.

    A fresh output array costs its page faults when the allocator has handed the memory back
    to the system (E8's gradient, 8 MB: 2.1 ms instead of 0.6 ms); the arrays a
    caller drops between calls (a training step's gradients) are reused instead, as a caching
    allocator would. Held: at most one call's outputs per thread. ``key``: what fixes the
    outputs' shapes and float type (a recycled array is also checked for both)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def take(self, key: object, empty: tuple[None, ...]) -> tuple[np.ndarray | None, ...]:
        kept = getattr(self._local, "kept", None)
        if kept is None or kept[0] is not key:
            return empty
        self._local.kept = None
        arrays: list[Any] = kept[1]
        bufs: list[np.ndarray | None] = list(empty)
        for k, want in enumerate(kept[2]):
            a = arrays[k]
            arrays[k] = None
            if a is not None and _unshared(a) and owner_free(a) and a.flags.c_contiguous \
                    and a.flags.writeable and (a.shape, a.dtype) == want:
                bufs[k] = a
        return tuple(bufs)

    def keep(self, key: object, result: Any, several: bool) -> None:
        values = result if several else (result,)
        arrays = [v if isinstance(v, np.ndarray) and v.ndim and own_memory(v) else None
                  for v in values]
        self._local.kept = (key, arrays, [(a.shape, a.dtype) if a is not None else None
                                          for a in arrays])
