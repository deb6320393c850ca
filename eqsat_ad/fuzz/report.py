"""What a fuzz run tells: the summary table and the reproducer files."""

from __future__ import annotations

import pprint
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .case import INPUT_KINDS
from .check import ALLOWED, OUTCOMES
from .reduce import Reduced

__all__ = ["DEFECTS", "summary_table", "write_reproducer"]

# outcomes that are defects of the library (rejected: of the generator; ieee-gradient:
# specified behaviour; agree: none)
DEFECTS = tuple(o for o in OUTCOMES if o not in ALLOWED)


def summary_table(counts: Mapping[tuple[str, str, str], int]) -> str:
    """Counts per generator x input kind (rows) and outcome (columns), as a Markdown table."""
    outcomes = [o for o in OUTCOMES if any(k[2] == o for k in counts)] or ["agree"]
    rows = sorted({(g, k) for g, k, _ in counts},
                  key=lambda r: (r[0], INPUT_KINDS.index(r[1]) if r[1] in INPUT_KINDS else 9))
    head = "| generator | inputs | " + " | ".join(outcomes) + " | total |"
    lines = [head, "|" + "---|" * (len(outcomes) + 3)]
    totals: Counter[str] = Counter()
    for g, k in rows:
        cells = [counts.get((g, k, o), 0) for o in outcomes]
        totals.update(dict(zip(outcomes, cells, strict=True)))
        lines.append(f"| {g} | {k} | " + " | ".join(map(str, cells)) + f" | {sum(cells)} |")
    lines.append("| all | all | " + " | ".join(str(totals[o]) for o in outcomes)
                 + f" | {sum(totals.values())} |")
    return "\n".join(lines)


def _literal(value: Any) -> str:
    """Python source for an input that reads back bit for bit (nan, -0.0, subnormals)."""
    if isinstance(value, np.ndarray):
        dtype = "bool" if value.dtype == bool else "float64"
        if value.size == 0:
            return f"zeros({value.shape!r}, dtype={dtype})"
        body = pprint.pformat(value.tolist(), width=92, compact=True).replace("\n", "\n    ")
        return f"array({body}, dtype={dtype})"
    return repr(value)


def _source_literal(source: str) -> str:
    """The program as a triple-quoted block when that reads back exactly, else a repr."""
    if "\\" not in source and "'''" not in source and source.endswith("\n"):
        return "'''\\\n" + source + "'''"
    return repr(source)


def write_reproducer(folder: Path, reduced: Reduced, kind: str, origin: str, index: int,
                     backend: str = "numpy") -> Path:
    """A standalone script: the minimized source, its inputs, expected and actual results.

    Run it from the repository root (``PYTHONPATH=. python <file>``): it prints the program and
    what the fuzzer's check finds now (nothing once the defect is fixed)."""
    f = reduced.finding
    case = reduced.case
    slug = re.sub(r"[^a-z0-9]+", "_", f.stage.lower()).strip("_")
    path = folder / f"{f.outcome.replace('-', '_')}_{case.generator}_{slug}_{index:03d}.py"
    inputs = ",\n".join(f"    {k!r}: {_literal(v)}" for k, v in reduced.inputs.items())
    doc = (f"eqsat_ad fuzzer reproducer: {f.outcome} at {f.stage} ({case.generator} program, "
           f"{kind} inputs).\n\nFound by {origin}; minimized in {reduced.steps} steps "
           f"({reduced.tried} candidates run).\n{f.detail}\n")
    doc = doc.replace(chr(92), chr(92) * 2).replace('"""', "'''")
    text = f'''# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""{doc}"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = {_source_literal(case.source)}
CASE = Case({case.generator!r}, SOURCE, shapes={dict(case.shapes)!r}, sizes={dict(case.sizes)!r},
            relations=frozenset({sorted(case.relations)!r}))
KIND = {kind!r}
INPUTS = {{
{inputs},
}}
STAGE = {f.stage!r}
BACKEND = {backend!r}
EXPECTED = {f.expected!r}  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = {f.actual!r}

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {{KIND: INPUTS}}, backend=BACKEND)[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
'''
    path.write_text(text)
    return path
