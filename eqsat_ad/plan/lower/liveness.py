"""Liveness of the generated code's arrays: each is released (``del``) right after its last use,
and the plan records how long each is held (:class:`eqsat_ad.plan.memory.Lifetime`), from which
it prices the code's peak memory.

Runs on the finished lines of a function body (statements, comments, ``for`` and ``if`` blocks,
four spaces a level). A name is released in the innermost block that holds all its uses, after
the line (or the whole inner block) that uses it last, provided that block defines it before
any use (so a loop body's own temporary is released in each iteration, and one a loop carries
from one iteration to the next is released after the loop). Released are the arrays the code
allocates (a line with a kernel that allocates defines one) and the names that refer to them
(views and aliases, which keep them alive); never the parameters, sizes, scalars or what the
function returns.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..kernels import Kernel
from ..memory import Lifetime
from ..poly import ZERO, Poly

__all__ = ["Released", "release_dead"]


@dataclass(frozen=True)
class Released:
    """The body with ``del`` lines added, its kernels on their new lines, the lifetimes (lines
    0-based in the new body)."""

    lines: list[str]
    kernels: list[Kernel]
    lifetimes: tuple[Lifetime, ...]


@dataclass
class _Line:
    level: int
    names: frozenset[str]
    defines: str | None  # ``name = ...``
    header: bool  # ``for ...:`` / ``if ...:``
    returns: bool


@dataclass
class _Block:
    start: int  # first line (of the body of a compound; -1 for the function body)
    end: int  # one past the last line
    level: int
    items: list[tuple[int, int, _Block | None]]  # (first line, one past last, inner block)


def release_dead(lines: Sequence[str], kernels: Sequence[Kernel],
                 keep: frozenset[str] | set[str], sizes: Mapping[str, int] | None = None
                 ) -> Released:
    """``lines`` with every array released after its last use (``keep``: names never released:
    parameters, sizes); ``kernels`` carry 0-based body lines. At ``sizes``, an elementwise
    ``+ - * /`` whose operand of :data:`IN_PLACE_MIN` elements or more dies with it writes into
    that operand (``_rt.into``: when nothing else refers to it and the result has its shape and
    dtype)."""
    info = [_parse(line) for line in lines]
    top = _block(info, 0, len(info), 0, -1)
    owned = _owned(info, kernels)
    mentions: dict[str, list[int]] = {}
    for k, li in enumerate(info):
        for n in li.names:
            mentions.setdefault(n, []).append(k)
    arrays = _arrays(info, owned, keep)
    after: dict[int, dict[int, list[str]]] = {}  # line -> level -> names released after it
    released_in: dict[str, _Block] = {}
    for name in sorted(arrays, key=lambda n: mentions[n][0]):
        where = _release_point(top, info, mentions[name], name)
        if where is None:
            continue
        line, block = where
        after.setdefault(line, {}).setdefault(block.level, []).append(name)
        released_in[name] = block
    reused: dict[str, set[int]] = {}
    if sizes:
        lines, reused = _in_place(lines, info, after, owned, kernels, sizes)
    out: list[str] = []
    new_at: list[int] = []
    del_line: dict[str, list[int]] = {}
    for k, text in enumerate(lines):
        new_at.append(len(out))
        out.append(text)
        for level, names in sorted(after.get(k, {}).items(), reverse=True):  # inner first
            for n in names:
                del_line.setdefault(n, []).append(len(out))
            out.append("    " * (1 + level) + "del " + ", ".join(names))
    moved = [replace(k, line=new_at[k.line]) if k.line >= 0 else k for k in kernels]
    lifetimes = _lifetimes(info, owned, arrays, new_at, del_line, released_in, top,
                           len(out) - 1, reused)
    return Released(out, moved, lifetimes)


IN_PLACE_MIN = 1 << 16
"""Elements an operand must have to be written into: below, ``_rt.into``'s checks (about a
microsecond) cost more than the allocation they save."""

_UFUNCS = {ast.Add: "np.add", ast.Sub: "np.subtract", ast.Mult: "np.multiply",
           ast.Div: "np.true_divide"}


def _in_place(lines: Sequence[str], info: Sequence[_Line],
              after: Mapping[int, Mapping[int, list[str]]], owned: Mapping[int, Poly],
              kernels: Sequence[Kernel], sizes: Mapping[str, int]
              ) -> tuple[list[str], dict[str, set[int]]]:
    """``lines`` with each ``v = a op b`` whose operand ``a`` (or ``b``) is released right after
    it, in its own block (not after a loop that runs it again), and holds an array of the
    result's size (so of its shape) written as ``v = _rt.into(a, np.op, a, b)``, and other
    lines' last reads of such an array as :func:`_chain_into` writes them; and the lines that
    write into each name's array (its memory is the line's result from then on)."""
    reused: dict[str, set[int]] = {}
    result: dict[int, Poly] = {}
    for k in kernels:
        if k.line >= 0 and not k.alloc.is_zero():
            result[k.line] = k.alloc
    last_def: dict[str, int] = {}
    out = list(lines)
    for k, li in enumerate(info):
        dying = after.get(k, {}).get(li.level, [])
        if dying and li.defines is not None and k in result:
            out[k] = _written_into(lines[k], dying, last_def, owned, result[k], sizes)
            call = ast.parse(out[k].strip()).body[0].value if out[k] != lines[k] else None
            if isinstance(call, ast.Call) and not any(_temporary(a) for a in call.args[2:]):
                # (with a temporary operand the plan has the result in it: NumPy's elision)
                reused.setdefault(ast.unparse(call.args[0]), set()).add(k)
        for name in dying if out[k] == lines[k] else ():
            held = owned.get(last_def.get(name, -1))
            if held is not None and held.evaluate(
                    {n: sizes.get(n, 1000) for n in held.size_names()}) >= IN_PLACE_MIN:
                before, out[k] = out[k], _chain_into(out[k], name)
                if out[k] != before:
                    reused.setdefault(name, set()).add(k)
        if li.defines is not None:
            last_def[li.defines] = k
    return out, reused


def _written_into(line: str, dying: Sequence[str], last_def: Mapping[str, int],
                  owned: Mapping[int, Poly], size: Poly, sizes: Mapping[str, int]) -> str:
    text = line.strip()
    stmt = ast.parse(text).body[0]
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.BinOp)
            and type(stmt.value.op) in _UFUNCS):
        return line
    op = stmt.value
    for operand in (op.left, op.right):
        if not (isinstance(operand, ast.Name) and operand.id in dying):
            continue
        held = owned.get(last_def.get(operand.id, -1))
        if held is None or held != size:
            continue
        if held.evaluate({n: sizes.get(n, 1000) for n in held.size_names()}) < IN_PLACE_MIN:
            continue
        a, b = (ast.get_source_segment(text, x) for x in (op.left, op.right))
        target = ast.get_source_segment(text, stmt.targets[0])
        indent = line[: len(line) - len(line.lstrip())]
        return (f"{indent}{target} = _rt.into({operand.id}, {_UFUNCS[type(op.op)]}, "
                f"{a}, {b})")
    return line


# NumPy's elementwise ufuncs from floats to floats of the operands' dtype, as the generated code
# calls them (operators, and one-argument functions).
_UNARY_UFUNCS = frozenset({"np.sqrt", "np.exp", "np.log", "np.sin", "np.cos", "np.tanh",
                           "np.abs", "np.log1p", "np.expm1", "np.negative"})
_COMMUTATIVE = (ast.Add, ast.Mult)


def _chain_into(line: str, name: str) -> str:
    """``line`` with the elementwise operations that its last read of ``name`` (released after
    the line) feeds, up to the first whose other operand is a temporary NumPy writes into
    anyway, written into ``name``'s array (``_rt.reuse``, checked when it runs): the array is
    dead once read, so the line holds one array less (``1 / (2 * sqrt(r)) * sqrt(r) ** 2``
    reuses ``r`` for ``sqrt(r) ** 2``, where it would hold ``r``, the left factor and a third
    array). Unchanged when the last read is no operand of such an operation."""
    text = line.strip()
    tree = ast.parse(text)
    stmt = tree.body[0]
    if not isinstance(stmt, ast.Assign | ast.AugAssign) or any(
            isinstance(n, ast.Lambda | ast.IfExp | ast.NamedExpr | ast.comprehension
                       | ast.BoolOp | ast.Compare) for n in ast.walk(stmt.value)):
        return line
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
            and stmt.target.id == name:
        return line
    parents: dict[int, ast.AST] = {}
    order: list[ast.AST] = []

    def visit(node: ast.AST) -> None:  # evaluation order: operands left to right, then node
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            visit(child)
        order.append(node)

    visit(stmt.value)
    reads = [n for n in order if isinstance(n, ast.Name) and n.id == name]
    if not reads:
        return line
    node: ast.expr = reads[-1]
    wrapped = None
    while True:
        parent = parents.get(id(node))
        call = _elementwise(parent, node)
        if call is None:
            break
        ufunc, operands = call
        if isinstance(parent, ast.BinOp):
            other = parent.right if parent.left is node else parent.left
            if _temporary(other) and (isinstance(parent.op, _COMMUTATIVE)
                                      or other is parent.left):
                break  # NumPy computes the result into that temporary
        new = ast.Call(ast.Attribute(ast.Name("_rt"), "reuse"), [ufunc, *operands],
                       [ast.keyword("dead", ast.Name(name))])
        _replace(parents[id(parent)] if id(parent) in parents else stmt, parent, new)
        parents[id(new)] = parents.get(id(parent), stmt)
        wrapped = node = new
    if wrapped is None:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    return indent + ast.unparse(stmt)


def _temporary(e: ast.expr) -> bool:
    """Whether ``e`` computes a new array (not a name, a number, a view or a slice of one)."""
    return not isinstance(e, ast.Name | ast.Constant | ast.Attribute | ast.Subscript) and not (
        isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant))


def _elementwise(parent: ast.AST | None, node: ast.expr
                 ) -> tuple[ast.expr, list[ast.expr]] | None:
    """The ufunc and operands of ``parent`` when it is an elementwise operation with ``node``
    as an operand, else None."""
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow):
        if parent.left is not node:
            return None
        try:
            k = ast.literal_eval(parent.right)
        except ValueError:
            k = None
        if isinstance(k, int | float) and not isinstance(k, bool):
            # NumPy computes these powers by other ufuncs (its fast scalar powers): the same
            # ones here, so that the values are the operator's (sqrt(-0.0) is -0.0)
            fast = {2: "np.square", -1: "np.reciprocal", 0.5: "np.sqrt"}.get(k)
            if fast is not None:
                return ast.parse(fast).body[0].value, [parent.left]
            if k in (0, 1):
                return None
        return ast.parse("np.power").body[0].value, [parent.left, parent.right]
    if isinstance(parent, ast.BinOp) and type(parent.op) in _UFUNCS:
        return ast.parse(_UFUNCS[type(parent.op)]).body[0].value, [parent.left, parent.right]
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
        return ast.parse("np.negative").body[0].value, [parent.operand]
    if (isinstance(parent, ast.Call) and ast.unparse(parent.func) in _UNARY_UFUNCS
            and len(parent.args) == 1 and not parent.keywords and parent.args[0] is node):
        return parent.func, [node]
    return None


def _replace(holder: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put ``new`` where ``holder`` has ``old``."""
    for field, value in ast.iter_fields(holder):
        if value is old:
            setattr(holder, field, new)
            return
        if isinstance(value, list):
            for k, item in enumerate(value):
                if item is old:
                    value[k] = new
                    return
    raise AssertionError("not a child")


def _parse(line: str) -> _Line:
    text = line.strip()
    level = (len(line) - len(line.lstrip())) // 4 - 1
    if not text or text.startswith("#"):
        return _Line(level, frozenset(), None, False, False)
    header = text.endswith(":") and text.split()[0] in ("for", "if", "while")
    tree = ast.parse(text + " pass" if header else text)
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    stmt = tree.body[0]
    defines = None
    if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        defines = stmt.targets[0].id
    return _Line(level, names, defines, header, isinstance(stmt, ast.Return))


def _block(info: Sequence[_Line], start: int, end: int, level: int, head: int) -> _Block:
    items: list[tuple[int, int, _Block | None]] = []
    k = start
    while k < end:
        j = k + 1
        if info[k].header:
            while j < end and info[j].level > level:
                j += 1
            items.append((k, j, _block(info, k + 1, j, level + 1, k)))
        else:
            items.append((k, j, None))
        k = j
    return _Block(head, end, level, items)


def _owned(info: Sequence[_Line], kernels: Sequence[Kernel]) -> dict[int, Poly]:
    """Line -> elements of the array its definition holds (the last allocation on the line)."""
    out: dict[int, Poly] = {}
    for k in kernels:
        if k.line >= 0 and not k.alloc.is_zero() and info[k.line].defines is not None:
            out[k.line] = k.alloc
    return out


def _arrays(info: Sequence[_Line], owned: Mapping[int, Poly], keep: frozenset[str] | set[str]
            ) -> set[str]:
    """The names that hold (or refer to) an array the code allocated."""
    arrays: set[str] = set()
    for k, li in enumerate(info):
        n = li.defines
        if n is None or n in keep:
            continue
        size = owned.get(k)
        if size is not None and (size.size_names() or size.evaluate({}) > 1):
            arrays.add(n)
        elif size is None and (li.names - {n}) & arrays:
            arrays.add(n)  # a view or an alias of one
    return arrays


def _release_point(top: _Block, info: Sequence[_Line], uses: Sequence[int], name: str
                   ) -> tuple[int, _Block] | None:
    """The line after which ``name`` is released and the block it is released in (None: it is
    returned, or not defined before its first use in any block holding all its uses)."""
    # the innermost block holding every use, then out of the blocks that do not define the
    # name before using it (a loop that carries it from one iteration to the next)
    chain = [top]
    while True:
        inner = next((b for s, e, b in chain[-1].items if b is not None and s < uses[0]
                      and uses[-1] < e), None)
        if inner is None:
            break
        chain.append(inner)
    while chain and not _defined_first(chain[-1], info, uses[0], name):
        chain.pop()
    if not chain:
        return None
    block = chain[-1]
    last = next((s, e) for s, e, _ in block.items if s <= uses[-1] < e)
    if info[last[0]].returns:
        return None
    return last[1] - 1, block


def _defined_first(block: _Block, info: Sequence[_Line], first: int, name: str) -> bool:
    """Whether the first use of ``name`` is a definition directly in ``block``."""
    return info[first].defines == name and any(s == first and b is None
                                               for s, _, b in block.items)


def _lifetimes(info: Sequence[_Line], owned: Mapping[int, Poly], arrays: set[str],
               new_at: Sequence[int], del_line: Mapping[str, list[int]],
               released_in: Mapping[str, _Block], top: _Block, last: int,
               reused: Mapping[str, set[int]]) -> tuple[Lifetime, ...]:
    """One lifetime per definition of an array name (new line numbers): to the next definition
    of the name, its release, or the end; aliases extend what they refer to. An array a line
    writes its result into (``reused``: name -> old lines) ends before that line: the line's
    allocation is that array."""
    defs: dict[str, list[int]] = {}
    for k, li in enumerate(info):
        if li.defines in arrays:
            defs.setdefault(li.defines, []).append(k)
    in_loop = {k for k, li in enumerate(info) if li.level > 0}
    out: list[Lifetime] = []
    for name, ks in defs.items():
        dels = sorted(del_line.get(name, []))
        for n, k in enumerate(ks):
            start = new_at[k]
            ends = [d for d in dels if d > start]
            if n + 1 < len(ks):
                ends.append(new_at[ks[n + 1]])
            end = min(ends, default=last)
            into = [new_at[j] for j in reused.get(name, ()) if start < new_at[j] <= end]
            if into:
                end = min(into) - 1
            # defined in a loop, released only after it: two arrays while the line runs
            looped = k in in_loop and (name not in released_in or released_in[name] is top)
            out.append(Lifetime(name, owned.get(k, ZERO), start, end, looped))
    # an alias holds what it refers to: later aliases first (an alias of an alias)
    by_start = sorted(range(len(out)), key=lambda i: -out[i].start)
    old_line = {v: k for k, v in enumerate(new_at)}
    for i in by_start:
        lt = out[i]
        if not lt.elements.is_zero():
            continue
        refers = info[old_line[lt.start]].names - {lt.name}
        for j, other in enumerate(out):
            if (other.name in refers and other.start < lt.start <= other.end
                    and other.end < lt.end):
                out[j] = replace(other, end=lt.end)
    return tuple(sorted(out, key=lambda lt: (lt.start, lt.name)))
