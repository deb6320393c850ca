"""The on-disk cache of optimized programs (like JAX's compilation cache).

An optimization is keyed by everything its result depends on: the program's canonical text, the
rule files' contents (the prelude's too), the limits, the sizes, ``structured``, and the source of
the optimizer itself (every source file that picks the result, subpackages included: a changed
optimizer never reads an old entry). A second process that optimizes the same program pays only
for compilation. A result the time limit cut before the e-graph gave anything (a starved
machine) is not stored: it depends on the load, not on the key.

* Location: ``$EQSAT_AD_CACHE_DIR``, else ``$XDG_CACHE_HOME/eqsat_ad``, else
  ``~/.cache/eqsat_ad``.
* Off: ``EQSAT_AD_CACHE=0`` (or ``ea.optimize(..., cache=False)``).
* Entries are written to a temporary file in the cache directory and renamed into place, so a
  reader sees a whole entry or none, and concurrent writers of one key both leave a whole entry.
  An entry that cannot be read (truncated, from another version) is ignored and rewritten.
* Bounded: past ``$EQSAT_AD_CACHE_MAX_MB`` (default 2048) the least recently used entries are
  removed (:mod:`eqsat_ad.egraph.cache_limit`; the generated Numba modules count too).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ir.printer import print_program
from ..ir.program import Program
from .cache_limit import mark_used, maybe_prune
from .rules import RuleFile, prelude_text

FORMAT = 1
_SOURCES = ("egraph", "cost", "ir", "plan", "backend")  # plan prices pick the result


def enabled() -> bool:
    return os.environ.get("EQSAT_AD_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def directory() -> Path:
    explicit = os.environ.get("EQSAT_AD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eqsat_ad"


@functools.lru_cache(maxsize=1)
def _optimizer_digest() -> str:
    """A digest of the optimizer's own source and rule files (a new version: new keys)."""
    return source_digest(Path(__file__).resolve().parent.parent)


def source_digest(root: Path) -> str:
    """A digest of the sources under ``root`` (the package) that decide an optimization:
    every ``.py`` and ``.egg`` file of :data:`_SOURCES`, subpackages included (plan/lower and
    backend/fused price what the backend runs, so they pick the result as well)."""
    h = hashlib.sha256()
    for sub in _SOURCES:
        for f in sorted((root / sub).rglob("*")):
            if f.suffix in (".py", ".egg") and "__pycache__" not in f.parts:
                h.update(f.relative_to(root).as_posix().encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def key(
    prog: Program,
    files: Sequence[RuleFile],
    limits: Any,
    sizes: Mapping[str, int] | None,
    structured: bool,
    backend: str = "numpy",
) -> str:
    h = hashlib.sha256()
    parts = [
        f"format {FORMAT}",
        _optimizer_digest(),
        print_program(prog),
        prelude_text(),
        *(f"{f.name}\n{f.text}" for f in files),
        repr((limits.iterations, limits.nodes, float(limits.seconds))),
        repr(sorted((sizes or {}).items())),
        repr(bool(structured)),
        *([] if backend == "numpy" else [f"backend {backend}"]),  # (numpy: the keys as before)
    ]
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def fact_key(kind: str, *parts: str) -> str:
    """The key of a fact derived from programs by this version of the code (like an
    optimization's: the optimizer's and backend's sources are in it), ``kind`` naming the fact
    and ``parts`` everything it depends on."""
    h = hashlib.sha256()
    for p in (f"format {FORMAT}", _optimizer_digest(), kind, *parts):
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(k: str) -> Path:
    return directory() / k[:2] / f"{k}.pickle"


def load(k: str) -> Any | None:
    """The cached value of key ``k``, or None (missing or unreadable)."""
    path = _path(k)
    try:
        with open(path, "rb") as f:
            value = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged entry is a miss
        return None
    mark_used(path)  # (the directory's bound removes the least recently used first)
    return value


def store(k: str, value: Any) -> bool:
    """Write ``value`` under key ``k`` atomically; False (and no error) if it cannot be."""
    path = _path(k)
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except Exception:  # noqa: BLE001 - a cache that cannot be written is not an error
        return False
    maybe_prune(directory())
    return True


def clear() -> None:
    """Remove every entry of the cache directory."""
    root = directory()
    if not root.is_dir():
        return
    for f in root.glob("*/*.pickle"):
        f.unlink(missing_ok=True)
