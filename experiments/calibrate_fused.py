"""Calibrate the fused backend's loop prices (eqsat_ad/backend/fused/schedule.py) on this machine.

The schedule prices a loop nest in points of work per output point (one per read and operation)
and keeps it where it costs at most ``LOOP_RATIO`` times the NumPy plan's price (one point per
element of a pass). Two kinds of loop work run far slower than that count says, because NumPy
vectorizes them and a scalar Numba loop does not:

* a libm call (``log``, ``sin``, ``x ** 1.5`` ...): NumPy's ufuncs use SIMD (AVX-512)
  implementations, a Numba loop calls the scalar libm function once per element (``exp``,
  ``expm1``, ``tanh`` and ``sigmoid`` are eqsat_ad/backend/fused/vmath.py's, which LLVM
  vectorizes: measured too, against NumPy's ufunc (sigmoid: against np.exp, one pass, as the
  plan prices a call), and the libm call each replaced);
* a running sum ``acc += x[k]`` (a sum over a large range, innermost): a chain of dependent adds
  that LLVM does not reassociate, where NumPy's ``.sum`` is pairwise and vectorized.

For each, this script times the Numba loop (compiled as the backend writes it: the function's
spelling in ``LOOP_FUNCTIONS`` with the generated modules' helpers, in a module loaded as the
backend loads one, ``@nb.njit(cache=True, error_model="numpy")``, one output per element) and
NumPy's kernel over the same elements, and
prints the loop's price that makes both sides break even at the measured time ratio: ``w`` with
``loop price = LOOP_RATIO × ratio`` (for ``y = f(x)``: a read, the call ``w`` and a write; for
a row sum: a read and the add ``w`` per element). Each figure is the median of interleaved
calls; the measurement is repeated (``--repeats``) to show its spread.

    taskset -c 1 python experiments/calibrate_fused.py [--n 1000000] [--repeats 3]

Not a test: timings vary with the machine and its load; schedule.py cites the run recorded in
experiments/results/calibration_fused.md.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eqsat_ad.backend.fused.functions import HELPERS, LOOP_FUNCTIONS  # noqa: E402
from eqsat_ad.backend.fused.loading import load  # noqa: E402
from eqsat_ad.backend.fused.schedule import LOOP_RATIO  # noqa: E402

FUNCTIONS = ("exp", "log", "tanh", "sin", "cos", "log1p", "expm1", "sigmoid", "pow", "sqrt",
             "libm exp", "libm tanh", "libm expm1")


def _loops() -> dict[str, Callable]:
    """``out[k] = fn(x[k])`` for each function, as the loop writer emits it."""
    src = ["import numba as nb", "import numpy as np", "", "F = np.float64", HELPERS]
    for fn in FUNCTIONS:
        if fn == "pow":
            expr = "x[k] ** 1.5"
        elif fn.startswith("libm "):  # the libm call the backend emitted before vmath.py
            expr = f"np.{fn[5:]}(x[k])"
        else:
            expr = f"{LOOP_FUNCTIONS[fn]}(x[k])"
        src += ['@nb.njit(cache=True, error_model="numpy")',
                f"def f_{fn.replace(' ', '_')}(out, x):",
                "    for k in range(x.shape[0]):", f"        out[k] = {expr}", ""]
    mod = load("\n".join(src))
    return {fn: getattr(mod, f"f_{fn.replace(' ', '_')}") for fn in FUNCTIONS}


@nb.njit(error_model="numpy")
def _row_sums(out: np.ndarray, a: np.ndarray) -> None:
    for t in range(a.shape[0]):
        acc = 0.0
        for i in range(a.shape[1]):
            acc += a[t, i]
        out[t] = acc


def _ufunc(fn: str) -> Callable[[np.ndarray], np.ndarray]:
    if fn == "pow":
        return lambda x: x ** 1.5
    if fn == "sigmoid":
        # NumPy's sigmoid (the NumPy backend's np.where of exps) is four passes the plan
        # prices as one: the loop is timed against one SIMD pass, np.exp
        return np.exp
    return getattr(np, fn.removeprefix("libm "))


def measure(n: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Loop time / NumPy time per element for each function and for a row sum: the ratio of
    the medians and the ratio of the fastest calls (steadier on a loaded machine)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, size=n)  # in every function's domain
    out = np.empty_like(x)
    side = int(round(n ** 0.5))
    a = rng.normal(size=(side, side))
    sums = np.empty(side)
    calls: dict[str, Callable[[], object]] = {}
    loops = _loops()
    for fn in FUNCTIONS:
        loop, uf = loops[fn], _ufunc(fn)
        loop(out, x)
        calls[f"loop {fn}"] = lambda loop=loop: loop(out, x)
        calls[f"numpy {fn}"] = lambda uf=uf: uf(x)
    _row_sums(sums, a)
    calls["loop sum"] = lambda: _row_sums(sums, a)
    calls["numpy sum"] = lambda: a.sum(axis=1)
    times: dict[str, list[float]] = {k: [] for k in calls}
    names = list(calls)
    for _ in range(rounds):
        random.shuffle(names)
        for k in names:
            t = time.perf_counter()
            calls[k]()
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    return {kind: (med[f"loop {kind}"] / med[f"numpy {kind}"],
                   low[f"loop {kind}"] / low[f"numpy {kind}"]) for kind in (*FUNCTIONS, "sum")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    runs = [measure(a.n, a.rounds) for _ in range(a.repeats)]
    print(f"N = {a.n}, {a.rounds} interleaved rounds, {a.repeats} repeats; LOOP_RATIO = "
          f"{LOOP_RATIO}")
    print("| loop work | Numba loop / NumPy (median, spread) | fastest calls (spread) | "
          "break-even price per element |")
    print("|---|---|---|---|")
    for kind in (*FUNCTIONS, "sum"):
        r = sorted(run[kind][0] for run in runs)
        fast = sorted(run[kind][1] for run in runs)
        mid = statistics.median(r)
        # y = f(x): a read, the call and a write; a row sum: a read and the add
        w = LOOP_RATIO * mid - (2 if kind != "sum" else 1)
        what = "x ** 1.5" if kind == "pow" else ("row sum acc += a[t, i]" if kind == "sum"
                                                 else f"{kind}(x)")
        if kind in ("exp", "tanh", "expm1", "sigmoid"):
            what += " (vmath)"
        print(f"| {what} | {mid:.2f} ({r[0]:.2f}..{r[-1]:.2f}) | {statistics.median(fast):.2f} "
              f"({fast[0]:.2f}..{fast[-1]:.2f}) | {w:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
