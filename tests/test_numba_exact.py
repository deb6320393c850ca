"""The Numba backend runs unguarded where the optimized program is the unoptimized one on every
value (its NumPy code, fast and strict, is the same): no pass over the arguments (the peers'
diag workload: 0.78 ms of a 0.012 ms call was the guard's scan of an N x N argument)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.examples import example
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from numba_inputs import ROOMY, count_guard_calls  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
TV = importlib.import_module("fused_programs").PROGRAMS["tv"].source


def test_the_same_program_runs_unguarded_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_guard_calls(monkeypatch)
    prog = ea.parse(TV)  # the rewrites change no code of the gradient at these sizes
    g = ea.grad(prog, wrt="u", backend="numba", limits=ROOMY)
    rng = np.random.default_rng(0)
    u = rng.normal(size=(6, 5))
    u[0, 1], u[2, 3], u[5, 4] = np.inf, np.nan, -np.inf  # read, and the corner no term reads
    got = g(u=u)
    assert "loop" in g.compiled.schedule.placement.values()
    assert g.compiled.fallback is not None and g.compiled._exact([u], {"H": 6, "W": 5})
    assert calls["n"] == 0  # no guard: nothing to prove
    want = evaluate(ea.vjp(prog, "u"), u=u, **{"ybar": 1.0})
    np.testing.assert_array_equal(got, want)


def test_a_program_that_only_moves_data_runs_unguarded(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """E3's gradient reads B's diagonal, its unoptimized form a stored copy of B times a
    bracket: both only move data (ir/selection.py), so inf and nan give both the same values
    and no call is guarded."""
    calls = count_guard_calls(monkeypatch)
    prog = example("E3").program()
    g = ea.grad(prog, wrt="x", backend="numba", limits=ROOMY)
    assert g.compiled.fallback is None
    rng = np.random.default_rng(0)
    x, b = rng.normal(size=6), rng.normal(size=(6, 6))
    b[0, 1], b[2, 3], b[4, 4], b[5, 5] = np.inf, np.nan, -np.inf, np.nan  # off and on the diagonal
    got = g(x=x, B=b)
    assert g.compiled.schedule.placement == {"x_bar": "loop"}
    assert calls["n"] == 0
    want = evaluate(ea.vjp(prog, "x"), x=x, B=b, **{"ybar": 1.0})
    np.testing.assert_array_equal(got, want)


def test_rewritten_code_stays_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_guard_calls(monkeypatch)
    prog = ea.parse("def f(x: [N], w: []):\n    y[i: N] = w * x[i] + w * x[i]\n"
                    "    return Sum[i: N](y[i] * y[i])\n")
    g = ea.grad(prog, wrt="x", backend="numba", limits=ROOMY)
    x = np.linspace(-1.0, 1.0, 7)
    got = g(x=x, w=1.5)
    if g.compiled.numpy_only:
        pytest.skip("no loop nest here: the NumPy backend's own guard applies")
    assert not g.compiled._exact([x, np.asarray(1.5)], {"N": 7})
    assert calls["n"] > 0  # the optimized code differs: the guard decides
    np.testing.assert_allclose(got, evaluate(ea.vjp(prog, "x"), x=x, w=1.5, ybar=1.0))
