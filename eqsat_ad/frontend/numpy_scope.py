"""A function the NumPy translator reads: its source, closure and scope, and loop state.

:class:`Scope` is one function being translated (the user's function or an inlined helper): where
its source is, its globals, closure and the values of its names. While a ``for`` loop is turned
into a sum, a :class:`Frame` records what its body assigns and accumulates, and a
:class:`LoopVar` the range of its binder; a name whose value after such a loop is not known is
:class:`Poisoned`. The functions read the facts about names the translator needs from the syntax
tree.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.errors import ProgramError
from ..ir.expr import Expr, Loc, substitute_pred
from ..ir.index import Affine, Dim
from .closures import lambda_source
from .numpy_values import PredVal, TVal, subst

__all__ = [
    "Frame", "LoopVar", "Poisoned", "Returned", "Scope", "assigned_names", "closure_of",
    "identifiers", "names_in", "source_of", "subst_loop",
]


@dataclass
class Returned:
    value: Any


@dataclass(frozen=True)
class Poisoned:
    """A name whose value after a summed loop is not known; reading it fails with ``why``."""

    why: str


@dataclass
class Frame:
    """A ``for`` loop being turned into a sum over the fresh index ``var``."""

    var: str
    assigned: frozenset[str]
    defined: set[str] = field(default_factory=set)
    acc: dict[str, list[Any]] = field(default_factory=dict)
    """Contributions per accumulated name: arrays, or integers (counters) summed exactly."""
    guards: list[Expr] = field(default_factory=list)
    """0/1 factors of the enclosing ifs on the loop index (brackets)."""


@dataclass
class Scope:
    """One function being translated (the user's function or an inlined helper)."""

    fn_name: str
    filename: str
    line0: int
    col0: int
    globals: Mapping[str, Any]
    closure: Mapping[str, Any]
    env: dict[str, Any]
    frames: list[Frame] = field(default_factory=list)
    depth: int = 0
    cells: Mapping[str, Any] = field(default_factory=dict)
    """the closure's cells, where a captured array is read again at each call"""


@dataclass(frozen=True)
class LoopVar:
    extent: Dim
    last: Affine
    """Value of the binder in the last iteration (the range analysis uses [0, last])."""


def source_of(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str, int, int]:
    """The function's syntax tree, file name, first line in the file and dedent width."""
    fn = inspect.unwrap(fn)
    name = getattr(fn, "__name__", repr(fn))
    if name == "<lambda>" and isinstance(fn, types.FunctionType):
        return lambda_source(fn)
    try:
        lines, line0 = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise ProgramError(
            f"cannot read the source of {name!r} ({e}); define it with 'def' in a file"
        ) from None
    first = lines[0]
    col0 = len(first) - len(first.lstrip())
    src = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise ProgramError(
            f"cannot parse the source of {name!r}: {e.msg}",
            Loc(line0 + (e.lineno or 1) - 1, (e.offset or 1) - 1 + col0, filename),
        ) from None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        kind = "a lambda" if name == "<lambda>" else type(node).__name__
        raise ProgramError(
            f"can only translate functions defined with 'def', got {kind}",
            Loc(line0, col0, filename),
        )
    return node, filename, line0, col0


def identifiers(node: ast.AST) -> set[str]:
    """Names the function assigns arrays to (loop targets excepted), kept free for statements."""
    loop_targets: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.For):
            loop_targets |= {id(t) for t in ast.walk(n.target)}
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in loop_targets:
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def assigned_names(stmts: Sequence[ast.stmt]) -> frozenset[str]:
    """Names the statements bind, including arrays updated by item assignment (``y[i] = v``)."""
    out: set[str] = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                root = n.value
                while isinstance(root, ast.Subscript):
                    root = root.value
                if isinstance(root, ast.Name):
                    out.add(root.id)
    return frozenset(out)


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def subst_loop(v: Any, var: str, value: Affine) -> Any:
    """Replace the loop binder ``var`` by ``value`` inside a translator value."""
    if isinstance(v, TVal):
        return TVal(v.shape, v.axes, subst(v.body, {var: value}), v.base, v.boolean)
    if isinstance(v, Affine):
        return v.substitute({var: value})
    if isinstance(v, PredVal):
        return PredVal(substitute_pred(v.pred, {var: value}))
    if isinstance(v, tuple):
        return tuple(subst_loop(x, var, value) for x in v)
    if isinstance(v, list):
        return [subst_loop(x, var, value) for x in v]
    return v


def closure_of(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out
