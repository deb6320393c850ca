"""Contractions in the plan's order: one pairwise step at a time along the cost model's
contraction path, ``@`` (BLAS) where a step is a matrix product, ``np.einsum`` otherwise, with
the checks that keep a strong zero exact when an operand may hold inf or nan."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...ir.index import Dim
from ..kernels import Contract, Elementwise, Kernel, Reduce, View
from ..order import contraction_path, invariant_first
from ..poly import ZERO
from ..ranges import Axis
from .gathers import Gathers
from .loops import _NAME
from .values import _ATOM, _LETTERS, _MUL, Value


class Contractions(Gathers):
    def einsum(self, vals: list[Value], summed: list[str], g2: dict[str, Axis]) -> Value:
        """Σ over ``summed`` of the product of ``vals``, one pairwise step at a time in the order
        of the cost model's contraction path; each step that is a matrix product runs on BLAS."""
        allaxes = self.order(g2, *(v.axes for v in vals))
        out_axes = tuple(a for a in allaxes if a not in summed)
        if self.indent and len(vals) > 2:
            # in a loop: the operands that do not change with it are contracted first, in a
            # step hoisted out of the loop (eqsat_ad.plan.lower.loops)
            variant = self.loop_variant()
            hoisted = invariant_first([v.axes for v in vals],
                                      [bool(set(_NAME.findall(v.code)) & variant) for v in vals],
                                      out_axes, summed)
            if hoisted is not None:
                fixed, first, then = hoisted
                pre = self.einsum([vals[k] for k in fixed], first, g2)
                moving = [v for k, v in enumerate(vals) if k not in fixed]
                return self.einsum([pre, *moving], then, g2)
        letters = {a: _LETTERS[k] for k, a in enumerate(allaxes)}
        spec = ",".join("".join(letters[a] for a in v.axes) for v in vals)
        spec += "->" + "".join(letters[a] for a in out_axes)
        # Computed operands become temporaries, shared with every later use of the same code.
        vals = [v if _literal(v) else self.shared(v, create=v.prec < _ATOM or "(" in v.code)
                for v in vals]
        path = self.path([v.axes for v in vals], out_axes, g2)
        self.decide("einsum", f"{spec} path={path}", allaxes, in_sum=True)
        if len(vals) == 1:
            return self.contract(vals, out_axes, letters, g2)
        ops = list(vals)
        for step in path[1:]:
            picked = [ops[k] for k in step]
            rest = [o for k, o in enumerate(ops) if k not in step]
            keep = set(out_axes).union(*(o.axes for o in rest))
            here = self.order(g2, *(o.axes for o in picked))
            if set(here) <= keep:
                # a step that sums nothing (an elementwise or outer product) runs along the
                # layout of its largest operand: contiguous reads, no transposed pass; an
                # outer product of vectors along the result's layout, so that no transposed
                # copy follows
                big = max(picked, key=lambda o: len(o.axes))
                if len(big.axes) == 1:
                    here = (*(a for a in out_axes if a in here),
                            *(a for a in here if a not in out_axes))
                else:
                    here = (*big.axes, *(a for a in here if a not in big.axes))
            ops = [*rest, self.contract(picked, tuple(a for a in here if a in keep), letters, g2)]
        return ops[0]

    def contract(self, ops: list[Value], out: tuple[str, ...], letters: Mapping[str, str],
                 g2: Mapping[str, Axis]) -> Value:
        """One contraction step (one or two operands) with the result's axes in order ``out``.

        A matrix product (or matrix-vector product, batched or not) becomes ``@`` on transposed
        views; anything else stays ``np.einsum``. An operand that may hold inf/nan is checked
        first, and a non-finite one takes ``einsum_sz``, the plain sum of products (what BLAS
        computes need not be: it may skip a zero factor, hiding 0 * inf = nan).

        An ``unchecked`` parameter operand is verified by the result instead when that is the
        smaller array: every operand entry meets the result in some product, and 0 * inf, inf
        and nan all make the sum they enter non-finite, so a finite result proves that each
        product was finite (plain product == strong zero) and the result needs no guard
        downstream. ``_rt.checked`` raises ``NonFinite`` otherwise, and the caller reruns the
        strict lowering.
        """
        risky = [v for v in ops if v.risky]
        unchecked = frozenset().union(*(v.unchecked for v in ops))
        if unchecked and (risky or self.numel(out, g2) >= sum(
            self.numel(v.axes, g2) for v in ops if v.unchecked
        )):
            ops = [self.settle(v) for v in ops]  # scanning the operands is cheaper (or needed)
            unchecked = frozenset()
        for name in sorted(unchecked):
            self.note_finite("finite-result", name)

        def checked(code: str) -> str:
            return f"_rt.checked({code})" if unchecked else code

        inputs = tuple(k for v in ops for k in v.kernels)
        n_out = self.numel_poly(out, g2)
        touched = self.order(g2, *(v.axes for v in ops))
        if len(ops) == 1:
            cls: type[Kernel] = View if set(ops[0].axes) == set(out) else Reduce
            ks = inputs + self.kernel(cls, ZERO if cls is View else self.numel_poly(
                touched, g2), ZERO if cls is View else n_out, "einsum")
        else:
            ks = inputs + self.kernel(Contract, self.numel_poly(touched, g2), n_out,
                                      " ".join("".join(v.axes) for v in ops))
        if len(ops) == 2 and set(ops[0].axes) | set(ops[1].axes) <= set(out):
            # Nothing summed: an elementwise or outer product, broadcast.
            a, b = (self.align(v, out, False if risky else _MUL) for v in ops)
            code = f"{a} * {b}" if risky else checked(f"{a} * {b}")
            ks = inputs + self.kernel(Elementwise, n_out, n_out, "outer product")
            return Value(self.temp(code, kernels=ks), out, risky=bool(risky), size=n_out)
        spec_of = ",".join("".join(letters[a] for a in v.axes) for v in ops)
        blas = self.matmul(ops, out) if len(ops) == 2 else None
        if blas is None:
            spec = _canonical(f"{spec_of}->{''.join(letters[a] for a in out)}")
            args = ", ".join(v.code for v in ops)
            if risky:
                return Value(self.temp(f"_rt.einsum_sz('{spec}', False, {args})", kernels=ks),
                             out, risky=True, size=n_out)
            return Value(self.temp(checked(f"np.einsum('{spec}', {args})"), kernels=ks), out,
                         size=n_out)
        code, axes = blas
        code = checked(code)
        if risky:
            # The matmul result's axes (not ``out``'s order) for the exact fallback.
            spec = _canonical(f"{spec_of}->{''.join(letters[a] for a in axes)}")
            guard = ", ".join(v.code for v in risky)
            args = ", ".join(v.code for v in ops)
            code = f"{code} if _rt.finite({guard}) else _rt.einsum_sz('{spec}', False, {args})"
        res = Value(self.temp(code, kernels=ks), axes, risky=bool(risky), size=n_out)
        if axes == out:
            return res
        perm = tuple(axes.index(a) for a in out)
        view = f"{res.code}.T" if len(out) == 2 else f"{res.code}.transpose({perm})"
        return Value(self.temp(view, kernels=self.kernel(View, ZERO, ZERO, "transpose")), out,
                     risky=res.risky, size=n_out)

    def numel(self, axes: Sequence[str], g2: Mapping[str, Axis]) -> int:
        """The number of entries of an array over ``axes`` (unknown sizes count 1000)."""
        return math.prod(d if isinstance(d, int) else self.sizes.get(d.name, 1000)
                         for d in (g2[a].extent for a in axes))

    @staticmethod
    def matmul(ops: list[Value], out: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
        """``a @ b`` code for a pairwise contraction that is a (batched) matrix product or a
        matrix-vector product, and the result's axes; None when BLAS does not fit."""
        a, b = ops
        shared = [x for x in a.axes if x in b.axes]
        con = [x for x in shared if x not in out]
        batch = [x for x in shared if x in out]
        fa = [x for x in a.axes if x not in b.axes]
        fb = [x for x in b.axes if x not in a.axes]
        if len(con) != 1 or not set(fa + fb) <= set(out) or len(fa) > 1 or len(fb) > 1:
            return None
        if not fa and not fb:
            return None  # a dot product (batched or not): einsum's inner loop is as good
        if batch and not (fa and fb):
            return None
        if fa and fb and out.index(fb[0]) < out.index(fa[0]):
            a, b, fa, fb = b, a, fb, fa  # (b @ a) needs no transpose of the result

        def view(v: Value, order: list[str]) -> str:
            if list(v.axes) == order:
                return v.code
            if len(order) == 2:
                return f"{v.code}.T"
            return f"{v.code}.transpose({tuple(v.axes.index(x) for x in order)})"

        left = view(a, batch + fa + con)
        right = view(b, batch + con + fb)
        return f"{left} @ {right}", tuple(batch + fa + fb)

    def path(self, operands: list[tuple[str, ...]], out: tuple[str, ...],
             g2: Mapping[str, Axis]) -> list[object] | bool:
        if len(operands) < 2:
            return False
        extents = {a: g2[a].extent for ops in operands for a in ops}
        return ["einsum_path", *contraction_steps(operands, out, extents, self.sizes)]


def _canonical(spec: str) -> str:
    """``spec`` with its letters renamed in order of first appearance (``'cd->c'`` and
    ``'de->d'`` are both ``'ab->a'``): a step's code no longer depends on the letters its
    statement gave its axes, so the same step in two statements (a row sum every adjoint of a
    chain needs) is one temporary, computed once (:meth:`~.emit.Emitter.temp`)."""
    names: dict[str, str] = {}
    for ch in spec:
        if ch.isalpha() and ch not in names:
            names[ch] = _LETTERS[len(names)]
    return "".join(names.get(ch, ch) for ch in spec)


def _literal(v: Value) -> bool:
    """A number (a contraction's coefficient): written into the step that scales by it."""
    try:
        float(v.code)
    except ValueError:
        return False
    return not v.axes


def contraction_steps(
    operands: Sequence[tuple[str, ...]],
    out: tuple[str, ...],
    extents: Mapping[str, Dim],
    sizes: Mapping[str, int] | None = None,
) -> list[tuple[int, ...]]:
    """The pairwise contraction path (NumPy's format) the plan prices: one search for the cost
    model, extraction and the backend (:func:`eqsat_ad.plan.order.contraction_path`)."""
    return list(contraction_path(list(operands), tuple(out), dict(extents), sizes).steps)
