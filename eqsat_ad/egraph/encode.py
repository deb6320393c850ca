"""Encode a whole Tensor SSA program as an egglog program (text).

Index variables become i64 ids chosen *by position*: generator ``p`` of extent ``N`` of any
statement is the same id, a sum binder at nesting level ``l`` with extent ``N`` is the same id, so
alpha-equivalent terms are equal terms and end in one e-class (k copies of ``Sum[i](A[i, i])``
merge). Sizes are negative ids. Affine expressions are written in canonical form (sorted ids,
BigRat coefficients), the form the prelude's arithmetic rules keep them in.

Every statement body gets a ``let``; an access ``y[a]`` to a statement variable is unioned with
``y``'s body with the generators replaced by ``a`` (inlining), so extraction can choose between
reading a materialized ``y`` and recomputing it in place. Inlining is offered only where ``y`` is
read once or its body is cheap (see ``inlinable``): the decoded program is a tree, so inlining a
statement read k times copies its body k times, and a chain of such statements (an unrolled
loop) would decode to an exponentially large program.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

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
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    children,
    substitute,
)
from ..ir.index import Affine, Dim, IndexVar, dim_str
from ..ir.outline import outline
from ..ir.program import Program, Statement

# Inlined copies allowed per program: a long chain of statements each using the previous one
# several times would otherwise encode exponentially many copies.
MAX_INLINES = 600
# A statement read more than once is offered for inlining only if its reads times the size of its
# body (inlinable reads in it counted at their own size) is at most this many nodes, or its body
# is cheap: the copies inlining can add to the decoded program stay linear in its size.
INLINE_BUDGET = 24
# a body of at most this many nodes of additions, products, negations, constants, accesses and
# brackets (no sums, calls, divisions or powers) costs no more to copy than to read
CHEAP_NODES = 5


def read_counts(prog: Program) -> dict[str, int]:
    """How often each statement variable is read (syntactically) in ``prog``."""
    names = {s.name for s in prog.statements}
    counts = dict.fromkeys(names, 0)
    stack: list[Expr] = [s.body for s in prog.statements] + list(prog.outputs)
    while stack:
        e = stack.pop()
        if isinstance(e, Access) and e.name in names:
            counts[e.name] += 1
        stack.extend(children(e))
    return counts


def is_cheap(body: Expr) -> bool:
    """A body small enough and free of sums and calls, so that copying it at every read is no
    worse than reading a materialized tensor."""
    n = 0
    stack = [body]
    while stack:
        e = stack.pop()
        n += 1
        if n > CHEAP_NODES or isinstance(e, Sum | Max | Call | Pow) or (
            isinstance(e, Binary) and e.op == "/"
        ):
            return False
        stack.extend(children(e))
    return True


def _weight(body: Expr, weight: dict[str, int]) -> int:
    """Nodes of ``body`` with every read of an inlinable statement counted at its weight."""
    n = 0
    stack = [body]
    while stack:
        e = stack.pop()
        n += weight.get(e.name, 1) if isinstance(e, Access) else 1
        stack.extend(children(e))
    return n


def inlinable(prog: Program) -> frozenset[str]:
    """The statements whose reads the encoder offers to inline: read once, cheap, or small
    enough for their reads (``INLINE_BUDGET``)."""
    counts = read_counts(prog)
    weight: dict[str, int] = {}
    for s in prog.statements:
        w = _weight(s.body, weight)
        if counts[s.name] <= 1 or is_cheap(s.body) or counts[s.name] * w <= INLINE_BUDGET:
            weight[s.name] = w
    return frozenset(weight)


@dataclass
class IdTable:
    """The numbering of index variables (ids >= 0) and sizes (ids < 0)."""

    ids: dict[tuple, int] = field(default_factory=dict)
    extent: dict[int, Dim] = field(default_factory=dict)
    role: dict[int, tuple] = field(default_factory=dict)
    size_ids: dict[str, int] = field(default_factory=dict)

    def gen(self, pos: int, extent: Dim) -> int:
        return self._index(("gen", pos, dim_str(extent)), extent)

    def binder(self, level: int, extent: Dim) -> int:
        return self._index(("sum", level, dim_str(extent)), extent)

    def _index(self, key: tuple, extent: Dim) -> int:
        if key not in self.ids:
            i = len(self.ids)
            self.ids[key] = i
            self.extent[i] = extent
            self.role[i] = key
        return self.ids[key]

    def size(self, name: str) -> int:
        if name not in self.size_ids:
            self.size_ids[name] = -1 - len(self.size_ids)
        return self.size_ids[name]

    @property
    def size_names(self) -> dict[int, str]:
        return {v: k for k, v in self.size_ids.items()}


def rat(c: Fraction) -> str:
    return f"(bigrat (bigint {c.numerator}) (bigint {c.denominator}))"


def f64(v: float) -> str:
    text = repr(float(v))
    if "inf" in text or "nan" in text:
        raise ProgramError(f"the optimizer cannot encode the constant {v}")
    return text if any(ch in text for ch in ".e") else text + ".0"


def lin_terms(a: Affine, env: dict[str, int], ids: IdTable) -> tuple[tuple[int, Fraction], ...]:
    """The canonical (id, coefficient) list of an affine expression in scope ``env``."""
    terms: dict[int, Fraction] = {}
    for name, c in a.index:
        if name not in env:
            raise ProgramError(f"index {name!r} is not bound here")
        terms[env[name]] = terms.get(env[name], Fraction(0)) + c
    for name, c in a.sizes:
        i = ids.size(name)
        terms[i] = terms.get(i, Fraction(0)) + c
    return tuple(sorted((i, c) for i, c in terms.items() if c != 0))


def lin_text(terms: tuple[tuple[int, Fraction], ...], const: Fraction) -> str:
    out = f"(LNil {rat(const)})"
    for i, c in reversed(terms):
        out = f"(LTerm {i} {rat(c)} {out})"
    return out


def dim_lin(d: Dim, ids: IdTable) -> str:
    return lin_text((), Fraction(d)) if isinstance(d, int) else lin_text(
        ((ids.size(d.name), Fraction(1)),), Fraction(0)
    )


@dataclass
class Encoded:
    """An egglog program for a Tensor SSA program, and what decoding needs to read it back."""

    program: Program
    ids: IdTable
    text: str
    body_let: dict[str, str]
    """statement name -> let name of its body's e-class"""
    output_let: tuple[str | None, ...]
    """per output: let name of its e-class, or None for a bare tensor output ``Access(name)``"""
    gen_ids: dict[str, tuple[int, ...]]
    inlinable: frozenset[str] | None = None
    """the statements whose reads were offered for inlining (None: all of them)"""


class _Encoder:
    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.ids = IdTable()
        self.stmts: dict[str, Statement] = {s.name: s for s in prog.statements}
        self.inlinable = inlinable(prog)
        self.lines: list[str] = []
        self.inlined: set[str] = set()
        self.inlines = 0
        self._current: str | None = None

    # --- affine and predicates --------------------------------------------------------------
    def lin(self, a: Affine, env: dict[str, int]) -> str:
        return lin_text(lin_terms(a, env, self.ids), a.const)

    def il(self, idx: tuple[Affine, ...], env: dict[str, int]) -> str:
        out = "(INil)"
        for a in reversed(idx):
            out = f"(ICons {self.lin(a, env)} {out})"
        return out

    def cmp(self, p: Cmp, env: dict[str, int]) -> str:
        op = p.op
        if op in ("<", "<="):
            diff, op = p.rhs - p.lhs, ">" if op == "<" else ">="
        else:
            diff = p.lhs - p.rhs
        terms = lin_terms(diff, env, self.ids)
        const = diff.const
        if op in ("==", "!=") and (terms[0][1] < 0 if terms else const < 0):
            terms = tuple((i, -c) for i, c in terms)
            const = -const
        ctor = {"==": "Eq", "!=": "Ne", ">": "Gt", ">=": "Ge"}[op]
        return f"({ctor} {lin_text(terms, const)})"

    def brackets(self, p: Pred, env: dict[str, int]) -> list[str]:
        if isinstance(p, And):
            return [b for q in p.preds for b in self.brackets(q, env)]
        if isinstance(p, Cmp):
            return [f"(Br {self.cmp(p, env)})"]
        if isinstance(p, Rel):
            return [f'(Br (Rel "{p.name}" {self.il(p.indices, env)}))']
        raise ProgramError(f"unknown predicate {p!r}")

    # --- expressions ------------------------------------------------------------------------
    def expr(self, e: Expr, env: dict[str, int], level: int) -> str:
        match e:
            case Const(v):
                return f"(Num {f64(v)})"
            case Access(name, idx):
                text = f'(Acc "{name}" {self.il(idx, env)})'
                if name in self.stmts:
                    self.inline(name, idx, text, env, level, e)
                return text
            case Bracket(p):
                parts = self.brackets(p, env)
                out = parts[-1]
                for b in reversed(parts[:-1]):
                    out = f"(Mul {b} {out})"
                return out
            case Binary(op, lhs, rhs):
                a, b = self.expr(lhs, env, level), self.expr(rhs, env, level)
                if op == "+":
                    return f"(Add {a} {b})"
                if op == "-":
                    return f"(Add {a} (Mul (Num -1.0) {b}))"
                if op == "*":
                    return f"(Mul {a} {b})"
                return f"(Div {a} {b})"
            case Neg(arg):
                return f"(Mul (Num -1.0) {self.expr(arg, env, level)})"
            case Pow(base, k):
                return f"(Pow {self.expr(base, env, level)} {f64(k)})"
            case Call(fn, args):
                parts = [self.expr(a, env, level) for a in args]
                if len(parts) == 1:
                    return f'(Call1 "{fn}" {parts[0]})'
                if len(parts) == 2:
                    return f'(Call2 "{fn}" {parts[0]} {parts[1]})'
                raise ProgramError(f"the optimizer supports functions of 1 or 2 arguments: {fn}")
            case Sum(ivs, body):
                return self.sum(list(ivs), body, env, level)
            case Max(ivs, body):
                return self.sum(list(ivs), body, env, level, "Max")
        raise ProgramError(f"not an expression: {e!r}")

    def sum(self, ivs: list[IndexVar], body: Expr, env: dict[str, int], level: int,
            head: str = "Sum") -> str:
        """A sum (``head`` Max: a max-reduction) over several indices as nested ones of one."""
        if not ivs:
            return self.expr(body, env, level)
        iv = ivs[0]
        j = self.ids.binder(level, iv.extent)
        inner = self.sum(ivs[1:], body, {**env, iv.name: j}, level + 1, head)
        return f"({head} {j} {dim_lin(iv.extent, self.ids)} {inner})"

    def inline(
        self, name: str, idx: tuple[Affine, ...], text: str, env: dict[str, int], level: int,
        at: Access,
    ) -> None:
        key = f"{text}@{level}"
        stmt = self.stmts[name]
        if len(idx) != stmt.rank:
            raise ProgramError(
                f"{name} has {stmt.rank} indices but is accessed with {len(idx)}", at.loc
            )
        if key in self.inlined or self.inlines >= MAX_INLINES or name not in self.inlinable:
            return
        if not all(a.is_integral() for a in idx):
            return  # y[k/2] reads 0 at odd k, where y's body need not vanish: keep the read
        self.inlined.add(key)
        self.inlines += 1
        body = substitute(stmt.body, {iv.name: a for iv, a in zip(stmt.indices, idx, strict=True)})
        # an out-of-range read is 0: the inlined body is guarded by 0 <= a < extent
        inlined = self.expr(body, env, level)
        for iv, a in reversed(list(zip(stmt.indices, idx, strict=True))):
            lo = self.cmp(Cmp(">=", a, Affine.constant(0)), env)
            hi = self.cmp(Cmp("<", a, Affine.of_dim(iv.extent)), env)
            inlined = f"(Mul (Br {lo}) (Mul (Br {hi}) {inlined}))"
        self.lines.append(f"(union {text} {inlined})")

    # --- program ----------------------------------------------------------------------------
    def encode(self) -> Encoded:
        for param in self.prog.params:
            for d in param.shape:
                if not isinstance(d, int):
                    self.ids.size(d.name)
        body_let: dict[str, str] = {}
        gen_ids: dict[str, tuple[int, ...]] = {}
        for k, s in enumerate(self.prog.statements):
            gens = tuple(self.ids.gen(p, iv.extent) for p, iv in enumerate(s.indices))
            env = {iv.name: g for iv, g in zip(s.indices, gens, strict=True)}
            gen_ids[s.name] = gens
            body_let[s.name] = f"$s{k}"
            self.lines.append(f"(let $s{k} {self.expr(s.body, env, 0)})")
        outs: list[str | None] = []
        for k, o in enumerate(self.prog.outputs):
            if isinstance(o, Access) and not o.indices and o.name in self.stmts and (
                self.stmts[o.name].rank > 0
            ):
                outs.append(None)
                continue
            outs.append(f"$o{k}")
            self.lines.append(f"(let $o{k} {self.expr(o, {}, 0)})")
        facts = [
            f"(set (extent {i}) {dim_lin(d, self.ids)})" for i, d in sorted(self.ids.extent.items())
        ] + [f"(gen-index {i})" for i, r in sorted(self.ids.role.items()) if r[0] == "gen"] + [
            f'(param-tensor "{p.name}")' for p in self.prog.params if p.kind == "tensor"
        ] + [
            f"(binder {i} {dim_lin(self.ids.extent[i], self.ids)})"
            for i, r in sorted(self.ids.role.items()) if r[0] == "sum"
        ]
        text = "\n".join(facts + self.lines) + "\n"
        return Encoded(
            self.prog, self.ids, text, body_let, tuple(outs), gen_ids, self.inlinable
        )


def encode_program(prog: Program) -> Encoded:
    """The egglog text of ``prog`` (to run after the prelude and the rule files); deep
    expressions are outlined first (``Encoded.program`` is the program encoded)."""
    return _Encoder(outline(prog)).encode()
