"""``optimize``: the asymptotically cheapest equivalent program the rule sets can reach.

encode (whole program, canonical binders) -> bounded saturation in a worker process ->
extraction under the cost contract (materialize or inline each statement) -> decode; the best
few programs extraction found are then ranked by the price of their plans (what the backend
will run, :mod:`eqsat_ad.plan.price`), and the winner is never returned if its plan is priced
above the input's.

``Limits.seconds`` bounds the whole call: saturation gets ``SATURATION_SHARE`` of it, extraction
the rest (an anytime search: the best program found when the time is up, else the input).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..ir.errors import EqsatError
from ..ir.program import Program
from .encode import encode_program
from .extract import ExtractionError, Extractor, OutOfTime
from .rules import load_rules, rule_names
from .saturate import SaturationError, saturate
from .share import drop_unit_factors, share_statement_bodies

HUGE_SIZE = 2**20
# the part of Limits.seconds that saturation may use; extraction and decoding get the rest
SATURATION_SHARE = 0.8


@dataclass(frozen=True)
class Limits:
    """Bounds on equality saturation; hitting one is not an error (the report names it).

    ``iterations``: steps: rounds of the terminating rule sets, then exploratory steps (each
    followed by the terminating sets to a bounded fixpoint);
    ``nodes``: e-graph size at which growth stops; ``seconds``: wall time of the whole call:
    saturation (the worker is killed mid-iteration if need be) and extraction (which stops with
    the best program found so far), up to a margin for decoding and pricing the result.
    """

    iterations: int = 16
    nodes: int = 5000
    seconds: float = 2.0

    def __post_init__(self) -> None:
        for name in ("iterations", "nodes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise EqsatError(f"Limits.{name} must be a non-negative integer, got {v!r}")
        s = self.seconds
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0:
            raise EqsatError(f"Limits.seconds must be a positive number, got {s!r}")


@dataclass(frozen=True)
class Optimized:
    """The optimized program and the report that says why it is cheaper."""

    program: Program
    report: object  # eqsat_ad.cost.report.CostReport

    def __iter__(self):
        return iter((self.program, self.report))


def _cost_key(cost, names: Sequence[str], sizes: Mapping[str, int] | None) -> tuple:
    """Asymptotic, then concrete, order of a priced program (a ProgramCost)."""
    big = {n: HUGE_SIZE for n in names}
    concrete = {n: int((sizes or {}).get(n, 1000)) for n in names}
    return (cost.value(big), cost.value(concrete))


def _cheapest_plan(candidates: Sequence[Program], sizes: Mapping[str, int] | None) -> Program:
    """The candidate whose plan is priced lowest (extraction's own cost ranks the e-graph's
    programs; the plan, what the backend will run, decides between the best few). Ties keep
    extraction's order; a candidate that cannot be priced is skipped."""
    from ..plan.price import member_count_names, program_cost

    best: tuple[tuple, int] | None = None
    for k, cand in enumerate(candidates):
        names = list(cand.size_names()) + member_count_names(cand, sizes)
        try:
            key = _cost_key(program_cost(cand, _tie(names, sizes)), names, sizes)
        except EqsatError:
            continue
        if best is None or key < best[0]:
            best = (key, k)
    return candidates[0] if best is None else candidates[best[1]]


def _tie(names: Sequence[str], sizes: Mapping[str, int] | None) -> dict[str, int] | None:
    return None if sizes is None else {n: int(sizes.get(n, 1000)) for n in names}


def optimize(
    prog: Program,
    rules: Sequence[str | Path] | str | Path | None = None,
    limits: Limits | None = None,
    sizes: Mapping[str, int] | None = None,
    structured: bool = False,
) -> Optimized:
    """Optimize ``prog`` with the rule sets ``rules`` (shipped names or paths to ``.egg`` files;
    default: all shipped sets) under ``limits``; ``sizes`` breaks asymptotic ties.
    ``structured``: the report prices outputs as ``structured=True`` compiles them."""
    from ..cost.report import CostReport, SaturationStats
    from ..plan.price import member_count_names

    if not isinstance(prog, Program):
        raise EqsatError(f"optimize expects a Program, got {type(prog).__name__}")
    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise EqsatError(f"limits must be eqsat_ad.Limits, got {type(limits).__name__}")
    if sizes is not None:
        for k, v in sizes.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise EqsatError(
                    f"sizes must map size names to non-negative ints, got {k!r}: {v!r}"
                )
    files = load_rules(rules)
    start = time.perf_counter()
    deadline = start + limits.seconds
    enc = encode_program(prog)
    sat_seconds = max(start + SATURATION_SHARE * limits.seconds - time.perf_counter(), 1e-3)
    try:
        run = saturate(enc.text, files, limits.iterations, limits.nodes, sat_seconds)
    except SaturationError as exc:
        if "produced no e-graph" in str(exc):
            stats = SaturationStats(0, 0, 0, time.perf_counter() - start, "time limit", {})
            shared = share_statement_bodies(drop_unit_factors(prog))
            return Optimized(shared, CostReport.build(prog, shared, sizes, stats, structured))
        raise
    file_rules = {name for f in files for name in rule_names(f.text)}
    result = prog
    alternatives: tuple[Program, ...] = ()
    stop_reason = run.stop_reason
    note = ""
    try:
        extraction = Extractor(run.snapshot, enc, sizes, deadline).best_program()
        result = extraction.program
        alternatives = extraction.alternatives
        if not extraction.complete:
            stop_reason = "time limit"
    except OutOfTime:
        stop_reason = "time limit"  # not even the input's own shape was priced in time
    except ExtractionError as exc:
        result = prog  # still correct; the report says why nothing better came out
        note = f"extraction failed ({exc}): the input program was kept"
    # Tree decoding (and reverse mode itself) recompute what earlier statements hold: read it.
    # The input with that done is the fallback (reads are never priced above recomputing).
    shared = share_statement_bodies(drop_unit_factors(prog))
    result = shared if result is prog else share_statement_bodies(drop_unit_factors(result))
    result = _cheapest_plan([result, *(share_statement_bodies(drop_unit_factors(p))
                                       for p in alternatives)], sizes)
    stats = SaturationStats(
        iterations=run.iterations,
        nodes=run.snapshot.n_nodes,
        classes=run.snapshot.n_classes,
        seconds=time.perf_counter() - start,
        stop_reason=stop_reason,
        # the rules of the rule files (the prelude's analyses and arithmetic are bookkeeping)
        rule_counts={k: v for k, v in sorted(run.rule_counts.items()) if k in file_rules},
        note=note,
    )
    if result is shared:
        return Optimized(shared, CostReport.build(prog, shared, sizes, stats, structured))
    # the safety net reuses the report's pricing (the cost model is the slow part on big programs)
    try:
        report = CostReport.build(prog, result, sizes, stats, structured)
        names = sorted(set(prog.size_names()) | set(result.size_names())
                       | set(member_count_names(prog, sizes)))
        if _cost_key(report.optimized.cost, names, sizes) > _cost_key(
            report.naive.cost, names, sizes
        ):
            result = shared
    except EqsatError:
        result = shared  # a program the cost model cannot price is not returned
    if result is shared:
        report = CostReport.build(prog, shared, sizes, stats, structured)
    return Optimized(result, report)
