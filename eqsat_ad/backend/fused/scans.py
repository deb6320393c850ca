"""Running sums: a ``Sum`` whose range grows (or shrinks) with the innermost output index.

``c[i] = Σ_j [j <= i + a] · f(j)`` (a prefix) and ``Σ_j [j >= i + a] · f(j)`` (a suffix), with
``f`` free of ``i``, are O(N) as a running sum carried across the iterations of the ``i`` loop
(ascending for a prefix, descending for a suffix), not O(N²) as a loop per point: the plan's
Scan kernels, in the loop nest. Windows bounded on both sides (moving sums) are not scanned here
(a running sum that subtracts would turn one inf into nan for every later point).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.expr import And, Binary, Bracket, Cmp, Const, Expr, Sum, children, free_indices
from ...ir.index import Affine

__all__ = ["ScanForm", "scan_form"]


@dataclass(frozen=True)
class ScanForm:
    """``Σ_j [j <= bound]·body`` (``prefix``) or ``Σ_j [j >= bound]·body`` (suffix)."""

    index: str
    prefix: bool
    bound: Affine
    """Inclusive bound on the summed index, ``i + a``."""
    body: Expr


def _split(body: Expr) -> tuple[list[Cmp], list[Expr]]:
    cmps: list[Cmp] = []
    rest: list[Expr] = []
    stack = [body]
    while stack:
        e = stack.pop()
        if isinstance(e, Binary) and e.op == "*":
            stack += [e.rhs, e.lhs]
        elif isinstance(e, Bracket) and all(
            isinstance(p, Cmp) for p in (e.pred.preds if isinstance(e.pred, And) else (e.pred,))
        ):
            cmps += list(e.pred.preds if isinstance(e.pred, And) else (e.pred,))
        else:
            rest.append(e)
    return cmps, rest


def scan_form(e: Sum, outer: str) -> ScanForm | None:
    """``e`` as a one-sided running sum along the output index ``outer`` (None: it is not)."""
    if len(e.indices) != 1:
        return None
    j = e.indices[0].name
    cmps, rest = _split(e.body)
    found: ScanForm | None = None
    for c in cmps:
        d = c.lhs - c.rhs
        if outer not in d.free_indices():
            if j in d.free_indices():
                return None  # another bound on j: not one-sided
            rest.append(Bracket(c))
            continue
        k, ki = d.coeff(j), d.coeff(outer)
        if found is not None or k not in (1, -1) or ki != -k or c.op in ("==", "!="):
            return None
        if not d.is_integral() or d.free_indices() != {j, outer}:
            return None
        op = c.op if k == 1 else {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[c.op]
        other = (d - Affine.var(j).scale(k)).scale(-k)  # j op other
        if op == "<":
            found = ScanForm(j, True, other - 1, Const(0.0))
        elif op == "<=":
            found = ScanForm(j, True, other, Const(0.0))
        elif op == ">":
            found = ScanForm(j, False, other + 1, Const(0.0))
        else:
            found = ScanForm(j, False, other, Const(0.0))
    if found is None:
        return None
    new: Expr = rest[0] if rest else Const(1.0)
    for f in rest[1:]:
        new = Binary("*", new, f)
    if outer in free_indices(new):
        return None
    return ScanForm(found.index, found.prefix, found.bound, new)


def statement_scans(body: Expr, outer: str | None) -> dict[Sum, ScanForm]:
    """The sums of ``body`` (outside other sums) that run as running sums along ``outer``:
    all of one direction (the ``i`` loop runs one way), else none."""
    if outer is None:
        return {}
    found: dict[Sum, ScanForm] = {}

    def walk(e: Expr) -> None:
        if isinstance(e, Sum):
            form = scan_form(e, outer)
            if form is not None:
                found[e] = form
            return
        for c in children(e):
            walk(c)

    walk(body)
    if len({f.prefix for f in found.values()}) > 1:
        return {}
    return found

