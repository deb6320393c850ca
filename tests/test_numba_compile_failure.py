"""A kernel Numba fails to compile (a Numba defect, not the program's) leaves the program to the
NumPy backend's code, with one warning, instead of an internal traceback
(backend/fused/loading.give_up_loops); and reads at constant indices, whose guards once
triggered such a failure, are decided when the kernel is written (backend/fused/loops.py)."""

from __future__ import annotations

import re
import types
import warnings

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.api import gradient_program
from eqsat_ad.backend.fused.program import NumbaProgram
from eqsat_ad.ir.interpreter import evaluate

numba = pytest.importorskip("numba")

# fuzz seed 3031, case 113 (the forward program the NumPy front end wrote): Numba 0.68 failed
# to type the output's kernel ("Type of variable '$430binary_subscr.6' cannot be determined"),
# with arrays named t and t4 and constant branch conditions (y[0] if 0 < 2 else 0). The loop
# writer now decides guards on constant indices itself, so the kernel compiles.
SEED_3031_CASE_113 = """def f(A: [3, 3], y: [2]):
    t = Sum[i: 3](A[i, i])
    t1 = Sum[i: 3](A[i, i])
    t2 = Sum[i: 3](A[i, i])
    t3 = Sum[i: 3](A[i, i])
    t4 = ge(t1, min(max(t, -1), 1)) * t3 + nge(t1, min(max(t, -1), 1)) * (y[1] + t2)
    t5[i: 2, j: 3] = log(max(A[2*i, j], y[1]))
    t6[i: 1] = min(y[i] ** 2, y[i + 1])
    t7 = Sum[i: 3](A[i, i])
    t8 = Sum[i: 2](y[i])
    return ge(y[0], gt(y[1], t7) * t4 + ngt(y[1], t7) * t6[0]) * t6[0] + nge(y[0], gt(y[1], t7) * t4 + ngt(y[1], t7) * t6[0]) * t8
"""  # noqa: E501

STENCIL = """
def f(x: [N]):
    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
    return Sum[i: N](d[i] ** 2)
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_fuzzed_program_numba_could_not_type_runs_its_loops(dtype) -> None:
    prog = ea.parse(SEED_3031_CASE_113)
    f = ea.compile(prog, backend="numba")
    g = ea.grad(prog, wrt=("A", "y"), backend="numba")
    # no guard on a constant index is left for Numba to prune ("0 < 2", "if True")
    assert not re.search(r"\b\d+ <=? \d+\b|if (True|False)\b", f.source + g.source)
    rng = np.random.default_rng(0)
    for _ in range(3):
        args = {"A": rng.standard_normal((3, 3)).astype(dtype),
                "y": rng.standard_normal(2).astype(dtype)}
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (the fallback's warning)
            got = f(**args)
            grads = g(**args)
        assert got == pytest.approx(float(evaluate(prog, **args)), rel=1e-5)
        wants = evaluate(gradient_program(prog, ("A", "y"), as_tuple=True), **args)
        for gr, w in zip(grads, wants, strict=True):
            np.testing.assert_allclose(gr, w, rtol=1e-5, atol=1e-6)
    for compiled in (f.compiled, g.compiled):
        assert isinstance(compiled, NumbaProgram) and not compiled.numpy_only


CONSTANT_READS = """
def f(x: [N], w: [3]):
    y[i: N] = x[i] * x[0] + w[2] * x[i] + w[3]
    return Sum[i: N](y[i] * y[i])
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reads_at_constant_indices_carry_no_guard(dtype) -> None:
    # x[0] is inside x at every size a loop nest runs at (N >= 1: an empty x runs the NumPy
    # backend's code), w[2] inside w, w[3] outside it: an ordinary 0 (the interpreter's)
    prog = ea.parse(CONSTANT_READS)
    f = ea.compile(prog, backend="numba")
    g = ea.grad(prog, wrt=("x", "w"), backend="numba")
    for compiled in (f.compiled, g.compiled):
        assert "loop" in compiled.schedule.placement.values()
    assert "x[0]" in f.source and "w[2]" in f.source and "w[3]" not in f.source
    assert not re.search(r"if \d+ <=? (N|\d+)\b|if (True|False)\b", f.source + g.source)
    for n in (1, 2, 7):
        rng = np.random.default_rng(n)
        args = {"x": rng.standard_normal(n).astype(dtype),
                "w": rng.standard_normal(3).astype(dtype)}
        assert f(**args) == pytest.approx(float(evaluate(prog, **args)), rel=1e-5)
        wants = evaluate(gradient_program(prog, ("x", "w"), as_tuple=True), **args)
        for got, want in zip(g(**args), wants, strict=True):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    empty = {"x": np.zeros(0, dtype), "w": np.ones(3, dtype)}
    assert f(**empty) == float(evaluate(prog, **empty))


@pytest.mark.parametrize("name", ["x", "out"])  # (a parameter named out: an input, as written)
def test_a_kernel_numba_cannot_compile_falls_back_to_numpy_once(monkeypatch, name) -> None:
    g = ea.grad(ea.parse(STENCIL.replace("x", name)), wrt=name, backend="numba")
    compiled = g.compiled
    assert isinstance(compiled, NumbaProgram) and not compiled.numpy_only
    tries = []

    def broken(self: NumbaProgram, dtype: np.dtype) -> types.ModuleType:
        def run(*args: object) -> None:
            tries.append(1)
            raise numba.core.errors.TypingError("injected: cannot determine a variable's type")
        return types.SimpleNamespace(run=run)  # type: ignore[return-value]

    monkeypatch.setattr(NumbaProgram, "_module", broken)
    arg = {name: np.random.default_rng(1).standard_normal(500)}
    want = evaluate(g.program, **arg)
    with pytest.warns(RuntimeWarning, match="Numba could not compile the loops of .*injected"):
        got = g(**arg)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert tries == [1] and compiled.numpy_only
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, no second try
        np.testing.assert_allclose(g(**arg), want, rtol=1e-12)
        if name == "x":
            buf = np.empty(500)
            assert g(**arg, out=buf) is buf
            np.testing.assert_allclose(buf, want, rtol=1e-12)
    assert tries == [1]
