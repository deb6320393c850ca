"""Rule files: egglog text, one named ruleset per file, loaded at run time.

A shipped rule set is named by its file stem (``"indicator"`` is ``rules/indicator.egg``); any
other entry is a path to a researcher's own ``.egg`` file. A file whose text contains the line
``; schedule: saturate`` is a terminating simplification set, run to saturation before every
exploratory step; the others are run one iteration at a time under the limits.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..ir.errors import EqsatValueError

SHIPPED = ("indicator", "arith", "sumprod", "reindex", "scan")
DEFAULT_RULES = SHIPPED
MATCH_LIMIT = 1500
SIMPLIFY_MATCH_LIMIT = 3000
SIMPLIFY_ROUNDS = 8

_RULESET = re.compile(r"^\s*\(ruleset\s+([A-Za-z_][\w\-]*)\s*\)", re.MULTILINE)
_SATURATE = re.compile(r"^\s*;\s*schedule:\s*saturate\s*$", re.MULTILINE)


class RuleError(EqsatValueError):
    """A rule file that cannot be found or read."""


@dataclass(frozen=True)
class RuleFile:
    name: str
    """the ruleset the file declares"""
    path: str
    text: str
    saturate: bool
    """a terminating set, run to saturation before each exploratory step"""


_RULE_NAME = re.compile(r':name\s+"([^"]*)"')


def rule_names(text: str) -> list[str]:
    """The ``:name``s of the rules of a rule file, in order."""
    return _RULE_NAME.findall(text)


def rules_dir() -> Path:
    return Path(str(importlib.resources.files("eqsat_ad") / "rules"))


def prelude_text() -> str:
    """The prelude, with one ``(finite-fn name)`` fact per registered function that maps finite
    arguments to a finite value (the registry's ``finite``)."""
    from ..ir.functions import finite_functions

    facts = "".join(f'(finite-fn "{name}")\n' for name in finite_functions())
    return (Path(__file__).parent / "prelude.egg").read_text() + facts


def load_rule_file(spec: str | Path) -> RuleFile:
    """A shipped name (``"indicator"``) or a path to an ``.egg`` file."""
    spec_s = str(spec)
    if isinstance(spec, str) and spec in SHIPPED:
        path = rules_dir() / f"{spec}.egg"
    else:
        path = Path(spec_s)
        if not path.exists() and not spec_s.endswith(".egg") and "/" not in spec_s:
            raise RuleError(
                f"unknown rule set {spec_s!r}: shipped ones are {', '.join(SHIPPED)}, "
                "anything else must be a path to an .egg file"
            )
    try:
        text = path.read_text()
    except OSError as exc:
        raise RuleError(f"cannot read rule file {spec_s!r}: {exc.strerror or exc}") from None
    names = _RULESET.findall(text)
    if len(names) != 1:
        raise RuleError(
            f"{path}: a rule file declares exactly one (ruleset NAME); found {len(names)}"
        )
    name = names[0]
    if name == "prelude":
        raise RuleError(f"{path}: the ruleset name 'prelude' is reserved")
    if not (isinstance(spec, str) and spec in SHIPPED):
        from .rule_errors import check_against_prelude

        check_against_prelude(text, str(path))  # errors in the file's own lines and columns
    return RuleFile(name, str(path), text, bool(_SATURATE.search(text)))


def load_rules(rules: Sequence[str | Path] | str | Path | None) -> tuple[RuleFile, ...]:
    if rules is None:
        rules = DEFAULT_RULES
    if isinstance(rules, (str, Path)):
        rules = [rules]
    files = tuple(load_rule_file(r) for r in rules)
    seen: set[str] = set()
    for f in files:
        if f.name in seen:
            raise RuleError(f"two rule files declare the ruleset {f.name!r}")
        seen.add(f.name)
    return files


def _simplify_sets(files: Sequence[RuleFile]) -> str:
    return " ".join(f"(run-with simp {f.name})" for f in files if f.saturate)


def simplify_round_text(files: Sequence[RuleFile]) -> str:
    """One round of the terminating sets (after the prelude to its fixpoint)."""
    return (
        f"(run-schedule (let-scheduler simp (back-off :match-limit {SIMPLIFY_MATCH_LIMIT})) "
        f"(saturate (run prelude)) (seq {_simplify_sets(files)}) (saturate (run prelude)))"
    )


def explore_step_text(files: Sequence[RuleFile]) -> str:
    """One exploratory pass, then the terminating sets to a (bounded) fixpoint.

    Even terminating rules can grow an e-graph with cycles (x = 0 * x) without end, so the
    fixpoint is bounded (SIMPLIFY_ROUNDS rounds, and a back-off scheduler that skips a rule
    matching more than SIMPLIFY_MATCH_LIMIT times in one round); a back-off scheduler also skips,
    for the step, any exploratory rule matching more than MATCH_LIMIT times, so one step cannot
    multiply the e-graph (associativity, commutativity).
    """
    simplify = _simplify_sets(files)
    fixpoint = (
        f"(repeat {SIMPLIFY_ROUNDS} (seq (saturate (run prelude)) {simplify}))"
        if simplify else "(saturate (run prelude))"
    )
    explore = " ".join(f"(run-with bo {f.name})" for f in files if not f.saturate)
    return (
        f"(run-schedule (let-scheduler simp (back-off :match-limit {SIMPLIFY_MATCH_LIMIT})) "
        f"(let-scheduler bo (back-off :match-limit {MATCH_LIMIT})) (seq {explore}) {fixpoint} "
        "(saturate (run prelude)))"
    )


def verify_step_text(files: Sequence[RuleFile]) -> str:
    """One plain pass of every set (no scheduler skips a rule): changing nothing is a fixed
    point."""
    runs = " ".join(f"(run {f.name})" for f in files)
    return f"(run-schedule (seq {runs}) (saturate (run prelude)))"
