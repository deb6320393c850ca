"""Whether two generated functions run the same code (:func:`same_code`).

The optimizer often returns a program that only renames indices, reorders statements or inlines
a read the backend then computes exactly as before (``y = A @ x; x_bar = y + t`` against
``t1 = A @ x; x_bar = t1 + t``). Such a program lowers to the naive program's code up to names:
it is no faster, and running it as a guarded fast path (backend/guard.py) would only add the
guard's cost. Two sources are compared by value: each assignment of straight-line code is named
by what it computes (its expression over the values it reads, hashed), so temporaries' names,
the order of independent statements and ``np.einsum`` subscript letters do not matter, and two
functions are the same when they compute the same set of values and return the same ones.
A ``del`` of names (an array released after its last use) computes nothing. Anything beyond
plain assignments of pure expressions (a slice write, an in-place update, a loop, an ``out=``
argument) is compared exactly instead (einsum letters aside): never a false
"same".

Public: :func:`canonical_code`, :func:`same_code`.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import re

__all__ = ["canonical_code", "same_code"]

_EINSUM = frozenset({"einsum", "einsum_sz"})
"""Calls whose first argument is an einsum subscript string (letters are bound names)."""
_SPEC = re.compile(r"^[A-Za-z,.]*(->[A-Za-z.]*)?$")
_IN_PLACE = frozenset({
    "at", "fill", "sort", "put", "putmask", "place", "copyto", "itemset", "resize",
    "setflags", "partition", "fill_diagonal", "scatter_add", "setfield", "append", "extend",
    "update", "pop", "clear", "insert", "__setitem__", "__iadd__",
})
"""Methods and functions that write into an argument (code that calls one is compared
exactly)."""
_SCOPES = (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
           ast.Await, ast.Yield, ast.YieldFrom)

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal)


def _letters(spec: str) -> str:
    """``spec`` with its letters renamed a, b, c, ... in order of first appearance."""
    names: dict[str, str] = {}
    out = []
    for ch in spec:
        if ch.isalpha():
            if ch not in names:
                k = len(names)
                names[ch] = chr(ord("a") + k) if k < 26 else chr(ord("A") + k - 26)
            out.append(names[ch])
        else:
            out.append(ch)
    return "".join(out)


class _Einsum(ast.NodeTransformer):
    """Einsum subscripts with canonical letters."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name in _EINSUM and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _SPEC.match(node.args[0].value):
            node.args[0] = ast.Constant(_letters(node.args[0].value))
        return node


def _pure(e: ast.expr) -> bool:
    """Whether ``e`` only reads: no nested scope, no ``out=``, no in-place call."""
    for n in ast.walk(e):
        if isinstance(n, _SCOPES):
            return False
        if isinstance(n, ast.Call):
            if any(k.arg == "out" or k.arg is None for k in n.keywords):
                return False
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else \
                f.id if isinstance(f, ast.Name) else ""
            if name in _IN_PLACE:
                return False
    return True


class _Values(ast.NodeTransformer):
    """Names read replaced by the value they hold (parameters by position)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.AST:
        v = self.env.get(node.id)
        return ast.Name(f"%{v}", ast.Load()) if v is not None else node


class _Locals(ast.NodeTransformer):
    """The function's own names (parameters and every name it assigns) renamed in order of
    first appearance: a bijection on local names, so code that differs only in what it calls
    its temporaries and loop indices compares equal, and nothing else does."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.own = {p.arg for p in fn.args.args} | {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store | ast.Del)}
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name not in self.own:
            return name  # a global: np, _rt, range
        return self.names.setdefault(name, f"%{len(self.names)}")

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._name(node.arg)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._name(node.id)
        return node


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _straight_line(fn: ast.FunctionDef) -> tuple | None:
    """``fn`` by value: the set of values its assignments compute and the value it returns;
    None when ``fn`` is not straight-line code of pure assignments."""
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or fn.decorator_list:
        return None
    env = {p.arg: f"arg{k}" for k, p in enumerate(a.args)}
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    computed: set[str] = set()
    assigned = {t.id for s in body for t in getattr(s, "targets", ()) if isinstance(t, ast.Name)}
    for s in body[:-1]:
        if isinstance(s, ast.Delete) and all(isinstance(t, ast.Name) for t in s.targets):
            continue  # (releasing a dead array computes nothing)
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name) and _pure(s.value)):
            return None
        if any(isinstance(n, ast.Name) and n.id in assigned and n.id not in env
               for n in ast.walk(s.value)):
            return None  # a local read before its assignment (Python raises there)
        if isinstance(s.value, ast.Name) and s.value.id in env:
            env[s.targets[0].id] = env[s.value.id]  # another name for a value: no new one
            continue
        value = _digest(ast.dump(_Values(env).visit(copy.deepcopy(s.value))))
        computed.add(value)
        env[s.targets[0].id] = value
    result = body[-1].value
    if not _pure(result):
        return None
    return len(a.args), frozenset(computed), ast.dump(_Values(env).visit(copy.deepcopy(result)))


def canonical_code(source: str) -> tuple:
    """A form of generated ``source`` that two sources share exactly when they run the same
    code (up to the names of temporaries, the order of independent assignments and einsum
    letters; exactly, einsum letters aside, for code that is not straight-line)."""
    tree = _Einsum().visit(ast.parse(source))
    fns = tree.body
    if len(fns) == 1 and isinstance(fns[0], ast.FunctionDef):
        by_value = _straight_line(fns[0])
        if by_value is not None:
            return ("values", *by_value)
        fns[0].name = "_"
        body = fns[0].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            fns[0].body = body[1:] or [ast.Pass()]
        if not any(isinstance(n, _SCOPES + _NESTED) for s in fns[0].body for n in ast.walk(s)):
            _Locals(fns[0]).visit(fns[0])  # (names then mean one thing each throughout)
    return ("exact", ast.dump(tree))


def same_code(a: str, b: str) -> bool:
    """Whether generated sources ``a`` and ``b`` run the same code (:func:`canonical_code`)."""
    return canonical_code(a) == canonical_code(b)
