"""Expressions of the index language, read from a Python syntax tree (docs/index-language.md).

:class:`ExprParser` turns expression nodes into IR: constants, accesses (a relation parameter's
access is a bracket on it), ``Sum``/``Max``/``logsumexp`` with their binders, calls, operators
(a left-nested chain read with a loop), Iverson brackets of comparisons and affine index
expressions, and gathers through index arrays. It holds the source for locations and for telling
``-(2)`` from ``-2``; :mod:`eqsat_ad.frontend.index_lang` reads the function around them.
"""

from __future__ import annotations

import ast
from fractions import Fraction
from typing import Any

from ..ir.errors import ProgramError
from ..ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Loc,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    logsumexp,
)
from ..ir.index import Affine, Dim, IndexVar, as_dim
from ..ir.program import Param
from .long_chains import Operand

__all__ = ["INDEX_LIMIT", "ExprParser", "construct"]

_BINOPS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_OP_NAMES: dict[type[ast.AST], str] = {
    ast.FloorDiv: "floor division '//'",
    ast.Mod: "modulo '%'",
    ast.MatMult: "matrix product '@'",
    ast.BitAnd: "bitwise '&'",
    ast.BitOr: "bitwise '|'",
    ast.BitXor: "bitwise '^'",
    ast.LShift: "shift '<<'",
    ast.RShift: "shift '>>'",
    ast.Pow: "power '**'",
    ast.Is: "'is'",
    ast.IsNot: "'is not'",
    ast.In: "'in'",
    ast.NotIn: "'not in'",
    ast.UAdd: "unary '+'",
    ast.Invert: "bitwise '~'",
    ast.Not: "'not'",
}
# Friendly names of the Python constructs the language does not have.
_CONSTRUCTS: dict[type[ast.AST], str] = {
    ast.For: "for loop",
    ast.AsyncFor: "for loop",
    ast.While: "while loop",
    ast.If: "if statement",
    ast.With: "with statement",
    ast.AsyncWith: "with statement",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.AugAssign: "augmented assignment (Tensor SSA assigns each name once)",
    ast.AnnAssign: "annotated assignment",
    ast.FunctionDef: "nested function definition",
    ast.AsyncFunctionDef: "nested function definition",
    ast.ClassDef: "class definition",
    ast.Pass: "pass statement",
    ast.Delete: "del statement",
    ast.Global: "global statement",
    ast.Nonlocal: "nonlocal statement",
    ast.Try: "try statement",
    ast.Raise: "raise statement",
    ast.Assert: "assert statement",
    ast.Break: "break statement",
    ast.Continue: "continue statement",
    ast.Match: "match statement",
    ast.Expr: "expression statement",
    ast.TypeAlias: "type alias",
    ast.IfExp: "conditional expression",
    ast.Lambda: "lambda",
    ast.Attribute: "attribute access",
    ast.List: "list",
    ast.Tuple: "tuple",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Starred: "starred expression",
    ast.JoinedStr: "f-string",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.NamedExpr: "assignment expression ':='",
    ast.Slice: "slice",
}


def construct(node: ast.AST) -> str:
    return _CONSTRUCTS.get(type(node)) or _OP_NAMES.get(type(node)) or type(node).__name__


INDEX_LIMIT = 2**62
"""Index constants and sizes stay below this, so index arithmetic fits 64-bit integers."""


class ExprParser:
    """Reads the expressions of one function definition; holds the source for locations and
    parentheses, and what the function's parameters declare (relations, sizes, index arrays)."""

    def __init__(self, src: str, filename: str, line_offset: int = 0, col_offset: int = 0):
        # ast columns are UTF-8 byte offsets: keep the lines as bytes to slice them.
        self.lines = [ln.encode("utf-8") for ln in src.splitlines()]
        self.filename = filename
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.relations: set[str] = set()
        self.sizes: set[str] = set()
        # long +/- chains read in pieces (see long_chains): placeholder name -> operands
        self.chains: dict[str, list[Operand]] = {}
        self.index_arrays: dict[str, Param] = {}  # ``src: idx[E, N]``: the relation [src[e] == i]
        self.fresh = 0

    # --- locations and errors ------------------------------------------------------------------
    def loc(self, node: ast.AST) -> Loc:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        return Loc(line + self.line_offset, col + self.col_offset, self.filename)

    def error(self, message: str, node: ast.AST) -> ProgramError:
        return ProgramError(message, self.loc(node))

    def unsupported(self, node: ast.AST, where: str = "") -> ProgramError:
        suffix = f" {where}" if where else ""
        return self.error(f"{construct(node)} is not supported{suffix}", node)

    def text(self, node: ast.AST) -> str:
        seg = self._slice(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        return seg.decode("utf-8", "replace")

    def _slice(self, l0: int, c0: int, l1: int | None, c1: int | None) -> bytes:
        l1 = l0 if l1 is None else l1
        if l0 == l1:
            return self.lines[l0 - 1][c0:c1]
        parts = [self.lines[l0 - 1][c0:], *self.lines[l0 : l1 - 1], self.lines[l1 - 1][:c1]]
        return b"\n".join(parts)

    def parenthesized_operand(self, unary: ast.UnaryOp) -> bool:
        """Whether the operand of a unary minus is in parentheses: ``-(2)`` versus ``-2``."""
        op = unary.operand
        between = self._slice(unary.lineno, unary.col_offset, op.lineno, op.col_offset)
        # Only blanks, parentheses, line continuations and comments can sit in between.
        return any(b"(" in line.split(b"#", 1)[0] for line in between.split(b"\n"))

    def small_int(self, v: int, node: ast.AST, what: str) -> int:
        """``v`` if index arithmetic on it stays in 64-bit integers (the e-graph's and NumPy's)."""
        if abs(v) >= INDEX_LIMIT:
            raise self.error(f"{what} {v} is too large: index constants and sizes must be "
                             f"below 2**62", node)
        return v

    def dim(self, node: ast.expr) -> Dim:
        if isinstance(node, ast.Name):
            return as_dim(node.id)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
            and node.value >= 0
        ):
            return self.small_int(node.value, node, "dimension")
        raise self.error(
            f"a dimension must be a size name or a non-negative integer, not '{self.text(node)}'",
            node,
        )

    def binders(self, node: ast.expr, what: str) -> tuple[IndexVar, ...]:
        """``i: N, j: 3`` (the slice of a statement target or of ``Sum[...]``)."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out: list[IndexVar] = []
        for e in elts:
            if not (
                isinstance(e, ast.Slice)
                and isinstance(e.lower, ast.Name)
                and e.upper is not None
                and e.step is None
            ):
                raise self.error(
                    f"{what} must bind each index with its extent, like 'i: N', "
                    f"not '{self.text(e)}'",
                    e,
                )
            out.append(IndexVar(e.lower.id, self.dim(e.upper)))
        return tuple(out)

    # --- expressions ---------------------------------------------------------------------------
    def expr(self, node: ast.expr, scope: frozenset[str]) -> Expr:
        loc = self.loc(node)
        match node:
            case ast.Constant(value=v):
                return Const(self.number(node, v), loc)
            case ast.Name(id=name) if name in self.chains:
                return self.chain(self.chains[name], scope)
            case ast.Name(id=name):
                if name in self.relations:
                    return Bracket(Rel(name, (), loc), loc)
                return Access(name, (), loc)
            case ast.Subscript(value=ast.Name(id="Sum" | "Max" | "logsumexp" as head)):
                raise self.error(
                    f"{head}[...] must be applied to a body: {head}[i: N](...)", node
                )
            case ast.Subscript(value=ast.Name(id=name), slice=sl) if self.gathers(sl):
                return self.gather(name, sl, scope, node)
            case ast.Subscript(value=ast.Name(id=name), slice=sl):
                idx = self.indices(sl, scope)
                if name in self.index_arrays and len(idx) == self.index_arrays[name].rank - 1:
                    raise self.error(
                        f"index array '{name}' is read only inside an index, like "
                        f"x[{self.text(node)}]", node)
                if name in self.relations:
                    return Bracket(Rel(name, idx, loc), loc)
                return Access(name, idx, loc)
            case ast.Subscript():
                raise self.error(
                    f"only names can be indexed, not '{self.text(node.value)}'", node.value
                )
            case ast.Call(
                func=ast.Subscript(value=ast.Name(id="Sum" | "Max" | "logsumexp" as head),
                                   slice=sl)
            ):
                ivs = self.binders(sl, head)
                if node.keywords or len(node.args) != 1:
                    raise self.error(f"{head}[...](body) takes exactly one body", node)
                inner = scope | {iv.name for iv in ivs}
                body = self.expr(node.args[0], inner)
                if head == "logsumexp":
                    return logsumexp(ivs, body, loc)
                return (Sum if head == "Sum" else Max)(ivs, body, loc)
            case ast.Call(func=ast.Name(id=fn)):
                if node.keywords:
                    raise self.error(f"keyword arguments to '{fn}' are not supported", node)
                return Call(fn, tuple(self.expr(a, scope) for a in node.args), loc)
            case ast.Call():
                raise self.error(f"cannot call '{self.text(node.func)}'", node.func)
            case ast.BinOp(left=lhs, op=ast.Pow(), right=rhs):
                return Pow(self.expr(lhs, scope), self.exponent(rhs), loc)
            case ast.BinOp():
                return self.binop_chain(node, scope)
            case ast.UnaryOp(op=ast.USub(), operand=arg):
                if (
                    isinstance(arg, ast.Constant)
                    and _is_number(arg.value)
                    and not self.parenthesized_operand(node)
                ):
                    return Const(-self.number(arg, arg.value), loc)
                return Neg(self.expr(arg, scope), loc)
            case ast.UnaryOp(op=op):
                raise self.error(f"{construct(op)} is not supported", node)
            case ast.Compare() | ast.BoolOp():
                return Bracket(self.pred(node, scope), loc)
        raise self.unsupported(node, "in an expression")

    def binop_chain(self, node: ast.BinOp, scope: frozenset[str]) -> Expr:
        """A left-nested chain ``a op b op c ...`` read along its left spine with a loop (a
        chain of thousands of terms is as deep as it is long)."""
        spine: list[ast.BinOp] = []
        cur: ast.expr = node
        while isinstance(cur, ast.BinOp) and not isinstance(cur.op, ast.Pow):
            spine.append(cur)
            cur = cur.left
        acc = self.expr(cur, scope)
        for b in reversed(spine):
            sym = _BINOPS.get(type(b.op))
            if sym is None:
                raise self.error(f"{construct(b.op)} is not supported", b)
            acc = Binary(sym, acc, self.expr(b.right, scope), self.loc(b))
        return acc

    def chain(self, operands: list[Operand], scope: frozenset[str]) -> Expr:
        acc = self.expr(operands[0].tree, scope)
        if operands[0].sign == "-":
            acc = Neg(acc, acc.loc)
        for op in operands[1:]:
            acc = Binary(op.sign, acc, self.expr(op.tree, scope), self.loc(op.tree))
        return acc

    def number(self, node: ast.AST, v: Any) -> float:
        if not _is_number(v):
            raise self.error(f"the literal {self.text(node)} is not a number", node)
        try:
            return float(v)
        except OverflowError:
            raise self.error(f"the literal {self.text(node)} is too large", node) from None

    def exponent(self, node: ast.expr) -> float:
        sign = 1.0
        inner = node
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, inner = -1.0, node.operand
        if isinstance(inner, ast.Constant) and _is_number(inner.value):
            return sign * self.number(inner, inner.value)
        raise self.error(
            f"the exponent of '**' must be a constant number, not '{self.text(node)}'", node
        )

    # --- predicates ----------------------------------------------------------------------------
    def pred(self, node: ast.expr, scope: frozenset[str]) -> Pred:
        loc = self.loc(node)
        match node:
            case ast.Compare(left=left, ops=ops, comparators=rights):
                terms = [left, *rights]
                cmps: list[Pred] = []
                for k, op in enumerate(ops):
                    sym = _CMPOPS.get(type(op))
                    if sym is None:
                        raise self.error(f"comparison {construct(op)} is not supported", node)
                    lhs = self.affine(terms[k], scope)
                    rhs = self.affine(terms[k + 1], scope)
                    cmps.append(Cmp(sym, lhs, rhs, loc))
                # 0 <= i < N is a conjunction, as in Python.
                return cmps[0] if len(cmps) == 1 else And(tuple(cmps), loc)
            case ast.BoolOp(op=ast.And(), values=values):
                return And(tuple(self.pred(v, scope) for v in values), loc)
            case ast.BoolOp(op=ast.Or()):
                raise self.error("'or' is not supported in a bracket; add two brackets", node)
            case ast.Subscript(value=ast.Name(id=name), slice=sl):
                return Rel(name, self.indices(sl, scope), loc)
            case ast.Name(id=name):
                return Rel(name, (), loc)
        raise self.error(
            f"'{self.text(node)}' is not a comparison of index expressions or a relation", node
        )

    # --- index expressions ---------------------------------------------------------------------
    def gathers(self, sl: ast.expr) -> bool:
        """Whether an access's index list reads an index array (``x[src[e]]``)."""
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        return any(isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
                   and e.value.id in self.index_arrays for e in elts)

    def gather(self, name: str, sl: ast.expr, scope: frozenset[str], node: ast.expr) -> Expr:
        """``x[.., src[e], ..]`` as ``Sum[k: N]([src[e] == k] * x[.., k, ..])``: a gather is a
        sum against the index array's relation, so AD and the rules treat it like any other."""
        loc = self.loc(node)
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        binders: list[IndexVar] = []
        brackets: list[Expr] = []
        idx: list[Affine] = []
        for e in elts:
            if not (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)
                    and e.value.id in self.index_arrays):
                idx.append(self.affine(e, scope))
                continue
            arr = self.index_arrays[e.value.id]
            inner = self.indices(e.slice, scope)
            if len(inner) != arr.rank - 1:
                raise self.error(
                    f"index array '{arr.name}' has {arr.rank - 1} index(es), got {len(inner)}", e)
            self.fresh += 1
            k = f"{arr.name}_at{self.fresh}"
            while k in scope:
                k += "_"
            binders.append(IndexVar(k, arr.shape[-1]))
            brackets.append(Bracket(Rel(arr.name, (*inner, Affine.var(k)), loc), loc))
            idx.append(Affine.var(k))
        if name in self.relations:
            body: Expr = Bracket(Rel(name, tuple(idx), loc), loc)
        else:
            body = Access(name, tuple(idx), loc)
        for b in reversed(brackets):
            body = Binary("*", b, body, loc)
        return Sum(tuple(binders), body, loc)

    def indices(self, node: ast.expr, scope: frozenset[str]) -> tuple[Affine, ...]:
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        return tuple(self.affine(e, scope) for e in elts)

    def affine(self, node: ast.expr, scope: frozenset[str]) -> Affine:
        match node:
            case ast.Name(id=name):
                # A bound index shadows a size; an unknown name is left to check_program.
                if name in self.sizes and name not in scope:
                    return Affine.make(sizes={name: 1})
                return Affine.var(name)
            case ast.Constant(value=v) if isinstance(v, int) and not isinstance(v, bool):
                return Affine.constant(self.small_int(v, node, "index constant"))
            case ast.UnaryOp(op=ast.USub(), operand=arg):
                return -self.affine(arg, scope)
            case ast.BinOp(left=lhs, op=ast.Add(), right=rhs):
                return self.affine(lhs, scope) + self.affine(rhs, scope)
            case ast.BinOp(left=lhs, op=ast.Sub(), right=rhs):
                return self.affine(lhs, scope) - self.affine(rhs, scope)
            case ast.BinOp(left=lhs, op=ast.Mult(), right=rhs):
                a, b = self.affine(lhs, scope), self.affine(rhs, scope)
                if a.is_constant():
                    return b.scale(a.const)
                if b.is_constant():
                    return a.scale(b.const)
                raise self.error(
                    f"index expression '{self.text(node)}' is not affine "
                    "(a product of two index expressions)",
                    node,
                )
            case ast.BinOp(left=lhs, op=ast.Div(), right=rhs):
                a, b = self.affine(lhs, scope), self.affine(rhs, scope)
                if not b.is_constant():
                    raise self.error(
                        f"index expression '{self.text(node)}' is not affine "
                        "(division by a non-constant)",
                        node,
                    )
                if b.const == 0:
                    raise self.error(f"division by zero in index '{self.text(node)}'", node)
                return a.scale(Fraction(1) / b.const)
            case ast.BinOp(op=op):
                raise self.error(
                    f"{construct(op)} is not supported in index expression '{self.text(node)}'",
                    node,
                )
            case ast.Constant():
                raise self.error(
                    f"index constant {self.text(node)} must be an integer (write k/2 for halves)",
                    node,
                )
        raise self.error(
            f"'{self.text(node)}' is not an index expression (an affine combination of indices, "
            "sizes and integers)",
            node,
        )


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
