"""The fused loop backend (backend="numba") against the reference interpreter.

Differential: worked examples, stencils (blur, total variation, conv1d), N-body, prefix and
moving sums, random programs, in float64 and float32, values and nan patterns. Also: the
schedule's decisions (fusion, NumPy contractions, scans) and the readable cached module. (The
error naming the extra when Numba is missing: tests/test_numba_missing.py, which runs without
Numba too.)
"""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba_inputs import E8_ADJOINT, agree, random_arguments
from strategies import programs, random_inputs, sizes_strategy

import eqsat_ad as ea
from eqsat_ad.examples import WORKED_EXAMPLES, k_reads
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Statement

numba = pytest.importorskip("numba")

import eqsat_ad.backend.fused.schedule as fused_schedule  # noqa: E402
from eqsat_ad.backend.fused import NumbaProgram, compile_numba  # noqa: E402
from eqsat_ad.backend.fused.parts import alone_price  # noqa: E402
from eqsat_ad.backend.fused.schedule import (  # noqa: E402
    LOOP_RATIO,
    REUSE,
    SERIAL_SUM,
    loop_price,
    schedule,
    strided,
)
from eqsat_ad.plan.kernels import Fill  # noqa: E402
from eqsat_ad.plan.lower import lower_program  # noqa: E402
from eqsat_ad.plan.poly import Poly, compare  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
STENCILS = importlib.import_module("fused_programs").PROGRAMS  # shared with the experiment


pytestmark = pytest.mark.usefixtures("numba_cache")


def _alone(nb: NumbaProgram, s: Statement) -> Poly:
    """``s``'s NumPy code run on its own, priced as ``nb``'s schedule prices it."""
    return alone_price(nb.program, nb._shapes, s, nb._signed(s))


def _inputs(prog: ea.Program, sizes: dict[str, int], dtype: type, seed: int = 0) -> dict:
    return random_arguments(prog, sizes, seed, dtype)


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=lambda e: e.id)
def test_worked_example_gradients_equal_the_interpreter(ex) -> None:
    g = ea.grad(ex.program(), ex.wrt if len(ex.wrt) > 1 else ex.wrt[0], backend="numba")
    inputs = ex.inputs()
    args = {n: inputs[n] for n in g.program.param_names}
    agree(g(**args), evaluate(g.program, **args), 1e-9)
    assert isinstance(g.compiled, NumbaProgram)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("name", "wrt"), [(n, p.wrt) for n, p in sorted(STENCILS.items())]
                         + [("conv1d", "w")])
def test_stencil_gradients_equal_the_interpreter(name: str, wrt: str, dtype: type) -> None:
    src, _, sizes = STENCILS[name]
    prog = ea.parse(src)
    g = ea.grad(prog, wrt, backend="numba")
    args = _inputs(g.program, sizes, dtype)
    got = g(**args)
    want = evaluate(g.program, **{k: v.astype(np.float64) if v.dtype != bool else v
                                  for k, v in args.items()})
    assert np.asarray(got).dtype == dtype  # float32 stays float32
    agree(got, want, 1e-9 if dtype == np.float64 else 2e-3)
    np.testing.assert_allclose(got, ea.grad(prog, wrt)(**args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["blur", "tv", "conv1d", "prefix"])
def test_nan_and_inf_patterns_equal_the_interpreter(name: str) -> None:
    src, wrt, sizes = STENCILS[name]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    args = _inputs(g.program, sizes, np.float64, seed=3)
    first = next(iter(args))
    flat = args[first].reshape(-1)
    flat[1], flat[4] = np.nan, np.inf
    with np.errstate(all="ignore"):
        want = evaluate(g.program, **args)
    agree(g(**args), want, 1e-9)


SCANS = [
    "def f(x: [N]):\n    c[i: N] = Sum[j: N]((j < i) * x[j])\n    return c\n",
    "def f(x: [N]):\n    c[i: N] = Sum[j: N]((j >= i + 2) * exp(x[j]))\n    return c\n",
    "def f(A: [M, N]):\n    c[r: M, i: N] = Sum[j: N]((j <= i - 1) * A[r, j]) * 2 + "
    "Sum[j: N]((i >= j) * A[r, j])\n    return c\n",
    "def f(x: [N]):\n    c[i: N] = Sum[j: N]((j <= i) * x[j]) * Sum[j: N]((j >= i) * x[j])\n"
    "    return c\n",
]


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("k", range(len(SCANS)))
def test_running_sums_equal_the_interpreter(k: int, nan: bool) -> None:
    f = ea.compile(ea.parse(SCANS[k]), backend="numba", optimize=False)
    args = _inputs(f.program, {"N": 9, "M": 3}, np.float64)
    if nan:
        next(iter(args.values())).reshape(-1)[4] = np.nan
    with np.errstate(all="ignore"):
        want = evaluate(f.program, **args)
    agree(f(**args), want, 1e-12)


def test_forward_and_hessian_take_the_backend() -> None:
    src, _, sizes = STENCILS["nbody"]
    prog = ea.parse(src)
    args = _inputs(prog, sizes, np.float64)
    f = ea.compile(prog, backend="numba")
    agree(f(**args), evaluate(f.program, **args), 1e-9)
    quad = ea.parse("def q(x: [N]):\n    return Sum[i: N](exp(x[i]) * x[i])\n")
    h = ea.hessian(quad, "x", backend="numba")
    x = np.linspace(-1, 1, 6)
    agree(h(x), evaluate(h.program, x), 1e-9)


def test_a_numpy_function_takes_the_backend() -> None:
    def tv(u):
        dx = u[1:, :-1] - u[:-1, :-1]
        dy = u[:-1, 1:] - u[:-1, :-1]
        return np.sum(np.sqrt(dx * dx + dy * dy + 1e-4))

    u = np.random.default_rng(1).standard_normal((7, 5))
    g_nb, g_np = ea.grad(tv, backend="numba"), ea.grad(tv)
    np.testing.assert_allclose(g_nb(u), g_np(u), rtol=1e-12, atol=1e-12)
    assert g_nb(u.astype(np.float32)).dtype == np.float32
    buf = np.empty_like(u)
    assert g_nb(u, out=buf) is buf  # out= through a NumPy function's compiled gradient
    np.testing.assert_allclose(buf, g_np(u), rtol=1e-12, atol=1e-12)
    with pytest.raises(ea.ProgramError, match="structured=True needs backend='numpy'"):
        ea.grad(tv, backend="numba", structured=True)


def test_the_schedule_fuses_keeps_blas_and_scans() -> None:
    # An elementwise producer fuses into the loop that reads it (no stored temporary): E8's
    # adjoint with its difference d, compiled as it stands.
    g = ea.compile(ea.parse(E8_ADJOINT), optimize=False, backend="numba")
    place = g.compiled.schedule.placement
    assert "fused" in place.values()
    for name in g.compiled.schedule.names("fused"):
        assert f"{name} = np.empty" not in g.source
    # Sibling fusion: total variation's two partial adjoints are written in one pass.
    gt = ea.grad(ea.parse(STENCILS["tv"][0]), "u", backend="numba")
    assert "_k_dy_bar(dy_bar, dx_bar, u, H, W, _box)" in gt.source
    # A matrix product stays a NumPy call (BLAS).
    chain = next(e for e in WORKED_EXAMPLES if e.id == "chain")
    gc = ea.grad(chain.program(), chain.wrt, backend="numba")
    assert set(gc.compiled.schedule.placement.values()) == {"numpy"}
    # Prefix and suffix sums run as running sums in the loop (O(N), priced so) ...
    gp = ea.grad(ea.parse(STENCILS["prefix"][0]), "x", backend="numba")
    assert set(gp.compiled.schedule.placement.values()) == {"loop"}
    assert gp.source.count("while ") == 2 and "range(N - 1, -1, -1)" in gp.source
    for s in gp.program.statements:
        assert loop_price(s).degree() == 1
    # A contraction among elementwise factors (the MLP's tanh layer and its weight gradient):
    # the plan runs a matrix product, BLAS; the bias gradient (a plain sum) loops.
    mlp = next(e for e in WORKED_EXAMPLES if e.id == "mlp")
    gl = ea.grad(mlp.program(), "W1", backend="numba")
    # (each statement's own placement: the whole NumPy program runs there, the softmax's loop
    # nest at exp's vectorized price saving less than WHOLE_MARGIN of the plan)
    prog_m = gl.compiled.program  # (as written: the fused program splits products, .epilogue)
    loopable_m = {s.name: gl.compiled._loopable(s) for s in prog_m.statements}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fused_schedule, "WHOLE_MARGIN", Fraction(0))
        why = schedule(prog_m, lower_program(prog_m).plan, loopable_m).why
    assert why["hid"] == why["W1_bar"] == "contraction (BLAS)"
    # k point reads' gradient: the plan writes zeros and k points, NumPy; without the zeros
    # (priced as the k point writes alone) the loop nest, testing k brackets at every point,
    # is dearer than LOOP_RATIO times the plan: NumPy again, for that reason.
    gk = ea.grad(k_reads(16).program(), "x", backend="numba")
    assert gk.compiled.schedule.why["x_bar"] == "zeros and points (np.zeros)"
    prog_k = gk.compiled._prog
    plan = lower_program(prog_k).plan
    points = dataclasses.replace(plan, kernels=tuple(k for k in plan.kernels
                                                     if not isinstance(k, Fill)))
    sched = schedule(prog_k, points, {"x_bar": True})
    assert sched.placement["x_bar"] == "numpy"
    assert f"{LOOP_RATIO}x the NumPy plan" in sched.why["x_bar"]
    # ... a moving window's loop nest would be O(N^2): the NumPy plan's O(N) scan runs it.
    gm = ea.grad(ea.parse(STENCILS["moving"][0]), "x", backend="numba")
    assert set(gm.compiled.schedule.placement.values()) == {"numpy"}


LOGSUMEXP = """\
def logsumexp(x: [B, N], w: [B]):
    s[b: B] = log(Sum[n: N](exp(x[b, n])))
    return Sum[b: B](w[b] * s[b])
"""


def _example(name: str) -> ea.Program:
    return next(e for e in WORKED_EXAMPLES if e.id == name).program()


def test_a_view_in_numpy_is_not_copied_by_a_loop() -> None:
    # E10's C_bar[i, j] = W[i, j]: NumPy binds W (no kernel, price 0); a loop nest would read
    # and write N^2 elements. It stays NumPy, and the products are BLAS: nothing loops.
    g = ea.grad(_example("E10"), ("A", "B"), backend="numba")
    plan = lower_program(g.compiled._prog).plan
    assert plan.statement_cost("C_bar").is_zero()
    assert g.compiled.schedule.why["C_bar"] == "a view in NumPy (no pass)"
    assert set(g.compiled.schedule.placement.values()) == {"numpy"}
    assert "np.empty((N, N,)" not in g.source


def test_no_loop_nest_calls_the_numpy_program_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # E10 runs nothing as loops: a call goes to the NumPy backend's compiled program, the
    # same code as backend="numpy", with no NumbaProgram call in between (out= still does).
    g = ea.grad(_example("E10"), ("A", "B"), backend="numba")
    g_np = ea.grad(_example("E10"), ("A", "B"))
    nb_prog = g.compiled
    assert nb_prog.numpy_only and nb_prog.runner is nb_prog.numpy
    assert nb_prog.numpy.source == g_np.source
    args = _inputs(g.program, {"N": 6}, np.float64)

    def wrapped(*a: object, **k: object) -> None:
        raise AssertionError("the call went through NumbaProgram")

    monkeypatch.setattr(NumbaProgram, "__call__", wrapped)
    agree(g(**args), g_np(**args), 0.0)
    with pytest.raises(AssertionError, match="went through NumbaProgram"):
        g(**args, out=(None, None))
    monkeypatch.undo()
    bufs = tuple(np.empty_like(a) for a in g_np(**args))
    got = g(**args, out=bufs)
    assert got[0] is bufs[0] and got[1] is bufs[1]
    # A program with a loop nest runs through NumbaProgram (its module).
    gb = ea.grad(ea.parse(STENCILS["blur"].source), "x", backend="numba")
    assert not gb.compiled.numpy_only and gb.compiled.runner is gb.compiled


def test_a_column_walk_is_priced_a_cache_line_per_read() -> None:
    # E12: x_bar[i] = Σ_j y_bar[j]·R[j, i] would walk R down a column in an inner loop over j;
    # tiled along i (.tiles) it walks rows, and is priced so (no STRIDED): a loop nest, as
    # w_bar[i] = Σ_j R[i, j]·x[j], whose sum along the row is a serial chain (SERIAL_SUM).
    # A plain column sum keeps its column walk's price and stays NumPy (next test).
    g = ea.grad(_example("E12"), ("x", "w"), backend="numba")
    prog = g.compiled._prog
    st = {s.name: s for s in prog.statements}
    (mn,) = (Poly.symbol("M") * Poly.symbol("N")).terms
    col, row = loop_price(st["x_bar"]), loop_price(st["w_bar"])
    assert col.terms[mn] == 4  # y_bar[j] and R[j, i] read, a product, an add per term
    assert row.terms[mn] == fused_schedule.SERIAL_SUM
    place = g.compiled.schedule.placement
    assert place == {"y_bar": "numpy", "x_bar": "loop", "w_bar": "loop"}
    assert "for _v0 in range(" in g.source  # the tiled x_bar
    # strided() itself: a column read along j, not a row read, not a read free of j.
    body = ea.parse("def f(A: [N, N]):\n    return Sum[i: N, j: N](A[j, i] * A[i, j])\n")
    reads = [body.outputs[0].body.lhs, body.outputs[0].body.rhs]
    assert [strided(a, "j") for a in reads] == [True, False]
    assert not strided(reads[0], "k")
    np.testing.assert_allclose(
        g(**_inputs(prog, {"M": 7, "N": 5}, np.float64))[0],
        ea.grad(_example("E12"), ("x", "w"))(**_inputs(prog, {"M": 7, "N": 5}, np.float64))[0])


def test_column_sums_stay_numpy() -> None:
    # b_bar[j] = Σ_i c[i, j] (a bias gradient): a loop nest over j with i inner reads c down
    # its columns; NumPy's .sum(axis=0) walks rows.
    prog = ea.parse("def f(c: [N, M], b: [M]):\n    return Sum[i: N, j: M](c[i, j] * b[j])\n")
    g = ea.grad(prog, "b", backend="numba")
    assert set(g.compiled.schedule.placement.values()) == {"numpy"}
    assert "> 8x the NumPy plan" in " ".join(g.compiled.schedule.why.values())


def test_libm_calls_and_serial_sums_are_priced_as_measured() -> None:
    # y = exp(x) as a loop nest: a read, the call at CALL_PRICE, a write; x ** 3 a pow call,
    # x ** 2 a multiplication. A row sum free of the innermost index (hoisted) accumulates a
    # dependent chain: SERIAL_SUM per term; a sum over the innermost index is tiled: 2.
    prog = ea.parse(
        "def f(x: [N, M]):\n"
        "    a[i: N, j: M] = exp(x[i, j])\n"
        "    b[i: N, j: M] = x[i, j] ** 3\n"
        "    c[i: N, j: M] = x[i, j] ** 2\n"
        "    r[i: N, j: M] = x[i, j] - Sum[k: M](x[i, k])\n"
        "    t[i: N] = Sum[k: M](x[i, k] * x[i, k])\n"
        "    return a, b, c, r, t\n")
    st = {s.name: s for s in prog.statements}
    nm, n = Poly.symbol("N") * Poly.symbol("M"), Poly.symbol("N")
    assert loop_price(st["a"]) == nm * (fused_schedule.CALL_PRICE["exp"] + 2)
    assert loop_price(st["b"]) == nm * (fused_schedule.POW_PRICE + 2)
    assert loop_price(st["c"]) == nm * 3
    assert fused_schedule.serial_sums(st["r"]) == [st["r"].body.rhs]
    assert fused_schedule.serial_sums(st["t"]) == [st["t"].body]  # x[i, k] walks a column of i
    assert loop_price(st["t"]) == nm * SERIAL_SUM + n  # the chain, not 2 reads, 2 operations
    conv = ea.parse("def g(y: [N], w: [K]):\n    c[i: N] = Sum[k: K](y[i + k] * w[k])\n"
                    "    return c\n").statements[0]
    assert fused_schedule.serial_sums(conv) == []  # along i: interchanged with tiles of i
    assert loop_price(conv) == Poly.symbol("N") * Poly.symbol("K") * 4 + Poly.symbol("N")
    # where priced dearer than NumPy's SIMD kernels they stay NumPy; the values still agree
    f = ea.compile(prog, backend="numba", optimize=False)
    place = f.compiled.schedule.placement
    assert place["a"] == place["b"] == place["t"] == "numpy" and place["c"] == "loop"
    args = _inputs(prog, {"N": 6, "M": 5}, np.float64)
    args["x"][1, 2] = np.nan
    agree(f(**args), evaluate(prog, **args), 1e-12)


def test_a_split_dearer_than_the_numpy_program_runs_it_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # attention-like: E * G read by two products. Z's loop nest alone is placed (a diagonal
    # read, cheaper than NumPy's view and pass), but A's and B's NumPy code run on their own
    # each compute E * G (T**2 more than the NumPy plan, which computes it once): the split
    # costs more than the loop saves, and the whole NumPy program runs.
    prog = ea.parse(
        "def f(E: [T, T], G: [T, T], K: [T, D], Q: [T, D]):\n"
        "    Z[t: T] = 2 * E[t, t] + G[t, t]\n"
        "    A[i: T, j: D] = Sum[k: T](K[k, j] * (E[i, k] * G[i, k])) * Z[i]\n"
        "    B[i: T, j: D] = Sum[k: T](Q[k, j] * (E[k, i] * G[k, i])) * Z[i]\n"
        "    return A, B\n")
    f = ea.compile(prog, backend="numba", optimize=False)
    nb_prog = f.compiled
    plan = lower_program(nb_prog._prog).plan
    loopable = {s.name: nb_prog._loopable(s) for s in nb_prog._prog.statements}
    alone = {s.name: _alone(nb_prog, s) for s in nb_prog._prog.statements}
    assert compare(alone["A"] + alone["B"],
                   plan.statement_cost("A") + plan.statement_cost("B")) > 0
    # per statement Z loops (priced without the parts' prices alone, and without the margin
    # for the split's unpriced calls, the split is not seen)
    with monkeypatch.context() as m:
        m.setattr(fused_schedule, "WHOLE_MARGIN", Fraction(0))
        assert schedule(nb_prog._prog, plan, loopable).placement["Z"] == "loop"
    assert set(nb_prog.schedule.placement.values()) == {"numpy"} and nb_prog.numpy_only
    assert f"not {fused_schedule.WHOLE_MARGIN} cheaper than" in nb_prog.schedule.why["Z"]
    args = _inputs(prog, {"T": 6, "D": 3}, np.float64)
    agree(f(**args), evaluate(prog, **args), 1e-12)


def test_a_reused_sum_is_not_recomputed() -> None:
    # logsumexp's gradient: x_bar[i, j] = exp(x[i, j]) · w[i] / Σ_k exp(x[i, k]) and w_bar[i] =
    # log(Σ_j exp(x[i, j])). The NumPy plan sums once and w_bar's share is a log (B); run on
    # its own w_bar's NumPy code (or a loop nest of its own) sums again, O(B N). Both run in
    # one kernel (.reuse): per row the exps go to a buffer once, are added in NumPy's order,
    # read back at the points of x_bar, and w_bar is the log of the same sum.
    g = ea.grad(ea.parse(LOGSUMEXP), ("x", "w"), backend="numba")
    nb_prog = g.compiled
    prog = nb_prog._prog
    plan = lower_program(prog).plan
    w_bar = next(s for s in prog.statements if s.name == "w_bar")
    share, alone = plan.statement_cost("w_bar"), _alone(nb_prog, w_bar)
    assert share.degree() == 1 and alone.degree() == 2
    assert compare(alone, share * REUSE) > 0
    assert nb_prog.schedule.placement == {"x_bar": "loop", "w_bar": "loop"}
    assert "once per row in x_bar's kernel" in nb_prog.schedule.why["w_bar"]
    # x_bar's exp priced once per point (20 B N), not twice (28 B N: the sum's and the point's)
    assert str(loop_price(prog.statements[0], relations=frozenset())) == "20*B*N"
    kernel = nb_prog.source[nb_prog.source.index("def _k_x_bar(_out0, _out1,"):]
    kernel = kernel[:kernel.index("\ndef run(")]
    assert kernel.count("_exp(") == 1 and "np.log(" in kernel and "_pairwise(" in kernel
    assert "_k_w_bar" not in nb_prog.source
    loopable = {s.name: True for s in prog.statements}
    alone_all = {s.name: _alone(nb_prog, s) for s in prog.statements}
    with pytest.MonkeyPatch.context() as mp:
        # an exp at libm's price (calibration_fused.md: 37), not vmath's: the NumPy program
        # (one vectorized exp pass) is cheaper
        mp.setitem(fused_schedule.CALL_PRICE, "exp", 37)
        dear = schedule(prog, plan, loopable, alone=alone_all)
    assert set(dear.placement.values()) == {"numpy"}
    assert "reused values not recomputed: w_bar" in dear.why["x_bar"]
    # Without the price of w_bar's code alone the schedule cannot see that NumPy would sum
    # again: w_bar (a log per row) stays NumPy
    blind = schedule(prog, plan, loopable)
    assert blind.placement == {"x_bar": "loop", "w_bar": "numpy"}
    inputs = _inputs(prog, {"B": 3, "N": 4}, np.float64)
    agree(g(**inputs), evaluate(g.program, **inputs), 1e-12)
    # the loop nests' values: the NumPy backend's within rounding (vmath's exp: < 1 ULP)
    inputs = _inputs(prog, {"B": 5, "N": 300}, np.float64)
    numpy_g = ea.grad(ea.parse(LOGSUMEXP), ("x", "w"))
    agree(g(**inputs), numpy_g(**inputs), 1e-12)


def test_source_is_readable_and_compile_time_recorded() -> None:
    src, wrt, sizes = STENCILS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    args = _inputs(g.program, sizes, np.float64)
    g(**args)
    assert "@nb.njit(cache=True" in g.source and "for i in range(_rlo, _rhi):" in g.source
    compile(g.source, "<generated>", "exec")  # valid Python
    assert g.compile_seconds["d"] > 0
    # run from a module file (Numba's on-disk cache sits beside it): a process imports a
    # module once, so it is the file of the cache folder it was first imported from (another
    # test's, where pytest-xdist ran that test first in this process)
    path = Path(g.compiled._modules["d"].__file__)
    assert path.name.startswith("eqsat_ad_fused_") and path.parent.name == "numba"
    assert path.read_text() == g.source


def test_a_second_process_loads_from_the_disk_cache(tmp_path: Path) -> None:
    # Numba's own record: the first process compiles every kernel (cache misses), the second
    # loads them all from the files the first wrote (cache hits, no misses).
    script = (
        "import numpy as np, eqsat_ad as ea\n"
        f"g = ea.grad(ea.parse({STENCILS['conv1d'].source!r}), 'w', backend='numba')\n"
        "g(np.ones(30), np.ones(4), np.ones(30))\n"
        "mod = g.compiled._modules['d']\n"
        "ks = [v for k, v in vars(mod).items() if k.startswith('_k_')]\n"
        "print(sum(len(k.stats.cache_hits) for k in ks), "
        "sum(len(k.stats.cache_misses) for k in ks))\n"
    )
    env = {"EQSAT_AD_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    cwd = Path(__file__).resolve().parent.parent
    runs = [tuple(map(int, subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=cwd, check=True, capture_output=True,
        text=True, timeout=300).stdout.split())) for _ in range(2)]
    assert list(tmp_path.glob("numba/__pycache__/*.nbi")), "Numba wrote no on-disk cache"
    (hits0, misses0), (hits1, misses1) = runs
    assert hits0 == 0 and misses0 > 0
    assert hits1 == misses0 and misses1 == 0


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=3, scalar_output=False), sizes_strategy(), st.integers(0, 2**16))
def test_random_programs_equal_the_interpreter(prog, sizes, seed) -> None:
    args = random_inputs(prog, sizes, np.random.default_rng(seed))
    with np.errstate(all="ignore"):
        want = evaluate(prog, **args)
    agree(compile_numba(prog)(**args), want, 1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_out_buffers_are_written_in_place(dtype: type) -> None:
    src, wrt, sizes = STENCILS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    args = _inputs(g.program, sizes, dtype)
    want = g(**args)
    buf = np.full(want.shape, np.nan, dtype=dtype)
    got = g(**args, out=buf)
    assert got is buf
    np.testing.assert_array_equal(buf, want)
    # A tuple of outputs: an array per output (None: allocated); a NumPy-run output is copied.
    two = ea.grad(ea.parse(STENCILS["nbody"].source), ("x", "m"), backend="numba")
    a2 = _inputs(two.program, STENCILS["nbody"].test_sizes, dtype)
    want_x, want_m = two(**a2)
    bm = np.zeros_like(want_m)
    got_x, got_m = two(**a2, out=(None, bm))
    assert got_m is bm and got_x is not bm
    np.testing.assert_allclose(got_m, want_m, rtol=1e-6)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-6)


def test_out_buffers_are_checked() -> None:
    src, wrt, sizes = STENCILS["blur"]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    args = _inputs(g.program, sizes, np.float64)
    with pytest.raises(ea.ShapeError, match=r"output 0 is float64 of shape \(9, 7\)"):
        g(**args, out=np.empty((7, 9)))
    with pytest.raises(ea.ShapeError, match="float64 of shape"):
        g(**args, out=np.empty((9, 7), dtype=np.float32))
    with pytest.raises(ea.ShapeError, match="shares memory with an input"):
        g(**args, out=args["w"])
    f = ea.compile(ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n"), backend="numba")
    with pytest.raises(ea.ShapeError, match="it is a scalar"):
        f(np.ones(3), out=np.empty(()))
    g_np = ea.grad(ea.parse(src), wrt)
    with pytest.raises(ea.ProgramError, match="out= .* needs backend='numba'"):
        g_np(**args, out=np.empty((9, 7)))


def test_rolled_loops_run_as_the_numpy_backend_runs_them() -> None:
    """A long Python loop is a fold; under backend="numba" it runs the NumPy backend's rolled
    loop (a Numba program's call costs more than the loop's call of its body), with the same
    values, and out= gets the result, checked as for loop nests."""
    def ema(x):
        s = 0.0
        for i in range(x.shape[0]):
            s = 0.9 * s + x[i] * x[i]
        return s

    x = np.random.default_rng(3).standard_normal(50)
    g, g_np = ea.grad(ema, backend="numba"), ea.grad(ema)
    want = g_np(x)
    np.testing.assert_array_equal(g(x), want)
    assert g.program.folds and not isinstance(g.compiled, NumbaProgram)
    buf = np.full(50, np.nan)
    assert g(x, out=buf) is buf
    np.testing.assert_array_equal(buf, want)
    for bad, message in [(np.empty(49), "shape"), (np.empty(50, np.float32), "float32"),
                         (x, "shares memory with an input")]:
        with pytest.raises(ea.ShapeError, match=message):
            g(x, out=bad)
    f = ea.compile(ema, backend="numba")
    assert f(x) == ea.compile(ema)(x)
    with pytest.raises(ea.ShapeError, match="it is a scalar"):
        f(x, out=np.empty(()))


@pytest.mark.parametrize("sizes", [{"N": 3, "K": 4}, {"N": 4, "K": 4}, {"N": 40, "K": 1},
                                   {"N": 1, "K": 1}])
def test_partitioned_loops_equal_the_interpreter_at_every_size(sizes: dict) -> None:
    # conv1d's loops run an edge, an interior without guards and another edge; where the
    # interior is empty (K > N) or everything (K = 1), the values are still the interpreter's.
    prog = ea.parse(STENCILS["conv1d"].source)
    for wrt in ("x", "w"):
        g = ea.grad(prog, wrt, backend="numba")
        assert "# the interior: no read leaves its array" in g.source
        args = _inputs(g.program, sizes, np.float64, seed=5)
        args["x"][0] = np.inf
        with np.errstate(all="ignore"):
            want = evaluate(g.program, **args)
        agree(g(**args), want, 1e-12)


def test_sums_free_of_the_innermost_index_are_hoisted() -> None:
    # A row mean inside an elementwise body: computed once per row (O(N M)), not per point.
    src = ("def center(x: [N, M], c: [N, M]):\n"
           "    xc[i: N, j: M] = x[i, j] - Sum[k: M](x[i, k]) / Sum[k: M](1)\n"
           "    return Sum[i: N, j: M](c[i, j] * xc[i, j] * xc[i, j])\n")
    g = ea.grad(ea.parse(src), "x", backend="numba")
    for s in g.program.statements:
        assert loop_price(s).degree() <= 2, s
    assert "acc_h1_" in g.source and "acc_h2_" in g.source  # the hoisted accumulators
    for dtype in (np.float64, np.float32):
        args = _inputs(g.program, {"N": 5, "M": 7}, dtype, seed=2)
        args["x"][1, 3] = np.nan
        with np.errstate(all="ignore"):
            want = evaluate(g.program, **{k: v.astype(np.float64) for k, v in args.items()})
        agree(g(**args), want, 1e-9 if dtype == np.float64 else 2e-3)


@pytest.mark.parametrize("sizes", [{"H": 1, "W": 1}, {"H": 2, "W": 5}, {"H": 3, "W": 3},
                                   {"H": 9, "W": 7}, {"H": 6, "W": 300}])
def test_interior_rows_equal_the_interpreter_at_every_size(sizes: dict) -> None:
    # blur's and total variation's loops also split their rows: rows whose reads stay in their
    # arrays along the row index run without those guards (a loop over [_rlo, _rhi)), the
    # others with every guard (loops before and after it); where no row is interior (H < 3)
    # or the columns' interior is empty, the values are still the interpreter's, inf and nan
    # included.
    for name in ("blur", "tv"):
        src, wrt, _ = STENCILS[name]
        g = ea.grad(ea.parse(src), wrt, backend="numba")
        assert "for i in range(_rlo, _rhi):  # the interior rows" in g.source
        args = _inputs(g.program, sizes, np.float64, seed=7)
        first = next(iter(args))
        args[first][0, 0] = np.inf
        args[first][-1, -1] = -np.inf
        with np.errstate(all="ignore"):
            want = evaluate(g.program, **args)
        agree(g(**args), want, 1e-12)


def test_intermediates_are_reused_and_never_returned() -> None:
    # conv1d's c_bar in the gradient for w (read by w_bar's loop nest only, over other
    # points: no sliding window) lives in this thread's scratch arrays from call to call; the
    # result is a new array each call, and a new size gets new arrays.
    src, _, _ = STENCILS["conv1d"]
    g = ea.grad(ea.parse(src), "w", backend="numba")
    assert "c_bar = _tmp.get('c_bar')" in g.source
    a1 = _inputs(g.program, {"N": 40, "K": 3}, np.float64, seed=1)
    a2 = _inputs(g.program, {"N": 40, "K": 3}, np.float64, seed=2)
    a3 = _inputs(g.program, {"N": 25, "K": 3}, np.float64, seed=3)
    r1 = g(**a1)
    keep = r1.copy()
    r2 = g(**a2)
    r3 = g(**a3)
    np.testing.assert_array_equal(r1, keep)  # not overwritten by the later calls
    for r, a in ((r1, a1), (r2, a2), (r3, a3)):
        agree(r, evaluate(g.program, **a), 1e-12)
    scratch = g.compiled._scratch(np.dtype(np.float64))
    assert scratch["c_bar"].shape == (25,)
    assert not any(np.may_share_memory(scratch["c_bar"], r) for r in (r1, r2, r3))
