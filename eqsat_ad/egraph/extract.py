"""Cost-based extraction of a whole program from an e-graph snapshot (read back into Tensor SSA
by :mod:`.decode`).

Costs follow the cost contract (docs/design.md): a node is computed once as a tensor
over its own free indices, so it costs the product of their extents (a sum: the extents of its
body's free indices), except that an equality bracket ``[u == t]`` pins ``u``: a product or a sum
of terms each pinned on ``u`` is a scatter, and costs nothing along ``u`` (diagonals, point
writes). A materialized statement pays what it writes once; reading it is free. Within one
statement, shared subterms are counted once (DAG cost).

A cost is compared asymptotically: it is the pair (value with every size at 2**20, value at the
caller's sizes), so a higher total degree loses, then the leading coefficients, then the concrete
sizes. Which statements stay materialized is chosen by a local search over the set, each set
priced by a full extraction. The search is anytime: it starts from the program that keeps every
statement (the input's own shape), improves it while time remains before the deadline, and
stops with the best program found so far when the deadline passes.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..ir.expr import Access, Expr
from ..ir.program import Program, Statement
from ..plan.kernels import RUNNING_SUM_WEIGHT
from .decode import (
    Decoder,
    ExtractionError,
    LinVal,
    decode_index_classes,
    node_children,
    pred_ids,
)
from .encode import Encoded
from .saturate import Snapshot

__all__ = [
    "ALTERNATIVES", "DEFAULT_SIZE", "HUGE", "Extraction", "ExtractionError", "Extractor",
    "LinVal", "OutOfTime", "decode_index_classes", "node_children",
]

HUGE = float(2**20)
DEFAULT_SIZE = 1000
INF = float("inf")
Cost = tuple[float, float]

_UNEXTRACTABLE = frozenset({"Subst", "LVar", "LAdd", "LScale", "LSubst", "ILSubst", "PSubst"})


# programs besides the cheapest that extraction hands back for ranking by their plans' prices
ALTERNATIVES = 3
# pops of the extraction heap between two looks at the clock
CLOCK_EVERY = 2048


class OutOfTime(ExtractionError):
    """The deadline passed before even the first program was priced."""


@dataclass(frozen=True)
class Extraction:
    program: Program
    cost: Cost
    materialized: tuple[str, ...]
    complete: bool = True
    """False when the deadline stopped the search (the program is the best found so far)"""
    alternatives: tuple[Program, ...] = ()
    """The next cheapest programs the search priced (different sets of materialized
    statements), for the caller to rank by the price of their plans"""


@dataclass(frozen=True)
class _Plan:
    """A priced choice of statements and e-nodes, decoded only if it wins."""

    needed: set[str]
    bodies: dict[str, tuple[int, dict[int, int], Cost, set[str]]]
    outputs: list[tuple[int | None, Cost, set[str]]]
    choice: dict[int, int]

    def walks(self) -> list[tuple[int, dict[int, int]]]:
        """(root class, class -> chosen node) of every statement body and output it keeps."""
        return [(self.bodies[y][0], self.bodies[y][1]) for y in self.needed] + [
            (root, self.choice) for root, _, _ in self.outputs if root is not None]


def cpu_clock() -> float:
    """CPU seconds of the calling thread: the optimizer's clock in this process (``Limits.seconds``
    bounds it plus the saturation worker's). Not the process's: other threads' work (a BLAS pool
    spinning after a product, the caller's own threads) is not the optimizer's, and counting it
    made the result depend on what else the program was doing."""
    return time.thread_time()


class Extractor:
    def __init__(
        self, snap: Snapshot, enc: Encoded, sizes: Mapping[str, int] | None,
        deadline: float | None = None,
    ) -> None:
        """``deadline``: a :func:`cpu_clock` value (the calling thread's CPU time: the limit
        counts work done, not the load of the machine) after which the search stops."""
        self.deadline = INF if deadline is None else deadline
        self.snap = snap
        self.enc = enc
        self.stmts = {s.name: s for s in enc.program.statements}
        sizes = dict(sizes or {})
        names = enc.ids.size_names
        self.size_name = names
        self.ext_hi: dict[int, float] = {}
        self.ext_lo: dict[int, float] = {}
        for i, d in enc.ids.extent.items():
            if isinstance(d, int):
                self.ext_hi[i] = self.ext_lo[i] = float(d)
            else:
                self.ext_hi[i] = HUGE
                self.ext_lo[i] = float(sizes.get(d.name, DEFAULT_SIZE))
        self.nodes_of: dict[int, list[int]] = {}
        for k, (_, c, _) in enumerate(snap.nodes):
            self.nodes_of.setdefault(c, []).append(k)
        self.lin, self.il, self.pred = decode_index_classes(snap)
        self.e_nodes = [
            k for k, (op, c, _) in enumerate(snap.nodes)
            if snap.sort[c] == "E" and op not in _UNEXTRACTABLE and self._usable(k)
        ]
        self.free: dict[int, frozenset[int]] = {}
        self._free_sets()
        self.pinned: dict[int, frozenset[int]] = {}
        self._pinned_sets()
        self.local: dict[int, Cost] = {k: self._local_cost(k) for k in self.e_nodes}
        self.kids: dict[int, tuple[int, ...]] = {k: self._children(k) for k in self.e_nodes}
        self.parents: dict[int, list[int]] = {}
        self.reads: dict[str, list[int]] = {}
        self._base_cache: tuple[dict[int, Cost], dict[int, int]] | None = None
        for k in self.e_nodes:
            for x in self.kids[k]:
                self.parents.setdefault(x, []).append(k)
            op, _, args = snap.nodes[k]
            if op == "Acc" and args[0] in self.stmts:
                self.reads.setdefault(args[0], []).append(k)

    def _usable(self, k: int) -> bool:
        op, _, args = self.snap.nodes[k]
        if op == "Acc":
            return args[1] in self.il
        if op == "Br":
            return args[0] in self.pred
        if op in ("Sum", "Max"):
            return args[1] in self.lin
        if op == "Scan":
            return all(a in self.lin for a in args[1:4])
        return True

    def _children(self, k: int) -> tuple[int, ...]:
        op, _, args = self.snap.nodes[k]
        return node_children(op, args)

    # --- analyses -------------------------------------------------------------------------------
    def _leaf_free(self, k: int) -> frozenset[int]:
        op, _, args = self.snap.nodes[k]
        if op == "Acc":
            return frozenset(i for lv in self.il[args[1]] for i, _ in lv[0] if i >= 0)
        if op == "Br":
            return pred_ids(self.pred[args[0]])
        return frozenset()

    def _free_sets(self) -> None:
        changed = True
        rounds = 0
        while changed and rounds < 200:
            self._check_clock()
            changed = False
            rounds += 1
            for k in self.e_nodes:
                op, c, args = self.snap.nodes[k]
                ch = self._children(k)
                if any(x not in self.free for x in ch):
                    continue
                f = self._leaf_free(k)
                for x in ch:
                    f = f | self.free[x]
                if op in ("Sum", "Max", "Scan"):
                    f = f - {args[0]}
                if op == "Scan":  # the bounds' indices
                    f = f | {i for a in args[2:4] for i, _ in self.lin[a][0] if i >= 0}
                old = self.free.get(c)
                new = f if old is None else old & f
                if new != old:
                    self.free[c] = new
                    changed = True

    def _node_pinned(self, k: int) -> frozenset[int]:
        op, c, args = self.snap.nodes[k]
        free = self.free.get(c, frozenset())
        if op == "Br":
            p = self.pred[args[0]]
            if p[0] == "Eq":
                units = [i for i, a in p[1][0] if i >= 0 and abs(a) == 1]
                if units:
                    return frozenset({max(units, key=lambda i: self.ext_hi[i])})
            return frozenset()
        if op == "Mul":
            return (self.pinned.get(args[0], frozenset()) | self.pinned.get(args[1], frozenset())
                    ) & free
        if op == "Add":
            return self.pinned.get(args[0], frozenset()) & self.pinned.get(args[1], frozenset())
        return frozenset()

    def _pinned_sets(self) -> None:
        for _ in range(30):
            changed = False
            for k in self.e_nodes:
                c = self.snap.nodes[k][1]
                if c not in self.free:
                    continue
                p = self._node_pinned(k)
                if len(p) > len(self.pinned.get(c, frozenset())):
                    self.pinned[c] = p
                    changed = True
            if not changed:
                break

    def _space(self, ids: Iterable[int]) -> Cost:
        hi = lo = 1.0
        for i in ids:
            hi *= self.ext_hi[i]
            lo *= self.ext_lo[i]
        return (hi, lo)

    def _local_cost(self, k: int) -> Cost:
        op, c, args = self.snap.nodes[k]
        if c not in self.free:
            return (INF, INF)
        if op in ("Num", "Acc", "Br"):
            return (0.0, 0.0)
        if op == "Mul" and any(
            self.snap.nodes[j][0] == "Num" for j in self.nodes_of.get(args[0], ())
        ):
            return (0.0, 0.0)  # a constant coefficient folds into the consumer
        if op in ("Add", "Mul"):
            return self._space(self.free[c] - self._node_pinned(k))
        if op in ("Sum", "Max"):
            body = args[2]
            return self._space(self.free.get(body, frozenset()) | self.free[c])
        if op == "Scan":
            # running sums over the summand's own points, read at the bound(s) over the
            # result's points (a band: two reads and their difference), as the plan runs it
            run = self._space(self.free.get(args[4], frozenset()))
            out = self._space(self.free[c])
            lo, hi = self.scan_bounds(args)
            reads = 3.0 if lo and hi else 1.0
            w = RUNNING_SUM_WEIGHT  # a running sum is sequential: priced as the plan prices it
            return (w * run[0] + reads * out[0], w * run[1] + reads * out[1])
        return self._space(self.free[c])

    def scan_bounds(self, args: tuple) -> tuple[LinVal | None, LinVal | None]:
        """The lower and upper bound of a Scan node, None where it is the trivial one (0, n)."""
        lo, hi = self.lin[args[2]], self.lin[args[3]]
        return (None if lo == ((), Fraction(0)) else lo,
                None if hi == self.lin[args[1]] else hi)

    # --- choosing ----------------------------------------------------------------------------
    def _relax(
        self, best: dict[int, Cost], choice: dict[int, int], allowed: set[str], queue: list[int]
    ) -> None:
        """Lower ``best`` from the nodes in ``queue`` (newly allowed reads), cheapest first, so
        each class is usually improved once (Dijkstra from the changed nodes)."""
        nodes = self.snap.nodes
        stmts = self.stmts
        local = self.local
        kids = self.kids
        parents = self.parents
        heap: list[tuple[float, float, int, int]] = []
        deadline = self.deadline
        pops = 0

        def candidate(k: int) -> None:
            op, c, args = nodes[k]
            if op == "Acc" and args[0] in stmts and args[0] not in allowed:
                return
            hi, lo = local[k]
            for x in kids[k]:
                b = best.get(x)
                if b is None:
                    return
                hi += b[0]
                lo += b[1]
            if hi == INF:
                return
            old = best.get(c)
            if old is None or (hi, lo) < old:
                heapq.heappush(heap, (hi, lo, c, k))

        for k in queue:
            candidate(k)
        while heap:
            hi, lo, c, k = heapq.heappop(heap)
            pops += 1
            if pops % CLOCK_EVERY == 0 and cpu_clock() > deadline:
                raise OutOfTime("extraction ran past its deadline")
            old = best.get(c)
            if old is not None and old <= (hi, lo):
                continue
            best[c] = (hi, lo)
            choice[c] = k
            for parent in parents.get(c, ()):
                candidate(parent)

    def _base(self) -> tuple[dict[int, Cost], dict[int, int]]:
        """Best costs with no statement materialized, by Knuth's generalization of Dijkstra
        (a node's cost is at least each child's, so classes finalize in order of cost)."""
        if self._base_cache is not None:
            return self._base_cache
        nodes = self.snap.nodes
        best: dict[int, Cost] = {}
        choice: dict[int, int] = {}
        waiting: dict[int, int] = {}
        heap: list[tuple[float, float, int, int]] = []
        for k in self.e_nodes:
            op, c, args = nodes[k]
            if op == "Acc" and args[0] in self.stmts:
                continue
            kids = set(self.kids[k])
            waiting[k] = len(kids)
            if not kids and self.local[k][0] < INF:
                heapq.heappush(heap, (*self.local[k], c, k))
        while heap:
            hi, lo, c, k = heapq.heappop(heap)
            if c in best:
                continue
            best[c] = (hi, lo)
            choice[c] = k
            for parent in set(self.parents.get(c, ())):
                if parent not in waiting:
                    continue
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    phi, plo = self.local[parent]
                    for x in self.kids[parent]:
                        phi += best[x][0]
                        plo += best[x][1]
                    if phi < INF:
                        heapq.heappush(heap, (phi, plo, nodes[parent][1], parent))
        self._base_cache = (best, choice)
        return self._base_cache

    def _dag(self, root: int, choice: dict[int, int]) -> tuple[Cost, set[str]]:
        """DAG cost of the chosen term under ``root`` and the statements it reads."""
        seen: set[int] = set()
        reads: set[str] = set()
        hi = lo = 0.0
        stack = [root]
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            k = choice[c]
            op, _, args = self.snap.nodes[k]
            if op == "Acc" and args[0] in self.stmts:
                reads.add(args[0])
            h, lw = self.local[k]
            hi += h
            lo += lw
            stack.extend(self._children(k))
        return (hi, lo), reads

    def extract(self, materialized: set[str]) -> tuple[Cost, Program] | None:
        """Price and decode the program that keeps exactly ``materialized`` as statements."""
        found = self.price(materialized)
        return None if found is None else (found[0], self.decode(found[1]))

    def decode(self, plan: _Plan) -> Program:
        return self._decode_program(plan.needed, plan.bodies, plan.outputs, plan.choice)

    def price(self, materialized: set[str]) -> tuple[Cost, _Plan] | None:
        """Price the program that keeps exactly ``materialized`` as statements (None: it cannot
        be read back); raises OutOfTime past the deadline."""
        lets = self.snap.lets
        base_best, base_choice = self._base()
        best = dict(base_best)
        choice = dict(base_choice)
        allowed: set[str] = set()
        bodies: dict[str, tuple[int, dict[int, int], Cost, set[str]]] = {}
        queue: list[int] = []
        for s in self.enc.program.statements:
            if s.name not in materialized:
                continue
            self._relax(best, choice, allowed, queue)
            root = lets.get(self.enc.body_let[s.name])
            if root is None or root not in best:
                return None
            cost, reads = self._dag(root, choice)
            bodies[s.name] = (root, dict(choice), cost, reads)
            allowed.add(s.name)
            queue = list(self.reads.get(s.name, ()))
        self._relax(best, choice, allowed, queue)
        outputs: list[tuple[int | None, Cost, set[str]]] = []
        for o, let in zip(self.enc.program.outputs, self.enc.output_let, strict=True):
            if let is None:
                name = o.name  # type: ignore[union-attr]
                if name not in materialized:
                    return None
                outputs.append((None, (0.0, 0.0), {name}))
                continue
            root = lets.get(let)
            if root is None or root not in best:
                return None
            cost, reads = self._dag(root, choice)
            outputs.append((root, cost, reads))
        # statements reached from the outputs
        needed: set[str] = set()
        stack = [r for _, _, reads in outputs for r in reads]
        while stack:
            y = stack.pop()
            if y in needed:
                continue
            needed.add(y)
            stack.extend(bodies[y][3])
        hi = lo = 0.0
        for y in needed:
            w = self._space(self.enc.gen_ids[y])
            hi += bodies[y][2][0] + w[0]
            lo += bodies[y][2][1] + w[1]
        for _, cost, _ in outputs:
            hi += cost[0]
            lo += cost[1]
        return (hi, lo), _Plan(needed, bodies, outputs, choice)

    def best_program(self) -> Extraction:
        """Local search over the set of materialized statements: start from the better of
        "all" and "only the required ones", then toggle one statement at a time, while the
        deadline allows; raises OutOfTime if not even "all" could be priced in time."""
        stmts = [s.name for s in self.enc.program.statements]
        required = {
            o.name for o, let in zip(self.enc.program.outputs, self.enc.output_let, strict=True)
            if let is None and isinstance(o, Access)
        }
        # a statement whose reads were not offered for inlining stays materialized: toggling it
        # could only make its readers unreadable
        offered = self.enc.inlinable
        toggles = [y for y in reversed(stmts)
                   if y not in required and (offered is None or y in offered)]
        current = set(stmts)
        found = self.price(current)
        if found is None:
            raise ExtractionError("the input program itself could not be read back")
        tried: dict[frozenset[str], tuple[Cost, _Plan]] = {frozenset(current): found}
        complete = True
        try:
            self._check_clock()
            minimal = self.price(set(required))
            if minimal is not None:
                tried[frozenset(required)] = minimal
            if minimal is not None and minimal[0] < found[0]:
                current, found = set(required), minimal
            for _ in range(2):
                improved = False
                for y in toggles:
                    self._check_clock()
                    trial_set = current - {y} if y in current else current | {y}
                    trial = self.price(trial_set)
                    if trial is not None:
                        tried[frozenset(trial_set)] = trial
                    if trial is not None and trial[0] < found[0]:
                        current, found, improved = trial_set, trial, True
                if not improved:
                    break
        except OutOfTime:
            complete = False
        prog = self.decode(found[1])
        used = tuple(s.name for s in prog.statements)
        others: list[Program] = []
        for key in sorted(tried, key=lambda k: tried[k][0]):
            if len(others) >= ALTERNATIVES or key == frozenset(current):
                continue
            try:
                others.append(self.decode(tried[key][1]))
            except (ExtractionError, KeyError, ValueError):
                continue
        return Extraction(prog, found[0], used, complete, tuple(others))

    def _check_clock(self) -> None:
        if cpu_clock() > self.deadline:
            raise OutOfTime("extraction ran past its deadline")

    # --- decoding -----------------------------------------------------------------------------
    def _decode_program(self, needed, bodies, outputs, final_choice) -> Program:
        prog = self.enc.program
        taken = set(prog.param_names) | {s.name for s in prog.statements}
        taken |= {d.name for p in prog.params for d in p.shape if not isinstance(d, int)}
        statements = []
        for s in prog.statements:
            if s.name not in needed:
                continue
            root, choice, _, _ = bodies[s.name]
            names = {g: iv.name for g, iv in zip(self.enc.gen_ids[s.name], s.indices, strict=True)}
            dec = Decoder(self, choice, names, taken | {iv.name for iv in s.indices})
            statements.append(Statement(s.name, s.indices, dec.expr(root), s.loc))
        outs: list[Expr] = []
        for (root, _, _), o in zip(outputs, prog.outputs, strict=True):
            if root is None:
                outs.append(o)
            else:
                outs.append(Decoder(self, final_choice, {}, set(taken)).expr(root))
        return Program(prog.params, tuple(statements), tuple(outs), prog.returns_tuple, prog.name)
