"""Emitting Tensor SSA statements from the NumPy translator, and the program's outputs.

A value is *materialized* as a named statement ``name[gens] = body``: inside a summed loop the
loop binders it depends on become leading generators (a loop-local array is computed once for all
iterations), and its indices are renamed to readable letters. Mixed into the translator
(:mod:`eqsat_ad.frontend.numpy_subset`).
"""

from __future__ import annotations

import ast
from typing import Any

from ..ir.expr import (
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
    free_indices,
    has_reduction,
    substitute_pred,
)
from ..ir.index import Affine, IndexVar
from ..ir.program import Statement
from .numpy_exprs import ExprOps
from .numpy_values import TVal, subst_affine

__all__ = ["EmitOps"]

_INDEX_POOL = ("i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "u", "v", "w", "a", "b", "c",
               "d", "e", "f", "g", "h")


class EmitOps(ExprOps):
    """Statements and outputs of the program being built (mixed into the translator)."""

    # --- outputs and naming --------------------------------------------------------------------
    def _outputs(self, value: Any, node: ast.AST) -> tuple[tuple[Expr, ...], bool]:
        items = value if isinstance(value, tuple | list) else (value,)
        outs: list[Expr] = []
        for k, v in enumerate(items):
            hint = "out" if len(items) == 1 else f"out{k}"
            if isinstance(v, tuple | list):
                raise self.error("nested tuples cannot be returned; return a flat tuple", node)
            tv = self.to_data(v, node)
            if tv.ndim == 0 and not has_reduction(tv.body) and not free_indices(tv.body):
                outs.append(self._pretty_expr(tv.body))
                continue
            if not self._whole_statement(tv):
                tv = self.materialize(tv, hint, node, keep_unit_axes=True)
            outs.append(Access(tv.body.name) if tv.ndim else tv.body)
        return tuple(outs), isinstance(value, tuple | list)

    def _whole_statement(self, tv: TVal) -> bool:
        """Whether ``tv`` is an earlier statement read whole (not a slice such as ``t[:-1]``,
        which reads the same way over a shorter extent), so it can be returned by name."""
        body = tv.body
        if not (isinstance(body, Access)
                and body.indices == tuple(Affine.var(a) for a in tv.axes)):
            return False
        stmt = next((s for s in self.statements
                     if isinstance(s, Statement) and s.name == body.name), None)
        return stmt is not None and tuple(iv.extent for iv in stmt.indices) == tuple(tv.shape)

    def _index_name(self, used: set[str]) -> str:
        for c in _INDEX_POOL:
            if c not in used and c not in self.taken and c not in self.index_avoid:
                return c
        k = 1
        while True:
            for c in ("i", "j", "k"):
                name = f"{c}{k}"
                if name not in used and name not in self.taken and name not in self.index_avoid:
                    return name
            k += 1

    def _rename(self, e: Expr, m: dict[str, str], used: set[str]) -> Expr:
        """Rename every index (free ones by ``m``, bound ones to fresh readable names)."""
        amap = {k: Affine.var(v) for k, v in m.items()}
        match e:
            case Const():
                return e
            case Access(name, idx):
                return Access(name, tuple(subst_affine(a, amap) for a in idx), e.loc)
            case Bracket(p):
                return Bracket(substitute_pred(p, amap), e.loc)
            case Binary(op, lhs, rhs):
                return Binary(op, self._rename(lhs, m, used), self._rename(rhs, m, used), e.loc)
            case Neg(arg):
                return Neg(self._rename(arg, m, used), e.loc)
            case Pow(base, k):
                return Pow(self._rename(base, m, used), k, e.loc)
            case Call(fn, args):
                return Call(fn, tuple(self._rename(a, m, used) for a in args), e.loc)
            case Sum(ivs, body) | Max(ivs, body):
                inner = dict(m)
                used2 = set(used)
                new: list[IndexVar] = []
                for iv in ivs:
                    nm = self._index_name(used2)
                    used2.add(nm)
                    inner[iv.name] = nm
                    new.append(IndexVar(nm, iv.extent))
                self.index_used |= {iv.name for iv in new}
                return type(e)(tuple(new), self._rename(body, inner, used2), e.loc)
        raise TypeError(e)

    def _pretty_expr(self, e: Expr) -> Expr:
        return self._rename(e, {}, set())

    def materialize(self, tv: TVal, hint: str, node: ast.AST, keep_unit_axes: bool = False
                    ) -> TVal:
        """Emit ``name[gens] = body`` and return the value as an access to it.

        Inside a summed loop the loop binders the body depends on become leading generators, so
        a loop-local array is computed once for all iterations (vectorized). Size-1 axes the
        body does not depend on (``keepdims``, ``x[:, None]``) are not stored.
        """
        free = free_indices(tv.body)
        loops = [v for v in self.loop_vars if v in free]
        stray = free - set(tv.axes) - set(loops)
        if stray:  # pragma: no cover - internal invariant
            raise AssertionError(f"unbound indices {sorted(stray)}")
        stored = [
            k for k, (a, d) in enumerate(zip(tv.axes, tv.shape, strict=True))
            if keep_unit_axes or d != 1 or a in free
        ]
        gens = [(v, self.loop_vars[v].extent) for v in loops] + [
            (tv.axes[k], tv.shape[k]) for k in stored
        ]
        name = self.new_name(hint)
        mapping: dict[str, str] = {}
        used: set[str] = set()
        ivs: list[IndexVar] = []
        for v, ext in gens:
            nm = self._index_name(used)
            used.add(nm)
            mapping[v] = nm
            ivs.append(IndexVar(nm, ext))
        self.index_used |= used
        body = self._rename(tv.body, mapping, used)
        self.statements.append(Statement(name, tuple(ivs), body, self.loc(node)))
        self.loop_generators[name] = tuple(loops)
        axes = tuple(self.fresh() for _ in tv.shape)
        idx = tuple(Affine.var(v) for v in loops) + tuple(Affine.var(axes[k]) for k in stored)
        return TVal(tv.shape, axes, Access(name, idx), name, tv.boolean)
