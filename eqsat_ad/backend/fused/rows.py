"""A sum along a whole row, added in NumPy's pairwise order instead of one chain of adds.

``w_bar[i] = Σ_j [R(i, j)]·x[j]`` accumulated term by term is a chain of dependent
floating-point adds: LLVM may not reassociate it (that would change the value), so the loop
runs at one add's latency per term. Here the terms of the row are written to a buffer (a loop
with no dependence between iterations, which vectorizes) and added by :data:`PAIRWISE`, the
order of NumPy's ``add.reduce`` over a contiguous row (``pairwise_sum`` in NumPy's
``loops_utils.h``: eight interleaved accumulators in blocks of at most 128 terms, blocks
halved recursively): the value is the NumPy backend's ``.sum(axis=-1)`` of the same terms,
bit for bit, and the eight chains run side by side. E12's w_bar at M = 1024, N = 2048:
1.34 ms as one chain, about 0.5 ms so (experiments/results/numba.md).

A sum is written so (:func:`row_sum`) when it is outside other sums and tiles, over one index
whose range no bracket narrows (the whole row: the NumPy backend sums the same terms), has a
free index (a per-row sum: the buffer is one row, allocated once per kernel call; a sum over
no free index, a whole array's total, keeps its chain rather than a buffer of the array's
size), is not a running sum, and would be a chain everywhere (the schedule's
:func:`~.schedule.serial_sums`): free of the innermost output index (hoisted per row) or
reading an array across rows along it. A sum the interior tiles (:mod:`.tiles`) adds its
terms in order there, so its edge points keep the same order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...ir.expr import Sum, free_indices
from ...ir.index import Affine, dim_str
from .interior import Index
from .reuse import element
from .walks import array_reads, strided

if TYPE_CHECKING:
    from .loops import LoopWriter

__all__ = ["PAIRWISE", "row_sum"]

PAIRWISE = '''
@nb.njit(cache=True, error_model="numpy")
def _pairblock(a, lo, n):
    # at most 128 terms: eight interleaved accumulators (fewer than 8 terms: one); read
    # through a view (LLVM then packs the eight adds: 2x faster than a[lo + i])
    b = a[lo:lo + n]
    if n < 8:
        res = F(0)
        for i in range(n):
            res += b[i]
        return res
    r0, r1, r2, r3 = b[0], b[1], b[2], b[3]
    r4, r5, r6, r7 = b[4], b[5], b[6], b[7]
    m = n - n % 8
    for i in range(8, m, 8):
        r0 += b[i]
        r1 += b[i + 1]
        r2 += b[i + 2]
        r3 += b[i + 3]
        r4 += b[i + 4]
        r5 += b[i + 5]
        r6 += b[i + 6]
        r7 += b[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(m, n):
        res += b[i]
    return res


@nb.njit(cache=True, error_model="numpy")
def _pairblock2(a, lo, n):
    # two adjacent blocks of n terms (8 <= n <= 128, n % 8 == 0), each added as _pairblock
    # adds it, then left + right: the two blocks' chains run side by side (a row of 256
    # terms: 42 against 69 ns)
    b = a[lo:lo + n]
    c = a[lo + n:lo + 2 * n]
    r0, r1, r2, r3 = b[0], b[1], b[2], b[3]
    r4, r5, r6, r7 = b[4], b[5], b[6], b[7]
    s0, s1, s2, s3 = c[0], c[1], c[2], c[3]
    s4, s5, s6, s7 = c[4], c[5], c[6], c[7]
    for i in range(8, n, 8):
        r0 += b[i]
        r1 += b[i + 1]
        r2 += b[i + 2]
        r3 += b[i + 3]
        r4 += b[i + 4]
        r5 += b[i + 5]
        r6 += b[i + 6]
        r7 += b[i + 7]
        s0 += c[i]
        s1 += c[i + 1]
        s2 += c[i + 2]
        s3 += c[i + 3]
        s4 += c[i + 4]
        s5 += c[i + 5]
        s6 += c[i + 6]
        s7 += c[i + 7]
    left = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    return left + (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))


@nb.njit(cache=True, error_model="numpy")
def _pairwise(a, lo, n, stack, vals):
    # NumPy's pairwise_sum, the order of add.reduce over a contiguous row: blocks of at most
    # 128 terms, halved (at a multiple of 8) recursively; walked here with an explicit stack
    # (Numba's cache does not reload a recursive function): ``stack`` holds (start, length,
    # both halves done) triples, ``vals`` the sums of the finished halves (the kernel's, so a
    # row allocates nothing)
    # (a part of 129 to 256 terms, a multiple of 16, halves into two equal blocks)
    if n <= 128:
        return _pairblock(a, lo, n)
    if n <= 256 and n % 16 == 0:
        return _pairblock2(a, lo, n // 2)
    stack[0], stack[1], stack[2] = lo, n, 0
    top, nv = 1, 0
    while top > 0:
        top -= 1
        at, m, done = stack[3 * top], stack[3 * top + 1], stack[3 * top + 2]
        if done:  # left + right
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
        elif m <= 128:
            # (a full block as a constant: LLVM packs its adds, 2x faster)
            vals[nv] = _pairblock(a, at, 128) if m == 128 else _pairblock(a, at, m)
            nv += 1
        elif m <= 256 and m % 16 == 0:
            vals[nv] = _pairblock2(a, at, 128) if m == 256 else _pairblock2(a, at, m // 2)
            nv += 1
        else:
            m2 = m // 2
            m2 -= m2 % 8
            stack[3 * top + 2] = 1
            stack[3 * top + 3], stack[3 * top + 4], stack[3 * top + 5] = at + m2, m - m2, 0
            stack[3 * top + 6], stack[3 * top + 7], stack[3 * top + 8] = at, m2, 0
            top += 3
    return vals[0]
'''
"""The helper the generated module defines (after ``F``, its float type)."""


def row_sum(w: LoopWriter, e: Sum, env: Mapping[str, Index], buf: str | None = None
            ) -> tuple[str, str | None] | None:
    """``e``'s terms written to a row buffer and added by ``_pairwise``: its value (never
    -0.0, as an accumulator started at +0.0) and strong-zero flag; None where the module
    docstring's conditions do not hold (then the chain of adds). ``buf``: a buffer of this
    sum's own or the output's row (``_out[i]``), whose terms the points of the row read back
    (:mod:`.reuse`)."""
    if (len(e.indices) != 1 or w.sum_depth != 0 or w.tile_var is not None
            or w.views is not None or w.top is None or not free_indices(e)
            or w.scans.get(e) is not None):
        return None
    along = [n for n in free_indices(e) if n in env and env[n].code == w.hoist_var]
    if along and not any(strided(a, along[0]) for a in array_reads(e.body)):
        return None  # tiled in the interior, a chain at the edges: both add in order
    iv = e.indices[0]
    extent = dim_str(iv.extent)
    lo, hi, body, tight, taps = w.bounds(iv.name, extent, e.body, env)
    if lo != "0" or hi != extent or tight or taps is not None:
        return None
    # one buffer per extent, shared by the kernel's row sums: each is filled and added up
    # before the next one starts (none is inside another: sum_depth)
    # (a sum whose terms are read back has a buffer of its own or the output's row, .reuse)
    buf = buf or f"_row_{extent}"
    own = () if buf.endswith("]") else (f"    {buf} = np.empty({extent}, dtype=F)",)
    for line in (*own, "    _pw_stack = np.empty(3 * 128, dtype=np.intp)",  # (n < 2**70)
                 "    _pw_vals = np.empty(64, dtype=F)"):
        if line not in w.top:
            w.top.append(line)
    acc, flag, var = w.fresh("acc"), w.fresh("none"), w.fresh(iv.name)
    init = "    " * w.depth + f"{flag} = True"
    w.lines.append(init)
    w.emit(f"for {var} in range({extent}):")
    w.open()
    w.sum_depth += 1
    span = (Affine.constant(0), Affine.of_dim(iv.extent) - 1)
    v, z = w.expr(body, {**env, iv.name: Index(var, iv.extent, span=span)})
    w.sum_depth -= 1
    w.emit(f"{element(buf, f'np.uintp({var})')} = {v}")  # (unsigned: .code.store_at)
    if z is not None and z != "True":
        w.emit(f"{flag} = {flag} & ({z})")
    w.close()
    # (+ 0.0: the chain it replaces starts at +0.0 and is never -0.0)
    w.emit(f"{acc} = F(0) + _pairwise({buf}, 0, {extent}, _pw_stack, _pw_vals)")
    if z is None:
        w.lines.remove(init)
        return acc, None
    return acc, flag
