"""The end-to-end API (docs/api.md): differentiate, optimize, compile, run.

    g = ea.grad(prog, wrt="A")     # a callable gradient
    g(A=..., x=...)                # keyword or positional arguments, like the program
    g.source, g.program, g.report  # generated NumPy code, optimized adjoint, CostReport

Every function accepts a :class:`~eqsat_ad.ir.Program` or a NumPy-subset Python function
(Tangent-style). A function is translated by :func:`eqsat_ad.frontend.numpy_subset.translate`
when the shapes are known: at the first call with each new argument signature, or ahead of time
with ``shapes={...}``. A call's dimensions become size symbols (``N``, ``M``, ...; 1 stays 1), so
programs and cost reports are symbolic; Python ints and bools are static constants. Compiled
versions are cached per signature (shapes, boolean-ness, static values); see :func:`grad`.

This module holds the public functions and how they read ``wrt``; the callable they return is
:class:`eqsat_ad.compiled.Compiled`, a call's specialization is in
:mod:`eqsat_ad.specialization` and the gradient program in :mod:`eqsat_ad.ad.gradient`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .ad.gradient import gradient_program
from .compiled import BACKENDS as BACKENDS
from .compiled import Compiled
from .ir.errors import EqsatTypeError, ProgramError
from .ir.program import Program
from .specialization import ShapeSpec, Specialization

__all__ = ["Compiled", "Specialization", "compile", "grad", "hessian", "jvp", "vjp"]

Wrt = str | int | Sequence[str | int] | None


def _wrt_names(params: Sequence[str], kinds: Sequence[str], wrt: Wrt, what: str) -> tuple[
    tuple[str, ...], bool
]:
    """``wrt`` as parameter names, and whether the caller asked for a tuple."""
    if wrt is None:
        for name, kind in zip(params, kinds, strict=True):
            if kind == "tensor":
                return (name,), False
        raise ProgramError(f"{what} has no float parameter to differentiate with respect to")
    several = isinstance(wrt, (tuple, list))
    items = list(wrt) if several else [wrt]  # type: ignore[list-item]
    names: list[str] = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (str, int)):
            raise EqsatTypeError(f"wrt must be parameter names or positions, got {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise ProgramError(
                    f"wrt position {w} is out of range: {what} has {len(params)} parameter(s) "
                    f"({', '.join(params)})"
                )
            w = params[w]
        elif w not in params:
            raise ProgramError(
                f"cannot differentiate with respect to {w!r}: not a parameter of {what} "
                f"(parameters: {', '.join(params) or 'none'})"
            )
        names.append(w)
    if not names:
        raise ProgramError("wrt is empty: name at least one parameter")
    return tuple(names), several


def _params_of(target: Program | Callable[..., Any]) -> tuple[list[str], list[str], str]:
    if isinstance(target, Program):
        return (list(target.param_names), [p.kind for p in target.params], repr(target.name))
    if not callable(target):
        raise EqsatTypeError(
            f"expected a Program or a Python function, got {type(target).__name__}")
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise ProgramError(f"cannot read the signature of {target!r}: {exc}") from None
    names = list(sig.parameters)
    return names, ["tensor"] * len(names), repr(getattr(target, "__name__", "function"))


def _wrt_in(
    forward: Program, target: Program | Callable[..., Any], wrt: Wrt,
    names: tuple[str, ...], what: str,
) -> tuple[str, ...]:
    """``names`` checked against the program actually built (for a Python function: its
    translation, whose parameters leave out static arguments); the default resolved there."""
    if isinstance(target, Program):
        return names
    params = list(forward.param_names)
    if wrt is None:
        return _wrt_names(params, [p.kind for p in forward.params], None, what)[0]
    for n in names:
        if n not in params:
            raise ProgramError(
                f"cannot differentiate with respect to {n!r}: in this call it is a static "
                "constant (a Python int or bool, or left at its default); pass a float or an "
                "array to make it an input"
            )
    return names


def grad(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    preserve_result: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
    structured: bool = False,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The compiled gradient of a scalar-valued program or NumPy-subset function.

    ``wrt``: a parameter name or position (default: the first float parameter), or a tuple of
    them (then the gradient is a tuple); ``argnums`` (an int or a tuple of ints, as in
    ``jax.grad``) is the same by position. ``has_aux=True``: the function returns a pair
    ``(value, aux)``; the gradient is the value's and the call returns ``(gradient, aux)``.
    ``optimize=False`` runs the naive adjoint through the
    same backend. ``rules``/``limits``/``sizes`` go to the optimizer (``sizes`` also break cost
    ties). ``preserve_result``: also return the function's value, after the gradient(s).
    ``verbose`` prints the Tensor SSA program, the naive and the optimized adjoint, the generated
    code and the cost report, and the optimizer's progress to stderr; ``progress``: a callback
    given an ``eqsat_ad.egraph.progress.Progress`` after every saturation step.

    ``structured=True``: a gradient the optimized adjoint writes only at points fixed by equality
    brackets comes back as an :class:`eqsat_ad.Diagonal` (``[i == j] * e(i)``: the gradient of a
    trace or ``diag``) or an :class:`eqsat_ad.Sparse` coordinate list (point reads, gathers), in
    O(nonzeros) time and memory instead of O(size); one that is a single product of factors
    over disjoint indices (``x[i] * y[j]``) comes back as an :class:`eqsat_ad.Outer` of them.
    Other gradients stay dense arrays. All convert with ``np.asarray`` and update an array in
    place with ``.add_to(x, scale)``.

    ``backend="numba"`` runs the same optimized program as fused scalar loop nests compiled by
    Numba (optional: ``pip install 'eqsat-ad[numba]'``; contractions BLAS runs better stay NumPy
    calls); ``.source`` is then the generated module and ``.compile_seconds`` its first-call
    compile (or cache load) time; its calls take ``out=``, an array of the result's shape and
    type (a tuple of them, ``None`` where not wanted, for several outputs) written in place and
    returned. Without ``out=``, a call reuses the arrays the previous call (same thread, same
    argument shapes) returned once nothing refers to them any more, as a caching allocator
    would (a fresh array's page faults can cost more than the loops that fill it); an array
    the caller, a container or a view still holds is never written. A program with rolled
    loops (a long Python loop, run as a fold) runs as the NumPy backend runs it, its results
    copied into ``out=``. NumPy (``backend="numpy"``) is the default.

    A Python function is translated at its first call with each new signature of arguments and
    compiled once per signature (cached; ``.specializations`` lists them):

    * array (and Python float) arguments are data. Their dimensions become size symbols ``N``,
      ``M``, ``K``, ... in order of appearance (equal dimensions share one; a dimension of 1
      stays 1, since broadcasting depends on it), so ``.program`` and ``.report`` are symbolic
      and the optimizer compares costs asymptotically; the call's sizes break ties. Where the
      function needs concrete extents (some slices, ``max`` over an axis, a branch on a shape),
      the call's concrete shapes are used instead and the specialization records why.
    * a Python ``int`` or ``bool`` argument is a static constant: the function is specialized
      on its value (``for i in range(n)`` works), and a new value compiles a new version.
      Such an argument cannot be differentiated; pass a float to make a scalar input.
    * ``shapes={name: (...)}`` (and ``dtypes``) compile ahead of time with the shapes as given
      (size names stay symbolic); calls whose shapes fit them use that version.
    """
    wrt = resolve_argnums(wrt, argnums)
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)

    def build(forward: Program) -> Program:
        resolved = _wrt_in(forward, prog_or_fn, wrt, names, what)
        return gradient_program(
            forward, resolved, as_tuple=several, preserve_result=preserve_result,
            has_aux=has_aux,
        )

    post = None
    if has_aux:
        def post(out: tuple) -> tuple:
            g = out[: len(names)] if several else out[0]
            rest = out[len(names):]
            return (g, *rest[:-1], rest[-1]) if preserve_result else (g, rest[-1])

    return Compiled(
        "grad", prog_or_fn, build, optimize=optimize, rules=rules, limits=limits, sizes=sizes,
        verbose=verbose, shapes=shapes, dtypes=dtypes, structured=structured, post=post,
        progress=progress, backend=backend,
    )


def resolve_argnums(wrt: Wrt, argnums: int | Sequence[int] | None) -> Wrt:
    """``argnums`` (``jax.grad``'s name: an int or a tuple of ints) as ``wrt``."""
    if argnums is None:
        return wrt
    if wrt is not None:
        raise EqsatTypeError("give wrt or argnums, not both (argnums is wrt by position)")
    ok = isinstance(argnums, int) and not isinstance(argnums, bool)
    if isinstance(argnums, (tuple, list)):
        ok = all(isinstance(a, int) and not isinstance(a, bool) for a in argnums)
        argnums = tuple(argnums)
    if not ok:
        raise EqsatTypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    return argnums


def compile(  # noqa: A001 - the public name (docs/api.md)
    prog_or_fn: Program | Callable[..., Any],
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
    structured: bool = False,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The forward program through the same optimizer and backend, as a callable.

    ``structured``: as for :func:`grad` (an output like ``D[i, j] = [i == j] * x[i]`` comes back
    as a Diagonal).
    """
    return Compiled(
        "compile", prog_or_fn, lambda p: p, optimize=optimize, rules=rules, limits=limits,
        sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes, structured=structured,
        progress=progress, backend=backend,
    )


def hessian(
    prog_or_fn: Program | Callable[..., Any],
    wrt: str | int | None = None,
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
    structured: bool = False,
    argnums: int | None = None,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The compiled symbolic Hessian of a scalar program with respect to one input.

    Built by :func:`eqsat_ad.ad.hessian_program` (forward over reverse with an indicator seed:
    one program, never N one-hot products) and simplified by the optimizer, e.g. to ``A + Aᵀ``
    for ``xᵀAx``. The result has rank ``2 * rank(wrt)``. ``structured=True``: a diagonal Hessian
    (of ``Σ_i g(x[i])``) comes back as an :class:`eqsat_ad.Diagonal`, in O(N). ``argnums``:
    ``wrt`` by position, as in ``jax.hessian``.
    """
    from .ad import hessian_program

    wrt = resolve_argnums(wrt, argnums)  # type: ignore[assignment]
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)
    if several and len(names) != 1:
        raise ProgramError(f"hessian differentiates with respect to one input, got {len(names)}")
    def build(forward: Program) -> Program:
        return hessian_program(forward, _wrt_in(forward, prog_or_fn, wrt, names, what)[0])

    return Compiled(
        "hessian", prog_or_fn, build, optimize=optimize,
        rules=rules, limits=limits, sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes,
        structured=structured, progress=progress, backend=backend,
    )


def _as_program(
    prog_or_fn: Program | Callable[..., Any], shapes: ShapeSpec | None, dtypes: Any, what: str
) -> Program:
    if isinstance(prog_or_fn, Program):
        return prog_or_fn
    if not callable(prog_or_fn):
        raise EqsatTypeError(
            f"expected a Program or a Python function, got {type(prog_or_fn).__name__}")
    if shapes is None:
        raise ProgramError(
            f"{what} of a Python function needs its argument shapes: pass shapes={{name: (...)}}"
        )
    from .frontend.numpy_subset import translate

    return translate(prog_or_fn, shapes, dtypes)


def _program_and_wrt(
    prog_or_fn: Program | Callable[..., Any], wrt: Wrt, shapes: ShapeSpec | None, dtypes: Any,
    what: str,
) -> tuple[Program, tuple[str, ...], bool]:
    """The program for jvp/vjp and its ``wrt`` names (and whether a tuple was asked for)."""
    prog = _as_program(prog_or_fn, shapes, dtypes, what)
    names, several = _wrt_names(list(prog.param_names), [p.kind for p in prog.params], wrt,
                                repr(prog.name))
    return prog, names, several


def jvp(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    tangents: Sequence[Any] | None = None,
    *,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Any:
    """The forward-mode (tangent) program: one tangent parameter ``<name>_dot`` per input.

    ``ea.jvp(f, primals, tangents)`` with a Python function ``f`` (and no ``shapes``) is
    ``jax.jvp``: it returns the values ``(f(*primals), J·tangents)``.
    """
    from .ad import jvp as ad_jvp

    if not isinstance(prog_or_fn, Program) and shapes is None and callable(prog_or_fn):
        from .transforms import jvp_of_function

        if tangents is None:
            raise EqsatTypeError(
                "jvp of a Python function takes (f, primals, tangents), as jax.jvp; for the "
                "tangent program give shapes={...}"
            )
        return jvp_of_function(prog_or_fn, wrt, tangents)  # type: ignore[arg-type]
    if tangents is not None:
        raise EqsatTypeError("jvp of a Program returns the tangent program: it takes no "
                             "tangents (evaluate the program with them)")

    prog, names, _ = _program_and_wrt(prog_or_fn, wrt, shapes, dtypes, "jvp")
    return ad_jvp(prog, names if len(names) > 1 else names[0])


def vjp(
    prog_or_fn: Program | Callable[..., Any],
    *args: Any,
    wrt: Wrt = None,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Any:
    """The reverse-mode adjoint program: the output cotangent ``ybar`` as an extra parameter.

    ``ea.vjp(prog, wrt)`` (or ``wrt=``) returns that Program. ``ea.vjp(f, *primals)`` with a
    Python function ``f`` (and no ``shapes``) is ``jax.vjp``: it returns ``(f(*primals),
    f_vjp)``, where ``f_vjp(cotangent)`` gives a tuple with one cotangent per primal.
    """
    from .ad import vjp as ad_vjp

    if not isinstance(prog_or_fn, Program) and shapes is None and callable(prog_or_fn):
        from .transforms import vjp_of_function

        if wrt is not None:
            raise EqsatTypeError("vjp of a Python function takes (f, *primals), as jax.vjp; "
                                 "for the adjoint program give shapes={...}")
        return vjp_of_function(prog_or_fn, *args)
    if args:
        if len(args) > 1 or wrt is not None:
            raise EqsatTypeError("vjp of a Program takes (prog, wrt)")
        wrt = args[0]

    prog, names, several = _program_and_wrt(prog_or_fn, wrt, shapes, dtypes, "vjp")
    return ad_vjp(prog, names if several else names[0])
