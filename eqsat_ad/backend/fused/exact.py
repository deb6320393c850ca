"""Whether a fused program's loops compute the unoptimized program's own values at a call's
sizes, so that no guard pass runs (:meth:`.program.NumbaProgram._exact`); kept on disk with
the optimizer's cache, since the four lowerings it compares are most of a first call that
loads its kernels from Numba's cache."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...egraph import cache
from ...ir.printer import print_program
from ...ir.program import Program
from ...ir.relations import SparseRelation
from ...plan.lower import lower_program
from ...plan.same_code import same_code
from ..numpy import CompiledProgram

__all__ = ["exact_on_disk"]


def exact_on_disk(program: Program, numpy: CompiledProgram, fallback: Any,
                  arrays: Sequence[Any], sizes: Mapping[str, int]) -> bool:
    """Whether ``program`` (optimized; ``numpy``: its NumPy backend's compiled form, guarded
    by ``fallback``) lowers at ``sizes`` to the unoptimized program's very code, fast and
    strict (:mod:`..same_code`), for arguments like ``arrays`` (sparse relations lower
    differently). Read from the disk cache where decided before, else decided and stored."""
    if not fallback.same_code:
        return False
    sparse = sorted(p.name for p, a in zip(program.params, arrays, strict=True)
                    if isinstance(a, SparseRelation))
    k = cache.fact_key("numba exact", print_program(program), print_program(fallback.naive),
                       repr(sorted(sizes.items())), repr(sparse), repr(numpy.structured))
    known = cache.load(k) if cache.enabled() else None
    if isinstance(known, bool):
        return known
    naive = numpy._plain(arrays, sizes)
    exact = naive is not None and same_code(
        lower_program(program, sizes, strict=True).source,
        lower_program(naive.program, sizes, strict=True).source)
    if cache.enabled():
        cache.store(k, exact)
    return exact
