"""Forward mode: the tangent program of a Tensor SSA program (jvp).

Each statement ``y[I] = e`` whose value depends on a ``wrt`` input gets a tangent statement
``y_d[I] = D⟦e⟧`` right after it, built by the structural rules (sum, product, quotient and
chain rule; brackets and constants have zero derivative; accesses are linear).

The same transformation with *extra generators* builds a whole family of tangents at once: with
the seed ``dx[K] = [K = M]`` for new indices ``M`` every tangent statement becomes
``y_d[M, I] = ...``, which is how :func:`~eqsat_ad.ad.hessian_program` forms a Hessian without
N one-hot products.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ir.expr import (
    Access,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Max,
    Neg,
    Pow,
    Sum,
    all_index_names,
)
from ..ir.index import Affine, Dim, IndexVar
from ..ir.program import Fold, Param, Program, Statement, Step
from .common import (
    ZERO,
    DifferentiationError,
    Names,
    active_names,
    argmax_weight,
    f_add,
    f_div,
    f_mul,
    f_neg,
    f_pow,
    f_sub,
    f_sum,
    is_tensor_output,
    is_zero,
    normalize_wrt,
    prune,
    transformation,
)
from .derivatives import call_partials

# seed(param name, access indices, extra generator names) -> tangent of param[indices]
Seed = Callable[[str, tuple[Affine, ...], tuple[str, ...]], Expr]


@dataclass(frozen=True)
class _Context:
    seed: Seed
    seeded: frozenset[str]
    tangent_of: dict[str, str]  # statement name -> its tangent statement's name
    extra: tuple[str, ...]  # names of the extra generators of the statement being built
    mode: str  # "jvp" or "vjp": which custom rule a Call uses
    alias: tuple[Expr, Expr] | None = None  # (statement body, its own access): tanh' = 1 - y²


def tangent(e: Expr, ctx: _Context) -> Expr:
    """D⟦e⟧: the directional derivative of ``e`` (trivially folded)."""
    match e:
        case Const() | Bracket():
            return ZERO
        case Access(name, idx):
            if name in ctx.seeded:
                return ctx.seed(name, idx, ctx.extra)
            t = ctx.tangent_of.get(name)
            if t is None:
                return ZERO
            return Access(t, tuple(Affine.var(m) for m in ctx.extra) + idx)
        case Binary(op, a, b):
            da, db = tangent(a, ctx), tangent(b, ctx)
            if op == "+":
                return f_add(da, db)
            if op == "-":
                return f_sub(da, db)
            if op == "*":
                return f_add(f_mul(da, b), f_mul(a, db))
            # d(a/b) = da/b - a·db/b²
            return f_sub(f_div(da, b), f_div(f_mul(a, db), f_pow(b, 2.0)))
        case Neg(a):
            return f_neg(tangent(a, ctx))
        case Pow(base, k):
            db = tangent(base, ctx)
            if is_zero(db):
                return ZERO
            return f_mul(f_mul(Const(k), f_pow(base, k - 1.0)), db)
        case Call(_, args):
            dargs = [tangent(a, ctx) for a in args]
            if all(is_zero(d) for d in dargs):
                return ZERO
            value = ctx.alias[1] if ctx.alias and e is ctx.alias[0] else None
            partials = call_partials(e, ctx.mode, value)
            if partials is None:  # stop_gradient
                return ZERO
            out: Expr = ZERO
            for p, d in zip(partials, dargs, strict=True):
                out = f_add(out, f_mul(p, d))
            return out
        case Sum(ivs, body):
            return f_sum(ivs, tangent(body, ctx), e.loc)
        case Max(ivs, body):
            # the derivative at the arg-max (ties share it equally)
            db = tangent(body, ctx)
            return f_sum(ivs, f_mul(argmax_weight(e), db), e.loc)
    raise TypeError(f"not an expression: {e!r}")


def _statement_index_names(s: Statement) -> set[str]:
    return {iv.name for iv in s.indices} | set(all_index_names(s.body))


def forward_statements(
    prog: Program,
    seeded: Sequence[str],
    seed: Seed,
    extra_dims: tuple[Dim, ...],
    names: Names,
    mode: str = "jvp",
) -> tuple[list[Statement], dict[str, str]]:
    """Primal statements interleaved with their tangent statements.

    Returns the statements and the map from statement name to tangent name. New names are
    taken from ``names``.
    """
    active = active_names(prog, seeded)
    tangent_of: dict[str, str] = {}
    out: list[Step] = []

    def input_tangent(n: str) -> str | None:
        if n in seeded:
            if n not in tangent_of:  # a seeded parameter gets a statement of its own
                gens = _generators(tuple(extra_dims) + tuple(prog.shape_of(n)), names)
                k = len(extra_dims)
                idx = tuple(Affine.var(g.name) for g in gens[k:])
                tangent_of[n] = names.variable(f"{n}_d")
                out.append(Statement(tangent_of[n], gens,
                                     seed(n, idx, tuple(g.name for g in gens[:k]))))
            return tangent_of[n]
        return tangent_of.get(n)

    for s in prog.statements:
        if isinstance(s, Fold):
            if not (s.reads() & active):
                out.append(s)
                continue
            out += tangent_fold(s, prog, input_tangent, tangent_of, names, mode, extra_dims)
            continue
        out.append(s)
        if s.name not in active:
            continue
        extra = tuple(names.pick_indices(len(extra_dims), _statement_index_names(s)))
        own = Access(s.name, tuple(Affine.var(iv.name) for iv in s.indices))
        ctx = _Context(seed, frozenset(seeded), tangent_of, extra, mode, (s.body, own))
        body = tangent(s.body, ctx)
        if is_zero(body):
            continue
        name = names.variable(f"{s.name}_d")
        gens = tuple(IndexVar(m, d) for m, d in zip(extra, extra_dims, strict=True)) + s.indices
        out.append(Statement(name, gens, body, s.loc))
        tangent_of[s.name] = name
    return out, tangent_of


def _generators(shape: Sequence[Dim], names: Names) -> tuple[IndexVar, ...]:
    return tuple(IndexVar(g, d) for g, d in zip(names.pick_indices(len(shape)), shape,
                                                strict=True))


def tangent_fold(
    f: Fold,
    prog: Program,
    input_tangent: Callable[[str], str | None],
    tangent_of: dict[str, str],
    names: Names,
    mode: str,
    extra_dims: tuple[Dim, ...] = (),
) -> list[Step]:
    """The fold that carries tangents along with the states: its body is the body's jvp
    (derived once), its states ``(c, ċ)``, its scans and constants those of ``f`` plus the
    tangents of the active ones. Records the tangents of ``f``'s results in ``tangent_of``.
    ``extra_dims``: a family of tangents (the symbolic Hessian's unit directions) leads every
    tangent's shape; the body's jvp carries the whole family."""
    body, ncarry, nscan = f.body, len(f.carry), len(f.scan)
    fam = tuple(extra_dims)
    new: list[Step] = []
    carry_dots: list[str] = []
    for n, p in zip(f.carry, body.params, strict=False):
        t = input_tangent(n)
        if t is None:  # an inactive initial state: its tangent starts at zero
            t = names.variable(f"{n}_d")
            new.append(Statement(t, _generators(fam + tuple(p.shape), names), ZERO))
        carry_dots.append(t)
    scan_dots = [(k, input_tangent(n)) for k, n in enumerate(f.scan, ncarry)]
    if fam:  # a family's tangent of a scanned array is read step first
        scan_dots = [(k, t if t is None else _steps_first(t, f.scan[k - ncarry], prog, fam,
                                                          names, new)) for k, t in scan_dots]
    const_dots = [(k, input_tangent(n)) for k, n in enumerate(f.const, ncarry + nscan)]
    scan_dots = [(k, t) for k, t in scan_dots if t is not None]
    const_dots = [(k, t) for k, t in const_dots if t is not None]
    wrt = [p.name for p in body.params[:ncarry]]
    wrt += [body.params[k].name for k, _ in scan_dots + const_dots]

    inner = Names(body)
    dot = {n: inner.variable(f"{n}_dot") for n in wrt}

    def seed(name: str, idx: tuple[Affine, ...], extra: tuple[str, ...]) -> Expr:
        return Access(dot[name], tuple(Affine.var(m) for m in extra) + idx)

    stmts, inner_of = forward_statements(body, wrt, seed, fam, inner, mode)
    more, touts = output_tangents(body, wrt, seed, fam, inner_of, inner, mode)

    def param(k: int) -> Param:
        return body.params[k]

    def dparam(k: int) -> Param:
        return Param(dot[param(k).name], fam + tuple(param(k).shape))

    carries = [param(k) for k in range(ncarry)] + [dparam(k) for k in range(ncarry)]
    scans = [param(k) for k in range(ncarry, ncarry + nscan)] + [dparam(k) for k, _ in scan_dots]
    consts = [param(k) for k in range(ncarry + nscan, len(body.params))]
    consts += [dparam(k) for k, _ in const_dots]
    outs = body.outputs[:ncarry] + touts[:ncarry] + body.outputs[ncarry:] + touts[ncarry:]
    jbody = prune(tuple(carries + scans + consts), stmts + more, outs, True, f"{body.name}_jvp")

    result_dots = tuple(names.variable(f"{n}_d") for n in f.names)
    tangent_of.update(zip(f.names, result_dots, strict=True))
    # a family's per-step tangents are stacked step first: read back family first
    stacked = tuple(names.variable(f"{n}_dsteps") for n in f.names[ncarry:]) if fam else \
        result_dots[ncarry:]
    new.append(Fold(
        f.names[:ncarry] + result_dots[:ncarry] + f.names[ncarry:] + stacked,
        f.trip, jbody, f.carry + tuple(carry_dots),
        f.scan + tuple(t for _, t in scan_dots), f.const + tuple(t for _, t in const_dots),
        f.reverse, f.loc))
    for n, raw, d in zip(f.names[ncarry:], stacked, result_dots[ncarry:], strict=True):
        if raw == d:
            continue
        gens = _generators(fam + tuple(f.result_shape(n)), names)
        k = len(fam)
        order = (gens[k], *gens[:k], *gens[k + 1:])  # step, family, the step's own indices
        new.append(Statement(d, gens, Access(raw, tuple(Affine.var(g.name) for g in order)),
                             f.loc))
    return new


def _steps_first(t: str, scanned: str, prog: Program, fam: tuple[Dim, ...], names: Names,
                 new: list[Step]) -> str:
    """A statement holding tangent family ``t`` of array ``scanned`` (family indices first)
    with the step index first, as a fold scans it."""
    shape = tuple(prog.shape_of(scanned))
    k = len(fam)
    gens = _generators((shape[0], *fam, *shape[1:]), names)
    order = (*gens[1:k + 1], gens[0], *gens[k + 1:])  # family, step, the step's own indices
    name = names.variable(f"{t}_steps")
    new.append(Statement(name, gens, Access(t, tuple(Affine.var(g.name) for g in order))))
    return name


def output_tangents(
    prog: Program,
    seeded: Sequence[str],
    seed: Seed,
    extra_dims: tuple[Dim, ...],
    tangent_of: dict[str, str],
    names: Names,
    mode: str = "jvp",
) -> tuple[list[Statement], tuple[Expr, ...]]:
    """Tangents of ``prog``'s outputs, with the statements they need (zero tensors, families)."""
    new: list[Statement] = []
    outs: list[Expr] = []
    for o in prog.outputs:
        if is_tensor_output(prog, o):
            assert isinstance(o, Access)
            shape = prog.shape_of(o.name)
            base = o.name
        else:
            shape = ()
            base = "out"
        gen_names = names.pick_indices(len(extra_dims) + len(shape), all_index_names(o))
        extra, own = tuple(gen_names[: len(extra_dims)]), gen_names[len(extra_dims) :]
        body_primal = Access(o.name, tuple(Affine.var(n) for n in own)) if shape else o
        ctx = _Context(seed, frozenset(seeded), tangent_of, extra, mode)
        body = tangent(body_primal, ctx)
        if not shape and not extra_dims:
            outs.append(body)
            continue
        whole = tuple(Affine.var(n) for n in gen_names)
        if isinstance(body, Access) and body.indices == whole:
            outs.append(Access(body.name))  # already a statement with exactly these generators
            continue
        name = names.variable(f"{base}_d")
        dims = tuple(extra_dims) + tuple(shape)
        gens = tuple(IndexVar(n, d) for n, d in zip(gen_names, dims, strict=True))
        new.append(Statement(name, gens, body))
        outs.append(Access(name))
    return new, tuple(outs)


@transformation
def jvp(prog: Program, wrt: str | Sequence[str]) -> Program:
    """The tangent program of ``prog``: its parameters plus ``<x>_dot`` for each ``x`` in ``wrt``.

    The result returns the tangent of each output (a tuple where ``prog`` returns one) for the
    given input tangents. It is an ordinary Program: print, parse, evaluate or differentiate it.
    """
    if not isinstance(prog, Program):
        raise DifferentiationError(f"jvp expects a Program, got {type(prog).__name__}")
    inputs = normalize_wrt(prog, wrt)
    names = Names(prog)
    dot = {n: names.variable(f"{n}_dot") for n in inputs}
    params = prog.params + tuple(Param(dot[n], prog.param(n).shape) for n in inputs)

    def seed(name: str, idx: tuple[Affine, ...], extra: tuple[str, ...]) -> Expr:
        return Access(dot[name], idx)

    stmts, tangent_of = forward_statements(prog, inputs, seed, (), names)
    more, outputs = output_tangents(prog, inputs, seed, (), tangent_of, names)
    return prune(params, stmts + more, outputs, prog.returns_tuple, f"{prog.name}_jvp")


__all__ = ["Seed", "forward_statements", "jvp", "output_tangents", "tangent"]
