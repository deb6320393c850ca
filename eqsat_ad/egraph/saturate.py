"""Bounded equality saturation in a worker process.

egglog cannot be interrupted inside an iteration, so the e-graph lives in a forked worker that
grows it one step at a time and, before each step, sends the parent a plain-Python snapshot of
the e-graph so far. The parent stops the worker at the first bound it hits (iterations, nodes,
seconds) and keeps the last snapshot: hitting a bound is not an error, the best program found so
far is still correct.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from egglog import bindings

from ..ir.errors import EqsatValueError
from .rules import RuleFile, explore_step_text, prelude_text, simplify_round_text

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
    return snap


@dataclass(frozen=True)
class RunResult:
    snapshot: Snapshot
    iterations: int
    seconds: float
    stop_reason: str
    rule_counts: dict[str, int]


def _node_count(eg: bindings.EGraph) -> int:
    frozen = eg.freeze()
    return sum(
        len(f.rows) for n, f in frozen.functions.items()
        if not f.is_let_binding and n not in ANALYSES and f.output_sort in CLASS_SORTS
    )


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


def _worker(conn, text: str, files: Sequence[RuleFile], iterations: int, nodes: int) -> None:
    """Grow the e-graph one step at a time: first rounds of the terminating (simplification)
    sets until they change nothing, then exploratory steps. Send ('snap', snapshot, step,
    counts, node_count) after loading and after every step, and ('done', reason) at the end."""
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
        simplify = any(f.saturate for f in files)
        explore = any(not f.saturate for f in files)
        it = 0
        while True:
            n = _node_count(eg)
            conn.send(("snap", take_snapshot(eg), it, dict(counts), n))
            if not simplify and not explore:
                conn.send(("done", "saturated"))
                return
            if n >= nodes:
                conn.send(("done", "node limit"))
                return
            if it >= iterations:
                conn.send(("done", "iteration limit"))
                return
            step = simplify_round_text(files) if simplify else explore_step_text(files)
            changed = _report_counts(eg.parse_and_run_program(step), counts)
            it += 1
            if not changed:
                if simplify and explore:
                    simplify = False  # simplified to a fixpoint: start exploring
                    continue
                conn.send(("snap", take_snapshot(eg), it, dict(counts), _node_count(eg)))
                conn.send(("done", "saturated"))
                return
    except Exception as exc:  # egglog errors cross the process boundary as text
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


def saturate(
    text: str, files: Sequence[RuleFile], iterations: int, nodes: int, seconds: float
) -> RunResult:
    """Run the rule sets on the encoded program under the three bounds."""
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, text, files, iterations, nodes), daemon=True)
    proc.start()
    child.close()
    snap: Snapshot | None = None
    its, counts, reason = 0, {}, "time limit"
    try:
        while True:
            left = seconds - (time.perf_counter() - start)
            if left <= 0 or not parent.poll(max(left, 0.0)):
                reason = "time limit"
                break
            try:
                msg = parent.recv()
            except EOFError:
                reason = "time limit" if snap is not None else "worker died"
                break
            if msg[0] == "snap":
                _, snap, its, counts, _n = msg
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
        raise SaturationError(
            f"equality saturation produced no e-graph within {seconds} s ({reason}); "
            "raise Limits.seconds"
        )
    return RunResult(snap, its, time.perf_counter() - start, reason, counts)
