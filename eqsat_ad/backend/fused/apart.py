"""Arrays a loop nest writes, placed apart (modulo 4 KiB) from the arrays it reads.

A load whose address agrees in its low 12 bits with an earlier store still in flight waits
for that store ("4K aliasing", on x86 cores from Intel and AMD alike). A stencil's loop nest
stores ``out[i, j]`` and next loads ``x[i + 1, j + 1]``: when rows lie a multiple of 4 KiB
apart and ``out`` and ``x`` start at the same offset within a page, as any two large arrays
that ``malloc`` maps afresh do, every iteration waits. Measured on one core of a Zen 4 (blur's
gradient kernel, float64, 1024²): 1.41–1.60 ms with ``out`` 0–64 bytes past ``x`` modulo
4 KiB, 0.92–0.99 ms at 256–3072 bytes.

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

__all__ = ["empty_apart", "owner_free"]

PAGE = 4096
LINE = 64  # (the view starts on a cache line: vector loads and stores stay aligned)
ROWS = 2  # rows either side of a read array's row that a window may reach
_STARTS = np.arange(0, PAGE, LINE)  # the cache lines' starts within a page


def empty_apart(shape: tuple[int, ...], dtype: type, reads: Sequence[object]
                ) -> np.ndarray:
    """An uninitialized C-contiguous array of ``shape`` and ``dtype``, a view of a buffer a
    page longer, starting as far (modulo 4 KiB) as a cache-line start can from the rows of
    every array in ``reads`` (non-arrays are ignored)."""
    size = math.prod(shape) * np.dtype(dtype).itemsize
    marks = _row_starts(reads)
    if size < PAGE or not marks:  # (small arrays: no stream of stores to wait behind)
        return np.empty(shape, dtype=dtype)
    raw = np.empty(size + PAGE, dtype=np.uint8)
    gap = (_STARTS[:, None] - np.asarray(marks)[None, :]) % PAGE
    nearest = np.minimum(gap, PAGE - gap).min(axis=1)
    start = (int(_STARTS[int(np.argmax(nearest))]) - raw.__array_interface__["data"][0]) % PAGE
    return raw[start:start + size].view(dtype).reshape(shape)


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


def owner_free(a: np.ndarray) -> bool:
    """Whether ``a``'s memory is its own or an :func:`empty_apart` buffer that only ``a``
    refers to (so no other view can see a later write into ``a``)."""
    base = a.base
    if base is None:
        return True
    # (references: a.base, this local, getrefcount's argument)
    return type(base) is np.ndarray and base.base is None and base.dtype == np.uint8 \
        and base.ndim == 1 and sys.getrefcount(base) <= 3
