"""Tangent-style front end: a Python function written in a NumPy subset → a Tensor SSA Program.

``translate(fn, shapes)`` reads ``fn``'s source (``inspect.getsource`` + ``ast``) and interprets
its syntax tree over symbolic arrays; the function is never run. What it understands:

* arithmetic with NumPy broadcasting, ``@``/``np.dot``/``np.matmul``/``np.einsum``/``np.outer``,
  ``np.trace``, ``np.diag`` (both directions), ``.T``/``np.transpose``, ``np.sum``/``mean``/``max``/
  ``min`` with ``axis`` and ``keepdims`` (max/min over a concrete axis: a pairwise tournament of
  binary ``max``, one statement per level), elementwise ``np.exp log tanh sin cos sqrt abs
  square``, ``x ** c``,
  ``np.maximum``/``np.minimum``, ``np.where`` with data comparisons (written with the built-in
  comparisons ``gt``, ``ge``, ``eq``, ``ne``), indexing with ints, slices, ``None``, ``...`` and
  loop indices, ``x.shape``, ``len(x)``, ``reshape`` (splitting axes), ``np.concatenate``/``stack``;
* ``for i in range(...)`` whose body accumulates (``s += e(i)``, ``s = s + e(i)``) becomes ONE
  ``Sum`` over ``i``: loop-local arrays become statements with ``i`` as a generator, so a loop of
  scalar reads is O(n), not O(n²); an ``if`` on ``i`` inside such a loop becomes a bracket. Other
  static loops are unrolled (at most :data:`MAX_UNROLL` iterations each);
* ``if`` on constants and shapes is decided at translation time; data-dependent choices must use
  ``np.where``/``np.maximum``;
* ``stop_gradient(x)`` and functions with a custom adjoint (``eqsat_ad.custom_adjoint``) become
  ``Call``s; other plain Python helpers are inlined from their source.

Errors are :class:`~eqsat_ad.ir.errors.ProgramError` with the real file, line and column.

Layout: this module holds the statements, loops, naming and materialization of statements;
:mod:`.numpy_exprs` the expressions, :mod:`.numpy_calls` NumPy functions, methods and built-ins,
:mod:`.numpy_ops` the array operations, :mod:`.numpy_values` the symbolic values.
"""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import keyword
import math
import textwrap
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir.errors import EqsatError, ProgramError
from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Loc,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    conj,
    free_indices,
    select,
    substitute_pred,
)
from ..ir.functions import BUILTINS, lookup
from ..ir.index import Affine, Dim, IndexVar, as_dim, dim_str
from ..ir.program import Param, Program, Statement, Step
from .closures import ConstantArrays, closure_cells, lambda_source
from .numpy_calls import BUILTIN_NAMES, NP_BY_ID
from .numpy_exprs import NEGATED, ExprOps, eqsat_function
from .numpy_fold import FOLD_MIN_TRIP, translate_fold, trip_count
from .numpy_values import (
    Builtin,
    EqsatFunc,
    Method,
    NotSummable,
    NpFunc,
    PredVal,
    TVal,
    add,
    affine_as_dim,
    as_int_if_const,
    bracket,
    call,
    const,
    describe,
    has_sum,
    is_static_number,
    mul,
    provably_nonneg,
    scalar,
    shape_str,
    sub,
    subst,
    subst_affine,
)

__all__ = ["translate", "MAX_UNROLL"]

MAX_UNROLL = 10000
"""Most iterations a single loop that is not an accumulation is unrolled to."""

MAX_TOTAL_UNROLL = 20000
"""Most unrolled iterations in one translation (nested loops multiply)."""

_MAX_INLINE_DEPTH = 32

_INDEX_POOL = ("i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "u", "v", "w", "a", "b", "c",
               "d", "e", "f", "g", "h")


@dataclass
class _Returned:
    value: Any


@dataclass(frozen=True)
class _Poisoned:
    """A name whose value after a summed loop is not known; reading it fails with ``why``."""

    why: str


@dataclass
class _Frame:
    """A ``for`` loop being turned into a sum over the fresh index ``var``."""

    var: str
    assigned: frozenset[str]
    defined: set[str] = field(default_factory=set)
    acc: dict[str, list[Any]] = field(default_factory=dict)
    """Contributions per accumulated name: arrays, or integers (counters) summed exactly."""
    guards: list[Expr] = field(default_factory=list)
    """0/1 factors of the enclosing ifs on the loop index (brackets)."""


@dataclass
class _Scope:
    """One function being translated (the user's function or an inlined helper)."""

    fn_name: str
    filename: str
    line0: int
    col0: int
    globals: Mapping[str, Any]
    closure: Mapping[str, Any]
    env: dict[str, Any]
    frames: list[_Frame] = field(default_factory=list)
    depth: int = 0
    cells: Mapping[str, Any] = field(default_factory=dict)
    """the closure's cells, where a captured array is read again at each call"""


@dataclass(frozen=True)
class _LoopVar:
    extent: Dim
    last: Affine
    """Value of the binder in the last iteration (the range analysis uses [0, last])."""


# ================================================================================================
# Public entry point
# ================================================================================================


def translate(
    fn: Callable[..., Any],
    shapes: Mapping[str, Sequence[int | str]],
    dtypes: Mapping[str, Any] | None = None,
    *,
    constants: ConstantArrays | None = None,
) -> Program:
    """Translate the NumPy-subset Python function ``fn`` into a Tensor SSA :class:`Program`.

    ``shapes`` gives each array parameter's shape (ints or size names such as ``"N"``; ``()`` for
    a scalar); parameters without a shape must have a default, which is then a constant.
    ``dtypes`` may mark parameters as boolean (``bool`` → a relation, usable as a mask) or float.
    The program's parameters follow ``fn``'s parameter order; its output is ``fn``'s return value
    (a tuple of outputs for a returned tuple).

    ``constants``: where given, arrays the function reads from its closure or module globals
    become extra parameters after ``fn``'s own (constants of this translation; see
    :mod:`.closures`), recorded in ``constants.found``; without it such a read is an error.
    A ``lambda`` is translated like the equivalent ``def``.

    >>> import numpy as np
    >>> def f(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += x[i] * x[i]
    ...     return s
    >>> print(translate(f, {"x": ("N",)}))  # doctest: +SKIP
    def f(x: [N]):
        s = Sum[i: N](x[i] * x[i])
        return s
    """
    tr = _Translator()
    tr.constants = constants
    try:
        return tr.run(fn, shapes, dtypes)
    except EqsatError:
        raise
    except NotSummable as e:  # pragma: no cover - every loop falls back before this
        raise ProgramError(f"cannot translate a loop: {e.reason}", tr.last_loc()) from None
    except RecursionError:
        raise ProgramError(
            "the function is nested too deeply to translate", tr.last_loc()
        ) from None
    except Exception as e:  # an unexpected failure still names where it happened
        raise ProgramError(
            f"the NumPy translator failed on this construct ({type(e).__name__}: {e})",
            tr.last_loc(),
        ) from e


# ================================================================================================
# The translator
# ================================================================================================


def _source_of(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str, int, int]:
    """The function's syntax tree, file name, first line in the file and dedent width."""
    fn = inspect.unwrap(fn)
    name = getattr(fn, "__name__", repr(fn))
    if name == "<lambda>" and isinstance(fn, types.FunctionType):
        return lambda_source(fn)
    try:
        lines, line0 = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise ProgramError(
            f"cannot read the source of {name!r} ({e}); define it with 'def' in a file"
        ) from None
    first = lines[0]
    col0 = len(first) - len(first.lstrip())
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise ProgramError(
            f"cannot parse the source of {name!r}: {e.msg}",
            Loc(line0 + (e.lineno or 1) - 1, (e.offset or 1) - 1 + col0, filename),
        ) from None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        kind = "a lambda" if name == "<lambda>" else type(node).__name__
        raise ProgramError(
            f"can only translate functions defined with 'def', got {kind}",
            Loc(line0, col0, filename),
        )
    return node, filename, line0, col0


def _identifiers(node: ast.AST) -> set[str]:
    """Names the function assigns arrays to (loop targets excepted), kept free for statements."""
    loop_targets: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.For):
            loop_targets |= {id(t) for t in ast.walk(n.target)}
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in loop_targets:
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _assigned_names(stmts: Sequence[ast.stmt]) -> frozenset[str]:
    """Names the statements bind, including arrays updated by item assignment (``y[i] = v``)."""
    out: set[str] = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                root = n.value
                while isinstance(root, ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name):
                    out.add(root.id)
    return frozenset(out)


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _subst_loop(v: Any, var: str, value: Affine) -> Any:
    """Replace the loop binder ``var`` by ``value`` inside a translator value."""
    if isinstance(v, TVal):
        return TVal(v.shape, v.axes, subst(v.body, {var: value}), v.base, v.boolean)
    if isinstance(v, Affine):
        return v.substitute({var: value})
    if isinstance(v, PredVal):
        return PredVal(substitute_pred(v.pred, {var: value}))
    if isinstance(v, tuple):
        return tuple(_subst_loop(x, var, value) for x in v)
    if isinstance(v, list):
        return [_subst_loop(x, var, value) for x in v]
    return v


class _Translator(ExprOps):
    def __init__(self) -> None:
        self.statements: list[Step] = []
        self.params: list[Param] = []
        self.index_params: dict[str, int] = {}  # integer array parameters (index arrays)
        self.index_ranges: dict[str, Dim] = {}
        self.taken: set[str] = set(BUILTINS) | {"Sum", "rel"} | set(keyword.kwlist)
        self.index_used: set[str] = set()
        self.index_avoid: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.loop_vars: dict[str, _LoopVar] = {}
        self.loop_generators: dict[str, tuple[str, ...]] = {}  # statement -> its loop binders
        self.counter = 0
        self.unrolled = 0
        self.scope: _Scope | None = None
        self.node: ast.AST | None = None
        self.constants: ConstantArrays | None = None

    # --- plumbing ------------------------------------------------------------------------------
    def fresh(self) -> str:
        self.counter += 1
        return f"_{self.counter}"

    def loc(self, node: ast.AST | None) -> Loc | None:
        sc = self.scope
        if sc is None or node is None or not hasattr(node, "lineno"):
            return None
        return Loc(sc.line0 + node.lineno - 1, node.col_offset + sc.col0, sc.filename)

    def last_loc(self) -> Loc | None:
        return self.loc(self.node)

    def error(self, message: str, node: ast.AST | None) -> ProgramError:
        return ProgramError(message, self.loc(node if node is not None else self.node))

    def symbolic(self, v: Any, message: str, node: ast.AST) -> Exception:
        """A failure caused by a symbolic integer: inside a summed loop, unroll instead."""
        if isinstance(v, Affine) and v.index:
            return NotSummable(f"{message} (at {self.loc(node)})")
        return self.error(message, node)

    def new_name(self, hint: str) -> str:
        """A fresh statement name: ``hint``, else ``hint1``, ``hint2``, ... (like fresh_name,
        without rescanning the numbers already given out: unrolled loops make thousands)."""
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "t"
        name = base
        if name in self.taken or name in self.index_used:
            stem = base.rstrip("0123456789") or base
            k = self.next_suffix.get(stem, 1)
            while f"{stem}{k}" in self.taken or f"{stem}{k}" in self.index_used:
                k += 1
            self.next_suffix[stem] = k + 1
            name = f"{stem}{k}"
        self.taken.add(name)
        return name

    # --- entry ---------------------------------------------------------------------------------
    def run(
        self,
        fn: Callable[..., Any],
        shapes: Mapping[str, Sequence[int | str]],
        dtypes: Mapping[str, Any] | None,
    ) -> Program:
        real = inspect.unwrap(fn) if callable(fn) else fn
        module = getattr(real, "__module__", None) or ""
        if not isinstance(real, types.FunctionType) or module.split(".")[0] == "numpy":
            raise ProgramError(
                f"translate expects a Python function defined with 'def', got {real!r}"
            )
        tree, filename, line0, col0 = _source_of(real)
        self.scope = _Scope(
            tree.name, filename, line0, col0, getattr(real, "__globals__", {}),
            _closure_of(real), {}, cells=closure_cells(real),
        )
        self.index_avoid |= _identifiers(tree)
        self._bind_params(real, tree, shapes, dtypes or {})
        self.node = tree
        ret = self.exec_block(tree.body)
        if ret is None:
            raise self.error(f"function {tree.name!r} does not return a value", tree)
        outputs, is_tuple = self._outputs(ret.value, tree)
        return Program(tuple(self.params), tuple(self.statements), outputs, is_tuple, tree.name)

    def _bind_params(
        self,
        fn: Callable[..., Any],
        tree: ast.FunctionDef,
        shapes: Mapping[str, Sequence[int | str]],
        dtypes: Mapping[str, Any],
    ) -> None:
        args = tree.args
        if args.vararg or args.kwarg:
            bad = args.vararg or args.kwarg
            raise self.error(
                "*args/**kwargs parameters cannot be translated; name each array parameter", bad
            )
        if not isinstance(shapes, Mapping):
            raise ProgramError("shapes must be a mapping from parameter name to shape tuple")
        arg_nodes = args.posonlyargs + args.args + args.kwonlyargs
        names = [a.arg for a in arg_nodes]
        for k in list(shapes) + list(dtypes):
            if k not in names:
                raise ProgramError(
                    f"{k!r} is not a parameter of {tree.name!r} (parameters: {', '.join(names)})"
                )
        try:
            sig = inspect.signature(fn)
            defaults = {
                p.name: p.default for p in sig.parameters.values()
                if p.default is not inspect.Parameter.empty
            }
        except (TypeError, ValueError):  # pragma: no cover - builtins have no source anyway
            defaults = {}
        size_names: set[str] = set()
        for a in arg_nodes:
            if a.arg in shapes:
                continue
            if a.arg not in defaults:
                raise self.error(
                    f"no shape given for parameter {a.arg!r}: pass shapes={{'{a.arg}': (...)}} "
                    "(use () for a scalar)", a,
                )
        for a in arg_nodes:
            name = a.arg
            if name not in shapes:
                self.scope.env[name] = self._static_default(defaults[name], name, a)
                continue
            shape = self._shape(shapes[name], name)
            for d in shape:
                if not isinstance(d, int):
                    size_names.add(d.name)
            kind = self._kind(dtypes.get(name), name)
            if shape and dtypes.get(name) is not None and np.dtype(dtypes[name]).kind in "iu":
                self.index_params[name] = len(self.params)  # an index array if used as one
            self.params.append(Param(name, shape, kind, self.loc(a)))
            axes = tuple(self.fresh() for _ in shape)
            idx = tuple(Affine.var(x) for x in axes)
            body: Expr = Bracket(Rel(name, idx)) if kind == "relation" else Access(name, idx)
            self.scope.env[name] = TVal(shape, axes, body, name, kind == "relation")
        clash = size_names & set(names)
        if clash:
            raise ProgramError(
                f"size name {sorted(clash)[0]!r} is also a parameter name; rename one of them"
            )
        self.taken |= set(names) | size_names
        self.index_avoid |= set(names) | size_names

    def _shape(self, shape: Any, name: str) -> tuple[Dim, ...]:
        if isinstance(shape, int | str) or not isinstance(shape, Sequence):
            raise ProgramError(
                f"shape of {name!r} must be a tuple of ints or size names, got {shape!r}"
            )
        out: list[Dim] = []
        for d in shape:
            if isinstance(d, str) and not d.isidentifier():
                raise ProgramError(f"size name {d!r} of parameter {name!r} is not an identifier")
            if isinstance(d, np.integer):
                d = int(d)
            try:
                out.append(as_dim(d))
            except (TypeError, ValueError) as e:
                raise ProgramError(f"shape of {name!r}: {e}") from None
        return tuple(out)

    def _kind(self, dtype: Any, name: str) -> str:
        if dtype is None:
            return "tensor"
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            raise ProgramError(f"dtype of {name!r} is not a NumPy dtype: {dtype!r}") from None
        if kind == "b":
            return "relation"
        if kind in "fiu":
            return "tensor"
        raise ProgramError(f"dtype {np.dtype(dtype)} of {name!r} is not supported (float or bool)")

    def _static_default(self, v: Any, name: str, node: ast.AST) -> Any:
        if v is None or isinstance(v, str) or is_static_number(v):
            return v.item() if isinstance(v, np.generic) else v
        if isinstance(v, tuple) and all(
            x is None or is_static_number(x) or isinstance(x, str) for x in v
        ):
            return v
        raise self.error(
            f"parameter {name!r} has no shape and its default {v!r} is not a constant; "
            "give its shape in shapes=", node,
        )

    # --- outputs and naming --------------------------------------------------------------------
    def _outputs(self, value: Any, node: ast.AST) -> tuple[tuple[Expr, ...], bool]:
        items = value if isinstance(value, tuple | list) else (value,)
        outs: list[Expr] = []
        for k, v in enumerate(items):
            hint = "out" if len(items) == 1 else f"out{k}"
            if isinstance(v, tuple | list):
                raise self.error("nested tuples cannot be returned; return a flat tuple", node)
            tv = self.to_data(v, node)
            if tv.ndim == 0 and not has_sum(tv.body) and not free_indices(tv.body):
                outs.append(self._pretty_expr(tv.body))
                continue
            if not self._whole_statement(tv):
                tv = self.materialize(tv, hint, node, keep_unit_axes=True)
            outs.append(Access(tv.body.name) if tv.ndim else tv.body)
        return tuple(outs), isinstance(value, tuple | list)

    def _whole_statement(self, tv: TVal) -> bool:
        """Whether ``tv`` is an earlier statement read whole (not a slice such as ``t[:-1]``,
        which reads the same way over a shorter extent), so it can be returned by name."""
        body = tv.body
        if not (isinstance(body, Access)
                and body.indices == tuple(Affine.var(a) for a in tv.axes)):
            return False
        stmt = next((s for s in self.statements
                     if isinstance(s, Statement) and s.name == body.name), None)
        return stmt is not None and tuple(iv.extent for iv in stmt.indices) == tuple(tv.shape)

    def _index_name(self, used: set[str]) -> str:
        for c in _INDEX_POOL:
            if c not in used and c not in self.taken and c not in self.index_avoid:
                return c
        k = 1
        while True:
            for c in ("i", "j", "k"):
                name = f"{c}{k}"
                if name not in used and name not in self.taken and name not in self.index_avoid:
                    return name
            k += 1

    def _rename(self, e: Expr, m: dict[str, str], used: set[str]) -> Expr:
        """Rename every index (free ones by ``m``, bound ones to fresh readable names)."""
        amap = {k: Affine.var(v) for k, v in m.items()}
        match e:
            case Const():
                return e
            case Access(name, idx):
                return Access(name, tuple(subst_affine(a, amap) for a in idx), e.loc)
            case Bracket(p):
                return Bracket(substitute_pred(p, amap), e.loc)
            case Binary(op, lhs, rhs):
                return Binary(op, self._rename(lhs, m, used), self._rename(rhs, m, used), e.loc)
            case Neg(arg):
                return Neg(self._rename(arg, m, used), e.loc)
            case Pow(base, k):
                return Pow(self._rename(base, m, used), k, e.loc)
            case Call(fn, args):
                return Call(fn, tuple(self._rename(a, m, used) for a in args), e.loc)
            case Sum(ivs, body) | Max(ivs, body):
                inner = dict(m)
                used2 = set(used)
                new: list[IndexVar] = []
                for iv in ivs:
                    nm = self._index_name(used2)
                    used2.add(nm)
                    inner[iv.name] = nm
                    new.append(IndexVar(nm, iv.extent))
                self.index_used |= {iv.name for iv in new}
                return type(e)(tuple(new), self._rename(body, inner, used2), e.loc)
        raise TypeError(e)

    def _pretty_expr(self, e: Expr) -> Expr:
        return self._rename(e, {}, set())

    def materialize(self, tv: TVal, hint: str, node: ast.AST, keep_unit_axes: bool = False
                    ) -> TVal:
        """Emit ``name[gens] = body`` and return the value as an access to it.

        Inside a summed loop the loop binders the body depends on become leading generators, so
        a loop-local array is computed once for all iterations (vectorized). Size-1 axes the
        body does not depend on (``keepdims``, ``x[:, None]``) are not stored.
        """
        free = free_indices(tv.body)
        loops = [v for v in self.loop_vars if v in free]
        stray = free - set(tv.axes) - set(loops)
        if stray:  # pragma: no cover - internal invariant
            raise AssertionError(f"unbound indices {sorted(stray)}")
        stored = [
            k for k, (a, d) in enumerate(zip(tv.axes, tv.shape, strict=True))
            if keep_unit_axes or d != 1 or a in free
        ]
        gens = [(v, self.loop_vars[v].extent) for v in loops] + [
            (tv.axes[k], tv.shape[k]) for k in stored
        ]
        name = self.new_name(hint)
        mapping: dict[str, str] = {}
        used: set[str] = set()
        ivs: list[IndexVar] = []
        for v, ext in gens:
            nm = self._index_name(used)
            used.add(nm)
            mapping[v] = nm
            ivs.append(IndexVar(nm, ext))
        self.index_used |= used
        body = self._rename(tv.body, mapping, used)
        self.statements.append(Statement(name, tuple(ivs), body, self.loc(node)))
        self.loop_generators[name] = tuple(loops)
        axes = tuple(self.fresh() for _ in tv.shape)
        idx = tuple(Affine.var(v) for v in loops) + tuple(Affine.var(axes[k]) for k in stored)
        return TVal(tv.shape, axes, Access(name, idx), name, tv.boolean)

    # --- conversions ---------------------------------------------------------------------------
    def count_expr(self, d: Dim) -> Expr:
        """A size as a data value: ``N`` is ``Sum[t: N](1)``."""
        if isinstance(d, int):
            return const(d)
        return Sum((IndexVar(self.fresh(), d),), const(1))

    def affine_expr(self, a: Affine) -> Expr:
        """An integer value as data (a loop index ``t`` is ``Sum[u: E]([u < t])``)."""
        e: Expr = const(float(a.const))
        for n, c in a.sizes:
            from ..ir.index import size as size_symbol

            e = add(e, mul(const(float(c)), self.count_expr(size_symbol(n))))
        for n, c in a.index:
            lv = self.loop_vars.get(n)
            if lv is None:  # pragma: no cover - only loop binders appear in translator values
                raise AssertionError(f"unknown index {n}")
            u = self.fresh()
            count = Sum((IndexVar(u, lv.extent),), bracket(Cmp("<", Affine.var(u), Affine.var(n))))
            e = add(e, mul(const(float(c)), count))
        return e

    def to_data(self, v: Any, node: ast.AST) -> TVal:
        if isinstance(v, TVal):
            return v
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool | int | float):
            if not math.isfinite(float(v)):
                raise self.error(f"the constant {v} is not finite; Tensor SSA has no literal "
                                 "for it", node)
            return scalar(const(float(v)), isinstance(v, bool))
        if isinstance(v, Affine):
            return scalar(self.affine_expr(v))
        if isinstance(v, PredVal):
            return scalar(bracket(v.pred), True)
        if isinstance(v, tuple | list):
            raise self.error(
                f"a Python {type(v).__name__} used as an array; build arrays from parameters "
                "(np.stack/np.concatenate of arrays are supported)", node,
            )
        raise self.error(f"{describe(v)} cannot be used as an array value", node)

    def operand(self, v: Any, node: ast.AST, materialize: bool = True) -> TVal:
        tv = self.to_data(v, node)
        if materialize and has_sum(tv.body):
            tv = self.materialize(tv, "t", node)
        return tv

    def static_int(self, v: Any, what: str, node: ast.AST) -> int:
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, Affine):
            if v.is_constant() and v.const.denominator == 1:
                return int(v.const)
            raise self.symbolic(v, f"{what} must be a constant integer, got {v}", node)
        raise self.error(f"{what} must be a constant integer, got {describe(v)}", node)

    def to_dim(self, v: Any, what: str, node: ast.AST) -> Dim:
        if isinstance(v, np.integer):
            v = int(v)
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 0:
                raise self.error(f"{what}: negative dimensions are not allowed", node)
            return v
        if isinstance(v, Affine):
            d = affine_as_dim(v)
            if d is None:
                raise self.symbolic(v, f"{what}: {v} is not a size (an int or a size name)", node)
            return d
        raise self.error(f"{what} must be an int or a size, got {describe(v)}", node)

    def shape_arg(self, v: Any, what: str, node: ast.AST) -> tuple[Dim, ...]:
        items = v if isinstance(v, tuple | list) else (v,)
        return tuple(self.to_dim(x, what, node) for x in items)

    # --- name lookup ---------------------------------------------------------------------------
    def check_read(self, name: str, node: ast.AST) -> None:
        for fr in self.scope.frames:
            if name in fr.acc:
                raise NotSummable(
                    f"{name!r} is read inside the loop that accumulates into it "
                    f"(at {self.loc(node)})"
                )
            if name in fr.assigned and name not in fr.defined:
                raise NotSummable(
                    f"{name!r} carries a value from one iteration to the next "
                    f"(at {self.loc(node)})"
                )

    def load(self, name: str, node: ast.AST) -> Any:
        sc = self.scope
        self.check_read(name, node)
        if name in sc.env:
            v = sc.env[name]
            if isinstance(v, _Poisoned):
                if sc.frames:
                    raise NotSummable(v.why)
                raise self.error(
                    f"{v.why[:v.why.rindex(' (at')]}: its value is unknown; assign it after "
                    "the loop", node,
                )
            return v
        if name in sc.closure:
            obj = sc.closure[name]
            if isinstance(obj, np.ndarray) and self.constants is not None:
                return self.constant_array(name, obj, sc.cells[name], node)
            return self.global_value(name, obj, node)
        if name in sc.globals:
            obj = sc.globals[name]
            if isinstance(obj, np.ndarray) and self.constants is not None:
                return self.constant_array(name, obj, sc.globals, node)
            return self.global_value(name, obj, node)
        if name in BUILTIN_NAMES:
            return Builtin(name)
        if hasattr(builtins, name):
            raise self.error(f"the built-in {name!r} is not supported by the NumPy translator",
                             node)
        raise self.error(f"name {name!r} is not defined", node)

    def constant_array(self, name: str, arr: np.ndarray, holder: Any, node: ast.AST) -> TVal:
        """A captured array: an extra parameter of the program, read again at each call."""
        consts = self.constants
        assert consts is not None
        pname = consts.by_id.get(id(arr))
        if pname is None:
            if arr.dtype.kind not in "biuf":
                raise self.error(f"captured array {name!r} has dtype {arr.dtype}; only float, "
                                 "int and bool arrays can be constants", node)
            pname = name if name not in self.taken else self.new_name(name)
            self.taken.add(pname)
            self.index_avoid.add(pname)
            shape = self._shape(consts.shape_of(arr), pname)
            kind = "relation" if arr.dtype.kind == "b" else "tensor"
            self.params.append(Param(pname, shape, kind, self.loc(node)))
            consts.by_id[id(arr)] = pname
            consts.found[pname] = (holder, name, tuple(arr.shape))
        param = next(p for p in self.params if p.name == pname)
        axes = tuple(self.fresh() for _ in param.shape)
        idx = tuple(Affine.var(x) for x in axes)
        rel = param.kind == "relation"
        body: Expr = Bracket(Rel(pname, idx)) if rel else Access(pname, idx)
        return TVal(param.shape, axes, body, pname, rel)

    def global_value(self, name: str, obj: Any, node: ast.AST) -> Any:
        if isinstance(obj, types.ModuleType):
            return obj
        if obj is None or isinstance(obj, str) or is_static_number(obj):
            return obj.item() if isinstance(obj, np.generic) else obj
        if isinstance(obj, tuple) and all(
            x is None or is_static_number(x) or isinstance(x, str) for x in obj
        ):
            return obj
        if isinstance(obj, np.ndarray):
            raise self.error(
                f"global array {name!r} is a constant the translator cannot embed in the "
                "program; pass it as a parameter", node,
            )
        special = eqsat_function(obj)
        if special is not None:
            return special
        if id(obj) in NP_BY_ID:
            return NpFunc(NP_BY_ID[id(obj)])
        if isinstance(obj, types.FunctionType):
            return obj
        if obj in (range, len, abs, min, max, float, int, sum):
            return Builtin(obj.__name__)
        raise self.error(
            f"global name {name!r} ({type(obj).__name__}) is not supported by the NumPy "
            "translator", node,
        )

    # --- statements ----------------------------------------------------------------------------
    def exec_block(self, stmts: Sequence[ast.stmt]) -> _Returned | None:
        for s in stmts:
            self.node = s
            ret = self.exec_stmt(s)
            if ret is not None:
                return ret
        return None

    def exec_stmt(self, s: ast.stmt) -> _Returned | None:
        match s:
            case ast.Return(value):
                if self.scope.frames:
                    raise NotSummable(f"'return' inside the loop (at {self.loc(s)})")
                if value is None:
                    raise self.error("'return' without a value: return the result", s)
                return _Returned(self.eval(value))
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
        if isinstance(v.op, ast.Add) and is_self(v.left) and name not in _names_in(v.right):
            return name, v.right, 1
        if isinstance(v.op, ast.Add) and is_self(v.right) and name not in _names_in(v.left):
            return name, v.left, 1
        if isinstance(v.op, ast.Sub) and is_self(v.left) and name not in _names_in(v.right):
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
        if _is_integer(value) and not fr.guards:
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

    def exec_if(self, s: ast.If) -> _Returned | None:
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

    # --- for -----------------------------------------------------------------------------------
    def exec_for(self, s: ast.For) -> _Returned | None:
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
        self.loop_vars[t] = _LoopVar(extent, hi - 1)
        frame = _Frame(t, _assigned_names(s.body))
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
                    self.scope.env[nm] = _Poisoned(
                        f"{nm!r} after a loop that may run zero times (at {self.loc(s)})"
                    )
                else:
                    self.scope.env[nm] = _subst_loop(self.scope.env[nm], t, count - 1)

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

    def _unroll(self, s: ast.For, items: list[Any], what: str) -> _Returned | None:
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

    # calls --------------------------------------------------------------------------------------
    def call(self, e: ast.Call) -> Any:
        f = self.eval(e.func)
        args: list[Any] = []
        for a in e.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value)
                if not isinstance(v, tuple | list):
                    raise self.error("only tuples can be unpacked with *", a)
                args.extend(v)
            else:
                args.append(self.eval(a))
        kwargs: dict[str, Any] = {}
        for kw in e.keywords:
            if kw.arg is None:
                raise self.error("**kwargs in a call is not supported", kw.value)
            kwargs[kw.arg] = self.eval(kw.value)
        self.node = e
        if isinstance(f, NpFunc):
            return self.np_call(f.name, args, kwargs, e)
        if isinstance(f, Method):
            return self.method_call(f, args, kwargs, e)
        if isinstance(f, Builtin):
            return self.builtin_call(f.name, args, kwargs, e)
        if isinstance(f, EqsatFunc):
            return self.eqsat_call(f.name, args, kwargs, e)
        if isinstance(f, types.FunctionType):
            return self.inline(f, args, kwargs, e)
        raise self.error(f"calling {describe(f)} is not supported", e)

    def eqsat_call(self, name: str, args: list[Any], kwargs: dict[str, Any], e: ast.AST) -> Any:
        fn = lookup(name)
        arity = fn.arity if fn is not None else 1
        if kwargs or len(args) != arity:
            raise self.error(f"{name}() takes {arity} positional argument(s)", e)
        return self.elementwise(args, lambda *xs: call(name, *xs), e)

    def inline(self, f: types.FunctionType, args: list[Any], kwargs: dict[str, Any],
               e: ast.AST) -> Any:
        """Translate a plain Python helper from its source, with the arguments bound."""
        if self.scope.depth >= _MAX_INLINE_DEPTH:
            raise self.error(f"helper calls nested deeper than {_MAX_INLINE_DEPTH} "
                             "(recursion is not supported)", e)
        try:
            bound = inspect.signature(f).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(f"call to {f.__name__}(): {err}", e) from None
        bound.apply_defaults()
        tree, filename, line0, col0 = _source_of(f)
        if tree.args.vararg or tree.args.kwarg:
            raise self.error(f"helper {f.__name__}() with *args/**kwargs cannot be inlined", e)
        env: dict[str, Any] = {}
        for k, v in bound.arguments.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, TVal) and has_sum(v.body):
                v = self.materialize(v, k, e)  # used by name in the helper: compute it once
            env[k] = v
        caller = self.scope
        self.index_avoid |= _identifiers(tree)
        self.scope = _Scope(tree.name, filename, line0, col0, f.__globals__, _closure_of(f), env,
                            depth=caller.depth + 1, cells=closure_cells(f))
        try:
            ret = self.exec_block(tree.body)
            if ret is None:
                raise self.error(f"helper {tree.name!r} does not return a value", tree)
            value = ret.value
        finally:
            self.scope = caller
        self.node = e
        return value

def _closure_of(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def _dim_affine(d: Dim) -> Affine:
    return Affine.of_dim(d)


def _is_integer(v: Any) -> bool:
    return (isinstance(v, int | np.integer) and not isinstance(v, bool)) or (
        isinstance(v, Affine) and v.is_integral()
    )


def _closed_form_sum(contribs: list[Any], t: str, extent: Dim) -> int | Affine | None:
    """``Σ_{t < extent} Σ contribs`` for integer contributions affine in ``t`` (None if not)."""
    total = Affine.constant(0)
    for c in contribs:
        if not _is_integer(c):
            return None
        total = total + (c if isinstance(c, Affine) else Affine.constant(int(c)))
    c1 = total.coeff(t)
    c0 = total.substitute({t: Affine.constant(0)})
    if isinstance(extent, int):
        return as_int_if_const(c0.scale(extent) + Fraction(extent * (extent - 1), 2) * c1)
    if c1 != 0 or not c0.is_constant():
        return None  # N·(N-1)/2 or N·i is not affine
    return as_int_if_const(Affine.of_dim(extent).scale(c0.const))


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
