"""The fuzz loop: generate, run, classify, minimize, report."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .case import INPUT_KINDS, Case, draw_inputs
from .check import Finding, outcome_of
from .index_gen import generate_index
from .numpy_gen import generate_numpy
from .reduce import reduce_case
from .report import DEFECTS, summary_table, write_reproducer
from .runner import Runner

__all__ = ["GENERATORS", "FuzzResult", "fuzz", "make_case"]

GENERATORS: dict[str, Callable[[np.random.Generator], Case]] = {
    "index": generate_index,
    "numpy": generate_numpy,
}


@dataclass
class FuzzResult:
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    # one entry per (case number, input kind, finding) that is a defect
    defects: list[tuple[int, str, Finding]] = field(default_factory=list)
    reproducers: list[Path] = field(default_factory=list)
    programs: int = 0
    seconds: float = 0.0

    def table(self) -> str:
        return summary_table(self.counts)

    def count(self, outcome: str) -> int:
        return sum(n for (_, _, o), n in self.counts.items() if o == outcome)


def make_case(seed: int, number: int, generators: Sequence[str] = tuple(GENERATORS)
              ) -> tuple[Case, dict[str, dict]]:
    """Case ``number`` of a run with ``seed`` and its inputs of every kind (each case can be
    regenerated on its own)."""
    rng = np.random.default_rng([seed, number])
    case = GENERATORS[generators[number % len(generators)]](rng)
    return case, {kind: draw_inputs(case, kind, rng) for kind in INPUT_KINDS}


def fuzz(n: int, seed: int = 0, out: Path | None = None, time_limit: float = 60.0,
         generators: Sequence[str] = tuple(GENERATORS), max_reductions: int = 20,
         max_seconds: float | None = None, reduce_seconds: float = 90.0,
         runner: Runner | None = None,
         log: Callable[[str], None] | None = print, backend: str = "numpy") -> FuzzResult:
    """Run ``n`` programs (alternating generators); minimize the first failure of each distinct
    signature into ``out`` (when given). ``backend``: what compiles the programs (``"numpy"``
    or ``"numba"``; a given ``runner`` brings its own)."""
    result = FuzzResult()
    start = time.monotonic()
    first: dict[tuple, tuple[Case, str, dict, Finding]] = {}
    own = runner is None
    runner = runner or Runner(time_limit, backend=backend)
    try:
        for k in range(n):
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                break
            case, inputs = make_case(seed, k, generators)
            findings = runner.run(case, inputs)
            result.programs += 1
            for kind, fs in findings.items():
                result.counts[(case.generator, kind, outcome_of(fs))] += 1
                for f in fs:
                    if f.outcome in DEFECTS:
                        result.defects.append((k, kind, f))
                        if log:  # as it happens, so a stopped run still names its findings
                            log(f"# finding: case {k} ({case.generator}, {kind}) "
                                f"{f.outcome} at {f.stage}: {f.detail[:120]}")
                        key = (case.generator, *f.signature)
                        first.setdefault(key, (case, kind, inputs[kind], f))
            if log and (k + 1) % 50 == 0:
                log(f"# {k + 1} programs, {len(result.defects)} findings, "
                    f"{time.monotonic() - start:.0f} s")
        if out is not None and first:
            out.mkdir(parents=True, exist_ok=True)
            flag = "" if runner.backend == "numpy" else f" --backend {runner.backend}"
            origin = f"`python -m eqsat_ad.fuzz --n {n} --seed {seed}{flag}`"
            for index, (key, (case, kind, ins, f)) in enumerate(first.items()):
                if index >= max_reductions:
                    break
                if log:
                    log(f"# minimizing {' / '.join(filter(None, key))}")
                reduced = reduce_case(runner, case, kind, ins, f, max_seconds=reduce_seconds)
                result.reproducers.append(write_reproducer(out, reduced, kind, origin, index,
                                                           runner.backend))
    finally:
        if own:
            runner.close()
    result.seconds = time.monotonic() - start
    return result
