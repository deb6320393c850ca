"""The built wheel works on its own: installed into a fresh virtual environment, the README's
examples and ``eqsat-ad check-rules indicator`` run from a directory outside the repository.

Everything the package reads at run time (the prelude, the rule sets) must be package data; a
file read from the source tree would pass every other test and fail here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from docblocks import as_script

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", "build", "dist", "experiments", "__pycache__", ".pytest_cache",
             ".ruff_cache", ".hypothesis", "docs", "tests"}


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel (and its dependencies) installed; returns its bin/."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    # build from a copy, so that the build leaves nothing in the working tree
    shutil.copytree(ROOT, src, ignore=lambda d, names: [
        n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")])
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(tmp / "dist")],
         src)
    (wheel,) = (tmp / "dist").glob("eqsat_ad-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp)
    return bin_dir


def test_wheel_has_no_source_tree_behind_it(installed: Path, tmp_path: Path) -> None:
    out = _run([str(installed / "python"), "-c",
                "import eqsat_ad, pathlib; print(pathlib.Path(eqsat_ad.__file__).parent)"],
               tmp_path)
    assert Path(out.strip()).is_relative_to(installed.parent)


def test_readme_examples_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    script = tmp_path / "readme_examples.py"
    script.write_text(as_script(ROOT / "README.md"))
    out = _run([str(installed / "python"), str(script)], tmp_path)
    assert "A_bar[i: N, j: N] = 2 * (i == j)" in out  # the k-trace gradient the README shows


def test_check_rules_command_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    out = _run([str(installed / "eqsat-ad"), "check-rules", "indicator"], tmp_path)
    assert "0 unsound" in out and "rules checked" in out
    out = _run([str(installed / "python"), "-m", "eqsat_ad", "check-rules", "--help"], tmp_path)
    assert "FILE.egg|NAME" in out
    out = _run([str(installed / "python"), "-c",
                "import eqsat_ad as ea; r = ea.check_rules('indicator'); print(r.ok, r.path)"],
               tmp_path)
    ok, path = out.split()
    assert ok == "True" and Path(path).is_relative_to(installed.parent)
