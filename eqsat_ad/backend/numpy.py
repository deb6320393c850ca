"""The NumPy backend: run a program's plan.

The plan package builds the plan and its source (:func:`eqsat_ad.plan.lower.lower_program`:
the kernels each line runs, priced by :func:`eqsat_ad.plan.price.program_cost`); this module
loads that source as a Python function and calls it: it binds and checks the arguments, picks
the lowering for the call's sizes, dtypes and relation storage (cached per signature), and runs
optimized code under the guard (:mod:`.guard`). It decides nothing about what runs.

Public: :func:`lower`, :func:`lower_program` (source, decisions and plan),
:func:`compile_program` and :class:`CompiledProgram`.
"""


from __future__ import annotations

import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.errors import ProgramError, ShapeError
from ..ir.functions import on_register
from ..ir.program import Program
from ..ir.relations import (
    SparseRelation,
    is_index_array,
    is_sparse_matrix,
    prefer_dense,
    relation_argument,
)
from ..plan.kernels import Plan
from ..plan.lower import lower_program
from ..plan.lower.values import (
    _F32,
    _F64,
    Decision,
    Lowered,
)
from ..plan.same_code import same_code
from . import runtime
from .guard import PROVEN_BOTH, keep_structure, proven_finite
from .structured import Outer, Sparse

__all__ = [
    "CompiledProgram",
    "Decision",
    "Lowered",
    "compile_program",
    "lower",
    "lower_program",
]


# ================================================================================================
# Public API
# ================================================================================================


def lower(prog: Program, sizes: Mapping[str, int] | None = None) -> str:
    """Python source of a function taking ``prog``'s parameters in order (arrays) and returning
    its outputs, using ``np`` (NumPy) and ``_rt`` (:mod:`eqsat_ad.backend.runtime`)."""
    return lower_program(prog, sizes).source


# The runtime with its finiteness checks of products answered yes without a scan: for calls
# whose every value the guard proved finite (guard.PROVEN_BOTH), where a check could only pass
# (mlp_numpy's ``_rt.checked(X.T @ t_bar)``: a pass over 4 MB).
_TRUSTING = runtime.Overridden(checked=lambda r: r, finite=lambda *arrays: True)


def _load(lowered: Lowered) -> Any:
    code = compile(lowered.source, f"<eqsat_ad generated {lowered.function_name}>", "exec")
    fns = []
    for rt in (runtime, _TRUSTING):
        ns: dict[str, Any] = {"np": np, "_rt": rt, **lowered.namespace_extras}
        exec(code, ns)  # noqa: S102 - our own generated source
        fns.append(ns[lowered.function_name])
    fn, fn.proven = fns  # (.proven: the same code run where every value is proven finite)
    # The parameters whose finiteness the fast code trusts without checking it itself.
    fn.finite_inputs = tuple(d.detail for d in lowered.decisions if d.kind == "finite-input")
    return fn


class CompiledProgram:
    """A program compiled to NumPy: call it like the program (positional or keyword arguments).

    ``.source`` is the generated Python source (sizes symbolic), ``.program`` the program it
    runs, ``.decisions`` the lowering's choices. Each shape/dtype signature of the arguments gets
    its own compiled function (the same code; contraction orders may use the concrete sizes).
    """

    def __init__(self, prog: Program, structured: bool = False,
                 signed: frozenset[str] = frozenset()) -> None:
        self.program = prog
        self.structured = structured
        self.signed = signed  # (see lower_program)
        self._lowered = lower_program(prog, structured=structured, signed=signed)
        self._by_signature: dict[tuple, Any] = {}
        self._by_arrays: dict[tuple, tuple] = {}  # (shape, dtype) per argument -> fn, sizes
        self._plain_by: dict[tuple, CompiledProgram | None] = {}  # sizes -> see _plain
        self._lock = threading.Lock()
        self._param_index = {n: k for k, n in enumerate(prog.param_names)}
        self._param_names = prog.param_names
        # Each parameter's dimensions: ints, or size names.
        self._dims = [tuple(d if isinstance(d, int) else d.name for d in p.shape)
                      for p in prog.params]

    def with_own_fallback_state(self) -> CompiledProgram:
        """A shallow copy for another fallback (:func:`.guard.with_fallback`): the compiled
        functions are shared, the caches that remember a fallback's decisions (the unoptimized
        program a call signature runs, :meth:`_plain`) are its own. (Two programs optimized to
        one program share the cached compiled form, not their unoptimized programs.)"""
        twin = copy.copy(self)
        twin._by_arrays = {}
        twin._plain_by = {}
        return twin

    @property
    def source(self) -> str:
        """The generated source (after a call with sparse relation arguments: the code that
        runs for them, by their members)."""
        return self._lowered.source

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return self._lowered.decisions

    @property
    def plan(self) -> Plan:
        """The kernels of :attr:`source`."""
        return self._lowered.plan

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.program.name}({', '.join(self.program.param_names)})>"

    def bind(self, *args: Any, **kwargs: Any) -> tuple[list[np.ndarray], dict[str, int]]:
        """Check and convert arguments; returns them in parameter order and the sizes.

        Arrays are used as they are when they already fit (no copy); anything unusual goes
        through the interpreter's binder, whose errors name the parameter.
        """
        params = self.program.params
        try:
            if len(args) > len(params):
                raise _Slow
            given = dict(zip(self._param_names, args, strict=False))
            for k, v in kwargs.items():
                if k in given or k not in self._param_index:
                    raise _Slow
                given[k] = v
            if len(given) != len(params):
                raise _Slow
            return self._fast_bind(given)
        except _Slow:
            pass
        # (outside the handler: the ShapeError is not shown as raised while handling _Slow)
        from ..ir.interpreter import bind_arguments

        bind_arguments(self.program, *args, **kwargs)  # raises a ShapeError with details
        raise ShapeError(f"arguments do not fit {self!r}")

    def _fast_bind(self, given: Mapping[str, Any]) -> tuple[list[np.ndarray], dict[str, int]]:
        raw: list[np.ndarray] = []
        strong: list[np.dtype] = []  # dtypes of real arrays (Python numbers are weak)
        sizes: dict[str, int] = {}
        pending: list[int] = []  # relations given by their members (bound after the rest)
        for p, dims in zip(self.program.params, self._dims, strict=True):
            v = given[p.name]
            if p.kind == "relation" and type(v) is not np.ndarray and (
                is_sparse_matrix(v) or isinstance(v, SparseRelation)
            ) or p.kind == "relation" and is_index_array(v, len(dims)):
                pending.append(len(raw))
                raw.append(v)
                continue
            try:
                a = v if type(v) is np.ndarray else np.asarray(v)
            except (ValueError, TypeError):  # a ragged list: the slow path names the argument
                raise _Slow from None
            if a.ndim != len(dims):
                raise _Slow
            for d, n in zip(dims, a.shape, strict=True):
                if type(d) is int:
                    if d != n:
                        raise _Slow
                elif sizes.setdefault(d, n) != n:
                    raise _Slow
            if p.kind == "relation":
                if a.dtype != bool:
                    if a.dtype.kind not in "iuf" or not np.all((a == 0) | (a == 1)):
                        raise _Slow
                    a = a.astype(bool)
            else:
                if a.dtype.kind not in "biuf":
                    raise _Slow
                if isinstance(v, (np.ndarray, np.generic)):
                    strong.append(a.dtype)
            raw.append(a)
        for k in pending:
            raw[k] = self._members(k, raw[k], sizes)
        # (dtype objects, not scalar types: comparing a dtype with a type converts it per call)
        dt = _F64
        if strong and all(d == _F32 for d in strong):
            dt = _F32
        out = [a if p.kind == "relation" or a.dtype == dt else a.astype(dt)
               for a, p in zip(raw, self.program.params, strict=True)]
        return out, sizes

    def _members(self, k: int, value: Any, sizes: dict[str, int]) -> Any:
        """Relation argument ``k`` given by its members: a :class:`SparseRelation` (or its
        dense array when that is the cheaper plan); binds the sizes of its shape."""
        p, dims = self.program.params[k], self._dims[k]
        shape = [d if type(d) is int else sizes.get(d) for d in dims]
        rel = relation_argument(p.name, value, shape)
        for d, n in zip(dims, rel.shape, strict=True):
            if type(d) is not int and sizes.setdefault(d, n) != n:
                raise ShapeError(
                    f"argument {p.name!r} has shape {rel.shape}, so {d} = {n}, but {d} = "
                    f"{sizes[d]} from another argument")
        return rel.dense if prefer_dense(rel) else rel

    def function_for(
        self, arrays: Sequence[np.ndarray], sizes: Mapping[str, int], strict: bool = False
    ) -> tuple[Any, bool]:
        """The generated function for this signature, and whether non-finite inputs need the
        strict lowering (False when it is the same code: nothing trusts finiteness)."""
        sparse = frozenset(p.name for p, a in zip(self.program.params, arrays, strict=True)
                           if isinstance(a, SparseRelation))
        key = (strict, tuple(sizes.items()), tuple(a.dtype.char for a in arrays), sparse)
        hit = self._by_signature.get(key)
        if hit is None:
            with self._lock:
                hit = self._by_signature.get(key)
                if hit is None:
                    lowered = lower_program(self.program, sizes, strict=strict,
                                            structured=self.structured, sparse=sparse,
                                            signed=self.signed)
                    check = not strict and (
                        lower_program(self.program, sizes, strict=True,
                                      structured=self.structured, sparse=sparse,
                                      signed=self.signed).source
                        != lowered.source
                    )
                    hit = (_load(lowered), check)
                    self._by_signature[key] = hit
                    if sparse and not strict:  # .source shows the code run by the members
                        self._lowered = lower_program(self.program, structured=self.structured,
                                                      sparse=sparse, signed=self.signed)
        return hit

    fallback: Any = None
    """For optimized code: the unoptimized program's run (:class:`.guard.Fallback`), taken
    whenever a call is not proven finite (docs/semantics.md, "Optimized code is a fast path");
    None: this code is exact on every value."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fallback is not None:
            try:
                return self._run(args, kwargs, trust_finite=True)
            except runtime.NonFinite:
                want = self.fallback(*args, **kwargs)
                if not self.structured:
                    return want
                return keep_structure(self._run(args, kwargs, force_strict=True), want)
        return self._run(args, kwargs)

    def fused_call(self, proven: bool, *args: Any) -> Any:
        """A call from a fused module's run (``backend="numba"``: this program is one of its
        NumPy parts). ``proven``: the guard proved, before the run, every value of the fused
        program finite for these arguments (as for the NumPy backend's own guarded code,
        :data:`.guard.PROVEN_BOTH`), so the fast code runs without its checks; else a call
        as any other."""
        return self._run(args, {}, unchecked=proven)

    def _plain(self, arrays: Sequence[Any], sizes: Mapping[str, int]) -> CompiledProgram | None:
        """For guarded code (:attr:`fallback` set): the unoptimized program's compiled form when
        at these sizes it lowers to this very code (:func:`.same_code.same_code`: temporaries
        renamed, independent lines reordered), else None; cached per signature. Such a call
        runs the unoptimized program's code as ``optimize=False`` does, unguarded: exact on
        every value, at no more cost than the optimized code, and no pass over an argument.
        (Not compared where the cost report found the code different: ``fallback.same_code``.)"""
        sparse = frozenset(p.name for p, a in zip(self.program.params, arrays, strict=True)
                           if isinstance(a, SparseRelation))
        key = (tuple(sizes.items()), sparse)
        if key in self._plain_by:
            return self._plain_by[key]
        plain = None
        naive = self.fallback.compiled() if self.fallback.same_code else None
        if isinstance(naive, CompiledProgram) and naive.structured == self.structured \
                and naive.signed == self.signed and naive.program.params == self.program.params \
                and naive.program.returns_tuple == self.program.returns_tuple:
            mine, theirs = (lower_program(p, sizes, structured=self.structured, sparse=sparse,
                                          signed=self.signed)
                            for p in (self.program, naive.program))
            if same_code(mine.source, theirs.source):
                plain = naive
        if len(self._plain_by) < 64:
            self._plain_by[key] = plain
        return plain

    def _run(self, args: tuple, kwargs: dict[str, Any], trust_finite: bool = False,
             force_strict: bool = False, unchecked: bool = False) -> Any:
        """One call. ``trust_finite``: the code holds only where every value is finite (it was
        optimized with finite-only rewrites): raise :class:`~.runtime.NonFinite` when an
        argument, a value the code computes (IEEE overflow, division by zero or invalid
        operation flags) or the result is inf or nan (unless the unoptimized program's own code
        is this code at these sizes: :meth:`_plain`). ``force_strict``: the strict code.
        ``unchecked``: every value is proven finite (:meth:`fused_call`): the fast code alone.
        """
        names = self._param_names
        if kwargs and not args and len(kwargs) == len(names):
            try:  # every parameter by name: the same call by position (its fast path)
                args, kwargs = tuple(kwargs[n] for n in names), {}
            except KeyError:
                pass
        key = hit = None
        if not kwargs and len(args) == len(names):
            # Repeated calls with arrays of one signature skip the binder's checks.
            key = tuple([(a.shape, a.dtype) for a in args if type(a) is np.ndarray])
            if len(key) == len(args):
                hit = self._by_arrays.get(key)
            else:
                key = None
        if hit is not None:
            fn, check, sizes, casts, plain = hit
            arrays = args if casts is None else \
                [a if c is None else a.astype(c) for a, c in zip(args, casts, strict=True)]
        else:
            arrays, sizes = self.bind(*args, **kwargs)
            if 0 in sizes.values():
                if trust_finite:  # (this program's inlined reads are no reference there)
                    raise runtime.NonFinite("empty tensors: the unoptimized program decides")
                # Empty tensors: nothing to compute fast; the interpreter defines the zeros.
                from ..ir.interpreter import evaluate

                return evaluate(self.program, *args, **kwargs)
            plain = None if self.fallback is None else self._plain(arrays, sizes)
            fn, check = (plain or self).function_for(arrays, sizes)
            casts = tuple(None if b is a else b.dtype
                          for a, b in zip(args, arrays, strict=False))
            relation_cast = any(c is not None and p.kind == "relation"
                                for c, p in zip(casts, self.program.params, strict=False))
            # (a relation given as numbers is checked to hold 0/1 at every call: not cached)
            if key is not None and not relation_cast and len(self._by_arrays) < 64:
                self._by_arrays[key] = (fn, check, sizes, casts if any(
                    c is not None for c in casts) else None, plain)
        if unchecked:
            try:
                with np.errstate(all="ignore"):
                    return _finish(fn.proven(*arrays), self.program)
            except Exception:  # noqa: BLE001 - a value was not finite after all (an argument
                pass  # outside the box its loops check): the checked run below decides
        if trust_finite and plain is None:
            level = proven_finite(self.fallback, self.program, arrays, sizes)
            if not level:
                raise runtime.NonFinite("the unoptimized program may meet inf or nan")
            if level == PROVEN_BOTH:  # no value of either program can be inf or nan
                with np.errstate(all="ignore"):
                    return _finish(fn.proven(*arrays), self.program)
            return _finish(_trusted(fn, arrays), self.program)
        owner = plain or self
        if force_strict and check:
            fn = owner.function_for(arrays, sizes, strict=True)[0]
            check = False
        with np.errstate(all="ignore"):
            if check:
                # The fast code trusts the parameters it reads to be finite (it guards only
                # what it computes that may overflow): it checks some through the results of
                # their products (raising NonFinite), the caller scans the others here. An
                # inf/nan argument takes strong-zero products everywhere (the strict code).
                # A division by zero reruns the strict code too: the fast code's normal form
                # flattens products of sums (w * Σ_j x[j] as Σ_j w x[j]), which keeps values
                # but not the sign of a zero sum, seen only through a division (or negative
                # power) by it (docs/semantics.md). So does an overflow: the fast code takes
                # factors out of sums as finite ones, and a product of finite values that
                # overflows (x[0] ** 2 at 1e300) is an inf it treats as finite. So does an
                # invalid operation (x ** 2.5 at x < 0, 0 / 0): its nan is a non-finite value
                # the fast code's flattened products do not keep out (nan * np.where(p, a, 0)
                # is nan where p is false; the strict code's guard gives the strong zero).
                try:
                    if runtime.finite(*(arrays[self._param_index[n]] for n in fn.finite_inputs)):
                        with np.errstate(divide="raise", over="raise", invalid="raise"):
                            return _finish(fn(*arrays), self.program)
                except (runtime.NonFinite, FloatingPointError):
                    pass
                fn = owner.function_for(arrays, sizes, strict=True)[0]
            result = fn(*arrays)
        return _finish(result, self.program)


def _trusted(fn: Any, arrays: Sequence[Any]) -> Any:
    """``fn(*arrays)`` when every value it computes and its result are finite; raises
    :class:`~.runtime.NonFinite` otherwise. (With finite arguments, an inf or nan comes from an
    IEEE operation that raises the overflow, division-by-zero or invalid flag, which NumPy turns
    into an exception here, so a nan a comparison or ``np.where`` hides later is seen where it
    is made: a different order of operations in the optimized code that overflows where the
    unoptimized program does not.)"""
    try:
        with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
            result = fn(*arrays)
    except FloatingPointError:
        raise runtime.NonFinite("a computed value is inf or nan") from None
    if not runtime.finite_result(result):
        raise runtime.NonFinite("the result holds inf or nan")
    return result


class _Slow(Exception):
    """Arguments need the careful (error-reporting) binder."""


def _finish(result: Any, prog: Program) -> Any:
    def one(x: Any) -> Any:
        if (isinstance(x, np.ndarray) and x.ndim > 0) or isinstance(x, Sparse | Outer):
            return x
        x = np.asarray(x)
        if x.dtype == bool:
            return x
        return float(x) if x.dtype == np.float64 else x.dtype.type(x)

    if prog.returns_tuple:
        return tuple(one(x) for x in result)
    return one(result)


_CACHE: dict[tuple[Program, bool], CompiledProgram] = {}
_CACHE_LIMIT = 256
# Generated code binds registered functions by name: a re-registration invalidates it.
on_register(_CACHE.clear)


def compile_program(prog: Program, structured: bool = False,
                    signed: frozenset[str] = frozenset()) -> CompiledProgram:
    """The compiled form of ``prog`` (cached per program; per shape/dtype inside).

    ``structured``: return diagonal / point-sparse outputs as such; ``signed``: statements
    whose sign of zero the caller observes (see :func:`lower_program`).
    """
    if not isinstance(prog, Program):
        raise ProgramError(f"expected a Program, got {type(prog).__name__}")
    key = (prog, bool(structured), frozenset(signed))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    compiled = CompiledProgram(prog, bool(structured), frozenset(signed))
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = compiled
    return compiled
