"""egglog's compiled core (``egglog.bindings``) without its high-level Python API.

``from egglog import bindings`` first runs ``egglog/__init__.py``, which builds the whole
high-level API (about 1.3 s, most of a first call's latency); the optimizer only drives the core
with program text. The extension module is loaded directly from the installed package, and
registered under its usual name, so a later ``import egglog`` reuses it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _load() -> ModuleType:
    name = "egglog.bindings"
    if name in sys.modules:
        return sys.modules[name]
    try:
        spec = importlib.util.find_spec("egglog")  # finds the package without running it
        roots = list(spec.submodule_search_locations or ()) if spec else []
        for root in roots:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(root) / f"bindings{suffix}"
                if path.exists():
                    ext = importlib.util.spec_from_file_location(name, path)
                    if ext is None or ext.loader is None:
                        continue
                    module = importlib.util.module_from_spec(ext)
                    ext.loader.exec_module(module)
                    sys.modules[name] = module
                    return module
    except (ImportError, OSError):
        pass
    from egglog import bindings  # the ordinary way, if the layout is not the expected one

    return bindings


bindings = _load()
