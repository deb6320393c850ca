"""Terms evaluated on a grid: equalities solved, ranges narrowed, sums run as scans, reductions
or contractions in the plan's order (``@`` where it is a matrix product)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..ir.expr import Access, Bracket, Expr, children, free_indices
from ..ir.index import Affine, Dim
from ..plan.kernels import (
    Contract,
    Elementwise,
    Kernel,
    Reduce,
    RunningSum,
    Scan,
    View,
)
from ..plan.normal import (
    Axis,
    Cond,
    Term,
    _without_brackets,
    divisions_out_of_sums,
    eliminate,
    fold,
)
from ..plan.order import contraction_path
from ..plan.poly import ZERO
from ..plan.windows import scan_bounds
from .gathers import Gathers
from .loops import _NAME
from .reads import _strong_factors
from .values import (
    _ADD,
    _ATOM,
    _LETTERS,
    _MUL,
    _UNARY,
    Value,
    _factor,
    _num,
)


class Reductions(Gathers):
    def term_value(self, t: Term, grid: dict[str, Axis]) -> Value:
        """A term evaluated on ``grid`` (its sums reduced)."""
        sums = {iv.name: iv.extent for iv in t.sums}
        res = eliminate(t, [iv.name for iv in t.sums], sums)
        if res is None:
            return Value("0", ())
        t, solved = res
        for v in solved:
            self.decide("eliminated", f"sum over {v} removed by an equality")
        inner_axes = {iv.name: Axis.full(iv) for iv in t.sums}
        t = fold(t, inner_axes, list(inner_axes))
        g2 = dict(grid)
        g2.update(inner_axes)
        j = set(inner_axes)
        outer_conds = [c for c in t.conds if not (c.indices() & j)]
        inner_conds = [c for c in t.conds if c.indices() & j]
        inner_f: list[Expr | Term] = []
        outer_f: list[Expr | Term] = []
        for f in divisions_out_of_sums(t.factors, j):
            fv = f.free() if isinstance(f, Term) else set(free_indices(f))
            (inner_f if fv & j else outer_f).append(f)
        guards: list[Value] = []
        if self.strict and len(outer_f) + bool(j) > 1:
            outer_f, guards = self.split_guards(outer_f, grid)
        outer = [self.term_value(f, grid) if isinstance(f, Term) else self.ev(f, grid)
                 for f in outer_f]
        vals: list[Value] = []
        if j:
            # A factor free of the summed indices leaves the sum only where it is finite:
            # inf * (a + b) is not inf * a + inf * b when a and b differ in sign.
            risky = [v for v in outer if v.risky]
            if risky and self.strict:
                # (the strict code exists for inf/nan: the product stays under the sum)
                outer = [v for v in outer if not v.risky]
                vals.append(self.reduce(t, inner_axes, [*inner_f, *risky], inner_conds, g2))
            else:
                # fast code: a non-finite factor raises NonFinite and the strict code reruns
                outer = [self.checked(v) if v.risky else v for v in outer]
                # A factor over a subset of one contraction operand's axes is one more operand
                # of the contraction: its order multiplies it into the smallest partner
                # (Σ_i W[t, i] V[s, i] / Z[t] scales W (T x D), not the T x T result).
                joins = [v for v in outer if len(inner_f) >= 2 and not v.mask and any(
                    set(v.axes) <= (f.free() if isinstance(f, Term) else set(free_indices(f)))
                    for f in inner_f)] if not inner_conds else []
                outer = [v for v in outer if not any(v is w for w in joins)]
                coef = t.coef
                if len(inner_f) >= 2 and not inner_conds and coef != 1 and math.isfinite(coef):
                    # (so is the coefficient: a 0-d operand, Σ_d 0.125 Q K scales Q)
                    joins.append(Value(_num(coef), (), prec=_ATOM if coef > 0 else _UNARY))
                    t = replace(t, coef=1.0)
                vals.append(self.reduce(t, inner_axes, [*inner_f, *joins], inner_conds, g2))
        lives = [self.live(t, inner_axes, inner_f, inner_conds, g2)] if j and outer else []
        if len(outer_f) + bool(j) > 1:  # (a nested sum times something else)
            lives += [self.nested_live(f, grid) for f in outer_f if isinstance(f, Term) and f.sums]
        vals += outer
        out = self.product(t.coef, vals, grid)
        if j and outer:
            # w * Σ_j f is -0.0 for w < 0 where Σ_j f is 0, but a sum starts at +0.0 (as
            # np.sum): Σ_j w f is +0.0 there (then 1 / it is +inf, not -inf)
            out = replace(out, code=f"{out.paren(_ADD)} + 0.0", prec=_ADD)
        masks = [self.cond_mask(c, grid) for c in outer_conds] + guards
        masks += [v for v in lives if v is not None]
        m = self.conj(masks, grid)
        return out if m is None else self.where(m, out, grid)

    def nested_live(self, f: Term, grid: dict[str, Axis]) -> Value | None:
        """``live`` of the sum ``f`` taken as a factor of a product."""
        if not self.strict:
            return None
        comps = [g for h in f.factors if not isinstance(h, Term) for g in _strong_factors(h)]
        count = self.term_value(Term(1.0, f.sums, comps, f.conds), grid)
        return Value(f"{count.paren(_ADD)} > 0", count.axes, mask=True, prec=_ADD,
                     kernels=count.kernels, size=count.size)

    def live(self, t: Term, inner: dict[str, Axis], inner_f: list[Expr | Term],
             conds: list[Cond], g2: dict[str, Axis]) -> Value | None:
        """Where the sum of ``t`` has a term (the strict code only): a sum with no term, or
        whose terms are all guarded away, is a strong zero, so ``w * Σ`` is 0 there even for
        ``w`` inf or nan (docs/semantics.md). The count of live terms is one more masked sum
        of the sum's brackets and data comparisons. None: not needed (finite inputs)."""
        if not self.strict:
            return None
        comps = [g for f in inner_f if not isinstance(f, Term) for g in _strong_factors(f)]
        count = self.reduce(Term(1.0, t.sums, comps, conds), inner, comps, conds, g2)
        return Value(f"{count.paren(_ADD)} > 0", count.axes, mask=True, prec=_ADD,
                     kernels=count.kernels, size=count.size)

    def scan(self, inner: dict[str, Axis], factors: list[Expr | Term | Value],
             conds: list[Cond], g2: dict[str, Axis]) -> Value | None:
        """A triangular or banded sum ``Σ_j [lo(i) <= j < hi(i)] e(j)`` (``e`` free of ``i``)
        as running sums of ``e`` read at ``lo`` / ``hi``: O(n) instead of an n x n mask.

        Prefix and suffix sums are exact; a band is a difference of running sums, exact for
        finite values only: its operand is checked (the strict code reruns the masked sum).
        The sum may hold more (the normal form flattens products of sums): summed indices only
        the scanned factors carry and no condition mentions are summed out first
        (``Σ_j [j <= i] Σ_k A[j, k]``); the other factors and conditions, a summed ``i`` among
        them, are summed after the scan (``Σ_i w[i] Σ_j [j <= i] x[j]``, or a scan of a scan)."""
        if not inner or self.strict:
            return None
        for j in inner:
            split = _scan_split(j, inner, factors, conds)
            if split is not None:
                break
        else:
            return None
        (i, lo_b, hi_b), cj, with_j, private, rest, rest_conds = split
        others = {a: ax for a, ax in inner.items() if a != j and a not in private}
        if rest or rest_conds or others:  # the running sums first, then the rest of the sum
            scanned = self.scan({j: inner[j], **private}, with_j, cj, g2)
            if scanned is None:
                return None
            return self.reduce(None, others, [*rest, scanned], rest_conds,  # type: ignore[arg-type]
                               g2)
        others = private
        lo = [lo_b] if lo_b is not None else []
        hi = [hi_b] if hi_b is not None else []
        for f in factors:
            free = (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                    else set(free_indices(f)))
            if i in free or j not in free and len(factors) == 1:
                return None
        if others:
            rest = {a: ax for a, ax in g2.items() if a not in others}
            factors = [self.reduce(None, others, factors, [], g2)]  # type: ignore[arg-type]
            g2 = rest
        vals = [f if isinstance(f, Value) else self.term_value(f, g2) if isinstance(f, Term)
                else self.ev(f, g2) for f in factors]
        if any(v.mask for v in vals):
            return None
        v = self.to_num(self.product(1.0, [self.settle(x) for x in vals], g2))
        if j not in v.axes:
            return None
        same = g2[i].is_full() and g2[j].is_full() and g2[i].extent == g2[j].extent
        shifts = [None if not b else b[0] - Affine.var(i) for b in (lo, hi)]
        shifted = same and all(d is None or (not d.index and d.is_integral()) for d in shifts)
        # (a band through shifted slices checks its running sums instead: O(1) per column)
        v = self.checked(v) if lo and hi and not shifted else self.shared(
            v, create=v.prec < _ATOM or "(" in v.code)
        ax = v.axes.index(j)
        axes = tuple(i if a == j else a for a in v.axes)
        n = self.numel_poly(axes, g2)
        self.decide("scan", f"sum over {j} by running sums", axes, in_sum=True)
        if same and not lo and hi[0] == Affine.var(i) + 1:  # Σ_{j <= i}: the running sum
            code = f"np.cumsum({v.code}, axis={ax})"
            ks = self.kernel(RunningSum, v.size, v.size, f"running sum over {j}")
            return Value(self.temp(code, kernels=ks), axes, size=n)
        if same and not hi and lo[0] == Affine.var(i):  # Σ_{j >= i}: reversed
            code = f"_rt.suffix_sum({v.code}, {ax})"
            ks = self.kernel(RunningSum, v.size, v.size, f"reversed running sum over {j}")
            return Value(self.temp(code, kernels=ks), axes, size=n)
        if shifted:
            # bounds i + c (c constant or in sizes): the running sums read through shifted
            # slices, no index arrays
            offs = ["None" if d is None else self.aff_code(d) for d in shifts]
            ks = self.kernel(RunningSum, v.size, v.size, f"running sum over {j}")
            ks += self.kernel(Scan, n, n, f"read at the bounds of {j}")
            if lo and hi:
                ks += self.kernel(Scan, n, n, "second read") + self.kernel(
                    Elementwise, n, n, "difference")
            code = f"_rt.scan_shift({v.code}, {ax}, {offs[0]}, {offs[1]})"
            return Value(self.temp(code, kernels=ks), axes, size=n)
        bounds: list[str] = []
        ks = ()
        for bound in (lo, hi):
            if not bound:
                bounds.append("None")
                continue
            iv, _ = self.index_value(bound[0], g2)
            ks += iv.kernels
            bounds.append(iv.code)
        ks += self.kernel(RunningSum, v.size, v.size, f"running sum over {j}")
        ks += self.kernel(Scan, n, n, f"read at the bounds of {j}")
        if lo and hi:
            ks += self.kernel(Scan, n, n, "second read") + self.kernel(
                Elementwise, n, n, "difference")
        code = f"_rt.scan_sum({v.code}, {ax}, {bounds[0]}, {bounds[1]})"
        return Value(self.temp(code, kernels=ks), axes, size=n)

    def checked(self, v: Value) -> Value:
        """``v`` in a temporary checked to be finite (``_rt.checked`` raises NonFinite)."""
        ks = v.kernels + self.kernel(Elementwise, v.size, ZERO, "finite check")
        return replace(v, code=self.temp(f"_rt.checked({v.code})", kernels=ks), risky=False,
                       prec=_ATOM, kernels=())

    def product(self, coef: float, vals: list[Value], grid: Mapping[str, Axis]) -> Value:
        masks = [v for v in vals if v.mask]
        if masks:  # conditions (data comparisons) guard the product: np.where, not * 0/1
            out = self.product(coef, [v for v in vals if not v.mask], grid)
            m = self.conj(masks, grid)
            assert m is not None
            return self.where(m, out, grid)
        vals = [self.to_num(v) for v in vals]
        if not vals:
            return Value(_num(coef), (), prec=_ATOM if coef >= 0 else _UNARY)
        if coef != 1 and math.isfinite(coef) and len(vals) > 1 and not vals[0].axes:
            # a coefficient times a number first: no pass of its own over the array
            vals[0] = self.binop("*", Value(_num(coef), (), prec=_ATOM if coef >= 0 else _UNARY),
                                 vals[0], grid)
            coef = 1.0
        out = vals[0]
        for v in vals[1:]:
            out = self.binop("*", out, v, grid)
        if coef == 1:
            return out
        ks, size = self.pass_over(Elementwise, out.axes, grid, "scale", out)
        if coef == -1:
            return Value(f"-{out.paren(_UNARY)}", out.axes, risky=out.risky, prec=_UNARY,
                         kernels=ks, size=size)
        return Value(f"{_num(coef)} * {out.paren(_MUL)}", out.axes, risky=out.risky, prec=_MUL,
                     kernels=ks, size=size)

    def reduce(self, t: Term, inner: dict[str, Axis], factors: list[Expr | Term | Value],
               conds: list[Cond], g2: dict[str, Axis]) -> Value:
        """Σ over the axes ``inner`` of the product of ``factors`` (values already evaluated
        on the outer grid are taken as they are) and ``conds``."""
        members = self.member_sum(inner, factors, conds, g2)
        if members is not None:
            return members
        scanned = self.scan(inner, factors, conds, g2)
        if scanned is not None:
            return scanned
        guards: list[Value] = []
        if self.strict and len(factors) > 1:
            factors, guards = self.split_guards(factors, g2)
        # Parameters read directly by a contraction may be checked by their result (deferred).
        vals = [f if isinstance(f, Value) else self.term_value(f, g2) if isinstance(f, Term)
                else self.access(f.name, f.indices, _in_layout(f, g2), defer=True)
                if isinstance(f, Access)
                and self.kinds.get(f.name) != "relation" else self.ev(f, _in_layout(f, g2))
                for f in factors]
        masks = [self.cond_mask(c, g2, in_sum=True) for c in conds] + guards
        vals = [self.to_num(v) if not v.mask else v for v in vals]
        if not self.strict:
            # fast code: a computed operand that overflowed raises NonFinite (the strict code
            # reruns), so the contraction below may reorder its products freely
            vals = [self.checked(v) if v.risky and not v.mask else v for v in vals]
        masks += [v for v in vals if v.mask]
        vals = [v for v in vals if not v.mask]
        vals_axes = set().union(*(set(v.axes) for v in vals)) if vals else set()
        if masks or len(vals) < 2 or len(vals_axes | set(inner)) > len(_LETTERS):
            vals = [self.settle(v) for v in vals]  # no contraction step to check a result
        used: set[str] = set()
        for v in vals + masks:
            used |= set(v.axes)
        absent = [a for a in inner if a not in used]
        summed = [a for a in inner if a in used]
        mult = " * ".join(_factor(self.count_code(inner[a])) for a in absent)
        if not summed:
            vals = [self.settle(v) for v in vals]
            return self.scale_by_count(mult, self.product(1.0, vals, g2), g2)
        if not masks and len(vals) == 1:
            v = self.shared(vals[0], create="(" in vals[0].code)
            pos = tuple(k for k, a in enumerate(v.axes) if a in summed)
            self.decide("reduce", f"sum over {', '.join(summed)}", v.axes, in_sum=True)
            ax = "" if len(pos) == len(v.axes) else f"axis={pos if len(pos) > 1 else pos[0]}"
            # (the method: np.sum's dispatch costs about as much as summing a small array)
            kept = tuple(a for a in v.axes if a not in summed)
            n = self.numel_poly(kept, g2)
            ks = v.kernels + self.kernel(Reduce, self.numel_poly(v.axes, g2), n, "sum")
            res = Value(self.temp(f"{v.paren()}.sum({ax})", kernels=ks), kept, risky=v.risky,
                        size=n)
        elif not masks and vals and len(vals_axes | set(inner)) <= len(_LETTERS) and not (
            # A contraction sums an operand over indices private to it, i.e. takes the others
            # out of that sum: not exact when one may be inf (inf * (a + b) is not
            # inf * a + inf * b for a, b of opposite signs). Then: the product, summed.
            any(v.risky for v in vals) and any(not set(summed) <= set(v.axes) for v in vals)
        ):
            res = self.einsum(vals, summed, g2)
        else:
            if not vals:
                prod = Value("1", ())  # (a 0-d one: broadcast below)
            else:
                prod = self.product(1.0, vals, g2)
            m = self.conj(masks, g2)
            if m is not None:
                prod = self.where(m, prod, g2)
            axes = self.order(g2, prod.axes)
            pos = tuple(k for k, a in enumerate(axes) if a in summed)
            if set(summed) - set(prod.axes):
                # A summed index only in a mask that the product does not carry: broadcast it.
                full = self.order(g2, prod.axes, summed)
                prod = Value(
                    f"np.broadcast_to({self.align(prod, full)}, "
                    f"{self._shape_code([g2[a] for a in full])})", full, risky=prod.risky,
                    kernels=prod.kernels, size=self.numel_poly(full, g2),
                )
                axes = full
                pos = tuple(k for k, a in enumerate(axes) if a in summed)
            self.decide("reduce", f"sum over {', '.join(summed)}", axes, in_sum=True)
            code = f"{prod.paren()}.sum(axis={pos if len(pos) > 1 else pos[0]})"
            kept = tuple(a for a in axes if a not in summed)
            n = self.numel_poly(kept, g2)
            ks = prod.kernels + self.kernel(Reduce, self.numel_poly(axes, g2), n, "sum")
            name = self.temp(code, kernels=ks)
            res = Value(name, kept, risky=prod.risky, size=n)
        return self.scale_by_count(mult, res, g2)

    def split_guards(self, factors: Sequence[Expr | Term | Value], g2: dict[str, Axis]
                     ) -> tuple[list[Expr | Term | Value], list[Value]]:
        """The factors with their brackets and data comparisons taken out as masks of the whole
        product (the strict code): ``[p] * (x - z)`` evaluated alone is 0.0 where p is false, a
        plain number that another factor's inf turns into nan; the mask keeps the strong zero
        (``Σ_e [a] (x - z) w`` is 0 where a is false even for w inf, docs/semantics.md)."""
        out: list[Expr | Term | Value] = []
        guards: list[Value] = []
        for f in factors:
            strong = [] if isinstance(f, Value | Term | Bracket) else _strong_factors(f)
            if strong:
                layout = _in_layout(f, g2)
                guards += [self.ev(g, layout) for g in strong]
                f = _without_brackets(f)
            out.append(f)
        return out, guards

    def settle(self, v: Value) -> Value:
        """``v`` with its unchecked parameters left to the caller's scan before the call."""
        for name in sorted(v.unchecked):
            self.note_finite("finite-input", name)
        return replace(v, unchecked=frozenset()) if v.unchecked else v

    def scale_by_count(self, mult: str, v: Value, grid: Mapping[str, Axis]) -> Value:
        """``v`` times the number of points of the summed indices it does not depend on."""
        if not mult:
            return v
        if v.code == "1" and not v.axes:
            return Value(mult, (), prec=_MUL if "*" in mult else _ATOM)
        ks, size = self.pass_over(Elementwise, v.axes, grid, "scale", v)
        if v.risky:  # an empty range has no term: 0 even times inf (a strong zero)
            return Value(f"_rt.smul({mult}, {v.code})", v.axes, risky=True, kernels=ks, size=size)
        # (+ 0.0: a sum starts at +0.0, so n copies of -0.0 sum to +0.0 as in np.sum)
        return Value(f"{mult} * {v.paren(_MUL)} + 0.0", v.axes, prec=_ADD, kernels=ks,
                     size=size)

    def _shape_code(self, axes: Sequence[Axis]) -> str:
        codes = [self.count_code(a) for a in axes]
        return f"({codes[0]},)" if len(codes) == 1 else f"({', '.join(codes)})"

    def einsum(self, vals: list[Value], summed: list[str], g2: dict[str, Axis]) -> Value:
        """Σ over ``summed`` of the product of ``vals``, one pairwise step at a time in the order
        of the cost model's contraction path; each step that is a matrix product runs on BLAS."""
        allaxes = self.order(g2, *(v.axes for v in vals))
        out_axes = tuple(a for a in allaxes if a not in summed)
        if self.indent and len(vals) > 2:
            # in a loop: the operands that do not change with it are contracted first, in a
            # step hoisted out of the loop (eqsat_ad.backend.loops)
            variant = self.loop_variant()
            # (not a factor over the result's axes only: it scales the small result instead)
            fixed = [v for v in vals if not set(_NAME.findall(v.code)) & variant
                     and not set(v.axes) <= set(out_axes)]
            if len(fixed) >= 2 and len(fixed) < len(vals):
                moving = [v for v in vals if not any(v is f for f in fixed)]
                fixed.sort(key=lambda v: -len(v.axes))  # (the widest first: shared products)
                keep = set(out_axes).union(*(v.axes for v in moving))
                pre = self.einsum(fixed, [a for a in summed if a not in keep], g2)
                return self.einsum([pre, *moving], [a for a in summed if a in keep], g2)
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
                # layout of its largest operand: contiguous reads, no transposed pass
                big = max(picked, key=lambda o: len(o.axes))
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
            spec = f"{spec_of}->{''.join(letters[a] for a in out)}"
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
            spec = f"{spec_of}->{''.join(letters[a] for a in axes)}"
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

    # --- statements ----------------------------------------------------------------------------


def _literal(v: Value) -> bool:
    """A number (a contraction's coefficient): written into the step that scales by it."""
    try:
        float(v.code)
    except ValueError:
        return False
    return not v.axes


def _in_layout(e: Expr, grid: dict[str, Axis]) -> dict[str, Axis]:
    """``grid`` with the axes of ``e``'s first array read that spans two or more first, in that
    array's order: an elementwise operand of a contraction is computed along the layout of what
    it reads (contiguous passes; ``E[k, i] * G[k, i]`` is the same temporary whichever of k, i
    is summed), and the contraction takes it transposed at no cost."""
    stack = [e]
    while stack:
        f = stack.pop(0)
        if isinstance(f, Access):
            names = [a.free_indices() for a in f.indices]
            axes = [next(iter(n)) for n in names if len(n) == 1]
            if len(axes) >= 2 and len(set(axes)) == len(axes) and all(a in grid for a in axes):
                return {**{a: grid[a] for a in axes}, **grid}
        stack.extend(children(f))
    return grid


# ================================================================================================
# Contraction order
# ================================================================================================


def contraction_steps(
    operands: Sequence[tuple[str, ...]],
    out: tuple[str, ...],
    extents: Mapping[str, Dim],
    sizes: Mapping[str, int] | None = None,
) -> list[tuple[int, ...]]:
    """The pairwise contraction path (NumPy's format) the plan prices: one search for the cost
    model, extraction and the backend (:func:`eqsat_ad.plan.order.contraction_path`)."""
    return list(contraction_path(list(operands), tuple(out), dict(extents), sizes).steps)


def _scan_split(j: str, inner: Mapping[str, Axis], factors: Sequence[Expr | Term | Value],
                conds: Sequence[Cond]) -> tuple | None:
    """How ``Σ_inner Π conds Π factors`` runs as a scan over ``j``: ``(scan bounds, the
    conditions on j, the factors with j, the summed indices only they carry (summed first),
    the other factors, the other conditions)``, or None when ``j`` is not a scan: its
    conditions are not bounds in one other index ``i``, or its factors hold ``i`` or share a
    summed index with the rest."""
    cj = [c for c in conds if j in c.indices()]
    found = scan_bounds(j, cj)
    if found is None:
        return None
    i = found[0]
    rest_conds = [c for c in conds if j not in c.indices()]
    with_j: list[Expr | Term | Value] = []
    rest: list[Expr | Term | Value] = []
    free_j: set[str] = set()
    free_rest: set[str] = set()
    for f in factors:
        free = (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                else set(free_indices(f)))
        if j in free:
            with_j.append(f)
            free_j |= free
        else:
            rest.append(f)
            free_rest |= free
    if not with_j or i in free_j:
        return None
    in_conds = set().union(*(c.indices() for c in rest_conds)) if rest_conds else set()
    shared = (free_j & set(inner)) - {j}
    private = {a: inner[a] for a in shared if a not in free_rest and a not in in_conds}
    if shared - set(private):
        return None
    if not rest and not rest_conds and i not in inner:
        with_j = list(factors)  # the simple scan: every factor is the operand
    return found, cj, with_j, private, rest, rest_conds
