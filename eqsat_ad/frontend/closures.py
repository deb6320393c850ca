"""What a Python function brings with it besides its parameters: lambdas and captured arrays.

* A ``lambda`` has no ``def`` to read: its source line is parsed and the lambda whose body starts
  where the code object says is turned into the equivalent one-statement ``def``.
* An array a function reads from its closure or its module (``W`` in ``lambda x: W @ x``) is a
  constant of the specialization, as ``jax.grad`` treats it: the translator makes it an extra
  parameter of the program (never differentiated), and the compiled function reads the array
  again at each call, so rebinding or mutating it is seen (a new shape compiles a new version).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.errors import ProgramError
from ..ir.expr import Loc

LAMBDA_NAME = "lambda_"
"""The name of a translated lambda's program (``lambda`` is a keyword)."""


def lambda_source(fn: types.FunctionType) -> tuple[ast.FunctionDef, str, int, int]:
    """The ``def`` equivalent to the lambda ``fn``, its file, first line and dedent width."""
    try:
        lines, line0 = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise ProgramError(f"cannot read the source of the lambda ({e}); define it with 'def' "
                           "in a file") from None
    first = lines[0]
    col0 = len(first) - len(first.lstrip())
    src = textwrap.dedent("".join(lines))
    tree = _parse_fragment(src)
    if tree is None:
        raise ProgramError("cannot parse the source lines of the lambda; define it with 'def'",
                           Loc(line0, col0, filename))
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    chosen = _the_lambda(fn, lambdas, line0, col0)
    if chosen is None:
        raise ProgramError(
            "cannot tell which lambda of this line is being translated; define it with 'def'",
            Loc(line0, col0, filename),
        )
    body = ast.Return(chosen.body)
    ast.copy_location(body, chosen.body)
    node = ast.FunctionDef(LAMBDA_NAME, chosen.args, [body], [], None, None, [])
    ast.copy_location(node, chosen)
    ast.fix_missing_locations(node)
    return node, filename, line0, col0


def _parse_fragment(src: str) -> ast.Module | None:
    """The source lines of a lambda may be part of a larger statement: try them as they are,
    then inside parentheses (a continuation line of a call)."""
    for text in (src, f"(\n{src}\n)"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if text is not src:  # undo the line the parenthesis took
            for n in ast.walk(tree):
                if hasattr(n, "lineno"):
                    n.lineno -= 1
                    n.end_lineno = (n.end_lineno or n.lineno + 1) - 1
        return tree
    return None


def _the_lambda(fn: types.FunctionType, lambdas: list[ast.Lambda], line0: int, col0: int
                ) -> ast.Lambda | None:
    code = fn.__code__
    names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    same_args = [
        lam for lam in lambdas
        if [a.arg for a in lam.args.posonlyargs + lam.args.args + lam.args.kwonlyargs] == names
    ]
    if len(same_args) == 1:
        return same_args[0]
    # several lambdas with the same parameters on the line: the code object knows where its
    # instructions are
    spots = {(ln, col) for ln, _, col, _ in code.co_positions()
             if ln is not None and col is not None}

    def holds(lam: ast.Lambda) -> bool:
        b = lam.body
        start = (line0 + b.lineno - 1, b.col_offset + col0)
        end = (line0 + (b.end_lineno or b.lineno) - 1, (b.end_col_offset or 0) + col0)
        return any(start <= spot < end for spot in spots)

    inside = [lam for lam in same_args if holds(lam)]
    # nested lambdas: the innermost one whose body holds the instructions
    inside.sort(key=lambda lam: (lam.body.lineno, lam.body.col_offset), reverse=True)
    return inside[0] if inside else None


@dataclass
class ConstantArrays:
    """Collects the arrays a translation reads from closures and module globals.

    ``dims``: size symbol of each dimension value (from the call's arguments), so a captured
    ``W`` of shape (N,) lines up with ``x: [N]``; ``found``: program parameter -> where the
    array lives, filled by the translator.
    """

    dims: Mapping[int, str] = field(default_factory=dict)
    found: dict[str, tuple[Any, str, tuple[int, ...]]] = field(default_factory=dict)
    """parameter -> (holder: a closure cell or a globals dict, name in it, shape when read)"""
    by_id: dict[int, str] = field(default_factory=dict)

    def shape_of(self, arr: np.ndarray) -> tuple[int | str, ...]:
        return tuple(self.dims.get(n, n) if n not in (0, 1) else n for n in arr.shape)

    def values(self) -> dict[str, np.ndarray]:
        """The arrays as they are now (read at every call)."""
        return {p: _read(holder, name) for p, (holder, name, _) in self.found.items()}

    def unchanged(self) -> bool:
        """Whether every captured array still has the shape it was translated with."""
        for holder, name, shape in self.found.values():
            try:
                now = _read(holder, name)
            except (KeyError, ValueError):
                return False
            if not isinstance(now, np.ndarray) or now.shape != shape:
                return False
        return True


def _read(holder: Any, name: str) -> Any:
    if isinstance(holder, types.CellType):
        return holder.cell_contents
    return holder[name]


def closure_cells(fn: Any) -> dict[str, types.CellType]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    return dict(zip(code.co_freevars, cells, strict=False))
