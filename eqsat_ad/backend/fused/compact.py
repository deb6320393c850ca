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
and Numba's SSA pass grows about quadratically with them in one function. A statement whose
kernel alone has more than :data:`MAX_BRANCHES` of them runs as NumPy code instead
(:func:`within_budget`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

__all__ = ["JIT", "MAX_BRANCHES", "extreme", "hoist_constants", "within_budget"]

JIT = '@nb.njit(cache=True, error_model="numpy", no_cfunc_wrapper=True)'
"""A kernel's decorator."""

MAX_BRANCHES = 256
"""Conditional expressions, ``if``, ``for`` and ``while`` a kernel may hold. Measured cold
compiles (one core): 196 (the blur window sum's gradient, one kernel) about 6 s of its first
call's 8.9 s; 336 and 702 (a fuzzer's program: step and max of guarded reads, its terms
unrolled) 25 s and 135 s, in Numba's SSA reconstruction."""


def within_budget(code: str) -> bool:
    """Whether the kernels in ``code`` each hold at most :data:`MAX_BRANCHES` branches."""
    for fn in ast.parse(code).body:
        if isinstance(fn, ast.FunctionDef) and sum(
                isinstance(n, ast.IfExp | ast.If | ast.For | ast.While)
                for n in ast.walk(fn)) > MAX_BRANCHES:
            return False
    return True


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
