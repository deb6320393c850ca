"""Reading statements whose right-hand side is a very long chain of ``+`` / ``-`` terms.

CPython's ``ast.parse`` gives up on a chain of a few thousand operands ("maximum recursion depth
exceeded during ast construction"): the tree it builds is as deep as the chain is long. The
index language reads such a chain in pieces instead: the source is tokenized, each long chain at
the top level of a statement's right-hand side (or a ``return``) is replaced by a placeholder
name, and its operands are parsed one by one, with their positions in the original source, to be
joined into the left-nested sum by the parser.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# chains of at least this many operands are read in pieces
LONG_CHAIN = 64
PLACEHOLDER = "__eqsat_chain_{}__"

_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class Operand:
    """One term of a chain: its sign and its expression, located in the original source."""

    sign: str
    tree: ast.expr


def _byte_col(line: str, col: int) -> int:
    return len(line[:col].encode("utf-8"))


def _operand(src_lines: list[str], sign: str, text: str, at: tuple[int, int]) -> Operand:
    r0, c0 = at
    tree = ast.parse(text.strip(), mode="eval").body
    # move every node to where the operand stands in the original source
    shift = _byte_col(src_lines[r0 - 1], c0)
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            if node.lineno == 1:
                node.col_offset += shift
            if getattr(node, "end_lineno", None) == 1 and node.end_col_offset is not None:
                node.end_col_offset += shift
            node.lineno += r0 - 1
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += r0 - 1
    return Operand(sign, tree)


Pos = tuple[int, int]  # (1-based row, 0-based column)


def _logical_lines(lines: list[str]) -> list[list[tuple[Pos, str]]]:
    """Each logical line as its characters with their positions (comments dropped; a line
    continues after a backslash or inside brackets). The index language has no strings."""
    out: list[list[tuple[Pos, str]]] = []
    cur: list[tuple[Pos, str]] = []
    depth = 0
    for r, line in enumerate(lines, start=1):
        code = line.split("#", 1)[0]
        cont = code.rstrip().endswith("\\")
        if cont:
            code = code.rstrip()[:-1]
        for c, ch in enumerate(code):
            depth += (ch in _OPEN) - (ch in _CLOSE)
            cur.append(((r, c), ch))
        cur.append(((r, len(code)), " "))
        if not cont and depth <= 0:
            out.append(cur)
            cur, depth = [], 0
    if cur:
        out.append(cur)
    return out


_NUMBER_EXP = re.compile(r"(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)[eE]$")


def _rhs_start(chars: list[tuple[Pos, str]]) -> int | None:
    """Where a statement's value starts: after ``return`` or after its top-level ``=``."""
    text = "".join(ch for _, ch in chars)
    stripped = text.lstrip()
    if re.match(r"return\b", stripped):
        return len(text) - len(stripped) + len("return")
    depth = 0
    for k, ch in enumerate(text):
        depth += (ch in _OPEN) - (ch in _CLOSE)
        if depth == 0 and ch == "=" and text[k - 1:k] not in ("=", "<", ">", "!") and text[
            k + 1:k + 2
        ] != "=":
            return k + 1
    return None


def _split(chars: list[tuple[Pos, str]]) -> list[tuple[str, int, int]]:
    """The operands (sign, start, end) of the top-level ``+`` / ``-`` chain of ``chars``."""
    text = "".join(ch for _, ch in chars)
    out: list[tuple[str, int, int]] = []
    depth, sign, begin = 0, "+", 0
    prev = ""  # the last non-blank character
    for k, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and ch in "+-" and (prev.isalnum() or prev in "_)]."):
            w = k
            while w > 0 and (text[w - 1].isalnum() or text[w - 1] in "_."):
                w -= 1
            if not _NUMBER_EXP.match(text[w:k]):
                out.append((sign, begin, k))
                sign, begin = ch, k + 1
        if not ch.isspace():
            prev = ch
    out.append((sign, begin, len(text)))
    return out


def split_long_chains(src: str) -> tuple[str, dict[str, list[Operand]]]:
    """``src`` with every long top-level chain replaced by a placeholder name, and the chains'
    operands by placeholder. Lines keep their numbers; other positions do not move."""
    lines = src.splitlines()
    chains: dict[str, list[Operand]] = {}
    edits: list[tuple[Pos, Pos, str]] = []
    for chars in _logical_lines(lines):
        k0 = _rhs_start(chars)
        if k0 is None:
            continue
        rhs = chars[k0:]
        while rhs and rhs[-1][1].isspace():
            rhs = rhs[:-1]
        while rhs and rhs[0][1].isspace():
            rhs = rhs[1:]
        if not rhs:
            continue
        parts = _split(rhs)
        if len(parts) < LONG_CHAIN:
            continue
        name = PLACEHOLDER.format(len(chains))
        ops = []
        for sign, b, e in parts:
            seg = rhs[b:e]
            while seg and seg[0][1].isspace():
                seg = seg[1:]
            text = "".join(ch for _, ch in seg)
            ops.append(_operand(lines, sign, text, seg[0][0]))
        chains[name] = ops
        (r1, c1) = rhs[-1][0]
        edits.append((rhs[0][0], (r1, c1 + 1), name))
    for (r0, c0), (r1, c1), name in reversed(edits):
        lines[r0 - 1] = lines[r0 - 1][:c0] + name + lines[r1 - 1][c1:]
        for r in range(r0, r1):
            lines[r] = ""
    return "\n".join(lines) + "\n", chains
