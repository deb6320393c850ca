"""Running programs with rolled loops: fold-free pieces compiled as usual, folds as Python loops.

Nothing of the NumPy lowering is special-cased: every fold-free run of statements (a *segment*)
and every fold body is an ordinary Program compiled by
:func:`eqsat_ad.backend.numpy.compile_program` (once, whatever the trip count; the body's
function is the same for every size). A fold runs
its body's function T times, threading the states and writing the per-step outputs into the rows
of arrays it allocates (the stacked values the IR describes, e.g. the states a reverse loop
reads back).
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.errors import ProgramError
from ..ir.expr import Access, accessed_names
from ..ir.index import Dim
from ..ir.interpreter import bind_arguments
from ..ir.printer import print_fold
from ..ir.program import Fold, Param, Program, Statement, Step
from . import runtime
from .numpy import CompiledProgram
from .runtime import NonFinite, finite, finite_result, float_type


def compile_any(prog: Program, structured: bool = False) -> Any:
    """The compiled form of ``prog``: :class:`FoldProgram` when it has folds."""
    from .numpy import compile_program

    if prog.folds:
        hit = _CACHE.get(prog)
        if hit is None:
            if len(_CACHE) >= 64:
                _CACHE.pop(next(iter(_CACHE)))
            hit = _CACHE[prog] = FoldProgram(prog)
        return hit
    return compile_program(prog, structured)


_CACHE: dict[Program, FoldProgram] = {}  # one compilation per program, for every size


def _dim(d: Dim, sizes: dict[str, int]) -> int:
    return d if isinstance(d, int) else sizes[d.name]


class _Segment:
    """A run of ordinary statements compiled as one program returning what later steps read."""

    def __init__(self, prog: Program, steps: Sequence[Statement], known: dict[str, Param],
                 needed: set[str], final: bool) -> None:
        from .numpy import compile_program

        defined = [s.name for s in steps]
        if final:
            outputs, as_tuple = prog.outputs, prog.returns_tuple
            self.names: tuple[str, ...] = ()
        else:
            self.names = tuple(n for n in defined if n in needed)
            outputs, as_tuple = tuple(Access(n) for n in self.names), True
        reads: set[str] = set()
        for s in steps:
            reads |= s.reads()
        for o in outputs:
            reads |= accessed_names(o)
        # every outer parameter comes along: it binds the sizes the statements use
        reads -= set(defined)
        params = [*prog.params] + [p for n, p in known.items()
                                   if n in reads and n not in prog.param_names]
        self.inputs = tuple(p.name for p in params)
        self.program = Program(tuple(params), tuple(steps), outputs, as_tuple,
                               f"{prog.name}_part")
        self.compiled = compile_program(self.program)

    def run(self, env: dict[str, Any]) -> Any:
        out = self.compiled(*(env[n] for n in self.inputs))
        if self.names:
            env.update((n, np.asarray(v)) for n, v in zip(self.names, out, strict=True))
        return out


class _Loop:
    """One fold: its body compiled once, run T times."""

    def __init__(self, fold: Fold) -> None:
        self.fold = fold
        self.body = compile_any(fold.body)
        self._loops: dict[bool, Any] = {}  # the loop's own code, without / with state checks

    def run(self, env: dict[str, Any], sizes: dict[str, int]) -> None:
        f = self.fold
        trip = _dim(f.trip, sizes)
        ncarry = len(f.carry)
        state = [np.asarray(env[n], dtype=float) for n in f.carry]
        scans = [np.asarray(env[n]) for n in f.scan]
        consts = [np.asarray(env[n]) for n in f.const]
        for n, x in zip(f.scan, scans, strict=True):
            if x.shape[0] != trip:
                raise ProgramError(f"fold scans '{n}' of length {x.shape[0]} over {trip} steps",
                                   f.loc)
        stacks = [np.zeros((trip, *(_dim(d, sizes) for d in f.body_output_shape(k))))
                  for k in range(ncarry, len(f.names))]
        order = range(trip - 1, -1, -1) if f.reverse else range(trip)
        if not trip or not isinstance(self.body, CompiledProgram):
            fast = strict = self.body  # no step, or a nested fold program (checks itself)
            checks: tuple[int, ...] = ()
        else:
            fast, strict, checks = self._functions(state, scans, consts, sizes)
        try:
            state = self._loop(fast, strict, checks, order, state, scans, consts, stacks)
        except NonFinite:  # the fast code met a non-finite product: run the careful code
            state = [np.asarray(env[n], dtype=float) for n in f.carry]
            state = self._loop(strict, strict, (), order, state, scans, consts, stacks)
        env.update((n, np.asarray(v, dtype=float)) for n, v in zip(f.names[:ncarry], state,
                                                                    strict=True))
        env.update(zip(f.names[ncarry:], stacks, strict=True))

    def _loop(self, fast: Any, strict: Any, checks: tuple[int, ...], order: range,
              state: list, scans: list, consts: list, stacks: list) -> list:
        loop = self._loops.get(bool(checks))
        if loop is None:
            namespace: dict[str, Any] = {"finite": finite}
            exec(compile(loop_source(self.fold, checks), "<eqsat_ad fold loop>", "exec"),
                 namespace)
            loop = self._loops[bool(checks)] = namespace["loop"]
        return loop(fast, strict, order, state, scans, consts, stacks)

    def _functions(self, state: list, scans: list, consts: list, sizes: dict[str, int]
                   ) -> tuple[Any, Any, tuple[int, ...]]:
        """The body's generated functions themselves (no argument checks per step: the fold's
        arguments were checked once): the fast one, the strict one, and the states the fast
        one trusts to be finite (checked each step; scans and constants once)."""
        assert isinstance(self.body, CompiledProgram)
        first = [np.asarray(a) for a in (*state, *(x[0] for x in scans), *consts)]
        mine = {n: sizes[n] for n in self.fold.body.size_names()}
        fast, check = self.body.function_for(first, mine)
        dt = float_type(*first)
        if all(a.dtype == dt for a in first[:len(state)]):
            # the states are computed in the float type of the first step's arguments, so
            # every step has that type: the body's per-call look at its arguments is dropped
            fast = _fixed_float_type(fast, dt)
        if not check:
            return fast, fast, ()
        strict = self.body.function_for(first, mine, strict=True)[0]
        if all(a.dtype == dt for a in first[:len(state)]):
            strict = _fixed_float_type(strict, dt)
        names = self.fold.body.param_names
        trusted = {names.index(n) for n in getattr(fast, "finite_inputs", names)}
        ncarry = len(state)
        rest = [a for k, a in enumerate((*scans, *consts), ncarry) if k in trusted]
        if rest and not finite(*rest):
            return strict, strict, ()
        return fast, strict, tuple(k for k in range(ncarry) if k in trusted)


def _fixed_float_type(fn: Any, dt: type) -> Any:
    """``fn`` (a generated function) with ``_rt.float_type(...)`` answering ``dt`` at once."""
    ns = dict(fn.__globals__)
    ns["_rt"] = runtime.Overridden(float_type=lambda *_arrays: dt)
    fixed = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__, fn.__closure__)
    fixed.__dict__.update(fn.__dict__)  # finite_inputs
    return fixed


def loop_source(f: Fold, checks: tuple[int, ...] = ()) -> str:
    """The Python loop that runs fold ``f``: its values in local names, one call of the body's
    function per step (``checks``: states the fast body trusts to be finite, checked per step)."""
    ncarry, nscan = len(f.carry), len(f.scan)
    nconst, nstack = len(f.const), len(f.names) - ncarry
    c = [f"c{k}" for k in range(ncarry)]
    x = [f"x{k}" for k in range(nscan)]
    w = [f"w{k}" for k in range(nconst)]
    s = [f"s{k}" for k in range(nstack)]
    y = [f"y{k}" for k in range(nstack)]

    def unpack(names: list[str], source: str) -> str:
        return f"    {', '.join(names)}, = {source}\n" if names else ""

    args = ", ".join([*c, *(f"{v}[t]" for v in x), *w])
    fn = "fast"
    lines = [f"# {print_fold(f)}\n", "def loop(fast, strict, order, state, scans, consts, "
             "stacks):\n", unpack(c, "state"), unpack(x, "scans"), unpack(w, "consts"),
             unpack(s, "stacks"), "    for t in order:\n"]
    if checks:
        fn = "fn"
        lines.append(f"        fn = fast if finite({', '.join(c[k] for k in checks)}) "
                     "else strict\n")
    lines.append(f"        {', '.join([*c, *y])}, = {fn}({args})\n")
    lines += [f"        {sk}[t] = {yk}\n" for sk, yk in zip(s, y, strict=True)]
    lines.append(f"    return [{', '.join(c)}]\n")
    return "".join(lines)


class FoldProgram:
    """A program with folds, compiled: call it like the program."""

    def __init__(self, prog: Program) -> None:
        self.program = prog
        self.structured = False
        known: dict[str, Param] = {p.name: p for p in prog.params}
        for s in prog.statements:
            for n in s.defines:
                known[n] = Param(n, prog.shape_of(n))
        later = _needed_after(prog)
        self._plan: list[_Segment | _Loop] = []
        run: list[Statement] = []
        for k, s in enumerate(prog.statements):
            if isinstance(s, Fold):
                if run:
                    self._plan.append(_Segment(prog, run, known, later[k], False))
                    run = []
                self._plan.append(_Loop(s))
            else:
                run.append(s)
        self._final = _Segment(prog, run, known, set(), True)

    @property
    def source(self) -> str:
        parts: list[str] = []
        for step in self._plan:
            if isinstance(step, _Loop):
                parts.append(loop_source(step.fold) + "\n\n" + step.body.source)
            else:
                parts.append(step.compiled.source)
        parts.append(self._final.compiled.source)
        return "\n\n".join(parts)

    @property
    def decisions(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<FoldProgram {self.program.name}({', '.join(self.program.param_names)})>"

    fallback: Any = None  # optimized code: the unoptimized program's run (backend/guard.py)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays, sizes = bind_arguments(self.program, *args, **kwargs)
        env: dict[str, Any] = dict(arrays)
        with np.errstate(all="ignore"):
            for step in self._plan:
                if isinstance(step, _Loop):
                    step.run(env, sizes)
                else:
                    step.run(env)
            result = self._final.run(env)
        if self.fallback is not None and not (
            finite(*(np.asarray(arrays[p.name]) for p in self.program.params
                     if p.kind == "tensor")) and finite_result(result)
        ):  # finite-only rewrites met inf or nan (the bounds do not enter folds: docs)
            return self.fallback(*args, **kwargs)
        return result


def _needed_after(prog: Program) -> list[set[str]]:
    """For each step, the names read by it, the steps after it or the outputs."""
    need: set[str] = set()
    for o in prog.outputs:
        need |= accessed_names(o)
    out: list[set[str]] = [set() for _ in prog.statements]
    steps: list[Step] = list(prog.statements)
    for k in range(len(steps) - 1, -1, -1):
        need |= steps[k].reads()
        out[k] = set(need)
    return out
