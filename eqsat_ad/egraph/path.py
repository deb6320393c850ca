"""Which rewrites lie on the path from the input term to the extracted one.

egglog 14's bindings keep no proofs (see eqsat_ad/why/chain.py), so a rule's part in the result is
read off the e-graph instead: a rewrite ``lhs -> rhs`` (a ``rewrite``, either side of a
``birewrite``, or a ``rule`` that unions an expression matched by its query with a new one) is on
the path when some e-node of the extracted term that the input did not hold (or that a rewrite
moved into another input node's class, as ``abs(abs(x)) -> abs(x)`` does) matches ``rhs`` and
the same e-class also matches ``lhs`` under the same variables: an instance of the rewrite whose
result extraction chose (nodes a later rule subsumed count: that rewrite still happened). A
rewrite whose right side is a bare variable (``1 * a -> a``) is on the path when the class of a
chosen node holds its left side with that variable bound to the class itself, through a node
extraction did not choose.

This is the last rewrite at each node of the result, not the whole chain (``explain()`` replays
the run for that). Guards are not re-checked and operations the prelude canonicalizes (``LAdd``,
``Subst``, ...) match anything, so a listed rule is one whose instance the extracted term
contains, not necessarily the only way to reach it; ``optimize`` considers only rules that
fired. Analyses (free indices, bounds, lattices) never union expressions and are never listed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import NamedTuple

from .check_instances import SIGS, SExp, parse_sexps, rule_name
from .rules import RuleFile
from .saturate import Snapshot

__all__ = ["MATCH_BUDGET", "PathTrace", "Rewrite", "input_nodes", "rewrites", "rules_on_path"]

CLASS_SORTS = frozenset({"E", "Lin", "IL", "Pred"})
E_HEADS = frozenset(name for name, (sort, _) in SIGS.items() if sort == "E")
# operations the prelude rewrites to canonical forms: in a pattern they match anything
_OPERATIONS = frozenset({"Subst", "LVar", "LAdd", "LScale", "LSubst", "ILSubst", "PSubst"})
_ANY = object()

Rewrite = tuple[str, SExp, SExp]
"""(rule name, left-hand pattern, right-hand pattern)"""
Env = dict[str, object]


def rewrites(files: Sequence[RuleFile]) -> list[Rewrite]:
    """The expression rewrites of the rule files, as (name, lhs, rhs) patterns."""
    return [r for f in files for r in _file_rewrites(f.text)]


@functools.lru_cache(maxsize=64)
def _file_rewrites(text: str) -> tuple[Rewrite, ...]:
    """A rule file's rewrites, parsed once per text (every optimization reads them; the
    patterns are never changed)."""
    out: list[Rewrite] = []
    for cmd in parse_sexps(text):
        if not isinstance(cmd, list) or not cmd:
            continue
        if cmd[0] in ("rewrite", "birewrite") and _is_e(cmd[1]):
            out.append((rule_name(cmd), cmd[1], cmd[2]))
            if cmd[0] == "birewrite":
                out.append((rule_name(cmd), cmd[2], cmd[1]))
        elif cmd[0] == "rule":
            bound = {q[1]: q[2] for q in cmd[1]
                     if isinstance(q, list) and len(q) == 3 and q[0] == "=" and _is_e(q[2])}
            for act in cmd[2]:
                if isinstance(act, list) and len(act) == 3 and act[0] == "union" and (
                        act[1] in bound):
                    out.append((rule_name(cmd), bound[act[1]], act[2]))
    return tuple(out)


def _is_e(p: SExp) -> bool:
    return isinstance(p, list) and bool(p) and p[0] in E_HEADS


def _literal(tok: SExp) -> object:
    """A literal of a pattern as the snapshot stores it, or _ANY (a computed value)."""
    if isinstance(tok, str):
        return _token(tok)
    if isinstance(tok, list):
        if (len(tok) == 3 and tok[0] == "bigrat" and all(
                isinstance(b, list) and len(b) == 2 and b[0] == "bigint" for b in tok[1:])):
            return Fraction(int(tok[1][1]), int(tok[2][1]))
        return _ANY
    return _token(tok)


@functools.cache
def _token(tok: str) -> object:
    if tok.startswith('"'):
        return tok[1:-1]
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return None  # a variable


class PathCut(Exception):
    """The match budget ran out: the rules found so far are listed, the rest not looked for."""


class _Matcher:
    """E-matching over a snapshot's nodes, the subsumed ones included (a rewrite whose result
    a later rule subsumed, such as ``1 * a`` after ``[n > i]`` became 1, still happened):
    node ``k`` is ``snap.nodes[k]``, or ``snap.subsumed[k - len(snap.nodes)]``.

    Nodes are indexed by (class, head), and whether a class can match a pattern at all (its
    shape, variables ignored) is memoized per (pattern, class): without both, matching a
    pattern backtracked over every node of every class under it, and large e-graphs (a
    commutative class holds many nodes) took seconds. ``steps`` counts the nodes tried;
    past ``budget`` a match raises :class:`PathCut`."""

    def __init__(self, snap: Snapshot, budget: float = float("inf")) -> None:
        self.all = list(snap.nodes) + list(getattr(snap, "subsumed", ()))
        self.nodes_of: dict[int, list[int]] = {}
        self._heads: dict[int, dict[str, list[int]]] = {}  # per class, built when first matched
        for k, (_, c, _) in enumerate(self.all):
            self.nodes_of.setdefault(c, []).append(k)
        self.budget = budget
        self.steps = 0
        self._shape: dict[tuple[int, int], bool] = {}

    def headed(self, c: int, head: str) -> list[int]:
        """The nodes of class ``c`` whose constructor is ``head``."""
        heads = self._heads.get(c)
        if heads is None:
            heads = self._heads[c] = {}
            for k in self.nodes_of.get(c, ()):
                heads.setdefault(self.all[k][0], []).append(k)
        return heads.get(head, [])

    def _step(self) -> None:
        if self.steps >= self.budget:
            raise PathCut(f"path trace cut after {self.budget} match steps")
        self.steps += 1

    def fits(self, pat: SExp, c: int) -> bool:
        """Whether some node of class ``c`` has the shape of ``pat`` (variables unbound): a
        necessary condition for a match, memoized (patterns live as long as their rules)."""
        if isinstance(pat, str):
            return _literal(pat) is None
        head = pat[0]
        if head in _OPERATIONS or head not in SIGS:
            return True
        key = (id(pat), c)
        hit = self._shape.get(key)
        if hit is None:
            hit = any(self._fits_node(pat, k) for k in self.headed(c, head))
            self._shape[key] = hit
        return hit

    def _fits_node(self, pat: list, k: int) -> bool:
        self._step()
        op, _, args = self.all[k]
        if len(pat) - 1 != len(args):
            return False
        for sub, arg, sort in zip(pat[1:], args, SIGS[op][1], strict=True):
            if sort in CLASS_SORTS:
                if not self.fits(sub, int(arg)):
                    return False
            else:
                lit = _literal(sub)
                if lit is not _ANY and lit is not None and lit != arg:
                    return False
        return True

    def at_class(self, pat: SExp, c: int, env: Env) -> Iterator[Env]:
        """Extensions of ``env`` under which class ``c`` matches ``pat``."""
        if isinstance(pat, str):
            lit = _literal(pat)
            if lit is not None:
                return  # a literal in a class position cannot match
            if pat in env:
                if env[pat] == c:
                    yield env
                return
            yield {**env, pat: c}
            return
        head = pat[0]
        if head in _OPERATIONS or head not in SIGS:
            yield env
            return
        if not self.fits(pat, c):
            return
        for k in self.headed(c, head):
            yield from self.at_node(pat, k, env)

    def at_node(self, pat: list, k: int, env: Env) -> Iterator[Env]:
        """Extensions of ``env`` under which e-node ``k`` matches ``pat`` (head included),
        lazily: a caller that needs one match stops at the first."""
        self._step()
        op, _, args = self.all[k]
        if op != pat[0] or len(pat) - 1 != len(args):
            return
        yield from self._args(pat, args, SIGS[op][1], 0, env)

    def _args(self, pat: list, args: tuple, sorts: Sequence[str], i: int,
              env: Env) -> Iterator[Env]:
        if i == len(args):
            yield env
            return
        for e in self._arg(pat[i + 1], args[i], sorts[i], env):
            yield from self._args(pat, args, sorts, i + 1, e)

    def _arg(self, sub: SExp, arg: object, sort: str, env: Env) -> Iterator[Env]:
        if sort in CLASS_SORTS:
            yield from self.at_class(sub, int(arg), env)  # type: ignore[call-overload]
            return
        lit = _literal(sub)
        if lit is _ANY:
            yield env
        elif lit is not None:
            if lit == arg:
                yield env
        elif isinstance(sub, str):
            if sub in env:
                if env[sub] == arg:
                    yield env
            else:
                yield {**env, sub: arg}


def input_nodes(snap: Snapshot, encoded_text: str) -> set[int]:
    """The e-nodes of the snapshot that the encoded input itself wrote (its ``let`` terms and
    the inlining ``union``s), found by hash-consing its ground terms."""
    index = {(op, args): k for k, (op, _, args) in enumerate(snap.nodes)}
    found: set[int] = set()

    def resolve(term: SExp) -> int | None:
        """The class of a ground term (its nodes collected), None if it is not there."""
        if not isinstance(term, list) or term[0] not in SIGS:
            return None
        sorts = SIGS[term[0]][1]
        args: list[object] = []
        for sub, sort in zip(term[1:], sorts, strict=True):
            if sort in CLASS_SORTS:
                c = resolve(sub)
                if c is None:
                    return None
                args.append(c)
            else:
                lit = _literal(sub)
                if lit is None or lit is _ANY:
                    return None
                args.append(lit)
        k = index.get((term[0], tuple(args)))
        if k is None:
            return None
        found.add(k)
        return snap.nodes[k][1]

    for cmd in parse_sexps(encoded_text):
        if isinstance(cmd, list) and cmd and cmd[0] == "let":
            resolve(cmd[2])
        elif isinstance(cmd, list) and cmd and cmd[0] == "union":
            resolve(cmd[1])
            resolve(cmd[2])
    return found


MATCH_BUDGET = 100_000
"""Match steps (nodes tried) :func:`rules_on_path` may take, a few tenths of a second of CPU:
reading back the path is a report nicety and never dominates a first call; past the budget the
trace is cut, and the report's "rewrites:" line says so. Sweep programs take at most ~11,000."""


_DIRECT = 4
"""Right-side matches at a node checked one by one before the join takes over."""


class PathTrace(NamedTuple):
    """What :func:`rules_on_path` read: the rules, whether the budget cut it, steps taken."""

    rules: list[str]
    cut: bool
    steps: int


def rules_on_path(snap: Snapshot, chosen: Iterable[int], inputs: set[int],
                  rules: Sequence[Rewrite], budget: float = MATCH_BUDGET) -> PathTrace:
    """The names of ``rules`` that made a node of the extracted term (the ``chosen`` e-nodes
    that are not ``inputs``, or input nodes a rewrite moved into another input node's class):
    the rule's right side matches the node and its left side the node's class under the same
    variables. In the order of ``rules``; with whether the trace was cut (the budget of match
    steps, nodes tried, ran out: the rules found so far are listed, the rest not looked for)
    and the steps taken (never more than ``budget``).

    Only the last rewrite at each node is seen: earlier steps (``[j >= 0]`` became 1 before
    ``1 * e`` became ``e``) left no node in the result. Tracing the left side's nodes back in
    turn does not help: without creation times every class leads everywhere through
    commutativity, and every rule that fired would be listed (``explain()`` replays the run
    for the whole chain)."""
    m = _Matcher(snap, budget)
    on: set[str] = set()
    try:
        _trace(m, set(chosen), inputs, rules, on)
        cut = False
    except PathCut:
        cut = True
    names = list(dict.fromkeys(r[0] for r in rules))
    return PathTrace([n for n in names if n in on], cut, m.steps)


def _trace(m: _Matcher, chosen: set[int], inputs: set[int], rules: Sequence[Rewrite],
           on: set[str]) -> None:
    """Adds to ``on`` the rules with an instance at the chosen nodes (see rules_on_path)."""
    by_head: dict[str, list[Rewrite]] = {}
    bare: list[Rewrite] = []
    for r in rules:
        if isinstance(r[2], list) and r[2] and r[2][0] in SIGS:
            by_head.setdefault(r[2][0], []).append(r)
        elif isinstance(r[2], str) and _literal(r[2]) is None:
            bare.append(r)
    # results: chosen nodes the input did not hold, and input nodes chosen in a class that also
    # holds another input node (a rewrite to a subterm: abs(abs(x)) -> abs(x) merged them)
    input_classes: dict[int, int] = {}
    for k in inputs:
        c = m.all[k][1]
        input_classes[c] = input_classes.get(c, 0) + 1
    results = chosen - inputs | {k for k in chosen & inputs if input_classes[m.all[k][1]] > 1}
    # the right side's matches at the node, each looked for in the node's class (the left side
    # bound by it); past a few, a hash join against the left side's matches there (memoized),
    # keyed by the variables both sides bind: nested loops took the product of the two
    left: dict[tuple[int, int], set[tuple]] = {}
    for k in sorted(results):
        op, c, _ = m.all[k]
        for name, lhs, rhs in by_head.get(op, ()):
            if name in on or not m.fits(lhs, c):
                continue
            for i, env in enumerate(m.at_node(rhs, k, {})):
                if i < _DIRECT:
                    found = next(m.at_class(lhs, c, env), None) is not None
                else:
                    shared = sorted(_variables(lhs) & _variables(rhs))
                    keys = left.get((id(lhs), c))
                    if keys is None:
                        keys = left[id(lhs), c] = {
                            tuple(e[v] for v in shared) for e in m.at_class(lhs, c, {})}
                    found = tuple(env[v] for v in shared) in keys
                if found:
                    on.add(name)
                    break
    # a rewrite to a bare variable (1 * a -> a): the class of a chosen node holds its left side
    # with the variable bound to the class itself, through a node extraction did not choose
    for c in sorted({m.all[k][1] for k in chosen}):
        for name, lhs, var in bare:
            if name in on or not isinstance(lhs, list) or not m.fits(lhs, c):
                continue
            if any(next(m.at_node(lhs, n, {var: c}), None) is not None
                   for n in m.headed(c, lhs[0]) if n not in chosen):
                on.add(name)


def _variables(pat: SExp) -> set[str]:
    """The variables a match of ``pat`` binds (none under an operation, which matches
    anything, nor in a computed literal)."""
    if isinstance(pat, str):
        return {pat} if _literal(pat) is None else set()
    if pat[0] in _OPERATIONS or pat[0] not in SIGS:
        return set()
    out: set[str] = set()
    for sub, sort in zip(pat[1:], SIGS[pat[0]][1], strict=False):
        if sort in CLASS_SORTS or isinstance(sub, str):
            out |= _variables(sub)
    return out


def chosen_nodes(snap: Snapshot, walks: Iterable[tuple[int, Mapping[int, int]]],
                 children) -> set[int]:
    """The e-nodes of extracted terms: each walk is a root class and the class -> node choice;
    ``children(op, args)`` gives a node's child classes."""
    out: set[int] = set()
    for root, choice in walks:
        stack = [root]
        seen: set[int] = set()
        while stack:
            c = stack.pop()
            if c in seen or c not in choice:
                continue
            seen.add(c)
            k = choice[c]
            out.add(k)
            op, _, args = snap.nodes[k]
            stack.extend(children(op, args))
    return out
