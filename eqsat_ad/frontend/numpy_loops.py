"""``for`` loops of the NumPy subset: a sum, a fold, or unrolled.

``for i in range(...)`` whose body accumulates (``s += e(i)``) becomes one ``Sum`` over a fresh
binder (integer counters are summed in closed form); a loop that carries state becomes a fold
(:mod:`.numpy_fold`) when it is long or its trip count symbolic; any other static loop is
unrolled, within :data:`MAX_UNROLL` iterations per loop and :data:`MAX_TOTAL_UNROLL` per
translation. Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`).
"""

from __future__ import annotations

import ast
import copy
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir.expr import Cmp, Sum
from ..ir.index import Affine, Dim, IndexVar, dim_str
from .numpy_fold import FOLD_MIN_TRIP, translate_fold, trip_count
from .numpy_scope import Frame, LoopVar, Poisoned, Returned, assigned_names, subst_loop
from .numpy_statements import StatementOps, is_integer
from .numpy_values import (
    Builtin,
    NotSummable,
    TVal,
    add,
    affine_as_dim,
    as_int_if_const,
    bracket,
    describe,
    mul,
    provably_nonneg,
)

__all__ = ["MAX_TOTAL_UNROLL", "MAX_UNROLL", "LoopOps"]

MAX_UNROLL = 10000
"""Most iterations a single loop that is not an accumulation is unrolled to."""

MAX_TOTAL_UNROLL = 20000
"""Most unrolled iterations in one translation (nested loops multiply)."""


class LoopOps(StatementOps):
    """Execution of ``for`` loops (mixed into the translator)."""

    # --- for -----------------------------------------------------------------------------------
    def exec_for(self, s: ast.For) -> Returned | None:
        if s.orelse:
            raise self.error("'for ... else' is not supported", s)
        frames = self.scope.frames
        if frames and frames[-1].guards:
            raise NotSummable(f"loop under an 'if' on the loop index (at {self.loc(s)})")
        it = s.iter
        rng = None
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name):
            f = self.load(it.func.id, it.func)
            if isinstance(f, Builtin) and f.name == "range":
                rng = self._range_args(it)
        if rng is None:
            items = self._iterable(self.eval(it), it)
            return self._unroll(s, items, "the iterable")
        start, stop, step = rng
        if all(isinstance(x, int) for x in (start, stop)):
            r = range(start, stop, step)
            if len(r) == 0:
                return None
        snap = self._snapshot()
        try:
            if not isinstance(s.target, ast.Name):
                raise NotSummable("the loop target is not a single name")
            self._sum_loop(s, start, stop, step)
            return None
        except NotSummable as why:
            self._restore(snap)
            reason = why.reason
        trip = trip_count(start, stop, step)
        if trip is not None and (not isinstance(trip, int) or trip >= FOLD_MIN_TRIP):
            again = self._snapshot()
            try:  # a recurrence: one fold, whatever the trip count
                translate_fold(self, s, trip, start, step)
                return None
            except NotSummable as why:
                self._restore(again)
                reason = f"{reason}; not a fold either: {why.reason}"
        if not all(isinstance(x, int) for x in (start, stop)):
            for x in (start, stop):
                if isinstance(x, Affine) and x.index:
                    raise NotSummable(f"the loop bound depends on an outer loop index ({reason})")
            raise self.error(
                "loop with a symbolic bound: it is not an accumulation that can become a sum "
                f"({reason}), and it cannot be unrolled without concrete sizes; call with "
                "concrete shapes or rewrite the body as 's += ...'", s,
            )
        r = range(start, stop, step)
        if len(r) > MAX_UNROLL:
            raise self.error(
                f"loop of {len(r)} iterations is not an accumulation that can become a sum "
                f"({reason}), and unrolling is limited to {MAX_UNROLL} iterations; write the "
                "body as 's += e(i)' / 's = s + e(i)' with e not reading s, or vectorize it",
                s,
            )
        return self._unroll(s, list(r), "range")

    def _range_args(self, call_node: ast.Call) -> tuple[int | Affine, int | Affine, int]:
        if call_node.keywords or not 1 <= len(call_node.args) <= 3:
            raise self.error("range() takes 1 to 3 positional arguments", call_node)
        vals = [self.eval(a) for a in call_node.args]
        for v, a in zip(vals, call_node.args, strict=True):
            if isinstance(v, TVal):
                raise self.error(
                    "loop with an unknown bound: range() of an array value (data); loop "
                    "bounds must be constants or shapes (x.shape[0], len(x))", a,
                )
            if not (isinstance(v, Affine) or (isinstance(v, int | np.integer)
                                              and not isinstance(v, bool))):
                raise self.error(f"range() argument must be an int, got {describe(v)}", a)
        vals = [int(v) if isinstance(v, np.integer) else v for v in vals]
        if len(vals) == 1:
            vals = [0, vals[0], 1]
        elif len(vals) == 2:
            vals.append(1)
        step = vals[2]
        if not isinstance(step, int):
            raise self.error("range() step must be a constant int", call_node.args[2])
        if step == 0:
            raise self.error("range() arg 3 must not be zero", call_node.args[2])
        a, b = (as_int_if_const(v) for v in vals[:2])
        return a, b, step

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self.scope.env), len(self.statements), set(self.taken), set(self.index_used),
            dict(self.loop_vars), copy.deepcopy(self.scope.frames), self.unrolled,
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        env, n, taken, used, loops, frames, unrolled = snap
        self.scope.env = env
        del self.statements[n:]
        self.taken, self.index_used, self.loop_vars = taken, used, loops
        self.scope.frames = frames
        self.unrolled = unrolled

    def _sum_loop(self, s: ast.For, start: int | Affine, stop: int | Affine, step: int) -> None:
        """Translate the loop as sums over a fresh binder ``t`` with ``i = start + step*t``.

        The binder ranges over ``extent`` (an int or a size); when the iteration count is smaller
        (``range(N - 1)``) or depends on an outer loop index (``range(i + 1)``) the
        contributions are guarded by ``[t < count]``.
        """
        assert isinstance(s.target, ast.Name)
        if isinstance(start, int) and isinstance(stop, int):
            count: Affine = Affine.constant(len(range(start, stop, step)))
        elif step in (1, -1):
            count = (Affine.constant(0) + stop - start) if step == 1 else (
                Affine.constant(0) + start - stop
            )
        else:
            raise self.symbolic(
                start if isinstance(start, Affine) else stop,
                "a loop with a symbolic bound must have step 1 or -1", s.iter,
            )
        lo, hi = self._bounds(count)
        extent = affine_as_dim(hi)
        if extent is None:
            # count = S + c with c < 0: iterate over S and guard the last -c iterations.
            if len(hi.sizes) == 1 and hi.sizes[0][1] == 1 and hi.const <= 0 and (
                hi.const.denominator == 1
            ):
                extent = affine_as_dim(Affine((), hi.sizes, Fraction(0)))
            if extent is None:
                raise self.symbolic(
                    count, f"loop over range(...) with {count} iterations: the count must be a "
                    "size, a constant, or a size minus a constant", s.iter,
                )
        t = self.fresh()
        exact = affine_as_dim(count) == extent
        guard = None if exact else Cmp("<", Affine.var(t), count)
        may_be_empty = not provably_nonneg(lo - 1)
        user = Affine.constant(0) + start + Affine.var(t).scale(step)
        self.loop_vars[t] = LoopVar(extent, hi - 1)
        frame = Frame(t, assigned_names(s.body))
        name = s.target.id
        before = set(self.scope.env)
        self.assign_name(name, user, s)
        self.scope.frames.append(frame)
        try:
            frame.defined.add(name)
            self.exec_block(s.body)
        finally:
            self.scope.frames.pop()
        # Accumulators: s_final = s_init + Σ_t (contributions).
        for acc, contribs in frame.acc.items():
            closed = _closed_form_sum(contribs, t, extent) if guard is None else None
            if closed is not None:
                self.accumulate(acc, closed, 1, s)
                continue
            contribs = [self.to_data(c, s) for c in contribs]
            total = contribs[0]
            for c in contribs[1:]:
                total = self.elementwise((total, c), add, s)
            body = mul(bracket(guard), total.body) if guard is not None else total.body
            summed = TVal(total.shape, total.axes, Sum((IndexVar(t, extent),), body))
            self.accumulate(acc, summed, 1, s)
        # Loop-local names keep their last iteration's value, as in Python (where the loop may
        # not run at all and a name had a value before, that value is unknown: poisoned).
        del self.loop_vars[t]
        for nm in frame.defined:
            if nm in self.scope.env and nm not in frame.acc:
                if may_be_empty and nm in before:
                    self.scope.env[nm] = Poisoned(
                        f"{nm!r} after a loop that may run zero times (at {self.loc(s)})"
                    )
                else:
                    self.scope.env[nm] = subst_loop(self.scope.env[nm], t, count - 1)

    def _iterable(self, v: Any, node: ast.AST) -> list[Any]:
        if isinstance(v, range | tuple | list):
            return list(v)
        if isinstance(v, TVal):
            if v.ndim == 0:
                raise self.error("iteration over a 0-d array", node)
            n = v.shape[0]
            if not isinstance(n, int):
                raise self.error(
                    f"iteration over the rows of an array of symbolic size {dim_str(n)}; use "
                    "'for i in range(x.shape[0])' with an accumulation, or concrete shapes", node,
                )
            return [self.index(v, k, node) for k in range(n)]
        raise self.error(f"cannot iterate over {describe(v)}", node)

    def _unroll(self, s: ast.For, items: list[Any], what: str) -> Returned | None:
        if len(items) > MAX_UNROLL:
            raise self.error(f"loop of {len(items)} iterations over {what}: unrolling is "
                             f"limited to {MAX_UNROLL} iterations", s)
        for v in items:
            self.unrolled += 1
            if self.unrolled > MAX_TOTAL_UNROLL:
                raise self.error(
                    f"unrolled loops exceed {MAX_TOTAL_UNROLL} iterations in total; write "
                    "accumulation loops ('s += e(i)') that become sums, or vectorize", s,
                )
            self.bind(s.target, v, s)
            ret = self.exec_block(s.body)
            if ret is not None:
                return ret
        return None


def _closed_form_sum(contribs: list[Any], t: str, extent: Dim) -> int | Affine | None:
    """``Σ_{t < extent} Σ contribs`` for integer contributions affine in ``t`` (None if not)."""
    total = Affine.constant(0)
    for c in contribs:
        if not is_integer(c):
            return None
        total = total + (c if isinstance(c, Affine) else Affine.constant(int(c)))
    c1 = total.coeff(t)
    c0 = total.substitute({t: Affine.constant(0)})
    if isinstance(extent, int):
        return as_int_if_const(c0.scale(extent) + Fraction(extent * (extent - 1), 2) * c1)
    if c1 != 0 or not c0.is_constant():
        return None  # N·(N-1)/2 or N·i is not affine
    return as_int_if_const(Affine.of_dim(extent).scale(c0.const))
