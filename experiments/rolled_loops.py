"""Rolled loops (issue 11, item 2): recurrences as folds, timed against hand-written NumPy.

* RNN ``h = np.tanh(W @ h)``, W 64×64, T = 10,000 steps, loss Σ h_T²: the first call of
  ``ea.grad`` (translate + optimize + compile + run) and the gradient's time vs a hand-written
  NumPy forward/backward loop.
* EMA ``s = 0.99 * s + x[i]``, n = 10⁶, loss s²: gradient time vs hand.
* The gradient program's size (statements, folds): independent of T.

Not a test: timings. ``--quick`` for a smoke run. Writes ``rolled_loops.md``/``.json`` to
``--out`` (default experiments/out/).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("EQSAT_AD_CACHE", "0")  # the first call pays the optimization

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import eqsat_ad as ea  # noqa: E402
from eqsat_ad.ir import Fold  # noqa: E402

STEPS = 10_000


def rnn(W, h0):
    h = h0
    for _t in range(STEPS):
        h = np.tanh(W @ h)
    return np.sum(h * h)


def rnn_grad_hand(W: np.ndarray, h0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hs = np.empty((STEPS + 1, h0.shape[0]))
    hs[0] = h0
    for t in range(STEPS):
        hs[t + 1] = np.tanh(W @ hs[t])
    hbar = 2 * hs[STEPS]
    Wbar = np.zeros_like(W)
    for t in range(STEPS - 1, -1, -1):
        a = hbar * (1 - hs[t + 1] ** 2)
        Wbar += np.outer(a, hs[t])
        hbar = W.T @ a
    return Wbar, hbar


def ema(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = 0.99 * s + x[i]
    return s * s


def ema_grad_hand(x: np.ndarray) -> np.ndarray:
    s = 0.0
    for v in x:
        s = 0.99 * s + v
    g = np.empty_like(x)
    sbar = 2 * s
    for i in range(x.shape[0] - 1, -1, -1):
        g[i] = sbar
        sbar = 0.99 * sbar
    return g


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    global STEPS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="experiments/out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass
    repeats = 3 if args.quick else 5
    n_ema = 10_000 if args.quick else 1_000_000
    if args.quick:
        STEPS = 500
    rng = np.random.default_rng(0)
    W = rng.normal(size=(64, 64)) / 8.0
    h0 = rng.normal(size=64)
    rows: dict[str, object] = {"steps": STEPS, "n_ema": n_ema}

    t0 = time.perf_counter()
    g = ea.grad(rnn, wrt=("W", "h0"))
    gW, gh = g(W, h0)
    rows["rnn_first_call_s"] = time.perf_counter() - t0
    hW, hh = rnn_grad_hand(W, h0)
    rows["rnn_max_abs_error"] = float(max(np.abs(gW - hW).max(), np.abs(gh - hh).max()))
    rows["rnn_grad_s"] = median_time(lambda: g(W, h0), repeats)
    rows["rnn_hand_s"] = median_time(lambda: rnn_grad_hand(W, h0), repeats)
    rows["rnn_ratio"] = rows["rnn_grad_s"] / rows["rnn_hand_s"]
    rows["rnn_program_statements"] = len(g.program.statements)
    rows["rnn_folds"] = sum(isinstance(s, Fold) for s in g.program.statements)

    x = rng.normal(size=n_ema)
    t0 = time.perf_counter()
    ge = ea.grad(ema)
    gx = ge(x)
    rows["ema_first_call_s"] = time.perf_counter() - t0
    rows["ema_max_abs_error"] = float(np.abs(gx - ema_grad_hand(x)).max())
    rows["ema_grad_s"] = median_time(lambda: ge(x), max(1, repeats - 2))
    rows["ema_hand_s"] = median_time(lambda: ema_grad_hand(x), max(1, repeats - 2))
    rows["ema_ratio"] = rows["ema_grad_s"] / rows["ema_hand_s"]
    rows["ema_program_statements"] = len(ge.program.statements)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rolled_loops.json").write_text(json.dumps(rows, indent=2))
    lines = ["# Rolled loops (issue 11, item 2)", "",
             f"`{' '.join(sys.argv)}`; one core, one BLAS thread, median of {repeats} runs; "
             "on-disk optimization cache off.", "",
             "| measurement | value |", "|---|---|"]
    for k, v in rows.items():
        lines.append(f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |")
    lines += ["", f"Targets: RNN first call ≤ 3 s: {rows['rnn_first_call_s']:.2f} s; RNN gradient "
              f"≤ 2× hand: {rows['rnn_ratio']:.2f}×; EMA gradient ≤ 3× hand: "
              f"{rows['ema_ratio']:.2f}×."]
    (out / "rolled_loops.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
