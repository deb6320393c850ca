"""eqsat_ad's gradients next to other AD systems, as ratios to hand-written NumPy gradients.

Workloads (experiments/README.md): k traces of A; a Python loop of scalar reads
``s += x[i] * x[i]`` (translated loop-free: one Σ); a loop-free sum of k scalar reads
``x[0]² + ... + x[k-1]²`` (E5: a point-sparse gradient); diag (E3); a strided gather (E9); a
tanh MLP; the matrix chain Σ(A@B@C) with tall/flat shapes. Systems: hand-written NumPy, eqsat_ad
(optimized gradient; NumPy backend, and backend="numba": fused loop nests), autograd, JAX
(eager and jit) and PyTorch eager, each only when importable (nothing is installed by this
script). PyTorch runs in a subprocess under the side venv's Python
3.11 (``--torch-python``, default ``.venv-torch/bin/python`` when it exists; see torch_peer.py).
Every process is pinned to one core.

Writes peers.md and peers.png (ratios to hand-written NumPy, log scale; needs matplotlib) into
``--out`` (default experiments/out/) and prints the table.

    python experiments/peers.py            # full sizes (minutes)
    python experiments/peers.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One core, one BLAS thread, OpenBLAS on the CPU's own kernels: before NumPy starts.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure  # noqa: E402

configure(xla=False)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.examples import example, k_reads, k_traces  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_peer import Protocol, default_torch_python, torch_time  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SLOW = 2.0  # seconds: a system slower than this per call is timed once


def pin_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def timeit(fn: Callable[[], Any], budget: float) -> float:
    t0 = time.perf_counter()
    fn()  # warm-up: compilation, caches
    first = time.perf_counter() - t0
    if first > SLOW:
        return first
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < 100):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def optional(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except Exception:  # not installed, or broken install: skip that system
        return None


# ================================================================================================
# Workloads: f(xp, *arrays) written once for NumPy-like modules
# ================================================================================================


@dataclass
class Workload:
    name: str
    arrays: dict[str, np.ndarray]
    f: Callable[..., Any]  # f(xp, *arrays) -> scalar
    hand: Callable[..., Any]  # hand-written gradient w.r.t. the first array
    eqsat: Callable[[str], Callable[..., Any]]  # the eqsat_ad gradient (first array), by backend
    torch_key: str  # the workload's name in torch_peer.py
    loop: bool = False  # f is a Python loop (skip JAX jit, which unrolls it)


def _k_traces(quick: bool, k: int) -> Workload:
    n = 256 if quick else 2048
    a = np.random.default_rng(0).normal(size=(n, n))

    def f(xp, A):
        total = 0.0
        for _ in range(k):
            total = total + xp.trace(A)
        return total

    return Workload(
        f"{k} traces of A, N={n}", {"A": a}, f, lambda A: k * np.eye(A.shape[0]),
        lambda backend: ea.grad(k_traces(k).program(), wrt="A", backend=backend), f"traces:{k}",
    )


def _scalar_reads(quick: bool) -> Workload:
    n = 1000 if quick else 16000
    x = np.random.default_rng(1).normal(size=n)

    def f(xp, x):
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] * x[i]
        return s

    def build(backend: str):
        return ea.grad(loop_sum_of_squares, wrt="x", backend=backend)

    return Workload(f"Python loop s += x[i]*x[i], n={n}", {"x": x}, f, lambda x: 2 * x, build,
                    "loop_squares", loop=True)


def _point_reads(quick: bool) -> Workload:
    n, k = (4096, 16) if quick else (65536, 256)
    x = np.random.default_rng(6).normal(size=n)

    def f(xp, x):
        # Loop-free: k scalar reads x[0]**2 + ... + x[k-1]**2 (E5), unrolled by Python.
        total = 0.0
        for t in range(k):
            total = total + x[t] * x[t]
        return total

    def hand(x):
        g = np.zeros_like(x)
        g[:k] = 2 * x[:k]
        return g

    return Workload(f"k scalar reads x[0]² + … + x[k-1]², k={k}, N={n}", {"x": x}, f, hand,
                    lambda backend: ea.grad(k_reads(k).program(), wrt="x", backend=backend),
                    f"point_reads:{k}")


def loop_sum_of_squares(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def _diag(quick: bool) -> Workload:
    n = 256 if quick else 2048
    rng = np.random.default_rng(2)
    x, b = rng.normal(size=n), rng.normal(size=(n, n))
    ex = example("E3")

    def f(xp, x, B):
        return xp.sum(xp.diag(x) * B)

    return Workload(f"diag: Σ diag(x)∘B, N={n}", {"x": x, "B": b}, f,
                    lambda x, B: np.diag(B).copy(),
                    lambda backend: ea.grad(ex.program(), wrt="x", backend=backend), "diag")


def _gather(quick: bool) -> Workload:
    n = 4096 if quick else 1 << 20
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=n), rng.normal(size=n)
    ex = example("E9")
    half = (n + 1) // 2

    def f(xp, x, w):
        return xp.sum(w[:half] * x[::2])

    def hand(x, w):
        g = np.zeros_like(x)
        g[::2] = w[:half]
        return g

    return Workload(f"strided gather y = x[::2], N={n}", {"x": x, "w": w}, f, hand,
                    lambda backend: ea.grad(ex.program(), wrt="x", backend=backend), "gather")


def _mlp(quick: bool) -> Workload:
    b, width, k = (16, 64, 10) if quick else (128, 1024, 10)
    rng = np.random.default_rng(4)
    ex = example("mlp")
    inputs = ex.inputs({"B": b, "D": width, "H": width, "K": k}, seed=4)
    names = ("W1", "X", "b1", "W2", "b2", "Y")
    arrays = {n: inputs[n] for n in names}
    del rng

    def f(xp, W1, X, b1, W2, b2, Y):
        h = xp.tanh(X @ W1.T + b1)
        z = h @ W2.T + b2
        lse = xp.log(xp.sum(xp.exp(z), 1))
        return xp.sum(lse) - xp.sum(Y * z)

    def hand(W1, X, b1, W2, b2, Y):
        h = np.tanh(X @ W1.T + b1)
        z = h @ W2.T + b2
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        dh = (p * Y.sum(1, keepdims=True) - Y) @ W2
        return (dh * (1 - h**2)).T @ X

    def build(backend: str):
        g = ea.grad(ex.program(), wrt="W1", backend=backend)
        return lambda W1, X, b1, W2, b2, Y: g(X=X, W1=W1, b1=b1, W2=W2, b2=b2, Y=Y)

    return Workload(f"tanh MLP, B={b}, width {width}", arrays, f, hand, build, "mlp")


def _chain(quick: bool) -> Workload:
    n, r = (400, 10) if quick else (4000, 10)
    ex = example("chain")
    inputs = ex.inputs({"N": n, "R": r}, seed=5)

    def f(xp, A, B, C):
        return xp.sum(A @ B @ C)

    def hand(A, B, C):
        return np.outer(np.ones(A.shape[0]), B @ C.sum(1))

    return Workload(f"Σ(A@B@C), A {n}×{r}, B {r}×{n}, C {n}×{r}", dict(inputs), f, hand,
                    lambda backend: ea.grad(ex.program(), wrt="A", backend=backend), "chain")


WORKLOADS = (
    lambda q: _k_traces(q, 1),
    lambda q: _k_traces(q, 32),
    _scalar_reads,
    _point_reads,
    _diag,
    _gather,
    _mlp,
    _chain,
)


# ================================================================================================
# Systems
# ================================================================================================


def systems(w: Workload, quick: bool,
            torch_python: str | None) -> dict[str, Callable[[], Any] | str | tuple]:
    """name -> zero-argument gradient call, a string saying why it is skipped, or (for PyTorch,
    measured in a subprocess) a (seconds | None, note) pair."""
    args = list(w.arrays.values())
    out: dict[str, Callable[[], Any] | str] = {"hand-written NumPy": lambda: w.hand(*args)}
    g = w.eqsat("numpy")
    out["eqsat_ad"] = lambda: g(*args)
    try:
        g_nb = w.eqsat("numba")
        g_nb(*args)  # compiles (or loads from Numba's cache) before timing
        out["eqsat_ad (numba)"] = lambda: g_nb(*args)
    except ImportError:
        out["eqsat_ad (numba)"] = "not installed (pip install 'eqsat-ad[numba]')"
    except ea.EqsatError as exc:
        out["eqsat_ad (numba)"] = f"not supported: {str(exc).split(':')[0]}"[:90]

    ag = optional("autograd")
    if ag is not None and w.loop and len(args[0]) > (1000 if quick else 4000):
        # Every x[i] on autograd's tape backpropagates a dense one-hot n-vector: O(n²), minutes.
        out["autograd"] = "skipped (O(n²) tape; see tangent_benchmarks.md)"
    elif ag is not None:
        anp = importlib.import_module("autograd.numpy")
        agrad = ag.grad(lambda *a: w.f(anp, *a))
        out["autograd"] = lambda: agrad(*args)
    else:
        out["autograd"] = "not installed"

    jax = optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)  # float64, as every other system here
        jnp = importlib.import_module("jax.numpy")
        jargs = [jnp.asarray(a) for a in args]
        jgrad = jax.grad(lambda *a: w.f(jnp, *a))
        if w.loop and len(args[0]) > (1000 if quick else 2000):
            out["JAX eager"] = "skipped (op-by-op loop too slow)"
        else:
            out["JAX eager"] = lambda: jgrad(*jargs).block_until_ready()
        if w.loop:
            out["JAX jit"] = "skipped (jit unrolls the Python loop)"
        else:
            jit = jax.jit(jgrad)
            out["JAX jit"] = lambda: jit(*jargs).block_until_ready()
    else:
        out["JAX eager"] = out["JAX jit"] = "not installed"

    if w.loop and len(args[0]) > (1000 if quick else 16000):
        out["PyTorch eager"] = "skipped (op-by-op loop too slow)"
    else:
        out["PyTorch eager"] = torch_time(
            torch_python, w.torch_key, args, [w.hand(*args)],
            Protocol(budget=0.05 if quick else 0.5, slow=SLOW))
    return out


def check(w: Workload, fn: Callable[[], Any]) -> None:
    got = np.asarray(fn())
    want = w.hand(*w.arrays.values())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def plot(results: dict[str, dict[str, float]], path: Path) -> bool:
    """One group of bars per workload: each system's time / hand-written time (log scale)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [n for n in dict.fromkeys(k for r in results.values() for k in r)
             if n != "hand-written NumPy"]
    fig, ax = plt.subplots(figsize=(11, 0.75 * len(results) + 2))
    height = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        ys = [i + j * height for i in range(len(results))]
        vals = [r.get(name, np.nan) for r in results.values()]
        ax.barh(ys, vals, height, label=name, color=f"C{j}")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(results))], list(results), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("gradient time / hand-written NumPy (log scale; missing bar: skipped)")
    ax.set_title("eqsat_ad and peers, one core, float64")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: %(default)s)")
    ap.add_argument("--torch-python", default=default_torch_python(),
                    help="Python with torch==2.13.0 for the PyTorch peer (default: "
                         ".venv-torch/bin/python when present; PyTorch skipped otherwise)")
    args = ap.parse_args(argv)
    pin_one_core()
    budget = 0.05 if args.quick else 0.5
    lines = [
        "# eqsat_ad vs peers: gradient time, and ratio to hand-written NumPy",
        "",
        "Medians on one pinned core, float64. Ratio = system / hand-written.",
        "",
        "| workload | system | time ms | ratio |",
        "|---|---|---|---|",
    ]
    results: dict[str, dict[str, float]] = {}
    for make in WORKLOADS:
        w = make(args.quick)
        ratios = results.setdefault(w.name, {})
        print(f"{w.name}", flush=True)
        hand_t: float | None = None
        for name, fn in systems(w, args.quick, args.torch_python).items():
            if isinstance(fn, str):
                lines.append(f"| {w.name} | {name} | {fn} | – |")
                continue
            if isinstance(fn, tuple):  # measured (and checked) in the torch subprocess
                t, note = fn
                if t is None or note:
                    lines.append(f"| {w.name} | {name} | {note} | – |")
                    continue
            else:
                try:
                    check(w, fn)
                    t = timeit(fn, budget)
                except Exception as exc:  # a peer failing is a result, not a crash
                    lines.append(f"| {w.name} | {name} | failed: {type(exc).__name__} | – |")
                    continue
            if hand_t is None:
                hand_t = t
            lines.append(f"| {w.name} | {name} | {t * 1e3:.3g} | {t / hand_t:.3g} |")
            ratios[name] = t / hand_t
            print(f"  {name}: {t * 1e3:.3g} ms", flush=True)
    md = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.md").write_text(md)
    made_plot = plot(results, args.out / "peers.png")
    print(md)
    print(f"wrote {args.out / 'peers.md'}" + (" and peers.png" if made_plot else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
