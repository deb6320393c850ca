"""Products, contractions and diagonals of the NumPy subset: ``@``, ``np.dot``, ``np.outer``,
``np.einsum``, ``np.trace``, ``np.diag`` and ``np.eye``.

Each builds a ``Sum`` over the contracted indices of plain accesses (operands that are not are
materialized first), so the product under the sum stays an einsum. Mixed into the translator
(:mod:`eqsat_ad.frontend.numpy_subset`) on top of the shapes and arithmetic of :mod:`.numpy_ops`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from ..ir.expr import Cmp, Expr
from ..ir.index import Affine, Dim, IndexVar, dim_str
from .numpy_ops import ArrayOps, summation
from .numpy_values import (
    TVal,
    bracket,
    const,
    mul,
    shape_str,
)

__all__ = ["ContractionOps"]


class ContractionOps(ArrayOps):
    """Products and diagonals (mixed into the translator)."""

    def matmul(self, a: Any, b: Any, node: ast.AST, what: str = "matmul") -> TVal:
        ta, tb = self.factor(a, node), self.factor(b, node)
        if ta.ndim == 0 or tb.ndim == 0:
            raise self.error(f"{what}: input operand does not have enough dimensions "
                             "(use * for scalars)", node)
        # NumPy: a 1-D left operand is a row, a 1-D right operand a column, both removed after.
        k = self.fresh()
        ka = ta.shape[-1]
        kb = tb.shape[0] if tb.ndim == 1 else tb.shape[-2]
        if ka != kb:
            raise self.error(
                f"{what}: shapes {shape_str(ta.shape)} and {shape_str(tb.shape)} not aligned: "
                f"{dim_str(ka)} != {dim_str(kb)}",
                node,
            )
        batch_a = ta.shape[:-2] if ta.ndim >= 2 else ()
        batch_b = tb.shape[:-2] if tb.ndim >= 2 else ()
        batch = self.broadcast_shapes([batch_a, batch_b], node)
        baxes = tuple(self.fresh() for _ in batch)
        i = self.fresh() if ta.ndim >= 2 else None
        j = self.fresh() if tb.ndim >= 2 else None

        def batch_idx(bshape: tuple[Dim, ...]) -> list[Affine]:
            off = len(batch) - len(bshape)
            return [
                Affine.constant(0) if d == 1 and batch[off + n] != 1
                else Affine.var(baxes[off + n])
                for n, d in enumerate(bshape)
            ]

        ia = batch_idx(batch_a) + ([Affine.var(i)] if i else []) + [Affine.var(k)]
        ib = batch_idx(batch_b) + [Affine.var(k)] + ([Affine.var(j)] if j else [])
        body = summation((IndexVar(k, ka),), mul(ta.at(ia), tb.at(ib)))
        shape = batch + ((ta.shape[-2],) if i else ()) + ((tb.shape[-1],) if j else ())
        axes = baxes + ((i,) if i else ()) + ((j,) if j else ())
        return TVal(shape, axes, body)

    def dot(self, a: Any, b: Any, node: ast.AST) -> TVal:
        ta, tb = self.factor(a, node), self.factor(b, node)
        if ta.ndim == 0 or tb.ndim == 0:
            return self.arith("*", ta, tb, node)
        if ta.ndim <= 2 and tb.ndim <= 2:
            return self.matmul(ta, tb, node, "dot")
        # N-D: sum over the last axis of a and the second-to-last of b, all others outer.
        kb_pos = 0 if tb.ndim == 1 else tb.ndim - 2
        if ta.shape[-1] != tb.shape[kb_pos]:
            raise self.error(
                f"dot: shapes {shape_str(ta.shape)} and {shape_str(tb.shape)} not aligned", node
            )
        k = self.fresh()
        axa = tuple(self.fresh() for _ in range(ta.ndim - 1))
        axb = tuple(self.fresh() for _ in range(tb.ndim - 1))
        ia = [Affine.var(x) for x in axa] + [Affine.var(k)]
        ib = [Affine.var(x) for x in axb]
        ib.insert(kb_pos, Affine.var(k))
        body = summation((IndexVar(k, ta.shape[-1]),), mul(ta.at(ia), tb.at(ib)))
        shape_b = tuple(d for n, d in enumerate(tb.shape) if n != kb_pos)
        return TVal(ta.shape[:-1] + shape_b, axa + axb, body)

    def outer(self, a: Any, b: Any, node: ast.AST) -> TVal:
        ta, tb = self.factor(a, node), self.factor(b, node)
        for t in (ta, tb):
            if t.ndim != 1:
                raise self.error(
                    f"np.outer: only 1-D operands are supported (got shape {shape_str(t.shape)}); "
                    "use a[:, None] * b[None, :] or np.einsum", node,
                )
        i, j = self.fresh(), self.fresh()
        body = mul(ta.at([Affine.var(i)]), tb.at([Affine.var(j)]))
        return TVal((ta.shape[0], tb.shape[0]), (i, j), body)

    def einsum(self, spec: Any, operands: Sequence[Any], node: ast.AST) -> TVal:
        if not isinstance(spec, str):
            raise self.error("np.einsum: the subscripts must be a string literal", node)
        spec = spec.replace(" ", "")
        if "." in spec:
            raise self.error("np.einsum: '...' (ellipsis) is not supported; name every axis",
                             node)
        if "->" in spec:
            lhs, out = spec.split("->", 1)
        else:
            lhs, out = spec, None
        terms = lhs.split(",")
        if len(terms) != len(operands):
            raise self.error(
                f"np.einsum: {len(terms)} operand subscripts but {len(operands)} operands", node
            )
        for t in terms + ([out] if out is not None else []):
            if not all(c.isalpha() for c in t):
                raise self.error(f"np.einsum: invalid subscripts {spec!r}", node)
        counts: dict[str, int] = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        if out is None:
            out = "".join(sorted(c for c, n in counts.items() if n == 1))
        if len(set(out)) != len(out):
            raise self.error(f"np.einsum: output subscript repeated in {spec!r}", node)
        for c in out:
            if c not in counts:
                raise self.error(
                    f"np.einsum: output subscript {c!r} does not appear in the inputs", node
                )
        tvs = [self.factor(v, node) for v in operands]
        extent: dict[str, Dim] = {}
        var = {c: self.fresh() for c in counts}
        body: Expr = const(1)
        for t, tv in zip(terms, tvs, strict=True):
            if len(t) != tv.ndim:
                raise self.error(
                    f"np.einsum: subscripts {t!r} name {len(t)} axes but the operand has "
                    f"shape {shape_str(tv.shape)}", node,
                )
            for c, d in zip(t, tv.shape, strict=True):
                if c in extent and extent[c] != d:
                    raise self.error(
                        f"np.einsum: subscript {c!r} has size {dim_str(extent[c])} and "
                        f"{dim_str(d)}", node,
                    )
                extent[c] = d
            body = mul(body, tv.at([Affine.var(var[c]) for c in t]))
        summed = tuple(IndexVar(var[c], extent[c]) for c in counts if c not in out)
        if summed:
            body = summation(summed, body)
        return TVal(tuple(extent[c] for c in out), tuple(var[c] for c in out), body)

    def trace(self, v: Any, offset: Any, node: ast.AST) -> TVal:
        tv = self.operand(v, node)
        if tv.ndim < 2:
            raise self.error("np.trace: the array must have at least 2 dimensions", node)
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise self.error("np.trace: offset must be a constant int", node)
        n = self.diagonal_length(tv.shape[0], tv.shape[1], offset, node, "np.trace")
        t = self.fresh()
        rows = Affine.var(t) + max(0, -offset)
        cols = Affine.var(t) + max(0, offset)
        rest = tv.axes[2:]
        body = tv.at([rows, cols] + [Affine.var(a) for a in rest])
        return TVal(tv.shape[2:], rest, summation((IndexVar(t, n),), body))

    def diagonal_length(self, n: Dim, m: Dim, k: int, node: ast.AST, what: str) -> Dim:
        if isinstance(n, int) and isinstance(m, int):
            return max(0, min(n + min(k, 0), m - max(k, 0)))
        if k == 0 and n == m:
            return n
        raise self.error(
            f"{what}: the diagonal of a {dim_str(n)}×{dim_str(m)} array at offset {k} has a "
            "length that is not a size; use concrete shapes",
            node,
        )

    def diag(self, v: Any, k: Any, node: ast.AST) -> TVal:
        tv = self.operand(v, node)
        if isinstance(k, bool) or not isinstance(k, int):
            raise self.error("np.diag: k must be a constant int", node)
        if tv.ndim == 2:
            n = self.diagonal_length(tv.shape[0], tv.shape[1], k, node, "np.diag")
            t = self.fresh()
            rows = Affine.var(t) + max(0, -k)
            cols = Affine.var(t) + max(0, k)
            return TVal((n,), (t,), tv.at([rows, cols]), tv.base, tv.boolean)
        if tv.ndim != 1:
            raise self.error("np.diag: input must be 1-D or 2-D", node)
        n = tv.shape[0]
        if k != 0 and not isinstance(n, int):
            raise self.error(
                f"np.diag: a matrix of size {dim_str(n)} + {abs(k)} is not a size; use concrete "
                "shapes or k=0", node,
            )
        m: Dim = n + abs(k) if isinstance(n, int) else n
        i, j = self.fresh(), self.fresh()
        vi, vj = Affine.var(i), Affine.var(j)
        if k >= 0:
            # D[i, j] = [j == i + k] * v[i]; where the bracket is false v is not looked at.
            body = mul(bracket(Cmp("==", vj, vi + k)), tv.at([vi]))
        else:
            body = mul(bracket(Cmp("==", vi, vj - k)), tv.at([vj]))
        return TVal((m, m), (i, j), body)

    def eye(self, n: Dim, m: Dim, k: int) -> TVal:
        i, j = self.fresh(), self.fresh()
        return TVal((n, m), (i, j), bracket(Cmp("==", Affine.var(j), Affine.var(i) + k)))
