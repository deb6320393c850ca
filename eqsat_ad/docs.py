"""Generate docs/api.md from the docstrings of the public API: ``python -m eqsat_ad.docs``.

Every name of ``eqsat_ad.__all__`` gets its signature and docstring; a class also gets its
public methods and properties. ``--check`` exits with status 1 when the file on disk differs
from what would be generated (the test suite runs it, so the reference cannot go stale).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any

import eqsat_ad

__all__ = ["api_markdown", "main"]

HEADER = """# API reference

Generated from the docstrings by `python -m eqsat_ad.docs` (do not edit by hand; the test
suite checks that this file is up to date). The guides are [design.md](design.md),
[index-language.md](index-language.md), [rules.md](rules.md) and [cli.md](cli.md).
"""


def _signature(obj: Any, name: str) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return name
    return f"{name}{sig}"


def _doc(obj: Any) -> str:
    doc = inspect.getdoc(obj)
    return doc.strip() if doc else "(no docstring)"


def _block(text: str) -> str:
    return "```text\n" + text + "\n```\n"


def _members(cls: type) -> list[str]:
    out = []
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_") and name not in ("__call__",):
            continue
        if isinstance(member, property):
            doc = inspect.getdoc(member)
            if doc:
                out.append(f"* `{name}` (property): {doc.splitlines()[0]}")
        elif inspect.isfunction(member) and inspect.getdoc(member):
            sig = _signature(member, name).replace("(self, ", "(").replace("(self)", "()")
            out.append(f"* `{sig}`: {inspect.getdoc(member).splitlines()[0]}")  # type: ignore
    return out


def _section(name: str, obj: Any) -> str:
    if inspect.isclass(obj):
        parts = [f"## class `{name}`\n", _block(_doc(obj))]
        members = _members(obj)
        if members:
            parts.append("\n".join(members) + "\n")
        return "\n".join(parts)
    if callable(obj):
        return f"## `{_signature(obj, name)}`\n\n" + _block(_doc(obj))
    return f"## `{name}`\n\n" + _block(_doc(obj))


# what the public functions return, documented with them
EXTRA = (("Compiled", "eqsat_ad.api"), ("Specialization", "eqsat_ad.api"),
         ("Explanation", "eqsat_ad.why"), ("RuleCheck", "eqsat_ad.egraph.check"))


def api_markdown() -> str:
    """The text of docs/api.md."""
    import importlib

    sections = [HEADER]
    for name in eqsat_ad.__all__:
        sections.append(_section(name, getattr(eqsat_ad, name)))
    sections.append("# Returned types\n")
    for name, module in EXTRA:
        sections.append(_section(name, getattr(importlib.import_module(module), name)))
    return "\n".join(sections).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqsat_ad.docs", description=__doc__)
    parser.add_argument("--out", default="docs/api.md", help="where to write (docs/api.md)")
    parser.add_argument("--check", action="store_true",
                        help="only compare: exit 1 when the file is out of date")
    args = parser.parse_args(argv)
    text = api_markdown()
    path = Path(args.out)
    if args.check:
        current = path.read_text() if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run python -m eqsat_ad.docs", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
