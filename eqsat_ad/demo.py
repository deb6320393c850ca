"""The demo (``python -m eqsat_ad.demo``, ``make demo``): the paper's k-trace program end to end.

Each section is one stage of the pipeline (docs/design.md, "The pipeline"). A stage that is not
built yet is reported as such; nothing is ever printed that a stage did not compute. The exit
status is 1 when a stage that exists fails or disagrees with NumPy.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .examples import WorkedExample, example, k_traces
from .ir.errors import EqsatError
from .ir.interpreter import evaluate
from .ir.printer import print_program
from .ir.program import Program


@dataclass
class Demo:
    """What the sections share: the example, its inputs, and what earlier stages produced."""

    ex: WorkedExample
    sizes: dict[str, int]
    seed: int = 0
    inputs: dict[str, Any] = field(default_factory=dict)
    program: Program | None = None
    naive: Program | None = None
    timing_n: int = 2048
    timing_budget: float = 0.5
    """seconds of timed calls per measurement (tests pass a few milliseconds: the section's
    checks and tables, not its numbers)"""
    failures: list[str] = field(default_factory=list)


class Unavailable(Exception):
    """A section that does not apply to the chosen example."""


def _public(name: str) -> Any:
    """``eqsat_ad.<name>``: every stage is there, so a failing import is a failure, not a skip."""
    return getattr(importlib.import_module("eqsat_ad"), name)


def _heading(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 94 - len(title)))


def _indent(text: str) -> str:
    return textwrap.indent(text.rstrip("\n"), "    ")


def _agreement(label: str, got: Any, want: Any, demo: Demo) -> None:
    got_a, want_a = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got_a.shape != want_a.shape:
        demo.failures.append(label)
        print(f"    {label}: shape {got_a.shape}, NumPy's is {want_a.shape}  MISMATCH")
        return
    err = float(np.max(np.abs(got_a - want_a))) if got_a.size else 0.0
    scale = float(np.max(np.abs(want_a))) if want_a.size else 0.0
    ok = bool(np.allclose(got_a, want_a, rtol=1e-8, atol=1e-8))
    if not ok:
        demo.failures.append(label)
    print(f"    {label}: max |difference| = {err:.3g} (max |value| = {scale:.3g})  "
          f"{'agrees' if ok else 'MISMATCH'}")


# ================================================================================================
# Sections
# ================================================================================================


def section_program(demo: Demo) -> None:
    _heading(f"{demo.ex.id}: {demo.ex.title}")
    print("  source:")
    print(_indent(demo.ex.source))
    demo.program = demo.ex.program()
    print("  parsed and printed back (the Tensor SSA program):")
    print(_indent(print_program(demo.program)))


def section_evaluate(demo: Demo) -> None:
    _heading("reference interpreter vs NumPy")
    assert demo.program is not None
    demo.inputs = demo.ex.inputs(demo.sizes, demo.seed)
    shapes = ", ".join(f"{k}: {np.shape(v)}" for k, v in demo.inputs.items())
    print(f"  random inputs (seed {demo.seed}): {shapes}")
    got = evaluate(demo.program, **demo.inputs)
    want = demo.ex.numpy_f(**demo.inputs)
    print(f"    interpreter: {got!r}")
    print(f"    NumPy:       {want!r}")
    _agreement("f", got, want, demo)


def section_naive_adjoint(demo: Demo) -> None:
    _heading(f"naive adjoint: ea.vjp(prog, wrt={demo.ex.wrt!r})")
    vjp = _public("vjp")
    demo.naive = vjp(demo.program, wrt=demo.ex.wrt)
    print(_indent(print_program(demo.naive)))


def section_optimized(demo: Demo) -> None:
    _heading("optimized adjoint: ea.optimize(naive adjoint)")
    optimize = _public("optimize")
    if demo.naive is None:
        raise Unavailable("needs the naive adjoint")
    opt = optimize(demo.naive)
    print(_indent(print_program(opt.program)))
    print("  cost report:")
    print(_indent(str(opt.report)))


def section_grad(demo: Demo) -> None:
    _heading(f"compiled gradient: ea.grad(prog, wrt={demo.ex.wrt!r})")
    grad = _public("grad")
    g = grad(demo.program, wrt=demo.ex.wrt)
    print("  generated NumPy source:")
    print(_indent(g.source))
    _check_gradient(g, demo)


def _check_gradient(g: Any, demo: Demo, structured: bool = False) -> None:
    """Run ``g`` on the demo's inputs and compare each gradient with the hand-written one."""
    got = g(**demo.inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = demo.ex.numpy_grad(**demo.inputs)
    for name, value in zip(demo.ex.wrt, got, strict=True):
        if structured:
            print(f"    d f / d {name}: {value!r}")
        label = " (as a dense array)" if structured else ""
        _agreement(f"d f / d {name}{label} vs the hand-written gradient", np.asarray(value),
                   want[name], demo)


def section_structured(demo: Demo) -> None:
    _heading("structured gradient: ea.grad(prog, wrt=..., structured=True)")
    grad = _public("grad")
    g = grad(demo.program, wrt=demo.ex.wrt, structured=True)
    print("  the optimized adjoint writes only where [i == j] holds, so it can be returned as")
    print("  the stored points (O(N) numbers instead of an N x N array):")
    print(_indent(g.source))
    _check_gradient(g, demo, structured=True)


def _median_seconds(fn: Callable[[], Any], budget: float = 0.5) -> float:
    """Median of repeated timings, each long enough to be above the timer's resolution (with
    a budget under 0.2 s, timeit's own minimum, three samples of one call)."""
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange() if budget >= 0.2 else (1, budget)
    runs = max(3, min(15, int(budget / max(elapsed, 1e-9))))
    samples = sorted(t / number for t in timer.repeat(repeat=runs, number=number))
    return samples[len(samples) // 2]


def _eager_trace_gradient(n: int, k: int) -> np.ndarray:
    """What an eager tape does for k traces: one dense zero tensor plus a scatter per trace."""
    total = np.zeros((n, n))
    for _ in range(k):
        adj = np.zeros((n, n))
        idx = np.arange(n)
        adj[idx, idx] = 1.0
        total = total + adj
    return total


def section_timing(demo: Demo) -> None:
    """k traces at a larger N: cost reports and measured times, naive vs optimized vs by hand."""
    if demo.ex.id != "E2" or demo.timing_n <= 0:
        raise Unavailable("timings are shown for the k-trace program only")
    n = demo.timing_n
    _heading(f"k traces at N = {n}: predicted cost and measured time of the gradient")
    grad = _public("grad")
    rng = np.random.default_rng(demo.seed)
    a = rng.standard_normal((n, n))
    rows = []
    for k in (1, 8, 32):
        prog = k_traces(k).program()
        fast = grad(prog, wrt="A")
        naive = grad(prog, wrt="A", optimize=False)
        points = grad(prog, wrt="A", structured=True)
        want = k * np.eye(n)
        for label, fn in (("optimized", fast), ("naive", naive), ("structured", points)):
            _agreement(f"k = {k}, {label} gradient", np.asarray(fn(a)), want, demo)
        times = [_median_seconds(fn, demo.timing_budget) for fn in (
            lambda g=naive: g(a),
            lambda g=fast: g(a),
            lambda g=points: g(a),
            lambda k=k: k * np.eye(n),
            lambda k=k: _eager_trace_gradient(n, k),
        )]
        rows.append((k, str(fast.report.eager_total), str(fast.report.naive.total),
                     str(fast.report.optimized.total), str(points.report.optimized.total),
                     times))
    print("\n    predicted cost (prices of the plans the backend runs):")
    print(f"    {'k':>3}  {'eager AD':<16} {'naive adjoint':<16} {'optimized':<14} structured")
    for k, eager, naive_cost, cost, stored, _ in rows:
        print(f"    {k:>3}  {eager:<16} {naive_cost:<16} {cost:<14} {stored}")
    print("\n    measured time of the gradient:")
    print(f"    {'k':>3}  {'naive grad':>11} {'optimized':>10} {'structured':>11} {'by hand':>9} "
          f"{'eager tape':>11}")
    for k, *_, times in rows:
        print(f"    {k:>3}  " + " ".join(
            f"{t * 1e3:>{w}.3f}ms" for t, w in zip(times, (8, 7, 8, 6, 8), strict=True)))
    print("    (optimized: the e-graph's adjoint; structured: the same with structured=True,")
    print("     an ea.Diagonal of N numbers; by hand: k * np.eye(N); eager tape: one dense")
    print("     zero-filled N x N adjoint plus a diagonal scatter per trace, as eager tapes do)")


SECTIONS: tuple[Callable[[Demo], None], ...] = (
    section_program,
    section_evaluate,
    section_naive_adjoint,
    section_optimized,
    section_grad,
    section_structured,
    section_timing,
)


def run(demo: Demo, sections: tuple[Callable[[Demo], None], ...] = SECTIONS) -> int:
    """Run the sections in order; returns the exit status (1 if an available stage failed)."""
    for section in sections:
        try:
            section(demo)
        except Unavailable as exc:
            print(f"  (skipped: {exc})")
        except EqsatError as exc:
            demo.failures.append(section.__name__)
            print(f"  FAILED: {type(exc).__name__}: {exc}")
        except Exception as exc:  # a stage still being built: report it and carry on
            demo.failures.append(section.__name__)
            print(f"  FAILED with an internal error: {type(exc).__name__}: {exc}")
    _heading("summary")
    if demo.failures:
        print(f"  failed: {', '.join(demo.failures)}")
        return 1
    print("  every available stage agrees with NumPy")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqsat_ad.demo", description=__doc__)
    parser.add_argument("--k", type=int, default=4, help="number of traces in the k-trace program")
    parser.add_argument("--n", type=int, default=64, help="size N of the matrix")
    parser.add_argument("--example", default=None,
                        help="run a worked example by id (E1..E12, chain, mlp) instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timing-n", type=int, default=2048,
                        help="N for the k-trace timings (0 skips them)")
    args = parser.parse_args(argv)
    if args.example is not None:
        try:
            ex = example(args.example)
        except KeyError as exc:
            parser.error(str(exc.args[0]))
        sizes = dict(ex.default_sizes)
    else:
        if args.k < 1 or args.n < 1:
            parser.error("--k and --n must be positive")
        ex = k_traces(args.k)
        sizes = {"N": args.n}
    return run(Demo(ex, sizes, args.seed, timing_n=args.timing_n))


if __name__ == "__main__":
    sys.exit(main())
