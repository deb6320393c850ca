"""The one table of scalar built-in functions.

Each entry (:class:`Function`, one record per function) gives the arity, a NumPy implementation
(elementwise), a SymPy definition in the arguments ``x`` (and ``y`` for binary functions), an
optional derivative override, its lowering and its NumPy spellings. Derivatives are derived from
the SymPy expression by the AD stage unless overridden, so registering a function with
:func:`register_function` is enough to differentiate it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import sympy

X, Y = sympy.symbols("x y", real=True)
ARG_SYMBOLS = (X, Y)


SELF = sympy.Symbol("__self__", real=True)
"""In a derivative override: the function's own value at the arguments (``exp' = SELF``)."""


@dataclass(frozen=True)
class Function:
    """One scalar function: everything every stage needs to know about it, in one record."""

    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    sympy: sympy.Expr | None
    """The definition in ``x`` (, ``y``); ``None`` for functions whose derivative is defined by
    the AD stage (stop_gradient)."""
    numpy_name: str | None = None
    """Dotted NumPy name used by the code generator, e.g. ``np.exp``; ``None``: call ``numpy``."""
    derivative: tuple[sympy.Expr, ...] | None = None
    """Partial derivatives overriding ``sympy.diff`` of the definition (one per argument, in
    ``x``, ``y`` and :data:`SELF`), chosen to stay finite where the function is (``softplus' =
    sigmoid``, not ``exp(x) / (1 + exp(x))``, which is inf / inf = nan for x > 710)."""
    finite: bool = False
    """Maps finite arguments to a finite value (the optimizer may treat the result as finite)."""
    strong: bool = False
    """A data comparison: its value is 1 or a strong zero (a bracket on data, docs/semantics.md)."""
    spellings: tuple[str, ...] = ()
    """Names of the NumPy function it translates, in the NumPy front end (``np.<name>``)."""


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Numerically stable in both tails.
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-x)), np.exp(x) / (1.0 + np.exp(x)))


def _pmax(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(x, y)


def _pmin(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.minimum(x, y)


def _step(x: np.ndarray) -> np.ndarray:
    return np.heaviside(x, 0.5)


def _gt0(x: np.ndarray) -> np.ndarray:
    return np.greater(x, 0)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _ngt(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.logical_not(np.greater(x, y))


def _nge(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.logical_not(np.greater_equal(x, y))


_REGISTRY: dict[str, Function] = {}


def _builtin(name: str, arity: int, fn: Callable, expr: sympy.Expr | None, np_name: str | None,
             **more: object) -> None:
    _REGISTRY[name] = Function(name, arity, fn, expr, np_name, **more)  # type: ignore[arg-type]


_builtin("exp", 1, np.exp, sympy.exp(X), "np.exp", spellings=("exp",))
_builtin("log", 1, np.log, sympy.log(X), "np.log", spellings=("log",))
_builtin("sin", 1, np.sin, sympy.sin(X), "np.sin", finite=True, spellings=("sin",))
_builtin("cos", 1, np.cos, sympy.cos(X), "np.cos", finite=True, spellings=("cos",))
_builtin("tanh", 1, np.tanh, sympy.tanh(X), "np.tanh", finite=True, spellings=("tanh",))
_builtin("sqrt", 1, np.sqrt, sympy.sqrt(X), "np.sqrt", spellings=("sqrt",))
_builtin("abs", 1, np.abs, sympy.Abs(X), "np.abs", finite=True, spellings=("abs", "absolute"))
_builtin("sigmoid", 1, _sigmoid, 1 / (1 + sympy.exp(-X)), None, finite=True)
_builtin("max", 2, _pmax, sympy.Max(X, Y), "np.maximum", finite=True)
_builtin("min", 2, _pmin, sympy.Min(X, Y), "np.minimum", finite=True)
_builtin("stop_gradient", 1, lambda x: x, None, None, finite=True)
# Stable forms of log(1 + x), exp(x) - 1, log(exp(x) + exp(y)) and log(1 + exp(x)), with
# derivatives that stay finite wherever the function is.
_builtin("log1p", 1, np.log1p, sympy.log(1 + X), "np.log1p", derivative=(1 / (1 + X),),
         spellings=("log1p",))
_builtin("expm1", 1, np.expm1, sympy.exp(X) - 1, "np.expm1", derivative=(SELF + 1,),
         spellings=("expm1",))
_builtin("logaddexp", 2, np.logaddexp, sympy.log(sympy.exp(X) + sympy.exp(Y)), "np.logaddexp",
         derivative=(sympy.exp(X - SELF), sympy.exp(Y - SELF)), finite=True,
         spellings=("logaddexp",))
_builtin("softplus", 1, _softplus, sympy.log(1 + sympy.exp(X)), None,
         derivative=(sympy.Function("sigmoid")(X),), finite=True)
# Data comparisons: derivatives of abs/max/min use step and sign. The comparisons are brackets
# on data (``strong``): 1 or a strong zero, so ``np.where(x > 0, sqrt(x), 0)`` is 0 at x = -1
# (not 0 * nan). Each has its complement (``ngt(x, y)`` is "not x > y", true for nan), which
# np.where's other branch is guarded by.
_builtin("step", 1, _step, sympy.Heaviside(X), None, finite=True)
# (np.sign: nan at nan, +0.0 at ±0; its derivative, 2 DiracDelta, is taken as 0)
_builtin("sign", 1, np.sign, sympy.sign(X), "np.sign", finite=True, spellings=("sign",))
_builtin("gt0", 1, _gt0, sympy.Piecewise((1, X > 0), (0, True)), None, finite=True,
         derivative=(sympy.Integer(0),), strong=True)
# (their NumPy functions return booleans: the code generator uses them as conditions)
for _name, _op, _np_name, _expr in (
    ("gt", np.greater, "np.greater", sympy.Piecewise((1, X > Y), (0, True))),
    ("ge", np.greater_equal, "np.greater_equal", sympy.Piecewise((1, X >= Y), (0, True))),
    ("eq", np.equal, "np.equal", sympy.Piecewise((1, sympy.Eq(X, Y)), (0, True))),
    ("ngt", _ngt, None, sympy.Piecewise((0, X > Y), (1, True))),
    ("nge", _nge, None, sympy.Piecewise((0, X >= Y), (1, True))),
    ("ne", np.not_equal, "np.not_equal", sympy.Piecewise((0, sympy.Eq(X, Y)), (1, True))),
):
    _builtin(_name, 2, _op, _expr, _np_name, finite=True, strong=True,
             derivative=(sympy.Integer(0), sympy.Integer(0)))

COMPLEMENT = {"gt": "ngt", "ngt": "gt", "ge": "nge", "nge": "ge", "eq": "ne", "ne": "eq"}
"""Each data comparison and the comparison true exactly where it is false (nan included)."""

BUILTINS = frozenset(_REGISTRY)
BUILTIN_FUNCTIONS = tuple(_REGISTRY.values())


def finite_functions() -> list[str]:
    """Names of the registered functions that map finite arguments to a finite value."""
    return sorted(name for name, f in _REGISTRY.items() if f.finite)


def lookup(name: str) -> Function | None:
    return _REGISTRY.get(name)


def is_function(name: str) -> bool:
    return name in _REGISTRY


def _sympify(what: str, expr: object, allowed: set[str]) -> sympy.Expr:
    """``expr`` (SymPy or a string such as ``"x**2"``) over our real symbols ``x``, ``y``."""
    if isinstance(expr, str):
        try:
            expr = sympy.sympify(expr, locals={"x": X, "y": Y, "self": SELF})
        except (sympy.SympifyError, SyntaxError, TypeError) as exc:
            raise ValueError(f"{what}: cannot read {expr!r} as a formula in x and y: {exc}"
                             ) from None
    if isinstance(expr, int | float):
        expr = sympy.Float(expr) if isinstance(expr, float) else sympy.Integer(expr)
    if not isinstance(expr, sympy.Expr):
        raise TypeError(
            f"{what} must be a SymPy expression or a string formula in x (and y), such as "
            f"'x**2', got {type(expr).__name__}"
        )
    free = expr.free_symbols
    named = {s.name for s in free}
    if not named <= allowed:
        raise ValueError(
            f"{what} may only use the symbols {', '.join(sorted(allowed))}, found "
            f"{', '.join(sorted(named))}"
        )
    # Accept symbols built without assumptions too: rebind by name onto our real symbols.
    by_name = {"x": X, "y": Y, "self": SELF, "__self__": SELF}
    return expr.subs({s: by_name[s.name] for s in free})


def register_function(
    name: str,
    expr: sympy.Expr | str,
    numpy_fn: Callable[..., np.ndarray] | None = None,
    derivative: sympy.Expr | str | Sequence[sympy.Expr | str] | None = None,
) -> Function:
    """Register a scalar function given by a SymPy expression (or a string such as
    ``"log(1 + exp(x))"``) of ``x`` (and ``y``).

    Its derivative is derived automatically, or given by ``derivative``: one formula per
    argument in ``x``, ``y`` and ``self`` (the function's value), which may call registered
    functions by name (``derivative="sigmoid(x)"`` for softplus). ``numpy_fn`` defaults to
    ``sympy.lambdify``. Re-registering a built-in is an error; re-registering a user function
    replaces it.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"function name {name!r} is not an identifier")
    if name in BUILTINS:
        raise ValueError(f"{name!r} is a built-in function and cannot be redefined")
    expr = _sympify(f"the expression of {name!r}", expr, {"x", "y"})
    arity = 2 if Y in expr.free_symbols else 1
    partials: tuple[sympy.Expr, ...] | None = None
    if derivative is not None:
        items = [derivative] if isinstance(derivative, str | sympy.Expr) else list(derivative)
        if len(items) != arity:
            raise ValueError(f"the derivative of {name!r} needs {arity} formula(s), one per "
                             f"argument, got {len(items)}")
        allowed = {"x", "y", "self", "__self__"} if arity == 2 else {"x", "self", "__self__"}
        partials = tuple(_sympify(f"the derivative of {name!r}", d, allowed) for d in items)
    if numpy_fn is None:
        numpy_fn = sympy.lambdify(ARG_SYMBOLS[:arity], expr, modules="numpy")
    elif not callable(numpy_fn):
        raise TypeError(f"numpy_fn of {name!r} must be callable, got {type(numpy_fn).__name__}")
    f = Function(name, arity, numpy_fn, expr, None, derivative=partials)
    _REGISTRY[name] = f
    # Derived tables (derivatives, generated code) depend on the registry.
    for hook in _INVALIDATE:
        hook()
    return f


_INVALIDATE: list[Callable[[], None]] = []


def on_register(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever the registry changes (to clear derived caches)."""
    _INVALIDATE.append(hook)
