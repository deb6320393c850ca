"""Print IR values in the index language (Python syntax; see docs/index-language.md).

``parse(print_program(p)) == p`` for every program: the printer adds exactly the parentheses
Python's precedence needs, prints every bracket parenthesized, and never folds anything.
"""

from __future__ import annotations

import math

from .expr import (
    Access,
    And,
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
)
from .index import Affine, dim_str
from .program import Fold, Param, Program, Statement

# Python precedence levels (higher binds tighter).
_ADD, _MUL, _UNARY, _POW, _ATOM = 1, 2, 3, 4, 5
_BIN_PREC = {"+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL}


def format_number(v: float) -> str:
    if not math.isfinite(v):
        raise ValueError(f"the index language has no literal for {v}")
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def print_affine(a: Affine) -> str:
    return str(a)


def print_pred(p: Pred) -> str:
    """A predicate, without the surrounding parentheses of its bracket."""
    match p:
        case Cmp(op, lhs, rhs):
            return f"{lhs} {op} {rhs}"
        case Rel(name, idx):
            return f"{name}[{', '.join(map(str, idx))}]" if idx else name
        case And(preds):
            return " and ".join(
                f"({print_pred(q)})" if isinstance(q, And) else print_pred(q) for q in preds
            )
    raise TypeError(p)


def _prec(e: Expr) -> int:
    match e:
        case Binary(op, _, _):
            return _BIN_PREC[op]
        case Neg():
            return _UNARY
        case Pow():
            return _POW
        case Const(v):
            return _UNARY if v < 0 else _ATOM
    return _ATOM


def print_expr(e: Expr) -> str:
    """``e`` in the index language (iterative: any depth)."""
    from .traverse import fold

    def wrap(child: Expr, text: str, need: int) -> str:
        return f"({text})" if _prec(child) < need else text

    def step(x: Expr, kids: list[str]) -> str:
        match x:
            case Const(v):
                return format_number(v)
            case Access(name, idx):
                return f"{name}[{', '.join(map(str, idx))}]" if idx else name
            case Bracket(Rel() as r):
                return print_pred(r)
            case Bracket(p):
                return f"({print_pred(p)})"
            case Binary(op, lhs, rhs):
                p = _BIN_PREC[op]
                # Left-associative: the right operand needs parentheses at equal precedence.
                return f"{wrap(lhs, kids[0], p)} {op} {wrap(rhs, kids[1], p + 1)}"
            case Neg(arg):
                # -(2) keeps Neg(Const(2)) apart from Const(-2); -x ** 2 is -(x ** 2) in Python.
                if isinstance(arg, Const):
                    return f"-({kids[0]})"
                return f"-{wrap(arg, kids[0], _UNARY)}"
            case Pow(base, k):
                # ** is right-associative and binds tighter than unary minus on its left.
                kc = Const(k)
                return f"{wrap(base, kids[0], _ATOM)} ** {wrap(kc, format_number(k), _ATOM)}"
            case Call(fn, _):
                return f"{fn}({', '.join(kids)})"
            case Sum(ivs, _):
                return f"Sum[{', '.join(map(str, ivs))}]({kids[0]})"
            case Max(ivs, _):
                return f"Max[{', '.join(map(str, ivs))}]({kids[0]})"
        raise TypeError(f"not an expression: {x!r}")

    return fold(e, step)


def print_param(p: Param) -> str:
    dims = ", ".join(dim_str(d) for d in p.shape)
    if p.kind == "relation":
        # `rel[]` is not Python syntax; a rank-0 relation prints as `rel[()]`.
        return f"{p.name}: rel[{dims or '()'}]"
    return f"{p.name}: [{dims}]"


def print_statement(s: Statement) -> str:
    lhs = f"{s.name}[{', '.join(map(str, s.indices))}]" if s.indices else s.name
    return f"{lhs} = {print_expr(s.body)}"


def print_fold(f: Fold) -> str:
    """The fold's line (its body is printed as a nested ``def`` just before it)."""
    lhs = ", ".join(f.names)
    parts = [f.body.name, f"carry={_names_tuple(f.carry)}"]
    if f.scan:
        parts.append(f"scan={_names_tuple(f.scan)}")
    if f.const:
        parts.append(f"const={_names_tuple(f.const)}")
    if f.reverse:
        parts.append("reverse=True")
    return f"{lhs} = Fold[{dim_str(f.trip)}]({', '.join(parts)})"


def _names_tuple(names: tuple[str, ...]) -> str:
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def print_program(prog: Program) -> str:
    lines = [f"def {prog.name}({', '.join(print_param(p) for p in prog.params)}):"]
    for s in prog.statements:
        if isinstance(s, Fold):
            lines += ["    " + line for line in print_program(s.body).splitlines()]
            lines.append(f"    {print_fold(s)}")
        else:
            lines.append(f"    {print_statement(s)}")
    outs = [print_expr(o) for o in prog.outputs]
    if prog.returns_tuple:
        ret = f"({outs[0]},)" if len(outs) == 1 else ", ".join(outs)
    else:
        ret = outs[0]
    lines.append(f"    return {ret}")
    return "\n".join(lines) + "\n"
