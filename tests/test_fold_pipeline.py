"""Folds through the whole pipeline: the NumPy front end makes them, the optimizer optimizes each
body once, the backend runs them; numbers against hand-written loops and finite differences."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from test_fold import RNN

import eqsat_ad as ea
from eqsat_ad.ad import jvp, vjp
from eqsat_ad.api import gradient_program
from eqsat_ad.backend.fold import compile_any
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir import Fold
from eqsat_ad.ir.interpreter import evaluate


def rnn(W, h0):
    h = h0
    for _t in range(100):
        h = np.tanh(W @ h)
    return np.sum(h * h)


def rnn_inputs(W, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return np.sum(h)


def ema(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = 0.99 * s + x[i]
    return s * s


def shifted(x):
    s = 1.0
    for i in range(x.shape[0] - 1):
        s = np.sin(s) * x[i + 1]
    return s


def count(x):
    c = 0.0
    for i in range(100):
        c = c + x[i] * x[i]
    return c


def _fd(f, args: list[np.ndarray], k: int, d: np.ndarray, eps: float = 1e-6) -> float:
    hi, lo = list(args), list(args)
    hi[k], lo[k] = args[k] + eps * d, args[k] - eps * d
    return (f(*hi) - f(*lo)) / (2 * eps)


def _folds(prog) -> int:
    return sum(isinstance(s, Fold) for s in prog.statements)


def test_numpy_recurrences_become_folds() -> None:
    p = translate(rnn, {"W": (3, 3), "h0": (3,)})
    assert _folds(p) == 1
    q = translate(ema, {"x": ("N",)})
    assert _folds(q) == 1 and q.folds[0].scan == ("x",)
    assert parse(str(q)) == q
    # an accumulation stays a sum, not a fold
    assert _folds(translate(count, {"x": (100,)})) == 0
    rng = np.random.default_rng(0)
    W, h0, x = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=40)
    assert evaluate(p, W, h0) == pytest.approx(rnn(W, h0), rel=1e-12)
    assert evaluate(q, x) == pytest.approx(ema(x), rel=1e-12)
    r = translate(shifted, {"x": (100,)})  # 99 steps, each reading x[i + 1]: a shifted slice
    assert _folds(r) == 1
    x = rng.normal(size=100)
    assert evaluate(r, x) == pytest.approx(shifted(x), rel=1e-12)


def test_program_size_does_not_grow_with_the_trip_count() -> None:
    sizes = []
    for steps in (70, 700, 7000):
        def loop(W, h0, steps=steps):
            h = h0
            for _t in range(steps):
                h = np.tanh(W @ h)
            return np.sum(h)
        g = ea.grad(loop, wrt=("W",), optimize=False)
        g(np.eye(2), np.ones(2))
        sizes.append((len(g.program.statements), sum(len(f.body.statements)
                                                     for f in g.program.folds)))
    assert sizes[0] == sizes[1] == sizes[2]


def test_each_body_is_optimized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    optimize_module = importlib.import_module("eqsat_ad.egraph.optimize")
    calls: list[str] = []
    real = optimize_module._optimize

    def counting(prog, *args, **kwargs):
        calls.append(prog.name)
        return real(prog, *args, **kwargs)

    monkeypatch.setattr(optimize_module, "_optimize", counting)
    result = optimize_module.optimize(vjp(parse(RNN), ["W", "x"]), cache=False)
    # the forward body, the adjoint body, the statements around them: three e-graphs
    assert sorted(calls) == sorted(["step", "step_vjp", "f_vjp"])
    assert _folds(result.program) == 2
    assert "Fold[T]" in str(result.report)


def test_compiled_fold_matches_the_interpreter() -> None:
    p = parse(RNN)
    v = vjp(p, ["W", "h0", "x"])
    rng = np.random.default_rng(1)
    for t in (0, 1, 9):
        W, h0, x = rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=(t, 4))
        assert compile_any(p)(W, h0, x) == pytest.approx(evaluate(p, W, h0, x), rel=1e-12)
        for a, b in zip(compile_any(v)(W, h0, x, 1.0), evaluate(v, W, h0, x, 1.0),
                        strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_nonfinite_steps_follow_the_interpreter() -> None:
    p = parse(RNN)
    W, h0 = np.eye(2), np.array([np.inf, 1.0])
    x = np.zeros((3, 2))
    expected = evaluate(p, W, h0, x)
    assert not np.isfinite(expected) or expected != expected  # the case is non-finite
    np.testing.assert_equal(compile_any(p)(W, h0, x), expected)


def test_gradients_through_numpy_folds_match_finite_differences() -> None:
    rng = np.random.default_rng(2)
    W, h0 = rng.normal(size=(5, 5)) * 0.4, rng.normal(size=5)
    gW, gh = ea.grad(rnn, wrt=("W", "h0"))(W, h0)
    dW, dh = rng.normal(size=W.shape), rng.normal(size=h0.shape)
    assert float((gW * dW).sum()) == pytest.approx(_fd(rnn, [W, h0], 0, dW), rel=1e-5)
    assert float(gh @ dh) == pytest.approx(_fd(rnn, [W, h0], 1, dh), rel=1e-5, abs=1e-12)
    x = rng.normal(size=(30, 5))
    gx = ea.grad(rnn_inputs, wrt=("x",))(W, x, h0)
    dx = rng.normal(size=x.shape)
    assert float((gx * dx).sum()) == pytest.approx(_fd(rnn_inputs, [W, x, h0], 1, dx), rel=1e-5)


def test_one_compilation_for_every_trip_count() -> None:
    g = ea.grad(ema, shapes={"x": ("N",)})
    rng = np.random.default_rng(3)
    for n in (5, 50, 500):
        x = rng.normal(size=n)
        dx = rng.normal(size=n)
        assert float(g(x) @ dx) == pytest.approx(_fd(ema, [x], 0, dx), rel=1e-6)
    assert len(g.specializations) == 1


def test_hessian_vector_product_through_a_numpy_fold() -> None:
    rng = np.random.default_rng(4)
    W, h0 = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3)
    grad = ea.grad(rnn, wrt="h0")
    dh = rng.normal(size=3)
    eps = 1e-5
    fd = (grad(W, h0 + eps * dh) - grad(W, h0 - eps * dh)) / (2 * eps)
    prog = translate(rnn, {"W": (3, 3), "h0": (3,)})
    hvp = jvp(gradient_program(prog, ["h0"]), ["h0"])
    np.testing.assert_allclose(evaluate(hvp, W, h0, dh), fd, rtol=1e-5, atol=1e-9)


def test_jvp_and_vjp_of_a_numpy_function_with_a_fold() -> None:
    rng = np.random.default_rng(5)
    W, h0 = rng.normal(size=(4, 4)) * 0.5, rng.normal(size=4)
    dW, dh = rng.normal(size=(4, 4)), rng.normal(size=4)
    value, tangent = ea.jvp(rnn, (W, h0), (dW, dh))
    assert value == pytest.approx(rnn(W, h0), rel=1e-12)
    fd = (rnn(W + 1e-6 * dW, h0 + 1e-6 * dh) - rnn(W - 1e-6 * dW, h0 - 1e-6 * dh)) / 2e-6
    assert tangent == pytest.approx(fd, rel=1e-5, abs=1e-12)
    value, pullback = ea.vjp(rnn, W, h0)
    gW, gh = pullback(1.0)
    # the adjoint identity against the jvp
    assert float((gW * dW).sum() + gh @ dh) == pytest.approx(tangent, rel=1e-9, abs=1e-14)


def test_folds_keep_only_what_the_optimized_program_reads() -> None:
    # EMA's adjoint body does not read the saved states: the forward loop stops stacking them,
    # and the reverse loop is passed neither the states nor x
    g = ea.grad(ema, shapes={"x": ("N",)})
    x = np.random.default_rng(6).normal(size=20)
    g(x)
    forward, backward = g.program.folds
    assert len(forward.names) == 1 and backward.scan == () and backward.const == ()
    naive_forward, naive_backward = g.naive.folds
    assert len(naive_forward.names) == 2 and len(naive_backward.scan) == 2
