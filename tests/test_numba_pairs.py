"""Pair loops (backend/fused/pairs.py): sums over pairs (i, j) walked once, each term added to
the output it belongs to. Differential against the reference interpreter (values and nan
patterns, float64 and float32), the schedule's choice (N-body's adjoint: no N x N array), and
the forms the pair writer leaves to the loop nest or NumPy."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

numba = pytest.importorskip("numba")

from eqsat_ad.backend.fused.pairs import pair_form  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
NBODY = importlib.import_module("fused_programs").PROGRAMS["nbody"]


pytestmark = pytest.mark.usefixtures("numba_cache")


def _inputs(prog: ea.Program, n: int, dtype: type, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {p.name: rng.standard_normal(tuple(d if isinstance(d, int) else n for d in p.shape))
            .astype(dtype) for p in prog.params}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nbody_adjoint_walks_each_pair_once(dtype: type) -> None:
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    sched = g.compiled.schedule
    # the pair value and the squared distance fuse into the pair loop: no N x N array
    assert sched.placement == {"d2": "fused", "d2_bar": "fused", "x_bar": "pairs"}
    assert "np.empty((N, N" not in g.source and "_np_" not in g.source
    assert g.source.count("np.sqrt(d2_") == 3  # the pair value, once per pair (3 k, 2 sums)
    args = _inputs(g.program, 13, dtype)
    args["m"] = np.abs(args["m"]) + dtype(0.1)
    got = g(**args)
    want = evaluate(g.program, **{k: v.astype(np.float64) for k, v in args.items()})
    assert got.dtype == dtype
    agree(got, want, 1e-9 if dtype == np.float64 else 2e-3)


def test_nbody_nan_and_inf_patterns_equal_the_interpreter() -> None:
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    args = _inputs(g.program, 9, np.float64, seed=2)
    args["x"][1, 0], args["x"][4, 2], args["m"][6] = np.nan, np.inf, np.inf
    with np.errstate(all="ignore"):
        want = evaluate(g.program, **args)
    agree(g(**args), want, 1e-9)


ROWS_AND_COLUMNS = """
def f(x: [N, 2], A: [N, N]):
    e[i: N, j: N] = abs(A[i, j]) * 0.5 + 1
    y[i: N, k: 2] = (Sum[j: N](e[j, i] * x[j, k]) * x[i, k]
                     + Sum[j: N](sqrt(e[i, j] ** 2 + 1) * x[j, k]))
    return y
"""


def test_a_column_and_a_row_term_add_in_the_interpreters_order() -> None:
    # the column term (A read [j, i]) adds into rows as the outer pair variable grows, the row
    # term along the inner one: each output adds j = 0, 1, ... in turn, as the interpreter's
    # sequential loop nest does (bit for bit here), and the body outside the sums is applied
    # in a last pass (the product with x[i, k]). The pair value e fuses: computed once per pair
    # ([j, i] of the column term and [i, j] of the row term are the same pair).
    f = ea.compile(ea.parse(ROWS_AND_COLUMNS), backend="numba", optimize=False)
    assert f.compiled.schedule.placement == {"e": "fused", "y": "pairs"}
    # the column sum adds into its rows along _q; the row term's values go to a scratch row,
    # summed in order of _q after the pair loop (pairs.py: the inner loop vectorizes)
    assert "_s0[0, _q] +=" in f.source and "_pt[0, _q] =" in f.source
    assert "_a1_" in f.source and "_rot_x[0, _q]" in f.source
    assert f.source.count("np.abs(A[") == 1
    for seed in range(3):
        args = _inputs(f.program, 11, np.float64, seed)
        if seed == 2:
            args["A"][3, 5] = np.nan
        with np.errstate(all="ignore"):
            agree(f(**args), evaluate(f.program, **args), 1e-12)


@pytest.mark.parametrize("src", [
    # a libm call per term (scalar, 10x NumPy's vectorized ufunc): not a pair loop
    "def f(A: [N, N], x: [N, 2]):\n    y[i: N, k: 2] = Sum[j: N](tanh(A[j, i]) * x[j, k])\n"
    "    return y\n",
    # a bracket in a term (a strong zero): the loop nest's accumulation handles it
    "def f(x: [N, 3]):\n    y[i: N, k: 3] = Sum[j: N]((j < i) * tanh(x[j, k] - x[i, k]))\n"
    "    return y\n",
    # only row terms: the loop nest already walks rows
    "def f(A: [N, N]):\n    y[i: N] = Sum[j: N](abs(A[i, j]))\n    return y\n",
    # a summed index over another extent
    "def f(A: [M, N]):\n    y[i: N] = Sum[j: M](abs(A[j, i]))\n    return y\n",
    # too many other output points to unroll
    "def f(A: [N, N], x: [N, 16]):\n    y[i: N, k: 16] = Sum[j: N](abs(A[j, i]) * x[j, k])\n"
    "    return y\n",
])
def test_forms_that_are_not_pair_loops(src: str) -> None:
    prog = ea.parse(src)
    f = ea.compile(prog, backend="numba", optimize=False)
    nb = f.compiled
    for s in nb._prog.statements:
        assert pair_form(s, nb._shapes, nb._relations) is None
    assert "pairs" not in nb.schedule.placement.values()
    args = _inputs(f.program, 6, np.float64)
    agree(f(**args), evaluate(f.program, **args), 1e-12)


def _random_pair_program(seed: int) -> str:
    """A statement of 2-3 sums over j, each reading the pair array A as [i, j] or [j, i]
    (a row or a column term) inside a random function, times x at j or i; a random
    combination outside the sums."""
    rng = np.random.default_rng(seed)
    fns = ["abs", "sqrt", ""]
    e = ["sqrt(A[i, j] * A[i, j] + 1)", "abs(A[i, j]) * 2", "A[i, j] * A[i, j] + 1"][seed % 3]
    sums = []
    for _ in range(int(rng.integers(2, 4))):
        a = "e[j, i]" if rng.random() < 0.6 else "e[i, j]"
        f = fns[int(rng.integers(len(fns)))]
        arg = f"{a} ** 2 + 1" if f == "sqrt" else f"{a} - 0.5"
        x = "x[j, k]" if rng.random() < 0.5 else "x[i, k]"
        sums.append(f"Sum[j: N]({f}({arg}) * {x})")
    body = sums[0]
    for s in sums[1:]:
        op = ["+", "-", "*"][int(rng.integers(3))]
        body = f"({body} {op} {s})"
    r = int(rng.integers(1, 4))
    return (f"def f(x: [N, {r}], A: [N, N]):\n    e[i: N, j: N] = {e}\n"
            f"    y[i: N, k: {r}] = {body} * x[i, k]\n    return y\n")


@pytest.mark.parametrize("seed", range(8))
def test_random_pair_loops_equal_the_interpreter(seed: int) -> None:
    src = _random_pair_program(seed)
    f = ea.compile(ea.parse(src), backend="numba", optimize=False)
    if "e[j, i]" in src:  # the pair value (computed once per pair) fuses
        assert f.compiled.schedule.placement == {"e": "fused", "y": "pairs"}, src
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-4)):
        args = _inputs(f.program, 9, dtype, seed)
        if seed % 2:
            args["A"][2, 7] = np.nan
        with np.errstate(all="ignore"):
            want = evaluate(f.program, **{k: v.astype(np.float64) for k, v in args.items()})
            got = f(**args)
        assert got.dtype == dtype
        agree(got, want, rtol)


def test_a_pair_loop_without_a_fused_producer_is_not_kept() -> None:
    # Sums over pairs of a parameter: the pair loop would compute each term's arithmetic per
    # pair, term and k, where NumPy computes it once per pair in vectorized passes and sums
    # with BLAS (measured 1.5-2x slower): the statement keeps the placement it had.
    src = ROWS_AND_COLUMNS.replace("    e[i: N, j: N] = abs(A[i, j]) * 0.5 + 1\n", "")
    f = ea.compile(ea.parse(src.replace("e[", "A[")), backend="numba", optimize=False)
    nb = f.compiled
    (s,) = nb._prog.statements
    assert pair_form(s, nb._shapes, nb._relations) is not None
    assert nb.schedule.placement["y"] != "pairs"
    assert "only pays with a producer fused into it" in nb.schedule.why["y"]
    args = _inputs(f.program, 7, np.float64)
    agree(f(**args), evaluate(f.program, **args), 1e-12)


def _nbody_numpy(x, m):  # the sweep's N-body, written in NumPy (the coordinate axis: a size)
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d * d, axis=2) + 0.01
    return np.sum(m[:, None] * m[None, :] / np.sqrt(r2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_front_end_nbody_runs_as_a_pair_loop(dtype: type) -> None:
    # x: [N, M] with M a size symbol: the call's M = 3 is fixed (once per value) and the
    # adjoint's one sum over k, with a row and a column term and brackets k >= 0, N > k that
    # hold everywhere, runs as a pair loop: no N x N x M array.
    g = ea.grad(_nbody_numpy, backend="numba")
    rng = np.random.default_rng(3)
    x, m = rng.standard_normal((11, 3)).astype(dtype), (rng.random(11) + 0.5).astype(dtype)
    got = g(x, m)
    nb = g.compiled
    assert nb._small == frozenset({"M"})
    special = nb._special[(("M", 3),)]
    assert special is not None and special.schedule.placement["x_bar"] == "pairs"
    assert "np.empty((N, N" not in special.source
    want = evaluate(g.program, x=x.astype(np.float64), m=m.astype(np.float64))
    assert got.dtype == dtype
    agree(got, want, 1e-9 if dtype == np.float64 else 2e-3)
    x[4, 1] = np.nan  # the nan pattern of the interpreter (the guard reruns the naive program)
    with np.errstate(all="ignore"):
        want = evaluate(g.program, x=x.astype(np.float64), m=m.astype(np.float64))
        agree(g(x, m), want, 1e-9 if dtype == np.float64 else 2e-3)
    # many coordinates: no pair loop unrolls them; the loop nests run, values agree
    x9 = rng.standard_normal((7, 9))
    agree(g(x9, m[:7].astype(np.float64)), ea.grad(_nbody_numpy)(x9, m[:7].astype(np.float64)),
           1e-9)


def test_a_sum_over_both_orientations_is_split() -> None:
    # Σ_j (e[i, j] x[j, k] + e[j, i] x[j, k]): one sum, a row and a column term, as the NumPy
    # front end writes a symmetric pair sum; split into two sums, it is a pair loop.
    src = ("def f(x: [N, 2], A: [N, N]):\n    e[i: N, j: N] = sqrt(A[i, j] * A[i, j] + 1)\n"
           "    y[i: N, k: 2] = Sum[j: N](e[i, j] * x[j, k] - (j >= 0) * e[j, i] * x[i, k])\n"
           "    return y\n")
    f = ea.compile(ea.parse(src), backend="numba", optimize=False)
    nb = f.compiled
    form = pair_form(nb._stmt("y"), nb._shapes, nb._relations)
    assert form is not None and sorted(t.row for t in form.terms) == [False, True]
    assert nb.schedule.placement == {"e": "fused", "y": "pairs"}
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-4)):
        args = _inputs(f.program, 9, dtype, 1)
        args["A"][3, 5] = np.inf
        with np.errstate(all="ignore"):
            want = evaluate(f.program, **{k: v.astype(np.float64) for k, v in args.items()})
            agree(f(**args), want, rtol)


def test_brackets_that_hold_over_the_ranges() -> None:
    from eqsat_ad.backend.fused.pairs import _always
    from eqsat_ad.ir.expr import And, Cmp
    from eqsat_ad.ir.index import Affine, size

    k, i, n = Affine.var("k"), Affine.var("i"), Affine.of_dim(size("N"))
    ranges = {"k": size("N"), "i": 4}
    assert _always(Cmp(">=", k, Affine.constant(0)), ranges)
    assert _always(Cmp(">", n, k), ranges)
    assert _always(Cmp("<=", k, n - 1), ranges)
    assert _always(And((Cmp(">=", k, Affine.constant(0)), Cmp("<", i, Affine.constant(4)))),
                   ranges)
    assert not _always(Cmp(">", k, Affine.constant(0)), ranges)  # k = 0
    assert not _always(Cmp(">", n - 1, k), ranges)  # k = N - 1
    assert not _always(Cmp("<", i, Affine.constant(3)), ranges)  # i = 3
    assert not _always(Cmp("==", k, k), ranges)  # (equalities are left to the loop writer)
    assert not _always(Cmp(">=", Affine.var("z"), Affine.constant(0)), ranges)  # unknown


def test_fixed_sizes_are_constants_everywhere() -> None:
    from eqsat_ad.backend.fused.specialize import fix_sizes, small_sizes

    prog = ea.parse("def f(x: [N, M], w: [M]):\n"
                    "    y[i: N, k: M] = Sum[j: N]((M - 1 > k) * x[j, k] * w[M - 1 - k])\n"
                    "    return y\n")
    assert small_sizes(prog) == frozenset({"M"})
    fixed = fix_sizes(prog, {"M": 2})
    assert "M" not in str(fixed) and fixed.params[0].shape[1] == 2
    x, w = np.arange(8.0).reshape(4, 2), np.array([3.0, 5.0])
    np.testing.assert_array_equal(evaluate(fixed, x=x, w=w), evaluate(prog, x=x, w=w))
