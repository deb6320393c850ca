"""Loading a generated module: Numba itself (an optional dependency) and the module file,
written under the cache directory and named by its source's hash so that Numba's on-disk cache
(``cache=True``) serves later processes."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from ...egraph.cache_limit import mark_used, maybe_prune
from ...ir.errors import ProgramError

_EXTRA = "pip install 'eqsat-ad[numba]'"


def require_numba() -> ModuleType:
    """Numba, or an error naming the extra that installs it."""
    try:
        import numba
    except ImportError as exc:
        raise ImportError(
            f"backend='numba' needs the optional dependency Numba ({exc}); install it with "
            f"{_EXTRA} (or pass backend='numpy')"
        ) from None
    return numba


def cache_dir() -> Path:
    """``numba/`` under the project's cache directory (``$EQSAT_AD_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/eqsat_ad`` or ``~/.cache/eqsat_ad``; see :mod:`eqsat_ad.egraph.cache`)."""
    from ...egraph.cache import directory

    return directory() / "numba"


def load(source: str) -> ModuleType:
    """Import ``source`` from a file named by its hash (written once; Numba caches beside it)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:20]
    name = f"eqsat_ad_fused_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        maybe_prune(folder.parent)  # (the new module itself is recent: never removed)
    else:
        mark_used(path)  # (its access time; the modification time is Numba's stamp)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProgramError(f"cannot import the generated module {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def compile_failure() -> type[Exception]:
    """Numba's error for a kernel it cannot type or lower (its ``NumbaError``)."""
    return require_numba().core.errors.NumbaError


def give_up_loops(program: Any, exc: Exception) -> None:
    """``program`` (a :class:`.program.NumbaProgram`) runs as the NumPy backend runs it from
    now on, with a warning: Numba failed to compile one of its kernels (``exc``), which is a
    Numba defect, not the program's (fuzz seed 3031, case 113: arrays named ``t`` and ``t4``
    with a constant branch condition failed Numba's typing, until the loop writer decided
    such conditions itself). The values are the NumPy backend's, so the call still agrees
    with the interpreter."""
    program.numpy_only, program.runner = True, program.numpy
    first = str(exc).strip().splitlines()[:2]
    warnings.warn(f"Numba could not compile the loops of {program.program.name} "
                  f"({' '.join(first)[:300]}); it runs as backend='numpy' runs it",
                  RuntimeWarning, stacklevel=5)  # (the caller's call of the gradient)
