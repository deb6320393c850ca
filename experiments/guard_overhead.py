"""What the finite guard of optimized code costs (backend/guard.py, issue 12 class 1).

For a few sweep programs at their quick or bench sizes: the optimized gradient called as it
runs (guarded: the arguments' ranges, the interval bounds of the unoptimized program, IEEE
flags watched, the result scanned) against the same generated code called without the guard,
interleaved, best and median of repeats; and one call with a non-finite argument (the
unoptimized program reruns) against the unoptimized program itself.

    python experiments/guard_overhead.py [--sizes quick|bench] [--repeats 15] [names...]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweep_programs import program  # noqa: E402

import eqsat_ad as ea  # noqa: E402

DEFAULT = ("nbody", "logsumexp", "layer_norm", "nmf")


def _time(fn, inputs: dict, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(**inputs)
        out.append(time.perf_counter() - t)
    return out


def _positional(fn, names):
    return lambda **kw: fn(*[kw[n] for n in names])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(DEFAULT))
    ap.add_argument("--sizes", choices=("quick", "bench"), default="bench")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)
    print("| program | sizes | guarded best (ms) | unguarded best (ms) | ratio best | ratio "
          "median | non-finite call (ms) | optimize=False (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.names:
        sp = program(name)
        sizes = dict(getattr(sp, args.sizes))
        inputs = sp.inputs(sizes)
        g = ea.grad(sp.program(), wrt=sp.wrt)
        g(**inputs)
        guarded = g.compiled
        raw = copy.copy(guarded)
        raw.fallback = None
        raw(*[inputs[n] for n in guarded.program.param_names])
        pos = guarded.program.param_names
        call_g = _positional(guarded, pos)
        call_r = _positional(raw, pos)
        tg: list[float] = []
        tr: list[float] = []
        for _ in range(args.repeats):  # interleaved
            tg += _time(call_g, inputs, 1)
            tr += _time(call_r, inputs, 1)
        assert guarded.fallback.calls == 0, "a finite call fell back"
        bad = {k: np.array(v, dtype=float) for k, v in inputs.items()}
        first = next(k for k in pos if bad[k].ndim)
        bad[first].flat[0] = np.inf
        tn = min(_time(call_g, bad, 3))
        naive = ea.grad(sp.program(), wrt=sp.wrt, optimize=False)
        naive(**inputs)
        tf = min(_time(naive, bad, 3))
        print(f"| {name} | {sizes} | {min(tg) * 1e3:.2f} | {min(tr) * 1e3:.2f} | "
              f"{min(tg) / min(tr):.3f} | {statistics.median(tg) / statistics.median(tr):.3f} | "
              f"{tn * 1e3:.1f} | {tf * 1e3:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
