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

Layout: this module holds the entry point, the conversions of values and calls of Python
helpers (inlined); the translator mixes in :mod:`.numpy_loops` (``for``), :mod:`.numpy_statements`
(the other statements), :mod:`.numpy_names` (parameters and name lookup), :mod:`.numpy_emit`
(materialized statements and outputs), :mod:`.numpy_exprs` the expressions, :mod:`.numpy_calls`
NumPy functions, methods and built-ins, :mod:`.numpy_gathers` index arrays, and
:mod:`.numpy_layout`, :mod:`.numpy_contractions` and :mod:`.numpy_ops` the array operations,
over the symbolic values of :mod:`.numpy_values`; :mod:`.numpy_scope` holds the state of one
function.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.errors import EqsatError, ProgramError
from ..ir.expr import Cmp, Expr, Loc, Sum, has_reduction
from ..ir.functions import BUILTINS, lookup
from ..ir.index import Affine, Dim, IndexVar
from ..ir.program import Param, Program, Step
from .closures import ConstantArrays, closure_cells
from .numpy_loops import MAX_TOTAL_UNROLL as MAX_TOTAL_UNROLL
from .numpy_loops import MAX_UNROLL, LoopOps
from .numpy_scope import LoopVar, Scope, closure_of, identifiers, source_of
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
    bracket,
    call,
    const,
    describe,
    mul,
    scalar,
)

__all__ = ["translate", "MAX_UNROLL"]

_MAX_INLINE_DEPTH = 32


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


class _Translator(LoopOps):
    def __init__(self) -> None:
        self.statements: list[Step] = []
        self.params: list[Param] = []
        self.index_params: dict[str, int] = {}  # integer array parameters (index arrays)
        self.index_ranges: dict[str, Dim] = {}
        self.taken: set[str] = set(BUILTINS) | {"Sum", "rel"} | set(keyword.kwlist)
        self.index_used: set[str] = set()
        self.index_avoid: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.loop_vars: dict[str, LoopVar] = {}
        self.loop_generators: dict[str, tuple[str, ...]] = {}  # statement -> its loop binders
        self.counter = 0
        self.unrolled = 0
        self.scope: Scope | None = None
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
        tree, filename, line0, col0 = source_of(real)
        self.scope = Scope(
            tree.name, filename, line0, col0, getattr(real, "__globals__", {}),
            closure_of(real), {}, cells=closure_cells(real),
        )
        self.index_avoid |= identifiers(tree)
        self._bind_params(real, tree, shapes, dtypes or {})
        self.node = tree
        ret = self.exec_block(tree.body)
        if ret is None:
            raise self.error(f"function {tree.name!r} does not return a value", tree)
        outputs, is_tuple = self._outputs(ret.value, tree)
        return Program(tuple(self.params), tuple(self.statements), outputs, is_tuple, tree.name)

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
        if materialize and has_reduction(tv.body):
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
        tree, filename, line0, col0 = source_of(f)
        if tree.args.vararg or tree.args.kwarg:
            raise self.error(f"helper {f.__name__}() with *args/**kwargs cannot be inlined", e)
        env: dict[str, Any] = {}
        for k, v in bound.arguments.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, TVal) and has_reduction(v.body):
                v = self.materialize(v, k, e)  # used by name in the helper: compute it once
            env[k] = v
        caller = self.scope
        self.index_avoid |= identifiers(tree)
        self.scope = Scope(tree.name, filename, line0, col0, f.__globals__, closure_of(f), env,
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
