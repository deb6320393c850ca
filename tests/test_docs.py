"""The documentation runs: every fenced python block of docs/*.md and README.md (in order, one
namespace per file), the API reference is what the docstrings generate, and relative links
point at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from docblocks import as_script, python_blocks

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# written by another part of the project; linked before it lands
PENDING = {"semantics.md"}


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)],
                         ids=lambda p: p.name)
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    script = tmp_path / f"{page.stem}_blocks.py"
    script.write_text(as_script(page))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr[-4000:]


def test_api_reference_is_up_to_date() -> None:
    from eqsat_ad.docs import api_markdown

    assert (ROOT / "docs" / "api.md").read_text() == api_markdown(), (
        "docs/api.md is out of date: run python -m eqsat_ad.docs"
    )


def test_relative_links_resolve() -> None:
    missing = []
    for page in PAGES:
        for target in re.findall(r"\]\(([\w./\-]+\.\w+|[\w./\-]+/)(?:#[^)]*)?\)",
                                 page.read_text()):
            if "://" in target or Path(target).name in PENDING:
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not missing, missing
