"""Blur's gradient kernel by where its output starts, modulo 4 KiB, relative to the array it reads.

    taskset -c 1 python experiments/store_offset.py [--rounds 60]

The kernel stores ``x_bar[i, j]`` and next loads ``w[i + 1, j + 1]``; with 1024 columns each row
is 4 or 8 KiB, so every row of ``w`` starts at the same offset within a page. Where ``x_bar``
starts a few cache lines from that offset, a load's address agrees in its low 12 bits with a
store still in flight and waits for it (4K aliasing). The backend places a new output half a
page away (``backend/fused/apart.py``); this measures the kernel alone (its kept module, the
optimized gradient's), into outputs at each offset, interleaved round by round, median of
``--rounds`` calls (the arrays stay in the caches). Writes experiments/results/store_offset.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure, cpu  # noqa: E402

configure()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fused_programs import PROGRAMS  # noqa: E402

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.backend.fused.apart import PAGE, empty_apart  # noqa: E402
from eqsat_ad.backend.fused.program import NumbaProgram  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
N = 1024
OFFSETS = (0, 32, 64, 128, 192, 256, 512, 1024, 2048, 3072, 3968, 4032)


def _start(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def timings(dtype: type, rounds: int) -> tuple[dict[int, float], int]:
    """Median kernel milliseconds per offset of the output past ``w`` (modulo 4 KiB), and the
    offset :func:`empty_apart` chose."""
    src, wrt, _ = PROGRAMS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((N, N)).astype(dtype) for _ in range(2))
    want = g(x=x, w=w)
    compiled = next(o for o in gc.get_objects() if isinstance(o, NumbaProgram)
                    and o.program == g.program)
    kernel = compiled._module(np.dtype(dtype))._k_x_bar
    box = np.array([-np.inf, np.inf], dtype=dtype)
    nbytes = N * N * np.dtype(dtype).itemsize
    outs, raws = {}, []
    for off in OFFSETS:
        raw = np.empty(nbytes + 2 * PAGE, dtype=np.uint8)
        skip = (_start(w) + off - _start(raw)) % PAGE
        outs[off] = raw[skip:skip + nbytes].view(dtype).reshape(N, N)
        raws.append(raw)
        kernel(outs[off], w, N, N, box)
        np.testing.assert_array_equal(outs[off], want)
    chosen = (_start(empty_apart((N, N), dtype, (w,))) - _start(w)) % PAGE
    times: dict[int, list[float]] = {off: [] for off in OFFSETS}
    for _ in range(rounds):
        for off in OFFSETS:
            t = time.perf_counter()
            kernel(outs[off], w, N, N, box)
            times[off].append(time.perf_counter() - t)
    return {off: float(np.median(v)) * 1e3 for off, v in times.items()}, chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    a = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    found = {np.dtype(dt).name: timings(dt, a.rounds) for dt in (np.float64, np.float32)}
    head = "| bytes past w (mod 4096) | " + " | ".join(f"{d} ms" for d in found) + " |"
    rows = [head, "|---|" + "---|" * len(found)]
    for off in OFFSETS:
        rows.append(f"| {off} | " + " | ".join(f"{t[off]:.3f}" for t, _ in found.values())
                    + " |")
    chosen = ", ".join(f"{d}: {c}" for d, (_, c) in found.items())
    lines = [
        "# Blur's gradient kernel by its output's offset from w, modulo 4 KiB",
        "",
        f"`python experiments/store_offset.py --rounds {a.rounds}` ({started}): one pinned "
        f"core of {cpu()}. {N}² arrays; median of {a.rounds} calls of the kernel alone, "
        "offsets interleaved round by round. The offset `empty_apart` chose for a new output "
        f"here: {chosen}.",
        "",
        *rows,
        "",
    ]
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "store_offset.md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
