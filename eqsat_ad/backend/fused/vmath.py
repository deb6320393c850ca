"""Branch-free ``exp``, ``expm1``, ``tanh`` and ``sigmoid`` that LLVM vectorizes in a Numba loop.

A Numba loop calls the scalar libm ``exp``/``tanh`` once per element (our llvmlite has no SVML),
where NumPy's ufuncs run AVX-512 kernels: the loop was 3x (``exp``) to 15x (``tanh``) slower
(experiments/results/calibration_fused.md). These functions are straight-line arithmetic on
doubles and int64 exponent bits, special cases chosen by selects, so ``out[i] = vexp(x[i])``
vectorizes (packed FMA on zmm/ymm registers).

``exp(x)``: Cody–Waite reduction ``x = k·ln2 + r`` (``k`` rounded with the 1.5·2**52 shifter,
whose low mantissa bits are ``k``; ``ln2_hi`` has 21 trailing zero bits so ``k·ln2_hi`` and
``x - k·ln2_hi`` are exact; each step one FMA, and the rounding of ``r`` is kept as ``c``),
``|r| <= ln2/2``;
``exp(r + c) = 1 + r + (c·(1 + r) + r²·P(r))`` with ``P`` a degree-10 Chebyshev fit of
``(exp(r) - 1 - r) / r²`` (absolute error of ``r²·P`` below 2**-62, mpmath ``chebyfit``) and
``1 + r`` split exactly (Fast2Sum) so that only the last addition rounds at full weight.
``2**k`` is built from exponent bits by a bitcast, in two factors (``k = k1 + k2``) so that the
subnormal range rounds once and ``k = 1024`` does not overflow the factor. The argument is
clamped to [-746, 710] first (beyond, the result is 0 or inf by itself), so ``k`` stays small;
no integer conversion is used at all (``fptosi`` of a nan or a huge value is poison in LLVM).
The clamp is ``min(max(x, lo), hi)``, which lets a nan through: one ``vmaxpd`` and one
``vminpd`` (written as two selects that map nan to a bound, LLVM merged them into five mask
instructions, and exp ran 13% slower). A nan's bits give some ``k`` without integer overflow
(its exponent bits are all ones), and the result is replaced by ``x + x`` (its payload,
quieted, as np.exp returns it).

``expm1(x)``: the same reduction; ``2**k·(1 + r + q) - 1`` as ``m + w·r + w·q`` (times
``2**k`` for ``k > 0``) with ``m = 2**k - 1`` or ``1 - 2**-k`` exact and ``m + w·r`` split
exactly (:func:`_expm1_split`); ``k = 0`` gives ``r + q``: no cancellation near 0.

``tanh(|x|) = u / (u + 2)`` with ``u = expm1(2|x|)`` (|x| clamped to 20, where tanh is 1),
``u`` and ``u + 2`` each carried as a double and its rounding error into a quotient corrected
by its FMA remainder, so it rounds about once; the sign by ``copysign``. ``sigmoid`` as
:func:`eqsat_ad.ir.functions` defines it, from ``e = exp(-|x|)``, the same way.

Largest errors measured (tests/test_numba_vmath.py, about 10**6 arguments, against a
long-double reference, in ULPs of the correctly rounded result): exp 0.58 (0.75 in the
subnormal range: two roundings), expm1 0.85, tanh 0.74, sigmoid 0.76; NumPy's own: exp 0.70,
expm1 0.52, tanh 1.18, the NumPy backend's sigmoid about 1.5.

A generated module whose kernels call them imports these (:func:`.functions.helpers_for`) and
names the hash of this file in its source, so Numba's on-disk cache of a kernel (keyed by its
module's source) is never one compiled against an older version of these functions.
"""

from __future__ import annotations

import math

import numba as nb
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["vexp", "vexpm1", "vsigmoid", "vtanh"]


@intrinsic
def _fma(typingctx, a, b, c):  # type: ignore[no-untyped-def]
    """``a·b + c`` rounded once (llvm.fma: one vfmadd where the CPU has FMA)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.fma(*args)

    return sig, codegen


@intrinsic
def _bits(typingctx, x):  # type: ignore[no-untyped-def]
    """The int64 with the bits of the double ``x`` (a bitcast, no conversion)."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _double(typingctx, i):  # type: ignore[no-untyped-def]
    """The double with the bits of the int64 ``i`` (a bitcast, no conversion)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")  # 21 trailing zero bits: k·_LN2_HI is exact
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")  # ln 2 - _LN2_HI
_SHIFT = 6755399441055744.0  # 1.5·2**52: x + _SHIFT rounds x to an integer in the low bits
_SHIFT_BITS = 0x4338000000000000
_HI = 710.0  # exp(710) > DBL_MAX: the clamped argument still overflows to inf
_LO = -746.0  # exp(-746) < 2**-1075: the clamped argument still underflows to 0
# (exp(r) - 1 - r) / r² on |r| <= 0.34658, degree 10 (fit in the module docstring)
_P = tuple(float.fromhex(h) for h in (
    "0x1.1f72fdb6c6442p-29", "0x1.af4ddfbb33a59p-26", "0x1.27e4db6718a69p-22",
    "0x1.71de02364614ap-19", "0x1.a01a01a6d7b19p-16", "0x1.a01a01abe683ap-13",
    "0x1.6c16c16c162d6p-10", "0x1.11111111100dep-7", "0x1.5555555555556p-5",
    "0x1.5555555555557p-3", "0x1.0000000000000p-1"))
_P10, _P9, _P8, _P7, _P6, _P5, _P4, _P3, _P2, _P1, _P0 = _P

_JIT = {"cache": True, "error_model": "numpy"}
# The four functions are inlined into their callers by Numba (LLVM does not inline tanh's whole
# body into a loop, which then does not vectorize); the pieces they call are left to LLVM's
# inliner, which takes them: Numba's own inlining is slow (a loop with one exp compiled in
# 1.4 s with every piece inlined by Numba, 0.8 s so).
_INLINE = {**_JIT, "inline": "always"}


@nb.njit(**_JIT)
def _reduce(x):  # type: ignore[no-untyped-def]
    """``(k, r, q)`` with ``x = k·ln2 + r + c`` (``c`` the rounding of ``r``) and
    ``q = c·(1 + r) + r²·P(r)``, so ``exp(x) = 2**k·(1 + r + q)``; ``x`` finite in [-746, 710]."""
    # (FMAs: three operations fewer than separate products and sums, 7% faster on Zen 4, and
    # c no longer carries the rounding of kf·ln2_lo)
    kd = _fma(x, _LOG2E, _SHIFT)
    k = _bits(kd) - _SHIFT_BITS
    kf = kd - _SHIFT
    hi = _fma(kf, -_LN2_HI, x)  # exact (module docstring)
    r = _fma(kf, -_LN2_LO, hi)
    # (hi - r is exact by Sterbenz's lemma unless hi is tiny: then so is r, and an error in c
    # lies far below the result's ulp)
    c = _fma(kf, -_LN2_LO, hi - r)
    p = _fma(r, _P10, _P9)
    p = _fma(r, p, _P8)
    p = _fma(r, p, _P7)
    p = _fma(r, p, _P6)
    p = _fma(r, p, _P5)
    p = _fma(r, p, _P4)
    p = _fma(r, p, _P3)
    p = _fma(r, p, _P2)
    p = _fma(r, p, _P1)
    p = _fma(r, p, _P0)
    q = _fma(r * r, p, _fma(c, r, c))
    return k, r, q


@nb.njit(**_JIT)
def _pow2(k):  # type: ignore[no-untyped-def]
    """2**k for -1022 <= k <= 1023, from its exponent bits."""
    return _double((k + 1023) << 52)


@nb.njit(**_JIT)
def _clamp(x):  # type: ignore[no-untyped-def]
    """``x`` in [_LO, _HI]; a nan stays nan (the caller returns ``x + x`` for it). Python's
    ``max``/``min`` compare so that they compile to one vmaxpd and one vminpd."""
    return min(max(x, _LO), _HI)


@nb.njit(**_JIT)
def _exp_split(x):  # type: ignore[no-untyped-def]
    """``(y, y_err, k)`` with ``exp(x) = 2**k·(y + y_err)``, ``y`` in [0.7, 1.42] rounded once
    (``1 + r`` split exactly by Fast2Sum, so ``r`` and ``q`` are added at full precision);
    ``x`` finite in [-746, 710]."""
    k, r, q = _reduce(x)
    t = 1.0 + r
    tail = ((1.0 - t) + r) + q
    y = t + tail
    return y, tail - (y - t), k


@nb.njit(**_INLINE)
def vexp(x):  # type: ignore[no-untyped-def]
    """exp(x) for a float64 ``x`` (within 0.6 ULP; specials as np.exp). ``2**k`` in two
    factors: the product with the first is exact, the second rounds once (subnormal results,
    and ``k = 1024`` near the overflow)."""
    y, _, k = _exp_split(_clamp(x))
    k1 = k >> 1
    e = (y * _pow2(k1)) * _pow2(k - k1)
    return e if x == x else x + x


@nb.njit(**_JIT)
def _expm1_split(x):  # type: ignore[no-untyped-def]
    """``(a, b, k)`` with ``expm1(x) = 2**k·(a + b)`` for ``k > 0`` (``2**k``: ``k <= 0``
    is taken as 0), ``|b|`` below about ``|a|/2``; ``x`` finite in [-746, 710].

    ``2**k·(1 + r + q) - 1 = scale·(m + w·r + w·q)``: for ``k <= 0``, ``m = 2**k - 1`` (exact
    from k = -53; below, expm1 is -1 within 2**-54), ``w = 2**k``, scale 1; for ``k > 0``,
    ``m = 1 - 2**-k`` (exact up to k = 53; from k = 54, ``m = 1`` and ``-2**-k`` joins the
    tail), ``w = 1``, scale ``2**k``. ``m + w·r`` is split exactly (Fast2Sum: ``|m| >= 1/2 >=
    |w·r|``, or ``m = 0``), so only the caller's last addition rounds at full weight; ``k = 0``
    gives ``r + q``: no cancellation near 0."""
    k, r, q = _reduce(x)
    neg = k <= 0
    kn = k if k > -60 else -60
    kp = k if k < 60 else 60
    w = _pow2(kn) if neg else 1.0
    low = _pow2(-kp)
    m = w - 1.0 if neg else (1.0 - low if k < 54 else 1.0)
    low = low if k >= 54 else 0.0
    wr = w * r
    a = m + wr
    return a, ((m - a) + wr) + (w * q - low), (k if k > 0 else 0)


@nb.njit(**_JIT)
def _expm1_split_nonneg(x):  # type: ignore[no-untyped-def]
    """:func:`_expm1_split` for ``x`` in [0, 40] (tanh's argument): ``k`` in [0, 58], so
    ``w = 1`` and ``m = 1 - 2**-k``, whose rounding (``k >= 54``) is carried exactly as
    ``(1 - m) - 2**-k``; no selects (tanh ran 11-20% faster than through the general split)."""
    k, r, q = _reduce(x)
    low = _pow2(-k)
    m = 1.0 - low  # exact for k <= 53 (0 for k = 0); 1 from k = 54
    a = m + r  # Fast2Sum: m >= 1/2 >= |r|, or m = 0
    return a, ((m - a) + r) + (q + ((1.0 - m) - low)), k


@nb.njit(**_INLINE)
def vexpm1(x):  # type: ignore[no-untyped-def]
    """expm1(x) for a float64 ``x`` (specials as np.expm1; ``2**k`` in two factors: k = 1024
    near the overflow; beyond the clamp, -1 and inf come out by themselves)."""
    a, b, k = _expm1_split(_clamp(x))
    k1 = k >> 1
    e = ((a + b) * _pow2(k1)) * _pow2(k - k1)
    e = e if x != 0.0 else x  # expm1(-0) = -0 (0 + -0 would be +0)
    return e if x == x else x + x


@nb.njit(**_JIT)
def _quotient(n, n_err, d, d_err):  # type: ignore[no-untyped-def]
    """``(n + n_err) / (d + d_err)`` rounded about once (``|n_err| <= ulp(n)``, likewise
    ``d_err``): the first quotient's remainder ``n - q·d`` is exact by an FMA, so the correction
    leaves only the last rounding. One division (a reciprocal: a vector division is the
    slowest instruction here)."""
    inv = 1.0 / d
    q = n * inv
    return q + ((_fma(-q, d, n) + n_err) - q * d_err) * inv


@nb.njit(**_INLINE)
def vtanh(x):  # type: ignore[no-untyped-def]
    """tanh(x) for a float64 ``x`` (specials as np.tanh): ``u / (u + 2)`` with ``u = expm1(2|x|)``
    (|x| clamped to 20, where tanh is 1 in double), ``u`` and ``u + 2`` each kept as a double and
    its rounding error, so that the quotient rounds about once."""
    ax = abs(x)
    a, b, k = _expm1_split_nonneg(2.0 * min(ax, 20.0))  # k <= 58: 2**k one factor
    u = a + b
    scale = _pow2(k)
    u_err = (b - (u - a)) * scale  # Fast2Sum: |a| >= |b|
    u = u * scale
    d = u + 2.0
    z = d - u
    d_err = ((u - (d - z)) + (2.0 - z)) + u_err  # TwoSum: d + d_err = u + 2
    t = _quotient(u, u_err, d, d_err)
    return math.copysign(t, x) if x == x else math.nan  # np.tanh: the default nan, any input


@nb.njit(**_INLINE)
def vsigmoid(x):  # type: ignore[no-untyped-def]
    """1 / (1 + exp(-x)) for a float64 ``x``, as eqsat_ad.ir.functions writes it: from
    ``e = exp(-|x|)`` (no overflow), ``1 / (1 + e)`` for x >= 0 and ``e / (1 + e)`` below;
    ``e`` and ``1 + e`` each kept as a double and its rounding error (``e <= 1``: Fast2Sum),
    so that the quotient rounds about once."""
    y, y_err, k = _exp_split(_clamp(-abs(x)))
    s1 = _pow2(k >> 1)
    s2 = _pow2(k - (k >> 1))
    e = (y * s1) * s2
    e_err = (y_err * s1) * s2
    d = 1.0 + e
    n = 1.0 if x >= 0 else e
    t = _quotient(n, 0.0 if x >= 0 else e_err, d, ((1.0 - d) + e) + e_err)
    return t if x == x else x + x
