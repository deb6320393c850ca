"""The NumPy front end's gathers and scatter-adds by integer arrays (``x[idx]``,
``np.bincount``, ``np.add.at``) and SciPy sparse masks, against NumPy and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import eqsat_ad as ea
from eqsat_ad.ir.errors import ArgumentTypeError, ProgramError, ShapeError


def energy(x, src, dst):
    d = x[src] - x[dst]
    return np.sum(d ** 2)


def scatter(x, src, dst, w):
    y = np.bincount(dst, weights=w * x[src], minlength=x.shape[0])
    return np.sum(y ** 2)


def add_at(x, src, dst):
    y = np.zeros(x.shape[0])
    np.add.at(y, dst, x[src])
    return np.sum(np.tanh(y))


def mesh(p, a, b):
    e = p[a] - p[b]
    length = np.sqrt(np.sum(e ** 2, axis=1))
    return np.sum((length - 1.0) ** 2)


def masked(x, m):
    return np.sum(np.where(m, (x[:, None] - x[None, :]) ** 2, 0.0))


def _fd(f, args, k, h=1e-6):
    xp, xm = args[0].copy(), args[0].copy()
    xp[k] += h
    xm[k] -= h
    return (f(xp, *args[1:]) - f(xm, *args[1:])) / (2 * h)


@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    n, e = 40, 200
    return rng, n, rng.integers(0, n, e), rng.integers(0, n, e)


def test_edge_list_gradient_is_the_bincount_gradient(graph) -> None:
    rng, n, src, dst = graph
    x = rng.standard_normal(n)
    g = ea.grad(energy)
    d = x[src] - x[dst]
    want = 2 * (np.bincount(src, d, n) - np.bincount(dst, d, n))
    np.testing.assert_allclose(g(x, src, dst), want, rtol=1e-12, atol=1e-12)
    assert "src: rel[" in str(g.program)
    assert "np.where" not in g.source and ".segment_sum(" in g.source
    assert ea.compile(energy)(x, src, dst) == pytest.approx(float(np.sum(d ** 2)))


@pytest.mark.parametrize("fn", [scatter, add_at, mesh], ids=["bincount", "add.at", "mesh"])
def test_gathers_and_scatters_match_numpy_and_finite_differences(graph, fn) -> None:
    rng, n, src, dst = graph
    x = rng.standard_normal((n, 2)) if fn is mesh else rng.standard_normal(n)
    args = (x, src, dst, rng.standard_normal(len(src))) if fn is scatter else (x, src, dst)
    assert ea.compile(fn)(*args) == pytest.approx(fn(*args), rel=1e-12)
    grad = ea.grad(fn)(*args)
    for k in [(3,), (17,)] if x.ndim == 1 else [(3, 1), (17, 0)]:
        assert grad[k] == pytest.approx(_fd(fn, args, k), rel=1e-5, abs=1e-7)


def test_sparse_mask_argument_of_a_numpy_function(graph) -> None:
    rng, n, _, _ = graph
    m = sp.random_array((n, n), density=0.05, rng=1, format="csr")
    m.data[:] = 1
    x = rng.standard_normal(n)
    dense = m.toarray() > 0
    g = ea.grad(masked)
    np.testing.assert_allclose(g(x, m), g(x, dense), rtol=1e-12, atol=1e-12)
    assert ea.compile(masked)(x, m) == pytest.approx(masked(x, dense))


def test_bad_index_arrays_are_errors_naming_the_argument(graph) -> None:
    rng, n, src, dst = graph
    x = rng.standard_normal(n)
    g = ea.grad(energy)
    g(x, src, dst)
    with pytest.raises(ShapeError, match="'src' holds -1"):
        g(x, src - 1, dst)
    with pytest.raises(ShapeError, match=f"'dst' holds {n}, outside 0 .. {n - 1}"):
        g(x, src, np.where(dst == dst.max(), n, dst))
    with pytest.raises(ArgumentTypeError, match="'src'"):
        ea.grad(energy, shapes={"x": ("N",), "src": ("E",), "dst": ("E",)},
                dtypes={"src": int, "dst": int})(x, src.astype(float), dst)


def test_bincount_needs_its_length() -> None:
    def f(x, idx):
        return np.sum(np.bincount(idx, weights=x) ** 2)

    with pytest.raises(ProgramError, match="minlength"):
        ea.grad(f)(np.ones(3), np.array([0, 1, 1]))
