"""Generated kernels written so that Numba compiles them sooner, into the same machine code.

A first call with a cold cache is Numba's compiler over the generated code (type inference,
SSA, lowering and LLVM), so its time grows with the number of Numba IR instructions and calls
it types, not with what the loops compute. Three forms cost the compiler without changing
what LLVM makes of them:

* ``F(c)`` at each use is a call Numba types and lowers at each site; a kernel names each
  constant once, at its top (:func:`hoist_constants`): LLVM propagates the constant back.
* Builtin ``min``/``max`` of integers are overloads Numba compiles as functions of their own
  (one per arity and argument types, ~0.04 s each): bounds between integer literals are
  folded here and the others written as conditional expressions (:func:`extreme`).
* Every kernel had a C callback wrapper (``cfunc``) compiled and optimized beside it; the
  generated code calls kernels only from Python (:data:`JIT`: none).

What no form removes: each conditional expression or statement of a kernel splits its blocks,
and Numba's SSA pass grows about quadratically with them in one function. A module's kernel
with more than :data:`MAX_BRANCHES` of them is not written (:func:`kernel_within_budget`): the
program is scheduled again with its statements as kernels of their own (siblings of one pass)
or, for one statement, as NumPy code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

__all__ = ["INLINED", "JIT", "MAX_BRANCHES", "OverBudget", "branches", "extreme",
           "hoist_constants", "kernel_within_budget", "within_budget"]

JIT = '@nb.njit(cache=True, error_model="numpy", no_cfunc_wrapper=True)'
"""A kernel's decorator."""

MAX_BRANCHES = 256
"""Branches a kernel may hold: conditional expressions, ``if``, ``for`` and ``while``, each
further comparison of a chain (``0 <= k < N``) or operand of ``and``/``or``, and each call of
a helper Numba inlines into the kernel (:data:`INLINED`). Measured cold compiles (one core):
217 (the blur window sum's gradient) about 6 s of its first call's 8.9 s; a fuzzed gradient's
456 and 1087 (step and max of guarded reads, its terms unrolled) 25 s and 135 s, a program's
two sums of 130 shifted ``exp`` and ``sin`` reads (396 and 266) 72 s, in Numba's SSA
reconstruction."""

INLINED = {"_exp": 1, "_expm1": 1, "_tanh": 1, "_sigmoid": 1, "_softplus": 1, "_step": 4}
"""The generated module's helpers compiled into each caller (``inline="always"``: a block of
their own at each call), with the branches each brings."""


def branches(fn: ast.FunctionDef) -> int:
    """The branches of a kernel, as :data:`MAX_BRANCHES` counts them."""
    n = 0
    for node in ast.walk(fn):
        if isinstance(node, ast.IfExp | ast.If | ast.For | ast.While):
            n += 1
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
        elif isinstance(node, ast.Compare):
            n += len(node.comparators) - 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            n += INLINED.get(node.func.id, 0)
    return n


def within_budget(code: str) -> bool:
    """Whether the kernels in ``code`` each hold at most :data:`MAX_BRANCHES` branches (False
    for code that does not parse: a writer's defect, run as NumPy code rather than crash)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return all(branches(fn) <= MAX_BRANCHES for fn in tree.body
               if isinstance(fn, ast.FunctionDef))


class OverBudget(Exception):
    """A kernel of the statements :attr:`names` is past the branch budget."""

    def __init__(self, names: set[str]) -> None:
        super().__init__(f"kernel of {sorted(names)} past {MAX_BRANCHES} branches")
        self.names = names


def kernel_within_budget(code: str, names: set[str]) -> str:
    """``code`` (a kernel of the statements ``names``), or :class:`OverBudget`."""
    if not within_budget(code):
        raise OverBudget(names)
    return code


# a float constant of the module's type, as :func:`.code.literal` writes it
_CONST = re.compile(r"(?<![\w.])F\((-?(?:np\.(?:nan|inf)|\d[\w.+-]*))\)")


def hoist_constants(lines: list[str]) -> list[str]:
    """A kernel's body ``lines`` (indented by four) with each constant ``F(c)`` named once,
    ``_cst<k> = F(c)`` at the top, and read by that name (the same value and type)."""
    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return names.setdefault(m.group(1), f"_cst{len(names)}")

    body = [line if line.lstrip().startswith("#") else _CONST.sub(name, line)
            for line in lines]
    return [f"    {n} = F({c})" for c, n in names.items()] + body


def extreme(fn: str, codes: Iterable[str]) -> str:
    """Code of ``fn`` (``"min"`` or ``"max"``) of the integer codes ``codes``, with no call
    (Numba would compile the builtin's overload for it): codes that differ by an integer
    (``W``, ``W + 1``, ``W - 1``; integer literals) folded into the one that is the extreme,
    the rest as nested conditional expressions."""
    pick = min if fn == "min" else max
    by_base: dict[str, int] = {}
    for c in codes:
        m = _OFFSET.fullmatch(c)
        base, off = (m.group(1), int(m.group(3)) * (1 if m.group(2) == "+" else -1)) if m \
            else (c, 0)
        if base.lstrip("-").isdigit():
            base, off = "", int(base)
        by_base[base] = pick(by_base.get(base, off), off)
    if not by_base:
        raise ValueError(f"{fn} of nothing")
    parts = [str(off) if not base else base if off == 0 else
             f"{base} {'+' if off > 0 else '-'} {abs(off)}" for base, off in by_base.items()]
    op = "<" if fn == "min" else ">"
    out = _wrap(parts[0])
    for c in parts[1:]:
        c = _wrap(c)
        out = f"({c} if {c} {op} {out} else {out})"
    return out


_OFFSET = re.compile(r"(.+?) ([+-]) (\d+)")


def _wrap(code: str) -> str:
    """``code`` as an operand (parenthesized unless a name, a literal or already enclosed)."""
    if " " not in code and not code.startswith("-"):
        return code
    depth = 0
    for k, ch in enumerate(code):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(code) - 1:
            return f"({code})"
    return code if code.startswith("(") else f"({code})"
