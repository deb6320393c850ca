"""Route each finding of a fuzz run to the stage where the results part (issue 12).

Reads the findings a ``python -m eqsat_ad.fuzz`` run printed (its log, from the stdin or a
file), regenerates each program from the seed and evaluates, for the stage that disagreed:

* ``backend``: the compiled code differs from the interpreter running the very program it
  compiled (``CompiledProgram.program``);
* ``optimizer: inlining``: the optimized program differs from the original under the
  interpreter, but agrees with the original once every statement read ``y[a]`` is replaced by
  its bracket-guarded body (what the encoder unions it with): the stored-strong-zero question
  left open in docs/semantics.md;
* ``optimizer``: the optimized program differs otherwise;
* ``AD`` for an ``fd`` finding, ``internal`` / ``raises`` for exceptions.

Each label gets `` (ill-conditioned)`` when the reference itself changes (by the fuzzer's own
comparison) under relative input perturbations of 1e-13: the finding is then most likely two
roundings of a cancelling or overflowing computation, not a wrong answer.

    python experiments/fuzz_routes.py --seed 2026 fuzz.log
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import Counter
from typing import Any

import numpy as np

from eqsat_ad.api import gradient_program
from eqsat_ad.fuzz import make_case
from eqsat_ad.fuzz.check import _float_params, _Stages
from eqsat_ad.fuzz.compare import mismatch
from eqsat_ad.ir.expr import Access, And, Binary, Bracket, Cmp, Expr, substitute
from eqsat_ad.ir.index import Affine
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Program, Statement
from eqsat_ad.ir.traverse import rebuild

LINE = re.compile(r"^\s*#(\d+) (\w+) ([\w-]+) (\S+?): (.*)$")


def inline_all(prog: Program) -> Program | None:
    """``prog`` with every integral statement read replaced by its body guarded by the read's
    range (None for a program with folds)."""
    bodies: dict[str, Statement] = {}

    def post(x: Expr, _: Any) -> Expr:
        if not isinstance(x, Access) or x.name not in bodies:
            return x
        s = bodies[x.name]
        if len(x.indices) != len(s.indices) or not all(a.is_integral() for a in x.indices):
            return x  # (a whole tensor returned, or a fractional read: kept)
        body = substitute(s.body, {iv.name: a for iv, a in zip(s.indices, x.indices,
                                                               strict=True)})
        conds = [c for iv, a in zip(s.indices, x.indices, strict=True)
                 for c in (Cmp(">=", a, Affine.constant(0)),
                           Cmp("<", a, Affine.of_dim(iv.extent)))]
        return Binary("*", Bracket(And(tuple(conds))), body) if conds else body

    steps = []
    for s in prog.statements:
        if not isinstance(s, Statement):
            return None
        s = Statement(s.name, s.indices, rebuild(s.body, post=post))
        bodies[s.name] = s
        steps.append(s)
    outs = tuple(rebuild(o, post=post) for o in prog.outputs)
    return Program(prog.params, tuple(steps), outs, prog.returns_tuple, prog.name)


def _differs(a: Any, b: Any) -> np.ndarray:
    """Where ``a`` and ``b`` differ, elementwise, by the fuzzer's rule (patterns exact, values
    to 1e-6 relative with a floor of 1e-9 of the largest magnitude)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    fin = np.isfinite(a) & np.isfinite(b)
    scale = max([1.0, *np.abs(a[fin]).ravel(), *np.abs(b[fin]).ravel()])
    close = np.abs(a - b) <= 1e-6 * np.maximum(np.abs(a), np.abs(b)) + 1e-9 * scale
    same = (np.isnan(a) & np.isnan(b)) | (a == b) | (fin & close)
    return ~same


def _explained(ref: Any, got: Any, inlined: Any) -> bool:
    """Every point where ``got`` differs from ``ref`` is one where inlining the statements
    changes ``ref`` (the optimizer inlines some reads, not necessarily all)."""
    refs, gots, inls = (x if isinstance(x, tuple) else (x,) for x in (ref, got, inlined))
    return all(not np.any(_differs(r, g) & ~_differs(r, i))
               for r, g, i in zip(refs, gots, inls, strict=True))


def _perturbed(inputs: dict, rng: np.random.Generator) -> dict:
    out = {}
    for k, v in inputs.items():
        a = np.asarray(v)
        if a.dtype.kind != "f":
            out[k] = v
            continue
        b = a * (1 + 1e-13 * rng.choice([-1.0, 1.0], size=a.shape))
        out[k] = float(b) if a.ndim == 0 else b
    return out


def route(seed: int, number: int, kind: str, outcome: str, stage: str) -> str:
    case, inputs = make_case(seed, number)
    ins = inputs[kind]
    st = _Stages(case)
    if outcome in ("internal", "raises", "timeout"):
        fwd = st.forward_program(ins)
        try:
            if stage.startswith("grad"):
                st.grad_fn(stage == "grad", _float_params(fwd))(**ins)
            else:
                st.compiled_fn(stage == "compile")(**ins)
        except Exception as exc:  # noqa: BLE001
            return f"{outcome}: {type(exc).__name__}"
        return f"{outcome}: runs now"
    fwd = st.forward_program(ins)
    grad = stage.startswith("grad")
    opt = stage in ("compile", "grad")
    wrt = _float_params(fwd)
    ref_prog = gradient_program(fwd, wrt, as_tuple=True) if grad else fwd
    if outcome == "fd":
        label = "AD"
    elif outcome == "numpy":
        label = "front end"
    else:
        compiled = st.grad_fn(opt, wrt) if grad else st.compiled_fn(opt)
        got = compiled(**ins)  # (a function's program exists after its first call)
        ref = evaluate(ref_prog, **ins)
        mid = evaluate(compiled.program, **ins)
        if mismatch(ref, got) is None:
            label = "agrees now"
        elif mismatch(mid, got) is not None:
            label = "backend"
        elif mismatch(ref, mid) is not None:
            inl = inline_all(ref_prog)
            same = inl is not None and _explained(ref, mid, evaluate(inl, **ins))
            label = "optimizer: inlining" if same else "optimizer"
        else:
            label = "?"
    ref = evaluate(ref_prog, **ins)
    rng = np.random.default_rng(0)
    if any(mismatch(ref, evaluate(ref_prog, **_perturbed(ins, rng))) is not None
           for _ in range(3)):
        label += " (ill-conditioned)"
    return label


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("log", nargs="?", help="the fuzz run's output (default: stdin)")
    args = ap.parse_args(argv)
    text = open(args.log).read() if args.log else sys.stdin.read()  # noqa: SIM115
    seen: dict[tuple[int, str, str, str], str] = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for line in text.splitlines():
            m = LINE.match(line)
            if not m:
                continue
            number, kind, outcome, stage = int(m[1]), m[2], m[3], m[4]
            key = (number, kind, outcome, stage)
            if key in seen:
                continue
            try:
                seen[key] = route(args.seed, number, kind, outcome, stage)
            except Exception as exc:  # noqa: BLE001 - report and go on
                seen[key] = f"(could not route: {type(exc).__name__})"
            print(f"#{number} {kind} {outcome} {stage}: {seen[key]}")
    print()
    print("| route | findings |")
    print("|---|---|")
    for label, n in Counter(seen.values()).most_common():
        print(f"| {label} | {n} |")


if __name__ == "__main__":
    main()
