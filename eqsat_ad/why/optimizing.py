"""``ea.optimize``: the optimizer, remembering its inputs so that the result can explain itself.

The optimizer proper is :func:`eqsat_ad.egraph.optimize.optimize`; this wrapper stamps the
``Optimized`` result and its report with the call's arguments, which ``explain()`` replays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..egraph.optimize import Limits, Optimized
from ..egraph.optimize import optimize as _optimize
from ..ir.program import Program

CONTEXT = "_explain_context"


def remember(result: Optimized, context: tuple) -> Optimized:
    """Attach ``context`` (the arguments of the call) to the result and its report."""
    for obj in (result, result.report):
        try:
            object.__setattr__(obj, CONTEXT, context)
        except (AttributeError, TypeError):  # a report type without a __dict__: no replay
            pass
    return result


def optimize(
    prog: Program,
    rules: Sequence[str | Path] | str | Path | None = None,
    limits: Limits | None = None,
    sizes: Mapping[str, int] | None = None,
    structured: bool = False,
    progress: Callable[[Any], None] | None = None,
    verbose: bool = False,
    cache: bool | None = None,
) -> Optimized:
    """Optimize ``prog`` with the rule sets ``rules`` (shipped names or paths to ``.egg`` files;
    default: all shipped sets) under ``limits``; ``sizes`` breaks asymptotic ties.
    ``structured``: the report prices outputs as ``structured=True`` compiles them.
    ``progress``, ``verbose``, ``cache``: as for :func:`eqsat_ad.egraph.optimize.optimize`.

    ``print(result)`` shows the program and the cost report; ``result.explain()`` (or
    ``result.report.explain()``) the chain of rewrites behind it."""
    result = _optimize(prog, rules, limits, sizes, structured, progress=progress,
                       verbose=verbose, cache=cache)
    return remember(result, (prog, rules, limits, sizes, structured))


def context_of(obj: Any) -> tuple | None:
    return getattr(obj, CONTEXT, None)
