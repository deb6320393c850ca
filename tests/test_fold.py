"""Rolled loops (Fold): the index-language syntax, the interpreter, jvp / vjp / Hessian-vector
products through a fold, all checked against numbers."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat_ad.ad import hessian_program, jvp, vjp
from eqsat_ad.api import gradient_program
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import Fold, ProgramError
from eqsat_ad.ir.interpreter import evaluate

RNN = '''
def f(W: [N, N], h0: [N], x: [T, N]):
    def step(h: [N], xt: [N], W: [N, N]):
        hn[i: N] = tanh(Sum[j: N](W[i, j] * h[j]) + xt[i])
        return hn, Sum[i: N](hn[i])
    h, s = Fold[T](step, carry=(h0,), scan=(x,), const=(W,))
    return Sum[i: N](h[i] * h[i]) + Sum[t: T](s[t] * s[t])
'''

EMA = '''
def ema(x: [T], a: []):
    def step(s: [], xt: [], a: []):
        return (a * s + xt,)
    z = 0
    s = Fold[T](step, carry=(z,), scan=(x,), const=(a,))
    return s * s
'''


def _rnn_hand(W: np.ndarray, h0: np.ndarray, x: np.ndarray) -> float:
    h, tot = h0, 0.0
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
        tot += h.sum() ** 2
    return float(h @ h + tot)


def _args(rng: np.random.Generator, n: int = 3, t: int = 5) -> dict[str, np.ndarray]:
    return {"W": rng.normal(size=(n, n)) * 0.7, "h0": rng.normal(size=n),
            "x": rng.normal(size=(t, n))}


def test_print_parse_roundtrip() -> None:
    p = parse(RNN)
    assert any(isinstance(s, Fold) for s in p.statements)
    assert "Fold[T](step, carry=(h0,), scan=(x,), const=(W,))" in str(p)
    assert parse(str(p)) == p
    for q in (vjp(p, ["W", "h0", "x"]), jvp(p, ["W", "x"]), parse(EMA)):
        assert parse(str(q)) == q


@pytest.mark.parametrize("t", [0, 1, 6])
def test_interpreter_matches_a_python_loop(t: int) -> None:
    a = _args(np.random.default_rng(t), t=t)
    assert evaluate(parse(RNN), **a) == pytest.approx(_rnn_hand(**a), rel=1e-12)
    x = np.random.default_rng(1).normal(size=t)
    s = 0.0
    for v in x:
        s = 0.9 * s + v
    assert evaluate(parse(EMA), x, 0.9) == pytest.approx(s * s, rel=1e-12, abs=1e-300)


def test_vjp_matches_central_differences() -> None:
    rng = np.random.default_rng(0)
    p, a = parse(RNN), _args(rng)
    grads = evaluate(vjp(p, ["W", "h0", "x"]), **a, ybar=1.0)
    eps = 1e-6
    for g, name in zip(grads, ["W", "h0", "x"], strict=True):
        d = rng.normal(size=a[name].shape)
        hi, lo = dict(a), dict(a)
        hi[name], lo[name] = a[name] + eps * d, a[name] - eps * d
        fd = (_rnn_hand(**hi) - _rnn_hand(**lo)) / (2 * eps)
        assert float((g * d).sum()) == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_adjoint_identity_on_a_tensor_output() -> None:
    # <ybar, J v> = <J^T ybar, v> for a program returning the stacked states
    src = '''
def g(W: [N, N], h0: [N]):
    def step(h: [N], W: [N, N]):
        hn[i: N] = sin(Sum[j: N](W[i, j] * h[j]))
        return hn, hn
    h, hs = Fold[4](step, carry=(h0,), const=(W,))
    return hs
'''
    p = parse(src)
    rng = np.random.default_rng(3)
    W, h0 = rng.normal(size=(3, 3)), rng.normal(size=3)
    dW, dh = rng.normal(size=(3, 3)), rng.normal(size=3)
    ybar = rng.normal(size=(4, 3))
    jv = evaluate(jvp(p, ["W", "h0"]), W, h0, dW, dh)
    gW, gh = evaluate(vjp(p, ["W", "h0"]), W, h0, ybar)
    assert float((ybar * jv).sum()) == pytest.approx(float((gW * dW).sum() + gh @ dh),
                                                     rel=1e-10)


def test_ema_gradient_and_jvp() -> None:
    p = parse(EMA)
    rng = np.random.default_rng(2)
    x, a = rng.normal(size=7), 0.8
    gx, ga = evaluate(vjp(p, ["x", "a"]), x, a, 1.0)
    eps = 1e-6
    dx = rng.normal(size=7)
    fdx = (evaluate(p, x + eps * dx, a) - evaluate(p, x - eps * dx, a)) / (2 * eps)
    fda = (evaluate(p, x, a + eps) - evaluate(p, x, a - eps)) / (2 * eps)
    assert float(gx @ dx) == pytest.approx(fdx, rel=1e-6)
    assert float(ga) == pytest.approx(fda, rel=1e-6)
    assert evaluate(jvp(p, ["x", "a"]), x, a, dx, 1.0) == pytest.approx(fdx + fda, rel=1e-6)


def test_hessian_vector_product_is_jvp_of_the_gradient() -> None:
    p = parse(RNN)
    rng = np.random.default_rng(4)
    a = _args(rng)
    grad = gradient_program(p, ["W"])
    hvp = jvp(grad, ["W"])
    dW = rng.normal(size=a["W"].shape)
    eps = 1e-5
    fd = (evaluate(grad, a["W"] + eps * dW, a["h0"], a["x"])
          - evaluate(grad, a["W"] - eps * dW, a["h0"], a["x"])) / (2 * eps)
    np.testing.assert_allclose(evaluate(hvp, **a, W_dot=dW), fd, rtol=1e-6, atol=1e-8)
    # the symbolic Hessian contracted with dW is the same product
    H = evaluate(hessian_program(p, "W"), **a)
    np.testing.assert_allclose(np.einsum("ijkl,kl->ij", H, dW), fd, rtol=1e-6, atol=1e-8)


def test_adjoint_size_does_not_depend_on_the_trip_count() -> None:
    # the trip count is a size symbol: one program (and one adjoint) for every T
    p = parse(RNN)
    v = vjp(p, ["W"])
    assert sum(isinstance(s, Fold) for s in v.statements) == 2
    assert len(v.statements) < 12


def test_fold_inside_a_larger_program() -> None:
    src = '''
def g(A: [N, N], b: [N], x: [T, N]):
    h0[i: N] = Sum[j: N](A[i, j] * b[j])
    def step(h: [N], xt: [N], A: [N, N]):
        hn[i: N] = tanh(Sum[j: N](A[i, j] * h[j]) * xt[i])
        return (hn,)
    h = Fold[T](step, carry=(h0,), scan=(x,), const=(A,))
    y[i: N] = h[i] * b[i]
    return Sum[i: N](y[i] * y[i])
'''
    p = parse(src)
    rng = np.random.default_rng(5)
    A, b, x = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(4, 3))

    def hand(A: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
        h = A @ b
        for t in range(x.shape[0]):
            h = np.tanh((A @ h) * x[t])
        return float(((h * b) ** 2).sum())

    assert evaluate(p, A, b, x) == pytest.approx(hand(A, b, x), rel=1e-12)
    gA, gb = evaluate(vjp(p, ["A", "b"]), A, b, x, 1.0)
    eps, dA, db = 1e-6, rng.normal(size=(3, 3)), rng.normal(size=3)
    fd = (hand(A + eps * dA, b + eps * db, x) - hand(A - eps * dA, b - eps * db, x)) / (2 * eps)
    assert float((gA * dA).sum() + gb @ db) == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("src, message", [
    ("def f(h0: [N], x: [T, M]):\n    def s(h: [N], xt: [N]):\n        return (h,)\n"
     "    h = Fold[T](s, carry=(h0,), scan=(x,))\n    return h", r"needs \[T, N\]"),
    ("def f(h0: [N]):\n    def s(h: [N]):\n        return (h, h)\n"
     "    h = Fold[3](s, carry=(h0,))\n    return h", "returns 2 values"),
    ("def f(h0: [N]):\n    h = Fold[3](s, carry=(h0,))\n    return h", "not a def nested"),
    ("def f(h0: [N]):\n    def s(h: [N]):\n        return (h,)\n"
     "    h = Fold[3](s, carry=(h0,), state=(h0,))\n    return h", "Fold's keywords"),
])
def test_bad_folds_are_located_errors(src: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message):
        parse(src)
