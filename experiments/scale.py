"""Scale (issue 11): deep programs, like-term merging, limits that hold, first-call latency.

1. 5,000-term expression and 5,000-statement program: the optimized gradient (default limits)
   against the closed form, with the time and the bound that stopped saturation.
2. E-nodes against k for k traces (k in 32, 128, 256, 1024): with the like-term pass (what
   ``ea.optimize`` does) and without it (the binary rules alone, default limits), and whether the
   result is one bracket term ``k * (i == j)``.
3. ``Limits(seconds=s)`` for s in 0.25, 1, 5 on a 200-statement adjoint (an RNN of 100 tanh
   steps): the CPU time of saturation and extraction against the target ``1.2 s + 0.2``.
4. First-call latency (import excluded; parse + optimize + compile + first call, as the sweep
   measures it) of the worked examples and the sweep programs, each in a fresh process, cache
   off; with ``--baseline DIR`` (a checkout of the code before) the same for it, and whether the
   optimized plan's price is the same; and the second process's time with the on-disk cache
   warm.

Writes scale.md, scale.json and scale_enodes.png into ``--out`` (default experiments/out/).
The machine may be shared: CPU times are reported next to wall times.

    python experiments/scale.py [--baseline /path/to/old/checkout] [--quick] [--deep N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from deep_programs import chain_gradient, rnn_adjoint, statement_chain, sum_of_squares  # noqa: E402

import eqsat_ad as ea  # noqa: E402
from eqsat_ad.api import gradient_program  # noqa: E402
from eqsat_ad.egraph.encode import encode_program  # noqa: E402
from eqsat_ad.egraph.optimize import Limits  # noqa: E402
from eqsat_ad.egraph.rules import load_rules  # noqa: E402
from eqsat_ad.egraph.saturate import saturate  # noqa: E402
from eqsat_ad.examples import k_traces  # noqa: E402
from eqsat_ad.ir.printer import print_expr  # noqa: E402

os.environ["EQSAT_AD_CACHE"] = "0"  # every measurement runs the optimizer, unless said


def timed(fn: Any) -> tuple[Any, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


# ------------------------------------------------------------------------------------------------
def deep(n: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    p, _, _ = timed(lambda: ea.parse(sum_of_squares(n)))
    g, wall, cpu = timed(lambda: ea.grad(p, "x"))
    err = float(np.abs(g(x) - 2 * x).max())
    rows.append({"program": f"{n}-term sum of squares", "wall_s": wall, "parent_cpu_s": cpu,
                 "stop": g.report.stats.stop_reason, "max_error": err})
    x8 = rng.standard_normal(8)
    p, _, _ = timed(lambda: ea.parse(statement_chain(n)))
    g, wall, cpu = timed(lambda: ea.grad(p, "x"))
    err = float(np.abs(g(x8) - chain_gradient(n, x8)).max())
    rows.append({"program": f"{n}-statement chain", "wall_s": wall, "parent_cpu_s": cpu,
                 "stop": g.report.stats.stop_reason, "max_error": err})
    return rows


def enodes(ks: list[int]) -> list[dict]:
    rows = []
    files = load_rules(None)
    lim = Limits()
    for k in ks:
        naive = gradient_program(k_traces(k).program(), ("A",))
        out, wall, _ = timed(lambda naive=naive: ea.optimize(naive, cache=False))
        body = print_expr(out.program.statements[-1].body)
        # the binary rules alone: the same naive program encoded without the like-term pass
        run = saturate(encode_program(naive).text, files, lim.iterations, lim.nodes, lim.seconds)
        rows.append({
            "k": k, "nodes": out.report.stats.nodes, "stop": out.report.stats.stop_reason,
            "merged": body == f"{k} * (i == j)", "body": body[:60], "wall_s": wall,
            "cpu_s": out.report.stats.seconds, "binary_rules_nodes": run.snapshot.n_nodes,
            "binary_rules_stop": run.stop_reason,
        })
        print(rows[-1], flush=True)
    return rows


def limits(seconds: list[float]) -> list[dict]:
    prog = rnn_adjoint(100)
    rows = []
    for s in seconds:
        out, wall, _ = timed(lambda s=s: ea.optimize(prog, limits=Limits(seconds=s), cache=False))
        st = out.report.stats
        rows.append({"seconds": s, "statements": len(prog.statements), "cpu_s": st.seconds,
                     "allowed_s": 1.2 * s + 0.2, "kept": st.seconds <= 1.2 * s + 0.2,
                     "wall_s": wall, "iterations": st.iterations, "nodes": st.nodes,
                     "stop": st.stop_reason})
        print(rows[-1], flush=True)
    return rows


_CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
root = os.getcwd()
sys.path[:0] = [os.path.join(root, "experiments"), root]
import numpy as np
import eqsat_ad as ea
from sweep_programs import program
t1 = time.perf_counter()
sp = program(sys.argv[1])
small = sp.inputs(sp.small, seed=1)
target = sp.program()
opts = {"sizes": dict(sp.bench)} if sp.frontend == "index" else {}
c0 = time.process_time()
t2 = time.perf_counter()
g = ea.grad(target, wrt=sp.wrt, **opts)  # as the sweep measures it (experiments/sweep_measure.py)
g(**small)
t3 = time.perf_counter()
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the saturation workers, joined
cpu = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
rep = g.report
print(json.dumps({"import_s": t1 - t0, "first_s": t3 - t2, "cpu_s": cpu,
                  "stop": getattr(rep.stats, "stop_reason", "?"),
                  "price": str(rep.optimized.total), "value": float(rep.optimized.value)}))
"""


def catalogue() -> list[str]:
    """The worked examples and the sweep programs (experiments/sweep_programs.py)."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from sweep_programs import CATALOGUE

    return [p.name for p in CATALOGUE]


def first_calls(root: Path, env: dict[str, str], names: list[str]) -> dict[str, dict]:
    out = {}
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for name in names:
        res = subprocess.run(
            [sys.executable, "-c", _CHILD, name], cwd=root, env={**base, **env},
            capture_output=True, text=True, timeout=600,
        )
        if res.returncode != 0:
            out[name] = {"error": res.stderr.strip().splitlines()[-1:]}
            continue
        out[name] = json.loads(res.stdout.strip().splitlines()[-1])
        print(root.name, name, out[name], flush=True)
    return out


def summary(runs: dict[str, dict], field: str = "first_s") -> dict[str, float]:
    ts = [r[field] for r in runs.values() if field in r]
    return {"median_s": statistics.median(ts), "max_s": max(ts)} if ts else {}


def latency(baseline: Path | None, names: list[str]) -> dict[str, Any]:
    """Fresh processes (bytecode cached, as an installed package has it; a first round
    writes it), cache off; then twice with one on-disk cache: the second process's time."""
    result: dict[str, Any] = {"programs": names}
    env = {"PYTHONPATH": str(ROOT), "EQSAT_AD_CACHE": "0"}
    first_calls(ROOT, env, names[:1])  # writes the bytecode
    if baseline is not None:
        first_calls(baseline, {"PYTHONPATH": str(baseline), "EQSAT_AD_CACHE": "0"}, names[:1])
        result["before"] = first_calls(
            baseline, {"PYTHONPATH": str(baseline), "EQSAT_AD_CACHE": "0"}, names
        )
    result["after"] = first_calls(ROOT, env, names)
    with tempfile.TemporaryDirectory() as cache_dir:
        warm = {"PYTHONPATH": str(ROOT), "EQSAT_AD_CACHE": "1", "EQSAT_AD_CACHE_DIR": cache_dir}
        first_calls(ROOT, warm, names)  # fills the cache
        result["cached"] = first_calls(ROOT, warm, names)
    return result


# ------------------------------------------------------------------------------------------------
def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    ks = [r["k"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(ks, [r["nodes"] for r in rows], "o-", label="with the like-term pass")
    ax.plot(ks, [r["binary_rules_nodes"] for r in rows], "s--",
            label="binary AC rules only (stops at the node limit)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("k (traces)")
    ax.set_ylabel("e-nodes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_md(data: dict, path: Path) -> None:
    lines = ["# Scale (issue 11)", "", f"Run: {data['when']}; machine load (1 min): "
             f"{data['load']:.2f} on {os.cpu_count()} cores.", ""]
    lines += ["## Deep programs (default limits, optimized, compiled)", "",
              "| program | wall s | parent CPU s | stopped | max error |", "|---|---|---|---|---|"]
    for r in data["deep"]:
        lines.append(f"| {r['program']} | {r['wall_s']:.1f} | {r['parent_cpu_s']:.1f} | "
                     f"{r['stop']} | {r['max_error']:.1e} |")
    lines += ["", "## E-nodes against k (k traces, default limits)", "",
              "| k | e-nodes | stopped | merged to `k * (i == j)` | CPU s | wall s | "
              "binary rules only: e-nodes | stopped |", "|---|---|---|---|---|---|---|---|"]
    for r in data["enodes"]:
        lines.append(f"| {r['k']} | {r['nodes']} | {r['stop']} | {r['merged']} | "
                     f"{r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['binary_rules_nodes']} | "
                     f"{r['binary_rules_stop']} |")
    lines += ["", "![e-nodes against k](scale_enodes.png)", "",
              "## Limits(seconds=s) on a 200-statement adjoint", "",
              "| s | CPU s (saturation + extraction) | allowed (1.2 s + 0.2) | kept | wall s | "
              "iterations | e-nodes | stopped |", "|---|---|---|---|---|---|---|---|"]
    for r in data["limits"]:
        lines.append(f"| {r['seconds']} | {r['cpu_s']:.2f} | {r['allowed_s']:.2f} | {r['kept']} "
                     f"| {r['wall_s']:.2f} | {r['iterations']} | {r['nodes']} | {r['stop']} |")
    lat = data["latency"]
    cols = [c for c in ("before", "after", "cached") if c in lat]
    lines += ["", "## First-call latency (parse + optimize + compile + first call; "
              "a fresh process per program, import excluded, default limits)", "",
              "| program | " + " | ".join(f"{c}: wall s (CPU s)" for c in cols)
              + (" | same plan price |" if "before" in lat else " |"),
              "|---|" + "---|" * len(cols) + ("---|" if "before" in lat else "")]
    for name in lat["programs"]:
        cells = []
        for c in cols:
            r = lat[c].get(name, {})
            cells.append(f"{r['first_s']:.2f} ({r.get('cpu_s', float('nan')):.2f})"
                         if "first_s" in r else "error")
        same = ""
        if "before" in lat:
            b, a = lat["before"].get(name, {}), lat["after"].get(name, {})
            same = " | " + ("yes" if b.get("price") == a.get("price") and "price" in a else
                            f"no: {b.get('value')} → {a.get('value')}")
        lines.append(f"| {name} | " + " | ".join(cells) + same + " |")
    for label, key in (("median", "median_s"), ("max", "max_s")):
        cells = [f"{summary(lat[c]).get(key, float('nan')):.2f} "
                 f"({summary(lat[c], 'cpu_s').get(key, float('nan')):.2f})" for c in cols]
        lines.append(f"| **{label}** | " + " | ".join(cells) + (" | |" if "before" in lat
                                                                  else " |"))
    for c in ("after", "before"):
        imp = [r["import_s"] for r in lat.get(c, {}).values() if "import_s" in r]
        if imp:
            lines += [f"Import of eqsat_ad ({c}): median {statistics.median(imp):.2f} s."]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "experiments" / "out")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="a checkout of the code before, for the latency comparison")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deep", type=int, default=None, metavar="N",
                    help="only the deep programs, at N terms / statements (printed, not written)")
    args = ap.parse_args()
    if args.deep is not None:
        for row in deep(args.deep):
            print(row, flush=True)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            "load": os.getloadavg()[0]}
    data["deep"] = deep(500 if args.quick else 5000)
    print(data["deep"], flush=True)
    data["enodes"] = enodes([32, 128] if args.quick else [32, 128, 256, 1024])
    data["limits"] = limits([0.25, 1.0] if args.quick else [0.25, 1.0, 5.0])
    names = catalogue()
    data["latency"] = latency(args.baseline, names[:6] if args.quick else names)
    (args.out / "scale.json").write_text(json.dumps(data, indent=1))
    plot(data["enodes"], args.out / "scale_enodes.png")
    write_md(data, args.out / "scale.md")
    print((args.out / "scale.md").read_text())


if __name__ == "__main__":
    main()
