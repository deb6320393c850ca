"""Building a program's plan: each statement lowered to the kernels it runs, each kernel with the
NumPy line that runs it.

One statement ``y[I] = body`` at a time:

1. The body is expanded into its normal form (:func:`eqsat_ad.plan.normal.expand`): terms
   ``coef · Σ_J Π brackets · Π factors``, products of sums flattened into one sum.
2. Equality brackets are solved (:mod:`eqsat_ad.plan.ranges`): an equality on a summed index
   eliminates the sum; one on a generator index makes the term a *scatter* (a diagonal fill, a
   point write). Windows and bands of constant width become shifted slice updates
   (:func:`eqsat_ad.plan.windows.unroll_windows`).
3. Conditions on one index narrow that index's range (a slice write); other conditions become
   masks (``np.where``), except triangular and banded ones on a summed index, which run as
   running sums (:func:`eqsat_ad.plan.windows.scan_split`, emitted by :meth:`Reductions.scan`).
4. What is left is evaluated on a grid of index ranges: accesses as views, shifted and strided
   slices, zero-padded windows or gathers; products under Σ as pairwise contraction steps in the
   order of :func:`eqsat_ad.plan.order.contraction_path` (``@`` for matrix products); other sums
   as ``.sum``; built-ins as NumPy ufuncs.
5. Arrays are released after their last use, and elementwise passes write into a large operand
   that dies with them (:mod:`.liveness`): the plan's lifetimes price the peak memory.

The result (:class:`Lowered`) is the plan (:attr:`Lowered.plan`: the kernels, each tied to its
line), the decisions taken, and the lines assembled into one readable Python function. The cost
model prices that plan (:func:`eqsat_ad.plan.price.program_cost`), extraction ranks programs by
that price, the report prints it, and the NumPy backend (:mod:`eqsat_ad.backend.numpy`) runs
exactly that function: it adds nothing of its own.

Modules: :mod:`.values` (generated values, the lowered program), :mod:`.emit` (lines, kernels,
index arithmetic, masks, elementwise passes), :mod:`.reads` (accesses, expressions),
:mod:`.gathers` (sums over a sparse relation's members), :mod:`.contract` (contraction steps),
:mod:`.reduce` (terms, scans, reductions), :mod:`.loops` (a small axis run as a loop),
:mod:`.liveness` (releases, in-place passes, lifetimes), :mod:`.statements` (writes, structured
outputs, the program).

Every program lowers, and the result equals the reference interpreter's: out-of-range and
fractional reads are 0, a false bracket gives 0 whatever its factor is (strong zero, via
``np.where``), every other product is IEEE 754 (``0 * inf`` is nan; docs/semantics.md), empty
sums are 0.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ...ir.errors import ProgramError
from ...ir.functions import on_register
from ...ir.program import Program
from .statements import Codegen
from .values import Decision, Lowered

__all__ = ["Decision", "Lowered", "lower_program"]


def lower_program(
    prog: Program, sizes: Mapping[str, int] | None = None, *, strict: bool = False,
    structured: bool = False, sparse: frozenset[str] | set[str] = frozenset(),
    signed: frozenset[str] = frozenset(),
) -> Lowered:
    """The plan of ``prog`` and its NumPy source, with the lowering's decisions.

    ``sizes`` (optional) break ties between contraction orders; ``strict`` treats every input as
    possibly non-finite (strong-zero products everywhere: used when an argument holds inf/nan).
    ``structured``: an output whose terms all write at points fixed by equality brackets
    (``[i == j] * e``, point reads) is returned as a :class:`~eqsat_ad.backend.structured.Diagonal`
    or :class:`~eqsat_ad.backend.structured.Sparse` instead of a dense array, and one that is a
    product of factors over disjoint indices as an :class:`~eqsat_ad.backend.structured.Outer`.
    ``sparse``: relation parameters passed as :class:`~eqsat_ad.ir.relations.SparseRelation`
    (their members): sums over them iterate the members (gathers and segment sums, O(nnz)).
    ``signed``: statements whose sign of zero the caller observes as a divisor would (a part of
    a larger program, :mod:`eqsat_ad.backend.fused`): kept as the interpreter has it.
    """
    if not isinstance(prog, Program):
        raise ProgramError(f"expected a Program, got {type(prog).__name__}")
    # The same program object lowered the same way again (the cost report's pricing, then its
    # compilation) reuses the lowering: by identity, so no deep hash of a long program.
    try:
        key = (id(prog), None if sizes is None else tuple(sorted(dict(sizes).items())),
               bool(strict), bool(structured), frozenset(sparse), frozenset(signed))
        hash(key)
    except TypeError:  # sizes Codegen will reject: no reuse, its error
        return Codegen(prog, sizes, strict, structured, frozenset(sparse),
                       frozenset(signed)).program()
    with _LOWERED_LOCK:
        hit = _LOWERED.get(key)
    if hit is not None and hit[0] is prog:
        return hit[1]
    lowered = Codegen(prog, sizes, strict, structured, frozenset(sparse),
                      frozenset(signed)).program()
    with _LOWERED_LOCK:
        if len(_LOWERED) >= _LOWERED_LIMIT:
            _LOWERED.pop(next(iter(_LOWERED)))
        _LOWERED[key] = (prog, lowered)
    return lowered


# The last few lowerings, each with its program (kept alive, so its id is not reused).
_LOWERED: dict[tuple, tuple[Program, Lowered]] = {}
_LOWERED_LIMIT = 4
_LOWERED_LOCK = threading.Lock()
# Generated code binds registered functions by name: a re-registration invalidates it.
on_register(_LOWERED.clear)
