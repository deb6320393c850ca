"""Intermediates whose lives do not overlap share one kept array (backend/fused/storage.py,
``shared_buffers``): fewer arrays in the caches and in memory, the same values."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.fused.storage import shared_buffers
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")


def _kept(name: str, shape: str = "N, K") -> list[str]:
    return [f"    {name} = _tmp.get({name!r})",
            f"    if {name} is None or {name}.shape != ({shape},):",
            f"        {name} = _tmp[{name!r}] = np.empty(({shape},), dtype=F)"]


def test_an_array_no_longer_read_lends_its_memory_to_the_next_of_its_shape() -> None:
    run = ["def run(x, N, K, _buf, _tmp, _box, _fin):",
           *_kept("a"), "    _k_a(a, x, N, K)",
           *_kept("b"), "    _k_b(b, a, N, K)",  # reads a: a is live at b's binding
           *_kept("c", "K, N"), "    _k_c(c, b, N, K)",  # another shape: its own array
           *_kept("d"), "    _k_d(d, b, c, N, K)",  # a's last use is before d's binding
           "    # e: a comment naming a is no use",
           *_kept("e"), "    _k_e(e, d, N, K)",  # b's last use (d's kernel) is before e
           "    return (e,), False"]
    out = shared_buffers(run)
    text = "\n".join(out)
    assert "    d = _tmp.get('a')  # (a's array: no longer read)" in out
    assert "        d = _tmp['a'] = np.empty((N, K,), dtype=F)" in out
    assert "    e = _tmp.get('b')  # (b's array: no longer read)" in out
    for own in ("a", "b", "c"):
        assert f"    {own} = _tmp.get({own!r})" in out
    assert "_tmp['d']" not in text and "_tmp['e']" not in text
    assert len(out) == len(run)
    # the shared array is shared in turn: f takes a's (now d's) array once d is dead
    longer = [*run[:-1], *_kept("f"), "    _k_f(f, e, N, K)", "    return (f,), False"]
    assert "    f = _tmp.get('a')  # (a's array: no longer read)" in shared_buffers(longer)


def test_overlapping_lives_and_lone_arrays_keep_their_own() -> None:
    run = ["def run(x, N, K, _buf, _tmp, _box, _fin):",
           *_kept("a"), "    _k_a(a, x, N, K)",
           *_kept("b"), "    _k_b(b, x, N, K)",
           "    _r = _np_c(_fin, x, a, b)",  # a read after b's binding
           "    return (_r,), False"]
    assert shared_buffers(run) == run
    assert shared_buffers(run[:4]) == run[:4]


MLP = """
def mlp(X: [B, D], W1: [H, D], b1: [H], W2: [K, H], Y: [B, K]):
    hid[n: B, j: H] = tanh(Sum[d: D](X[n, d] * W1[j, d]) + b1[j])
    z[n: B, c: K] = Sum[j: H](hid[n, j] * W2[c, j])
    return Sum[n: B, c: K]((z[n, c] - Y[n, c]) ** 2)
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlps_gradient_shares_an_array_and_keeps_the_interpreters_values(dtype: type) -> None:
    g = ea.grad(ea.parse(MLP), wrt=("W1", "b1", "W2"), backend="numba")
    # hid's product (_p_hid), last read by hid's loop nest, lends its array to hid_bar's
    assert "    hid_bar = _tmp.get('_p_hid')  # (_p_hid's array: no longer read)" in g.source
    rng = np.random.default_rng(3)
    sizes = {"B": 7, "D": 5, "H": 9, "K": 4}
    close = {"rtol": 2e-4, "atol": 1e-5} if dtype == np.float32 else \
        {"rtol": 1e-10, "atol": 1e-12}
    for k in range(4):  # repeated calls: the kept arrays are reused, their old values unread
        args = {"X": rng.standard_normal((sizes["B"], sizes["D"])),
                "W1": rng.standard_normal((sizes["H"], sizes["D"])) * (k + 1),
                "b1": rng.standard_normal(sizes["H"]),
                "W2": rng.standard_normal((sizes["K"], sizes["H"])),
                "Y": rng.standard_normal((sizes["B"], sizes["K"]))}
        if k == 2:  # an inf: hid_bar's product falls back to its NumPy part, a fresh array
            args["W2"][1, 3] = np.inf
        args = {n: v.astype(dtype) for n, v in args.items()}
        got = g(**args)
        with np.errstate(all="ignore"):  # (the interpreter's inf - inf)
            want = evaluate(g.program, **args)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == dtype
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_allclose(a, b, **close)
