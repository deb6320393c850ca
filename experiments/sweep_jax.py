"""``jax.jit(jax.grad(f))`` of a sweep program's NumPy function, for the sweep's JAX column.

The function ``f`` of each sweep program (what ``grad/f`` times; ``jax_f`` where ``f`` writes in
place) is rebuilt, with the functions of its module that it calls, with ``np`` bound to
``jax.numpy`` (and ``float`` to ``jax.numpy.float64``), and differentiated by JAX with respect to
the program's ``wrt`` arguments, x64 enabled (float64 stays float64). A function that JAX
cannot trace (in-place writes, Python control flow on values) or would trace unrolled (a
Python loop) has no JAX column: the reason is recorded. Before it is timed, the JAX gradient is
checked against the hand-written one at the program's small sizes: a JAX column is only ever a
correct gradient.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sweep_programs import SweepProgram

__all__ = ["JaxUnavailable", "jax_gradient"]


class JaxUnavailable(Exception):
    """The program has no JAX gradient (JAX missing, untraceable, or not the hand gradient)."""


def jax_gradient(sp: SweepProgram) -> Callable[[Mapping[str, Any]], Callable[[], Any]]:
    """A function of the inputs that returns a zero-argument call of the jitted JAX gradient
    (its arguments already on the device, the result waited for)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        raise JaxUnavailable("JAX is not installed") from e
    jax.config.update("jax_enable_x64", True)
    f = sp.jax_f or sp.f
    if not isinstance(f, types.FunctionType):
        raise JaxUnavailable("the function is not a plain Python function")
    if _has_loop(f):  # jit traces the loop unrolled: at 10^6 iterations, past any time limit
        raise JaxUnavailable("jit unrolls the function's Python loop")
    traced = _with_jax_numpy(f, jnp)
    small = sp.inputs(sp.small, seed=1)
    params = inspect.signature(f).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):  # f(**inputs): the inputs' names
        names = list(small)
        fn: Callable[..., Any] = lambda *a: traced(**dict(zip(names, a, strict=True)))  # noqa: E731
    else:
        names, fn = [p.name for p in params], traced
    if any(w not in names for w in sp.wrt):
        raise JaxUnavailable("the function does not take every differentiated argument")
    argnums = tuple(names.index(w) for w in sp.wrt)
    grad = jax.jit(jax.grad(fn, argnums=argnums))

    def bind(inputs: Mapping[str, Any]) -> Callable[[], Any]:
        args = [jnp.asarray(inputs[n]) for n in names]

        def run() -> Any:
            return jax.block_until_ready(grad(*args))
        return run

    try:
        got = bind(small)()
    except Exception as e:  # noqa: BLE001 - any tracing failure: no JAX column
        raise JaxUnavailable(f"JAX cannot trace it ({type(e).__name__})") from e
    hand = sp.hand(**small)
    for k, w in enumerate(sp.wrt):
        a, b = np.asarray(got[k], dtype=float), np.asarray(hand[w], dtype=float)
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-8, atol=1e-10):
            raise JaxUnavailable(f"JAX's gradient of {w} differs from the hand-written one")
    return bind


def _has_loop(f: types.FunctionType) -> bool:
    """Whether ``f``'s own source has a ``for`` or ``while`` loop (False if not readable)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(n, ast.For | ast.While) for n in ast.walk(tree))


def _with_jax_numpy(f: types.FunctionType, jnp: Any) -> types.FunctionType:
    """``f`` and the functions of its module it calls, with ``np`` bound to ``jax.numpy`` and
    ``float`` to ``jax.numpy.float64`` (``float(np.sum(...))`` stays a traced scalar)."""
    old = f.__globals__
    new: dict[str, Any] = dict(old)
    new["np"] = jnp
    new["float"] = jnp.float64  # float(traced) and .astype(float) both stay traced

    def rebound(g: types.FunctionType) -> types.FunctionType:
        h = types.FunctionType(g.__code__, new, g.__name__, g.__defaults__, g.__closure__)
        h.__kwdefaults__ = g.__kwdefaults__
        return h

    for name, value in old.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is old:
            new[name] = rebound(value)
    return rebound(f)
