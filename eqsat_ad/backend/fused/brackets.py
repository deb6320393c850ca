"""Brackets on summed indices: which index an equality solves, and the loop range they leave.

A bracket factor ``[j == a]`` of a sum's body fixes ``j`` once the indices of ``a`` are known,
so the loop writer places ``j`` innermost and visits one point (a guarded tap) instead of its
range; ``[lo <= j]``, ``[j < hi]`` narrow ``j``'s loop to a band. One equality solves one index:
``Σ_{m, k} [i == m + k]·…`` runs ``k``'s loop with ``m = i - k`` (or ``m``'s with ``k = i - m``),
never both loops. A body that is a sum of terms each bounded by its own brackets
(``[l == j + 1]·b + [l == j]·b + …``) runs the union of their ranges when that is a window
(:func:`union_window`). :func:`solve_order` chooses the index each equality solves (the one with the
largest range, so the loops left are the shortest) and :func:`sum_points` prices the loops that
order leaves, so the scheduler prices exactly the loop nest the writer emits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...ir.expr import And, Binary, Bracket, Cmp, Const, Expr, Neg
from ...ir.index import Affine, IndexVar
from ...plan.poly import ONE, Poly, compare

if TYPE_CHECKING:
    from .interior import Index

__all__ = ["bound", "bounds", "cmps", "factors", "solve_order", "sum_points", "union_window"]

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def factors(e: Expr) -> list[Expr]:
    """The factors of a product, a quotient's numerator's among them (``e`` itself when it is
    neither): a bracket there multiplies the whole term."""
    if isinstance(e, Binary) and e.op == "*":
        return factors(e.lhs) + factors(e.rhs)
    if isinstance(e, Binary) and e.op == "/":
        return factors(e.lhs) + [e]
    return [e]


def _replace(e: Expr, new: Mapping[int, Expr]) -> Expr:
    """``e`` with the factors in ``new`` (by identity) replaced; a factor 1 dropped."""
    if id(e) in new:
        return new[id(e)]
    if isinstance(e, Binary) and e.op in ("*", "/"):
        lhs, rhs = _replace(e.lhs, new), e.rhs if e.op == "/" else _replace(e.rhs, new)
        if e.op == "*" and lhs == Const(1.0):
            return rhs
        if e.op == "*" and rhs == Const(1.0):
            return lhs
        return e if (lhs is e.lhs and rhs is e.rhs) else Binary(e.op, lhs, rhs)
    return e


def cmps(e: Expr) -> list[Cmp] | None:
    """The index comparisons of a bracket of comparisons (None for anything else)."""
    if not isinstance(e, Bracket):
        return None
    preds = e.pred.preds if isinstance(e.pred, And) else (e.pred,)
    if not all(isinstance(p, Cmp) for p in preds):
        return None
    return list(preds)  # type: ignore[arg-type]


def _body_cmps(body: Expr) -> list[Cmp]:
    return [c for f in factors(body) for c in (cmps(f) or [])]


def _solvable(c: Cmp, name: str) -> bool:
    """``c`` is ``name == a`` with ``a`` free of ``name`` and integral (``±name`` alone)."""
    d = c.lhs - c.rhs
    return c.op == "==" and d.coeff(name) in (1, -1) and d.is_integral()


def solve_order(indices: Sequence[IndexVar], body: Expr) -> tuple[IndexVar, ...]:
    """The loop order of a sum's indices: each equality bracket solves the index with the
    largest range among those it can solve (not already solved), placed after the indices
    its equality reads, innermost; the unsolved indices keep their order, outermost."""
    solved: list[tuple[IndexVar, Cmp]] = []
    taken: set[str] = set()
    for c in _body_cmps(body):
        cands = [iv for iv in indices if iv.name not in taken and _solvable(c, iv.name)]
        if not cands:
            continue
        best = cands[0]
        for iv in cands[1:]:
            if compare(Poly.of_dim(iv.extent), Poly.of_dim(best.extent)) > 0:
                best = iv
        solved.append((best, c))
        taken.add(best.name)
    order = [iv for iv in indices if iv.name not in taken]
    placed = {iv.name for iv in order}
    while solved:  # an equality's other indices are placed before the index it solves
        ready = [p for p in solved if all(
            n in placed or n == p[0].name or n not in taken
            for n, _ in (p[1].lhs - p[1].rhs).index)]
        iv, _ = (ready or solved)[0]
        solved = [p for p in solved if p[0] is not iv]
        order.append(iv)
        placed.add(iv.name)
    return tuple(order)


def _band(name: str, extent: Poly, conds: Sequence[Cmp]) -> Poly:
    """Points an unsolved summed index visits: a band's constant width, else its range."""
    lows: list[Affine] = []
    highs: list[Affine] = []
    for c in conds:
        d = c.lhs - c.rhs
        k = d.coeff(name)
        if k not in (1, -1) or c.op in ("!=", "=="):
            continue
        rest = d - Affine.var(name).scale(k)
        op = c.op if k == 1 else _FLIP[c.op]
        at = rest.scale(-k)  # the index is op this bound; strict bounds move by one
        if op in (">", ">="):
            lows.append(at + 1 if op == ">" else at)
        else:
            highs.append(at - 1 if op == "<" else at)
    for lo in lows:
        for hi in highs:
            width = hi - lo
            if width.is_constant():
                return Poly.const(abs(int(width.const)) + 1)
    return extent


def _terms(e: Expr) -> list[Expr]:
    """The terms of a sum of terms (``a + b - c``, ``-a``), ``e`` itself when it is not one."""
    if isinstance(e, Binary) and e.op in "+-":
        return _terms(e.lhs) + _terms(e.rhs)
    if isinstance(e, Neg):
        return _terms(e.arg)
    return [e]


def _offset(a: Affine, b: Affine) -> int | None:
    """``a - b`` when it is an integer constant."""
    d = a - b
    return int(d.const) if d.is_constant() and d.is_integral() else None


def _extreme(affs: Sequence[Affine], pick: Callable[[int, int], bool]) -> Affine | None:
    """The greatest (``pick = >``) or least of affines a constant apart; None if not."""
    best = affs[0]
    for a in affs[1:]:
        d = _offset(a, best)
        if d is None:
            return None
        best = a if pick(d, 0) else best
    return best


def union_window(name: str, body: Expr) -> tuple[Affine, Affine] | None:
    """For a body that is a sum of terms each bounded in ``name`` by its own brackets
    (``[j + 1 == l]·b + [j == l]·b + [j == l + 1]·b``): ``[lo, hi)``, the union of their
    ranges, when its ends are a constant apart (a window); None otherwise. Outside it every
    term is a strong zero, so a loop over the window adds the same terms in the same order."""
    terms = _terms(body)
    if len(terms) < 2:
        return None
    lows: list[Affine] = []
    highs: list[Affine] = []
    for t in terms:
        t_lo: list[Affine] = []
        t_hi: list[Affine] = []
        for c in _body_cmps(t):
            b = _bound_affs(name, c)
            if b is not None:
                t_lo += [b[0]] if b[0] is not None else []
                t_hi += [b[1]] if b[1] is not None else []
        lo = _extreme(t_lo, lambda d, z: d > z) if t_lo else None
        hi = _extreme(t_hi, lambda d, z: d < z) if t_hi else None
        if lo is None or hi is None:
            return None
        lows.append(lo)
        highs.append(hi)
    lo, hi = _extreme(lows, lambda d, z: d < z), _extreme(highs, lambda d, z: d > z)
    if lo is None or hi is None or _offset(hi, lo) is None:
        return None
    return lo, hi


def _bound_affs(name: str, c: Cmp) -> tuple[Affine | None, Affine | None] | None:
    """``c`` as bounds ``lo <= name < hi`` (affines, one of them None for an inequality)."""
    d = c.lhs - c.rhs
    k = d.coeff(name)
    if k not in (1, -1) or not d.is_integral():
        return None
    other = (d - Affine.var(name).scale(k)).scale(-k)
    op = c.op if k == 1 else _FLIP[c.op]
    lo = {"==": other, ">=": other, ">": other + 1}.get(op)
    hi = {"==": other + 1, "<=": other + 1, "<": other}.get(op)
    return None if lo is None and hi is None else (lo, hi)


def sum_points(indices: Sequence[IndexVar], body: Expr) -> Poly:
    """Points a sum's loop nest visits (:func:`solve_order`): 1 per index an equality
    solves, a band's width, else the index's range, multiplied."""
    conds = _body_cmps(body)
    order = solve_order(indices, body)
    count = ONE
    for iv in order:
        if not _solves(iv, order, conds):
            band = _band(iv.name, Poly.of_dim(iv.extent), conds)
            window = union_window(iv.name, body) if band == Poly.of_dim(iv.extent) else None
            if window is not None:  # (as bounds() runs it: the union of the terms' ranges)
                band = Poly.const(abs(_offset(window[1], window[0]) or 0))
            count = count * band
    return count


def _solves(iv: IndexVar, order: Sequence[IndexVar], conds: Sequence[Cmp]) -> bool:
    """Some equality gives ``iv`` from indices placed before it (or free of the sum)."""
    before = {o.name for o in order[: order.index(iv)]}
    later = {o.name for o in order} - before
    return any(_solvable(c, iv.name) and all(
        n == iv.name or n not in later for n, _ in (c.lhs - c.rhs).index) for c in conds)


def bound(affine: Callable[[Affine, Mapping[str, Index]], tuple[str, int]], name: str, c: Cmp,
          env: Mapping[str, Index]) -> tuple[str | None, str | None, Affine, Affine] | None:
    """``c`` as a bound ``lo <= j < hi`` on index ``name`` (None: not of that form), as
    code and as affine expressions."""
    d = c.lhs - c.rhs
    k = d.coeff(name)
    if k not in (1, -1) or not d.is_integral():
        return None
    other = (d - Affine.var(name).scale(k)).scale(-k)  # j op' other (op flipped if k < 0)
    if any(n not in env for n, _ in other.index):
        return None
    op = c.op if k == 1 else _FLIP[c.op]
    lo_aff = {"==": other, ">=": other, ">": other + 1}.get(op)
    hi_aff = {"==": other + 1, "<=": other + 1, "<": other}.get(op)
    if lo_aff is None and hi_aff is None:
        return None
    lo = None if lo_aff is None else affine(lo_aff, env)[0]
    hi = None if hi_aff is None else affine(hi_aff, env)[0]
    return lo, hi, lo_aff or Affine(), hi_aff or Affine()


def bounds(w: Any, name: str, extent: str, body: Expr, env: Mapping[str, Index], unroll: int
           ) -> tuple[str, str, Expr, bool, tuple[str, int, Affine] | None]:
    """The range of a summed index, narrowed by the brackets of the body that bound it
    (``lo <= j``, ``j <= hi``, ``j == a``), the body without those brackets, whether it was
    narrowed, and (first, count, first as an affine) when the range is a window of constant
    width of at most ``unroll`` points. ``w``: the loop writer (its ``affine`` writes code).
    A window of constant width between one low and one high bound is unrolled even where
    other bounds narrow it further: those stay in the body as brackets (a single point,
    ``j == i - 1`` beside ``j < N - 1``, is then one guarded tap, not a loop of 0 or 1 trip
    that keeps the point loop from vectorizing)."""
    lows, highs = ["0"], [extent]
    found: list[tuple[Expr, Cmp, tuple[str | None, str | None, Affine, Affine]]] = []
    for f in factors(body):
        conds = cmps(f)
        if conds is None:
            continue
        for c in conds:
            b = bound(w.affine, name, c, env)
            if b is not None:
                found.append((f, c, b))
                lows += [b[0]] if b[0] is not None else []
                highs += [b[1]] if b[1] is not None else []
    if not found:
        window = union_window(name, body)
        if window is None or any(n not in env for a in window for n, _ in a.index):
            return "0", extent, body, False, None
        # the union of the terms' ranges; their brackets stay (each term is zero outside its
        # own range)
        first, last = (w.affine(a, env)[0] for a in window)
        width = _offset(window[1], window[0]) or 0
        taps = (first, width, window[0]) if 0 < width <= unroll else None
        return f"max(0, {first})", f"min({extent}, {last})", body, True, taps
    lo = lows[0] if len(lows) == 1 else f"max({', '.join(lows)})"
    hi = highs[0] if len(highs) == 1 else f"min({', '.join(highs)})"
    taps, used = None, found
    low_ks = [k for k, (_, _, b) in enumerate(found) if b[0] is not None]
    high_ks = [k for k, (_, _, b) in enumerate(found) if b[1] is not None]
    for a in low_ks:
        for z in high_ks:
            width = found[z][2][3] - found[a][2][2]
            if width.is_constant() and 0 < width.const <= unroll:
                taps = (found[a][2][0], int(width.const), found[a][2][2])
                used = [found[a], found[z]]
                break
        if taps is not None:
            break
    # (with taps, a bound not of the chosen pair stays a bracket of the body)
    return lo, hi, _without(body, [(f, c) for f, c, _ in used]), True, taps


def _without(body: Expr, dropped: Sequence[tuple[Expr, Cmp]]) -> Expr:
    """``body`` without the comparisons ``dropped`` (each of a factor's bracket)."""
    new: dict[int, Expr] = {}
    for f in factors(body):
        gone = [c for g, c in dropped if g is f]
        if not gone:
            continue
        conds = cmps(f)
        assert conds is not None
        kept = [c for c in conds if c not in gone]
        new[id(f)] = (Bracket(kept[0] if len(kept) == 1 else And(tuple(kept))) if kept
                      else Const(1.0))
    return _replace(body, new)
