"""The cost report: eager AD vs naive adjoint vs optimized, each the price of a plan.

``str(report)`` is a table read at a glance, after opt_einsum's ``contract_path`` printout:
scaling (O-class), symbolic price and its value at the sizes, the largest array the generated
code allocates and the predicted speed-up, for three columns priced from the same plans
(:mod:`eqsat_ad.plan.price`): *eager AD* (a tape-based system on the naive adjoint: one dense
array per indexing operation), the *naive adjoint* and the *optimized* program as the backend
runs them; compiled for ``backend="numba"``, two rows more price the fused programs that backend
runs for both (:func:`eqsat_ad.plan.price.backend_price`), the figure its extraction ranks by.
Then the e-graph's size and why saturation stopped, "why" lines (the statements whose
price changed and the rewrites that fired) and one line per statement of each program.
``report.to_dict()`` holds the same data JSON-ready (SymPy expressions as strings), rule counts
and every kernel of both plans included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import sympy

from ..ir.errors import EqsatError
from ..ir.program import Program
from ..plan.memory import PeakMemory
from ..plan.poly import ZERO, Poly, big_o, compare
from ..plan.price import (
    Materialized,
    ProgramCost,
    backend_price,
    call_cost,
    eager_cost,
    member_count_names,
    normalize_sizes,
    program_code,
    program_cost,
)

__all__ = ["DEFAULT_SIZE", "BackendPrices", "CostReport", "ProgramSummary", "SaturationStats",
           "StatementRow"]

DEFAULT_SIZE = 1000
"""Value given to every size the caller did not give, to put numbers on the polynomials."""


@dataclass(frozen=True)
class SaturationStats:
    """What equality saturation did: e-graph size, iterations, time, why it stopped, rules fired."""

    iterations: int = 0
    nodes: int = 0
    classes: int = 0
    seconds: float = 0.0
    stop_reason: str = "not run"
    rule_counts: dict[str, int] = field(default_factory=dict)
    note: str = ""
    """Anything the user should know about the result (e.g. extraction failed: input kept)."""
    path: tuple[str, ...] | None = None
    """The rewrites on the path from the naive term to the extracted one (an instance of each
    is in the extracted term, see :mod:`eqsat_ad.egraph.path`); None where unknown."""
    path_cut: bool = False
    """Whether reading back the path stopped at its budget (``path`` then lists only some)."""

    STOP_REASONS: ClassVar[tuple[str, ...]] = (
        "saturated", "iteration limit", "node limit", "time limit", "not run",
    )

    def __post_init__(self) -> None:
        if self.stop_reason not in self.STOP_REASONS:
            raise EqsatError(
                f"unknown stop reason {self.stop_reason!r}; expected one of "
                + ", ".join(repr(r) for r in self.STOP_REASONS)
            )
        for name in ("iterations", "nodes", "classes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise EqsatError(f"{name} must be a non-negative integer, got {v!r}")
        if not isinstance(self.seconds, int | float) or self.seconds < 0:
            raise EqsatError(f"seconds must be a non-negative number, got {self.seconds!r}")
        counts = dict(self.rule_counts)
        for k, v in counts.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int):
                raise EqsatError(f"rule_counts maps rule names to integers, got {k!r}: {v!r}")
        object.__setattr__(self, "rule_counts", counts)  # own copy: the report is a value
        if self.path is not None:
            path = tuple(self.path)
            if not all(isinstance(r, str) for r in path):
                raise EqsatError(f"path lists rule names, got {self.path!r}")
            object.__setattr__(self, "path", path)

    @property
    def saturated(self) -> bool:
        return self.stop_reason == "saturated"

    def to_dict(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "nodes": self.nodes,
            "classes": self.classes,
            "seconds": float(self.seconds),
            "stop_reason": self.stop_reason,
            "rule_counts": dict(self.rule_counts),
            "path": None if self.path is None else list(self.path),
            "path_cut": self.path_cut,
            "note": self.note,
        }


@dataclass(frozen=True)
class StatementRow:
    """One statement (or returned expression) of a program with its price."""

    name: str
    kind: str
    text: str
    cost: sympy.Expr
    value: Fraction
    big_o: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "statement": self.text,
            "cost": str(self.cost),
            "value": _json_number(self.value),
            "big_o": self.big_o,
        }


@dataclass(frozen=True)
class ProgramSummary:
    """A program priced at the report's sizes: the price of the plan the backend runs."""

    cost: ProgramCost
    total: sympy.Expr
    value: Fraction
    big_o: str
    largest: Materialized | None
    largest_value: Fraction
    rows: tuple[StatementRow, ...]
    peak: PeakMemory = PeakMemory(ZERO, -1, ())
    """The most elements the generated code holds at once (its arrays and a line's temporaries:
    :meth:`eqsat_ad.plan.kernels.Plan.peak`, the lines compared at the report's sizes)."""
    peak_value: int = 0
    """:attr:`peak` at the report's sizes."""

    @staticmethod
    def of(prog: Program, sizes: Mapping[str, int], tie_sizes: Mapping[str, int] | None,
           structured: bool = False, guarded_by: Program | None = None,
           backend: str = "numpy"):
        """``guarded_by``: the unoptimized program whose run guards ``prog``'s code (priced
        with the guard's pass over the arguments, :func:`~eqsat_ad.plan.price.call_cost`: with
        the NumPy backend, the exact ranges it scans on data of unit scale; the Numba
        backend's loops check the arguments they read)."""
        # what a call runs: the generated function and the passes over arguments before it
        cost = call_cost(program_cost(prog, tie_sizes, structured=structured), prog,
                         structured, guarded_by, sizes if backend == "numpy" else None)
        rows = tuple(
            StatementRow(
                d.name, d.kind, d.text, d.cost, Fraction(d.poly.evaluate(sizes)), big_o(d.poly)
            )
            for d in cost.details
        )
        largest = _largest(cost, sizes)
        peak = cost.plan.peak(sizes)
        return ProgramSummary(
            cost,
            cost.total,
            Fraction(cost.total_poly.evaluate(sizes)),
            big_o(cost.total_poly),
            largest,
            Fraction(largest.elements.evaluate(sizes)) if largest else Fraction(0),
            rows,
            peak,
            peak.value(sizes),
        )

    def to_dict(self) -> dict[str, Any]:
        lg = self.largest
        return {
            "total": str(self.total),
            "value": _json_number(self.value),
            "big_o": self.big_o,
            "largest_intermediate": None
            if lg is None
            else {
                "statement": lg.statement,
                "what": lg.what,
                "elements": str(lg.elements.to_sympy()),
                "value": _json_number(self.largest_value),
            },
            "peak_memory": {
                "elements": str(self.peak.elements.to_sympy()),
                "value": self.peak_value,
                "bytes_float64": 8 * self.peak_value,
                "line": self.peak.line,
                "held": list(self.peak.held),
            },
            "statements": [r.to_dict() for r in self.rows],
            "kernels": [{"kind": k.kind, "statement": k.statement, "line": k.line,
                         "space": str(k.space), "alloc": str(k.alloc), "detail": k.detail}
                        for k in self.cost.plan.kernels],
        }


def _largest(cost: ProgramCost, sizes: Mapping[str, int]) -> Materialized | None:
    best: Materialized | None = None
    for m in cost.materialized:
        if best is None or compare(m.elements, best.elements, sizes) > 0:
            best = m
    return best


def _mb(elements: int) -> str:
    """Bytes of ``elements`` float64 values, in B, kB, MB or GB."""
    n = 8 * elements
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _json_number(v: Fraction) -> int | float:
    return int(v) if v.denominator == 1 else float(v)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _fmt(v: Fraction | float) -> str:
    if isinstance(v, Fraction) and v.denominator == 1 and abs(v) < 10**6:
        return str(int(v))
    return f"{float(v):.3e}"


def _same_code(naive: Program, optimized: Program, tie: Mapping[str, int] | None,
               structured: bool) -> bool:
    """Whether both programs lower to the same code, up to the names of temporaries and the
    order of independent lines (:func:`eqsat_ad.plan.same_code.same_code`; programs with
    rolled loops, which lower through their bodies, are not compared: False)."""
    from ..plan.same_code import same_code

    if naive.folds or optimized.folds:
        return False
    try:
        return same_code(*("\n".join(program_code(p, tie, structured))
                           for p in (naive, optimized)))
    except EqsatError:  # (a program the plan cannot lower: not the same code)
        return False


@dataclass(frozen=True)
class BackendSection:
    """How a fusing backend runs the optimized program: each statement's placement (``loop``,
    ``fused`` into a consumer's loop nest, ``pairs``, or ``numpy``: the NumPy backend's code),
    the schedule's reason, and the first call's compile time per float type (module load plus
    Numba's compilation or on-disk cache load; empty before the first call)."""

    name: str
    placement: Mapping[str, str]
    why: Mapping[str, str] = field(default_factory=dict)
    compile_seconds: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, compiled: Any) -> BackendSection | None:
        """The section of a compiled program whose backend has a schedule (None: NumPy)."""
        schedule = getattr(compiled, "schedule", None)
        if schedule is None:
            return None
        return cls("numba", dict(schedule.placement), dict(schedule.why),
                   dict(getattr(compiled, "compile_seconds", {})))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "placement": dict(self.placement), "why": dict(self.why),
                "compile_seconds": {_DTYPE_NAMES.get(k, k): v
                                    for k, v in self.compile_seconds.items()}}

    def lines(self) -> list[str]:
        out = [f"  backend {self.name}: where each statement runs"]
        width = max((len(n) for n in self.placement), default=0) + 2
        for name, where in self.placement.items():
            why = self.why.get(name, "")
            why = why if len(why) <= 72 else why[:69] + "..."
            out.append(f"    {name:{width}}{where:8}{why}".rstrip())
        if self.compile_seconds:
            spent = ", ".join(f"{_DTYPE_NAMES.get(k, k)} {v:.2f} s"
                              for k, v in self.compile_seconds.items())
            out.append(f"    first call (load + compile or cache load): {spent}")
        else:
            out.append("    first call: not yet made (compile time is known after it)")
        return out


_DTYPE_NAMES = {"d": "float64", "f": "float32"}


@dataclass(frozen=True)
class BackendPrices:
    """What a fusing backend runs for the naive and the optimized program, each priced as a
    whole in plan points (``backend="numba"``: its fused schedule,
    :func:`eqsat_ad.plan.price.backend_price`): what the optimizer ranked and compared."""

    name: str
    naive: Poly
    optimized: Poly

    @classmethod
    def of(cls, backend: str, naive: Program, optimized: Program,
           sizes: Mapping[str, int] | None) -> BackendPrices | None:
        """Both programs priced for ``backend`` at ``sizes`` (the caller's); None where it
        runs the NumPy plan itself or cannot price one of them."""
        try:
            n, o = (backend_price(p, backend, sizes) for p in (naive, optimized))
        except EqsatError:
            return None
        return None if n is None or o is None else cls(backend, n, o)

    def to_dict(self, sizes: Mapping[str, int]) -> dict[str, Any]:
        return {"name": self.name, **{
            what: {"total": str(p.to_sympy()), "value": _json_number(Fraction(p.evaluate(sizes))),
                   "big_o": big_o(p)}
            for what, p in (("naive", self.naive), ("optimized", self.optimized))}}


@dataclass(frozen=True)
class CostReport:
    """Eager AD vs naive adjoint vs optimized, each the price of a plan, with saturation stats.

    ``eager``: what a tape-based system pays for the naive program (one dense array per term of
    a statement, see :func:`eqsat_ad.plan.price.eager_cost`); ``naive`` / ``optimized``: the
    prices of the plans the backend runs for the two programs, each with the passes over the
    arguments its call runs first (the row ``<inputs>``: the naive program's finite scan of the
    parameters its fast code trusts; the guard's pass over the arguments of optimized code that
    differs from the naive program's, :func:`eqsat_ad.plan.price.call_cost`).
    """

    sizes: dict[str, int]
    defaulted: tuple[str, ...]
    naive: ProgramSummary
    optimized: ProgramSummary
    stats: SaturationStats
    structured: bool = False
    """The figures price diagonal / point-sparse outputs as stored points only."""
    eager: Poly = field(default_factory=Poly)
    inputs: Any = field(default=None, compare=False, repr=False)
    """The ``optimize`` call that made the report (an ``eqsat_ad.egraph.optimize.OptimizeCall``;
    None for a report built directly), which :meth:`explain` replays."""
    same_code: bool = False
    """Whether the optimized program lowers to the naive program's very code (the rewrites only
    renamed or reordered what runs): such code is exact on every value, needing no guard."""
    backend: BackendSection | None = field(default=None, compare=False)
    """The fusing backend's schedule and compile time (compiled with ``backend="numba"``)."""
    fused: BackendPrices | None = None
    """The prices of the fused programs a fusing backend runs (built for ``backend="numba"``)."""

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        naive: Program,
        optimized: Program,
        sizes: Mapping[str, int] | None = None,
        stats: SaturationStats | None = None,
        structured: bool = False,
        backend: str = "numpy",
    ) -> CostReport:
        """Price both programs. Sizes not given default to :data:`DEFAULT_SIZE` (and say so).

        ``structured``: price the run as ``ea.grad(..., structured=True)`` executes it.
        ``backend``: the backend whose guard runs optimized code (``"numpy"`` or ``"numba"``;
        their guards scan the arguments differently, :meth:`ProgramSummary.of`).
        """
        for what, p in (("naive", naive), ("optimized", optimized)):
            if not isinstance(p, Program):
                raise EqsatError(f"the {what} program must be a Program, got {type(p).__name__}")
        if stats is not None and not isinstance(stats, SaturationStats):
            raise EqsatError(f"stats must be SaturationStats, got {type(stats).__name__}")
        given = normalize_sizes(sizes) if sizes is not None else {}
        names = list(dict.fromkeys([*naive.size_names(), *optimized.size_names(),
                                    *member_count_names(naive, given)]))
        full = dict(given)
        defaulted = tuple(n for n in names if n not in given)
        for n in defaulted:
            full[n] = DEFAULT_SIZE
        # Contraction orders are chosen at the caller's sizes, as the compiled code does.
        tie = full if sizes is not None else None
        n_sum = ProgramSummary.of(naive, full, tie, structured)
        same = _same_code(naive, optimized, tie, structured)
        # optimized code that is not the naive program's own runs guarded by it (as compiled)
        guard = None if same or optimized == naive else naive
        return cls(
            full,
            defaulted,
            n_sum,
            ProgramSummary.of(optimized, full, tie, structured, guard, backend),
            stats if stats is not None else SaturationStats(),
            structured,
            eager_cost(naive, plan_cost=n_sum.cost),
            same_code=same,
            fused=BackendPrices.of(backend, naive, optimized, tie),
        )

    # --- derived figures -----------------------------------------------------------------------
    @property
    def eager_value(self) -> Fraction:
        return Fraction(self.eager.evaluate(self.sizes))

    @property
    def eager_total(self) -> sympy.Expr:
        return self.eager.to_sympy()

    @property
    def speedup(self) -> float | None:
        """Predicted speed-up: the naive plan's price / the optimized plan's, at the sizes."""
        if self.optimized.value <= 0:
            return None
        return float(self.naive.value / self.optimized.value)

    @property
    def eager_speedup(self) -> float | None:
        """Predicted speed-up over a tape-based AD system (eager price / optimized price)."""
        if self.optimized.value <= 0:
            return None
        return float(self.eager_value / self.optimized.value)

    @property
    def naive_total(self) -> sympy.Expr:
        return self.naive.total

    @property
    def optimized_total(self) -> sympy.Expr:
        return self.optimized.total

    def why(self) -> list[str]:
        """Why the optimized plan is cheaper: the statements whose price changed (naive →
        optimized), then the rewrites on the path from the naive term to the extracted one
        (``stats.path``: names only, no bookkeeping rules; where the path is unknown, every rule
        that fired). Rule counts are in :meth:`to_dict` only."""
        out: list[str] = []
        before = {r.name: r for r in self.naive.rows}
        after = {r.name: r for r in self.optimized.rows}
        for name, r in after.items():
            b = before.get(name)
            if b is None:
                out.append(f"{name}: new statement, {r.big_o}")
            elif b.value != r.value:
                out.append(f"{name}: {b.big_o} -> {r.big_o} ({_fmt(b.value)} -> "
                           f"{_fmt(r.value)} at the sizes)")
        for name, b in before.items():
            if name not in after:
                out.append(f"{name}: removed (read where it is used), was {b.big_o}")
        fired = list(self.stats.path) if self.stats.path is not None else [
            k for k, _ in sorted(self.stats.rule_counts.items(), key=lambda kv: -kv[1])]
        listed = ", ".join(fired[:8]) + (", ..." if len(fired) > 8 else "")
        if self.stats.path_cut:  # the budget stopped the reading: only some are listed
            listed = f"{listed} (trace cut at budget)".lstrip()
        if listed:
            out.append("rewrites: " + listed)
        return out

    # --- output --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "sizes": dict(self.sizes),
            "defaulted_sizes": list(self.defaulted),
            "eager": {"total": str(self.eager_total), "value": _json_number(self.eager_value),
                      "big_o": big_o(self.eager)},
            "naive": self.naive.to_dict(),
            "optimized": self.optimized.to_dict(),
            "speedup": self.speedup,
            "eager_speedup": self.eager_speedup,
            "structured": self.structured,
            "why": self.why(),
            "saturation": self.stats.to_dict(),
            **({"backend": self.backend.to_dict()} if self.backend is not None else {}),
            **({"fused": self.fused.to_dict(self.sizes)} if self.fused is not None else {}),
        }

    def explain(self) -> Any:
        """The chain of rewrites behind this report, per statement (an eqsat_ad.why.Explanation;
        replays the optimization that made the report: only reports of ``ea.optimize`` and of
        compiled gradients know it)."""
        if self.inputs is None:
            raise EqsatError("this report does not know the optimization that made it; call "
                             "ea.explain(program) or ea.explain(compiled_gradient)")
        return self.inputs.explain()

    def _repr_html_(self) -> str:
        from ..why.html import report_html

        return report_html(self)

    def _sizes_line(self) -> str:
        if not self.sizes:
            return "sizes: none (all extents are constants)"
        text = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        if self.defaulted and len(self.defaulted) == len(self.sizes):
            return f"sizes: {text} (not given: every size defaults to {DEFAULT_SIZE})"
        if self.defaulted:
            return f"sizes: {text} (not given: {', '.join(self.defaulted)} = {DEFAULT_SIZE})"
        return f"sizes: {text}"

    def __str__(self) -> str:
        n, o = self.naive, self.optimized

        def largest(s: ProgramSummary) -> str:
            if s.largest is None:
                return "none"
            lg = s.largest
            return f"{lg.elements} = {_fmt(s.largest_value)} ({lg.statement})"

        def peak(s: ProgramSummary) -> str:
            return f"{s.peak.elements} = {_fmt(Fraction(s.peak_value))} ({_mb(s.peak_value)})"

        st = self.stats
        if st.stop_reason == "not run":
            egraph = "not run"
        else:
            egraph = (
                f"{st.nodes} nodes, {st.classes} classes, {st.iterations} iterations, "
                f"{st.seconds:.2f} s, stopped: {st.stop_reason}"
            )
        if st.note:
            egraph += f"; {st.note}"

        def speed(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.4g}x"

        head = [
            ("scaling", big_o(self.eager), n.big_o, o.big_o),
            ("cost", str(self.eager_total), str(n.total), str(o.total)),
            ("cost at sizes", _fmt(self.eager_value), _fmt(n.value), _fmt(o.value)),
            ("largest intermediate", "", largest(n), largest(o)),
            ("peak memory", "", peak(n), peak(o)),
            ("speed-up of optimized", speed(self.eager_speedup), speed(self.speedup), "1x"),
        ]
        if self.fused is not None:  # what the fusing backend runs, as its extraction priced it
            f = self.fused
            head += [(f"{f.name} cost", "", str(f.naive.to_sympy()), str(f.optimized.to_sympy())),
                     (f"{f.name} at sizes", "", _fmt(Fraction(f.naive.evaluate(self.sizes))),
                      _fmt(Fraction(f.optimized.evaluate(self.sizes))))]
        w0 = max(len(r[0]) for r in head) + 2
        w1 = max(len("eager AD"), *(len(r[1]) for r in head)) + 3
        w2 = max(len("naive adjoint"), *(len(r[2]) for r in head)) + 3
        lines = [f"Cost report ({self._sizes_line()}; prices of the plans the backend runs"
                 + (", structured outputs" if self.structured else "") + ")"]
        rule = "-" * max(72, w0 + w1 + w2 + max(len(r[3]) for r in head) + 2)
        lines.append(rule)
        lines.append(f"  {'':{w0}}{'eager AD':{w1}}{'naive adjoint':{w2}}optimized")
        lines += [f"  {a:{w0}}{b:{w1}}{c:{w2}}{d}" for a, b, c, d in head]
        lines.append(f"  {'e-graph':{w0}}{egraph}")
        why = self.why()
        if why:
            lines.append("  why")
            lines += [f"    {w}" for w in why]
        for title, s in (("naive program", n), ("optimized program", o)):
            lines.append(rule)
            lines += self._statement_table(title, s)
        if self.backend is not None:
            lines.append(rule)
            lines += self.backend.lines()
        return "\n".join(lines) + "\n"

    @staticmethod
    def _statement_table(title: str, s: ProgramSummary) -> list[str]:
        # A returned tensor variable costs nothing: leave it out of the table (not of to_dict).
        shown = [r for r in s.rows if not (r.kind == "output" and r.cost == 0)]
        rows = [(r.big_o, _fmt(r.value), str(r.cost), _short(r.text)) for r in shown]
        hdr = ("scaling", "at sizes", "cost", "statement")
        widths = [max(len(hdr[k]), *(len(r[k]) for r in rows)) + 2 if rows else len(hdr[k]) + 2
                  for k in range(3)]
        out = [f"  {title}", "  " + "".join(f"{h:{w}}" for h, w in zip(hdr, widths, strict=False))
               + hdr[3]]
        for r in rows:
            out.append("  " + "".join(f"{c:{w}}" for c, w in zip(r, widths, strict=False)) + r[3])
        return out
