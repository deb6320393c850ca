"""Freed memory kept in the process, so that repeated calls do not fault their pages in again.

Compiled code allocates its arrays afresh on every call (``np.exp(x)``, a matrix product's
result, a returned gradient). glibc's allocator gives memory of 128 KiB or more back to the
system when it is freed (``munmap``, or by trimming the top of its heap), so the next call touches
new pages, each a page fault and 4 KiB zeroed. Its thresholds move as a process runs (a freed
mapped block raises them), which is why one gradient can run at two speeds in two processes. On
one core of an AMD EPYC (Zen 4), the NumPy backend's gradients per call (medians over fresh
processes, faults from ``getrusage``; experiments/results/freed_memory.md): a two-layer MLP
3.2-5.6 ms with 608 faults, 2.0-2.2 ms with freed memory kept; softmax cross-entropy 7.8-10.6
against 4.0-5.1 ms; attention 9.8-10.8 against 6.3-6.8 ms; layer norm 39-47 against 26-30 ms.

:func:`keep_freed_memory` sets both thresholds (``mallopt``): blocks up to ``mmap_bytes`` come
from the heap, and up to ``trim_bytes`` of free memory at its top stay in the process, as XLA's
and PyTorch's caching allocators keep theirs. It is process-wide and opt-in: the process's
resident memory no longer shrinks as arrays are freed. The Numba backend keeps its own
intermediates from call to call already (``backend/fused/program.py``); its NumPy parts and
returned arrays gain as the NumPy backend does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

from ..ir.errors import EqsatValueError

__all__ = ["keep_freed_memory"]

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc refuses a mapping threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit systems)
_MMAP_MAX = 32 * 2**20


@cache
def _mallopt() -> object | None:
    """glibc's ``mallopt``, or None where the C library has none (macOS, Windows, musl)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        fn = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - glibc's own symbol: its mallopt semantics
    except (OSError, AttributeError, TypeError):
        return None
    fn.argtypes, fn.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return fn


def keep_freed_memory(mmap_bytes: int = _MMAP_MAX, trim_bytes: int = 256 * 2**20) -> bool:
    """Keep freed memory in the process (glibc), so that a compiled function's arrays reuse the
    pages the previous call freed instead of faulting new ones in: up to 2x on gradients whose
    arrays are 128 KiB or more (experiments/results/freed_memory.md).

    ``mmap_bytes``: blocks smaller than this come from the heap, not from a mapping of their
    own (at most 32 MiB, glibc's limit); ``trim_bytes``: free memory at the heap's top kept
    before any is given back. Process-wide, and it stays set. Returns True when set, False
    where the C library is not glibc (nothing changes there)."""
    for name, value, top in (("mmap_bytes", mmap_bytes, _MMAP_MAX),
                             ("trim_bytes", trim_bytes, 2**31 - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= top:
            raise EqsatValueError(f"keep_freed_memory: {name} must be an integer in "
                                  f"[1, {top}], got {value!r}")
    fn = _mallopt()
    if fn is None:
        return False
    return bool(fn(_M_MMAP_THRESHOLD, mmap_bytes)) and bool(fn(_M_TRIM_THRESHOLD, trim_bytes))
