"""A/B of the sliding window's chunk size (eqsat_ad/backend/fused/windows.py) on conv1d's gradient.

    taskset -c 1 python experiments/window_chunk.py [--repeat 101] [--chunks 2048 65536]

conv1d's gradient (N = 10⁶, K = 16) with backend="numba", built once per chunk size (the
generated driver bakes the chunk in), run alternately in one process (one pinned core: start
under ``taskset``), float64 and float32; prints the median and the fastest run of each in ms.
Each build's values are checked equal bit for bit to the first's. Prints only (the machine is
shared: timings are noisy, compare within one run).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("EQSAT_AD_CACHE", "0")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_programs import PROGRAMS  # noqa: E402

import eqsat_ad as ea  # noqa: E402
import eqsat_ad.backend.fused.windows as fused_windows  # noqa: E402


def build(chunk: int) -> Callable[..., np.ndarray]:
    """conv1d's gradient with the window driver generated for ``chunk`` points per chunk."""
    fused = importlib.import_module("eqsat_ad.backend.fused")
    old = fused_windows.CHUNK
    fused_windows.CHUNK = chunk
    fused._CACHE.clear()  # a fresh NumbaProgram: the driver is written with this chunk
    try:
        g = ea.grad(ea.parse(PROGRAMS["conv1d"].source), "x", backend="numba")
        assert f"range(0, N, {chunk})" in g.source
        return g
    finally:
        fused_windows.CHUNK = old
        fused._CACHE.clear()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=101)
    ap.add_argument("--chunks", type=int, nargs="+", default=[2048, 65536])
    ap.add_argument("--n", type=int, default=10**6)
    a = ap.parse_args(argv)
    grads = {c: build(c) for c in a.chunks}
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        args = {"x": rng.standard_normal(a.n).astype(dtype),
                "w": rng.standard_normal(16).astype(dtype),
                "y": rng.standard_normal(a.n).astype(dtype)}
        first = grads[a.chunks[0]](**args)
        for c, g in grads.items():
            got = g(**args)  # (also the warm-up call)
            assert got.dtype == dtype and np.array_equal(got, first), c
        times: dict[int, list[float]] = {c: [] for c in grads}
        for _ in range(a.repeat):
            for c, g in grads.items():
                t = time.perf_counter()
                g(**args)
                times[c].append(time.perf_counter() - t)
        for c, v in times.items():
            print(f"{np.dtype(dtype).name} chunk {c}: median {np.median(v) * 1e3:.3f} ms, "
                  f"fastest {np.min(v) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
