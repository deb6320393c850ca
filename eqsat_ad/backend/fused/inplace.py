"""A loop nest written over the array it reads: an elementwise statement whose input dies in it.

``t_bar[i, j] = h_bar[i, j]·(1 - h[i, j]²)`` reads ``h_bar`` at its own point only, and
nothing reads ``h_bar`` after it: its kernel may store each point over ``h_bar``'s, as NumPy's
``np.multiply(a, b, out=a)`` does. One array fewer in the caches and in memory, and no fresh
array's lines fetched for ownership before they are written (mlp_numpy's ``t_bar``: 0.141 ->
0.074 ms, experiments/results/numba.md).

The kernel reads the input through its output argument (:func:`read_through_output`): with
two arguments that are the same array, LLVM's runtime alias check takes the scalar loop (the
tanh kernel of mlp_numpy ran 6x slower so). The run function binds the statement's name to the
input's array (``t_bar = h_bar``); :func:`.storage.shared_buffers` follows that alias, so the
array is lent to no other intermediate while either name is read.

Taken (:func:`in_place`) only where nothing could read a point after it is stored: one
statement in its kernel, no sum or max in its body (a row sum's terms may be kept in the
output's row before its points, :mod:`.reuse`), every read of the input at the statement's own
indices in order, no producer fused into any kernel reading the input, and the input a kept
intermediate (``_tmp``, never returned nor seen by NumPy code that may view it) of the same
shape that no later statement reads; and the statement itself such an intermediate (an output
written over a kept array would be handed to the caller and overwritten by the next call).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

from ...ir.expr import Access, Expr, accessed_names, children, has_reduction
from ...ir.index import Affine
from ...ir.program import Statement

__all__ = ["in_place", "point_reads", "read_through_output"]


def point_reads(s: Statement) -> frozenset[str]:
    """The arrays ``s``'s body reads only at its own point, indices in order (none when the
    body has a sum or a max)."""
    point = tuple(Affine.var(iv.name) for iv in s.indices)
    if not point or has_reduction(s.body):
        return frozenset()
    only: dict[str, bool] = {}

    def visit(e: Expr) -> None:
        if isinstance(e, Access):
            only[e.name] = only.get(e.name, True) and e.indices == point
        for c in children(e):
            visit(c)

    visit(s.body)
    return frozenset(n for n, ok in only.items() if ok)


def in_place(group: Sequence[Statement], placement: str, statements: Sequence[Statement],
             fused: Mapping[str, Statement], reads_of: Callable[[Statement], list[str]],
             run: Sequence[str], shapes: Mapping[str, tuple], visible: Collection[str],
             code: str, reads: list[str]) -> tuple[str, list[str], str | None]:
    """The kernel ``code`` and its ``reads`` for the loop statement alone in ``group``
    (``placement``: its schedule's) written over the array it reads (module docstring), and
    that array's name; else as they were, and None. ``statements``: the program's, in order;
    ``reads_of``: a statement's reads through fused producers; ``run``: the run function's
    lines so far; ``shapes``: the arrays'; ``visible``: the outputs and the arrays NumPy code
    may return a view of (never written over a kept array: the caller would hold it)."""
    if placement != "loop" or len(group) != 1 or group[0].name in visible:
        return code, reads, None
    s = group[0]
    later = statements[list(statements).index(s) + 1:]
    fused_reads = {n for t in fused.values() for n in accessed_names(t.body)}
    for name in sorted(point_reads(s)):
        kept = re.compile(rf"^    {name} = _tmp\.get\(")
        if (name in fused_reads or shapes.get(name) != s.shape
                or not any(kept.match(line) for line in run)
                or any(name in reads_of(t) for t in later)):
            continue
        got = read_through_output(code, reads, name)
        if got is not None:
            return *got, name
    return code, reads, None


def read_through_output(code: str, reads: Sequence[str], name: str
                        ) -> tuple[str, list[str]] | None:
    """The kernel ``code`` (its output the argument ``_out``) reading array ``name`` through
    ``_out`` instead of an argument of its own, and its reads without ``name``; None where
    the kernel uses ``name`` other than by indexing it."""
    m = re.search(r"^def \w+\((.*)\):$", code, re.M)
    params = m.group(1).split(", ") if m else []
    if not params or params[0] != "_out" or name not in params:
        return None
    assert m is not None
    body = re.sub(rf"\b{name}\[", "_out[", code[m.end():])
    if re.search(rf"\b{name}\b", body):
        return None
    head = code[:m.start(1)] + ", ".join(p for p in params if p != name) + code[m.end(1):m.end()]
    return head + body, [r for r in reads if r != name]
