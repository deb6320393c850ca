"""The loop nests of one kernel (:class:`NestWriter`, a part of
:class:`~eqsat_ad.backend.fused.program.NumbaProgram`): statements over the same points written
as one nest, its innermost output loop partitioned into the interior and its two edges
(:mod:`.interior`; the interior's sums a tile at a time, :mod:`.tiles`; both edges one loop),
its rows into the interior rows and the edge rows (both ends one loop), the checked arrays'
rows counted against the guard's box, and a sliding window's ranged kernels (:mod:`.windows`).
Each guarded body is written once per kernel where it can (:mod:`.compact`: Numba's compile
time of a cold first call grows with the code)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from ...ir.expr import Expr, accessed_names
from ...ir.index import Affine, dim_str
from ...ir.program import Statement
from .checks import bound_locals, counted_in_loop, row_counted
from .code import store_at
from .compact import JIT, extreme, hoist_constants
from .interior import Ceil, Index, holds_on, size_bound, support
from .loops import LoopWriter
from .reuse import Reused, reused_terms
from .scans import statement_scans
from .steps import LAST, STEPS, Step, stepped, stepping
from .tiles import TILE, TILE_MIN

__all__ = ["NestWriter"]


class _Row(NamedTuple):
    """One version of a kernel's innermost loop: its lines, the lines before the kernel's loops
    (its interior's bounds), the arrays read and the bounds of the next outer variable its
    dropped guards need (empty unless written for the interior rows)."""

    lines: list[str]
    head: list[str]
    reads: list[str]
    row_lows: list
    row_highs: list


class NestWriter:
    """Writes kernels for the program's statements (the attributes below are the program's)."""

    _shapes: dict
    _relations: frozenset[str]
    _sizes: tuple[str, ...]
    _checking: dict[str, int]
    _ranged: str | None
    # a stepped group being written (.steps): c, and whether each multiple is followed by
    # c - 1 points of 0.0
    _step: tuple[int, bool] | None = None
    # the kernel being written: statements over its rows alone, each with its output
    # (.reuse: written once per row after the hoisted sums), and the row sums' terms its
    # points read back from their buffers
    _rows: tuple[tuple[Statement, str], ...] = ()
    _terms: dict[str, dict[Expr, Reused]] = {}  # noqa: RUF012 (replaced, never mutated)
    _out_rows = False

    def _writer(self, fused: dict[str, Statement]) -> LoopWriter:
        w = LoopWriter(self._shapes, fused, self._relations)
        if self._ranged is not None and self._ranged != "store":  # a window's buffer
            w.shift = {self._ranged: "_po"}
        w.unsigned_interior = self._ranged is not None
        w.bands = self._ranged is None
        return w

    def _kernel(self, group: list[Statement], fused: dict[str, Statement],
                checks: Mapping[str, int] | None = None) -> tuple[str, list[str]]:
        """One kernel for statements over the same points (siblings share one loop nest and
        their fused producers' values), and the arrays it reads. The innermost output loop is
        partitioned (:mod:`.interior`) when its interior drops a guard. ``checks``: arrays of
        the points' shape, each with its position in ``_box``, whose entries the kernel checks
        against those bounds (:meth:`_checks`); it then returns whether one lies outside.
        Statements over the rows alone follow those over the points (:mod:`.reuse`)."""
        points = [t for t in group if len(t.indices) == len(group[0].indices)]
        rows = group[len(points):]
        assert all(len(t.indices) == len(group[0].indices) - 1 for t in rows)
        self._rows = tuple((t, f"_out{len(points) + k}") for k, t in enumerate(rows))
        kept: list = []  # (numbers the buffers of the kernel's reused sums)
        self._terms = {} if self._ranged is not None else {
            t.name: reused_terms(t, self._relations, kept) for t in points}
        # the output's row may hold a reused sum's terms (.reuse.term_buffer): one statement
        # over the points, every point of the row written once after the row's sums (not
        # where brackets store 0.0 outside a range before them, _supported_row)
        last = points[0].indices[-1].name if points[0].indices else ""
        self._out_rows = (len(points) == 1 and bool(self._terms.get(points[0].name))
                          and support(points[0].body, last) is None)
        try:
            code, reads = self._nest(points, fused, checks)
        finally:
            self._rows, self._terms, self._out_rows = (), {}, False
        return code, reads

    def _nest(self, group: list[Statement], fused: dict[str, Statement],
              checks: Mapping[str, int] | None = None) -> tuple[str, list[str]]:
        """:meth:`_kernel`'s nest of the statements over the points ``group``."""
        first = group[0]
        ivs = first.indices
        scans = statement_scans(first.body, ivs[-1].name) if ivs and len(group) == 1 else {}
        self._checking = dict(checks or {})
        w = self._writer(fused)
        w.depth = 1
        top: list[str] = []  # sums over no free index, once per call
        hoisted: dict = {}
        w.top, w.hoisted = top, hoisted
        split = bool(ivs) and not scans  # a running sum carries across the loop: one range
        for iv in ivs[:-1] if split else ivs:
            w.emit(f"for {iv.name} in range({iv.extent}):")
            w.open()
        if scans:  # running sums along the innermost index
            w.scans = scans
            w.scan_outer, w.scan_line = ivs[-1].name, len(w.lines) - 1
            w.scan_blocks = len(ivs)
        if not split:
            reads = self._bodies(group, fused, w, set())
            w.lines[0:0] = top
            return self._finish_kernel(group, fused, w, reads)
        row = ivs[-2].name if len(ivs) >= 2 else None
        inner_rows = None
        if row is not None:  # the rows where no read leaves its array along the row index
            inner_top: list[str] = []
            inner_hoisted: dict = {}
            inner_rows = self._row(group, fused, w, inner_top, inner_hoisted, row)
            if not inner_rows.row_lows:
                inner_rows = None
        if inner_rows is None:
            edge_rows = self._row(group, fused, w, top, hoisted, None)
            w.lines += edge_rows.lines
            self._check_rows(ivs, w, len(w.lines) - len(edge_rows.lines))
            w.lines[0:0] = [*top, *edge_rows.head]
            return self._finish_kernel(group, fused, w, edge_rows.reads)
        top += inner_top
        # The edge rows (a few): one loop with every guard; they reuse the sums over no free
        # index hoisted to the kernel top.
        closed = {k: v for k, v in inner_hoisted.items() if not k[1]}
        edge_rows = self._row(group, fused, w, top, closed, None, whole=True)
        assert row is not None
        rows = ivs[-2]
        lows = dict.fromkeys(["0", *(self._size_code(a) for a in inner_rows.row_lows)])
        highs = dict.fromkeys([dim_str(rows.extent),
                               *(self._size_code(a) for a in inner_rows.row_highs)])
        # The interior rows a loop of their own, not one with a branch: its bounds tell LLVM
        # which rows their reads touch, so its overlap check of the output row against them
        # (before vectorizing the point loop) passes for an output allocated next to an
        # input, as np.empty often does (with one loop it took rows -1 and H too, and ran the
        # scalar loop: 3x slower).
        opened = w.lines.pop()  # the row loop
        at = opened[:len(opened) - len(opened.lstrip())]
        extent = dim_str(rows.extent)
        # (the edge rows, [0, _rlo) and [_rhi, extent), in one loop before them: one copy of
        # their guarded code, as the edges of a row)
        w.lines.append(f"{at}for _er in range(_nre):  # the edge rows: every guard")
        w.lines.append(f"{at}    {row} = _er if _er < _nrl else _rhi + (_er - _nrl)")
        w.lines += edge_rows.lines
        self._check_rows(ivs, w, len(w.lines) - len(edge_rows.lines) - 1)
        w.lines.append(f"{at}for {row} in range(_rlo, _rhi):  # the interior rows: no read "
                       f"leaves its array along {row}")
        w.lines += inner_rows.lines
        self._check_rows(ivs, w, len(w.lines) - len(inner_rows.lines))
        w.lines[0:0] = [*top, *edge_rows.head, *inner_rows.head,
                        f"    _rlo = {extreme('max', lows)}",
                        f"    _rhi = {extreme('max', ['_rlo', extreme('min', highs)])}",
                        f"    _nrl = {extreme('min', ['_rlo', extent])}",
                        f"    _nre = _nrl + {extreme('max', ['0', f'{extent} - _rhi'])}"]
        return self._finish_kernel(group, fused, w, edge_rows.reads)

    def _row(self, group: list[Statement], fused: dict[str, Statement], w: LoopWriter,
             top: list[str], hoisted: dict, row: str | None, whole: bool = False,
             span: tuple[str, str] | None = None, within: tuple[list, list] = ([], [])
             ) -> _Row:
        """The innermost output loop, at ``w``'s depth, as the interior (its sums
        interchanged with tiles of it, :mod:`.tiles`) then both edges in one loop, or
        (``whole``) as one loop with every guard (over ``span``, when given); ``row``: the
        next outer output variable, when these are its interior rows (their guards along it
        dropped). A group that is 0 off the multiples of ``c`` steps over them
        (:mod:`.steps`); a statement that is a bracket's strong zero outside a range of sizes
        runs that range (``within``: its bounds), 0.0 stored outside it."""
        step = None if self._ranged or self._step or whole else stepping(group,
                                                                           self._relations)
        if step is not None:
            return self._stepped_row(group, fused, w, top, hoisted, row, step)
        ivs = group[0].indices
        if not self._ranged and self._step is None and span is None and len(group) == 1:
            found = support(group[0].body, ivs[-1].name)
            if found is not None:
                return self._supported_row(group[0], found, fused, w, top, hoisted, row, whole)
        last, tag = ivs[-1], "r" if row is not None else ""
        pre: list[str] = []
        out = LoopWriter(self._shapes, fused, self._relations, depth=w.depth)

        def body_writer(counter: int) -> LoopWriter:
            b = self._writer(fused)
            b.depth, b.counter, b.blocks = w.depth + 1, counter, [*w.blocks, -1]
            b.hoist_var, b.outer_vars = last.name, frozenset(iv.name for iv in ivs[:-1])
            b.hoisted, b.pre, b.pre_depth, b.top = hoisted, pre, w.depth, top
            b.row, b.tag = row, tag
            return b

        def interior_writer(known: tuple[list, list] | None) -> LoopWriter:
            b = body_writer(w.counter)
            b.interior, b.known = last.name, known
            b.tile_pre, b.tile_depth = [], w.depth + 1
            b.tile_blocks = len(b.blocks)
            return b

        inside = interior_writer(None)
        reads = [] if whole else self._bodies(group, fused, inside, {last.name, row})
        # (the interior runs inside [0, extent); a window's kernel from _p0 >= 0 on)
        ends = [] if self._ranged else [Affine.of_dim(last.extent)]
        known = ([Affine.constant(0), *within[0], *inside.lows], [*ends, *within[1], *inside.highs])
        if not whole and inside.lows and any(holds_on(c, *known) for c in inside.conditions):
            # written again, its bounds known: the brackets they prove are their true branch
            # (the hoisted sums are the first writing's; a tile's arrays are allocated once)
            n_top, n_pre = len(top), len(pre)
            first_lows, first_highs = inside.lows, inside.highs
            inside = interior_writer(known)
            self._bodies(group, fused, inside, {last.name, row})
            top[n_top:] = [x for x in top[n_top:] if x not in top[:n_top]]
            pre[n_pre:] = [x for x in pre[n_pre:] if x not in pre[:n_pre]]
            inside.lows = [*first_lows, *inside.lows]  # (the same bounds: kept as proven)
            inside.highs = [*first_highs, *inside.highs]
        edge = body_writer(inside.counter)
        edge_reads = self._bodies(group, fused, edge, {row})
        reads = edge_reads if whole else reads
        row_lows, row_highs = inside.row_lows + edge.row_lows, inside.row_highs + edge.row_highs
        for t, name in self._rows:  # once per row, after the row's hoisted sums
            rw = body_writer(edge.counter)
            rw.depth = w.depth
            outer = ivs[:-1]
            env = {a.name: Index(b.name, b.extent) for a, b in zip(t.indices, outer, strict=True)}
            v, _ = rw.expr(t.body, env)
            rw.emit(f"{name}[{store_at([b.name for b in outer])}] = {v}")
            pre += rw.lines
            edge.counter = rw.counter
        out.lines += pre  # the sums free of the innermost index, once per outer point
        # a kernel of a sliding window (.windows) runs the points [_p0, _p1) of its extent
        first, end = ("_p0", "_p1") if self._ranged else span or ("0", dim_str(last.extent))
        start = f"{first}, " if first != "0" else ""
        if not inside.lows and not inside.tile_pre:  # nothing to gain: one loop, every guard
            out.emit(f"for {last.name} in range({start}{end}):")
            out.lines += edge.lines
            return _Row(out.lines, [], reads, edge.row_lows, edge.row_highs)
        lo, hi, v = f"_lo{tag}", f"_hi{tag}", last.name
        if inside.tile_pre:  # sums interchanged with a tile of v (.tiles)
            out.emit(f"for _v0 in range({lo}, {hi}, {TILE}):  # the interior: no read leaves "
                     "its array; sums a tile at a time")
            out.emit(f"    _vn = {extreme('min', [str(TILE), f'{hi} - _v0'])}")
            out.lines += inside.tile_pre
            out.emit("    for _t in range(_vn):")
            out.emit(f"        {v} = _v0 + _t")
            out.lines += ["    " + line for line in inside.lines]
        else:
            out.emit(f"for {v} in range({lo}, {hi}):  # the interior: no read leaves its array")
            out.lines += inside.lines
        # The edges, [first, lo) and [hi, end), as one loop after the interior: one copy of
        # the guarded code (Numba's compile time grows with the code; the edges' points are
        # a few, their order does not change a value). (Clamped to the end: a low bound as
        # K - 1 may pass it; not in _lo itself, whose constant value tells LLVM the
        # interior's shifted indices are not negative, so that Numba's wraparound of
        # negative indices folds away and the reads stay contiguous.)
        n_low, n_all, at = f"_nl{tag}", f"_ne{tag}", "_ep" if first == "0" else f"{first} + _ep"
        out.emit(f"for _ep in range({n_all}):  # the edges: every guard")
        out.emit(f"    {v} = {at} if _ep < {n_low} else {hi} + (_ep - {n_low})")
        out.lines += edge.lines
        lows = dict.fromkeys([first, *(self._size_code(a) for a in inside.lows)])
        highs = dict.fromkeys([end, *(self._size_code(a) for a in inside.highs)])
        head = [f"    {lo} = {extreme('max', lows)}",
                f"    {hi} = {extreme('max', [lo, extreme('min', highs)])}"]
        if inside.tile_pre:  # a narrow interior runs with the edges (no tile worth its views)
            head.append(f"    {hi} = {hi} if {hi} - {lo} >= {TILE_MIN} else {lo}")
        low_end = extreme("min", [lo, end])  # (lo >= first: from 0, no clamp to 0)
        low_end = low_end if first == "0" else extreme("max", ["0", f"{low_end} - {first}"])
        head += [f"    {n_low} = {low_end}",
                 f"    {n_all} = {n_low} + {extreme('max', ['0', f'{end} - {hi}'])}"]
        return _Row(out.lines, head, reads, row_lows, row_highs)

    def _supported_row(self, s: Statement, found: tuple[Expr, list, list],
                       fused: dict[str, Statement],
                       w: LoopWriter, top: list[str], hoisted: dict, row: str | None,
                       whole: bool) -> _Row:
        """The innermost loop of ``s``, a product with brackets that bound its variable by
        sizes (:func:`~.interior.support`): 0.0 stored before and after the range where they
        hold, ``s`` without them inside it (partitioned as any loop)."""
        body, lows, highs = found
        last = s.indices[-1]
        extent = dim_str(last.extent)
        tag = "r" if row is not None else ""
        lo, hi = f"_s0{tag}", f"_s1{tag}"
        inside = Statement(s.name, s.indices, body, s.loc)
        ranged = self._row([inside], fused, w, top, hoisted, row, whole=whole, span=(lo, hi),
                           within=(lows, highs))
        low = extreme("max", ["0", *map(self._size_code, lows)])
        high = extreme("min", [extent, *map(self._size_code, highs)])
        head = [f"    {lo} = {extreme('min', [low, extent])}",
                f"    {hi} = {extreme('max', [lo, high])}"]
        pad = " " * (4 * w.depth)
        zero = [f"{pad}    _out[{store_at([iv.name for iv in s.indices])}] = F(0)"]
        lines = [f"{pad}for {last.name} in range({lo}):  # where a bracket is false: 0", *zero,
                 *ranged.lines,
                 f"{pad}for {last.name} in range({hi}, {extent}):  # where a bracket is false: 0",
                 *zero]
        return _Row(lines, [*head, *ranged.head], ranged.reads, ranged.row_lows,
                    ranged.row_highs)

    def _stepped_row(self, group: list[Statement], fused: dict[str, Statement], w: LoopWriter,
                     top: list[str], hoisted: dict, row: str | None, step: Step) -> _Row:
        """The innermost loop of a group that is +0.0 off the multiples of ``c``: ``k`` over
        the whole steps (partitioned as any loop), each storing its multiple ``c·k`` and 0.0 at
        the ``c - 1`` points after it; then the last multiple (every guard) and the points
        after it (0.0). No point tests ``v % c``."""
        last = group[0].indices[-1]
        extent = dim_str(last.extent)
        steps = stepped(group, step, STEPS)
        self._step = (step.c, True)
        try:
            main = self._row(steps, fused, w, top, hoisted, row)
            self._step = (step.c, False)  # the last multiple: not followed by c - 1 points
            tail = self._row(steps, fused, w, top, hoisted, row, whole=True,
                             span=(STEPS, LAST))
        finally:
            self._step = None
        lines = [*main.lines, *tail.lines]
        pad = " " * (4 * w.depth)
        outs = self._outs(group)
        at = store_at([*(iv.name for iv in group[0].indices[:-1]), last.name])
        lines.append(f"{pad}for {last.name} in range({step.c} * {STEPS} + 1, {extent}):  "
                     f"# after the last multiple of {step.c}: 0")
        lines += [f"{pad}    {out}[{at}] = F(0)" for out in outs]
        head = [f"    {STEPS} = {extent} // {step.c}", f"    {LAST} = -(-{extent} // {step.c})",
                *main.head, *tail.head]
        reads = [*main.reads, *(r for r in tail.reads if r not in main.reads)]
        return _Row(lines, head, reads, [*main.row_lows, *tail.row_lows],
                    [*main.row_highs, *tail.row_highs])

    @staticmethod
    def _size_code(a: Affine | Ceil) -> str:
        return size_bound(a, lambda n: LoopWriter({}, {}, frozenset()).affine(n, {})[0])

    def _bodies(self, group: list[Statement], fused: dict[str, Statement], w: LoopWriter,
                partitioned: set[str | None]) -> list[str]:
        """The statements' values at one point, written by ``w``; the arrays they read."""
        first = group[0]
        target = store_at([iv.name for iv in first.indices])
        if self._ranged == "store":  # a producer's points at _out[i - _po] (.windows)
            # (unsigned: i >= _p0 >= _po; a signed index would take Numba's wraparound
            # branch for negative ones, which keeps the store from vectorizing)
            target = f"np.uintp({', '.join(iv.name for iv in first.indices)} - _po)"
        elif self._ranged is not None:
            target = f"np.uintp({', '.join(iv.name for iv in first.indices)})"
        zeros: list[str] = []
        if self._step is not None:  # the multiple c·k (k >= 0: unsigned), 0.0 after it
            c, after = self._step
            at = [iv.name for iv in first.indices]
            target = ", ".join([*at[:-1], f"np.uintp({c} * {at[-1]})"])
            zeros = [", ".join([*at[:-1], f"np.uintp({c} * {at[-1]} + {r})"])
                     for r in range(1, c)] if after else []
        outs = self._outs(group)
        reads: list[str] = []
        for s, out in zip(group, outs, strict=True):
            env = {a.name: Index(b.name, b.extent,
                                 exact=Affine.var(b.name) if b.name in partitioned else None)
                   for a, b in zip(s.indices, first.indices, strict=True)}
            # (a stepped statement's innermost index counts multiples, not the buffer's points)
            w.terms = self._terms.get(s.name, {}) if self._step is None else {}
            outer = ", ".join(iv.name for iv in first.indices[:-1])
            w.out_row = f"{out}[{outer}]" if self._out_rows and w.terms and outer else None
            # (a band's pass may fill a 1-D output before its loop reads it back, .bands)
            w.out_point = (out, first.indices[0].name, first.indices[0].extent) if len(
                first.indices) == 1 and self._step is None and self._ranged is None else None
            v, _ = w.expr(s.body, env)
            w.terms, w.out_row, w.out_point = {}, None, None
            w.emit(f"{out}[{target}] = {v}")
            for z in zeros:
                w.emit(f"{out}[{z}] = F(0)")
            reads += [r for r in self._reads(s, fused) if r not in reads]
        return reads

    def _check_rows(self, ivs: tuple, w: LoopWriter, start: int) -> None:
        """The checked arrays' entries of the row written from ``w.lines[start]`` on counted
        inside their bounds: in a loop over the whole row that reads them
        (:func:`~.checks.counted_in_loop`), else after the innermost loop, the row just read
        (in cache), in a loop of its own (:func:`~.checks.row_counted`: vectorized; inside a
        partitioned point loop the read would become a gather); a nan compares false, so it
        is not counted."""
        last = ivs[-1]
        outer = ", ".join(iv.name for iv in ivs[:-1])
        at = ", ".join([*(iv.name for iv in ivs[:-1]), "_c"])
        for name, k in self._checking.items():
            if counted_in_loop(w.lines, start, name, k, outer, dim_str(last.extent)):
                continue
            w.emit(f"# {name} inside its bounds?")
            for line in row_counted(f"{name}[{at}]", dim_str(last.extent), k, ""):
                w.emit(line)

    def _outs(self, group: list[Statement]) -> list[str]:
        """The kernel's outputs of the statements over its points ``group`` (then its rows')."""
        if len(group) == 1 and not self._rows:
            return ["_out"]
        return [f"_out{k}" for k in range(len(group))]

    def _finish_kernel(self, group: list[Statement], fused: dict[str, Statement],
                       w: LoopWriter, reads: list[str]) -> tuple[str, list[str]]:
        outs = [*self._outs(group), *(name for _, name in self._rows)]
        for t, _ in self._rows:
            reads = reads + [r for r in self._reads(t, fused) if r not in reads]
        checks, self._checking = self._checking, {}
        lines = _live_flags(w.lines)
        if checks:  # the bounds as locals; whether an entry was not inside them is returned
            ks = sorted(checks.values())
            size = " * ".join(dim_str(d) for d in group[0].shape)
            bounds = [line for k in ks for line in bound_locals(k)]
            lines = [*bounds, *lines,
                     f"    return {' or '.join(f'_in{k} != {size}' for k in ks)}"]
            text = "\n".join(lines)
            if any(f"_in{k} += " not in text for k in ks):
                raise AssertionError(f"kernel {group[0].name}: a checked array is not checked")
        ranged = ["_p0", "_p1", "_po"] if self._ranged is not None else []
        args = ", ".join([*outs, *reads, *self._sizes, *(["_box"] if checks else []), *ranged])
        head = [JIT, f"def _k_{group[0].name}({args}):"]
        return "\n".join(head + hoist_constants(lines)), reads

    def _reads(self, s: Statement, fused: dict[str, Statement]) -> list[str]:
        out: list[str] = []
        todo = sorted(accessed_names(s.body))
        while todo:
            n = todo.pop(0)
            if n in fused:
                todo += sorted(accessed_names(fused[n].body))
            elif n not in out:
                out.append(n)
        return out


_FLAG = re.compile(r"^\s*(none\w*) = ")


def _live_flags(lines: list[str]) -> list[str]:
    """``lines`` without the assignments to strong-zero flags (``none<k>``) that nothing reads
    (a sum's flag whose value no product asks for; in an interior whose brackets are proven,
    most): a block left empty gets ``pass``."""
    while True:
        assigned: dict[str, list[int]] = {}
        for k, line in enumerate(lines):
            m = _FLAG.match(line)
            if m:
                assigned.setdefault(m.group(1), []).append(k)
        dead: set[int] = set()
        for name, at in assigned.items():
            word = re.compile(rf"\b{name}\b")
            own = set(at)
            if not any(word.search(line) for k, line in enumerate(lines) if k not in own):
                dead |= own
        if not dead:
            return lines
        kept: list[str] = []
        for k, line in enumerate(lines):
            if k in dead:
                continue
            kept.append(line)
        lines = _fill_blocks(kept)


def _fill_blocks(lines: list[str]) -> list[str]:
    """``pass`` in every block (a line ending in ``:``) left without a statement."""
    out: list[str] = []
    for k, line in enumerate(lines):
        out.append(line)
        if line.rstrip().endswith(":") and not line.lstrip().startswith("#"):
            pad = len(line) - len(line.lstrip())
            nxt = lines[k + 1] if k + 1 < len(lines) else ""
            if len(nxt) - len(nxt.lstrip()) <= pad or not nxt.strip():
                out.append(" " * (pad + 4) + "pass")
    return out

