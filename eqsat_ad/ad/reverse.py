"""Reverse mode: the adjoint program of a Tensor SSA program (vjp), purely functional.

Derivation (docs/design.md): for a statement ``y[I] = e`` write the derivative as a sum of linear
terms ``D⟦e⟧ = Σ_t Σ_{J_t} c_t(I, J_t) · dx_t[a_t(I, J_t)]`` (pushing D through ``+ - * /``,
powers, calls and sums). The inner product ``⟨dy, ȳ⟩ = Σ_I ȳ[I] · D⟦e⟧`` then reads, after
writing each access as ``dx[a] = Σ_K [K = a] · dx[K]`` and exchanging sums,

    x̄[K] += Σ_I Σ_J [K = a(I, J)] · ȳ[I] · c(I, J)

— the "flip" of the statement: the accessed tensor's indices become generators, the statement's
generators and sums become sums, and the access turns into an Iverson bracket. All
contributions to one variable form ONE adjoint statement ``x_bar[K] = term₁ + term₂ + ...``
that is complete before it is propagated further (statements are visited in reverse), so there is
no ``+=`` and no mutation. Relations sit inside brackets and never get an adjoint.

The only simplification made here is the trivial sum elimination ``Σ_v [K = v] f(v) = f(K)``
where a bracket component is a plain summed index of the same extent (``[k = i]`` with ``i``
summed); everything else is left to the optimizer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

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
    accessed_names,
    all_index_names,
    fresh_name,
    rename,
    substitute,
)
from ..ir.index import Affine, Dim, IndexVar
from ..ir.program import Fold, Param, Program, Statement, Step
from .common import (
    ONE,
    ZERO,
    DifferentiationError,
    Names,
    active_names,
    argmax_weight,
    bracket,
    deshadow,
    eq_pred,
    f_add,
    f_div,
    f_mul,
    f_neg,
    f_pow,
    f_product,
    f_sum,
    is_tensor_output,
    is_zero,
    normalize_wrt,
    prune,
    transformation,
)
from .derivatives import call_partials


@dataclass(frozen=True)
class Term:
    """``Σ_binders coeff · d<name>[index]``: one linear term of a derivative."""

    binders: tuple[IndexVar, ...]
    coeff: Expr
    name: str
    index: tuple[Affine, ...]

    def scaled(self, factor: Expr, right: bool = True) -> Term | None:
        c = f_mul(self.coeff, factor) if right else f_mul(factor, self.coeff)
        return None if is_zero(c) else Term(self.binders, c, self.name, self.index)


def _scale(terms: list[Term], factor: Expr, right: bool = True) -> list[Term]:
    out = []
    for t in terms:
        s = t.scaled(factor, right)
        if s is not None:
            out.append(s)
    return out


class Linearizer:
    """Collects the linear terms of D⟦e⟧ with respect to the ``active`` variables.

    Sums are lifted out of the terms; their binders are renamed where they would clash with a
    name already bound around the term (``taken``), so the lifted binders of one statement are
    distinct.
    """

    def __init__(
        self,
        active: set[str],
        taken: set[str],
        mode: str = "vjp",
        alias: tuple[Expr, Expr] | None = None,
    ) -> None:
        self.active = active
        self.taken = set(taken)
        self.mode = mode
        # (statement body, the statement's own access): lets tanh' read 1 - y² instead of
        # recomputing tanh of the whole body.
        self.alias = alias

    def terms(self, e: Expr) -> list[Term]:
        match e:
            case Const() | Bracket():
                return []
            case Access(name, idx):
                return [Term((), ONE, name, idx)] if name in self.active else []
            case Binary("+", a, b):
                return self.terms(a) + self.terms(b)
            case Binary("-", a, b):
                return self.terms(a) + _scale(self.terms(b), Const(-1.0))
            case Binary("*", a, b):
                return _scale(self.terms(a), b) + _scale(self.terms(b), a, right=False)
            case Binary("/", a, b):
                # d(a/b) = da / b - (a / b²) db
                left = [
                    Term(t.binders, f_div(t.coeff, b), t.name, t.index) for t in self.terms(a)
                ]
                return left + _scale(self.terms(b), f_neg(f_div(a, f_pow(b, 2.0))))
            case Neg(a):
                return _scale(self.terms(a), Const(-1.0))
            case Pow(base, k):
                inner = self.terms(base)
                if not inner:
                    return []
                return _scale(inner, f_mul(Const(k), f_pow(base, k - 1.0)))
            case Call(_, args):
                per_arg = [self.terms(a) for a in args]
                if not any(per_arg):
                    return []
                value = self.alias[1] if self.alias and e is self.alias[0] else None
                partials = call_partials(e, self.mode, value)
                if partials is None:  # stop_gradient
                    return []
                out: list[Term] = []
                for p, ts in zip(partials, per_arg, strict=True):
                    out += _scale(ts, p)
                return out
            case Max(ivs, body):
                # D⟦Max_J b⟧ = Σ_J w(J) · D⟦b⟧(J): the cotangent goes to the arg-max (split
                # equally among ties), x̄[j] = [b(j) == m] · ȳ / count
                return self.lift(ivs, body, weighted=True)
            case Sum(ivs, body):
                return self.lift(ivs, body)
        raise TypeError(f"not an expression: {e!r}")


    def lift(self, ivs: tuple[IndexVar, ...], body: Expr, weighted: bool = False) -> list[Term]:
        """The terms of ``Sum[ivs](body)`` (of ``Max[ivs](body)`` when ``weighted``), with the
        binders lifted out of the terms."""
        renames: dict[str, str] = {}
        lifted: list[IndexVar] = []
        avoid = self.taken | set(all_index_names(body))
        for iv in ivs:
            name = iv.name
            if name in self.taken:
                name = fresh_name(name, avoid)
                renames[iv.name] = name
            avoid.add(name)
            self.taken.add(name)
            lifted.append(IndexVar(name, iv.extent))
        if renames:
            body = rename(body, renames)
        terms = self.terms(body)
        if weighted and terms:
            terms = _scale(terms, argmax_weight(Max(tuple(lifted), body)), right=False)
        return [Term(tuple(lifted) + t.binders, t.coeff, t.name, t.index) for t in terms]


@dataclass(frozen=True)
class Contribution:
    """``Σ_{gens} Σ_{term.binders} [K = term.index] · cotangent · term.coeff``."""

    gens: tuple[IndexVar, ...]
    term: Term
    cotangent: Expr


def flip(targets: Sequence[IndexVar], c: Contribution) -> Expr:
    """One contribution to an adjoint with generators ``targets`` (the K of the docstring)."""
    knames = {k.name for k in targets}
    binders = list(c.gens) + list(c.term.binders)
    comps = list(c.term.index)
    factors = [c.cotangent, c.term.coeff]
    # Summed indices must not capture the adjoint's own generators.
    clash = [b for b in binders if b.name in knames]
    if clash:
        avoid = knames | {b.name for b in binders}
        for f in factors:
            avoid |= all_index_names(f)
        mapping: dict[str, str] = {}
        for b in clash:
            mapping[b.name] = fresh_name(b.name, avoid)
            avoid.add(mapping[b.name])
        binders = [IndexVar(mapping.get(b.name, b.name), b.extent) for b in binders]
        comps = [a.rename(mapping) for a in comps]
        factors = [rename(f, mapping) for f in factors]
    # Trivial sum elimination: Σ_v [k = v] f(v) = f(k) when v and k range over the same extent.
    for d, k in enumerate(targets):
        v = comps[d].as_var()
        match = [b for b in binders if b.name == v]
        if match and match[0].extent == k.extent:
            binders.remove(match[0])
            sub = {match[0].name: Affine.var(k.name)}
            comps = [a.substitute(sub) for a in comps]
            factors = [substitute(f, sub) for f in factors]
    preds = [
        eq_pred(Affine.var(k.name), a)
        for k, a in zip(targets, comps, strict=True)
        if a != Affine.var(k.name)
    ]
    return f_sum(binders, f_product([bracket(preds), *factors]))


def adjoint_body(targets: Sequence[IndexVar], contributions: Sequence[Contribution]) -> Expr:
    body: Expr = ZERO
    for c in contributions:
        body = f_add(body, flip(targets, c))
    return deshadow(body, {k.name for k in targets})


# cotangent(output number, its generator indices) -> the cotangent of that output
Cotangent = Callable[[int, tuple[Affine, ...]], Expr]


def reverse_statements(
    prog: Program,
    inputs: Sequence[str],
    cotangent: Cotangent,
    names: Names,
    mode: str = "vjp",
) -> tuple[list[Statement], dict[str, str]]:
    """Adjoint statements for ``prog`` and the names of the adjoints of ``inputs``.

    Returns the primal statements followed by the adjoint statements (reverse order), ending
    with one adjoint statement per input in ``names``.
    """
    active = active_names(prog, inputs)
    pending: dict[str, list[Contribution]] = {}
    bar: dict[str, str] = {}

    def bar_name(n: str) -> str:
        if n not in bar:
            bar[n] = names.variable(f"{n}_bar")
        return bar[n]

    def collect(
        gens: tuple[IndexVar, ...], body: Expr, cot: Expr, own: Expr | None = None
    ) -> None:
        alias = (body, own) if own is not None else None
        lin = Linearizer(active, {g.name for g in gens}, mode, alias)
        for t in lin.terms(body):
            pending.setdefault(t.name, []).append(Contribution(gens, t, cot))

    # Each output is an implicit statement seeded by its cotangent.
    for number, o in enumerate(prog.outputs):
        if not (accessed_names(o) & active):
            continue
        if is_tensor_output(prog, o):
            assert isinstance(o, Access)
            shape = prog.shape_of(o.name)
            gen_names = names.pick_indices(len(shape))
            gens = tuple(IndexVar(n, d) for n, d in zip(gen_names, shape, strict=True))
            idx = tuple(Affine.var(n) for n in gen_names)
            collect(gens, Access(o.name, idx), cotangent(number, idx))
        else:
            collect((), o, cotangent(number, ()))

    adjoints: list[Step] = []
    primal: list[Step] = list(prog.statements)
    for number in reversed(range(len(primal))):
        s = primal[number]
        if isinstance(s, Fold):
            if not (s.reads() & active) or not any(n in pending for n in s.names):
                continue
            # the forward loop also stacks its states; the adjoint loop runs back over them
            saving, states = saving_fold(s, names)
            primal[number] = saving
            bars: list[str] = []
            for n in s.names:
                shape = s.result_shape(n)
                gens = _generators(shape, names)
                bars.append(bar_name(n))
                adjoints.append(Statement(bars[-1], gens, adjoint_body(gens,
                                                                        pending.pop(n, []))))
            new, input_bars = adjoint_fold(s, states, bars, active, names, mode)
            adjoints += new
            for n, b in input_bars:
                gens = _generators(prog.shape_of(n), names)
                idx = tuple(Affine.var(g.name) for g in gens)
                collect(gens, Access(n, idx), Access(b, idx))
            continue
        contributions = pending.pop(s.name, None)
        if not contributions:
            continue
        name = bar_name(s.name)
        adjoints.append(Statement(name, s.indices, adjoint_body(s.indices, contributions)))
        idx = tuple(Affine.var(iv.name) for iv in s.indices)
        collect(s.indices, s.body, Access(name, idx), Access(s.name, idx))

    for n in inputs:
        shape = prog.param(n).shape
        gen_names = names.pick_indices(len(shape))
        gens = tuple(IndexVar(g, d) for g, d in zip(gen_names, shape, strict=True))
        body = adjoint_body(gens, pending.pop(n, []))
        adjoints.append(Statement(bar_name(n), gens, body))
    return primal + adjoints, {n: bar[n] for n in inputs}


def _generators(shape: Sequence[Dim], names: Names) -> tuple[IndexVar, ...]:
    return tuple(IndexVar(g, d) for g, d in zip(names.pick_indices(len(shape)), shape,
                                                strict=True))


def saving_fold(f: Fold, names: Names) -> tuple[Fold, tuple[str, ...]]:
    """``f`` that also stacks the state each step starts from (the T states the adjoint loop
    reads back); returns it and the names of those stacks."""
    ncarry = len(f.carry)
    states = tuple(names.variable(f"{c}_states") for c in f.carry)
    kept = tuple(Access(p.name) for p in f.body.params[:ncarry])
    body = replace(f.body, outputs=f.body.outputs + kept)
    return replace(f, names=f.names + states, body=body), states


def _element(prog: Program, o: Expr, idx: tuple[Affine, ...]) -> Expr:
    """Output ``o`` of ``prog`` at indices ``idx`` (a whole tensor's element, or a scalar)."""
    if idx and isinstance(o, Access) and not o.indices:
        return Access(o.name, idx)
    return o


def adjoint_fold(
    f: Fold,
    states: tuple[str, ...],
    bars: list[str],
    active: set[str],
    names: Names,
    mode: str,
) -> tuple[list[Step], list[tuple[str, str]]]:
    """The reverse loop of ``f``: from the adjoints ``bars`` of its results (final states, then
    stacks) back over the saved ``states``. Its body is the vjp of ``f``'s body (derived once);
    it carries the states' adjoints and accumulates those of the active constants
    (W̄ = Σ_t ...), and stacks those of the active scanned inputs. Returns its statements and
    the (input, adjoint) pairs of ``f``'s active inputs."""
    body, ncarry, nscan = f.body, len(f.carry), len(f.scan)
    scans = [k for k, n in enumerate(f.scan, ncarry) if n in active]
    consts = [k for k, n in enumerate(f.const, ncarry + nscan) if n in active]
    wrt = [p.name for p in body.params[:ncarry]] + [body.params[k].name for k in scans + consts]
    vb = vjp(body, wrt)
    seeds = vb.params[len(body.params):]
    outs = vb.outputs if vb.returns_tuple else (vb.outputs[0],)
    inner = Names(vb)
    accs = [Param(inner.variable(f"{body.params[k].name}_acc"), body.params[k].shape)
            for k in consts]
    stmts: list[Step] = list(vb.statements)
    acc_outs: list[Expr] = []
    for acc, o in zip(accs, outs[ncarry + len(scans):], strict=True):
        gens = _generators(acc.shape, inner)
        idx = tuple(Affine.var(g.name) for g in gens)
        total = f_add(Access(acc.name, idx), _element(vb, o, idx))
        if gens:
            stmts.append(Statement(inner.variable(f"{acc.name}_next"), gens, total))
            acc_outs.append(Access(stmts[-1].name))
        else:
            acc_outs.append(total)
    params = (seeds[:ncarry] + tuple(accs) + body.params[:ncarry]
              + body.params[ncarry:ncarry + nscan] + seeds[ncarry:]
              + body.params[ncarry + nscan:])
    outputs = outs[:ncarry] + tuple(acc_outs) + outs[ncarry:ncarry + len(scans)]
    rbody = Program(params, tuple(stmts), outputs, True, f"{body.name}_vjp")

    new: list[Step] = []
    zeros = []
    for k in consts:
        shape = body.params[k].shape
        zeros.append(names.variable(f"{f.inputs[k]}_acc0"))
        new.append(Statement(zeros[-1], _generators(shape, names), ZERO))
    results = tuple(names.variable(f"{f.inputs[k]}_fbar")
                    for k in list(range(ncarry)) + consts + scans)
    new.append(Fold(results, f.trip, rbody, tuple(bars[:ncarry]) + tuple(zeros),
                    states + f.scan + tuple(bars[ncarry:]), f.const, not f.reverse, f.loc))
    pairs = [(f.inputs[k], r) for k, r in zip(list(range(ncarry)) + consts + scans, results,
                                               strict=True)]
    return new, [(n, r) for n, r in pairs if n in active]


def _output_shape(prog: Program, o: Expr) -> tuple:
    if is_tensor_output(prog, o):
        assert isinstance(o, Access)
        return prog.shape_of(o.name)
    return ()


@transformation
def vjp(prog: Program, wrt: str | Sequence[str]) -> Program:
    """The adjoint program of ``prog``.

    Parameters: ``prog``'s, then the output cotangent ``ybar`` (``ybar0``, ``ybar1``, ... when
    ``prog`` returns a tuple), shaped like the output. Returns the adjoint of each ``wrt`` input
    in order (a single value when ``wrt`` names one input, else a tuple). The result is an
    ordinary, purely functional Program: print, parse, evaluate or differentiate it again.
    """
    if not isinstance(prog, Program):
        raise DifferentiationError(f"vjp expects a Program, got {type(prog).__name__}")
    inputs = normalize_wrt(prog, wrt)
    names = Names(prog)
    seeds: list[Param] = []
    for number, o in enumerate(prog.outputs):
        base = f"ybar{number}" if prog.returns_tuple else "ybar"
        seed_name = names.take(base if names.is_free(base) else _fresh_seed(base, names))
        seeds.append(Param(seed_name, _output_shape(prog, o)))

    def cotangent(number: int, idx: tuple[Affine, ...]) -> Expr:
        return Access(seeds[number].name, idx)

    stmts, bars = reverse_statements(prog, inputs, cotangent, names)
    outputs = tuple(Access(bars[n]) for n in inputs)
    return prune(
        prog.params + tuple(seeds), stmts, outputs, len(inputs) > 1, f"{prog.name}_vjp"
    )


def _fresh_seed(base: str, names: Names) -> str:
    # fresh_name strips trailing digits ("ybar0" -> "ybar1"); keep the output number visible.
    k = 1
    while not names.is_free(f"{base}_{k}"):
        k += 1
    return f"{base}_{k}"


def gradient_statements(
    prog: Program, name: str, names: Names
) -> tuple[list[Statement], str]:
    """Statements computing the gradient of a scalar-output ``prog`` (seed 1) w.r.t. ``name``."""

    def one(number: int, idx: tuple[Affine, ...]) -> Expr:
        return ONE

    stmts, bars = reverse_statements(prog, (name,), one, names)
    return stmts, bars[name]


__all__ = [
    "Contribution",
    "Linearizer",
    "Term",
    "adjoint_body",
    "flip",
    "gradient_statements",
    "reverse_statements",
    "vjp",
]
