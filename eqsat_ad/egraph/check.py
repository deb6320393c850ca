"""Check a rule file for soundness on random instances.

For every rule that merges e-classes (each ``rewrite``, ``birewrite`` and each ``rule`` with a
``union``), the checker instantiates its left-hand side (the constructor patterns of its query)
with random sub-terms, random sizes and random tensors, puts the instances in an e-graph with the
prelude and the file's analysis rules, runs that one rule, and then evaluates every member of every
e-class with the reference interpreter: all members of a class must agree. A member that does not
is a counterexample, reported as two index-language expressions and the sizes.

Tensor values are nonzero, but reads out of range are 0, so divisions by zero happen exactly where
brackets guard them: a rule that moves a bracket across a division (unsound under strong-zero
multiplication) turns a guarded 0 into inf or nan, and is caught. Where both sides are non-finite
the instance says nothing (both are undefined).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..ir.errors import EqsatError
from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
)
from ..ir.index import Affine, IndexVar, size
from ..ir.interpreter import evaluate_expr
from ..ir.printer import print_expr
from .egglog_bindings import bindings
from .extract import LinVal, decode_index_classes, node_children
from .rules import RuleError, load_rule_file, prelude_text
from .saturate import take_snapshot

SExp = str | list  # an atom or a list of s-expressions

# --- s-expressions ----------------------------------------------------------------------------
_TOKEN = re.compile(r'\s+|;[^\n]*|"(?:[^"\\]|\\.)*"|[()]|[^\s()";]+')


def parse_sexps(text: str) -> list[SExp]:
    stack: list[list] = [[]]
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok[0].isspace() or tok[0] == ";":
            continue
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise RuleError("unbalanced ')' in rule file")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise RuleError("unbalanced '(' in rule file")
    return stack[0]


def show(s: SExp) -> str:
    return s if isinstance(s, str) else "(" + " ".join(show(x) for x in s) + ")"


def _option(cmd: list, key: str) -> SExp | None:
    for k in range(len(cmd) - 1):
        if cmd[k] == key:
            return cmd[k + 1]
    return None


def _with_ruleset(cmd: list, name: str) -> list:
    out = list(cmd)
    for k in range(len(out) - 1):
        if out[k] == ":ruleset":
            out[k + 1] = name
            return out
    return out + [":ruleset", name]


def rule_name(cmd: list) -> str:
    name = _option(cmd, ":name")
    if isinstance(name, str) and name.startswith('"'):
        return name[1:-1]
    return show(cmd)


def _has_union(s: SExp) -> bool:
    return isinstance(s, list) and (
        (bool(s) and s[0] == "union") or any(_has_union(x) for x in s)
    )


# --- the term language's signatures (read from the prelude) --------------------------------------
def _signatures() -> dict[str, tuple[str, tuple[str, ...]]]:
    sigs: dict[str, tuple[str, tuple[str, ...]]] = {}
    for cmd in parse_sexps(prelude_text()):
        if isinstance(cmd, list) and cmd and cmd[0] == "datatype":
            sort = cmd[1]
            for ctor in cmd[2:]:
                sigs[ctor[0]] = (sort, tuple(ctor[1:]))
    return sigs


SIGS = _signatures()

# --- random instances ---------------------------------------------------------------------------
GENS = (0, 1)
"""ids that play statement generators (their range may be assumed)"""
BINDERS = (2, 3, 4)
"""ids that random sums bind"""
POOL = GENS + BINDERS
SIZE_ID = -1


def _rat(c: Fraction) -> str:
    return f"(bigrat (bigint {c.numerator}) (bigint {c.denominator}))"


def _lin(terms: dict[int, Fraction], const: Fraction) -> str:
    out = f"(LNil {_rat(const)})"
    for i in sorted((i for i, c in terms.items() if c != 0), reverse=True):
        out = f"(LTerm {i} {_rat(terms[i])} {out})"
    return out


class _Random:
    def __init__(self, rng: random.Random, extent_of: dict[int, str]) -> None:
        self.rng = rng
        self.extent_of = extent_of
        self.recent: list[dict[int, Fraction]] = []
        self.focus: int | None = None
        """the binder of the sum being instantiated: indices favour it"""

    def lin(self) -> str:
        """A random affine expression, biased towards the shapes rules look for: a plain index
        plus a constant, an upper bound ``N - v + c``, or a shifted copy of a recent one (so
        that equalities contradict and brackets repeat)."""
        r = self.rng
        const = Fraction(r.choice((0, 0, 1, -1, 2)))
        roll = r.random()
        if self.focus is not None and r.random() < 0.15:  # a stride: 2 j == v
            terms = {self.focus: Fraction(r.choice((2, -2))), r.choice(GENS): Fraction(1)}
        elif roll < 0.25 and self.recent:
            terms = dict(r.choice(self.recent))
        elif roll < 0.45:
            v = self.focus if self.focus is not None and r.random() < 0.6 else r.choice(POOL)
            terms = {v: Fraction(1)}
        elif roll < 0.55:
            terms = {SIZE_ID: Fraction(1), r.choice(GENS): Fraction(-1)}
        else:
            terms = {}
            if self.focus is not None and r.random() < 0.5:
                terms[self.focus] = Fraction(r.choice((1, -1, 2, -2)))
            for _ in range(r.choice((1, 1, 2))):
                terms[r.choice(POOL)] = Fraction(r.choice((1, -1, 1, 2, -2)))
            if r.random() < 0.2:
                terms[SIZE_ID] = Fraction(r.choice((1, -1)))
        self.recent.append(terms)
        return _lin(terms, const)

    def il(self, rank: int) -> str:
        out = "(INil)"
        for k in range(rank):
            if k == rank - 1 and self.focus is not None and self.rng.random() < 0.4:
                lin = _lin({self.focus: Fraction(1)}, Fraction(self.rng.choice((0, 1, -1))))
            else:
                lin = self.lin()
            out = f"(ICons {lin} {out})"
        return out

    def pred(self) -> str:
        r = self.rng
        if r.random() < 0.15:
            rank = r.choice((1, 2))
            return f'(Rel "R{rank}" {self.il(rank)})'
        return f"({r.choice(('Eq', 'Eq', 'Ne', 'Ge', 'Gt'))} {self.lin()})"

    def expr(self, depth: int = 2) -> str:
        r = self.rng
        if depth == 2 and self.focus is not None and r.random() < 0.3:
            # a product reading a tensor at the binder: what strided elimination looks for
            read = f'(Acc "T1" {self.il(1)})'
            return f"(Mul {read} {self.expr(depth - 1)})"
        if depth <= 0 or r.random() < 0.35:
            kind = r.choice(("acc1", "acc2", "acc1", "num", "br", "scalar"))
            if kind == "num":
                return f"(Num {r.choice((0.0, 1.0, -1.0, 2.0, 0.5, 3.0))!r})"
            if kind == "br":
                return f"(Br {self.pred()})"
            if kind == "scalar":
                return '(Acc "S" (INil))'
            rank = 1 if kind == "acc1" else 2
            return f'(Acc "T{rank}" {self.il(rank)})'
        kind = r.choice(("Add", "Mul", "Mul", "Sum", "Call1", "Div", "Pow"))
        if kind == "Sum":
            j = r.choice(BINDERS)
            return f"(Sum {j} {self.extent_of[j]} {self.expr(depth - 1)})"
        if kind == "Call1":
            return f'(Call1 "{r.choice(("exp", "sin", "tanh"))}" {self.expr(depth - 1)})'
        if kind == "Pow":
            return f"(Pow {self.expr(depth - 1)} 2.0)"
        if kind == "Div":
            # as in real programs, a denominator is zero only where an index is out of range
            rank = r.choice((1, 2))
            den = r.choice((f'(Acc "T{rank}" {self.il(rank)})',
                            f"(Add (Num 1.0) (Pow {self.expr(depth - 1)} 2.0))"))
            return f"(Div {self.expr(depth - 1)} {den})"
        return f"({kind} {self.expr(depth - 1)} {self.expr(depth - 1)})"

    def of_sort(self, sort: str, ctx: str = "") -> str:
        r = self.rng
        if sort == "E":
            return self.expr()
        if sort == "Lin":
            return self.lin()
        if sort == "IL":
            return self.il(r.choice((1, 2)))
        if sort == "Pred":
            return self.pred()
        if sort == "i64":
            return str(r.choice(BINDERS if ctx == "Sum" else POOL))
        if sort == "BigRat":
            return _rat(Fraction(r.choice((-2, -1, 0, 1, 2, 3))) / r.choice((1, 1, 2)))
        if sort == "f64":
            return repr(r.choice((0.0, 1.0, -1.0, 2.0, 0.5, 3.0)))
        if sort == "String":
            if ctx == "Call1":
                return f'"{r.choice(("exp", "sin", "tanh"))}"'
            if ctx == "Call2":
                return f'"{r.choice(("max", "min"))}"'
            return '"T1"'
        raise RuleError(f"cannot make a random value of sort {sort}")


def _is_var(s: SExp) -> bool:
    return isinstance(s, str) and bool(re.match(r"^[A-Za-z_][\w\-]*$", s)) and s not in SIGS


def _instantiate(pat: SExp, sort: str, env: dict[str, str], gen: _Random, ctx: str = "") -> str:
    if isinstance(pat, str):
        if _is_var(pat):
            if pat not in env:
                env[pat] = gen.of_sort(sort, ctx)
            return env[pat]
        return pat
    head = pat[0]
    if head not in SIGS:
        return show(pat)  # a primitive literal such as (bigrat (bigint 1) (bigint 1))
    _, arg_sorts = SIGS[head]
    args = pat[1:]
    if len(args) != len(arg_sorts):
        raise RuleError(f"{head} takes {len(arg_sorts)} arguments, not {len(args)}: {show(pat)}")
    out: list[str | None] = [None] * len(args)
    if head == "Acc" or head == "Rel":
        # the index list first: the tensor (relation) name follows from its length
        il = _instantiate(args[1], "IL", env, gen)
        rank = il.count("(ICons")
        name = f'"{"R" if head == "Rel" else ("S" if rank == 0 else "T")}{rank or ""}"'
        if _is_var(args[0]) and args[0] not in env:
            env[args[0]] = name
        out = [_instantiate(args[0], "String", env, gen), il]
        return f"({head} {' '.join(out)})"
    if head == "Sum":
        j = _instantiate(args[0], "i64", env, gen, "Sum")
        if j.lstrip("-").isdigit():
            gen.focus = int(j)
            if _is_var(args[1]) and args[1] not in env:
                env[args[1]] = gen.extent_of.get(int(j), gen.extent_of[0])
    for k, (a, s) in enumerate(zip(args, arg_sorts, strict=True)):
        out[k] = _instantiate(a, s, env, gen, head)
    return f"({head} {' '.join(x or '' for x in out)})"


def _seeds_of(cmd: list) -> list[tuple[SExp, str]]:
    """The constructor patterns a rule matches, with their sorts."""
    if cmd[0] in ("rewrite", "birewrite"):
        pats = [cmd[1]] + ([cmd[2]] if cmd[0] == "birewrite" else [])
    else:
        pats = []
        for fact in cmd[1]:
            if isinstance(fact, list) and fact and fact[0] == "=" and isinstance(fact[2], list):
                if fact[2] and fact[2][0] in SIGS and _is_var(fact[1]):
                    pats.append(fact[2])
    return [(p, SIGS[p[0]][0]) for p in pats if isinstance(p, list) and p and p[0] in SIGS]


# --- evaluation of e-class members ---------------------------------------------------------------
def _affine(lv: LinVal) -> Affine:
    index = {f"v{i}": c for i, c in lv[0] if i >= 0}
    sizes = {"N": sum((c for i, c in lv[0] if i < 0), Fraction(0))}
    return Affine.make(index, sizes, lv[1])


def _pred(p: tuple) -> Pred:
    if p[0] == "Rel":
        return Rel(p[1], tuple(_affine(lv) for lv in p[2]))
    return Cmp({"Eq": "==", "Ne": "!=", "Ge": ">=", "Gt": ">"}[p[0]], _affine(p[1]),
               Affine.constant(0))


def _node_expr(op: str, args: tuple, kid: Mapping[int, Expr], index: tuple, extents) -> Expr | None:
    lin, il, pred = index
    try:
        if op == "Num":
            return Const(args[0])
        if op == "Acc":
            return Access(args[0], tuple(_affine(lv) for lv in il[args[1]]))
        if op == "Br":
            return Bracket(_pred(pred[args[0]]))
        if op in ("Add", "Mul", "Div"):
            return Binary({"Add": "+", "Mul": "*", "Div": "/"}[op], kid[args[0]], kid[args[1]])
        if op == "Pow":
            return Pow(kid[args[0]], args[1])
        if op == "Call1":
            return Call(args[0], (kid[args[1]],))
        if op == "Call2":
            return Call(args[0], (kid[args[1]], kid[args[2]]))
        if op == "Sum":
            terms, const = lin[args[1]]
            if not terms:
                extent = int(const)
            elif terms == ((SIZE_ID, Fraction(1)),) and const == 0:
                extent = size("N")
            else:
                return None
            return Sum((IndexVar(f"v{args[0]}", extent),), kid[args[2]])
    except KeyError:
        return None
    return None


@dataclass(frozen=True)
class RuleFailure:
    """A rule under which two members of one e-class evaluate differently."""

    rule: str
    lhs: str
    rhs: str
    sizes: dict[str, int]
    difference: str

    def __str__(self) -> str:
        return (
            f"rule {self.rule!r} is unsound: {self.lhs}  !=  {self.rhs}  "
            f"(sizes {self.sizes}; {self.difference})"
        )


@dataclass(frozen=True)
class RuleCheck:
    """The outcome of :func:`check_rules`."""

    ruleset: str
    path: str
    rules: tuple[str, ...]
    exercised: dict[str, int] = field(default_factory=dict)
    """rule -> number of matches over all random instances"""
    failures: tuple[RuleFailure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def unexercised(self) -> tuple[str, ...]:
        return tuple(r for r in self.rules if not self.exercised.get(r))

    def __str__(self) -> str:
        head = (
            f"ruleset {self.ruleset} ({self.path}): {len(self.rules)} rules checked, "
            f"{len(self.failures)} unsound"
        )
        lines = [head]
        lines += [f"  FAIL {f}" for f in self.failures]
        if self.unexercised:
            lines.append(f"  not exercised by the random instances: {', '.join(self.unexercised)}")
        return "\n".join(lines)


_EVAL_BUDGET = 400


def _check_classes(snap, sizes: dict[str, int], arrays, extents_ids) -> tuple | None:
    """A pair of disagreeing members of one class, or None."""
    index = decode_index_classes(snap)
    extents_names = {f"v{i}": (sizes["N"] if e == "N" else int(e)) for i, e in extents_ids.items()}
    extents_dim = {i: (sizes["N"] if e == "N" else int(e)) for i, e in extents_ids.items()}
    # smallest member of each class (by term size), bottom-up
    ref: dict[int, Expr] = {}
    size: dict[int, int] = {}
    e_nodes = [(op, c, a) for op, c, a in snap.nodes if snap.sort[c] == "E"]
    changed = True
    while changed:
        changed = False
        for op, c, args in e_nodes:
            kids = node_children(op, args)
            if any(k not in ref for k in kids):
                continue
            e = _node_expr(op, args, ref, index, extents_dim)
            if e is None:
                continue
            n = 1 + sum(size[k] for k in kids)
            if c not in size or n < size[c]:
                ref[c], size[c] = e, n
                changed = True
    values: dict[int, np.ndarray] = {}
    budget = _EVAL_BUDGET
    for op, c, args in e_nodes:
        if c not in ref or budget <= 0:
            continue
        kids = node_children(op, args)
        if any(k not in ref for k in kids):
            continue
        e = _node_expr(op, args, ref, index, extents_dim)
        if e is None or e == ref[c]:
            continue
        order = sorted(free_indices(e) | free_indices(ref[c]))
        budget -= 1
        try:
            with np.errstate(all="ignore"):
                a = evaluate_expr(ref[c], arrays, sizes, extents_names, order)
                b = evaluate_expr(e, arrays, sizes, extents_names, order)
        except EqsatError:
            continue
        values[c] = a
        bad = _disagreement(np.asarray(a, float), np.asarray(b, float))
        if bad is not None:
            return ref[c], e, bad
    return None


def _disagreement(a: np.ndarray, b: np.ndarray) -> str | None:
    """Where both sides are finite they must be close; where one is finite the other must be
    too (a guard that stops guarding shows up here); where neither is, both are undefined."""
    fa, fb = np.isfinite(a), np.isfinite(b)
    if np.any(fa != fb):
        k = np.argwhere(fa != fb)[0]
        where = tuple(int(x) for x in k)
        return f"at {where}: {a[where] if a.ndim else a} vs {b[where] if b.ndim else b}"
    both = fa & fb
    if not np.allclose(a[both], b[both], rtol=1e-6, atol=1e-9):
        return f"largest difference {np.max(np.abs(a[both] - b[both])):.3g}"
    return None


def _text(e: Expr) -> str:
    try:
        return print_expr(e)
    except Exception:  # a constant the printer has no literal for
        return repr(e)


COMBINED = "all rules together"
"""the name a failure gets when no single rule fails but the file's rules do together"""


def _setting(rng: random.Random) -> tuple[dict[int, str], dict[int, str], int]:
    """Random extents: ids 0..3 range over N, id 4 over a small constant; and the value of N."""
    n = rng.choice((2, 3, 4))
    const_extent = rng.choice((2, 3))
    size_n = _lin({SIZE_ID: Fraction(1)}, Fraction(0))
    extent_text = {0: size_n, 1: size_n, 2: size_n, 3: size_n, 4: _lin({}, Fraction(const_extent))}
    extents_ids = {0: "N", 1: "N", 2: "N", 3: "N", 4: str(const_extent)}
    return extent_text, extents_ids, n


def _seeds(rf, cmd: list, name: str, trials: int, gen: _Random) -> list[str]:
    seeds: list[str] = []
    for _ in range(trials):
        for pat, sort in _seeds_of(cmd):
            gen.focus = None
            try:
                seeds.append(_instantiate(pat, sort, {}, gen))
            except RuleError as exc:
                raise RuleError(f"{rf.path}: rule {name!r}: {exc}") from None
    return seeds


def _run(rf, decls, helpers, rules: list[list], seeds: list[str], extent_text, what: str,
         match_limit: int | None = None):
    program = "\n".join([
        prelude_text(),
        "(ruleset check-helpers)",
        "(ruleset check-target)",
        *(show(d) for d in decls),
        *(show(_with_ruleset(h, "check-helpers")) for h in helpers),
        *(show(_with_ruleset(r, "check-target")) for r in rules),
        *(f"(set (extent {i}) {t})" for i, t in extent_text.items()),
        *(f"(gen-index {i})" for i in GENS),
        # the random tensors are parameters (statement reads never occur in instances)
        *(f'(param-tensor "{t}")' for t in ("S", "T1", "T2", "T3")),
        *(f"(binder {i} {extent_text[i]})" for i in BINDERS),
        *(f"(let $seed{k} {s})" for k, s in enumerate(seeds)),
    ])
    fixpoint = "(saturate (seq (saturate (run prelude)) (saturate (run check-helpers))))"
    if match_limit is None:
        target = "(run check-target)"
        sched = ""
    else:
        target = "(run-with bo check-target)"
        sched = f"(let-scheduler bo (back-off :match-limit {match_limit})) "
    schedule = f"(run-schedule {sched}{fixpoint} (repeat 2 (seq {target} {fixpoint})))"
    eg = bindings.EGraph()
    try:
        eg.parse_and_run_program(program, filename=rf.path)
        outputs = eg.parse_and_run_program(schedule)
    except Exception as exc:
        raise RuleError(f"{rf.path}: egglog rejected {what}: {exc}") from None
    matches: dict[str, int] = {}
    for out in outputs:
        report = getattr(out, "report", None)
        if report is not None:
            for r, k in report.num_matches_per_rule.items():
                matches[r] = matches.get(r, 0) + k
    return eg, matches


def check_rules(path_or_name: str | Path, trials: int = 16, seed: int = 0) -> RuleCheck:
    """Check every equality-producing rule of a rule file on ``trials`` random instances.

    ``path_or_name`` is a shipped rule set name (``"indicator"``) or a path to an ``.egg`` file.
    Each rule is run alone (with the prelude and the file's analysis rules), then all of them
    together on a sample of the same instances, since rules that are sound one by one can still
    combine badly (an equality that assumes an index's range, carried elsewhere by a
    substitution). The result's ``failures`` name each rule under which two members of an e-class
    differ, with a counterexample; ``exercised`` says how often each rule matched.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise EqsatError(f"trials must be a positive integer, got {trials!r}")
    rf = load_rule_file(path_or_name)
    cmds = [c for c in parse_sexps(rf.text) if isinstance(c, list) and c]
    decls = [c for c in cmds if c[0] not in ("rewrite", "birewrite", "rule", "ruleset")]
    helpers = [c for c in cmds if c[0] == "rule" and not _has_union(c[2])]
    targets = [c for c in cmds if c[0] in ("rewrite", "birewrite") or (
        c[0] == "rule" and _has_union(c[2]))]
    rng = random.Random(seed)
    names = tuple(rule_name(c) for c in targets)
    exercised: dict[str, int] = {}
    failures: list[RuleFailure] = []
    for cmd, name in zip(targets, names, strict=True):
        extent_text, extents_ids, n = _setting(rng)
        seeds = _seeds(rf, cmd, name, trials, _Random(rng, extent_text))
        eg, matches = _run(rf, decls, helpers, [cmd], seeds, extent_text, f"rule {name!r}")
        exercised[name] = matches.get(name, 0) + matches.get(
            show(_with_ruleset(cmd, "check-target")), 0
        )
        sizes = {"N": n}
        arrays = _arrays(np.random.default_rng(rng.randrange(2**32)), n)
        bad = _check_classes(take_snapshot(eg), sizes, arrays, extents_ids)
        if bad is not None:
            failures.append(RuleFailure(name, _text(bad[0]), _text(bad[1]), sizes, bad[2]))
    if not failures and len(targets) > 1:
        extent_text, extents_ids, n = _setting(rng)
        gen = _Random(rng, extent_text)
        sample = [
            s for cmd, name in zip(targets, names, strict=True)
            for s in _seeds(rf, cmd, name, max(1, trials // 4), gen)
        ]
        eg, _ = _run(rf, decls, helpers, targets, sample, extent_text, "the rules", 300)
        sizes = {"N": n}
        arrays = _arrays(np.random.default_rng(rng.randrange(2**32)), n)
        bad = _check_classes(take_snapshot(eg), sizes, arrays, extents_ids)
        if bad is not None:
            failures.append(RuleFailure(COMBINED, _text(bad[0]), _text(bad[1]), sizes, bad[2]))
    return RuleCheck(rf.name, rf.path, names, exercised, tuple(failures))


def _arrays(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Nonzero tensor values, so that a zero (and a division by it) comes from an index out of
    range, which is what brackets guard, and sums do not cancel by accident."""

    def values(shape: tuple[int, ...]) -> np.ndarray:
        return rng.uniform(0.5, 2.0, size=shape) * rng.choice((-1.0, 1.0), size=shape)

    return {
        "S": values(()),
        "T1": values((n,)),
        "T2": values((n, n)),
        "R1": rng.random(n) < 0.5,
        "R2": rng.random((n, n)) < 0.5,
    }


__all__ = ["RuleCheck", "RuleFailure", "check_rules"]
