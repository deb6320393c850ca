"""Tangent's benchmarks through the NumPy front end (``eqsat_ad.grad`` of plain NumPy functions).

Workloads (van Merriënboer et al., *Tangent*, 2017, and experiments/README.md):

* ``mlp``: one tanh layer + softmax cross-entropy, width 64..4096, batch 16 and 32, float32;
  gradient with respect to all weights and biases;
* ``halving``: Tangent's loop benchmark, 100 steps of "if sum(x) > 1: x /= 2", written with
  ``np.where`` (a data-dependent ``if`` is not translatable, by design);
* ``scalar_loop``: ``for i in range(n): s += x[i] * x[i]`` up to n = 64000; the front end turns
  the loop into one sum, so the gradient is O(n) (eager tape-based systems build one dense
  one-hot adjoint per ``x[i]``: O(n²)).

Each gradient is checked against a hand-written NumPy gradient before it is timed. Autograd and
JAX are measured when importable (skipped otherwise; JAX with float64 enabled, its scalar loop as
``lax.fori_loop``); PyTorch runs in a subprocess under the side venv's Python 3.11
(``--torch-python``, default ``.venv-torch/bin/python`` when present; see torch_peer.py). Pinned
to one core when possible. Writes ``tangent_benchmarks.md`` (and ``.json``, and a PNG when
matplotlib is installed) into ``--out`` (default experiments/out/) and prints the table.

    python experiments/tangent_benchmarks.py --quick     # smoke run, a few seconds
    python experiments/tangent_benchmarks.py             # full run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# One BLAS thread: the process is pinned to one core, and oversubscribed BLAS threads would make
# the matrix products of every system slow and noisy. Set before NumPy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eqsat_ad as ea  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_peer import Protocol, default_torch_python, torch_time  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
CLASSES = 10
HALVING_STEPS = 100
SLOW_S = 5.0  # a system slower than this at one size is skipped at larger sizes


# ================================================================================================
# The functions users write (translated by eqsat_ad from their source)
# ================================================================================================


def mlp_loss(x, y, W, b, V, c):
    h = np.tanh(x @ W + b)
    z = h @ V + c
    # Shifting by the row max does not change the loss, so its gradient is exactly zero:
    # stop_gradient says so (as jax.nn.logsumexp does) instead of differentiating through max.
    z = z - ea.stop_gradient(np.max(z, axis=1, keepdims=True))
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(y * logp, axis=1))


def halving(x):
    for _ in range(HALVING_STEPS):
        x = np.where(np.sum(x) > 1.0, x / 2.0, x)
    return np.sum(x)


def scalar_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


# ================================================================================================
# Hand-written NumPy gradients (the baseline)
# ================================================================================================


def mlp_hand(x, y, W, b, V, c):
    h = np.tanh(x @ W + b)
    z = h @ V + c
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    dz = (p - y) / x.shape[0]  # rows of y are one-hot
    dV = h.T @ dz
    dc = dz.sum(axis=0)
    da = (dz @ V.T) * (1 - h * h)
    return x.T @ da, da.sum(axis=0), dV, dc


def halving_hand(x):
    scale = 1.0
    for _ in range(HALVING_STEPS):
        if np.sum(x) > 1.0:
            x = x / 2.0
            scale /= 2.0
    return np.full_like(x, scale)


def scalar_loop_hand(x):
    g = np.empty_like(x)
    for i in range(x.shape[0]):
        g[i] = 2.0 * x[i]
    return g


def scalar_loop_vectorized(x):
    return 2.0 * x


# ================================================================================================
# Peers (each only when importable)
# ================================================================================================


def _peers() -> dict[str, Any]:
    found: dict[str, Any] = {}
    try:
        import autograd
        import autograd.numpy as anp

        found["autograd"] = (autograd, anp)
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)  # float64 stays float64 (float32 MLP stays f32)
        found["jax"] = (jax, jnp)
    except ImportError:
        pass
    return found


def peer_mlp(name: str, mod: Any) -> Callable[..., Any]:
    if name == "autograd":
        autograd, anp = mod

        def loss(x, y, W, b, V, c):
            h = anp.tanh(anp.dot(x, W) + b)
            z = anp.dot(h, V) + c
            z = z - anp.max(z, axis=1, keepdims=True)
            logp = z - anp.log(anp.sum(anp.exp(z), axis=1, keepdims=True))
            return -anp.mean(anp.sum(y * logp, axis=1))

        return autograd.grad(loss, argnum=(2, 3, 4, 5))
    jax, jnp = mod

    def jloss(x, y, W, b, V, c):
        h = jnp.tanh(x @ W + b)
        logp = jax.nn.log_softmax(h @ V + c, axis=1)
        return -jnp.mean(jnp.sum(y * logp, axis=1))

    g = jax.jit(jax.grad(jloss, argnums=(2, 3, 4, 5)))
    return lambda *a: [np.asarray(t) for t in jax.block_until_ready(g(*a))]


def peer_scalar_loop(name: str, mod: Any) -> Callable[..., Any] | None:
    if name == "autograd":
        autograd, _ = mod

        def f(x):
            s = 0.0
            for i in range(x.shape[0]):
                s = s + x[i] * x[i]
            return s

        return autograd.grad(f)
    jax, jnp = mod

    # JAX cannot trace an n-step Python loop in reasonable time: its idiom is lax.fori_loop.
    def jf(x):
        return jax.lax.fori_loop(0, x.shape[0], lambda i, s: s + x[i] * x[i], 0.0)

    g = jax.jit(jax.grad(jf))
    return lambda x: np.asarray(jax.block_until_ready(g(x)))


def peer_halving(name: str, mod: Any) -> Callable[..., Any] | None:
    if name == "autograd":
        autograd, anp = mod

        def f(x):
            for _ in range(HALVING_STEPS):
                x = anp.where(anp.sum(x) > 1.0, x / 2.0, x)
            return anp.sum(x)

        return autograd.grad(f)
    jax, jnp = mod

    def jf(x):
        for _ in range(HALVING_STEPS):
            x = jnp.where(jnp.sum(x) > 1.0, x / 2.0, x)
        return jnp.sum(x)

    g = jax.jit(jax.grad(jf))
    return lambda x: np.asarray(jax.block_until_ready(g(x)))


# ================================================================================================
# Measurement
# ================================================================================================


@dataclass
class Row:
    workload: str
    size: str
    n: int
    times_ms: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    compile_s: float | None = None
    statements: int | None = None
    optimized: bool = True


def timeit(fn: Callable[[], Any], budget: float) -> float:
    """Median seconds of ``fn()`` over up to 7 runs that fit in ``budget`` (at least 1)."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 7:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget and len(times) >= 1:
            break
    return statistics.median(times)


def paired_timeit(fns: dict[str, Callable[[], Any]], budget: float,
                  min_rounds: int = 7, max_rounds: int = 41) -> dict[str, float]:
    """Median seconds of each ``fn()``, calls interleaved round by round.

    On a shared machine the load drifts between two back-to-back measurements; alternating the
    calls exposes each function to the same drift, so their ratio is what the table compares.
    """
    for fn in fns.values():
        fn()  # warm caches and allocator before timing
    times: dict[str, list[float]] = {k: [] for k in fns}
    start = time.perf_counter()
    for r in range(max_rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
        if r + 1 >= min_rounds and time.perf_counter() - start > budget:
            break
    return {k: statistics.median(v) for k, v in times.items()}


def close(a: Any, b: Any, rtol: float) -> bool:
    a = a if isinstance(a, tuple | list) else (a,)
    b = b if isinstance(b, tuple | list) else (b,)
    return len(a) == len(b) and all(
        np.allclose(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64), rtol=rtol,
                    atol=rtol * 1e-2 * max(1.0, float(np.max(np.abs(q)))))
        for p, q in zip(a, b, strict=True)
    )


def measure(row: Row, name: str, fn: Callable[..., Any], args: tuple, want: Any, rtol: float,
            budget: float, slow: set[str]) -> None:
    if name in slow:
        row.times_ms[name] = None
        row.notes[name] = f"skipped (>{SLOW_S:.0f} s at a smaller size)"
        return
    try:
        got = fn(*args)
        ok = close(got, want, rtol)
        t = timeit(lambda: fn(*args), budget)
    except Exception as exc:  # a peer's failure is a result, not a crash of the benchmark
        row.times_ms[name] = None
        row.notes[name] = f"error: {type(exc).__name__}: {exc}"[:120]
        return
    row.times_ms[name] = t * 1e3
    if not ok:
        row.notes[name] = "WRONG GRADIENT"
    if t > SLOW_S:
        slow.add(name)


def measure_torch(row: Row, python: str | None, key: str, args: tuple, want: Any, rtol: float,
                  budget: float, slow: set[str]) -> None:
    """PyTorch eager in the side venv's subprocess (torch_peer.py), same protocol as measure."""
    name = "torch"
    if python is None:
        return  # not installed: no column, as for the in-process peers
    if name in slow:
        row.times_ms[name] = None
        row.notes[name] = f"skipped (>{SLOW_S:.0f} s at a smaller size)"
        return
    want = list(want) if isinstance(want, tuple | list) else [want]
    t, note = torch_time(python, key, args, want,
                         Protocol(budget=budget, min_reps=1, max_reps=7, warmup=False), rtol)
    row.times_ms[name] = None if t is None else t * 1e3
    if note:
        row.notes[name] = note
    if t is not None and t > SLOW_S:
        slow.add(name)


def run_eqsat(row: Row, fn: Callable[..., Any], wrt: Any, args: tuple, want: Any, rtol: float,
              budget: float, optimize: bool,
              hand: Callable[..., Any] | None = None) -> None:
    """Time eqsat_ad's gradient (with ``hand``: interleaved with it, both columns set)."""
    row.optimized = optimize
    t0 = time.perf_counter()
    try:
        g = ea.grad(fn, wrt=wrt, optimize=optimize)
        first = g(*args)
    except ea.EqsatError as exc:
        row.times_ms["eqsat_ad"] = None
        row.notes["eqsat_ad"] = f"error: {exc}"[:160]
        return
    row.compile_s = time.perf_counter() - t0
    row.statements = len(g.program.statements)
    ok = close(first, want, rtol)
    if hand is None:
        row.times_ms["eqsat_ad"] = timeit(lambda: g(*args), budget) * 1e3
    else:
        both = paired_timeit({"hand": lambda: hand(*args), "eqsat_ad": lambda: g(*args)},
                             budget * 2)
        row.times_ms.update({k: v * 1e3 for k, v in both.items()})
    if not ok:
        row.notes["eqsat_ad"] = "WRONG GRADIENT"


def mlp_rows(widths: list[int], batches: list[int], peers: dict[str, Any], budget: float,
             optimize: bool, torch_python: str | None) -> list[Row]:
    rows = []
    rng = np.random.default_rng(0)
    slow: set[str] = set()
    for batch in batches:
        for width in widths:
            f32 = np.float32
            x = rng.normal(size=(batch, width)).astype(f32)
            y = np.eye(CLASSES, dtype=f32)[rng.integers(0, CLASSES, size=batch)]
            W = (rng.normal(size=(width, width)) / np.sqrt(width)).astype(f32)
            b = np.zeros(width, f32)
            V = (rng.normal(size=(width, CLASSES)) / np.sqrt(width)).astype(f32)
            c = np.zeros(CLASSES, f32)
            args = (x, y, W, b, V, c)
            want = mlp_hand(*args)
            row = Row("mlp", f"batch {batch}, width {width}", width)
            # hand and eqsat_ad interleaved (paired_timeit): the ratio is the target's figure.
            row.times_ms["hand"] = None
            run_eqsat(row, mlp_loss, ("W", "b", "V", "c"), args, want, 1e-3, budget, optimize,
                      hand=mlp_hand)
            if row.times_ms["hand"] is None:  # eqsat_ad failed: time hand alone
                row.times_ms["hand"] = timeit(lambda a=args: mlp_hand(*a), budget) * 1e3
            for name, mod in peers.items():
                measure(row, name, peer_mlp(name, mod), args, want, 1e-3, budget, slow)
            measure_torch(row, torch_python, "tangent_mlp", (W, b, V, c, x, y), want, 1e-3,
                          budget, slow)
            rows.append(row)
            print(fmt_row(row), flush=True)
    return rows


def halving_rows(sizes: list[int], peers: dict[str, Any], budget: float,
                 optimize: bool, torch_python: str | None) -> list[Row]:
    rows = []
    rng = np.random.default_rng(1)
    slow: set[str] = set()
    for n in sizes:
        x = rng.random(n) * 4.0 / n + 1.0 / n
        want = halving_hand(x)
        row = Row("halving", f"{HALVING_STEPS} steps, n {n}", n)
        row.times_ms["hand"] = timeit(lambda x=x: halving_hand(x), budget) * 1e3
        run_eqsat(row, halving, "x", (x,), want, 1e-9, budget, optimize)
        for name, mod in peers.items():
            fn = peer_halving(name, mod)
            if fn is not None:
                measure(row, name, fn, (x,), want, 1e-9, budget, slow)
        measure_torch(row, torch_python, "halving", (x,), want, 1e-9, budget, slow)
        rows.append(row)
        print(fmt_row(row), flush=True)
    return rows


def scalar_loop_rows(sizes: list[int], peers: dict[str, Any], budget: float,
                     optimize: bool, torch_python: str | None) -> list[Row]:
    rows = []
    rng = np.random.default_rng(2)
    slow: set[str] = set()
    for n in sizes:
        x = rng.normal(size=n)
        want = scalar_loop_vectorized(x)
        row = Row("scalar_loop", f"n {n}", n)
        row.times_ms["hand"] = timeit(lambda x=x: scalar_loop_hand(x), budget) * 1e3
        row.times_ms["hand (vectorized)"] = timeit(lambda x=x: scalar_loop_vectorized(x),
                                                   budget) * 1e3
        run_eqsat(row, scalar_loop, "x", (x,), want, 1e-12, budget, optimize)
        for name, mod in peers.items():
            fn = peer_scalar_loop(name, mod)
            if fn is not None:
                measure(row, name, fn, (x,), want, 1e-9, budget, slow)
        measure_torch(row, torch_python, "loop_squares", (x,), want, 1e-9, budget, slow)
        rows.append(row)
        print(fmt_row(row), flush=True)
    return rows


# ================================================================================================
# Output
# ================================================================================================


def systems(rows: list[Row]) -> list[str]:
    names: list[str] = []
    for r in rows:
        for k in r.times_ms:
            if k not in names:
                names.append(k)
    return names


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def fmt_row(r: Row) -> str:
    parts = [f"{k} {fmt_ms(v)} ms" for k, v in r.times_ms.items()]
    return f"{r.workload:12s} {r.size:24s} " + ", ".join(parts)


def table(rows: list[Row]) -> str:
    names = systems(rows)
    head = (["workload", "size"] + [f"{n} (ms)" for n in names]
            + ["eqsat_ad / hand", "eqsat_ad compile (s)", "statements", "optimizer", "notes"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ours, hand = r.times_ms.get("eqsat_ad"), r.times_ms.get("hand")
        ratio = f"{ours / hand:.2f}×" if ours and hand else "—"
        notes = "; ".join(f"{k}: {v}" for k, v in r.notes.items())
        cells = [r.workload, r.size] + [fmt_ms(r.times_ms.get(n)) for n in names] + [
            ratio,
            "—" if r.compile_s is None else f"{r.compile_s:.2f}",
            "—" if r.statements is None else str(r.statements),
            "on" if r.optimized else "off",
            notes,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: list[Row], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    mlp = [r for r in rows if r.workload == "mlp"]
    groups = [
        ("MLP gradient, batch 16", [r for r in mlp if "batch 16" in r.size]),
        ("MLP gradient, batch 32", [r for r in mlp if "batch 32" in r.size]),
        ("scalar loop s += x[i]*x[i]", [r for r in rows if r.workload == "scalar_loop"]),
        ("100 halving steps (np.where)", [r for r in rows if r.workload == "halving"]),
    ]
    groups = [(t, g) for t, g in groups if g]
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {name: palette[k % len(palette)] for k, name in enumerate(systems(rows))}
    cols = min(2, len(groups))
    rows_n = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(6 * cols, 4.5 * rows_n), squeeze=False)
    for ax in axes.flat[len(groups):]:
        ax.set_visible(False)
    for ax, (title, g) in zip(axes.flat, groups, strict=False):
        for name in systems(g):
            pts = [(r.n, r.times_ms[name]) for r in g if r.times_ms.get(name)]
            label = "jax (lax.fori_loop)" if name == "jax" and "loop" in title else name
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=label, color=color[name])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("width" if "MLP" in title else "n")
        ax.set_ylabel("gradient time (ms)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, short timings")
    ap.add_argument("--no-optimize", action="store_true",
                    help="run the naive adjoint (skip the e-graph optimizer)")
    ap.add_argument("--naive-halving", action="store_true",
                    help="run the 100-step unrolled loop's naive adjoint (skip the optimizer)")
    ap.add_argument("--only", choices=("mlp", "halving", "scalar_loop"), action="append",
                    help="run only these workloads")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the PNG from tangent_benchmarks.json in --out (no timing)")
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: %(default)s)")
    ap.add_argument("--torch-python", default=default_torch_python(),
                    help="Python with torch==2.13.0 for the PyTorch peer (default: "
                         ".venv-torch/bin/python when present; PyTorch skipped otherwise)")
    args = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        except OSError:
            pass
    if args.replot:
        rows = [Row(**r) for r in json.loads((args.out / "tangent_benchmarks.json").read_text())]
        png = args.out / "tangent_benchmarks.png"
        print(f"plot: {png}" if plot(rows, png) else "plot skipped (matplotlib not installed)")
        return 0
    peers = _peers()
    args.torch_python = args.torch_python or None  # an empty path: no PyTorch peer
    if args.torch_python:
        peers_text = ", ".join([*peers, f"torch (subprocess: {args.torch_python})"])
    else:
        peers_text = ", ".join(peers) or "none"
    print(f"peers found: {peers_text}")
    optimize = not args.no_optimize
    if args.quick:
        widths, batches, loop_n, halving_n, budget = [64, 256], [16], [1000, 4000], [100], 0.2
    else:
        widths = [64, 128, 256, 512, 1024, 2048, 4096]
        batches, loop_n, halving_n, budget = [16, 32], [1000, 4000, 16000, 64000], [100, 10000], 1.0
    only = set(args.only or ("mlp", "halving", "scalar_loop"))
    rows: list[Row] = []
    if "mlp" in only:
        rows += mlp_rows(widths, batches, peers, budget, optimize, args.torch_python)
    if "halving" in only:
        # Unrolled, the loop is ~300 statements; the optimizer stays within its time limit.
        rows += halving_rows(halving_n, peers, budget, optimize and not args.naive_halving,
                             args.torch_python)
    if "scalar_loop" in only:
        rows += scalar_loop_rows(loop_n, peers, budget, optimize, args.torch_python)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    md = (
        "# Tangent benchmarks through the NumPy front end\n\n"
        f"Median gradient times (ms), one core, {'quick run' if args.quick else 'full run'}, "
        f"optimizer {'on' if optimize else 'off'} (halving: "
        f"{'on' if optimize and not args.naive_halving else 'off'}); "
        f"peers: {peers_text}.\n"
        "'hand' is a hand-written NumPy gradient; every gradient is checked against it first. "
        "MLP rows time 'hand' and 'eqsat_ad' interleaved call by call (median of 7-41 rounds), "
        "so their ratio sees the same machine load.\n\n"
        + table(rows) + "\n"
    )
    (out / "tangent_benchmarks.md").write_text(md)
    (out / "tangent_benchmarks.json").write_text(json.dumps([asdict(r) for r in rows], indent=1))
    print()
    print(md)
    png = out / "tangent_benchmarks.png"
    print(f"plot: {png}" if plot(rows, png) else "plot skipped (matplotlib not installed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
