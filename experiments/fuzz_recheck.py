"""Rerun the programs a fuzz run found disagreeing, on the current code.

A fuzz run's log (``python -m eqsat_ad.fuzz ... > fuzz.log``) lists each finding as
``#K KIND OUTCOME STAGE: ...``; every program K it names is regenerated from the seed
(:func:`eqsat_ad.fuzz.make_case`) and checked again on its three input sets
(:func:`eqsat_ad.fuzz.check_case`). Prints the findings that remain and a count per generator and
outcome (``defect`` where some stage still disagrees, else the allowed outcomes seen).

    python experiments/fuzz_recheck.py 2028:fuzz2028.log 2029:fuzz2029.log
    python experiments/fuzz_recheck.py 2028:fuzz2028.log --only 2028:3477
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

from eqsat_ad.fuzz import Runner, make_case
from eqsat_ad.fuzz.report import DEFECTS

_FINDING = re.compile(r"\s+#(\d+) (\w+) (\S+)")


def programs_of(log: str) -> list[int]:
    """The program numbers a fuzz log lists findings for."""
    with open(log) as f:
        return sorted({int(m.group(1)) for line in f if (m := _FINDING.match(line))})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", metavar="SEED:LOG", help="a seed and its fuzz log")
    ap.add_argument("--only", action="append", default=[], metavar="SEED:K",
                    help="rerun only these programs (repeatable)")
    ap.add_argument("--time-limit", type=float, default=120.0)
    args = ap.parse_args()
    todo = [(int(seed), k) for seed, log in (r.split(":", 1) for r in args.runs)
            for k in programs_of(log)]
    if args.only:
        todo = [t for t in todo if f"{t[0]}:{t[1]}" in set(args.only)]
    print(f"{len(todo)} programs", flush=True)
    outcomes: Counter[tuple[str, str]] = Counter()
    with Runner(args.time_limit) as runner:
        for seed, k in todo:
            case, inputs = make_case(seed, k)
            for kind, findings in runner.run(case, inputs).items():
                bad = [f for f in findings if f.outcome in DEFECTS]
                seen = "+".join(sorted({f.outcome for f in findings})) or "agree"
                outcomes[(case.generator, "defect" if bad else seen)] += 1
                for f in bad:
                    print(f"{seed}:{k} {kind} {f.outcome} {f.stage} {f.detail[:160]}", flush=True)
    print("| generator | outcome | runs |\n|---|---|---|")
    for (gen, outcome), n in sorted(outcomes.items()):
        print(f"| {gen} | {outcome} | {n} |")


if __name__ == "__main__":
    main()
