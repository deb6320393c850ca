"""Array layout in the NumPy subset: transposes, reshapes, concatenation and stacking, and
constant arrays (``np.full``, ``np.zeros``, ...).

A transpose permutes the free indices of the element expression; a reshape may only split axes
or add and remove size-1 axes, so indices stay affine; a concatenation selects among its parts
with brackets on the index. Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from ..ir.expr import Cmp, Expr, conj
from ..ir.index import Affine, Dim, dim_str
from .numpy_contractions import ContractionOps
from .numpy_values import (
    TVal,
    add,
    affine_as_dim,
    bracket,
    const,
    mul,
    shape_str,
)

__all__ = ["LayoutOps"]


class LayoutOps(ContractionOps):
    """Transposes, reshapes, concatenation (mixed into the translator)."""

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
