"""Extraction for ``backend="numba"`` ranks by the fused schedule's price: does its pick run faster?

    python experiments/fused_ranking.py [--out experiments/results] [--only NAME ...]

For every program of the sweep at its bench sizes, extraction's best few programs (the
candidates ``finish`` ranks) are captured; the candidate the NumPy plan's price picks
(``backend="numpy"``'s ranking) and the one the fused schedule's price picks (``"numba"``'s,
:func:`eqsat_ad.plan.price.backend_price`) are each compiled with the Numba backend (no further
optimization) and, where they differ, timed interleaved on one pinned core (medians). Writes
``fused_ranking.md`` (a table) under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from one_core import configure, cpu  # noqa: E402

configure()
os.environ["EQSAT_AD_CACHE"] = "0"  # (every program optimized here, not read from the cache)

from sweep_programs import CATALOGUE, SweepProgram  # noqa: E402

import eqsat_ad as ea  # noqa: E402
import eqsat_ad.egraph.optimize as optimize_module  # noqa: E402
from eqsat_ad.plan.price import backend_price, program_cost  # noqa: E402


def candidates(sp: SweepProgram) -> tuple[list[ea.Program], dict[str, int], dict[str, Any]]:
    """The tidied candidates ``finish`` ranked for ``sp``'s Numba gradient, their sizes and the
    bench inputs."""
    seen: dict[str, Any] = {}
    real = optimize_module.finish

    def spy(cands: Any, sizes: Any, deadline: Any = None, backend: str = "numpy") -> Any:
        seen.setdefault("candidates", list(cands))
        seen.setdefault("sizes", dict(sizes or {}))
        return real(cands, sizes, deadline, backend)

    optimize_module.finish = spy
    try:
        opts = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
        inputs = sp.inputs(sp.bench)
        g = ea.grad(sp.program(), wrt=sp.wrt, backend="numba", **opts)
        g(**inputs)
    finally:
        optimize_module.finish = real
    cands = [optimize_module.tidy(c) for c in seen.get("candidates", [])]
    return cands, seen.get("sizes", {}), inputs


def timed(fns: dict[str, Callable[[], Any]], budget: float = 3.0) -> dict[str, float]:
    """Median seconds of each, the calls interleaved (one round per repeat)."""
    for f in fns.values():
        f()  # (compile, warm caches)
    t0 = time.perf_counter()
    for f in fns.values():
        f()
    per_round = max(time.perf_counter() - t0, 1e-6)
    repeats = max(5, min(200, int(budget / per_round)))
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in out.items()}


def row(sp: SweepProgram) -> list[str]:
    cands, sizes, inputs = candidates(sp)
    if len(cands) < 2:
        return [sp.name, str(len(cands)), "", "", "", "", "one candidate"]
    k_numpy, _ = optimize_module.finish(cands, sizes, None, "numpy")
    k_numba, _ = optimize_module.finish(cands, sizes, None, "numba")
    plan = [program_cost(c, sizes).total_poly.evaluate(sizes) for c in cands]
    fused = [backend_price(c, "numba", sizes).evaluate(sizes) for c in cands]
    prices = (f"{float(plan[k_numpy]):.4g} / {float(plan[k_numba]):.4g}",
              f"{float(fused[k_numpy]):.4g} / {float(fused[k_numba]):.4g}")
    if k_numpy == k_numba:
        return [sp.name, str(len(cands)), f"{k_numpy} / {k_numba}", *prices, "", "same pick"]
    args = {p.name: inputs[p.name] for p in cands[k_numpy].params}
    fns = {}
    for what, k in (("numpy", k_numpy), ("numba", k_numba)):
        c = ea.compile(cands[k], optimize=False, backend="numba")
        fns[what] = (lambda c=c: c(**args))
    t = timed(fns)
    return [sp.name, str(len(cands)), f"{k_numpy} / {k_numba}", *prices,
            f"{t['numpy'] * 1e3:.3f} / {t['numba'] * 1e3:.3f}",
            f"{t['numba'] / t['numpy']:.2f}x"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    head = ["program", "candidates", "pick (NumPy / fused ranking)",
            "plan price at sizes", "fused price at sizes", "ms under Numba", "fused pick"]
    rows = []
    for sp in CATALOGUE:
        if args.only and sp.name not in args.only:
            continue
        try:
            r = row(sp)
        except Exception as e:  # noqa: BLE001 - a program that fails is a row, not the end
            r = [sp.name, "", "", "", "", "", f"error: {type(e).__name__}: {e}"[:120]]
        rows.append(r)
        print(" | ".join(r), flush=True)
    lines = [
        "# Numba extraction: NumPy-plan ranking vs fused-schedule ranking",
        "",
        f"`python experiments/fused_ranking.py{' --out ' + str(args.out) if args.out else ''}`"
        f" on {cpu()}, one pinned core; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "Each pair: the candidate the NumPy plan's price picks / the one the fused schedule's",
        "price picks (what `backend=\"numba\"` now returns), both compiled with the Numba backend",
        "and timed interleaved (medians); prices in plan points at the bench sizes.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "fused_ranking.md").write_text("\n".join(lines))
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
