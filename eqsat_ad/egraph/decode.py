"""Reading an e-graph snapshot back: what its e-nodes' arguments are, the canonical affine,
index-list and predicate value of each index class, and the decoding of chosen e-nodes into
Tensor SSA expressions (names for the indices, brackets merged, scans as the bracket sums they
equal). Extraction (:mod:`.extract`) chooses the e-nodes; this module only reads them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    conj,
)
from ..ir.index import Affine, IndexVar
from .saturate import Snapshot

if TYPE_CHECKING:
    from .extract import Extractor

__all__ = ["Decoder", "ExtractionError", "LinVal", "decode_index_classes", "node_children",
           "pred_ids"]

LinVal = tuple[tuple[tuple[int, Fraction], ...], Fraction]

_NAME_POOL = ("i", "j", "k", "l", "m", "p", "q", "r", "s", "t", "u", "v", "w")


class ExtractionError(Exception):
    """No program could be read back (an internal failure: the caller falls back to the input)."""


def node_children(op: str, args: tuple) -> tuple[int, ...]:
    """The expression e-classes among an e-node's arguments (an E node of prelude.egg)."""
    if op in ("Add", "Mul", "Div"):
        return (args[0], args[1])
    if op == "Pow":
        return (args[0],)
    if op == "Call1":
        return (args[1],)
    if op == "Call2":
        return (args[1], args[2])
    if op in ("Sum", "Max"):
        return (args[2],)
    if op == "Scan":
        return (args[4],)
    return ()


def decode_index_classes(
    snap: Snapshot,
) -> tuple[dict[int, LinVal], dict[int, tuple[LinVal, ...]], dict[int, tuple]]:
    """The canonical value of every affine, index-list and predicate class that has one."""
    lin: dict[int, LinVal] = {}
    il: dict[int, tuple[LinVal, ...]] = {}
    pred: dict[int, tuple] = {}
    changed = True
    while changed:
        changed = False
        for op, c, args in snap.nodes:
            if op == "LNil" and c not in lin:
                lin[c] = ((), args[0])
                changed = True
            elif op == "LTerm" and c not in lin and args[2] in lin:
                rest = lin[args[2]]
                lin[c] = (((args[0], args[1]),) + rest[0], rest[1])
                changed = True
            elif op == "INil" and c not in il:
                il[c] = ()
                changed = True
            elif op == "ICons" and c not in il and args[0] in lin and args[1] in il:
                il[c] = (lin[args[0]],) + il[args[1]]
                changed = True
            elif op in ("Eq", "Ne", "Ge", "Gt") and args[0] in lin:
                val = (op, lin[args[0]])
                old = pred.get(c)
                # prefer the equality with a positive leading coefficient (reads naturally)
                if old is None or (op in ("Eq", "Ne") and _leading_negative(old[1])
                                   and not _leading_negative(val[1])):
                    pred[c] = val
                    changed = changed or old is None
            elif op == "Rel" and c not in pred and args[1] in il:
                pred[c] = ("Rel", args[0], il[args[1]])
                changed = True
    return lin, il, pred


def _leading_negative(lv: LinVal) -> bool:
    return bool(lv[0]) and lv[0][0][1] < 0


def pred_ids(p: tuple) -> frozenset[int]:
    if p[0] == "Rel":
        return frozenset(i for lv in p[2] for i, _ in lv[0] if i >= 0)
    return frozenset(i for i, _ in p[1][0] if i >= 0)


class Decoder:
    def __init__(self, ex: Extractor, choice: dict[int, int], names: dict[int, str],
                 taken: set[str]) -> None:
        self.ex = ex
        self.choice = choice
        self.names = dict(names)
        self.taken = set(taken) | set(names.values())
        self.memo: dict[int, Expr] = {}

    def name(self, i: int) -> str:
        if i not in self.names:
            for cand in _NAME_POOL:
                if cand not in self.taken:
                    break
            else:
                k = 1
                while f"k{k}" in self.taken:
                    k += 1
                cand = f"k{k}"
            self.names[i] = cand
            self.taken.add(cand)
        return self.names[i]

    def affine(self, lv: LinVal) -> Affine:
        index: dict[str, Fraction] = {}
        sizes: dict[str, Fraction] = {}
        for i, c in lv[0]:
            if i < 0:
                sizes[self.ex.size_name[i]] = c
            else:
                index[self.name(i)] = c
        return Affine.make(index, sizes, lv[1])

    def pred(self, p: tuple) -> Pred:
        if p[0] == "Rel":
            return Rel(p[1], tuple(self.affine(lv) for lv in p[2]))
        op, (terms, const) = p
        pos = tuple((i, c) for i, c in terms if c > 0)
        neg = tuple((i, -c) for i, c in terms if c < 0)
        lhs = self.affine((pos, const if const > 0 else Fraction(0)))
        rhs = self.affine((neg, -const if const < 0 else Fraction(0)))
        return Cmp({"Eq": "==", "Ne": "!=", "Ge": ">=", "Gt": ">"}[op], lhs, rhs)

    def expr(self, root: int) -> Expr:
        """The chosen term of class ``root`` (an explicit stack: chains may be thousands deep;
        indices are named in the order a left-to-right reading meets them)."""
        nodes = self.ex.snap.nodes
        out: list[Expr] = []
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            c, expanded = stack.pop()
            op, _, args = nodes[self.choice[c]]
            kids = node_children(op, args)
            if not expanded:
                if c in self.memo:
                    out.append(self.memo[c])
                    continue
                if not kids:
                    self.memo[c] = self.leaf(op, args)
                    out.append(self.memo[c])
                    continue
                if op in ("Sum", "Max", "Scan"):
                    self.name(args[0])
                stack.append((c, True))
                stack.extend((x, False) for x in reversed(kids))
                continue
            vals = out[len(out) - len(kids):]
            del out[len(out) - len(kids):]
            self.memo[c] = self.combine(op, args, vals)
            out.append(self.memo[c])
        return out[0]

    def leaf(self, op: str, args: tuple) -> Expr:
        if op == "Num":
            return Const(args[0])
        if op == "Acc":
            return Access(args[0], tuple(self.affine(lv) for lv in self.ex.il[args[1]]))
        if op == "Br":
            return Bracket(self.pred(self.ex.pred[args[0]]))
        raise ExtractionError(f"cannot decode {op}")

    def combine(self, op: str, args: tuple, vals: list[Expr]) -> Expr:
        if op == "Add":
            a, b = vals
            if isinstance(b, Neg):
                return Binary("-", a, b.arg)
            return Binary("+", a, b)
        if op == "Mul":
            a, b = vals
            if isinstance(a, Const) and a.value == -1.0:
                return Neg(b)
            if isinstance(b, Const) and b.value == -1.0:
                return Neg(a)
            if isinstance(a, Bracket) and isinstance(b, Bracket):
                return Bracket(conj(a.pred, b.pred))
            if isinstance(a, Bracket) and isinstance(b, Binary) and b.op == "*" and isinstance(
                b.lhs, Bracket
            ):
                return Binary("*", Bracket(conj(a.pred, b.lhs.pred)), b.rhs)
            return Binary("*", a, b)
        if op == "Div":
            return Binary("/", vals[0], vals[1])
        if op == "Pow":
            return Pow(vals[0], args[1])
        if op in ("Call1", "Call2"):
            return Call(args[0], tuple(vals))
        if op == "Sum":
            j = args[0]
            iv = IndexVar(self.name(j), self.ex.enc.ids.extent[j])
            body = vals[0]
            if isinstance(body, Sum) and iv.name not in {x.name for x in body.indices}:
                return Sum((iv,) + body.indices, body.body)
            return Sum((iv,), body)
        if op == "Max":
            j = args[0]
            iv = IndexVar(self.name(j), self.ex.enc.ids.extent[j])
            body = vals[0]
            if isinstance(body, Max) and iv.name not in {x.name for x in body.indices}:
                return Max((iv,) + body.indices, body.body)
            return Max((iv,), body)
        if op == "Scan":
            return self.scan(args, vals[0])
        raise ExtractionError(f"cannot decode {op}")

    def scan(self, args: tuple, body: Expr) -> Expr:
        """A Scan node as the bracket sum it equals, ``Sum[j: n]((j >= lo and j < hi) * e)``:
        the form the plan lowers to its Scan kernel (running sums read at the bounds; see
        plan/windows.py ``scan_bounds``). No IR node of its own: a scan has one semantics, the
        bracket sum's, which the interpreter, AD and the printer already know."""
        j = args[0]
        iv = IndexVar(self.name(j), self.ex.enc.ids.extent[j])
        lo, hi = self.ex.scan_bounds(args)
        preds: list[Pred] = []
        if lo is not None:
            preds.append(Cmp(">=", Affine.var(iv.name), self.affine(lo)))
        if hi is not None:
            preds.append(Cmp("<", Affine.var(iv.name), self.affine(hi)))
        if not preds:
            return Sum((iv,), body)
        pred = preds[0] if len(preds) == 1 else conj(preds[0], preds[1])
        if isinstance(body, Binary) and body.op == "*" and isinstance(body.lhs, Bracket):
            return Sum((iv,), Binary("*", Bracket(conj(pred, body.lhs.pred)), body.rhs))
        return Sum((iv,), Binary("*", Bracket(pred), body))
