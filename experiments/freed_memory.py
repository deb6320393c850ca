"""Repeated calls with glibc's default allocator against ``ea.keep_freed_memory()``.

    taskset -c 1 python experiments/freed_memory.py [--processes 3] [--calls 30]

Some sweep programs' gradients (benchmark sizes, experiments/sweep_programs.py), on the NumPy
and the Numba backend, each in fresh processes: five warm-up calls, then ``--calls`` timed
calls; the median time and the minor page faults per call (``getrusage``), with the allocator
as glibc leaves it and after :func:`eqsat_ad.keep_freed_memory`. Writes
experiments/results/freed_memory.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import blas_core, configure, cpu  # noqa: E402

PROGRAMS = ("mlp", "softmax_xent", "attention", "layer_norm", "logsumexp", "nmf")
RESULTS = Path(__file__).resolve().parent / "results"


def measure(name: str, backend: str, keep: bool, calls: int) -> dict[str, float]:
    """In this (fresh) process: the median call time (ms) and minor faults per call."""
    configure(keep_freed_memory=keep)
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sweep_programs import program

    import eqsat_ad as ea

    sp = program(name)
    inputs = sp.inputs(sp.bench, seed=0)
    opts = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
    g = ea.grad(sp.program(), wrt=sp.wrt, backend=backend, **opts)
    for _ in range(5):
        g(**inputs)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        g(**inputs)
        times.append(time.perf_counter() - t)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return {"ms": float(np.median(times)) * 1e3, "faults": faults / calls}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--only", nargs="*", default=list(PROGRAMS))
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--one", nargs=3, metavar=("NAME", "BACKEND", "KEEP"))
    a = ap.parse_args(argv)
    if a.one:
        name, backend, keep = a.one
        print(json.dumps(measure(name, backend, keep == "1", a.calls)))
        return 0
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for name in a.only:
        for backend in ("numpy", "numba"):
            got: dict[str, list[dict[str, float]]] = {"0": [], "1": []}
            for _ in range(a.processes):
                for keep in ("0", "1"):  # (alternating, so drifts of the machine fall on both)
                    cmd = [sys.executable, __file__, "--calls", str(a.calls),
                           "--one", name, backend, keep]
                    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    got[keep].append(json.loads(done.stdout.strip().splitlines()[-1]))
            rows.append((name, backend, got))
            print(name, backend, {k: [f"{r['ms']:.2f} ms / {r['faults']:.0f}" for r in v]
                                  for k, v in got.items()}, flush=True)

    def cell(runs: list[dict[str, float]]) -> str:
        return (" ".join(f"{r['ms']:.2f}" for r in runs) + " | "
                + " ".join(f"{r['faults']:.0f}" for r in runs))

    lines = [
        "# Repeated calls: glibc's allocator as it is, and with `ea.keep_freed_memory()`",
        "",
        f"`python experiments/freed_memory.py --processes {a.processes} --calls {a.calls}`: "
        "each gradient (the sweep's benchmark sizes) in fresh processes on one pinned core of "
        f"{cpu()} (one thread per library; OpenBLAS's {blas_core()} kernels), five warm-up "
        f"calls, then {a.calls} timed: the median call (ms) and the minor page faults per "
        "call, one figure per process, the processes alternating between the default "
        f"allocator and `keep_freed_memory()`. Started {started}, load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "| gradient | backend | default: ms | default: faults per call | kept: ms | "
        "kept: faults per call |",
        "|---|---|---|---|---|---|",
    ]
    for name, backend, got in rows:
        lines.append(f"| {name} | {backend} | {cell(got['0'])} | {cell(got['1'])} |")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "freed_memory.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out / 'freed_memory.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
