"""A row sum's terms read back at the points of its row, and statements over the rows alone
computed in the same pass.

Softmax-like gradients read the terms of a row sum again at each point of the row:
``x_bar[i, j] = exp(x[i, j]) · (w[i] / Σ_k exp(x[i, k]))`` (logsumexp, softmax cross-entropy,
the MLP's ``z_bar``). The loop writer hoists the sum before the point loop and, when it is a
whole row (:mod:`.rows`), writes its terms to a row buffer and adds them in NumPy's pairwise
order; without this module the point loop computed ``exp(x[i, j])`` a second time (two exps
per point where NumPy's program computes one, its ``exp(x)`` array read by both). Here the
buffer is kept (one per such sum, :func:`buffer_name`) and the point reads ``_terms[j]``: the
same code computed the same value there, so the result is bit for bit the recomputed one. In
a kernel of one statement over the points, the first such sum's buffer is the output's row
itself (:func:`term_buffer`): each point reads its entry, then overwrites it.

A term is read back (:func:`reused_terms`) when it is the sum's body with the summed index
renamed to the statement's innermost output index, occurs in the statement's body outside
sums, the sum runs over that index's whole extent, and the term is an ordinary number
wherever it is evaluated (no bracket, relation read, data comparison, literal 0 or inner sum:
the buffer holds values, not strong-zero flags).

A statement over the rows alone (``w_bar[i] = log(Σ_j exp(x[i, j]))``, one index fewer than a
loop sibling and over its outer points) that shares a hoisted sum with it runs in the
sibling's kernel, once per row after the row's hoisted sums (:func:`row_sibling`): the sum is
computed once for both (hoisted sums are keyed by their alpha-normal form, :func:`canonical`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, cast

from ...ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Sum,
    accessed_names,
    children,
    free_indices,
    substitute,
)
from ...ir.index import Affine, IndexVar, dim_str
from ...ir.program import Statement
from ...ir.traverse import Done, rebuild
from .scans import statement_scans
from .steps import stepping

if TYPE_CHECKING:
    from .interior import Index
    from .loops import LoopWriter

__all__ = ["Reused", "buffer_name", "canonical", "element", "hoist_key", "priced_body",
           "read_back", "reused_terms", "row_sibling", "shared_sums", "sibling_body",
           "term_buffer", "top_sums"]

# data comparisons: a strong zero where false (as .loops._COMPARISONS)
_COMPARISONS = frozenset({"gt", "ge", "eq", "ne", "ngt", "nge", "gt0"})


class Reused(NamedTuple):
    """A term read back from a row buffer: the sum whose terms the buffer holds, the
    statement's innermost output index the term is evaluated at, and the buffer's number
    among the kernel's reused sums."""

    sum: Sum
    at: str
    number: int


def canonical(e: Sum) -> Sum:
    """``e`` with its summed indices renamed ``_s0, _s1, ...``: alpha-equivalent sums (two
    statements' ``Σ_k exp(x[i, k])`` and ``Σ_j exp(x[i, j])``) are equal."""
    names = {iv.name: f"_s{k}" for k, iv in enumerate(e.indices)}
    body = substitute(e.body, {old: Affine.var(new) for old, new in names.items()})
    return Sum(tuple(IndexVar(names[iv.name], iv.extent) for iv in e.indices), body)


def hoist_key(e: Sum, env: Mapping[str, Index]) -> tuple:
    """A hoisted sum's key (the loop writer's ``hoisted``): its alpha-normal form (two
    statements' ``Σ_k f(i, k)`` and ``Σ_j f(i, j)`` are one sum) and the codes of its free
    indices."""
    return canonical(e), tuple(env[n].code for n in sorted(free_indices(e)))


def top_sums(e: Expr) -> list[Sum]:
    """The sums of ``e`` outside other sums, each once."""
    out: list[Sum] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Sum):
            if x not in out:
                out.append(x)
            continue
        stack.extend(reversed(children(x)))
    return out


def _ordinary(e: Expr, relations: frozenset[str]) -> bool:
    """``e`` is never a strong zero and has work worth reading back (not a plain read)."""
    if isinstance(e, Access | Const):
        return False
    stack = [e]
    while stack:
        x = stack.pop()
        if (isinstance(x, Bracket | Sum | Max) or (isinstance(x, Const) and x.value == 0)
                or (isinstance(x, Access) and x.name in relations)
                or (isinstance(x, Call) and x.fn in _COMPARISONS)):
            return False
        stack.extend(children(x))
    return True


def _occurs(term: Expr, e: Expr) -> bool:
    """``term`` is a subexpression of ``e`` outside its sums."""
    stack = [e]
    while stack:
        x = stack.pop()
        if x == term:
            return True
        if not isinstance(x, Sum | Max):
            stack.extend(children(x))
    return False


def reused_terms(s: Statement, relations: frozenset[str], kept: list[Sum] | None = None
                 ) -> dict[Expr, Reused]:
    """The terms of ``s``'s row sums that its body reads again at its points (module
    docstring), by the term as written at the point. ``kept``: the reused sums of the
    kernel's other statements (alpha-normal), which number the buffers; extended."""
    if len(s.indices) < 2:
        return {}
    last = s.indices[-1]
    out: dict[Expr, Reused] = {}
    kept = [] if kept is None else kept
    for e in top_sums(s.body):
        if (len(e.indices) != 1 or e.indices[0].extent != last.extent
                or last.name in free_indices(e) or not free_indices(e)
                or not _ordinary(e.body, relations)):
            continue
        term = substitute(e.body, {e.indices[0].name: Affine.var(last.name)})
        if term in out or not _occurs(term, s.body):
            continue
        key = canonical(e)
        if key not in kept:
            kept.append(key)
        out[term] = Reused(e, last.name, kept.index(key))
    return out


def buffer_name(r: Reused) -> str:
    """The row buffer of a reused sum's terms (one per reused sum of a kernel: shared by its
    row versions, which run one after another)."""
    return f"_terms_{dim_str(r.sum.indices[0].extent)}_{r.number}"


def element(buf: str, index: str) -> str:
    """Code of entry ``index`` of the row buffer ``buf``: a buffer of its own (``_terms_N_0``)
    or the output's row (``_out[i]``: entry ``_out[i, j]``)."""
    return f"{buf[:-1]}, {index}]" if buf.endswith("]") else f"{buf}[{index}]"


def term_buffer(w: LoopWriter, key: tuple) -> str | None:
    """The row buffer of the hoisted sum ``key`` (:func:`hoist_key`) whose terms the points
    read back: the output's row for the statement's first reused sum where the kernel
    allows it (``w.out_row``: the point at ``j`` reads entry ``j`` and then writes it, so the
    exps are stored while they are computed and the scaling runs in cache; 3.1 against 4.1 ms
    for logsumexp's kernel at 1024 x 2048), else one of its own; None where no point reads
    them back, or the buffer already holds the same sum at other free-index codes."""
    kept = next((r for r in w.terms.values() if canonical(r.sum) == key[0]), None)
    if kept is None:
        return None
    buf = w.out_row if kept.number == 0 and w.out_row else buffer_name(kept)
    return buf if w.hoisted.setdefault(("buffer", buf), key[1]) == key[1] else None


def _term(terms: Mapping[Expr, Reused], e: Expr) -> Reused | None:
    """``terms``' entry for ``e`` (compared, not hashed: hashing each node of a deep body as
    the writer walks it would cost its size each time; a comparison stops at the first
    difference)."""
    if not isinstance(e, Binary | Neg | Pow | Call):
        return None
    return next((r for t, r in terms.items() if t == e), None)


def read_back(w: LoopWriter, e: Expr, env: Mapping[str, Index]) -> tuple[str, None] | None:
    """``e``'s value read from its sum's row buffer at this point, the sum hoisted first;
    None where it is not a reused term here (then it is computed as written)."""
    r = _term(w.terms, e)
    if r is None or w.sum_depth != 0 or w.hoist_var is None:
        return None
    at = env.get(r.at)
    if at is None or at.code != w.hoist_var:
        return None
    w.hoist(r.sum, env)
    buf = w.hoisted.get(("terms", *hoist_key(r.sum, env)))
    if buf is None:  # (added as a chain: no buffer of its terms)
        return None
    return element(buf, f"np.uintp({at.code})"), None


def priced_body(s: Statement, relations: frozenset[str]) -> Expr:
    """``s``'s body with each reused term outside sums a read (of ``_terms``): what its loop
    nest evaluates at a point (the schedule's price)."""
    terms = reused_terms(s, relations)
    if not terms:
        return s.body

    def pre(x: Expr, ctx: None) -> tuple[Expr, None] | Done:
        if isinstance(x, Sum | Max):
            return Done(x)
        return Done(Access("_terms")) if _term(terms, x) is not None else (x, ctx)

    return rebuild(s.body, pre=pre)


def sibling_body(s: Statement, t: Statement) -> Expr:
    """``t``'s body with the sums it shares with ``s`` reads (of ``_hoisted``): what it
    evaluates per row in ``s``'s kernel (the schedule's price)."""
    names = {iv.name: Affine.var(ov.name)
             for iv, ov in zip(t.indices, s.indices, strict=False)}
    theirs = {canonical(e) for e in top_sums(s.body)}

    def pre(x: Expr, ctx: None) -> tuple[Expr, None] | Done:
        if isinstance(x, Sum):
            shared = canonical(cast(Sum, substitute(x, names))) in theirs
            return Done(Access("_hoisted") if shared else x)
        return x, ctx

    return rebuild(t.body, pre=pre)


def shared_sums(a: Statement, b: Statement) -> bool:
    """``a`` and ``b`` share a sum of their bodies (outside other sums), up to the names of
    the summed indices, once ``b``'s output indices are named as ``a``'s outer ones."""
    names = {iv.name: Affine.var(ov.name)
             for iv, ov in zip(b.indices, a.indices, strict=False)}
    theirs = {canonical(e) for e in top_sums(substitute(b.body, names))}
    return any(canonical(e) in theirs for e in top_sums(a.body))


def row_sibling(s: Statement, t: Statement, relations: frozenset[str]) -> bool:
    """``t`` runs in ``s``'s kernel once per row (module docstring): over ``s``'s outer points,
    sharing a sum with ``s`` (whose hoisted value it reads), neither reading the other, ``s``
    with no running sum and not stepped (:mod:`.steps`)."""
    return (len(s.indices) >= 2 and len(t.indices) == len(s.indices) - 1
            and t.shape == s.shape[:-1] and s.name not in accessed_names(t.body)
            and t.name not in accessed_names(s.body)
            and not statement_scans(s.body, s.indices[-1].name)
            and stepping([s], relations) is None and shared_sums(s, t))
