"""Band sums: a ``Sum`` over a window of constant width that moves with an output index.

``g[i] = Σ_j [i + a <= j <= i + a + W - 1] · f(j)`` (``f`` free of ``i``; other brackets
bounding ``j`` by sizes, ``[j >= 0]``, ``[N > j]``, narrow ``j``'s range) is O(W) per point as a
loop (taps or a loop over the window), O(N·W) in all: a moving average over 128 samples and
its adjoint (experiments/sweep_programs.py, ``moving_average_long``), whose gradient nests one
band inside another, visits 128·128 points per output. NumPy's plan runs it as differences of
cumulative sums; a running sum that adds the entering term and subtracts the leaving one would
do the same in the loop nest, but one inf in ``x`` would make every later window nan (inf -
inf), and cancellation would cost the small windows after a large one their accuracy.

The van Herk / Gil-Werman block method needs no subtraction: cut the range of ``t = j - a``
into blocks of ``W``, take each block's suffix sums ``S`` and prefix sums ``P``; the window of
``i`` (``t`` in ``[i, i + W - 1]``) is the suffix of ``i``'s block from ``i`` plus the prefix
of the next block up to ``i + W - 1`` (the whole block when ``i`` starts one). Every window
is the sum of exactly its own terms (an inf or nan in it gives what direct summation gives,
nothing outside it leaks in, a window of -0.0 terms is +0.0 as a sum from +0.0 is), in O(1)
per point: each term is evaluated once (its loop vectorizes), then one pass per block runs the
prefix chain and the next block's suffix chain side by side (two dependent add chains).

The loop writer (:func:`band_sum`) runs the pass at the kernel's top (once per call: ``f``
reads no output index), before the loops: into the kernel's output when the band is a point's
value there (each point reads its sum back before it is written), else into a buffer; a band in
``f`` (``moving_average_long``: the inner sum, a band along ``j``) streams, a block at a time,
into a ring buffer just ahead of the term loop that reads it. No array of the extent is
allocated per call (two were: glibc trimmed the freed heap and every call paid the page faults
again, 2 -> 7 ms at N = 10**6). The strong zero: ``g[i]`` is one where no term of its window
is, which is an interval of ``i`` where ``f`` is never one (or is a band's, itself an
interval), else counted by the same block sums over integers (exact: a count of the terms
that are not strong zeros). The schedule prices it (:func:`band_work`) at :data:`BAND_PRICE`
plus ``f``'s work per point, where that is below the loop's price.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...ir.expr import Binary, Bracket, Const, Expr, Sum, children, free_indices, product_factors
from ...ir.index import Affine, Dim, IndexVar, dim_str
from ...plan.poly import ONE, Poly, compare
from .brackets import cmps
from .compact import extreme
from .interior import Index
from .reuse import canonical

if TYPE_CHECKING:
    from .loops import LoopWriter

__all__ = ["BAND_MIN", "BAND_PRICE", "BandForm", "BandStream", "band_form", "band_sum", "band_work",
           "banded", "has_band"]

BAND_PRICE = 40
"""Points of loop work per output point of a band's block pass beyond its term's own work (the
term stored, two dependent add chains side by side, the window's sum stored and read back),
at which a statement ``y[i] = Σ_j [i - W < j <= i]·x[j]`` (this, a read and a write a point)
breaks even with ``LOOP_RATIO`` NumPy passes at their measured time ratio: ``LOOP_RATIO ·
ratio - 2``. Measured by ``taskset -c 1 python experiments/calibrate_bands.py`` (N = 10**6,
float64, a loaded two-core machine: fastest calls, medians spread 2-4x): the pass 1.6-1.8 ms
for W = 16 to 128 (3.0 ms at W = 10: more blocks), one NumPy pass 0.28-0.44 ms, so 28-48; the
loop over the window 5.7 ms (W = 10) to 18 ms (W = 32), NumPy's cumulative sums (W = 128)
9-11 ms."""

BAND_MIN = 10
"""A window narrower than this stays the loop writer's taps (:data:`.loops.UNROLL` and
below: straight-line code LLVM vectorizes across points; measured as above, the taps 0.44 ms
at W = 4 and 0.53-0.56 ms at W = 8 against the pass's 2.0-2.9 ms: ``moving_average`` keeps
them)."""

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class BandForm:
    """``Σ_j [outer + low <= j < outer + low + width]·[lows <= j < highs]·body``."""

    index: IndexVar
    outer: str
    low: Affine
    """The window's first ``j`` less ``outer``: sizes and an integer."""
    width: int
    lows: tuple[Affine, ...]
    """Bounds of ``j`` by sizes alone, ``j >= lo`` (besides ``j >= 0``)."""
    highs: tuple[Affine, ...]
    """``j < hi`` (besides ``j < extent``)."""
    body: Expr


def band_form(e: Sum) -> BandForm | None:
    """``e`` as a band sum along its one free index (None: it is not one)."""
    free = free_indices(e)
    if len(e.indices) != 1 or len(free) != 1:
        return None
    iv = e.indices[0]
    j, (i,) = iv.name, tuple(free)
    rest: list[Expr] = []
    lows: list[Affine] = []
    highs: list[Affine] = []
    near: list[Affine] = []  # j >= i + a
    far: list[Affine] = []  # j < i + b
    for f in product_factors(e.body):
        conds = cmps(f)
        if conds is None:
            rest.append(f)
            continue
        for c in conds:
            d = c.lhs - c.rhs
            if j not in d.free_indices():
                rest.append(Bracket(c))
                continue
            k = d.coeff(j)
            if k not in (1, -1) or c.op in ("==", "!=") or not d.is_integral():
                return None
            other = (d - Affine.var(j).scale(k)).scale(-k)  # j op other
            op = c.op if k == 1 else _FLIP[c.op]
            lo = {">=": other, ">": other + 1}.get(op)
            hi = {"<=": other + 1, "<": other}.get(op)
            names = other.free_indices()
            if names == {i} and other.coeff(i) == 1:
                shift = Affine.var(i)
                (near.append(lo - shift) if lo is not None else far.append(hi - shift))  # type: ignore[operator]
            elif not names:
                (lows.append(lo) if lo is not None else highs.append(hi))  # type: ignore[arg-type]
            else:
                return None
    if len(near) != 1 or len(far) != 1:
        return None
    width = far[0] - near[0]
    if not width.is_constant() or width.const < 2:
        return None
    body: Expr = rest[0] if rest else Const(1.0)
    for f in rest[1:]:
        body = Binary("*", body, f)
    if i in free_indices(body):
        return None
    return BandForm(iv, i, near[0], int(width.const), tuple(lows), tuple(highs), body)


def band_work(e: Sum, plain: Poly, price: Callable[[Expr], Poly]) -> Poly | None:
    """The work of ``e`` per evaluation run as a band (:data:`BAND_PRICE` and its term's work
    ``price(f)``), when it is one, wide enough, and that is below the loop's ``plain``."""
    form = band_form(e)
    if form is None or form.width < BAND_MIN:
        return None
    from .schedule import SERIAL_SUM  # (imported when the schedule prices)

    band = price(form.body) + BAND_PRICE
    # A window wider than the taps is a loop whose adds form a dependent chain: at least
    # SERIAL_SUM a term (measured, calibrate_bands.py: W = 16, 7-15 ms at N = 10**6)
    chain = Poly.const(form.width * SERIAL_SUM)
    return band if compare(band, plain) < 0 or compare(band, chain) < 0 else None


def banded(e: Sum) -> BandForm | None:
    """``e``'s form when the loop writer runs it as a band: as the schedule prices it."""
    form = band_form(e)
    if form is None or form.width < BAND_MIN:
        return None
    from .brackets import sum_points
    from .schedule import work  # (the schedule prices bands with this module)

    plain = sum_points(e.indices, e.body) * (work(e.body) + ONE)
    return form if band_work(e, plain, work) is not None else None


def has_band(e: Expr) -> bool:
    """Some sum in ``e`` runs as a band (kept out of producer fusion and sliding windows:
    its pass runs once per call over the whole extent, never at a point or over a chunk)."""
    if isinstance(e, Sum) and banded(e) is not None:
        return True
    return any(has_band(c) for c in children(e))


@dataclass
class BandStream:
    """A block pass being written whose terms read bands along its own index ``var``: their
    passes advance, a block at a time, just before its term loop (``lines``, inside its block
    loop) until they have produced every point up to ``need`` (exclusive), into ring buffers
    that hold ``width`` points behind that and a block of theirs ahead."""

    var: str
    need: str
    width: int
    name: str
    lines: list[str] = field(default_factory=list)


def band_sum(w: LoopWriter, e: Sum, env: Mapping[str, Index]) -> tuple[str, str | None] | None:
    """``e``'s value and strong-zero flag at the point, read from its band's buffer, or None
    where it does not run as a band. The pass runs at the kernel's top, once, into the
    kernel's output when it is a point's value there (read back at that point before the point
    is written), else into a buffer; inside the terms of another pass it streams
    (:class:`BandStream`)."""
    if not w.bands or w.top is None:
        return None
    form = banded(e)
    ix = env.get(form.outer) if form is not None else None
    if form is None or ix is None or ix.extent is None:
        return None
    stream = w.band_stream if w.band_stream is not None and ix.code == w.band_stream.var \
        else None
    out = w.out_point
    into = None
    if stream is None and out is not None and out[1] == ix.code and out[2] == ix.extent \
            and w.hoisted.get((("bandout", out[0]), ()), e) == e:
        into = out[0]  # (one band per output; a second one gets a buffer of its own)
        w.hoisted[(("bandout", out[0]), ())] = e
    key = (("band", canonical(e), ix.extent, into, stream.name if stream else None), ())
    if key not in w.hoisted:
        w.hoisted[key] = None  # taken: a band inside this one's terms is named apart
        w.hoisted[key] = _band_pass(w, form, ix.extent, into, stream)
    store, counts, interval = w.hoisted[key]
    if store is None:  # every term a strong zero
        return "F(0)", "True"
    at = f"np.uintp({ix.code})" if stream is None else f"np.uintp({ix.code} & {store[1]})"
    if interval is not None:
        flag = f"({ix.code} < {interval[0]} or {ix.code} > {interval[1]})"
        w.hoisted[(("bandflag", flag), ())] = interval
    else:
        flag = f"({counts}[{at}] == 0)"
    return f"{store[0]}[{at}]", flag


def _band_pass(w: LoopWriter, form: BandForm, extent: Dim, into: str | None,
               stream: BandStream | None
               ) -> tuple[tuple[str, str] | None, str | None, tuple[str, str] | None]:
    """Writes the block pass of ``form`` over the points ``[0, extent)`` of its outer index:
    its setup to the kernel's top, its blocks there too (into ``into``, the kernel's output,
    or a buffer of its own), or streamed into ``stream``'s pass. Its buffer and ring mask
    (None: every term a strong zero), its counts' buffer (None: not counted) and the interval
    of points where it is not a strong zero (None: counted)."""
    from .loops import LoopWriter

    assert w.top is not None
    b = f"_bd{w.tag}{len(w.hoisted)}"
    n, nj, width = dim_str(extent), dim_str(form.index.extent), form.width
    low = w.affine(form.low, {})[0]
    jvar = f"{form.index.name}{b}"
    inner = BandStream(jvar, f"{b}_j + {b}_r1", width, b)
    sub = LoopWriter(w.shapes, w.fused, w.relations, hoisted=w.hoisted, prefix=f"{b}_",
                     top=w.top, tag=w.tag, bands=True, band_stream=inner)
    sub.depth = 2
    value, flag = sub.expr(form.body, {form.index.name: Index(jvar, form.index.extent)})
    if flag == "True":
        return None, None, None
    lo = extreme("max", ["0", *(w.affine(a, {})[0] for a in form.lows)])
    hi = extreme("min", [nj, *(w.affine(a, {})[0] for a in form.highs)])
    within = w.hoisted.get((("bandflag", flag), ())) if flag is not None else None
    if within is not None:  # a band's strong zero: outside an interval of j
        lo, hi = extreme("max", [lo, within[0]]), extreme("min", [hi, f"{within[1]} + 1"])
    counted = flag is not None and within is None
    if stream is not None:  # a ring of points: the reader's window behind, a block ahead
        size = 1 << (stream.width + width).bit_length()
        mask = str(size - 1)
        buf, cbuf, size_code = b, f"{b}_c", str(size)
    else:
        mask, buf, cbuf, size_code = "", into or b, f"{b}_c", n
    first = "i" if low == "0" else f"i + {_wrap(low)}".replace("+ -", "- ")
    top = w.top
    top += [f"    # {b}[i] = Σ_j [{first} <= j < {first} + {width}]·f(j) for every i: "
            f"blocks of {width}, each window a block's suffix sum plus the next block's "
            "prefix sum (its own terms only, no subtraction)",
            f"    {b}_lo = {lo}",
            f"    {b}_hi = {hi}",
            *([] if counted else [  # not a strong zero where the window meets [lo, hi)
                f"    {b}_il = {b}_lo - ({_plus(width - 1, low)})",
                f"    {b}_ih = ({b}_hi - 1 - ({low})) if {b}_lo < {b}_hi else {b}_il - 1"]),
            *([] if buf == into else [f"    {buf} = np.empty({size_code}, dtype=F)"]),
            *([f"    {cbuf} = np.empty({size_code}, dtype=np.int64)  # its terms not strong "
               "zeros"] if counted else []),
            f"    {b}_t = np.empty({width}, dtype=F)  # the next block's terms",
            f"    {b}_s = np.empty({2 * width}, dtype=F)  # this block's and the next one's "
            "suffix sums",
            *([f"    {b}_tc = np.empty({width}, dtype=np.int64)",
               f"    {b}_sc = np.empty({2 * width}, dtype=np.int64)"] if counted else []),
            f"    {b}_o = 0",
            f"    {b}_b = -{width}"]

    def put(kind: str, at: str) -> str:
        target = buf if kind == "" else cbuf
        return f"{target}[np.uintp({at})]" if not mask else \
            f"{target}[np.uintp(({at}) & {mask})]"

    zero = ["F(0)", "0"]
    below = extreme("min", [str(width), f"{b}_lo - {b}_j"])  # the block's terms in [lo, hi)
    above = extreme("min", [str(width), f"{b}_hi - {b}_j"])
    block = [f"{b}_j = {b}_b + {_plus(width, low)}  # the next block's first j",
             f"{b}_r0 = {extreme('max', ['0', below])}",
             f"{b}_r1 = {extreme('max', [f'{b}_r0', above])}",
             f"for {b}_r in range({b}_r0):  # j below its range: a strong zero",
             f"    {b}_t[{b}_r] = {zero[0]}",
             *([f"    {b}_tc[{b}_r] = 0"] if counted else []),
             *inner.lines,  # the bands its terms read, up to the block's last j
             f"for {b}_r in range({b}_r0, {b}_r1):  # the next block's terms",
             f"    {jvar} = {b}_j + {b}_r",
             *(line[4:] for line in sub.lines),
             f"    {b}_t[{b}_r] = {value}",
             *([f"    {b}_tc[{b}_r] = 0 if {flag} else 1"] if counted else []),
             f"for {b}_r in range({b}_r1, {width}):  # j above its range",
             f"    {b}_t[{b}_r] = {zero[0]}",
             *([f"    {b}_tc[{b}_r] = 0"] if counted else []),
             f"{b}_m = {width} - {b}_o",
             f"{b}_k = 0",
             f"if {b}_b >= 0:",
             f"    {b}_k = {extreme('min', [str(width), f'{n} - {b}_b'])} - 1",
             f"    {put('', f'{b}_b')} = {b}_s[{b}_o]",
             *([f"    {put('c', f'{b}_b')} = {b}_sc[{b}_o]"] if counted else []),
             f"{b}_p = F(0)",
             f"{b}_q = F(0)",
             *([f"{b}_pc = 0", f"{b}_qc = 0"] if counted else []),
             f"for {b}_r in range({b}_k):  # a suffix of this block, a prefix of the next",
             *_steps(b, width, "", put, window=True),
             *(_steps(b, width, "c", put, window=True) if counted else []),
             f"for {b}_r in range({b}_k, {width}):  # the rest of the next block's suffix sums",
             *_steps(b, width, "", put, window=False),
             *(_steps(b, width, "c", put, window=False) if counted else []),
             f"{b}_o = {b}_m",
             f"{b}_b += {width}"]
    if stream is None:
        top.append(f"    while {b}_b < {n}:")
        top += [f"        {line}" for line in block]
    else:  # its blocks up to the reader's need
        stream.lines.append(f"while {b}_b < {extreme('min', [stream.need, n])}:")
        stream.lines += [f"    {line}" for line in block]
    return (buf, mask), (cbuf if counted else None), (
        None if counted else (f"{b}_il", f"{b}_ih"))


def _steps(b: str, width: int, kind: str, put: Callable[[str, str], str], window: bool
           ) -> list[str]:
    """One step of the block pass for the values (``kind`` "") or the counts ("c"): the
    next block's suffix chain, and (``window``) its prefix chain added to this block's suffix
    into the window's sum (``put``: where a point's sum goes)."""
    # (indices as unsigned: never negative here, and Numba's wraparound branch is not taken)
    out = []
    if window:
        out += [f"    {b}_p{kind} += {b}_t{kind}[{b}_r]",
                f"    {put(kind, f'{b}_b + 1 + {b}_r')} = "
                f"{b}_s{kind}[np.uintp({b}_o + 1 + {b}_r)] + {b}_p{kind}"]
    out += [f"    {b}_q{kind} += {b}_t{kind}[np.uintp({width - 1} - {b}_r)]",
            f"    {b}_s{kind}[np.uintp({b}_m + {width - 1} - {b}_r)] = {b}_q{kind}"]
    return out


def _plus(k: int, code: str) -> str:
    """``k + code`` (an integer and an affine's code), written plainly."""
    if code == "0":
        return str(k)
    return f"{k} + {_wrap(code)}".replace("+ -", "- ")


def _wrap(code: str) -> str:
    return code if code.lstrip("-").isidentifier() or code.lstrip("-").isdigit() else f"({code})"
