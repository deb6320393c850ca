"""The cache directory's bound (eqsat_ad/egraph/cache_limit.py): least recently used entries
go first, a module goes with its Numba caches, recent entries stay, reads mark their use
without changing the stamp Numba checks, and a removed module is compiled again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph import cache
from eqsat_ad.egraph.cache_limit import (
    GRACE_SECONDS,
    INTERVAL_SECONDS,
    limit_bytes,
    mark_used,
    maybe_prune,
    prune,
)

HOUR = 3600.0


def _file(path: Path, size: int, age: float, now: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age, now - age))
    return path


def _module(root: Path, stem: str, size: int, age: float, now: float) -> list[Path]:
    """A generated module as the Numba backend leaves it: its source, bytecode, and an index
    and machine code per kernel."""
    pyc = root / "numba" / "__pycache__"
    return [_file(root / "numba" / f"{stem}.py", size, age, now),
            _file(pyc / f"{stem}.cpython-312.pyc", size, age, now),
            _file(pyc / f"{stem}._k_x-12.py312.nbi", size, age, now),
            _file(pyc / f"{stem}._k_x-12.py312.1.nbc", size, age, now)]


def test_the_least_recently_used_entries_go_first_a_module_with_its_caches(tmp_path: Path
                                                                          ) -> None:
    now = time.time()
    old_pickle = _file(tmp_path / "ab" / "ab01.pickle", 1000, 5 * HOUR, now)
    old_module = _module(tmp_path, "eqsat_ad_fused_0001", 250, 4 * HOUR, now)  # 1000 bytes
    mid_pickle = _file(tmp_path / "cd" / "cd02.pickle", 1000, 3 * HOUR, now)
    new_module = _module(tmp_path, "eqsat_ad_fused_0002", 250, 2 * HOUR, now)
    stray = _file(tmp_path / "numba" / "tmpab12.tmp", 10, 6 * HOUR, now)  # an unfinished write
    other = _file(tmp_path / "numba" / "notes.txt", 10, 9 * HOUR, now)  # not the cache's
    # 4010 bytes of entries; bound 3000: down to 2250 (3/4), oldest first
    assert prune(tmp_path, 3000, now) == 2010
    assert not stray.exists() and not old_pickle.exists()
    assert not any(p.exists() for p in old_module)  # the source and every cache file
    assert mid_pickle.exists() and all(p.exists() for p in new_module) and other.exists()
    # within the bound: nothing to do
    assert prune(tmp_path, 3000, now) == 0


def test_recently_used_entries_stay_whatever_the_total(tmp_path: Path) -> None:
    now = time.time()
    recent = _file(tmp_path / "ab" / "ab01.pickle", 5000, GRACE_SECONDS / 2, now)
    old = _file(tmp_path / "cd" / "cd02.pickle", 5000, GRACE_SECONDS * 2, now)
    assert prune(tmp_path, 1000, now) == 5000
    assert recent.exists() and not old.exists()


def test_a_read_marks_its_use_and_keeps_the_modification_time(tmp_path: Path) -> None:
    now = time.time()
    path = _file(tmp_path / "numba" / "eqsat_ad_fused_0003.py", 10, 5 * HOUR, now)
    before = path.stat().st_mtime_ns
    mark_used(path)
    st = path.stat()
    assert st.st_mtime_ns == before  # Numba's stamp of the module's source
    assert st.st_atime > now - 60
    # so the module now outlives an older one
    older = _module(tmp_path, "eqsat_ad_fused_0004", 10, 4 * HOUR, now)
    assert prune(tmp_path, 20, now + 2 * GRACE_SECONDS) > 0
    assert path.exists() and not older[0].exists()


def test_an_optimizer_cache_hit_marks_its_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    assert cache.store("ab" * 32, {"value": 1})
    path = next(tmp_path.glob("ab/*.pickle"))
    os.utime(path, (time.time() - 5 * HOUR,) * 2)
    assert cache.load("ab" * 32) == {"value": 1}
    assert path.stat().st_atime > time.time() - 60


@pytest.mark.parametrize(("text", "want"), [("", 2048 * 2**20), ("1.5", 3 * 2**19),
                                            ("0", None), ("lots", None)])
def test_the_bound_comes_from_the_environment(text: str, want: int | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EQSAT_AD_CACHE_MAX_MB", text)
    assert limit_bytes() == want


def test_a_removed_module_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    pytest.importorskip("numba")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("EQSAT_AD_CACHE_MAX_MB", "0.001")  # 1 kB: every old entry goes
    src = "def f(x: [N], w: [N]):\n    return Sum[i: N](tanh(x[i] * w[i]) * x[i])\n"
    x, w = np.linspace(-1, 1, 50), np.linspace(2, 3, 50)
    g = ea.grad(ea.parse(src), "x", backend="numba")
    want = g(x=x, w=w)
    modules = list((tmp_path / "numba").glob("eqsat_ad_fused_*.py"))
    assert len(modules) == 1 and list((tmp_path / "numba" / "__pycache__").glob("*.nbi"))
    for f in (tmp_path / "numba").rglob("eqsat_ad_fused_*"):
        os.utime(f, (time.time() - 2 * GRACE_SECONDS,) * 2)
    # the first write measured the directory; a day later, a second program's module is
    # written: the first, old and over the bound, goes
    stamp = tmp_path / ".pruned"
    assert stamp.exists()
    os.utime(stamp, (time.time() - INTERVAL_SECONDS - 1,) * 2)
    other = ea.grad(ea.parse(src.replace("tanh", "sin")), "x", backend="numba")
    other(x=x, w=w)
    assert not modules[0].exists()
    assert not list((tmp_path / "numba" / "__pycache__").glob(f"{modules[0].stem}.*"))
    # the first program again in a new process: its module written and compiled anew
    script = ("import sys, numpy as np, eqsat_ad as ea\n"
              f"g = ea.grad(ea.parse({src!r}), 'x', backend='numba')\n"
              "x, w = np.linspace(-1, 1, 50), np.linspace(2, 3, 50)\n"
              "sys.stdout.write(g(x=x, w=w).tobytes().hex())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert bytes.fromhex(done.stdout) == want.tobytes()
    assert modules[0].exists() and list(
        (tmp_path / "numba" / "__pycache__").glob(f"{modules[0].stem}.*.nbc"))


def test_the_directory_is_measured_once_a_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setenv("EQSAT_AD_CACHE_MAX_MB", "0.001")
    now = time.time()
    first = _file(tmp_path / "ab" / "ab01.pickle", 5000, 5 * HOUR, now)
    maybe_prune(tmp_path)  # never measured: now
    assert not first.exists()
    second = _file(tmp_path / "cd" / "cd02.pickle", 5000, 5 * HOUR, now)
    maybe_prune(tmp_path)  # measured a moment ago: not again
    assert second.exists()
    os.utime(tmp_path / ".pruned", (now - INTERVAL_SECONDS - 1,) * 2)
    maybe_prune(tmp_path)
    assert not second.exists()
    monkeypatch.setenv("EQSAT_AD_CACHE_MAX_MB", "0")  # no bound: nothing measured
    third = _file(tmp_path / "ef" / "ef03.pickle", 5000, 5 * HOUR, now)
    os.utime(tmp_path / ".pruned", (now - INTERVAL_SECONDS - 1,) * 2)
    maybe_prune(tmp_path)
    assert third.exists()
