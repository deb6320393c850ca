"""Array operations of the NumPy subset, on symbolic :class:`TVal` arrays.

Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`), which supplies fresh index
names, materialization of heavy operands, conversions of Python values to arrays and errors with
source locations. Every operation follows NumPy's rules (broadcasting, axis normalization,
``keepdims``, the 1-D cases of ``@``) and builds the element expression of the result.

This module holds the shapes (broadcasting, axes), arithmetic, comparisons and reductions;
:mod:`.numpy_contractions` the products and diagonals, :mod:`.numpy_layout` transposes,
reshapes and concatenation.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Max,
    Sum,
    children,
    complement,
    select,
)
from ..ir.functions import lookup
from ..ir.index import Affine, Dim, IndexVar
from ..ir.traverse import has_strong_zero
from .numpy_values import (
    PredVal,
    TVal,
    add,
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


def _data_mask(e: Expr) -> bool:
    """``e`` (a boolean array) holds a data comparison: NumPy's ``False`` there is an ordinary
    0.0 met by data. Index comparisons (``i == j`` of loop indices) and relation reads (a bool
    argument, which may be passed sparse) stay strong: docs/semantics.md, "The NumPy front
    end"."""
    if isinstance(e, Call) and (f := lookup(e.fn)) is not None and f.strong:
        return True
    return any(_data_mask(c) for c in children(e))


def _inert(factor: TVal, op: str) -> bool:
    """A factor (``op`` ``*``) or divisor (``/``) that an ordinary 0.0 meets as a strong zero
    would: no inf, nan, zero divisor or negative sign to meet (``0.0 * -2`` is -0.0)."""
    if isinstance(factor.body, Const):
        return factor.body.value > 0 or (op == "*" and factor.body.value == 0
                                         and not math.copysign(1.0, factor.body.value) < 0)
    return op == "*" and factor.boolean


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
        if op in "*/":
            a, neg_a = self.ieee_zero(a, b, op, node)
            # x / -0.0 is -(x / 0): the literal 0 of Tensor SSA is +0.0, also negated
            b, neg_b = (b, self.numpy_zero(b) == -1.0) if op == "/" else self.ieee_zero(
                b, a, op, node)
            if neg_a != neg_b:  # -0.0 * x is -(0.0 * x): a stored 0 is +0.0
                return self.elementwise((a, b), lambda x, y: neg(build(x, y)), node)
        else:
            kept = self.signed_zero_sum(op, a, b, node)
            if kept is not None:  # 0.0 - x
                return kept
        return self.elementwise((a, b), build, node)

    def signed_zero_sum(self, op: str, a: Any, b: Any, node: ast.AST) -> TVal | None:
        """``0.0 - x`` with the NumPy 0 stored, an ordinary 0.0: +0.0 at ``x = +0.0``, where the
        folded ``-x`` is -0.0 (a sign of zero shows through a division: ``1 / (0.0 - x)``).
        ``-0.0 - x`` and ``x - 0.0`` are exactly ``-x`` and ``x``: folded. (``0.0 + x`` is
        folded to ``x`` too, -0.0 at ``x = -0.0``: a known gap, docs/semantics.md.)"""
        if op != "-" or self.numpy_zero(a) != 1.0 or self.numpy_zero(b) is not None:
            return None
        other = self.operand(b, node, materialize=False)
        if isinstance(other.body, Const):
            return None  # a constant: folded (a 0 difference of constants is the literal 0)
        zero = self.operand(a, node, materialize=False)
        stored = self.materialize(TVal(zero.shape, zero.axes, const(0.0)), "zero", node)
        return self.elementwise((stored, b), lambda u, w: Binary("-", u, w), node)

    def numpy_zero(self, v: Any) -> float | None:
        """The sign (1.0 or -1.0) of ``v`` when it is a NumPy 0 (float, not a mask), else None."""
        if isinstance(v, TVal) and not v.boolean and isinstance(v.body, Const) \
                and v.body.value == 0:
            return math.copysign(1.0, v.body.value)
        if isinstance(v, float | int) and not isinstance(v, bool) and v == 0:
            return math.copysign(1.0, v)
        return None

    def ieee_zero(self, v: Any, other: Any, op: str, node: ast.AST) -> tuple[Any, bool]:
        """``v``, stored when it is a NumPy 0 met by a computed factor or divisor, and whether
        it was -0.0: NumPy's ``0.0 * x`` is IEEE (nan at inf, -0.0 at x < 0), but the literal 0
        of Tensor SSA is a strong zero (docs/semantics.md); a stored 0 is an ordinary 0.0.
        So is a select (``np.where(c, a, 0.0)``) and a boolean mask of data (``x > 0``): NumPy's
        ``False * inf`` is nan."""
        tv = self.operand(v, node, materialize=False)
        zero = not tv.boolean and isinstance(tv.body, Const) and tv.body.value == 0
        if tv.boolean:
            if not _data_mask(tv.body):
                return v, False  # index comparisons, relation reads: kept strong
        elif not zero and not has_strong_zero(tv.body):
            return v, False
        factor = self.operand(other, node, materialize=False)
        if _inert(factor, op):
            return v, False  # nothing for an ordinary 0.0 to meet; folded
        if not zero:
            # a select's 0 (np.where(c, a, 0.0)) and a mask's False are ordinary 0.0s in
            # NumPy: 0 * log(-1) is nan there, so the array is stored before it meets a
            # computed factor (a stored array holds plain numbers)
            return self.materialize(tv, "mask" if tv.boolean else "sel", node), False
        stored = self.materialize(TVal(tv.shape, tv.axes, const(0.0)), "zero", node)
        return stored, math.copysign(1.0, tv.body.value) < 0

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
