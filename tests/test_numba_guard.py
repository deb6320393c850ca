"""The fused backend's loops check the arguments against the guard's proven box
(backend/fused/checks.py): a finite call inside the box keeps the fast result
without the guard's scans; an entry outside it (nan, inf, or only large) hands the decision back
to the guard, so values and nan patterns stay the interpreter's."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from numba_inputs import ROOMY, count_calls, count_guard_calls  # noqa: E402

from eqsat_ad.backend.fused import checks as fused_checks  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")


BLUR = """
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arguments_inside_the_proven_box_skip_the_guard_scans(monkeypatch, dtype) -> None:
    prog = ea.parse(BLUR)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    assert g.compiled.checked == ["w"]  # read by the loop nest (x is not read at all)
    calls = count_guard_calls(monkeypatch)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((9, 7)).astype(dtype), rng.standard_normal((9, 7)).astype(dtype)
    vjp = ea.vjp(prog, wrt="x")
    tol = 1e-12 if dtype == np.float64 else 1e-5
    first = g(x, w)
    assert calls["n"] == 1  # no proof yet: the guard scans and proves a box
    for scale in (0.5, -1.0, 1.5):
        got = g(x, scale * w)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, evaluate(vjp, x=x, w=scale * w, ybar=1.0),
                                   rtol=tol, atol=tol)
    assert calls["n"] == 1  # inside the proven (widened) box: the loops' check sufficed
    np.testing.assert_array_equal(g(x, w), first)
    assert g.compiled.fallback.calls == 0


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e30])
@pytest.mark.parametrize("where", [(0, 0), (4, 3), (8, 6), (8, 0)])
def test_an_entry_outside_the_box_hands_back_to_the_guard(monkeypatch, value, where) -> None:
    """Edge rows, interior and corners alike: an entry the box does not hold (nan compares
    false) makes the guard decide, and the values (nan patterns too) are the interpreter's."""
    prog = ea.parse(BLUR)
    g = ea.grad(prog, "x", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    g(x, w)  # proves a box
    calls = count_guard_calls(monkeypatch)
    w2 = w.copy()
    w2[where] = value
    got = g(x, w2)
    assert calls["n"] == 1
    want = evaluate(ea.vjp(prog, wrt="x"), x=x, w=w2, ybar=1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))


def test_two_dimensional_reads_are_checked_in_total_variation(monkeypatch) -> None:
    prog = ea.parse("""
def tv(u: [H, W]):
    dx[i: H, j: W] = u[i + 1, j] - u[i, j]
    dy[i: H, j: W] = u[i, j + 1] - u[i, j]
    return Sum[i: H, j: W]((i < H - 1 and j < W - 1) * sqrt(dx[i, j] ** 2 + dy[i, j] ** 2 + 0.0001))
""")
    g = ea.grad(prog, "u", backend="numba", limits=ROOMY)
    assert g.compiled.checked == ["u"]
    u = np.random.default_rng(3).standard_normal((8, 6))
    assert g.compiled._exact([u], {"H": 8, "W": 6})  # the rewrites change no code here: so
    # it runs unguarded; the check below is what a program with rewritten code relies on
    monkeypatch.setattr(type(g.compiled), "_exact", lambda self, arrays, sizes: False)
    g(u)
    calls = count_guard_calls(monkeypatch)
    vjp = ea.vjp(prog, wrt="u")
    np.testing.assert_allclose(g(0.9 * u), evaluate(vjp, u=0.9 * u, ybar=1.0), rtol=1e-12)
    assert calls["n"] == 0
    u[7, 5] = np.nan  # the last entry: read by the edge rows only
    got = g(u)
    assert calls["n"] == 1
    want = evaluate(vjp, u=u, ybar=1.0)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    monkeypatch.undo()  # unguarded, the loops give the same values on the nan
    np.testing.assert_allclose(g(u), want, rtol=1e-12, equal_nan=True)


def test_bounds_in_float32_are_rounded_inward() -> None:
    lo, hi = 0.1, 0.7
    got = fused_checks.bounds({"w": (lo, hi)}, ["w"], np.dtype(np.float32))
    assert got.dtype == np.float32
    assert float(got[0]) >= lo and float(got[1]) <= hi
    assert np.nextafter(got[0], np.float32(-1)) < lo and np.nextafter(got[1], np.float32(1)) > hi
    none = fused_checks.bounds(None, ["w"], np.dtype(np.float64))
    assert not (none[0] <= 0.0 <= none[1])  # no box: every entry is outside


def _row_check(read: str) -> object:
    """A Numba function counting, row by row as the kernels do, the entries of ``a`` inside
    bounds ``_box`` (the lines :mod:`.checks` writes into a kernel)."""
    import numba

    lines = ["def count(a, _box):", *fused_checks.bound_locals(0),
             "    for i in range(a.shape[0]):",
             *fused_checks.row_counted(read, "a.shape[1]", 0, " " * 8), "    return _in0"]
    scope: dict[str, object] = {"np": np}
    exec("\n".join(lines), scope)
    return numba.njit(scope["count"])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("box", [(-2.0, 2.0), (0.5, 2.0), (-2.0, -0.5), (-2.0, 1.0),
                                 (-np.inf, np.inf), (0.0, 0.0)])
def test_a_rows_check_counts_the_rows_whose_every_entry_is_inside(dtype, box) -> None:
    # symmetric bounds take one compare (abs), others two: both must say exactly which rows
    # lie inside, a nan and the infinities and each bound itself included
    count = _row_check("a[i, _c]")
    rng = np.random.default_rng(4)
    a = rng.uniform(-2.5, 2.5, (40, 7)).astype(dtype)
    a[::5] = rng.uniform(0.5, 1.0, (8, 7))  # rows inside every box but the last
    a[3, 2], a[8, 0], a[13, 6], a[18, 1] = np.nan, np.inf, -np.inf, -0.0
    a[23, :], a[28, :] = dtype(2.0), dtype(-2.0)  # on the bounds
    a[33, :] = dtype(0.5)
    bounds = np.array(box, dtype=dtype)
    inside = (a >= bounds[0]) & (a <= bounds[1])  # (a nan compares false)
    want = a.shape[1] * int(inside.all(axis=1).sum())
    assert count(a, bounds) == want
    assert 0 < want < a.size or box in {(0.0, 0.0), (-2.0, -0.5)}


LAYER = """def f(X: [N, D], W: [D, H], y: [N, H]):
    h[i: N, j: H] = tanh(Sum[d: D](X[i, d] * W[d, j]))
    r[i: N, j: H] = h[i, j] - y[i, j]
    return 0.5 * Sum[i: N, j: H](r[i, j] * r[i, j])
"""


def _count_finiteness_checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the NumPy parts' and BLAS products' scans for inf and nan."""
    from eqsat_ad.backend import runtime
    from eqsat_ad.backend.fused import epilogue

    return count_calls(monkeypatch, "finite", runtime, epilogue)


def test_a_run_the_guard_proved_finite_skips_its_parts_checks(monkeypatch) -> None:
    # X (160 x 120) is larger than the box checks outside the loops take and no loop reads
    # it: the guard scans the arguments before the run, and its proof of both programs lets
    # the NumPy parts (the products with X) run without their own scans, as the NumPy
    # backend's guarded code does
    g = ea.grad(ea.parse(LAYER), "W", backend="numba", limits=ROOMY)
    assert g.compiled.checked == ["y"] and not g.compiled.numpy_only
    rng = np.random.default_rng(0)
    args = {"X": rng.standard_normal((160, 120)), "W": rng.standard_normal((120, 50)) * 0.1,
            "y": rng.standard_normal((160, 50))}
    first = g(**args)
    guard = count_guard_calls(monkeypatch)
    checks = _count_finiteness_checks(monkeypatch)
    again = g(**args)
    assert guard["n"] == 1 and checks["n"] == 0
    np.testing.assert_array_equal(again, first)
    want = np.asarray(ea.grad(ea.parse(LAYER), "W", optimize=False)(**args))
    np.testing.assert_allclose(again, want, rtol=1e-12, atol=1e-14)
    # an inf in X: no proof; the parts check, and the unoptimized program decides
    bad = dict(args, X=args["X"].copy())
    bad["X"][3, 7] = np.inf
    with np.errstate(all="ignore"):
        got = g(**bad)
        ref = np.asarray(ea.grad(ea.parse(LAYER), "W", optimize=False)(**bad))
    assert checks["n"] > 0
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14, equal_nan=True)
