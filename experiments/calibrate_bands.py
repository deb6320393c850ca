"""Calibrate the price of a band sum's block pass (eqsat_ad/backend/fused/bands.py) on this machine.

``y[i] = Σ_j [i - W < j <= i]·x[j]`` (a trailing window of W points, N = 10**6, float64) run by
the fused backend as a block pass (:mod:`eqsat_ad.backend.fused.bands`) and as the loop writer's
plain loop (taps up to ``UNROLL`` points, else a loop over the window), against one NumPy pass
over the same elements (``np.multiply(x, 2.0)``: one point of the plan's price; also
into a preallocated array). Prints each
time and the band's break-even price: the statement's loop price ``(BAND_PRICE + 1 + 1)·N``
(the pass, the term's read, the write) equals ``LOOP_RATIO`` times the pass's time over NumPy's,
so ``BAND_PRICE = LOOP_RATIO · ratio - 2``; and the plain loop's time, to place
``BAND_MIN`` (the width from which the pass is faster). Interleaved calls, median and fastest.

    taskset -c 1 python experiments/calibrate_bands.py [--n 1000000] [--widths 4 8 10 16 32 128]

Not a test: timings vary with the machine and its load; bands.py cites the run.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ["EQSAT_AD_CACHE"] = "0"

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.backend import fused  # noqa: E402
from eqsat_ad.backend.fused import bands  # noqa: E402
from eqsat_ad.backend.fused.schedule import LOOP_RATIO  # noqa: E402


def _compiled(width: int, banded: bool) -> Callable[..., np.ndarray]:
    """The trailing window of ``width`` compiled with or without the block pass."""
    src = (f"def window{width}(x: [N]):\n"
           f"    y[i: N] = Sum[j: N]((i - {width} < j and j <= i) * x[j])\n    return y\n")
    saved = bands.BAND_MIN, bands.BAND_PRICE
    bands.BAND_MIN, bands.BAND_PRICE = (2, 0) if banded else (10**9, 0)
    fused._CACHE.clear()
    try:
        f = ea.compile(ea.parse(src), backend="numba", optimize=False)
        assert ("_bd" in f.source) == banded, "the band pass was not (or was) written"
        # (a wide plain loop is placed NumPy: its time is then the NumPy backend's)
        assert f.compiled.schedule.placement["y"] == "loop" or not banded
        x = np.zeros(8)
        f(x=x)  # compiles now, with BAND_MIN as set
    finally:
        bands.BAND_MIN, bands.BAND_PRICE = saved
        fused._CACHE.clear()
    return f


def measure(n: int, widths: list[int], rounds: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    buf = np.empty_like(x)
    systems: dict[str, Callable[[], object]] = {
        "numpy pass": lambda: np.multiply(x, 2.0),
        "numpy into": lambda: np.multiply(x, 2.0, out=buf)}
    for w in widths:
        band, plain = _compiled(w, True), _compiled(w, False)
        systems[f"band W={w}"] = lambda band=band: band(x=x)
        kind = "plain" if plain.compiled.schedule.placement["y"] == "loop" else "numpy"
        systems[f"{kind} W={w}"] = lambda plain=plain: plain(x=x)
    for fn in systems.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in systems}
    names = list(systems)
    for _ in range(rounds):
        random.shuffle(names)
        for k in names:
            fn = systems[k]
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    base_med = statistics.median(times["numpy pass"])
    base_min = min(times["numpy pass"])
    for k, ts in times.items():
        med, low = statistics.median(ts), min(ts)
        line = f"{k:14s} median {med * 1e3:7.3f} ms  fastest {low * 1e3:7.3f} ms"
        if k.startswith("band"):
            line += (f"  BAND_PRICE break-even: {LOOP_RATIO * med / base_med - 2:5.1f} (medians),"
                     f" {LOOP_RATIO * low / base_min - 2:5.1f} (fastest)")
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--widths", type=int, nargs="+", default=[4, 8, 10, 16, 32, 128])
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args(argv)
    measure(args.n, args.widths, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
