"""Statements: terms written into the output (assignments, slice updates, diagonal and point
writes, structured outputs) and the whole program's function."""

from __future__ import annotations

import keyword
import math
from dataclasses import replace
from fractions import Fraction

from ...ir.errors import ProgramError
from ...ir.expr import (
    Access,
    Binary,
    Bracket,
    Const,
    Expr,
    Neg,
    free_indices,
)
from ...ir.index import Affine, IndexVar
from ...ir.printer import print_expr, print_statement
from ...ir.program import Statement
from .. import split as plan_split
from ..kernels import (
    Elementwise,
    Fill,
    Kernel,
    Plan,
    Scatter,
    SliceUpdate,
    StridedSliceUpdate,
)
from ..normal import (
    Term,
    by_component,
    conditions,
    expand,
    outer_groups,
    static_truth,
)
from ..poly import ZERO, Poly
from ..ranges import Axis, StatementTerm, statement_term
from ..split import SplitPrice, inline_small_arrays, split_price
from ..spread import spread_reads
from ..windows import unroll_windows
from .liveness import release_dead
from .loops import Loops, _calls
from .reads import _is_zero, _leaf_factors
from .reduce import Reductions
from .values import (
    _ATOM,
    _RESERVED,
    _UNARY,
    Lowered,
    Value,
    _num,
)


class Codegen(Loops, Reductions):
    def statement(self, s: Statement) -> None:
        self.stmt = s.name
        self.trial_prices = {}  # (priced from the state at this statement: Loops.trial_price)
        self.emit(f"# {print_statement(s)}")
        body, plus_zero = _zero_addend(s.body)
        terms = expand(body, self.names)
        if plus_zero:  # (a literal zero addend is added after the writes: not split)
            self.lower_terms(s, terms, plus_zero=True)
            return
        # Broadcast sums of reads inside contractions spread over their terms
        # (plan.spread.spread_reads: exact for finite values, the fast code only) where that
        # is priced no higher at the call's sizes and allocates no larger array (as a split).
        spread = None if self.strict or not self.sizes or s.name in self.structured \
            else spread_reads(terms, self.names)
        if spread is None and not self.split_axes(s, terms):
            self.lower_terms(s, terms)
            return
        split, price = self.split_choice(s, terms)
        if spread is not None:
            split2, price2 = self.split_choice(s, spread)
            if price2.price <= price.price and price2.peak <= price.peak:
                self.decide("spread", "sums of reads distributed over their contractions")
                terms, split = spread, split2
        self.lower_choice(s, terms, split)

    def full_axis(self, iv: IndexVar) -> Axis:
        return Axis.full(iv)

    def lower_terms(self, s: Statement, terms: list[Term], more: bool = False,
                    plus_zero: bool = False) -> None:
        """Write ``terms`` into ``s``'s array (``more``: other writes into it follow;
        ``plus_zero``: then add a literal 0.0, as IEEE does to a -0.0)."""
        gens = [iv.name for iv in s.indices]
        py = self.py[s.name]
        shape = self._shape_code([Axis.full(iv) for iv in s.indices]) if gens else "()"
        full = {iv.name: Axis.full(iv) for iv in s.indices}
        risky = False
        plans = []
        for t0 in terms:
            unrolled = self.windows(t0)
            # (a sum adds its terms to +0.0: unrolled, -0.0 + -0.0 stays -0.0, so the total
            # gets the + 0.0 the sum started from)
            plus_zero |= len(unrolled) != 1 or unrolled[0] is not t0
            for t in unrolled:
                plan = self.plan_term(t, s)
                if plan is None:
                    continue
                # a sum an equality removed whole is that term plus the +0.0 the sum started
                # from: Σ_i [i == 0] y is +0.0 at y = -0.0 (1 / it is +inf). Added where the
                # sign can show: a scalar (free), or a divisor's read
                shows = bool(t.sums) and not plan[0].sums and (
                    not gens or s.name in self.zero_sign)
                plus_zero |= shows and t.coef > 0
                if shows and t.coef < 0:
                    plan = _zero_inside(plan)
                plans.append(plan)
        if not gens:
            total = self.to_num(self.combine([t for t, _, _ in plans], {}))
            self.decide("assign", "scalar")
            self.emit(f"{py} = _dt({total.code}){' + 0.0' if plus_zero else ''}", total.kernels)
            self.risky_vars.discard(s.name)
            if total.risky:
                self.risky_vars.add(s.name)
            self.shapes[s.name] = ()
            self.kinds[s.name] = "tensor"
            return
        scale = None if self.strict or s.name in self.structured else _common_coefficient(plans)
        if scale is not None:
            plans = [StatementTerm(replace(t, coef=1.0 if t.coef > 0 else -1.0), a, sv)
                     for t, a, sv in plans]
            self.decide("factored", f"{py}: the terms' coefficient {_num(scale)} applied once")
        dense = [p for p in plans if not p[2] and all(a.is_full() for a in p[1].values())]
        rest = [p for p in plans if p not in dense]
        if s.name in self.structured and all(solved for _, _, solved in plans):
            # Every term writes at points fixed by equalities: return those points only.
            self.structured_output(py, s, plans, shape)
            self.shapes[s.name] = s.shape
            self.kinds[s.name] = "tensor"
            return
        if s.name in self.structured and len(plans) == 1 and self.outer_output(py, s, plans[0]):
            self.shapes[s.name] = s.shape
            self.kinds[s.name] = "tensor"
            return
        # (a sum starts from +0.0: an array that starts without -0.0, zeros or a copy made
        # with + 0.0, and has every later term added to it, none assigned alone, holds no
        # -0.0, so no + 0.0 pass is due)
        adds_only = not self.strict and not more and len(rest) > (0 if dense else 1)
        from_zero = False
        if dense:
            # Terms over the whole output: one expression, assigned (not added to zeros).
            v = self.combine([t for t, _, _ in dense], full)
            self.decide("assign", "dense", tuple(gens))
            v = self.to_num(v)
            if scale is not None and not rest and not more:  # (the sum, scaled once)
                v, scale = self.product(scale, [v], full), None
            final = not rest and not more and s.name not in self.returned
            n = self.numel_poly(gens, full)
            copy = v.kernels + self.kernel(Elementwise, n, n, "copy")
            if v.axes == tuple(gens) and (v.fresh or final):
                # A fresh array, or a view read only by later statements (never mutated).
                self.assign(py, v.code, v.kernels)
            elif final:
                code = self.align(v, gens, False) if v.axes else f"_dt({v.code})"
                self.emit(f"{py} = np.broadcast_to({code}, {shape})", v.kernels)
            elif v.axes == tuple(gens) and v.code.startswith("_rt."):
                self.emit(f"{py} = _rt.fresh({v.code}, _dt)", copy)  # copies only a view
            elif v.axes == tuple(gens) and plus_zero and adds_only:
                self.emit(f"{py} = np.add({v.code}, 0.0, dtype=_dt)", copy)
                from_zero = True
            elif v.axes == tuple(gens):
                self.emit(f"{py} = np.array({v.code}, dtype=_dt)", copy)
            else:
                self.emit(
                    f"{py} = np.broadcast_to({self.align(v, gens, False)}, {shape}).astype(_dt)",
                    copy,
                )
            risky = v.risky
        else:
            n = self.numel_poly(gens, full)
            self.emit(f"{py} = np.zeros({shape}, dtype=_dt)",
                      self.kernel(Fill, n, n, "zero-fill"))
            from_zero = adds_only
        for t, axes, solved in rest:
            risky |= self.write(py, s, t, axes, solved,
                                alone=not dense and len(rest) == 1 and not more)
        if scale is not None:  # (the array is the statement's own: zeros, or a copy)
            n = self.numel_poly(gens, full)
            self.emit(f"{py} *= {_num(scale)}",
                      self.kernel(Elementwise, n, ZERO, "common coefficient"))
        # (the strict code: outside a term's region the term is a strong zero, whose +0.0
        # IEEE adds to the dense terms' -0.0; the fast code reruns the strict code where the
        # sign of a zero could show, a division by it)
        plus_zero |= self.strict and bool(dense) and bool(rest)
        if plus_zero and not from_zero:  # IEEE: -0.0 + 0 is +0.0 (no literal zero term)
            n = self.numel_poly(gens, full)
            self.emit(f"{py} = {py} + 0.0", self.kernel(Elementwise, n, n, "+ 0.0"))
        if risky:
            self.risky_vars.add(s.name)
        self.shapes[s.name] = s.shape
        self.kinds[s.name] = "tensor"

    def windows(self, t: Term) -> list[Term]:
        """A statement term whose sums are windows, as one term per window offset
        (:func:`eqsat_ad.plan.windows.unroll_windows`)."""
        out = unroll_windows(t, self.shapes, narrow=not self.strict)
        if out is None:
            return [t]
        self.decide("window-unrolled", f"{len(out)} shifted slice term(s)")
        return out

    def plan_term(self, t: Term, s: Statement) -> StatementTerm | None:
        """A statement-level term as it is written (:func:`eqsat_ad.plan.ranges.statement_term`):
        (term, generator axes, solved generators); None where it is 0."""
        eliminated: list[str] = []
        planned = statement_term(t, s.indices, eliminated)
        for v in eliminated:
            self.decide("eliminated", f"sum over {v} removed by an equality")
        return planned

    def structured_output(self, py: str, s: Statement, plans: list, shape: str) -> None:
        """A returned statement whose terms are all scatters, as a Diagonal or a Sparse."""
        if len(plans) == 1:
            t, axes, solved = plans[0]
            (rem,) = axes if len(axes) == 1 else (None,)
            diagonal = (
                rem is not None and axes[rem].is_full() and not t.conds
                and len({iv.extent for iv in s.indices}) == 1
                and all(a == Affine(((rem, Fraction(1)),)) for a in solved.values())
            )
            if diagonal:
                v = self.to_num(self.term_value(t, dict(axes)))
                code = self.align(v, [rem], False) if v.axes else v.code
                self.decide("diagonal", f"{py} on the diagonal", (rem,))
                n = self.axis_count(axes[rem])
                self.emit(f"{py} = _rt.Diagonal({code}, {shape}, _dt)",
                          v.kernels + self.kernel(Fill, n, n, "diagonal storage"))
                return
        self.decide("sparse", f"{py}: {len(plans)} term(s)")
        self.emit(f"{py} = _rt.SparseBuilder({shape}, _dt)")
        for t, axes, solved in plans:
            self.write(py, s, t, axes, solved, sparse=True)
        self.emit(f"{py} = {py}.build()")

    def outer_output(self, py: str, s: Statement, plan: tuple) -> bool:
        """A returned ``y[I, J] = u(I) * v(J)`` as an Outer of its factors; False if not one.

        The factors must split the generators into groups of consecutive axes that share no
        index (``x[i] * x[j]``, ``ybar * a[i, j] * b[k]``); index-free factors join the first.
        """
        t, axes, solved = plan
        if not t.sums and not t.conds and len(t.factors) == 1 and isinstance(t.factors[0], Term):
            inner = t.factors[0]
            t = replace(inner, coef=inner.coef * t.coef)
        if not self.strict:  # exact for finite values: the fast code's inputs are checked
            t = by_component(t)
        gens = [iv.name for iv in s.indices]
        if solved or len(gens) < 2 or t.sums or t.conds:
            return False
        if not all(ax.is_full() for ax in axes.values()):
            return False
        groups = outer_groups(t.factors, gens, lambda f: f.free() if isinstance(f, Term)
                              else set(free_indices(f)))
        if groups is None:
            return False  # an index shared by all factors, or groups that interleave
        if not groups[0][0]:  # index-free factors join the first group
            groups = [(groups[1][0], groups[0][1] + groups[1][1]), *groups[2:]]
        grid = dict(axes)
        codes = []
        ks: tuple[Kernel, ...] = ()
        for k, (order, fs) in enumerate(groups):
            vals = [self.term_value(f, grid) if isinstance(f, Term) else self.ev(f, grid)
                    for f in fs]
            v = self.to_num(self.product(t.coef if k == 0 else 1.0, vals, grid))
            ks += v.kernels
            if set(v.axes) != set(order):
                n = self.numel_poly(order, grid)
                ks += self.kernel(Elementwise, n, n, "outer factor")
            code = self.align(v, order, False)
            if set(v.axes) != set(order):
                shp = self._shape_code([axes[n] for n in order])
                code = f"np.broadcast_to({code}, {shp})"
            codes.append(code)
        shape = self._shape_code([axes[n] for n in gens])
        self.decide("outer", f"{py}: {len(groups)} factors", tuple(gens))
        self.emit(f"{py} = _rt.Outer(({', '.join(codes)}), {shape}, _dt)", ks)
        return True

    def write(self, py: str, s: Statement, t: Term, axes: dict[str, Axis],
              solved: dict[str, Affine], sparse: bool = False, alone: bool = False) -> bool:
        """Write term ``t`` into ``py`` (zeros, or the terms before it) over ``axes``, at the
        points ``solved`` gives. ``alone``: the statement's only term, into zeros: assigned,
        not added (``0.0 + t`` is +0.0 where ``t`` is -0.0: docs/semantics.md)."""
        sign = 1
        if t.coef < 0:
            sign, t = -1, replace(t, coef=-t.coef)
        op = "=" if alone else "+=" if sign > 0 else "-="
        grid = dict(axes)
        # Conditions on the remaining generators: masks applied at the write.
        mask_conds = list(t.conds)
        t = replace(t, conds=[])
        v = None
        if not axes:
            # Reads the guard of a point write proves in range are plain indexing, but only in
            # the guarded line itself: anything emitted before the guard is redone without.
            mark = self.mark()
            outside = self.facts
            self.facts = outside + [c.aff for c in mask_conds
                                    if c.kind == "ge" and not c.indices()]
            v = self.to_num(self.term_value(t, grid))
            self.facts = outside
            if self.facts_unsafe(mark):
                self.rollback(mark)
                v = None
        if v is None:
            v = self.to_num(self.term_value(t, grid))
        rem = list(axes)
        masks = [self.cond_mask(c, grid) for c in mask_conds]
        m = self.conj(masks, grid)
        # (``alone`` never comes with ``sparse``: structured outputs add their terms)
        negate_into = alone and sign < 0 and not solved and m is None
        if alone and sign < 0 and not negate_into and not (
                solved and rem and m is not None):  # (a masked scatter takes its sign)
            # (-v where the mask holds, a strong zero +0.0 elsewhere)
            ks, size = self.pass_over(Elementwise, v.axes, grid, "-", v)
            v = Value(f"-{v.paren(_UNARY)}", v.axes, risky=v.risky, prec=_UNARY, kernels=ks,
                      size=size)
            sign = 1
        if not solved:
            region = []
            for iv in s.indices:
                ax = axes[iv.name]
                if ax.is_full():
                    region.append(":")
                else:
                    lo, hi = self.bound_code(ax.lo, True), self.bound_code(ax.hi, False)
                    if not all(self.nonneg(h) for h in ax.hi):
                        hi = f"max({hi}, 0)"  # a negative stop would count from the end
                    region.append(f"{'' if lo == '0' else lo}:{hi}")
            target = rem
            if m is not None and not rem and not m.axes and not v.axes:
                # a scalar guard is a conditional expression, evaluated lazily: np.where would
                # also evaluate a read that the guard proves in range (the facts above) where
                # the guard is false and the read is outside its array
                val = Value(f"(_dt({v.code}) if {m.code} else 0)", (),
                            kernels=m.kernels + v.kernels)
            else:
                val = v if m is None else self.where(m, v, grid)
            lhs = py if all(r == ":" for r in region) else f"{py}[{', '.join(region)}]"
            kind = "slice-write" if lhs != py else "add"
            self.decide(kind, lhs, tuple(rem))
            n = self.numel_poly(rem, grid)
            # one contiguous block only when no axis but the first is cut (priced apart)
            cut = [k for k, r in enumerate(region) if r != ":"]
            update = SliceUpdate if cut in ([], [0]) else StridedSliceUpdate
            view = f"{py}[...]" if lhs == py else lhs
            code = self.align(val, target, False)
            line = (f"np.negative({code}, out={view})" if negate_into
                    else f"{view} = {code}" if alone else f"{lhs} {op} {code}")
            self.emit(line, val.kernels + self.kernel(update, n, ZERO, lhs))
            return v.risky
        # Scatter: output coordinates from the remaining generators.
        coords: list[str] = []
        n = self.numel_poly(rem, grid)
        ks = v.kernels + (m.kernels if m is not None else ()) + self.kernel(
            Scatter, n, ZERO, f"{py} at {len(solved)} solved index(es)")
        for iv in s.indices:
            if iv.name in solved:
                a = solved[iv.name]
                iv_val, q = self.index_value(a, grid)
                ks = iv_val.kernels + ks
                code = self.align(iv_val, rem) if iv_val.axes else iv_val.code
                if q != 1:
                    code = f"({code}) // {q}"
                coords.append(code)
            else:
                coords.append(self.align(self.arange(axes[iv.name]), rem))
        if not rem:
            self.decide("point-write", ", ".join(coords))
            line = f"{py}[{', '.join(coords)}] {op} {v.code}"
            if sparse:
                point = f"({coords[0]},)" if len(coords) == 1 else f"({', '.join(coords)})"
                value = f"-{v.paren(_UNARY)}" if sign < 0 else v.code
                line = f"{py}.points.append(({point}, {value}))"
            if m is None:
                self.emit(line, ks)
            else:
                cond = m.code[1:-1] if m.prec == _ATOM and m.code.startswith("(") else m.code
                self.emit(f"if {cond}:")
                self.emit(f"    {line}", ks)
            return v.risky
        self.decide("scatter", f"{py}[{', '.join(coords)}]", tuple(rem))
        if sparse:
            args = [f"({', '.join(coords)},)", self.align(v, rem, False)]
            if m is not None or sign < 0:
                args.append("True" if m is None else self.align(m, rem, False))
            if sign < 0:
                args.append("-1")
            self.emit(f"{py}.add({', '.join(args)})", ks)
        elif m is None:
            self.emit(f"{py}[{', '.join(coords)}] {op} {self.align(v, rem, False)}", ks)
        else:
            self.emit(
                f"_rt.scatter_add({py}, ({', '.join(coords)},), {self.align(v, rem, False)}, "
                f"{self.align(m, rem, False)}, {sign}{', True' if alone else ''})", ks,
            )
        return v.risky

    # --- the program ---------------------------------------------------------------------------
    def program(self) -> Lowered:
        """The lowered program; in the fast code, arrays over a small axis that are computed
        elementwise are recomputed where they are read when that is priced cheaper (their
        readers then loop over the small axis: :mod:`eqsat_ad.plan.split`)."""
        alt = None if self.strict or not self.sizes else inline_small_arrays(self.prog,
                                                                            self.sizes)
        if alt is None:
            return self.lowered()
        other = type(self)(alt, self.sizes, self.strict, *self.options)
        for name in [x.name for x in self.prog.statements if x not in alt.statements]:
            other.stmt = name
            other.decide("recomputed", f"{name} computed where it is read, not stored")
        mine, theirs = self.lowered(), other.lowered()
        if plan_split.prefer(other.price(theirs), self.price(mine)):
            return theirs
        return mine

    def price(self, lowered: Lowered) -> SplitPrice:
        """:func:`eqsat_ad.plan.split.split_price` of a lowering by this generator."""
        ks = list(lowered.plan.kernels)
        return split_price(ks, _calls(ks) + self.loop_calls, self.sizes)

    def lowered(self) -> Lowered:
        prog = self.prog
        fname = self.py.get(prog.name, prog.name) if prog.name.isidentifier() else "f"
        if keyword.iskeyword(fname) or fname in _RESERVED:
            fname = f"{fname}_"
        params = ", ".join(self.py[p] for p in prog.param_names)
        header = [f"def {fname}({params}):"]
        doc = [f'    """Generated by eqsat_ad from the index-language program {prog.name!r}."""']
        floats = [self.py[p.name] for p in prog.params if p.kind == "tensor"]
        self.emit(f"_dt = _rt.float_type({', '.join(floats)})")
        seen: set[str] = set()
        for p in prog.params:
            for k, d in enumerate(p.shape):
                if not isinstance(d, int) and d.name not in seen:
                    seen.add(d.name)
                    self.emit(f"{self.py[d.name]} = {self.py[p.name]}.shape[{k}]")
        for n in sorted(self.sparse):
            self.emit(f"{self.py[f'nnz_{n}']} = {self.py[n]}.nnz")
        for s in prog.statements:
            self.statement(s)
        self.stmt = "<return>"
        outs = []
        ret_ks: tuple[Kernel, ...] = ()
        for o in prog.outputs:
            if isinstance(o, Access) and not o.indices:
                if o.name in {p.name for p in prog.params}:
                    src = self.py[o.name]
                    n = Poly.product_of_dims(self.shapes[o.name])
                    if self.shapes[o.name]:
                        ret_ks += self.kernel(Elementwise, n, n, f"copy of {o.name}")
                    if self.kinds.get(o.name) == "relation":
                        outs.append(f"np.array({src})")
                    else:
                        outs.append(f"np.array({src}, dtype=_dt)"
                                    if self.shapes[o.name] else f"_dt({src})")
                else:
                    outs.append(self.py[o.name])
                continue
            if free_indices(o):
                raise ProgramError(
                    "an output has free index(es) "
                    f"{', '.join(sorted(free_indices(o)))}; return a tensor variable", o.loc
                )
            self.emit(f"# return {print_expr(o)}")
            v = self.to_num(self.ev(o, {}))
            ret_ks += v.kernels
            outs.append(f"_dt({v.code})")
        if prog.returns_tuple:
            ret = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
        else:
            if len(outs) != 1:
                raise ProgramError(f"program {prog.name!r} returns {len(outs)} values")
            ret = outs[0]
        self.emit(f"return {ret}", ret_ks)
        # every array released after its last use; the plan holds how long each is held
        keep = set(self.py.values()) - {self.py[s.name] for s in prog.statements}
        done = release_dead(self.lines, self.kernels, keep, self.sizes)
        src = "\n".join(header + doc + done.lines) + "\n"
        # body line k (0-based) is line k + 3 of the source (after the def and the docstring)
        shift = 1 + len(header) + len(doc)
        plan = Plan(tuple(replace(k, line=k.line + shift) for k in done.kernels),
                    tuple(replace(lt, start=lt.start + shift, end=lt.end + shift)
                          for lt in done.lifetimes))
        return Lowered(src, tuple(self.decisions), fname, dict(self.extras), plan)


def _zero_addend(e: Expr) -> tuple[Expr, bool]:
    """A statement body ``e + 0``, ``0 + e`` or ``0 - e`` as ``e`` (``-e``) and True: the
    literal zero is added after the terms are written, since IEEE makes ``-0.0 + 0`` +0.0
    (``e - 0`` is ``e`` exactly: False)."""
    match e:
        case Binary("+" | "-" as op, lhs, rhs) if _static_zero(lhs) != _static_zero(rhs):
            if _static_zero(rhs):
                return lhs, op == "+"
            return (rhs if op == "+" else Neg(rhs)), True
    return e, False


def _static_zero(e: Expr) -> bool:
    """``e`` is a strong zero known without data or indices: the literal 0 (``_is_zero``) or a
    product with a bracket false whatever the sizes (``(1 != 1) * x``, which the normal form
    drops: ``(1 != 1) + t`` is +0.0 where ``t`` is -0.0, as ``0 + t``)."""
    return _is_zero(e) or any(
        isinstance(f, Bracket) and any(not c.indices() and static_truth(c) is False
                                       for c in conditions(f.pred))
        for f in _leaf_factors(e))


def _common_coefficient(plans: list[StatementTerm]) -> float | None:
    """The coefficient's magnitude shared by every term of a statement of three terms or more
    over regions (a window unrolled: blur's nine ``x_bar[...] += 0.11 * w[...]``), to multiply
    the statement's array by once instead of each term; None where there is none to share.

    Fast code only: ``c (a + b)`` for ``c a + c b`` is exact up to rounding on finite values,
    and an overflow of the sum sends the call to the strict code (docs/semantics.md). Each
    update then adds a view into the array (no product, no temporary)."""
    # (terms over a region, not at points an equality fixes: a pass over the array pays for
    # itself where it replaces three products or more, each a pass over its region; terms
    # that still reduce are left as they are, so that pricing this does not tip a choice
    # between contraction forms, plan.spread's, towards more cancellation)
    bulk = sum(1 for _, _, solved in plans if not solved)
    mags = {abs(t.coef) for t, _, _ in plans}
    if bulk < 3 or len(mags) != 1 or any(t.sums or any(isinstance(f, Term) for f in t.factors)
                                         for t, _, _ in plans):
        return None
    (c,) = mags
    return float(c) if c != 1 and c != 0 and math.isfinite(c) else None


def _zero_inside(plan: StatementTerm) -> StatementTerm:
    """A term ``c · Σ_J f`` (c < 0) whose sums an equality removed, as ``c · (f + 0.0)``: the
    sum starts at +0.0 before its coefficient applies (``-Σ_i [i == 0] y`` is -0.0 at
    y = ±0.0, where ``-y`` would be +0.0 at y = -0.0). The strict lowering applies a term's
    coefficient outside its sums (:func:`~eqsat_ad.plan.normal.expand`), so this is exact
    there; the fast code, where ``-Σ f`` and ``Σ -f`` are one term, reruns the strict code
    when such a zero reaches a division (an inf). A term with nested sums left is kept as it
    was (its value is not one expression); its conditions still guard the whole."""
    t, axes, solved = plan
    if any(isinstance(f, Term) for f in t.factors):
        return plan
    body: Expr = Const(1.0)
    for k, f in enumerate(t.factors):
        assert not isinstance(f, Term)
        body = f if k == 0 else Binary("*", body, f)
    return StatementTerm(replace(t, factors=[Binary("+", body, Const(0.0))]), axes, solved)

