"""Expressions of the NumPy subset: names' attributes, indexing, operators and comparisons.

Mixed into the translator (:mod:`eqsat_ad.frontend.numpy_subset`). Python constants are computed
as Python would; integers that are symbolic sizes or summed loop indices stay affine; everything
else becomes an array value whose element expression is built by :mod:`.numpy_ops`.
"""

from __future__ import annotations

import ast
import itertools
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.expr import Cmp, Expr, conj
from ..ir.functions import lookup
from ..ir.index import Affine, Dim, dim_str
from .numpy_calls import METHODS, NP_NAMES, CallOps
from .numpy_values import (
    EqsatFunc,
    IndexChoice,
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
    dim_as_affine,
    is_static_number,
    mul,
    provably_nonneg,
    sub,
)

NP_CONST = {"pi": math.pi, "e": math.e, "newaxis": None}
MATH_FUNCS = {"exp": "exp", "log": "log", "tanh": "tanh", "sin": "sin", "cos": "cos",
              "sqrt": "sqrt", "fabs": "abs", "log1p": "log1p", "expm1": "expm1"}
CMP_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
              ast.NotEq: "!="}
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
BINOP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&",
                ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}

PY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "@": lambda a, b: a @ b,
}
PY_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}


def eqsat_function(obj: Any) -> EqsatFunc | None:
    """``stop_gradient`` or a function made by ``custom_adjoint``: a registered scalar function.

    Recognized by what they are (eqsat_ad.ad.custom's objects) without importing the AD stage,
    so the front end depends on the IR only.
    """
    module = getattr(obj, "__module__", None)
    if module != "eqsat_ad.ad.custom" and getattr(type(obj), "__module__", None) != (
        "eqsat_ad.ad.custom"
    ):
        return None
    if getattr(obj, "__name__", None) == "stop_gradient" and callable(obj):
        return EqsatFunc("stop_gradient")
    name = getattr(obj, "name", None)
    if type(obj).__name__ == "CustomFunction" and isinstance(name, str) and lookup(name):
        return EqsatFunc(name)
    return None


def slice_str(sl: slice) -> str:
    parts = ["" if x is None else str(x) for x in (sl.start, sl.stop)]
    text = ":".join(parts)
    return text + (f":{sl.step}" if sl.step is not None else "")



class ExprOps(CallOps):
    """Evaluation of expressions (mixed into the translator)."""

    # --- expressions ---------------------------------------------------------------------------
    def eval(self, e: ast.expr) -> Any:
        self.node = e
        match e:
            case ast.Constant(value):
                if value is Ellipsis or value is None or isinstance(
                    value, bool | int | float | str
                ):
                    return value
                raise self.error(f"constant {value!r} is not supported", e)
            case ast.Name(name):
                return self.load(name, e)
            case ast.Attribute(obj, attr):
                return self.attribute(self.eval(obj), attr, e)
            case ast.Subscript(obj, sl):
                return self.subscript(self.eval(obj), self.eval_index(sl), e)
            case ast.BinOp(lhs, op, rhs):
                return self.binop(type(op), self.eval(lhs), self.eval(rhs), e)
            case ast.UnaryOp(op, arg):
                return self.unaryop(op, self.eval(arg), e)
            case ast.Compare():
                return self.compare_chain(e)
            case ast.BoolOp(op, values):
                return self.boolop(op, values, e)
            case ast.IfExp(test, body, orelse):
                t = self.truth(self.eval(test), test, "conditional expression")
                if isinstance(t, bool):
                    return self.eval(body if t else orelse)
                b = bracket(t.pred)

                def pick(x: Expr, y: Expr) -> Expr:
                    return add(mul(b, x), mul(sub(const(1), b), y))

                return self.elementwise((self.eval(body), self.eval(orelse)), pick, e)
            case ast.Call():
                return self.call(e)
            case ast.Tuple(elts) | ast.List(elts):
                out: list[Any] = []
                for x in elts:
                    if isinstance(x, ast.Starred):
                        v = self.eval(x.value)
                        if not isinstance(v, tuple | list):
                            raise self.error("only tuples can be unpacked with *", x)
                        out.extend(v)
                    else:
                        out.append(self.eval(x))
                return tuple(out) if isinstance(e, ast.Tuple) else out
            case ast.Lambda():
                raise self.error("lambda expressions are not supported", e)
            case ast.JoinedStr():
                raise self.error("f-strings are not supported", e)
            case ast.ListComp() | ast.GeneratorExp() | ast.SetComp() | ast.DictComp():
                raise self.error(
                    "comprehensions are not supported; use a for loop or array operations", e
                )
        raise self.error(f"the expression '{type(e).__name__}' is not supported", e)

    def eval_index(self, sl: ast.expr) -> Any:
        if isinstance(sl, ast.Slice):
            parts = [None if p is None else self.eval(p) for p in (sl.lower, sl.upper, sl.step)]
            return slice(*parts)
        if isinstance(sl, ast.Tuple):
            return tuple(self.eval_index(x) for x in sl.elts)
        return self.eval(sl)

    # attributes ---------------------------------------------------------------------------------
    def attribute(self, obj: Any, attr: str, node: ast.Attribute) -> Any:
        if isinstance(obj, types.ModuleType):
            return self.module_attribute(obj, attr, node)
        if isinstance(obj, TVal):
            match attr:
                case "shape":
                    return tuple(dim_as_affine(d) for d in obj.shape)
                case "ndim":
                    return obj.ndim
                case "size":
                    n: int | Affine = 1
                    for d in obj.shape:
                        if not isinstance(d, int):
                            if n != 1:
                                raise self.error("x.size of a multi-dimensional symbolic shape "
                                                 "is not affine", node)
                            n = Affine.of_dim(d)
                        elif isinstance(n, int):
                            n *= d
                        else:
                            n = n.scale(d)
                    return n
                case "T":
                    return self.transpose(obj, None, node)
            if attr in METHODS:
                return Method(obj, attr)
            raise self.error(
                f"array attribute or method .{attr} is not supported by the NumPy translator",
                node,
            )
        raise self.error(
            f"attribute access .{attr} on {describe(obj)} is not supported (only numpy, "
            "eqsat_ad, math and array attributes such as x.shape, x.T, x.sum)", node,
        )

    def module_attribute(self, mod: types.ModuleType, attr: str, node: ast.AST) -> Any:
        name = mod.__name__
        if mod is np:
            if attr in NP_CONST:
                return NP_CONST[attr]
            if attr in NP_NAMES:
                return NpFunc(attr)
            raise self.error(
                f"np.{attr} is not supported by the NumPy translator; supported: "
                + ", ".join(sorted(NP_NAMES)), node,
            )
        if name == "math":
            if attr in ("pi", "e", "tau"):
                return getattr(math, attr)
            if attr in MATH_FUNCS:
                return NpFunc(MATH_FUNCS[attr])
            raise self.error(f"math.{attr} is not supported", node)
        if name == "eqsat_ad" or name.startswith("eqsat_ad."):
            if attr == "stop_gradient":
                return EqsatFunc("stop_gradient")
            try:
                obj = getattr(mod, attr)
            except AttributeError:
                raise self.error(f"module {name!r} has no attribute {attr!r}", node) from None
            return self.global_value(f"{name}.{attr}", obj, node)
        obj = getattr(mod, attr, None)
        if isinstance(obj, types.FunctionType) or eqsat_function(obj) is not None or (
            is_static_number(obj)
        ):
            return self.global_value(f"{name}.{attr}", obj, node)  # e.g. a user helper module
        raise self.error(f"module {name!r} is not supported by the NumPy translator "
                         f"(attribute {attr!r})", node)

    # subscripts ---------------------------------------------------------------------------------
    def subscript(self, obj: Any, idx: Any, node: ast.AST) -> Any:
        if isinstance(obj, tuple | list | range):
            if isinstance(idx, slice):
                try:
                    return obj[slice(*(None if x is None else self.static_int(x, "slice", node)
                                       for x in (idx.start, idx.stop, idx.step)))]
                except ValueError as e:
                    raise self.error(str(e), node) from None
            k = self.static_int(idx, "tuple index", node)
            if not -len(obj) <= k < len(obj):
                raise self.error(f"tuple index {k} out of range (length {len(obj)})", node)
            return obj[k]
        if isinstance(obj, TVal):
            return self.index(obj, idx, node)
        raise self.error(f"cannot index {describe(obj)}", node)

    def index(self, v: TVal, idx: Any, node: ast.AST) -> TVal:
        items = list(idx) if isinstance(idx, tuple) else [idx]
        if any(isinstance(it, TVal) for it in items):
            gathered = self.gather(v, items, node)  # x[idx] with an integer array argument
            if gathered is not None:
                return gathered
        for it in items:
            if isinstance(it, TVal):
                kind = "boolean mask" if it.boolean else "an array"
                raise self.error(
                    f"indexing with {kind} (fancy indexing) is not supported; use np.where for "
                    "masks and integer/slice indices otherwise", node,
                )
            if isinstance(it, float):
                raise self.error("only integers, slices, None and ... are valid indices", node)
            if isinstance(it, list | tuple):
                raise self.error("indexing with a list (fancy indexing) is not supported", node)
            if isinstance(it, PredVal):
                raise self.error("an index comparison cannot be used as an index", node)
        if sum(1 for it in items if it is Ellipsis) > 1:
            raise self.error("an index can only have a single ellipsis ('...')", node)
        tv = self.operand(v, node)
        real = sum(1 for it in items if it is not None and it is not Ellipsis)
        if real > tv.ndim:
            raise self.error(
                f"too many indices for array: array is {tv.ndim}-dimensional, but {real} were "
                "indexed", node,
            )
        fill = [slice(None)] * (tv.ndim - real)
        if Ellipsis in items:
            k = items.index(Ellipsis)
            items = items[:k] + fill + items[k + 1:]
        else:
            items = items + fill
        shape: list[Dim] = []
        axes: list[str] = []
        pos: list[Affine] = []
        choices: list[tuple[int, IndexChoice]] = []
        k = 0
        for it in items:
            if it is None:
                shape.append(1)
                axes.append(self.fresh())
                continue
            d = tv.shape[k]
            k += 1
            if isinstance(it, slice):
                first, step, count = self._slice(it, d, node)
                a = self.fresh()
                pos.append(first + Affine.var(a).scale(step))
                shape.append(count)
                axes.append(a)
            elif isinstance(it, IndexChoice):
                choices.append((len(pos), it))
                pos.append(Affine())
            else:
                pos.append(self._index_value(it, d, node))
        base = tv.base if shape else None
        if not choices:
            return TVal(tuple(shape), tuple(axes), tv.at(pos), base, tv.boolean)
        # min/max of indices: the sum over the combinations of candidates of the read at them,
        # each guarded by the brackets that choose it (a candidate out of range is never read)
        body: Expr | None = None
        for combo in itertools.product(*(c.pieces for _, c in choices)):
            at = list(pos)
            preds = []
            for (slot, _), (conds, a) in zip(choices, combo, strict=True):
                at[slot] = a
                preds += conds
            term = mul(bracket(conj(*preds)), tv.at(at)) if preds else tv.at(at)
            body = term if body is None else add(body, term)
        assert body is not None
        return TVal(tuple(shape), tuple(axes), body, None, tv.boolean)

    def _bounds(self, a: Affine) -> tuple[Affine, Affine]:
        lo = Affine((), a.sizes, a.const)
        hi = lo
        for n, c in a.index:
            last = self.loop_vars[n].last
            if c > 0:
                hi = hi + last.scale(c)
            else:
                lo = lo + last.scale(c)
        return lo, hi

    def _index_value(self, it: Any, d: Dim, node: ast.AST) -> Affine:
        if isinstance(it, bool | np.bool_):
            raise self.error("a boolean is not a valid index", node)
        if isinstance(it, np.integer):
            it = int(it)
        if isinstance(it, int):
            if isinstance(d, int):
                if not -d <= it < d:
                    raise self.error(f"index {it} is out of bounds for an axis of size {d}", node)
                return Affine.constant(it % d)
            return Affine.of_dim(d) + it if it < 0 else Affine.constant(it)
        if not isinstance(it, Affine):
            raise self.error(f"{describe(it)} is not a valid index", node)
        lo, hi = self._bounds(it)
        top = Affine.of_dim(d) - 1
        if provably_nonneg(lo) and provably_nonneg(top - hi):
            return it
        if it.index:
            raise NotSummable(
                f"index {it} may fall outside 0..{dim_str(d)}-1 for some loop index (NumPy "
                f"would wrap or fail) (at {self.loc(node)})"
            )
        if provably_nonneg(-hi - 1) and provably_nonneg(Affine.of_dim(d) + lo):
            return it + Affine.of_dim(d)  # negative: counts from the end, as in NumPy
        raise self.error(
            f"cannot tell whether index {it} is inside an axis of size {dim_str(d)}; use "
            "concrete shapes", node,
        )

    def _slice(self, sl: slice, d: Dim, node: ast.AST) -> tuple[Affine, int, Dim]:
        step = 1 if sl.step is None else self.static_int(sl.step, "slice step", node)
        if step == 0:
            raise self.error("slice step cannot be zero", node)
        bounds = [as_int_if_const(x) for x in (sl.start, sl.stop)]
        for b in bounds:
            if isinstance(b, Affine) and b.index:
                raise NotSummable(f"slice bound depends on the loop index (at {self.loc(node)})")
            if b is not None and not isinstance(b, int | Affine):
                raise self.error(f"slice bound must be an int, got {describe(b)}", node)
        start, stop = bounds
        if isinstance(d, int) and all(b is None or isinstance(b, int) for b in bounds):
            r = range(*slice(start, stop, step).indices(d))
            return Affine.constant(r.start if len(r) else 0), step, len(r)
        # Symbolic sizes: whole axis, its reverse, or a window whose length is a size.
        D = Affine.of_dim(d)  # noqa: N806

        def norm(b: int | Affine | None, default: Affine) -> Affine:
            if b is None:
                return default
            if isinstance(b, int):
                return D + b if b < 0 else Affine.constant(b)
            return b

        if step == 1:
            a, z = norm(start, Affine.constant(0)), norm(stop, D)
            n = affine_as_dim(z - a)
            if (n is not None and provably_nonneg(a) and provably_nonneg(D - z)):
                return a, 1, n
        if step == -1 and start is None and stop is None:
            return D - 1, -1, d
        raise self.error(
            f"slice {slice_str(sl)} of an axis of symbolic size {dim_str(d)}: its length is not "
            "a size; use concrete shapes", node,
        )

    # operators ----------------------------------------------------------------------------------
    def binop(self, op: type, a: Any, b: Any, node: ast.AST) -> Any:
        sym = BINOP_SYMBOL.get(op, "?")
        a = a.item() if isinstance(a, np.generic) else a
        b = b.item() if isinstance(b, np.generic) else b
        if is_static_number(a) and is_static_number(b) or (
            isinstance(a, tuple) and isinstance(b, tuple) and sym in "+*"
        ) or (isinstance(a, tuple) and isinstance(b, int) and sym == "*"):
            try:
                return PY_OPS[sym](a, b)
            except (ZeroDivisionError, OverflowError, TypeError) as e:
                raise self.error(f"{e} in a constant expression", node) from None
        data = any(isinstance(x, TVal | PredVal) or isinstance(x, float) for x in (a, b))
        if not data and any(isinstance(x, Affine) for x in (a, b)):
            ia = Affine.constant(a) if isinstance(a, int) else a
            ib = Affine.constant(b) if isinstance(b, int) else b
            if isinstance(ia, Affine) and isinstance(ib, Affine):
                if sym == "+":
                    return as_int_if_const(ia + ib)
                if sym == "-":
                    return as_int_if_const(ia - ib)
                if sym == "*" and (ia.is_constant() or ib.is_constant()):
                    k, x = (ia, ib) if ia.is_constant() else (ib, ia)
                    return as_int_if_const(x.scale(k.const))
                if sym in ("//", "%"):
                    x = ia if not ia.is_constant() else ib
                    raise self.symbolic(x, f"'{sym}' of a symbolic integer is not affine", node)
                if sym == "/":
                    data = True
        if not data and not any(isinstance(x, Affine) for x in (a, b)):
            raise self.error(
                f"unsupported operand types for {sym}: {describe(a)} and {describe(b)}", node
            )
        match sym:
            case "+" | "-" | "*" | "/":
                return self.arith(sym, a, b, node)
            case "@":
                return self.matmul(a, b, node)
            case "**":
                return self.power_op(a, b, node)
            case "&":
                return self.logical("and", (a, b), node)
            case "|":
                return self.logical("or", (a, b), node)
        raise self.error(
            f"the operator {sym} on arrays is not supported by the NumPy translator", node
        )

    def power_op(self, a: Any, b: Any, node: ast.AST) -> TVal:
        b = as_int_if_const(b)
        if is_static_number(b):
            return self.pow_(a, float(b), node)
        if is_static_number(a) and isinstance(b, TVal | Affine):
            if float(a) <= 0:
                raise self.error("a constant base with an array exponent must be positive", node)
            log_a = const(math.log(float(a)))
            return self.elementwise((b,), lambda x: call("exp", mul(log_a, x)), node)
        raise self.error(
            "x ** y needs a constant exponent; for an array exponent write "
            "np.exp(y * np.log(x))", node,
        )

    def unaryop(self, op: ast.unaryop, v: Any, node: ast.AST) -> Any:
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(op, ast.Not):
            t = self.truth(v, node, "not")
            if isinstance(t, bool):
                return not t
            if isinstance(t.pred, Cmp):
                return PredVal(Cmp(NEGATED[t.pred.op], t.pred.lhs, t.pred.rhs))
            raise NotSummable(f"'not' of a compound index condition (at {self.loc(node)})")
        if is_static_number(v):
            return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Invert: lambda x: ~x}[
                type(op)](v)
        if isinstance(v, Affine):
            if isinstance(op, ast.USub):
                return -v
            if isinstance(op, ast.UAdd):
                return v
        if isinstance(op, ast.UAdd):
            return self.to_data(v, node)
        if isinstance(op, ast.USub):
            return self.negate(v, node)
        return self.logical("not", (v,), node)

    def compare_chain(self, e: ast.Compare) -> Any:
        left = self.eval(e.left)
        results: list[Any] = []
        for op, rnode in zip(e.ops, e.comparators, strict=True):
            right = self.eval(rnode)
            results.append(self.compare_pair(op, left, right, e))
            left = right
        out = results[0]
        for r in results[1:]:
            out = self._and(out, r, e)
        return out

    def _and(self, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return a and b
        if isinstance(a, bool):
            return b if a else False
        if isinstance(b, bool):
            return a if b else False
        if isinstance(a, PredVal) and isinstance(b, PredVal):
            return PredVal(conj(a.pred, b.pred))
        return self.logical("and", (a, b), node)

    def compare_pair(self, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Any:
        a = a.item() if isinstance(a, np.generic) else a
        b = b.item() if isinstance(b, np.generic) else b
        if isinstance(op, ast.Is | ast.IsNot):
            res = (a is None and b is None) if a is None or b is None else a is b
            return res if isinstance(op, ast.Is) else not res
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(b, tuple | list | str | range):
                raise self.error("'in' needs a constant tuple, list or string", node)
            res = a in b
            return res if isinstance(op, ast.In) else not res
        sym = CMP_SYMBOL[type(op)]
        if isinstance(a, TVal) or isinstance(b, TVal) or isinstance(a, float) and isinstance(
            b, Affine
        ) or isinstance(b, float) and isinstance(a, Affine):
            return self.compare(sym, a, b, node)
        if (a is None or isinstance(a, str | tuple)) or (b is None or isinstance(b, str | tuple)):
            if sym == "==":
                return a == b
            if sym == "!=":
                return a != b
            raise self.error(f"cannot compare {describe(a)} and {describe(b)} with {sym}", node)
        if is_static_number(a) and is_static_number(b):
            return PY_CMP[sym](a, b)
        ia = Affine.constant(a) if is_static_number(a) else a
        ib = Affine.constant(b) if is_static_number(b) else b
        if not (isinstance(ia, Affine) and isinstance(ib, Affine)):
            raise self.error(f"cannot compare {describe(a)} and {describe(b)}", node)
        diff = ia - ib
        if diff.is_constant():
            return PY_CMP[sym](diff.const, 0)
        if diff.index:
            return PredVal(Cmp(sym, ia, ib))
        # Sizes only: decide when the sign is forced for all positive sizes.
        if sym in (">=", "<=", ">", "<", "==", "!="):
            pos = provably_nonneg(diff - (1 if sym in (">", "!=") else 0))
            neg = provably_nonneg(-diff - (1 if sym in ("<", "!=") else 0))
            if sym in (">=", ">") and pos or sym in ("<=", "<") and neg:
                return True
            if sym == ">=" and provably_nonneg(-diff - 1) or sym == ">" and provably_nonneg(
                -diff
            ) or sym == "<=" and provably_nonneg(diff - 1) or sym == "<" and provably_nonneg(diff):
                return False
            if sym == "!=" and (provably_nonneg(diff - 1) or provably_nonneg(-diff - 1)):
                return True
            if sym == "==" and (provably_nonneg(diff - 1) or provably_nonneg(-diff - 1)):
                return False
        raise self.error(
            f"the condition {ia} {sym} {ib} depends on a symbolic size; call with concrete "
            "shapes to decide it", node,
        )

    def boolop(self, op: ast.boolop, values: Sequence[ast.expr], node: ast.AST) -> Any:
        is_and = isinstance(op, ast.And)
        acc: Any = None
        for k, vnode in enumerate(values):
            v = self.eval(vnode)
            if isinstance(v, TVal):
                raise self.error(
                    f"'{'and' if is_and else 'or'}' on arrays is ambiguous; use "
                    f"{'&' if is_and else '|'} (or np.logical_{'and' if is_and else 'or'})", vnode
                )
            t = self.truth(v, vnode)
            if isinstance(t, bool):
                if is_and and not t or not is_and and t:
                    return v if acc is None else (False if is_and else True)
                if k == len(values) - 1 and acc is None:
                    return v
                continue
            if not is_and:
                raise NotSummable(f"'or' of index conditions (at {self.loc(vnode)})")
            acc = t if acc is None else PredVal(conj(acc.pred, t.pred))
        return acc if acc is not None else (True if is_and else False)

