"""The one table of scalar built-in functions.

Each entry gives the arity, a NumPy implementation (elementwise) and a SymPy expression in the
arguments ``x`` (and ``y`` for binary functions). Derivatives are derived from the SymPy
expression by the AD stage, so registering a function with :func:`register_function` is enough
to differentiate it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy

X, Y = sympy.symbols("x y", real=True)
ARG_SYMBOLS = (X, Y)


@dataclass(frozen=True)
class Function:
    name: str
    arity: int
    numpy: Callable[..., np.ndarray]
    sympy: sympy.Expr | None
    """``None`` for functions whose derivative is defined by the AD stage (stop_gradient)."""
    numpy_name: str | None = None
    """Dotted NumPy name used by the code generator, e.g. ``np.exp``; ``None``: call ``numpy``."""


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
    x = np.asarray(x)
    return (x > 0).astype(x.dtype if x.dtype.kind == "f" else np.float64)


_REGISTRY: dict[str, Function] = {}


def _builtin(name: str, arity: int, fn: Callable, expr: sympy.Expr | None, np_name: str | None):
    _REGISTRY[name] = Function(name, arity, fn, expr, np_name)


_builtin("exp", 1, np.exp, sympy.exp(X), "np.exp")
_builtin("log", 1, np.log, sympy.log(X), "np.log")
_builtin("sin", 1, np.sin, sympy.sin(X), "np.sin")
_builtin("cos", 1, np.cos, sympy.cos(X), "np.cos")
_builtin("tanh", 1, np.tanh, sympy.tanh(X), "np.tanh")
_builtin("sqrt", 1, np.sqrt, sympy.sqrt(X), "np.sqrt")
_builtin("abs", 1, np.abs, sympy.Abs(X), "np.abs")
_builtin("sigmoid", 1, _sigmoid, 1 / (1 + sympy.exp(-X)), None)
_builtin("max", 2, _pmax, sympy.Max(X, Y), "np.maximum")
_builtin("min", 2, _pmin, sympy.Min(X, Y), "np.minimum")
_builtin("stop_gradient", 1, lambda x: x, None, None)
# Data comparisons: derivatives of abs/max/min use step and sign; np.where(x > y, ...) uses gt0
# (strict, 0 at ties, as NumPy's comparison).
_builtin("step", 1, _step, sympy.Heaviside(X), None)
_builtin("sign", 1, np.sign, sympy.sign(X), "np.sign")
_builtin("gt0", 1, _gt0, sympy.Piecewise((1, X > 0), (0, True)), None)

BUILTINS = frozenset(_REGISTRY)


def lookup(name: str) -> Function | None:
    return _REGISTRY.get(name)


def is_function(name: str) -> bool:
    return name in _REGISTRY


def register_function(
    name: str,
    expr: sympy.Expr,
    numpy_fn: Callable[..., np.ndarray] | None = None,
) -> Function:
    """Register a scalar function given by a SymPy expression of ``x`` (and ``y``).

    Its derivative is derived automatically. ``numpy_fn`` defaults to ``sympy.lambdify``.
    Re-registering a built-in is an error; re-registering a user function replaces it.
    """
    if not name.isidentifier():
        raise ValueError(f"function name {name!r} is not an identifier")
    if name in BUILTINS:
        raise ValueError(f"{name!r} is a built-in function and cannot be redefined")
    free = expr.free_symbols
    named = {s.name for s in free}
    if not named <= {"x", "y"}:
        raise ValueError(
            f"the expression of {name!r} may only use the symbols x and y, found {sorted(named)}"
        )
    # Accept symbols built without assumptions too: rebind by name onto our real symbols.
    expr = expr.subs({s: (X if s.name == "x" else Y) for s in free})
    arity = 2 if "y" in named else 1
    if numpy_fn is None:
        numpy_fn = sympy.lambdify(ARG_SYMBOLS[:arity], expr, modules="numpy")
    f = Function(name, arity, numpy_fn, expr, None)
    _REGISTRY[name] = f
    # Derived tables (derivatives, generated code) depend on the registry.
    for hook in _INVALIDATE:
        hook()
    return f


_INVALIDATE: list[Callable[[], None]] = []


def on_register(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever the registry changes (to clear derived caches)."""
    _INVALIDATE.append(hook)
