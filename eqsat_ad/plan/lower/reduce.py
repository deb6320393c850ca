"""Terms evaluated on a grid: equalities solved, ranges narrowed, sums run as scans, reductions
or contractions (:mod:`.contract`: in the plan's order, ``@`` where it is a matrix product)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ...ir.expr import Access, Bracket, Const, Expr, children, free_indices
from ...ir.index import Affine
from ..kernels import (
    Elementwise,
    Reduce,
    RunningSum,
    Scan,
)
from ..normal import Cond, Term, without_brackets
from ..order import joining_operands, same_axes_groups
from ..poly import ZERO
from ..ranges import Axis, sum_term
from ..windows import scan_split
from .contract import Contractions
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


class Reductions(Contractions):
    def term_value(self, t: Term, grid: dict[str, Axis]) -> Value:
        """A term evaluated on ``grid`` (its sums reduced)."""
        eliminated: list[str] = []
        planned = sum_term(t, eliminated, divide_out=not self.strict)
        for v in eliminated:
            self.decide("eliminated", f"sum over {v} removed by an equality")
        if planned is None:
            return Value("0", ())
        t, inner_axes, (inner_f, inner_conds), (outer_f, outer_conds) = planned
        g2 = dict(grid)
        g2.update(inner_axes)
        j = set(inner_axes)
        guards: list[Value] = []
        if self.strict and (len(outer_f) + bool(j) > 1 or t.coef < 0):
            # (also a negated factor: -([p] a + [q] b) is a strong zero, +0.0, where p and q
            # are false, not the negation of the factor's 0.0)
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
                # a factor over a subset of one contraction operand's axes is one more operand
                # of the contraction (eqsat_ad.plan.order.joining_operands)
                pos = joining_operands([None if v.mask else frozenset(v.axes) for v in outer],
                                       [_free(f) for f in inner_f], bool(inner_conds))
                joins = [outer[k] for k in pos]
                outer = [v for k, v in enumerate(outer) if k not in pos]
                coef = t.coef
                if len(inner_f) >= 2 and not inner_conds and coef != 1 and math.isfinite(coef):
                    # (so is the coefficient: a 0-d operand, Σ_d 0.125 Q K scales Q)
                    joins.append(Value(_num(coef), (), prec=_ATOM if coef > 0 else _UNARY))
                    t = replace(t, coef=1.0)
                vals.append(self.reduce(t, inner_axes, [*inner_f, *joins], inner_conds, g2))
        # (a nested sum times something else: split_guards above masks by its live terms; a
        # constant leaves a sum with no live term a strong zero, but a negative coefficient
        # applied outside the sum must not turn that strong zero's +0.0 into -0.0: fuzz 2035
        # #120, A / -Σ_i R[i, 1] is A / +0.0 where no R[i, 1] holds)
        lives = [self.live(t, inner_axes, inner_f, inner_conds, g2)] if j and (
            any(not isinstance(f, Const) for f in outer_f) or t.coef < 0) else []
        vals += outer
        # (the strict normal form's coefficient of a sum is applied outside it, after + 0.0)
        coef, after = (1.0, t.coef) if self.strict and j and outer else (t.coef, 1.0)
        out = self.product(coef, vals, grid)
        if j and outer:
            # w * Σ_j f is -0.0 for w < 0 where Σ_j f is 0, but a sum starts at +0.0 (as
            # np.sum): Σ_j w f is +0.0 there (then 1 / it is +inf, not -inf)
            out = replace(out, code=f"{out.paren(_ADD)} + 0.0", prec=_ADD)
        if after != 1:
            out = self.product(after, [out], grid)
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
        # (a nested sum's conditions free of its own summed indices guard the outer term too:
        # Σ_i t · ([i > 1] · Σ_k …) keeps [i > 1] with the inner sum; fuzz 2038 #3166)
        conds = conds + [c for f in inner_f if isinstance(f, Term) for c in f.conds
                         if not c.indices() & {iv.name for iv in f.sums}]
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
            split = scan_split(j, inner, factors, conds, _free)
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
            free = _free(f)
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
        # (the operand runs over j's range in g2, which its conditions may have narrowed to
        # start above 0: the bounds, values of j, are read as positions in it; fuzz 2037
        # #2048, Σ_j [1 < j < M - 1 - 2 i] e(j) over j from 2)
        start = None if g2[j].lo == (Affine.constant(0),) else self.bound_code(g2[j].lo, True)
        for bound in (lo, hi):
            if not bound:
                bounds.append("None")
                continue
            iv, _ = self.index_value(bound[0], g2)
            ks += iv.kernels
            bounds.append(iv.code if start is None else f"({iv.code}) - ({start})")
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
            # reruns), so the contraction below may reorder its products freely; risky operands
            # over the same axes are multiplied first and checked once (one array, not two)
            vals = _same_axes_first(self, vals, g2)
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
            prod = self.product(1.0, vals, g2)
            # (a condition free of the summed indices still guards every term: fuzz 2031 #3854,
            # Σ_i ne(0, [i > i]) is 0, not N)
            m = self.conj(masks, g2)
            if m is not None:
                prod = self.where(m, prod, g2)
            return self.scale_by_count(mult, prod, g2)
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
        """The factors with their brackets and data comparisons (and a nested sum's count of
        live terms, and a sum of guarded terms' own guard) taken out as masks of the whole
        product (the strict code): ``[p] * (x -
        z)`` evaluated alone is 0.0 where p is false, a plain number that another factor's inf
        turns into nan; the mask keeps the strong zero (``Σ_e [a] (x - z) w`` is 0 where a is
        false even for w inf, docs/semantics.md)."""
        out: list[Expr | Term | Value] = []
        guards: list[Value] = []
        for f in factors:
            if isinstance(f, Term) and f.sums:
                # a nested sum with no live term is a strong zero: Σ_j x[j] Σ_k [i == j + k]
                # w[k] is 0 where no k fits, even for x[j] nan (the live count masks it)
                live = self.nested_live(f, g2)
                if live is not None:
                    guards.append(live)
            if isinstance(f, Value | Term | Bracket):
                out.append(f)
                continue
            strong = _strong_factors(f)
            sums = self.sum_guards(f, _in_layout(f, g2))  # (a sum of guarded terms: [p] a + [q])
            if strong:
                layout = _in_layout(f, g2)
                guards += [self.ev(g, layout) for g in strong]
                f = without_brackets(f)
            guards += sums
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

    # --- statements ----------------------------------------------------------------------------


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


def _free(f: Expr | Term | Value) -> set[str]:
    """The indices a factor of a sum ranges over (a computed value's: its axes)."""
    return set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term) \
        else set(free_indices(f))


# ================================================================================================
# Contraction order
# ================================================================================================


def _same_axes_first(gen: Reductions, vals: list[Value], grid: Mapping[str, Axis]
                     ) -> list[Value]:
    """``vals`` with each group of risky operands (computed values that may overflow) over one
    set of axes (:func:`eqsat_ad.plan.order.same_axes_groups`, the plan's choice) replaced by
    their elementwise product (the others are left to the contraction: a loop-invariant one
    stays checked once, outside the loop)."""
    out: list[Value | None] = list(vals)
    for ks in same_axes_groups([frozenset(v.axes) if v.risky and not v.mask else None
                                for v in vals]):
        # (in the first one's layout: the same product read transposed by another term is
        # the same code, computed once)
        layout = {a: grid[a] for a in vals[ks[0]].axes}
        out[ks[0]] = gen.product(1.0, [vals[k] for k in ks], layout)
        for k in ks[1:]:
            out[k] = None
    return [v for v in out if v is not None]
