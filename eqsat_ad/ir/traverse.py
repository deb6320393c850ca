"""Iterative traversals of expressions: no pass depends on Python's recursion limit.

A 5,000-term sum is a left-nested chain 5,000 nodes deep, and an unrolled recurrence nests as
deeply; a recursive pass would overflow the interpreter's stack. ``fold`` (bottom-up values) and
``rebuild`` (bottom-up reconstruction with a scoped top-down context) walk with explicit stacks;
the passes of the IR, AD, the e-graph stages and the printer are written with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expr import Access, Binary, Bracket, Call, Expr, Max, Neg, Pow, Sum, children
from .functions import lookup


def with_children(e: Expr, kids: list[Expr] | tuple[Expr, ...]) -> Expr:
    """``e`` with its direct child expressions replaced by ``kids`` (same order as
    :func:`children`); ``e`` itself when nothing changed."""
    old = children(e)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids, strict=True)):
        return e
    match e:
        case Binary(op, _, _):
            return Binary(op, kids[0], kids[1], e.loc)
        case Neg():
            return Neg(kids[0], e.loc)
        case Pow(_, k):
            return Pow(kids[0], k, e.loc)
        case Call(fn, _):
            return Call(fn, tuple(kids), e.loc)
        case Sum(ivs, _):
            return Sum(ivs, kids[0], e.loc)
        case Max(ivs, _):
            return Max(ivs, kids[0], e.loc)
    return e


def fold[R](e: Expr, f: Callable[[Expr, list[R]], R]) -> R:
    """``f(node, values of its children)`` computed bottom-up over ``e``; a subexpression
    object shared by several parents is folded once."""
    memo: dict[int, R] = {}
    keep: list[Expr] = []  # holds the nodes so that their ids stay unique during the walk
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in memo:
            continue
        kids = children(node)
        if expanded or not kids:
            memo[key] = f(node, [memo[id(k)] for k in kids])
            keep.append(node)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(kids) if id(k) not in memo)
    return memo[id(e)]


class Done:
    """Returned by a ``pre`` hook of :func:`rebuild`: the subtree's final value, not walked."""

    __slots__ = ("value",)

    def __init__(self, value: Expr) -> None:
        self.value = value


def rebuild(
    e: Expr,
    post: Callable[[Expr, Any], Expr] | None = None,
    pre: Callable[[Expr, Any], tuple[Expr, Any] | Done] | None = None,
    ctx: Any = None,
) -> Expr:
    """Rebuild ``e`` bottom-up: each node gets its rebuilt children, then ``post(node, ctx)``.

    ``pre(node, ctx)``, called top-down before a node's children are visited, returns
    ``(node', ctx')`` (walk ``node'``'s children under ``ctx'``; ``post`` then sees ``node'``
    with those children and ``ctx``) or ``Done(value)`` (the subtree's result, not walked).
    """
    out: list[Expr] = []
    # frames: (node, ctx for post, ctx for children, expanded)
    stack: list[tuple[Expr, Any, Any, bool]] = [(e, ctx, ctx, False)]
    while stack:
        node, own, inner, expanded = stack.pop()
        if expanded:
            n = len(children(node))
            kids = out[len(out) - n:] if n else []
            if n:
                del out[len(out) - n:]
            new = with_children(node, kids)
            out.append(post(new, own) if post is not None else new)
            continue
        if pre is not None:
            r = pre(node, own)
            if isinstance(r, Done):
                out.append(r.value)
                continue
            node, inner = r
        kids = children(node)
        stack.append((node, own, inner, True))
        stack.extend((k, inner, inner, False) for k in reversed(kids))
    return out[0]


def height(e: Expr) -> int:
    """Nodes on the longest path from ``e`` to a leaf."""
    best = 0
    deepest: dict[int, int] = {}  # a shared subexpression is walked again only when met deeper
    stack: list[tuple[Expr, int]] = [(e, 1)]
    while stack:
        x, d = stack.pop()
        if deepest.get(id(x), 0) >= d:
            continue
        deepest[id(x)] = d
        if d > best:
            best = d
        for c in children(x):
            stack.append((c, d + 1))
    return best


def has_strong_zero(e: Expr, relations: frozenset[str] = frozenset()) -> bool:
    """``e`` holds a bracket, a data comparison or a read of one of ``relations``: somewhere a
    strong zero where false (docs/semantics.md), which an array stored from it holds as an
    ordinary 0.0."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Bracket) or (isinstance(x, Access) and x.name in relations):
            return True
        if isinstance(x, Call) and (f := lookup(x.fn)) is not None and f.strong:
            return True
        stack.extend(children(x))
    return False
