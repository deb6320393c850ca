"""A few sweep programs' gradients: backend="numba" against the NumPy backend and JAX jit.

    taskset -c 1 python experiments/numba_compare.py E12 E8 logsumexp

At the sweep's benchmark sizes (experiments/sweep_programs.py), float64, one thread each:
interleaved rounds, each round the median of 9 calls of each system, the median of the
rounds printed (milliseconds) with numba/JAX and numba/NumPy, then the fastest call of each
(min) and their ratios. A quick check of one change
between sweeps (the full sweep, experiments/sweep.py, takes minutes of a quiet machine).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure  # noqa: E402

configure()  # one thread each; OpenBLAS on the CPU's own kernels

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_jax import JaxUnavailable, jax_gradient  # noqa: E402
from sweep_programs import program  # noqa: E402

import eqsat_ad as ea  # noqa: E402

ROUNDS, CALLS = 7, 9


def _calls(fn: Callable[[], Any]) -> list[float]:
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return [t * 1e3 for t in times]


def compare(name: str) -> tuple[dict[str, float], dict[str, float]]:
    sp = program(name)
    opts = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
    inputs = sp.inputs(sp.bench, seed=0)
    numba = ea.grad(sp.program(), wrt=sp.wrt, backend="numba", **opts)
    numpy = ea.grad(sp.program(), wrt=sp.wrt, **opts)
    systems: dict[str, Callable[[], Any]] = {"numba": lambda: numba(**inputs),
                                             "numpy": lambda: numpy(**inputs)}
    try:
        systems["jax"] = jax_gradient(sp)(inputs)
    except JaxUnavailable:
        pass
    for fn in systems.values():
        fn()  # compiles (or loads Numba's cache)
    rounds: dict[str, list[float]] = {k: [] for k in systems}
    fastest: dict[str, float] = {k: float("inf") for k in systems}
    for _ in range(ROUNDS):
        for k, fn in systems.items():
            times = _calls(fn)
            rounds[k].append(float(np.median(times)))
            fastest[k] = min(fastest[k], *times)
    return {k: float(np.median(v)) for k, v in rounds.items()}, fastest


def main(names: list[str]) -> None:
    for name in names:
        m, f = compare(name)
        jax = f", JAX jit {m['jax']:.3f} ms, numba/JAX {m['numba'] / m['jax']:.2f}" \
            if "jax" in m else ""
        fast = f"; min {f['numba']:.3f} / {f['numpy']:.3f}" + (
            f" / {f['jax']:.3f}, numba/JAX {f['numba'] / f['jax']:.2f}" if "jax" in f else "")
        print(f"{name}: numba {m['numba']:.3f} ms, NumPy backend {m['numpy']:.3f} ms, "
              f"numba/NumPy {m['numba'] / m['numpy']:.2f}{jax}"
              f"{fast}, numba/NumPy {f['numba'] / f['numpy']:.2f}", flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:] or ["E12"])
    except KeyError as exc:  # an unknown name: the known ones, no traceback
        sys.exit(exc.args[0])
