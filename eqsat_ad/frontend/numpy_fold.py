"""Rolled loops in the NumPy front end: a recurrence becomes one :class:`~eqsat_ad.ir.Fold`.

A ``for i in range(...)`` loop that is not an accumulation (``s = 0.99 * s + x[i]``,
``h = np.tanh(W @ h)``) carries state from one iteration to the next. Unrolled, it would grow the
program (and its compile time) with the trip count; instead its body is translated ONCE into a
small program from (the carried names, the slices ``x[i]`` it reads, the arrays it captures) to
the carried names' next values, and the loop becomes a fold over it. The loop index is translated
as an index ``t`` of the statements the body makes (as in a summed loop); afterwards every read
``x[a·t + c, ...]`` of an outer array becomes a scanned slice (a statement ``x_t[t: T, ...]``
outside the loop) and the ``t`` generators are dropped. Anything the body does with ``t``
otherwise (a bracket on it, a read of another iteration) falls back to unrolling.
"""

from __future__ import annotations

import ast
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..ir.checks import check_program
from ..ir.errors import ProgramError
from ..ir.expr import Access, Bracket, Expr, accessed_names, pred_free_indices
from ..ir.index import Affine, Dim, IndexVar
from ..ir.program import Fold, Param, Program, Statement
from ..ir.traverse import rebuild
from .numpy_scope import LoopVar, Poisoned, assigned_names
from .numpy_values import NotSummable, TVal, affine_as_dim

if TYPE_CHECKING:
    from .numpy_subset import _Translator

FOLD_MIN_TRIP = 64
"""Loops with a concrete trip count below this are unrolled (small loops optimize better
whole); longer ones, and every loop with a symbolic trip count, become folds."""


def trip_count(start: int | Affine, stop: int | Affine, step: int) -> Dim | None:
    """The number of iterations as a dimension, or None when it is not one."""
    if isinstance(start, int) and isinstance(stop, int):
        return len(range(start, stop, step))
    if step == 1:
        return affine_as_dim(Affine.constant(0) + stop - start)
    if step == -1:
        return affine_as_dim(Affine.constant(0) + start - stop)
    return None


def _whole(tr: _Translator, tv: TVal) -> str | None:
    """The parameter or statement ``tv`` reads whole, if it does."""
    body = tv.body
    if not (isinstance(body, Access) and body.indices == tuple(Affine.var(a) for a in tv.axes)):
        return None
    for p in tr.params:
        if p.name == body.name and p.shape == tuple(tv.shape) and p.kind == "tensor":
            return p.name
    for s in tr.statements:
        if isinstance(s, Statement) and s.name == body.name and s.shape == tuple(tv.shape):
            return s.name
    return None


def _bind(tr: _Translator, name: str, shape: tuple[Dim, ...]) -> TVal:
    axes = tuple(tr.fresh() for _ in shape)
    return TVal(shape, axes, Access(name, tuple(Affine.var(a) for a in axes)), name)


def _outer_shape(tr: _Translator, name: str) -> tuple[Dim, ...] | None:
    for p in tr.params:
        if p.name == name:
            return p.shape if p.kind == "tensor" else None
    for s in tr.statements:
        if name in s.defines:
            return s.result_shape(name) if isinstance(s, Fold) else s.shape
    return None


def translate_fold(tr: _Translator, s: ast.For, trip: Dim, start: int | Affine, step: int
                   ) -> None:
    """Translate the loop ``s`` as a fold (raises NotSummable to make the caller unroll)."""
    assert isinstance(s.target, ast.Name)
    if tr.scope.frames or tr.loop_vars:
        raise NotSummable("a recurrence inside a summed loop")
    env = tr.scope.env
    target = s.target.id
    assigned = assigned_names(s.body)
    carried = sorted(n for n in assigned if n in env and n != target
                     and not isinstance(env[n], Poisoned))
    if not carried:
        raise NotSummable("the loop carries no state")
    inits: list[str] = []
    for n in carried:
        v = env[n]
        if not isinstance(v, TVal | int | float):
            raise NotSummable(f"{n!r} is not an array")
        tv = tr.to_data(v, s)
        whole = _whole(tr, tv)
        inits.append(whole or tr.materialize(tv, f"{n}0", s, keep_unit_axes=True).body.name)
    shapes = [_outer_shape(tr, n) or () for n in inits]
    before = len(tr.statements)

    # translate the body once, the loop index an index t of the statements it makes
    state = [tr.new_name(n) for n in carried]
    for n, p, shape in zip(carried, state, shapes, strict=True):
        env[n] = _bind(tr, p, shape)
    t = tr.fresh()
    last = Affine.constant(trip - 1) if isinstance(trip, int) else Affine.make(
        {}, {trip.name: 1}, -1)
    tr.loop_vars[t] = LoopVar(trip, last)
    tr.loop_generators = {}
    try:
        tr.assign_name(target, Affine.constant(0) + start + Affine.var(t).scale(step), s)
        if tr.exec_block(s.body) is not None:
            raise NotSummable("'return' inside the loop")
        nexts: list[str] = []
        for n, shape in zip(carried, shapes, strict=True):
            tv = tr.to_data(env[n], s)
            if tuple(tv.shape) != tuple(shape):
                raise NotSummable(f"{n!r} changes shape in the loop")
            whole = _whole(tr, tv)
            if whole is None or whole not in {st.name for st in tr.statements[before:]}:
                whole = tr.materialize(tv, f"{n}_next", s, keep_unit_axes=True).body.name
            nexts.append(whole)
    finally:
        del tr.loop_vars[t]
    made = tr.statements[before:]
    del tr.statements[before:]
    rolled = _Roll(tr, t, trip, made)
    body_stmts = [rolled.statement(st) for st in made]
    names = {st.name for st in body_stmts}
    params = [Param(p, shape) for p, shape in zip(state, shapes, strict=True)]
    params += [Param(p, shape) for p, shape in rolled.slice_params]
    consts: list[str] = []
    for st in body_stmts:
        for n in sorted(accessed_names(st.body)):
            if n in names or n in state or n in rolled.slice_names or n in consts:
                continue
            shape = _outer_shape(tr, n)
            if shape is None:
                raise NotSummable(f"the body reads {n!r}, which is not a float array")
            consts.append(n)
            params.append(Param(n, shape))
    outputs = tuple(Access(n) for n in nexts)
    body = Program(tuple(params), tuple(body_stmts), outputs, True, tr.new_name("step"))
    results = tuple(tr.new_name(n) for n in carried)
    fold = Fold(results, trip, body, tuple(inits), tuple(rolled.scanned), tuple(consts),
                False, tr.loc(s))
    try:
        check_program(Program(tuple(tr.params), (*tr.statements, *rolled.slices, fold),
                              tuple(Access(r) for r in results), True))
    except ProgramError as e:
        raise NotSummable(f"the loop body is not a fold body ({e.message})") from None
    tr.statements += rolled.slices
    tr.statements.append(fold)
    for n, r, shape in zip(carried, results, shapes, strict=True):
        env[n] = _bind(tr, r, shape)
    why = f"a name set in a rolled loop is only its state after the loop (at {tr.loc(s)})"
    for n in assigned - set(carried):
        env[n] = Poisoned(why)
    env[target] = Poisoned(why)


class _Roll:
    """Drops the loop index's generators and turns reads at the loop index into slices."""

    def __init__(self, tr: _Translator, t: str, trip: Dim, made: list[Any]) -> None:
        self.tr, self.t, self.trip = tr, t, trip
        # statements with a generator for the loop index: name -> that generator's name
        self.stepwise: dict[str, str] = {}
        for st in made:
            if not isinstance(st, Statement):
                raise NotSummable("a nested rolled loop")
            loops = tr.loop_generators.get(st.name, ())
            if loops not in ((), (t,)):
                raise NotSummable("a summed loop inside a rolled loop")
            if loops:
                self.stepwise[st.name] = st.indices[0].name
        self.slices: list[Statement] = []
        self.slice_params: list[tuple[str, tuple[Dim, ...]]] = []
        self.scanned: list[str] = []
        self.slice_names: set[str] = set()
        self._by_read: dict[tuple[str, int, Affine], str] = {}

    def statement(self, st: Statement) -> Statement:
        g = self.stepwise.get(st.name)
        gens = st.indices[1:] if g is not None else st.indices
        body = self.expr(st.body, g)
        return Statement(st.name, gens, body, st.loc)

    def expr(self, e: Expr, g: str | None) -> Expr:
        def post(x: Expr, _ctx: object) -> Expr:
            if isinstance(x, Bracket):
                if g is not None and g in pred_free_indices(x.pred):
                    raise NotSummable("a bracket on the loop index")
                return x
            if not isinstance(x, Access):
                return x
            if x.name in self.stepwise:
                if g is None or not x.indices or x.indices[0] != Affine.var(g):
                    raise NotSummable(f"a read of {x.name!r} from another iteration")
                rest = x.indices[1:]
                if any(_mentions(a, g) for a in rest):
                    raise NotSummable("the loop index in a second position")
                return Access(x.name, rest, x.loc)
            at = [k for k, a in enumerate(x.indices) if g is not None and _mentions(a, g)]
            if not at:
                return x
            if len(at) > 1 or any(n != g for n, _ in x.indices[at[0]].index):
                raise NotSummable(f"a read of {x.name!r} that is not a slice at the loop index")
            k = at[0]
            name = self.slice_of(x.name, k, x.indices[k], g)
            return Access(name, x.indices[:k] + x.indices[k + 1:], x.loc)

        return rebuild(e, post)

    def slice_of(self, name: str, k: int, a: Affine, g: str) -> str:
        """The body parameter for ``name[..., a(t), ...]`` (a slice at position ``k``)."""
        key = (name, k, _subst_var(a, g, "_t"))
        if key in self._by_read:
            return self._by_read[key]
        shape = _outer_shape(self.tr, name)
        if shape is None:
            raise NotSummable(f"{name!r} is not a float array")
        tr = self.tr
        inner = tr.new_name(f"{name}_t")
        self.slice_params.append((inner, (*shape[:k], *shape[k + 1:])))
        self.slice_names.add(inner)
        self._by_read[key] = inner
        if k == 0 and a == Affine.var(g) and shape[0] == self.trip:
            self.scanned.append(name)  # x[t]: the rows of x itself
            return inner
        outer = tr.new_name(f"{name}_steps")
        used: set[str] = set()
        ivs: list[IndexVar] = []
        for d in (self.trip, *shape[:k], *shape[k + 1:]):
            nm = tr._index_name(used)
            used.add(nm)
            ivs.append(IndexVar(nm, d))
        tr.index_used |= used
        step_index = _subst_var(a, g, ivs[0].name)
        rest = [Affine.var(iv.name) for iv in ivs[1:]]
        idx = (*rest[:k], step_index, *rest[k:])
        self.slices.append(Statement(outer, tuple(ivs), Access(name, tuple(idx))))
        self.scanned.append(outer)
        return inner


def _mentions(a: Affine, g: str) -> bool:
    return any(n == g for n, _ in a.index)


def _subst_var(a: Affine, g: str, new: str) -> Affine:
    """``a`` (which mentions no index but ``g``) with ``g`` renamed ``new``."""
    coeff: Fraction = dict(a.index)[g]
    return Affine.make({new: coeff}, dict(a.sizes), a.const)
