"""The cache directory's bound: least recently used entries go first.

The directory (:func:`eqsat_ad.egraph.cache.directory`) holds two kinds of entries, and every
process that compiles a new program adds to them:

* an optimized program (or a fact about programs): one ``<2 hex>/<key>.pickle`` file;
* a generated Numba module: ``numba/eqsat_ad_fused_<hash>.py`` with the files Python and
  Numba cache beside it (``numba/__pycache__/eqsat_ad_fused_<hash>.*``: bytecode, one index
  and one or more machine-code files per kernel; about 100 kB a module).

An entry's last use is its file's access time, set explicitly when it is read (a cache hit,
a module imported): the modification time of a module's source is the stamp Numba checks its
cached machine code against, so it is never touched. When a process writes an entry and the
directory holds more than ``$EQSAT_AD_CACHE_MAX_MB`` megabytes (default 2048; 0: no bound),
the least recently used entries are removed until it holds three quarters of that. An entry
used within the last hour is kept whatever the total, so that no process loses an entry it is
about to read (a module just written, a pickle just found); a reader that still misses one
recomputes it (an optimization, a Numba compilation), as for any miss. The directory is
measured at most once a day, by the first process to write after that (the time of the last
measure is the modification time of the file ``.pruned``): a scan of 14,000 entries in some
35,000 files took 0.4-0.7 s, which every write, or every process's first, would add to a
first call.

Public: :func:`limit_bytes`, :func:`mark_used`, :func:`prune`, :func:`maybe_prune`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_MB", "GRACE_SECONDS", "INTERVAL_SECONDS", "limit_bytes", "mark_used",
           "maybe_prune", "prune"]

DEFAULT_MB = 2048
GRACE_SECONDS = 3600.0
"""An entry used this recently is never removed."""
INTERVAL_SECONDS = 86400.0
"""How long after one measure of the directory the next is due."""
_MODULE_PREFIX = "eqsat_ad_fused_"
_STAMP = ".pruned"


def limit_bytes() -> int | None:
    """The bound in bytes (``$EQSAT_AD_CACHE_MAX_MB``, default :data:`DEFAULT_MB`), or None
    for no bound (0, or a value that is not a number)."""
    text = os.environ.get("EQSAT_AD_CACHE_MAX_MB", "").strip()
    try:
        mb = float(text) if text else float(DEFAULT_MB)
    except ValueError:
        return None
    return int(mb * 2**20) if mb > 0 else None


def mark_used(path: Path) -> None:
    """Record that ``path`` was just read: its access time set to now, its modification time
    kept (Numba's stamp of a module's source). Nothing happens where it cannot be set."""
    try:
        st = path.stat()
        os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:
        pass


@dataclass
class _Entry:
    last_use: float
    size: int = 0
    paths: list[Path] = field(default_factory=list)

    def add(self, path: Path, st: os.stat_result) -> None:
        self.paths.append(path)
        self.size += st.st_size
        self.last_use = max(self.last_use, st.st_atime, st.st_mtime)


def _entries(root: Path) -> list[_Entry]:
    """The entries under ``root``: each optimizer file alone, each module with its caches."""
    found: list[_Entry] = []
    for sub in _scan(root):
        if sub.is_dir(follow_symlinks=False) and len(sub.name) == 2:
            for f in _scan(Path(sub.path)):
                if f.is_file(follow_symlinks=False):
                    entry = _Entry(0.0)
                    entry.add(Path(f.path), f.stat(follow_symlinks=False))
                    found.append(entry)
    modules: dict[str, _Entry] = {}
    folder = root / "numba"
    for place in (folder, folder / "__pycache__"):
        for f in _scan(place):
            if not f.is_file(follow_symlinks=False):
                continue
            if f.name.startswith(_MODULE_PREFIX):
                stem = f.name.split(".", 1)[0]
            elif f.name.endswith(".tmp"):  # a module write that never finished
                stem = f.name
            else:
                continue
            modules.setdefault(stem, _Entry(0.0)).add(Path(f.path), f.stat(follow_symlinks=False))
    return found + list(modules.values())


def _scan(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def prune(root: Path, limit: int, now: float | None = None) -> int:
    """Remove the least recently used entries under ``root`` until they hold at most three
    quarters of ``limit`` bytes, when they hold more than ``limit`` (entries used within
    :data:`GRACE_SECONDS` of ``now`` are kept). The bytes removed."""
    entries = _entries(root)
    total = sum(e.size for e in entries)
    if total <= limit:
        return 0
    now = time.time() if now is None else now
    removed = 0
    for e in sorted(entries, key=lambda e: e.last_use):
        if total - removed <= limit * 3 // 4 or now - e.last_use < GRACE_SECONDS:
            break
        for p in e.paths:
            try:
                p.unlink()
            except OSError:
                continue
        removed += e.size
    return removed


def maybe_prune(root: Path) -> None:
    """:func:`prune` ``root`` after a write, when a bound is set and the last measure is
    :data:`INTERVAL_SECONDS` old (or there was none); never an error (a cache that cannot be
    pruned still works)."""
    limit = limit_bytes()
    if limit is None:
        return
    stamp = root / _STAMP
    try:
        if time.time() - stamp.stat().st_mtime < INTERVAL_SECONDS:
            return
    except OSError:
        pass  # (never measured)
    try:
        stamp.touch()
        prune(root, limit)
    except OSError:
        pass
