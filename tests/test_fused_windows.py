"""Sliding windows in the fused backend (eqsat_ad/backend/fused/windows.py), and reads bound
without a copy.

conv1d's adjoint c_bar is computed a chunk at a time just ahead of x_bar's loop nest (its
points that the chunk reads, in a small buffer), never stored in full: the values are the
stored program's bit for bit (each point of c_bar computed once, by the same code) and the
interpreter's, at sizes that are not multiples of the tile or the chunk, N < K, N = 1, with inf
and nan. Also: what the schedule takes as a window and what it does not, and blur's b_bar = w
bound as w itself (no copy).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

numba = pytest.importorskip("numba")

import eqsat_ad.backend.fused.schedule as fused_schedule  # noqa: E402
from eqsat_ad.backend.fused.windows import CHUNK, windows  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
STENCILS = importlib.import_module("fused_programs").PROGRAMS  # shared with the experiment

LOOKAHEAD = """
def ahead(x: [N], w: [K]):
    p[i: N] = Sum[k: K](w[k] * x[i + k])
    q[i: N] = Sum[k: K](w[k] * p[i + k])
    return q
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "numba-cache"))


def _stored[T](monkeypatch: pytest.MonkeyPatch, build: Callable[[], T]) -> T:
    """``build()`` with no sliding windows (every producer stored in full)."""
    with monkeypatch.context() as m:
        m.setattr(fused_schedule, "windows", lambda *a: {})
        m.setattr(importlib.import_module("eqsat_ad.backend.fused"), "_CACHE", {})
        return build()


def _args(prog: ea.Program, n: int, k: int, dtype: type, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = {"N": n, "K": k}
    return {p.name: rng.standard_normal([sizes[d.name] for d in p.shape]).astype(dtype)
            for p in prog.params}


SIZES = [(1, 1), (1, 16), (2, 16), (15, 16), (16, 16), (17, 16), (300, 5),
         (CHUNK - 1, 3), (CHUNK + 1, 16), (2 * CHUNK + 37, 16), (3000, CHUNK + 50)]


def test_conv1d_adjoint_runs_its_producer_in_a_sliding_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prog = ea.parse(STENCILS["conv1d"].source)
    g = ea.grad(prog, "x", backend="numba")
    sched = g.compiled.schedule
    assert sched.placement["c_bar"] == "window" and sched.placement["x_bar"] == "loop"
    win = sched.windows["c_bar"]
    assert win.consumer == "x_bar" and str(win.low) == "-K + 1" and str(win.high) == "0"
    assert "_bad |= _k_x_bar_window(x_bar, w, x, y, N, K, _box)" in g.source
    assert "_tmp" not in g.source.split("def run")[1].split("\n", 1)[1]  # c_bar never stored
    stored = _stored(monkeypatch, lambda: ea.grad(prog, "x", backend="numba"))
    assert "c_bar = _tmp.get('c_bar')" in stored.source
    for dtype in (np.float64, np.float32):
        for n, k in SIZES:
            args = _args(g.program, n, k, dtype, seed=n + 7 * k)
            got = g(**args)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, stored(**args))  # bit for bit
            want = evaluate(g.program, **{a: v.astype(np.float64) for a, v in args.items()})
            tol = 1e-12 if dtype == np.float64 else 1e-3
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * (1 + np.abs(want).max()))


def test_a_window_keeps_inf_and_nan_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = ea.parse(STENCILS["conv1d"].source)
    g = ea.grad(prog, "x", backend="numba")
    stored = _stored(monkeypatch, lambda: ea.grad(prog, "x", backend="numba"))
    args = _args(g.program, CHUNK + 300, 16, np.float64, seed=3)
    args["x"][[0, 5, CHUNK - 3, CHUNK + 299]] = [np.inf, np.nan, -np.inf, np.inf]
    args["y"][CHUNK] = np.nan
    with np.errstate(all="ignore"):
        got, want = g(**args), evaluate(g.program, **args)
        np.testing.assert_array_equal(got, stored(**args))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_window_reading_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    # q reads p at [i, i + K - 1]: the buffer runs ahead of q's chunk by the window's width
    prog = ea.parse(LOOKAHEAD)
    f = ea.compile(prog, backend="numba")
    win = f.compiled.schedule.windows["p"]
    assert win.consumer == "q" and str(win.low) == "0" and str(win.high) == "K - 1"
    stored = _stored(monkeypatch, lambda: ea.compile(prog, backend="numba"))
    assert "window" not in stored.compiled.schedule.placement.values()
    for n, k in [(1, 1), (3, 7), (CHUNK, 5), (2 * CHUNK + 1, 33)]:
        args = _args(prog, n, k, np.float64, seed=n)
        got = f(**args)
        np.testing.assert_array_equal(got, stored(**args))
        np.testing.assert_allclose(got, evaluate(prog, **args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("src", "why"), [
    # p is returned: it is stored in full anyway
    ("def f(x: [N], w: [K]):\n    p[i: N] = Sum[k: K](w[k] * x[i + k])\n"
     "    q[i: N] = Sum[k: K](w[k] * p[i + k])\n    return p, q\n", "returned"),
    # read by two loop nests
    ("def f(x: [N], w: [K]):\n    p[i: N] = Sum[k: K](w[k] * x[i + k])\n"
     "    q[i: N] = Sum[k: K](w[k] * p[i + k])\n"
     "    r[i: N] = Sum[k: K](w[k] * p[i - k])\n    return q, r\n", "two readers"),
    # read over all its points at each point (no window of constant width)
    ("def f(x: [N], w: [K]):\n    p[i: N] = Sum[k: K](w[k] * x[i + k])\n"
     "    q[i: N] = Sum[j: N](p[j] * x[i])\n    return q\n", "whole range"),
])
def test_what_is_not_a_window(src: str, why: str) -> None:
    prog = ea.parse(src)
    placement = {s.name: "loop" for s in prog.statements}
    assert windows(prog, placement) == {}, why


def test_a_parameter_copied_entry_for_entry_is_bound_without_a_copy() -> None:
    # blur's b_bar[i, j] = w[i, j] (NumPy would bind it as a view; the NumPy backend's code
    # for the statement alone returns a copy): the fused program reads w itself
    src, wrt, sizes = STENCILS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    assert "b_bar = np.asarray(w, dtype=F)" in g.source
    assert not g.compiled._numpy_parts  # no NumPy part runs
    rng = np.random.default_rng(1)
    args = {p: rng.standard_normal((sizes["H"], sizes["W"])) for p in ("x", "w")}
    got = g(**args)
    assert not np.may_share_memory(got, args["w"])
    np.testing.assert_allclose(got, evaluate(g.program, **args), rtol=1e-12, atol=1e-12)


def test_the_window_checks_its_arguments_against_the_guards_box(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # x and y (over x_bar's points) are counted inside the guard's proven box a chunk at a
    # time, in cache; w (K entries) is checked by call_box: a call inside the box skips the
    # guard's scans, and an entry outside it (nan, inf, a large value; in any chunk) hands the
    # decision back to the guard, so values and nan patterns stay the interpreter's.
    from eqsat_ad.backend.fused import program as fused_program

    prog = ea.parse(STENCILS["conv1d"].source)
    g = ea.grad(prog, "x", backend="numba")
    assert g.compiled.checked == ["x", "y"]
    calls = {"n": 0}
    real = fused_program.trusted

    def spy(*args: object) -> bool:
        calls["n"] += 1
        return real(*args)

    monkeypatch.setattr(fused_program, "trusted", spy)
    args = _args(g.program, 2 * CHUNK + 37, 16, np.float64, seed=11)
    first = g(**args)
    assert calls["n"] == 1  # no proof yet: the guard scans and proves a box
    for scale in (0.5, -1.0):
        scaled = {k: scale * v for k, v in args.items()}
        np.testing.assert_allclose(g(**scaled), evaluate(g.program, **scaled),
                                   rtol=1e-12, atol=1e-12)
    assert calls["n"] == 1  # inside the proven box: the driver's counts sufficed
    np.testing.assert_array_equal(g(**args), first)
    for name, at, value in [("x", 0, np.nan), ("y", CHUNK + 5, np.inf), ("x", 2 * CHUNK + 36,
                                                                          1e30)]:
        bad = {k: v.copy() for k, v in args.items()}
        bad[name][at] = value
        before = calls["n"]
        with np.errstate(all="ignore"):
            got, want = g(**bad), evaluate(g.program, **bad)
        assert calls["n"] == before + 1  # outside the box: the guard decides
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
