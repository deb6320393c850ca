"""The fused loop backend (backend="numba") on the stencil and N-body gradients of issue 15.

    python experiments/numba_backend.py [--quick]

Gradient time of blur 3x3 (1024²), total variation (2048²), N-body (N = 1024), conv1d
(N = 10⁶, K = 16) and a prefix sum (N = 10⁶), float64 and float32: eqsat_ad with
backend="numba", ``jax.jit(jax.grad(f))`` (when JAX is installed), eqsat_ad with the NumPy
backend, a hand-written NumPy gradient; interleaved runs, medians. First call of a fresh
process with a cold Numba cache and with a warm one (subprocesses). One pinned core (the
first of the affinity: start under ``taskset -c K`` to choose), one BLAS thread, one XLA
thread; the machine is shared with other jobs, so timings are noisy. Writes
experiments/results/numba.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import blas_core, configure, cpu  # noqa: E402

configure()  # one core, as the other experiments; OpenBLAS on the CPU's own kernels

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eqsat_ad as ea  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fused_programs import BENCHMARKED, PROGRAMS  # noqa: E402


def inputs(name: str, quick: bool, dtype: type) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    if name == "blur":
        n = 256 if quick else 1024
        return {"x": r(n, n), "w": r(n, n)}
    if name == "tv":
        n = 512 if quick else 2048
        return {"u": r(n, n)}
    if name == "nbody":
        n = 256 if quick else 1024
        return {"x": r(n, 3), "m": np.abs(r(n)) + dtype(0.1)}
    if name == "prefix":
        n = 10**5 if quick else 10**6
        return {"x": r(n), "w": r(n)}
    n = 10**5 if quick else 10**6
    return {"x": r(n), "w": r(16), "y": r(n)}


# --- hand-written NumPy gradients ---------------------------------------------------------------
def hand_blur(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n, m = x.shape
    p = np.zeros((n + 2, m + 2), dtype=x.dtype)
    for a in range(3):
        for c in range(3):
            p[2 - a:2 - a + n, 2 - c:2 - c + m] += w
    return p[1:n + 1, 1:m + 1] / x.dtype.type(9)


def hand_tv(u: np.ndarray) -> np.ndarray:
    dx = u[1:, :-1] - u[:-1, :-1]
    dy = u[:-1, 1:] - u[:-1, :-1]
    r = 1 / np.sqrt(dx * dx + dy * dy + u.dtype.type(1e-4))
    gx, gy = dx * r, dy * r
    g = np.zeros_like(u)
    g[:-1, :-1] -= gx + gy
    g[1:, :-1] += gx
    g[:-1, 1:] += gy
    return g


def hand_nbody(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    d = x[:, None, :] - x[None, :, :]
    s = np.einsum("ijk,ijk->ij", d, d) + x.dtype.type(0.01)
    c = m[:, None] * m[None, :] / (s * np.sqrt(s))
    return -2 * np.einsum("ij,ijk->ik", c, d)


def hand_conv1d(x: np.ndarray, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, k = x.shape[0], w.shape[0]
    xp = np.concatenate([x, np.zeros(k, x.dtype)])
    c = np.zeros(n, x.dtype)
    for t in range(k):
        c += w[t] * xp[t:t + n]
    cb = 2 * (c - y)
    xb = np.zeros(n + k, x.dtype)
    for t in range(k):
        xb[t:t + n] += w[t] * cb
    return xb[:n]


def hand_prefix(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    c = np.cumsum(x)
    return 2 * np.cumsum((w * c)[::-1])[::-1]


HAND: dict[str, Callable[..., np.ndarray]] = {
    "blur": hand_blur, "tv": hand_tv, "nbody": hand_nbody, "conv1d": hand_conv1d,
    "prefix": hand_prefix,
}


# --- the same functions in JAX, differentiated by jax.jit(jax.grad(f)) ---------------------------
def jax_gradients() -> dict[str, Callable[..., np.ndarray]] | None:
    """``jax.jit(jax.grad(f))`` of each function (x64 enabled, so float64 stays float64 and
    float32 inputs stay float32), taking the hand gradient's arguments; None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def blur(x, w):
        n, m = x.shape
        p = jnp.pad(x, 1)
        b = sum(p[a:a + n, c:c + m] for a in range(3) for c in range(3)) / 9
        return jnp.sum(w * b)

    def tv(u):
        dx = u[1:, :-1] - u[:-1, :-1]
        dy = u[:-1, 1:] - u[:-1, :-1]
        return jnp.sum(jnp.sqrt(dx * dx + dy * dy + 1e-4))

    def nbody(x, m):
        d = x[:, None, :] - x[None, :, :]
        d2 = jnp.sum(d * d, axis=-1) + 0.01
        return jnp.sum(m[:, None] * m[None, :] / jnp.sqrt(d2))

    def conv1d(x, w, y):
        n, k = x.shape[0], w.shape[0]
        xp = jnp.concatenate([x, jnp.zeros(k, x.dtype)])
        c = sum(w[t] * xp[t:t + n] for t in range(k))
        return jnp.sum((c - y) ** 2)

    def prefix(x, w):
        c = jnp.cumsum(x)
        return jnp.sum(w * c * c)

    fns = {"blur": blur, "tv": tv, "nbody": nbody, "conv1d": conv1d, "prefix": prefix}

    def wrap(f: Callable) -> Callable[..., np.ndarray]:
        g = jax.jit(jax.grad(f))
        return lambda *a: g(*a).block_until_ready()

    return {name: wrap(f) for name, f in fns.items()}


def first_call(name: str, quick: bool, dtype: str) -> dict[str, float]:
    """In this (fresh) process: optimize + lower, then the first call."""
    src, wrt, _ = PROGRAMS[name]
    args = inputs(name, quick, np.dtype(dtype).type)
    t = time.perf_counter()
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    t_build = time.perf_counter() - t
    t, cpu = time.perf_counter(), time.process_time()
    g(**args)
    # (the CPU time too: on a shared machine it is less noisy than the wall time)
    return {"build_s": t_build, "first_call_s": time.perf_counter() - t,
            "first_call_cpu_s": time.process_time() - cpu,
            "compile_s": g.compile_seconds[np.dtype(dtype).char]}


def first_calls(name: str, quick: bool, dtype: str) -> tuple[dict, dict]:
    """Cold (empty cache directory) and warm (the same directory again) first calls."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "EQSAT_AD_CACHE_DIR": cache}
        cmd = [sys.executable, __file__, "--first-call", name, dtype] + (["--quick"] * quick)
        out = [json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True,
                                         text=True).stdout.strip().splitlines()[-1])
               for _ in range(2)]
    return out[0], out[1]


def measure(name: str, quick: bool, dtype: type, repeat: int,
            jax_grads: dict[str, Callable[..., np.ndarray]] | None) -> dict:
    src, wrt, _ = PROGRAMS[name]
    args = inputs(name, quick, dtype)
    prog = ea.parse(src)
    g_nb = ea.grad(prog, wrt, backend="numba")
    g_np = ea.grad(prog, wrt)
    hand = HAND[name]
    hand_args = [args[p] for p in ("x", "w", "y", "u", "m") if p in args]
    if name == "nbody":
        hand_args = [args["x"], args["m"]]
    want = hand(*hand_args)
    tol = 1e-8 if dtype == np.float64 else 1e-2
    for g in (g_nb, g_np):
        got = g(**args)
        assert got.dtype == dtype, (name, got.dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    fns: dict[str, Callable[[], object]] = {
        "numba_s": lambda: g_nb(**args),
        "numpy_backend_s": lambda: g_np(**args),
        "hand_numpy_s": lambda: hand(*hand_args),
    }
    if jax_grads is not None:
        jg = jax_grads[name]
        got = np.asarray(jg(*hand_args))  # the first call compiles (warm-up)
        assert got.dtype == dtype, (name, "jax", got.dtype)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
        fns["jax_jit_s"] = lambda: jg(*hand_args)
    # Interleaved: one run of each in turn, repeated; the median of each (one noisy machine).
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t)
    out: dict = {k: float(np.median(v)) for k, v in times.items()}
    out["fastest_s"] = {k: float(np.min(v)) for k, v in times.items()}  # printed, not tabled
    out["placement"] = dict(g_nb.compiled.schedule.placement)
    return out


NOTES = [
    "* Stencils (blur, total variation) and the prefix sum: one or two loop nests, producers "
    "fused; the innermost output loop runs as the interior then both edges (one loop), the "
    "next outer one as the edge rows (both ends, one loop) then the interior rows, so the "
    "interior runs without read guards (vectorized by LLVM); float32 stays float32 "
    "(constants are `F(c)`, named once at a kernel's top; checked above). Blur's 3x3 taps keep "
    "the optimized program's arithmetic (9 products by 1/9 and their sums, in the "
    "interpreter's order). Its kernel alone ran at about memory speed on a Zen 5 (0.5 ms "
    "for 1024² float64: 16 MB read and written) and is compute-bound on a Zen 4 (0.83 ms, "
    "where 16 MB copied in L3 take 0.23 ms; a hand-written 9-tap Numba loop 0.62-0.79 ms, "
    "dated section of 4 Dec 03:44); with glibc's allocator as it is (the experiments keep "
    "freed memory: one_core.py) the call adds a fresh output's page faults "
    "(~0.15 ms). The guard (backend/guard.py) keeps a fast result where the arguments lie "
    "in a box proven finite for both programs; its own check is a pass over each argument "
    "(~0.1-0.2 ms for w). A 2-D loop nest now does that check itself "
    "(backend/fused/checks.py): after each row it checks the entries of the row it just read "
    "(in cache) against the latest proven box, and the guard's pass is skipped when all lie "
    "inside (else the guard decides as before). On the Zen 4, counting them cost the kernel "
    "+0.04 ms against the guard's 0.1-0.15 ms pass; on the Intel Emerald Rapids the count "
    "cost 0.16 ms of blur's 0.83 ms (an int64 count holds LLVM to four lanes): the row's "
    "entries are now and-ed into a flag, one compare abs(v) <= hi where the box is symmetric "
    "about 0 (the guard's magnitude bounds), and the kernel alone ran 0.83 -> 0.73 ms "
    "float64, 0.60 -> 0.50 ms float32 (experiments/blur_floor.py, dated section of 5 Dec). "
    "A check inside the point loop made the read a gather (+0.9 ms). Factoring the 1/9 out "
    "of the taps (a rule the extraction does not prefer) measured only ~10% on the kernel. "
    "Two things made float64 blur slow "
    "against JAX: b_bar = w ran as the NumPy backend's code for that statement, which returns "
    "a copy (an 8 MB pass per call; now w itself is read), and the rows ran as one loop with "
    "an interior/edge branch, so LLVM's overlap check before the vectorized point loop "
    "covered rows -1 to H of w: an output np.empty placed right next to w (common) failed it "
    "and the point loop ran scalar (3x the kernel's time). Now the interior rows run as a "
    "loop of their own and the check passes wherever the output lies.",
    "* Cold first calls are Numba's compiler over the generated code (its time grows with "
    "the code, not with what the loops compute): each guarded body is written once per "
    "kernel (the edge rows' and a row's edges, each one loop: blur's kernel held four "
    "copies, 270 lines, now two, 193), constants are named once, integer bounds need no "
    "builtin min/max overload (each compiled as a function of its own) and no kernel has a "
    "C callback wrapper (backend/fused/compact.py). Blur's cold first call 2.4-3.1 s -> "
    "1.3-1.8 s, TV's 2.5-3.4 s -> 1.6-2.2 s (one pinned core, loaded machine; dated section "
    "below the table); the steady-state times are the same within noise.",
    "* conv1d: the sums over K run as a tiled interchange (backend/fused/tiles.py): for a "
    "tile of outputs (1 KiB of accumulators: 128 float64 points, 256 float32), the taps "
    "outer (eight per pass over the tile, unroll-and-jam), the "
    "tile's points inner, reading one contiguous view per array per pass (its eight taps "
    "at constant offsets in it: ~8% faster than a view per tap, which cost LLVM an alias "
    "check and an address per tap); each output still adds its terms in the "
    "interpreter's order (bit for bit the untiled loop's values), and the tile loop "
    "vectorizes (AVX-512 here). An interior narrower than 16 points runs point by point. "
    "c_bar runs in a sliding window of x_bar's loop (backend/fused/windows.py, decided by "
    "the schedule: a producer read by one loop nest over the same points at [i - K + 1, i]): "
    "for each chunk of 65536 points of x_bar, the points of c_bar it reads that the previous "
    "chunk did not are computed into a buffer (the chunk plus K - 1, in L2/L3; chunks of "
    "2048 ran ~15% slower by the fastest run: experiments/window_chunk.py), then x_bar's "
    "nest runs on the chunk; c_bar is never stored in full (each point computed once, by "
    "the same code: the values are the stored program's bit for bit). The driver also counts "
    "the chunk's x and y inside the guard's proven box while in cache, so the guard's pass "
    "over the arguments is skipped. Both nests are compute-bound for their unfused multiplies "
    "and adds (no FMA contraction: it would change the rounding).",
    "* N-body: the adjoint x_bar runs as one pair loop (backend/fused/pairs.py): the pairs "
    "(i, j) walked once, row by row, d2 and d2_bar fused into it (computed once per pair, "
    "shared by both sums and the three coordinates), the row sum accumulated in registers, "
    "the column sum added into x_bar's rows in order of i: no N x N array. The adjoint's "
    "arithmetic is the extracted program's (`1 / (2 sqrt(s)) * (m m / sqrt(s) ** 2)`: two "
    "divisions and a square root per pair), not `** -1.5`. Per row, the inner loop over j "
    "is vectorized (packed square roots and divisions, zmm registers here): it writes the "
    "row terms to a scratch row and adds the column terms into rows stored along j (x read "
    "from a copy stored coordinate by coordinate); a second loop then adds the scratch row "
    "in order of j (the three coordinates' chains interleaved), so the values are the "
    "scalar loop's bit for bit (not reassociated).",
    "* Intermediates that are never returned (N-body's d2_bar) live in "
    "per-thread scratch arrays reused by later calls: a fresh multi-megabyte array per call "
    "costs its page faults whenever the allocator has handed the memory back to the system.",
    "* First calls: cold = Numba compiling every kernel; warm = loading them from Numba's "
    "cache, dominated by Numba's one-time target initialization in the process (importing "
    "numba.np.arraymath, checking SciPy's BLAS: about 0.8 s of the warm first call on this "
    "loaded machine, 0.1-0.2 s unloaded), not by the cached kernels.",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--first-call", nargs=2, metavar=("NAME", "DTYPE"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=list(BENCHMARKED), choices=BENCHMARKED)
    ap.add_argument("--out", type=Path, default=RESULTS,
                    help="folder for the results file (default experiments/results)")
    ap.add_argument("--no-first-calls", action="store_true",
                    help="skip the fresh-process first-call measurements")
    a = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if a.first_call:
        print(json.dumps(first_call(a.first_call[0], a.quick, a.first_call[1])))
        return 0
    jax_grads = jax_gradients()
    if jax_grads is None:
        jax_note = "JAX is not installed in this environment: no JAX jit column."
    else:
        import jax

        jax_note = (f"JAX {jax.__version__} (CPU, x64 enabled): `jax.jit(jax.grad(f))` of the "
                    "same function written in jax.numpy, after a warm-up call, "
                    "`block_until_ready`.")
    started, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip() or "unknown"
    rows = []
    for name in a.only:
        for dtype in (np.float64, np.float32):
            m = measure(name, a.quick, dtype, a.repeat, jax_grads)
            nan = {"first_call_s": float("nan"), "build_s": float("nan")}
            cold, warm = ((nan, nan) if a.no_first_calls
                          else first_calls(name, a.quick, np.dtype(dtype).name))
            rows.append((name, np.dtype(dtype).name, m, cold, warm))
            print(name, np.dtype(dtype).name, m, cold, warm, flush=True)
    lines = [
        "# The fused loop backend (backend=\"numba\")",
        "",
        "`python experiments/numba_backend.py" + (" --quick" if a.quick else "") + "`: gradient "
        "time (median of " + str(a.repeat) + " runs, ms) of eqsat_ad with backend=\"numba\", "
        "with the NumPy backend, and a hand-written NumPy gradient; first call of a fresh "
        "process (s) with a cold and a warm Numba cache (build = parse + optimize + lower, "
        "first call = module load + Numba compile or cache load + one run). " + jax_note,
        f"One pinned core of {cpu()}, one BLAS thread (OpenBLAS's {blas_core()} kernels: "
        "experiments/one_core.py). The machine (2 cores) is shared with other jobs "
        "while this runs: timings are noisy (ratios from one run). This run: commit "
        f"{commit}, started "
        f"{started}, load average {load0:.1f} at the start and {os.getloadavg()[0]:.1f} at "
        "the end.",
        "",
        "Target (issue 15): numba / JAX jit <= 0.5; first call <= 3 s cold, <= 0.5 s warm.",
        "",
        "| gradient | dtype | numba ms | JAX jit ms | NumPy backend ms | hand NumPy ms | "
        "numba / JAX jit | numba / hand | numba / NumPy backend | cold first call s | "
        "warm first call s | build s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, dt, m, cold, warm in rows:
        jx = m.get("jax_jit_s")
        jax_ms = "–" if jx is None else f"{1e3 * jx:.2f}"
        vs_jax = "–" if jx is None else f"{m['numba_s'] / jx:.2f}"
        lines.append(
            f"| {name} | {dt} | {1e3 * m['numba_s']:.2f} | {jax_ms} | "
            f"{1e3 * m['numpy_backend_s']:.2f} | {1e3 * m['hand_numpy_s']:.2f} | {vs_jax} | "
            f"{m['numba_s'] / m['hand_numpy_s']:.2f} | "
            f"{m['numba_s'] / m['numpy_backend_s']:.2f} | {cold['first_call_s']:.2f} | "
            f"{warm['first_call_s']:.2f} | {warm['build_s']:.2f} |"
        )
    lines += ["", "Notes:", "", *NOTES]
    lines += ["", "Where each statement runs (float64 schedules):", ""]
    for name, dt, m, _, _ in rows:
        if dt == "float64":
            lines.append(f"* {name}: {m['placement']}")
    a.out.mkdir(exist_ok=True)
    path = a.out / ("numba_quick.md" if a.quick else "numba.md")
    # the dated sections below the table (measurements of single changes) are kept
    old = path.read_text().split("\n## ", 1) if path.exists() else []
    kept = "\n## " + old[1] if len(old) == 2 else ""
    path.write_text("\n".join(lines) + "\n" + kept)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
