"""Matrix products split from the elementwise work around them: BLAS for the product, a loop
nest for the rest.

The NumPy backend runs a statement with a matrix product (``tanh(Σ_i X[n, i]·W1[j, i] +
b1[j])``) as BLAS and then one NumPy pass per operation of what surrounds it (an add, then
``np.tanh``: each a fresh array written and read back). The schedule (:mod:`.schedule`) places
whole statements, so such a statement stays NumPy, passes and all. :func:`split_products`
writes the program with each such statement split in two, for the schedule to place and price
like any other:

* an *epilogue*: ``s[I] = f(Σ_k a·b)`` becomes the product ``_p_s[I] = Σ_k a·b`` (BLAS) and
  ``s[I] = f(_p_s[I])`` (one loop nest: the bias and ``tanh`` in one pass);
* a *factor*: ``s[i, j] = Σ_k a[k, j]·F[k, i]``, ``F`` elementwise work on arrays
  (``hid_bar[k, i]·(1 - hid[k, i]**2)``), becomes ``_f_s[k, i] = F`` (a loop nest) and the
  product ``s[i, j] = Σ_k a[k, j]·_f_s[k, i]`` (BLAS); every other statement reading ``F``
  (up to the names of its indices: ``b1_bar[i] = Σ_j hid_bar[j, i]·(1 - hid[j, i]**2)``)
  reads ``_f_s`` instead, so it is computed once.

The split keeps every value: what is stored is what the unsplit statement computes inline,
and only expressions that cannot be a strong zero are stored (reads of tensors and of stored
arrays at plain indices, nonzero constants and arithmetic and functions of them: no bracket,
relation, data comparison or sum whose emptiness a product would see; docs/semantics.md).
Whether the split program runs is the schedule's price (:class:`.program.NumbaProgram` keeps
the cheaper of the two schedules), not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...ir.expr import (
    Access,
    Binary,
    Call,
    Const,
    Expr,
    Neg,
    Pow,
    Sum,
    accessed_names,
    children,
    free_indices,
    map_children,
    product_factors,
)
from ...ir.index import Affine, Dim, IndexVar
from ...ir.program import Param, Program, Statement
from ...plan.kernels import Plan
from ...plan.lower import lower_program
from ...plan.poly import Poly, compare
from ..runtime import finite
from .schedule import Schedule, blas_contraction
from .walks import top_sums

__all__ = ["PRODUCT_IMPORT", "cheaper", "fresh", "product_into", "product_run", "split_products"]

# Functions whose value stored and read back is the value inline (no strong zero, no
# comparison): the arithmetic ones the loop writer lowers.
_PLAIN_CALLS = frozenset({"exp", "log", "tanh", "sin", "cos", "log1p", "expm1", "sigmoid",
                          "softplus", "sqrt", "abs", "logaddexp"})


def _plain_read(e: Expr, relations: frozenset[str]) -> bool:
    return (isinstance(e, Access) and e.name not in relations and bool(e.indices)
            and all(a.as_var() is not None for a in e.indices))


def plain(e: Expr, relations: frozenset[str]) -> bool:
    """``e`` is never a strong zero (docs/semantics.md): reads of arrays at plain indices,
    nonzero constants, arithmetic and :data:`_PLAIN_CALLS` of them. Stored, it is the value
    the statement computes inline."""
    if isinstance(e, Access):
        return _plain_read(e, relations)
    if isinstance(e, Const):
        return e.value != 0
    if isinstance(e, Neg):
        return plain(e.arg, relations)
    if isinstance(e, Pow):
        return plain(e.base, relations)
    if isinstance(e, Binary):
        return plain(e.lhs, relations) and plain(e.rhs, relations)
    if isinstance(e, Call):
        return e.fn in _PLAIN_CALLS and all(plain(a, relations) for a in e.args)
    return False


def _product(s: Sum, relations: frozenset[str]) -> bool:
    """``s`` is a matrix product: two reads at plain indices, multiplied."""
    fs = product_factors(s.body)
    return len(fs) == 2 and all(_plain_read(f, relations) for f in fs)


def _passes(s: Statement, numpy_plan: Callable[[Statement], Plan]) -> bool:
    """NumPy runs ``s``'s elementwise work (beside its matrix products; ``numpy_plan``: the
    plan of a statement's NumPy code run alone) as two passes over its points or more: only
    then does one loop nest save memory traffic (a single pass reads and writes what the
    loop would: measured, nmf's ``V - W @ H`` as a loop 1.2-1.5x NumPy's subtraction)."""
    plan = numpy_plan(s)
    rest = plan.cost - plan.products
    for k in plan.kernels:
        if k.detail == "copy":  # (a part's output kept apart from its inputs)
            rest = rest - k.cost
    return compare(rest, Poly.product_of_dims(s.shape) * 2) >= 0


def _has_ufunc(e: Expr) -> bool:
    """``e`` calls a NumPy ufunc (:data:`_PLAIN_CALLS`: its value is a new array)."""
    return (isinstance(e, Call) and e.fn in _PLAIN_CALLS) or any(
        _has_ufunc(c) for c in children(e))


def _replace(e: Expr, old: Expr, new: Expr) -> Expr:
    if e == old:
        return new
    return map_children(e, lambda c: _replace(c, old, new))


def _match(pattern: Expr, e: Expr, names: dict[str, str]) -> bool:
    """``e`` is ``pattern`` with its indices renamed (``names``: pattern's to ``e``'s, filled
    in). Plain expressions only (:func:`plain`)."""
    if isinstance(pattern, Access):
        if not (isinstance(e, Access) and e.name == pattern.name
                and len(e.indices) == len(pattern.indices)):
            return False
        for a, b in zip(pattern.indices, e.indices, strict=True):
            p, q = a.as_var(), b.as_var()
            if q is None or names.setdefault(p, q) != q:  # type: ignore[arg-type]
                return False
        return True
    if type(pattern) is not type(e):
        return False
    if isinstance(pattern, Const):
        return pattern == e
    if isinstance(pattern, Pow) and pattern.exponent != e.exponent:  # type: ignore[union-attr]
        return False
    if isinstance(pattern, Binary) and pattern.op != e.op:  # type: ignore[union-attr]
        return False
    if isinstance(pattern, Call) and pattern.fn != e.fn:  # type: ignore[union-attr]
        return False
    mine, theirs = children(pattern), children(e)
    return len(mine) == len(theirs) and all(
        _match(a, b, names) for a, b in zip(mine, theirs, strict=True))


def _share(e: Expr, pattern: Expr, name: str, order: tuple[str, ...]) -> Expr:
    """``e`` with each subexpression that is ``pattern`` up to index names (a bijection)
    replaced by a read of ``name`` (the array of ``pattern`` over indices ``order``)."""
    names: dict[str, str] = {}
    if _match(pattern, e, names) and len(set(names.values())) == len(names):
        return Access(name, tuple(Affine.var(names[v]) for v in order))
    return map_children(e, lambda c: _share(c, pattern, name, order))


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}{k}", k + 1
    taken.add(name)
    return name


def _epilogue(s: Statement, relations: frozenset[str],
              numpy_plan: Callable[[Statement], Plan]) -> Sum | None:
    """``s``'s matrix product, when the rest of its body is elementwise work on it, of several
    NumPy passes (:func:`_passes`). (A product of negated terms, ``Σ_k -(a·b)``, is not taken
    apart: ``-Σ_k a·b`` is a zero of the other sign where the products are zeros of both.)"""
    sums = top_sums(s.body)
    if len(sums) != 1:
        return None
    prod = sums[0]
    if not _product(prod, relations) or free_indices(prod) != {iv.name for iv in s.indices}:
        return None
    if not plain(_replace(s.body, prod, Const(1)), relations) or not _passes(s, numpy_plan):
        return None
    return prod


def _factor(s: Statement, relations: frozenset[str], numpy_plan: Callable[[Statement], Plan]
            ) -> tuple[Expr, tuple[IndexVar, ...]] | None:
    """The elementwise factor ``F`` of ``s``'s matrix product ``Σ_k a·F`` and the indices of
    its array (in the order ``F`` reads its first array by)."""
    sums = top_sums(s.body)
    if len(sums) != 1 or not isinstance(sums[0].body, Binary) or sums[0].body.op != "*":
        return None
    prod = sums[0]
    a, f = prod.body.lhs, prod.body.rhs  # type: ignore[union-attr]
    if not _plain_read(a, relations):
        a, f = f, a
    if not _plain_read(a, relations) or isinstance(f, Access) or not plain(f, relations) \
            or len(free_indices(f)) != 2:
        return None
    extents: dict[str, Dim] = {iv.name: iv.extent for iv in (*s.indices, *prod.indices)}
    order: list[str] = []
    for r in _accesses(f):
        for ix in r.indices:
            v = ix.as_var()
            if v is not None and v not in order:
                order.append(v)
    ivs = tuple(IndexVar(v, extents[v]) for v in order)
    if not _passes(Statement("_f", ivs, f, s.loc), numpy_plan):
        return None
    return f, ivs


def _accesses(e: Expr) -> list[Access]:
    if isinstance(e, Access):
        return [e]
    return [a for c in children(e) for a in _accesses(c)]


def split_products(prog: Program, plan: Plan, relations: frozenset[str] = frozenset()
                   ) -> Program | None:
    """``prog`` with each statement the NumPy backend runs as BLAS (``plan``: its plan) split
    into the matrix product and the elementwise work around it (module docstring), where
    NumPy runs that work as several passes; None when no statement splits."""
    stmts = list(prog.statements)
    shapes = {p.name: p.shape for p in prog.params} | {s.name: s.shape for s in stmts}

    def numpy_plan(s: Statement) -> Plan:  # (of s's NumPy code alone)
        stored = sorted(accessed_names(s.body) - {p.name for p in prog.params})
        params = prog.params + tuple(Param(n, shapes[n]) for n in stored)
        shapes[s.name] = s.shape
        return lower_program(Program(params, (s,), (Access(s.name),), False, "_part")).plan

    taken = {s.name for s in stmts} | {p.name for p in prog.params}
    changed = False
    k = 0
    while k < len(stmts):
        s = stmts[k]
        if not s.indices or not blas_contraction(s, plan):
            k += 1
            continue
        prod = _epilogue(s, relations, numpy_plan)
        if prod is not None:
            name = _fresh(f"_p_{s.name}", taken)
            shapes[name] = s.shape
            read: Expr = Access(name, tuple(Affine.var(iv.name) for iv in s.indices))
            body = _replace(s.body, prod, read)
            stmts[k:k + 1] = [Statement(name, s.indices, prod, s.loc),
                              Statement(s.name, s.indices, body, s.loc)]
            changed = True
            k += 2
            continue
        fac = _factor(s, relations, numpy_plan)
        if fac is not None:
            f, ivs = fac
            name = _fresh(f"_f_{s.name}", taken)
            order = tuple(iv.name for iv in ivs)
            first = k
            for j in range(k):  # an earlier reader of F: the array is computed before it
                if _share(stmts[j].body, f, name, order) != stmts[j].body:
                    first = j
                    break
            for j in range(first, len(stmts)):
                stmts[j] = Statement(stmts[j].name, stmts[j].indices,
                                     _share(stmts[j].body, f, name, order), stmts[j].loc)
            stmts.insert(first, Statement(name, ivs, f, s.loc))
            shapes[name] = tuple(iv.extent for iv in ivs)
            changed = True
            k += 2
            continue
        k += 1
    if not changed:
        return None
    return Program(prog.params, tuple(stmts), prog.outputs, prog.returns_tuple, prog.name)


def cheaper(split: Schedule, unsplit: Schedule) -> bool:
    """The split program's schedule runs loop nests and is priced below the unsplit one's
    (:attr:`.schedule.Schedule.price`: the whole NumPy program is priced by its test)."""
    if split.price is None:
        return False
    return unsplit.price is None or compare(split.price, unsplit.price) < 0


def fresh(s: Statement, plan: Plan) -> bool:
    """NumPy computes ``s`` (``plan``: its program's plan) as a new array, never a view of an
    array it reads: a sum (a product or reduction) or a function of its reads, at a price (a
    sum NumPy binds as a view, ``Σ_j [j == i]·x[j]``, costs nothing)."""
    return (_has_sum(s.body) or _has_ufunc(s.body)) and not plan.statement_cost(s.name).is_zero()


def _has_sum(e: Expr) -> bool:
    return isinstance(e, Sum) or any(_has_sum(c) for c in children(e))


def product_into(out: np.ndarray, a: np.ndarray, b: np.ndarray, proven: bool = False) -> bool:
    """``out = a @ b`` by BLAS where every entry of ``a`` and ``b`` is finite (then BLAS's
    products and sums are the program's, in another order, as the NumPy backend's own code
    trusts them: ``A @ B if _rt.finite(A, B)``); False otherwise, and the caller runs the
    NumPy part, which decides. The smaller side is checked: an inf or nan operand entry
    reaches every entry of its row (column) of a product over a nonempty index, as an inf or
    nan. ``proven``: the guard proved every value of the program finite (nothing checked)."""
    if proven:
        np.matmul(a, b, out=out)
        return True
    if a.size + b.size <= out.size:
        if not finite(a, b):
            return False
        np.matmul(a, b, out=out)
        return True
    np.matmul(a, b, out=out)
    return finite(out)


def product_operands(s: Statement, shapes: Mapping[str, tuple[Dim, ...]]
                     ) -> tuple[str, str] | None:
    """Code of the two operands whose matrix product is ``s`` (``_p[i, j] = Σ_k a·b``, each a
    matrix read whole at plain indices: ``X``, ``W1.T``; ``shapes``: the arrays'), or None (a
    read of part of a matrix, ``t[i: 1, j: 2] = Σ_k B[i, k] B[k, j]``, is no such product)."""
    if len(s.indices) != 2 or not isinstance(s.body, Sum) or len(s.body.indices) != 1:
        return None
    fs = product_factors(s.body.body)
    if len(fs) != 2 or not all(isinstance(f, Access) and len(f.indices) == 2 for f in fs):
        return None
    i, j = (iv.name for iv in s.indices)
    k = s.body.indices[0].name
    a, b = fs  # type: ignore[assignment]
    names = [[ix.as_var() for ix in f.indices] for f in (a, b)]  # type: ignore[union-attr]
    if i not in names[0]:
        a, b = b, a
        names.reverse()
    codes = []
    extents = {iv.name: iv.extent for iv in (*s.indices, *s.body.indices)}
    for f, got, want in ((a, names[0], [i, k]), (b, names[1], [k, j])):
        if tuple(shapes[f.name]) != tuple(extents.get(n) for n in got):  # type: ignore[union-attr]
            return None
        if got == want:
            codes.append(f.name)  # type: ignore[union-attr]
        elif got == want[::-1]:
            codes.append(f"{f.name}.T")  # type: ignore[union-attr]
        else:
            return None
    return codes[0], codes[1]


def product_run(s: Statement, part_call: str, shapes: Mapping[str, tuple[Dim, ...]]
                ) -> list[str] | None:
    """The run function's lines for the matrix product ``s`` (neither returned nor read by
    NumPy code that may keep a view of it: a split product, read by its epilogue, or a
    product such as mlp's ``hid_bar``): BLAS into a buffer kept from call to call, the NumPy
    part (``part_call``) where an operand holds inf or nan (:func:`product_into`); None when
    ``s`` is no such product (``shapes``: the arrays')."""
    ops = product_operands(s, shapes)
    if ops is None:
        return None
    shape = ", ".join(str(iv.extent) for iv in s.indices)
    return [f"    {s.name} = _tmp.get({s.name!r})",
            f"    if {s.name} is None or {s.name}.shape != ({shape},):",
            f"        {s.name} = _tmp[{s.name!r}] = np.empty(({shape},), dtype=F)",
            f"    if not _product_into({s.name}, {ops[0]}, {ops[1]}, _fin):",
            f"        {s.name} = {part_call}"]


PRODUCT_IMPORT = f"from {__package__}.epilogue import product_into as _product_into"
"""The import a generated module running :func:`product_run`'s lines needs."""
