"""The Numba backend runs unguarded where the optimized program is the unoptimized one on every
value (its NumPy code, fast and strict, is the same): no pass over the arguments (the peers'
diag workload: 0.78 ms of a 0.012 ms call was the guard's scan of an N x N argument)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.examples import example
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from numba_inputs import count_guard_calls  # noqa: E402


def test_the_same_program_runs_unguarded_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_guard_calls(monkeypatch)
    prog = example("E3").program()  # x_bar[i] = B[i, i]: the rewrites change no code
    g = ea.grad(prog, wrt="x", backend="numba")
    rng = np.random.default_rng(0)
    x, b = rng.normal(size=6), rng.normal(size=(6, 6))
    b[0, 1], b[2, 3], b[4, 4] = np.inf, np.nan, -np.inf  # off the diagonal, and on it
    got = g(x=x, B=b)
    assert g.compiled.schedule.placement == {"x_bar": "loop"}
    assert g.compiled._exact([x, b], {"N": 6})
    assert calls["n"] == 0  # no guard: nothing to prove
    want = evaluate(ea.vjp(prog, "x"), x=x, B=b, **{"ybar": 1.0})
    np.testing.assert_array_equal(got, want)


def test_rewritten_code_stays_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_guard_calls(monkeypatch)
    prog = ea.parse("def f(x: [N], w: []):\n    y[i: N] = w * x[i] + w * x[i]\n"
                    "    return Sum[i: N](y[i] * y[i])\n")
    g = ea.grad(prog, wrt="x", backend="numba")
    x = np.linspace(-1.0, 1.0, 7)
    got = g(x=x, w=1.5)
    if g.compiled.numpy_only:
        pytest.skip("no loop nest here: the NumPy backend's own guard applies")
    assert not g.compiled._exact([x, np.asarray(1.5)], {"N": 7})
    assert calls["n"] > 0  # the optimized code differs: the guard decides
    np.testing.assert_allclose(got, evaluate(ea.vjp(prog, "x"), x=x, w=1.5, ybar=1.0))
