"""Predicates and scalar expressions of Tensor SSA.

Every expression denotes a scalar that may depend on free index variables; tensors appear only
through :class:`Access`. Values are immutable and compared structurally. Arithmetic is IEEE 754
(``0 * inf`` is nan) except for *strong zeros* (docs/semantics.md): a false Iverson bracket,
relation access or data comparison, the literal 0 and an empty sum are 0 and absorb every
factor, which is what makes an Iverson bracket ``[p] * e`` a guard (``e`` is never looked at
where ``p`` is false).

Nodes carry an optional source location (``loc``) that does not take part in equality.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from .index import Affine, IndexVar


@dataclass(frozen=True, slots=True)
class Loc:
    """A source position: 1-based line, 0-based column (as Python's ``ast``)."""

    line: int
    col: int
    filename: str = "<source>"

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


def _loc() -> Loc | None:
    return field(default=None, compare=False, repr=False)  # type: ignore[return-value]


# ================================================================================================
# Predicates (the contents of Iverson brackets)
# ================================================================================================

CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True, slots=True)
class Cmp:
    """``lhs op rhs`` for affine index expressions."""

    op: str
    lhs: Affine
    rhs: Affine
    loc: Loc | None = _loc()

    def __post_init__(self) -> None:
        if self.op not in CMP_OPS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True, slots=True)
class Rel:
    """Membership ``R[a1, ..., ak]`` in a boolean relation (a 0/1 parameter)."""

    name: str
    indices: tuple[Affine, ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction of two or more predicates."""

    preds: tuple[Pred, ...]
    loc: Loc | None = _loc()

    def __post_init__(self) -> None:
        # One-operand conjunctions would not survive printing and parsing; build with conj().
        if len(self.preds) < 2:
            raise ValueError("And needs at least two predicates (use conj)")


Pred = Cmp | Rel | And


# ================================================================================================
# Expressions
# ================================================================================================


@dataclass(frozen=True, slots=True)
class Const:
    value: float
    loc: Loc | None = _loc()

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))


@dataclass(frozen=True, slots=True)
class Access:
    """``name[a1, ..., ak]``; a scalar variable is an access with no indices.

    Out-of-range or fractional indices read 0.0 (an ordinary zero, as zero padding would).
    """

    name: str
    indices: tuple[Affine, ...] = ()
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class Binary:
    """``lhs op rhs`` for op in ``+ - * /``."""

    op: str
    lhs: Expr
    rhs: Expr
    loc: Loc | None = _loc()

    OPS: ClassVar[tuple[str, ...]] = ("+", "-", "*", "/")

    def __post_init__(self) -> None:
        if self.op not in Binary.OPS:
            raise ValueError(f"unknown binary operator {self.op!r}")


@dataclass(frozen=True, slots=True)
class Neg:
    arg: Expr
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class Pow:
    """``base ** exponent`` with a constant exponent."""

    base: Expr
    exponent: float
    loc: Loc | None = _loc()

    def __post_init__(self) -> None:
        object.__setattr__(self, "exponent", float(self.exponent))


@dataclass(frozen=True, slots=True)
class Call:
    """A scalar built-in (or registered) function applied elementwise."""

    fn: str
    args: tuple[Expr, ...]
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class Sum:
    """``Sum[i: N, j: M](body)``: sum of ``body`` over the bound indices (empty range: a strong
    zero)."""

    indices: tuple[IndexVar, ...]
    body: Expr
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class Bracket:
    """Iverson bracket ``[pred]``: 1.0 where the predicate holds, else a strong zero."""

    pred: Pred
    loc: Loc | None = _loc()


@dataclass(frozen=True, slots=True)
class Max:
    """``Max[j: N, k: M](body)``: the largest value of ``body`` over the bound indices.

    An empty range gives -inf (the identity of max); a nan anywhere in the range gives nan (as
    ``np.max``); a strong zero in the range is an ordinary 0.0 there, and the result is an
    ordinary number (docs/semantics.md)."""

    indices: tuple[IndexVar, ...]
    body: Expr
    loc: Loc | None = _loc()


Expr = Const | Access | Binary | Neg | Pow | Call | Sum | Max | Bracket
Binder = Sum | Max  # the expressions that bind indices (same fields: indices, body)


# Structural equality and hashing without recursion: a chain of thousands of terms is as deep
# as it is long, and the generated dataclass methods would recurse once per level.
_INNER = (Binary, Neg, Pow, Call, Sum, Max)


def _own_fields(e: Expr) -> object:
    """The fields of an inner node other than its child expressions (and its location)."""
    match e:
        case Binary():
            return e.op
        case Pow(_, k):
            return k
        case Call(fn, args):
            return (fn, len(args))
        case Sum(ivs, _) | Max(ivs, _):
            return ivs
    return None


def _deep_eq(a: Expr, b: Expr) -> bool:
    stack: list[tuple[Expr, Expr]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if isinstance(x, _INNER):
            if _own_fields(x) != _own_fields(y):
                return False
            stack.extend(zip(children(x), children(y), strict=True))
        elif x != y:
            return False
    return True


def _deep_hash(e: Expr) -> int:
    out: list[int] = []
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, expanded = stack.pop()
        if not isinstance(x, _INNER):
            out.append(hash(x))
        elif expanded:
            n = len(children(x))
            kids = out[len(out) - n:]
            del out[len(out) - n:]
            out.append(hash((type(x).__name__, _own_fields(x), *kids)))
        else:
            stack.append((x, True))
            stack.extend((c, False) for c in reversed(children(x)))
    return out[0]


def _eq(self: Expr, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _deep_eq(self, other)  # type: ignore[arg-type]


for _cls in _INNER:
    _cls.__eq__ = _eq  # type: ignore[method-assign,assignment]
    _cls.__hash__ = _deep_hash  # type: ignore[method-assign,assignment]


# ================================================================================================
# Helpers for building expressions (used by AD and the optimizer's decoder)
# ================================================================================================


def add(a: Expr, b: Expr) -> Expr:
    return Binary("+", a, b)


def sub(a: Expr, b: Expr) -> Expr:
    return Binary("-", a, b)


def mul(a: Expr, b: Expr) -> Expr:
    return Binary("*", a, b)


def div(a: Expr, b: Expr) -> Expr:
    return Binary("/", a, b)


def const(c: float) -> Const:
    return Const(c)


def eq(a: Affine, b: Affine) -> Cmp:
    return Cmp("==", a, b)


def conj(*preds: Pred) -> Pred:
    """Conjunction, flattening nested ``And`` (a single predicate is returned as is)."""
    flat: list[Pred] = []
    for p in preds:
        flat.extend(p.preds if isinstance(p, And) else (p,))
    if len(flat) == 1:
        return flat[0]
    if not flat:
        raise ValueError("empty conjunction")
    return And(tuple(flat))


# ================================================================================================
# Traversals: children, free indices, substitution, renaming
# ================================================================================================


def pred_affines(p: Pred) -> tuple[Affine, ...]:
    if isinstance(p, Cmp):
        return (p.lhs, p.rhs)
    if isinstance(p, Rel):
        return p.indices
    return tuple(a for q in p.preds for a in pred_affines(q))


def pred_free_indices(p: Pred) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for a in pred_affines(p):
        out |= a.free_indices()
    return out


def has_reduction(e: Expr) -> bool:
    """Whether ``e`` contains a ``Sum`` or a ``Max`` (a reduction over an index)."""
    return isinstance(e, Sum | Max) or any(has_reduction(c) for c in children(e))


def children(e: Expr) -> tuple[Expr, ...]:
    match e:
        case Binary(_, lhs, rhs):
            return (lhs, rhs)
        case Neg(arg) | Pow(arg, _):
            return (arg,)
        case Call(_, args):
            return args
        case Sum(_, body) | Max(_, body):
            return (body,)
    return ()


def product_factors(e: Expr) -> list[Expr]:
    """The factors of a product tree ``a * (b * c) * ...`` (``e`` itself when it is none)."""
    if isinstance(e, Binary) and e.op == "*":
        return product_factors(e.lhs) + product_factors(e.rhs)
    return [e]


def free_indices(e: Expr) -> frozenset[str]:
    """Index variables that occur in ``e`` without being bound by an enclosing ``Sum`` or ``Max``
    in ``e``."""
    if isinstance(e, Access):
        out: frozenset[str] = frozenset()
        for a in e.indices:
            out |= a.free_indices()
        return out
    if isinstance(e, Bracket):
        return pred_free_indices(e.pred)
    if isinstance(e, Const):
        return frozenset()
    # one walk with the names bound on the way down (expressions may be thousands deep)
    found: set[str] = set()
    none: frozenset[str] = frozenset()
    stack: list[tuple[Expr, frozenset[str]]] = [(e, none)]
    while stack:
        x, bound = stack.pop()
        match x:
            case Access(_, idx):
                for a in idx:
                    found.update(n for n in a.free_indices() if n not in bound)
            case Bracket(p):
                found.update(n for n in pred_free_indices(p) if n not in bound)
            case Sum(ivs, body) | Max(ivs, body):
                stack.append((body, bound | {iv.name for iv in ivs}))
            case _:
                stack.extend((c, bound) for c in children(x))
    return frozenset(found)


def bound_indices(e: Expr) -> frozenset[str]:
    """All index names bound by some ``Sum`` or ``Max`` inside ``e``."""
    out: set[str] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Sum | Max):
            out |= {iv.name for iv in x.indices}
        stack.extend(children(x))
    return frozenset(out)


def all_index_names(e: Expr) -> frozenset[str]:
    return free_indices(e) | bound_indices(e)


def fresh_name(base: str, avoid: frozenset[str] | set[str]) -> str:
    """``base`` if unused, else ``base1``, ``base2``, ... (deterministic)."""
    if base not in avoid:
        return base
    stem = base.rstrip("0123456789") or base
    k = 1
    while f"{stem}{k}" in avoid:
        k += 1
    return f"{stem}{k}"


def substitute_pred(p: Pred, mapping: Mapping[str, Affine]) -> Pred:
    match p:
        case Cmp(op, lhs, rhs):
            return Cmp(op, lhs.substitute(mapping), rhs.substitute(mapping), p.loc)
        case Rel(name, idx):
            return Rel(name, tuple(a.substitute(mapping) for a in idx), p.loc)
        case And(preds):
            return And(tuple(substitute_pred(q, mapping) for q in preds), p.loc)
    raise TypeError(p)


def substitute(e: Expr, mapping: Mapping[str, Affine]) -> Expr:
    """Capture-avoiding substitution of index variables by affine expressions.

    A ``Sum`` or ``Max`` whose binder would capture a free index of a replacement is renamed first.
    """
    from .traverse import Done, rebuild

    mapping = {k: v for k, v in mapping.items() if not (v.as_var() == k)}
    if not mapping:
        return e

    def pre(x: Expr, m: Mapping[str, Affine]) -> tuple[Expr, Mapping[str, Affine]] | Done:
        match x:
            case Const():
                return Done(x)
            case Access(name, idx):
                return Done(Access(name, tuple(a.substitute(m) for a in idx), x.loc))
            case Bracket(p):
                return Done(Bracket(substitute_pred(p, m), x.loc))
            case Sum(ivs, body) | Max(ivs, body):
                return _enter_binder(x, ivs, body, m)
        return x, m

    return rebuild(e, pre=pre, ctx=mapping)


def _enter_binder(
    x: Sum | Max, ivs: tuple[IndexVar, ...], body: Expr, mapping: Mapping[str, Affine]
):
    """The mapping inside the ``Sum`` or ``Max`` ``x`` (its binders removed), with binders
    that would capture a replacement's free index renamed first."""
    from .traverse import Done

    bound = {iv.name for iv in ivs}
    inner = {k: v for k, v in mapping.items() if k not in bound}
    if not inner:
        return Done(x)
    captured: set[str] = set()
    for v in inner.values():
        captured |= v.free_indices()
    if not captured & bound:
        return x, inner
    avoid = set(all_index_names(body)) | captured | set(inner) | bound
    new_ivs: list[IndexVar] = []
    renames: dict[str, Affine] = {}
    for iv in ivs:
        if iv.name in captured:
            nn = fresh_name(iv.name, avoid)
            avoid.add(nn)
            renames[iv.name] = Affine.var(nn)
            new_ivs.append(IndexVar(nn, iv.extent))
        else:
            new_ivs.append(iv)
    return type(x)(tuple(new_ivs), substitute(body, renames), x.loc), inner


def rename(e: Expr, mapping: Mapping[str, str]) -> Expr:
    """Capture-avoiding renaming of free index variables."""
    return substitute(e, {k: Affine.var(v) for k, v in mapping.items()})


def accessed_names(e: Expr) -> frozenset[str]:
    """Names of tensors, scalars and relations read by ``e``."""
    out: set[str] = set()
    stack: list[Expr] = [e]
    preds: list[Pred] = []
    while stack:
        x = stack.pop()
        if isinstance(x, Access):
            out.add(x.name)
        elif isinstance(x, Bracket):
            preds.append(x.pred)
        stack.extend(children(x))
    while preds:
        p = preds.pop()
        if isinstance(p, Rel):
            out.add(p.name)
        elif isinstance(p, And):
            preds.extend(p.preds)
    return frozenset(out)


def map_children(e: Expr, f) -> Expr:  # f: Callable[[Expr], Expr]
    """Rebuild ``e`` with ``f`` applied to each direct child expression."""
    match e:
        case Binary(op, lhs, rhs):
            return Binary(op, f(lhs), f(rhs), e.loc)
        case Neg(arg):
            return Neg(f(arg), e.loc)
        case Pow(base, k):
            return Pow(f(base), k, e.loc)
        case Call(fn, args):
            return Call(fn, tuple(f(a) for a in args), e.loc)
        case Sum(ivs, body) | Max(ivs, body):
            return type(e)(ivs, f(body), e.loc)
    return e


# ================================================================================================
# Complements of 0/1 expressions (the other branch of a select)
# ================================================================================================

_NEGATED = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def negate_pred(p: Pred) -> Expr:
    """``[not p]`` as a sum of disjoint brackets (each 1 or a strong zero)."""
    match p:
        case Cmp(op, lhs, rhs):
            return Bracket(Cmp(_NEGATED[op], lhs, rhs, p.loc), p.loc)
        case And(preds):
            # not (a and b and ...) = [not a] + [a][not b] + [a][b][not c] + ...
            out: Expr | None = None
            for k, q in enumerate(preds):
                term = negate_pred(q)
                if k:
                    term = Binary("*", Bracket(conj(*preds[:k])), term)
                out = term if out is None else Binary("+", out, term)
            assert out is not None
            return out
    return Binary("-", Const(1.0), Bracket(p))  # a relation: no bracket for its complement


def complement(e: Expr) -> Expr:
    """An expression that is 1 where the 0/1 expression ``e`` is 0 and a strong zero where it
    is 1, when ``e`` is built of brackets, data comparisons, products (and) and disjoint sums;
    else ``1 - e`` (an ordinary zero where ``e`` is 1).

    ``c * a + complement(c) * b`` is a select: the branch not taken is never looked at, even
    where it is inf or nan (``np.where``).
    """
    from .functions import COMPLEMENT  # (functions knows nothing of expressions)

    match e:
        case Const(v) if v in (0.0, 1.0):
            return Const(1.0 - v)
        case Bracket(p):
            return negate_pred(p)
        case Call(fn, args) if fn in COMPLEMENT:
            return Call(COMPLEMENT[fn], args, e.loc)
        case Binary("*", a, b):
            # not (a and b) = not a + a and not b (disjoint)
            return Binary("+", complement(a), Binary("*", a, complement(b)))
        case Binary("+", a, Binary("*", na, b)) if na == complement(a):
            # a or b written as a + (not a) b: its complement is (not a)(not b)
            return Binary("*", na, complement(b))
    return Binary("-", Const(1.0), e)


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    """``a`` where the 0/1 expression ``c`` is 1, else ``b`` (see :func:`complement`)."""
    return Binary("+", Binary("*", c, a), Binary("*", complement(c), b))


def logsumexp(indices: tuple[IndexVar, ...], body: Expr, loc: Loc | None = None) -> Expr:
    """``log(Sum[indices](exp(body)))`` computed stably: ``m + log(Sum(exp(body - m)))`` with
    ``m = Max[indices](body)`` (no overflow for large ``body``).

    The value does not depend on the shift ``m`` (for finite ``m``), so ``m`` is held constant
    under differentiation (``stop_gradient``): the derivative is exactly the softmax
    ``exp(body - m) / Sum(exp(body - m))``, with no arg-max term that cancels in rounding."""
    m = Call("stop_gradient", (Max(indices, body, loc),), loc)
    # the copy of m under the sum binds fresh names (no shadowing of the sum's indices)
    avoid = set(all_index_names(body)) | {iv.name for iv in indices}
    renamed: list[IndexVar] = []
    for iv in indices:
        nn = fresh_name(iv.name, avoid)
        avoid.add(nn)
        renamed.append(IndexVar(nn, iv.extent))
    pairs = zip(indices, renamed, strict=True)
    inner_body = substitute(body, {iv.name: Affine.var(r.name) for iv, r in pairs})
    m_in = Call("stop_gradient", (Max(tuple(renamed), inner_body, loc),), loc)
    shifted = Sum(indices, Call("exp", (Binary("-", body, m_in, loc),), loc), loc)
    return Binary("+", m, Call("log", (shifted,), loc), loc)
