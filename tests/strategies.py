"""Hypothesis strategies: random well-formed Tensor SSA programs and inputs for them.

Every program drawn passes :func:`eqsat_ad.ir.checks.check_program` and round-trips through the
printer and the parser. Programs use the sizes ``N`` and ``M`` (and small integer dimensions 2
and 3), fresh index names (no shadowing), and only operations that stay finite on finite inputs
(division only by non-zero constants or by ``1 + e ** 2``, ``log`` only of ``1 + e ** 2``,
``exp`` only of ``tanh``/``sin`` of something), so reference results can be compared with
tolerances.

``programs(max_statements=3, allow_relations=True, smooth=False, scalar_output=True,
max_depth=3)``
    * ``max_statements``: the program has 0 .. ``max_statements`` statements (tensor statements
      of rank 0..2 with nested sums); every statement is used by the return value when the output
      is scalar.
    * ``allow_relations``: may add a boolean relation parameter ``R`` (rank 1 or 2), read in
      brackets ``R[i, j]``.
    * ``smooth``: only everywhere-differentiable operations (for finite differences): no ``abs``,
      ``max``, ``min`` or ``stop_gradient``; brackets and relations stay, since they depend on
      indices, not on the data. With ``smooth=False`` those four built-ins appear too.
    * ``max_depth``: each statement body and the return expression nest 1 .. ``max_depth``
      operations deep (lower it to keep e-graphs small).
    * ``scalar_output``: return one scalar expression (what ``grad`` needs). Otherwise the return
      is a whole tensor statement (``return y1``), a tuple ``return s, y1`` or ``return (s,)``.

Accesses come in the shapes the optimizer must handle: plain ``x[i]``, shifted ``x[i + 1]`` and
``x[i - 1]``, reversed ``x[N - 1 - i]``, strided ``x[2*i]``, halved ``x[i/2]``, differences
``x[i - j]``, diagonal ``A[i, i]`` and constant ``x[0]`` / ``x[N - 1]``. Brackets compare index
expressions with ``== != < <= > >=`` and conjunctions of them.

``sizes_strategy()`` draws a binding of the size names; ``random_inputs(prog, sizes, rng)``
makes arguments for a program (floats in [-1, 1], relations as boolean arrays);
``tensor_params(prog)`` names the parameters one can differentiate with respect to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from eqsat_ad.ir import (
    Access,
    Affine,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Dim,
    Expr,
    IndexVar,
    Neg,
    Param,
    Pow,
    Pred,
    Program,
    Rel,
    Statement,
    Sum,
    dim_value,
)
from eqsat_ad.ir.index import size

SIZE_NAMES = ("N", "M")
_INDEX_POOL = "ijklpqrs"
_TENSOR_NAMES = {0: ("a", "b", "c"), 1: ("x", "u", "v"), 2: ("A", "B", "C")}
_CONSTANTS = (0.5, 1.0, 2.0, 3.0, -1.0, -0.5, 1.5)


def sizes_strategy(
    names: tuple[str, ...] = SIZE_NAMES, min_value: int = 1, max_value: int = 4
) -> st.SearchStrategy[dict[str, int]]:
    """A binding ``{"N": 3, "M": 1}`` of size names to small values."""
    return st.fixed_dictionaries({n: st.integers(min_value, max_value) for n in names})


def random_inputs(
    prog: Program, sizes: Mapping[str, int], rng: np.random.Generator
) -> dict[str, np.ndarray | float]:
    """Arguments for ``prog``: floats uniform in [-1, 1], relations as boolean arrays.

    A rank-0 tensor parameter gets a Python float.
    """
    missing = [n for n in prog.size_names() if n not in sizes]
    if missing:
        raise ValueError(f"no value for the sizes {missing}")
    out: dict[str, np.ndarray | float] = {}
    for p in prog.params:
        shape = tuple(dim_value(d, sizes) for d in p.shape)
        if p.kind == "relation":
            out[p.name] = rng.random(shape) < 0.5
        elif not shape:
            out[p.name] = float(rng.uniform(-1.0, 1.0))
        else:
            out[p.name] = rng.uniform(-1.0, 1.0, shape)
    return out


def tensor_params(prog: Program) -> tuple[str, ...]:
    """Names of the float (non-relation) parameters: the valid ``wrt`` choices."""
    return tuple(p.name for p in prog.params if p.kind == "tensor")


# ================================================================================================
# Program generation
# ================================================================================================


@dataclass
class _Gen:
    draw: st.DrawFn
    smooth: bool
    dims: tuple[Dim, ...]  # extents available to generators and sums
    tensors: dict[str, tuple[Dim, ...]]  # readable tensors/scalars -> shape
    relations: dict[str, tuple[Dim, ...]]
    next_index: int = 0
    used: set[str] = field(default_factory=set)  # names read by the expression being built
    used_by_output: set[str] = field(default_factory=set)  # names the return value reads

    def pick[T](self, options: tuple[T, ...] | list[T]) -> T:
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        # integers() shrinks toward 0, i.e. toward "no": simpler programs when shrinking
        return self.draw(st.integers(0, 999)) >= 1000 * (1 - p)

    def fresh(self) -> str:
        k = self.next_index
        self.next_index += 1
        base = _INDEX_POOL[k % len(_INDEX_POOL)]
        return base if k < len(_INDEX_POOL) else f"{base}{k // len(_INDEX_POOL)}"

    def binder(self, lo: int, hi: int) -> tuple[IndexVar, ...]:
        n = self.draw(st.integers(lo, hi))
        return tuple(IndexVar(self.fresh(), self.pick(self.dims)) for _ in range(n))

    # --- index expressions ---------------------------------------------------------------------
    def index_for(self, d: Dim, scope: tuple[IndexVar, ...]) -> Affine:
        """An index expression for a dimension of extent ``d``."""
        if not scope or self.chance(0.12):
            return self.constant_index(d)
        same = [iv for iv in scope if iv.extent == d]
        iv = self.pick(same) if same and self.chance(0.8) else self.pick(scope)
        i = Affine.var(iv.name)
        kind = self.pick(
            ("plain", "plain", "plain", "shift+", "shift-", "reverse", "stride", "half", "diff")
        )
        match kind:
            case "shift+":
                return i + 1
            case "shift-":
                return i - 1
            case "reverse":
                return Affine.of_dim(d) - 1 - i
            case "stride":
                return i.scale(2)
            case "half":
                return i.scale(Fraction(1, 2))
            case "diff" if len(scope) > 1:
                other = self.pick([v for v in scope if v.name != iv.name])
                return i - Affine.var(other.name)
        return i

    def constant_index(self, d: Dim) -> Affine:
        if self.chance(0.3):
            return Affine.of_dim(d) - 1  # the last element
        return Affine.constant(self.pick((0, 0, 1)))

    def indices_for(
        self, shape: tuple[Dim, ...], scope: tuple[IndexVar, ...]
    ) -> tuple[Affine, ...]:
        idx = tuple(self.index_for(d, scope) for d in shape)
        if len(shape) == 2 and scope and self.chance(0.15):
            return (idx[0], idx[0])  # a diagonal access A[i, i]
        return idx

    # --- predicates ----------------------------------------------------------------------------
    def cmp(self, scope: tuple[IndexVar, ...]) -> Cmp:
        op = self.pick(("==", "==", "!=", "<", "<=", ">", ">="))
        if not scope:
            d = self.pick(self.dims)
            return Cmp(op, Affine.constant(self.pick((0, 1, 2))), Affine.of_dim(d))
        iv = self.pick(scope)
        i = Affine.var(iv.name)
        shape = self.pick(("index", "const", "bound", "shifted-bound", "stride"))
        match shape:
            case "index" if len(scope) > 1:
                other = self.pick([v for v in scope if v.name != iv.name])
                return Cmp(op, i, Affine.var(other.name))
            case "bound":
                return Cmp(op, i, Affine.of_dim(iv.extent) - 1)
            case "shifted-bound":
                return Cmp(op, i + 1, Affine.of_dim(iv.extent))
            case "stride":
                return Cmp(op, i.scale(2), Affine.of_dim(iv.extent))
        return Cmp(op, i, Affine.constant(self.pick((0, 1, 2))))

    def pred(self, scope: tuple[IndexVar, ...]) -> Pred:
        if self.relations and self.chance(0.3):
            name = self.pick(sorted(self.relations))
            return Rel(name, self.indices_for(self.relations[name], scope))
        if self.chance(0.25):
            return And((self.cmp(scope), self.cmp(scope)))
        return self.cmp(scope)

    # --- expressions ---------------------------------------------------------------------------
    def leaf(self, scope: tuple[IndexVar, ...]) -> Expr:
        if self.tensors and not self.chance(0.15):
            name = self.pick(sorted(self.tensors))
            self.used.add(name)
            return Access(name, self.indices_for(self.tensors[name], scope))
        return Const(self.pick(_CONSTANTS))

    def positive(self, scope: tuple[IndexVar, ...], depth: int) -> Expr:
        """``1 + e ** 2``: a denominator (or log/sqrt argument) that is at least 1."""
        return Binary("+", Const(1.0), Pow(self.expr(scope, depth), 2.0))

    def call(self, scope: tuple[IndexVar, ...], depth: int) -> Expr:
        fns = ["sin", "cos", "tanh", "sigmoid", "exp", "log", "sqrt"]
        if not self.smooth:
            fns += ["abs", "max", "min", "stop_gradient"]
        fn = self.pick(fns)
        match fn:
            case "exp":
                return Call("exp", (Call(self.pick(("tanh", "sin")), (self.expr(scope, depth),)),))
            case "log" | "sqrt":
                return Call(fn, (self.positive(scope, depth),))
            case "max" | "min":
                return Call(fn, (self.expr(scope, depth), self.expr(scope, depth)))
        return Call(fn, (self.expr(scope, depth),))

    def expr(self, scope: tuple[IndexVar, ...], depth: int) -> Expr:
        if depth <= 0:
            return self.leaf(scope)
        d = depth - 1
        kind = self.pick(
            (
                "leaf",
                "binary",
                "binary",
                "binary",
                "bracket",
                "bracket",
                "sum",
                "sum",
                "call",
                "pow",
                "neg",
                "div",
            )
        )
        match kind:
            case "binary":
                return Binary(
                    self.pick(("+", "-", "*", "*")), self.expr(scope, d), self.expr(scope, d)
                )
            case "bracket":
                b = Bracket(self.pred(scope))
                if self.chance(0.15):
                    return b
                e = self.expr(scope, d)
                return Binary("*", b, e) if self.chance(0.7) else Binary("*", e, b)
            case "sum":
                ivs = self.binder(1, 2)
                return Sum(ivs, self.expr(scope + ivs, d))
            case "call":
                return self.call(scope, d)
            case "pow":
                if self.chance(0.3):
                    return Pow(self.positive(scope, d), self.pick((-1.0, 0.5)))
                return Pow(self.expr(scope, d), self.pick((2.0, 2.0, 3.0)))
            case "neg":
                return Neg(self.expr(scope, d))
            case "div":
                if self.chance(0.5):
                    return Binary("/", self.expr(scope, d), Const(self.pick((2.0, 4.0, -2.5))))
                return Binary("/", self.expr(scope, d), self.positive(scope, d))
        return self.leaf(scope)


def _params(gen: _Gen, allow_relations: bool) -> tuple[Param, ...]:
    draw = gen.draw
    dim_pool: tuple[Dim, ...] = (size("N"), size("N"), size("M"), 2, 3)
    params: list[Param] = []
    taken: dict[int, int] = {0: 0, 1: 0, 2: 0}
    for k in range(draw(st.integers(1, 3))):
        # the first parameter is a tensor, so there is always something to index
        rank = draw(st.integers(1, 2)) if k == 0 else draw(st.integers(0, 2))
        name = _TENSOR_NAMES[rank][taken[rank]]
        taken[rank] += 1
        params.append(Param(name, tuple(gen.pick(dim_pool) for _ in range(rank))))
    if allow_relations and gen.chance(0.4):
        shape = tuple(gen.pick(dim_pool[:3]) for _ in range(draw(st.integers(1, 2))))
        params.append(Param("R", shape, "relation"))
    return tuple(params)


def _use_all(gen: _Gen, out: Expr, statements: list[Statement]) -> Expr:
    """Add a term for every statement nothing reads, so each one reaches the output."""
    read: set[str] = set()
    for s in statements:
        read |= s.reads()
    for s in statements:
        if s.name in read or s.name in gen.used_by_output:
            continue
        ivs = tuple(IndexVar(gen.fresh(), iv.extent) for iv in s.indices)
        term: Expr = Access(s.name, tuple(Affine.var(iv.name) for iv in ivs))
        if gen.chance(0.5):
            term = Pow(term, 2.0)
        out = Binary("+", out, Sum(ivs, term) if ivs else term)
    return out


@st.composite
def programs(
    draw: st.DrawFn,
    max_statements: int = 3,
    allow_relations: bool = True,
    smooth: bool = False,
    scalar_output: bool = True,
    max_depth: int = 3,
) -> Program:
    """A random well-formed program (see the module docstring for the knobs)."""
    gen = _Gen(draw, smooth, (), {}, {})
    params = _params(gen, allow_relations)
    sizes = [d for d in dict.fromkeys(d for p in params for d in p.shape) if not isinstance(d, int)]
    gen.dims = (*sizes, *sizes, 2, 3)  # bound sizes (weighted) and small constants
    gen.tensors = {p.name: p.shape for p in params if p.kind == "tensor"}
    gen.relations = {p.name: p.shape for p in params if p.kind == "relation"}

    statements: list[Statement] = []
    for k in range(draw(st.integers(0, max_statements))):
        gens = gen.binder(0, 2)
        body = gen.expr(gens, draw(st.integers(1, max(1, max_depth))))
        statements.append(Statement(f"y{k + 1}", gens, body))
        gen.tensors[f"y{k + 1}"] = tuple(iv.extent for iv in gens)

    gen.used = set()
    scalar = gen.expr((), draw(st.integers(1, max(1, max_depth))))
    gen.used_by_output = set(gen.used)
    if scalar_output:
        return Program(params, tuple(statements), (_use_all(gen, scalar, statements),))
    tensors = [s for s in statements if s.rank > 0]
    shape = draw(st.sampled_from(("tensor", "pair", "single")))
    if shape != "single" and tensors:
        whole = Access(gen.pick(tensors).name)
        if shape == "tensor":
            return Program(params, tuple(statements), (whole,))
        return Program(params, tuple(statements), (scalar, whole), returns_tuple=True)
    return Program(params, tuple(statements), (scalar,), returns_tuple=True)


def equality_sums(prog: Program) -> int:
    """How many ``Sum`` s of ``prog`` hold an equality bracket on one of their own indices (the
    naive adjoint writes one per indexing operation; sum elimination removes them). Counting
    the written program: the backend solves such a bracket while lowering either way."""
    from eqsat_ad.ir.expr import And, Bracket, Cmp, Sum, children

    def eqs(p) -> set[str]:
        if isinstance(p, And):
            return set().union(*(eqs(q) for q in p.preds))
        if isinstance(p, Cmp) and p.op == "==":
            return set(p.lhs.free_indices() | p.rhs.free_indices())
        return set()

    def brackets(e) -> set[str]:
        out = eqs(e.pred) if isinstance(e, Bracket) else set()
        for c in children(e):
            out |= brackets(c)
        return out

    def count(e) -> int:
        n = sum(count(c) for c in children(e))
        if isinstance(e, Sum) and {iv.name for iv in e.indices} & brackets(e.body):
            n += 1
        return n

    return sum(count(s.body) for s in prog.statements) + sum(count(o) for o in prog.outputs)
