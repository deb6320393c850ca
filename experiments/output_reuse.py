"""Output arrays reused across calls (backend/fused/outputs.Recycler) on and off.

    taskset -c 1 python experiments/output_reuse.py E8 blur_window total_variation

A sweep program's Numba gradient at the sweep's benchmark sizes, one process, reuse on and
off interleaved (the order alternating each round), 60 rounds each: in a tight loop, and right
after the NumPy backend's gradient or the hand-written one (whose frees decide whether the
allocator hands memory back to the system, so that a fresh output pays its page faults).
Medians and fastest calls, ms.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_programs import CATALOGUE  # noqa: E402

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.backend.fused.outputs import Recycler  # noqa: E402

ROUNDS = 60


def _once(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(name: str) -> None:
    sp = next(p for p in CATALOGUE if p.name == name)
    opts = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
    g = ea.grad(sp.program(), wrt=sp.wrt, backend="numba", **opts)
    g_np = ea.grad(sp.program(), wrt=sp.wrt, **opts)
    inputs = sp.inputs(sp.bench, seed=0)
    g(**inputs)
    g_np(**inputs)
    take = Recycler.take

    def off(self: Recycler, key: object, empty: tuple) -> tuple:
        return empty

    before: dict[str, Callable[[], Any] | None] = {
        "tight loop": None, "after the NumPy backend's gradient": lambda: g_np(**inputs),
        "after the hand-written gradient": lambda: sp.hand(**inputs)}
    try:
        for label, pre in before.items():
            times: dict[str, list[float]] = {"on": [], "off": []}
            for r in range(ROUNDS):
                for mode in (("on", "off") if r % 2 else ("off", "on")):
                    Recycler.take = take if mode == "on" else off  # type: ignore[method-assign]
                    g(**inputs)  # this mode's state: the arrays kept (or not) by a call
                    if pre is not None:
                        pre()
                    times[mode].append(_once(lambda: g(**inputs)))
            on, off_ = (np.array(times[m]) * 1e3 for m in ("on", "off"))
            print(f"{name}, {label}: reuse on {np.median(on):.3f} / {on.min():.3f} ms, "
                  f"off {np.median(off_):.3f} / {off_.min():.3f} ms", flush=True)
    finally:
        Recycler.take = take  # type: ignore[method-assign]


if __name__ == "__main__":
    for program in sys.argv[1:] or ["E8"]:
        compare(program)
