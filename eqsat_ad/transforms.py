"""JAX-style function transformations on top of :func:`eqsat_ad.grad`'s machinery.

    ea.value_and_grad(f, argnums=0, has_aux=False)   # (value, grad); ((value, aux), grad)
    ea.jvp(f, primals, tangents)                     # (f(*primals), tangent of the output)
    out, f_vjp = ea.vjp(f, *primals)                 # f_vjp(cotangent) -> one per primal
    ea.jacobian(f, argnums=0)                        # rows by reverse mode: small outputs

Each is translated and optimized once per argument signature, like ``ea.grad`` (the compiled
versions are cached on the function); arrays the function captures are constants of the
specialization. ``ea.jvp`` and ``ea.vjp`` given a :class:`~eqsat_ad.ir.Program` keep returning
the derivative programs (see :mod:`eqsat_ad.api`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .api import Compiled, Wrt, _params_of, _wrt_in, _wrt_names, grad, resolve_argnums
from .ir.errors import EqsatTypeError, ProgramError, ShapeError
from .ir.program import Program

__all__ = ["jacobian", "jvp_of_function", "value_and_grad", "vjp_of_function"]

# compiled transformations of each function, so that repeated calls reuse their specializations
_CACHE: weakref.WeakKeyDictionary[Callable[..., Any], dict[str, Compiled]] = (
    weakref.WeakKeyDictionary()
)


def value_and_grad(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    **options: Any,
) -> Compiled:
    """The function's value and gradient in one compiled call, as ``jax.value_and_grad``.

    Returns ``(value, grad)``, or ``((value, aux), grad)`` with ``has_aux=True``. ``wrt`` /
    ``argnums`` and the other options are :func:`eqsat_ad.grad`'s.
    """
    wrt = resolve_argnums(wrt, argnums)
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)
    count = len(names) if several else 1

    def regroup(out: tuple) -> tuple:
        g = tuple(out[:count]) if several else out[0]
        value = out[count]
        return ((value, out[count + 1]), g) if has_aux else (value, g)

    g = grad(prog_or_fn, wrt, preserve_result=True, has_aux=has_aux, **options)
    g._post = regroup  # noqa: SLF001 - the grad is built here; only its output is regrouped
    return g


def _tensor_inputs(forward: Program, fn: Callable[..., Any]) -> tuple[str, ...]:
    """The float parameters of the translation that are the function's own (captured arrays
    are constants: no tangent, no cotangent)."""
    own = set(_params_of(fn)[0])
    return tuple(p.name for p in forward.params if p.name in own and p.kind == "tensor")


def _with_primal_outputs(forward: Program, derivative: Program, name: str) -> Program:
    """``derivative`` that also returns ``forward``'s outputs first (statements shared)."""
    from .ad.common import in_dependency_order, prune

    have = {n for s in forward.statements for n in s.defines}
    # a fold the derivative extended (tangents, saved states) replaces the forward one
    extended = {s.defines[0]: s for s in derivative.statements if s.defines[0] in have}
    stmts = [extended.get(s.defines[0], s) for s in forward.statements]
    stmts += [s for s in derivative.statements if s.defines[0] not in have]
    stmts = in_dependency_order(stmts)
    outputs = forward.outputs + derivative.outputs
    return prune(derivative.params, stmts, outputs, True, name)


def _compiled(fn: Callable[..., Any], kind: str, build: Callable[[Program], Program]) -> Compiled:
    try:
        per_fn = _CACHE.setdefault(fn, {})
    except TypeError:  # not weakly referenceable: no cache
        per_fn = {}
    c = per_fn.get(kind)
    if c is None:
        c = Compiled(kind, fn, build, optimize=True, rules=None, limits=None, sizes=None,
                     verbose=False)
        per_fn[kind] = c
    return c


def _as_tuple(value: Any, what: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise EqsatTypeError(f"{what} must be a tuple (or list) of arguments, got "
                             f"{type(value).__name__}")
    return tuple(value)


def _split(out: Any, count: int, primal_tuple: bool) -> tuple[Any, Any]:
    """(primal outputs, derivative outputs) of a program that returns both, in order."""
    out = tuple(out)
    primal, deriv = out[:count], out[count:]
    if primal_tuple:
        return primal, deriv
    return primal[0], deriv[0] if len(deriv) == 1 else deriv


def jvp_of_function(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
                    ) -> tuple[Any, Any]:
    """``jax.jvp``: ``(fn(*primals), J·tangents)``, both computed by one compiled program."""
    primals = _as_tuple(primals, "jvp's primals")
    tangents = _as_tuple(tangents, "jvp's tangents")
    if len(primals) != len(tangents):
        raise ShapeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    from .ad import jvp as ad_jvp

    def build(forward: Program) -> Program:
        inputs = _tensor_inputs(forward, fn)
        if not inputs:
            raise ProgramError("jvp: the function has no float input to differentiate")
        return _with_primal_outputs(forward, ad_jvp(forward, inputs), f"{forward.name}_jvp")

    c = _compiled(fn, "jvp", build)
    stage, call = c._prepare(primals, {})  # noqa: SLF001 - same module family
    forward = c.forward
    inputs = _tensor_inputs(forward, fn)
    names = list(_params_of(fn)[0])
    dots = [p.name for p in stage.compiled.program.params if p.name not in call]
    for name, dot in zip(inputs, dots, strict=True):
        t = tangents[names.index(name)]
        p = np.asarray(primals[names.index(name)])
        if np.shape(t) != p.shape:
            raise ShapeError(f"jvp: the tangent of {name!r} has shape {np.shape(t)}, its primal "
                             f"{p.shape}")
        call[dot] = t
    out = stage.compiled(**call)
    return _split(out, len(forward.outputs), forward.returns_tuple)


def vjp_of_function(fn: Callable[..., Any], *primals: Any
                    ) -> tuple[Any, Callable[[Any], tuple]]:
    """``jax.vjp``: ``(fn(*primals), f_vjp)``; ``f_vjp(cotangent)`` returns a tuple with one
    cotangent per primal (shaped like it; zeros for a non-float primal)."""
    from .ad import vjp as ad_vjp

    forward_c = _compiled(fn, "compile", lambda p: p)
    out = forward_c(*primals)

    def build(forward: Program) -> Program:
        inputs = _tensor_inputs(forward, fn)
        if not inputs:
            raise ProgramError("vjp: the function has no float input to differentiate")
        adj = ad_vjp(forward, inputs)
        return adj

    adjoint_c = _compiled(fn, "vjp", build)
    names = list(_params_of(fn)[0])
    frozen = tuple(np.array(p, copy=True) if isinstance(p, np.ndarray) else p for p in primals)

    def f_vjp(cotangent: Any) -> tuple:
        stage, call = adjoint_c._prepare(frozen, {})  # noqa: SLF001
        forward = adjoint_c.forward
        inputs = _tensor_inputs(forward, fn)
        seeds = [p.name for p in stage.compiled.program.params if p.name not in call]
        cts = tuple(cotangent) if forward.returns_tuple else (cotangent,)
        if len(cts) != len(seeds):
            raise ShapeError(f"vjp: the function returns {len(seeds)} output(s), got "
                             f"{len(cts)} cotangent(s)")
        for seed, ct in zip(seeds, cts, strict=True):
            call[seed] = ct
        res = stage.compiled(**call)
        res = tuple(res) if len(inputs) > 1 else (res,)
        by_name = dict(zip(inputs, res, strict=True))
        return tuple(
            by_name[n] if n in by_name else np.zeros_like(np.asarray(p, dtype=float))
            for n, p in zip(names, frozen, strict=False)
        )

    return out, f_vjp


def jacobian(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    argnums: int | Sequence[int] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Callable[..., Any]:
    """``jax.jacrev``: the Jacobian of a function (or program) with a small output, one
    reverse-mode row per output element. ``J(*args)`` has shape ``out.shape + in.shape`` (a
    tuple of them for several ``wrt``/``argnums``; default: the first float input)."""
    from .ad import vjp as ad_vjp

    wrt = resolve_argnums(wrt, argnums)
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)

    def build(forward: Program) -> Program:
        if forward.returns_tuple:
            raise ProgramError("jacobian needs a function with one output (not a tuple)")
        resolved = _wrt_in(forward, prog_or_fn, wrt, names, what)
        return ad_vjp(forward, resolved if len(resolved) > 1 else resolved[0])

    adjoint = Compiled("jacobian", prog_or_fn, build, optimize=True, rules=None, limits=None,
                       sizes=sizes, verbose=False)
    value = Compiled("compile", prog_or_fn, lambda p: p, optimize=False, rules=None,
                     limits=None, sizes=sizes, verbose=False)

    def jac(*args: Any, **kwargs: Any) -> Any:
        out = np.asarray(value(*args, **kwargs), dtype=float)
        stage, call = adjoint._prepare(args, kwargs)  # noqa: SLF001
        (seed,) = [p.name for p in stage.compiled.program.params if p.name not in call]
        rows: list[tuple] = []
        for k in range(max(out.size, 1)):
            ct = np.zeros(out.shape)
            ct.reshape(-1)[k] = 1.0
            call[seed] = ct if out.shape else 1.0
            r = stage.compiled(**call)
            rows.append(tuple(r) if len(names) > 1 else (r,))
        blocks = []
        for j in range(len(names)):
            row0 = np.asarray(rows[0][j])
            stacked = np.stack([np.asarray(r[j], dtype=float) for r in rows])
            blocks.append(stacked.reshape(out.shape + row0.shape))
        return tuple(blocks) if several else blocks[0]

    jac.__name__ = f"jacobian_of_{getattr(prog_or_fn, '__name__', None) or 'program'}"
    return jac
