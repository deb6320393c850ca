"""No file of the project refers to notes outside the repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _project_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.splitlines() if (ROOT / p).is_file()]


def test_no_file_refers_to_shared_notes() -> None:
    needle = "shared" + "/"  # spelled in two pieces so that this file does not match itself
    offenders = []
    for path in _project_files():
        text_file = path.suffix in {".py", ".md", ".toml", ".egg", ".txt", ".cfg"}
        if not text_file and path.name != "Makefile":
            continue
        text = path.read_text(errors="replace")
        offenders += [f"{path.relative_to(ROOT)}:{k}" for k, line in enumerate(text.splitlines(), 1)
                      if needle in line or any(n + ".md" in line for n in ("DESIGN", "RESEARCH"))]
    assert not offenders, "references to notes outside the repository:\n" + "\n".join(offenders)
