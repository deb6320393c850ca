"""The sweep benchmark (issue 10, item 7): naive vs optimized gradients over 37 programs.

For every program of experiments/sweep_programs.py a child process (one pinned core, one BLAS
thread, a time limit and an address-space cap, so a program that fails, allocates a huge mask or
runs for ever costs one row and not the sweep) checks the naive (``optimize=False``), optimized
and hand-written gradients against each other and against central differences at small sizes,
then at the benchmark sizes reads the predicted prices from the cost report and times the
three gradients (medians of interleaved calls: ratios within one run), the NumPy function and
the compiled forward program, records the first-call latency (parse + optimize + compile) and
the peak memory (tracemalloc) of one gradient call.

Writes sweep.md (table and the issue's targets, PASS/FAIL each) and
sweep.png (predicted vs measured speed-up; optimized vs optimize=False and vs hand-written);
``--json`` also writes sweep.json, into ``--out`` (default experiments/out/; the committed
run is in experiments/results/).

    python experiments/sweep.py                    # full run (tens of minutes)
    python experiments/sweep.py --quick            # smoke run: small sizes, few repeats
    python experiments/sweep.py --only chain8 --only blur_window
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# One thread per library in this process and (inherited) in every child, OpenBLAS on the
# CPU's own kernels (one_core.py): set before NumPy starts.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_core import blas_core, configure, cpu  # noqa: E402

configure()

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from sweep_programs import CATALOGUE, program  # noqa: E402
from sweep_summary import write_results  # noqa: E402

OUT = HERE / "out"  # git-ignored scratch; the committed run used --out experiments/results


def _idlest_core(seconds: float = 0.3) -> int:
    """The core of this process's affinity with the most idle time over ``seconds`` (the machine
    may be shared); the first one where /proc/stat cannot be read."""
    cores = sorted(os.sched_getaffinity(0))

    def idle() -> dict[int, int]:
        out = {}
        for line in Path("/proc/stat").read_text().splitlines():
            head, *fields = line.split()
            if head.startswith("cpu") and head[3:].isdigit():
                out[int(head[3:])] = int(fields[3]) + int(fields[4])  # idle + iowait
        return out

    try:
        before = idle()
        time.sleep(seconds)
        after = idle()
        return max(cores, key=lambda c: (after.get(c, 0) - before.get(c, 0), -c))
    except (OSError, ValueError, IndexError):
        return cores[0]


def run_child(name: str, quick: bool, budget: float, repeats: int, timeout: float,
              mem_gb: float, core: int | None) -> dict[str, Any]:
    """Measure one program in a child process; what it printed before any failure is kept."""
    core = _idlest_core() if core is None else core
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--core", str(core),
           "--budget", str(budget), "--repeats", str(repeats)] + (["--quick"] if quick else [])
    cap = int(mem_gb * 2**30)

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=limits, start_new_session=True)
    status = "ok"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: it and its workers
        out, err = proc.communicate()
        status = f"timeout after {timeout:.0f} s"
    result: dict[str, Any] = {"errors": {}}
    for line in out.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # something the program printed itself
        if not isinstance(item, dict) or "key" not in item:
            continue
        key, value = item["key"], item["value"]
        if key.startswith("error:"):
            result["errors"][key[len("error:"):]] = value
        else:
            result[key] = value
    if status == "ok" and proc.returncode != 0:
        tail = [ln for ln in err.strip().splitlines() if ln.strip()][-1:] or ["no message"]
        status = f"exit {proc.returncode}: {tail[0][:160]}"
        if proc.returncode < 0 or "MemoryError" in err:
            status += f" (memory cap {mem_gb:g} GiB or signal)"
    elif status == "ok" and not result.get("done"):
        status = "incomplete"
    result["status"] = status
    result["wall_s"] = time.perf_counter() - start
    result["core"] = core
    return result


def child(name: str, quick: bool, budget: float, repeats: int, core: int) -> int:
    from sweep_measure import measure

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    sp = program(name)
    measure(sp, sp.quick if quick else sp.bench, budget, repeats)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke run)")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="program to run (repeatable; default: all)")
    ap.add_argument("--json", action="store_true", help="also write sweep.json")
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per program (default: 150, quick: 60)")
    ap.add_argument("--mem-gb", type=float, default=4.0,
                    help="address-space cap per program in GiB (default: %(default)s)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of interleaved timing per program (default: 3, quick: 0.2)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="most interleaved rounds per program (default: 201, quick: 3)")
    ap.add_argument("--core", type=int, default=None,
                    help="core to pin each program to (default: the idlest at its start)")
    ap.add_argument("--no-fallback", action="store_true",
                    help="do not rerun a program whose gradients failed at the benchmark sizes "
                         "at its quick sizes")
    ap.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    quick = args.quick
    budget = args.budget if args.budget is not None else (0.2 if quick else 3.0)
    repeats = args.repeats if args.repeats is not None else (3 if quick else 201)
    if args.child:
        return child(args.child, quick, budget, repeats, args.core or 0)
    timeout = args.timeout if args.timeout is not None else (60.0 if quick else 150.0)
    names = [p.name for p in CATALOGUE]
    for n in args.only or []:
        if n not in names:
            ap.error(f"--only {n}: no such program; known: {', '.join(names)}")
    chosen = [n for n in names if not args.only or n in args.only]
    rows: list[dict[str, Any]] = []
    for n in chosen:
        sp = program(n)
        print(f"{n:18} ", end="", flush=True)
        r = run_child(n, quick, budget, repeats, timeout, args.mem_gb, args.core)
        failed = not all(k in r.get("times", {}) for k in ("opt", "naive"))
        if failed and not quick and not args.no_fallback:
            # Some figure at all: the same program at its smoke-test sizes.
            r["fallback"] = run_child(n, True, budget, repeats, timeout, args.mem_gb, args.core)
        r.update(name=n, family=sp.family, frontend=sp.frontend, note=sp.note,
                 chain=list(sp.chain))
        rows.append(r)
        t = r.get("times", {})
        print(f"{r['status']:10} {r['wall_s']:6.1f} s  "
              + "  ".join(f"{k} {v * 1e3:.3g} ms" for k, v in t.items()), flush=True)
    meta = {"quick": quick, "budget_s": budget, "repeats": repeats, "timeout_s": timeout,
            "mem_gb": args.mem_gb, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "python experiments/sweep.py " + " ".join(argv or sys.argv[1:]),
            "blas": blas_core(), "cpu": cpu()}
    args.out.mkdir(parents=True, exist_ok=True)
    for path in write_results(rows, meta, args.out, as_json=args.json):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
