"""Pair loops: sums over pairs ``(i, j)`` of one set, each term added where it belongs.

N-body's adjoint ``x_bar[i, k] = Σ_j e[i, j]·(…) + Σ_j' (−e[j', i]·(…))`` reads the pair
value ``e`` (a fused producer: a square root and two divisions per pair) along a row in its
first sum and down a column in its second. As a loop nest over ``(i, k)`` with the sums inside,
the second sum walks ``e`` across rows and every pair value is computed six times (two sums,
three ``k``). A pair loop walks the pairs once, row by row (``_p`` outer, ``_q`` inner), and
adds each sum's term to the output it belongs to: a sum whose pair value is read ``[i, j]``
(a *row* term: output ``i = _p``, ``j = _q``) is summed along ``_q``; one read ``[j, i]`` (a
*column* term: output ``i = _q``, ``j = _p``) adds into a row ``_s[:, _q]``, in order of
``_p``. The output's other indices (``k``: a few constant values) are unrolled, so a fused
producer's value at ``[_p, _q]`` is computed once per pair and shared by every term and ``k``
(:meth:`~.loops.LoopWriter.inline`'s memo). A last pass over the outputs evaluates the body
with each sum read from its row.

The inner loop over ``_q`` carries no dependence from one ``_q`` to the next, so LLVM
vectorizes it (N-body: packed square roots and divisions): a row term's values go to a
scratch row ``_pt[slot, _q]``, added up by a second loop over ``_q`` after it (a sum
accumulated in the inner loop itself would be a dependent chain of adds, which LLVM does not
reassociate: the loop would stay scalar); column rows are stored along ``_q``, and an array
read along ``_q`` with a few entries per point (``x: [N, 3]``) is read from a copy stored
with its first axis last (:func:`_rotations`). Each output still adds its terms in the
interpreter's order (``j = 0, 1, …``): a row term in order of ``_q``, a column term as ``_p``
grows, so the values are those of the loop nest (and of the scalar pair loop, bit for bit),
and no array of pairs is stored. A sum whose body adds row and column terms
(``Σ_j (a[i, j] + b[j, i])``, as the NumPy front end writes N-body's adjoint) is split into
a row sum and a column sum: each adds its terms in that order, the two totals are added once
more (a rounding apart from the interpreter's, as the NumPy backend's sums are; the nan
pattern is the same). A bracket that
holds over the whole ranges (``k >= 0`` for ``k: N``) reads 1. The form applies
(:func:`pair_form`) to a statement whose generator is ``i`` (first) and a few constant indices
(a size symbol there is fixed to its value at the call: :mod:`.specialize`), whose body's sums
(outside other sums) each sum one index over ``i``'s extent, with bodies of plain arithmetic
(no bracket, relation, comparison or nested sum: no strong zero, so a sum is an ordinary
number; no call but single-instruction functions, :data:`CHEAP_CALLS`), no read walking an
array down a column along ``_q``, and with at least one column term (else the loop nest walks
rows already)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ...ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    children,
    free_indices,
    map_children,
    substitute,
)
from ...ir.index import Affine, Dim, IndexVar, dim_str
from ...ir.program import Statement
from ...plan.poly import ONE, ZERO, Poly
from .code import store_at
from .compact import JIT, hoist_constants
from .interior import Index
from .loops import LoopWriter, Unsupported
from .schedule import PairPrice, op_price, work
from .walks import strided

__all__ = ["CHEAP_CALLS", "MAX_REST", "PairForm", "PairTerm", "pair_form", "pair_kernel",
           "pair_price", "row_shapes"]

MAX_REST = 8
"""At most this many values of the output's other indices, unrolled in the pair loop."""

CHEAP_CALLS = frozenset({"sqrt", "abs", "max", "min", "stop_gradient"})
"""Functions a pair term may call: single instructions. A term runs once per pair, sum and
value of the other indices: a libm call there (``exp``, ``tanh``: 10-20 ns each; measured
when the pair loop was all scalar, before its inner loop vectorized: not measured since) costs
10-20x NumPy's vectorized ufunc over the same pairs (measured: ``Σ_j tanh(A[j, i])·x[j, k]``,
N = 1500, 11x slower). A fused producer's calls run once per pair, as NumPy would."""

_P, _Q = "_p", "_q"


@dataclass(frozen=True)
class PairTerm:
    """A sum of the body and its orientation: ``row``: output ``i`` is the outer pair
    variable and the summed index the inner one; otherwise the other way round."""

    sum: Sum
    var: str
    row: bool


@dataclass(frozen=True)
class PairForm:
    """The statement's body, its generator ``i`` and other (constant) indices, its sums."""

    body: Expr
    index: IndexVar
    rest: tuple[IndexVar, ...]
    terms: tuple[PairTerm, ...]

    def rest_values(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(int(iv.extent)) for iv in self.rest)))


def _top_sums(e: Expr) -> list[Sum]:
    if isinstance(e, Sum):
        return [e]
    out: list[Sum] = []
    for c in children(e):
        out += [s for s in _top_sums(c) if s not in out]
    return out


def _plain(e: Expr, relations: frozenset[str]) -> bool:
    """No strong zero can arise (no bracket, sum, comparison or relation read inside) and
    only :data:`CHEAP_CALLS` are called."""
    if isinstance(e, Bracket | Sum | Rel):
        return False
    if isinstance(e, Access) and e.name in relations:
        return False
    if isinstance(e, Call) and e.fn not in CHEAP_CALLS:
        return False
    if type(e).__name__ == "Max":
        return False
    return all(_plain(c, relations) for c in children(e))


def _accesses(e: Expr) -> list[Access]:
    if isinstance(e, Access):
        return [e]
    return [a for c in children(e) for a in _accesses(c)]


def _orientation(body: Expr, i: str, j: str) -> bool:
    """Row (True) unless more reads index ``[…j…, …i…]`` than ``[…i…, …j…]``."""
    votes = 0
    for a in _accesses(body):
        names = [ix.as_var() for ix in a.indices]
        if i in names and j in names:
            votes += 1 if names.index(i) < names.index(j) else -1
    return votes >= 0


def _narrow_last(a: Access, shapes: Mapping[str, tuple[Dim, ...]]) -> bool:
    """The array's last axis is a few constant entries: a walk down its column reads rows."""
    last = shapes[a.name][-1] if shapes.get(a.name) else None
    return isinstance(last, int) and last <= MAX_REST


def _always(p: Pred, ranges: Mapping[str, Dim]) -> bool:
    """``p`` holds at every point of the index ``ranges`` (``0 .. extent-1``), whatever the
    sizes (each at least 1): ``k >= 0``, ``N > k`` for ``k: N``."""
    preds = p.preds if isinstance(p, And) else (p,)
    for q in preds:
        if not isinstance(q, Cmp) or q.op in ("==", "!="):
            return False
        a = q.lhs - q.rhs if q.op in (">", ">=") else q.rhs - q.lhs  # holds: a > 0 (or >= 0)
        low = Affine((), a.sizes, a.const)  # a's least value over the ranges
        for n, c in a.index:
            if n not in ranges:
                return False
            if c < 0:
                low = low + (Affine.of_dim(ranges[n]) - 1).scale(c)
        if any(c < 0 for _, c in low.sizes):
            return False
        at_one = low.const + sum((c for _, c in low.sizes), Fraction(0))
        if not (at_one > 0 if q.op in (">", "<") else at_one >= 0):
            return False
    return True


def _drop_true_brackets(e: Expr, ranges: Mapping[str, Dim]) -> Expr:
    """``e`` with each bracket that holds at every point of ``ranges`` read as 1 (exactly its
    value there: no strong zero can arise)."""
    if isinstance(e, Bracket) and _always(e.pred, ranges):
        return Const(1.0)
    return map_children(e, lambda c: _drop_true_brackets(c, ranges))


def _addends(e: Expr) -> list[Expr]:
    """``e`` as a list of terms whose sum it is (a difference's right side negated)."""
    if isinstance(e, Binary) and e.op in ("+", "-"):
        rhs = _addends(e.rhs)
        return _addends(e.lhs) + (rhs if e.op == "+" else [Neg(t) for t in rhs])
    return [e]


def _split(e: Sum, i: str) -> Expr:
    """``Σ_j (a + b)`` whose terms read the pair value both ways (``[i, j]`` and ``[j, i]``)
    as ``Σ_j a + Σ_j b``, a sum per orientation (each adds its terms in order of ``j``; the
    total is rounded once more, as the NumPy backend's sums are)."""
    j = e.indices[0].name
    rows: list[Expr] = []
    cols: list[Expr] = []
    for t in _addends(e.body):
        (rows if _orientation(t, i, j) else cols).append(t)
    if not rows or not cols:
        return e

    def total(ts: list[Expr]) -> Expr:
        out = ts[0]
        for t in ts[1:]:
            out = Binary("+", out, t)
        return Sum(e.indices, out)

    return Binary("+", total(rows), total(cols))


def pair_form(s: Statement, shapes: Mapping[str, tuple[Dim, ...]],
              relations: frozenset[str]) -> PairForm | None:
    """``s`` as a pair loop (module docstring), or None. A bracket that holds over the whole
    ranges (``k >= 0`` for ``k: N``, as the NumPy front end writes a shifted index) reads 1;
    a sum with terms of both orientations is split into a row sum and a column sum."""
    if not s.indices:
        return None
    i, rest = s.indices[0], s.indices[1:]
    if not all(isinstance(iv.extent, int) for iv in rest):
        return None
    if math.prod(int(iv.extent) for iv in rest) > MAX_REST:
        return None
    names = {iv.name for iv in s.indices}
    ranges = {iv.name: iv.extent for iv in s.indices}

    def prepare(e: Expr) -> Expr:
        if isinstance(e, Sum):
            if len(e.indices) != 1 or e.indices[0].name in ranges:
                return e
            inner = {**ranges, e.indices[0].name: e.indices[0].extent}
            return _split(Sum(e.indices, _drop_true_brackets(e.body, inner), e.loc), i.name)
        return map_children(e, prepare)

    body = prepare(s.body)
    terms: list[PairTerm] = []
    for e in _top_sums(body):
        if len(e.indices) != 1 or e.indices[0].extent != i.extent:
            return None
        j = e.indices[0].name
        if j in names or not free_indices(e) <= names or not _plain(e.body, relations):
            return None
        row = _orientation(e.body, i.name, j)
        inner = j if row else i.name
        if any(strided(a, inner) and not _narrow_last(a, shapes) for a in _accesses(e.body)):
            return None
        terms.append(PairTerm(e, j, row))
    if not terms or all(t.row for t in terms):
        return None
    return PairForm(body, i, rest, tuple(terms))


def _final(form: PairForm) -> Expr:
    """The body with each sum replaced by a read of its row: ``_s<t>[i, rest…]`` for a row
    term, ``_s<t>[rest…, i]`` for a column term (stored along ``i``: :func:`row_shapes`)."""
    i = Affine.var(form.index.name)
    rest = tuple(Affine.var(iv.name) for iv in form.rest)
    table = {t.sum: Access(f"_s{k}", (i, *rest) if t.row else (*rest, i))
             for k, t in enumerate(form.terms)}

    def swap(e: Expr) -> Expr:
        hit = table.get(e) if isinstance(e, Sum) else None
        return hit if hit is not None else map_children(e, swap)

    return swap(form.body)


def _key(a: Access, term: PairTerm, i: str) -> tuple:
    """A read's indices in pair coordinates (the writer's memo key)."""
    p, q = (i, term.var) if term.row else (term.var, i)
    return tuple(ix.rename({p: _P, q: _Q}) for ix in a.indices)


def pair_price(form: PairForm, s: Statement) -> PairPrice:
    """``E²`` pairs times each term's body (and its accumulation) per rest value, plus the
    last pass over the outputs; the evaluations of each array read."""
    n = Poly.product_of_dims((form.index.extent,))
    pairs, outputs = n * n, Poly.product_of_dims(s.shape)
    reps = len(form.rest_values())
    per_pair = _pair_work(form)
    keys: dict[str, set] = {}
    for t in form.terms:
        for a in _accesses(t.sum.body):
            rest_dep = bool(free_indices(a) & {iv.name for iv in form.rest})
            keys.setdefault(a.name, set()).add((_key(a, t, form.index.name), rest_dep))
    final = _final(form)
    reads: dict[str, Poly] = {}
    for name, ks in keys.items():
        reads[name] = sum((pairs * (reps if dep else 1) for _, dep in ks), ZERO)
    for a in _accesses(final):
        if not a.name.startswith("_s"):
            reads[a.name] = reads.get(a.name, ZERO) + outputs
    price = pairs * per_pair + outputs * (work(final) + ONE)
    return PairPrice(price, reads)


def _pair_work(form: PairForm) -> Poly:
    """The work at one pair: each term's body at each value of the other indices (and its
    accumulation), where an expression the bodies repeat at the pair counts once: LLVM
    computes it once (N-body's x_bar: its column term is its row term negated, and the pair
    value is read once for the three coordinates: 25 points a pair so, against 45 term by
    term)."""
    seen: set[Expr] = set()
    total = ZERO
    i = form.index.name
    for t in form.terms:
        p, q = (i, t.var) if t.row else (t.var, i)
        for v in form.rest_values():
            at = {p: Affine.var(_P), q: Affine.var(_Q)}
            at.update({iv.name: Affine.constant(x) for iv, x in zip(form.rest, v, strict=True)})
            total = total + _distinct_work(substitute(t.sum.body, at), seen) + ONE
    return total


def _distinct_work(e: Expr, seen: set[Expr]) -> Poly:
    """:func:`.schedule.work` of ``e``, less its operations already in ``seen`` (added)."""
    if e in seen:
        return ZERO
    seen.add(e)
    if not isinstance(e, Binary | Neg | Pow | Call):
        return work(e)
    total = op_price(e)
    for c in children(e):
        total = total + _distinct_work(c, seen)
    return total


def _read_names(e: Expr, fused: Mapping[str, Statement], seen: set[str]) -> set[str]:
    """The arrays ``e`` reads, through the fused producers it reads (their bodies)."""
    out: set[str] = set()
    for a in _accesses(e):
        if a.name in fused:
            if a.name not in seen:
                seen.add(a.name)
                out |= _read_names(fused[a.name].body, fused, seen)
        else:
            out.add(a.name)
    return out


def _rotations(form: PairForm, w: LoopWriter, reads: Sequence[str]) -> dict[str, str]:
    """The arrays the pair terms read whose first axis is the pairs' and whose others are a
    few constant entries (N-body's ``x: [N, 3]``), each with the name of its copy with the
    first axis last: read along ``_q`` the copy is contiguous (N-body read from ``x`` itself,
    entries 3 apart, ran its vectorized inner loop 3-4x slower than from the copy, no faster
    than the scalar loop)."""
    names: set[str] = set()
    for t in form.terms:
        names |= _read_names(t.sum.body, w.fused, set())
    out: dict[str, str] = {}
    for name in sorted(names & set(reads)):
        dims = w.shapes.get(name, ())
        if (name in w.relations or len(dims) < 2 or dims[0] != form.index.extent
                or not all(isinstance(d, int) for d in dims[1:])
                or math.prod(int(d) for d in dims[1:]) > MAX_REST):
            continue
        out[name] = f"_rot_{name}"
    return out


def _rotate(w: LoopWriter, name: str, copy: str) -> None:
    """Emit ``copy``: ``name`` with its first axis last (its entries, no arithmetic)."""
    dims = w.shapes[name]
    w.emit(f"{copy} = np.empty(({', '.join(map(dim_str, (*dims[1:], dims[0])))},), "
           f"dtype={name}.dtype)")
    loops = [w.fresh("_r") for _ in dims]
    for v, d in zip(loops, dims, strict=True):
        w.emit(f"for {v} in range({dim_str(d)}):")
        w.open()
    w.emit(f"{copy}[{', '.join(loops[1:] + loops[:1])}] = {name}[{', '.join(loops)}]")
    for _ in dims:
        w.close()


def pair_kernel(form: PairForm, s: Statement, w: LoopWriter, reads: Sequence[str],
                sizes: Sequence[str]) -> str:
    """The kernel ``_k_<s>``: the pair loop, then the pass over the outputs. ``w``: a writer
    whose shapes include the rows ``_s<t>`` (:func:`row_shapes`).

    For each ``_p``, the inner loop over ``_q`` computes every pair value and term with no
    dependence between iterations, so LLVM vectorizes it (packed square roots and divisions):
    a column term adds into its row ``_s<t>[rest…, _q]`` (contiguous along ``_q``), a row
    term's values go to a scratch row ``_pt[slot, _q]``. A second loop over ``_q`` then adds
    each scratch row in order of ``_q`` (the interpreter's order, so the values are the
    scalar loop's bit for bit), the slots' chains interleaved. Arrays read along ``_q`` with a
    few constant entries per point are read from a rotated copy (:func:`_rotations`)."""
    n = dim_str(form.index.extent)
    rest_shape = [str(iv.extent) for iv in form.rest]
    w.depth = 1
    for k, t in enumerate(form.terms):
        if t.row:
            w.emit(f"_s{k} = np.empty(({', '.join([n, *rest_shape])},), dtype=F)  # sum {k}: "
                   "a row term")
        else:  # a column term adds into its rows, stored along the output's first index
            w.emit(f"_s{k} = np.zeros(({', '.join([*rest_shape, n])},), dtype=F)  # sum {k}: "
                   "a column term")
    values = form.rest_values()
    rows = [(k, v) for k, t in enumerate(form.terms) if t.row for v in values]
    slots = {kv: x for x, kv in enumerate(rows)}  # each row term's scratch row
    if slots:
        w.emit(f"_pt = np.empty(({len(slots)}, {n}), dtype=F)  # one row's row terms")
    rotated = _rotations(form, w, reads)
    for name, copy in rotated.items():
        _rotate(w, name, copy)
    w.rotated = rotated
    w.emit(f"for {_P} in range({n}):")
    w.open()
    w.emit(f"for {_Q} in range({n}):")
    w.open()
    i = form.index.name
    for k, t in enumerate(form.terms):
        p, q = (i, t.var) if t.row else (t.var, i)
        for v in values:
            env = {p: Index(_P, form.index.extent), q: Index(_Q, form.index.extent)}
            env.update({iv.name: Index(str(x), iv.extent)
                        for iv, x in zip(form.rest, v, strict=True)})
            val, z = w.expr(t.sum.body, env)
            if z is not None:
                raise Unsupported("a pair term that can be a strong zero")
            if t.row:
                w.emit(f"_pt[{slots[k, v]}, {_Q}] = {val}")
            else:
                w.emit(f"_s{k}[{', '.join([*map(str, v), _Q])}] += {val}")
    w.close()
    w.rotated = {}
    accs = {kv: w.fresh(f"_a{kv[0]}_") for kv in slots}
    if slots:
        for acc in accs.values():
            w.emit(f"{acc} = F(0)")
        w.emit(f"for {_Q} in range({n}):  # the row sums, in order of {_Q}")
        w.open()
        for kv, acc in accs.items():
            w.emit(f"{acc} += _pt[{slots[kv]}, {_Q}]")
        w.close()
    for (k, v), acc in accs.items():
        w.emit(f"_s{k}[{', '.join([_P, *map(str, v)])}] = {acc}")
    w.close()
    # the outputs: the body with each sum read from its row
    for iv in s.indices:
        w.emit(f"for {iv.name} in range({dim_str(iv.extent)}):")
        w.open()
    env = {iv.name: Index(iv.name, iv.extent) for iv in s.indices}
    val, _ = w.expr(_final(form), env)
    w.emit(f"_out[{store_at([iv.name for iv in s.indices])}] = {val}")
    args = ", ".join(["_out", *reads, *sizes])
    head = [JIT, f"def _k_{s.name}({args}):",
            f"    # pairs ({i}, j) of {n} x {n}, walked once: each sum's term added to its "
            "output's row"]
    return "\n".join(head + hoist_constants(w.lines))


def row_shapes(form: PairForm) -> dict[str, tuple[Dim, ...]]:
    """The shapes of the rows ``_s<t>`` the kernel accumulates the sums in: a row term's
    ``(i, rest…)``, a column term's ``(rest…, i)`` (added to along ``i`` in the inner loop)."""
    rest = tuple(iv.extent for iv in form.rest)
    return {f"_s{k}": (form.index.extent, *rest) if t.row else (*rest, form.index.extent)
            for k, t in enumerate(form.terms)}
