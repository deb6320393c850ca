"""Gathers and scatter-adds by integer arrays: ``x[idx]``, ``np.bincount``, ``np.add.at``.

An integer array parameter used as an index is an *index array*: the relation
``[idx[e] == i]`` over ``(E, N)`` (``idx: idx[E, N]`` in the index language), with ``N`` the
length of the axis it indexes. So ``x[idx]`` is ``Σ_i [idx[e] == i] · x[i]``, ``np.bincount(idx,
w, minlength=N)`` is ``Σ_e [idx[e] == i] · w[e]`` and ``np.add.at(a, idx, b)`` is ``a`` plus that
scatter: the AD and the rules see an ordinary relation, the backend runs gathers and
``np.bincount`` (see :mod:`eqsat_ad.plan.lower.gathers`). An index value outside ``0 .. N-1``
(negative ones included: they do not wrap around) is an error when the function is called.
"""

from __future__ import annotations

import ast
from typing import Any

from ..ir.expr import Access, Binary, Bracket, Expr, Rel, Sum
from ..ir.index import Affine, Dim, IndexVar
from ..ir.program import Param
from .numpy_layout import LayoutOps
from .numpy_values import TVal


class GatherOps(LayoutOps):
    """Index arrays (provided by the translator: ``params``, ``index_params``)."""

    params: list[Param]
    index_params: dict[str, int]  # integer array parameter -> its position in ``params``
    index_ranges: dict[str, Dim]

    def index_array(self, v: Any) -> str | None:
        """The integer parameter ``v`` reads whole (an index array), else None."""
        if not isinstance(v, TVal) or not isinstance(v.body, Access):
            return None
        name = v.body.name
        if name not in self.index_params:
            return None
        if v.body.indices != tuple(Affine.var(a) for a in v.axes):
            return None  # a slice or transpose of it: not supported as an index
        return name

    def as_index_array(self, name: str, extent: Dim, node: ast.AST) -> None:
        """Make integer parameter ``name`` the relation ``[name[e] == i]`` with ``i < extent``."""
        seen = self.index_ranges.get(name)
        if seen is not None:
            if seen != extent:
                raise self.error(
                    f"index array {name!r} indexes axes of different lengths ({seen} and "
                    f"{extent}); pass one index array per range", node)
            return
        k = self.index_params[name]
        p = self.params[k]
        self.params[k] = Param(name, (*p.shape, extent), "relation", p.loc)
        self.index_ranges[name] = extent

    def gather(self, v: TVal, items: list[Any], node: ast.AST) -> TVal | None:
        """``v[..., idx, ...]`` with one index array and full slices elsewhere, or None."""
        arrays = [k for k, it in enumerate(items) if isinstance(it, TVal)]
        if len(arrays) != 1:
            return None
        p = arrays[0]
        name = self.index_array(items[p])
        if name is None:
            return None
        if any(not (isinstance(it, slice) and it == slice(None)) for k, it in enumerate(items)
               if k != p):
            raise self.error(
                f"indexing with the index array {name!r} works with full slices ':' on the "
                "other axes only", node)
        idx = items[p]
        tv = self.operand(v, node)
        if len(items) > tv.ndim:
            raise self.error(
                f"too many indices for array: array is {tv.ndim}-dimensional, but "
                f"{len(items)} were indexed", node)
        self.as_index_array(name, tv.shape[p], node)
        before = [self.fresh() for _ in range(p)]
        own = [self.fresh() for _ in idx.shape]
        after = [self.fresh() for _ in range(tv.ndim - p - 1)]
        k = self.fresh()
        at = [Affine.var(a) for a in own]
        read = tv.at([*(Affine.var(a) for a in before), Affine.var(k),
                      *(Affine.var(a) for a in after)])
        body: Expr = Sum((IndexVar(k, tv.shape[p]),),
                         Binary("*", Bracket(Rel(name, (*at, Affine.var(k)))), read))
        shape = (*tv.shape[:p], *idx.shape, *tv.shape[p + 1:])
        return TVal(tuple(shape), (*before, *own, *after), body)

    def scatter_add(self, idx: Any, weights: Any, extent: Dim, node: ast.AST,
                    what: str) -> TVal:
        """``out[i, ...] = Σ_e [idx[e] == i] · weights[e, ...]`` over ``i < extent``."""
        name = self.index_array(idx)
        if name is None:
            raise self.error(
                f"{what}: the indices must be an integer array argument of the function "
                "(an index array)", node)
        assert isinstance(idx, TVal)
        self.as_index_array(name, extent, node)
        own = [self.fresh() for _ in idx.shape]
        at = [Affine.var(a) for a in own]
        i = self.fresh()
        if weights is None:
            rest: tuple[Dim, ...] = ()
            tail: list[str] = []
            w: Expr | None = None
        else:
            wt = self.operand(weights, node)
            if wt.ndim and tuple(wt.shape[:idx.ndim]) != tuple(idx.shape):
                raise self.error(
                    f"{what}: the values have shape {tuple(wt.shape)}, the indices "
                    f"{tuple(idx.shape)}", node)
            rest = tuple(wt.shape[idx.ndim:]) if wt.ndim else ()
            tail = [self.fresh() for _ in rest]
            w = wt.at([*at, *(Affine.var(a) for a in tail)]) if wt.ndim else wt.body
        rel: Expr = Bracket(Rel(name, (*at, Affine.var(i))))
        term = rel if w is None else Binary("*", rel, w)
        body = Sum(tuple(IndexVar(a, d) for a, d in zip(own, idx.shape, strict=True)), term)
        return TVal((extent, *rest), (i, *tail), body)
