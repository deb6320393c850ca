"""Calibrate the plan's kernel prices (eqsat_ad/plan/kernels.py) against this machine.

A plan's price counts elements touched, one unit per element of an elementwise pass. This
script times, per element, the operations the NumPy backend emits for each kernel kind — an
elementwise pass, a shifted-slice update, a reduction, a zero-fill, a zero-padded window copy,
a running sum (``np.cumsum``) and a read of running sums at a shifted bound — and prints each
as a multiple of the elementwise pass (``0.125 * x``). Calls are interleaved in a fresh random
order each round; each figure is the median over rounds, and the whole measurement is repeated
(``--repeats``) to show its spread. The last few results stay alive, as in generated code, so
the allocator hands out fresh pages as it does there.

    taskset -c 1 python experiments/calibrate_kernels.py                # N = 10**6
    taskset -c 1 python experiments/calibrate_kernels.py --n 100000 --n 10000000 --out DIR

Not a test: timings vary with the machine and its load; the constants in kernels.py cite the
run recorded in experiments/results/calibration.md.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread, set before NumPy starts

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import deque  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eqsat_ad.backend import runtime as rt  # noqa: E402

SHIFT = 7  # a shifted slice as a window of 8 samples emits it


def kernels(n: int, rng: np.random.Generator) -> dict[str, tuple[str, Callable[[], object]]]:
    """name -> (plan kernel kind it calibrates, a call running it over ``n`` elements)."""
    x = rng.normal(size=n)
    y = rng.normal(size=n)
    m = rng.normal(size=n)
    c = np.cumsum(x)
    side = max(int(round(n ** 0.5)), 1)
    a = rng.normal(size=(side, side)) * (n / side**2)  # ~n elements
    pad = ((-SHIFT, 1, n),)  # reads x[i - 7]: zero padded, a copy

    def slice_update() -> object:
        m[SHIFT:] += x[:-SHIFT]
        return None

    b = rng.normal(size=(side, side))
    d = rng.normal(size=(side, side))

    def update_rows() -> object:  # b[1:H, :] += d[:H - 1, :]: one contiguous block
        b[1:, :] += d[:-1, :]
        return None

    def update_columns() -> object:  # b[1:H, 1:W] += d[:H - 1, :W - 1]: row by row
        b[1:, 1:] += d[:-1, :-1]
        return None

    def zero_fill() -> object:
        z = np.zeros(n)
        z[SHIFT:] = 1.0  # first touch: the pages are faulted in here, as in generated code
        return z

    return {
        "elementwise 0.125*x": ("elementwise", lambda: 0.125 * x),
        "elementwise x*y": ("elementwise", lambda: x * y),
        "slice update m[7:] += x[:-7]": ("slice-update", slice_update),
        "slice update 2-D, rows shifted": ("slice-update", update_rows),
        "slice update 2-D, columns shifted": ("slice-update (strided)", update_columns),
        "reduce x.sum()": ("reduce", lambda: x.sum()),
        "reduce A.sum(axis=1)": ("reduce", lambda: a.sum(axis=1)),
        "fill np.zeros + write": ("fill", zero_fill),
        "gather padded window": ("gather", lambda: rt.window(x, pad)),
        "running sum np.cumsum": ("running sum", lambda: np.cumsum(x)),
        "running sum reversed": ("running sum", lambda: rt.suffix_sum(x, 0)),
        "scan read at a bound": ("scan", lambda: rt._shifted(c, 1, n)),  # noqa: SLF001
        "window by scans (scan_shift)": ("composite", lambda: rt.scan_shift(x, 0, -SHIFT, 1)),
        # the guard's pass over an argument (backend/guard.py: one BLAS dot, nothing written)
        "guard check np.dot(x, x)": ("check", lambda: float(np.dot(x, x))),
        "finite check (runtime)": ("check", lambda: rt.finite(x)),
    }


def measure(n: int, rounds: int, seed: int) -> dict[str, float]:
    """Median seconds per call of every kernel at ``n`` elements, interleaved."""
    rng = np.random.default_rng(seed)
    ks = kernels(n, rng)
    names = list(ks)
    times: dict[str, list[float]] = {k: [] for k in names}
    alive: deque[object] = deque(maxlen=4)  # results held a while, as a program holds them
    for _ in range(rounds):
        rng.shuffle(names)
        for k in names:
            fn = ks[k][1]
            t0 = time.perf_counter()
            out = fn()
            times[k].append(time.perf_counter() - t0)
            alive.append(out)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, action="append", help="elements (default 10**6)")
    ap.add_argument("--rounds", type=int, default=41, help="interleaved rounds per repeat")
    ap.add_argument("--repeats", type=int, default=5, help="independent repeats (spread)")
    ap.add_argument("--out", type=Path, default=None, help="write calibration.md there")
    args = ap.parse_args(argv)
    sizes = args.n or [10**6]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    kinds = {k: v[0] for k, v in kernels(8 * SHIFT, np.random.default_rng(0)).items()}
    lines = [
        "# Kernel price calibration",
        "",
        f"`{' '.join(['python', *sys.argv])}` on {stamp},"
        f" cores {sorted(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}.",
        "",
        "Per-element time of each operation as a multiple of the elementwise pass `0.125 * x`"
        " (the plan's unit): median over interleaved rounds; *spread* is the min..max of that"
        " ratio over the independent repeats.",
        "",
    ]
    for n in sizes:
        ratios: dict[str, list[float]] = {k: [] for k in kinds}
        units: list[float] = []
        for r in range(args.repeats):
            med = measure(n, args.rounds, seed=r)
            unit = med["elementwise 0.125*x"]
            units.append(unit / n * 1e9)
            for k in kinds:
                ratios[k].append(med[k] / unit)
        lines += [f"## N = {n}", "",
                  f"unit (ns per element of `0.125 * x`): median {statistics.median(units):.3f},"
                  f" spread {min(units):.3f}..{max(units):.3f}", "",
                  "| operation | plan kernel | × elementwise (median) | spread |",
                  "|---|---|---|---|"]
        for k in kinds:
            v = ratios[k]
            lines.append(f"| {k} | {kinds[k]} | {statistics.median(v):.2f} |"
                         f" {min(v):.2f}..{max(v):.2f} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "calibration.md").write_text(text)


if __name__ == "__main__":
    main()
