"""The sweep's results: the Markdown table, the issue's targets (PASS/FAIL each) and the plot.

Works on the rows experiments/sweep.py collects (one dict per program, as the child printed
them): ``times`` (median seconds of hand, opt, naive, f_hand, f_opt), ``prices`` (the cost
report's naive/optimized/eager prices and largest intermediates), ``check``, ``latency_s``,
``peak:*`` (bytes), ``errors`` and ``status``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["targets", "write_results"]

Row = dict[str, Any]


# ================================================================================================
# Derived figures
# ================================================================================================


def _t(r: Row, key: str) -> float | None:
    v = r.get("times", {}).get(key)
    if v is None:
        v = r.get(f"probe:{key}")
    return v if v is not None and v > 0 else None


def _t_min(r: Row, key: str) -> float | None:
    """The fastest call: a second opinion where the medians are noisy (see the notes)."""
    v = r.get("times_min", {}).get(key)
    return v if v is not None and v > 0 else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def f_time(r: Row) -> float | None:
    """The function's time: the faster of the NumPy function and eqsat_ad's compiled forward
    (a NumPy-front-end loop run by Python is no baseline for its vectorized gradient)."""
    ts = [t for t in (_t(r, "f_hand"), _t(r, "f_opt")) if t is not None]
    return min(ts) if ts else None


def measured_speedup(r: Row) -> float | None:
    return _ratio(_t(r, "naive"), _t(r, "opt"))


def predicted_speedup(r: Row) -> float | None:
    return r.get("prices", {}).get("speedup")


def disagreement(r: Row) -> float | None:
    """max(predicted / measured, measured / predicted): 1 is perfect agreement."""
    p, m = predicted_speedup(r), measured_speedup(r)
    if p is None or m is None or p <= 0 or m <= 0:
        return None
    return max(p / m, m / p)


# ================================================================================================
# The table
# ================================================================================================


def _g(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}g}"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v * 1e3:.3g}"


def _mb(v: int | None) -> str:
    return "–" if v is None else f"{v / 2**20:.3g}"


def _sizes(r: Row) -> str:
    return " ".join(f"{k}={v}" for k, v in r.get("sizes", {}).items())


def _status(r: Row) -> str:
    parts = [] if r.get("status") == "ok" else [str(r.get("status"))]
    ck = r.get("check")
    if ck is None:
        parts.append("not checked")
    elif not ck.get("ok"):
        parts.append(f"check FAILED ({ck.get('worst')}: {_g(ck.get('worst_err'))}"
                     + (f", {ck['error']}" if ck.get("error") else "") + ")")
    cn = r.get("check_numba")
    if cn is not None and not cn.get("ok"):
        parts.append(f"numba check FAILED ({_g(cn.get('worst_err'))})")
    for k, v in r.get("errors", {}).items():
        parts.append(f"{k}: {v}")
    if r.get("fallback"):
        parts.append(fallback_text(r["fallback"]))
    return "; ".join(parts).replace("|", "/") or "ok"


def fallback_text(fb: Row) -> str:
    """What the rerun at the quick sizes measured, for a program that failed at the bench sizes."""
    if not fb.get("times"):
        return f"at quick sizes too: {fb.get('status')}, " + ", ".join(
            f"{k}: {v}" for k, v in fb.get("errors", {}).items())
    return (f"at quick sizes {_sizes(fb)}: opt {_ms(_t(fb, 'opt'))} ms, naive "
            f"{_ms(_t(fb, 'naive'))} ms, hand {_ms(_t(fb, 'hand'))} ms, opt/hand "
            f"{_g(_ratio(_t(fb, 'opt'), _t(fb, 'hand')))}, pred. × {_g(predicted_speedup(fb))}, "
            f"meas. × {_g(measured_speedup(fb))}")


def table(rows: list[Row]) -> str:
    head = ("| program | front end | sizes | pred. eager | pred. naive | pred. opt | pred. × | "
            "meas. × | "
            "pred/meas | opt/naive | opt/naive (min) | opt/hand | grad/f | opt ms | naive ms | "
            "hand ms | "
            "largest (pred.) | first call s | peak MB opt/naive/hand | numba ms | numba/opt | "
            "numba/hand | JAX jit ms | numba/JAX | opt/JAX | status |")
    lines = [head, "|" + "---|" * 26]
    for r in rows:
        p = r.get("prices", {})
        d = disagreement(r)
        pm = None if d is None else (predicted_speedup(r) or 0) / (measured_speedup(r) or 1)
        lines.append(
            f"| {r['name']} | {r.get('frontend', '')} | {_sizes(r)} | {_g(p.get('eager'))} | "
            f"{_g(p.get('naive'))} | "
            f"{_g(p.get('optimized'))} | {_g(predicted_speedup(r))} | "
            f"{_g(measured_speedup(r))} | {_g(pm)} | {_g(_ratio(_t(r, 'opt'), _t(r, 'naive')))} | "
            f"{_g(_ratio(_t_min(r, 'opt'), _t_min(r, 'naive')))} | "
            f"{_g(_ratio(_t(r, 'opt'), _t(r, 'hand')))} | "
            f"{_g(_ratio(_t(r, 'opt'), f_time(r)))} | {_ms(_t(r, 'opt'))} | "
            f"{_ms(_t(r, 'naive'))} | {_ms(_t(r, 'hand'))} | {_g(p.get('largest_optimized'))} | "
            f"{_g(r.get('latency_s'))} | {_mb(r.get('peak:opt'))}/{_mb(r.get('peak:naive'))}/"
            f"{_mb(r.get('peak:hand'))} | {_ms(_t(r, 'numba'))} | "
            f"{_g(_ratio(_t(r, 'numba'), _t(r, 'opt')))} | "
            f"{_g(_ratio(_t(r, 'numba'), _t(r, 'hand')))} | {_ms(_t(r, 'jax'))} | "
            f"{_g(_ratio(_t(r, 'numba'), _t(r, 'jax')))} | "
            f"{_g(_ratio(_t(r, 'opt'), _t(r, 'jax')))} | {_status(r)} |"
        )
    return "\n".join(lines)


# ================================================================================================
# The targets
# ================================================================================================

Target = tuple[str, bool, str]  # (target, passed, evidence)


def _by_name(rows: list[Row]) -> dict[str, Row]:
    return {r["name"]: r for r in rows}


def _never_slower(rows: list[Row]) -> Target:
    # A program whose naive and optimized gradients run the same code (same calls, see
    # sweep_measure.same_code) cannot be slower optimized: its measured ratio is listed apart,
    # as the run's noise, and does not fail the target.
    bad, missing, same = [], [], []
    for r in rows:
        q = _ratio(_t(r, "opt"), _t(r, "naive"))
        if q is None:
            missing.append(r["name"])
        elif q > 1.1 and r.get("same_code"):
            same.append(f"{r['name']} {q:.3g}×")
        elif q > 1.1:
            bad.append(f"{r['name']} {q:.3g}×")
    by_min = [f"{r['name']} {q:.3g}×" for r in rows
              if (q := _ratio(_t_min(r, "opt"), _t_min(r, "naive"))) is not None and q > 1.1]
    n_same = sum(1 for r in rows if r.get("same_code"))
    ev = (f"{len(rows) - len(bad) - len(missing) - len(same)}/{len(rows)} within 1.1×; slower: "
          f"{', '.join(bad) or 'none'}; slower but the same code as optimize=False (noise; "
          f"{n_same} programs run the same code both ways): {', '.join(same) or 'none'}; "
          f"not measured: {', '.join(missing) or 'none'} "
          f"(by the fastest call of each: slower: {', '.join(by_min) or 'none'})")
    return "optimized never > 1.1× optimize=False", not bad and not missing, ev


def _agreement(rows: list[Row]) -> Target:
    ds = {r["name"]: disagreement(r) for r in rows}
    within15 = [n for n, d in ds.items() if d is not None and d <= 1.5]
    beyond3 = [f"{n} {d:.3g}×" for n, d in ds.items() if d is not None and d > 3]
    missing = [n for n, d in ds.items() if d is None]
    share = len(within15) / max(1, len(rows))
    ok = share >= 0.9 and not beyond3 and not missing
    ev = (f"within 1.5×: {len(within15)}/{len(rows)} ({share:.0%}); beyond 3×: "
          f"{', '.join(beyond3) or 'none'}; no figure: {', '.join(missing) or 'none'}")
    return "predicted vs measured speed-up: ≤ 1.5× on ≥ 90%, ≤ 3× on all", ok, ev


def _chains(rows: list[Row]) -> list[Target]:
    chains = [r for r in rows if r.get("chain")]
    if not chains:
        return []
    flop_ev, time_ev, flop_ok, time_ok = [], [], True, True
    for r in chains:
        ours = r.get("forward_prices", {}).get("optimized")
        best = r.get("einsum", {}).get("cost")
        q = _ratio(ours, best)
        flop_ok &= q is not None and q <= 1.1
        flop_ev.append(f"{r['name']} {_g(q)}")
        t = _ratio(_t(r, "f_opt"), _t(r, "f_hand"))
        time_ok &= t is not None and t <= 1.5
        time_ev.append(f"{r['name']} {_g(t)}")
    return [
        ("matrix chains: forward price ≤ 1.1× np.einsum_path optimal (same units: iteration "
         "space + writes)", flop_ok, ", ".join(flop_ev)),
        ("matrix chains: forward time ≤ 1.5× np.linalg.multi_dot", time_ok, ", ".join(time_ev)),
    ]


def _one(rows: list[Row], name: str, title: str,
         test: Callable[[Row], tuple[bool, str]]) -> list[Target]:
    r = _by_name(rows).get(name)
    if r is None:
        return []
    try:
        ok, ev = test(r)
    except (TypeError, KeyError):  # a figure is missing: the program failed before it
        ok, ev = False, f"not measured ({_status(r)})"
    else:
        if not ok and r.get("fallback"):
            ev += "; " + fallback_text(r["fallback"])
    return [(title, ok, f"{_sizes(r)}: {ev}")]


def _blur(r: Row) -> tuple[bool, str]:
    q = _ratio(_t(r, "opt"), _t(r, "hand"))
    hw = r["sizes"]["H"] * r["sizes"]["W"] * 8
    arrays = r["peak:opt"] / hw
    return (q is not None and q <= 1.5 and arrays <= 6,
            f"opt/hand {_g(q)}, peak {arrays:.3g} H×W arrays")


def _attention(r: Row) -> tuple[bool, str]:
    q = _ratio(_t(r, "opt"), f_time(r))
    s = r["sizes"]
    ttd = s["T"] * s["T"] * s["D"]
    big = r["prices"]["largest_optimized"]
    ok = q is not None and q <= 4 and big < ttd and r["peak:opt"] < 8 * ttd
    return ok, (f"grad/f {_g(q)}, largest intermediate {_g(big)} vs T·T·D {ttd}, "
                f"peak {_mb(r['peak:opt'])} MB")


def _nbody(r: Row) -> tuple[bool, str]:
    n = r["sizes"]["N"]
    big = r["prices"]["largest_optimized"]
    ok = big < 3 * n * n and r["peak:opt"] < 8 * 3 * n * n
    return ok, (f"largest intermediate {_g(big)} vs N·3·N {3 * n * n}, peak "
                f"{_mb(r['peak:opt'])} MB vs {_mb(24 * n * n)} MB for one N×3×N array")


def _scan(r: Row) -> tuple[bool, str]:
    q = _ratio(_t(r, "opt"), _t(r, "hand"))
    return q is not None and q <= 3, f"opt/hand {_g(q)}"


def _ktrace(r: Row) -> tuple[bool, str]:
    p = r["prices"]
    if p.get("eager") is None:
        return False, "the report has no eager-AD column"
    gain = p["eager"] / p["optimized"]
    return gain >= 16, f"eager/optimized price {gain:.3g} (32 traces: ideally about 32)"


def _numba(rows: list[Row]) -> Target:
    """Issue 15: the Numba backend no slower than the NumPy backend (JAX jit: numba.md)."""
    # A program whose numba schedule runs no loop nest calls the NumPy backend's program itself
    # (sweep_measure's same_code_numba): a tie, whatever the two timings read.
    timed = [r for r in rows if _t(r, "numba") is not None and _t(r, "opt") is not None]
    ties = [r for r in rows if r.get("same_code_numba")]
    raced = [r for r in timed if r not in ties]
    slower = [f"{r['name']} {_ratio(_t(r, 'numba'), _t(r, 'opt')):.3g}×" for r in raced
              if (_ratio(_t(r, "numba"), _t(r, "opt")) or 0) > 1.0]
    untimed = [r["name"] for r in rows if r not in timed and r not in ties]
    return ("Numba backend ≤ 1.0× the NumPy backend (every program; vs JAX jit: numba.md)",
            bool(timed) and not slower,
            f"{len(raced) - len(slower)}/{len(raced)} running loop nests within 1.0×; slower: "
            f"{', '.join(slower) or 'none'}; {len(ties)} tie (no loop nest: the NumPy "
            f"backend's program itself): {', '.join(r['name'] for r in ties) or 'none'}; "
            f"not measured: {', '.join(untimed) or 'none'}")


def _numba_jax(rows: list[Row]) -> Target:
    """Issue 15: the Numba backend no slower than JAX jit on every dense program JAX runs."""
    timed = [r for r in rows if _t(r, "numba") is not None and _t(r, "jax") is not None]
    slower = [f"{r['name']} {_ratio(_t(r, 'numba'), _t(r, 'jax')):.3g}×" for r in timed
              if (_ratio(_t(r, "numba"), _t(r, "jax")) or 0) > 1.0]
    without = [f"{r['name']} ({r['jax_unavailable']})" for r in rows
               if r.get("jax_unavailable")]
    return ("Numba backend ≤ 1.0× JAX jit (every program JAX jit runs; jax.jit(jax.grad(f)) "
            "of the same NumPy function)", bool(timed) and not slower,
            f"{len(timed) - len(slower)}/{len(timed)} within 1.0×; slower: "
            f"{', '.join(slower) or 'none'}; no JAX gradient: {', '.join(without) or 'none'}")


def targets(rows: list[Row]) -> list[Target]:
    ts = [_never_slower(rows), _agreement(rows), *_chains(rows), _numba(rows), _numba_jax(rows)]
    ts += _one(rows, "blur_window", "3×3 window-sum blur gradient ≤ 1.5× hand 9-tap, peak a "
               "few (≤ 6) H×W arrays", _blur)
    ts += _one(rows, "attention", "attention grad/f ≤ 4, no T×T×D temporary", _attention)
    ts += _one(rows, "nbody", "N-body adjoint without N×3×N temporaries", _nbody)
    for name in ("prefix_sum", "moving_average", "moving_average_long"):
        ts += _one(rows, name, f"{name} gradient ≤ 3× np.cumsum-based hand gradient", _scan)
    ts += _one(rows, "E2-k32", "k-trace report shows the gain against eager AD", _ktrace)
    checked = [r for r in rows if r.get("check", {}).get("ok")]
    ts.append(("correctness at small sizes: naive = optimized = hand = finite differences",
               len(checked) == len(rows),
               f"{len(checked)}/{len(rows)}; failed or unchecked: "
               + (", ".join(r["name"] for r in rows if r not in checked) or "none")))
    return ts


# ================================================================================================
# Output
# ================================================================================================


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    ts = targets(rows)
    passed = sum(ok for _, ok, _ in ts)
    lines = [
        "# Sweep: naive vs optimized gradients (issue 10, item 7)", "",
        f"`{meta['command'].strip()}` on {meta['date']}"
        + (" (**--quick**: small sizes, not the issue's benchmark points)" if meta["quick"]
           else "") + ".",
        "",
        f"One pinned core of {meta.get('cpu', 'an unrecorded CPU')}, one BLAS thread (OpenBLAS's "
        f"{meta.get('blas', 'unknown')} kernels: "
        "experiments/one_core.py), float64; times are medians of interleaved calls of "
        "the naive (`optimize=False`), optimized and hand-written gradients and of the NumPy "
        f"function, in a fresh random order each round (up to {meta['repeats']} rounds, about "
        f"{meta['budget_s']:g} s per program), "
        "so ratios are from one run. **The machine was shared with other jobs during the run: "
        "timings are noisy (single figures can be off by 2×) and repeats were kept modest.** "
        f"Each program ran in its own process with a {meta['timeout_s']:g} s limit and a "
        f"{meta['mem_gb']:g} GiB address-space cap; a failure is recorded in its row. "
        "Gradients that are large, mostly-zero arrays (E1, E2, E2-k32: `np.zeros((N, N))` plus "
        "a diagonal write) cost mostly page faults, and whether NumPy's large allocation gets "
        "transparent huge pages varies from call to call on a shared machine (1.5 ms vs 10 ms "
        "for the same 2048² zero-fill here): their opt/naive ratios flip from run to run; "
        "*opt/naive (min)*, the ratio of the fastest calls, is the steadier figure there.",
        "",
        "Columns: *pred. eager / naive / opt*: the cost report's prices at the sizes (as the "
        "backend runs them; *eager* is the eager-AD column where the report has one); "
        "*pred. ×* = naive / opt price; *meas. ×* = naive time / optimized time; "
        "*pred/meas* their ratio; *opt/naive*, *opt/hand*: time ratios; *grad/f*: "
        "optimized gradient time / function time (the faster of the NumPy function and "
        "eqsat_ad's compiled forward); *largest (pred.)*: the report's "
        "largest intermediate of the optimized program (entries); *first call*: parse + "
        "optimize + compile + one call at small sizes; *peak*: tracemalloc peak of one call. "
        "A program whose gradients failed at the benchmark sizes was rerun at its quick "
        "(smoke-test) sizes; its status cell gives those figures. *numba ms*, *numba/opt*, "
        "*numba/hand*: the optimized gradient with `backend=\"numba\"` (fused loop nests; "
        "its first call compiles or loads Numba's cache, outside the timing). *JAX jit ms*, "
        "*numba/JAX*, *opt/JAX*: `jax.jit(jax.grad(f))` of the program's NumPy function `f` "
        "with `np` bound to `jax.numpy` (x64, one thread, after a warm-up call; checked "
        "against the hand-written gradient first), where JAX can trace `f`.",
        "",
        f"## Targets: {passed}/{len(ts)} pass", "",
        "| target | result | evidence |", "|---|---|---|",
        *(f"| {t} | {'PASS' if ok else 'FAIL'} | {ev.replace('|', '/')} |" for t, ok, ev in ts),
        "", "## Programs", "", table(rows), "",
        "Programs: " + "; ".join(f"*{r['name']}* ({r.get('family')}): {r.get('note')}"
                                 for r in rows) + ".",
        "",
    ]
    return "\n".join(lines)


def plot(rows: list[Row], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 6.5))
    pts = [(r["name"], predicted_speedup(r), measured_speedup(r)) for r in rows]
    pts = [(n, p, m) for n, p, m in pts if p and m]
    if pts:
        lo = min(min(p, m) for _, p, m in pts) / 2
        hi = max(max(p, m) for _, p, m in pts) * 2
        xs = [lo, hi]
        ax1.loglog(xs, xs, "k-", lw=0.8)
        for f, style in ((1.5, "--"), (3.0, ":")):
            ax1.loglog(xs, [x * f for x in xs], "k" + style, lw=0.6)
            ax1.loglog(xs, [x / f for x in xs], "k" + style, lw=0.6)
        ax1.loglog([p for _, p, _ in pts], [m for _, _, m in pts], "o", ms=4)
        for n, p, m in pts:
            ax1.annotate(n, (p, m), fontsize=6, xytext=(2, 2), textcoords="offset points")
    ax1.set_xlabel("predicted speed-up (naive price / optimized price)")
    ax1.set_ylabel("measured speed-up (naive time / optimized time)")
    ax1.set_title("prediction vs measurement (dashed: 1.5×, dotted: 3×)")
    names = [r["name"] for r in rows]
    ys = range(len(rows))
    for key, label, marker in (("naive", "opt / optimize=False", "o"), ("hand", "opt / hand", "s")):
        vals = [_ratio(_t(r, "opt"), _t(r, key)) for r in rows]
        ax2.semilogx([v if v else math.nan for v in vals], list(ys), marker, label=label, ms=4)
    for y, r in zip(ys, rows, strict=True):
        if _ratio(_t(r, "opt"), _t(r, "naive")) is None:
            ax2.annotate("no timing at the bench sizes (see sweep.md)", (1.0, y), fontsize=6,
                         color="r", xytext=(4, -2), textcoords="offset points")
    ax2.axvline(1.0, color="k", lw=0.8)
    ax2.axvline(1.1, color="r", lw=0.6, ls="--")
    ax2.set_yticks(list(ys), names, fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlabel("optimized gradient time ratio (red: the 1.1× target)")
    ax2.legend(fontsize=8)
    ax2.set_title("optimized vs optimize=False and vs hand-written")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_results(rows: list[Row], meta: dict[str, Any], out: Path,
                  as_json: bool = False) -> list[Path]:
    written = [out / "sweep.md"]
    written[0].write_text(markdown(rows, meta))
    if plot(rows, out / "sweep.png"):
        written.append(out / "sweep.png")
    if as_json:
        data = {"meta": meta, "targets": [{"target": t, "pass": ok, "evidence": ev}
                                          for t, ok, ev in targets(rows)], "programs": rows}
        (out / "sweep.json").write_text(json.dumps(data, indent=1, default=str))
        written.append(out / "sweep.json")
    return written
