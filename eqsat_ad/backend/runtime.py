"""Small helpers the generated NumPy code calls where plain NumPy syntax is not enough.

Each helper implements one piece of the index language's semantics (docs/semantics.md):
zero padding of out-of-range and fractional reads, counts of empty ranges, and scatter writes
of a masked set of points. The code generator uses plain slicing and ``*`` whenever it can prove
that they mean the same thing, so these helpers only appear where that proof is out of reach.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence

import numpy as np

# Structured outputs the generated code builds (ea.grad(..., structured=True)).
from .structured import Diagonal, Outer, Sparse, SparseBuilder  # noqa: F401

Spec = int | tuple[int, int, int] | tuple[int, int, int, int]
"""A dimension of a window: a point index, ``(start, step, count)`` or ``(start, step, count,
denominator)`` for an axis."""


def float_type(*arrays: object) -> type[np.floating]:
    """The float scalar type the generated code computes in (float32 inputs stay float32)."""
    common = None
    for a in arrays:
        d = getattr(a, "dtype", None)
        if d is None or d.kind == "b":  # Python numbers are weak; relations are not values
            continue
        common = d if common is None or common == d else np.result_type(common, d)
    return common.type if common is not None and common.kind == "f" else np.float64


def fresh(a: np.ndarray, dtype: type) -> np.ndarray:
    """``a`` as an array of its own (a view is copied; a new array is kept as it is)."""
    if a.base is None and a.dtype == dtype and a.flags.writeable:
        return a
    return np.array(a, dtype=dtype)


def smul(a: object, b: object) -> object:
    """``a * b`` where a factor 0 means *no term* (the count of an empty range: a strong zero),
    so ``0 * inf == 0 * nan == 0``.

    (No ``np.errstate`` here: it costs more than a small product, and the generated code runs
    under ``np.errstate(all="ignore")`` in :class:`~eqsat_ad.backend.numpy.CompiledProgram`.)
    """
    r = np.multiply(a, b)
    if np.isnan(r).any():
        r = np.where((np.asarray(a) == 0) | (np.asarray(b) == 0), 0, r)
    return r + 0.0  # a sum starts at +0.0: copies of -0.0 sum to +0.0, as in np.sum


def _t_range(start: int, step: int, count: int, n: int) -> tuple[int, int]:
    """Positions t in [0, count) with 0 <= start + step*t < n (a contiguous range)."""
    if step > 0:
        t0 = -(start // step) if start < 0 else 0  # ceil(-start / step)
        t1 = -((start - n) // step)  # ceil((n - start) / step)
    else:
        s = -step
        t1 = start // s + 1 if start >= 0 else 0
        t0 = (start - n) // s + 1 if start >= n else 0
    return max(t0, 0), min(t1, count)


def window(x: np.ndarray, specs: Sequence[Spec]) -> np.ndarray:
    """``x`` read at a point or an arithmetic progression per dimension, zero padded.

    A spec is a point index, ``(start, step, count)`` for an axis reading ``start + step*t``
    (t = 0 .. count-1), or ``(start, step, count, q)`` reading ``(start + step*t) / q``, which is
    fractional (so 0) except on a sub-progression of t (strides inverted: ``w[k/2]``). The
    result has one axis per tuple spec, in order; reads outside ``x`` give 0 (False for a
    relation). A window entirely inside ``x`` (no fractions) is returned as a view.
    """
    shape = tuple(max(s[2], 0) for s in specs if isinstance(s, tuple))
    src: list[object] = []
    dst: list[slice] = []
    for n, s in zip(x.shape, specs, strict=True):
        if not isinstance(s, tuple):
            if not 0 <= s < n:
                return np.zeros(shape, dtype=x.dtype)
            src.append(s)
            continue
        start, step, count = s[0], s[1], max(s[2], 0)
        # t = first + stride*k reads the integer start + step*k (k = 0 .. kcount-1).
        first, stride = 0, 1
        if len(s) == 4 and s[3] != 1:
            q = s[3]
            stride = q // math.gcd(step, q)
            hits = [t for t in range(min(stride, count)) if (start + step * t) % q == 0]
            if not hits:
                return np.zeros(shape, dtype=x.dtype)
            first = hits[0]
            start, step = (start + step * first) // q, step * stride // q
            count = len(range(first, count, stride))
        k0, k1 = _t_range(start, step, count, n)
        if k1 <= k0:
            return np.zeros(shape, dtype=x.dtype)
        lo = start + step * k0
        stop = start + step * (k1 - 1) + (1 if step > 0 else -1)
        src.append(slice(lo, stop if stop >= 0 else None, step))
        dst.append(slice(first + stride * k0, first + stride * (k1 - 1) + 1, stride))
    part = x[tuple(src)]
    if part.shape == shape:
        return part
    out = np.zeros(shape, dtype=x.dtype)
    out[tuple(dst)] = part
    return out


def gather(x: np.ndarray, nums: Sequence[object], dens: Sequence[int]) -> np.ndarray:
    """``x[nums[0] / dens[0], ...]`` elementwise over broadcast index arrays, zero padded.

    A fractional or out-of-range index reads 0 (False for a relation).
    """
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=np.int64) for a in nums])
    valid = np.ones(arrays[0].shape if arrays else (), dtype=bool)
    idx: list[np.ndarray] = []
    for n, a, q in zip(x.shape, arrays, dens, strict=True):
        if q != 1:
            valid &= a % q == 0
            a = a // q
        valid &= (a >= 0) & (a < n)
        idx.append(np.clip(a, 0, max(n - 1, 0)))
    if x.size == 0:
        return np.zeros(valid.shape, dtype=x.dtype)
    return np.where(valid, x[tuple(idx)], np.zeros((), dtype=x.dtype))


def scatter_add(
    out: np.ndarray, idx: Sequence[object], value: object, mask: object, sign: int = 1,
    assign: bool = False,
) -> None:
    """``out[idx] += sign * value`` at the points where ``mask`` holds (all points distinct);
    ``assign``: ``out[idx] = sign * value`` (a statement's only term, written into zeros:
    ``0.0 + t`` would be +0.0 where ``t`` is -0.0)."""
    parts = np.broadcast_arrays(*[np.asarray(a) for a in idx], np.asarray(value), np.asarray(mask))
    m = parts[-1].astype(bool)
    coords = tuple(np.asarray(p[m], dtype=np.int64) for p in parts[:-2])
    vals = parts[-2][m]
    if assign:
        out[coords] = -vals if sign < 0 else vals
    elif sign < 0:
        out[coords] -= vals
    else:
        out[coords] += vals


def einsum_sz(spec: str, path: list[object] | bool, *operands: np.ndarray) -> np.ndarray:
    """``np.einsum`` as the plain sum of IEEE products (no reassociation, no BLAS), for operands
    that may hold inf or nan: ``0 * inf`` in a term makes that term nan, as in the interpreter.
    A broadcast operand (a zero stride) is copied first: einsum's kernels take it out of the
    sum as one number (``inf * (1 - 1)``: nan as terms, inf as ``inf * Σ``)."""
    operands = tuple(np.ascontiguousarray(a) if isinstance(a, np.ndarray) and a.size
                     and 0 in a.strides else a for a in operands)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.einsum(spec, *operands, optimize=False)


def finite(*arrays: np.ndarray) -> bool:
    """Whether every entry of ``arrays`` is finite (then any order of the products is exact)."""
    return all(_all_finite(a) for a in arrays)


_SMALL_CHECK = 4096
"""Up to this many entries a boolean mask is the cheapest check (one ufunc call, ~1 µs)."""


def _all_finite(a: object) -> bool:
    """Whether every entry of ``a`` is finite. A large array is checked without a boolean
    array of its size: a finite sum proves it in one pass (an inf or nan entry makes the sum
    inf or nan); only a sum that overflowed is looked at again, by the least and greatest
    entries (NumPy's minimum and maximum propagate nan)."""
    a = np.asarray(a)
    if a.size <= _SMALL_CHECK or a.dtype.kind != "f":
        return bool(np.isfinite(a).all())
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf, an overflowing sum
        if math.isfinite(np.add.reduce(a, axis=None)):
            return True
    return bool(np.isfinite(a.min()) and np.isfinite(a.max()))


def finite_result(result: object) -> bool:
    """Whether a generated function's result (an array, a number, a structured output or a
    tuple of them) holds only finite values."""
    if isinstance(result, tuple):
        return all(finite_result(r) for r in result)
    if isinstance(result, Outer):
        return finite(*(np.asarray(f) for f in result.factors))
    if isinstance(result, Sparse):
        return finite(np.asarray(result.values))
    a = np.asarray(result)
    return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())


class NonFinite(ArithmeticError):
    """A checked result holds inf/nan: the fast code's assumption that its inputs are finite
    may not hold, so the caller reruns the strict (strong-zero everywhere) code."""


def checked(r: np.ndarray) -> np.ndarray:
    """``r`` (a product of parameters) if every entry is finite; raises :class:`NonFinite`."""
    if not _all_finite(r):
        raise NonFinite("a checked product holds inf or nan")
    return r


def scan_sum(v: np.ndarray, axis: int, lo: object, hi: object) -> np.ndarray:
    """``Σ_{lo <= t < hi} v[.., t, ..]`` along ``axis`` for index arrays (or ints) ``lo`` and
    ``hi`` (``None``: from the start / to the end), by cumulative sums: O(n) for all of them.

    The axis is replaced by the axes of ``lo``/``hi``. A prefix (``lo is None``) reads one
    running sum and a suffix (``hi is None``) one reversed running sum, so both are exact
    whatever the values; a window (both given) is a difference of two running sums, which is
    only exact for finite values (the generated code checks its operand and reruns the masked
    sum otherwise).
    """
    n = v.shape[axis]
    pad = [(0, 0)] * v.ndim
    if lo is None:
        pad[axis] = (1, 0)
        run = np.pad(np.cumsum(v, axis=axis), pad)  # run[t] = Σ_{s < t} v[s]
        return np.take(run, np.clip(hi, 0, n), axis=axis)
    if hi is None:
        pad[axis] = (0, 1)
        rev = np.flip(np.cumsum(np.flip(v, axis=axis), axis=axis), axis=axis)
        return np.take(np.pad(rev, pad), np.clip(lo, 0, n), axis=axis)  # Σ_{s >= t} v[s]
    pad[axis] = (1, 0)
    run = np.pad(np.cumsum(v, axis=axis), pad)
    lo_c = np.clip(lo, 0, n)
    hi_c = np.clip(np.maximum(hi, lo), 0, n)
    return np.take(run, hi_c, axis=axis) - np.take(run, lo_c, axis=axis)


def scan_shift(v: np.ndarray, axis: int, lo: int | None, hi: int | None) -> np.ndarray:
    """``Σ_{i + lo <= t < i + hi} v[.., t, ..]`` along ``axis`` for every ``i`` (constant
    offsets; ``None``: from the start / to the end): :func:`scan_sum` for bounds that are shifts
    of the index, read through slices instead of index arrays. A suffix is a reversed running
    sum and a prefix a running sum (exact whatever the values); a window both, a difference,
    exact for finite values only: it raises :class:`NonFinite` when a running sum is not finite
    (an inf or nan anywhere in a column leaves its last running sum inf or nan, so that one row
    is the whole check; an overflow reruns the strict code too, which is merely slower)."""
    x = np.moveaxis(np.asarray(v), axis, 0)
    n = x.shape[0]
    if hi is None:  # Σ_{t >= i + lo}
        rev = np.flip(np.cumsum(np.flip(x, axis=0), axis=0), axis=0)
        out = _shifted(rev, 0 if lo is None else lo, n, reverse=True)
        return np.moveaxis(out, 0, axis)
    c = np.cumsum(x, axis=0)
    out = _shifted(c, hi, n)
    if lo is not None:
        if n and not np.isfinite(c[-1]).all():
            raise NonFinite("a window's running sums hold inf or nan")
        if hi <= lo:
            out[...] = 0
        else:
            out -= _shifted(c, lo, n)
    return np.moveaxis(out, 0, axis)


def _shifted(c: np.ndarray, off: int, n: int, reverse: bool = False) -> np.ndarray:
    """``Σ_{t < i + off} x[t]`` (``reverse``: ``Σ_{t >= i + off} x[t]``) for ``i`` in
    ``0 .. n-1``, read from the running sums ``c`` (``c[t] = Σ_{s <= t} x[s]``; reversed:
    ``Σ_{s >= t} x[s]``) through one slice, the rows past either end filled."""
    out = np.empty((n,) + c.shape[1:], c.dtype)
    a = min(max(-off, 0), n)  # below a: i + off < 0
    b = min(max(n - off, 0), n)  # from b on: i + off >= n
    if reverse:  # rows i + off in [0, n): c[i + off]; before: everything; past the end: 0
        out[:a] = c[0] if n else 0
        out[a:b] = c[a + off:b + off]
        out[b:] = 0
        return out
    # rows i + off - 1 in [0, n): c[i + off - 1]; i + off <= 0: 0; i + off >= n: c[n - 1]
    a1 = min(max(1 - off, 0), n)
    out[:a1] = 0
    out[a1:b] = c[a1 + off - 1:b + off - 1]
    out[b:] = c[n - 1] if n else 0
    return out


def suffix_sum(v: np.ndarray, axis: int) -> np.ndarray:
    """``Σ_{s >= t} v[s]`` for every ``t`` along ``axis`` (a reversed running sum)."""
    return np.flip(np.cumsum(np.flip(v, axis=axis), axis=axis), axis=axis)


def _fits(dead: np.ndarray, operands: tuple[object, ...]) -> bool:
    """``dead`` can hold the elementwise result of ``operands``: its own memory (not a view),
    writeable, of the result's dtype and shape."""
    return (dead.base is None and dead.flags.writeable
            and np.result_type(*operands) == dead.dtype
            and dead.shape == np.broadcast_shapes(*(np.shape(x) for x in operands)))


def into(dead: object, ufunc: Callable[..., np.ndarray], *operands: object) -> object:
    """``ufunc(*operands)`` written into ``dead`` (an operand, or an array an operand was
    computed into: an array the caller reads no more) when that gives the very same array:
    nothing else refers to ``dead`` (not a view, not an argument, not another name), and it has
    the result's shape and dtype; a new array otherwise. (An elementwise ufunc reads each
    element before it writes it: exact.)"""
    sole = _SOLE - 1 + sum(1 for x in operands if x is dead)
    # (the reference count is read here: passing ``dead`` to a helper would add one)
    if type(dead) is np.ndarray and sys.getrefcount(dead) <= sole and _fits(dead, operands):
        return ufunc(*operands, out=dead)
    return ufunc(*operands)


def reuse(ufunc: Callable[..., np.ndarray], *operands: object, dead: object) -> object:
    """``ufunc(*operands)`` written into ``dead`` under :func:`into`'s checks. ``dead`` comes
    last, so that it is read after the operands: a nested ``reuse(f, reuse(g, a, dead=a),
    dead=a)`` finds ``a`` held by nothing but its variable while the inner call runs."""
    sole = _SOLE_LAST - 1 + sum(1 for x in operands if x is dead)
    # (the reference count is read here: passing ``dead`` to a helper would add one)
    if type(dead) is np.ndarray and sys.getrefcount(dead) <= sole and _fits(dead, operands):
        return ufunc(*operands, out=dead)
    return ufunc(*operands)


def _sole_references_last() -> int:
    """:func:`_sole_references` for :func:`reuse`."""

    def probe(ufunc: object, *operands: object, dead: object) -> int:
        return sys.getrefcount(dead)

    def caller() -> int:
        t, u = np.empty(2), np.empty(2)
        return probe(None, u, t, dead=t)

    return caller()


def _sole_references() -> int:
    """References to an array held by one local variable of the caller of :func:`into` and
    passed to it as ``dead`` and one operand (as the generated code does), as :func:`into`
    counts them (the interpreter decides how many)."""

    def probe(dead: object, ufunc: object, *operands: object) -> int:
        return sys.getrefcount(dead)

    def caller() -> int:
        t, u = np.empty(2), np.empty(2)
        return probe(t, None, u, t)

    return caller()


_SOLE = _sole_references()
_SOLE_LAST = _sole_references_last()


class Overridden:
    """This module as generated code reads it (its ``_rt``) with some names answered
    otherwise (``Overridden(float_type=...)``); every other name is this module's, looked up
    at each use (so a function replaced here later is the one called)."""

    def __init__(self, **names: object) -> None:
        self.__dict__.update(names)

    def __getattr__(self, name: str) -> object:
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(name) from None
