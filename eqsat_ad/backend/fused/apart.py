"""Arrays a loop nest writes, placed apart (modulo 4 KiB) from the arrays it reads.

A load whose address agrees in its low 12 bits with an earlier store still in flight waits
for that store ("4K aliasing", on x86 cores from Intel and AMD alike). A stencil's loop nest
stores ``out[i, j]`` and next loads ``x[i + 1, j + 1]``: when rows lie a multiple of 4 KiB
apart and ``out`` starts a few cache lines past ``x`` within a page, iterations wait for
stores. Measured on one core of a Zen 4 (blur's gradient kernel, 1024², 12 outputs at
different offsets, experiments/results/store_offset.md): float64 1.16–1.21 ms with ``out``
32–128 bytes past ``x`` modulo 4 KiB, 0.97–0.99 ms at 2048–4032; float32 0.61–0.68 against
0.50–0.55 ms. Where an output lands is otherwise the allocator's choice, process by process.

:func:`empty_apart` allocates a page more than it needs and returns the view whose start lies
farthest, modulo 4 KiB, from where each read array's rows start (its first rows and the rows
a window reaches, two either side). :func:`owner_free` says when such a view may be written
again as the next call's output: nothing but the view refers to its memory.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

__all__ = ["empty_apart", "own_memory", "owner_free"]

PAGE = 4096
LINE = 64  # (the view starts on a cache line: vector loads and stores stay aligned)
ROWS = 2  # rows either side of a read array's row that a window may reach
# Smaller arrays are plain np.empty: placing one costs about 5 us (mostly reading addresses),
# about what a kernel writing 256 KiB can lose to waiting loads (a fifth of some 25 us).
MIN_BYTES = 1 << 18


def empty_apart(shape: tuple[int, ...], dtype: type, reads: Sequence[object]
                ) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape`` and ``dtype``, a view of a buffer a
    page longer, starting as far (modulo 4 KiB) as a cache-line start can from the rows of
    every array in ``reads`` (non-arrays are ignored)."""
    size = math.prod(shape) * np.dtype(dtype).itemsize
    if size < MIN_BYTES or not (marks := _row_starts(reads)):
        return np.empty(shape, dtype=dtype)
    raw = np.empty(size + PAGE, dtype=np.uint8)
    start = (_farthest(marks) - raw.__array_interface__["data"][0]) % PAGE
    return raw[start:start + size].view(dtype).reshape(shape)


def _farthest(marks: list[int]) -> int:
    """The cache-line start (modulo 4 KiB) nearest the middle of the widest gap between
    ``marks`` (on the circle of addresses modulo 4 KiB)."""
    key = tuple(marks)
    hit = _FARTHEST.get(key)
    if hit is None:
        ms = sorted(set(marks))
        width, at = max((b - a, a) for a, b in zip(ms, [*ms[1:], ms[0] + PAGE], strict=True))
        hit = (at + width // 2 + LINE // 2) // LINE * LINE % PAGE
        if len(_FARTHEST) >= 256:
            _FARTHEST.clear()
        _FARTHEST[key] = hit
    return hit


_FARTHEST: dict[tuple[int, ...], int] = {}  # (a cache: the same inputs, call after call)


def _row_starts(reads: Sequence[object]) -> list[int]:
    """Each read array's start and, along each axis but the last, the starts of the rows up
    to :data:`ROWS` away, modulo 4 KiB."""
    marks: list[int] = []
    for a in reads:
        if not isinstance(a, np.ndarray) or a.size * a.itemsize < PAGE:
            continue
        addr = a.__array_interface__["data"][0]
        marks.append(addr % PAGE)
        for stride in a.strides[:-1]:
            marks += [(addr + k * stride) % PAGE for k in range(-ROWS, ROWS + 1) if k]
    return marks


def own_memory(a: np.ndarray) -> bool:
    """Whether ``a``'s memory is its own or a byte buffer of its own kind, as
    :func:`empty_apart` makes (whoever else may refer to it)."""
    base = a.base
    return base is None or (type(base) is np.ndarray and base.base is None
                            and base.dtype == np.uint8 and base.ndim == 1)


def owner_free(a: np.ndarray) -> bool:
    """Whether ``a``'s memory is its own or an :func:`empty_apart` buffer that only ``a``
    refers to (so no other view can see a later write into ``a``)."""
    if not own_memory(a):
        return False
    # (references to the buffer: a.base, getrefcount's argument)
    return a.base is None or sys.getrefcount(a.base) <= 2
