"""Array operations of the NumPy subset, on symbolic :class:`TVal` arrays.

Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`), which supplies fresh index
names, materialization of heavy operands, conversions of Python values to arrays and errors with
source locations. Every operation follows NumPy's rules (broadcasting, axis normalization,
``keepdims``, the 1-D cases of ``@``) and builds the element expression of the result.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from ..ir.expr import Access, Bracket, Cmp, Const, Expr, Max, Sum, complement, conj, select
from ..ir.index import Affine, Dim, IndexVar, dim_str
from .numpy_values import (
    PredVal,
    TVal,
    add,
    affine_as_dim,
    bracket,
    call,
    const,
    div,
    mul,
    neg,
    power,
    scalar,
    shape_str,
    sub,
)


def summation(binders: tuple[IndexVar, ...], body: Expr) -> Expr:
    """``Sum[binders](body)``, except that a sum of zeros is 0."""
    if isinstance(body, Const) and body.value == 0.0:
        return body
    return Sum(binders, body)


def _read_along(t: TVal, k: int, at: Affine, axes: Sequence[str]) -> Expr:
    """``t`` read at ``at`` along axis ``k`` and at the free indices ``axes`` elsewhere."""
    return t.at([at if n == k else Affine.var(x) for n, x in enumerate(axes)])


class ArrayOps:
    """NumPy semantics on symbolic arrays (the translator provides the abstract helpers)."""

    # --- provided by the translator ------------------------------------------------------------
    def fresh(self) -> str:
        raise NotImplementedError

    def operand(self, v: Any, node: ast.AST, materialize: bool = True) -> TVal:
        raise NotImplementedError

    def error(self, message: str, node: ast.AST | None) -> Exception:
        raise NotImplementedError

    def materialize(self, tv: TVal, hint: str, node: ast.AST) -> TVal:
        raise NotImplementedError

    def factor(self, v: Any, node: ast.AST) -> TVal:
        """An operand of a contraction: a plain access, so the product under Σ stays an einsum
        and no elementwise work is repeated along the contracted or outer indices."""
        tv = self.operand(v, node)
        if not isinstance(tv.body, Access | Const | Bracket):
            tv = self.materialize(tv, "t", node)
        return tv

    def count_expr(self, d: Dim) -> Expr:
        raise NotImplementedError

    # --- shapes --------------------------------------------------------------------------------
    def broadcast_shapes(self, shapes: Sequence[tuple[Dim, ...]], node: ast.AST) -> tuple[Dim, ...]:
        rank = max((len(s) for s in shapes), default=0)
        out: list[Dim] = []
        for k in range(rank):
            d: Dim = 1
            for s in shapes:
                j = k - (rank - len(s))
                if j < 0:
                    continue
                e = s[j]
                if e == 1 or e == d:
                    continue
                if d == 1:
                    d = e
                    continue
                raise self.error(
                    "operands could not be broadcast together with shapes "
                    + " ".join(shape_str(s) for s in shapes)
                    + (
                        " (symbolic sizes broadcast only against 1 or the same size)"
                        if not (isinstance(d, int) and isinstance(e, int))
                        else ""
                    ),
                    node,
                )
            out.append(d)
        return tuple(out)

    def read(self, tv: TVal, shape: tuple[Dim, ...], axes: tuple[str, ...]) -> Expr:
        """``tv``'s element at the position ``axes`` of the broadcast shape ``shape``."""
        off = len(shape) - tv.ndim
        idx = [
            Affine.constant(0) if d == 1 and shape[off + k] != 1 else Affine.var(axes[off + k])
            for k, d in enumerate(tv.shape)
        ]
        return tv.at(idx)

    def elementwise(
        self, values: Sequence[Any], build: Callable[..., Expr], node: ast.AST,
        boolean: bool = False,
    ) -> TVal:
        tvs = [self.operand(v, node) for v in values]
        shape = self.broadcast_shapes([tv.shape for tv in tvs], node)
        axes = tuple(self.fresh() for _ in shape)
        return TVal(shape, axes, build(*(self.read(tv, shape, axes) for tv in tvs)), None, boolean)

    def normalize_axes(self, axis: Any, ndim: int, node: ast.AST, what: str) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(ndim))
        items = axis if isinstance(axis, tuple | list) else (axis,)
        out: list[int] = []
        for a in items:
            if isinstance(a, bool) or not isinstance(a, int):
                raise self.error(f"{what}: axis must be a constant int or tuple of ints", node)
            if not -ndim <= a < ndim:
                raise self.error(
                    f"{what}: axis {a} is out of bounds for an array of dimension {ndim}", node
                )
            a %= ndim
            if a in out:
                raise self.error(f"{what}: repeated axis {a}", node)
            out.append(a)
        return tuple(out)

    # --- arithmetic ----------------------------------------------------------------------------
    def arith(self, op: str, a: Any, b: Any, node: ast.AST) -> TVal:
        build = {"+": add, "-": sub, "*": mul, "/": div}[op]
        return self.elementwise((a, b), build, node)

    def compare(self, op: str, a: Any, b: Any, node: ast.AST) -> TVal:
        """A data comparison as a 0/1 array: the built-ins ``gt``, ``ge``, ``eq``, ``ne`` (1 or
        a strong zero, so that ``np.where`` never looks at the branch it does not take)."""
        def build(x: Expr, y: Expr) -> Expr:
            match op:
                case ">":
                    return call("gt", x, y)
                case "<":
                    return call("gt", y, x)
                case ">=":
                    return call("ge", x, y)
                case "<=":
                    return call("ge", y, x)
                case "==":
                    return call("eq", x, y)
                case "!=":
                    return call("ne", x, y)
            raise self.error(f"unsupported comparison {op}", node)

        return self.elementwise((a, b), build, node, boolean=True)

    def logical(self, op: str, values: Sequence[Any], node: ast.AST) -> TVal:
        for v in values:
            if isinstance(v, TVal) and not v.boolean:
                raise self.error(
                    f"'{op}' needs boolean arrays (comparisons such as x > 0); got a float array",
                    node,
                )
        if op == "not":
            return self.elementwise(values, complement, node, boolean=True)
        if op == "and":
            return self.elementwise(values, mul, node, boolean=True)
        # x or y = x + (not x) y: disjoint terms, so the result is 1 or a strong zero
        return self.elementwise(values, lambda x, y: add(x, mul(complement(x), y)), node,
                                boolean=True)

    def where(self, c: Any, a: Any, b: Any, node: ast.AST) -> TVal:
        if isinstance(c, PredVal):
            c = scalar(bracket(c.pred), boolean=True)
        if isinstance(c, TVal) and not c.boolean:
            raise self.error(
                "np.where: the condition must be a comparison (x > y, x == 0, ...), a boolean "
                "parameter, or a combination of them with & | ~",
                node,
            )
        # A select: where c is false, c * a is a strong zero even if a is inf or nan there, and
        # so is complement(c) * b where c is true (like NumPy).
        return self.elementwise((c, a, b), select, node)

    def pow_(self, a: Any, k: float, node: ast.AST) -> TVal:
        return self.elementwise((a,), lambda x: power(x, k), node)

    def unary_call(self, fn: str, a: Any, node: ast.AST) -> TVal:
        return self.elementwise((a,), lambda x: call(fn, x), node)

    def negate(self, a: Any, node: ast.AST) -> TVal:
        return self.elementwise((a,), neg, node)

    # --- reductions ----------------------------------------------------------------------------
    def reduce_sum(self, v: Any, axis: Any, keepdims: bool, node: ast.AST, what: str) -> TVal:
        tv = self.operand(v, node)
        red = self.normalize_axes(axis, tv.ndim, node, what)
        if not red:
            return tv
        binders = tuple(IndexVar(tv.axes[k], tv.shape[k]) for k in red)
        body = summation(binders, tv.body)
        return self._reduced(tv, red, body, keepdims)

    def _reduced(self, tv: TVal, red: tuple[int, ...], body: Expr, keepdims: bool) -> TVal:
        shape: list[Dim] = []
        axes: list[str] = []
        for k in range(tv.ndim):
            if k not in red:
                shape.append(tv.shape[k])
                axes.append(tv.axes[k])
            elif keepdims:
                shape.append(1)
                axes.append(self.fresh())
        return TVal(tuple(shape), tuple(axes), body)

    def reduce_mean(self, v: Any, axis: Any, keepdims: bool, node: ast.AST, what: str) -> TVal:
        tv = self.operand(v, node)
        red = self.normalize_axes(axis, tv.ndim, node, what)
        total = self.reduce_sum(tv, axis, keepdims, node, what)
        count: Expr = const(1)
        for k in red:
            count = mul(count, self.count_expr(tv.shape[k]))
        return TVal(total.shape, total.axes, div(total.body, count))

    def reduce_extreme(self, fn: str, v: Any, axis: Any, keepdims: bool, node: ast.AST,
                       what: str) -> TVal:
        """``np.max``/``np.min``: a ``Max`` over axes of symbolic size; over concrete axes a
        pairwise tournament.

        A tournament level halves the axis with the binary built-in,
        ``m[.., k, ..] = max(x[.., 2k, ..], x[.., 2k+1, ..])``, one statement per level: O(n)
        work in log2(n) vectorized statements, whose derivatives stay as simple as one binary
        max each. An odd level's last element is set aside (every read stays in
        range: plain slices, no brackets) and joins the level that ends the axis.
        """
        tv = self.operand(v, node)
        red = self.normalize_axes(axis, tv.ndim, node, what)
        if not red:
            return tv
        if any(not isinstance(tv.shape[k], int) for k in red):
            # symbolic sizes: the max-reduction of the index language (min(x) = -max(-x)); an
            # empty range gives -inf (+inf for min) where NumPy raises
            binders = tuple(IndexVar(tv.axes[k], tv.shape[k]) for k in red)
            if fn == "max":
                return self._reduced(tv, red, Max(binders, tv.body), keepdims)
            return self._reduced(tv, red, neg(Max(binders, neg(tv.body))), keepdims)
        for k in red:
            if tv.shape[k] == 0:
                raise self.error(f"{what} of an empty array (zero-size reduction)", node)
        cur = tv
        for k in red:
            m = cur.shape[k]
            assert isinstance(m, int)
            aside: list[tuple[TVal, int]] = []  # odd levels' last elements: (level, position)
            while m > 1:
                a = self.fresh()
                body = call(fn, _read_along(cur, k, Affine.var(a).scale(2), cur.axes),
                            _read_along(cur, k, Affine.var(a).scale(2) + 1, cur.axes))
                if m % 2:
                    aside.append((cur, m - 1))
                half = m // 2
                if half == 1:
                    for t, pos in aside:  # (the other axes named as this level's)
                        body = call(fn, body, _read_along(t, k, Affine.constant(pos), cur.axes))
                level = TVal(
                    cur.shape[:k] + (half,) + cur.shape[k + 1:],
                    cur.axes[:k] + (a,) + cur.axes[k + 1:],
                    body,
                )
                cur = self.materialize(level, "mx" if fn == "max" else "mn", node)
                m = half
        body = cur.at([
            Affine.constant(0) if k in red else Affine.var(x) for k, x in enumerate(cur.axes)
        ])
        return self._reduced(cur, red, body, keepdims)

    # --- structure -----------------------------------------------------------------------------
    def transpose(self, v: Any, perm: Any, node: ast.AST) -> TVal:
        tv = self.operand(v, node, materialize=False)
        if perm is None:
            order = tuple(reversed(range(tv.ndim)))
        else:
            order = self.normalize_axes(tuple(perm), tv.ndim, node, "transpose")
            if len(order) != tv.ndim:
                raise self.error("transpose: axes don't match array", node)
        return TVal(
            tuple(tv.shape[k] for k in order), tuple(tv.axes[k] for k in order), tv.body,
            tv.base, tv.boolean,
        )

    def swapaxes(self, v: Any, a1: Any, a2: Any, node: ast.AST) -> TVal:
        tv = self.operand(v, node, materialize=False)
        (x,) = self.normalize_axes(a1, tv.ndim, node, "swapaxes")
        (y,) = self.normalize_axes(a2, tv.ndim, node, "swapaxes")
        order = list(range(tv.ndim))
        order[x], order[y] = order[y], order[x]
        return self.transpose(tv, tuple(order), node)

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

    def full(self, shape: tuple[Dim, ...], value: float) -> TVal:
        return TVal(shape, tuple(self.fresh() for _ in shape), const(value))

    def reshape(self, v: Any, new: tuple[Any, ...], node: ast.AST) -> TVal:
        """Reshapes that only split axes or add/remove size-1 axes (indices stay affine)."""
        tv = self.operand(v, node)
        old = [d for d in tv.shape]
        if any(not isinstance(d, int) for d in old) or any(
            not isinstance(d, int) for d in new
        ):
            if tuple(d for d in old if d != 1) == tuple(d for d in new if d != 1):
                return self._squeeze_reshape(tv, new)
            raise self.error("reshape with symbolic sizes: only adding or removing size-1 "
                             "axes is supported", node)
        total = 1
        for d in old:
            total *= d
        dims = list(new)
        if dims.count(-1) > 1:
            raise self.error("reshape: can only specify one unknown dimension", node)
        if -1 in dims:
            known = 1
            for d in dims:
                if d != -1:
                    known *= d
            if known == 0 or total % known:
                raise self.error(f"reshape: cannot reshape array of size {total} into shape "
                                 f"{tuple(new)}", node)
            dims[dims.index(-1)] = total // known
        prod = 1
        for d in dims:
            if d < 0:
                raise self.error("reshape: negative dimension", node)
            prod *= d
        if prod != total:
            raise self.error(f"reshape: cannot reshape array of size {total} into shape "
                             f"{tuple(dims)}", node)
        # Match each input axis (sizes other than 1) with a run of output axes whose product it is.
        out_axes = tuple(self.fresh() for _ in dims)
        idx: list[Affine] = []
        p = 0
        for d in old:
            if d == 1:
                idx.append(Affine.constant(0))
                continue
            while p < len(dims) and dims[p] == 1:
                p += 1
            run: list[int] = []
            prod = 1
            while p < len(dims) and prod < d:
                run.append(p)
                prod *= dims[p]
                p += 1
            if prod != d:
                raise self.error(
                    f"reshape from {shape_str(tv.shape)} to {shape_str(tuple(dims))} merges axes: "
                    "the element index would need // and %, which are not affine; only reshapes "
                    "that split axes or add/remove size-1 axes are supported",
                    node,
                )
            # Row-major: the input index is Σ out_index[r] * (product of later run extents).
            a = Affine.constant(0)
            stride = 1
            for r in reversed(run):
                a = a + Affine.var(out_axes[r]).scale(stride)
                stride *= dims[r]
            idx.append(a)
        return TVal(tuple(dims), out_axes, tv.at(idx), tv.base, tv.boolean)

    def _squeeze_reshape(self, tv: TVal, new: tuple[Any, ...]) -> TVal:
        out_axes = tuple(self.fresh() for _ in new)
        real_out = [a for a, d in zip(out_axes, new, strict=True) if d != 1]
        idx: list[Affine] = []
        r = 0
        for d in tv.shape:
            if d == 1:
                idx.append(Affine.constant(0))
            else:
                idx.append(Affine.var(real_out[r]))
                r += 1
        return TVal(tuple(new), out_axes, tv.at(idx), tv.base, tv.boolean)

    def concatenate(self, values: Sequence[Any], axis: Any, node: ast.AST,
                    stack: bool = False) -> TVal:
        what = "np.stack" if stack else "np.concatenate"
        tvs = [self.operand(v, node) for v in values]
        if not tvs:
            raise self.error(f"{what}: need at least one array", node)
        if stack:
            ref = tvs[0].shape
            if any(t.shape != ref for t in tvs):
                raise self.error(f"{what}: all input arrays must have the same shape", node)
            (ax,) = self.normalize_axes(axis, len(ref) + 1, node, what)
            tvs = [
                TVal(t.shape[:ax] + (1,) + t.shape[ax:],
                     t.axes[:ax] + (self.fresh(),) + t.axes[ax:], t.body, t.base, t.boolean)
                for t in tvs
            ]
        ndim = tvs[0].ndim
        if ndim == 0:
            raise self.error(f"{what}: zero-dimensional arrays cannot be concatenated", node)
        (ax,) = self.normalize_axes(axis, ndim, node, what)
        for t in tvs:
            if t.ndim != ndim or any(
                t.shape[k] != tvs[0].shape[k] for k in range(ndim) if k != ax
            ):
                raise self.error(
                    f"{what}: all the input array dimensions except for the concatenation axis "
                    "must match exactly", node,
                )
            if not isinstance(t.shape[ax], int):
                raise self.error(
                    f"{what}: along an axis of symbolic size {dim_str(t.shape[ax])} the result "
                    "size is not a size; use concrete shapes", node,
                )
        axes = tuple(self.fresh() for _ in range(ndim))
        body: Expr = const(0)
        start = 0
        for t in tvs:
            n = t.shape[ax]
            assert isinstance(n, int)
            v = Affine.var(axes[ax])
            idx = [Affine.var(a) for a in axes]
            idx[ax] = v - start
            # Each piece is guarded by its range: brackets are strong zeros outside it.
            lo, hi = Cmp(">=", v, Affine.constant(start)), Cmp("<", v, Affine.constant(start + n))
            piece = t.at(idx)
            if len(tvs) > 1:
                piece = mul(bracket(conj(lo, hi)), piece)
            body = add(body, piece)
            start += n
        shape = list(tvs[0].shape)
        shape[ax] = start
        return TVal(tuple(shape), axes, body)

    def new_axis_count(self, a: Affine) -> Dim | None:
        return affine_as_dim(a)

