"""What a name means to the NumPy translator: parameters, locals, closure and globals.

The function's parameters are bound to symbolic arrays (or, without a shape, to their static
defaults); a name is read from the scope, then the closure and module globals (a captured array
becomes an extra parameter, a NumPy function or helper a callable value), then the built-ins.
Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.errors import ProgramError
from ..ir.expr import Access, Bracket, Expr, Rel
from ..ir.index import Affine, Dim, as_dim
from ..ir.program import Param
from .numpy_calls import BUILTIN_NAMES, NP_BY_ID
from .numpy_emit import EmitOps
from .numpy_exprs import eqsat_function
from .numpy_scope import Poisoned
from .numpy_values import Builtin, NotSummable, NpFunc, TVal, is_static_number

__all__ = ["NameOps"]


class NameOps(EmitOps):
    """Parameters and name lookup (mixed into the translator)."""

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
            if isinstance(v, Poisoned):
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
