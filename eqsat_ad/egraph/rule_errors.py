"""Errors in a researcher's rule file, in the file's own terms.

A rule file is checked against the prelude before it is used (optimize and check_rules both load
it through :func:`eqsat_ad.egraph.rules.load_rule_file`): egglog reads the prelude, then the file
under its own name, so a position egglog reports is a line and column of the user's file. The
message is rewritten as ``file:line:col: problem``, followed by the offending line with a caret;
an unknown constructor or function also gets the prelude's names nearest to it.
"""

from __future__ import annotations

import difflib
import re
from functools import cache

_WHERE = re.compile(r"In (\d+):(\d+)-(?:(\d+):)?(\d+) of (.+?): ")
_UNBOUND = re.compile(r"Unbound (?:function|symbol|sort) ([^\s:]+)")
_DECL = re.compile(r"\((?:function|relation|constructor|sort)\s+([^\s()]+)")
_CTOR = re.compile(r"^\s*\(([A-Z][\w\-]*)\b", re.MULTILINE)


@cache
def prelude_names() -> tuple[str, ...]:
    """The constructors, functions and relations the prelude declares (what rules may use)."""
    from .rules import prelude_text

    text = prelude_text()
    names = set(_DECL.findall(text))
    # constructors: the variants inside each (datatype Sort (Ctor ...) ...)
    for block in re.findall(r"\(datatype\s+\w+(.*?)\n\n", text + "\n\n", re.DOTALL):
        names |= set(_CTOR.findall(block))
    return tuple(sorted(names))


def nearest_names(name: str, count: int = 4) -> list[str]:
    names = prelude_names()
    close = difflib.get_close_matches(name, names, n=count, cutoff=0.5)
    if not close:  # a case slip: Mul for mul
        close = [n for n in names if n.lower() == name.lower()]
    return close


def explain_egglog_error(message: str, text: str, path: str) -> str:
    """``message`` (egglog's) with the location as ``path:line:col``, the source line and a
    caret, and suggestions for an unknown name."""
    m = _WHERE.search(message)
    detail = message[m.end():] if m else message
    # egglog repeats the offending term before a newline: keep the diagnosis
    lines = detail.split("\n")
    problem = lines[-1].strip() if len(lines) > 1 and lines[-1].strip() else detail.strip()
    hint = ""
    u = _UNBOUND.search(problem)
    if u:
        near = nearest_names(u.group(1))
        hint = (f" (nearest names the prelude declares: {', '.join(near)})" if near
                else " (the prelude declares no similar name; see docs/rules.md)")
    if "end of file" in problem:
        opened = unclosed_paren(text)
        if opened is not None:
            line, col = opened
            source = text.splitlines()[line - 1]
            return (f"{path}:{line}:{col}: this '(' is never closed ({problem})"
                    f"\n    {source}\n    {' ' * (col - 1)}^")
    if m is None:
        return f"{path}: {problem}{hint}"
    line, col = int(m.group(1)), int(m.group(2))
    end_col = int(m.group(4)) if m.group(3) in (None, m.group(1)) else col
    source = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
    caret = " " * (col - 1) + "^" * max(1, end_col - col)
    excerpt = f"\n    {source}\n    {caret}" if source else ""
    return f"{path}:{line}:{col}: {problem}{hint}{excerpt}"


def unclosed_paren(text: str) -> tuple[int, int] | None:
    """(line, column), 1-based, of the first '(' that is never closed (comments and strings
    skipped), or None."""
    stack: list[tuple[int, int]] = []
    line, col, k = 1, 0, 0
    in_string = in_comment = False
    while k < len(text):
        ch = text[k]
        col += 1
        if ch == "\n":
            line, col, in_comment = line + 1, 0, False
        elif in_comment:
            pass
        elif in_string:
            if ch == "\\":
                k += 1
                col += 1
            elif ch == '"':
                in_string = False
        elif ch == ";":
            in_comment = True
        elif ch == '"':
            in_string = True
        elif ch == "(":
            stack.append((line, col))
        elif ch == ")" and stack:
            stack.pop()
        k += 1
    return stack[0] if stack else None


def check_against_prelude(text: str, path: str) -> None:
    """Raise :class:`~eqsat_ad.egraph.rules.RuleError` if egglog rejects the file after the
    prelude (unknown names, arity, sorts, syntax)."""
    from egglog import bindings

    from .rules import RuleError, prelude_text

    eg = bindings.EGraph()
    eg.parse_and_run_program(prelude_text(), filename="prelude.egg")
    try:
        eg.parse_and_run_program(text, filename=path)
    except Exception as exc:  # egglog's own error type
        raise RuleError(explain_egglog_error(str(exc), text, path)) from None
