"""User-defined derivative rules: custom adjoints and stop-gradient.

A scalar function with its own adjoint is registered once and can then be called by name in the
index language (and, through the callable returned here, in NumPy code a translator reads)::

    >>> import numpy as np
    >>> import eqsat_ad as ea
    >>> from eqsat_ad.ad import custom_adjoint, vjp
    >>> # Straight-through estimator: round forward, identity backward.
    >>> st_round = custom_adjoint("st_round", np.round, adjoint=lambda x, g: g)
    >>> float(st_round(2.4))
    2.0
    >>> prog = ea.parse('''
    ... def f(x: [N]):
    ...     return Sum[i: N](st_round(x[i]) * x[i])
    ... ''')
    >>> print(vjp(prog, "x"))  # d/dx of round(x)·x with round' := 1
    def f_vjp(x: [N], ybar: []):
        x_bar[i: N] = ybar * x[i] + ybar * st_round(x[i])
        return x_bar
    <BLANKLINE>

``adjoint`` receives SymPy symbols for the arguments and the cotangent ``g`` and returns the
cotangent of each argument (a tuple for a binary function) as a SymPy expression built with
``+ - * / **`` and SymPy functions that are registered (``sympy.exp``, ``sympy.Heaviside`` — the
built-in ``step`` —, ``sympy.Function("st_round")``, ...). It must be linear in ``g`` (it is the
transpose of the function's derivative). ``jvp`` (optional) receives the arguments and their
tangents and returns the output tangent; by default it is the transpose of ``adjoint``, so
forward and reverse mode agree. Gradient clipping, for instance::

    clip_grad = custom_adjoint(
        "clip_grad", lambda x: x, adjoint=lambda x, g: g * sympy.Heaviside(1 - x**2)
    )

Both rules compose with :func:`~eqsat_ad.ad.jvp`, :func:`~eqsat_ad.ad.vjp` and higher
derivatives (their coefficients are ordinary expressions, differentiated in turn).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ..ir import functions
from ..ir.functions import ARG_SYMBOLS, Function
from .common import DifferentiationError

G = sympy.Symbol("g", real=True)
TANGENT_SYMBOLS = (sympy.Symbol("dx", real=True), sympy.Symbol("dy", real=True))


@dataclass(frozen=True)
class CustomRule:
    """Derivative coefficients of a function with a user-given adjoint.

    ``adjoint_partials[a]`` is the factor by which the cotangent reaches argument ``a``;
    ``jvp_partials[a]`` the factor by which argument ``a``'s tangent reaches the output. Both are
    SymPy expressions of ``x`` (and ``y``).
    """

    function: Function
    adjoint_partials: tuple[sympy.Expr, ...]
    jvp_partials: tuple[sympy.Expr, ...]


_RULES: dict[str, CustomRule] = {}


def custom_rule(name: str) -> CustomRule | None:
    """The custom rule of ``name``, if the registered function is still the one it was made for."""
    rule = _RULES.get(name)
    if rule is None or functions.lookup(name) is not rule.function:
        return None
    return rule


class CustomFunction:
    """Returned by :func:`custom_adjoint`: calls ``forward``; ``name``: its index-language name."""

    def __init__(self, name: str, forward: Callable[..., Any], arity: int) -> None:
        self.name = name
        self.forward = forward
        self.arity = arity
        self.__name__ = name
        self.__doc__ = f"{name}: a function with a custom adjoint (eqsat_ad.ad.custom_adjoint)."

    def __call__(self, *args: Any) -> Any:
        if len(args) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} argument(s), got {len(args)}")
        return self.forward(*args)

    def __repr__(self) -> str:
        return f"CustomFunction({self.name!r}, arity={self.arity})"


def _positional_count(fn: Callable[..., Any], what: str) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise DifferentiationError(f"cannot read the signature of the {what} rule") from None
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        raise DifferentiationError(f"the {what} rule must take named arguments, not *args")
    return len(params)


def _as_tuple(value: Any, arity: int, what: str, name: str) -> tuple[sympy.Expr, ...]:
    items = tuple(value) if isinstance(value, tuple | list) else (value,)
    if len(items) != arity:
        raise DifferentiationError(
            f"the {what} rule of {name!r} must return {arity} value(s), one per argument; "
            f"got {len(items)}"
        )
    try:
        return tuple(sympy.sympify(v) for v in items)
    except (sympy.SympifyError, TypeError):
        raise DifferentiationError(
            f"the {what} rule of {name!r} must return SymPy expressions, got {items!r}"
        ) from None


def _linear_coefficient(expr: sympy.Expr, var: sympy.Symbol, what: str, name: str) -> sympy.Expr:
    """``c`` with ``expr == c * var``, or an error saying the rule is not linear."""
    coeff = sympy.diff(expr, var)
    if coeff.has(var) or sympy.simplify(expr - coeff * var) != 0:
        raise DifferentiationError(
            f"the {what} rule of {name!r} must be linear in {var} (it is a derivative); "
            f"got {expr}"
        )
    return coeff


def custom_adjoint(
    name: str,
    forward: Callable[..., Any],
    adjoint: Callable[..., Any],
    jvp: Callable[..., Any] | None = None,
) -> CustomFunction:
    """Register the elementwise function ``name`` with its own adjoint (and optional tangent) rule.

    ``forward`` is the NumPy implementation; ``adjoint(x, g)`` (``adjoint(x, y, g)`` for a binary
    function, returning a pair) gives the argument cotangents from the cotangent ``g``; ``jvp(x,
    dx)`` (``jvp(x, y, dx, dy)``) the output tangent. The arity is read from ``adjoint``'s
    signature. Calling it again with the same name replaces the rule. Returns a callable that runs
    ``forward`` (see the module docstring for an example).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise DifferentiationError(f"custom function name {name!r} is not an identifier")
    if name in functions.BUILTINS:
        raise DifferentiationError(f"{name!r} is a built-in function and cannot be redefined")
    if not callable(forward) or not callable(adjoint) or (jvp is not None and not callable(jvp)):
        raise DifferentiationError(f"forward, adjoint and jvp of {name!r} must be callables")
    arity = _positional_count(adjoint, "adjoint") - 1
    if arity not in (1, 2):
        raise DifferentiationError(
            f"the adjoint rule of {name!r} must take the argument(s) and the cotangent: "
            "adjoint(x, g) or adjoint(x, y, g)"
        )
    args = ARG_SYMBOLS[:arity]
    try:
        raw_adjoint = adjoint(*args, G)
    except Exception as exc:  # the user's rule: report what went wrong, in our terms
        raise DifferentiationError(
            f"the adjoint rule of {name!r} failed on symbolic arguments: {exc}"
        ) from exc
    adjoint_partials = tuple(
        _linear_coefficient(v, G, "adjoint", name)
        for v in _as_tuple(raw_adjoint, arity, "adjoint", name)
    )
    if jvp is None:
        jvp_partials = adjoint_partials
    else:
        if _positional_count(jvp, "jvp") != 2 * arity:
            raise DifferentiationError(
                f"the jvp rule of {name!r} must take {2 * arity} arguments: the argument(s) "
                "then their tangent(s)"
            )
        try:
            raw_jvp = sympy.sympify(jvp(*args, *TANGENT_SYMBOLS[:arity]))
        except Exception as exc:
            raise DifferentiationError(
                f"the jvp rule of {name!r} failed on symbolic arguments: {exc}"
            ) from exc
        jvp_partials = tuple(
            _linear_coefficient(raw_jvp, TANGENT_SYMBOLS[a], "jvp", name) for a in range(arity)
        )
        rest = sympy.simplify(
            raw_jvp - sum(c * t for c, t in zip(jvp_partials, TANGENT_SYMBOLS, strict=False))
        )
        if rest != 0:
            raise DifferentiationError(
                f"the jvp rule of {name!r} must be linear in the tangents; got {raw_jvp}"
            )
    for coeff in adjoint_partials + jvp_partials:
        extra = {s.name for s in coeff.free_symbols} - {s.name for s in args}
        if extra:
            raise DifferentiationError(
                f"the derivative rules of {name!r} use unknown symbols {sorted(extra)}"
            )

    # Fail before registering anything if a coefficient cannot become an expression.
    from .derivatives import check_convertible

    for coeff in adjoint_partials + jvp_partials:
        check_convertible(coeff, arity, pending=name)

    def numpy_forward(*xs: np.ndarray) -> np.ndarray:
        return np.asarray(forward(*xs), dtype=float)

    fn = functions.register_function(name, sympy.Function(name)(*args), numpy_forward)
    _RULES[name] = CustomRule(fn, adjoint_partials, jvp_partials)
    return CustomFunction(name, forward, arity)


def stop_gradient(x: Any) -> Any:
    """The identity; its derivative is zero.

    In NumPy code that is translated to the index language it becomes the built-in
    ``stop_gradient(e)``, which AD treats as a constant.
    """
    return x
