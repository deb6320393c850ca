"""Which statements run as loop nests, which stay NumPy calls, and which fuse into a consumer.

Prices are polynomials in the size symbols (:class:`~eqsat_ad.plan.poly.Poly`), the same the
plan prices NumPy kernels in:

* A loop nest costs, per point of its output, the points its body visits: one per read and
  per arithmetic operation, a ``Sum`` its range times its body, plus one write
  (:func:`loop_price`): 1 for each index an equality bracket solves (one index per equality,
  :func:`~.brackets.solve_order`, as the loop writer runs it), the width of a band of constant
  width. Work a scalar loop does far slower than NumPy's vectorized kernels is priced at its
  measured cost (``experiments/calibrate_fused.py``): a function call (:data:`CALL_PRICE`,
  :data:`POW_PRICE`: libm's ``log`` or ``pow``, :mod:`.vmath`'s vectorized ``exp`` or
  ``tanh``; NumPy's ufuncs are SIMD) and a sum whose adds form a dependent chain
  (:data:`SERIAL_SUM`; NumPy's ``.sum`` is pairwise and vectorized).
* A statement stays a NumPy call when its loop nest is dearer than :data:`LOOP_RATIO` times
  the NumPy backend's kernels for it (the plan's ``statement_cost``: a scan, a contraction
  order or point writes that loops would not find), when the plan runs it as BLAS does (a
  matrix product, or matrix-vector products alone at its leading degree), when it calls a
  function with no loop form, or when the plan writes it as zeros and a few points
  (``np.zeros``' lazily zeroed pages beat writing every entry).
* A loop nest with a term that grows faster in some size than every term of the plan's
  price (``N**2`` against ``K*N``: an equality that solved the shorter index) stays NumPy
  (:func:`dominated`), whatever the constant factors.
* A statement NumPy binds as a view (the plan prices it 0: ``y_bar = c``) stays NumPy: a loop
  nest would read and write every element for nothing.
* A read that walks a row-major array down a column in the innermost loop (``c[i, j]`` summed
  over ``i`` for each ``j``) costs a cache line, :data:`STRIDED` points more: NumPy's
  ``.sum(axis=0)`` and masked sums walk rows. A sum over a relation that the interior tiles
  along the output's innermost index (:func:`tiled`) walks rows too, and is priced so.
* Reused values are not recomputed: a statement left to NumPy whose code run on its own (as
  the fused program calls it) costs more than :data:`REUSE` times its share of the plan reads
  a value other statements' kernels computed; alone, or as a loop nest, it would compute it
  again, so the whole NumPy program runs. Not so a statement over the rows of the loop nest
  just before it that shares its row sum (logsumexp's ``w_bar``): it runs in that kernel once
  per row (:mod:`.reuse`), priced so; a row sum's term read back at the points is a read.
* A pair loop (:mod:`.pairs`: sums over pairs ``(i, j)``, each pair visited once, every term
  added to its output) is priced as its pairs times the terms' work; it replaces the loop
  nest where that is cheaper (placement ``"pairs"``), under the same tests against the plan,
  and is kept only where a producer fuses into it (its gain: no N x N intermediate; over
  parameters alone NumPy's vectorized passes and BLAS win). A producer read by it is
  evaluated once per pair and distinct read.
* The split costs: the fused program runs each NumPy-placed statement's code on its own, so a
  value the NumPy program computes once for several statements is computed by each. When the
  fused program (its loop nests at ``1 / LOOP_RATIO``, its NumPy statements at their price
  alone) is not priced at least ``WHOLE_MARGIN`` of the NumPy plan's price beside its matrix
  products below it, the whole NumPy program runs (:func:`_whole_numpy`; ``whole``: the
  plan of the program as written, when :mod:`.epilogue` split its products).
* Producer-consumer fusion: a loop statement whose readers are all loop nests is evaluated
  where it is read instead of being stored, when that costs no more:
  the arithmetic recomputed at the extra points it is read at must not exceed the memory traffic
  saved (writing and reading it back: ``2 · MEMORY · |P|``). Decided consumers first, so a chain
  of producers fuses through.
* Band sums (a window of constant width wider than the taps, moving with an index) run as
  block passes (:mod:`.bands`), priced :data:`~.bands.BAND_PRICE` plus their term's work a
  point, where that is below the loop over the window (or its chain of adds).
* Sliding windows: a loop statement over one index that stays stored, read by one other loop
  nest over the same points in a window of constant width around each point (conv1d's
  ``c_bar[i - j]``, ``j < K``), is computed a chunk at a time into a buffer just ahead
  of its consumer (placement ``"window"``, :mod:`.windows`): the same work, never stored in
  full.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from ...ir.expr import (
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Const,
    Expr,
    Neg,
    Pow,
    Rel,
    Sum,
    free_indices,
)
from ...ir.program import Program, Statement
from ...plan.kernels import Contract, Fill, Plan
from ...plan.poly import ONE, ZERO, Poly, compare
from .bands import band_work, has_band
from .brackets import solve_order, sum_points
from .reuse import priced_body, row_sibling, sibling_body
from .scans import ScanForm, statement_scans
from .walks import array_reads, closed_sums, strided, top_sums
from .walks import children as _children
from .windows import Window, at, returned_and_readers, windows

__all__ = ["CALL_PRICE", "LOOP_RATIO", "MEMORY", "POW_PRICE", "SERIAL_SUM", "STRIDED",
           "PairPrice", "Schedule", "loop_price", "op_price", "schedule",
           "serial_sums"]

TILE_MIN = 16
"""An interior narrower than this is not tiled (:data:`.tiles.TILE_MIN`, which is this)."""

MEMORY = 4
"""Price of moving one element to or from memory, in arithmetic operations."""

LOOP_RATIO = 2 * MEMORY
"""A loop nest's price counts every read and operation at each point; the plan's kernels count
points, and each NumPy pass also writes and reads back its result (about ``2 · MEMORY`` per
point) where the loop nest keeps values in registers. A loop nest dearer than this many times
the plan's price (``Σ_t [i == t]·x[t]`` per point against ``k`` point writes) stays NumPy."""

STRIDED = 8 * MEMORY
"""Extra price of a read that walks a row-major array down a column: a cache line (8 float64)
fetched for the one element used (NumPy's ``.sum(axis=0)`` and BLAS walk rows instead)."""

CALL_PRICE: Mapping[str, int] = {
    "exp": 7, "log": 26, "tanh": 6, "sin": 6, "cos": 6, "log1p": 26, "expm1": 7,
    "sigmoid": 13, "softplus": 50, "logaddexp": 50,
}
"""Points of loop work per call of a libm function (other functions: 1, a single
instruction such as ``sqrt`` or ``abs``). NumPy's ufuncs run these with SIMD (AVX-512) code;
a Numba loop calls the scalar libm function once per element, but for ``exp``, ``expm1``,
``tanh`` and ``sigmoid``, whose loop code is :mod:`.vmath`'s straight-line arithmetic that LLVM
vectorizes. Each is the price at which a loop nest ``y[k] = f(x[k])`` (a read, the call, a
write) breaks even with NumPy's ``f(x)`` (priced one point) at their measured time ratio:
``LOOP_RATIO · ratio - 2``. Measured by ``taskset -c 1 python experiments/calibrate_fused.py``
(N = 10**6, float64; the ratios and their spread are in
experiments/results/calibration_fused.md): vmath's exp 1.04x np.exp, tanh 0.96x np.tanh,
expm1 1.11x np.expm1, sigmoid 1.79x np.exp (Zen 4, medians, since vmath's clamp became
min/max; libm's exp was 3.3x to 5.6x), log 3.5x, sin 1.0x, rounded up (exp's 6.3: 7, so a
lone ``exp(x)``, 1.04x NumPy's, stays NumPy); ``softplus`` and ``logaddexp`` (libm: an exp
and a log1p) 50."""

POW_PRICE = 47
"""Points per ``x ** k`` the loop writer emits as a ``pow`` call (every exponent but 1, 2,
-1 and 0.5, which are a multiplication, a division or ``sqrt``): measured as for
:data:`CALL_PRICE`, ``x ** 1.5`` 6.1x NumPy's."""

_INLINE_POWERS = (1, 2, -1, 0.5)

SERIAL_SUM = 13
"""Points per term of a sum the loop nest accumulates as a chain of dependent adds (LLVM does
not reassociate them, so the loop is not vectorized; NumPy's ``.sum`` is pairwise and
vectorized): a sum free of the statement's innermost index (once per row) or one whose read
walks a column along it (:func:`serial_sums`). Sums over the innermost index are
interchanged with tiles of it (:mod:`.tiles`) and vectorize. A term whose own work exceeds the
chain's latency hides it: a term costs ``max(work + 1, SERIAL_SUM)``. Measured as for
:data:`CALL_PRICE`: a row sum ``acc += a[t, i]`` (1000 x 1000) 1.6x ``a.sum(axis=1)``, so a
read and an add break even at ``LOOP_RATIO · 1.6``."""

REUSE = 2
"""A statement reuses a value another statement's NumPy kernels computed when its NumPy code
alone (:func:`schedule`'s ``alone``) costs more than this many times its share of the plan."""

WHOLE_MARGIN = Fraction(1, 20)
"""The fused program runs only where it is priced at least this fraction of the NumPy
program's price beside its matrix products (which BLAS runs alike in both) below it
(:func:`_whole_numpy`): the sweep's mlp_numpy, whose one loop nest (tanh's derivative beside
four BLAS calls, each product's elementwise work left in its NumPy code) ran 1.03-1.04x the
NumPy program; split from them (:mod:`.epilogue`) the loops pay."""


class PairPrice(NamedTuple):
    """A pair loop's price (:mod:`.pairs`) and, for each array it reads, how many times a
    fused producer of it would be evaluated (once per pair and distinct read)."""

    price: Poly
    reads: Mapping[str, Poly]


@dataclass(frozen=True)
class Schedule:
    """``placement[name]``: ``"loop"``, ``"fused"``, ``"pairs"``, ``"window"`` or
    ``"numpy"``; ``why``: the reason; ``windows``: the producers computed a chunk at a time in
    a sliding window of their consumer's loop (:mod:`.windows`), by name."""

    placement: Mapping[str, str]
    why: Mapping[str, str] = field(default_factory=dict)
    windows: Mapping[str, Window] = field(default_factory=dict)
    price: Poly | None = None
    """The fused program's price in loop points (its loop nests', and its NumPy statements'
    code run alone at ``LOOP_RATIO`` a point); None: the whole NumPy program runs."""

    def names(self, kind: str) -> tuple[str, ...]:
        return tuple(n for n, k in self.placement.items() if k == kind)


def dominated(a: Poly, b: Poly) -> bool:
    """Each term of ``a`` grows, in every size, at most as fast as some term of ``b``
    (``K*N`` under ``K*N + N``; ``N**2`` not under ``K*N``): ``compare`` alone, which weighs
    terms of one degree with all sizes equal, would rank ``N**2`` with ``8*K*N``."""
    def under(m: tuple, n: tuple) -> bool:
        have = dict(n)
        return all(e <= have.get(x, 0) for x, e in m)
    return all(any(under(m, n) for n in b.terms) for m in a.terms)


def work(e: Expr, fused_work: Mapping[str, Poly] | None = None,
         scans: Mapping[Sum, ScanForm] | None = None, hoisted: list[Sum] | None = None,
         inner: str | None = None, tile: str | None = None) -> Poly:
    """Points visited to evaluate ``e`` once (reads and operations); a running sum
    (``scans``) visits one new term per point, amortized; a hoisted sum is read. A read
    that walks across rows along the innermost loop (``inner``, :func:`strided`) fetches a
    cache line for one element: :data:`STRIDED` points. ``tile``: the statement's innermost
    output index, for a sum outside other sums: one that depends on it and reads no array
    across rows along it is interchanged with tiles of it (:mod:`.tiles`), so its reads are
    judged along ``tile``, the innermost loop there."""
    fused_work = fused_work or {}
    if tile is not None and not isinstance(e, Sum | Const | Access | Bracket):
        total = op_price(e)
        for c in _children(e):
            total = total + work(c, fused_work, scans, hoisted, inner, tile)
        return total
    if isinstance(e, Access) and inner is not None and strided(e, inner):
        return fused_work.get(e.name, ONE) + STRIDED
    if isinstance(e, Sum) and (not free_indices(e) or (hoisted and e in hoisted)):
        return ONE  # hoisted (a sum over no free index: once per call, not priced per point)
    if hoisted and isinstance(e, Binary | Neg | Pow | Call):
        total = op_price(e)
        for c in _children(e):
            total = total + work(c, fused_work, scans, hoisted, inner)
        return total
    if scans and isinstance(e, Sum) and e in scans:
        return work(scans[e].body, fused_work) + 2
    if scans and not isinstance(e, Sum):
        total = ZERO if isinstance(e, Const | Access) else op_price(e)
        if isinstance(e, Access):
            return fused_work.get(e.name, ONE)
        for c in _children(e):
            total = total + work(c, fused_work, scans, inner=inner)
        return total
    if isinstance(e, Const):
        return ZERO
    if isinstance(e, Access):
        return fused_work.get(e.name, ONE)
    if isinstance(e, Bracket):
        preds = e.pred.preds if isinstance(e.pred, And) else (e.pred,)
        walks = inner is not None and any(isinstance(p, Rel) and strided(p, inner) for p in preds)
        return ONE + STRIDED if walks else ONE
    if isinstance(e, Neg | Pow):
        return work(e.arg if isinstance(e, Neg) else e.base, fused_work, inner=inner) + \
            op_price(e)
    if isinstance(e, Binary):
        return work(e.lhs, fused_work, inner=inner) + work(e.rhs, fused_work, inner=inner) + ONE
    if isinstance(e, Call):
        total = op_price(e)
        for a in e.args:
            total = total + work(a, fused_work, inner=inner)
        return total
    if isinstance(e, Sum):
        count = sum_points(e.indices, e.body)
        along = solve_order(e.indices, e.body)[-1].name
        if tile is not None and tiled(e, tile):
            along = tile
        plain = count * (work(e.body, fused_work, inner=along) + ONE)
        band = band_work(e, plain, lambda f: work(f, fused_work))  # (.bands: a block pass)
        return plain if band is None else band
    return ONE


def tiled(e: Sum, v: str) -> bool:
    """``e`` (outside other sums of a statement whose innermost output index is ``v``) is
    interchanged with tiles of ``v`` (:mod:`.tiles`) and priced so: it depends on ``v``, no
    read walks an array across rows along ``v``, and it sums over a relation. (Measured, E12
    at M = 1024, N = 2048: ``Σ_j [R(j, i)]·y[j]`` tiled 0.15 ms, NumPy's masked sum of the
    transposed mask 5.0 ms; a plain column sum ``Σ_i c[i, j]`` tiled 0.37 ms, NumPy's
    ``.sum(axis=0)`` 0.28 ms: that one stays priced by its column walk, and NumPy.)"""
    reads = array_reads(e.body)
    return (v in free_indices(e) and any(isinstance(a, Rel) for a in reads)
            and not any(strided(a, v) for a in reads))


def op_price(e: Expr) -> Poly:
    """One operation's price: a libm call's or ``pow``'s (:data:`CALL_PRICE`,
    :data:`POW_PRICE`), else 1."""
    if isinstance(e, Call):
        return Poly.const(CALL_PRICE.get(e.fn, 1))
    if isinstance(e, Pow) and e.exponent not in _INLINE_POWERS:
        return Poly.const(POW_PRICE)
    return ONE


def serial_sums(s: Statement) -> list[Sum]:
    """The sums of ``s``'s body (outside other sums) its loop nest accumulates per point as
    chains of dependent adds (:data:`SERIAL_SUM`): those free of the innermost output index
    or reading an array down a column along it (not interchanged with tiles), over a range
    that grows with the sizes (a few taps are straight-line code)."""
    if not s.indices or statement_scans(s.body, s.indices[-1].name):
        return []
    v = s.indices[-1].name
    out: list[Sum] = []
    for e in top_sums(s.body):
        if (e in out or not free_indices(e)  # (over no free index: once per call, at the top)
                or sum_points(e.indices, e.body).is_constant()):
            continue
        if v not in free_indices(e) or any(strided(a, v) for a in array_reads(e.body)):
            out.append(e)
    return out


def _chain_price(e: Sum, fused_work: Mapping[str, Poly] | None) -> Poly:
    """What a serial sum's dependent adds cost beyond :func:`work`'s count: its terms times
    ``SERIAL_SUM - (work + 1)`` where the term's work is a constant below that."""
    term = work(e.body, fused_work, inner=solve_order(e.indices, e.body)[-1].name) + ONE
    if term.degree() > 0:
        return ZERO
    short = SERIAL_SUM - term.constant_term()
    return sum_points(e.indices, e.body) * short if short > 0 else ZERO


def hoisted_sums(s: Statement) -> list[Sum]:
    """The sums of ``s``'s body (outside other sums) free of its innermost index: the loop
    writer computes them once per point of the outer loops (none when a running sum is
    carried along that index)."""
    if not s.indices or statement_scans(s.body, s.indices[-1].name):
        return []
    v = s.indices[-1].name
    found: list[Sum] = []

    def walk(e: Expr) -> None:
        if isinstance(e, Sum):
            if v not in free_indices(e) and e not in found:
                found.append(e)
            return
        for c in _children(e):
            walk(c)

    walk(s.body)
    return found


def loop_price(s: Statement, fused_work: Mapping[str, Poly] | None = None,
               relations: frozenset[str] = frozenset()) -> Poly:
    """A statement's loop nest: its output points times (body work + one write), a hoisted
    sum (:func:`hoisted_sums`) priced once per point of the outer loops, a row sum's term
    read back from its buffer (:mod:`.reuse`) a read."""
    s = Statement(s.name, s.indices, priced_body(s, relations), s.loc)
    scans = statement_scans(s.body, s.indices[-1].name) if s.indices else {}
    hoisted = hoisted_sums(s)
    # (a constant innermost extent under TILE_MIN runs point by point, never tiled)
    last = s.shape[-1] if s.shape else None
    tile = s.indices[-1].name if s.indices and not scans and not (
        isinstance(last, int) and last < TILE_MIN) else None
    price = Poly.product_of_dims(s.shape) * (work(s.body, fused_work, scans, hoisted,
                                                  tile=tile) + ONE)
    outer = Poly.product_of_dims(s.shape[:-1])
    for h in hoisted:
        price = price + outer * work(h, fused_work)
    for e in serial_sums(s):  # once per outer point when hoisted, else once per point
        times = outer if e in hoisted else Poly.product_of_dims(s.shape)
        price = price + times * _chain_price(e, fused_work)
    for e in closed_sums(s.body):  # over no free index: once per call, at the kernel top
        along = solve_order(e.indices, e.body)[-1].name
        price = price + sum_points(e.indices, e.body) * (work(e.body, fused_work, inner=along)
                                                         + ONE)
    return price


def _sites(e: Expr, name: str, mult: Poly, seen: set | None = None) -> list[Poly]:
    """For each read of ``name`` in ``e``: how many times it runs per evaluation of ``e``
    (times ``mult``). A second read at the same point in the same loop is not counted: the
    loop writer evaluates a fused producer once per point of a block."""
    seen = set() if seen is None else seen
    if isinstance(e, Access):
        if e.name != name or e.indices in seen:
            return []
        seen.add(e.indices)
        return [mult]
    if isinstance(e, Sum):
        return _sites(e.body, name, mult * sum_points(e.indices, e.body), set())
    out: list[Poly] = []
    for c in _children(e):
        out += _sites(c, name, mult, seen)
    return out


def blas_contraction(s: Statement, plan: Plan) -> bool:
    """The NumPy plan runs ``s`` as BLAS: a contraction of degree 3 or more (a matrix product,
    its other factors elementwise passes of lower degree), or contractions alone at the
    statement's leading degree (matrix-vector products: BLAS reads a transposed matrix at
    memory speed, a scalar loop by strides)."""
    mine = [k for k in plan.kernels if k.statement == s.name]
    if any(isinstance(k, Contract) and k.space.degree() >= 3 for k in mine):
        return True
    top = max((k.cost.degree() for k in mine), default=0)
    lead = [k for k in mine if k.cost.degree() == top]
    return top >= 2 and all(isinstance(k, Contract) for k in lead)


def _zeros_and_points(s: Statement, plan: Plan) -> bool:
    """The plan writes ``s`` as zeros and points of lower degree (a diagonal, point reads'
    gradients): ``np.zeros`` gets pages the system zeroes lazily, a loop nest writes every
    entry."""
    mine = [k for k in plan.kernels if k.statement == s.name]
    top = max((k.cost.degree() for k in mine), default=0)
    return top >= 1 and all(isinstance(k, Fill) for k in mine if k.cost.degree() == top)


def schedule(prog: Program, plan: Plan, loopable: Mapping[str, bool],
             sizes: Mapping[str, int] | None = None,
             alone: Mapping[str, Poly] | None = None,
             pairs: Mapping[str, PairPrice] | None = None,
             relations: frozenset[str] = frozenset(), whole: Plan | None = None) -> Schedule:
    """Place each statement of ``prog`` (``plan``: the NumPy backend's plan of ``prog``;
    ``loopable``: whether the loop writer lowers each statement; ``alone``: the price of
    each statement's NumPy code run on its own, as the fused program would call it;
    ``pairs``: the statements the pair loop writer lowers (:mod:`.pairs`), their price and
    reads: placed ``"pairs"`` where that is cheaper than their loop nest; ``relations``: the
    boolean parameters). A statement over the rows of the loop nest just before it that
    shares its row sum runs in that kernel once per row (:mod:`.reuse`), priced so, against
    its NumPy code alone (which would compute the sum again). ``whole``: the plan of the NumPy
    program that runs instead of a fused one (default ``plan``; :mod:`.epilogue`'s split
    program is priced against the unsplit program's)."""
    pairs = pairs or {}
    whole = whole or plan
    prices: dict[str, Poly] = {}  # each loop nest's price (a row sibling's: in its kernel)
    placement: dict[str, str] = {}
    why: dict[str, str] = {}
    reused: list[str] = []
    reusing: dict[str, Poly] = {}  # the statements that reuse a value, and their loop price
    unpaired: dict[str, tuple[str, str]] = {}  # a pair loop's placement and why without it
    for s in prog.statements:
        if not loopable.get(s.name, False):
            placement[s.name], why[s.name] = "numpy", "no loop form"
            continue
        if blas_contraction(s, plan):
            placement[s.name], why[s.name] = "numpy", "contraction (BLAS)"
            continue
        if _zeros_and_points(s, plan):
            placement[s.name], why[s.name] = "numpy", "zeros and points (np.zeros)"
            continue
        numpy = plan.statement_cost(s.name)
        own = alone.get(s.name, numpy) if alone else numpy
        loop = loop_price(s, relations=relations)
        k = prog.statements.index(s)
        prev = prog.statements[k - 1] if k else None
        sibling = prev is not None and placement[prev.name] == "loop" and row_sibling(
            prev, s, relations)
        if sibling:
            assert prev is not None
            loop = Poly.product_of_dims(s.shape) * (work(sibling_body(prev, s)) + ONE)
            numpy = own
        prices[s.name] = loop
        place, reason, reuse = _place(s, loop, numpy, own, sizes, "loop")
        if sibling and place == "loop":
            assert prev is not None
            reason = f"once per row in {prev.name}'s kernel, reading its row sum: price {loop}"
        pair = pairs.get(s.name)
        if pair is not None and reuse is None and compare(pair.price, loop, sizes) < 0:
            p_place, p_reason, _ = _place(s, pair.price, numpy, own, sizes, "pairs")
            if p_place == "pairs":
                unpaired[s.name] = (place, reason)
                place, reason = p_place, p_reason
        placement[s.name], why[s.name] = place, reason
        if reuse is not None:
            reused.append(reuse)
            reusing[s.name] = loop
    if reused and not _loop_the_reusing(prog, plan, whole, placement, why, reusing, alone,
                                        pairs, sizes, prices):
        note = "the NumPy program: reused values not recomputed: " + ", ".join(reused)
        return Schedule({s.name: "numpy" for s in prog.statements},
                        {s.name: note for s in prog.statements})
    fed = _fuse(prog, placement, why, sizes, pairs)
    for name, (place, reason) in unpaired.items():
        if name not in fed:  # (measured: without a fused producer NumPy's passes and BLAS win)
            placement[name] = place
            why[name] = reason + "; a pair loop only pays with a producer fused into it"
    note = _whole_numpy(prog, plan, whole, placement, alone, pairs, sizes, prices)
    if note is not None:
        return Schedule({s.name: "numpy" for s in prog.statements},
                        {s.name: note for s in prog.statements})
    # A producer read by one loop nest in a window of constant width around its point: the
    # same work, without writing it in full and reading it back (no price to weigh).
    slid = windows(prog, placement)
    for name, win in slid.items():
        placement[name] = "window"
        why[name] += f"; a sliding window of {win.consumer} (read at [{at(str(win.low))}, " \
            f"{at(str(win.high))}])"
    loops, parts = _fused_parts(prog, plan, placement, alone, pairs, prices)
    return Schedule(placement, why, slid, loops + parts * LOOP_RATIO)


def _loop_the_reusing(prog: Program, plan: Plan, whole: Plan, placement: dict[str, str],
                      why: dict[str, str], reusing: Mapping[str, Poly],
                      alone: Mapping[str, Poly] | None, pairs: Mapping[str, PairPrice],
                      sizes: Mapping[str, int] | None, prices: Mapping[str, Poly]) -> bool:
    """Place as loop nests the statements whose NumPy code would recompute a value the plan
    shares (logsumexp's ``w_bar``, a log of the row sum ``x_bar``'s kernels compute), when the
    fused program so placed is priced below the whole NumPy plan (:func:`_whole_numpy`): each
    loop nest recomputes the value (priced so), against the plan's whole price rather than
    its share of it, which leaves the shared value out. Whether it was done."""
    trial = dict(placement)
    for name, loop in reusing.items():
        if not dominated(loop, whole.cost):
            return False
        trial[name] = "loop"
    if _whole_numpy(prog, plan, whole, trial, alone, pairs, sizes, prices) is not None:
        return False
    for name, loop in reusing.items():
        placement[name] = "loop"
        why[name] = (f"loop nest, price {loop}: its NumPy code would recompute a value the "
                     f"plan shares, and the fused program is cheaper than the plan's {plan.cost}")
    return True


def _fused_parts(prog: Program, plan: Plan, placement: Mapping[str, str],
                 alone: Mapping[str, Poly] | None, pairs: Mapping[str, PairPrice],
                 prices: Mapping[str, Poly]) -> tuple[Poly, Poly]:
    """The price of the fused program's loop nests, and of its NumPy statements (in plan
    points)."""
    loops, parts = ZERO, ZERO
    for s in prog.statements:
        place = placement[s.name]
        if place == "numpy":
            parts = parts + (alone.get(s.name, plan.statement_cost(s.name)) if alone
                             else plan.statement_cost(s.name))
        elif place == "pairs":
            loops = loops + pairs[s.name].price
        else:  # a loop nest, or a fused producer (evaluated where read: at least once)
            loops = loops + prices.get(s.name, loop_price(s))
    return loops, parts


def _whole_numpy(prog: Program, plan: Plan, whole: Plan, placement: Mapping[str, str],
                 alone: Mapping[str, Poly] | None, pairs: Mapping[str, PairPrice],
                 sizes: Mapping[str, int] | None, prices: Mapping[str, Poly]) -> str | None:
    """Why the whole NumPy program (plan ``whole``) runs instead of the fused one, or None.
    The fused program runs each NumPy-placed statement's code on its own (a value the NumPy
    program shares, ``E * E_bar`` for two products, computed by each that reads it): its
    price, loop nests at ``1 / LOOP_RATIO`` (the per-statement test's exchange rate), must be
    below the NumPy plan's, else the split costs more than the loops save."""
    loops, parts = _fused_parts(prog, plan, placement, alone, pairs, prices)
    # (the split also pays what no kernel prices: a call per NumPy part, a fresh array per
    # loop nest's output; a saving below WHOLE_MARGIN of the NumPy price beside its matrix
    # products does not cover it: BLAS runs those alike in both, 97 % of mlp's price)
    base = whole.cost - whole.products
    if not loops.is_zero() and compare(
            (loops + parts * LOOP_RATIO) * WHOLE_MARGIN.denominator,
            (whole.cost * WHOLE_MARGIN.denominator - base * WHOLE_MARGIN.numerator)
            * LOOP_RATIO, sizes) >= 0:
        return (f"the NumPy program: the fused one (loops {loops}, NumPy parts {parts}) is "
                f"not {WHOLE_MARGIN} cheaper than its {whole.cost} (beside matrix products)")
    return None


def _place(s: Statement, loop: Poly, numpy: Poly, own: Poly, sizes: Mapping[str, int] | None,
           kind: str) -> tuple[str, str, str | None]:
    """``s`` as a loop nest (or pair loop, ``kind``) of price ``loop`` or as NumPy (plan price
    ``numpy``, ``own`` run alone): the placement, why, and a note when its NumPy code reuses
    a value other statements computed (then the whole NumPy program runs)."""
    if numpy.is_zero() and s.indices:
        # (not is_zero: the plan computed it within another statement)
        reuse = None if own.is_zero() else f"{s.name} (alone {own}, in the plan 0)"
        return "numpy", "a view in NumPy (no pass)", reuse
    if compare(loop, numpy * LOOP_RATIO, sizes) > 0:
        # Its NumPy kernels read a value other statements' kernels computed (a shared sum):
        # run alone they recompute it ({own}), and so would its loop nest. Only the whole
        # NumPy program computes it once.
        reuse = (f"{s.name} (alone {own}, in the plan {numpy})"
                 if compare(own, numpy * REUSE, sizes) > 0 else None)
        return "numpy", f"loops {loop} > {LOOP_RATIO}x the NumPy plan's {numpy}", reuse
    if not numpy.is_zero() and not dominated(loop, numpy):
        return "numpy", f"loops {loop} grow faster in some size than the NumPy plan's {numpy}", \
            None
    return kind, f"{'pair loop' if kind == 'pairs' else 'loop nest'}, price {loop}", None


def _fuse(prog: Program, placement: dict[str, str], why: dict[str, str],
          sizes: Mapping[str, int] | None, pairs: Mapping[str, PairPrice]
          ) -> dict[str, list[str]]:
    """Fuse producers into their consumers (module docstring); for each consumer, the
    producers fused into it."""
    fed: dict[str, list[str]] = {}
    returned, readers = returned_and_readers(prog)
    # How many times each statement's body is evaluated (its points; more when fused).
    evaluations: dict[str, Poly] = {}
    for s in reversed(prog.statements):
        space = Poly.product_of_dims(s.shape)
        evaluations[s.name] = space
        users = readers[s.name]
        if (placement[s.name] != "loop" or s.name in returned or not users or not s.indices
                or any(placement[u.name] == "numpy" for u in users)
                # a running sum carried along its points: alone O(1) a point, each evaluation
                # where it is read the whole sum (a prefix sum fused into its reader: O(N²))
                or statement_scans(s.body, s.indices[-1].name) or has_band(s.body)):
            continue
        reads = ZERO
        for u in users:
            if placement[u.name] == "pairs":  # once per pair and distinct read
                reads = reads + pairs[u.name].reads.get(s.name, ZERO)
                continue
            per_point = evaluations[u.name]
            for site in _sites(u.body, s.name, ONE):
                reads = reads + per_point * site
        extra = (reads - space) * work(s.body)
        saved = space * (2 * MEMORY)
        if compare(extra, saved, sizes) <= 0:
            placement[s.name] = "fused"
            why[s.name] = f"fused into {', '.join(u.name for u in users)} (evaluated {reads})"
            evaluations[s.name] = reads
            for u in users:
                fed.setdefault(u.name, []).append(s.name)
    return fed
