"""The plan on the examples of issue 10: predicted (plan prices) and measured (time, memory).

    python experiments/plan_examples.py [--quick]

* an 8-matrix chain (sizes 64, 4, 4, 64, 64, 16, 256, 1024, 64): FLOPs of the chosen order
  against ``np.einsum_path(..., optimize="optimal")``; gradient time optimized / naive /
  ``np.linalg.multi_dot``;
* the 3x3 window blur at 1024²: gradient time against a hand-written 9-tap gradient, peak memory;
* a prefix sum and a moving window (K = 100) at N = 10⁶: gradient time against np.cumsum;
* k traces (k = 32, N = 2048): the report's eager AD / naive / optimized prices.

Medians of repeated runs on one pinned core; results in experiments/results/plan_examples.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.examples import k_traces  # noqa: E402
from eqsat_ad.ir.index import size  # noqa: E402
from eqsat_ad.plan import contraction_path  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def median_seconds(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def chain(repeat: int) -> dict:
    dims = (64, 4, 4, 64, 64, 16, 256, 1024, 64)
    letters = "ijklmnopq"
    ops = [letters[k] + letters[k + 1] for k in range(8)]
    extents = {letters[k]: size(f"S{k}") for k in range(9)}
    sizes = {f"S{k}": dims[k] for k in range(9)}
    shapes = [np.empty((dims[k], dims[k + 1])) for k in range(8)]

    def flops(path) -> float:
        text = np.einsum_path(",".join(ops) + "->", *shapes, optimize=path)[1]
        return float(re.search(r"Optimized FLOP count:\s*(\S+)", text).group(1))

    ours = flops(contraction_path(ops, "", extents, sizes).einsum_path())
    best = flops("optimal")
    args = ", ".join(f"A{k}: [S{k}, S{k + 1}]" for k in range(8))
    body = " * ".join(f"A{k}[{letters[k]}, {letters[k + 1]}]" for k in range(8))
    sums = ", ".join(f"{c}: S{k}" for k, c in enumerate(letters))
    prog = ea.parse(f"def chain({args}):\n    return Sum[{sums}]({body})\n")
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((dims[k], dims[k + 1])) for k in range(8)]
    opt = ea.grad(prog, wrt="A3", sizes=sizes)
    naive = ea.grad(prog, wrt="A3", optimize=False)

    def hand():  # vector-matrix products from both ends, as one would write it by hand
        left = np.linalg.multi_dot([np.ones(dims[0]), *mats[:3]])
        right = np.linalg.multi_dot([*mats[4:], np.ones(dims[8])])
        return np.outer(left, right)

    np.testing.assert_allclose(opt(*mats), hand(), rtol=1e-8)
    return {
        "flops_ours": ours, "flops_numpy_optimal": best, "flops_ratio": ours / best,
        "grad_optimized_s": median_seconds(lambda: opt(*mats), repeat),
        "grad_naive_s": median_seconds(lambda: naive(*mats), repeat),
        "grad_multi_dot_s": median_seconds(hand, repeat),
        "largest_intermediate": str(opt.report.optimized.largest.elements),
    }


BLUR = """
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""


def blur(n: int, repeat: int) -> dict:
    prog = ea.parse(BLUR)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def hand():
        p = np.zeros((n + 2, n + 2))
        for a in range(3):
            for c in range(3):
                p[2 - a:2 - a + n, 2 - c:2 - c + n] += w
        return p[1:n + 1, 1:n + 1] / 9.0

    out = {}
    for label, opt in (("optimized", True), ("naive", False)):
        g = ea.grad(prog, wrt="x", optimize=opt, sizes={"H": n, "W": n})
        np.testing.assert_allclose(g(x, w), hand(), rtol=1e-12, atol=1e-14)
        out[f"grad_{label}_s"] = median_seconds(lambda g=g: g(x, w), repeat)
        out[f"peak_{label}_bytes"] = peak_bytes(lambda g=g: g(x, w))
        out[f"largest_{label}"] = str(g.report.optimized.largest.elements)
    out["grad_hand_s"] = median_seconds(hand, repeat)
    out["peak_hand_bytes"] = peak_bytes(hand)
    out["ratio_optimized_to_hand"] = out["grad_optimized_s"] / out["grad_hand_s"]
    out["hw_bytes"] = 8 * n * n
    return out


PREFIX = """
def prefix(x: [N], w: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
"""
MOVING = """
def moving(x: [N], w: [N], k: [K]):
    c[i: N] = Sum[j: N]((i - K < j and j <= i) * x[j])
    return Sum[i: N](w[i] * c[i] * c[i])
"""


def scans(n: int, k: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    g = ea.grad(ea.parse(PREFIX), wrt="x")

    def hand_prefix():
        c = np.cumsum(x)
        return np.cumsum((2 * w * c)[::-1])[::-1]

    np.testing.assert_allclose(g(x, w), hand_prefix(), rtol=1e-8)
    m = ea.grad(ea.parse(MOVING), wrt="x")
    kk = np.zeros(k)

    def hand_moving():
        cs = np.concatenate([[0.0], np.cumsum(x)])
        i = np.arange(n)
        c = cs[i + 1] - cs[np.maximum(i + 1 - k, 0)]
        cs2 = np.concatenate([[0.0], np.cumsum(2 * w * c)])
        return cs2[np.minimum(i + k, n)] - cs2[i]

    np.testing.assert_allclose(m(x, w, kk), hand_moving(), rtol=1e-6, atol=1e-6)
    out = {
        "prefix_grad_s": median_seconds(lambda: g(x, w), repeat),
        "prefix_hand_s": median_seconds(hand_prefix, repeat),
        "moving_grad_s": median_seconds(lambda: m(x, w, kk), repeat),
        "moving_hand_s": median_seconds(hand_moving, repeat),
        "prefix_price": str(g.report.optimized.total),
        "moving_price": str(m.report.optimized.total),
    }
    out["prefix_ratio"] = out["prefix_grad_s"] / out["prefix_hand_s"]
    out["moving_ratio"] = out["moving_grad_s"] / out["moving_hand_s"]
    return out


def traces(k: int, n: int) -> dict:
    g = ea.grad(k_traces(k).program(), wrt="A", sizes={"N": n})
    s = ea.grad(k_traces(k).program(), wrt="A", sizes={"N": n}, structured=True)
    r = g.report
    return {"eager": str(r.eager_total), "naive": str(r.naive.total),
            "optimized": str(r.optimized.total), "structured": str(s.report.optimized.total),
            "eager_speedup": r.eager_speedup}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    repeat = 3 if args.quick else 7
    results = {
        "chain": chain(repeat),
        "blur_1024": blur(256 if args.quick else 1024, repeat),
        "scans_1e6": scans(10**5 if args.quick else 10**6, 100, repeat),
        "k_traces_32": traces(32, 2048),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "plan_examples.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
