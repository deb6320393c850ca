"""The one table of derivatives of scalar functions, derived with SymPy.

For each function of :mod:`eqsat_ad.ir.functions` the partial derivatives are derived from its
SymPy expression with ``sympy.diff`` and converted back into IR expressions of the call's
arguments. Where a partial contains the function itself (``tanh' = 1 - tanh²``,
``exp' = exp``) the call is reused instead of re-expanding its definition.

Data comparisons cannot be brackets (brackets compare *index* expressions), so the derivatives
of ``abs``, ``max`` and ``min`` use two built-ins of :mod:`eqsat_ad.ir.functions`:

* ``step(x)``: Heaviside, 1 for x > 0, 0 for x < 0, 1/2 at 0 (SymPy's ``Heaviside(x)``);
* ``sign(x)``: -1, 0 or 1 (SymPy's ``sign(x)``).

Their own derivatives (Dirac deltas) are taken as 0, the derivative almost everywhere.
Functions with a custom rule (:mod:`eqsat_ad.ad.custom`) use it; ``stop_gradient`` has none.
The table is cached and cleared whenever a function is registered.
"""

from __future__ import annotations

import numpy as np
import sympy

from ..ir import functions
from ..ir.expr import Call, Const, Expr, complement
from ..ir.functions import ARG_SYMBOLS
from .common import (
    ONE,
    ZERO,
    DifferentiationError,
    f_add,
    f_div,
    f_mul,
    f_pow,
    f_sub,
)
from .custom import custom_rule

# Placeholder for "the function being differentiated, applied to its arguments".
_SELF = functions.SELF

# fn name -> partials as SymPy expressions (None: no derivative rule)
_TABLE: dict[str, tuple[sympy.Expr, ...] | None] = {}


_HEADS: dict[type, str] = {}


def _clear() -> None:
    _TABLE.clear()
    _HEADS.clear()


functions.on_register(_clear)


def symbolic_partials(name: str) -> tuple[sympy.Expr, ...] | None:
    """SymPy partial derivatives of registered function ``name`` (``None``: not differentiable)."""
    if name in _TABLE:
        return _TABLE[name]
    fn = functions.lookup(name)
    if fn is None:
        raise DifferentiationError(f"unknown function {name!r}")
    if fn.derivative is not None:
        result = fn.derivative  # the override, chosen to stay finite (in x, y and _SELF)
    elif fn.sympy is None:
        result = None
    else:
        args = ARG_SYMBOLS[: fn.arity]
        result = tuple(sympy.diff(fn.sympy, a).subs(fn.sympy, _SELF) for a in args)
        if fn.arity == 1 and result[0].has(ARG_SYMBOLS[0]):
            result = (_in_terms_of_value(fn.sympy, result[0]),)
    _TABLE[name] = result
    return result


def _in_terms_of_value(f: sympy.Expr, d: sympy.Expr) -> sympy.Expr:
    """``d`` as a polynomial in the value ``f(x)`` where ``f`` is invertible, else ``d``.

    ``sigmoid' = exp(-x) σ²`` becomes ``σ (1 - σ)``: cheaper, stable in both tails, and it lets a
    statement's own value stand for the call (``y (1 - y)``).
    """
    x = ARG_SYMBOLS[0]
    try:
        solutions = sympy.solve(sympy.Eq(_SELF, f), x)
        if len(solutions) != 1:
            return d
        candidate = sympy.simplify(d.subs(_SELF, f).subs(x, solutions[0]))
        if (
            candidate.has(x)
            or not candidate.is_polynomial(_SELF)
            or sympy.simplify(candidate.subs(_SELF, f) - d.subs(_SELF, f)) != 0
        ):
            return d
        return candidate
    except Exception:  # noqa: BLE001 - SymPy gives up in many ways; the plain form is correct
        return d


def _heads() -> dict[type, str]:
    """SymPy function class -> name of the registered function that is exactly that class."""
    if _HEADS:
        return _HEADS
    out = _HEADS
    for name in sorted(functions._REGISTRY):  # noqa: SLF001 - the table is the registry
        fn = functions.lookup(name)
        if fn is None or fn.sympy is None:
            continue
        e = fn.sympy
        if isinstance(e, sympy.Function) and e.args[: fn.arity] == ARG_SYMBOLS[: fn.arity]:
            out.setdefault(e.func, name)
    return out


def _number(v: sympy.Expr) -> Const:
    if v.is_real is False or v.has(sympy.I):
        raise DifferentiationError(f"derivative has a non-real constant {v}")
    value = float(v)
    if not np.isfinite(value):
        raise DifferentiationError(f"derivative has a non-finite constant {v}")
    return Const(value)


def to_ir(
    e: sympy.Expr,
    args: tuple[Expr, ...],
    self_call: Expr | None = None,
    heads: dict[type, str] | None = None,
    pending: str | None = None,
) -> Expr:
    """Convert a SymPy expression in ``x`` (, ``y``) into an IR expression of ``args``.

    ``pending`` names a function about to be registered that may be called by name.
    """
    heads = _heads() if heads is None else heads

    def go(x: sympy.Expr) -> Expr:
        if x.is_Number or x in (sympy.pi, sympy.E):
            return _number(x)
        if x.is_Symbol:
            if x == _SELF and self_call is not None:
                return self_call
            for sym, arg in zip(ARG_SYMBOLS, args, strict=False):
                if x == sym:
                    return arg
            raise DifferentiationError(f"derivative uses an unknown symbol {x}")
        if isinstance(x, sympy.Add):
            terms = x.as_ordered_terms()
            negative = [t for t in terms if t.as_coeff_Mul()[0] < 0]
            out: Expr = ZERO
            for t in terms:  # positive terms first: 1 - tanh(x)**2, not -tanh(x)**2 + 1
                if t not in negative:
                    out = f_add(out, go(t))
            for t in negative:
                out = f_sub(out, go(-t))
            return out
        if isinstance(x, sympy.Mul):
            num: Expr = ONE
            den: Expr = ONE
            for f in x.as_ordered_factors():
                if isinstance(f, sympy.Pow) and f.exp.is_Number and f.exp < 0:
                    den = f_mul(den, go(sympy.Pow(f.base, -f.exp)))
                elif f.is_Rational and not f.is_Integer and f.p == 1:
                    den = f_mul(den, _number(sympy.Integer(f.q)))
                else:
                    num = f_mul(num, go(f))
            return f_div(num, den)
        if isinstance(x, sympy.Pow):
            base, k = x.base, x.exp
            if not k.is_Number:
                if base == sympy.E:
                    return Call("exp", (go(k),))
                raise DifferentiationError(f"derivative has a non-constant power {x}")
            if k == sympy.Rational(1, 2):
                return Call("sqrt", (go(base),))
            if k < 0:
                return f_div(ONE, go(sympy.Pow(base, -k)))
            return f_pow(go(base), float(k))
        if isinstance(x, sympy.DiracDelta):
            return ZERO  # derivative of a step: zero almost everywhere
        if isinstance(x, sympy.Heaviside):
            if len(x.args) > 1 and x.args[1] != sympy.Rational(1, 2):
                raise DifferentiationError(
                    f"derivative uses Heaviside with value {x.args[1]} at 0; only 1/2 (step) exists"
                )
            return _call(heads, sympy.Heaviside, (go(x.args[0]),), x)
        if isinstance(x, sympy.Piecewise):
            return _piecewise(x, go)
        if isinstance(x, sympy.Function):
            name = heads.get(x.func)
            if name is None and isinstance(x.func, sympy.core.function.UndefinedFunction):
                fname = x.func.__name__
                name = fname if fname == pending or functions.lookup(fname) else None
            if name is None:
                raise DifferentiationError(
                    f"derivative uses {x.func}, which is not a registered function; register it "
                    "with eqsat_ad.register_function"
                )
            fn = functions.lookup(name)
            if fn is not None and fn.arity != len(x.args):
                raise DifferentiationError(f"{name!r} takes {fn.arity} argument(s): {x}")
            return Call(name, tuple(go(a) for a in x.args))
        raise DifferentiationError(f"cannot express {x} in the index language")

    return go(sympy.sympify(e))


def _indicator(cond: sympy.Basic, go) -> Expr:  # go: the converter of to_ir
    """The data comparison ``lhs op rhs`` (the condition of a Piecewise): 1 or a strong zero."""
    if cond == sympy.true:
        return ONE
    if isinstance(cond, sympy.StrictGreaterThan | sympy.GreaterThan | sympy.Equality
                  | sympy.Unequality):
        fn = {sympy.StrictGreaterThan: "gt", sympy.GreaterThan: "ge", sympy.Equality: "eq",
              sympy.Unequality: "ne"}[type(cond)]
        return Call(fn, (go(cond.lhs), go(cond.rhs)))
    if isinstance(cond, sympy.StrictLessThan | sympy.LessThan):
        fn = "gt" if isinstance(cond, sympy.StrictLessThan) else "ge"
        return Call(fn, (go(cond.rhs), go(cond.lhs)))
    raise DifferentiationError(f"cannot express the condition {cond} (only <, <=, >, >=, ==)")


def _piecewise(x: sympy.Piecewise, go) -> Expr:
    """``[c1]·e1 + [not c1]·([c2]·e2 + ...)``: the first true condition picks its piece, and
    the pieces not picked are never looked at (a strong-zero select)."""
    out: Expr = ZERO
    for value, cond in reversed(x.args):
        chosen = _indicator(cond, go)
        if chosen == ONE:
            out = go(value)
            continue
        out = f_add(f_mul(chosen, go(value)), f_mul(complement(chosen), out))
    return out


def _call(heads: dict[type, str], head: type, args: tuple[Expr, ...], x: sympy.Expr) -> Expr:
    name = heads.get(head)
    if name is None:
        raise DifferentiationError(f"no registered function computes {x}")
    return Call(name, args)


def check_convertible(coeff: sympy.Expr, arity: int, pending: str | None = None) -> None:
    """Raise if ``coeff`` (in ``x``, ``y``) has no IR form (``pending``: see :func:`to_ir`)."""
    to_ir(coeff, tuple(Const(0.0) for _ in range(arity)), pending=pending)


def call_partials(
    call: Call, mode: str, value: Expr | None = None
) -> tuple[Expr, ...] | None:
    """IR partial derivatives of ``call`` with respect to each argument.

    ``mode`` is ``"jvp"`` or ``"vjp"`` (they differ only for custom rules). ``value`` is an
    expression equal to ``call`` to use where a partial needs the call's own value (the variable
    a statement assigns it to: ``tanh' = 1 - y²``). ``None`` means the call has zero derivative
    (``stop_gradient``).
    """
    fn = functions.lookup(call.fn)
    if fn is None:
        raise DifferentiationError(f"unknown function {call.fn!r}", call.loc)
    if len(call.args) != fn.arity:
        raise DifferentiationError(
            f"{call.fn!r} takes {fn.arity} argument(s) but is called with {len(call.args)}",
            call.loc,
        )
    rule = custom_rule(call.fn)
    if rule is not None:
        partials = rule.jvp_partials if mode == "jvp" else rule.adjoint_partials
    else:
        if call.fn == "stop_gradient":
            return None
        partials = symbolic_partials(call.fn)
        if partials is None:
            raise DifferentiationError(f"function {call.fn!r} has no derivative rule", call.loc)
    heads = _heads()
    try:
        return tuple(to_ir(p, call.args, value or call, heads) for p in partials)
    except DifferentiationError as exc:
        raise DifferentiationError(
            f"cannot differentiate {call.fn!r}: {exc.message}", call.loc
        ) from None

