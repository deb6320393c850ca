"""The reference evaluator of one expression over *labeled arrays* with strong zeros.

A labeled array is a NumPy array whose axes are the expression's free index variables in sorted
(canonical) order, each at its full extent; :class:`Value` adds where it is a strong zero. This
module evaluates every expression and predicate form to one (affine accesses and comparisons on
integer grids); :mod:`eqsat_ad.ir.interpreter` runs programs with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .draws import (
    _FINITE_FIRST,
    _PRODUCT_ORDER,
    _READ_ROUNDING,
    _SEQUENTIAL,
    _SUM_ROUNDING,
    _SUMMED,
    _SUMS_SPLIT,
    _ZERO_ABSORBS,
    _bound,
    _saturated,
)
from .errors import ProgramError
from .expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
)
from .functions import lookup
from .index import Affine, Dim, IndexVar

__all__ = ["Axes", "Labeled", "Value"]

Axes = tuple[str, ...]
Labeled = tuple[Axes, np.ndarray]
"""(sorted free-index names, array with one full-extent axis per name)."""


@dataclass(frozen=True, slots=True)
class Value:
    """An expression's value over its free indices: ``data`` on the axes ``axes`` (sorted), and
    where it is a *strong zero* (``strong``, broadcastable to ``data``; None: nowhere).

    A strong zero is what the literal 0, a false bracket, relation access or data comparison, a
    sum without terms and a product with a strong zero factor evaluate to: it is 0.0 but absorbs
    every factor (``inf * [false] == 0``). A sum or difference is a strong zero where both
    operands are, a quotient where its numerator is, a positive power where its base is, a
    negation where its operand is. Everything else is IEEE 754 arithmetic on doubles.
    """

    axes: Axes
    data: np.ndarray
    strong: np.ndarray | None

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _extent(iv: IndexVar, sizes: Mapping[str, int]) -> int:
    return _dim(iv.extent, sizes, iv.name)


def _dim(d: Dim, sizes: Mapping[str, int], what: str) -> int:
    if isinstance(d, int):
        return d
    if d.name not in sizes:
        raise ProgramError(f"size {d.name} (extent of {what}) is not bound by any argument")
    return sizes[d.name]


def _lookup(name: str, env: Mapping[str, np.ndarray], node: Expr | Pred) -> np.ndarray:
    if name not in env:
        raise ProgramError(f"unknown name {name!r} (not a parameter or an earlier variable)",
                           node.loc)
    return env[name]


def _align(lab: Labeled, axes: Axes, extents: Mapping[str, int]) -> np.ndarray:
    """Insert length-1 axes so that ``lab`` broadcasts against ``axes`` (a sorted superset)."""
    own, data = lab
    if own == axes:
        return data
    return data.reshape([extents[a] if a in own else 1 for a in axes])


def _union(*axes: Axes) -> Axes:
    return tuple(sorted(set().union(*axes)))


def _arrange(lab: Labeled, order: Sequence[str], extents: Mapping[str, int]) -> np.ndarray:
    """Put ``lab`` on the axes ``order`` (any order, may add broadcast axes), as a fresh array."""
    axes = _union(lab[0], tuple(order))
    data = _align(lab, axes, extents)
    data = np.transpose(data, [axes.index(a) for a in order])
    return np.array(np.broadcast_to(data, [extents[a] for a in order]), dtype=data.dtype)


def _weak(v: Value) -> Labeled:
    """The plain array of ``v`` (a strong zero is stored as 0.0)."""
    return v.axes, v.data


def _strong_of(v: Value, axes: Axes, extents: Mapping[str, int]) -> np.ndarray | None:
    return None if v.strong is None else _align((v.axes, v.strong), axes, extents)


def _or(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else a | b


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or b is None else a & b


def _value(axes: Axes, data: np.ndarray, strong: np.ndarray | None) -> Value:
    """A value with its strong zeros stored as 0.0 (and ``strong`` dropped when empty)."""
    data = np.asarray(data, dtype=float)
    if strong is None or not strong.any():
        return Value(axes, data, None)
    data, strong = np.broadcast_arrays(data, strong)  # (both on every axis of ``axes``)
    return Value(axes, np.where(strong, 0.0, data), strong)


def _eval(
    e: Expr, env: Mapping[str, np.ndarray], sizes: Mapping[str, int], extents: Mapping[str, int]
) -> Value:
    match e:
        case Const(v):
            # the literal 0 is a strong zero (a zero known without looking at any data)
            # (its value is +0.0, also written -0: the backend's literal 0)
            return Value((), np.asarray(v if v != 0 else 0.0, dtype=float),
                         np.asarray(True) if v == 0 else None)
        case Access():
            axes, data = _access(e, env, sizes, extents)
            rounding = _READ_ROUNDING.get()
            if rounding is not None:
                rng, rel = rounding
                data = data * (1.0 + rel * rng.uniform(-1.0, 1.0, size=data.shape))
            return Value(axes, data, None)
        case Bracket(p):
            axes, mask = _pred(p, env, sizes, extents)
            return _value(axes, mask.astype(float), ~mask)
        case Binary("*", _, _):
            return _product(_ordered(_factors(e)), env, sizes, extents)
        case Binary("/", _, _) if _by_literal(e) or _PRODUCT_ORDER.get() == "reciprocals":
            return _product(_ordered(_factors(e)), env, sizes, extents)
        case Binary("+" | "-", _, _) if _FINITE_FIRST.get():
            return _finite_first(_terms(e), env, sizes, extents)
        case Binary(op, lhs, rhs):
            a, b = _eval(lhs, env, sizes, extents), _eval(rhs, env, sizes, extents)
            axes = _union(a.axes, b.axes)
            x, y = _align(_weak(a), axes, extents), _align(_weak(b), axes, extents)
            sa, sb = _strong_of(a, axes, extents), _strong_of(b, axes, extents)
            with np.errstate(all="ignore"):
                if op == "/":
                    # a strong zero divided by anything stays a strong zero
                    return _value(axes, _saturated(x / y), sa)
                out = x + y if op == "+" else x - y
                rounding = _SUM_ROUNDING.get()
                if rounding is not None:
                    rng, rel = rounding
                    out = out * (1.0 + rel * rng.uniform(-1.0, 1.0, size=out.shape))
            # (a strong zero is stored as 0.0, the identity of + and -)
            return _value(axes, out, _and(sa, sb))
        case Neg(arg):
            v = _eval(arg, env, sizes, extents)
            return _value(v.axes, -v.data, v.strong)  # a strong zero is +0.0, also negated
        case Pow(base, k):
            v = _eval(base, env, sizes, extents)
            with np.errstate(all="ignore"):
                data = np.asarray(np.power(v.data, k), dtype=float)
            # a positive power of a strong zero is a strong zero; 0 ** 0 = 1, 0 ** -1 = inf
            return _value(v.axes, _saturated(data), v.strong if k > 0 else None)
        case Call(fn, args):
            return _call(e, fn, args, env, sizes, extents)
        case Sum():
            return _sum(e, env, sizes, extents)
        case Max():
            return _max(e, env, sizes, extents)
    raise ProgramError(f"not an expression: {e!r}")


def _call(e: Call, fn: str, args, env, sizes, extents) -> Value:
    f = lookup(fn)
    if f is None:
        raise ProgramError(f"unknown function {fn!r}", e.loc)
    if len(args) != f.arity:
        raise ProgramError(f"{fn} takes {f.arity} argument(s), got {len(args)}", e.loc)
    vals = [_eval(a, env, sizes, extents) for a in args]
    if fn == "stop_gradient":  # the identity: a strong zero stays one
        return vals[0]
    axes = _union(*(v.axes for v in vals))
    arrays = [_align(_weak(v), axes, extents) for v in vals]
    with np.errstate(all="ignore"):
        out = _saturated(np.asarray(f.numpy(*arrays), dtype=float))
    # A function may broadcast lazily (e.g. returns its argument): make it full. A function of a
    # strong zero is the function of 0.0, an ordinary value; a data comparison (gt, ge, ...) is
    # a bracket on data: 1 or a strong zero.
    out = np.broadcast_to(out, [extents[a] for a in axes])
    return _value(axes, out, out == 0) if f.strong else Value(axes, out, None)


def _factors(e: Expr) -> list[Expr]:
    """The factors of a product tree ``a * (b * c) * ...`` (under the ``constants-first``
    order of :func:`~eqsat_ad.ir.draws.every_product_reordered`, ``e / c`` by a non-zero
    literal is ``e * (1/c)``)."""
    if isinstance(e, Binary) and e.op == "*":
        return _factors(e.lhs) + _factors(e.rhs)
    if _by_literal(e):
        assert isinstance(e, Binary) and isinstance(e.rhs, Const)
        return _factors(e.lhs) + [Const(1.0 / e.rhs.value, e.rhs.loc)]
    if isinstance(e, Binary) and e.op == "/" and _PRODUCT_ORDER.get() == "reciprocals":
        return _factors(e.lhs) + [Pow(e.rhs, -1.0, e.loc)]
    return [e]


def _by_literal(e: Expr) -> bool:
    """``e`` is a quotient by a literal that the ``constants-first`` order takes as the product
    with its reciprocal (a finite one: ``e / 5e-324`` is no product with inf)."""
    return isinstance(e, Binary) and e.op == "/" and isinstance(e.rhs, Const) \
        and _PRODUCT_ORDER.get() == "constants-first" \
        and e.rhs.value != 0 and math.isfinite(1.0 / e.rhs.value)


def _ordered(factors: list[Expr]) -> list[Expr]:
    """``factors`` in the order :func:`~eqsat_ad.ir.draws.every_product_reordered` asks for
    (as written else)."""
    order = _PRODUCT_ORDER.get()
    if order == "reversed":
        return factors[::-1]
    if order == "constants-first":
        return [f for f in factors if isinstance(f, Const)] + \
            [f for f in factors if not isinstance(f, Const)]
    if order in ("summed-first", "reciprocals", "scalars-last"):
        summed = _SUMMED.get()
        reads = [f for f in factors if summed & set(free_indices(f))]
        rest = [f for f in factors if not summed & set(free_indices(f))]
        if order == "scalars-last":
            rest = [f for f in rest if free_indices(f)] + [f for f in rest if not free_indices(f)]
        return reads + rest
    return factors


def _terms(e: Expr, sign: float = 1.0) -> list[tuple[float, Expr]]:
    """The signed terms of a chain of ``+`` and ``-`` (for
    :func:`~eqsat_ad.ir.draws.every_sum_finite_first`)."""
    if isinstance(e, Binary) and e.op in "+-":
        return _terms(e.lhs, sign) + _terms(e.rhs, sign if e.op == "+" else -sign)
    return [(sign, e)]


def _finite_first(terms: list[tuple[float, Expr]], env, sizes, extents) -> Value:
    """The chain's terms added left to right, each entry's finite terms before its others."""
    vals = [(sign, _eval(t, env, sizes, extents)) for sign, t in terms]
    axes = _union(*(v.axes for _, v in vals))
    parts = [sign * _align(_weak(v), axes, extents) for sign, v in vals]
    strong = None
    for k, (_, v) in enumerate(vals):
        s = _strong_of(v, axes, extents)
        strong = s if k == 0 else _and(strong, s)
    with np.errstate(all="ignore"):
        out = sum((np.where(np.isfinite(p), p, 0.0) for p in parts), np.zeros(()))
        for p in parts:
            out = out + np.where(np.isfinite(p), 0.0, p)
    return _value(axes, out, strong)


def _product(factors: list[Expr], env, sizes, extents) -> Value:
    sums = [f for f in factors if isinstance(f, Sum)]
    if len(sums) == 1 and len(factors) > 1 and _into_the_sum(factors, sums[0]):
        # the normal form's coef · Σ_J Π factors: the literals scale every term of the sum
        # (Σ(A * A) / 2 at A = 1e154 is inf, Σ 0.5 A A is not: fuzz 2035 #289, a mean); the
        # fast code's flattened w · Σ_J Π factors multiplies every factor outside the sum into
        # each of its terms first (x ** -2 · Σ x x at x = -1e300 is 0 · inf, nan as written;
        # 0 · x · x is 0 flattened: fuzz 3018 #832)
        coef: Expr = factors[0] if factors[0] is not sums[0] else factors[1]
        for f in factors:
            if f is not sums[0] and f is not coef:
                coef = Binary("*", coef, f)
        return _sum(Sum(sums[0].indices, Binary("*", coef, sums[0].body), sums[0].loc),
                    env, sizes, extents)
    return _combine_product([_eval(f, env, sizes, extents) for f in factors], extents)


def _into_the_sum(factors: list[Expr], s: Sum) -> bool:
    """Whether the product order of :func:`~eqsat_ad.ir.draws.every_product_reordered`
    multiplies the ``factors`` other than the Σ ``s`` into each of its terms: the literals
    (``constants-first``), or all of them (``distributed``) unless one uses a name ``s`` binds
    (it would be captured)."""
    rest = [f for f in factors if f is not s]
    order = _PRODUCT_ORDER.get()
    if order == "constants-first":
        return all(isinstance(f, Const) for f in rest)
    if order == "distributed":
        bound = {iv.name for iv in s.indices}
        return not any(bound & set(free_indices(f)) for f in rest)
    return False


def _combine_product(vals: list[Value], extents: Mapping[str, int]) -> Value:
    """The IEEE product, except that a strong zero factor makes the product a strong zero."""
    axes = _union(*(v.axes for v in vals))
    data = np.ones([1] * len(axes))
    strong: np.ndarray | None = None
    absorbs = _ZERO_ABSORBS.get()
    zero: np.ndarray | None = None
    with np.errstate(all="ignore"):
        for v in vals:
            x = _align(_weak(v), axes, extents)
            data = data * x
            strong = _or(strong, _strong_of(v, axes, extents))
            if absorbs:
                zero = _or(zero, x == 0)
    if zero is not None:
        data = np.where(zero, 0.0, data)
    if strong is not None:
        strong = np.broadcast_to(strong, data.shape)
    return _value(axes, data, strong)


def _sum(e: Sum, env, sizes, extents) -> Value:
    names = [iv.name for iv in e.indices]
    if len(set(names)) != len(names):
        raise ProgramError(f"Sum binds an index twice: {', '.join(names)}", e.loc)
    if _SUMS_SPLIT.get() and isinstance(e.body, Binary) and e.body.op in "+-":
        body = e.body
        return _eval(Binary(body.op, Sum(e.indices, body.lhs, e.loc),
                            Sum(e.indices, body.rhs, e.loc), body.loc), env, sizes, extents)
    inner = dict(extents)
    for iv in e.indices:
        inner[iv.name] = _extent(iv, sizes)
    bound = set(names)
    unused = [n for n in names if n not in free_indices(e.body)]
    count = math.prod(inner[n] for n in unused)

    with _bound(_SUMMED, _SUMMED.get() | bound):
        vals = [_eval(f, env, sizes, inner) for f in _ordered(_factors(e.body))]
    union = _union(*(v.axes for v in vals))
    out_axes = tuple(a for a in union if a not in bound)
    summed = [a for a in union if a in bound]
    data = None
    # (a diagnostic order of the factors takes the careful path: the product in that order)
    if _PRODUCT_ORDER.get() is None and not _SEQUENTIAL.get() and len(vals) > 1 and \
            len(union) < len(_LETTERS) and all(
        np.isfinite(v.data).all() for v in vals
    ):
        # With finite factors the product needs no care: contract with einsum instead of
        # materializing the product over every index (same value, far less memory), unless a
        # product overflowed (then a strong zero may meet inf in it: the careful path).
        letter = {a: _LETTERS[k] for k, a in enumerate(union)}
        spec = ",".join("".join(letter[a] for a in v.axes) for v in vals)
        spec += "->" + "".join(letter[a] for a in out_axes)
        # (+ 0.0: a sum starts at +0.0, so it is never -0.0; an optimized einsum multiplies a
        # 0-d factor such as -2 after the sum: -2 * +0.0)
        data = np.einsum(spec, *(v.data for v in vals), optimize=len(vals) > 2) + 0.0
        if not np.isfinite(data).all():
            data = None
    if data is not None:
        # A point of the result is a strong zero where every term is one: no term has only
        # non-strong factors, which one more contraction of the non-strong indicators counts.
        strong = None
        if any(v.strong is not None for v in vals):
            live = [(~v.strong).astype(float) if v.strong is not None else np.ones(
                [1] * len(v.axes)) for v in vals]
            lspec = ",".join("".join(letter[a] for a in v.axes) for v in vals)
            lspec += "->" + "".join(letter[a] for a in out_axes)
            live_shapes = [np.broadcast_to(x, v.data.shape) for x, v in zip(live, vals,
                                                                                strict=True)]
            strong = np.einsum(lspec, *live_shapes, optimize=len(vals) > 2) == 0
        total = _value(out_axes, data, strong)
    else:
        prod = _combine_product(vals, inner)
        pos = tuple(k for k, a in enumerate(prod.axes) if a in bound)
        data = _in_order(prod.data, pos) if _SEQUENTIAL.get() else prod.data.sum(axis=pos)
        strong = None if prod.strong is None else prod.strong.all(axis=pos)
        total = _value(out_axes, data, strong)
    if any(inner[a] == 0 for a in summed):  # no term at all
        total = _value(out_axes, np.zeros(total.data.shape), np.ones(total.data.shape, bool))
    if unused:
        # An index the body ignores repeats each term ``count`` times; an empty range leaves
        # no term: the strong zero.
        if count == 0:
            return _value(out_axes, np.zeros(total.data.shape), np.ones(total.data.shape, bool))
        with np.errstate(all="ignore"):
            return Value(out_axes, total.data * float(count), total.strong)
    return total


def _in_order(data: np.ndarray, pos: tuple[int, ...]) -> np.ndarray:
    """``data`` summed over the axes ``pos`` one term after another, the first axis outermost
    (:func:`~eqsat_ad.ir.draws.every_sum_sequential`)."""
    if not pos:
        return data
    rest = [k for k in range(data.ndim) if k not in pos]
    flat = np.transpose(data, rest + list(pos)).reshape(
        [data.shape[k] for k in rest] + [-1])
    total = np.zeros(flat.shape[:-1]) + 0.0
    with np.errstate(all="ignore"):
        for t in range(flat.shape[-1]):
            total = total + flat[..., t]
    return total


def _max(e: Max, env, sizes, extents) -> Value:
    """The largest value of the body over the bound indices: -inf over an empty range, nan
    where the range holds a nan (as ``np.max``); strong zeros count as the ordinary 0.0 and
    the result is an ordinary number."""
    names = [iv.name for iv in e.indices]
    if len(set(names)) != len(names):
        raise ProgramError(f"Max binds an index twice: {', '.join(names)}", e.loc)
    inner = dict(extents)
    for iv in e.indices:
        inner[iv.name] = _extent(iv, sizes)
    v = _eval(e.body, env, sizes, inner)
    bound = set(names)
    out_axes = tuple(a for a in v.axes if a not in bound)
    full = out_axes + tuple(names)  # every bound index present (the body may ignore some)
    data = _arrange(_weak(v), full, inner)
    pos = tuple(range(len(out_axes), len(full)))
    return Value(out_axes, np.max(data, axis=pos, initial=-np.inf), None)


# ------------------------------------------------------------------------------------------------
# Accesses and predicates: affine index arithmetic over integer grids
# ------------------------------------------------------------------------------------------------


def _node_axes(affines: Sequence[Affine]) -> Axes:
    return _union(*(tuple(a.free_indices()) for a in affines))


def _affine_grid(
    a: Affine, axes: Axes, sizes: Mapping[str, int], extents: Mapping[str, int], node
) -> tuple[np.ndarray, int]:
    """``(num, den)`` with ``a == num / den`` at every point of the grid over ``axes``.

    ``num`` is an int64 array that broadcasts over ``axes``; ``den`` the common denominator.
    """
    den = 1
    for _, c in a.index + a.sizes:
        den = math.lcm(den, c.denominator)
    den = math.lcm(den, a.const.denominator)
    base = a.const * den
    for n, c in a.sizes:
        if n not in sizes:
            raise ProgramError(f"size {n} in index expression {a} is not bound", node.loc)
        base += c * den * sizes[n]
    num = np.full((1,) * len(axes), int(base), dtype=np.int64)
    for n, c in a.index:
        if n not in extents:
            raise ProgramError(f"index {n} in {a} is not bound", node.loc)
        shape = [1] * len(axes)
        shape[axes.index(n)] = extents[n]
        num = num + int(c * den) * np.arange(extents[n], dtype=np.int64).reshape(shape)
    return num, den


def _gather(
    name: str,
    value: np.ndarray,
    affines: tuple[Affine, ...],
    sizes: Mapping[str, int],
    extents: Mapping[str, int],
    node,
    fill,
) -> Labeled:
    """Read ``value`` at affine indices; out-of-range or fractional positions read ``fill``."""
    if value.ndim != len(affines):
        raise ProgramError(
            f"{name!r} has rank {value.ndim} but is indexed with {len(affines)} index(es)",
            node.loc,
        )
    axes = _node_axes(affines)
    shape = tuple(extents[a] for a in axes)
    valid = np.ones(shape, dtype=bool)
    positions = []
    for a, dim in zip(affines, value.shape, strict=True):
        num, den = _affine_grid(a, axes, sizes, extents, node)
        pos = num // den
        valid &= (num % den == 0) & (pos >= 0) & (pos < dim)
        positions.append(np.broadcast_to(np.clip(pos, 0, max(dim - 1, 0)), shape))
    if value.size == 0:
        return axes, np.full(shape, fill, dtype=value.dtype)
    read = value[tuple(positions)] if affines else value
    return axes, np.where(valid, read, fill)


def _access(e: Access, env, sizes, extents) -> Labeled:
    value = _lookup(e.name, env, e)
    axes, data = _gather(e.name, value, e.indices, sizes, extents, e, 0)
    return axes, np.asarray(data, dtype=float)


def _pred(p: Pred, env, sizes, extents) -> tuple[Axes, np.ndarray]:
    match p:
        case Cmp(op, lhs, rhs):
            diff = lhs - rhs
            axes = _node_axes((diff,))
            # Compare lhs - rhs with 0 on integers: scale by the common denominator (> 0).
            num, _ = _affine_grid(diff, axes, sizes, extents, p)
            out = {
                "==": num == 0, "!=": num != 0, "<": num < 0,
                "<=": num <= 0, ">": num > 0, ">=": num >= 0,
            }[op]
            # Indices that cancel in lhs - rhs (i == i) still are free indices of the bracket.
            axes2 = _node_axes((lhs, rhs))
            return axes2, _arrange((axes, np.asarray(out)), axes2, extents)
        case Rel(name, idx):
            value = _lookup(name, env, p)
            if value.dtype != bool:
                raise ProgramError(f"{name!r} is used as a relation but is not one", p.loc)
            return _gather(name, value, idx, sizes, extents, p, False)
        case And(preds):
            parts = [_pred(q, env, sizes, extents) for q in preds]
            axes = _union(*(a for a, _ in parts))
            out = np.ones([extents[a] for a in axes], dtype=bool)
            for part in parts:
                out = out & _align(part, axes, extents)
            return axes, out
    raise ProgramError(f"not a predicate: {p!r}")
