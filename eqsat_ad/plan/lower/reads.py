"""Reads of tensors (views, shifted and strided slices, windows, gathers) and the evaluation of
expressions over a grid of index ranges."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from ...ir.errors import ProgramError
from ...ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Sum,
    substitute,
)
from ...ir.functions import lookup
from ...ir.index import Affine, IndexVar
from ..kernels import (
    Elementwise,
    Gather,
    Mask,
    Reduce,
    View,
)
from ..normal import Term, common_denominator, conditions, expand, without_brackets
from ..poly import ONE, ZERO, Poly
from ..ranges import Axis
from .emit import Emitter
from .values import (
    _ADD,
    _ATOM,
    _LETTERS,
    _POW,
    _UNARY,
    Decision,
    Value,
    _num,
)


class Reads(Emitter):
    def access(
        self, name: str, idx: tuple[Affine, ...], grid: Mapping[str, Axis], relation=False,
        defer: bool = False,
    ) -> Value:
        """``name[idx]`` over the grid.

        Outside the strict lowering, the code trusts float parameters to be finite: a read
        records the parameter as one the caller scans before the call (``finite-input``), or,
        with ``defer``, leaves it ``unchecked`` for the contraction that consumes the value.
        """
        v = self.read(name, idx, grid, relation)
        if relation or v.risky or name not in self.prog.param_names:
            return v
        if defer:
            return replace(v, unchecked=frozenset({name}))
        self.note_finite("finite-input", name)
        return v

    def note_finite(self, kind: str, param: str) -> None:
        """Record (once) how the finiteness of a parameter is established: ``finite-input``
        (scanned by the caller before the call) or ``finite-result`` (a contraction reading it
        checks its result; see :meth:`CompiledProgram.__call__`)."""
        d = Decision("<inputs>", kind, param)
        # where it was recorded: a dict look-up, not a scan of every decision (quadratic on
        # long programs); the position is checked because a rollback may have dropped it
        at = self.finite_noted.get(d)
        if at is not None and at < len(self.decisions) and self.decisions[at] == d:
            return
        self.finite_noted[d] = len(self.decisions)
        self.decisions.append(d)

    def read(
        self, name: str, idx: tuple[Affine, ...], grid: Mapping[str, Axis], relation=False
    ) -> Value:
        if name not in self.shapes:
            raise ProgramError(f"unknown name {name!r} (not a parameter or an earlier variable)")
        shape = self.shapes[name]
        if len(shape) != len(idx):
            raise ProgramError(f"{name!r} has {len(shape)} indices but is accessed with {len(idx)}")
        if relation != (self.kinds.get(name) == "relation"):
            raise ProgramError(
                f"{name!r} is used as a {'relation' if relation else 'value'} but is not one"
            )
        py = self.py[name]
        if relation and name in self.sparse:
            # (no sum over its members here: the plan's dense fallback, built once per call)
            n = Poly.product_of_dims(shape)
            self.decide("dense-relation", f"{name} read as a dense mask")
            py = self.temp(f"{py}.dense", kernels=self.kernel(Mask, n, n, f"dense {name}"))
        risky = name in self.risky_vars
        if not idx:
            return Value(py, (), mask=relation, risky=risky, fresh=False)
        for a in idx:
            for n in a.free_indices():
                if n not in grid:
                    raise ProgramError(f"index {n!r} in {name}[...] is not bound")
        # One index per dimension (fractions only next to an index: w[k/2]).
        simple = all(len(a.index) == 1 or (not a.index and common_denominator(a) == 1) for a in idx)
        vars_ = [a.index[0][0] for a in idx if a.index]
        if simple and len(set(vars_)) == len(vars_):
            return self.window(name, py, idx, shape, grid, relation, risky)
        if (
            not relation
            and all(a.as_var() is not None for a in idx)
            and all(grid[a.as_var()].is_full() and grid[a.as_var()].extent == d
                    for a, d in zip(idx, shape, strict=True))
        ):
            letters = {v: _LETTERS[k] for k, v in enumerate(dict.fromkeys(vars_))}
            ins = "".join(letters[v] for v in vars_)
            out = "".join(letters[v] for v in dict.fromkeys(vars_))
            self.decide("diagonal-view", f"{name}[{', '.join(map(str, idx))}]", tuple(out))
            axes_d = tuple(dict.fromkeys(vars_))
            n = self.numel_poly(axes_d, grid)
            return Value(f"np.einsum('{ins}->{out}', {py})", axes_d, risky=risky, fresh=False,
                         size=n, kernels=self.kernel(View, ZERO, ZERO, f"diagonal of {name}"))
        nums: list[Value] = []
        dens: list[int] = []
        for a in idx:
            v, q = self.index_value(a, grid)
            nums.append(v)
            dens.append(q)
        target = self.order(grid, *(v.axes for v in nums))
        codes = ", ".join(self.align(v, target) if v.axes else v.code for v in nums)
        self.decide("gather", f"{name}[{', '.join(map(str, idx))}]", target)
        ks, size = self.pass_over(Gather, target, grid, f"gather {name}", *nums)
        if not target:
            ks = ks + self.kernel(Gather, ONE, ONE, f"gather {name}")
        return Value(
            f"_rt.gather({py}, ({codes},), {tuple(dens)})", target, mask=relation, risky=risky,
            kernels=ks, size=size,
        )

    def window(self, name, py, idx, shape, grid, relation, risky) -> Value:
        parts: list[str] = []
        specs: list[str] = []
        axes: list[str] = []
        provable = True
        for a, n in zip(idx, shape, strict=True):
            nd = Affine.of_dim(n)
            if not a.index:
                parts.append(self.aff_code(a))
                specs.append(self.aff_code(a))
                provable &= self.nonneg(a) and self.nonneg(nd - a - 1)
                continue
            q = common_denominator(a)
            scaled = a.scale(q) if q != 1 else a  # index = scaled / q
            v, c = scaled.index[0][0], int(scaled.index[0][1])
            ax = grid[v]
            off = Affine((), scaled.sizes, scaled.const)
            axes.append(v)
            lo = ax.lo[0] if len(ax.lo) == 1 else None
            hi = ax.hi[0] if len(ax.hi) == 1 else None
            den = f", {q}" if q != 1 else ""
            if lo is not None:
                start = lo.scale(c) + off
                specs.append(f"({self.aff_code(start)}, {c}, {self.count_code(ax)}{den})")
            else:
                lo_c = self.bound_code(ax.lo, True)
                specs.append(
                    f"({c} * {lo_c} + {self.aff_code(off)}, {c}, {self.count_code(ax)}{den})"
                )
            if lo is None or hi is None or q != 1:
                provable = False
                continue
            if c < 0:
                # Reversed: x[start:stop:c] reads start, start + c, ..., last (>= 0).
                start = lo.scale(c) + off
                last = (hi - 1).scale(c) + off
                # (start >= 0 too: an empty range may put start below last)
                if not (self.nonneg(start) and self.nonneg(nd - 1 - start) and self.nonneg(last)):
                    provable = False
                    continue
                sc = "" if start == nd - 1 else self.aff_code(start)
                stop = last - 1
                if stop == Affine.constant(-1):
                    parts.append(f"{sc}::{c}")
                elif self.nonneg(stop):
                    parts.append(f"{sc}:{self.aff_code(stop)}:{c}")
                else:
                    provable = False
                continue
            start = lo.scale(c) + off
            stop = hi.scale(c) + off - (c - 1)  # one past the last index read, for c > 0
            if not (self.nonneg(start) and self.nonneg(nd - stop)):
                provable = False
                continue
            if ax.is_full() and ax.extent == n and c == 1 and off == Affine():
                parts.append(":")
            else:
                sc = self.aff_code(start)
                step = "" if c == 1 else f":{c}"
                # (a stop below 0 is an empty range: never counted from the end)
                so = self.aff_code(stop) if self.nonneg(stop) else f"max({self.aff_code(stop)}, 0)"
                parts.append(f"{'' if sc == '0' else sc}:{so}{step}")
        size = self.numel_poly(axes, grid)
        if provable:
            code = f"{py}[{', '.join(parts)}]" if any(p != ":" for p in parts) else py
            return Value(code, tuple(axes), mask=relation, risky=risky, fresh=False, size=size)
        self.decide("window", f"{name}[{', '.join(map(str, idx))}]", tuple(axes))
        spec = ", ".join(specs)
        return Value(
            f"_rt.window({py}, ({spec},))", tuple(axes), mask=relation, risky=risky, fresh=False,
            size=size, kernels=self.kernel(Gather, size, size, f"window of {name}"),
        )

    # --- expressions ---------------------------------------------------------------------------
    def ev(self, e: Expr, grid: dict[str, Axis]) -> Value:
        match e:
            case Const(v):
                return Value(_num(v), (), prec=_ATOM if v >= 0 and math.isfinite(v) else _UNARY,
                             risky=not math.isfinite(v))
            case Access(name, idx):
                return self.access(name, idx, grid)
            case Bracket(p):
                masks = [self.cond_mask(c, grid) for c in conditions(p)]
                m = self.conj(masks, grid)
                assert m is not None
                return m
            case Neg(arg) if _strong_factors(arg) or _guarded(arg):
                # a strong zero is +0.0, also negated: -[p] is np.where(p, -1, 0), not
                # -np.where(p, 1, 0) (-0.0 where p is false); the product keeps the sign
                # inside the guard (docs/semantics.md); so does a term's live-term mask for a
                # negated Σ of guarded terms (fuzz 2035 #120: -Σ_i R[i, 1] with no R[i, 1])
                return self.combine(expand(e, self.names), grid)
            case Binary(op, lhs, rhs) if op in "+-" and _is_zero(lhs) != _is_zero(rhs):
                return self.plus_zero(op, lhs, rhs, grid)
            case Neg(arg):
                v = self.to_num(self.ev(arg, grid))
                ks, size = self.pass_over(Elementwise, v.axes, grid, "-", v)
                return Value(f"-{v.paren(_UNARY)}", v.axes, risky=v.risky, prec=_UNARY,
                             kernels=ks, size=size)
            case Pow(base, k):
                v = self.to_num(self.ev(base, grid))
                if k > 0 and _strong_zero(v):
                    return v
                risky = v.risky or k < 0 or k != int(k)
                kc = _num(k) if k >= 0 else f"({_num(k)})"
                ks, size = self.pass_over(Elementwise, v.axes, grid, "**", v)
                if not v.axes:  # a Python number: 0 ** -1 raises, (-1) ** 0.5 is complex
                    p = Value(f"np.power({v.code}, {kc}, dtype=_dt)", (), risky=risky,
                              kernels=ks, size=size)
                else:
                    p = Value(f"{v.paren()} ** {kc}", v.axes, risky=risky, prec=_POW,
                              kernels=ks, size=size)
                return self.guarded(base, p, grid) if k > 0 else p
            case Binary("/", lhs, rhs):
                if not expand(lhs, self.names):  # a strong zero divided by anything is one
                    return Value("0", ())
                if _strong_factors(lhs) or _guarded_sums(lhs):
                    # (the guard applies the brackets to the quotient)
                    q = self.binop("/", self.ev(without_brackets(lhs), grid),
                                   self.ev(rhs, grid), grid)
                    return self.guarded(lhs, q, grid)
                num = self.ev(lhs, grid)
                if _strong_zero(num):  # (a sum whose terms are all guarded away, statically)
                    return num
                return self.binop("/", num, self.ev(rhs, grid), grid)
            case Call(fn, args):
                return self.call(e, fn, args, grid)
            case Max():
                return self.max_reduce(e, grid)
        return self.combine(expand(e, self.names), grid)

    def plus_zero(self, op: str, lhs: Expr, rhs: Expr, grid: dict[str, Axis]) -> Value:
        """``e + 0``, ``0 + e``, ``e - 0`` or ``0 - e`` (the 0 a strong zero known here): IEEE
        with the strong zero's value +0.0, as the interpreter. ``-0.0 + 0`` is +0.0, so the
        literal stays an addend (``e + 0.0``); ``e - 0`` is ``e`` exactly."""
        if _is_zero(rhs):
            v = self.to_num(self.ev(lhs, grid))
            if op == "-":
                return v
            code = f"{v.paren(_ADD)} + 0.0"
        else:
            v = self.to_num(self.ev(rhs, grid))
            code = f"{v.paren(_ADD)} + 0.0" if op == "+" else f"0.0 - {v.paren(_ADD + 0.5)}"
        ks, size = self.pass_over(Elementwise, v.axes, grid, op, v)
        return Value(code, v.axes, risky=v.risky, prec=_ADD, kernels=ks, size=size)

    def guarded(self, e: Expr, v: Value, grid: dict[str, Axis]) -> Value:
        """``v`` (a quotient ``e / d`` or a positive power ``e ** k``) set to 0 where a bracket
        or data comparison that is a factor of ``e`` is false (or every term of a sum that is
        one): there ``e`` is a strong zero, and so is ``v``, whatever ``d`` is (``[p] * a /
        nan`` is 0 where p is false)."""
        m = self.conj([self.ev(g, grid) for g in _strong_factors(e)]
                      + self.sum_guards(e, grid), grid)
        return v if m is None else replace(self.where(m, v, grid), risky=v.risky)

    def sum_guards(self, e: Expr, grid: dict[str, Axis]) -> list[Value]:
        """Masks of where the factors of ``e`` that are sums of guarded terms are not strong
        zeros: a sum is a strong zero where every term is one (docs/semantics.md), so ``w *
        ([p] a + gt(x, y))`` is 0 where p and the comparison are false, even for w nan."""
        return [self.zero_guard(s, grid) for s in _guarded_sums(e)]

    def zero_guard(self, e: Expr, grid: dict[str, Axis]) -> Value:
        """A mask that is false where ``e`` (:func:`_guarded`) is a strong zero by its brackets
        and data comparisons: a product where one factor is, a sum where every term is."""
        if isinstance(e, Binary) and e.op in "+-":
            # (a literal 0 term is a strong zero everywhere: it adds no live point)
            return self.disj([self.zero_guard(t, grid) for t in (e.lhs, e.rhs)
                              if not _is_zero(t)], grid)
        if isinstance(e, Sum):
            # a Σ whose every term is guarded is live where its count of live terms is > 0
            # (also 0 over an empty range)
            guards = _strong_factors(e.body)
            live: Expr = guards[0]
            for g in guards[1:]:
                live = Binary("*", live, g)
            count = self.to_num(self.ev(Sum(e.indices, live), grid))
            return Value(f"{count.paren(_ADD)} > 0", count.axes, mask=True, prec=_ADD,
                         kernels=count.kernels, size=count.size)
        m = self.conj([self.ev(g, grid) for g in _strong_factors(e)]
                      + self.sum_guards(e, grid), grid)
        assert m is not None
        return m

    def call(self, e: Call, fn: str, args: tuple[Expr, ...], grid: dict[str, Axis]) -> Value:
        f = lookup(fn)
        if f is None:
            raise ProgramError(f"unknown function {fn!r}", e.loc)
        if len(args) != f.arity:
            raise ProgramError(f"{fn} takes {f.arity} argument(s), got {len(args)}", e.loc)
        vals = [self.to_num(self.ev(a, grid)) if fn not in _JUMPS_AT_ZERO else
                self.difference(a, grid) for a in args]
        risky = any(v.risky for v in vals) or not f.finite
        if fn == "stop_gradient":
            return vals[0]
        target = self.order(grid, *(v.axes for v in vals))
        codes = ", ".join(self.align(v, target, False) for v in vals)
        if f.numpy_name is not None:
            head = f.numpy_name
        else:
            head = f"_fn_{fn}"
            self.extras[head] = f.numpy
        code = f"{head}({codes})"
        if not target and not f.strong:  # np.tanh(0.5) is a float64 scalar: keep float32
            code = f"_dt({code})"  # programs in float32 (a comparison stays a NumPy bool)
        ks, size = self.pass_over(Elementwise, target, grid, fn, *vals)
        if f.strong:
            # a data comparison is a condition (boolean array): a product applies it with
            # np.where, so a false comparison is a strong zero as in the interpreter
            return Value(code, target, mask=True, kernels=ks, size=size)
        return self.shared(Value(code, target, risky=risky, kernels=ks, size=size), create=False)

    def difference(self, e: Expr, grid: dict[str, Axis]) -> Value:
        """``e``, the argument of a function that jumps at 0 (``step(x - y)``, max's
        derivative): a difference ``x - y`` (or the optimizer's ``x + (-y)``) is computed as
        written, each side on its own, not reassociated into one sum of their terms, so that
        ``x`` and ``y`` computed alike are exactly equal where the program's are (a tie of the
        max: ``step(0) = 1/2``; ``(a - t) - (a - t)`` summed as ``a - t - a + t`` is a rounding
        error, whose step is 0 or 1)."""
        if (isinstance(e, Binary) and e.op in "+-" and not _is_zero(e.lhs)
                and not _is_zero(e.rhs)):
            return self.binop(e.op, self.ev(e.lhs, grid), self.ev(e.rhs, grid), grid)
        return self.to_num(self.ev(e, grid))

    def max_reduce(self, e: Max, grid: dict[str, Axis]) -> Value:
        """``np.max`` of the body over the bound axes (an empty range gives -inf, a nan in the
        range nan, as the interpreter); reads outside a tensor are the reads' zeros."""
        mapping: dict[str, Affine] = {}
        inner: dict[str, Axis] = {}
        for iv in e.indices:
            nn = self.names.fresh(iv.name)
            inner[nn] = Axis.full(IndexVar(nn, iv.extent))
            if nn != iv.name:
                mapping[iv.name] = Affine.var(nn)
        body = substitute(e.body, mapping) if mapping else e.body
        g2 = {**grid, **inner}
        v = self.to_num(self.ev(body, g2))
        kept = self.order(grid, v.axes)
        full = kept + tuple(inner)
        code = self.align(v, full, False)
        if set(full) - set(v.axes):  # an index the body ignores: its copies (or none) count
            code = f"np.broadcast_to({code}, {self._shape_code([g2[a] for a in full])})"
        pos = tuple(range(len(kept), len(full)))
        axis = pos[0] if len(pos) == 1 else pos
        self.decide("reduce", f"max over {', '.join(inner)}", full, in_sum=True)
        n = self.numel_poly(kept, g2)
        ks = v.kernels + self.kernel(Reduce, self.numel_poly(full, g2), n, "max")
        # (as floats: a constant body broadcasts as integers, which initial=-inf cannot be;
        # an empty range gives -inf: never known finite)
        code = f"np.max(np.asarray({code}, dtype=_dt), axis={axis}, initial=-np.inf)"
        return Value(self.temp(code, kernels=ks), kept, risky=True, size=n)

    def combine(self, terms: list[Term], grid: dict[str, Axis]) -> Value:
        """The sum of terms on one grid, as one expression (negative terms subtracted)."""
        out: Value | None = None
        for t in terms:
            if out is not None and t.coef < 0:
                out = self.binop("-", out, self.term_value(replace(t, coef=-t.coef), grid), grid)
                continue
            v = self.term_value(t, grid)
            out = v if out is None else self.binop("+", out, v, grid)
        return Value("0", ()) if out is None else out

    # --- terms ---------------------------------------------------------------------------------


def _leaf_factors(e: Expr) -> list[Expr]:
    """The factors of ``e`` through products, negations, quotients' numerators, positive powers
    and ``stop_gradient``: where one is a strong zero, so is ``e``."""
    match e:
        case Call(fn, (arg,)) if fn == "stop_gradient":
            return _leaf_factors(arg)
        case Binary("*", lhs, rhs):
            return _leaf_factors(lhs) + _leaf_factors(rhs)
        case Binary("/", lhs, _) | Neg(lhs):
            return _leaf_factors(lhs)
        case Pow(base, k) if k > 0:
            return _leaf_factors(base)
    return [e]


def _sum_factors(e: Expr) -> list[Expr]:
    """The factors of ``e`` (:func:`_leaf_factors`) that are sums, differences or Σs."""
    return [f for f in _leaf_factors(e)
            if isinstance(f, Binary) and f.op in ("+", "-") or isinstance(f, Sum)]


_JUMPS_AT_ZERO = frozenset({"step", "sign", "gt0"})
"""Functions of one argument whose value jumps at 0: rounding their argument moves a tie."""


def _strong_zero(v: Value) -> bool:
    """``v`` is the backend's literal 0 (a strong zero: what a term with no live point and a
    sum with no term lower to), neither multiplied nor divided by anything."""
    return v.code == "0" and not v.axes


def _guarded(e: Expr) -> bool:
    """``e`` is a strong zero where some bracket or data comparison is false: one is a factor,
    or a factor is a sum of such terms (a literal 0 term aside), or a Σ whose body has a
    bracket or data comparison as a factor (a strong zero where every term is one)."""
    if isinstance(e, Sum):
        return bool(_strong_factors(e.body))
    if isinstance(e, Binary) and e.op in "+-":
        terms = [t for t in (e.lhs, e.rhs) if not _is_zero(t)]
        return bool(terms) and all(_guarded(t) for t in terms)
    return bool(_strong_factors(e)) or bool(_guarded_sums(e))


def _guarded_sums(e: Expr) -> list[Expr]:
    """The factors of ``e`` that are sums of guarded terms (:func:`_guarded`)."""
    return [s for s in _sum_factors(e) if _guarded(s)]


def _is_zero(e: Expr) -> bool:
    """``e`` is a strong zero everywhere, known without data (the literal 0 and what a
    product, quotient, positive power, negation or sum makes of it): the terms ``expand``
    drops."""
    match e:
        case Const(v):
            return v == 0
        case Binary("*", lhs, rhs):
            return _is_zero(lhs) or _is_zero(rhs)
        case Binary("+" | "-", lhs, rhs):
            return _is_zero(lhs) and _is_zero(rhs)
        case Binary("/", lhs, _) | Neg(lhs):
            return _is_zero(lhs)
        case Pow(base, k) if k > 0:
            return _is_zero(base)
        case Sum(_, body):
            return _is_zero(body)
    return False


def _strong_factors(e: Expr) -> list[Expr]:
    """The brackets and data comparisons that are factors of ``e`` (:func:`_leaf_factors`):
    where one is false, ``e`` is a strong zero (docs/semantics.md)."""
    return [f for f in _leaf_factors(e) if isinstance(f, Bracket) or (
        isinstance(f, Call) and (g := lookup(f.fn)) is not None and g.strong)]
