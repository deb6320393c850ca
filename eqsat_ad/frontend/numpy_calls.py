"""NumPy functions, array methods and Python built-ins of the NumPy subset.

Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`): each call is checked against
NumPy's signature (positional and keyword arguments, with NumPy-like errors) and dispatched to
the array operations of :mod:`eqsat_ad.frontend.numpy_ops`. The translator provides the
conversions used here (``to_data``, ``static_int``, ``to_dim``, ``binop``, ``index``, ...).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.functions import BUILTIN_FUNCTIONS
from ..ir.index import Affine
from .numpy_gathers import GatherOps
from .numpy_values import (
    IndexChoice,
    Method,
    TVal,
    add,
    call,
    describe,
    dim_as_affine,
    is_static_number,
)

# Elementwise NumPy functions → built-in scalar function of the IR (the registry's spellings).
UNARY = {sp: f.name for f in BUILTIN_FUNCTIONS if f.arity == 1 for sp in f.spellings}
BINARY_FNS = {sp: f.name for f in BUILTIN_FUNCTIONS if f.arity == 2 for sp in f.spellings}
BINARY_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "true_divide": "/"}
NP_NAMES = (
    set(UNARY) | set(BINARY_FNS) | set(BINARY_ARITH) | {
        "square", "power", "negative", "maximum", "minimum", "where", "sum", "mean", "max",
        "min", "amax", "amin", "dot", "matmul", "einsum", "outer", "trace", "diag", "transpose",
        "swapaxes", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "eye",
        "identity", "reshape", "concatenate", "stack", "clip", "float32", "float64",
        "asarray", "array", "copy", "greater", "less", "greater_equal", "less_equal", "equal",
        "not_equal", "logical_and", "logical_or", "logical_not", "shape", "ndim", "size",
        "bincount",
    }
)
# NumPy functions imported by name (``from numpy import exp``) are recognized by identity.
NP_BY_ID: dict[int, str] = {
    id(getattr(np, _n)): _n for _n in sorted(NP_NAMES) if hasattr(np, _n)
}
METHODS = {"sum", "mean", "max", "min", "dot", "transpose", "reshape", "copy", "astype",
            "swapaxes", "trace", "diagonal", "clip"}
BUILTIN_NAMES = {"range", "len", "abs", "min", "max", "float", "int", "enumerate", "zip",
                 "reversed", "tuple", "list", "isinstance", "bool", "sum"}
_OP_CLASS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}


class CallOps(GatherOps):
    """Calls of NumPy functions, array methods and built-ins (mixed into the translator)."""

    def builtin_call(self, name: str, args: list[Any], kwargs: dict[str, Any],
                     e: ast.AST) -> Any:
        if kwargs:
            raise self.error(f"{name}() with keyword arguments is not supported", e)
        match name:
            case "range":
                ints = [self.static_int(a, "range() argument", e) for a in args]
                if not 1 <= len(ints) <= 3:
                    raise self.error("range() takes 1 to 3 arguments", e)
                return range(*ints)
            case "len":
                (x,) = self._nargs(name, args, 1, e)
                if isinstance(x, tuple | list | range | str):
                    return len(x)
                if isinstance(x, TVal):
                    if x.ndim == 0:
                        raise self.error("len() of a 0-d array", e)
                    return dim_as_affine(x.shape[0])
                raise self.error(f"len() of {describe(x)}", e)
            case "abs":
                (x,) = self._nargs(name, args, 1, e)
                if is_static_number(x):
                    return abs(x)
                return self.unary_call("abs", x, e)
            case "min" | "max":
                if len(args) == 1 and isinstance(args[0], tuple | list):
                    args = list(args[0])
                if len(args) < 2:
                    raise self.error(f"{name}() of one array: use np.{name}(x)", e)
                if all(is_static_number(a) for a in args):
                    return (min if name == "min" else max)(args)
                if any(isinstance(a, Affine) for a in args) and all(
                        isinstance(a, Affine) or (isinstance(a, int) and not isinstance(a, bool))
                        for a in args):
                    # an index such as min(i + 1, n - 1): a choice between reads, by brackets
                    return IndexChoice.of(name, [a if isinstance(a, Affine) else
                                                 Affine.constant(a) for a in args])
                out = args[0]
                for a in args[1:]:
                    out = self.elementwise((out, a), lambda x, y: call(name, x, y), e)
                return out
            case "float" | "int" | "bool":
                (x,) = self._nargs(name, args, 1, e)
                if is_static_number(x):
                    return {"float": float, "int": int, "bool": bool}[name](x)
                if name == "float" and isinstance(x, TVal) and x.ndim == 0:
                    return x
                if isinstance(x, TVal):
                    raise self.error(
                        f"{name}() of an array value: array values are not known when "
                        "translating; loop bounds and indices must come from shapes or constants",
                        e,
                    )
                raise self.error(f"{name}() of {describe(x)} is not supported", e)
            case "enumerate":
                (x,) = self._nargs(name, args, 1, e)
                return list(enumerate(self._iterable(x, e)))
            case "zip":
                return list(zip(*(self._iterable(x, e) for x in args), strict=False))
            case "reversed":
                (x,) = self._nargs(name, args, 1, e)
                return list(reversed(self._iterable(x, e)))
            case "tuple" | "list":
                (x,) = self._nargs(name, args, 1, e)
                items = self._iterable(x, e)
                return tuple(items) if name == "tuple" else items
            case "sum":
                if not 1 <= len(args) <= 2:
                    raise self.error("sum() takes an iterable and an optional start", e)
                total = args[1] if len(args) == 2 else 0
                for v in self._iterable(args[0], e):
                    total = self.binop(ast.Add, total, v, e)
                return total
            case "isinstance":
                raise self.error("isinstance() is not supported", e)
        raise self.error(f"built-in {name}() is not supported", e)  # pragma: no cover

    def _nargs(self, name: str, args: list[Any], n: int, e: ast.AST) -> list[Any]:
        if len(args) != n:
            raise self.error(f"{name}() takes {n} argument(s), got {len(args)}", e)
        return args

    def method_call(self, m: Method, args: list[Any], kwargs: dict[str, Any],
                    e: ast.AST) -> Any:
        x = m.obj
        match m.name:
            case "sum" | "mean" | "max" | "min":
                return self.np_call(m.name, [x, *args], kwargs, e)
            case "dot":
                return self.np_call("dot", [x, *args], kwargs, e)
            case "transpose":
                if kwargs:
                    raise self.error("transpose() takes no keyword arguments", e)
                perm = args[0] if len(args) == 1 and isinstance(args[0], tuple | list) else args
                return self.transpose(x, tuple(perm) if perm else None, e)
            case "swapaxes":
                return self.np_call("swapaxes", [x, *args], kwargs, e)
            case "reshape":
                shape = args[0] if len(args) == 1 and isinstance(args[0], tuple | list) else args
                return self.np_call("reshape", [x, tuple(shape)], kwargs, e)
            case "copy":
                tv = self.operand(x, e)
                return TVal(tv.shape, tv.axes, tv.body, None, tv.boolean)
            case "astype":
                return x
            case "trace":
                return self.np_call("trace", [x, *args], kwargs, e)
            case "diagonal":
                k = kwargs.pop("offset", args[0] if args else 0)
                if kwargs or len(args) > 1 or x.ndim != 2:
                    raise self.error("x.diagonal(): only the offset argument of a 2-D array is "
                                     "supported", e)
                return self.diag(x, k, e)
            case "clip":
                return self.np_call("clip", [x, *args], kwargs, e)
        raise self.error(f"method .{m.name}() is not supported", e)  # pragma: no cover

    def np_call(self, name: str, args: list[Any], kwargs: dict[str, Any], e: ast.AST) -> Any:
        what = f"np.{name}"
        kw = _Kwargs(self, what, kwargs, e)
        if name in UNARY:
            (x,) = kw.positional(args, 1)
            kw.done()
            if is_static_number(x):
                return float(getattr(np, name)(x))
            return self.unary_call(UNARY[name], x, e)
        if name in BINARY_ARITH:
            a, b = kw.positional(args, 2)
            kw.done()
            return self.binop(_OP_CLASS[BINARY_ARITH[name]], a, b, e)
        if name in BINARY_FNS:
            a, b = kw.positional(args, 2)
            kw.done()
            if is_static_number(a) and is_static_number(b):
                return float(getattr(np, name)(a, b))
            fn2 = BINARY_FNS[name]
            return self.elementwise((a, b), lambda x, y: call(fn2, x, y), e)
        match name:
            case "bincount":
                (x,) = kw.positional(args, 1, ("x", "weights", "minlength"))
                weights = kw.get("weights", None)
                length = kw.get("minlength", None)
                kw.done()
                if length is None or isinstance(length, bool) or not (
                    isinstance(length, int) or getattr(length, "is_Symbol", False)
                ):
                    raise self.error(
                        f"{what} needs minlength= (the number of bins, e.g. x.shape[0]) to "
                        "be translated; an index at or beyond it is an error when called", e)
                return self.scatter_add(x, weights, length, e, what)
            case "square":
                (x,) = kw.positional(args, 1)
                kw.done()
                return self.pow_(x, 2.0, e)
            case "power":
                a, b = kw.positional(args, 2)
                kw.done()
                return self.power_op(a, b, e)
            case "negative":
                (x,) = kw.positional(args, 1)
                kw.done()
                return self.negate(x, e)
            case "maximum" | "minimum":
                a, b = kw.positional(args, 2)
                kw.done()
                fn = "max" if name == "maximum" else "min"
                return self.elementwise((a, b), lambda x, y: call(fn, x, y), e)
            case "clip":
                x, lo, hi = kw.positional(args, 3, ("a", "a_min", "a_max"))
                kw.done()
                out = x
                if lo is not None:
                    out = self.elementwise((out, lo), lambda p, q: call("max", p, q), e)
                if hi is not None:
                    out = self.elementwise((out, hi), lambda p, q: call("min", p, q), e)
                return out
            case "where":
                if len(args) == 1:
                    raise self.error("np.where(cond) with one argument (indices) is not "
                                     "supported; use np.where(cond, a, b)", e)
                c, a, b = kw.positional(args, 3, ("condition", "x", "y"))
                kw.done()
                t = c.item() if isinstance(c, np.generic) else c
                if isinstance(t, bool):
                    return self.elementwise((a, b), lambda x, y: x if t else y, e)
                if isinstance(t, Affine):
                    t = self.truth(t, e)
                return self.where(t, a, b, e)
            case "greater" | "less" | "greater_equal" | "less_equal" | "equal" | "not_equal":
                a, b = kw.positional(args, 2)
                kw.done()
                sym = {"greater": ">", "less": "<", "greater_equal": ">=", "less_equal": "<=",
                       "equal": "==", "not_equal": "!="}[name]
                return self.compare(sym, a, b, e)
            case "logical_and" | "logical_or":
                a, b = kw.positional(args, 2)
                kw.done()
                return self.logical(name.split("_")[1], (a, b), e)
            case "logical_not":
                (x,) = kw.positional(args, 1)
                kw.done()
                return self.logical("not", (x,), e)
            case "sum" | "mean" | "max" | "min" | "amax" | "amin":
                (x,) = kw.positional(args, 1, ("a", "axis"))
                axis = kw.get("axis", None)
                keepdims = kw.get("keepdims", False)
                kw.done()
                if axis is not None and not isinstance(axis, int | tuple):
                    raise self.error(f"{what}: axis must be a constant int or tuple", e)
                if not isinstance(keepdims, bool):
                    raise self.error(f"{what}: keepdims must be True or False", e)
                if name == "sum":
                    return self.reduce_sum(x, axis, keepdims, e, what)
                if name == "mean":
                    return self.reduce_mean(x, axis, keepdims, e, what)
                fn = "max" if name in ("max", "amax") else "min"
                return self.reduce_extreme(fn, x, axis, keepdims, e, what)
            case "dot":
                a, b = kw.positional(args, 2)
                kw.done()
                return self.dot(a, b, e)
            case "matmul":
                a, b = kw.positional(args, 2)
                kw.done()
                return self.matmul(a, b, e)
            case "einsum":
                kw.done()
                if not args:
                    raise self.error("np.einsum needs subscripts and operands", e)
                return self.einsum(args[0], args[1:], e)
            case "outer":
                a, b = kw.positional(args, 2)
                kw.done()
                return self.outer(a, b, e)
            case "trace":
                (x,) = kw.positional(args, 1, ("a", "offset"))
                offset = kw.get("offset", 0)
                kw.done()
                return self.trace(x, offset, e)
            case "diag":
                (x,) = kw.positional(args, 1, ("v", "k"))
                k = kw.get("k", 0)
                kw.done()
                return self.diag(x, k, e)
            case "transpose":
                (x,) = kw.positional(args, 1, ("a", "axes"))
                axes = kw.get("axes", None)
                kw.done()
                return self.transpose(x, axes, e)
            case "swapaxes":
                x, a1, a2 = kw.positional(args, 3)
                kw.done()
                return self.swapaxes(x, a1, a2, e)
            case "reshape":
                x, shape = kw.positional(args, 2, ("a", "newshape"))
                kw.done()
                items = shape if isinstance(shape, tuple | list) else (shape,)
                dims: list[Any] = []
                for d in items:
                    if isinstance(d, int) and d == -1:
                        dims.append(-1)
                    else:
                        dims.append(self.to_dim(d, "reshape", e))
                return self.reshape(x, tuple(dims), e)
            case "zeros" | "ones" | "full":
                if name == "full":
                    shape, fill = kw.positional(args, 2, ("shape", "fill_value"))
                else:
                    (shape,) = kw.positional(args, 1, ("shape",))
                    fill = 0.0 if name == "zeros" else 1.0
                kw.get("dtype", None)
                kw.done()
                dims_ = self.shape_arg(shape, what, e)
                if isinstance(fill, TVal):
                    return self.elementwise((self.full(dims_, 0.0), fill), add, e)
                return self.full(dims_, float(self._const_value(fill, e)))
            case "zeros_like" | "ones_like" | "full_like":
                if name == "full_like":
                    x, fill = kw.positional(args, 2, ("a", "fill_value"))
                else:
                    (x,) = kw.positional(args, 1, ("a",))
                    fill = 0.0 if name == "zeros_like" else 1.0
                kw.get("dtype", None)
                kw.done()
                tv = self.to_data(x, e)
                return self.full(tv.shape, float(self._const_value(fill, e)))
            case "eye" | "identity":
                (n,) = kw.positional(args, 1, ("N", "M", "k"))
                m = kw.get("M", None)
                k = kw.get("k", 0)
                kw.get("dtype", None)
                kw.done()
                dn = self.to_dim(n, what, e)
                dm = dn if m is None else self.to_dim(m, what, e)
                return self.eye(dn, dm, self.static_int(k, f"{what}: k", e))
            case "concatenate" | "stack":
                (seq,) = kw.positional(args, 1, ("arrays", "axis"))
                axis = kw.get("axis", 0)
                kw.done()
                if not isinstance(seq, tuple | list):
                    raise self.error(f"{what} needs a tuple or list of arrays", e)
                return self.concatenate(seq, axis, e, stack=name == "stack")
            case "float32" | "float64" | "asarray" | "array" | "copy":
                (x,) = kw.positional(args, 1)
                kw.get("dtype", None)
                kw.done()
                if is_static_number(x):
                    return float(x)
                tv = self.to_data(x, e)
                return tv if name in ("float32", "float64", "asarray") else TVal(
                    tv.shape, tv.axes, tv.body, None, tv.boolean
                )
            case "shape":
                (x,) = kw.positional(args, 1)
                kw.done()
                return self.attribute(self.to_data(x, e), "shape", e)  # type: ignore[arg-type]
            case "ndim" | "size":
                (x,) = kw.positional(args, 1)
                kw.done()
                return self.attribute(self.to_data(x, e), name, e)  # type: ignore[arg-type]
        raise self.error(f"{what} is not supported", e)  # pragma: no cover

    def _const_value(self, v: Any, node: ast.AST) -> float:
        if is_static_number(v):
            return float(v)
        raise self.error(f"expected a constant number, got {describe(v)}", node)


class _Kwargs:
    """Positional/keyword argument handling for one NumPy call, with NumPy-like errors."""

    def __init__(self, tr: CallOps, what: str, kwargs: dict[str, Any], node: ast.AST) -> None:
        self.tr, self.what, self.kw, self.node = tr, what, dict(kwargs), node

    def positional(self, args: list[Any], n: int, names: Sequence[str] = ()) -> list[Any]:
        """The ``n`` required arguments; further positional ones fill the optional ``names[n:]``."""
        args = list(args)
        for k, v in enumerate(args[n:], start=n):
            if k >= len(names):
                raise self.tr.error(f"{self.what}: too many positional arguments", self.node)
            if names[k] in self.kw:
                raise self.tr.error(f"{self.what}: got multiple values for {names[k]!r}",
                                    self.node)
            self.kw[names[k]] = v
        args = args[:n]
        for k in range(len(args), n):
            if k < len(names) and names[k] in self.kw:
                args.append(self.kw.pop(names[k]))
        if len(args) != n:
            raise self.tr.error(f"{self.what} takes {n} array argument(s), got {len(args)}",
                                self.node)
        return args

    def get(self, name: str, default: Any) -> Any:
        return self.kw.pop(name, default)

    def done(self) -> None:
        if self.kw:
            bad = sorted(self.kw)[0]
            raise self.tr.error(f"{self.what}: the argument {bad!r} is not supported", self.node)
