"""Optimized code as a fast path, guarded by the unoptimized program (docs/semantics.md).

The optimizer inlines statement reads: ``y[a]`` becomes ``[0 <= a < n] * body(a)``. A stored
tensor holds IEEE numbers (a strong zero is stored as 0.0, and ``0.0 * inf`` is nan), while the
inlined bracket stays a strong zero, so the rewrite is *finite-only*: it holds when no value the
program meets is inf or nan. Optimized code therefore runs as a fast path whose result is kept
only when every argument, every value it computed and its result are finite; otherwise the call
reruns the program as it was before optimization, compiled strictly (on first need, then
cached), which agrees with the reference interpreter on every value. Finite calls pay one scan
of the arguments and one of the result; a non-finite call pays the unoptimized program.

Public: :func:`with_fallback`, :class:`Fallback`.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.bounds import program_is_finite
from ..ir.program import Program
from .runtime import finite_result
from .structured import Outer, Sparse

__all__ = ["Fallback", "keep_structure", "proven_finite", "trusted", "with_fallback"]


class Fallback:
    """The unoptimized program ``naive``, compiled on first need (as with optimize=False)."""

    def __init__(self, naive: Program, structured: bool = False) -> None:
        self.naive = naive
        self.structured = structured
        self._compiled: Any = None
        self._lock = threading.Lock()
        self.calls = 0
        """how many calls fell back (for tests and reports)"""
        self.proofs: dict[tuple, list[dict[str, tuple[float, float]]]] = {}
        """per size binding: argument ranges on which the program is proven finite"""

    def compiled(self) -> Any:
        if self._compiled is None:
            with self._lock:
                if self._compiled is None:
                    from ..ir.outline import outline
                    from .fold import compile_any

                    self._compiled = compile_any(outline(self.naive), self.structured)
        return self._compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        # (as optimize=False runs it: its own fast code, and its strict code where that met a
        # non-finite value; both agree with the interpreter)
        return self.compiled()(*args, **kwargs)


def with_fallback(compiled: Any, naive: Program, structured: bool = False) -> Any:
    """``compiled`` (optimized code: a NumPy, fold or Numba program) as a fast path that reruns
    ``naive`` strictly when a call meets a non-finite value. A copy: the cached compiled
    program, which other callers may share, is left as it is."""
    if naive == compiled.program or naive.param_names != compiled.program.param_names:
        return compiled  # nothing was rewritten (or no common signature: nothing to rerun)
    guarded = copy.copy(compiled)
    guarded.fallback = Fallback(naive, structured)
    if hasattr(guarded, "runner"):  # a Numba program: its NumPy twin (binding, NumPy-only runs)
        inner = copy.copy(guarded.numpy)
        inner.fallback = guarded.fallback
        guarded.numpy = inner
        guarded.runner = inner if guarded.numpy_only else guarded
    return guarded


def _ranges(prog: Program, arrays: Sequence[Any]) -> dict[str, tuple[float, float]] | None:
    """Each tensor argument's smallest and largest entry (one scan each); None if one is not
    an array."""
    out: dict[str, tuple[float, float]] = {}
    for a, p in zip(arrays, prog.params, strict=True):
        if p.kind != "tensor":
            continue
        if not isinstance(a, np.ndarray):
            return None
        out[p.name] = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    return out


def _widened(lo: float, hi: float) -> tuple[float, float]:
    """A wider range of the same sign pattern, so that later calls with similar arguments fall
    inside a range already proven (the bounds are monotone: what holds on a range holds on
    every range inside it)."""
    if lo > 0:
        return lo / 2, 2 * hi + 1
    if hi < 0:
        return 2 * lo - 1, hi / 2
    m = 2 * max(-lo, hi) + 1
    return (-m if lo < 0 else 0.0), (m if hi > 0 else 0.0)


def proven_finite(fallback: Fallback, prog: Program, arrays: Sequence[Any],
                  sizes: Mapping[str, int]) -> bool:
    """Whether every value the unoptimized program ``fallback.naive`` computes is finite for
    these arguments (``arrays`` in ``prog``'s parameter order): the arguments' ranges (inf or
    nan fails) inside a range for which the interval bounds
    (:func:`~eqsat_ad.ir.bounds.program_is_finite`) proved it at these sizes. A proof is
    tried for widened ranges first, so similar calls reuse it (a few per size binding)."""
    ranges = _ranges(prog, arrays)
    if ranges is None or not all(math.isfinite(lo) and math.isfinite(hi)
                                 for lo, hi in ranges.values()):
        return False
    key = tuple(sorted(sizes.items()))
    proofs = fallback.proofs.setdefault(key, [])
    for box in proofs:
        if all(box[n][0] <= lo and hi <= box[n][1] for n, (lo, hi) in ranges.items()):
            return True
    for box in ({n: _widened(lo, hi) for n, (lo, hi) in ranges.items()}, ranges):
        if program_is_finite(fallback.naive, box, sizes):
            if len(proofs) >= 8:
                proofs.pop(0)
            proofs.append(box)
            return True
    return False


def trusted(fallback: Fallback, prog: Program, arrays: Sequence[Any],
            sizes: Mapping[str, int], result: Any) -> bool:
    """Whether a fast run that cannot watch its own intermediate values (compiled loops) may be
    kept: the unoptimized program is proven finite for these arguments and the result is
    finite."""
    return proven_finite(fallback, prog, arrays, sizes) and finite_result(result)


def keep_structure(got: Any, want: Any) -> Any:
    """The unoptimized program's result ``want`` (dense arrays), with each output that the
    optimized strict code returned structured (``got``: a diagonal, points, an outer product)
    kept in that form where it holds exactly the same values (nan and signs of zeros alike)."""
    if isinstance(want, tuple):
        return tuple(keep_structure(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(got, Sparse | Outer):
        dense, ref = np.asarray(got), np.asarray(want)
        if dense.shape == ref.shape and np.array_equal(dense, ref, equal_nan=True) and \
                np.array_equal(np.signbit(dense), np.signbit(ref)):
            return got
    return want
