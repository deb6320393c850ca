"""The fused backend reuses the arrays a caller dropped as the next call's outputs
(backend/fused/outputs.Recycler), and never an array anyone can still read."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

DIFF = """
def diff_sq(x: [N]):
    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
    return Sum[i: N](d[i] ** 2)
"""

TWO = """
def two(x: [N], w: [N]):
    y[i: N] = (i + 1 < N) * (x[i + 1] - x[i]) * w[i]
    return Sum[i: N](y[i] * y[i])
"""


def _grad(src: str, wrt: tuple[str, ...] | str = "x") -> ea.Compiled:
    g = ea.grad(ea.parse(src), wrt=wrt, backend="numba", sizes={"N": 64})
    return g


def _reference(g: ea.Compiled, **args: np.ndarray) -> tuple[np.ndarray, ...]:
    got = evaluate(g.program, **args)
    return got if isinstance(got, tuple) else (got,)


def _loops_run(g: ea.Compiled) -> None:
    assert not g.compiled.numpy_only, g.compiled.schedule.why  # the loops write the output


def test_a_dropped_result_becomes_the_next_calls_output() -> None:
    g = _grad(DIFF)
    _loops_run(g)
    x = np.random.default_rng(0).standard_normal(1000)
    for _ in range(2):  # the first call binds, the second is a repeat call (kept from then)
        g(x=x)
    first = g(x=x)
    seen = weakref.ref(first)
    del first
    second = g(x=x)
    assert seen() is second  # the same array, not a fresh one
    np.testing.assert_allclose(second, _reference(g, x=x)[0], rtol=1e-12)
    x2 = x[::-1].copy()
    held = weakref.ref(second)
    del second
    third = g(x=x2)
    assert held() is third
    np.testing.assert_allclose(third, _reference(g, x=x2)[0], rtol=1e-12)


@pytest.mark.parametrize("keep", ["array", "view", "list", "memoryview"])
def test_an_array_anyone_can_still_read_is_never_reused(keep: str) -> None:
    g = _grad(DIFF)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(500)
    for _ in range(3):
        g(x=x)
    first = g(x=x)
    before = first.copy()
    holder: object = {"array": first, "view": first[1:], "list": [first],
                      "memoryview": memoryview(first)}[keep]
    seen = weakref.ref(first)
    del first
    second = g(x=rng.standard_normal(500))
    assert seen() is not second
    np.testing.assert_array_equal(seen(), before)  # what the caller holds is unchanged
    del holder


def test_a_reshaped_or_read_only_array_is_not_reused() -> None:
    g = _grad(DIFF)
    x = np.random.default_rng(2).standard_normal(600)
    for _ in range(3):
        g(x=x)
    a = g(x=x)
    a.resize((20, 30), refcheck=False)  # the caller changed it in place, then dropped it
    seen = weakref.ref(a)
    del a
    b = g(x=x)
    assert b.shape == (600,) and seen() is not b
    b.flags.writeable = False
    seen = weakref.ref(b)
    del b
    c = g(x=x)
    assert seen() is not c and c.flags.writeable
    np.testing.assert_allclose(c, _reference(g, x=x)[0], rtol=1e-12)


def test_one_output_held_the_other_reused() -> None:
    g = _grad(TWO, wrt=("x", "w"))
    _loops_run(g)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(300), rng.standard_normal(300)
    for _ in range(3):
        g(x=x, w=w)
    gx, gw = g(x=x, w=w)
    kept = gx.copy()
    seen_w = weakref.ref(gw)
    del gw
    x2, w2 = rng.standard_normal(300), rng.standard_normal(300)
    gx2, gw2 = g(x=x2, w=w2)
    assert gx2 is not gx
    np.testing.assert_array_equal(gx, kept)
    want = _reference(g, x=x2, w=w2)
    np.testing.assert_allclose(gx2, want[0], rtol=1e-12)
    np.testing.assert_allclose(gw2, want[1], rtol=1e-12)
    assert seen_w() is gw2  # the dropped one was reused


def test_threads_never_share_an_output() -> None:
    g = _grad(DIFF)
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal(2000) for _ in range(4)]
    for x in inputs:
        g(x=x)
    wants = [_reference(g, x=x)[0] for x in inputs]
    results: dict[int, list[np.ndarray]] = {k: [] for k in range(4)}

    def work(k: int) -> None:
        for _ in range(30):
            r = g(x=inputs[k])
            results[k].append(r)  # held: none may be overwritten by another call
            results[k].append(r.copy())

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        held, copies = results[k][0::2], results[k][1::2]
        assert len({id(a) for a in held}) == len(held)
        for a, c in zip(held, copies, strict=True):
            np.testing.assert_array_equal(a, c)
            np.testing.assert_allclose(a, wants[k], rtol=1e-12)


def test_a_fallback_result_with_nan_is_still_right() -> None:
    # the guard reruns the unoptimized program on inf/nan; a recycled buffer must not leak
    g = _grad(DIFF)
    x = np.random.default_rng(5).standard_normal(400)
    for _ in range(3):
        g(x=x)
    r = g(x=x)
    del r
    bad = x.copy()
    bad[7] = np.inf
    got = g(x=bad)
    want = _reference(g, x=bad)[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-12)
