"""The built wheel works on its own: installed into a fresh virtual environment, the README's
examples and ``eqsat-ad check-rules indicator`` run from a directory outside the repository.

Everything the package reads at run time (the prelude, the rule sets) must be package data; a
file read from the source tree would pass every other test and fail here.

The fresh environment sees exactly the distributions the wheel's metadata requires (no extras),
with theirs: linked from this environment's site-packages rather than installed again (pip
spent about 25 s copying NumPy, SciPy and SymPy), so a dependency the metadata forgets, or an
extra such as Numba that the README's examples would need, is missing there as on a fresh
install.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from docblocks import as_script
from packaging.requirements import Requirement

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
    deps = tmp / "deps"
    deps.mkdir()
    for entry in _installed_entries(_required(_wheel_requirements(wheel))):
        (deps / entry.name).symlink_to(entry)
    site = _run([str(bin_dir / "python"), "-c",
                 "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp).strip()
    (Path(site) / "wheel_test_dependencies.pth").write_text(f"{deps}\n")
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp)
    return bin_dir


def _wheel_requirements(wheel: Path) -> list[Requirement]:
    """The wheel's own ``Requires-Dist`` entries that a plain install takes (no extras)."""
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        lines = z.read(meta).decode().splitlines()
    reqs = [Requirement(line.split(":", 1)[1]) for line in lines
            if line.startswith("Requires-Dist:")]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _required(reqs: list[Requirement]) -> set[str]:
    """The names of the distributions ``reqs`` need, with theirs (as installed here)."""
    seen: set[str] = set()
    todo = list(reqs)
    while todo:
        r = todo.pop()
        name = r.name.lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = distribution(r.name)
        except PackageNotFoundError:
            pytest.fail(f"the wheel requires {r.name}, which this environment lacks")
        todo += [q for q in map(Requirement, dist.requires or ())
                 if q.marker is None or q.marker.evaluate({"extra": ""})]
    return seen


def _installed_entries(names: set[str]) -> set[Path]:
    """The top-level files and folders of site-packages that the distributions ``names``
    installed (packages, extension modules, bundled libraries, their .dist-info)."""
    site = Path(sysconfig.get_path("purelib"))
    entries: set[Path] = set()
    for name in names:
        dist = distribution(name)
        for f in dist.files or ():
            top = f.parts[0]
            if top not in ("..", "__pycache__") and not top.endswith(".pth") and \
                    (site / top).exists():
                entries.add(site / top)
    return entries


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
