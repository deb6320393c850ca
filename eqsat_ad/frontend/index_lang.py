"""Parser of the index language (docs/index-language.md).

The source is Python syntax read with :mod:`ast`; it is never executed. One ``def`` with typed
parameters, single-assignment statements and a ``return``::

    def f(A: [N, N], x: [N], M: rel[N, N], w: []):
        y[i: N] = Sum[j: N](A[i, j] * x[j])
        s = Sum[i: N, j: N](M[i, j] * A[i, j])
        d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
        return w * Sum[i: N](x[i] * y[i]) + s + Sum[i: N](d[i] ** 2)

The concrete syntax is the one :mod:`eqsat_ad.ir.printer` writes, so ``parse(print_program(p))
== p``. In particular ``-2`` is the constant -2 while ``-(2)`` negates the constant 2, a
comparison (or an ``and`` of comparisons) is an Iverson bracket, and a relation parameter accessed
as ``M[i, j]`` is a bracket on the relation. Every construct outside the language is a
:class:`ProgramError` that names it, with its line and column.

This module reads the function (parameters, statements, folds, the return);
:mod:`.index_lang_exprs` reads the expressions in it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from ..ir.checks import check_program
from ..ir.errors import ProgramError
from ..ir.expr import Expr, Loc
from ..ir.program import Fold, Param, Program, Statement, Step
from .index_lang_exprs import INDEX_LIMIT as INDEX_LIMIT
from .index_lang_exprs import ExprParser, construct
from .long_chains import split_long_chains

__all__ = ["parse", "tensor_fn"]


class _Parser(ExprParser):
    """Translates one function definition: its parameters, statements, folds and return."""

    # --- the function --------------------------------------------------------------------------
    def function(self, fn: ast.FunctionDef) -> Program:
        a = fn.args
        for bad, what in (
            (a.posonlyargs, "positional-only parameters"),
            (a.kwonlyargs, "keyword-only parameters"),
            (a.defaults, "default values"),
        ):
            if bad:
                raise self.error(f"{what} are not supported", bad[0])
        if a.vararg is not None:
            raise self.error(f"variable parameters '*{a.vararg.arg}' are not supported", a.vararg)
        if a.kwarg is not None:
            raise self.error(f"variable parameters '**{a.kwarg.arg}' are not supported", a.kwarg)
        if fn.returns is not None:
            raise self.error("a return annotation is not supported", fn.returns)
        if getattr(fn, "type_params", None):
            raise self.error("type parameters are not supported", fn.type_params[0])
        params = tuple(self.param(arg) for arg in a.args)
        self.relations = {p.name for p in params if p.kind == "relation"}
        self.sizes = {d.name for p in params for d in p.shape if not isinstance(d, int)}

        body = list(fn.body)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]  # a docstring
        statements: list[Step] = []
        bodies: dict[str, ast.FunctionDef] = {}  # nested defs: the bodies of folds, latest wins
        used: set[int] = set()
        for k, node in enumerate(body):
            if isinstance(node, ast.FunctionDef):
                bodies[node.name] = node
            elif isinstance(node, ast.Assign) and _is_fold(node.value):
                statements.append(self.fold(node, bodies, used))
            elif isinstance(node, ast.Assign):
                statements.append(self.statement(node))
            elif isinstance(node, ast.Return):
                if k != len(body) - 1:
                    raise self.error("statements after 'return' are not supported", body[k + 1])
                outputs, as_tuple = self.returns(node)
                for d in bodies.values():
                    if id(d) not in used:
                        raise self.error("nested function definition is not supported except "
                                         "as the body of a Fold", d)
                return Program(params, tuple(statements), outputs, as_tuple, fn.name)
            else:
                raise self.unsupported(node)
        raise self.error(f"function '{fn.name}' has no return statement", fn)

    def param(self, arg: ast.arg) -> Param:
        ann = arg.annotation
        hint = (f"write {arg.arg}: [N, M], {arg.arg}: [], {arg.arg}: rel[N, M] or "
                f"{arg.arg}: idx[E, N]")
        if ann is None:
            raise self.error(f"parameter '{arg.arg}' has no shape annotation; {hint}", arg)
        if isinstance(ann, ast.List):
            return Param(arg.arg, tuple(self.dim(d) for d in ann.elts), "tensor", self.loc(arg))
        if (
            isinstance(ann, ast.Subscript)
            and isinstance(ann.value, ast.Name)
            and ann.value.id == "rel"
        ):
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return Param(arg.arg, tuple(self.dim(d) for d in elts), "relation", self.loc(arg))
        if (
            isinstance(ann, ast.Subscript)
            and isinstance(ann.value, ast.Name)
            and ann.value.id == "idx"
        ):
            # An index array src[e] in 0 .. N-1 is the relation [src[e] == i]: rel[E, N].
            elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if len(elts) < 2:
                raise self.error(
                    f"index array '{arg.arg}' needs its shape and its range: "
                    f"{arg.arg}: idx[E, N] (E entries, each in 0 .. N-1)", ann)
            p = Param(arg.arg, tuple(self.dim(d) for d in elts), "relation", self.loc(arg))
            self.index_arrays[arg.arg] = p
            return p
        raise self.error(f"parameter '{arg.arg}' has an unknown shape annotation; {hint}", ann)

    def statement(self, node: ast.Assign) -> Statement:
        if len(node.targets) != 1:
            raise self.error("chained assignment 'a = b = ...' is not supported", node)
        target = node.targets[0]
        if isinstance(target, ast.Name):
            name, gens = target.id, ()
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            name = target.value.id
            gens = self.binders(target.slice, f"the left-hand side of '{name}'")
        else:
            raise self.error(
                f"cannot assign to '{self.text(target)}': write 'y = ...' or 'y[i: N] = ...'",
                target,
            )
        scope = frozenset(iv.name for iv in gens)
        return Statement(name, gens, self.expr(node.value, scope), self.loc(node))

    def fold(self, node: ast.Assign, bodies: dict[str, ast.FunctionDef], used: set[int]) -> Fold:
        """``c, ys = Fold[T](body, carry=(c0,), scan=(x,), const=(W,), reverse=True)``."""
        if len(node.targets) != 1:
            raise self.error("chained assignment 'a = b = ...' is not supported", node)
        target = node.targets[0]
        elts = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(e, ast.Name) for e in elts):
            raise self.error("a fold assigns plain names: 'h = Fold[T](...)' or "
                             "'h, hs = Fold[T](...)'", target)
        names = tuple(e.id for e in elts if isinstance(e, ast.Name))
        call = node.value
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
        trip = self.dim(call.func.slice)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Name):
            raise self.error("Fold takes its body, the name of a nested def, as its one "
                             "positional argument", call)
        body_name = call.args[0].id
        if body_name not in bodies:
            raise self.error(f"'{body_name}' is not a def nested before this fold", call.args[0])
        saved = (self.relations, self.sizes)
        fn = bodies[body_name]
        used.add(id(fn))
        program = self.function(fn)
        self.relations, self.sizes = saved
        groups: dict[str, tuple[str, ...]] = {"carry": (), "scan": (), "const": ()}
        reverse = False
        for kw in call.keywords:
            if kw.arg == "reverse" and isinstance(kw.value, ast.Constant) and isinstance(
                    kw.value.value, bool):
                reverse = kw.value.value
            elif kw.arg in groups and isinstance(kw.value, ast.Tuple) and all(
                    isinstance(e, ast.Name) for e in kw.value.elts):
                groups[kw.arg] = tuple(e.id for e in kw.value.elts if isinstance(e, ast.Name))
            else:
                raise self.error(
                    "Fold's keywords are carry=(names,), scan=(names,), const=(names,) and "
                    f"reverse=True, not '{self.text(kw)}'", kw)
        return Fold(names, trip, program, groups["carry"], groups["scan"],
                    groups["const"], reverse, self.loc(node))

    def returns(self, node: ast.Return) -> tuple[tuple[Expr, ...], bool]:
        v = node.value
        if v is None:
            raise self.error("'return' needs a value", node)
        if isinstance(v, ast.Tuple):
            if not v.elts:
                raise self.error("'return ()' returns nothing", v)
            return tuple(self.expr(e, frozenset()) for e in v.elts), True
        return (self.expr(v, frozenset()),), False


def _is_fold(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "Fold")


def _parse_tree(src: str, filename: str, line_offset: int, col_offset: int) -> ast.Module:
    try:
        return ast.parse(src, filename=filename)
    except SyntaxError as e:
        loc = Loc((e.lineno or 1) + line_offset, max((e.offset or 1) - 1, 0) + col_offset, filename)
        raise ProgramError(f"syntax error: {e.msg}", loc) from None
    except ValueError as e:  # e.g. null bytes in the source
        raise ProgramError(f"cannot read the source: {e}", Loc(1, 0, filename)) from None


def _the_function(parser: _Parser, tree: ast.Module, allow_decorators: bool) -> ast.FunctionDef:
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            what = "async function" if isinstance(node, ast.AsyncFunctionDef) else construct(node)
            raise parser.error(f"{what} is not supported at top level: expected one 'def'", node)
    if len(fns) != 1:
        where = fns[1] if fns else tree
        raise parser.error(f"expected exactly one function definition, found {len(fns)}", where)
    fn = fns[0]
    if fn.decorator_list and not allow_decorators:
        raise parser.error("decorators are not supported in parsed source", fn.decorator_list[0])
    return fn


def _parse(src: str, filename: str, line_offset: int, col_offset: int, decorated: bool) -> Program:
    # Source indented as a whole (a def inside a class, a test's triple-quoted string) is
    # dedented; the columns of locations still refer to the original text.
    dedented = textwrap.dedent(src)
    col_offset += _indent(src) - _indent(dedented)
    parser = _Parser(dedented, filename, line_offset, col_offset)
    try:
        try:
            tree = _parse_tree(dedented, filename, line_offset, col_offset)
        except RecursionError:
            # a chain of thousands of terms: read the long chains in pieces
            shallow, parser.chains = split_long_chains(dedented)
            tree = _parse_tree(shallow, filename, line_offset, col_offset)
        prog = parser.function(_the_function(parser, tree, decorated))
        check_program(prog)
    except RecursionError:
        raise ProgramError(
            "the program is nested too deeply for Python's recursion limit; "
            "split long expressions into several statements",
            Loc(1 + line_offset, col_offset, filename),
        ) from None
    return prog


def _indent(text: str) -> int:
    """Width of the leading blanks of the first non-blank line."""
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip(" \t"))
    return 0


def parse(src: str, filename: str = "<source>") -> Program:
    """Parse index-language source (one ``def``) into a checked :class:`Program`.

    Raises :class:`ProgramError` with a location for anything outside the language.
    """
    if not isinstance(src, str):
        raise TypeError(f"parse expects source text (str), got {type(src).__name__}")
    return _parse(src, filename, 0, 0, decorated=False)


def tensor_fn(fn: Callable[..., Any]) -> Program:
    """Decorator: the index-language :class:`Program` of a Python ``def`` (never called).

    The source is read with :func:`inspect.getsource`; locations refer to the defining file.
    Annotations such as ``A: [N, N]`` are evaluated by Python when the ``def`` runs unless the
    module starts with ``from __future__ import annotations``; use that import (or define the
    size names) in modules that use this decorator.
    """
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        name = getattr(fn, "__qualname__", repr(fn))
        raise ProgramError(f"cannot read the source of {name}: {e}") from None
    return _parse("".join(lines), filename, first - 1, 0, decorated=True)
