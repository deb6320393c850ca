"""Well-formedness of a Tensor SSA :class:`Program`.

:func:`check_program` is run by the parser and by every stage on the program it produces. It
raises :class:`ProgramError` naming the first problem, located at the nearest node that carries a
source location.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Iterable

from .errors import ProgramError
from .expr import (
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
    children,
)
from .functions import lookup
from .index import Affine, IndexVar, dim_str
from .program import Fold, Program

__all__ = ["check_program"]

# Names the concrete syntax gives a meaning of their own.
RESERVED = frozenset({"Sum", "Max", "Fold"})


class _Checker:
    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.params = {p.name: p for p in prog.params}
        self.bound_sizes = frozenset(
            d.name for p in prog.params for d in p.shape if not isinstance(d, int)
        )
        self.binders: list[tuple[IndexVar, ...]] = []
        for s in prog.statements:
            if isinstance(s, Fold):
                continue
            self.binders.append(s.indices)
            self.binders.extend(_sum_binders(s.body))
        for o in prog.outputs:
            self.binders.extend(_sum_binders(o))
        self.all_indices = frozenset(iv.name for b in self.binders for iv in b)
        self.all_sizes = self.bound_sizes | frozenset(
            iv.extent.name for b in self.binders for iv in b if not isinstance(iv.extent, int)
        )
        self.statement_names = frozenset(n for s in prog.statements for n in s.defines)
        # name -> rank of what is defined so far (parameters, then statements in order)
        self.defined: dict[str, int] = {}
        self.shapes: dict[str, tuple] = {}

    # --- the program ---------------------------------------------------------------------------
    def run(self) -> None:
        prog = self.prog
        for p in prog.params:
            if p.name in self.defined:
                raise ProgramError(f"duplicate parameter '{p.name}'", p.loc)
            self.name_ok(p.name, "parameter", p.loc)
            self.defined[p.name] = p.rank
        for s in prog.statements:
            if isinstance(s, Fold):
                self.fold(s)
                continue
            if s.name in self.params:
                raise ProgramError(
                    f"statement '{s.name}' has the name of a parameter (single assignment)", s.loc
                )
            if s.name in self.defined:
                raise ProgramError(
                    f"'{s.name}' is assigned twice (Tensor SSA assigns each name once)", s.loc
                )
            self.name_ok(s.name, "statement", s.loc)
            self.binder(s.indices, s.loc, f"the generators of '{s.name}'")
            self.expr(s.body, {iv.name: iv for iv in s.indices}, s.loc)
            self.defined[s.name] = s.rank
            self.shapes[s.name] = s.shape
        if not prog.outputs:
            raise ProgramError(f"program '{prog.name}' returns nothing")
        for o in prog.outputs:
            loc = getattr(o, "loc", None)
            whole = isinstance(o, Access) and not o.indices and not self.is_relation(o.name)
            if whole and self.rank_of(o.name, loc) > 0:
                continue  # a whole tensor returned: `return y`
            self.expr(o, {}, loc, output=True)

    def fold(self, f: Fold) -> None:
        """A rolled loop: its body is a program of its own, bound to outer names by shape."""
        body = f.body
        try:
            check_program(body)
        except ProgramError as e:
            raise ProgramError(f"in the body '{body.name}' of a fold: {e.message}",
                               e.loc or f.loc) from None
        if not body.returns_tuple:
            raise ProgramError(f"the body '{body.name}' of a fold must return a tuple", f.loc)
        ncarry = len(f.carry)
        if len(body.params) != len(f.inputs):
            raise ProgramError(
                f"the body '{body.name}' of a fold takes {len(body.params)} parameters but the "
                f"fold passes {len(f.inputs)} (carry, scan, const)", f.loc)
        if len(f.names) != len(body.outputs) or len(body.outputs) < ncarry or ncarry == 0:
            raise ProgramError(
                f"a fold over '{body.name}' assigns {len(f.names)} names but its body returns "
                f"{len(body.outputs)} values (at least one state, then per-step outputs)", f.loc)
        if not isinstance(f.trip, int) and f.trip.name not in self.bound_sizes:
            raise ProgramError(f"trip count '{f.trip.name}' of a fold: no parameter shape binds "
                               "it", f.loc)
        for k, (outer, p) in enumerate(zip(f.inputs, body.params, strict=True)):
            self.rank_of(outer, f.loc)
            if self.is_relation(outer) or p.kind == "relation":
                raise ProgramError(f"a fold cannot pass the relation '{outer}'", f.loc)
            shape = self.shape(outer)
            want = p.shape if k < ncarry or k >= ncarry + len(f.scan) else (f.trip, *p.shape)
            if shape != want:
                raise ProgramError(
                    f"fold input '{outer}' has shape [{_dims(shape)}] but the body parameter "
                    f"'{p.name}' needs [{_dims(want)}]", f.loc)
        for k in range(ncarry):
            if f.body_output_shape(k) != body.params[k].shape:
                raise ProgramError(
                    f"the body '{body.name}' returns state {k} of shape "
                    f"[{_dims(f.body_output_shape(k))}] for a state of shape "
                    f"[{_dims(body.params[k].shape)}]", f.loc)
        for n in f.names:
            if n in self.params or n in self.defined:
                raise ProgramError(f"'{n}' is assigned twice (Tensor SSA assigns each name once)",
                                   f.loc)
            self.name_ok(n, "fold result", f.loc)
            self.defined[n] = len(f.result_shape(n))
            self.shapes[n] = f.result_shape(n)

    def shape(self, name: str) -> tuple:
        if name in self.params:
            return self.params[name].shape
        return self.shapes[name]

    def name_ok(self, name: str, what: str, loc: Loc | None) -> None:
        _identifier(name, what, loc)
        if name in RESERVED:
            raise ProgramError(f"{what} name '{name}' is reserved", loc)
        if name in self.all_sizes:
            raise ProgramError(f"{what} '{name}' has the name of a size", loc)

    def binder(self, ivs: tuple[IndexVar, ...], loc: Loc | None, what: str) -> None:
        seen: set[str] = set()
        for iv in ivs:
            if iv.name in seen:
                raise ProgramError(f"duplicate index '{iv.name}' in {what}", loc)
            seen.add(iv.name)
            _identifier(iv.name, "index", loc)
            if iv.name in self.all_sizes:
                raise ProgramError(f"index '{iv.name}' has the name of a size", loc)
            if iv.name in self.params or iv.name in self.statement_names:
                raise ProgramError(f"index '{iv.name}' has the name of a tensor", loc)
            if iv.name in RESERVED:
                raise ProgramError(f"index name '{iv.name}' is reserved", loc)
            if not isinstance(iv.extent, int) and iv.extent.name not in self.bound_sizes:
                raise ProgramError(
                    f"size '{iv.extent.name}' of index '{iv.name}' cannot be matched: "
                    "no parameter shape binds it",
                    loc,
                )

    # --- names ---------------------------------------------------------------------------------
    def is_relation(self, name: str) -> bool:
        p = self.params.get(name)
        return p is not None and p.kind == "relation"

    def rank_of(self, name: str, loc: Loc | None) -> int:
        """Rank of a defined tensor or scalar; errors for everything else that is not one."""
        if name in self.defined:
            return self.defined[name]
        if name in self.statement_names:
            raise ProgramError(f"'{name}' is used before it is defined", loc)
        if name in self.all_sizes:
            raise ProgramError(f"size '{name}' cannot be used as a value", loc)
        if name in self.all_indices:
            raise ProgramError(
                f"index '{name}' cannot be used as a value (compare it in a bracket instead)", loc
            )
        raise ProgramError(f"unknown name '{name}'", loc)

    # --- expressions ---------------------------------------------------------------------------
    def expr(
        self, e: Expr, scope: dict[str, IndexVar], outer: Loc | None, output: bool = False
    ) -> None:
        # a worklist, left to right: expressions may be thousands of nodes deep
        work: list[tuple[Expr, dict[str, IndexVar], Loc | None]] = [(e, scope, outer)]
        while work:
            x, sc, out = work.pop()
            self.node(x, sc, out, output, work)

    def node(
        self, e: Expr, scope: dict[str, IndexVar], outer: Loc | None, output: bool,
        work: list[tuple[Expr, dict[str, IndexVar], Loc | None]],
    ) -> None:
        loc = e.loc if e.loc is not None else outer
        match e:
            case Const(v) | Pow(_, v) if not math.isfinite(v):
                raise ProgramError(f"the constant {v} is not finite", loc)
            case Const():
                return
            case Access(name, idx):
                if self.is_relation(name):
                    raise ProgramError(
                        f"relation '{name}' is used as a value; a relation may only appear "
                        f"as a bracket {name}[...]",
                        loc,
                    )
                rank = self.rank_of(name, loc)
                if rank > 0 and not idx:
                    raise ProgramError(
                        f"tensor '{name}' of rank {rank} is used without indices inside an "
                        "expression (only 'return name' may return a whole tensor)",
                        loc,
                    )
                if len(idx) != rank:
                    raise ProgramError(
                        f"'{name}' has {_indices(rank)} but is accessed with {len(idx)}", loc
                    )
                self.affines(idx, scope, loc, output)
            case Bracket(pred):
                self.pred(pred, scope, loc, output)
            case Binary(_, lhs, rhs):
                work += [(rhs, scope, loc), (lhs, scope, loc)]
            case Neg(arg) | Pow(arg, _):
                work.append((arg, scope, loc))
            case Call(fn, args):
                f = lookup(fn)
                if f is None:
                    raise ProgramError(f"unknown function '{fn}'", loc)
                if len(args) != f.arity:
                    plural = "argument" if f.arity == 1 else "arguments"
                    raise ProgramError(
                        f"'{fn}' takes {f.arity} {plural} but is given {len(args)}", loc
                    )
                work.extend((a, scope, loc) for a in reversed(args))
            case Sum(ivs, body) | Max(ivs, body):
                kind = type(e).__name__
                if not ivs:
                    raise ProgramError(f"{kind} binds no index", loc)
                self.binder(ivs, loc, f"one {kind}")
                work.append((body, {**scope, **{iv.name: iv for iv in ivs}}, loc))
            case _:
                raise ProgramError(f"not an expression: {e!r}", outer)

    def pred(self, p: Pred, scope: dict[str, IndexVar], outer: Loc | None, output: bool) -> None:
        loc = p.loc if p.loc is not None else outer
        match p:
            case Cmp(_, lhs, rhs):
                self.affines((lhs, rhs), scope, loc, output)
            case Rel(name, idx):
                param = self.params.get(name)
                if param is None or param.kind != "relation":
                    if param is not None or name in self.statement_names:
                        raise ProgramError(f"tensor '{name}' is used as a relation", loc)
                    self.rank_of(name, loc)  # raises the precise error for a non-tensor
                    raise ProgramError(f"unknown relation '{name}'", loc)
                if len(idx) != param.rank:
                    raise ProgramError(
                        f"relation '{name}' has {_indices(param.rank)} but is accessed with "
                        f"{len(idx)}",
                        loc,
                    )
                self.affines(idx, scope, loc, output)
            case And(preds):
                if not preds:
                    raise ProgramError("empty conjunction in a bracket", loc)
                for q in preds:
                    self.pred(q, scope, loc, output)
            case _:
                raise ProgramError(f"not a predicate: {p!r}", outer)

    def affines(
        self, affs: Iterable[Affine], scope: dict[str, IndexVar], loc: Loc | None, output: bool
    ) -> None:
        for a in affs:
            for n, _ in a.index:
                if n in scope:
                    continue
                if n in self.params or n in self.statement_names:
                    raise ProgramError(f"tensor '{n}' cannot be used in an index expression", loc)
                if output:
                    raise ProgramError(f"return expression has free index '{n}'", loc)
                if n in self.all_indices:
                    raise ProgramError(
                        f"index '{n}' is used outside the Sum or generator that binds it", loc
                    )
                raise ProgramError(f"unknown name '{n}'", loc)
            for n, _ in a.sizes:
                if n in scope:
                    raise ProgramError(f"size '{n}' has the name of an index in scope", loc)
                if n not in self.bound_sizes:
                    raise ProgramError(
                        f"size '{n}' cannot be matched: no parameter shape binds it", loc
                    )


def _identifier(name: str, what: str, loc: Loc | None) -> None:
    # The printer writes names as they are: they must read back as Python names.
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ProgramError(f"{what} name {name!r} is not a valid identifier", loc)


def _dims(shape: tuple) -> str:
    return ", ".join(dim_str(d) for d in shape)


def _indices(n: int) -> str:
    return "1 index" if n == 1 else f"{n} indices"


def _sum_binders(e: Expr) -> list[tuple[IndexVar, ...]]:
    out: list[tuple[IndexVar, ...]] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Sum | Max):
            out.append(x.indices)
        stack.extend(reversed(children(x)))
    return out


def check_program(prog: Program) -> None:
    """Raise :class:`ProgramError` if ``prog`` is not a well-formed Tensor SSA program."""
    if not isinstance(prog, Program):
        raise TypeError(f"check_program expects a Program, got {type(prog).__name__}")
    _Checker(prog).run()
