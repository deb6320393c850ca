"""Before/after of two fused-backend schedule pieces, in one process (interleaved, medians).

    python experiments/numba_schedule_ab.py [--repeat R]

* pair loops (backend/fused/pairs.py) on vs off (off: ``pair_form`` finds none, the earlier
  schedule), on N-body's gradient (N = 1024), beside ``jax.jit(jax.grad(f))`` when JAX is
  installed;
* union windows (backend/fused/brackets.py, ``union_window``) on vs off, on blur_window's
  gradient (1024²), beside the NumPy backend.

float64 and float32, one pinned core (the first of the affinity), one BLAS / XLA thread. Ratios
from one run: the same machine load for both sides. Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_programs import PROGRAMS  # noqa: E402
from numba_backend import inputs, jax_gradients  # noqa: E402
from sweep_programs import program as sweep_program  # noqa: E402

import eqsat_ad as ea  # noqa: E402
import eqsat_ad.backend.fused as fused  # noqa: E402
from eqsat_ad.backend.fused import brackets  # noqa: E402
from eqsat_ad.backend.fused import program as fused_program  # noqa: E402


def _without(module: object, name: str, src: str, wrt: str) -> object:
    """The gradient compiled with ``module.name`` switched off (finding nothing)."""
    saved = getattr(module, name)
    setattr(module, name, lambda *a: None)
    fused._CACHE.clear()
    try:
        return ea.grad(ea.parse(src + "\n"), wrt, backend="numba")  # (a program of its own)
    finally:
        setattr(module, name, saved)


def _time(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def _calls(on: Callable, off: Callable, peer: Callable | None,
           args: dict[str, np.ndarray]) -> dict[str, Callable[[], object]]:
    fns: dict[str, Callable[[], object]] = {"on": lambda: on(**args), "off": lambda: off(**args)}
    if peer is not None:
        fns["peer"] = peer
    return fns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    a = ap.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"load average {os.getloadavg()[0]:.1f} at {time.strftime('%H:%M UTC', time.gmtime())}")
    print("| change | gradient | dtype | on ms | off ms | peer | peer ms | on / off | "
          "on / peer | off / peer |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    src, wrt, _ = PROGRAMS["nbody"]
    on = ea.grad(ea.parse(src), wrt, backend="numba")
    off = _without(fused_program, "pair_form", src, wrt)
    jax = (jax_gradients() or {}).get("nbody")
    blur = sweep_program("blur_window")
    b_on = ea.grad(ea.parse(blur.target), "x", backend="numba")
    b_off = _without(brackets, "union_window", blur.target, "x")
    b_np = ea.grad(ea.parse(blur.target), "x")
    for dt in (np.float64, np.float32):
        args = inputs("nbody", False, dt)
        np.testing.assert_allclose(on(**args), off(**args), rtol=1e-4, atol=1e-4)
        peer = None if jax is None else (lambda j=jax, x=args["x"], m=args["m"]: j(x, m))
        _row("pair loops", "nbody", dt, _time(_calls(on, off, peer, args), a.repeat), "JAX jit")
        x = {k: v.astype(dt) for k, v in blur.make_inputs(blur.bench, np.random.default_rng(0))
             .items()}
        np.testing.assert_allclose(b_on(**x), b_off(**x), rtol=1e-4, atol=1e-4)
        _row("union windows", "blur_window", dt,
             _time(_calls(b_on, b_off, lambda g=b_np, x=x: g(**x), x), a.repeat),
             "NumPy backend")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


def _row(change: str, name: str, dt: type, m: dict[str, float], peer: str) -> None:
    p = m.get("peer")
    cells = [change, name, np.dtype(dt).name, f"{1e3 * m['on']:.2f}", f"{1e3 * m['off']:.2f}",
             peer if p else "–", f"{1e3 * p:.2f}" if p else "–", f"{m['on'] / m['off']:.2f}",
             f"{m['on'] / p:.2f}" if p else "–", f"{m['off'] / p:.2f}" if p else "–"]
    print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
