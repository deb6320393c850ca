"""Sliding windows: a producer computed a chunk at a time just ahead of its one consumer.

conv1d's adjoint is two loop nests over the same points::

    c_bar[i: N] = 2 * Sum[j: K](w[j] * x[i + j]) + -2 * y[i]
    x_bar[i: N] = Sum[j: K](c_bar[i - j] * w[j])

Stored, ``c_bar`` is written in full (8 MB at N = 10⁶) and read back by ``x_bar``'s nest.
Fusing it into ``x_bar`` (:func:`~.schedule._fuse`) would compute each of its points K times.
Its reads in ``x_bar`` at the point ``i`` lie in a window ``[i + low, i + high]`` of constant
width (here ``[i - (K - 1), i]``), so a chunk of ``x_bar``'s points needs ``c_bar`` on that
chunk widened by the window: Halide's ``compute_at`` with a sliding window (``store_at`` the
whole loop), XLA's loop fusion with a halo. The driver kernel (:func:`driver`) keeps
``c_bar``'s values over the current chunk's window in a buffer (a chunk and the window's
width), moves the part the next chunk still reads to its front, computes only the new points,
then runs ``x_bar``'s nest on the chunk: every point of ``c_bar`` computed once, by the same
code as its own loop nest (so the same value, bit for bit), and read back from L2/L3.

:func:`windows` finds the producer-consumer pairs this applies to (the schedule calls it
after producer-consumer fusion): a loop statement over one index, read by exactly one other
loop statement over the same extent, not returned, neither a running sum, every read of it an
index ``i + Σ c_k·k + c`` with ``k`` the consumer's summed indices (integer coefficients).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import NamedTuple

from ...ir.expr import Access, Expr, Max, Sum, accessed_names, children
from ...ir.index import Affine, Dim, dim_str
from ...ir.program import Program, Statement
from .bands import has_band
from .checks import bound_locals, row_counted
from .compact import JIT, extreme
from .scans import statement_scans

__all__ = ["CHUNK", "Window", "at", "covers", "driver", "windows"]

CHUNK = 65536
"""Consumer points per chunk (fewer when the extent is smaller). Measured on conv1d's gradient
(N = 10⁶, K = 16, one pinned core, loaded machine, experiments/window_chunk.py): fastest run
4.56-4.74 ms at 2048 points per chunk (the buffer in L1/L2), 3.85-4.02 ms at 65536 (the chunk's
x, y and buffer, 512 KiB each, in L2/L3); float32 2.0-2.1 against 1.8-1.95 ms; medians (5.5-5.7
ms, the machine's contention) equal within the noise; larger chunks no faster. In cache (N =
32768) the chunking costs ~10% at 2048 points; out of cache each switch from the producer's
nest (streaming x and y from memory) to the consumer's (compute only, reading the buffer)
stalls the stream again, so fewer, longer chunks win. The guard's checks are counted where
the producer stores each point (:func:`.checks.counted_at_stores`), else a chunk behind the
reads (in L2/L3; moving that pass next to the producer's nest measured the same)."""


class Window(NamedTuple):
    """Producer ``name`` read by ``consumer`` at ``[i + low, i + high]`` for its point ``i``."""

    name: str
    consumer: str
    low: Affine
    high: Affine


def _offsets(e: Expr, name: str, var: str, extents: Mapping[str, Dim]
             ) -> list[tuple[Affine, Affine]] | None:
    """The range of ``index - var`` of every read of ``name`` in ``e``; None if one is not
    ``var`` plus integer multiples of summed indices (of ``extents``) and sizes."""
    if isinstance(e, Access):
        if e.name != name:
            return []
        if len(e.indices) != 1:
            return None
        a = e.indices[0]
        if a.coeff(var) != 1 or not a.is_integral():
            return None
        low = high = Affine((), a.sizes, a.const)
        for k, c in a.index:
            if k == var:
                continue
            if k not in extents:
                return None
            span = (Affine.of_dim(extents[k]) - 1).scale(c)  # c·(E - 1): the far end
            low, high = (low + span, high) if c < 0 else (low, high + span)
        return [(low, high)]
    inner = dict(extents)
    if isinstance(e, Sum | Max):
        inner.update({iv.name: iv.extent for iv in e.indices})
    out: list[tuple[Affine, Affine]] = []
    for c in children(e):
        got = _offsets(c, name, var, inner)
        if got is None:
            return None
        out += got
    return out


def _single(affs: list[Affine]) -> Affine | None:
    """The one affine of ``affs`` (all equal), or None."""
    return affs[0] if affs and all(a == affs[0] for a in affs) else None


def returned_and_readers(prog: Program) -> tuple[set[str], dict[str, list[Statement]]]:
    """The arrays the outputs read, and each statement's readers among the statements."""
    returned: set[str] = set()
    for o in prog.outputs:
        returned |= accessed_names(o)
    readers: dict[str, list[Statement]] = {s.name: [] for s in prog.statements}
    for s in prog.statements:
        for n in s.reads():
            if n in readers:
                readers[n].append(s)
    return returned, readers


def windows(prog: Program, placement: Mapping[str, str]) -> dict[str, Window]:
    """The loop statements computed in a sliding window of their one consumer (module
    docstring), by name. (Only one window per consumer, and a consumer is no producer.)"""
    returned, readers = returned_and_readers(prog)
    found: dict[str, Window] = {}
    for p in prog.statements:
        users = readers[p.name]
        if (placement[p.name] != "loop" or p.name in returned or len(users) != 1
                or len(p.indices) != 1 or statement_scans(p.body, p.indices[0].name)
                or has_band(p.body)):
            continue
        c = users[0]
        if (placement[c.name] != "loop" or len(c.indices) != 1
                or c.indices[0].extent != p.indices[0].extent
                or statement_scans(c.body, c.indices[0].name) or has_band(c.body)
                or any(w.consumer == c.name or w.name == c.name for w in found.values())
                or any(w.consumer == p.name for w in found.values())):
            continue
        offs = _offsets(c.body, p.name, c.indices[0].name, {})
        if not offs:
            continue
        # the window's ends: one low and one high bound (as K - 1 and 0; several distinct
        # reads with different constant offsets take their extreme)
        low = _extreme([lo for lo, _ in offs], min)
        high = _extreme([hi for _, hi in offs], max)
        if low is None or high is None:
            continue
        found[p.name] = Window(p.name, c.name, low, high)
    return found


def _extreme(affs: list[Affine], pick: Callable[[Iterable[Fraction]], Fraction]
             ) -> Affine | None:
    """The least (``min``) or greatest of ``affs`` when they differ by constants only."""
    one = _single(affs)
    if one is not None:
        return one
    base = affs[0]
    diffs = [a - base for a in affs]
    if not all(d.is_constant() for d in diffs):
        return None
    return base + pick(d.const for d in diffs)


def covers(w: Window) -> bool:
    """Whether the driver has the producer compute every point of the extent (once, over its
    calls): the window reaches back to the point itself (``low <= 0``) and forward to it
    (``high >= 0``) at all sizes (each at least 1: an empty extent never runs the loops)."""
    if w.low.index or w.high.index:
        return False
    return (all(c <= 0 for _, c in w.low.sizes) and w.low.const + sum(
        c for _, c in w.low.sizes) <= 0 and all(c >= 0 for _, c in w.high.sizes)
        and w.high.const + sum(c for _, c in w.high.sizes) >= 0)


def at(offset: str) -> str:
    """``i + offset``, written plainly."""
    return "i" if offset == "0" else f"i + {offset}".replace("+ -", "- ")


def driver(w: Window, consumer_args: list[str], producer_args: list[str],
           sizes: list[str], extent: Dim, code: Mapping[str, str],
           checks: Mapping[str, int], counted: bool = False) -> str:
    """The kernel running ``w.consumer``'s nest a chunk at a time with ``w.name`` in a
    sliding buffer; ``consumer_args``/``producer_args``: the arrays each kernel reads (the
    producer's name among the consumer's: passed the buffer); ``code``: the window's ends as
    code. The two kernels take the points ``[_p0, _p1)`` (the producer's stored at
    ``_out[i - _po]``, the consumer reading the buffer at ``index - _po``). ``checks``:
    arrays over the consumer's points whose entries it counts inside the guard's bounds (their
    position in ``_box``), a chunk at a time while in cache (.checks); it returns whether one
    lay outside them. ``counted`` (only with ``checks``): the producer's kernel counts, at the
    points it stores, the entries outside the bounds and returns those counts
    (:func:`.checks.counted_at_stores`; it stores every point: :func:`covers`)."""
    n = dim_str(extent)
    reads = list(dict.fromkeys([a for a in consumer_args if a != w.name] + producer_args))
    args = ", ".join(["_out", *reads, *sizes, "_box"])
    size_args = ", ".join(sizes)
    c_args = ", ".join("_wb" if a == w.name else a for a in consumer_args)
    p_args = ", ".join(producer_args)
    count = []  # (through a view: indexed from 0, the loop vectorizes)
    for name, k in checks.items() if not counted else ():
        count += [f"        _cv = {name}[_s:_t]  # {name} inside its bounds?",
                  *row_counted("_cv[_c]", "_t - _s", k, " " * 8)]
    bounds = [line for k in checks.values() for line in (
        (f"    _nx{k} = 0",) if counted else bound_locals(k))]
    outside = " or ".join(f"_nx{k} != 0" if counted else f"_in{k} != {n}"
                          for k in checks.values()) or "False"
    return "\n".join([
        JIT,
        f"def _k_{w.consumer}_window({args}):",
        f"    # {w.name} in a sliding buffer: {w.consumer}'s point i reads it at "
        f"[{at(code['low'])}, {at(code['high'])}]; computed once per point, a chunk ahead",
        f"    _wlo = {code['low']}",
        f"    _whi = {code['high']}",
        f"    _wb = np.empty({extreme('min', [str(CHUNK), n])} + "
        f"{extreme('max', ['_whi - _wlo', '0'])}, dtype=F)",
        *bounds,
        "    _a = 0",
        "    _e = 0  # _wb[0:_e - _a] holds the points [_a, _e)",
        f"    for _s in range(0, {n}, {CHUNK}):",
        # (bounds as conditional expressions: no min/max overload compiled, .compact)
        f"        _t = {extreme('min', [f'_s + {CHUNK}', n])}",
        f"        _na = {extreme('max', ['_s + _wlo', '0'])}",
        f"        _na = {extreme('min', ['_na', n])}",
        f"        _nb = {extreme('max', ['_t + _whi', '0'])}",
        f"        _nb = {extreme('min', ['_nb', n])}",
        f"        _nb = {extreme('max', ['_nb', '_na', '_e'])}",
        f"        for _q in range({extreme('max', ['_e - _na', '0'])}):  # what this chunk still "
        "reads, to the front",
        "            _wb[_q] = _wb[_q + _na - _a]",
        f"        {'_n = ' if counted else ''}_k_{w.name}(_wb, {p_args}, {size_args}, "
        f"{extreme('max', ['_na', '_e'])}, _nb, _na{', _box' if counted else ''})",
        *(f"        _nx{k} += _n[{j}]" for j, k in enumerate(checks.values()) if counted),
        "        _a, _e = _na, _nb",
        f"        _k_{w.consumer}(_out, {c_args}, {size_args}, _s, _t, _na)",
        *count,
        f"    return {outside}",
    ])
