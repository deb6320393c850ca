"""The price of what ``backend="numba"`` runs for a program: its fused schedule's.

Extraction's best few programs are ranked by it, the optimizer's safety net compares it with
the input's, and the cost report prints it (``numba`` rows), so for this backend too what is
minimized, what is reported and what runs are one object: :meth:`.NumbaProgram.scheduled`,
the schedule the compiled program runs by (its module written, nothing compiled).

The figure is in the NumPy plan's points, so it reads beside the plan's prices: the schedule's
price (:attr:`.Schedule.price`: loop nests at their points, NumPy-placed statements' code run
alone at :data:`.LOOP_RATIO` a point) divided by ``LOOP_RATIO``; where the schedule runs the
whole NumPy program, that program's plan price. Where the sizes fix the few extents a pair
loop unrolls (:mod:`.specialize`) to a few points (at most :data:`.MAX_REST`) and the program so
fixed runs a pair loop, a call runs that program: it is the one priced; those extents are their
values in the price either way. Larger extents stay symbols.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from fractions import Fraction

from ...ir.functions import on_register
from ...ir.program import Program
from ...plan.kernels import Plan
from ...plan.poly import Poly
from .pairs import MAX_REST
from .program import NumbaProgram
from .schedule import LOOP_RATIO, Schedule
from .specialize import fix_sizes, small_sizes

__all__ = ["fused_price"]

_CACHE: dict[tuple, tuple[Program, Poly]] = {}
_CACHE_SIZE = 64
_LOCK = threading.Lock()
on_register(_CACHE.clear)


def fused_price(prog: Program, sizes: Mapping[str, int] | None = None) -> Poly:
    """The price of the fused program ``backend="numba"`` runs for ``prog`` at ``sizes``
    (those given; module docstring), in plan points. Kept per program object and fixed
    sizes: ranking prices each candidate once, and the report prices the winner again."""
    small = small_sizes(prog)
    values = tuple(sorted((n, int(sizes[n])) for n in small)) \
        if sizes is not None and small <= sizes.keys() else ()
    key = (id(prog), values)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0] is prog:
        return hit[1]
    price = None
    few = bool(values) and 0 < math.prod(v for _, v in values) <= MAX_REST
    if few:  # (as a call specializes)
        schedule, plan = NumbaProgram.scheduled(fix_sizes(prog, dict(values)))
        if "pairs" in schedule.placement.values():
            price = _price(schedule, plan)
    if price is None:
        # a few points: constants of the call, as in the program a call specializes; else the
        # sizes stay symbols (fixed, a large extent would look constant to the asymptotic
        # comparison: blur_window's adjoint priced O(H) against its naive O(H*W))
        price = _price(*NumbaProgram.scheduled(prog))
        if few:
            price = _fixed(price, dict(values))
    with _LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = (prog, price)
    return price


def _price(schedule: Schedule, plan: Plan) -> Poly:
    return plan.cost if schedule.price is None else schedule.price * Fraction(1, LOOP_RATIO)


def _fixed(price: Poly, values: Mapping[str, int]) -> Poly:
    """``price`` with the sizes of ``values`` replaced by their values."""
    if not values:
        return price
    out = Poly()
    for mono, c in price.terms.items():
        kept = tuple((n, e) for n, e in mono if n not in values)
        out = out + Poly({kept: c * math.prod(values[n] ** e for n, e in mono if n in values)})
    return out
