"""Where a sweep program's gradient spends its time: JAX's ops against the Numba backend's steps.

    taskset -c 1 python experiments/op_times.py mlp_numpy mlp

For each program, at the sweep's benchmark sizes (float64, one thread each):

* **JAX**: ``jax.jit(jax.grad(f))`` traced by JAX's profiler over ``CALLS`` calls; the time
  per call of each XLA op of the compiled program (a fusion, a dot, a YNNPACK call), from the
  profiler's trace. The profiler adds its own cost around each call, not inside the ops.
* **eqsat_ad** (``backend="numba"``): the generated module's ``run`` with each step timed (a
  loop kernel ``_k_*``, a NumPy part ``_np_*``, a BLAS product ``_product_into#k``), over
  ``CALLS`` calls, and what the call spends outside them (the guard's scan, binding, outputs).

Each list is sorted by time; the two are matched by eye (an XLA fusion may hold what is two
steps here, and the reverse). Experiments only: the numbers move with the machine
(experiments/results/numba.md records what was measured and when).
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import configure  # noqa: E402

configure()

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sweep_jax import JaxUnavailable, jax_gradient  # noqa: E402
from sweep_programs import program  # noqa: E402

import eqsat_ad as ea  # noqa: E402

CALLS = 100
_SKIP = ("ThunkExecutor", "PjitFunction", "Execute", "$", "end: ", "Handle", "Allocate",
         "Parse", "Wait", "Collect", "Create", "Check", "PythonRef", "CommonPjRt", "Threadpool")


def jax_ops(name: str) -> dict[str, float]:
    """Milliseconds per call of each op of JAX's compiled gradient (empty: JAX cannot run
    it)."""
    import jax

    sp = program(name)
    try:
        run = jax_gradient(sp)(sp.inputs(sp.bench, seed=0))
    except JaxUnavailable:
        return {}
    for _ in range(10):
        run()
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            for _ in range(CALLS):
                run()
        (path,) = glob.glob(os.path.join(d, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
    spent: dict[str, float] = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and not e["name"].startswith(_SKIP):
            spent[e["name"]] += e["dur"] / 1e3 / CALLS  # (µs in the trace)
    return dict(spent)


def numba_steps(name: str) -> tuple[dict[str, float], float]:
    """Milliseconds per call of each step of the Numba backend's ``run``, and of the whole
    call (median)."""
    sp = program(name)
    opts: dict[str, Any] = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
    g = ea.grad(sp.program(), wrt=sp.wrt, backend="numba", **opts)
    inputs = sp.inputs(sp.bench, seed=0)
    g(**inputs)
    module = getattr(g.compiled, "_modules", {}).get("d")  # (none: the NumPy program runs)
    products = max(1, g.source.count("_product_into("))
    spent: dict[str, float] = collections.defaultdict(float)
    seen = {"products": 0}

    def timed(fn: Any, name: str) -> Any:
        def call(*args: Any) -> Any:
            key = name
            if name == "_product_into":  # (one function, called once per product)
                key = f"{name}#{seen['products'] % products}"
                seen["products"] += 1
            t0 = time.perf_counter()
            out = fn(*args)
            spent[key] += (time.perf_counter() - t0) * 1e3 / CALLS
            return out
        return call

    for attr in list(vars(module)) if module is not None else []:
        fn = getattr(module, attr)
        if callable(fn) and attr.startswith(("_k", "_np_", "_product_into")):
            setattr(module, attr, timed(fn, attr))
    calls = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        g(**inputs)
        calls.append((time.perf_counter() - t0) * 1e3)
    total = float(np.mean(calls))
    spent["(outside the steps)"] = total - sum(spent.values())
    return dict(spent), float(np.median(calls))


def main(names: list[str]) -> None:
    for name in names:
        ops = jax_ops(name)
        steps, call = numba_steps(name)
        print(f"\n{name}: eqsat_ad (numba) {call:.3f} ms a call; JAX's ops add up to "
              f"{sum(ops.values()):.3f} ms")
        print(f"  {'eqsat_ad step':<28}{'ms':>8}    {'XLA op':<28}{'ms':>8}")
        mine = sorted(steps.items(), key=lambda kv: -kv[1])
        theirs = sorted(ops.items(), key=lambda kv: -kv[1])
        for k in range(max(len(mine), len(theirs))):
            left = f"  {mine[k][0]:<28}{mine[k][1]:>8.3f}" if k < len(mine) else " " * 38
            right = f"    {theirs[k][0][:28]:<28}{theirs[k][1]:>8.3f}" if k < len(theirs) \
                else ""
            print(left + right)


if __name__ == "__main__":
    main(sys.argv[1:] or ["mlp_numpy"])
