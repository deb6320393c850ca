"""Equality brackets in the fused backend's loop nests: each solves one summed index, placed
innermost (one guarded point), and the scheduler prices the loops that are left."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.ir.expr import Sum
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Statement

pytest.importorskip("numba")

from eqsat_ad.backend.fused.brackets import solve_order, sum_points  # noqa: E402
from eqsat_ad.backend.fused.schedule import dominated, loop_price  # noqa: E402
from eqsat_ad.plan.lower import lower_program  # noqa: E402
from eqsat_ad.plan.poly import Poly  # noqa: E402

CONV1D = """\
def conv1d(x: [N], w: [K]):
    y[i: N] = Sum[k: K](w[k] * x[i + k])
    return Sum[i: N](y[i] ** 2)
"""

# Programs with equality brackets between summed indices (coefficients 1 and -1, two
# equalities sharing an index, a solved index read by another bracket's bound).
PROGRAMS = [
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[j: N, k: K]((i == j + k) * x[j] * w[k])\n    return y\n",
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[j: N, k: K]((j == i + k) * exp(x[j]) * w[k])\n    return y\n",
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[j: N, k: K]((k - j == 1 - i) * x[j] / w[k])\n    return y\n",
    "def f(A: [N, M], w: [K]):\n"
    "    y[i: N, m: M] = Sum[a: N, b: M, k: K]((i == a + k) * (m == b + k) * A[a, b] * w[k])\n"
    "    return y\n",
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[j: N, k: K]((i == j + k) * (j <= i - 1) * x[j] * w[k])\n    return y\n",
]
# Nested sums: the loop writer solves the inner index (k = i - j) and runs j's whole range; the
# NumPy plan solves the shorter or the longer one. The loop nest runs only when its price grows
# no faster than the plan's in every size.
NESTED = [
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[j: N](x[j] * Sum[k: K]((i == j + k) * w[k]))\n    return y\n",
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[k: K](w[k] * Sum[j: N]((i == j + k) * x[j]))\n    return y\n",
    "def f(x: [N], w: [K]):\n"
    "    y[i: N] = Sum[k: K, j: N]((i == j + k) * x[j] * w[k])\n    return y\n",
]
SIZES = {"N": 11, "M": 6, "K": 3}


def _inputs(prog: ea.Program, seed: int, special: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in prog.params:
        shape = tuple(d if isinstance(d, int) else SIZES[d.name] for d in p.shape)
        v = rng.standard_normal(shape)
        if special and v.size > 4:  # strong zeros: brackets kill inf and nan where false
            flat = v.reshape(-1)
            flat[0], flat[3], flat[-1] = np.nan, np.inf, -np.inf
        out[p.name] = v
    return out


def _sum_of(prog: ea.Program, name: str) -> Statement:
    (s,) = [s for s in prog.statements if s.name == name]
    return s


def _linear_in(price: Poly, n: str) -> bool:
    """``price`` grows linearly in size ``n`` (others fixed): 1000× ``n``, ~1000× the price."""
    small = float(price.evaluate({"N": 1000, "M": 7, "K": 9}))
    big = float(price.evaluate({"N": 10**6, "M": 7, "K": 9}))
    assert n == "N"
    return big / small < 1100


def test_conv1d_naive_gradient_is_priced_and_run_in_n_k() -> None:
    # x_bar[i] = Σ_{i1, k} [i == i1 + k]·y_bar[i1]·w[k]: the equality solves i1 = i - k
    # (the longer range), so the loop nest runs K points per output, and is priced so.
    g = ea.grad(ea.parse(CONV1D), ("x", "w"), optimize=False, backend="numba")
    prog = g.compiled._prog
    x_bar = _sum_of(prog, "x_bar")
    assert g.compiled.schedule.placement["x_bar"] == "loop"
    assert _linear_in(loop_price(x_bar), "N")
    sm = x_bar.body
    assert isinstance(sm, Sum)
    assert [iv.name for iv in sm.indices] == ["i1", "k"]
    assert [iv.name for iv in solve_order(sm.indices, sm.body)] == ["k", "i1"]
    assert sum_points(sm.indices, sm.body) == Poly.symbol("K")
    kernel = g.source.split("def _k_x_bar(")[1].split("@nb.njit")[0]
    # i1 = i - k: a point guarded at the edges; the interior [K - 1, N) needs no guard
    interior, edges = kernel.split("# the edges")
    assert "for i in range(_lo, _hi):  # the interior" in interior
    assert "if 0 <= " not in interior and "y_bar[np.uintp(i15)]" in interior
    assert "if 0 <= " in edges and kernel.count("in range(K)") == 2
    assert kernel.count(" for ") == 4
    for special in (False, True):
        args = _inputs(g.program, 1, special)
        with np.errstate(all="ignore"):
            want = evaluate(g.program, **args)
        agree(g(**args), want, 1e-12)


@pytest.mark.parametrize("k", range(len(PROGRAMS)))
def test_equality_brackets_solve_one_index_each(k: int) -> None:
    prog = ea.parse(PROGRAMS[k])
    f = ea.compile(prog, backend="numba", optimize=False)
    (y,) = [s for s in prog.statements if s.name == "y"]
    # Every equality leaves at most one loop of the sum: a price free of N·N.
    assert _linear_in(loop_price(y), "N")
    for special in (False, True):
        args = _inputs(f.program, k, special)
        with np.errstate(all="ignore"):
            want = evaluate(f.program, **args)
        agree(f(**args), want, 1e-12)


def test_one_equality_solves_one_index_in_the_price() -> None:
    # Σ_{j: N, k: K} [i == j + k]: one equality, two indices it could solve. Pricing both as
    # one point (the old rule) under-priced the N-long loop the writer then ran.
    prog = ea.parse(PROGRAMS[0])
    (y,) = [s for s in prog.statements if s.name == "y"]
    sm = y.body
    assert [iv.name for iv in solve_order(sm.indices, sm.body)] == ["k", "j"]
    assert sum_points(sm.indices, sm.body) == Poly.symbol("K")
    # Two equalities sharing k: a and b solved, k's loop left.
    prog2 = ea.parse(PROGRAMS[3])
    (y2,) = [s for s in prog2.statements if s.name == "y"]
    assert [iv.name for iv in solve_order(y2.body.indices, y2.body.body)] == ["k", "a", "b"]
    assert sum_points(y2.body.indices, y2.body.body) == Poly.symbol("K")


def test_a_loop_nest_growing_faster_than_the_plan_stays_numpy() -> None:
    n, k = Poly.symbol("N"), Poly.symbol("K")
    assert dominated(n * k * 6 + n, n * k + n)
    assert dominated(Poly.const(3), n)
    assert not dominated(n * n * 6, n * k * 8)  # compare() alone ranks these equal
    assert not dominated(n * k, n * n)


@pytest.mark.parametrize("src", PROGRAMS + NESTED + [CONV1D])
def test_a_loop_nest_never_grows_faster_than_the_numpy_plan(src: str) -> None:
    # The program itself and the gradient of a scalar of it (Σ y², so the adjoint sums too).
    sq = "Sum[i: N, m: M](y[i, m] * y[i, m])" if "m: M]" in src else "Sum[i: N](y[i] * y[i])"
    scalar = ea.parse(src.replace("    return y\n", f"    return {sq}\n"))
    prog = ea.parse(src)
    for f in (ea.compile(prog, backend="numba", optimize=False),
              ea.grad(scalar, scalar.param_names[0], backend="numba", optimize=False)):
        inner = f.compiled._prog
        plan = lower_program(inner).plan
        for s in inner.statements:
            if f.compiled.schedule.placement[s.name] == "loop":
                assert dominated(loop_price(s), plan.statement_cost(s.name)), s.name
        # (inf and nan only where the loop nests run)
        looped = set(f.compiled.schedule.placement.values()) == {"loop"}
        for special in (False, True) if looped else (False,):
            args = _inputs(f.program, 2, special)
            with np.errstate(all="ignore"):
                want = evaluate(f.program, **args)
            agree(f(**args), want, 1e-12)


def test_numpy_nested_sum_keeps_the_strong_zero() -> None:
    # y[i] = Σ_j x[j]·Σ_k [i == j + k]·w[k]: where no k fits, the inner sum is a strong zero
    # and x[j] = nan does not reach y[i] (the strict code masks the product by the inner sum's
    # count of live terms, plan/lower/reduce.py split_guards).
    prog = ea.parse(NESTED[0])
    args = _inputs(prog, 2, True)
    with np.errstate(all="ignore"):
        agree(ea.compile(prog, optimize=False)(**args), evaluate(prog, **args), 1e-12)


# A sum of terms, each bounded in the summed index by its own equality: blur_window's adjoint
# (the extracted program, written here) and a union whose ends are not a constant apart.
UNION = """\
def f(b: [H, W]):
    y[i: H, j: W] = Sum[l: W](2 * ((j + 1 == l) * b[i, l]) + (3 * ((j == l) * b[i, l])
                              - 5 * ((j == l + 1) * b[i, l])))
    return y
"""


@pytest.mark.parametrize("special", [False, True])
def test_a_union_of_term_ranges_is_a_window(special: bool) -> None:
    # l runs over {j - 1, j, j + 1} (three guarded taps), not over W; priced so (3 points).
    f = ea.compile(ea.parse(UNION), backend="numba", optimize=False)
    prog = f.compiled._prog
    sm = _sum_of(prog, "y").body
    assert isinstance(sm, Sum)
    assert sum_points(sm.indices, sm.body) == Poly.const(3)
    assert f.compiled.schedule.placement == {"y": "loop"}
    kernel = f.source.split("def _k_y(")[1]
    assert "for l" not in kernel and "= j - 1 + 2" in kernel  # three taps from j - 1
    for seed in range(2):
        args = {"b": np.random.default_rng(seed).standard_normal((7, 6))}
        if special:
            args["b"][2, 0], args["b"][3, 5], args["b"][4, 3] = np.nan, np.inf, -np.inf
        with np.errstate(all="ignore"):
            want = evaluate(f.program, **args)
        got = f(**args)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_a_union_that_is_not_a_window_is_the_whole_range() -> None:
    # [j == l]·b + [l == 0]·b: the ends (0 and j) are not a constant apart.
    src = ("def f(b: [W]):\n    y[j: W] = Sum[l: W]((j == l) * b[l] + (l == 0) * b[l])\n"
           "    return y\n")
    f = ea.compile(ea.parse(src), backend="numba", optimize=False)
    sm = _sum_of(f.compiled._prog, "y").body
    assert isinstance(sm, Sum)
    assert sum_points(sm.indices, sm.body) == Poly.symbol("W")
    args = {"b": np.random.default_rng(0).standard_normal(9)}
    np.testing.assert_allclose(f(**args), evaluate(f.program, **args), rtol=1e-12, atol=1e-12)


def test_blur_window_adjoint_loops_over_its_window() -> None:
    src = ("def blur_window(x: [H, W]):\n"
           "    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0\n"
           "    return Sum[i: H, j: W](b[i, j] ** 2)\n")
    g = ea.grad(ea.parse(src), "x", backend="numba")
    assert g.compiled.schedule.placement["x_bar"] == "loop"
    for dtype in (np.float64, np.float32):
        args = {"x": np.random.default_rng(1).standard_normal((9, 8)).astype(dtype)}
        got = g(**args)
        assert got.dtype == dtype
        want = evaluate(g.program, x=args["x"].astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-9 if dtype == np.float64 else 1e-4,
                                   atol=1e-9 if dtype == np.float64 else 1e-4)
