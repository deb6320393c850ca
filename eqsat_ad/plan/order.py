"""Contraction order: the pairwise path of a product summed over some of its indices.

One search serves the whole project: the cost model prices the path it returns, extraction
minimizes that price and the backend emits exactly its steps (no second search anywhere).

The price of a step that contracts operands over the index sets ``A`` and ``B`` into ``R`` is
``|A ∪ B| + |R|`` (every point of the step's iteration space is visited once and the result is
written once), a polynomial in the sizes compared by :func:`eqsat_ad.cost.poly.compare`
(asymptotically, then at the caller's sizes).

Search, in the manner of opt_einsum's ``dp`` optimizer:

1. every operand is first summed over its *private* indices (in no other operand, not kept);
2. up to :data:`EXACT_LIMIT` operands, dynamic programming over all subsets and all their
   splits: exact over every pairwise order (outer products included);
3. up to :data:`OPTIMAL_LIMIT` operands, the same over *connected* subsets (operands linked by
   shared indices) split into two connected parts that share an index: exact over the orders
   that form no outer product, opt_einsum's ``dp`` restriction (3^n splits shrink to the few
   that link). Disconnected groups (``Σ x[i] · y[j]``) are contracted each on their own and
   their results combined cheapest pair first;
4. beyond :data:`OPTIMAL_LIMIT` operands, the greedy choice of the cheapest next pair
   (3^n subset splits would take seconds at 14 operands; no program here comes near that).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..ir.errors import EqsatError
from ..ir.index import Dim
from .poly import ZERO, Poly, compare, poly_max

__all__ = [
    "EXACT_LIMIT", "OPTIMAL_LIMIT", "ContractionPath", "contraction_path", "invariant_first",
    "joining_operands",
]

Extents = Mapping[str, Dim]

EXACT_LIMIT = 6
"""Operand counts up to this are ordered optimally over every pairwise order."""
OPTIMAL_LIMIT = 12
"""Operand counts up to this are ordered optimally over orders without outer products (subset
DP over connected subsets); beyond, greedily."""


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
    return Poly.product_of_dims(extents[n] for n in sorted(names))


def _sorted(s: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(s))


def contraction_path(
    operands: Sequence[Iterable[str]],
    output: Iterable[str],
    extents: Extents,
    sizes: Mapping[str, int] | None = None,
) -> ContractionPath:
    """The cheapest pairwise order to contract ``operands`` (index sets) into ``output``.

    Every index not in ``output`` is summed. Deterministic: ties go to the first order found.
    ``sizes`` decide between orders whose leading terms are incomparable.
    """
    ops = tuple(frozenset(o) for o in operands)
    out = frozenset(output)
    for n in out.union(*ops):
        if n not in extents:
            raise EqsatError(f"index {n!r} has no extent")
    if not out <= frozenset().union(*ops):
        missing = sorted(out - frozenset().union(*ops))
        raise EqsatError(f"output indices {missing} occur in no operand")
    ext = tuple(sorted((n, extents[n]) for n in out.union(*ops)))
    size_key = tuple(sorted(sizes.items())) if sizes else None
    return _cached_path(ops, out, ext, size_key)


@functools.lru_cache(maxsize=4096)
def _cached_path(
    ops: tuple[frozenset[str], ...],
    out: frozenset[str],
    ext: tuple[tuple[str, Dim], ...],
    size_key: tuple[tuple[str, int], ...] | None,
) -> ContractionPath:
    extents = dict(ext)
    sizes = dict(size_key) if size_key is not None else None
    size = _SizeCache(extents)
    steps: list[tuple[int, ...]] = []
    involved: list[tuple[str, ...]] = []
    results: list[tuple[str, ...]] = []
    costs: list[Poly] = []
    # current operand list: (identity bit mask, index set); masks name subsets of the operands
    current: list[tuple[int, frozenset[str]]] = [(1 << k, o) for k, o in enumerate(ops)]
    # 1. Sum private indices out of each operand (this is what hoists factors out of sums).
    for k, o in enumerate(ops):
        others = frozenset().union(*(p for j, p in enumerate(ops) if j != k))
        kept = o & (out | others)
        if kept == o:
            continue
        pos = next(p for p, (ident, _) in enumerate(current) if ident == 1 << k)
        del current[pos]
        current.append((1 << k, kept))
        steps.append((pos,))
        involved.append(_sorted(o))
        results.append(_sorted(kept))
        costs.append(size(o) + size(kept))
    # 2. Pairwise contractions, searched on subsets, then numbered as NumPy's path format wants.
    if len(current) > 1:
        sets = {ident: s for ident, s in current}
        pairs = _search(sets, out, size, sizes)
        for a, b in pairs:
            i = next(p for p, (ident, _) in enumerate(current) if ident == a)
            j = next(p for p, (ident, _) in enumerate(current) if ident == b)
            sa, sb = current[i][1], current[j][1]
            rest = frozenset().union(*(s for ident, s in current if ident not in (a, b)))
            res = (sa | sb) & (out | rest)
            steps.append((min(i, j), max(i, j)))
            involved.append(_sorted(sa | sb))
            results.append(_sorted(res))
            costs.append(size(sa | sb) + size(res))
            for p in sorted((i, j), reverse=True):
                del current[p]
            current.append((a | b, res))
    if len(ops) == 1 and not steps:
        steps.append((0,))
        involved.append(_sorted(ops[0]))
        results.append(_sorted(out))
        costs.append(ZERO)
    return ContractionPath(
        tuple(_sorted(o) for o in ops), _sorted(out), tuple(steps), tuple(involved),
        tuple(results), tuple(costs),
    )


class _SizeCache:
    """``|S|`` per index set, computed once per path search."""

    def __init__(self, extents: Extents) -> None:
        self.extents = extents
        self.cache: dict[frozenset[str], Poly] = {}

    def __call__(self, s: frozenset[str]) -> Poly:
        p = self.cache.get(s)
        if p is None:
            p = self.cache[s] = _size(s, self.extents)
        return p


Pair = tuple[int, int]  # the identity masks of two operands contracted together


def _search(
    sets: dict[int, frozenset[str]], out: frozenset[str], size: _SizeCache,
    sizes: Mapping[str, int] | None,
) -> list[Pair]:
    """The pairwise steps (as identity masks) contracting every operand of ``sets``."""
    if len(sets) > OPTIMAL_LIMIT:
        return _greedy(sets, out, size, sizes)
    full = 0
    for m in sets:
        full |= m
    index_of: dict[int, frozenset[str]] = {}

    def idx(mask: int) -> frozenset[str]:
        s = index_of.get(mask)
        if s is None:
            s = frozenset().union(*(v for m, v in sets.items() if m & mask))
            index_of[mask] = s
        return s

    def result(mask: int) -> frozenset[str]:
        return idx(mask) & (out | idx(full & ~mask))

    best: dict[int, tuple[Poly, tuple[Pair, ...]]] = {m: (ZERO, ()) for m in sets}
    if len(sets) <= EXACT_LIMIT:
        _exact(full, idx, result, size, sizes, best)
        return list(best[full][1])
    groups = _components(sets)
    for g in groups:
        _optimal(g, sets, idx, result, size, sizes, best)
    if len(groups) == 1:
        return list(best[groups[0]][1])
    # disconnected groups: each contracted alone, the group results combined greedily
    pairs: list[Pair] = [p for g in groups for p in best[g][1]]
    live = {g: result(g) for g in groups}
    while len(live) > 1:
        rest_of = lambda a, b: frozenset().union(  # noqa: E731
            *(s for m, s in live.items() if m not in (a, b)))
        choice = None
        for a, b in combinations(sorted(live), 2):
            inv = live[a] | live[b]
            c = size(inv) + size(inv & (out | rest_of(a, b)))
            if choice is None or compare(c, choice[0], sizes) < 0:
                choice = (c, a, b, inv & (out | rest_of(a, b)))
        assert choice is not None
        _, a, b, res = choice
        pairs.append((a, b))
        del live[a], live[b]
        live[a | b] = res
    return pairs


def _components(sets: dict[int, frozenset[str]]) -> list[int]:
    """The masks of the groups of operands linked by shared indices."""
    groups: list[tuple[int, frozenset[str]]] = []
    for m, s in sets.items():
        mask, idx = m, s
        keep = []
        for gm, gs in groups:
            if gs & idx:
                mask |= gm
                idx |= gs
            else:
                keep.append((gm, gs))
        groups = [*keep, (mask, idx)]
    return sorted(g for g, _ in groups)


def _exact(full: int, idx, result, size: _SizeCache, sizes, best) -> None:
    """Fill ``best`` for every subset of ``full`` from all its splits (by increasing size)."""
    for mask in sorted(range(1, full + 1), key=lambda m: m.bit_count()):
        if mask & full != mask or mask in best:
            continue
        found: tuple[Poly, tuple[Pair, ...]] | None = None
        low = mask & -mask
        sub = (mask - 1) & mask
        while sub:
            if sub & low:
                other = mask ^ sub
                if sub in best and other in best:
                    inv = result(sub) | result(other)
                    c = best[sub][0] + best[other][0] + size(inv) + size(result(mask))
                    if found is None or compare(c, found[0], sizes) < 0:
                        found = (c, (*best[sub][1], *best[other][1], (sub, other)))
            sub = (sub - 1) & mask
        if found is not None:
            best[mask] = found


def _optimal(group: int, sets, idx, result, size: _SizeCache, sizes, best) -> None:
    """Fill ``best`` for every connected subset of ``group`` (subset DP, by increasing size)."""
    members = [m for m in sets if m & group]
    masks: list[int] = []
    # connected subsets, grown from single operands by adding a linked one
    seen = set(members)
    frontier = list(members)
    while frontier:
        nxt = []
        for mask in frontier:
            for m in members:
                if not m & mask and sets[m] & idx(mask):
                    new = mask | m
                    if new not in seen:
                        seen.add(new)
                        nxt.append(new)
        masks.extend(nxt)
        frontier = nxt
    for mask in masks:  # by increasing number of operands
        found: tuple[Poly, tuple[Pair, ...]] | None = None
        low = mask & -mask
        sub = (mask - 1) & mask
        while sub:
            if sub & low:  # each split once: the part holding the lowest operand is ``sub``
                other = mask ^ sub
                if sub in best and other in best:
                    ra, rb = result(sub), result(other)
                    if ra & rb:
                        inv = ra | rb
                        c = best[sub][0] + best[other][0] + size(inv) + size(result(mask))
                        if found is None or compare(c, found[0], sizes) < 0:
                            found = (c, (*best[sub][1], *best[other][1], (sub, other)))
            sub = (sub - 1) & mask
        if found is not None:
            best[mask] = found


def _greedy(
    sets: dict[int, frozenset[str]], out: frozenset[str], size: _SizeCache,
    sizes: Mapping[str, int] | None,
) -> list[Pair]:
    live = dict(sets)
    pairs: list[Pair] = []
    while len(live) > 1:
        choice = None
        for a, b in combinations(sorted(live), 2):
            rest = frozenset().union(*(s for m, s in live.items() if m not in (a, b)))
            inv = live[a] | live[b]
            res = inv & (out | rest)
            c = size(inv) + size(res)
            if choice is None or compare(c, choice[0], sizes) < 0:
                choice = (c, a, b, res)
        assert choice is not None
        _, a, b, res = choice
        pairs.append((a, b))
        del live[a], live[b]
        live[a | b] = res
    return pairs


def invariant_first(operands: Sequence[tuple[str, ...]], variant: Sequence[bool],
                    out: tuple[str, ...], summed: Sequence[str]
                    ) -> tuple[list[int], list[str], list[str]] | None:
    """In a loop (:mod:`eqsat_ad.plan.split`): the operands that do not change with it
    (``variant`` False), contracted first in a step hoisted out of the loop, then the rest.

    Returns the positions of the invariant operands (the widest first: shared products), the
    summed indices that step sums out (none the others or the result keep), and the summed
    indices left for the rest; None where fewer than two operands are invariant or all are.
    An invariant operand over the result's indices only is not hoisted: it scales the small
    result instead."""
    if len(operands) <= 2:
        return None
    fixed = [k for k, ops in enumerate(operands)
             if not variant[k] and not set(ops) <= set(out)]
    if len(fixed) < 2 or len(fixed) == len(operands):
        return None
    fixed.sort(key=lambda k: -len(operands[k]))
    keep = set(out).union(*(ops for k, ops in enumerate(operands) if k not in fixed))
    return fixed, [a for a in summed if a not in keep], [a for a in summed if a in keep]


def joining_operands(outside: Sequence[frozenset[str] | None], operands: Sequence[set[str]],
                     conditioned: bool) -> list[int]:
    """The positions of the factors taken out of a sum (their indices; None: a mask) that join
    its contraction as one more operand: each over a subset of one operand's indices, where the
    sum is a contraction of two or more operands under no condition. The contraction order
    then multiplies it into its smallest partner (``Σ_i W[t, i] V[s, i] / Z[t]`` scales W,
    T x D, not the T x T result) instead of the result being scaled."""
    if conditioned or len(operands) < 2:
        return []
    return [k for k, ix in enumerate(outside)
            if ix is not None and any(ix <= op for op in operands)]


def same_axes_groups(axes: Sequence[frozenset[str] | None]) -> list[list[int]]:
    """The positions of the risky operands of a contraction (their indices; None: not risky,
    or a mask) grouped by equal index sets, groups of two or more only: the fast code multiplies
    each group elementwise before the contraction. An operand over the same indices as another
    is never worse multiplied into it first, and the product of values that may overflow is
    then checked once, in one array (N-body's weights: one N x N array, not two)."""
    groups: dict[frozenset[str], list[int]] = {}
    for k, ix in enumerate(axes):
        if ix:
            groups.setdefault(ix, []).append(k)
    return [ks for ks in groups.values() if len(ks) > 1]


def linked_groups(frees: Sequence[set[str]], summed: set[str]) -> list[tuple[set[str], list[int]]]:
    """The factors (their free indices) in groups linked by shared ``summed`` indices, each with
    the summed indices it carries (a factor carrying none is a group of its own, with an empty
    set), in the order of each group's last factor: the groups a sum over ``summed`` contracts
    separately (``Σ_f H[j, f] W[f, g]`` before a gather over ``j``)."""
    groups: list[tuple[set[str], list[int]]] = []
    for k, fv in enumerate(frees):
        group: tuple[set[str], list[int]] = (fv & summed, [k])
        if group[0]:
            for g in [g for g in groups if g[0] & group[0]]:
                group[0].update(g[0])
                group[1][:0] = g[1]
                groups.remove(g)
        groups.append(group)
    return groups

