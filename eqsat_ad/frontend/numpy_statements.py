"""Statements of the NumPy subset: assignments, in-place and item updates, ``if``.

An assignment binds a name (materializing a computed array as a statement); ``x += e`` and
``y[idx] = v`` on a local array make a new array (a functional update; inputs and aliased views
are never written); inside a loop being turned into a sum, ``s += e(i)`` is an accumulation and an
``if`` on the loop index a bracket. Mixed into the translator
(:mod:`eqsat_ad.frontend.numpy_subset`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.expr import Access, Bracket, Cmp, Const, Pred, conj, select
from ..ir.index import Affine, Dim
from .numpy_exprs import NEGATED
from .numpy_names import NameOps
from .numpy_scope import Returned, names_in
from .numpy_values import (
    NotSummable,
    NpFunc,
    PredVal,
    TVal,
    bracket,
    const,
    describe,
    is_static_number,
    mul,
    provably_nonneg,
    shape_str,
    sub,
)

__all__ = ["StatementOps", "is_integer"]


class StatementOps(NameOps):
    """Execution of statements other than loops (mixed into the translator)."""

    # --- statements ----------------------------------------------------------------------------
    def exec_block(self, stmts: Sequence[ast.stmt]) -> Returned | None:
        for s in stmts:
            self.node = s
            ret = self.exec_stmt(s)
            if ret is not None:
                return ret
        return None

    def exec_stmt(self, s: ast.stmt) -> Returned | None:
        match s:
            case ast.Return(value):
                if self.scope.frames:
                    raise NotSummable(f"'return' inside the loop (at {self.loc(s)})")
                if value is None:
                    raise self.error("'return' without a value: return the result", s)
                return Returned(self.eval(value))
            case ast.Assign():
                self.exec_assign(s)
            case ast.AugAssign():
                self.exec_augassign(s)
            case ast.AnnAssign(target, _, value):
                if value is None:
                    return None
                self.bind(target, self.eval(value), s)
            case ast.If():
                return self.exec_if(s)
            case ast.For():
                return self.exec_for(s)
            case ast.Pass():
                pass
            case ast.Expr(value):
                if isinstance(value, ast.Constant):
                    return None  # docstring
                if self._add_at(value, s):
                    return None
                raise self.error(
                    "an expression statement has no effect in the translated program (no "
                    "side effects: print, in-place methods, ... are not supported)", s,
                )
            case ast.While():
                raise self.error(
                    "'while' loop: its number of iterations is not known when translating; "
                    "write 'for i in range(n)' with a static n (use np.where for data-dependent "
                    "updates)", s,
                )
            case ast.Break() | ast.Continue():
                word = "break" if isinstance(s, ast.Break) else "continue"
                raise self.error(
                    f"'{word}' is not supported: loops run all their iterations; guard the body "
                    "with an 'if' on the loop index or np.where instead", s,
                )
            case ast.Assert(test, _):
                t = self.truth(self.eval(test), test, "assert")
                if t is not True:
                    raise self.error("assertion fails for the given shapes", s)
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef() | ast.Lambda():
                raise self.error(
                    "nested function or class definitions are not supported; define helpers at "
                    "module level (they are inlined)", s,
                )
            case ast.Import() | ast.ImportFrom():
                raise self.error("'import' inside the function is not supported; import at "
                                 "module level", s)
            case _:
                raise self.error(
                    f"the statement '{type(s).__name__}' is not supported by the NumPy "
                    "translator (supported: assignments, if, for over range, return)", s,
                )
        return None

    def _acc_pattern(self, s: ast.stmt) -> tuple[str, ast.expr, int] | None:
        if isinstance(s, ast.AugAssign):
            if isinstance(s.target, ast.Name) and isinstance(s.op, ast.Add | ast.Sub):
                return s.target.id, s.value, 1 if isinstance(s.op, ast.Add) else -1
            return None
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.BinOp)):
            return None
        name, v = s.targets[0].id, s.value
        is_self = lambda n: isinstance(n, ast.Name) and n.id == name  # noqa: E731
        if isinstance(v.op, ast.Add) and is_self(v.left) and name not in names_in(v.right):
            return name, v.right, 1
        if isinstance(v.op, ast.Add) and is_self(v.right) and name not in names_in(v.left):
            return name, v.left, 1
        if isinstance(v.op, ast.Sub) and is_self(v.left) and name not in names_in(v.right):
            return name, v.right, -1
        return None

    def _in_sum_accumulation(self, name: str) -> bool:
        fr = self.scope.frames[-1] if self.scope.frames else None
        return fr is not None and name not in fr.defined

    def exec_assign(self, s: ast.Assign) -> None:
        pat = self._acc_pattern(s)
        if pat is not None and self._in_sum_accumulation(pat[0]):
            name, e, sign = pat
            self.accumulate(name, self.eval(e), sign, s)
            return
        value = self.eval(s.value)
        for t in s.targets:
            self.bind(t, value, s)

    def _add_at(self, value: ast.expr, s: ast.stmt) -> bool:
        """``np.add.at(a, idx, b)``: ``a`` rebound to ``a`` plus the scatter of ``b`` at
        ``idx`` (purely functional: a new array; ``a`` must not be an input)."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr == "at"):
            return False
        if self.eval(value.func.value) != NpFunc("add"):
            return False
        if value.keywords or len(value.args) != 3 or not isinstance(value.args[0], ast.Name):
            raise self.error("np.add.at(a, idx, b) takes an array variable, an index array "
                             "and the values", s)
        name = value.args[0].id
        self._check_inplace(name, s)
        old = self.operand(self.load(name, value.args[0]), s)
        if not old.ndim:
            raise self.error("np.add.at: the array must have at least one axis", s)
        idx, b = self.eval(value.args[1]), self.eval(value.args[2])
        added = self.scatter_add(idx, b, old.shape[0], s, "np.add.at")
        if added.shape != old.shape:
            raise self.error(
                f"np.add.at: values of shape {tuple(added.shape[1:])} per index do not fit "
                f"the rows of {name!r} (shape {tuple(old.shape)}); pass one value row per "
                "index", s)
        self.assign_name(name, self.binop(ast.Add, old, added, s), s)
        return True

    def exec_augassign(self, s: ast.AugAssign) -> None:
        target = s.target
        if isinstance(target, ast.Subscript):
            self.item_assign(target, self.eval(s.value), s, type(s.op))
            return
        if isinstance(target, ast.Attribute):
            self._mutation(target, s)
        assert isinstance(target, ast.Name)
        name = target.id
        self._check_inplace(name, s)
        pat = self._acc_pattern(s)
        if pat is not None and self._in_sum_accumulation(name):
            self.accumulate(name, self.eval(s.value), pat[2], s)
            return
        old = self.load(name, target)
        new = self.binop(type(s.op), old, self.eval(s.value), s)
        if isinstance(old, TVal) and old.ndim and isinstance(new, TVal) and new.shape != old.shape:
            raise self.error(
                f"in-place update of {name!r} would change its shape from {shape_str(old.shape)} "
                f"to {shape_str(new.shape)}", s,
            )
        self.assign_name(name, new, s)

    def _check_inplace(self, name: str, s: ast.AST) -> None:
        """``x += e`` on an array writes into it: refuse when that array is an input or aliased."""
        v = self.scope.env.get(name)
        if not (isinstance(v, TVal) and v.ndim and v.base is not None):
            return
        if v.base in {p.name for p in self.params}:
            raise self.error(
                f"in-place update of {name!r} mutates the input array {v.base!r}; write "
                f"'{name} = {name} + ...' to make a new array instead", s,
            )
        others = [k for k, w in self.scope.env.items()
                  if k != name and isinstance(w, TVal) and w.base == v.base and w.ndim]
        if others:
            raise self.error(
                f"in-place update of {name!r} may also change {others[0]!r}, which views the "
                f"same array; copy first ({name} = {name}.copy()) or write "
                f"'{name} = {name} + ...'", s,
            )

    def _mutation(self, target: ast.expr, s: ast.AST) -> None:
        """Refuse an assignment into an input array (or an attribute, or a chained subscript)."""
        root = target
        while isinstance(root, ast.Subscript | ast.Attribute):
            root = root.value
        name = root.id if isinstance(root, ast.Name) else None
        v = self.scope.env.get(name) if name else None
        what = ast.unparse(target)
        if isinstance(target, ast.Attribute):
            raise self.error(f"assignment to the attribute {what} is not supported", s)
        if isinstance(v, TVal) and v.base in {p.name for p in self.params}:
            raise self.error(
                f"assignment to {what} mutates the input array {v.base!r}; copy it first "
                f"({name} = {name}.copy()) or build a new array (np.where on an index "
                "comparison, np.concatenate)", s,
            )
        raise self.error(
            f"item assignment {what} = ...: only 'name[index] = value' on a local array is "
            "supported", s,
        )

    def item_assign(self, target: ast.Subscript, value: Any, s: ast.AST,
                    op: type | None = None) -> None:
        """``y[idx] = value`` on a local array: ``y`` becomes a new array (functional update)."""
        if not isinstance(target.value, ast.Name):
            self._mutation(target, s)
        name = target.value.id
        y = self.load(name, target.value)
        if not isinstance(y, TVal) or y.ndim == 0:
            raise self.error(f"item assignment into {describe(y)} {name!r}", s)
        if y.base in {p.name for p in self.params}:
            self._mutation(target, s)
        self._check_inplace(name, s)
        idx = self.eval_index(target.slice)
        if op is not None:
            value = self.binop(op, self.index(y, idx, target), value, s)
        self.assign_name(name, self._updated(y, idx, value, s), s)

    def _updated(self, y: TVal, idx: Any, value: Any, node: ast.AST) -> TVal:
        items = list(idx) if isinstance(idx, tuple) else [idx]
        if any(it is None or isinstance(it, TVal | list | tuple | float) for it in items):
            raise self.error("item assignment supports int, slice and ... indices only", node)
        if items.count(Ellipsis) > 1:
            raise self.error("an index can only have a single ellipsis ('...')", node)
        real = len(items) - items.count(Ellipsis)
        if real > y.ndim:
            raise self.error(f"too many indices for array: array is {y.ndim}-dimensional, but "
                             f"{real} were indexed", node)
        fill = [slice(None)] * (y.ndim - real)
        if Ellipsis in items:
            k = items.index(Ellipsis)
            items = items[:k] + fill + items[k + 1:]
        else:
            items += fill
        axes = tuple(self.fresh() for _ in y.shape)
        conds: list[Pred] = []
        sel_shape: list[Dim] = []
        sel_pos: list[Affine] = []  # position inside the selection, per selected axis
        for ax, d, it in zip(axes, y.shape, items, strict=True):
            v = Affine.var(ax)
            if isinstance(it, slice):
                first, step, count = self._slice(it, d, node)
                if it == slice(None):
                    sel_pos.append(v)
                elif step == 1:
                    conds += [Cmp(">=", v, first), Cmp("<", v, first + _dim_affine(count))]
                    sel_pos.append(v - first)
                elif step == -1:
                    conds += [Cmp("<=", v, first), Cmp(">", v, first - _dim_affine(count))]
                    sel_pos.append(first - v)
                else:
                    raise self.error("assignment to a strided slice (step other than 1 or -1) "
                                     "is not supported", node)
                sel_shape.append(count)
            else:
                conds.append(Cmp("==", v, self._index_value(it, d, node)))
        tv = self.operand(value, node)
        if self.broadcast_shapes([tv.shape, tuple(sel_shape)], node) != tuple(sel_shape):
            raise self.error(
                f"could not broadcast a value of shape {shape_str(tv.shape)} into the selection "
                f"of shape {shape_str(tuple(sel_shape))}", node,
            )
        off = len(sel_shape) - tv.ndim
        new = tv.at([
            Affine.constant(0) if e == 1 and sel_shape[off + k] != 1 else sel_pos[off + k]
            for k, e in enumerate(tv.shape)
        ])
        old = y.at([Affine.var(a) for a in axes])
        if not conds:
            return TVal(y.shape, axes, new)
        mask = bracket(conj(*conds))
        # A select: where the mask is false the new value is not looked at (and vice versa).
        return TVal(y.shape, axes, select(mask, new, old))

    def bind(self, target: ast.expr, value: Any, s: ast.AST) -> None:
        match target:
            case ast.Name(name):
                self.assign_name(name, value, s)
            case ast.Tuple(elts) | ast.List(elts):
                if any(isinstance(e, ast.Starred) for e in elts):
                    raise self.error("starred assignment is not supported", target)
                items = self._unpack(value, len(elts), target)
                for t, v in zip(elts, items, strict=True):
                    self.bind(t, v, s)
            case ast.Subscript():
                self.item_assign(target, value, s)
            case ast.Attribute():
                self._mutation(target, s)
            case _:
                raise self.error(f"cannot assign to {ast.unparse(target)}", target)

    def _unpack(self, value: Any, n: int, node: ast.AST) -> list[Any]:
        if isinstance(value, TVal):
            if value.ndim == 0 or not isinstance(value.shape[0], int):
                raise self.error(f"cannot unpack {describe(value)}", node)
            value = [self.index(value, k, node) for k in range(value.shape[0])]
        if not isinstance(value, tuple | list | range):
            raise self.error(f"cannot unpack {describe(value)}", node)
        if len(value) != n:
            raise self.error(f"cannot unpack {len(value)} values into {n} names", node)
        return list(value)

    def assign_name(self, name: str, value: Any, s: ast.AST) -> None:
        frames = self.scope.frames
        if frames:
            fr = frames[-1]
            if name in fr.acc:
                raise NotSummable(
                    f"{name!r} is both accumulated into and assigned in the loop "
                    f"(at {self.loc(s)})"
                )
            if fr.guards:
                raise NotSummable(
                    f"assignment to {name!r} under an 'if' on the loop index (at {self.loc(s)})"
                )
            for f in frames:
                f.defined.add(name)
        if isinstance(value, TVal):
            b = value.body
            view = isinstance(b, Const) or (
                value.base is not None and isinstance(b, Access | Bracket)
            )
            if not view:
                value = self.materialize(value, name, s)
        self.scope.env[name] = value

    def accumulate(self, name: str, value: Any, sign: int, s: ast.AST) -> None:
        """``name += sign * value`` inside (or at the end of) a summed loop."""
        frames = self.scope.frames
        fr = frames[-1] if frames else None
        if fr is None or name in fr.defined:
            if fr is not None and fr.guards:
                raise NotSummable(
                    f"update of the loop-local {name!r} under an 'if' (at {self.loc(s)})"
                )
            old = self.load(name, s)
            if isinstance(value, TVal) and _is_zero_like(old, value):
                new = value if sign > 0 else self.negate(value, s)
            else:
                new = self.binop(ast.Add if sign > 0 else ast.Sub, old, value, s)
            self.assign_name(name, new, s)
            return
        if name not in self.scope.env and name not in self.scope.globals:
            raise self.error(f"name {name!r} is not defined before the loop", s)
        if is_integer(value) and not fr.guards:
            # An integer counter (k += 1, k += i) stays an integer: summed in closed form.
            fr.acc.setdefault(name, []).append(value if sign > 0 else -value)
            return
        contrib = self.to_data(value, s)
        if sign < 0:
            contrib = self.negate(contrib, s)
        for g in fr.guards:
            contrib = TVal(contrib.shape, contrib.axes, mul(g, contrib.body))
        fr.acc.setdefault(name, []).append(contrib)

    # --- if ------------------------------------------------------------------------------------
    def truth(self, v: Any, node: ast.AST, what: str = "if") -> bool | PredVal:
        if isinstance(v, np.generic):
            v = v.item()
        if v is None or isinstance(v, bool | int | float | str | tuple | list | range):
            return bool(v)
        if isinstance(v, Affine):
            if v.is_constant():
                return v.const != 0
            if v.index:
                return PredVal(Cmp("!=", v, Affine.constant(0)))
            if provably_nonneg(v - 1) or provably_nonneg(-v - 1):
                return True  # nonzero for every (positive) size
            raise self.error(
                f"the condition {v} != 0 depends on a symbolic size; call with concrete shapes "
                "to decide it", node,
            )
        if isinstance(v, PredVal):
            return v
        if isinstance(v, TVal):
            raise self.error(
                f"data-dependent '{what}': the condition depends on array values; use "
                "np.where(cond, a, b) (or np.maximum/np.minimum) to choose between values", node,
            )
        raise self.error(f"cannot use {describe(v)} as a condition", node)

    def exec_if(self, s: ast.If) -> Returned | None:
        t = self.truth(self.eval(s.test), s.test)
        if isinstance(t, bool):
            return self.exec_block(s.body if t else s.orelse)
        frames = self.scope.frames
        if not frames:
            raise NotSummable(f"'if' on a loop index of an outer function (at {self.loc(s)})")
        fr = frames[-1]
        fr.guards.append(bracket(t.pred))
        try:
            if self.exec_block(s.body) is not None:  # pragma: no cover - return raises
                raise NotSummable("return in a guarded branch")
        finally:
            fr.guards.pop()
        if s.orelse:
            p = t.pred
            fr.guards.append(
                bracket(Cmp(NEGATED[p.op], p.lhs, p.rhs)) if isinstance(p, Cmp)
                else sub(const(1), bracket(p))
            )
            try:
                self.exec_block(s.orelse)
            finally:
                fr.guards.pop()
        return None


def _dim_affine(d: Dim) -> Affine:
    return Affine.of_dim(d)


def is_integer(v: Any) -> bool:
    return (isinstance(v, int | np.integer) and not isinstance(v, bool)) or (
        isinstance(v, Affine) and v.is_integral()
    )


def _is_zero_like(old: Any, value: TVal) -> bool:
    """``old`` is zero and adding it to ``value`` does not change ``value``'s shape."""
    if is_static_number(old):
        return old == 0
    if isinstance(old, TVal) and isinstance(old.body, Const) and old.body.value == 0:
        n = max(old.ndim, value.ndim)
        pad_o = (1,) * (n - old.ndim) + old.shape
        pad_v = (1,) * (n - value.ndim) + value.shape
        return value.ndim == n and all(o == 1 or o == v for o, v in zip(pad_o, pad_v, strict=True))
    return False
