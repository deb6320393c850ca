"""Compiled folds (issue 11): the per-step call of a fold's body does not look at its arguments'
float types again (counted, not timed), and results match the interpreter in every float type."""

from __future__ import annotations

import numpy as np
import pytest
from test_fold import EMA

from eqsat_ad.ad import vjp
from eqsat_ad.backend import runtime
from eqsat_ad.backend.fold import FoldProgram
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir.interpreter import evaluate

RNN = '''
def f(W: [N, N], h0: [N], x: [T, N]):
    def step(h: [N], xt: [N], W: [N, N]):
        hn[i: N] = tanh(Sum[j: N](W[i, j] * h[j]) + xt[i])
        return (hn,)
    h = Fold[T](step, carry=(h0,), scan=(x,), const=(W,))
    return Sum[i: N](h[i] * h[i])
'''


def _counting(monkeypatch) -> list[int]:
    calls = [0]
    original = runtime.float_type

    def counted(*arrays):
        calls[0] += 1
        return original(*arrays)

    monkeypatch.setattr(runtime, "float_type", counted)
    return calls


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ema_gradient_steps_do_not_recompute_the_float_type(monkeypatch, dtype) -> None:
    grad = vjp(parse(EMA), ["x", "a"])
    compiled = FoldProgram(grad)
    x = np.random.default_rng(0).normal(size=200).astype(dtype)
    calls = _counting(monkeypatch)
    gx, ga = compiled(x, 0.9, 1.0)
    assert calls[0] < 20  # the segments and one look per fold, not one per step (400 steps)
    want_x, want_a = evaluate(grad, x.astype(np.float64), 0.9, 1.0)
    np.testing.assert_allclose(gx, want_x, rtol=1e-5 if dtype == np.float32 else 1e-12)
    assert float(ga) == pytest.approx(float(want_a), rel=1e-5)


def test_rnn_fold_with_array_states_matches_the_interpreter(monkeypatch) -> None:
    prog = parse(RNN)
    grad = vjp(prog, ["W", "h0"])
    rng = np.random.default_rng(1)
    args = {"W": rng.normal(size=(4, 4)) * 0.5, "h0": rng.normal(size=4),
            "x": rng.normal(size=(30, 4))}
    calls = _counting(monkeypatch)
    got = FoldProgram(grad)(**args, **{grad.params[-1].name: 1.0})
    assert calls[0] < 20
    want = evaluate(grad, **args, **{grad.params[-1].name: 1.0})
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
