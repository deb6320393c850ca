"""Progress of a long optimization: what each saturation step and the extraction report.

``ea.optimize(..., progress=callback)`` (and ``ea.grad`` / ``ea.compile`` / ``ea.hessian``) call
``callback(Progress(...))`` after every saturation step and once extraction has priced its
result; ``verbose=True`` prints the same lines to stderr. Without either, a terminal on stderr
gets a one-line display once an optimization has run for ``QUIET_SECONDS``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

# a terminal sees progress only for optimizations that take longer than this (wall seconds)
QUIET_SECONDS = 1.0


@dataclass(frozen=True)
class Progress:
    """One report: ``phase`` is "saturate" (after a step), "extract" (the priced result) or
    "done" (with the reason saturation stopped); ``cost`` is the best program's cost at the
    caller's sizes once known; ``seconds`` is CPU time so far."""

    phase: str
    iteration: int
    nodes: int
    seconds: float
    cost: float | None = None
    stop_reason: str | None = None

    def describe(self) -> str:
        line = f"iteration {self.iteration}, {self.nodes} e-nodes, {self.seconds:.2f} s CPU"
        if self.cost is not None:
            line += f", best cost {self.cost:.4g}"
        if self.stop_reason is not None:
            line += f" (stopped: {self.stop_reason})"
        return f"eqsat_ad: {self.phase}: {line}"


Callback = Callable[[Progress], None]


class _Printer:
    """Writes reports to a stream: every line (verbose) or, on a terminal, one line rewritten
    in place once the optimization has run for QUIET_SECONDS."""

    def __init__(self, stream: TextIO, every_line: bool) -> None:
        self.stream = stream
        self.every_line = every_line
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, p: Progress) -> None:
        if self.every_line:
            print(p.describe(), file=self.stream, flush=True)
            return
        if not self.shown and time.perf_counter() - self.start < QUIET_SECONDS:
            return
        self.shown = True
        end = "\n" if p.phase == "done" else ""
        self.stream.write("\r\x1b[K" + p.describe() + end)
        self.stream.flush()


def reporter(progress: Callback | None, verbose: bool) -> Callback | None:
    """The callback an optimization reports to: the caller's, stderr's, both or none."""
    sinks: list[Callback] = []
    if progress is not None:
        sinks.append(progress)
    stream = sys.stderr
    if verbose:
        sinks.append(_Printer(stream, every_line=True))
    elif stream is not None and hasattr(stream, "isatty") and stream.isatty():
        sinks.append(_Printer(stream, every_line=False))
    if not sinks:
        return None
    if len(sinks) == 1:
        return sinks[0]

    def both(p: Progress) -> None:
        for sink in sinks:
            sink(p)

    return both
