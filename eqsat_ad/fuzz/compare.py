"""Comparing two results exactly in their non-finite pattern and closely in their values.

Where the reference is nan the other side must be nan, where it is +inf (-inf) the other side must
be +inf (-inf), and the finite entries must agree to a relative tolerance (with an absolute floor
that scales with the largest finite magnitude, for cancellation in sums).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["RTOL", "Mismatch", "mismatch", "short"]

RTOL = 1e-6


class Mismatch(NamedTuple):
    """A disagreement between two results."""

    kind: str
    """``"value"`` or ``"nan-pattern"``"""
    detail: str


def short(value: Any, limit: int = 300) -> str:
    """A one-line repr of a result (arrays with full precision, cut at ``limit``)."""
    if isinstance(value, tuple):
        text = "(" + ", ".join(short(v, limit) for v in value) + ")"
    elif isinstance(value, np.ndarray):
        text = np.array2string(value, precision=17, separator=", ", threshold=64)
        text = " ".join(text.split())
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_array(v: Any) -> np.ndarray | None:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return a


def mismatch(ref: Any, got: Any, rtol: float = RTOL) -> Mismatch | None:
    """``None`` when ``got`` agrees with ``ref``, else what differs."""
    if isinstance(ref, tuple) or isinstance(got, tuple):
        if not (isinstance(ref, tuple) and isinstance(got, tuple)) or len(ref) != len(got):
            return Mismatch("value", f"structure differs: {short(ref)} vs {short(got)}")
        for k, (r, g) in enumerate(zip(ref, got, strict=True)):
            m = mismatch(r, g, rtol)
            if m is not None:
                return Mismatch(m.kind, f"output {k}: {m.detail}")
        return None
    a, b = _as_array(ref), _as_array(got)
    if a is None or b is None:
        return Mismatch("value", f"not numeric: {short(ref)} vs {short(got)}")
    if a.shape != b.shape:
        return Mismatch("value", f"shape {a.shape} vs {b.shape}")
    for what, test in (("nan", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        ma, mb = test(a), test(b)
        if not np.array_equal(ma, mb):
            k = np.flatnonzero((ma != mb).ravel())[0]
            at = np.unravel_index(k, a.shape) if a.shape else ()
            return Mismatch("nan-pattern", f"at {tuple(int(i) for i in at)}: "
                            f"{a.ravel()[k]!r} vs {b.ravel()[k]!r} ({what} pattern differs)")
    fin = np.isfinite(a)
    if not fin.any():
        return None
    fa, fb = a[fin], b[fin]
    scale = max(1.0, float(np.max(np.abs(fa))), float(np.max(np.abs(fb))))
    with np.errstate(all="ignore"):
        bad = np.abs(fa - fb) > rtol * np.maximum(np.abs(fa), np.abs(fb)) + 1e-9 * scale
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        at = np.argwhere(fin)[k] if a.shape else ()
        return Mismatch("value", f"at {tuple(int(i) for i in at)}: {fa[k]!r} vs {fb[k]!r}")
    return None
