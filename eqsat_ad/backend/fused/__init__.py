"""The fused loop backend: Tensor SSA statements as scalar loop nests compiled by Numba.

:mod:`.loops` writes a statement's loop nest (:mod:`.scans`: its running sums,
:mod:`.interior`: edge / interior partitions, :mod:`.tiles`: sums interchanged with tiles of
the innermost output loop), :mod:`.pairs` writes a statement whose sums run over pairs ``(i,
j)`` as one pass over the pairs (:mod:`.specialize` fixes the sizes it unrolls to their values
at a call), :mod:`.schedule` decides what runs as loops, what stays a NumPy call and which
producers fuse into their consumers, :mod:`.program` writes the module, loads it through
Numba's on-disk cache and runs it. Numba is an optional dependency (``pip install
'eqsat-ad[numba]'``); the NumPy backend stays the default."""

from __future__ import annotations

from ...ir.errors import ProgramError
from ...ir.functions import on_register
from ...ir.program import Program
from .program import NumbaProgram, cache_dir, require_numba

__all__ = ["NumbaProgram", "cache_dir", "compile_numba", "require_numba"]

_CACHE: dict[Program, NumbaProgram] = {}
on_register(_CACHE.clear)


def compile_numba(prog: Program) -> NumbaProgram:
    """``prog`` compiled to fused loop nests (cached per program)."""
    if not isinstance(prog, Program):
        raise ProgramError(f"expected a Program, got {type(prog).__name__}")
    hit = _CACHE.get(prog)
    if hit is None:
        hit = _CACHE[prog] = NumbaProgram(prog)
    return hit
