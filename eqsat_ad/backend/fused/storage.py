"""Where the generated ``run`` function keeps each array a loop nest writes, and what it returns.

A loop nest writes into an array the run function allocates before calling it: the caller's
buffer (``out=``) for an output, an array kept from call to call in this thread's ``_tmp`` for
an intermediate no caller and no NumPy code sees (a fresh multi-megabyte array per call costs
its page faults whenever the allocator has handed the memory back to the system), else a
fresh ``np.empty``. A new output or kept intermediate starts apart (modulo 4 KiB) from the
arrays its loop nest reads (:mod:`.apart`: else a stencil's stores can hold up its loads). A
scalar is an array of one entry, as the loop nests read it. An output that is an expression,
not a whole array, is first a scalar statement of its own (:func:`with_outputs`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from ...ir.expr import Access, Expr
from ...ir.index import Dim
from ...ir.program import Program, Statement
from .epilogue import PRODUCT_IMPORT

__all__ = ["APART_IMPORT", "array_lines", "apart_new", "module_head", "return_line",
           "shared_buffers", "with_outputs"]

APART_IMPORT = f"from {__package__}.apart import empty_apart as _apart"


def with_outputs(prog: Program) -> Program:
    """Outputs that are expressions (not whole arrays) become scalar statements ``_out<k>``."""
    stmts = list(prog.statements)
    outs: list[Expr] = []
    for k, o in enumerate(prog.outputs):
        if isinstance(o, Access) and not o.indices:
            outs.append(o)
        else:
            stmts.append(Statement(f"_out{k}", (), o))
            outs.append(Access(f"_out{k}"))
    return Program(prog.params, tuple(stmts), tuple(outs), prog.returns_tuple, prog.name)


def apart_new(shape: Sequence[Dim], reads: Sequence[str]) -> str:
    """The run function's expression for a new array of ``shape`` that a loop nest reading
    ``reads`` writes: apart from them modulo 4 KiB (:func:`.apart.empty_apart`)."""
    dims = ", ".join(str(d) for d in shape)
    return f"_apart(({dims},), F, ({''.join(f'{r}, ' for r in reads)}))"


def array_lines(s: Statement, position: Mapping[str, int], seen_by_numpy: Collection[str],
                reads: Sequence[str] = (), over: str | None = None) -> list[str]:
    """The run function's lines binding ``s.name`` to the array its loop nest writes
    (``position``: the outputs' indices; ``seen_by_numpy``: arrays NumPy code reads, which
    may return a view of them; ``reads``: the arrays the loop nest reads; ``over``: the array
    it writes in place, :mod:`.inplace`)."""
    if over is not None:
        return [f"    {s.name} = {over}  # (in place: {over} is read at {s.name}'s points only)"]
    shape = ", ".join(str(d) for d in s.shape) or "1"
    k = position.get(s.name)
    if k is not None and s.shape:
        new = apart_new(s.shape, reads)
        return [f"    {s.name} = _buf[{k}] if _buf[{k}] is not None else {new}"]
    if k is None and s.shape and s.name not in seen_by_numpy:
        # never returned nor read by NumPy code (a view of it cannot escape)
        return [f"    {s.name} = _tmp.get({s.name!r})",
                f"    if {s.name} is None or {s.name}.shape != ({shape},):",
                f"        {s.name} = _tmp[{s.name!r}] = {apart_new(s.shape, reads)}"]
    return [f"    {s.name} = np.empty(({shape},), dtype=F)"]


_KEPT = re.compile(r"^    (\w+) = _tmp\.get\('(\w+)'\)$")
_SHAPE = re.compile(r"^    if (\w+) is None or \1\.shape != \((.*)\):$")
_ALIAS = re.compile(r"^    (\w+) = (\w+)  # \(in place")


def shared_buffers(run: Sequence[str]) -> list[str]:
    """The run function's lines with intermediates of one shape kept in one array where their
    lives do not overlap: an array kept in ``_tmp`` (:func:`array_lines`,
    :func:`.epilogue.product_run`) whose every use comes before another's binding lends it
    its array (mlp_numpy's ``h_bar`` takes ``_p_h``'s, last read by ``h``'s loop nest). Fewer
    arrays stay in the caches and in memory, as the NumPy program's temporaries reuse freed
    blocks (measured, interleaved: mlp_numpy's gradient 12.56 -> 12.44 ms).

    A use is any later line naming the array, or naming a loop nest's output written over it
    (``t_bar = h_bar  # (in place``: :mod:`.inplace`). No view of a kept array outlives it:
    NumPy code that may return a view of what it reads never reads one (``seen_by_numpy``),
    and the loop nests and BLAS write into arrays, never view them."""
    lines = list(run)
    kept: list[tuple[int, str, str]] = []  # (binding line, name, shape)
    for k, line in enumerate(lines):
        m = _KEPT.match(line)
        shape = _SHAPE.match(lines[k + 1]) if m and k + 1 < len(lines) else None
        if m and m.group(1) == m.group(2) and shape and shape.group(1) == m.group(1):
            kept.append((k, m.group(1), shape.group(2)))
    if len(kept) < 2:
        return lines

    def last_use(name: str, after: int) -> int:
        word = re.compile(rf"\b{name}\b")
        return max([after, *(j for j in range(after + 1, len(lines))
                             if word.search(lines[j]) and not lines[j].lstrip().startswith("#"))])

    last = {name: last_use(name, k + 2) for k, name, _ in kept}
    root: dict[str, str] = {}  # a loop nest written in place: its name, the array's holder's
    for k, line in enumerate(lines):
        m = _ALIAS.match(line)
        if m and root.get(m.group(2), m.group(2)) in last:
            root[m.group(1)] = holder = root.get(m.group(2), m.group(2))
            last[holder] = max(last[holder], last_use(m.group(1), k))
    slots: list[list] = []  # [slot's key, shape, last use of its holder]
    for k, name, shape in kept:
        free = next((slot for slot in slots if slot[1] == shape and slot[2] < k), None)
        if free is None:
            slots.append([name, shape, last[name]])
            continue
        key = free[0]
        free[2] = last[name]
        lines[k] = f"    {name} = _tmp.get({key!r})  # ({key}'s array: no longer read)"
        lines[k + 2] = lines[k + 2].replace(f"_tmp[{name!r}]", f"_tmp[{key!r}]")
    return lines


def return_line(prog: Program, shapes: Mapping[str, Sequence[Dim]]) -> str:
    """The run function's return: the outputs (a scalar's one entry) and the flag saying an
    argument lay outside its proven bounds."""
    outs = []
    for o in prog.outputs:
        assert isinstance(o, Access)
        outs.append(o.name if shapes[o.name] else f"{o.name}[0]")
    ret = ", ".join(outs) + ("," if prog.returns_tuple and len(outs) == 1 else "")
    return f"    return ({ret}), _bad" if prog.returns_tuple else f"    return {ret}, _bad"


def module_head(prog: Program, sizes: Sequence[str], run: Sequence[str]) -> list[str]:
    """The generated module's docstring and imports (``F`` is the float64 version's: each
    float type's module replaces that line) for the ``run`` function's lines."""
    imports = [imp for imp, use in ((PRODUCT_IMPORT, "_product_into("),
                                    (APART_IMPORT, "_apart(")) if any(use in r for r in run)]
    return [
        f'"""Fused loop nests for {prog.name}({", ".join(prog.param_names)})'
        f' (sizes {", ".join(sizes) or "none"}), generated by eqsat_ad."""',
        "import numba as nb",
        "import numpy as np",
        "",
        "F = np.float64",
        *imports,
    ]
