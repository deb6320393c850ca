"""How fast can a 3x3 blur gradient be on this machine? The Numba backend against its floors.

    taskset -c 1 python experiments/blur_floor.py [--rounds 25]

Issue 15 asks for blur's gradient (1024², ``f = Σ w ∘ box3(x)``, so ``x_bar`` is ``w`` summed
over its 3x3 window, divided by 9) at 0.5x ``jax.jit(jax.grad(f))``. This times, in float64
and float32, the backend's gradient, the kernel it runs alone (into a kept output), a
hand-written 9-tap Numba kernel adding in the same order (the floor of this formula's
arithmetic), the same values from separable row sums in a rolling three-row buffer (a third of
the products, each row sum shared by three output rows), a copy of ``w`` (the floor of any
gradient that reads ``w`` and writes an output of its size) and JAX's gradient. Two settings:
*resident*, calls back to back (the arrays stay in L2/L3), and *flushed*, 64 MB written
through the caches before each call (as the interleaved benchmarks leave them). Median and
fastest of ``--rounds`` calls, interleaved. Writes experiments/results/blur_floor.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure, cpu  # noqa: E402

configure()

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fused_programs import PROGRAMS  # noqa: E402
from numba_backend import jax_gradients  # noqa: E402

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.backend.fused.program import NumbaProgram  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
N = 1024


@nb.njit(error_model="numpy")
def nine_taps(out: np.ndarray, b: np.ndarray, c: float, z: float) -> None:
    """The interior of ``x_bar`` as the optimized program adds it: three row sums of three
    products by ``c`` = 1/9, each started at ``z`` = 0, and their sum started at 0 (edges left
    out; ``c`` and ``z`` of the arrays' float type, so float32 stays float32)."""
    h, w = b.shape
    for i in range(1, h - 1):
        r0, r1, r2, o = b[i - 1], b[i], b[i + 1], out[i]
        for j in range(1, w - 1):
            a = z
            a += ((z + c * r0[j - 1]) + c * r0[j]) + c * r0[j + 1]
            a += ((z + c * r1[j - 1]) + c * r1[j]) + c * r1[j + 1]
            a += ((z + c * r2[j - 1]) + c * r2[j]) + c * r2[j + 1]
            o[j] = a


@nb.njit(error_model="numpy")
def row_sums(out: np.ndarray, b: np.ndarray, c: float, z: float, rows: np.ndarray) -> None:
    """The same values from each row sum computed once (``rows``: a rolling buffer of three)."""
    h, w = b.shape
    for k in range(min(2, h)):
        for j in range(1, w - 1):
            rows[k, j] = ((z + c * b[k, j - 1]) + c * b[k, j]) + c * b[k, j + 1]
    for i in range(1, h - 1):
        new, bk = rows[(i + 1) % 3], b[i + 1]
        for j in range(1, w - 1):
            new[j] = ((z + c * bk[j - 1]) + c * bk[j]) + c * bk[j + 1]
        s0, s1, s2, o = rows[(i - 1) % 3], rows[i % 3], rows[(i + 1) % 3], out[i]
        for j in range(1, w - 1):
            o[j] = ((z + s0[j]) + s1[j]) + s2[j]


def systems(dtype: type) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((N, N)).astype(dtype) for _ in range(2))
    src, wrt, _ = PROGRAMS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    want = g(x=x, w=w)
    compiled = next(o for o in gc.get_objects() if isinstance(o, NumbaProgram)
                    and o.program == g.program)
    kernel = compiled._module(np.dtype(dtype))._k_x_bar
    box = np.array([-np.inf, np.inf], dtype=dtype)  # (the proven box, in the float type)
    out, rows = np.empty_like(w), np.zeros((3, N), dtype)
    c, z = dtype(1 / 9), dtype(0)  # (the program's constant, in the float type)
    for fn in (lambda: nine_taps(out, w, c, z), lambda: row_sums(out, w, c, z, rows)):
        out[:] = want
        fn()  # compiles
        np.testing.assert_array_equal(out, want)  # (interior computed, edges kept)
    found: dict[str, Callable[[], object]] = {
        "eqsat_ad numba gradient": lambda: g(x=x, w=w),
        "its kernel alone": lambda: kernel(out, w, N, N, box),
        "hand 9-tap kernel": lambda: nine_taps(out, w, c, z),
        "separable row sums": lambda: row_sums(out, w, c, z, rows),
        "copy of w": lambda: w.copy(),
    }
    jg = jax_gradients()
    if jg is not None:
        jg["blur"](x, w)
        found["JAX jit gradient"] = lambda: jg["blur"](x, w)
    return found


def measure(fns: dict[str, Callable[[], object]], rounds: int, flush: bool
            ) -> dict[str, tuple[float, float]]:
    junk = np.zeros(8 * 2**20)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for key, fn in fns.items():
            if flush:
                junk += 1.0
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    return {k: (float(np.median(v)) * 1e3, min(v) * 1e3) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    a = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for dtype in (np.float64, np.float32):
        fns = systems(dtype)
        res = {flush: measure(fns, a.rounds, flush) for flush in (False, True)}
        jax = {f: res[f].get("JAX jit gradient", (float("nan"),))[0] for f in res}
        for key in fns:
            cells = []
            for flush in (False, True):
                med, fast = res[flush][key]
                cells += [f"{med:.3f} / {fast:.3f}", f"{med / jax[flush]:.2f}"]
            rows.append(f"| {key} | {np.dtype(dtype).name} | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    lines = [
        "# Blur's gradient against its floors",
        "",
        f"`python experiments/blur_floor.py --rounds {a.rounds}` ({started}): one pinned core of "
        f"{cpu()}. 1024² arrays; median / fastest of {a.rounds} interleaved calls "
        "(ms); / JAX: the median over JAX jit's median. *Resident*: calls back to back; "
        "*flushed*: 64 MB written through the caches before each call. The kernels write the "
        "interior into a kept output; the gradient and the copy return a fresh array. See the "
        "module docstring for what each row is.",
        "",
        "| system | dtype | resident ms | / JAX | flushed ms | / JAX |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "blur_floor.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / 'blur_floor.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
