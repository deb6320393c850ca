"""Tiled interchange: a sum's terms for a tile of output points at a time, in the same order.

In ``c[i] = Σ_k w[k]·x[i + k]`` the sum runs innermost, one dependent floating-point add after
another; LLVM does not reassociate it (that would change the value), so it does not vectorize.
Interchanged over a tile of the innermost output index ``v`` (Halide's ``reorder`` of a
reduction, per tile)::

    for _v0 in range(lo, hi, _TILE):             # the interior of v, a tile at a time
        _a[:] = 0
        for k in range(K):
            x_v = x[_v0 + k:]                      # a view: the tile's reads are contiguous
            for _t in range(_vn):
                _a[_t] += w[k] * x_v[_t]           # one independent add per output point
        for _t in range(_vn):
            v = _v0 + _t; out[v] = ... _a[_t] ...

each output point still adds its terms in the interpreter's order (``((0 + t_0) + t_1) + …``),
so the values are the same bit for bit, and the ``_t`` loop vectorizes. A read whose last index
is ``v`` plus terms fixed in the ``_t`` loop is a view taken before that loop: LLVM vectorizes
``view[_t]`` (its alias check is loop-invariant) but not ``x[_v0 + _t + k]`` in a loop nest.

A sum is interchanged (:func:`interchange`) when it is in the interior of the innermost output
loop (its reads' guards dropped, :mod:`.interior`), outside other sums and guarded branches,
depends on ``v`` and on nothing defined per point, its range does not depend on ``v`` (a band
or window along ``v`` stays a loop per point, or unrolled taps) and is not a few unrolled taps
(straight-line code per point already), and no read walks an array across rows along ``v``
(the tile would read a column).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...ir.expr import Access, And, Bracket, Expr, Rel, Sum, children, free_indices
from ...ir.index import Affine, dim_str
from .brackets import solve_order
from .interior import Index
from .schedule import TILE_MIN as SCHEDULE_TILE_MIN
from .walks import strided

if TYPE_CHECKING:
    from .loops import LoopWriter

__all__ = ["JAM", "TILE", "TILE_BYTES", "TILE_LINE", "TILE_MIN", "interchange", "jammed",
           "tile_leaf", "view"]

TILE_BYTES = 1024
"""Bytes of accumulators per tile (one per output point, in L1): 128 points of float64, 256 of
float32. Measured on conv1d's gradient (N = 10**6, K = 16, one pinned core, fastest of 200
calls): float64 2.18 ms at 128 points against 2.35 at 256; float32 1.19 ms at 256 points
against 1.46 at 128 (experiments/results/numba.md)."""

TILE = "_TILE"
"""The generated code's name for the points per tile, which the module defines from its float
type (:data:`TILE_LINE`): one source serves both float types."""

TILE_LINE = f"{TILE} = {TILE_BYTES} // np.dtype(F).itemsize"

TILE_MIN = SCHEDULE_TILE_MIN
"""An interior narrower than this runs with the edges, point by point (the tile's per-term
views would cost more than the few points share); the schedule prices by it."""

JAM = 8
"""Values of the innermost summed index per pass over a tile (:func:`jammed`). Eight against
four: conv1d's gradient 2.61 against 3.22 ms (float64), 1.32 against 1.63 ms (float32), median
of 200 calls each (experiments/results/numba.md): each point's accumulator is loaded and
stored half as often. Passes of sixteen (then one of eight) measured no faster (conv1d, K =
16 and 9, float64: 2.97 against 3.01 ms and 2.17 against 2.10 by the fastest of 40
interleaved calls) and compile longer."""


def _reads(e: Expr) -> list[Access | Rel]:
    out: list[Access | Rel] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Access):
            out.append(x)
        elif isinstance(x, Bracket):
            preds = x.pred.preds if isinstance(x.pred, And) else (x.pred,)
            out += [p for p in preds if isinstance(p, Rel)]
        stack += list(children(x))
    return out


def interchange(w: LoopWriter, e: Sum, env: Mapping[str, Index]
                ) -> tuple[str, str | None] | None:
    """``e`` accumulated for the whole tile before the tile's points are written (lines go to
    ``w.tile_pre``); its value and strong-zero flag at the point ``_t``. None: not here."""
    v = w.interior
    if v is None or w.tile_pre is None or w.sum_depth != 0 or len(w.blocks) != w.tile_blocks:
        return None
    free = free_indices(e)
    names = [n for n in free if n in env and env[n].code == v]
    if not names or not all(n in env and (env[n].code == v or env[n].code in w.outer_vars)
                            for n in free):
        return None
    if any(strided(a, n) for a in _reads(e.body) for n in names):
        return None
    from .loops import UNROLL, LoopWriter

    extents = [iv.extent for iv in e.indices]
    if all(isinstance(d, int) for d in extents) and math.prod(extents) <= UNROLL:
        # (a window of constant extents, 3x3: its points summed in the point loop, which
        # LLVM unrolls and vectorizes; a tile pass per tap ran blur's 3x3 sum 2.2x slower)
        return None
    # The range of every summed index (narrowed by brackets) must not depend on v.
    probe: dict[str, Index] = dict(env)
    body = e.body
    token = re.compile(rf"\b{re.escape(v)}\b")
    order = solve_order(e.indices, e.body)
    for iv in order:
        lo, hi, body, _, taps = w.bounds(iv.name, dim_str(iv.extent), body, probe)
        if any(token.search(c) for c in (lo, hi, taps[0] if taps else "")):
            return None
        if taps is not None and iv is order[0]:  # a few unrolled taps: straight-line code
            return None
        probe[iv.name] = Index(f"_probe_{iv.name}", iv.extent)
    k = len(w.tile_pre_sums)
    w.tile_pre_sums.append(e)
    acc, flag = f"_a{k}", f"_f{k}"
    sub = LoopWriter(w.shapes, w.fused, w.relations, hoisted=w.hoisted, pre=w.pre,
                     pre_depth=w.pre_depth, top=w.top, prefix=f"_x{k}_", interior=v,
                     hoist_var=w.hoist_var, outer_vars=w.outer_vars, row=w.row, tag=w.tag,
                     shift=w.shift)
    sub.depth, sub.sum_depth, sub.tile_var = w.tile_depth, 1, v
    sub.emit("for _t in range(_vn):")
    sub.emit(f"    {acc}[_t] = F(0)")
    init = len(sub.lines)
    sub.emit("for _t in range(_vn):")
    sub.emit(f"    {flag}[_t] = True")
    used = sub._level(list(order), e.body, dict(env), f"{acc}[_t]", f"{flag}[_t]", False)
    if not used:
        del sub.lines[init:init + 2]
    assert w.top is not None
    w.top.append(f"    {acc} = np.empty({TILE}, dtype=F)")
    if used:
        w.top.append(f"    {flag} = np.empty({TILE}, dtype=np.bool_)")
    w.tile_pre += sub.lines
    w.lows += sub.lows
    w.highs += sub.highs
    w.row_lows += sub.row_lows
    w.row_highs += sub.row_highs
    return f"{acc}[_t]", (f"{flag}[_t]" if used else None)


def tile_leaf(w: LoopWriter, body: Expr, inner: dict[str, Index], acc: str, flag: str,
              narrowed: bool) -> bool:
    """The accumulation of an interchanged sum whose indices are all placed: its term at
    every point ``_t`` of the tile. Whether the flag is used."""
    return _terms(w, body, [inner], acc, flag, narrowed)


def jammed(w: LoopWriter, iv: Any, lo: str, hi: str, body: Expr, inner: dict[str, Index],
           acc: str, flag: str, narrowed: bool, span: tuple[Affine, Affine]) -> bool:
    """The innermost summed loop of an interchanged sum, :data:`JAM` values of its index per
    pass over the tile (unroll-and-jam: each point loads and stores its accumulator once per
    ``JAM`` terms, still adding them in order; the pass reads one view per array,
    :func:`_jam_offset`), then the rest one at a time."""
    var = w.fresh(iv.name)
    w.emit(f"{var} = {lo}")
    w.emit(f"while {var} + {JAM} <= {hi}:")
    w.open()
    names = [var]
    for u in range(1, JAM):
        names.append(w.fresh(iv.name))
        w.emit(f"{names[-1]} = {var} + {u}")
    envs = [{**inner, iv.name: Index(n, iv.extent, span=span)} for n in names]
    w.jam = {n: (var, u) for u, n in enumerate(names)}
    used = _terms(w, body, envs, acc, flag, narrowed)
    w.jam = {}
    w.emit(f"{var} += {JAM}")
    w.close()
    w.emit(f"while {var} < {hi}:")
    w.open()
    used |= _terms(w, body, [{**inner, iv.name: Index(var, iv.extent, span=span)}], acc, flag,
                   narrowed)
    w.emit(f"{var} += 1")
    w.close()
    return used


def _terms(w: LoopWriter, body: Expr, envs: list[dict[str, Index]], acc: str, flag: str,
           narrowed: bool) -> bool:
    """One pass over the tile adding the terms of ``body`` at each of ``envs`` in turn to
    each point's accumulator; views of the contiguous reads are taken just before the ``_t``
    loop. Whether the flag is used."""
    at, pad = len(w.lines), "    " * w.depth
    w.views, w.view_keys = [], {}
    w.emit("for _t in range(_vn):")
    w.open()
    w.emit(f"{w.tile_var} = _v0 + _t")
    total = w.fresh("_s")
    w.emit(f"{total} = {acc}")
    used = False
    for env in envs:
        w.view_codes = frozenset(ix.code for ix in env.values() if ix.code.isidentifier())
        val, z = w.expr(body, env)
        used |= w.accumulate(total, val, z, flag, narrowed)
    w.emit(f"{acc} = {total}")
    w.close()
    w.lines[at:at] = [pad + line for line in w.views]
    w.views = None
    return used


def view(w: LoopWriter, a: Access, codes: list[str], env: Mapping[str, Index]) -> str | None:
    """``a`` (every guard dropped) as ``view[_t]`` of a view taken before the tile's ``_t``
    loop, when its last index is ``v`` plus terms fixed in that loop and the others are fixed
    too; as a scalar read before that loop when every index is fixed; None otherwise."""
    v = w.tile_var
    assert v is not None and w.views is not None
    fixed = w.view_codes - {v}

    def split(ix: Affine) -> tuple[int, Affine] | None:
        k, rest = 0, Affine((), ix.sizes, ix.const)
        for name, c in ix.index:
            code = env[name].code if name in env else None
            if code == v:
                k += int(c) if c == int(c) else 2  # a fraction of v: not a view
            elif code in fixed:
                rest = rest + Affine.var(name).scale(c)
            else:
                return None
        return k, rest

    parts = [split(ix) for ix in a.indices]
    if any(p is None for p in parts) or not a.indices[-1].is_integral():
        return None
    if all(p[0] == 0 for p in parts):  # type: ignore[index]  # fixed in the loop: one read
        key = (a.name, tuple(codes), None)
        name = w.view_keys.get(key)
        if name is None:
            name = w.view_keys[key] = w.fresh(f"{a.name}_s")
            w.views.append(f"{name} = {a.name}[{', '.join(codes)}]")
        return name
    if any(p[0] != 0 for p in parts[:-1]) or parts[-1][0] != 1:  # type: ignore[index]
        return None
    jam_env, shift, lowest = _jam_offset(w, parts[-1][1], env)  # type: ignore[index]
    rest_code, den = w.affine(parts[-1][1], jam_env)  # type: ignore[index]
    if den != 1:
        return None
    base = "_v0" if rest_code == "0" else f"_v0 + {rest_code}".replace("+ -", "- ")
    if lowest:
        base = f"{base} - {-lowest}"
    if a.name in w.shift:  # held in a buffer from an offset on (.windows)
        base += f" - {w.shift[a.name]}"
    key = (a.name, tuple(codes[:-1]), base)
    name = w.view_keys.get(key)
    if name is None:
        name = w.view_keys[key] = w.fresh(f"{a.name}_v")
        w.views.append(f"{name} = {a.name}[{', '.join([*codes[:-1], base + ':'])}]")
    at = shift - lowest
    return f"{name}[_t + {at}]" if at else f"{name}[_t]"


def _jam_offset(w: LoopWriter, rest: Affine, env: Mapping[str, Index]
                ) -> tuple[Mapping[str, Index], int, int]:
    """In a pass of jammed terms (:func:`jammed`): ``env`` with each jammed value in ``rest``
    (a view's offset from ``_v0``) written as the pass's first value, the constant offset
    that leaves, and the least such offset over the pass (the view starts there, so that
    every read of it is at ``_t`` or after). One view per array then serves the pass's
    terms: fewer pointers for LLVM's alias checks and address arithmetic."""
    shift = lowest = 0
    out = dict(env)
    for name, c in rest.index:
        hit = w.jam.get(env[name].code) if name in env else None
        if hit is None or c != int(c):
            continue
        first, u = hit
        shift += int(c) * u
        lowest += min(0, int(c) * (len(w.jam) - 1))  # (the pass's width)
        out[name] = dataclasses.replace(env[name], code=first)
    return out, shift, lowest
