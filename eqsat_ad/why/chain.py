"""Why the optimizer chose what it chose: the chain of rewrites from the naive program to the
extracted one, with the cost after each step.

egglog 14 proves an equality (``prove``) only when run with ``--proofs``, which its Python
bindings do not expose (``EGraph()`` takes no such option; ``explain`` is not a command), so the
chain is recorded the direct way: saturation is replayed with 0, 1, 2, ...
iterations allowed, the cheapest program is extracted after each, and a step is kept wherever
the extracted program changed, together with the rules that fired since the step before (their
match counts) and the cost report of that program. Each statement's chain is its text at each
step where it changed, priced as the report prices it: the cost of the statement's kernels in
the plan the backend runs for that step's program. Everything is read from the optimizer's public
results: the extracted program, ``report.to_dict()`` (statement rows, totals) and the saturation
statistics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..ir.errors import EqsatTypeError
from ..ir.printer import print_program
from ..ir.program import Program

__all__ = ["ChainLink", "Explanation", "Step", "explain", "explain_compiled"]

MAX_REPLAYS = 24
"""At most this many replays (iteration counts) are run; longer runs are sampled evenly."""


@dataclass(frozen=True)
class Step:
    """The program extracted after ``iterations`` saturation steps, priced."""

    iterations: int
    program: Program
    report: dict[str, Any]
    """the program's side of ``CostReport.to_dict()`` (total, value, big_o, statements)"""
    fired: dict[str, int]
    """rule -> matches since the previous kept step"""

    @property
    def value(self) -> float:
        return float(self.report["value"])

    @property
    def total(self) -> str:
        return str(self.report["total"])

    def rows(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: r for r in self.report["statements"]}


@dataclass(frozen=True)
class ChainLink:
    """One statement at one step: its text, cost, and the rules that fired to get there."""

    label: str
    text: str
    cost: str
    value: float
    fired: dict[str, int] = field(default_factory=dict)


E_CONSTRUCTORS = frozenset(
    {"Num", "Acc", "Br", "Add", "Mul", "Div", "Pow", "Call1", "Call2", "Sum", "Max", "Scan",
     "Subst"})


def expression_rules(rules: Any) -> frozenset[str]:
    """The names of the rules that rewrite expressions (a ``rewrite`` of an expression, or a
    ``rule`` that unions expression classes); the others compute analyses and index arithmetic
    (free indices, bounds, lattices), bookkeeping that is listed after them."""
    from ..egraph.check import parse_sexps, rule_name
    from ..egraph.rules import load_rules

    names: set[str] = set()
    for f in load_rules(rules):
        for cmd in parse_sexps(f.text):
            if not isinstance(cmd, list) or not cmd:
                continue
            if cmd[0] in ("rewrite", "birewrite"):
                lhs = cmd[1]
                if isinstance(lhs, list) and lhs and lhs[0] in E_CONSTRUCTORS:
                    names.add(rule_name(cmd))
            elif cmd[0] == "rule" and _unions_expressions(cmd):
                names.add(rule_name(cmd))
    return frozenset(names)


def _unions_expressions(cmd: list) -> bool:
    """A ``rule`` whose actions union a variable bound in its query to an expression pattern."""
    query, actions = cmd[1], cmd[2]
    bound = {q[1] for q in query if isinstance(q, list) and len(q) == 3 and q[0] == "="
             and isinstance(q[2], list) and q[2] and q[2][0] in E_CONSTRUCTORS}
    return any(isinstance(a, list) and a and a[0] == "union" and a[1] in bound for a in actions)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def _fired_text(fired: Mapping[str, int], most: int = 40,
                rewrites: frozenset[str] | None = None) -> str:
    """The rules that fired, expression rewrites first (most matches first), then the count of
    bookkeeping matches (analyses, index arithmetic)."""
    if not fired:
        return "no rule of the rule files fired: the prelude's normal form and extraction"
    if rewrites is None:
        rewrites = frozenset(fired)
    items = sorted(((k, v) for k, v in fired.items() if k in rewrites),
                   key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{k} ×{v}" for k, v in items[:most])
    if len(items) > most:
        text += f", … {len(items) - most} more"
    book = sum(v for k, v in fired.items() if k not in rewrites)
    if book:
        text += ("; " if text else "") + f"{book} analysis / index-arithmetic matches"
    return text


def _label(iterations: int) -> str:
    if iterations < 0:
        return "naive"
    if iterations == 0:  # the optimizer's like-term pre-pass, normal form and extraction only
        return "before saturation"
    return f"after {iterations} " + ("iteration" if iterations == 1 else "iterations")


@dataclass(frozen=True)
class Explanation:
    """The rewrite chains of one optimization, and what is needed to draw it."""

    naive: Program
    steps: tuple[Step, ...]
    """the naive program (iterations -1), then every step where the extraction changed"""
    final_report: Any
    """the CostReport of the whole run"""
    sizes: dict[str, int]
    stop_reason: str
    replays: int
    rules: Any = None
    structured: bool = False
    limits: Any = None

    @property
    def final(self) -> Step:
        return self.steps[-1]

    @cached_property
    def rewrites(self) -> frozenset[str]:
        """The rules of the run that rewrite expressions (listed first in the chains)."""
        try:
            return expression_rules(self.rules)
        except Exception:  # rule files gone since the run: list every rule alike
            return frozenset(r for s in self.steps for r in s.fired)

    def fired_text(self, fired: Mapping[str, int], most: int = 40) -> str:
        return _fired_text(fired, most, self.rewrites)

    def chains(self) -> dict[str, list[ChainLink]]:
        """Per statement of the final program (and ``"<return>"``, the returned expressions, as
        the report names them): its text at each step where it changed, with its price in the
        plan of that step's program (the report's number) and the rules fired since its
        previous link."""
        out: dict[str, list[ChainLink]] = {}
        for name in self.final.rows():
            links: list[ChainLink] = []
            pending: dict[str, int] = {}
            for step in self.steps:
                for rule, k in step.fired.items():
                    pending[rule] = pending.get(rule, 0) + k
                row = step.rows().get(name)
                if row is None:
                    continue
                if links and links[-1].text == row["statement"]:
                    continue
                label = _label(step.iterations)
                links.append(ChainLink(label, row["statement"], str(row["cost"]),
                                       float(row["value"]), {} if not links else dict(pending)))
                pending = {}
            out[name] = links
        return out

    def shown_chains(self) -> dict[str, list[ChainLink]]:
        """The chains worth showing: all but a returned variable's that never changed and costs
        nothing (the report's statement tables leave it out too)."""
        return {name: links for name, links in self.chains().items()
                if not (name == "<return>" and len(links) == 1 and links[0].value == 0)}

    def why_lines(self) -> list[str]:
        """One line per statement that changed: naive cost → final cost, and the rules that did
        the most of it."""
        lines = []
        for name, links in self.chains().items():
            if len(links) < 2:
                continue
            fired: dict[str, int] = {}
            for link in links[1:]:
                for k, v in link.fired.items():
                    fired[k] = fired.get(k, 0) + v
            steps = f"{len(links) - 1} step{'s' if len(links) > 2 else ''}"
            lines.append(f"{name}: {links[0].cost} → {links[-1].cost} "
                         f"({steps}; {self.fired_text(fired, 6)})")
        return lines

    def __str__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "none"
        first, last = self.steps[0], self.final
        head = [
            f"Rewrite chains of {self.naive.name!r} (sizes: {sizes}; saturation stopped: "
            f"{self.stop_reason}; {self.replays} replays)",
            f"  program cost: {first.total} = {_num(first.value)}  →  {last.total} = "
            f"{_num(last.value)}",
        ]
        why = self.why_lines()
        if why:
            head.append("  why:")
            head += [f"    {w}" for w in why]
        body: list[str] = []
        for name, links in self.shown_chains().items():
            body.append(f"\n{name}")
            for k, link in enumerate(links):
                if k:
                    body.append(f"    ↓ {self.fired_text(link.fired)}")
                body.append(f"  [{link.label}] cost {link.cost} = {_num(link.value)}")
                body.append(f"      {link.text}")
        return "\n".join(head + body)

    # --- pictures (see .picture and .html) ------------------------------------------------------
    def svg(self, max_classes: int = 60) -> str:
        """The e-graph of the final run, extracted choice highlighted, as standalone SVG."""
        from .picture import egraph_svg

        return egraph_svg(self.naive, self.rules, self.sizes, self.limits, max_classes)

    def html(self) -> str:
        """A self-contained HTML page: cost report, rewrite chains, e-graph picture."""
        from .html import explanation_html

        return explanation_html(self)

    def _repr_html_(self) -> str:
        return self.html()

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.naive.name,
            "sizes": dict(self.sizes),
            "stop_reason": self.stop_reason,
            "steps": [
                {"iterations": s.iterations, "program": print_program(s.program),
                 "total": s.total, "value": s.value, "fired": dict(s.fired)}
                for s in self.steps
            ],
            "chains": {
                name: [{"label": c.label, "statement": c.text, "cost": c.cost,
                        "value": c.value, "fired": dict(c.fired)} for c in links]
                for name, links in self.chains().items()
            },
            "why": self.why_lines(),
        }


def _replay_counts(total: int) -> list[int]:
    if total + 1 <= MAX_REPLAYS:
        return list(range(total))
    step = total / (MAX_REPLAYS - 1)
    return sorted({int(k * step) for k in range(MAX_REPLAYS - 1)} - {total})


def explain(
    prog: Any,
    rules: Sequence[str] | str | None = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    structured: bool = False,
    backend: str = "numpy",
) -> Explanation:
    """Explain the optimization of ``prog``: a Program (optimized as ``ea.optimize`` would,
    for ``backend``), a compiled ``ea.grad``/``ea.compile``/``ea.hessian`` (its naive program,
    with its options), or an ``ea.optimize`` result."""
    from ..api import Compiled
    from ..egraph.optimize import Limits, Optimized
    from ..egraph.optimize import optimize as run

    if isinstance(prog, Compiled):
        return explain_compiled(prog)
    if isinstance(prog, Optimized):
        if prog.inputs is None:
            raise EqsatTypeError("this Optimized was not made by ea.optimize; pass the program")
        return prog.inputs.explain()
    if not isinstance(prog, Program):
        raise EqsatTypeError(
            f"explain takes a Program, a compiled gradient or an ea.optimize result, got "
            f"{type(prog).__name__}"
        )
    limits = Limits() if limits is None else limits
    whole = run(prog, rules, limits, sizes, structured, backend=backend)
    d = whole.report.to_dict()
    total = d["saturation"]["iterations"]
    steps: list[Step] = [Step(-1, prog, d["naive"], {})]
    seen_counts: dict[str, int] = {}
    replays = 0

    def keep(iterations: int, program: Program, report: dict[str, Any]) -> None:
        nonlocal seen_counts
        counts = report["saturation"]["rule_counts"]
        fired = {k: v - seen_counts.get(k, 0) for k, v in counts.items()
                 if v > seen_counts.get(k, 0)}
        if print_program(program) != print_program(steps[-1].program):
            steps.append(Step(iterations, program, report["optimized"], fired))
            seen_counts = dict(counts)

    for k in _replay_counts(total):
        part = run(prog, rules, replace(limits, iterations=k), sizes, structured,
                   backend=backend)
        replays += 1
        keep(k, part.program, part.report.to_dict())
    keep(total, whole.program, d)
    if len(steps) == 1:  # nothing changed: show the final pricing as the one step
        steps.append(Step(total, whole.program, d["optimized"], {}))
    return Explanation(prog, tuple(steps), whole.report, dict(d["sizes"]),
                       d["saturation"]["stop_reason"], replays + 1, rules, structured, limits)


def explain_compiled(g: Any) -> Explanation:
    """The explanation of a compiled gradient's most recent specialization."""
    optimize, rules, limits, sizes = g._options  # noqa: SLF001 - the options it was built with
    spec = g.specialization
    all_sizes = {**(sizes or {}), **(spec.sizes if spec is not None else {})} or None
    return explain(g.naive, rules, limits, all_sizes, g.structured, g.backend)
