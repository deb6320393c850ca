"""Optimized code as a fast path, guarded by the unoptimized program (docs/semantics.md).

The optimizer inlines statement reads: ``y[a]`` becomes ``[0 <= a < n] * body(a)``. A stored
tensor holds IEEE numbers (a strong zero is stored as 0.0, and ``0.0 * inf`` is nan), while the
inlined bracket stays a strong zero, so the rewrite is *finite-only*: it holds when no value the
program meets is inf or nan. Optimized code therefore runs as a fast path whose result is kept
only when every argument, every value it computed and its result are finite; otherwise the call
reruns the program as it was before optimization, compiled strictly (on first need, then
cached), which agrees with the reference interpreter on every value. Finite calls pay at most
one pass over each argument the programs read (and over the result where the optimized program
is not proven finite itself); code the rewrites left unchanged is not guarded, nor are programs
that only move data (:mod:`eqsat_ad.ir.selection`); a non-finite call pays the unoptimized
program.

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
from ..ir.selection import needs_guard
from .runtime import finite_result
from .structured import Outer, Sparse

__all__ = [
    "PROVEN_BOTH", "PROVEN_NAIVE", "Fallback", "keep_structure", "proven_box", "proven_finite",
    "read_parameters", "trusted", "with_fallback",
]


class Fallback:
    """The unoptimized program ``naive``, compiled on first need (as with optimize=False)."""

    def __init__(self, naive: Program, structured: bool = False) -> None:
        self.naive = naive
        self.structured = structured
        self._compiled: Any = None
        self._lock = threading.Lock()
        self.calls = 0
        """how many calls fell back (for tests and reports)"""
        self.proofs: dict[tuple, list[tuple[dict[str, tuple[float, float]], int]]] = {}
        """per size binding: argument ranges proven, with the level proven (proven_finite)"""
        self.exact: frozenset[str] = frozenset()
        """the arguments whose magnitude bound once proved too little: later calls scan their
        exact ranges straight away (the others keep the one-pass magnitude bound)"""
        self.read: frozenset[str] | None = None
        """the parameters the optimized or the unoptimized program reads (on first call)"""
        self.same_code = True
        """False where the cost report found the two programs' code different at its sizes:
        then no call signature compares the code again (backend/numpy.py, ``_plain``)"""

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
    if not needs_guard(naive, compiled.program):
        return compiled  # both only move data: they agree on inf and nan (ir/selection.py)
    guarded = _own_copy(compiled)
    guarded.fallback = Fallback(naive, structured)
    if hasattr(guarded, "runner"):  # a Numba program: its NumPy twin (binding, NumPy-only runs)
        inner = _own_copy(guarded.numpy)
        inner.fallback = guarded.fallback
        guarded.numpy = inner
        guarded.runner = inner if guarded.numpy_only else guarded
    return guarded


def _own_copy(compiled: Any) -> Any:
    """A copy of ``compiled`` whose per-call caches are its own (they remember what a call
    signature runs, which depends on the fallback)."""
    own = getattr(compiled, "with_own_fallback_state", None)
    return own() if own is not None else copy.copy(compiled)


def read_parameters(prog: Program) -> frozenset[str]:
    """The parameters a program reads (its statements and outputs)."""
    return prog.names_read() & frozenset(prog.param_names)


def _magnitudes(prog: Program, arrays: Sequence[Any], read: frozenset[str],
                exact: frozenset[str] = frozenset()) -> dict[str, tuple[float, float]] | None:
    """For each tensor argument the programs read, ``(-m, m)`` with ``m`` the root of its sum
    of squares (one BLAS pass; inf/nan gives a non-finite ``m``), or for those in ``exact``
    its smallest and largest entry (two scans); None if one is not an array."""
    out: dict[str, tuple[float, float]] = {}
    for a, p in zip(arrays, prog.params, strict=True):
        if p.kind != "tensor":
            continue
        if p.name not in read:
            out[p.name] = (0.0, 0.0)  # never read: its values cannot matter to the bounds
            continue
        if not isinstance(a, np.ndarray):
            return None
        if p.name in exact:
            out[p.name] = _range(a)
            continue
        flat = a.reshape(-1)
        m = math.sqrt(float(np.dot(flat, flat))) if a.size else 0.0
        out[p.name] = (-m, m)
    return out


def _range(a: np.ndarray) -> tuple[float, float]:
    """An array's smallest and largest entry (two scans; (0, 0) when empty)."""
    return (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)


def _refined(prog: Program, arrays: Sequence[Any], box: dict[str, tuple[float, float]],
             name: str) -> dict[str, tuple[float, float]]:
    """``box`` with argument ``name``'s exact range in place of its magnitude bound."""
    return {**box, name: _range(arrays[prog.param_names.index(name)])}


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


PROVEN_BOTH = 2
"""Both programs are proven finite: the optimized code can meet no inf or nan either."""
PROVEN_NAIVE = 1
"""Only the unoptimized program is proven finite: the optimized code's own values are watched."""


def proven_finite(fallback: Fallback, prog: Program, arrays: Sequence[Any],
                  sizes: Mapping[str, int]) -> int:
    """How far these arguments (``arrays`` in ``prog``'s parameter order) are proven to keep
    every value finite: :data:`PROVEN_BOTH` when the interval bounds
    (:func:`~eqsat_ad.ir.bounds.program_is_finite`) prove it for the unoptimized program
    ``fallback.naive`` and the optimized ``prog`` alike, :data:`PROVEN_NAIVE` for the
    unoptimized one only, 0 when not (an inf or nan argument, or bounds too wide). Only the
    arguments the programs read are scanned: one pass each for a magnitude bound; where that
    proves too little, the exact ranges of the widest arguments one at a time until it
    suffices (and after one such call, those arguments' ranges straight away:
    ``fallback.exact``). Proofs are kept for widened ranges, so similar calls reuse them (a
    few per size binding)."""
    read = fallback.read
    if read is None:
        read = fallback.read = read_parameters(fallback.naive) | read_parameters(prog)
    box = _magnitudes(prog, arrays, read, fallback.exact)
    if box is None or not all(math.isfinite(lo) and math.isfinite(hi)
                              for lo, hi in box.values()):
        return 0
    proofs = fallback.proofs.setdefault(tuple(sorted(sizes.items())), [])
    best = _prove(fallback, prog, box, sizes, proofs)
    if best == PROVEN_BOTH:  # (every call after the first: no sorting on the hot path)
        return best
    # still short: the widest bounds made exact, one argument at a time
    widest = sorted((n for n in box if n in read and n not in fallback.exact),
                    key=lambda n: -max(-box[n][0], box[n][1]))
    for name in widest:
        if best == PROVEN_BOTH:
            break
        box = _refined(prog, arrays, box, name)
        fallback.exact = fallback.exact | {name}
        best = max(best, _prove(fallback, prog, box, sizes, proofs))
    return best


def _prove(fallback: Fallback, prog: Program, ranges: dict[str, tuple[float, float]],
           sizes: Mapping[str, int], proofs: list) -> int:
    """The level proven for arguments inside ``ranges``: by a kept proof whose box holds them,
    else by proving a widened box (or ``ranges`` itself) and keeping it."""
    best = 0
    for box, level in proofs:
        if level > best and all(box[n][0] <= lo and hi <= box[n][1]
                                for n, (lo, hi) in ranges.items()):
            best = level
    if best == PROVEN_BOTH:
        return best
    for box in ({n: _widened(lo, hi) for n, (lo, hi) in ranges.items()}, ranges):
        if not program_is_finite(fallback.naive, box, sizes):
            continue
        level = PROVEN_BOTH if program_is_finite(prog, box, sizes) else PROVEN_NAIVE
        if len(proofs) >= 8:
            proofs.pop(0)
        proofs.append((box, level))
        best = max(best, level)
        if best == PROVEN_BOTH:
            return best
    return best


def proven_box(fallback: Fallback, sizes: Mapping[str, int]
               ) -> dict[str, tuple[float, float]] | None:
    """The latest argument box proven :data:`PROVEN_BOTH` for this size binding (None when
    none is): arguments whose every entry lies inside it (checked by the caller, e.g. inside
    compiled loops that read them anyway) keep the optimized result, as
    :func:`proven_finite` would decide after its scans (the bounds are monotone)."""
    for box, level in reversed(fallback.proofs.get(tuple(sorted(sizes.items())), ())):
        if level == PROVEN_BOTH:
            return box
    return None


def trusted(fallback: Fallback, prog: Program, arrays: Sequence[Any],
            sizes: Mapping[str, int], result: Any) -> bool:
    """Whether a fast run that cannot watch its own intermediate values (compiled loops) may be
    kept: the unoptimized program is proven finite for these arguments and the result is
    finite (not looked at when the optimized program is proven finite too)."""
    level = proven_finite(fallback, prog, arrays, sizes)
    return level == PROVEN_BOTH or (level == PROVEN_NAIVE and finite_result(result))


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
