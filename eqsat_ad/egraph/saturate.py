"""Bounded equality saturation in a worker process.

egglog cannot be interrupted inside a command, so the e-graph lives in a forked worker that
grows it one step at a time, each step a few commands with the prelude (substitution, analyses)
run one iteration per command in between, and the bounds (iterations, nodes, seconds) looked at
after each. The worker sends a plain-Python snapshot after loading and one at the end; the
parent kills a worker that overruns its CPU time (keeping the first snapshot). Hitting a bound
is not an error: the best program found so far is still correct.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.errors import EqsatValueError
from .egglog_bindings import bindings
from .progress import Progress
from .rules import (
    RuleFile,
    explore_step_text,
    prelude_text,
    simplify_round_text,
    verify_step_text,
)

CLASS_SORTS = ("Lin", "IL", "Pred", "E")
ANALYSES = frozenset({"free", "lfree", "ilfree", "pfree", "lcoef", "extent"})


class SaturationError(EqsatValueError):
    """egglog rejected a rule file or the encoded program."""


@dataclass
class Snapshot:
    """An e-graph as plain Python values: picklable, independent of egglog."""

    nodes: list[tuple[str, int, tuple]] = field(default_factory=list)
    """(constructor, e-class of the node, arguments: e-class ids or literals)"""
    sort: dict[int, str] = field(default_factory=dict)
    lets: dict[str, int] = field(default_factory=dict)
    subsumed: list[tuple[str, int, tuple]] = field(default_factory=list)
    """nodes a rule subsumed (never extracted; kept as evidence of the rewrites, egraph/path.py)"""

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_classes(self) -> int:
        return len(self.sort)


def take_snapshot(eg: bindings.EGraph) -> Snapshot:
    frozen = eg.freeze()
    snap = Snapshot()
    cls: dict[tuple[str, Any], int] = {}

    def cid(sort: str, v: Any) -> int:
        key = (sort, v)
        if key not in cls:
            cls[key] = len(cls)
            snap.sort[cls[key]] = sort
        return cls[key]

    def lit(sort: str, v: Any) -> Any:
        if sort == "i64":
            return eg.value_to_i64(v)
        if sort == "BigRat":
            return eg.value_to_bigrat(v)
        if sort == "f64":
            return eg.value_to_f64(v)
        if sort == "String":
            return eg.value_to_string(v)
        raise SaturationError(f"unexpected sort {sort} in the e-graph")

    for name, fn in frozen.functions.items():
        if fn.is_let_binding:
            if fn.rows and fn.output_sort in CLASS_SORTS:
                snap.lets[name] = cid(fn.output_sort, fn.rows[0].output)
            continue
        if name in ANALYSES or fn.output_sort not in CLASS_SORTS:
            continue
        for row in fn.rows:
            if row.subsumed:
                continue
            args = tuple(
                cid(s, v) if s in CLASS_SORTS else lit(s, v)
                for s, v in zip(fn.input_sorts, row.inputs, strict=True)
            )
            snap.nodes.append((name, cid(fn.output_sort, row.output), args))
    # then the subsumed nodes (after the others: they leave the numbering of classes, and so
    # extraction, as it was; a class only they have gets an id but no sort)
    for name, fn in frozen.functions.items():
        if fn.is_let_binding or name in ANALYSES or fn.output_sort not in CLASS_SORTS:
            continue
        for row in fn.rows:
            if not row.subsumed:
                continue
            args = tuple(
                cls.setdefault((s, v), len(cls)) if s in CLASS_SORTS else lit(s, v)
                for s, v in zip(fn.input_sorts, row.inputs, strict=True)
            )
            out = cls.setdefault((fn.output_sort, row.output), len(cls))
            snap.subsumed.append((name, out, args))
    return snap


@dataclass(frozen=True)
class RunResult:
    snapshot: Snapshot
    iterations: int
    seconds: float
    """CPU seconds the worker used"""
    stop_reason: str
    rule_counts: dict[str, int]


def _report_counts(outputs: list, counts: dict[str, int]) -> bool:
    """Add the rule matches of a run to ``counts``; True if the e-graph changed."""
    changed = False
    for out in outputs:
        report = getattr(out, "report", None)
        if report is None:
            continue
        changed = changed or bool(report.updated)
        for rule, k in report.num_matches_per_rule.items():
            if k:
                counts[rule] = counts.get(rule, 0) + k
    return changed


class _Sizer:
    """E-graph size from egglog's per-function row counts (``print-size``): no copy of the
    e-graph, unlike ``freeze``."""

    def __init__(self, snap: Snapshot) -> None:
        self.constructors = {name for name, _, _ in snap.nodes}

    def __call__(self, eg: bindings.EGraph) -> int:
        out = eg.parse_and_run_program("(print-size)")
        total = 0
        for o in out:
            for name, k in getattr(o, "sizes", ()):
                if name in self.constructors:
                    total += k
        return total


# a step predicted to take more than this factor of the last one is not started if it would
# not fit in the time left (steps grow with the e-graph)
GROWTH = 2.0
# inside a step the prelude runs one iteration at a time; the step is cut short once the e-graph
# passes this factor of the node limit (substitution through commuted products can multiply it a
# hundredfold in one step) or once the time left would not cover the final snapshot
OVERSHOOT = 2.0
PRELUDE_FIXPOINT = "(run-schedule (run prelude))"
"""A phase of a step: the prelude, one iteration per command, until an iteration changes nothing
(what ``(saturate (run prelude))`` does, with the bounds looked at between iterations)."""


def step_phases(files: Sequence[RuleFile], simplify: bool) -> list[str | None]:
    """The commands of one step, ``None`` standing for the prelude run to its fixpoint between
    bound checks: the same schedule as :func:`simplify_round_text` /
    :func:`explore_step_text` (each scheduler lives within one command)."""
    return split_prelude_fixpoints(
        simplify_round_text(files) if simplify else explore_step_text(files)
    )


def split_prelude_fixpoints(text: str) -> list[str | None]:
    """``(run-schedule LETS A (saturate (run prelude)) B ...)`` as commands (each with the
    scheduler declarations) and ``None`` for each top-level prelude fixpoint, also the one that
    opens a ``(repeat n (seq (saturate (run prelude)) ...))`` (a no-op inside it after that)."""
    body = text.removeprefix("(run-schedule ").removesuffix(")")
    items = _top_level(body)
    lets = [x for x in items if x.startswith("(let-scheduler")]
    out: list[str | None] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append(f"(run-schedule {' '.join(lets + run)})")
            run.clear()

    for x in items:
        if x.startswith("(let-scheduler"):
            continue
        if x == "(saturate (run prelude))" or x.startswith("(repeat") and (
            "(seq (saturate (run prelude))" in x
        ):
            flush()
            out.append(None)
            if x.startswith("(saturate"):
                continue
        run.append(x)
    flush()
    return out


def _top_level(text: str) -> list[str]:
    """The parenthesized items of ``text`` at depth 0."""
    items, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = k
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                items.append(text[start:k + 1])
    return items


class Grower:
    """The bounded saturation loop, over anything that runs egglog commands (``run``: command
    text -> changed?) and counts e-nodes (``size``), against ``clock`` (CPU seconds of the
    process): testable with a stand-in e-graph and an injected clock."""

    def __init__(self, run: Callable[[str], bool], size: Callable[[], int],
                 clock: Callable[[], float], files: Sequence[RuleFile], iterations: int,
                 nodes: int, seconds: float, t0: float, per_node: float) -> None:
        self.run, self.size, self.clock = run, size, clock
        self.files, self.iterations, self.nodes, self.seconds = files, iterations, nodes, seconds
        self.t0, self.per_node = t0, per_node
        self.n = size()
        self.it = 0

    def _over(self) -> str | None:
        """The bound a step in progress has passed, if any."""
        if self.n >= OVERSHOOT * self.nodes:
            return "node limit"
        if self.clock() - self.t0 + self.per_node * self.n > self.seconds:
            return "time limit"
        return None

    def _phases(self, phases: Sequence[str | None]) -> tuple[bool, str | None]:
        """Run a step's phases; (changed, the bound that cut it short or None)."""
        changed = False
        for cmd in phases:
            if cmd is not None:
                changed = self.run(cmd) or changed
                self.n = self.size()
                if (why := self._over()) is not None:
                    return changed, why
                continue
            while self.run(PRELUDE_FIXPOINT):
                changed = True
                self.n = self.size()
                if (why := self._over()) is not None:
                    return changed, why
        return changed, None

    def grow(self, on_step: Callable[[int, int], None]) -> str:
        """Rounds of the terminating sets until they change nothing, then exploratory steps;
        a step starts only if, at the pace of the last one, it and the final snapshot fit in
        the time left. Returns the reason it stopped."""
        files = self.files
        simplify = any(f.saturate for f in files)
        explore = any(not f.saturate for f in files)
        last_step = 0.0
        while simplify or explore:
            if self.n >= self.nodes:
                return "node limit"
            if self.it >= self.iterations:
                return "iteration limit"
            used = self.clock() - self.t0
            if used + GROWTH * last_step + self.per_node * self.n > self.seconds:
                return "time limit"
            t_step = self.clock()
            changed, cut = self._phases(step_phases(files, simplify))
            if cut is None and not changed and not (simplify and explore):
                # the back-off scheduler may have skipped rules that still match: only a plain
                # run that changes nothing is a fixed point
                changed, cut = self._phases(split_prelude_fixpoints(verify_step_text(files)))
            self.it += 1
            last_step = self.clock() - t_step
            on_step(self.it, self.n)
            if cut is not None:
                return cut
            if not changed:
                if simplify and explore:
                    simplify = False  # simplified to a fixpoint: start exploring
                    continue
                return "saturated"
        return "saturated"


def _worker(
    conn, text: str, files: Sequence[RuleFile], iterations: int, nodes: int, seconds: float
) -> None:
    """Grow the e-graph (:class:`Grower`) within ``seconds`` of this process's CPU time. Sends
    ('snap', snapshot, step, counts, cpu) once after loading (the fallback), ('progress', step,
    nodes, cpu) after every step, and at the end the final ('snap', ...) and ('done', reason)."""
    # the forked worker shares the parent's heap: a full collection here would walk (and
    # copy-on-write) every object of the caller, charged to this budget; frozen, it walks only
    # the worker's own objects
    gc.freeze()
    clock = time.process_time
    t0 = clock()
    try:
        eg = bindings.EGraph()
        counts: dict[str, int] = {}
        # each piece under its own name, so that an egglog error names the file and line
        for source, name in [(prelude_text(), "prelude.egg")] + [(f.text, f.path) for f in files]:
            try:
                eg.parse_and_run_program(source, filename=name)
            except Exception as exc:
                conn.send(("error", f"egglog rejected the rule file {name}: {exc}"))
                return
        eg.parse_and_run_program(text, filename="<encoded program>")
        _report_counts(eg.parse_and_run_program("(run-schedule (saturate (run prelude)))"), counts)
        t_snap = clock()
        first = take_snapshot(eg)
        per_node = (clock() - t_snap) / max(first.n_nodes, 1)
        conn.send(("snap", first, 0, dict(counts), clock() - t0))
        sizer = _Sizer(first)
        grower = Grower(
            lambda cmd: _report_counts(eg.parse_and_run_program(cmd), counts),
            lambda: sizer(eg), clock, files, iterations, nodes, seconds, t0, per_node,
        )
        reason = grower.grow(lambda it, n: conn.send(("progress", it, n, clock() - t0)))
        final = first if grower.it == 0 else take_snapshot(eg)
        conn.send(("snap", final, grower.it, dict(counts), clock() - t0))
        conn.send(("done", reason))
    except Exception as exc:  # egglog errors cross the process boundary as text
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a live process, from /proc; None where unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return None


try:
    _TICKS = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
    _TICKS = 100
# the worker is killed past its budget by this factor (plus POLL): a step that ran far longer
# than the last one predicted
HARD_FACTOR = 1.15
POLL = 0.05
# a machine so loaded that the worker gets almost no CPU still ends: wall time is capped too
WALL_FACTOR = 20.0


def saturate(
    text: str, files: Sequence[RuleFile], iterations: int, nodes: int, seconds: float,
    progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run the rule sets on the encoded program under the three bounds; ``seconds`` is CPU
    time of the worker process. ``progress`` is called after every step."""
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_worker, args=(child, text, files, iterations, nodes, seconds), daemon=True
    )
    proc.start()
    child.close()
    snap: Snapshot | None = None
    its, counts, reason, cpu = 0, {}, "time limit", 0.0
    hard = HARD_FACTOR * seconds + POLL
    try:
        while True:
            if not parent.poll(POLL):
                used = _cpu_seconds(proc.pid)
                wall = time.perf_counter() - start
                if (used is not None and used > hard) or wall > WALL_FACTOR * seconds + 5 or (
                    used is None and wall > hard
                ):
                    reason = "time limit"
                    cpu = max(cpu, used or wall)
                    break
                continue
            try:
                msg = parent.recv()
            except EOFError:
                reason = "time limit" if snap is not None else "worker died"
                break
            if msg[0] == "snap":
                _, snap, its, counts, cpu = msg
            elif msg[0] == "progress":
                _, step, n, cpu = msg
                if progress is not None:
                    progress(Progress("saturate", step, n, cpu))
            elif msg[0] == "done":
                reason = msg[1]
                break
            else:
                raise SaturationError(msg[1])
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=5)
        parent.close()
    if snap is None:
        err = SaturationError(
            f"equality saturation produced no e-graph within {seconds} s ({reason}); "
            "raise Limits.seconds"
        )
        err.cpu = cpu  # type: ignore[attr-defined]
        raise err
    return RunResult(snap, its, cpu, reason, counts)
