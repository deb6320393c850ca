"""``optimize``: the asymptotically cheapest equivalent program the rule sets can reach.

encode (whole program, canonical binders) -> bounded saturation in a worker process ->
extraction under the cost contract (materialize or inline each statement) -> decode; the best
few programs extraction found are then ranked by the price of their plans (what the backend
will run, :mod:`eqsat_ad.plan.price`), and the winner is never returned if its plan is priced
above the input's.

``Limits.seconds`` bounds the whole call: saturation gets ``SATURATION_SHARE`` of it, extraction
runs until ``EXTRACTION_END`` (an anytime search: the best program found when the time is up,
else the input), ranking by plan prices gets the rest; the cost report comes on top.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..ir.errors import EqsatError, EqsatTypeError, EqsatValueError
from ..ir.like_terms import merge_like_terms
from ..ir.outline import outline
from ..ir.program import Program
from ..plan.poly import Poly, big_o
from .encode import encode_program
from .extract import ExtractionError, Extractor, OutOfTime, cpu_clock
from .progress import Progress, reporter
from .rules import RuleFile, load_rules, rule_names
from .saturate import SaturationError, saturate
from .share import drop_unit_factors, share_statement_bodies

HUGE_SIZE = 2**20
# the part of Limits.seconds that saturation may use; extraction runs until EXTRACTION_END of it,
# ranking the best few programs by their plans' prices gets the rest
SATURATION_SHARE = 0.8
EXTRACTION_END = 0.9


@dataclass(frozen=True)
class Limits:
    """Bounds on equality saturation; hitting one is not an error (the report names it).

    ``iterations``: steps: rounds of the terminating rule sets, then exploratory steps (each
    followed by the terminating sets to a bounded fixpoint);
    ``nodes``: e-graph size at which growth stops (between steps; a step in progress stops
    once the e-graph passes twice this); ``seconds``: CPU time of saturation (the worker
    process's, which starts a step only if it fits at the pace of the last one, looks at the
    clock between the prelude's iterations within a step, and is killed past 15% over),
    extraction (which stops with the best program found so far) and ranking the best few by
    their plans' prices: CPU time (the worker's, and the calling thread's: not other threads'),
    so the result does not depend on how loaded the machine is or what else the caller runs.
    The cost report (its pricing, the rewrites on the path to the result) comes on top.
    """

    iterations: int = 16
    nodes: int = 5000
    seconds: float = 2.0

    def __post_init__(self) -> None:
        for name in ("iterations", "nodes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise EqsatValueError(f"Limits.{name} must be a non-negative integer, got {v!r}")
        s = self.seconds
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0:
            raise EqsatValueError(f"Limits.seconds must be a positive number, got {s!r}")


@dataclass(frozen=True)
class OptimizeCall:
    """The arguments of one ``optimize`` call: what ``explain()`` replays."""

    program: Program
    rules: Sequence[str | Path] | str | Path | None = None
    limits: Limits | None = None
    sizes: Mapping[str, int] | None = None
    structured: bool = False
    backend: str = "numpy"

    def explain(self):  # -> eqsat_ad.why.Explanation
        """Replay this optimization's saturation (see :mod:`eqsat_ad.why`)."""
        from ..why import explain

        return explain(self.program, self.rules, self.limits, self.sizes, self.structured,
                       self.backend)


@dataclass(frozen=True)
class Optimized:
    """The optimized program, the report that says why it is cheaper, and the call that made
    them (``inputs``, which ``explain()`` replays; its report carries the same)."""

    program: Program
    report: object  # eqsat_ad.cost.report.CostReport
    inputs: OptimizeCall | None = field(default=None, compare=False, repr=False)

    def __iter__(self):
        return iter((self.program, self.report))

    def __str__(self) -> str:
        from ..ir.printer import print_program

        return f"{print_program(self.program)}\n{self.report}"

    def _repr_html_(self) -> str:
        from html import escape

        from ..ir.printer import print_program
        from ..why.html import report_html

        return f"<pre>{escape(print_program(self.program))}</pre>{report_html(self.report)}"

    def explain(self):  # -> eqsat_ad.why.Explanation
        """The chain of rewrites behind this result (replays saturation; see eqsat_ad.why)."""
        from ..why import explain

        return explain(self)


def _made_by(result: Optimized, call: OptimizeCall) -> Optimized:
    """``result`` (and its report) remembering the call that made it."""
    report = result.report
    try:
        report = replace(report, inputs=call)  # type: ignore[type-var]
    except TypeError:  # a report without the field: it cannot replay itself
        pass
    return replace(result, report=report, inputs=call)


def _poly_key(price: Poly, names: Sequence[str], sizes: Mapping[str, int] | None) -> tuple:
    """Asymptotic, then concrete, order of a price (exact: the sizes are integers)."""
    return (price.evaluate({n: HUGE_SIZE for n in names}),
            price.evaluate({n: int((sizes or {}).get(n, 1000)) for n in names}))


def _priced_above(report: Any, names: Sequence[str], sizes: Mapping[str, int] | None) -> bool:
    """Whether the report's optimized program is priced above its naive one: asymptotically,
    or, where both are of one order (the same big-O), at the report's sizes. (A rewrite that
    saves a lower-order term at equal sizes but costs more at the caller's, such as a guard's
    pass over a D x H weight to save B x K work, is no optimization there.) A report for a
    fusing backend compares the prices of what that backend runs (``report.fused``)."""
    # a fusing backend: what it runs for each, as it is ranked
    fused = report.fused
    o, n = ((fused.optimized, fused.naive) if fused is not None else
            (report.optimized.cost.total_poly, report.naive.cost.total_poly))
    opt, naive = _poly_key(o, names, sizes), _poly_key(n, names, sizes)
    return opt > naive or (big_o(o) == big_o(n) and opt[1] > naive[1])


def tidy(prog: Program) -> Program:
    """An extracted program as the optimizer returns it: like terms merged, deep expressions
    outlined, unit factors dropped, and bodies that earlier statements hold read instead of
    recomputed (tree decoding, and reverse mode itself, recompute them)."""
    return share_statement_bodies(drop_unit_factors(outline(merge_like_terms(prog))))


def finish(candidates: Sequence[Program], sizes: Mapping[str, int] | None,
           deadline: float | None = None, backend: str = "numpy") -> tuple[int, Program]:
    """Of extraction's best few programs (its best first), the one whose plan is priced lowest
    once tidied (:func:`tidy`): its position in ``candidates`` and its tidied form. Extraction's
    own cost ranks the e-graph's programs; the plan, what the backend will run, decides between
    the best few. Ties keep extraction's order; a candidate that cannot be priced is skipped, a
    repeated one is priced once. Contraction orders are chosen at the sizes the cost report will
    use (its pricing of the winner then finds them in the order cache). Tidying and ranking stop
    at ``deadline`` (:func:`cpu_clock`): extraction's best is then the answer.
    ``backend="numba"`` ranks by the price of the fused schedule that backend runs
    (:func:`eqsat_ad.plan.price.backend_price`), the NumPy plan's breaking its ties.
    ``optimize`` and the e-graph picture (:mod:`eqsat_ad.why.picture`) both choose with it."""
    from ..plan.price import backend_price, member_count_names, program_cost

    if not candidates:
        raise EqsatValueError("finish needs at least one candidate program")

    def out_of_time() -> bool:
        return deadline is not None and cpu_clock() > deadline

    tidied: list[Program] = []
    for k, cand in enumerate(candidates):
        if k and out_of_time():
            break
        tidied.append(tidy(cand))
    firsts = [k for k, cand in enumerate(tidied) if cand not in tidied[:k]]
    if len(firsts) == 1:
        return 0, tidied[0]
    names = list(dict.fromkeys(
        n for k in firsts for n in [*tidied[k].size_names(),
                                    *member_count_names(tidied[k], sizes)]
    ))
    tie = _tie(names, sizes)
    best: tuple[tuple, int] | None = None
    for k in firsts:
        if out_of_time():
            break
        try:
            key = _poly_key(program_cost(tidied[k], tie).total_poly, names, sizes)
            fused = backend_price(tidied[k], backend, tie)
            if fused is not None:
                key = _poly_key(fused, names, sizes) + key
        except EqsatError:
            continue
        if best is None or key < best[0]:
            best = (key, k)
    k = 0 if best is None else best[1]
    return k, tidied[k]


def _tie(names: Sequence[str], sizes: Mapping[str, int] | None) -> dict[str, int] | None:
    """The sizes contraction orders are chosen at (as :meth:`CostReport.build` does): the
    caller's, the other names at the default."""
    if sizes is None:
        return None
    return {**{n: int(v) for n, v in sizes.items()}, **{n: 1000 for n in names if n not in sizes}}


def optimize(
    prog: Program,
    rules: Sequence[str | Path] | str | Path | None = None,
    limits: Limits | None = None,
    sizes: Mapping[str, int] | None = None,
    structured: bool = False,
    progress: Callable[[Progress], None] | None = None,
    verbose: bool = False,
    cache: bool | None = None,
    backend: str = "numpy",
) -> Optimized:
    """Optimize ``prog`` with the rule sets ``rules`` (shipped names or paths to ``.egg`` files;
    default: all shipped sets) under ``limits``; ``sizes`` breaks asymptotic ties.
    ``structured``: the report prices outputs as ``structured=True`` compiles them.
    ``backend``: the backend that will run the result (``"numpy"`` or ``"numba"``): optimized
    code is guarded by the input program, and the two backends' guards scan the arguments
    differently (the NumPy backend's takes exact ranges where a magnitude bound proves too
    little, :mod:`eqsat_ad.plan.guard_price`), so the price of the same program may differ;
    for ``"numba"`` extraction's best few programs are ranked, and the result checked against
    the input, by the price of the fused schedule that backend runs for each
    (:func:`eqsat_ad.plan.price.backend_price`; the report's ``numba`` rows).
    ``progress``: called with a :class:`Progress` after every saturation step and at the end;
    ``verbose``: print those reports to stderr (a terminal gets them after about a second
    anyway). ``cache``: look the result up in (and store it to) the on-disk cache of optimized
    programs (default: on unless ``EQSAT_AD_CACHE=0``; see :mod:`eqsat_ad.egraph.cache`).

    ``print(result)`` shows the program and the cost report; ``result.explain()`` (or
    ``result.report.explain()``) the chain of rewrites behind it (the result and its report
    carry this call's arguments, ``result.inputs``, which the explanation replays)."""
    if not isinstance(prog, Program):
        raise EqsatTypeError(f"optimize expects a Program, got {type(prog).__name__}")
    if backend not in ("numpy", "numba"):
        raise EqsatValueError(f"unknown backend {backend!r}: expected 'numpy' or 'numba'")
    result = _optimize_call(prog, rules, limits, sizes, structured, progress, verbose, cache,
                            backend)
    return _made_by(result, OptimizeCall(prog, rules, limits, sizes, structured, backend))


def _optimize_call(
    prog: Program, rules: Any, limits: Limits | None, sizes: Mapping[str, int] | None,
    structured: bool, progress: Callable[[Progress], None] | None, verbose: bool,
    cache: bool | None, backend: str = "numpy",
) -> Optimized:
    from . import cache as disk

    limits = Limits() if limits is None else limits
    if not isinstance(limits, Limits):
        raise EqsatTypeError(f"limits must be eqsat_ad.Limits, got {type(limits).__name__}")
    if sizes is not None:
        for k, v in sizes.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise EqsatValueError(
                    f"sizes must map size names to non-negative ints, got {k!r}: {v!r}"
                )
    if prog.folds:  # rolled loops: each body once, the statements around them once
        # (a program with rolled loops runs as the NumPy backend runs it under either backend)
        return _optimize_folds(prog, rules, limits, sizes, progress, verbose, cache)
    files = load_rules(rules)
    use_cache = disk.enabled() if cache is None else cache
    key = disk.key(prog, files, limits, sizes, structured, backend) if use_cache else None
    if key is not None:
        hit = disk.load(key)
        if isinstance(hit, Optimized):
            return replace(hit, inputs=None)
    result = _optimize(prog, files, limits, sizes, structured, reporter(progress, verbose),
                       backend)
    if key is not None and _reproducible(result):
        disk.store(key, result)
    return result


def _reproducible(result: Optimized) -> bool:
    """Whether a later call would find this result again: not when the time limit stopped the
    search before anything of the e-graph's was kept (no e-graph in time, nothing priced, or
    the input kept). That happens on a starved machine; stored, it would stand for every later
    process with the same key."""
    stats = getattr(result.report, "stats", None)
    return stats is None or stats.stop_reason != "time limit" or bool(stats.path)


def _optimize_folds(prog: Program, rules: Any, limits: Limits, sizes: Mapping[str, int] | None,
                    progress: Any, verbose: bool, cache: bool | None) -> Optimized:
    from ..cost.report import CostReport, SaturationStats
    from .folds import optimize_with_folds

    def run(p: Program) -> tuple[Program, Any]:
        r = optimize(p, rules, limits, sizes, False, progress, verbose, cache)
        return r.program, r.report

    result, report = optimize_with_folds(prog, run)
    stats = getattr(report, "stats", None) or SaturationStats(stop_reason="not run")
    return Optimized(result, CostReport.build(prog, result, sizes, stats))


def _changed_statements(before: Program, after: Program) -> int:
    """How many statements and outputs of ``before`` a pass rewrote (at least 1)."""
    old = {s.name: s.body for s in before.statements}
    changed = sum(1 for s in after.statements if old.get(s.name) != s.body)
    changed += sum(1 for a, b in zip(before.outputs, after.outputs, strict=False) if a != b)
    return max(changed, 1)


def _add_counts(counts: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    out = dict(counts)
    for k, v in more.items():
        out[k] = out.get(k, 0) + v
    return dict(sorted(out.items()))


def _optimize(
    prog: Program,
    files: Sequence[RuleFile],
    limits: Limits,
    sizes: Mapping[str, int] | None,
    structured: bool,
    progress: Callable[[Progress], None] | None,
    backend: str = "numpy",
) -> Optimized:
    from ..cost.report import CostReport, SaturationStats
    from ..plan.price import member_count_names

    # like terms are merged in one pass over each flattened sum (the e-graph's binary rules
    # would need ~k²/2 nodes for k copies); every later pass takes shallow expressions
    merged = outline(merge_like_terms(prog))
    prog = outline(prog)
    # the pass is the like-terms law applied linearly: the report counts it as that rule
    pre_pass = {"like-terms": _changed_statements(prog, merged)} if merged != prog else {}
    # Limits.seconds is CPU time: this thread's (encoding, extraction) plus the worker's
    start = cpu_clock()
    enc = encode_program(merged)
    sat_seconds = max(SATURATION_SHARE * limits.seconds - (cpu_clock() - start), 1e-3)
    try:
        run = saturate(enc.text, files, limits.iterations, limits.nodes, sat_seconds, progress)
    except SaturationError as exc:
        if "produced no e-graph" in str(exc):
            cpu = cpu_clock() - start + getattr(exc, "cpu", 0.0)
            stats = SaturationStats(0, 0, 0, cpu, "time limit", {},
                                    note=f"{exc}: the input program was kept")
            shared = share_statement_bodies(drop_unit_factors(prog))
            return Optimized(shared, CostReport.build(prog, shared, sizes, stats, structured,
                                                        backend))
        raise
    # what the worker used comes out of the extraction's share; ranking the best few by their
    # plans gets the rest
    deadline = start + EXTRACTION_END * limits.seconds - run.seconds
    file_rules = {name for f in files for name in rule_names(f.text)}
    result = prog
    alternatives: tuple[Program, ...] = ()
    stop_reason = run.stop_reason
    note = ""
    extractor: Extractor | None = None
    try:
        extractor = Extractor(run.snapshot, enc, sizes, deadline)
        extraction = extractor.best_program()
        result = extraction.program
        alternatives = extraction.alternatives
        if not extraction.complete:
            stop_reason = "time limit"
        if progress is not None:
            cpu = cpu_clock() - start + run.seconds
            progress(Progress(
                "extract", run.iterations, run.snapshot.n_nodes, cpu, extraction.cost[1]
            ))
    except OutOfTime:
        stop_reason = "time limit"  # not even the input's own shape was priced in time
    except ExtractionError as exc:
        result = prog  # still correct; the report says why nothing better came out
        note = f"extraction failed ({exc}): the input program was kept"
    # Tree decoding (and reverse mode itself) recompute what earlier statements hold: read it.
    # The input with that done is the fallback (reads are never priced above recomputing).
    fallback: list[Program] = []

    def shared_input() -> Program:
        if not fallback:
            fallback.append(share_statement_bodies(drop_unit_factors(prog)))
        return fallback[0]

    path: tuple[str, ...] = ()
    path_cut = False
    if result is prog:  # the input kept, nothing extracted: only its shared reads are added
        result = shared_input()
        spent = cpu_clock() - start + run.seconds
    else:
        candidates = [result, *alternatives]
        k, result = finish(candidates, sizes, start + limits.seconds - run.seconds,
                           backend)
        # what the limits bound ends here; reading back the path of rewrites is report work
        spent = cpu_clock() - start + run.seconds
        assert extractor is not None
        on_path, path_cut = _rewrites_on_path(extractor, files, candidates[k], run.rule_counts)
        path = tuple(dict.fromkeys([*pre_pass, *on_path]))
    stats = SaturationStats(
        iterations=run.iterations,
        nodes=run.snapshot.n_nodes,
        classes=run.snapshot.n_classes,
        seconds=spent,
        stop_reason=stop_reason,
        # the rules of the rule files (the prelude's analyses and arithmetic are bookkeeping)
        rule_counts=_add_counts(
            {k: v for k, v in sorted(run.rule_counts.items()) if k in file_rules}, pre_pass
        ),
        note=note,
        path=path,
        path_cut=path_cut,
    )
    if progress is not None:
        progress(Progress(
            "done", run.iterations, run.snapshot.n_nodes, stats.seconds, None, stop_reason
        ))
    if fallback and result is fallback[0]:
        return Optimized(result, CostReport.build(prog, result, sizes, stats, structured,
                                                  backend))
    # the safety net reuses the report's pricing (the cost model is the slow part on big programs)
    try:
        report = CostReport.build(prog, result, sizes, stats, structured, backend)
        names = sorted(set(prog.size_names()) | set(result.size_names())
                       | set(member_count_names(prog, sizes)))
        if _priced_above(report, names, sizes):
            result = shared_input()
    except EqsatError:
        result = shared_input()  # a program the cost model cannot price is not returned
    if fallback and result is fallback[0]:  # nothing of the e-graph's: no rewrite on the path
        report = CostReport.build(
            prog, result, sizes, replace(stats, path=(), path_cut=False), structured, backend
        )
    return Optimized(result, report)


def _rewrites_on_path(ex: Extractor, files: Sequence[RuleFile], chosen: Program,
                      fired: Mapping[str, int]) -> tuple[list[str], bool]:
    """The rewrites of ``files`` that ``fired`` and have an instance in the extracted term of
    ``chosen`` (one of the programs ``ex`` extracted; see :mod:`.path`), and whether the trace
    was cut at its budget (``path.MATCH_BUDGET``)."""
    from .extract import node_children
    from .path import chosen_nodes, input_nodes, rewrites, rules_on_path

    ex.deadline = float("inf")  # reading the result back is not part of the search
    try:
        found = ex.price({s.name for s in chosen.statements})
    except ExtractionError:
        return [], False
    if found is None:
        return [], False
    snap = ex.snap
    nodes = chosen_nodes(snap, found[1].walks(), node_children)
    candidates = [r for r in rewrites(files) if fired.get(r[0], 0) > 0]
    trace = rules_on_path(snap, nodes, input_nodes(snap, ex.enc.text), candidates)
    return trace.rules, trace.cut
