"""A fused program called again with arguments of the same shapes and float types skips the
binding (backend/fused/program.py, ``_repeat``): the values, float types and the guard's
decisions (nan, inf, entries outside the proven box) stay those of a first call and of the
interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from numba_inputs import ROOMY, count_guard_calls  # noqa: E402

from eqsat_ad.backend.fused import compile_numba  # noqa: E402
from eqsat_ad.backend.guard import with_fallback  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")


BLUR = """
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""

CONV = """
def conv(x: [N], w: [K], y: [N]):
    c[i: N] = Sum[k: K](w[k] * x[i + k])
    return Sum[i: N]((c[i] - y[i]) ** 2)
"""


def _binds(g, monkeypatch) -> dict[str, int]:
    """Counts the calls that bind their arguments (the path of a first call)."""
    calls = {"n": 0}
    numpy_program = g.compiled.numpy
    real = numpy_program.bind

    def spy(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(numpy_program, "bind", spy)
    return calls


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """Equal bit for bit where numbers (signs of zeros too), nan where nan."""
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


def _interpreter(prog, wrt: str, **args: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # (inf - inf in the reference's sums: nan, as meant)
        return np.asarray(evaluate(ea.vjp(prog, wrt=wrt), **args, ybar=1.0))


def _remembered_blur(seed: int):
    """BLUR's x-gradient (Numba) called three times on one draw of (9, 7) arguments, so that the
    binding is remembered: the program, the gradient, x, w and the last result."""
    prog = ea.parse(BLUR)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    for _ in range(3):
        last = g(x, w)
    return prog, g, x, w, last


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_repeated_calls_skip_the_binding_with_the_same_values(monkeypatch, dtype) -> None:
    prog = ea.parse(BLUR)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((9, 7)).astype(dtype), rng.standard_normal((9, 7)).astype(dtype)
    first = g(x, w)  # binds (and loads the module)
    second = g(x, w)  # binds, and keeps what the binding found
    calls = _binds(g, monkeypatch)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for scale in (1.0, -0.5, 2.0):
        by_position = g(x, scale * w)
        by_name = g(x=x, w=scale * w)
        assert by_position.dtype == dtype
        _same(by_position, by_name)
        np.testing.assert_allclose(by_position, _interpreter(prog, "x", x=x, w=scale * w),
                                   rtol=tol, atol=tol)
        if scale == 1.0:
            _same(by_position, first)
            _same(by_position, second)
    assert calls["n"] == 0  # every call above took the remembered binding
    assert g.compiled.fallback.calls == 0


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e30])
@pytest.mark.parametrize("where", [(0, 0), (4, 3), (8, 6)])
def test_a_repeated_call_outside_the_box_is_still_guarded(monkeypatch, value, where) -> None:
    """After calls that proved a box, a call of the same shapes with an entry the box does not
    hold (corner, interior, the last row) still hands the decision to the guard: the
    interpreter's values and nan pattern."""
    prog, g, x, w, before = _remembered_blur(4)
    calls = _binds(g, monkeypatch)
    guard = count_guard_calls(monkeypatch)
    w2 = w.copy()
    w2[where] = value
    got = g(x, w2)
    assert calls["n"] == 0  # (the remembered binding)
    assert guard["n"] == 1  # the loops found an entry outside the box: the guard decided
    want = _interpreter(prog, "x", x=x, w=w2)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    _same(g(x, w), before)  # and back inside the box: the loops' check suffices
    assert guard["n"] == 1 and calls["n"] == 0


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_sliding_window_repeated_with_nan_or_inf_follows_the_interpreter(monkeypatch,
                                                                          value) -> None:
    """conv1d's window driver checks x and y a chunk at a time: the same on the remembered
    binding, float32 kept."""
    prog = ea.parse(CONV)
    # (a generous time limit: the optimizer stops at its node limit, in 0.6-0.9 s, on any load)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    assert g.compiled.schedule.placement["c_bar"] == "window"
    rng = np.random.default_rng(5)
    for dtype in (np.float64, np.float32):
        x, w, y = (rng.standard_normal(n).astype(dtype) for n in (1500, 6, 1500))
        for _ in range(3):
            g(x, w, y)
        for name in ("x", "y"):
            args = {"x": x.copy(), "w": w, "y": y.copy()}
            args[name][750] = value
            guard = count_guard_calls(monkeypatch)
            got = g(**args)
            assert guard["n"] == 1  # the driver's check found it: the guard decided
            assert got.dtype == dtype
            want = _interpreter(prog, "x", **args).astype(dtype)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            finite = np.isfinite(want)
            tol = 1e-12 if dtype == np.float64 else 1e-4
            np.testing.assert_allclose(got[finite], want[finite], rtol=tol,
                                       atol=tol * float(np.abs(want[finite]).max()))


def test_float_types_shapes_and_conversions_are_told_apart(monkeypatch) -> None:
    """The remembered binding is per shapes and float types; arguments the binding converts
    (integers, mixed float types) always take the binding."""
    prog = ea.parse(BLUR)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    for _ in range(2):
        want64, want32 = g(x, w), g(x32, w32)
        wide = g(rng.standard_normal((5, 11)), rng.standard_normal((5, 11)))
    calls = _binds(g, monkeypatch)
    _same(g(x, w), want64)
    _same(g(x32, w32), want32)
    assert want32.dtype == np.float32
    assert calls["n"] == 0
    assert wide.shape == (5, 11)
    # integers are converted to float64, mixed float types to float64: bound every call
    wi = np.arange(63).reshape(9, 7) % 5 - 2
    for _ in range(3):
        _same(g(x, wi), g(x, wi.astype(np.float64)))
        _same(g(x32, w), g(x32.astype(np.float64), w))
    assert calls["n"] == 6  # (each of the calls above bound its arguments)


def test_out_and_a_new_binding_after_remembered_calls(monkeypatch) -> None:
    """A call with out= after remembered calls takes the remembered binding too (the result
    lands in out, written in place; out is never handed to a later call as its result), and
    a call with other shapes binds its own sizes."""
    prog, g, x, w, want = _remembered_blur(7)
    calls = _binds(g, monkeypatch)
    out = np.full((9, 7), np.nan)
    assert g(x, w, out=out) is out
    _same(out, want)
    assert calls["n"] == 0
    kept = out.copy()
    for _ in range(3):  # (out dropped by none of these: never recycled into a result)
        again = g(x, -w)
        assert again is not out
    _same(out, kept)
    _same(again, -want)
    monkeypatch.undo()
    rng = np.random.default_rng(17)  # (new shapes, new values)
    x2, w2 = rng.standard_normal((6, 12)), rng.standard_normal((6, 12))
    for _ in range(3):
        got = g(x2, w2)
        assert got.shape == (6, 12)
        np.testing.assert_allclose(got, _interpreter(prog, "x", x=x2, w=w2), rtol=1e-12,
                                   atol=1e-12)
    _same(g(x, w), want)



@pytest.mark.parametrize("bad", ["shape", "dtype", "read-only", "shares", "scalar"])
def test_a_bad_out_on_the_remembered_binding_is_refused(bad) -> None:
    """out= on a remembered signature is checked as on a first call: a ShapeError that names
    the output, and the caller's array is not written."""
    _, g, x, w, _ = _remembered_blur(8)
    out = {"shape": np.zeros((9, 6)), "dtype": np.zeros((9, 7), np.float32),
           "read-only": np.zeros((9, 7)), "shares": x, "scalar": 1.5}[bad]
    if bad == "read-only":
        out.flags.writeable = False
    before = np.array(out, copy=True)
    with pytest.raises(ea.ShapeError, match="out= of .*output 0"):
        g(x, w, out=out)
    np.testing.assert_array_equal(out, before)


def test_out_on_the_remembered_binding_holds_the_guards_values() -> None:
    """A remembered call with out= whose inputs leave the proven box (nan, inf): the guard
    decides, and what it decides (the interpreter's values and nan pattern) lands in out."""
    prog, g, x, w, _ = _remembered_blur(9)
    for value in (np.nan, np.inf):
        w2 = w.copy()
        w2[4, 3] = value
        out = np.zeros((9, 7))
        assert g(x, w2, out=out) is out
        want = _interpreter(prog, "x", x=x, w=w2)
        np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(out[fin], want[fin], rtol=1e-12, atol=1e-12)


def test_a_scalar_argument_and_a_numpy_statement_on_the_remembered_binding(monkeypatch) -> None:
    """A 0-d argument (reshaped by the module) and a statement NumPy runs between the loop
    nests (``b_bar = w * s``): the remembered binding gives the interpreter's values, inf and
    nan from the NumPy statement included."""
    src = """
def blur(x: [H, W], w: [H, W], s: []):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) * s
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""
    prog = ea.parse(src)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    assert "numpy" in g.compiled.schedule.placement.values()
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    for _ in range(2):
        g(x, w, np.array(0.25))
    calls = _binds(g, monkeypatch)
    for s in (0.5, -3.0, np.inf, np.nan):
        got = g(x, w, np.array(s))
        want = _interpreter(prog, "x", x=x, w=w, s=np.array(s))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got[~finite], want[~finite])
    assert calls["n"] == 0


def test_each_guarded_copy_remembers_its_own_bindings(monkeypatch) -> None:
    """Gradients of one program share its compiled kernels, each guarded by its own
    unoptimized program; what one copy's calls remember (bounded per copy) never crowds out
    another's: the 70th copy still takes the remembered binding."""
    g = ea.grad(ea.parse(BLUR), "x", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    want = g(x, w)
    base = compile_numba(g.program)
    for _ in range(70):
        guarded = with_fallback(base, g.naive)
        guarded(x, w)
        guarded(x, w)
    calls = {"n": 0}
    real = guarded.numpy.bind

    def spy(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(guarded.numpy, "bind", spy)
    _same(guarded(x, w), want)
    assert calls["n"] == 0
    assert guarded._modules is base._modules  # the kernels are compiled once
