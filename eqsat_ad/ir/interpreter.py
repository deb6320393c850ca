"""The reference interpreter: the semantics that define "correct" for every later stage.

Every subexpression evaluates to a *labeled array*: a NumPy array whose axes are the
expression's free index variables in sorted (canonical) order, each at its full extent. Because
every labeled array keeps its axes sorted, aligning two of them for an elementwise operation only
inserts length-1 axes, never transposes.

Semantics (docs/index-language.md, docs/semantics.md):

* arithmetic is IEEE 754 (``0 * inf`` is nan, overflow gives inf), except for *strong zeros*:
  the literal 0, a false Iverson bracket, relation access or data comparison, a sum without
  terms (an empty range) and a product with a strong zero factor are a strong zero, which is 0
  and absorbs every factor, so ``[p] * e`` is 0 wherever ``p`` is false, whatever ``e`` is
  there (see :class:`eqsat_ad.ir.labeled.Value`);
* an access outside its tensor's bounds, or at a fractional index, reads 0.0 (an ordinary zero,
  as from a zero-padded array); a stored tensor holds plain numbers (a strong zero is stored as
  0.0);
* a sum over an index the body does not use repeats each term extent times.

Public functions: :func:`evaluate` runs a whole program; :func:`bind_arguments` (from
:mod:`eqsat_ad.ir.arguments`) checks arguments against a program's parameters and binds its size
symbols; :func:`evaluate_expr` evaluates one expression with free indices to an array over those
indices (for checking rewrite rules). Expressions are evaluated by :mod:`eqsat_ad.ir.labeled`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .arguments import bind_arguments
from .errors import ProgramError
from .expr import Access, Expr, free_indices
from .labeled import Axes as Axes
from .labeled import Labeled as Labeled
from .labeled import Value as Value
from .labeled import _arrange, _dim, _eval, _extent, _lookup, _weak
from .outline import outline
from .program import Fold, Program

__all__ = ["bind_arguments", "evaluate", "evaluate_expr", "evaluate_statements"]


def evaluate(prog: Program, *args: Any, **kwargs: Any) -> float | np.ndarray | tuple:
    """Run ``prog`` on concrete arguments.

    Arguments are given positionally in parameter order or by name (mixing allowed, as in
    Python). Tensors are array-likes of floats, scalars are floats or 0-d arrays, relations are
    boolean arrays (0/1 integers are accepted). Size symbols are bound from the shapes.

    Returns a float for a scalar output, an ndarray for a tensor output (a bare access of a tensor
    variable) and a tuple when the program returns a tuple.

    Raises :class:`ShapeError` for arguments that do not fit the parameters and
    :class:`ProgramError` for a program that cannot be evaluated (unknown name, unbound index...).
    """
    env, sizes = bind_arguments(prog, *args, **kwargs)
    prog = outline(prog)  # the evaluator recurses: it is given expressions of bounded depth
    env = evaluate_statements(prog, env, sizes)
    outs = tuple(_output(o, env, sizes) for o in prog.outputs)
    if prog.returns_tuple:
        return outs
    if len(outs) != 1:
        raise ProgramError(f"program {prog.name!r} returns {len(outs)} values but not as a tuple")
    return outs[0]


def evaluate_statements(
    prog: Program, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]
) -> dict[str, np.ndarray]:
    """Run ``prog``'s statements on bound parameters; returns every variable's value by name."""
    env: dict[str, np.ndarray] = dict(arrays)
    for s in prog.statements:
        if isinstance(s, Fold):
            env.update(run_fold(s, env, sizes, lambda b, args: _run_body(b, args, sizes)))
            continue
        if s.name in env:
            raise ProgramError(f"variable {s.name!r} is assigned twice", s.loc)
        gen_names = [iv.name for iv in s.indices]
        if len(set(gen_names)) != len(gen_names):
            raise ProgramError(f"statement {s.name!r} repeats a generator index", s.loc)
        stray = free_indices(s.body) - set(gen_names)
        if stray:
            raise ProgramError(
                f"statement {s.name!r} uses index(es) {', '.join(sorted(stray))} that are "
                "neither generators nor bound by a Sum",
                s.loc,
            )
        extents = {iv.name: _extent(iv, sizes) for iv in s.indices}
        # A stored tensor holds plain numbers: a strong zero is stored as 0.0.
        env[s.name] = _arrange(_weak(_eval(s.body, env, sizes, extents)), gen_names, extents)
    return env


def _run_body(body: Program, args: Sequence[np.ndarray], sizes: Mapping[str, int]) -> list:
    env = evaluate_statements(body, dict(zip(body.param_names, args, strict=True)), sizes)
    return [np.asarray(_output(o, env, sizes), dtype=float) for o in body.outputs]


def run_fold(
    f: Fold,
    env: Mapping[str, np.ndarray],
    sizes: Mapping[str, int],
    step: Callable[[Program, Sequence[np.ndarray]], Sequence[np.ndarray]],
) -> dict[str, np.ndarray]:
    """The values of a fold's results: ``step(body, arguments)`` run T times, threading the
    states and stacking the per-step outputs (shared by the interpreter and the backend)."""
    trip = _dim(f.trip, sizes, "the trip count of a fold")
    for n in f.defines:
        if n in env:
            raise ProgramError(f"variable {n!r} is assigned twice", f.loc)
    state = [np.asarray(env[n], dtype=float) for n in f.carry]
    scans = [np.asarray(env[n]) for n in f.scan]
    consts = [env[n] for n in f.const]
    for n, x in zip(f.scan, scans, strict=True):
        if x.shape[0] != trip:
            raise ProgramError(f"fold scans '{n}' of length {x.shape[0]} over {trip} steps", f.loc)
    ncarry = len(f.carry)
    stacks: list[np.ndarray | None] = [None] * (len(f.names) - ncarry)
    for t in (range(trip - 1, -1, -1) if f.reverse else range(trip)):
        outs = step(f.body, [*state, *(x[t] for x in scans), *consts])
        state = [np.asarray(v, dtype=float) for v in outs[:ncarry]]
        for k, y in enumerate(outs[ncarry:]):
            arr = stacks[k]
            if arr is None:
                arr = stacks[k] = np.zeros((trip, *np.shape(y)))
            arr[t] = y
    result = dict(zip(f.names[:ncarry], state, strict=True))
    for k, name in enumerate(f.names[ncarry:]):
        arr = stacks[k]
        if arr is None:  # no steps: the shape comes from the body's declared output
            shape = [_dim(d, sizes, name) for d in f.body_output_shape(ncarry + k)]
            arr = np.zeros((0, *shape))
        result[name] = arr
    return result


def evaluate_expr(
    expr: Expr,
    arrays: Mapping[str, Any],
    sizes: Mapping[str, int],
    index_extents: Mapping[str, int] | None = None,
    order: Sequence[str] | None = None,
    strong: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Evaluate an expression that may have free indices, to an array over those indices.

    ``arrays`` maps every name ``expr`` reads to its value (bool arrays are relations, anything
    else is read as float64); ``sizes`` binds size symbols; ``index_extents`` gives the extent of
    each free index. The result has one axis per name in ``order`` (default: the free indices of
    ``expr`` sorted by name); names in ``order`` that ``expr`` does not use are broadcast, so two
    sides of a rewrite rule can be compared on the same axes even if one side drops an index.

    Example: ``evaluate_expr(Access("A", (i, i)), {"A": a}, {}, {"i": 3})`` is ``np.diag(a)``.

    With ``strong=True`` the result is ``(values, strong)``: also where the value is a strong
    zero (two rule sides must agree on that too, or they differ inside a product with inf).
    """
    extents = dict(index_extents or {})
    env = {
        k: (v if isinstance(v, np.ndarray) and v.dtype == bool else np.asarray(v, dtype=float))
        for k, v in arrays.items()
    }
    missing = free_indices(expr) - set(extents)
    if missing:
        raise ProgramError(f"no extent given for free index(es) {', '.join(sorted(missing))}")
    names = sorted(free_indices(expr)) if order is None else list(order)
    if not set(free_indices(expr)) <= set(names):
        raise ProgramError(
            f"order {names} omits free index(es) of the expression: "
            f"{', '.join(sorted(free_indices(expr) - set(names)))}"
        )
    unknown = [n for n in names if n not in extents]
    if unknown:
        raise ProgramError(f"no extent given for index(es) {', '.join(unknown)}")
    v = _eval(expr, env, sizes, extents)
    data = _arrange(_weak(v), names, extents)
    if not strong:
        return data
    mask = np.zeros(v.data.shape, bool) if v.strong is None else np.broadcast_to(
        v.strong, v.data.shape)
    return data, _arrange((v.axes, mask), names, extents)


def _output(o: Expr, env: Mapping[str, np.ndarray], sizes: Mapping[str, int]):
    free = free_indices(o)
    if free:
        raise ProgramError(
            f"an output has free index(es) {', '.join(sorted(free))}; return a tensor variable",
            o.loc,
        )
    if isinstance(o, Access) and not o.indices:
        value = _lookup(o.name, env, o)
        if value.dtype == bool:
            return value.copy()
        return float(value) if value.ndim == 0 else value.copy()
    data = _eval(o, env, sizes, {}).data
    return float(data)
