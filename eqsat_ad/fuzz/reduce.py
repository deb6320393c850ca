"""Shrinking a failing program while its failure persists (greedy delta debugging on the AST).

Both languages are Python syntax, so one reducer serves both: it deletes statements, unwraps
``if`` blocks, replaces a subexpression by one of its operands or by a constant, drops unused
parameters, shrinks sizes (cutting the inputs to match) and simplifies finite inputs to 1.0. A
candidate is kept when running it gives a finding with the same signature (outcome, stage and,
for errors, exception type) on the same input kind.
"""

from __future__ import annotations

import ast
import copy
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .case import Case, shrink_inputs
from .check import Finding
from .runner import Runner

__all__ = ["Reduced", "reduce_case"]


@dataclass(frozen=True)
class Reduced:
    case: Case
    inputs: dict[str, Any]
    finding: Finding
    steps: int  # accepted simplifications
    tried: int  # candidates run


def _function(tree: ast.Module) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef))


def _statement_lists(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    stack: list[list[ast.stmt]] = [fn.body]
    while stack:
        body = stack.pop()
        yield body
        for s in body:
            for attr in ("body", "orelse"):
                inner = getattr(s, attr, None)
                if isinstance(inner, list) and inner:
                    stack.append(inner)


def _source_edits(source: str) -> Iterator[str]:
    """Candidate simplifications of ``source``, the largest cuts first."""
    tree = ast.parse(source)
    fn = _function(tree)
    n_lists = sum(1 for _ in _statement_lists(fn))
    # 1. delete one statement (never the last statement of a body); unwrap an if
    for li in range(n_lists):
        body = list(_statement_lists(fn))[li]
        for k in range(len(body)):
            for mode in ("delete", "unwrap"):
                t = copy.deepcopy(tree)
                b = list(_statement_lists(_function(t)))[li]
                if mode == "delete":
                    if len(b) == 1 or isinstance(b[k], ast.Return):
                        continue
                    del b[k]
                else:
                    if not isinstance(b[k], ast.If):
                        continue
                    b[k:k + 1] = b[k].body
                yield ast.unparse(t)
    # 2. replace an expression by one of its operands or by a constant, outermost first
    count = sum(1 for _ in _expressions(fn))
    for k in range(count):
        node = list(_expressions(fn))[k]
        for make in _replacements(node):
            t = copy.deepcopy(tree)
            target = list(_expressions(_function(t)))[k]
            new = make(target)
            if new is None:
                continue
            if not _replace(_function(t), target, new):
                continue
            yield ast.unparse(t)


_COMPOUND = (ast.BinOp, ast.UnaryOp, ast.Call, ast.BoolOp, ast.Tuple, ast.Attribute,
             ast.Subscript, ast.Compare)


def _expressions(fn: ast.FunctionDef) -> Iterator[ast.expr]:
    """The compound expressions of the body (not assignment targets or callee names), outer
    first."""
    skip: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            skip.add(id(node.func))
            if isinstance(node.func, ast.Subscript):  # Sum[i: N](...): keep the binder
                skip |= {id(n) for n in ast.walk(node.func)}
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            skip |= {id(n) for t in targets for n in ast.walk(t)}
        if isinstance(node, ast.arguments):
            skip |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.For):
            skip |= {id(n) for n in ast.walk(node.iter)} | {id(n) for n in ast.walk(node.target)}
    for node in ast.walk(fn):
        if isinstance(node, _COMPOUND) and id(node) not in skip:
            yield node


def _replacements(node: ast.expr) -> Iterator[Callable[[ast.expr], ast.expr | None]]:
    def child(attr: str, k: int | None = None) -> Callable[[ast.expr], ast.expr | None]:
        def make(n: ast.expr) -> ast.expr | None:
            v = getattr(n, attr, None)
            if k is not None:
                v = v[k] if isinstance(v, list) and k < len(v) else None
            return v if isinstance(v, ast.expr) else None
        return make

    match node:
        case ast.BinOp():
            yield child("left")
            yield child("right")
        case ast.UnaryOp():
            yield child("operand")
        case ast.Call():
            for k in range(len(node.args)):
                yield child("args", k)
        case ast.BoolOp() | ast.Tuple():
            attr = "values" if isinstance(node, ast.BoolOp) else "elts"
            for k in range(len(getattr(node, attr))):
                yield child(attr, k)
        case ast.Attribute() | ast.Subscript():
            yield child("value")
    if not isinstance(node, ast.Compare | ast.Tuple):
        for c in (1.0, 0.0):
            yield lambda n, c=c: ast.Constant(c)


def _replace(root: ast.AST, old: ast.expr, new: ast.expr) -> bool:
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return True
    return False


def _drop_param(case: Case, inputs: Mapping[str, Any], name: str) -> tuple[Case, dict] | None:
    tree = ast.parse(case.source)
    fn = _function(tree)
    fn.args.args = [a for a in fn.args.args if a.arg != name]
    shapes = {k: v for k, v in case.shapes.items() if k != name}
    used = {d for dims in shapes.values() for d in dims}
    sizes = {k: v for k, v in case.sizes.items() if k in used}
    new = replace(case, source=ast.unparse(tree) + "\n", shapes=shapes, sizes=sizes,
                  relations=case.relations - {name})
    return new, {k: v for k, v in inputs.items() if k != name}


def _simplify_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Finite entries (not 0) replaced by 1.0: the special values are what matters."""
    out: dict[str, Any] = {}
    for k, v in inputs.items():
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            out[k] = np.where(np.isfinite(v) & (np.abs(v) < 1e100) & (np.abs(v) > 1e-100),
                              1.0, v)
        elif isinstance(v, float) and np.isfinite(v) and 1e-100 < abs(v) < 1e100:
            out[k] = 1.0
        else:
            out[k] = v
    return out


def reduce_case(runner: Runner, case: Case, kind: str, inputs: Mapping[str, Any],
                finding: Finding, max_tries: int = 300, max_seconds: float = 240.0) -> Reduced:
    """The smallest variant of ``case`` (and its ``inputs``) that still shows ``finding``."""
    want = finding.signature
    start = time.monotonic()
    tried = steps = 0
    best: tuple[Case, dict[str, Any], Finding] = (case, dict(inputs), finding)

    def still_fails(c: Case, ins: dict[str, Any]) -> Finding | None:
        nonlocal tried
        tried += 1
        for f in runner.run(c, {kind: ins}).get(kind, []):
            if f.signature == want:
                return f
        return None

    def budget() -> bool:
        return tried < max_tries and time.monotonic() - start < max_seconds

    def candidates() -> Iterator[tuple[Case, dict[str, Any]]]:
        c, ins, _ = best
        for name, n in c.sizes.items():
            for smaller in sorted({0, 1, n // 2, n - 1} - {n}):
                if 0 <= smaller < n:
                    sizes = {**c.sizes, name: smaller}
                    yield replace(c, sizes=sizes), shrink_inputs(c, sizes, ins)
        for name in list(c.shapes):
            if len(c.shapes) > 1:
                dropped = _drop_param(c, ins, name)
                if dropped is not None:
                    yield dropped
        for src in _source_edits(c.source):
            yield c.with_source(src if src.endswith("\n") else src + "\n"), ins
        simple = _simplify_inputs(ins)
        if any(not np.array_equal(simple[k], ins[k], equal_nan=True) for k in ins):
            yield c, simple

    # passes over the candidates; after a success the pass goes on from the same position
    progress = True
    while progress and budget():
        progress = False
        pos = 0
        while budget():
            found = False
            for k, (c, ins) in enumerate(candidates()):
                if k < pos:
                    continue
                if not budget():
                    break
                f = still_fails(c, ins)
                if f is not None:
                    best, pos, found = (c, ins, f), k, True
                    steps += 1
                    progress = True
                    break
            if not found:
                break
    c, ins, f = best
    return Reduced(c, ins, f, steps, tried)
