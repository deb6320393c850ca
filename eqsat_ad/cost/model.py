"""The cost model: what the NumPy backend will execute, priced as a polynomial in the sizes.

A cost counts array elements touched (read by a step's iteration space or written), as a
polynomial in the size symbols (``N``, ``R``, ...). :func:`program_cost` prices a whole program;
the rules below are the contract with the backend (eqsat_ad/backend), which must execute what is
priced here, and with the optimizer (eqsat_ad/egraph), which ranks programs by these prices.

Pricing rules
-------------
Notation: ``|S|`` is the product of the extents of the index set ``S``; ``fi(e)`` the free
indices of ``e``. Every sub-expression is evaluated to an array over ``fi(e)`` (broadcasting
over missing axes, as in the reference interpreter).

1. **Statements.** ``y[I] = body`` splits ``body`` at its top-level ``+``, ``-`` and unary ``-``
   into *terms*. Each term is a product ``c · [p1]···[pm] · f1···fn`` (``c`` a constant,
   ``[pk]`` brackets, ``fk`` other factors, sums included, not entered). Per term:

   * *equality brackets on output indices* (``[i == j]``, ``[i == 0]``, ``[j == 2*k + 1]``) are
     solved for an output index (coefficient ±1 preferred, the later generator first) and
     substituted into the rest: the term is evaluated over the remaining indices only and
     scattered into the output (a diagonal fill, a point write);
   * the *remaining brackets* are *masks* (``[i < j]``, ``[i + 1 < N]``, ``[i >= 1]``,
     relations ``R[i, j]``): the term is added to the masked region only (slices / triangles).
     Region sizes: single-index bounds exactly (``[i + 1 < N]`` → ``N - 1``), one triangle per
     index pair (``[i < j]`` → ``N*(N - 1)/2``), relations and anything else densely;
   * the rest ``c · f1···fn`` is priced as an expression (rule 2..5) over the remaining indices.

   A term with neither kind of bracket is *dense*. The statement costs
   ``|I| · max(1, #dense terms)`` (first dense term written, the others added, or one zero-fill
   when there is none) ``+ Σ region sizes of the other terms`` (their scatter / masked add)
   ``+ Σ work of every term``. So ``Ā[i, j] = [i == j] · e[i]`` costs ``N² + N + work(e)`` and a
   sum of k point terms ``Σ_t [i == c_t]·v_t`` costs ``N + O(k)``: one zero-fill, k point writes.
   A returned expression is priced as a scalar statement; returning a tensor variable is free.

2. **Products and sums (contractions).** A product, or a ``Sum``, is flattened through ``*``,
   unary ``-``, division by a constant, conjunctions (each conjunct its own bracket) and nested
   ``Sum`` s (bound indices renamed apart) into ``c · Σ_J Π operands``. Each operand is evaluated
   to an array over its free indices (rules 3..5; a bracket becomes a dense 0/1 mask over its free
   indices, a relation a boolean mask of the relation's size). The operands are then contracted
   as ``np.einsum`` with the explicit pairwise path of :func:`contraction_path`: first every
   operand is summed over its *private* indices (summed, in no other operand), cost
   ``|operand| + |result|``; then pairs, each step costing ``|indices of both| + |result|``, with
   a result keeping only indices still needed. This hoists factors free of a summed index. The
   pairwise order is the cheapest by :func:`compare` (exhaustive for ≤ 5 operands, greedy above).
   A summed index in no operand multiplies by its extent; a constant ``c ≠ 1`` (or such an
   extent) is folded into the smallest operand or the result: free when that is a scalar (0-d
   arithmetic is not counted), else one scaling of it.

   **2b. As lowered** (``lowered=True``): before the path is chosen, an equality bracket
   factor ``[a == b]`` that involves a summed index is solved for it (coefficient ±1 first,
   then the earliest summed index) and substituted into the other factors, as the backend's
   lowering does: ``Σ_j [j == i] · B[i, j]`` costs the gather ``B[i, i]``, not an ``N²`` mask.
   A statement that only renames a tensor (``y[i, j] = x[i, j]``, not returned) is a view: free.

3. **Accesses.** ``x[i, j]`` (distinct plain indices over the full extent of ``x``) is a view:
   free. Any other access (shifted ``x[i + 1]``, strided ``x[2*i]``, fractional ``x[k/2]``,
   reversed ``x[N - 1 - i]``, diagonal ``A[i, i]``, point ``x[0]``, or an index range that differs
   from the tensor's extent) is a gather into a zero-padded array: ``|fi(access)|`` (at least 1).

4. **Elementwise** ``+ - /``, unary ``-``, ``**``, built-ins: ``|fi(e)|`` each, plus the operands.

5. **Sharing.** Each distinct sub-expression (α-equivalent, same extents) is priced once per
   program, as a DAG: the backend evaluates it once (:func:`subterm_key` names it).

Everything an operation writes is recorded (:func:`materialized_sizes`): statement outputs,
gathers, masks, elementwise results and each einsum step's result, so "no N³ temporary" is a
count. Region counts assume sizes larger than the constants in the brackets (the asymptotic
regime); a constant bracket (``[0 == 1]``) is decided and drops its term when false.

For the backend, the same decisions are public: :func:`statement_terms` (rule 1: the terms,
eliminated indices, masks and regions), :func:`plan_contraction` (rule 2: operands, coefficient
and path for a product or ``Sum``), :func:`contraction_path` (the path alone, NumPy's format) and
:func:`subterm_key` (rule 5). Asymptotic helpers (:func:`degree`, :func:`big_o`,
:func:`compare`) live in :mod:`eqsat_ad.cost.poly` and are re-exported here; costs are computed
as :class:`~eqsat_ad.cost.poly.Poly` (fast) and shown as expanded SymPy polynomials.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any

import sympy

from ..ir.errors import EqsatError, ProgramError
from ..ir.expr import (
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
    all_index_names,
    children,
    free_indices,
    fresh_name,
    mul,
    rename,
    substitute,
    substitute_pred,
)
from ..ir.index import Affine, Dim, IndexVar
from ..ir.printer import print_expr, print_statement
from ..ir.program import Fold, Program, Statement
from .poly import ONE, ZERO, Poly, big_o, compare, degree, leading_terms, poly_max

__all__ = [
    "Contraction",
    "ContractionPath",
    "Materialized",
    "Poly",
    "ProgramCost",
    "StatementCost",
    "Term",
    "big_o",
    "compare",
    "contraction_path",
    "degree",
    "expression_cost",
    "leading_terms",
    "materialized_sizes",
    "plan_contraction",
    "program_cost",
    "statement_cost",
    "statement_terms",
    "subterm_key",
]

Extents = Mapping[str, Dim]
Shapes = Mapping[str, tuple[Dim, ...]]
EXHAUSTIVE_LIMIT = 5  # operands; the number of pairwise orders grows like n!² / 2ⁿ


# ================================================================================================
# Results
# ================================================================================================


@dataclass(frozen=True)
class Materialized:
    """One array the backend writes: its owner statement, what it is, and its element count."""

    statement: str
    what: str
    elements: Poly


@dataclass(frozen=True)
class StatementCost:
    """The price of one statement (or returned expression, ``kind == "output"``)."""

    name: str
    text: str
    poly: Poly
    materialized: tuple[Materialized, ...]
    kind: str = "statement"

    @functools.cached_property
    def cost(self) -> sympy.Expr:
        return self.poly.to_sympy()

    @property
    def writes(self) -> Poly:
        """Elements of the statement's own output."""
        return self.materialized[0].elements if self.materialized else ZERO


@dataclass(frozen=True)
class ProgramCost:
    """Per-statement and total costs of a program (SymPy views computed on demand)."""

    details: tuple[StatementCost, ...]
    sizes: Mapping[str, int] | None = None

    @functools.cached_property
    def total_poly(self) -> Poly:
        out = ZERO
        for d in self.details:
            out = out + d.poly
        return out

    @functools.cached_property
    def total(self) -> sympy.Expr:
        return self.total_poly.to_sympy()

    @functools.cached_property
    def statements(self) -> dict[str, sympy.Expr]:
        """Statement name → expanded SymPy cost polynomial (outputs excluded)."""
        return {d.name: d.cost for d in self.details if d.kind == "statement"}

    @functools.cached_property
    def outputs(self) -> tuple[sympy.Expr, ...]:
        return tuple(d.cost for d in self.details if d.kind == "output")

    @property
    def materialized(self) -> tuple[Materialized, ...]:
        return tuple(m for d in self.details for m in d.materialized)

    def largest_intermediate(self) -> Materialized | None:
        """The largest array written (by :func:`compare`, ties: first), or None."""
        best: Materialized | None = None
        for m in self.materialized:
            if best is None or compare(m.elements, best.elements, self.sizes) > 0:
                best = m
        return best

    def value(self, sizes: Mapping[str, int] | None = None) -> Fraction:
        """The total at concrete sizes (default: the sizes it was priced with)."""
        sizes = self.sizes if sizes is None else sizes
        if sizes is None:
            raise EqsatError("no sizes given to evaluate the cost at")
        return Fraction(self.total_poly.evaluate(sizes))

    def big_o(self) -> str:
        return big_o(self.total_poly)

    def __str__(self) -> str:
        lines = [f"total {self.total}  {self.big_o()}"]
        lines += [f"  {d.name}: {d.cost}  ({big_o(d.poly)})" for d in self.details]
        return "\n".join(lines)


# ================================================================================================
# Contraction paths (shared with the backend)
# ================================================================================================


@dataclass(frozen=True)
class ContractionPath:
    """A pairwise contraction order in NumPy's ``einsum_path`` format.

    ``steps[k]`` lists positions in the current operand list (1 position: a reduction of one
    operand over its private indices; 2: a pairwise contraction); the operands are removed and
    the result appended at the end, as ``np.einsum(..., optimize=path.einsum_path())`` expects.
    ``involved[k]`` / ``results[k]`` are the indices a step touches / keeps, ``step_costs[k]``
    its price. A lone operand with nothing to sum still gets one step ``(0,)`` (free: a view), so
    that NumPy permutes its axes into the output's order (with an empty path it does not).
    """

    operands: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    steps: tuple[tuple[int, ...], ...]
    involved: tuple[tuple[str, ...], ...]
    results: tuple[tuple[str, ...], ...]
    step_costs: tuple[Poly, ...]

    @functools.cached_property
    def cost(self) -> Poly:
        total = ZERO
        for c in self.step_costs:
            total = total + c
        return total

    def einsum_path(self) -> list:
        return ["einsum_path", *self.steps]

    def largest_intermediate(self, extents: Extents) -> Poly:
        return poly_max(_size(r, extents) for r in self.results)


def _size(names: Iterable[str], extents: Extents) -> Poly:
    return Poly.product_of_dims(extents[n] for n in names)


def _sorted(s: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(s))


def contraction_path(
    operands: Sequence[Iterable[str]],
    output: Iterable[str],
    extents: Extents,
    sizes: Mapping[str, int] | None = None,
) -> ContractionPath:
    """The cheapest pairwise order to contract ``operands`` (index sets) into ``output``.

    Every index not in ``output`` is summed. Private indices are summed out of their operand
    first; then pairs are contracted, exhaustively searched for ≤ 5 operands, greedily beyond
    (cheapest next step). Step cost: ``|indices of the step| + |result|``; ties go to the first
    order found, so the result is deterministic. ``sizes`` breaks asymptotic ties.
    """
    ops = [frozenset(o) for o in operands]
    out = frozenset(output)
    for n in out.union(*ops):
        if n not in extents:
            raise EqsatError(f"index {n!r} has no extent")
    if not out <= frozenset().union(*ops):
        missing = sorted(out - frozenset().union(*ops))
        raise EqsatError(f"output indices {missing} occur in no operand")

    steps: list[tuple[int, ...]] = []
    involved: list[tuple[str, ...]] = []
    results: list[tuple[str, ...]] = []
    costs: list[Poly] = []
    current: list[tuple[int, frozenset[str]]] = list(enumerate(ops))
    # 1. Sum private indices out of each operand (this is what hoists factors out of sums).
    for k, o in enumerate(ops):
        others = frozenset().union(*(p for j, p in enumerate(ops) if j != k))
        kept = o & (out | others)
        if kept == o:
            continue
        pos = next(p for p, (ident, _) in enumerate(current) if ident == k)
        del current[pos]
        current.append((-1 - k, kept))
        steps.append((pos,))
        involved.append(_sorted(o))
        results.append(_sorted(kept))
        costs.append(_size(o, extents) + _size(kept, extents))
    # 2. Pairwise contractions, searched on sets, then numbered as NumPy's path format wants.
    state = [s for _, s in current]
    if len(state) > 1:
        size = _SizeCache(extents)
        search = _exhaustive if len(state) <= EXHAUSTIVE_LIMIT else _greedy
        _, pair_steps = search(tuple(state), out, size, sizes)
        for a, b, res in pair_steps:
            i = state.index(a)
            j = next(k for k, s in enumerate(state) if s == b and k != i)
            steps.append((min(i, j), max(i, j)))
            involved.append(_sorted(a | b))
            results.append(_sorted(res))
            costs.append(size(a | b) + size(res))
            for k in sorted((i, j), reverse=True):
                del state[k]
            state.append(res)
    if len(ops) == 1 and not steps:
        steps.append((0,))
        involved.append(_sorted(ops[0]))
        results.append(_sorted(out))
        costs.append(ZERO)
    return ContractionPath(
        tuple(_sorted(o) for o in ops),
        _sorted(out),
        tuple(steps),
        tuple(involved),
        tuple(results),
        tuple(costs),
    )


Ops = tuple[frozenset[str], ...]
_Step = tuple[frozenset[str], frozenset[str], frozenset[str]]  # operand, operand, result


class _SizeCache:
    """``|S|`` per index set, computed once per path search."""

    def __init__(self, extents: Extents) -> None:
        self.extents = extents
        self.cache: dict[frozenset[str], Poly] = {}

    def __call__(self, s: frozenset[str]) -> Poly:
        p = self.cache.get(s)
        if p is None:
            p = self.cache[s] = _size(sorted(s), self.extents)
        return p


def _canonical(st: Ops) -> Ops:
    return tuple(sorted(st, key=_sorted))


def _step(
    st: Ops, i: int, j: int, out: frozenset[str], size: _SizeCache
) -> tuple[Poly, frozenset[str], Ops]:
    rest = st[:i] + st[i + 1 : j] + st[j + 1 :]
    inv = st[i] | st[j]
    res = inv & out.union(*rest)
    return size(inv) + size(res), res, (*rest, res)


def _exhaustive(
    state: Ops, out: frozenset[str], size: _SizeCache, sizes: Mapping[str, int] | None
) -> tuple[Poly, tuple[_Step, ...]]:
    # States are multisets of index sets: memoize on a canonical order.
    memo: dict[Ops, tuple[Poly, tuple[_Step, ...]]] = {}

    def best(st: Ops) -> tuple[Poly, tuple[_Step, ...]]:
        if len(st) == 1:
            return ZERO, ()
        hit = memo.get(st)
        if hit is not None:
            return hit
        found: tuple[Poly, tuple[_Step, ...]] | None = None
        tried: set[tuple[frozenset[str], frozenset[str]]] = set()
        for i, j in combinations(range(len(st)), 2):
            if (st[i], st[j]) in tried:
                continue
            tried.add((st[i], st[j]))
            c, res, nxt = _step(st, i, j, out, size)
            sub_cost, sub_steps = best(_canonical(nxt))
            total = c + sub_cost
            if found is None or compare(total, found[0], sizes) < 0:
                found = (total, ((st[i], st[j], res), *sub_steps))
        assert found is not None
        memo[st] = found
        return found

    return best(_canonical(state))


def _greedy(
    state: Ops, out: frozenset[str], size: _SizeCache, sizes: Mapping[str, int] | None
) -> tuple[Poly, tuple[_Step, ...]]:
    total = ZERO
    steps: list[_Step] = []
    while len(state) > 1:
        choice = None
        for i, j in combinations(range(len(state)), 2):
            c, res, nxt = _step(state, i, j, out, size)
            if choice is None or compare(c, choice[0], sizes) < 0:
                choice = (c, (state[i], state[j], res), nxt)
        assert choice is not None
        total = total + choice[0]
        steps.append(choice[1])
        state = choice[2]
    return total, tuple(steps)


# ================================================================================================
# Flattening products and sums into contractions (shared with the backend)
# ================================================================================================


@dataclass(frozen=True)
class Contraction:
    """``coefficient · Π scale · Σ_summed Π factors``, contracted along ``path``.

    ``factors`` are the operands (bound indices of flattened sums renamed apart, conjunctions
    split into one bracket per conjunct); ``operand_indices[k]`` the free indices of
    ``factors[k]`` (sorted); ``scale`` the extents of summed indices that occur in no factor.
    """

    coefficient: float
    scale: tuple[Dim, ...]
    factors: tuple[Expr, ...]
    summed: tuple[IndexVar, ...]
    output: tuple[str, ...]
    path: ContractionPath

    @property
    def operand_indices(self) -> tuple[tuple[str, ...], ...]:
        return self.path.operands


def _flatten_product(
    e: Expr, avoid: set[str], enter_sums: bool
) -> tuple[float, list[Expr], list[IndexVar]]:
    coeff = 1.0
    factors: list[Expr] = []
    summed: list[IndexVar] = []

    def go(x: Expr) -> None:
        nonlocal coeff
        match x:
            case Binary("*", a, b):
                go(a)
                go(b)
            case Binary("/", a, Const(c)) if c != 0:
                coeff /= c
                go(a)
            case Neg(a):
                coeff = -coeff
                go(a)
            case Const(c):
                coeff *= c
            case Sum(ivs, body) if enter_sums:
                mapping: dict[str, str] = {}
                names = all_index_names(body)
                for iv in ivs:
                    nn = iv.name
                    if nn in avoid:
                        nn = fresh_name(iv.name, avoid | names)
                        mapping[iv.name] = nn
                    avoid.add(nn)
                    summed.append(IndexVar(nn, iv.extent))
                go(rename(body, mapping) if mapping else body)
            case Bracket(And(preds)):
                for p in preds:
                    go(Bracket(p, x.loc))
            case _:
                factors.append(x)

    go(e)
    return coeff, factors, summed


def plan_contraction(
    e: Expr,
    extents: Extents,
    sizes: Mapping[str, int] | None = None,
    *,
    lowered: bool = False,
) -> Contraction:
    """Flatten a product or ``Sum`` ``e`` into a contraction and choose its pairwise path.

    ``extents`` gives the extent of every free index of ``e``. The backend calls this to run the
    same einsum path the cost model priced. ``lowered``: first remove the summed indices that
    equality brackets fix, as the NumPy backend does while lowering (:func:`_eliminate_sums`).
    """
    avoid = set(extents) | set(free_indices(e))
    coeff, factors, summed = _flatten_product(e, avoid, enter_sums=True)
    if lowered:
        factors, summed = _eliminate_sums(factors, summed)
    ext = dict(extents)
    for iv in summed:
        ext[iv.name] = iv.extent
    operands = [free_indices(f) for f in factors]
    used = frozenset().union(*operands)
    out = used - {iv.name for iv in summed}
    _check_bound(out | used, ext, e)
    scale = tuple(iv.extent for iv in summed if iv.name not in used)
    path = contraction_path(operands, out, ext, sizes)
    return Contraction(coeff, scale, tuple(factors), tuple(summed), _sorted(out), path)


def _eliminate_sums(
    factors: list[Expr], summed: list[IndexVar]
) -> tuple[list[Expr], list[IndexVar]]:
    """Remove summed indices fixed by equality brackets, as the backend lowers them.

    ``Σ_j [j == a] · f(j)`` is ``f(a)`` where ``a`` is in range: the bracket is solved for a
    summed index (coefficient ±1 first, then the earliest summed) and substituted into the other
    factors, so the work is over the indices that remain (the range check folds into the reads,
    priced as gathers by rule 3).
    """
    factors, summed = list(factors), list(summed)
    while True:
        best = None
        names = [iv.name for iv in summed]
        for k, f in enumerate(factors):
            if not (isinstance(f, Bracket) and isinstance(f.pred, Cmp) and f.pred.op == "=="):
                continue
            d = f.pred.lhs - f.pred.rhs
            for pos, v in enumerate(names):
                c = d.coeff(v)
                if c != 0:
                    rank = (abs(c) != 1, pos)
                    if best is None or rank < best[0]:
                        best = (rank, k, v, c, d)
        if best is None:
            return factors, summed
        _, k, v, c, d = best
        sol = (d - Affine.var(v).scale(c)).scale(Fraction(-1) / c)
        factors = [substitute(f, {v: sol}) for j, f in enumerate(factors) if j != k]
        summed = [iv for iv in summed if iv.name != v]


def _check_bound(names: Iterable[str], ext: Extents, node: Expr) -> None:
    for n in names:
        if n not in ext:
            raise ProgramError(
                f"index {n!r} in {print_expr(node)!r} is not bound by a generator or Sum",
                getattr(node, "loc", None),
            )


# ================================================================================================
# Statement terms (shared with the backend)
# ================================================================================================


@dataclass(frozen=True)
class Term:
    """One additive term of a statement body, planned as rule 1 of the module docstring.

    The term's value is ``sign · coefficient · Π factors`` evaluated over ``indices`` (the output
    indices left after ``eliminated``: output index → affine expression of the others) and added
    into the output where every mask holds, at the positions the eliminated indices take (only
    where those are integral and in range, e.g. ``out[i, i] += v[i]``, ``out[0] += v``).
    ``region`` counts the elements it is added to (an upper bound when not exact). ``zero``: a
    constant bracket is false, the term vanishes.
    """

    sign: int
    coefficient: float
    eliminated: tuple[tuple[str, Affine], ...]
    masks: tuple[Pred, ...]
    factors: tuple[Expr, ...]
    indices: tuple[IndexVar, ...]
    region: Poly
    zero: bool = False

    @property
    def dense(self) -> bool:
        return not self.eliminated and not self.masks and not self.zero

    def value(self) -> Expr | None:
        """The product ``coefficient · Π factors`` (None when it is just the coefficient)."""
        if not self.factors:
            return None
        out = self.factors[0]
        for f in self.factors[1:]:
            out = mul(out, f)
        if self.coefficient != 1.0:
            out = mul(Const(self.coefficient), out)
        return out


def _index_order(e: Expr) -> list[str] | None:
    if isinstance(e, Access) and e.indices:
        names = [a.as_var() for a in e.indices]
        if all(n is not None for n in names):
            return names  # type: ignore[return-value]
    return None


def _out_of_order(a: list[str], b: list[str]) -> bool:
    shared = set(a) & set(b)
    return [n for n in a if n in shared] != [n for n in b if n in shared]


def _transposed_operands(e: Expr) -> bool:
    """Whether two tensor reads among ``e``'s operands order their shared indices differently."""
    orders = [o for o in map(_index_order, children(e)) if o is not None]
    return any(_out_of_order(a, b) for a, b in combinations(orders, 2))


def _reads_transposed(e: Expr, gens: list[str]) -> bool:
    """Whether a statement term is a tensor read with its indices out of the output's order."""
    order = _index_order(e)
    return order is not None and _out_of_order(order, gens)


def outer_groups(
    factors: Sequence[Any], gens: Sequence[str],
    free: Callable[[Any], set[str]] = lambda f: set(free_indices(f)),
) -> list[tuple[tuple[str, ...], list[Any]]] | None:
    """The factors of a product split into groups of consecutive output indices that share no
    index (``x[i] * y[j]`` → ``[((i,), [x[i]]), ((j,), [y[j]])]``), index-free factors in a
    leading group ``()``; None unless there are at least two groups covering ``gens`` in order.
    ``free``: a factor's free indices (the backend passes its own terms)."""
    groups: list[tuple[set[str], list[Any]]] = []
    scalars: list[Any] = []
    for f in factors:
        fv = free(f)
        if not fv:
            scalars.append(f)
            continue
        group: tuple[set[str], list[Any]] = (set(fv), [f])
        for g in [g for g in groups if g[0] & fv]:
            group[0].update(g[0])
            group[1][:0] = g[1]
            groups.remove(g)
        groups.append(group)
    if any(n not in gens for g in groups for n in g[0]):
        return None
    groups.sort(key=lambda g: min(gens.index(n) for n in g[0]))
    ordered = [tuple(n for n in gens if n in g[0]) for g in groups]
    if len(groups) < 2 or [n for o in ordered for n in o] != list(gens):
        return None
    out = [(o, g[1]) for o, g in zip(ordered, groups, strict=True)]
    return ([((), scalars)] if scalars else []) + out


def _split_terms(body: Expr) -> list[tuple[int, Expr]]:
    out: list[tuple[int, Expr]] = []

    def go(x: Expr, sign: int) -> None:
        match x:
            case Binary("+", a, b):
                go(a, sign)
                go(b, sign)
            case Binary("-", a, b):
                go(a, sign)
                go(b, -sign)
            case Neg(a):
                go(a, -sign)
            case _:
                out.append((sign, x))

    go(body, 1)
    return out


def _solve_equality(p: Cmp, candidates: Sequence[str]) -> tuple[str, Affine] | None:
    """Solve ``lhs == rhs`` for one of ``candidates`` (±1 coefficient preferred, later first)."""
    d = p.lhs - p.rhs
    names = [n for n in reversed(candidates) if d.coeff(n) != 0]
    if not names or not d.free_indices() <= set(candidates):
        return None
    names.sort(key=lambda n: abs(d.coeff(n)) != 1)  # stable: keeps "later first" within ties
    v = names[0]
    c = d.coeff(v)
    rest = d - Affine.var(v).scale(c)
    return v, rest.scale(Fraction(-1) / c)


def _constant_truth(p: Cmp) -> bool | None:
    d = p.lhs - p.rhs
    if not d.is_constant():
        return None
    v = d.const
    return {
        "==": v == 0, "!=": v != 0, "<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0,
    }[p.op]


def statement_terms(stmt: Statement) -> tuple[Term, ...]:
    """The additive terms of ``stmt``'s body, planned as the cost model prices them."""
    return tuple(_plan_term(sign, t, stmt.indices) for sign, t in _split_terms(stmt.body))


def _plan_term(sign: int, t: Expr, ivs: tuple[IndexVar, ...]) -> Term:
    out_names = [iv.name for iv in ivs]
    coeff, factors, _ = _flatten_product(t, set(), enter_sums=False)
    brackets: list[Pred] = []
    rest: list[Expr] = []
    for f in factors:
        if isinstance(f, Bracket) and not (free_indices(f) - set(out_names)):
            brackets.append(f.pred)
        else:
            rest.append(f)
    remaining = list(out_names)
    elim: dict[str, Affine] = {}
    zero = False
    changed = True
    while changed:
        changed = False
        for b in list(brackets):
            if isinstance(b, Cmp):
                truth = _constant_truth(b)
                if truth is not None:
                    brackets.remove(b)
                    zero = zero or not truth
                    changed = True
                    break
            if not (isinstance(b, Cmp) and b.op == "=="):
                continue
            solved = _solve_equality(b, remaining)
            if solved is None:
                continue
            v, val = solved
            m = {v: val}
            brackets.remove(b)
            brackets = [substitute_pred(q, m) for q in brackets]
            rest = [substitute(f, m) for f in rest]
            elim = {k: a.substitute(m) for k, a in elim.items()}
            elim[v] = val
            remaining.remove(v)
            changed = True
            break
    ext = {iv.name: iv.extent for iv in ivs}
    kept = tuple(IndexVar(n, ext[n]) for n in remaining)
    region = ZERO if zero else _region(kept, brackets)
    return Term(
        sign, coeff, tuple(elim.items()), tuple(brackets), tuple(rest), kept, region, zero
    )


# ================================================================================================
# Masked regions
# ================================================================================================


def _asym_cmp(p: Poly, q: Poly) -> int | None:
    """Sign of ``p - q`` for large sizes, when decidable from the coefficients."""
    d = p - q
    if d.is_constant():
        c = d.constant_term()
        return (c > 0) - (c < 0)
    signs = {(c > 0) - (c < 0) for m, c in d.terms.items() if m}
    if signs == {1}:
        return 1
    if signs == {-1}:
        return -1
    return None


def _asym_extreme(polys: list[Poly], pick: int, fallback: Poly) -> Poly:
    """The asymptotically largest (pick=1) or smallest (pick=-1), or ``fallback`` if unclear."""
    best = polys[0]
    for p in polys[1:]:
        s = _asym_cmp(p, best)
        if s is None:
            return fallback
        if s == pick:
            best = p
    return best


def _affine_sizes_poly(a: Affine) -> Poly:
    out = Poly.const(a.const)
    for n, c in a.sizes:
        out = out + Poly.symbol(n) * c
    return out


def _pairs_le(e: Poly, d: int) -> Poly:
    """Pairs ``(i, j)`` in ``[0, E)²`` with ``i - j ≤ d``."""
    if e.is_constant():
        n = int(e.constant_term())
        if d >= n - 1:
            return e * e
        if d <= -n:
            return ZERO
    if d >= 0:
        return e * e - (e - 1 - d) * (e - d) * Fraction(1, 2)
    return (e + d) * (e + d + 1) * Fraction(1, 2)


def _region(ivs: tuple[IndexVar, ...], masks: Sequence[Pred]) -> Poly:
    """Elements of the iteration space ``ivs`` where every mask holds (an upper bound)."""
    ext = {iv.name: Poly.of_dim(iv.extent) for iv in ivs}
    lows: dict[str, list[Poly]] = {n: [ZERO] for n in ext}
    ups: dict[str, list[Poly]] = {n: [ext[n]] for n in ext}
    excluded = dict.fromkeys(ext, 0)
    points: dict[str, Poly] = {}
    pairs: list[tuple[str, str, Poly]] = []
    single: set[str] = set()
    for m in masks:
        if not isinstance(m, Cmp):
            continue  # relations: dense
        d = m.lhs - m.rhs
        names = [n for n, _ in d.index]
        if any(n not in ext for n in names):
            continue
        r = _affine_sizes_poly(Affine((), d.sizes, d.const))
        if len(names) == 1:
            v = names[0]
            a = d.coeff(v)
            single.add(v)
            point = r * (Fraction(-1) / a)  # the value where a*v + r == 0
            inside = _asym_cmp(point, ZERO) in (0, 1) and _asym_cmp(ext[v], point) == 1
            outside = _asym_cmp(point, ZERO) == -1 or _asym_cmp(ext[v], point) in (0, -1)
            if m.op == "==":
                points[v] = ZERO if outside else ONE
                continue
            if m.op == "!=":
                # one value less when the point is surely a valid index, else an upper bound
                excluded[v] += 1 if inside and abs(a) == 1 and d.is_integral() else 0
                continue
            op = m.op if a > 0 else {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[m.op]
            bound = r * (Fraction(-1) / a)  # v op bound
            if op == "<":
                ups[v].append(bound)
            elif op == "<=":
                ups[v].append(bound + 1)
            elif op == ">":
                lows[v].append(bound + 1)
            else:
                lows[v].append(bound)
        elif (
            len(names) == 2
            and m.op != "=="
            and sorted(c for _, c in d.index) == [-1, 1]
            and not d.sizes
            and d.const.denominator == 1
            and ext[names[0]] == ext[names[1]]
        ):
            pos = next(n for n, c in d.index if c == 1)
            neg = next(n for n, c in d.index if c == -1)
            pairs.append((pos, neg, _pair_count(m.op, int(d.const), ext[pos])))
    used: set[str] = set()
    total = ONE
    for pos, neg, count in pairs:
        if {pos, neg} & (used | single):
            continue
        used |= {pos, neg}
        total = total * count
    for n in ext:
        if n in used:
            continue
        if n in points:
            count = points[n]
        else:
            lo = _asym_extreme(lows[n], 1, ZERO)
            hi = _asym_extreme(ups[n], -1, ext[n])
            count = hi - lo - excluded[n]
            if _asym_cmp(count, ZERO) == -1:
                count = ZERO
        total = total * count
    return total


def _pair_count(op: str, c: int, e: Poly) -> Poly:
    """Pairs (p, q) in [0, E)² with ``p - q + c op 0``."""
    if op == "<":
        return _pairs_le(e, -c - 1)
    if op == "<=":
        return _pairs_le(e, -c)
    if op == ">":
        return _pairs_le(e, c - 1)  # q - p < c
    if op == ">=":
        return _pairs_le(e, c)
    # "!=": everything but one diagonal
    return e * e - (e - abs(c)) if c else e * e - e


# ================================================================================================
# Sharing: α-canonical keys
# ================================================================================================


def subterm_key(e: Expr, extents: Extents) -> Hashable:
    """A key equal for α-equivalent sub-expressions over equal extents.

    Bound indices are renamed by position, free ones by first occurrence; the key records the
    extents of the free ones. Two sub-expressions with one key evaluate to the same array (up to
    the names of its axes), so the backend computes each key once.
    """
    free: dict[str, str] = {}
    counter = [0]

    def name_of(n: str, env: Mapping[str, str]) -> str:
        if n in env:
            return env[n]
        if n not in free:
            free[n] = f"_f{len(free)}"
        return free[n]

    def aff(a: Affine, env: Mapping[str, str]) -> Affine:
        return a.rename({n: name_of(n, env) for n, _ in a.index})

    def pred(p: Pred, env: Mapping[str, str]) -> Pred:
        match p:
            case Cmp(op, lhs, rhs):
                return Cmp(op, aff(lhs, env), aff(rhs, env))
            case Rel(name, idx):
                return Rel(name, tuple(aff(a, env) for a in idx))
            case And(preds):
                return And(tuple(pred(q, env) for q in preds))
        raise TypeError(p)

    def go(x: Expr, env: Mapping[str, str]) -> Expr:
        match x:
            case Const(v):
                return Const(v)
            case Access(name, idx):
                return Access(name, tuple(aff(a, env) for a in idx))
            case Bracket(p):
                return Bracket(pred(p, env))
            case Sum(ivs, body):
                inner = dict(env)
                new: list[IndexVar] = []
                for iv in ivs:
                    inner[iv.name] = f"_b{counter[0]}"
                    counter[0] += 1
                    new.append(IndexVar(inner[iv.name], iv.extent))
                return Sum(tuple(new), go(body, inner))
            case Binary(op, a, b):
                return Binary(op, go(a, env), go(b, env))
            case Neg(a):
                return Neg(go(a, env))
            case Pow(a, k):
                return Pow(go(a, env), k)
            case Call(fn, args):
                return Call(fn, tuple(go(a, env) for a in args))
        raise TypeError(x)

    canon = go(e, {})
    return canon, tuple(str(extents.get(n, "?")) for n in free)


# ================================================================================================
# The pricer
# ================================================================================================


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


class _Pricer:
    def __init__(self, shapes: Shapes, sizes: Mapping[str, int] | None,
                 lowered: bool = False) -> None:
        self.shapes = shapes
        self.sizes = sizes
        self.lowered = lowered
        self.seen: set[Hashable] = set()
        self.stmt = ""
        self.log: list[Materialized] = []

    # --- bookkeeping ---------------------------------------------------------------------------
    def write(self, what: str, elements: Poly) -> Poly:
        self.log.append(Materialized(self.stmt, _short(what), elements))
        return elements

    def size(self, names: Iterable[str], ext: Extents, node: Expr) -> Poly:
        names = list(names)
        _check_bound(names, ext, node)
        return _size(names, ext)

    def plain(self, e: Access, ext: Extents) -> bool:
        """A view: distinct bare indices ranging over the tensor's full extents."""
        shape = self.shapes.get(e.name)
        if shape is None:
            raise ProgramError(f"unknown name {e.name!r}", e.loc)
        if len(shape) != len(e.indices):
            raise ProgramError(
                f"{e.name!r} has {len(shape)} indices but is accessed with {len(e.indices)}",
                e.loc,
            )
        names = [a.as_var() for a in e.indices]
        if None in names or len(set(names)) != len(names):
            return False
        _check_bound(names, ext, e)  # type: ignore[arg-type]
        return all(ext[n] == d for n, d in zip(names, shape, strict=True))  # type: ignore[index]

    # --- expressions ---------------------------------------------------------------------------
    def expr(self, e: Expr, ext: Extents) -> Poly:
        if isinstance(e, Const):
            return ZERO
        if isinstance(e, Access) and self.plain(e, ext):
            return ZERO
        key = subterm_key(e, ext)
        if key in self.seen:
            return ZERO
        cost = self._expr(e, ext)
        self.seen.add(key)
        return cost

    def _expr(self, e: Expr, ext: Extents) -> Poly:
        fi = free_indices(e)
        match e:
            case Access():
                return self.write(f"gather {print_expr(e)}", self.size(fi, ext, e))
            case Bracket():
                return self.write(f"mask {print_expr(e)}", self.size(fi, ext, e))
            case Binary("*") | Sum():
                return self.contraction(e, ext)
            case Binary("/", _, Const(c)) if c != 0:
                return self.contraction(e, ext)
        work = ZERO
        for c in children(e):
            work = work + self.expr(c, ext)
        size = self.size(fi, ext, e)
        if _transposed_operands(e):
            # ``A[i, j] + A[j, i]`` streams one operand against its memory layout: priced as a
            # second pass (measured 4x a copy for N = 2000), so two GEMVs beat (A + Aᵀ) x.
            work = work + size
        return work + self.write(f"elementwise {print_expr(e)}", size)

    def contraction(self, e: Expr, ext: Extents) -> Poly:
        con = plan_contraction(e, ext, self.sizes, lowered=self.lowered)
        inner = dict(ext)
        for iv in con.summed:
            inner[iv.name] = iv.extent
        cost = ZERO
        for f in con.factors:
            cost = cost + self.expr(f, inner)
        path = con.path
        for inv, res, step in zip(path.involved, path.results, path.step_costs, strict=True):
            if not step.is_zero():
                self.write(f"einsum {''.join(inv)}->{''.join(res)}", _size(res, inner))
                cost = cost + step
        out_size = _size(con.output, inner)
        if not con.factors:
            cost = cost + self.write(f"constant {print_expr(e)}", out_size)
        elif con.coefficient != 1.0 or con.scale:
            # Fold the constant into the smallest array it can scale; 0-d arithmetic is free.
            smallest = poly_max([_size(o, inner) for o in path.operands] + [out_size], self.sizes,
                                pick=-1)
            if smallest != ONE:
                cost = cost + self.write("scale", smallest)
        return cost

    # --- statements ----------------------------------------------------------------------------
    def statement(
        self, name: str, ivs: tuple[IndexVar, ...], body: Expr, text: str, kind: str,
        returned: bool = True, structured: bool = False,
    ) -> StatementCost:
        self.stmt = name
        self.log = []
        ext = {iv.name: iv.extent for iv in ivs}
        out_size = _size(ext, ext)
        if self.lowered and not returned and self.alias(ivs, body, ext):
            # The backend binds the name to a view of the tensor read: nothing is written.
            return StatementCost(name, text, ZERO, (), kind)
        if structured and ivs:
            outer = self.outer(name, ivs, body, text, kind)
            if outer is not None:
                return outer
        work = ZERO
        scatter = ZERO
        dense = 0
        for sign, t in _split_terms(body):
            term = _plan_term(sign, t, ivs)
            if term.zero:
                continue
            if term.dense:
                dense += 1
            else:
                scatter = scatter + term.region
            value = term.value()
            if value is not None:
                work = work + self.expr(value, {iv.name: iv.extent for iv in term.indices})
                if term.dense and _reads_transposed(value, [iv.name for iv in ivs]):
                    work = work + out_size  # copied against its layout (see _transposed_operands)
        if structured and ivs and not dense:
            # Returned as a Diagonal / Sparse: only the scattered points are stored.
            log = [Materialized(name, "output", scatter), *self.log]
            return StatementCost(name, text, scatter + work, tuple(log), kind)
        cost = out_size * max(1, dense) + scatter + work
        log = [Materialized(name, "output", out_size), *self.log]
        return StatementCost(name, text, cost, tuple(log), kind)

    def outer(self, name: str, ivs: tuple[IndexVar, ...], body: Expr, text: str,
              kind: str) -> StatementCost | None:
        """``y[I, J] = u(I) * v(J)`` returned as an Outer: each factor priced over its own
        indices, the stored output the factors' sizes (None when the body is not such a product)."""
        terms = [_plan_term(sign, t, ivs) for sign, t in _split_terms(body)]
        terms = [t for t in terms if not t.zero]
        if len(terms) != 1 or not terms[0].dense:
            return None
        groups = outer_groups(terms[0].factors, [iv.name for iv in ivs])
        if groups is None:
            return None
        ext = {iv.name: iv.extent for iv in ivs}
        work, stored = ZERO, ZERO
        for names, factors in groups:
            sub = {n: ext[n] for n in names}
            product = factors[0]
            for f in factors[1:]:
                product = mul(product, f)
            work = work + self.expr(product, sub) if names else work + self.expr(product, {})
            if names:
                stored = stored + _size(sub, sub)
        log = [Materialized(name, "output", stored), *self.log]
        return StatementCost(name, text, stored + work, tuple(log), kind)

    def alias(self, ivs: tuple[IndexVar, ...], body: Expr, ext: Extents) -> bool:
        """``y[i, j] = x[i, j]`` (maybe ``1 * ...``): a plain view, in the generators' order."""
        terms = _split_terms(body)
        if not ivs or len(terms) != 1 or terms[0][0] != 1:
            return False
        term = _plan_term(1, terms[0][1], ivs)
        e = term.value()
        return (
            term.dense and term.coefficient == 1.0 and isinstance(e, Access)
            and self.plain(e, ext) and [a.as_var() for a in e.indices] == [iv.name for iv in ivs]
        )

    def output(self, k: int, n: int, e: Expr, prog: Program) -> StatementCost:
        name = "return" if n == 1 else f"return[{k}]"
        text = f"return {print_expr(e)}"
        if isinstance(e, Access) and not e.indices and self.shapes.get(e.name, ()) != ():
            return StatementCost(name, text, ZERO, (), "output")
        return self.statement(name, (), e, text, "output")


def _shapes(prog: Program) -> dict[str, tuple[Dim, ...]]:
    shapes: dict[str, tuple[Dim, ...]] = {p.name: p.shape for p in prog.params}
    for s in prog.statements:
        if isinstance(s, Fold):
            shapes.update((n, s.result_shape(n)) for n in s.names)
        else:
            shapes[s.name] = s.shape
    return shapes


def fold_cost(f: Fold, sizes: Mapping[str, int] | None, lowered: bool) -> StatementCost:
    """A rolled loop: T times its body (priced once), plus the stacks it writes."""
    from ..ir.printer import print_fold

    trip = Poly.of_dim(f.trip)
    body = program_cost(f.body, sizes, lowered=lowered)
    stored = tuple(Materialized(n, "output", Poly.product_of_dims(f.result_shape(n)))
                   for n in f.names)
    work = body.total_poly * trip
    for m in stored:
        work = work + m.elements
    return StatementCost(f.names[0], print_fold(f), work, stored, "statement")


def normalize_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    """``sizes`` as a plain ``dict[str, int]`` (NumPy integers accepted), or a clear error."""
    if not isinstance(sizes, Mapping):
        raise EqsatError(f"sizes must map size names to integers, got {type(sizes).__name__}")
    out: dict[str, int] = {}
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise EqsatError(f"size {k!r} must be a non-negative integer, got {v!r}")
        out[str(k)] = int(v)
    return out


def _check_sizes(prog: Program, sizes: Mapping[str, int] | None) -> dict[str, int] | None:
    if sizes is None:
        return None
    out = normalize_sizes(sizes)
    missing = [n for n in prog.size_names() if n not in out]
    if missing:
        raise EqsatError(f"no value given for the size(s) {', '.join(missing)}")
    return out


def _check_program(prog: Program) -> None:
    if not isinstance(prog, Program):
        raise EqsatError(f"expected a Program, got {type(prog).__name__}")


def expression_cost(
    e: Expr,
    extents: Extents,
    shapes: Shapes,
    sizes: Mapping[str, int] | None = None,
) -> Poly:
    """The work of evaluating ``e`` (free indices ranging over ``extents``) to an array.

    ``shapes`` gives the shape of every tensor ``e`` reads. For pricing candidate sub-terms in
    isolation (no sharing with the rest of a program).
    """
    return _Pricer(shapes, sizes).expr(e, extents)


def statement_cost(
    stmt: Statement, shapes: Shapes, sizes: Mapping[str, int] | None = None
) -> StatementCost:
    """The price of one statement on its own (``shapes``: the tensors it reads)."""
    return _Pricer(shapes, sizes).statement(
        stmt.name, stmt.indices, stmt.body, print_statement(stmt), "statement"
    )


def program_cost(
    prog: Program, sizes: Mapping[str, int] | None = None, *, lowered: bool = False,
    structured: bool = False,
) -> ProgramCost:
    """Price ``prog`` by the rules of this module's docstring.

    ``sizes`` (size name → value) breaks asymptotic ties between contraction orders and lets
    :meth:`ProgramCost.value` evaluate the total. Statements are priced in program order, then
    the returned expressions; a sub-expression already priced earlier costs nothing again.

    ``lowered=False`` prices the program as written (an equality bracket inside a sum is a dense
    mask: what the optimizer's sum elimination removes). ``lowered=True`` prices what the NumPy
    backend executes, which solves such brackets itself while lowering (rule 2b): the cost
    report uses it, so its predicted speed-ups are the ones the backend can measure.
    ``structured=True`` (with ``lowered``) prices outputs as ``structured=True`` compiles them: a
    returned statement read by no other, all of whose terms are scatters (``[i == j] * e``, point
    brackets), stores its points only, with no dense fill; one that is an outer product of
    factors over disjoint indices (``x[i] * y[j]``) stores and computes the factors only.
    """
    _check_program(prog)
    sizes = _check_sizes(prog, sizes)
    pricer = _Pricer(_shapes(prog), sizes, lowered)
    returned = {o.name for o in prog.outputs if isinstance(o, Access) and not o.indices}
    sparse_ok = prog.unread_outputs() if structured and lowered else frozenset()
    details = [fold_cost(s, sizes, lowered) if isinstance(s, Fold) else
               pricer.statement(s.name, s.indices, s.body, print_statement(s), "statement",
                                s.name in returned, s.name in sparse_ok)
               for s in prog.statements]
    n = len(prog.outputs)
    details += [pricer.output(k, n, o, prog) for k, o in enumerate(prog.outputs)]
    return ProgramCost(tuple(details), sizes)


def materialized_sizes(
    prog: Program, sizes: Mapping[str, int] | None = None
) -> dict[str, tuple[sympy.Expr, ...]]:
    """Statement (or ``return``) name → element counts of every array it writes, output first.

    Counting, not timing: ``max(degree(e) for es in materialized_sizes(p).values() for e in es)``
    is the exponent of the largest temporary the backend allocates.
    """
    cost = program_cost(prog, sizes)
    return {d.name: tuple(m.elements.to_sympy() for m in d.materialized) for d in cost.details}
