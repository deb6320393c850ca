"""Common steps are computed once in the generated NumPy code (the emitter's temporaries,
shared across statements): a value checked for finiteness is that value, so a later plain use
of it reads the checked temporary. Counted in the source and the plan, never timed."""

from __future__ import annotations

import numpy as np

import eqsat_ad as ea
from eqsat_ad.plan.price import program_cost


def softmax_xent(z, Y):
    lse = np.log(np.sum(np.exp(z), axis=1))
    return np.sum(lse) - np.sum(Y * z)


def _onehot(rng: np.random.Generator, b: int, k: int) -> np.ndarray:
    Y = np.zeros((b, k))
    Y[np.arange(b), rng.integers(0, k, size=b)] = 1.0
    return Y


def test_softmax_cross_entropy_gradient_takes_one_exp():
    rng = np.random.default_rng(0)
    z, Y = rng.standard_normal((5, 4)), _onehot(rng, 5, 4)
    g = ea.grad(softmax_xent, wrt="z")
    got = g(z, Y)
    assert g.source.count("np.exp(") == 1, g.source
    exps = [k for k in program_cost(g.program, {"N": 64, "M": 10}).plan.kernels
            if "exp" in k.detail]
    assert len(exps) == 1, [str(k) for k in exps]
    e = np.exp(z)
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True) - Y, rtol=1e-12)


def test_the_shared_exp_keeps_the_semantics_where_it_overflows():
    # exp(1000) is inf: the checked exp raises and the call takes the unoptimized program
    # (inf / inf = nan there, as in the interpreter); other rows stay exact
    g = ea.grad(softmax_xent, wrt="z")
    naive = ea.grad(softmax_xent, wrt="z", optimize=False)
    rng = np.random.default_rng(1)
    z, Y = rng.standard_normal((3, 4)), _onehot(rng, 3, 4)
    z[1, 2] = 1000.0
    got, want = g(z, Y), naive(z, Y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[1]).any() and np.isfinite(got[[0, 2]]).all()
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=1e-12)
