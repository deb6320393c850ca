"""Outlining: a program whose expressions are all shallow, equal to any given program.

Stages written as recursive walks (code generation, pricing) and CPython's own compiler cannot
take an expression thousands of nodes deep (a 5,000-term sum, an unrolled recurrence). This pass
moves every subexpression that reaches ``MAX_HEIGHT`` levels into a statement of its own, over
the indices free in it (a statement generator or an enclosing sum's binder, at that index's
extent), and reads it back where it stood: ``x[0]*x[0] + ... + x[4999]*x[4999]`` becomes partial
sums of ``MAX_HEIGHT`` terms each. The read is exact (each index ranges over its own extent),
so the program computes the same values; programs that are already shallow come back unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from .expr import Access, Expr, Max, Sum, all_index_names, children, free_indices
from .index import Affine, Dim, IndexVar
from .program import Fold, Program, Statement, Step
from .traverse import height, rebuild

# The height (nodes on the longest root-to-leaf path) a statement body may keep.
MAX_HEIGHT = 48


def max_height(prog: Program) -> int:
    """The height of ``prog``'s deepest expression."""
    best = 0
    for e in [s.body for s in prog.statements if isinstance(s, Statement)] + list(prog.outputs):
        best = max(best, height(e))
    for f in prog.folds:
        best = max(best, max_height(f.body))
    return best


class _Outliner:
    def __init__(self, prog: Program, limit: int) -> None:
        self.limit = limit
        self.taken = set(prog.param_names) | {n for s in prog.statements for n in s.defines}
        self.taken |= set(prog.size_names())
        for s in prog.statements:
            if isinstance(s, Fold):
                continue
            self.taken |= {iv.name for iv in s.indices} | all_index_names(s.body)
        for o in prog.outputs:
            self.taken |= all_index_names(o)
        self.new: list[Statement] = []
        self.count = 0

    def name(self, base: str) -> str:
        while True:
            self.count += 1
            cand = f"{base}_part{self.count}"
            if cand not in self.taken:
                self.taken.add(cand)
                return cand

    def expr(self, e: Expr, scope: dict[str, Dim], base: str) -> Expr:
        heights: dict[int, int] = {}

        def pre(x: Expr, sc: dict[str, Dim]):
            if isinstance(x, Sum | Max):
                inner = dict(sc)
                inner.update({iv.name: iv.extent for iv in x.indices})
                return x, inner
            return x, sc

        def post(x: Expr, sc: dict[str, Dim]) -> Expr:
            h = 1 + max((heights.get(id(c), 1) for c in children(x)), default=0)
            if h >= self.limit:
                x = self.lift(x, sc, base)
                h = 1
            heights[id(x)] = h
            keep.append(x)
            return x

        keep: list[Expr] = []  # the ids in ``heights`` stay those of live objects
        return rebuild(e, post, pre, dict(scope))

    def lift(self, x: Expr, scope: dict[str, Dim], base: str) -> Expr:
        free = free_indices(x)
        order = [n for n in scope if n in free]
        ivs = tuple(IndexVar(n, scope[n]) for n in order)
        name = self.name(base)
        self.new.append(Statement(name, ivs, x, getattr(x, "loc", None)))
        return Access(name, tuple(Affine.var(n) for n in order), x.loc)


def outline(prog: Program, limit: int = MAX_HEIGHT) -> Program:
    """``prog`` with no expression higher than ``limit`` (``prog`` itself if none is)."""
    if max_height(prog) <= limit:
        return prog
    o = _Outliner(prog, limit)
    statements: list[Step] = []
    for s in prog.statements:
        if isinstance(s, Fold):
            statements.append(replace(s, body=outline(s.body, limit)))
            continue
        body = o.expr(s.body, {iv.name: iv.extent for iv in s.indices}, s.name)
        statements += o.new
        o.new = []
        statements.append(s if body is s.body else replace(s, body=body))
    outputs = []
    for k, e in enumerate(prog.outputs):
        outputs.append(o.expr(e, {}, f"{prog.name}_out{k}" if k else f"{prog.name}_out"))
        statements += o.new
        o.new = []
    return replace(prog, statements=tuple(statements), outputs=tuple(outputs))
