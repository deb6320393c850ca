"""How far the Numba backend's ratio to JAX jit moves from one process to the next.

    taskset -c 1 python experiments/ratio_spread.py [--processes 5] [--repeat 21] [--quick]

Issue 15's targets are ratios in one run, and on this shared machine one run's ratio is one
draw: JAX's time for the same gradient moved up to 1.7x between processes started a minute
apart (experiments/results/numba.md). This experiment measures the same gradients in K fresh
processes, one after the other on the pinned core (the first of the affinity, inherited by the
children), each as ``numba_backend.py`` measures them (interleaved runs, medians; the stencil,
N-body, conv1d and prefix-sum gradients, float64 and float32) and as ``numba_compare.py``
measures the sweep's exp-bound and BLAS-bound programs (logsumexp, softmax_xent, mlp,
mlp_numpy; float64). For each gradient and system: the median over the processes of each
process's median time, and each process's numba / JAX jit and numba / NumPy backend ratio,
then how many processes met the target. Writes experiments/results/ratio_spread.md (with
``--quick``, ratio_spread_quick.md: the fused gradients at their quick sizes; the sweep
programs stay at the sweep's benchmark sizes, and ``--repeat`` applies to the fused ones only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import blas_core, configure, cpu  # noqa: E402

configure()  # one thread each; set before NumPy (children inherit it)

import numpy as np  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# Issue 15's target against JAX jit: 0.5 for these four gradients; 1.0 for the others (the
# prefix sum and the sweep's programs: every dense program of the sweep).
FUSED_TARGET, SWEEP_TARGET = 0.5, 1.0
FUSED_TARGETED = ("blur", "tv", "nbody", "conv1d")
SWEEP_NAMES = ("logsumexp", "softmax_xent", "mlp", "mlp_numpy")


def child(quick: bool, repeat: int) -> dict[str, dict[str, float]]:
    """One process's medians (seconds) per gradient: numba, jax, numpy."""
    import numba_backend as nbk
    import numba_compare as cmp

    jax_grads = nbk.jax_gradients()
    out: dict[str, dict[str, float]] = {}
    for name in nbk.BENCHMARKED:
        for dtype in (np.float64, np.float32):
            m = nbk.measure(name, quick, dtype, repeat, jax_grads)
            out[f"{name} {np.dtype(dtype).name}"] = {
                "numba": m["numba_s"], "numpy": m["numpy_backend_s"],
                **({"jax": m["jax_jit_s"]} if "jax_jit_s" in m else {})}
    for name in SWEEP_NAMES:
        med, _ = cmp.compare(name)  # milliseconds
        out[f"{name} float64 (sweep)"] = {k: v / 1e3 for k, v in med.items()}
    return out


def spread_row(key: str, runs: list[dict[str, dict[str, float]]]) -> str:
    """The table row of one gradient over the processes ``runs``."""
    target = FUSED_TARGET if key.split()[0] in FUSED_TARGETED else SWEEP_TARGET
    ms = {s: float(np.median([r[key][s] for r in runs])) * 1e3
          for s in ("numba", "jax", "numpy") if all(s in r[key] for r in runs)}
    cells = [key, *(f"{ms[s]:.2f}" if s in ms else "–" for s in ("numba", "jax", "numpy"))]
    if "jax" in ms:
        vs_jax = [r[key]["numba"] / r[key]["jax"] for r in runs]
        cells += [" ".join(f"{v:.2f}" for v in vs_jax),
                  f"{np.median(vs_jax):.2f} ({min(vs_jax):.2f}–{max(vs_jax):.2f})",
                  f"{sum(v <= target for v in vs_jax)}/{len(runs)} (≤ {target})"]
    else:
        cells += ["–", "–", "–"]
    vs_np = [r[key]["numba"] / r[key]["numpy"] for r in runs]
    cells += [f"{np.median(vs_np):.2f} ({min(vs_np):.2f}–{max(vs_np):.2f})"]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if a.child:
        print(json.dumps(child(a.quick, a.repeat)))
        return 0
    started, load0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip() or "unknown"
    cmd = [sys.executable, __file__, "--child", "--repeat", str(a.repeat)] + ["--quick"] * a.quick
    runs = []
    for k in range(a.processes):
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"process {k + 1}/{a.processes} done", flush=True)
    lines = [
        "# The Numba backend's ratios, process by process",
        "",
        f"`python experiments/ratio_spread.py --processes {a.processes} --repeat {a.repeat}"
        + (" --quick" if a.quick else "") + "`: the same gradients measured in "
        f"{a.processes} fresh processes, one after the other on one pinned core of {cpu()} "
        "(one thread "
        f"per library; OpenBLAS's {blas_core()} kernels). Each process measures as "
        "`numba_backend.py` (interleaved runs, medians) and, for the sweep's programs, as "
        "`numba_compare.py` (rounds of 9 calls, the median of the rounds' medians). Times: "
        "the median over the processes, ms. Ratios: each process's, in order, then their "
        "median (min–max) and how many processes met issue 15's target. This run: commit "
        f"{commit}, started {started}, load average {load0:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "| gradient | numba ms | JAX jit ms | NumPy backend ms | numba / JAX jit, each "
        "process | numba / JAX jit | met | numba / NumPy backend |",
        "|---|---|---|---|---|---|---|---|",
        *(spread_row(key, runs) for key in runs[0]),
    ]
    a.out.mkdir(exist_ok=True)
    path = a.out / ("ratio_spread_quick.md" if a.quick else "ratio_spread.md")
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
