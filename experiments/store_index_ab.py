"""Stores into a kernel's output with the innermost index unsigned against signed (A/B).

    taskset -c 1 python experiments/store_index_ab.py [program ...]

The Numba backend's gradient of each sweep program that runs a loop nest, generated twice in
one process: as the backend writes it (``_out[i, np.uintp(j)] = ...``, .code.store_at) and
with the stores' indices signed (``_out[i, j] = ...``, as before). A signed index whose loop
starts at a value known only at run time (an interior's, a fill's) takes Numba's wraparound
branch, which keeps the store from vectorizing. Interleaved calls (the two variants in a fresh
random order each round), float64, at the sweep's benchmark sizes: the median and the fastest
call of each (ms). Both variants' values are checked equal bit for bit first.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure  # noqa: E402

configure()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sweep_programs import program  # noqa: E402

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.backend import fused  # noqa: E402
from eqsat_ad.backend.fused import nests, pairs  # noqa: E402

LOOPS = ["E6", "E8", "E9", "E11", "E12", "chain", "mlp", "blur9", "blur_window",
         "total_variation", "total_variation_np", "conv1d", "prefix_sum", "moving_average",
         "moving_average_long", "stencil_loop", "softmax_xent", "layer_norm", "logsumexp",
         "nbody"]
ROUNDS = 41


def _signed(names: list[str]) -> str:
    return ", ".join(names) or "0"


def _build(name: str, signed: bool):  # type: ignore[no-untyped-def]
    real = nests.store_at
    if signed:
        nests.store_at = pairs.store_at = _signed
    fused._CACHE.clear()
    try:
        sp = program(name)
        g = ea.grad(sp.program(), wrt=sp.wrt, backend="numba")
        inputs = sp.inputs(sp.bench, seed=0)
        g(**inputs)  # compiled now, with the stores as set
    finally:
        nests.store_at = pairs.store_at = real
        fused._CACHE.clear()
    return g, inputs


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if isinstance(a, tuple | list):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def main(names: list[str]) -> None:
    print("| program | unsigned ms (median / fastest) | signed ms (median / fastest) | "
          "unsigned / signed (median) |")
    print("|---|---|---|---|")
    for name in names:
        g_u, inputs = _build(name, signed=False)
        g_s, _ = _build(name, signed=True)
        if g_u.source == g_s.source:
            print(f"| {name} | (no store changes) | | |")
            continue
        assert _same(g_u(**inputs), g_s(**inputs)), name
        fns = {"u": lambda g=g_u, a=inputs: g(**a), "s": lambda g=g_s, a=inputs: g(**a)}
        times: dict[str, list[float]] = {k: [] for k in fns}
        keys = list(fns)
        for _ in range(ROUNDS):
            random.shuffle(keys)
            for k in keys:
                t = time.perf_counter()
                fns[k]()
                times[k].append(time.perf_counter() - t)
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        low = {k: float(np.min(v)) * 1e3 for k, v in times.items()}
        print(f"| {name} | {med['u']:.3f} / {low['u']:.3f} | {med['s']:.3f} / {low['s']:.3f} | "
              f"{med['u'] / med['s']:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or LOOPS)
