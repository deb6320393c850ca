"""The guard's argument check, done by the loop nests (backend/guard.py: a fast result is kept
when the arguments lie in a box where both programs are proven finite).

The guard scans each argument the programs read (one pass for a magnitude bound). A loop
nest that reads an argument over exactly its points counts, row by row while the row is in
cache, the entries inside the latest proven box (:func:`bounds`); when every entry was (and
the other arguments, small, are checked here: :func:`call_box`), the proof holds for the call
(the bounds are monotone in the box) and the guard's scans are skipped. Otherwise the guard
decides as before, so a call keeps or reruns exactly as the guard alone would decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.program import Program
from ..guard import Fallback, proven_box

__all__ = ["SMALL", "bounds", "call_box"]

SMALL = 1 << 14
"""Arguments up to this size that no loop nest checks are checked against the box by NumPy
(a larger one would cost the pass the check saves: then the guard scans)."""


def call_box(fallback: Fallback | None, prog: Program, checked: Sequence[str],
             arrays: Sequence[Any], sizes: Mapping[str, int], dt: np.dtype
             ) -> dict[str, tuple[float, float]] | None:
    """A box proven finite for both programs for the loops to check the arguments named in
    ``checked`` against, when every other argument the programs read is small and inside it
    (checked here) and all are arrays of the float type ``dt`` (a checked identity copy in
    another type would be rounded); else None (the guard's scans decide after the run)."""
    if fallback is None or fallback.read is None or not checked:
        return None
    box = proven_box(fallback, sizes)
    if box is None:
        return None
    for a, p in zip(arrays, prog.params, strict=True):
        if p.kind != "tensor" or p.name not in fallback.read:
            continue
        if not isinstance(a, np.ndarray) or a.dtype != dt:
            return None
        if p.name in checked or a.size == 0:
            continue
        lo, hi = box[p.name]
        if a.size > SMALL or not (a.min() >= lo and a.max() <= hi):  # (nan: False)
            return None
    return box


def bounds(box: Mapping[str, tuple[float, float]] | None, names: Sequence[str], dt: np.dtype
           ) -> np.ndarray:
    """``box``'s bounds of ``names`` as (lo, hi) pairs in float type ``dt``, rounded inward
    (an entry inside them lies inside the box); without a box, no entry is inside."""
    out = np.empty(2 * len(names), dtype=dt)
    for k, n in enumerate(names):
        lo, hi = box[n] if box is not None else (np.inf, -np.inf)
        lo_t, hi_t = dt.type(lo), dt.type(hi)
        if lo_t < lo:
            lo_t = np.nextafter(lo_t, dt.type(np.inf))
        if hi_t > hi:
            hi_t = np.nextafter(hi_t, dt.type(-np.inf))
        out[2 * k], out[2 * k + 1] = lo_t, hi_t
    return out
