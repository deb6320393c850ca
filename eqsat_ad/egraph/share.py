"""Reuse of materialized statements: a pure pass run after extraction.

Extraction prices each statement's body as a tree, so a later statement may recompute a
subexpression that an earlier statement already holds (the MLP adjoint's
``b_bar[i] = Sum[i1](h_bar[i1, i] * (1 - h[i1, i] ** 2))`` while
``t_bar[i, j] = h_bar[i, j] * (1 - h[i, j] ** 2)`` is materialized). The naive adjoint
already has that shape (reverse mode writes one adjoint per use of ``tanh``'s argument), and
the e-graph cannot see the duplicate: it is one e-class, but the tree decoding copies it at
each use. This pass replaces every subexpression alpha-equivalent to an earlier statement's
body by a read of that statement, at the generators' places.

Soundness: the subexpression equals the body with the generators renamed to index variables
of the context (a bijection of free indices, checked structurally), and each such variable
ranges inside the generator's range (same extent, or a smaller integer one), so every read
is in bounds and returns exactly the body's value there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    map_children,
)
from ..ir.index import Affine, Dim
from ..ir.outline import outline
from ..ir.program import Program, Statement
from ..ir.traverse import fold

__all__ = ["alpha_key", "drop_unit_factors", "share_statement_bodies"]

# Bodies smaller than this many nodes are not worth a lookup (an access is one node).
_MIN_NODES = 3


class _Canon:
    """A hashable key of an expression up to the names of its index variables.

    Free index variables get tokens in order of first occurrence (``order`` lists them), bound
    ones a token by binder depth; two expressions with equal keys are equal up to the bijection of
    their ``order`` lists.
    """

    def __init__(self) -> None:
        self.order: list[str] = []
        self.tokens: dict[str, tuple] = {}
        self.depth = 0

    def aff(self, a: Affine) -> tuple:
        terms = []
        for name, k in a.index:
            tok = self.tokens.get(name)
            if tok is None:
                tok = self.tokens[name] = ("f", len(self.order))
                self.order.append(name)
            terms.append((tok, k))
        return (tuple(sorted(terms)), a.sizes, a.const)

    def pred(self, p: Pred) -> tuple:
        match p:
            case Cmp(op, lhs, rhs):
                return ("cmp", op, self.aff(lhs), self.aff(rhs))
            case Rel(name, idx):
                return ("rel", name, tuple(self.aff(a) for a in idx))
            case And(preds):
                return ("and", tuple(self.pred(q) for q in preds))
        raise TypeError(p)

    def key(self, e: Expr) -> tuple:
        match e:
            case Const(v):
                return ("c", v)
            case Access(name, idx):
                return ("a", name, tuple(self.aff(a) for a in idx))
            case Bracket(p):
                return ("br", self.pred(p))
            case Binary(op, lhs, rhs):
                return ("bin", op, self.key(lhs), self.key(rhs))
            case Neg(arg):
                return ("neg", self.key(arg))
            case Pow(base, k):
                return ("pow", k, self.key(base))
            case Call(fn, args):
                return ("call", fn, tuple(self.key(a) for a in args))
            case Sum(ivs, body) | Max(ivs, body):
                # Bound indices are named by binder depth and position: scoped, so unique
                # while in scope, and equal for alpha-equivalent sums anywhere.
                saved = {iv.name: self.tokens.get(iv.name) for iv in ivs}
                self.depth += 1
                toks = []
                for k, iv in enumerate(ivs):
                    self.tokens[iv.name] = ("b", self.depth, k)
                    toks.append(iv.extent)
                inner = self.key(body)
                self.depth -= 1
                for name, tok in saved.items():
                    if tok is None:
                        del self.tokens[name]
                    else:
                        self.tokens[name] = tok
                return (type(e).__name__, tuple(toks), inner)
        raise TypeError(e)


def _size(e: Expr, limit: int) -> int:
    n, stack = 0, [e]
    while stack and n < limit:
        x = stack.pop()
        n += 1
        match x:
            case Binary(_, lhs, rhs):
                stack += [lhs, rhs]
            case Neg(arg) | Pow(arg, _):
                stack.append(arg)
            case Call(_, args):
                stack += list(args)
            case Sum(_, body) | Max(_, body):
                stack.append(body)
    return n


def _fits(inner: Dim, outer: Dim) -> bool:
    """A variable ranging over ``inner`` stays inside ``0 .. outer-1``."""
    if inner == outer:
        return True
    return isinstance(inner, int) and isinstance(outer, int) and inner <= outer


def _canon(e: Expr) -> tuple[tuple, list[str]]:
    c = _Canon()
    return c.key(e), c.order


def alpha_key(e: Expr) -> tuple:
    """Equal for expressions equal up to the names of their sum binders (free names kept)."""
    key, order = _canon(e)
    return (key, tuple(order))


def share_statement_bodies(prog: Program) -> Program:
    """``prog`` with subexpressions equal to an earlier statement's body read from it (deep
    expressions are outlined first: the keys are computed recursively)."""
    prog = outline(prog)
    table: dict[tuple, Statement] = {}  # body key -> the first statement with that body
    orders: dict[str, list[str]] = {}  # statement -> its body's free indices in token order
    body_sizes: set[int] = set()  # only a subexpression of one of these sizes can match
    sizes: dict[int, int] = {}
    changed = False

    def rewrite(e: Expr, scope: Mapping[str, Dim]) -> Expr:
        if not table or isinstance(e, Access | Const | Bracket):
            return e
        if sizes.get(id(e), 0) in body_sizes:
            key, order = _canon(e)
            s = table.get(key)
            if s is not None:
                gens = dict(zip(orders[s.name], order, strict=True))  # generator -> variable
                if all(_fits(scope[gens[iv.name]], iv.extent) for iv in s.indices):
                    return Access(s.name, tuple(Affine.var(gens[iv.name]) for iv in s.indices),
                                  e.loc)
        if isinstance(e, Sum | Max):
            inner = dict(scope)
            inner.update({iv.name: iv.extent for iv in e.indices})
            return type(e)(e.indices, rewrite(e.body, inner), e.loc)
        return map_children(e, lambda c: rewrite(c, scope))

    statements: list[Statement] = []
    for s in prog.statements:
        sizes.clear()
        fold(s.body, lambda x, kids: sizes.setdefault(id(x), 1 + sum(kids)))
        body = rewrite(s.body, {iv.name: iv.extent for iv in s.indices})
        if body != s.body:
            changed = True
            s = replace(s, body=body)
        statements.append(s)
        key, order = _canon(s.body)
        # Every generator must be a free index (else a read could not say where to read).
        if set(order) == {iv.name for iv in s.indices} and key not in table:
            table[key] = s
            orders[s.name] = order
            if _size(s.body, _MIN_NODES) >= _MIN_NODES:
                body_sizes.add(_size(s.body, 1 << 62))
    outputs = []
    for o in prog.outputs:
        sizes.clear()
        fold(o, lambda x, kids: sizes.setdefault(id(x), 1 + sum(kids)))
        outputs.append(o if isinstance(o, Access) and not o.indices else rewrite(o, {}))
    outputs = tuple(outputs)
    changed |= outputs != prog.outputs
    if not changed:
        return prog
    return replace(prog, statements=tuple(statements), outputs=outputs)


def drop_unit_factors(prog: Program) -> Program:
    """``prog`` with every ``1 * e`` and ``e * 1`` written ``e`` (equal for every e, inf and nan
    included). Reverse mode seeds the output's adjoint with 1; extraction keeps such a factor
    when the rewrite that drops it ties on cost, and it only makes the program harder to read.
    """
    prog = outline(prog)  # the rewrite below recurses

    def tidy(e: Expr) -> Expr:
        e = map_children(e, tidy)
        match e:
            case Binary("*", Const(1.0), x) | Binary("*", x, Const(1.0)):
                return x
        return e

    statements = tuple(replace(s, body=tidy(s.body)) for s in prog.statements)
    outputs = tuple(tidy(o) for o in prog.outputs)
    if statements == prog.statements and outputs == prog.outputs:
        return prog
    return replace(prog, statements=statements, outputs=outputs)
