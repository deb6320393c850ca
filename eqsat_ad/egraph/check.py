"""Check a rule file for soundness on random instances.

For every rule that merges e-classes (each ``rewrite``, ``birewrite`` and each ``rule`` with a
``union``), the checker instantiates its left-hand side (the constructor patterns of its query)
with random sub-terms, random sizes and random tensors, puts the instances in an e-graph with the
prelude and the file's analysis rules, runs that one rule, and then evaluates every member of every
e-class with the reference interpreter: all members of a class must agree. A member that does not
is a counterexample, reported as two index-language expressions and the sizes.

Every class is evaluated at several sizes (the instance's, 0 and 1) and with several kinds of
tensor values (:mod:`.check_instances`): nonzero ones, so that a zero and a division by it come
from an index out of range, which is what brackets guard; ones mixed with inf, -inf, nan and ±0;
huge and tiny ones. Two members agree when their values agree up to rounding, with the same nan,
inf and strong-zero pattern (docs/semantics.md): a rule that distributes an infinite factor
(inf * (2 - 1) is inf, inf * 2 - inf * 1 is nan) is caught. A rule named in a comment line
``; finite-only: NAME ...`` is checked with finite values only, and reported as such.

The checker also warns (:class:`RuleWarning`) about rules that belong to no ruleset or to one
other than the file's: ``optimize`` runs only the prelude and each file's own ruleset.
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..ir.errors import EqsatError, EqsatValueError
from ..ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Max,
    Pow,
    Pred,
    Rel,
    Sum,
    free_indices,
)
from ..ir.index import Affine, IndexVar, size
from ..ir.interpreter import evaluate_expr
from ..ir.printer import print_expr
from .check_instances import (
    BINDERS,
    FINITE_MODES,
    GENS,
    MODES,
    SIZE_ID,
    SExp,
    _instantiate,
    _lin,
    _option,
    _Random,
    _seeds_of,
    parse_sexps,
    random_arrays,
    rule_name,
    show,
)
from .egglog_bindings import bindings
from .extract import LinVal, decode_index_classes, node_children
from .rules import RuleError, load_rule_file, prelude_text
from .saturate import take_snapshot


class RuleWarning(UserWarning):
    """A rule file with rules that ``optimize`` never runs."""


def _has_union(s: SExp) -> bool:
    return isinstance(s, list) and (
        (bool(s) and s[0] == "union") or any(_has_union(x) for x in s)
    )


def _with_ruleset(cmd: list, name: str) -> list:
    out = list(cmd)
    for k in range(len(out) - 1):
        if out[k] == ":ruleset":
            out[k + 1] = name
            return out
    return out + [":ruleset", name]


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
        if op in ("Sum", "Max"):
            terms, const = lin[args[1]]
            if not terms:
                extent = int(const)
            elif terms == ((SIZE_ID, Fraction(1)),) and const == 0:
                extent = size("N")
            else:
                return None
            binder = Sum if op == "Sum" else Max
            return binder((IndexVar(f"v{args[0]}", extent),), kid[args[2]])
        if op == "Scan":  # the bracket sum it stands for (prelude.egg)
            sum_ = _node_expr("Sum", (args[0], args[1], args[4]), kid, index, extents)
            if sum_ is None:
                return None
            j = Affine.var(f"v{args[0]}")
            bounds = Bracket(And((Cmp(">=", j, _affine(lin[args[2]])),
                                  Cmp("<", j, _affine(lin[args[3]])))))
            assert isinstance(sum_, Sum)
            return Sum(sum_.indices, Binary("*", bounds, sum_.body))
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
    finite_only: tuple[str, ...] = ()
    """rules the file marks ``; finite-only:``, checked with finite values only"""
    warnings: tuple[str, ...] = ()
    """rules ``optimize`` never runs (no ruleset, or another file's)"""

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
        if self.finite_only:
            lines.append(f"  finite values only: {', '.join(self.finite_only)}")
        lines += [f"  WARNING {w}" for w in self.warnings]
        if self.unexercised:
            lines.append(f"  not exercised by the random instances: {', '.join(self.unexercised)}")
        return "\n".join(lines)


_EVAL_BUDGET = 400

Setting = tuple[dict[str, int], dict[str, np.ndarray]]
"""(sizes, tensors) at which e-class members are evaluated"""


def _settings(rng: random.Random, n: int, finite: bool) -> list[Setting]:
    """The instance's size with every kind of tensor values, then sizes 0 and 1."""
    nprng = np.random.default_rng(rng.randrange(2**32))
    modes = FINITE_MODES if finite else MODES
    out = [({"N": n}, random_arrays(nprng, n, m)) for m in modes]
    out += [({"N": k}, random_arrays(nprng, k, modes[-1 if finite else 1])) for k in (0, 1)
            if k != n]
    return out


def _magnitude(arrays: Mapping[str, np.ndarray]) -> float:
    """The largest finite magnitude among the tensors."""
    return max((float(np.max(np.abs(v[np.isfinite(v)]), initial=0)) for v in arrays.values()
                if v.dtype != bool), default=0.0)


def _check_classes(snap, settings: list[Setting], extents_ids, strong: bool = True
                   ) -> tuple | None:
    """A pair of disagreeing members of one class (with the sizes), or None. ``strong=False``
    (a finite-only rule): compare only where both are finite, and not their strong zeros (a
    difference there shows only when an inf or nan meets it)."""
    index = decode_index_classes(snap)
    extents_dim = {i: e for i, e in extents_ids.items()}
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
        for sizes, arrays in settings:
            extents = {f"v{i}": (sizes["N"] if x == "N" else int(x))
                       for i, x in extents_ids.items()}
            try:
                with np.errstate(all="ignore"):
                    a, sa = evaluate_expr(ref[c], arrays, sizes, extents, order, strong=True)
                    b, sb = evaluate_expr(e, arrays, sizes, extents, order, strong=True)
            except EqsatError:
                continue
            bad = _disagreement(np.asarray(a, float), np.asarray(b, float),
                                (sa, sb) if strong else None, _magnitude(arrays))
            if bad is not None:
                return ref[c], e, bad, sizes
    return None


def _disagreement(a: np.ndarray, b: np.ndarray,
                  strong: tuple[np.ndarray, np.ndarray] | None, magnitude: float = 1.0
                  ) -> str | None:
    """Equal nan and inf patterns, equal strong zeros, finite values equal up to rounding (of
    intermediates as large as 1, constants, or ``magnitude`` cubed: reassociating ``-x + (x +
    3)`` loses the 3 when x is 1e30)."""

    def at(mask: np.ndarray, what: str) -> str:
        k = tuple(int(x) for x in np.argwhere(mask)[0]) if a.ndim else ()
        return f"at {k}: {a[k]} vs {b[k]}{what}"

    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if strong is not None and np.any(nan_a != nan_b):
        return at(nan_a != nan_b, "")
    inf = (np.isinf(a) | np.isinf(b)) & ~nan_a
    if strong is not None and np.any(inf & (a != b)):
        return at(inf & (a != b), "")
    fin = np.isfinite(a) & np.isfinite(b)
    scale = max(1.0, magnitude**3, float(np.max(np.abs(a[fin]), initial=0)),
                float(np.max(np.abs(b[fin]), initial=0)))
    if not np.allclose(a[fin], b[fin], rtol=1e-6, atol=1e-9 * scale):
        return f"largest difference {np.max(np.abs(a[fin] - b[fin])):.3g}"
    if strong is not None and np.any(strong[0] != strong[1]):
        return at(strong[0] != strong[1], " (a strong zero on one side only)")
    return None


def _text(e: Expr) -> str:
    try:
        return print_expr(e)
    except Exception:  # a constant the printer has no literal for
        return repr(e)


COMBINED = "all rules together"
"""the name a failure gets when no single rule fails but the file's rules do together"""


def _setting(rng: random.Random) -> tuple[dict[int, str], dict[int, str], int]:
    """Random extents: ids 0..3 range over N, id 4 over a small constant; and the value of N
    (the classes are also evaluated at N = 0 and N = 1)."""
    n = rng.choice((2, 3, 4))
    const_extent = rng.choice((1, 2, 3))
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


_FINITE_ONLY = re.compile(r"^\s*;\s*finite-only:\s*(.*)$", re.MULTILINE)


def finite_only_rules(text: str) -> set[str]:
    """Names listed in the comment lines ``; finite-only: NAME ...`` of a rule file."""
    return {n for line in _FINITE_ONLY.findall(text) for n in line.split()}


def _ruleset_warnings(cmds: list[list], ruleset: str) -> list[str]:
    """Rules that optimize never runs: in no ruleset (egglog's default) or another one."""
    out = []
    for c in cmds:
        if c[0] not in ("rewrite", "birewrite", "rule"):
            continue
        rs = _option(c, ":ruleset")
        if rs is None:
            out.append(f"rule {rule_name(c)!r} belongs to no ruleset; optimize runs only the "
                       f"file's ruleset {ruleset!r} (add :ruleset {ruleset})")
        elif rs != ruleset:
            out.append(f"rule {rule_name(c)!r} belongs to ruleset {rs!r}, which optimize never "
                       f"runs: it runs the prelude and the file's ruleset {ruleset!r}")
    return out


def check_rules(path_or_name: str | Path, trials: int = 16, seed: int = 0) -> RuleCheck:
    """Check every equality-producing rule of a rule file on ``trials`` random instances.

    ``path_or_name`` is a shipped rule set name (``"indicator"``) or a path to an ``.egg`` file.
    Each rule is run alone (with the prelude and the file's analysis rules), then all of them
    together on a sample of the same instances, since rules that are sound one by one can still
    combine badly (an equality that assumes an index's range, carried elsewhere by a
    substitution). The result's ``failures`` name each rule under which two members of an e-class
    differ, with a counterexample (values, nan/inf patterns and strong zeros are compared, at the
    instance's size and at sizes 0 and 1, with finite, non-finite, huge and tiny tensors);
    ``exercised`` says how often each rule matched; ``warnings`` (also issued as
    :class:`RuleWarning`) name rules that ``optimize`` would never run.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise EqsatValueError(f"trials must be a positive integer, got {trials!r}")
    rf = load_rule_file(path_or_name)
    cmds = [c for c in parse_sexps(rf.text) if isinstance(c, list) and c]
    decls = [c for c in cmds if c[0] not in ("rewrite", "birewrite", "rule", "ruleset")]
    helpers = [c for c in cmds if c[0] == "rule" and not _has_union(c[2])]
    targets = [c for c in cmds if c[0] in ("rewrite", "birewrite") or (
        c[0] == "rule" and _has_union(c[2]))]
    notes = _ruleset_warnings(cmds, rf.name)
    for note in notes:
        warnings.warn(f"{rf.path}: {note}", RuleWarning, stacklevel=2)
    finite = finite_only_rules(rf.text)
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
        settings = _settings(rng, n, name in finite)
        bad = _check_classes(take_snapshot(eg), settings, extents_ids, name not in finite)
        if bad is not None:
            failures.append(RuleFailure(name, _text(bad[0]), _text(bad[1]), bad[3], bad[2]))
    if not failures and len(targets) > 1:
        extent_text, extents_ids, n = _setting(rng)
        gen = _Random(rng, extent_text)
        sample = [
            s for cmd, name in zip(targets, names, strict=True)
            for s in _seeds(rf, cmd, name, max(1, trials // 4), gen)
        ]
        eg, _ = _run(rf, decls, helpers, targets, sample, extent_text, "the rules", 300)
        # (finite values only when some rule is finite-only: together they assume it)
        some_finite = bool(finite & set(names))
        settings = _settings(rng, n, some_finite)
        bad = _check_classes(take_snapshot(eg), settings, extents_ids, not some_finite)
        if bad is not None:
            failures.append(RuleFailure(COMBINED, _text(bad[0]), _text(bad[1]), bad[3], bad[2]))
    return RuleCheck(rf.name, rf.path, names, exercised, tuple(failures),
                     tuple(n for n in names if n in finite), tuple(notes))


__all__ = ["RuleCheck", "RuleFailure", "RuleWarning", "check_rules", "finite_only_rules"]
