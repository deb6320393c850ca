"""The fenced ``python`` blocks of a Markdown file, as the programs a reader would run.

The blocks of one file run in order in one namespace (a reader follows a page top to bottom);
a block right after a ``<!-- skip -->`` line is illustration only (index-language source shown
as Python, a fragment) and is left out.
"""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SKIP = "<!-- skip -->"


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the block's first code line, code) for each runnable block."""
    text = path.read_text()
    blocks: list[tuple[int, str]] = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if before == SKIP:
            continue
        blocks.append((text[: m.start(1)].count("\n") + 1, m.group(1)))
    return blocks


def as_script(path: Path) -> str:
    """One script running every block of ``path``, each compiled with its own line numbers so
    that a failure points into the Markdown file."""
    parts = ["_ns = {'__name__': '__main__'}"]
    for line, code in python_blocks(path):
        padded = "\n" * (line - 1) + code
        parts.append(f"exec(compile({padded!r}, {str(path)!r}, 'exec'), _ns)")
    return "\n".join(parts) + "\n"
