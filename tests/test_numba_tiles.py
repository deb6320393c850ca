"""Tiled interchange (backend/fused/tiles.py): a sum's terms for a tile of output points at a
time, against the loop nest without tiles (bit for bit: each point adds its terms in the same
order) and the reference interpreter; strong-zero flags; one view per array per jammed pass."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from numba_inputs import agree, random_arguments

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

numba = pytest.importorskip("numba")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
STENCILS = importlib.import_module("fused_programs").PROGRAMS  # shared with the experiment

pytestmark = pytest.mark.usefixtures("numba_cache")


@pytest.mark.parametrize("sizes", [{"N": 600, "K": 5}, {"N": 3, "K": 4}, {"N": 257, "K": 1},
                                   {"N": 20, "K": 8}, {"N": 700, "K": 19}])
def test_tiled_interchange_keeps_each_points_summation_order(
        sizes: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # conv1d's sums over K run a tile of outputs at a time (an accumulator per point, the taps
    # outer, views of the contiguous reads): vectorizable, and each point still adds its terms
    # in the same order, so the values equal the untiled loop nest's bit for bit, over several
    # tiles and a partial one (an interior narrower than TILE_MIN runs with the edges).
    from eqsat_ad.backend.fused import loops
    from eqsat_ad.backend.fused.tiles import TILE

    prog = ea.parse(STENCILS["conv1d"].source)
    g = ea.grad(prog, "x", backend="numba")
    assert g.source.count(f"for _v0 in range(_lo, _hi, {TILE}):") == 2
    assert "= x[_v0 + j_x0_1:]" in g.source  # a view taken before the tile's loop
    # (a tile is 1 KiB of accumulators: 128 points of float64, 256 of float32)
    args = {dt: random_arguments(g.program, sizes, 3, dt) for dt in (np.float64, np.float32)}
    tiled = {dt: g(**a) for dt, a in args.items()}
    monkeypatch.setattr(loops, "interchange", lambda *a: None)
    monkeypatch.setattr(importlib.import_module("eqsat_ad.backend.fused"), "_CACHE", {})
    plain = ea.grad(prog, "x", backend="numba")
    assert "for _v0" not in plain.source
    for dt, a in args.items():
        assert tiled[dt].dtype == dt
        np.testing.assert_array_equal(tiled[dt], plain(**a))
    agree(tiled[np.float64], evaluate(g.program, **args[np.float64]), 1e-12)


@pytest.mark.parametrize("read, step", [("x[i + k]", 1), ("x[i - k]", -1),
                                        ("x[i + 2 * k]", 2), ("x[i - 3 * k + 5]", -3)])
def test_a_jammed_pass_reads_one_view_per_array(
        read: str, step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The JAM terms of a pass over a tile read one view of x, taken at the pass's least
    # offset (so every read is at _t or after, whichever way the taps walk), not one view per
    # term: the same values as the loop nest without tiles, bit for bit, over several tiles,
    # passes and the terms after them.
    from eqsat_ad.backend.fused import loops
    from eqsat_ad.backend.fused.tiles import JAM

    src = f"def f(x: [N], w: [K]):\n    c[i: N] = Sum[k: K](w[k] * {read})\n    return c\n"
    prog = ea.parse(src)
    f = ea.compile(prog, backend="numba")
    views = [line.split("=")[0].strip() for line in f.source.splitlines()
             if re.match(r"\s*x_v\w* = x\[_v0", line)]
    assert len(views) == 2, f.source  # the jammed pass's, and the one-at-a-time loop's
    reads = re.findall(rf"{views[0]}\[_t(?: \+ (\d+))?\]", f.source)
    least = min(0, step * (JAM - 1))  # the view starts at the pass's least read
    assert sorted(int(r or 0) for r in reads) == sorted(step * u - least for u in range(JAM))
    monkeypatch.setattr(loops, "interchange", lambda *a: None)
    monkeypatch.setattr(importlib.import_module("eqsat_ad.backend.fused"), "_CACHE", {})
    plain = ea.compile(prog, backend="numba")
    assert "for _v0" not in plain.source
    for k in (3, JAM, 2 * JAM + 3):
        for dt in (np.float64, np.float32):
            args = random_arguments(prog, {"N": 700, "K": k}, k, dt)
            args["x"][200:260:7] = np.inf  # (and nan where an inf meets -inf or 0)
            args["x"][300:330:11] = -np.inf
            args["w"][k // 2] = 0
            with np.errstate(all="ignore"):
                got = f(**args)
                np.testing.assert_array_equal(got, plain(**args))
                if dt == np.float64:
                    agree(got, evaluate(prog, **args), 1e-12)


def test_an_interchanged_sum_keeps_its_strong_zero_flag() -> None:
    # Σ_k [k != 0]·x[i + k] has strong-zero terms: with K = 1 every term is one, the sum is a
    # strong zero and its product with inf is 0 (not nan), per point of the tile.
    src = ("def f(x: [N], y: [N]):\n"
           "    c[i: N] = Sum[k: K]((k != 0) * x[i + k]) * y[i]\n"
           "    return c\n")
    prog = ea.parse(src.replace("x: [N]", "x: [N], w: [K]"))
    f = ea.compile(prog, backend="numba")
    assert "_f0[_t] = _f0[_t] & (" in f.source and "for _v0 in range(" in f.source
    from eqsat_ad.backend.fused.tiles import JAM

    for k in (1, 2, JAM + 2, 2 * JAM + 3):  # passes of JAM terms, then the rest one at a time
        args = random_arguments(prog, {"N": 300, "K": k}, k, np.float64)
        args["y"][::7] = np.inf
        args["x"][::5] = -np.inf
        with np.errstate(all="ignore"):
            want = evaluate(f.program, **args)
            got = f(**args)
        agree(got, want, 1e-12)


def test_a_window_of_constant_extents_is_summed_in_the_point_loop() -> None:
    """Sum[a: 3, c: 3] (nine taps at most, :data:`~eqsat_ad.backend.fused.loops.UNROLL`) is
    not tiled: a tile pass per tap ran the window-sum blur's forward 2.2x slower (1.89 against
    0.91 ms at 1024², op_times.py) than its taps summed at each point, which LLVM unrolls."""
    src = ("def blur_window(x: [H, W]):\n"
           "    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0\n"
           "    return Sum[i: H, j: W](b[i, j] ** 2)\n")
    g = ea.grad(ea.parse(src), wrt="x", optimize=False, backend="numba")
    assert g.compiled.schedule.placement["b"] == "fused"
    kernel = g.source.split("def _k_b_bar(")[1].split("\n@nb.njit")[0]
    assert "_TILE" not in kernel and "# the interior:" in kernel, kernel
    for n, poison in ((1, None), (3, None), (18, np.inf), (40, None)):
        x = np.random.default_rng(n).standard_normal((n, n + 2))
        if poison is not None:
            x[2, 3] = poison
        with np.errstate(all="ignore"):
            agree(g(x), evaluate(g.program, x=x), 1e-13)
