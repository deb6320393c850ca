"""``python -m eqsat_ad.fuzz --n 200 --seed 0 --out fuzz_out --time-limit 60``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .fuzz import GENERATORS, fuzz


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eqsat_ad.fuzz", description=(
        "Generate random index-language programs and NumPy-subset functions and compare the "
        "interpreter, optimize=False and optimized compiled code (values, nan/inf patterns, "
        "gradients, finite differences) on finite and non-finite inputs."))
    ap.add_argument("--n", type=int, default=200, help="number of programs (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--out", type=Path, default=Path("fuzz_out"),
                    help="folder for minimized reproducers (default fuzz_out)")
    ap.add_argument("--time-limit", type=float, default=60.0,
                    help="seconds per program before it counts as a timeout (default 60)")
    ap.add_argument("--generators", default=",".join(GENERATORS),
                    help="comma-separated generators (default index,numpy)")
    ap.add_argument("--max-reductions", type=int, default=20,
                    help="distinct failures to minimize (default 20)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="stop generating after this many seconds")
    ap.add_argument("--reduce-seconds", type=float, default=90.0,
                    help="time to minimize each failure (default 90)")
    ap.add_argument("--backend", choices=("numpy", "numba"), default="numpy",
                    help="what compiles the programs and gradients (default numpy; numba "
                         "needs the extra: pip install eqsat-ad[numba])")
    args = ap.parse_args(argv)
    gens = tuple(g for g in args.generators.split(",") if g)
    unknown = [g for g in gens if g not in GENERATORS]
    if unknown or args.n < 0:
        ap.error(f"unknown generator(s) {unknown}" if unknown else "--n must be >= 0")
    if args.backend == "numba":
        from ..backend.fused import require_numba

        try:
            require_numba()  # the extra's clear error, not one finding per program
        except ImportError as exc:
            ap.error(str(exc))
    result = fuzz(args.n, args.seed, args.out, args.time_limit, gens, args.max_reductions,
                  args.max_seconds, args.reduce_seconds, backend=args.backend)
    print(f"\n{result.programs} programs, seed {args.seed}, backend {args.backend}, "
          f"{result.seconds:.0f} s\n")
    print(result.table())
    if result.defects:
        print("\nfindings (program, inputs, outcome, stage, detail):")
        for k, kind, f in result.defects[:200]:
            print(f"  #{k} {kind} {f.outcome} {f.stage}: {f.detail[:160]}")
    for path in result.reproducers:
        print(f"reproducer: {path}")
    return 1 if result.defects else 0


if __name__ == "__main__":
    sys.exit(main())
