"""Random instances for the rule checker (:mod:`eqsat_ad.egraph.check`): s-expressions of rule
files, random terms of the prelude's sorts matching a rule's patterns, and random tensors.

Tensor values come in modes: ``plain`` (nonzero, in ±[0.5, 2], so that a zero and a division by
it come from an index out of range, which is what brackets guard, and sums do not cancel by
accident), ``special`` (plain with inf, -inf, nan, +0 and -0 mixed in), ``inf-scalar`` (plain
tensors, the scalar ±inf: the factor a distributive law spreads), ``huge`` and ``tiny`` (plain
scaled by 1e30 and 1e-30).
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

import numpy as np

from .rules import RuleError, prelude_text

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


def rule_name(cmd: list) -> str:
    name = _option(cmd, ":name")
    if isinstance(name, str) and name.startswith('"'):
        return name[1:-1]
    return show(cmd)


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


def _lin_list(v: int, c: int) -> str:
    """The index list ``[v + c]``."""
    return f"(ICons {_lin({v: Fraction(1)}, Fraction(c))} (INil))"


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
        if self.focus is not None and r.random() < 0.3:
            # a bound on the binder in terms of a generator, j >= g + c or j <= g + c: what the
            # scan rules look for
            k = Fraction(r.choice((1, -1)))
            terms = {self.focus: k, GENS[0]: -k}
            return f"({r.choice(('Ge', 'Gt'))} {_lin(terms, Fraction(r.choice((0, 1, -2))))})"
        if r.random() < 0.15:
            rank = r.choice((1, 2))
            return f'(Rel "R{rank}" {self.il(rank)})'
        return f"({r.choice(('Eq', 'Eq', 'Ne', 'Ge', 'Gt'))} {self.lin()})"

    def expr(self, depth: int = 2) -> str:
        r = self.rng
        if depth == 2 and r.random() < 0.3:
            # a small factor free of the binders: a finite one (constants and brackets, what the
            # finiteness guards look for) or the scalar S (inf or nan in some instances)
            parts = [f"(Br {self.pred()})", f"(Num {r.choice((1.0, -1.0, 2.0, 0.5))!r})",
                     '(Acc "S" (INil))']
            return r.choice((*parts, parts[2], f"(Mul {parts[0]} {parts[1]})"))
        if depth == 2 and self.focus is not None and r.random() < 0.3:
            # a summand of the binder alone (a running sum's operand)
            return f'(Acc "T1" {_lin_list(self.focus, r.choice((0, 1, -1)))})'
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
            return str(r.choice(BINDERS if ctx in ("Sum", "Scan") else POOL))
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
    if head in ("Sum", "Scan"):
        j = _instantiate(args[0], "i64", env, gen, head)
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



MODES = ("plain", "special", "inf-scalar", "huge", "tiny")
FINITE_MODES = ("plain", "huge", "tiny")
SPECIAL = (np.inf, -np.inf, np.nan, 0.0, -0.0)


def random_arrays(rng: np.random.Generator, n: int, mode: str = "plain") -> dict[str, np.ndarray]:
    """Tensor values for size ``n`` in one of :data:`MODES` (see the module docstring)."""

    def values(shape: tuple[int, ...]) -> np.ndarray:
        out = rng.uniform(0.5, 2.0, size=shape) * rng.choice((-1.0, 1.0), size=shape)
        if mode == "huge":
            return out * 1e30
        if mode == "tiny":
            return out * 1e-30
        if mode == "inf-scalar":  # plain tensors, an infinite scalar factor
            return out if shape else np.asarray(rng.choice((np.inf, -np.inf)))
        if mode == "special":
            # (the scalar always: one number has one chance)
            special = rng.random(size=shape) < (0.25 if shape else 1.0)
            out = np.where(special, rng.choice(SPECIAL, size=shape), out)
        return np.asarray(out, dtype=float)

    return {
        "S": values(()),
        "T1": values((n,)),
        "T2": values((n, n)),
        "R1": rng.random(n) < 0.5,
        "R2": rng.random((n, n)) < 0.5,
    }
