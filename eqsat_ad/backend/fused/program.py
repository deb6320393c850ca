"""A program compiled to fused loop nests (Numba), with NumPy calls between them.

The generated module (:attr:`NumbaProgram.source`) holds one ``@nb.njit(cache=True)`` kernel
per loop statement (its fused producers evaluated inside it; consecutive statements over the
same points that share reads, siblings, in one kernel: one pass) and a plain Python ``run``
function that allocates each stored array, calls the kernels in program order and, for the
statements the schedule leaves to NumPy (:mod:`.schedule`), the NumPy backend's code for that
one statement. The module is written to a file under the cache directory (``numba/`` under
``$EQSAT_AD_CACHE_DIR``, default ``~/.cache/eqsat_ad``), named by the hash of its source, so
Numba's on-disk cache serves later processes. One module per float type: ``F`` is
``np.float64`` or ``np.float32`` and every constant is ``F(c)``.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ...ir.expr import Access, accessed_names
from ...ir.program import Program, Statement
from ...plan.kernels import Plan
from ...plan.lower import lower_program
from ..numpy import CompiledProgram, _finish, compile_program
from .checks import (
    BoundsByBox,
    call_box,
    counted_at_stores,
    finite_run,
    kept_result,
    proof_before_run,
)
from .compact import OverBudget, kernel_within_budget
from .epilogue import cheaper, fresh, product_operands, product_run, split_products
from .exact import exact_on_disk
from .functions import helpers_for
from .inplace import in_place
from .loading import cache_dir, compile_failure, give_up_loops, load, require_numba
from .loops import LoopWriter, Unsupported
from .nests import NestWriter
from .outputs import Recycler, caller_buffers, into_buffers
from .pairs import MAX_REST, PairForm, pair_form, pair_kernel, pair_price, row_shapes
from .parts import Part, alone_price, part_call, part_lines, read_after
from .repeat import Repeat, signature
from .reuse import row_sibling
from .rows import PAIRWISE
from .scans import statement_scans
from .schedule import Schedule, schedule
from .specialize import fix_sizes, small_sizes
from .storage import apart_new, array_lines, module_head, return_line, shared_buffers, with_outputs
from .tiles import TILE, TILE_LINE
from .windows import Window, covers, driver

__all__ = ["NumbaProgram", "cache_dir", "require_numba"]


class NumbaProgram(NestWriter):
    """``prog`` compiled to fused loop nests: call it like the program.

    ``.source``: the generated module (float64 version); ``.schedule``: where each statement
    runs; ``.compile_seconds``: per float type, the time to load (and, on a cold cache, to
    compile) the module at its first call. ``.numpy``: the NumPy backend's compiled program;
    when the schedule runs no statement as loops (``.numpy_only``) it is the same code, and
    :attr:`runner` is it: calls go to it directly, with no wrapper in between. A call
    repeating an earlier call's argument shapes and float types (no ``out=``) reuses what that
    call's binding found (:meth:`_repeat`).
    """

    def __init__(self, prog: Program) -> None:
        require_numba()
        self._write(prog)
        self.numpy = compile_program(prog)  # binding, empty sizes and NumPy-run statements
        self.numpy_only = set(self.schedule.placement.values()) <= {"numpy"}
        self.runner: Any = self.numpy if self.numpy_only else self
        self._modules: dict[str, ModuleType] = {}
        # size symbols a pair loop would unroll (.specialize): fixed to their values at a call
        self._small = small_sizes(self._prog)
        self._special: dict[tuple[tuple[str, int], ...], NumbaProgram | None] = {}
        self.compile_seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self._exact_by: dict[tuple, bool] = {}  # (fallback, sizes) -> see _exact
        self._local = threading.local()
        self._names = self.program.param_names
        # (fallback, the arguments' shapes and dtypes) -> what its binding found: _repeat
        self._repeats: dict[tuple, Repeat] = {}
        self._bounds = BoundsByBox(self.checked)
        self._no_buffers = (None,) * len(prog.outputs)
        self._recycler = Recycler()  # outputs a caller dropped, reused by repeat calls

    @classmethod
    def scheduled(cls, prog: Program) -> tuple[Schedule, Plan]:
        """The schedule ``NumbaProgram(prog)`` runs by and the NumPy plan of the program it
        schedules, its module written as the constructor writes it (a kernel past the branch
        budget runs as NumPy code) but nothing compiled: what extraction and the cost report
        price for ``backend="numba"`` (:mod:`.price`)."""
        writer = cls.__new__(cls)
        writer._write(prog)
        return writer.schedule, writer._plan

    def _write(self, prog: Program) -> None:
        """Schedule ``prog`` and write its module (:attr:`source`)."""
        self.program = prog
        self._prog = with_outputs(prog)
        self._zero_sign: tuple[Program | None, frozenset[str]] = (None, frozenset())
        self._checking: dict[str, int] = {}
        # the kernel being written runs a range of points of a sliding window (.windows):
        # "store" (the producer: its points at _out[i - _po]) or the producer's name (the
        # consumer: reading it from the buffer at index - _po); None: a whole loop nest
        self._ranged: str | None = None
        self._shapes = {p.name: p.shape for p in prog.params}
        self._shapes.update({s.name: s.shape for s in self._prog.statements})
        self._relations = frozenset(p.name for p in prog.params if p.kind == "relation")
        self._tensors = frozenset(p.name for p in prog.params if p.kind == "tensor")
        self._sizes = prog.size_names()
        # past the branch budget (.compact): statements run as NumPy code, siblings not grouped
        self._over: set[str] = set()
        self._apart: set[str] = set()
        whole = self._prog
        while True:
            self._choose_schedule(whole)
            self._numpy_parts: dict[str, CompiledProgram] = {}
            # the tensor parameters whose entries a loop nest checks against a proven box, in
            # the order of their bounds in _box (see _checks)
            self.checked: list[str] = []
            try:
                self.source = self._module_source()
                break
            except OverBudget as over:  # (a kernel Numba would compile for long: again)
                grouped = len(over.names) > 1 and not over.names <= self._apart
                known = len(self._over) + len(self._apart)
                (self._apart if grouped else self._over).update(over.names)
                if len(self._over) + len(self._apart) == known:  # (no progress: all NumPy)
                    self._over.update(s.name for s in whole.statements)

    def with_own_fallback_state(self) -> NumbaProgram:
        """A shallow copy for another fallback (:func:`..guard.with_fallback`): the kernels
        and the module are shared, what calls remember of a fallback's decisions (the
        bindings of repeat calls, exactness, proven boxes, outputs to reuse) is its own, so
        the bounded caches of one fallback never fill with another's."""
        twin = copy.copy(self)
        twin._repeats, twin._exact_by, twin._bounds = {}, {}, BoundsByBox(self.checked)
        twin._recycler = Recycler()
        return twin

    # --- generation ----------------------------------------------------------------------------
    def _choose_schedule(self, prog: Program) -> None:
        """The schedule of ``prog``, or of its matrix products split from their elementwise
        work (:mod:`.epilogue`) where that is priced cheaper."""
        self._prog = prog
        plan = lower_program(prog).plan
        self.schedule: Schedule = self._schedule(plan, plan)
        split = split_products(prog, plan, self._relations)
        if split is not None:
            unsplit, self._prog = (prog, self._pairs), split
            self._shapes.update({s.name: s.shape for s in split.statements})
            trial = self._schedule(split_plan := lower_program(split).plan, plan)
            if cheaper(trial, self.schedule):
                self.schedule, plan = trial, split_plan
            else:
                self._prog, self._pairs = unsplit
        self._plan = plan  # (of self._prog)

    def _schedule(self, plan: Any, whole: Any) -> Schedule:
        """The schedule of ``self._prog`` (``plan``: its plan; ``whole``: the NumPy program's)."""
        loopable = {s.name: self._loopable(s) for s in self._prog.statements}
        alone = {s.name: alone_price(self.program, self._shapes, s, self._signed(s))
                 for s in self._prog.statements}
        self._pairs = {s.name: f for s in self._prog.statements
                       if (f := self._pair_form(s)) is not None}
        priced = {n: pair_price(f, self._stmt(n)) for n, f in self._pairs.items()}
        return schedule(self._prog, plan, loopable, alone=alone, pairs=priced,
                        relations=self._relations, whole=whole)

    def _loopable(self, s: Statement) -> bool:
        if s.name in self._over:
            return False
        try:
            self._kernel([s], {})
        except Unsupported:
            return False
        return True

    def _stmt(self, name: str) -> Statement:
        return next(s for s in self._prog.statements if s.name == name)

    def _pair_form(self, s: Statement) -> PairForm | None:
        """``s`` as a pair loop (:mod:`.pairs`) when the loop writer lowers it so."""
        form = pair_form(s, self._shapes, self._relations)
        if form is None or s.name in self._over:
            return None
        try:
            self._pair_kernel(s, form, {})
        except Unsupported:
            return None
        return form

    def _pair_kernel(self, s: Statement, form: PairForm, fused: dict[str, Statement]
                     ) -> tuple[str, list[str]]:
        w = LoopWriter({**self._shapes, **row_shapes(form)}, fused, self._relations)
        reads = self._reads(s, fused)
        return pair_kernel(form, s, w, reads, self._sizes), reads

    def _groups(self, fused: dict[str, Statement]) -> list[list[Statement]]:
        """Statements in program order, consecutive loop statements over the same points that
        share a read and do not read each other grouped (sibling fusion: one pass)."""
        place = self.schedule.placement
        groups: list[list[Statement]] = []
        slid = {w.consumer for w in self.schedule.windows.values()}
        for s in self._prog.statements:
            if place[s.name] in ("fused", "window"):  # (a window: run by its consumer's)
                continue
            last = groups[-1] if groups else None
            if s.name in self._apart:  # (with its siblings, past the branch budget)
                last = None
            if last is not None and self._row_of(last, s, fused, slid):
                # over the rows of last's points, sharing a row sum: once per row in its kernel
                last.append(s)
                continue
            if (last is not None and place[s.name] == "loop" and place[last[0].name] == "loop"
                    and s.name not in slid and last[0].name not in slid
                    and s.indices and all(t.shape == s.shape for t in last)
                    and not statement_scans(s.body, s.indices[-1].name)
                    and not statement_scans(last[0].body, last[0].indices[-1].name)):
                mine = set(self._reads(s, fused))
                theirs = {r for t in last for r in self._reads(t, fused)}
                if mine & theirs and not mine & {t.name for t in last}:
                    last.append(s)
                    continue
            groups.append([s])
        return groups

    def _row_of(self, group: list[Statement], s: Statement, fused: dict[str, Statement],
                slid: set[str]) -> bool:
        """``s`` runs in ``group``'s kernel once per row (:mod:`.reuse`): a loop statement over
        the outer points of the group's one statement (a loop nest over rows and points, with
        no running sum, not stepped, not a window's), sharing a row sum with it, neither
        reading the other (through fused producers too)."""
        place = self.schedule.placement
        first = group[0]
        if (len(group) != 1 or place[s.name] != "loop" or place[first.name] != "loop"
                or s.name in slid or first.name in slid
                or not row_sibling(first, s, self._relations)):
            return False
        return (first.name not in self._reads(s, fused)
                and s.name not in self._reads(first, fused))

    def _window_kernels(self, win: Window, fused: dict[str, Statement]) -> tuple[str, list[str]]:
        """The producer's and the consumer's kernels over a range of points and the driver
        running them a chunk at a time (:mod:`.windows`); the arrays the driver reads (it also
        takes ``_box`` and returns whether a checked entry lay outside it)."""
        producer, consumer = self._stmt(win.name), self._stmt(win.consumer)
        try:
            self._ranged = "store"
            p_code, p_reads = self._kernel([producer], fused)
            self._ranged = win.name
            c_code, c_reads = self._kernel([consumer], fused)
        finally:
            self._ranged = None
        ends = {"low": self._size_code(win.low), "high": self._size_code(win.high)}
        reads = list(dict.fromkeys([r for r in c_reads if r != win.name] + p_reads))
        # the tensor parameters over the consumer's points, checked against the guard's box
        # where the producer stores each point, else a chunk at a time (_checks: by rows)
        checks: dict[str, int] = {}
        for name in reads:
            if (name in self._tensors and name not in self.checked
                    and self._shapes[name] == consumer.shape):
                self.checked.append(name)
                checks[name] = len(self.checked) - 1
        counting = (counted_at_stores(p_code, checks, producer.indices[0].name)
                    if checks and covers(win) else None)
        code = driver(win, c_reads, p_reads, list(self._sizes), consumer.indices[0].extent,
                      ends, checks, counting is not None)
        return "\n\n\n".join([counting or p_code, c_code, code]), reads

    def _checks(self, group: list[Statement], fused: dict[str, Statement]) -> dict[str, int]:
        """The arrays a loop kernel checks against the guard's proven box (:meth:`__call__`):
        each tensor parameter it reads (or an identity copy of one that NumPy runs, as a view)
        over exactly its points, not yet checked by an earlier kernel, with its position in
        :attr:`checked`. The kernel reads it anyway, so the check costs no pass over memory
        (the guard's own check is one pass over each argument)."""
        first = group[0]
        if len(first.indices) < 2 or statement_scans(first.body, first.indices[-1].name):
            return {}  # (one index: the check would be a pass of its own, as the guard's)
        tensors = self._tensors
        place = self.schedule.placement
        out: dict[str, int] = {}
        for t in group:
            for name in self._reads(t, fused):
                param = name if name in tensors else None
                if param is None and place.get(name) == "numpy":
                    param = self._identity_of(self._stmt(name))
                if (param is None or param in self.checked or name in out
                        or self._shapes[name] != first.shape
                        or self._shapes[param] != first.shape):
                    continue
                self.checked.append(param)
                out[name] = len(self.checked) - 1
        return out

    def _identity_of(self, s: Statement) -> str | None:
        """The tensor parameter ``s`` copies entry for entry (``b_bar[i, j] = w[i, j]``, of
        its shape), if any: the fused program reads the parameter itself."""
        body = s.body
        if (isinstance(body, Access) and body.name in self._tensors and s.indices
                and [a.as_var() for a in body.indices] == [iv.name for iv in s.indices]
                and self._shapes[body.name] == s.shape):
            return body.name
        return None

    def _signed(self, s: Statement) -> frozenset[str]:
        """``{s.name}`` where a later statement's divisor reads ``s`` (its part keeps its
        sign of zero as the interpreter has it: ``lower_program``'s ``signed``), else empty.
        The program's divisor reads are found once per scheduled program, not per part."""
        if self._zero_sign[0] is not self._prog:
            self._zero_sign = (self._prog, self._prog.zero_sign_reads())
        return frozenset({s.name}) & self._zero_sign[1]

    def _numpy_part(self, run: Sequence[Statement], returned: Sequence[str]) -> Part:
        """The NumPy backend's code for the statements ``run`` (:mod:`.parts`), returning
        ``returned``; its digest names it in the source: programs of one source share a module,
        where parts are bound (:meth:`_module`), so parts that differ make the source differ
        (fuzz 3010 #585)."""
        signed = frozenset().union(*(self._signed(s) for s in run))
        part = Part(self.program, self._shapes, run, returned, signed)
        self._numpy_parts[run[0].name] = compile_program(part.program, signed=signed)
        return part

    def _in_part(self, s: Statement, position: Mapping[str, int],
                 seen_by_numpy: set[str]) -> bool:
        """``s`` runs as NumPy code that may share a part with its NumPy neighbours: not a
        parameter's copy nor a matrix product into a kept buffer (their own lines), and not
        reading its own name."""
        if self.schedule.placement[s.name] != "numpy" or s.name in accessed_names(s.body):
            return False
        if self._identity_of(s) is not None and s.name not in position:
            return False
        return (s.name in position or s.name in seen_by_numpy
                or product_operands(s, self._shapes) is None)

    def _part_lines(self, run: list[Statement], position: Mapping[str, int]) -> list[str]:
        """The run function's lines for the consecutive NumPy statements ``run``: one part,
        returning what a later statement reads or the program returns."""
        part = self._numpy_part(run, read_after(self._prog.statements, run, position))
        return [f"    # (NumPy part {part.digest})", *part_lines(part, self._shapes)]

    def _module_source(self) -> str:
        place = self.schedule.placement
        fused = {s.name: s for s in self._prog.statements if place[s.name] == "fused"}
        kernels: list[str] = []
        params = ", ".join([*self.program.param_names, *self._sizes, "_buf", "_tmp", "_box",
                            "_fin"])
        # _box: bounds (lo, hi) per checked parameter; run also returns whether an entry of
        # one lay outside them (or was nan); _fin: every value is proven finite (the NumPy
        # parts and BLAS products skip their checks)
        run = [f"def run({params}):", "    _bad = False"]
        # _buf[k]: the caller's array for output k (out=), written in place by its loop nest;
        # _tmp: this thread's arrays of the intermediates, kept from call to call (a fresh
        # array each call costs its page faults when the allocator hands the memory back)
        # (not when a NumPy part's value may be a view of it: :func:`.epilogue.fresh`)
        seen_by_numpy = {n for t in self._prog.statements if place[t.name] == "numpy"
                         and not fresh(t, self._plan) for n in accessed_names(t.body)}
        position: dict[str, int] = {}
        for k, o in enumerate(self._prog.outputs):
            assert isinstance(o, Access)
            position.setdefault(o.name, k)
        for p in self.program.params:
            if not p.shape:
                run.append(f"    {p.name} = {p.name}.reshape(1)")
        for s in self._prog.statements:
            if place[s.name] == "fused":
                run.append(f"    # {s.name}: {self.schedule.why[s.name]}")
        pending: list[Statement] = []  # consecutive NumPy statements: one part (.parts)
        for group in self._groups(fused):
            s = group[0]
            win = next((w for w in self.schedule.windows.values() if w.consumer == s.name),
                       None)
            if win is None and len(group) == 1 and self._in_part(s, position, seen_by_numpy):
                pending.append(s)
                run.append(f"    # {s.name}: {self.schedule.why[s.name]}")
                continue
            if pending:
                run += self._part_lines(pending, position)
                pending = []
            for t in group:
                why = self.schedule.why[t.name]
                why += f"; one pass with {s.name}" if t is not s else ""
                run.append(f"    # {t.name}: {why}")
            if win is not None:  # s's nest a chunk at a time, its producer in a buffer
                code, reads = self._window_kernels(win, fused)
                kernels.append(kernel_within_budget(code, {win.name, s.name}))
                k = position.get(s.name)
                new = apart_new(s.shape, reads)
                run.append(f"    # {win.name}: {self.schedule.why[win.name]}")
                run.append(f"    {s.name} = " + (new if k is None else
                                                  f"_buf[{k}] if _buf[{k}] is not None else {new}"))
                call = ", ".join([s.name, *reads, *self._sizes, "_box"])
                run.append(f"    _bad |= _k_{s.name}_window({call})")
            elif place[s.name] in ("loop", "pairs"):
                checks = self._checks(group, fused) if place[s.name] == "loop" else {}
                code, reads = (self._kernel(group, fused, checks) if place[s.name] == "loop"
                               else self._pair_kernel(s, self._pairs[s.name], fused))
                code, reads, over = in_place(group, place[s.name], self._prog.statements, fused,
                                             lambda t: self._reads(t, fused), run, self._shapes,
                                             {*position, *seen_by_numpy}, code, reads)
                kernels.append(kernel_within_budget(code, {t.name for t in group}))
                for t in group:
                    run += array_lines(t, position, seen_by_numpy, reads, over)
                names = [t.name for t in group]
                args = ", ".join([*names, *reads, *self._sizes, *(["_box"] if checks else [])])
                run.append(f"    _bad |= _k_{s.name}({args})" if checks else
                           f"    _k_{s.name}({args})")
            elif (param := self._identity_of(s)) is not None and s.name not in position:
                # (the NumPy part would return a copy, kept apart from its inputs: a pass
                # over memory for nothing when only loop nests and NumPy code read it)
                run.append(f"    {s.name} = np.asarray({param}, dtype=F)")
            else:
                part = self._numpy_part([s], [s.name])
                run.append(f"    # (NumPy part {part.digest})")
                # a matrix product no caller sees: BLAS into a buffer kept from call to call
                blas = None if s.name in position or s.name in seen_by_numpy else \
                    product_run(s, part_call(part, self._shapes), self._shapes)
                run += blas or part_lines(part, self._shapes)
        if pending:
            run += self._part_lines(pending, position)
        run.append(return_line(self._prog, self._shapes))
        run = shared_buffers(run)
        head = module_head(self.program, self._sizes, run)
        body = "\n\n\n".join(kernels)
        if TILE in body:  # (the tiles' points, from the float type)
            head.append(TILE_LINE)
        imports, helpers = helpers_for(body)
        parts = ("\n".join(head + imports), helpers, PAIRWISE if "_pairwise(" in body else "",
                 body, "\n".join(run))
        return "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"

    # --- loading and running -------------------------------------------------------------------
    def _module(self, dtype: np.dtype) -> ModuleType:
        key = dtype.char
        mod = self._modules.get(key)
        if mod is not None:
            return mod
        with self._lock:
            mod = self._modules.get(key)
            if mod is None:
                mod = load(self.source.replace("F = np.float64", f"F = np.{dtype.name}", 1))
                for name, part in self._numpy_parts.items():
                    setattr(mod, f"_np_{name}", part.fused_call)
                self._modules[key] = mod
        return mod

    fallback: Any = None  # optimized code: the unoptimized program's run (backend/guard.py)

    def _exact(self, arrays: Sequence[Any], sizes: Mapping[str, int]) -> bool:
        """Whether the optimized program is the unoptimized one at these sizes on every value:
        its NumPy code, fast and strict, is the unoptimized program's (:mod:`..same_code`).
        The loops compute the program's own values on every input, so they need no guard then
        (no pass over the arguments: the NumPy backend runs the unoptimized code itself there,
        ``CompiledProgram._plain``). Cached per fallback and sizes, and on disk
        (:func:`.exact.exact_on_disk`)."""
        key = (self.fallback, tuple(sizes.items()))
        if key not in self._exact_by:
            exact = exact_on_disk(self.program, self.numpy, self.fallback, arrays, sizes)
            if len(self._exact_by) < 64:
                self._exact_by[key] = exact
            return exact
        return self._exact_by[key]

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        """Run the program. ``out``: an array (a tuple of arrays or None, one per output, for a
        program returning a tuple) of the result's shape and float type to write into; it
        is returned. (A parameter named ``out`` is an input, as written.)"""
        if "out" in self.program.param_names and out is not None:
            kwargs["out"], out = out, None
        # a signature called before (:meth:`_repeat`)
        hit = self._repeats.get((self.fallback, signature(self._names, args, kwargs)))
        if hit is not None:
            return self._repeat(hit, args, kwargs, out)
        if out is None and self.numpy_only and not self._small:  # nothing runs as loops
            return self.numpy(*args, **kwargs)
        arrays, sizes = self.numpy.bind(*args, **kwargs)
        target = self._specialized(sizes) if self._small else self
        if out is None and target.numpy_only:
            return self.numpy(*args, **kwargs)
        floats = [a.dtype for a, p in zip(arrays, self.program.params, strict=True)
                  if p.kind == "tensor"]
        dt = floats[0] if floats and floats[0] == np.float32 else np.dtype(np.float64)
        bufs = caller_buffers(self.program, self._prog.outputs, self._shapes, out, sizes,
                              dt, arrays)
        if 0 in sizes.values() or target.numpy_only:
            # empty tensors (the interpreter's zeros), or nothing runs as loops: the NumPy
            # backend's program as it is
            result = self.numpy(*args, **kwargs)
        else:
            exact = self.fallback is not None and self._exact(arrays, sizes)
            box = None if exact else call_box(self.fallback, self.program, target.checked,
                                              arrays, sizes, dt)
            guarded = self.fallback if not exact else None
            level = proof_before_run(guarded, self.program, box, arrays, sizes)
            proven = finite_run(guarded, box, level)
            first = dt.char not in target.compile_seconds
            start = time.perf_counter()
            mod = target._module(dt)
            run_args = (*arrays, *(sizes[n] for n in target._sizes), bufs, target._scratch(dt),
                        target._bounds(box, dt))
            try:
                with np.errstate(all="ignore"):
                    result, bad = mod.run(*run_args, proven)
            except compile_failure() as exc:  # (a Numba defect) the NumPy backend's run
                give_up_loops(target, exc)
                return _finish(into_buffers(self.numpy(*args, **kwargs), bufs,
                                            self.program.returns_tuple), self.program)
            if first:  # loading the module and Numba's compilation (or cache load) at 1st call
                target.compile_seconds[dt.char] = time.perf_counter() - start
                self.compile_seconds.setdefault(dt.char, target.compile_seconds[dt.char])
            elif target is self:
                self._remember(args, kwargs, arrays, sizes, dt, exact)
            if guarded is not None:
                result = kept_result(guarded, self.program, result, bad, box, level, proven,
                                     arrays, sizes, lambda: mod.run(*run_args, False)[0],
                                     args, kwargs)
        return _finish(into_buffers(result, bufs, self.program.returns_tuple), self.program)

    def _remember(self, args: tuple, kwargs: dict[str, Any], arrays: list[Any],
                  sizes: Mapping[str, int], dt: np.dtype, exact: bool) -> None:
        """Keep what this call's binding decided for later calls with arguments of the same
        shapes and float types (:meth:`_repeat`), where the binding passed every argument on
        as it was (tensors of the float type ``dt``: nothing converted)."""
        sig = signature(self._names, args, kwargs)
        if sig is None or len(self._repeats) >= 64:
            return
        given = args or tuple(kwargs[n] for n in self._names)
        if any(a is not b or a.dtype != dt for a, b in zip(arrays, given, strict=True)) or \
                any(p.kind != "tensor" for p in self.program.params):
            return
        self._repeats[self.fallback, sig] = Repeat(
            dict(sizes), tuple(sizes[n] for n in self._sizes), dt, exact,
            bool(self._numpy_parts))

    def _repeat(self, r: Repeat, args: tuple, kwargs: dict[str, Any], out: Any = None) -> Any:
        """A call whose arguments have the shapes and float types of one before: the binding,
        the sizes and whether a guard is needed as that call found them; the box and the
        guard's decision as in :meth:`__call__`. ``out``: the caller's output arrays, checked
        (else last call's dropped arrays are reused)."""
        arrays = args or tuple(kwargs[n] for n in self._names)
        mod = self._modules[r.dt.char]
        box = None if r.exact else call_box(self.fallback, self.program, self.checked,
                                            arrays, r.sizes, r.dt)
        bufs = self._recycler.take(r, self._no_buffers) if out is None else caller_buffers(
            self.program, self._prog.outputs, self._shapes, out, r.sizes, r.dt, list(arrays))
        args_run = (*arrays, *r.size_values, bufs, self._scratch(r.dt),
                    self._bounds(box, r.dt))
        guarded = self.fallback if not r.exact else None
        level = proof_before_run(guarded, self.program, box, arrays, r.sizes)
        proven = finite_run(guarded, box, level)
        if r.numpy:  # NumPy statements between the loop nests: their inf/nan quietly
            with np.errstate(all="ignore"):
                result, bad = mod.run(*args_run, proven)
        else:  # (Numba's loops never consult NumPy's error state)
            result, bad = mod.run(*args_run, proven)
        if guarded is not None:
            result = kept_result(guarded, self.program, result, bad, box, level, proven,
                                 arrays, r.sizes, lambda: mod.run(*args_run, False)[0],
                                 args, kwargs)
        if out is not None:
            result = into_buffers(result, bufs, self.program.returns_tuple)
        result = _finish(result, self.program)
        if out is None:  # (the caller's arrays are never recycled)
            self._recycler.keep(r, result, self.program.returns_tuple)
        return result

    def _specialized(self, sizes: Mapping[str, int]) -> NumbaProgram:
        """The program compiled with the sizes a pair loop would unroll (``_small``) fixed to
        their values in ``sizes`` (once per value), where a few and where its schedule then
        runs a pair loop; else this program."""
        values = tuple(sorted((n, sizes[n]) for n in self._small))
        if values not in self._special:
            special = None
            if 0 < math.prod(v for _, v in values) <= MAX_REST:
                from . import compile_numba

                special = compile_numba(fix_sizes(self.program, dict(values)))
                if "pairs" not in special.schedule.placement.values():
                    special = None
            with self._lock:
                self._special[values] = special
        found = self._special[values]
        return self if found is None else found

    def _scratch(self, dt: np.dtype) -> dict[str, np.ndarray]:
        """This thread's intermediate arrays for float type ``dt`` (reused by later calls)."""
        store = getattr(self._local, dt.char, None)
        if store is None:
            store = {}
            setattr(self._local, dt.char, store)
        return store

    def __repr__(self) -> str:
        return f"<NumbaProgram {self.program.name}({', '.join(self.program.param_names)})>"
