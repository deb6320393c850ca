"""Like terms merged in linear time: a canonicalizing pass over flattened sums.

Binary associativity and commutativity rules merge k copies of a term with about k²/2 e-nodes
(every regrouping of the chain is a new node). This pass merges them before the e-graph sees
them, and again after extraction: every chain ``t1 ± t2 ± ...`` is flattened, each term split
into a constant coefficient and the rest, and terms whose rests are equal (alpha-equivalent:
sums compared with canonical binder names) are added up, one pass over the chain.
``Sum[i](A[i, i]) + ... + Sum[i](A[i, i])`` (k times) becomes ``k * Sum[i](A[i, i])``.

Soundness: ``a·e + b·e = (a + b)·e`` for finite ``e``; where ``e`` is infinite or nan it holds
only when ``a`` and ``b`` have the same sign (``2e - e`` is nan at ``e = inf``), so positive
and negative copies are merged separately, as the e-graph's like-term rules do. A term
``0 · e`` is 0 (strong zero) and is dropped. Scalar statements that are a constant or a copy
of a scalar (``t_bar = 1``, ``t_bar = ybar``: what reverse mode writes for each use) are read
through first, so the copies of one adjoint term become equal.
"""

from __future__ import annotations

from dataclasses import replace

from .expr import Access, Binary, Const, Expr, Neg, accessed_names, children
from .program import Program, Statement
from .traverse import height, rebuild, with_children

# terms at most this high are compared up to renaming of their sum binders (deeper ones as
# written: the canonical key is computed recursively)
ALPHA_HEIGHT = 64


def _chain(e: Expr) -> list[tuple[float, Expr]]:
    """The signed terms of the ``+``/``-`` chain rooted at ``e``, left to right."""
    out: list[tuple[float, Expr]] = []
    stack: list[tuple[float, Expr]] = [(1.0, e)]
    while stack:
        sign, x = stack.pop()
        if isinstance(x, Binary) and x.op in "+-":
            stack.append((sign if x.op == "+" else -sign, x.rhs))
            stack.append((sign, x.lhs))
        else:
            out.append((sign, x))
    return out


def _split(sign: float, t: Expr) -> tuple[float, Expr | None]:
    """``t`` as (constant coefficient, rest); rest None for a constant term."""
    c = sign
    while True:
        if isinstance(t, Const):
            return c * t.value, None
        if isinstance(t, Neg):
            c, t = -c, t.arg
        elif isinstance(t, Binary) and t.op == "*" and isinstance(t.lhs, Const):
            c, t = c * t.lhs.value, t.rhs
        elif isinstance(t, Binary) and t.op == "*" and isinstance(t.rhs, Const):
            c, t = c * t.rhs.value, t.lhs
        else:
            return c, t


def _key(t: Expr) -> object:
    if height(t) <= ALPHA_HEIGHT:
        from ..egraph.share import alpha_key

        return alpha_key(t)
    return t


def _term(c: float, rest: Expr) -> tuple[str, Expr]:
    """The chain operator and operand that add ``c * rest``."""
    op = "+" if c > 0 else "-"
    a = abs(c)
    return op, rest if a == 1.0 else Binary("*", Const(a), rest)


def merge_chain(terms: list[tuple[float, Expr]]) -> Expr | None:
    """The merged chain of ``terms`` (sign, term); None when nothing merges."""
    const = 0.0
    n_const = 0
    groups: dict[tuple[object, bool], list] = {}  # (key, positive) -> [coefficient, rest]
    order: list[tuple[object, bool]] = []
    dropped = False
    for sign, t in terms:
        c, rest = _split(sign, t)
        if rest is None:
            const += c
            n_const += 1
            continue
        if c == 0.0:
            dropped = True
            continue
        k = (_key(rest), c > 0)
        if k in groups:
            groups[k][0] += c
        else:
            groups[k] = [c, rest]
            order.append(k)
    if len(order) + n_const == len(terms) and n_const <= 1 and not dropped:
        return None
    parts: list[tuple[str, Expr]] = [_term(*groups[k]) for k in order]
    if const != 0.0 or not parts:
        parts.append(("+" if const >= 0 else "-", Const(abs(const))))
    op, acc = parts[0]
    if op == "-":
        acc = Neg(acc)
    for op, t in parts[1:]:
        acc = Binary(op, acc, t)
    return acc


def merge_like_terms_expr(e: Expr) -> Expr:
    """``e`` with the like terms of every chain merged (iterative: any depth)."""
    out: list[Expr] = []
    # frames: ("visit", node) | ("node", node) | ("chain", (original, signed terms))
    stack: list[tuple[str, object]] = [("visit", e)]
    while stack:
        kind, item = stack.pop()
        if kind == "visit":
            x: Expr = item  # type: ignore[assignment]
            if isinstance(x, Binary) and x.op in "+-":
                terms = _chain(x)
                stack.append(("chain", (x, [s for s, _ in terms])))
                stack.extend(("visit", t) for _, t in reversed(terms))
            elif children(x):
                stack.append(("node", x))
                stack.extend(("visit", c) for c in reversed(children(x)))
            else:
                out.append(x)
        elif kind == "node":
            x = item  # type: ignore[assignment]
            n = len(children(x))
            kids = out[len(out) - n:]
            del out[len(out) - n:]
            out.append(with_children(x, kids))
        else:
            original, signs = item  # type: ignore[misc]
            n = len(signs)
            kids = out[len(out) - n:]
            del out[len(out) - n:]
            merged = merge_chain(list(zip(signs, kids, strict=True)))
            if merged is None:
                merged = _rejoin(original, kids)
            out.append(merged)
    return out[0]


def _rejoin(original: Expr, kids: list[Expr]) -> Expr:
    """The chain ``original`` with its terms replaced by ``kids`` (same operators)."""
    old = [t for _, t in _chain(original)]
    if all(a is b for a, b in zip(old, kids, strict=True)):
        return original
    it = iter(kids)
    mapping = {id(t): next(it) for t in old}

    def pre(x: Expr, _ctx: object):
        from .traverse import Done

        if id(x) in mapping:
            return Done(mapping[id(x)])
        return x, None

    return rebuild(original, pre=pre)


def _copies(prog: Program) -> dict[str, Expr]:
    """Scalar statements that are a constant or a read of a scalar, resolved transitively."""
    out: dict[str, Expr] = {}
    for s in prog.statements:
        if s.indices:
            continue
        b = s.body
        if isinstance(b, Access) and not b.indices:
            out[s.name] = out.get(b.name, b)
        elif isinstance(b, Const):
            out[s.name] = b
    return out


def merge_like_terms(prog: Program) -> Program:
    """``prog`` with scalar copies read through and like terms merged in every expression."""
    copies = _copies(prog)

    def read_through(x: Expr, _ctx: object) -> Expr:
        if isinstance(x, Access) and not x.indices and x.name in copies:
            return copies[x.name]
        return x

    def tidy(e: Expr) -> Expr:
        if copies:
            e = rebuild(e, read_through)
        return merge_like_terms_expr(e)

    statements: list[Statement] = []
    for s in prog.statements:
        body = tidy(s.body)
        statements.append(s if body == s.body else replace(s, body=body))
    outputs = tuple(
        o if isinstance(o, Access) and not o.indices else tidy(o) for o in prog.outputs
    )
    if tuple(statements) == prog.statements and outputs == prog.outputs:
        return prog
    # the copies read through are dead now (as is anything only they read)
    needed: set[str] = set()
    for o in outputs:
        needed |= accessed_names(o)
    kept: list[Statement] = []
    for s in reversed(statements):
        if s.name in needed:
            kept.append(s)
            needed |= s.reads()
    return replace(prog, statements=tuple(reversed(kept)), outputs=outputs)
