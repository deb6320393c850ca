"""The guard's argument check, done by the loop nests (backend/guard.py: a fast result is kept
when the arguments lie in a box where both programs are proven finite).

The guard scans each argument the programs read (one pass for a magnitude bound). A loop
nest that reads an argument over exactly its points counts, row by row while the row is in
cache, the entries inside the latest proven box (:func:`bounds`); when every entry was (and
the other arguments, small, are checked here: :func:`call_box`), the proof holds for the call
(the bounds are monotone in the box) and the guard's scans are skipped. Otherwise the guard
decides as before, so a call keeps or reruns exactly as the guard alone would decide.

Where no loop checks a box, the guard's scans and proof come before the run
(:func:`proof_before_run`; the scans cost the same then), and where the loops check one, the
proof is the box's: in both cases a run proven finite for both programs skips the checks its
NumPy parts and BLAS products make for inf and nan (:func:`finite_run`; the module's
``_fin``). mlp_numpy's gradient at the sweep's sizes: its NumPy parts scanned X, h, t_bar and
their products' results, 0.65 ms a call beside the NumPy backend's program (which, guarded
and proven, runs unchecked). :func:`kept_result` then decides what is kept, as before.

Where the row's code has a loop over the whole row at the row's own level that reads the
argument at each of its points (softmax's ``_terms[k] = exp(z[i, k])``), the count goes into
that loop (:func:`counted_in_loop`), the entry read once: measured (softmax cross-entropy,
4096 x 256, kernel alone) 1.73 ms against 2.12 ms with a counting loop per array after the row
(the row is in cache, but each pass still costs its loads and compares).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.program import Program
from ..guard import PROVEN_BOTH, PROVEN_NAIVE, Fallback, proven_box, proven_finite
from ..runtime import finite_result

__all__ = ["SMALL", "bound_locals", "bounds", "call_box", "counted_at_stores", "counted_in_loop",
           "finite_run", "kept_result", "proof_before_run", "row_counted"]

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


class BoundsByBox:
    """:func:`bounds` per proven box and float type, kept (a proven box is never changed;
    at most 32 kept, then forgotten at once)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = names  # (the checked parameters, in their order in the run's _box)
        self._kept: dict[tuple[int, str], tuple[Any, np.ndarray]] = {}

    def __call__(self, box: Mapping[str, tuple[float, float]] | None, dt: np.dtype
                 ) -> np.ndarray:
        key = (id(box), dt.char)
        hit = self._kept.get(key)
        if hit is None or hit[0] is not box:
            hit = (box, bounds(box, self.names, dt))
            if len(self._kept) >= 32:
                self._kept.clear()
            self._kept[key] = hit
        return hit[1]


def bound_locals(k: int, pad: str = "    ") -> list[str]:
    """A kernel's locals for checked array ``k``: its bounds from ``_box``, whether they are
    symmetric about 0 (the guard's magnitude bounds are: :func:`row_counted`'s one compare),
    and its count of entries found inside them."""
    return [f"{pad}_blo{k} = _box[{2 * k}]", f"{pad}_bhi{k} = _box[{2 * k + 1}]",
            f"{pad}_bsym{k} = _blo{k} == -_bhi{k}", f"{pad}_in{k} = 0"]


def _inside(value: str, k: int) -> str:
    """Code of whether ``value`` lies inside the bounds of checked array ``k`` (a nan: no)."""
    return f"({value} >= _blo{k}) & ({value} <= _bhi{k})"


def row_counted(read: str, extent: str, k: int, pad: str) -> list[str]:
    """Lines (indented by ``pad``) adding ``extent`` to the count ``_in<k>`` when every entry
    ``read`` (an expression in ``_c``) for ``_c`` in ``range(extent)`` lies inside the bounds
    of checked array ``k`` (a nan compares false). Each entry is and-ed into a flag (a count
    per entry kept LLVM to four lanes of int64), with ``abs(v) <= hi`` where the bounds are
    symmetric (exactly the two compares there): in L1, 1M entries took 0.156 ms counted
    against 0.078 (float64) and 0.039 ms (float32) so (experiments/results/numba.md)."""
    return [f"{pad}_ok = True",
            f"{pad}if _bsym{k}:",
            f"{pad}    for _c in range({extent}):",
            f"{pad}        _ok &= abs({read}) <= _bhi{k}",
            f"{pad}else:",
            f"{pad}    for _c in range({extent}):",
            f"{pad}        _v = {read}",
            f"{pad}        _ok &= {_inside('_v', k)}",
            f"{pad}if _ok:",
            f"{pad}    _in{k} += {extent}"]


_LOOP = re.compile(r"^( *)for (\w+) in range\((.+)\):(\s*#.*)?$")


def counted_in_loop(lines: list[str], start: int, name: str, k: int, outer: str,
                    extent: str) -> bool:
    """Count the entries of ``name``'s row (``name[outer, x]``) inside the bounds ``_blo<k>``,
    ``_bhi<k>`` in the first loop ``for x in range(extent):`` of ``lines[start:]`` at the
    row's own level (run once per row, over the whole row) that reads ``name[outer, x]``:
    the entry is read once into ``_cv<k>`` at the top of the loop's body and its reads use
    it. Whether done (else the caller counts in a loop of its own)."""
    if start >= len(lines):
        return False
    level = len(lines[start]) - len(lines[start].lstrip())
    for n in range(start, len(lines)):
        m = _LOOP.match(lines[n])
        if m is None or len(m.group(1)) != level or m.group(3) != extent:
            continue
        var, end = m.group(2), n + 1
        while end < len(lines) and (not lines[end].strip()
                                    or len(lines[end]) - len(lines[end].lstrip()) > level):
            end += 1
        read = re.compile(rf"(?<![\w.]){re.escape(name)}\[{re.escape(outer)}, "
                          rf"(?:np\.uintp\({var}\)|{var})\]")
        if not any(read.search(line) for line in lines[n + 1:end]):
            continue
        pad, value = " " * (level + 4), f"_cv{k}"
        lines[n + 1:end] = [f"{pad}{value} = {name}[{outer}, {var}]",
                            f"{pad}_in{k} += {_inside(value, k)}",
                            *(read.sub(value, line) for line in lines[n + 1:end])]
        return True
    return False


def counted_at_stores(code: str, checks: Mapping[str, int], point: str) -> str | None:
    """A window producer's kernel (:mod:`.windows`; ``code``: its text, storing its point
    ``point`` at ``_out[point - _po]``) that also counts, at each store, the entries
    ``name[point]`` of the checked arrays ``checks`` (each with its position in ``_box``) that
    lie outside their bounds (a nan among them), and returns those counts in that order; None
    when a store is not of that form. At a stored point the entry was just read by the point's
    terms (in L1): conv1d's gradient (its window kernel alone, interleaved) measured 3.08
    against 3.26 ms float64 and 1.76 against 1.81 ms float32 with the driver's pass over each
    array a chunk behind. Counted outside, not inside (which measured 3% faster): a point
    stored twice cannot make up for one never stored; the caller makes sure every point of
    the arrays is stored (:func:`.windows.covers`)."""
    store = re.compile(rf"^( +)_out\[(?:np\.uintp\()?{re.escape(point)} - _po\)?\] = ")
    lines = code.split("\n")
    at = {n: m.group(1) for n, line in enumerate(lines) if (m := store.match(line))}
    if not at or any(("_out[" in line and n not in at) or line.strip().startswith("return")
                     for n, line in enumerate(lines)):
        return None
    for n, pad in reversed(at.items()):
        lines[n + 1:n + 1] = [line for name, k in checks.items() for line in (
            f"{pad}_cv{k} = {name}[np.uintp({point})]",
            f"{pad}_nx{k} += 1 - ({_inside(f'_cv{k}', k)})")]
    head = next(n for n, line in enumerate(lines) if line.startswith("def "))
    if not lines[head].endswith("_p0, _p1, _po):"):
        return None
    lines[head] = lines[head][:-2] + ", _box):"
    lines[head + 1:head + 1] = [line for k in checks.values() for line in (
        f"    _blo{k} = _box[{2 * k}]", f"    _bhi{k} = _box[{2 * k + 1}]", f"    _nx{k} = 0")]
    counts = [f"_nx{k}" for k in checks.values()]
    lines.append(f"    return ({', '.join(counts)}{',' if len(counts) == 1 else ''})")
    return "\n".join(lines)


def proof_before_run(guarded: Fallback | None, prog: Program,
                     box: Mapping[str, tuple[float, float]] | None, arrays: Sequence[Any],
                     sizes: Mapping[str, int]) -> int | None:
    """The guard's proof (:func:`~..guard.proven_finite`) for a guarded call (``guarded``: its
    fallback; None for a call that needs no guard) whose loops check no box, made before the
    run: the arguments are scanned then either way, and a proof of both programs lets the run
    skip its NumPy parts' and products' checks (:func:`finite_run`). None otherwise."""
    if guarded is None or box is not None:
        return None
    return proven_finite(guarded, prog, arrays, sizes)


def finite_run(guarded: Fallback | None, box: Mapping[str, tuple[float, float]] | None,
               level: int | None) -> bool:
    """Whether the run may take every value as finite (the module's ``_fin``): the loops check
    a box proven finite for both programs (an argument outside it: :func:`kept_result`
    decides again), or the guard proved both programs finite for these arguments."""
    return guarded is not None and (box is not None or level == PROVEN_BOTH)


def kept_result(guarded: Fallback, prog: Program, result: Any, bad: bool,
                box: Mapping[str, tuple[float, float]] | None, level: int | None,
                proven: bool, arrays: Sequence[Any], sizes: Mapping[str, int],
                checked_run: Callable[[], Any], args: tuple, kwargs: dict[str, Any]) -> Any:
    """A guarded call's result: the fast run's where the loops found every checked argument
    inside a box proven finite for both programs, or the guard proves both programs finite
    for these arguments (the proofs are monotone in the box), or only the unoptimized one and
    the result is finite (judged on a run with every check, ``checked_run``, where this one
    took the values as finite: ``proven``); else the unoptimized program's (finite-only
    rewrites may have met inf or nan)."""
    if box is not None and not bad:
        return result
    if level is None:
        level = proven_finite(guarded, prog, arrays, sizes)
    if level == PROVEN_BOTH:
        return result
    if level == PROVEN_NAIVE:
        if proven:
            with np.errstate(all="ignore"):
                result = checked_run()
        if finite_result(result):
            return result
    return guarded(*args, **kwargs)
