"""Sums over the members of a sparse relation: gathers at its coordinates, products over the
members, segment sums back (O(N + nnz) where the dense mask is O(N²)).

A reduction ``Σ_J [(i, j) in M] · f(i, j, ...)`` whose only condition is a relation passed by
its members (:class:`~eqsat_ad.ir.relations.SparseRelation`) runs on a *member axis* ``m``
of extent ``nnz_M`` instead of the relation's index space: every access that reads a relation
index is gathered at the members' coordinates (``x[M.coords[0]]``, one
:class:`~eqsat_ad.plan.kernels.RelationGather`), the factors are evaluated elementwise over
``m`` by the ordinary lowering, and the member axis is summed away, into the relation index
that stays in the output (``M.segment_sum``: ``np.bincount``) or entirely (``.sum``), one
:class:`~eqsat_ad.plan.kernels.SegmentSum`. Non-members are never looked at: the relation's
strong zero holds as it does for the dense mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from ...ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Neg,
    Pow,
    Rel,
    Sum,
    free_indices,
)
from ...ir.index import Affine, Dim, IndexVar, size
from ..kernels import Elementwise, Reduce, RelationGather, SegmentSum
from ..normal import Cond, Term
from ..order import linked_groups
from ..poly import Poly
from ..ranges import Axis
from .reads import Reads
from .values import _ATOM, _MUL, Value, _factor


class _NoGather(Exception):
    """The factor cannot be read at the members (the dense path runs instead)."""


class Gathers(Reads):
    def member_sum(self, inner: dict[str, Axis], factors: Sequence[Expr | Term | Value],
                   conds: Sequence[Cond], g2: dict[str, Axis]) -> Value | None:
        """Σ over ``inner`` of ``Π factors`` under ``conds`` by the members of a sparse
        relation, or None when the sum is not one (then the dense lowering runs)."""
        if not self.sparse:
            return None
        if not conds:  # the relation inside a factor: ([M] * a) / b is [M] * (a / b)
            lifted = [_lift(f, self.sparse) if not isinstance(f, Value | Term) else ([], f)
                      for f in factors]
            conds = [Cond("rel", rel=r) for rs, _ in lifted for r in rs]
            factors = [f for _, f in lifted]
        rels = [c for c in conds if c.kind == "rel" and c.rel is not None
                and c.rel.name in self.sparse]
        if not rels:
            return None
        if any(c.rel is not None and self.needs_shift(c.rel, g2) for c in rels):
            # M[i + 1, j], or i in 1 .. N-1: every such relation by its shifted members (all
            # in one frame: positions on a partial axis counted from its lower bound)
            derived = [Cond("rel", rel=self.shifted_relation(c.rel, g2)) if c in rels and
                       c.rel is not None and self.needs_shift(c.rel, g2) else c for c in conds]
            if any(c.rel is None for c in derived):
                return None
            conds = derived
            rels = [c for c in conds if c.kind == "rel" and c.rel is not None
                    and c.rel.name in self.sparse]
            if any(c.kind == "rel" and c.rel is not None and c.rel.name not in self.sparse
                   and self.needs_shift(c.rel, g2) for c in conds):
                return None
        if len(conds) == 2 and all(c.kind == "rel" and c.rel is not None for c in conds):
            chained = self.relation_chain(inner, list(factors), list(conds), g2)
            if chained is not None:
                return chained
        # (the sparse relation with the fewest members runs the sum, when the sizes say)
        base = min(rels, key=lambda c: self.sizes.get(f"nnz_{c.rel.name}", 0)  # type: ignore
                   if c.rel is not None else 0)
        rel = base.rel
        assert rel is not None
        extra = [c for c in conds if c is not base]
        if any(not _reads_only(c, rel) for c in extra):
            return None
        vars_ = [a.as_var() for a in rel.indices]
        shape = self.shapes[rel.name]
        if any(v is None for v in vars_) or len(set(vars_)) != len(vars_):
            return None
        rvars: list[str] = [v for v in vars_ if v is not None]
        for v, d in zip(rvars, shape, strict=True):
            if not g2[v].is_full() and rel.name not in self.derived_from or g2[v].extent != d:
                return None
        kept = [v for v in rvars if v not in inner]
        if len(kept) > 1 or len(kept) == len(rvars):
            return None  # an output over two relation indices, or nothing summed: dense
        for f in factors:
            free = (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                    else None)
            if free is not None and free & set(rvars):
                return None
        others = [a for a in inner if a not in rvars]
        m = self.names.fresh(f"m_{rel.name}")
        # (a shifted relation has at most the members of the relation it is read from)
        nnz = size(f"nnz_{self.derived_from.get(rel.name, rel.name)}")
        g3: dict[str, Axis] = {}
        for k, ax in g2.items():
            if k == rvars[0]:
                g3[m] = Axis.full(IndexVar(m, nnz))
            elif k not in rvars:
                g3[k] = ax
        g3.update({a: inner[a] for a in others})
        relpy = self.py[rel.name]
        if extra:  # relations over the same indices: masks at the members (an intersection)
            factors = [*factors, *(self.member_mask(c, rel.name, rvars, m, nnz) for c in extra)]
        elif len(rvars) == 2 and len(kept) == 1 and others:
            try:
                first = self.sparse_first(list(factors), rvars, kept[0], others, inner,
                                          rel.name, m, nnz, g2, g3)
            except _NoGather:
                first = None
            if first is not None:
                self.decide("relation-sum", f"sum over the members of {rel.name}", (m,),
                            in_sum=True)
                return first
        factors, done = self.contract_first(list(factors), rvars, others, inner, g2)
        others = [a for a in others if a not in done]
        if not others and len(rvars) == 2 and not extra:
            try:
                fused = self.sparse_product(factors, rvars, kept, inner, rel.name, m, nnz,
                                            g2, g3)
            except _NoGather:
                return None
            if fused is not None:
                self.decide("relation-sum", f"sum over the members of {rel.name}", (m,),
                            in_sum=True)
                return fused
        try:
            moved = [f if isinstance(f, Value | Term) else
                     self.at_members(f, rvars, m, nnz, relpy) for f in factors]
        except _NoGather:
            return None
        self.decide("relation-sum", f"sum over the members of {rel.name}", (m,), in_sum=True)
        vals = [f if isinstance(f, Value) else self.term_value(f, g3) if isinstance(f, Term)
                else self.ev(f, g3) for f in moved]
        used = set().union(*(set(v.axes) for v in vals)) if vals else set()
        mult = " * ".join(_factor(self.count_code(inner[a])) for a in others if a not in used)
        present = [a for a in others if a in used]
        if m not in used:  # no factor reads a relation index: a count per segment
            nn = Poly.of_dim(nnz)
            vals.append(Value(f"np.ones({relpy}.nnz, dtype=_dt)", (m,),
                              kernels=self.kernel(RelationGather, nn, nn, "ones"), size=nn))
        if not kept and len(vals) > 1 and not any(v.mask for v in vals):
            # a total sum of a product: a contraction over the members (BLAS where it fits)
            vals = [self.to_num(v) for v in vals]
            res = self.einsum(vals, [m, *present], g3)
        else:
            res = self.segment(self.product(1.0, vals, g3), m, present, kept, rvars, rel.name,
                               g2, g3)
        if not mult:
            return res
        ks, sz = self.pass_over(Elementwise, res.axes, g2, "scale", res)
        return Value(f"{mult} * {res.paren(_MUL)}", res.axes, prec=_MUL, kernels=ks, size=sz,
                     risky=res.risky)

    def sparse_product(self, factors: list[Expr | Term | Value], rvars: list[str],
                       kept: list[str], inner: dict[str, Axis], rel: str, m: str, nnz: Dim,
                       g2: dict[str, Axis], g3: dict[str, Axis]) -> Value | None:
        """``Σ_j [M[i, j]] · w(i, j) · X[j, f]`` as one sparse product ``S_w @ X`` (SciPy; no
        nnz × F temporary); with both relation indices summed, ``Σ_{i,j} [M[i, j]] · w ·
        X[i, g] · Y[j, f]`` as ``Σ_j Y[j, f] · (S_wᵀ @ X)[j, g]``. None when the factors are
        not of that shape."""
        rset = set(rvars)

        def free(f: Expr | Term | Value) -> set[str]:
            return (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                    else set(free_indices(f)))

        narrow = [f for f in factors if free(f) <= rset and not isinstance(f, Value)]
        wide = [f for f in factors if not (free(f) <= rset and not isinstance(f, Value))]
        if kept:
            if len(wide) != 1:
                return None
            return self.spmm_value(wide[0], kept[0], narrow, rvars, rel, m, nnz, g2, g3)
        if len(wide) != 2:
            return None
        for x, y in (wide, wide[::-1]):
            if (isinstance(x, Access) and isinstance(y, Access)
                    and free(x) & rset == {rvars[0]} and free(y) & rset == {rvars[1]}):
                t = self.spmm_value(x, rvars[1], narrow, rvars, rel, m, nnz, g2, g3)
                if t is None:
                    return None
                yv = self.to_num(self.ev(y, g2))
                return self.einsum([t, yv], [rvars[1]], g2)
        return None

    @property
    def derived_from(self) -> dict[str, str]:
        """Relations computed from a sparse argument (shifted reads) -> that argument."""
        if not hasattr(self, "_derived"):
            self._derived: dict[str, str] = {}
        return self._derived

    @property
    def frame_arrays(self) -> set[str]:
        """Arrays computed on the lowering's grid (their partial axes counted from the lower
        bound), as opposed to the program's tensors."""
        if not hasattr(self, "_frame_arrays"):
            self._frame_arrays: set[str] = set()
        return self._frame_arrays

    @property
    def member_lo(self) -> dict[str, dict[int, Affine]]:
        """Derived relations (by code name) -> the lower bound of each partial dimension."""
        if not hasattr(self, "_member_lo"):
            self._member_lo: dict[str, dict[int, Affine]] = {}
        return self._member_lo

    def needs_shift(self, rel: Rel, g2: dict[str, Axis]) -> bool:
        """Whether ``rel`` is read at an index other than a plain one over its whole range
        (a relation derived here is already in the frame of the partial axes)."""
        derived = rel.name in self.derived_from
        return any(a.as_var() is None or not derived and a.as_var() in g2
                   and not g2[str(a.as_var())].is_full() for a in rel.indices)

    def shifted_relation(self, rel: Rel, g2: dict[str, Axis]) -> Rel | None:
        """``M[a·i + b, ...]`` (rational ``a``, ``b``) as a relation over the plain indices:
        the members' solutions ``(c - b) / a`` that are integers inside the indices' ranges
        (``M.shifted``, one O(nnz) pass), or None when an index is not of that form."""
        specs: list[str] = []
        new: list[Affine] = []
        counts: list[str] = []
        for a in rel.indices:
            if len(a.index) != 1:
                return None
            ((v, c),) = a.index
            off = Affine(sizes=a.sizes, const=a.const)
            if v not in g2:
                return None
            ax = g2[v]
            if not ax.is_full():  # i in lo .. hi-1: position p = i - lo, c·i + b = c·p + c·lo + b
                if len(ax.lo) != 1 or len(ax.hi) != 1:
                    return None
                off = off + ax.lo[0].scale(c)
            specs.append("None" if c == 1 and off == Affine() else self._linear(c, off))
            new.append(Affine.var(v))
            counts.append(self.count_code(ax))
        if len({str(a) for a in new}) != len(new):
            return None
        dims = [g2[str(a.as_var())].extent for a in new]
        shape = ", ".join(counts)
        base = self.derived_from.get(rel.name, rel.name)
        n = Poly.of_dim(size(f"nnz_{base}"))
        code = f"{self.py[rel.name]}.shifted(({', '.join(specs)},), ({shape},))"
        name = self.temp(code, kernels=self.kernel(RelationGather, n, n,
                                                   f"shifted members of {rel.name}"))
        self.decide("shifted-relation", f"{rel} by its members", ())
        self.py[name] = name
        self.shapes[name] = tuple(dims)
        self.kinds[name] = "relation"
        self.sparse = self.sparse | {name}
        self.derived_from[name] = base
        # (positions on a partial axis are counted from its lower bound: reads add it back)
        self.member_lo[self.py[name]] = {
            k: g2[str(a.as_var())].lo[0] for k, a in enumerate(new)
            if not g2[str(a.as_var())].is_full()}
        return Rel(name, tuple(new))

    def member_mask(self, cond: Cond, base: str, rvars: list[str], m: str, nnz: Dim) -> Value:
        """Relation ``cond`` (over indices of the relation ``base``) as a boolean array over the
        members of ``base``: its membership looked up at their coordinates."""
        assert cond.rel is not None
        which = tuple(rvars.index(str(a.as_var())) for a in cond.rel.indices)
        n = Poly.of_dim(nnz)
        ks = self.kernel(RelationGather, n, n, f"{cond.rel.name} at the members of {base}")
        self.decide("relation-intersection", f"{cond.rel.name} at the members of {base}", (m,),
                    in_sum=True)
        code = f"{self.py[base]}.member_of({self.py[cond.rel.name]}, {which})"
        return Value(self.temp(code, kernels=ks), (m,), mask=True, size=n)

    def hold(self, v: Value, g2: dict[str, Axis]) -> str:
        """``v`` as a named array of this frame (a temporary unless it already is a name), read
        back by later accesses: its shape, its Python name, its risk of non-finite values."""
        name = v.code if v.code.isidentifier() else self.temp(v.code, kernels=v.kernels)
        self.shapes[name] = tuple(g2[a].extent for a in v.axes)
        self.py[name] = name
        self.frame_arrays.add(name)
        if v.risky:
            self.risky_vars.add(name)
        return name

    def relation_chain(self, inner: dict[str, Axis], factors: list[Expr | Term | Value],
                       conds: list[Cond], g2: dict[str, Axis]) -> Value | None:
        """``Σ_{j,k} [M[i, j]] [P[j, k]] f(j) g(k)`` as ``Σ_j [M[i, j]] f(j) (Σ_k [P[j, k]]
        g(k))[j]``: the indices only one relation reads are summed first, by its members, and
        the result is read at the other's members (two segment sums, not N² or N³ masks).
        None when neither relation has summed indices of its own."""
        def free(f: Expr | Term | Value) -> set[str]:
            return (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                    else set(free_indices(f)))

        for first, second in (conds, conds[::-1]):
            assert first.rel is not None and second.rel is not None
            if first.rel.name not in self.sparse:
                continue
            own = [a.as_var() for a in first.rel.indices]
            theirs = {str(a.as_var()) for a in second.rel.indices if a.as_var() is not None}
            private = [v for v in own if v is not None and v in inner and v not in theirs]
            if not private or len(private) == len(inner) or any(
                    v is None for v in own) or any(a.as_var() is None
                                                   for a in second.rel.indices):
                continue
            sub_f = [f for f in factors if free(f) & set(private)]
            rest = [f for f in factors if not free(f) & set(private)]
            sub = self.member_sum({p: inner[p] for p in private}, sub_f, [first], g2)
            if sub is None:
                continue
            v = self.to_num(sub)
            name = self.hold(v, g2)
            self.decide("relation-chain", f"{name}[{', '.join(v.axes)}] = sum over "
                        f"{', '.join(private)} by the members of {first.rel.name}", v.axes)
            acc = Access(name, tuple(Affine.var(a) for a in v.axes))
            outer = {a: ax for a, ax in inner.items() if a not in private}
            return self.reduce(  # type: ignore[attr-defined]
                Term(1.0, [], [], []), outer, [*rest, acc], [second], g2)
        return None

    def _linear(self, c: Fraction, off: Affine) -> str:
        """``(A, L, B)`` code for ``c · v + off`` as ``(A · v + B) / L`` in integers."""
        lcm = math.lcm(c.denominator, off.const.denominator,
                       *(k.denominator for _, k in off.sizes))
        return f"({int(c * lcm)}, {lcm}, {self.aff_code(off.scale(lcm))})"

    def read_spec(self, a: Affine, rvars: list[str], lo: dict[int, Affine]) -> str:
        """``(k, A, L, B)`` code for an index ``c · v + b = (A · v + B) / L`` with ``v`` the
        relation's k-th index (``lo[k]`` added to a coordinate counted from it), read at the
        members by :meth:`SparseRelation.gather_at`."""
        if len(a.index) != 1 or a.index[0][0] not in rvars:
            raise _NoGather
        ((v, c),) = a.index
        off = Affine(sizes=a.sizes, const=a.const)
        if rvars.index(v) in lo:
            off = off + lo[rvars.index(v)].scale(c)
        return f"({rvars.index(v)}, {self._linear(c, off)[1:]}"

    def sparse_first(self, factors: list[Expr | Term | Value], rvars: list[str], kept: str,
                     others: list[str], inner: dict[str, Axis], rel: str, m: str, nnz: Dim,
                     g2: dict[str, Axis], g3: dict[str, Axis]) -> Value | None:
        """``Σ_{s, l} [M[i, s]] · X[s, l] · Y[l, ..]`` as ``(S @ X) @ Y``: the sparse product
        on the one factor that reads the summed relation index, then the dense contraction
        over the other summed indices, when that sparse product is no wider than the one
        after contracting first (:meth:`contract_first`: ``S @ (X @ Y)``). The dense work is
        the same either way; on a tie the product of an existing array is preferred, since
        another statement may compute it too (the GCN's ``Âᵀ Z̄`` in both gradients). None
        when the factors are not of that shape."""
        rset, oset = set(rvars), set(others)
        s_var = next(v for v in rvars if v != kept)

        def free(f: Expr | Term | Value) -> set[str]:
            return (set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                    else set(free_indices(f)))

        reading = [f for f in factors if free(f) & rset]
        narrow = [f for f in reading if free(f) <= rset and not isinstance(f, Value)]
        wide = [f for f in reading if not (free(f) <= rset and not isinstance(f, Value))]
        rest = [f for f in factors if not free(f) & rset]
        if len(wide) != 1 or not rest or not isinstance(wide[0], Access):
            return None
        x = wide[0]
        if free(x) & rset != {s_var} or not free(x) & oset or any(
                not inner[a].is_full() for a in others):
            return None
        used = free(x).union(*(free(f) for f in rest))
        if not oset <= used:
            return None
        w_sparse = self.numel(sorted(free(x) - {s_var}), g2)
        w_contract = self.numel(sorted(used - oset - {s_var}), g2)
        if w_sparse > w_contract:
            return None
        t = self.spmm_value(x, kept, narrow, rvars, rel, m, nnz, g2, g3)
        if t is None:
            return None
        vals = [self.to_num(f if isinstance(f, Value) else self.term_value(f, g2)
                            if isinstance(f, Term) else self.ev(f, g2)) for f in rest]
        self.decide("sparse-first", f"{rel} @ {x.name} before the sum over "
                    f"{', '.join(others)}", t.axes)
        return self.einsum([t, *vals], list(others), g2)

    def spmm_value(self, wide: Expr | Term | Value, out: str, narrow: list[Expr | Term | Value],
                   rvars: list[str], rel: str, m: str, nnz: Dim, g2: dict[str, Axis],
                   g3: dict[str, Axis]) -> Value | None:
        """``Σ_s [M] · Π narrow · wide[.., s, ..]`` into the relation index ``out`` by
        :meth:`~eqsat_ad.ir.relations.SparseRelation.spmm`, or None."""
        s_var = next(v for v in rvars if v != out)
        if not isinstance(wide, Access) or wide.name not in self.shapes:
            return None
        if self.kinds.get(wide.name) == "relation":
            return None
        vars_ = [a.as_var() for a in wide.indices]
        if any(v is None for v in vars_) or len(set(vars_)) != len(vars_) or \
                vars_.count(s_var) != 1 or out in vars_:
            return None
        shape = self.shapes[wide.name]
        rest = [v for v in vars_ if v != s_var and v is not None]
        for v, d in zip(vars_, shape, strict=True):
            if v is None or not g2[v].is_full() or g2[v].extent != d:
                return None
        relpy = self.py[rel]
        wvals = [f if isinstance(f, Value) else self.term_value(f, g3) if isinstance(f, Term)
                 else self.ev(self.at_members(f, rvars, m, nnz, relpy), g3) for f in narrow]
        weights = "None"
        ks: tuple = ()
        if wvals:
            w = self.to_num(self.product(1.0, wvals, g3))
            if set(w.axes) - {m}:
                return None
            ks = w.kernels
            weights = w.code
        if wide.name in self.prog.param_names and wide.name not in self.risky_vars:
            self.note_finite("finite-input", wide.name)
        axis = vars_.index(s_var)
        k_out, k_in = rvars.index(out), rvars.index(s_var)
        out_axes = (out, *rest)
        n_out = self.numel_poly(out_axes, g2)
        space = Poly.of_dim(nnz) * self.numel_poly(tuple(rest), g2)
        ks = ks + self.kernel(SegmentSum, space, n_out, f"sparse product into {out}")
        self.decide("sparse-product", f"{rel} @ {wide.name}", out_axes, in_sum=True)
        code = f"{relpy}.spmm({weights}, {self.py[wide.name]}, {axis}, {k_out}, {k_in})"
        return Value(self.temp(code, kernels=ks), out_axes,
                     risky=wide.name in self.risky_vars, size=n_out)

    def segment(self, prod: Value, m: str, present: list[str], kept: list[str],
                rvars: list[str], rel: str, g2: dict[str, Axis], g3: dict[str, Axis]) -> Value:
        """``prod`` (over the member axis ``m``) summed over ``present`` and the members, into
        the relation index ``kept`` (a segment sum) or entirely."""
        if present:
            pos = tuple(k for k, a in enumerate(prod.axes) if a in present)
            rest = tuple(a for a in prod.axes if a not in present)
            n = self.numel_poly(rest, g3)
            ks = prod.kernels + self.kernel(Reduce, self.numel_poly(prod.axes, g3), n, "sum")
            code = f"{prod.paren()}.sum(axis={pos if len(pos) > 1 else pos[0]})"
            prod = Value(self.temp(code, kernels=ks), rest, risky=prod.risky, size=n)
        # (a temporary shared with the other terms that sum the same product differently)
        prod = self.shared(prod, create=prod.prec < _ATOM or "(" in prod.code)
        ax = prod.axes.index(m)
        out_axes = tuple(kept[0] if a == m else a for a in prod.axes if a != m or kept)
        n_out = self.numel_poly(out_axes, g2)
        space = self.numel_poly(prod.axes, g3)
        if kept:
            code = f"{self.py[rel]}.segment_sum({prod.code}, {ax}, {rvars.index(kept[0])})"
            what = f"segment sum into {kept[0]}"
        else:
            code = f"{prod.paren()}.sum(axis={ax})" if len(prod.axes) > 1 else \
                f"{prod.paren()}.sum()"
            what = f"sum over the members of {rel}"
        ks = prod.kernels + self.kernel(SegmentSum, space, n_out, what)
        return Value(self.temp(code, kernels=ks), out_axes, risky=prod.risky, size=n_out)

    def contract_first(self, factors: list[Expr | Term | Value], rvars: list[str],
                       others: list[str], inner: dict[str, Axis], g2: dict[str, Axis]
                       ) -> tuple[list[Expr | Term | Value], set[str]]:
        """Factors linked by summed indices other than the relation's, contracted over those
        indices before the gather when they read at most one relation index
        (``Σ_j A[i, j] Σ_f H[j, f] W[f, g]``: ``H @ W`` over N rows, then nnz gathers, not
        nnz products of length F)."""
        frees = [set(f.axes) if isinstance(f, Value) else f.free() if isinstance(f, Term)
                 else set(free_indices(f)) for f in factors]
        out: list[Expr | Term | Value] = []
        done: set[str] = set()
        for summed, ks in linked_groups(frees, set(others)):  # (the plan's grouping)
            fs = [factors[k] for k in ks]
            free = set().union(*(frees[k] for k in ks))
            if (not summed or len(free & set(rvars)) > 1 or len(fs) < 2
                    or any(isinstance(f, Value) or not inner[a].is_full()
                           for f in fs for a in summed)):
                out += fs
                continue
            ivs = [IndexVar(a, inner[a].extent) for a in others if a in summed]
            done |= summed
            # (the relation index first: the sparse product reads rows, never a transpose)
            lead = [a for a in rvars if a in free]
            g2o = {**{a: g2[a] for a in lead}, **{k: a for k, a in g2.items() if k not in lead}}
            v = self.to_num(self.term_value(Term(1.0, ivs, list(fs), []), g2o))
            name = self.hold(v, g2)
            self.decide("contract-before-gather", f"{name}[{', '.join(v.axes)}]", v.axes)
            out.append(Access(name, tuple(Affine.var(a) for a in v.axes)))
        return out, done

    def at_members(self, e: Expr, rvars: list[str], m: str, nnz: Dim, relpy: str) -> Expr:
        """``e`` with every access that reads a relation index replaced by an access of its
        gather at the members (new arrays over the member axis ``m``)."""
        match e:
            case Access(name, idx):
                uses = [a.free_indices() & set(rvars) for a in idx]
                if not any(uses):
                    return e
                which: list[int | str | None] = []
                shifted = False
                keep: list[Affine] = []
                dims: list[Dim] = []
                for a, u, d in zip(idx, uses, self.shapes[name], strict=True):
                    if not u:
                        which.append(None)
                        keep.append(a)
                        dims.append(d)
                        continue
                    v = a.as_var()
                    # (an array computed on the grid is indexed from the axis' lower bound, as
                    # the derived relation's positions are; a program's tensor from 0)
                    lo = {} if name in self.frame_arrays else self.member_lo.get(relpy, {})
                    if v is None or rvars.index(v) in lo:  # x[i + 1], or i counted from lo
                        shifted = True
                        which.append(self.read_spec(a, rvars, lo))
                        continue
                    which.append(rvars.index(v))
                if self.kinds.get(name) == "relation":
                    raise _NoGather
                if name in self.prog.param_names and name not in self.risky_vars:
                    self.note_finite("finite-input", name)
                n = Poly.of_dim(nnz)
                for d in dims:
                    n = n * Poly.of_dim(d)
                code = (f"{relpy}.gather({self.py[name]}, {tuple(which)})" if not shifted else
                        f"{relpy}.gather_at({self.py[name]}, "
                        f"({''.join(f'{w}, ' for w in which)}))")
                g = self.temp(code, kernels=self.kernel(RelationGather, n, n, f"gather {name}"))
                self.shapes[g] = (nnz, *dims)
                self.py[g] = g
                if name in self.risky_vars:
                    self.risky_vars.add(g)
                return Access(g, (Affine.var(m), *keep))
            case Const():
                return e
            case Binary(_, lhs, rhs):
                return replace(e, lhs=self.at_members(lhs, rvars, m, nnz, relpy),
                               rhs=self.at_members(rhs, rvars, m, nnz, relpy))
            case Neg(arg):
                return replace(e, arg=self.at_members(arg, rvars, m, nnz, relpy))
            case Pow(base, _):
                return replace(e, base=self.at_members(base, rvars, m, nnz, relpy))
            case Call(_, args):
                return replace(e, args=tuple(self.at_members(a, rvars, m, nnz, relpy)
                                             for a in args))
            case Sum(_, body):
                return replace(e, body=self.at_members(body, rvars, m, nnz, relpy))
            case Bracket():
                if free_indices(e) & set(rvars):
                    raise _NoGather
                return e
        raise _NoGather


def _reads_only(cond: Cond, rel: Rel) -> bool:
    """Whether ``cond`` is a relation whose indices are plain indices of ``rel``."""
    if cond.kind != "rel" or cond.rel is None:
        return False
    own = {a.as_var() for a in rel.indices}
    vars_ = [a.as_var() for a in cond.rel.indices]
    return all(v is not None and v in own for v in vars_) and len(set(vars_)) == len(vars_)


def _lift(e: Expr, sparse: frozenset[str]) -> tuple[list[Rel], Expr]:
    """The sparse relation brackets of a product or quotient's numerator taken out of ``e``:
    ``([M[i, j]] * a) / b`` is ``[M[i, j]] * (a / b)`` exactly (1 * a is a; a strong zero
    either way where the pair is not a member)."""
    match e:
        case Bracket(Rel(name) as r) if name in sparse:
            return [r], Const(1.0)
        case Binary("*", lhs, rhs):
            rl, el = _lift(lhs, sparse)
            rr, er = _lift(rhs, sparse)
            if not rl and not rr:
                return [], e
            if el == Const(1.0):
                return rl + rr, er
            if er == Const(1.0):
                return rl + rr, el
            return rl + rr, Binary("*", el, er)
        case Binary("/", lhs, rhs):
            rl, el = _lift(lhs, sparse)
            return (rl, Binary("/", el, rhs)) if rl else ([], e)
        case Neg(arg):
            ra, ea = _lift(arg, sparse)
            return (ra, Neg(ea)) if ra else ([], e)
    return [], e
