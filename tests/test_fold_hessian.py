"""The symbolic Hessian through rolled loops (issue 11): the family of unit tangents carried by
the forward and reverse folds of the gradient, against finite differences of the gradient."""

from __future__ import annotations

import numpy as np
import pytest
from test_fold import EMA, RNN

import eqsat_ad as ea
from eqsat_ad.ad import hessian_program
from eqsat_ad.api import gradient_program
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import Fold
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.interpreter import evaluate


def _args(rng: np.random.Generator, n: int = 3, t: int = 4) -> dict[str, np.ndarray]:
    return {"W": rng.normal(size=(n, n)) * 0.7, "h0": rng.normal(size=n),
            "x": rng.normal(size=(t, n))}


def _fd_hessian(prog: ea.Program, wrt: str, args: dict, eps: float = 1e-5) -> np.ndarray:
    grad = gradient_program(prog, [wrt])
    x0 = np.asarray(args[wrt], dtype=float)
    out = np.zeros(x0.shape + x0.shape)
    for idx in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[idx] = eps
        hi = evaluate(grad, **{**args, wrt: x0 + e})
        lo = evaluate(grad, **{**args, wrt: x0 - e})
        out[idx] = (np.asarray(hi) - np.asarray(lo)) / (2 * eps)
    # out[k..., m...] = d grad[m...] / d x[k...]: the Hessian is symmetric, its layout is H[m, k]
    return out


@pytest.mark.parametrize("wrt", ["h0", "W", "x"])
def test_rnn_hessian_through_folds_matches_finite_differences(wrt: str) -> None:
    prog = parse(RNN)
    args = _args(np.random.default_rng(4))
    hess = hessian_program(prog, wrt)
    check_program(hess)
    assert sum(isinstance(s, Fold) for s in hess.statements) == 2  # forward and reverse loops
    np.testing.assert_allclose(evaluate(hess, **args), _fd_hessian(prog, wrt, args),
                               rtol=1e-6, atol=1e-8)


def test_ema_hessian_closed_form() -> None:
    prog = parse(EMA)
    x, a, t = np.random.default_rng(0).normal(size=6), 0.8, 6
    powers = a ** (t - 1 - np.arange(t))  # ds/dx[i] = a^(T-1-i)
    np.testing.assert_allclose(evaluate(hessian_program(prog, "x"), x, a),
                               2 * np.outer(powers, powers), rtol=1e-12)
    h_a = evaluate(hessian_program(prog, "a"), x, a)
    np.testing.assert_allclose(h_a, _fd_hessian(prog, "a", {"x": x, "a": a}), rtol=1e-6)


def test_compiled_hessian_of_a_fold_program() -> None:
    prog = parse(RNN)
    args = _args(np.random.default_rng(7), t=6)
    compiled = ea.hessian(prog, "h0")
    np.testing.assert_allclose(compiled(**args), evaluate(hessian_program(prog, "h0"), **args),
                               rtol=1e-10, atol=1e-12)
