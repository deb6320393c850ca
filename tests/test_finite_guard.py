"""Optimized code is a fast path (backend/guard.py): statement inlining is finite-only, so a call
is kept only where the unoptimized program is proven finite (interval bounds, ir/bounds.py) and
the optimized code computed no inf/nan; otherwise the unoptimized program reruns. Class 1 of
experiments/results/fuzz.md."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import count_calls

import eqsat_ad as ea
from eqsat_ad.backend.guard import with_fallback
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.fuzz.case import draw_inputs
from eqsat_ad.fuzz.index_gen import generate_index
from eqsat_ad.ir.bounds import program_is_finite
from eqsat_ad.ir.expr import Access
from eqsat_ad.ir.index import dim_value
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Program

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _fallbacks(c: ea.Compiled) -> int:
    fallback = c.compiled.fallback
    assert fallback is not None, f"no guarded fast path was kept:\n{c.report}"
    return fallback.calls


def test_a_stored_zero_times_nan_reruns_the_unoptimized_program() -> None:
    """``t0[N]`` reads outside ``t0``: a stored 0.0, so ``t0[N] * nan`` is nan in the
    interpreter; the optimizer inlines the read as a false bracket (a strong zero: 0)."""
    src = ("def f(A1: [M, N]):\n    t0[i: N] = 1.0\n"
           "    t1[i: 3, j: N] = softplus(A1[M - 1 - j, j + i] ** 0.5)\n"
           "    return t0[N] * t1[1, 1]\n")
    prog = ea.parse(src)
    a1 = np.array([[1.06, 1.09, -0.47], [1.22, -1.47, 1.72]])
    assert np.isnan(evaluate(prog, A1=a1))
    assert np.isnan(ea.compile(prog)(a1))
    # The NumPy backend's price keeps the input here (its guard would scan A1's exact range,
    # and A1 ** 0.5 is finite on no box around 0): the rewritten program is the Numba
    # backend's choice, run here by the NumPy backend under the guard.
    fast = ea.optimize(prog, backend="numba").program
    assert fast != prog
    c = with_fallback(compile_program(fast), prog)
    assert np.isnan(c(a1))
    assert c.fallback.calls == 1
    assert c(np.abs(a1)) == 0.0 and c.fallback.calls == 1  # proven finite: the fast path


def test_the_gradient_through_a_stored_seed_follows_the_interpreter() -> None:
    """``log(log(x))[0]`` at ``x = [1, 1]``: the adjoint seed ``(i == 0) * 1`` is stored, so its
    0.0 at i = 1 times ``log'(log(1)) = inf`` is nan (JAX gives ``[inf, nan]`` too)."""
    g = ea.grad(ea.parse("def f(x: [N]):\n    y[i: N] = log(log(x[i]))\n    return y[0]\n"))
    x = np.array([1.0, 1.0])
    np.testing.assert_array_equal(g(x), [np.inf, np.nan])
    np.testing.assert_allclose(g(np.array([2.0, 3.0])), [1 / (2 * np.log(2)), 0.0])
    assert _fallbacks(g) == 1


def test_a_nan_hidden_by_a_comparison_is_not_trusted() -> None:
    """The unoptimized program's nan (a stored 0.0 times ``log(0)``) disappears in a data
    comparison, so the result is finite either way and only the bounds can tell: ``log`` of an
    argument that may be 0 is not proven finite, and the unoptimized program reruns."""
    src = ("def f(x: [N]):\n    t[i: N] = (i == 0) * 1\n    u[i: N] = t[i] * log(x[i])\n"
           "    return Sum[i: N](ge(u[i], 0))\n")
    prog = ea.parse(src)
    x = np.array([2.0, 0.0])
    want = evaluate(prog, x=x)
    assert want == 1.0  # ge(nan, 0) is false
    assert ea.compile(prog)(x) == want
    assert ea.compile(prog, optimize=False)(x) == want


def test_finite_calls_of_the_sweep_kind_stay_on_the_fast_path() -> None:
    """Softened potentials, logsumexp and a tanh layer are proven finite for ordinary inputs:
    no call falls back."""
    def nbody(x, m):
        d = x[:, None, :] - x[None, :, :]
        r2 = np.sum(d * d, axis=2) + 0.01
        return np.sum(m[:, None] * m[None, :] / np.sqrt(r2))

    def mlp(X, W, y):
        r = np.tanh(X @ W) - y
        return np.sum(r * r)

    lse = ea.parse("def lse(x: [B, N], w: [B]):\n    s[b: B] = log(Sum[n: N](exp(x[b, n])))\n"
                   "    return Sum[b: B](w[b] * s[b])\n")
    rng = np.random.default_rng(0)
    # (a generous time limit: on a starved machine the default 2 s of CPU can cut the search
    # before anything is rewritten, and the input program then runs unguarded)
    roomy = ea.Limits(seconds=30)
    g = ea.grad(nbody, wrt="x", limits=roomy)
    g(rng.standard_normal((6, 3)), rng.random(6) + 0.5)
    assert _fallbacks(g) == 0
    g = ea.grad(mlp, wrt="W", limits=roomy)
    # (sizes at which the optimized program is kept: at 4 x 3 x 2 the guard's pass over the
    # arguments costs more than the rewrites save, and the input program runs unguarded)
    g(rng.standard_normal((64, 3)), rng.standard_normal((3, 32)), rng.standard_normal((64, 32)))
    assert _fallbacks(g) == 0
    g = ea.grad(lse, limits=roomy)
    g(rng.standard_normal((3, 5)), rng.standard_normal(3))
    assert _fallbacks(g) == 0


def test_non_finite_arguments_rerun_the_unoptimized_program() -> None:
    g = ea.grad(ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i] * x[i])\n"))
    np.testing.assert_array_equal(g(np.array([np.inf, 1.0])), [np.inf, 2.0])
    assert _fallbacks(g) == 1


@pytest.mark.parametrize("src, ranges, sizes, proven", [
    ("def f(x: [N]):\n    return Sum[i: N](1 / sqrt(x[i] * x[i] + 0.01))\n",
     {"x": (-3.0, 3.0)}, {"N": 4}, True),
    ("def f(x: [N]):\n    return Sum[i: N](1 / x[i])\n", {"x": (-3.0, 3.0)}, {"N": 4}, False),
    ("def f(x: [N]):\n    return Sum[i: N](1 / x[i])\n", {"x": (0.5, 3.0)}, {"N": 4}, False),
    ("def f(x: [N]):\n    y[i: N] = 1 / (1 + exp(x[i]))\n    return y\n",
     {"x": (-3.0, 3.0)}, {"N": 4}, True),
    ("def f(x: [N]):\n    return Sum[i: N](exp(x[i]))\n", {"x": (0.0, 800.0)}, {"N": 4}, False),
    ("def f(x: [N]):\n    return Sum[i: N](x[i] ** 0.5)\n", {"x": (-1.0, 2.0)}, {"N": 4}, False),
    ("def f(x: [N]):\n    return Sum[i: N](x[i] ** 3)\n", {"x": (-1e200, 2.0)}, {"N": 4}, False),
    ("def f(x: [N]):\n    return Sum[i: N](log(x[i] ** 2 + 1))\n", {"x": (-5.0, 2.0)}, {"N": 4},
     True),
])
def test_interval_bounds(src: str, ranges: dict, sizes: dict, proven: bool) -> None:
    """``1 / x`` with x in [0.5, 3] is not proven: a read outside ``x`` is 0."""
    assert program_is_finite(ea.parse(src), ranges, sizes) is proven


def _every_statement(prog: Program) -> Program:
    names = tuple(s.name for s in prog.statements)
    return Program(prog.params, prog.statements, (*prog.outputs, *(Access(n) for n in names)),
                   True, prog.name)


def test_interval_bounds_are_sound_on_generated_programs() -> None:
    """Where the bounds prove a program finite, the interpreter finds every statement, output
    and naive adjoint value finite (the fuzzer's index programs, finite and extreme inputs)."""
    rng = np.random.default_rng(12)
    proven = 0
    for _ in range(60):
        case = generate_index(rng)
        prog = ea.parse(case.source)
        progs = [prog]
        floats = [p.name for p in prog.params if p.kind == "tensor"]
        if floats and not prog.returns_tuple:
            try:
                progs.append(ea.vjp(prog, wrt=floats))
            except ea.EqsatError:
                pass
        for kind in ("finite", "extreme"):
            inputs = draw_inputs(case, kind, rng)
            ranges = {n: (float(np.min(v, initial=0)), float(np.max(v, initial=0)))
                      for n, v in inputs.items() if n not in case.relations}
            for p in progs:
                args: dict = dict(inputs)
                for q in p.params:  # the cotangent: ones (within the bounds given to none)
                    if q.name not in args:
                        args[q.name] = np.ones([dim_value(d, case.sizes) for d in q.shape])
                        ranges[q.name] = (1.0, 1.0)
                if not program_is_finite(p, ranges, dict(case.sizes)):
                    continue
                proven += 1
                values = evaluate(_every_statement(p), **args)
                for v in values:
                    assert np.all(np.isfinite(np.asarray(v, dtype=float))), case.source
    assert proven >= 20


def test_the_numba_backend_reruns_the_unoptimized_program_too() -> None:
    """Compiled loops cannot watch their intermediate values: the Numba backend keeps a call
    where the unoptimized program is proven finite and the result is finite."""
    pytest.importorskip("numba")
    p = ea.parse("def f(x: [N]):\n    y[i: N] = log(log(x[i]))\n    return y[0]\n")
    g = ea.grad(p, backend="numba")
    np.testing.assert_array_equal(g(np.array([1.0, 1.0])), [np.inf, np.nan])
    np.testing.assert_allclose(g(np.array([2.0, 3.0])), [1 / (2 * np.log(2)), 0.0])
    assert g.compiled.fallback.calls == 1


def test_an_empty_call_reruns_the_unoptimized_program() -> None:
    """At N = 0 a call is evaluated by the interpreter: of the unoptimized program, whose
    ``t1[N]`` is a stored (out-of-range) 0.0, so ``/ 0.0`` is nan."""
    p = ea.parse("def f(A: [N, N]):\n    t1[i: N] = 1.0\n    return t1[N] / 0.0\n")
    a = np.zeros((0, 0))
    assert np.isnan(evaluate(p, A=a))
    assert np.isnan(ea.compile(p)(a))


def test_code_the_rewrites_left_unchanged_runs_unguarded(monkeypatch) -> None:
    """The gradient of ``x^T A x`` lowers to the same code optimized or not (only the
    statements' comments differ): a call runs the unoptimized program's code as optimize=False
    does, exact on every value, so no guard scans its arguments, and an inf in ``A`` gives what
    the interpreter gives."""
    from eqsat_ad.backend import guard

    def no_scan(*args):
        raise AssertionError("the guard scanned an argument")

    monkeypatch.setattr(guard, "_magnitudes", no_scan)
    monkeypatch.setattr(guard, "_refined", no_scan)
    prog = ea.parse("def quad(A: [N, N], x: [N]):\n"
                    "    return Sum[i: N, j: N](x[i] * A[i, j] * x[j])\n")
    g = ea.grad(prog, wrt="x")
    a = np.array([[1.0, np.inf], [2.0, 3.0]])
    x = np.array([1.0, 0.0])
    assert g.report.same_code
    want = evaluate(ea.vjp(prog, wrt="x"), A=a, x=x, ybar=1.0)
    np.testing.assert_array_equal(g(a, x), want)
    assert g.compiled.fallback.calls == 0


def test_only_the_arguments_the_programs_read_are_scanned(monkeypatch) -> None:
    """``Σ_i (i == 0) * exp(x[i]) * w[i]`` differentiated in ``w`` reads ``x`` only: the guard
    scans ``x`` (one pass for a magnitude bound), never ``w``, whose inf does not matter."""
    from eqsat_ad.backend import guard

    prog = ea.parse("def f(x: [N], w: [N]):\n"
                    "    t[i: N] = exp(x[i])\n    return Sum[i: N](t[i] * w[i] * (i == 0))\n")
    g = ea.grad(prog, wrt="w")
    scanned: list[tuple[str, ...]] = []
    real = guard._magnitudes

    def spy(p, arrays, read, exact=frozenset()):
        out = real(p, arrays, read, exact)
        if out is not None:  # w's inf, scanned, would give it an infinite bound
            assert out["w"] == (0.0, 0.0), out
            scanned.append(tuple(sorted(n for n, b in out.items() if b != (0.0, 0.0))))
        return out

    monkeypatch.setattr(guard, "_magnitudes", spy)
    x, w = np.array([0.5, -0.25, 1.0]), np.array([1.0, np.inf, 2.0])
    want = evaluate(ea.vjp(prog, wrt="w"), x=x, w=w, ybar=1.0)
    assert g.compiled.fallback is not None  # (the optimizer inlined t: a guarded fast path)
    np.testing.assert_array_equal(g(x, w), want)
    assert scanned and all(names == ("x",) for names in scanned), scanned


def test_a_program_proven_finite_both_ways_skips_the_result_scan(monkeypatch) -> None:
    """When the bounds prove the optimized program finite as well as the unoptimized one, the
    call neither watches IEEE flags nor scans its result; values are the interpreter's."""
    from eqsat_ad.backend import guard, runtime

    src = ("def f(x: [N]):\n    y[i: N] = log(log(x[i]))\n    return y[0]\n")
    prog = ea.parse(src)
    g = ea.grad(prog)
    assert g.compiled.fallback is not None
    scans = count_calls(monkeypatch, "finite_result", runtime)
    x = np.array([3.0, 4.0])
    assert guard.proven_finite(g.compiled.fallback, g.compiled.program, [x], {"N": 2}) == \
        guard.PROVEN_BOTH
    want = evaluate(ea.vjp(prog, wrt="x"), x=x, ybar=1.0)
    np.testing.assert_allclose(g(x), want, rtol=1e-15)
    assert scans["n"] == 0 and g.compiled.fallback.calls == 0


def test_a_sparse_relation_argument_keeps_the_fast_path_on_exact_ranges() -> None:
    """``log`` needs the arguments' exact ranges (a magnitude bound, symmetric about 0, cannot
    prove it), and a relation passed by its members (not an array) is no tensor to scan: later
    calls keep the fast path rather than rerunning the unoptimized program."""
    from eqsat_ad.ir.relations import SparseRelation

    src = ("def f(M: rel[N, N], x: [N]):\n    t[i: N] = log(x[i])\n"
           "    return Sum[i: N, j: N](M[i, j] * t[i] * x[j] * (i == 0))\n")
    prog = ea.parse(src)
    g = ea.grad(prog, wrt="x")
    rel = SparseRelation((4, 4), np.nonzero(np.eye(4, k=1, dtype=bool)))
    x = np.linspace(1.0, 4.0, 4)
    for _ in range(3):
        got = g(rel, x)
    want = evaluate(ea.vjp(prog, wrt="x"), M=np.eye(4, k=1), x=x, ybar=1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    fallback = getattr(g.compiled, "fallback", None)
    assert fallback is not None and fallback.exact == {"x"} and fallback.calls == 0


def test_only_an_argument_whose_bound_falls_short_gets_its_exact_range(monkeypatch) -> None:
    """Softmax cross-entropy: the magnitude bound of ``z`` (the root of its sum of squares) is
    too wide to prove ``exp(z)`` finite, ``Y``'s is enough: the guard scans ``z``'s least and
    greatest entries and keeps one pass over ``Y`` (three passes a call, not four)."""
    from eqsat_ad.backend import guard

    def xent(z, Y):
        return np.sum(np.log(np.sum(np.exp(z), axis=1))) - np.sum(Y * z)

    rng = np.random.default_rng(3)
    z = 3 * rng.standard_normal((256, 64))
    Y = np.zeros((256, 64))
    Y[np.arange(256), rng.integers(0, 64, size=256)] = 1.0
    g = ea.grad(xent, wrt="z")
    want = ea.grad(xent, wrt="z", optimize=False)(z, Y)
    np.testing.assert_allclose(g(z, Y), want, rtol=1e-12)
    fallback = g.compiled.fallback
    assert fallback is not None and fallback.calls == 0
    assert fallback.exact == {"z"}
    exact: list[frozenset[str]] = []
    real = guard._magnitudes

    def spy(p, arrays, read, exact_names=frozenset()):
        exact.append(frozenset(exact_names))
        return real(p, arrays, read, exact_names)

    monkeypatch.setattr(guard, "_magnitudes", spy)
    monkeypatch.setattr(guard, "_refined", lambda *a: pytest.fail("a second proof was needed"))
    for _ in range(2):
        np.testing.assert_allclose(g(z, Y), want, rtol=1e-12)
    assert exact == [frozenset({"z"})] * 2 and fallback.calls == 0


def _mlp_np(X, W1, b1, W2, y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - y
    return 0.5 * np.sum(r * r)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_call_proven_finite_skips_the_fast_codes_product_checks(monkeypatch, backend) -> None:
    """Where the guard proves every value of both programs finite, the fast code's checks of
    its products (``_rt.checked(X @ W1)``: a pass over the product) could only pass: the
    call runs the same code without them. A call the guard cannot prove keeps them, and a
    non-finite argument still reruns the unoptimized program."""
    if backend == "numba":
        pytest.importorskip("numba")
    from eqsat_ad.backend import guard, runtime
    from eqsat_ad.backend import numpy as numpy_backend

    g = ea.grad(_mlp_np, wrt=("W1", "b1", "W2"), backend=backend)
    rng = np.random.default_rng(7)
    args = {"X": rng.standard_normal((6, 5)), "W1": rng.standard_normal((5, 8)),
            "b1": rng.standard_normal(8), "W2": rng.standard_normal((8, 3)),
            "y": rng.standard_normal((6, 3))}
    g(**args)  # compiles
    checks = count_calls(monkeypatch, "checked", runtime)
    decided = {"level": None}
    proven = guard.proven_finite

    def watching(*a):
        decided["level"] = proven(*a)
        return decided["level"]

    monkeypatch.setattr(numpy_backend, "proven_finite", watching)
    if backend == "numba":
        from eqsat_ad.backend.fused import checks as fused_checks

        monkeypatch.setattr(fused_checks, "proven_finite", watching)
    want = evaluate(g.program, **args)
    got = g(**args)
    assert decided["level"] == guard.PROVEN_BOTH and checks["n"] == 0
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # too large to prove (X @ W1 may overflow as far as the bounds know): the checks run
    big = {**args, "X": args["X"] * 1e150, "W1": args["W1"] * 1e150}
    got = g(**big)
    assert decided["level"] != guard.PROVEN_BOTH and checks["n"] > 0
    want = evaluate(g.program, **big)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)
    bad = {**args, "W2": args["W2"].copy()}
    bad["W2"][2, 1] = np.inf
    got = g(**bad)
    want = evaluate(g.program, **bad)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
