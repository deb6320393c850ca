"""The Numba backend writes an output into the array it returned last time once the caller has
dropped it (no name, container or view holds it): no fresh array's page faults per call. An
array anyone still holds is never written again."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.examples import example
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

N = 4096


@pytest.fixture(scope="module")
def e8():
    prog = example("E8").program()  # x_bar written by one loop nest
    g = ea.grad(prog, wrt="x", backend="numba")
    reference = ea.vjp(prog, wrt="x")
    return g, lambda x: evaluate(reference, x=x, ybar=1.0)


def _x(seed: int, dtype: type = np.float64) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=N).astype(dtype)


def test_a_dropped_result_is_written_again(e8) -> None:
    g, want = e8
    assert g.compiled.schedule.placement["x_bar"] == "loop"
    first = g(x=_x(0))
    address = first.ctypes.data
    del first
    second = g(x=_x(1))
    assert second.ctypes.data == address  # the same memory, now the second result
    np.testing.assert_allclose(second, want(_x(1)), rtol=1e-12)


@pytest.mark.parametrize("hold", ["name", "view", "container"])
def test_a_held_result_is_never_written_again(e8, hold: str) -> None:
    g, want = e8
    g(x=_x(5))  # (whatever the store holds now)
    kept = g(x=_x(0))
    expected = kept.copy()
    held = {"name": kept, "view": kept[1:], "container": [kept]}[hold]
    del kept
    for seed in (1, 2, 3):
        again = g(x=_x(seed))
        np.testing.assert_allclose(again, want(_x(seed)), rtol=1e-12)
    got = {"name": held, "view": held, "container": held[0] if isinstance(held, list) else
           held}[hold]
    np.testing.assert_array_equal(got, expected if hold != "view" else expected[1:])


def test_float_types_and_nan_patterns_survive_reuse(e8) -> None:
    g, want = e8
    for seed, dtype in [(0, np.float32), (1, np.float64), (2, np.float32), (3, np.float64)]:
        x = _x(seed, dtype)
        x[7], x[100] = np.inf, np.nan
        got = g(x=x)
        assert got.dtype == dtype
        ref = want(x.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        fin = np.isfinite(ref)
        # (float32: x[i + 1] - x[i] in float32 rounds to its ulps of the operands)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got[fin], ref[fin], rtol=tol, atol=tol * np.abs(ref[fin]).max())
        del got


def test_threads_never_share_an_output(e8) -> None:
    g, want = e8
    inputs = [_x(seed) for seed in range(4)]
    expected = [want(x) for x in inputs]
    failures: list[int] = []

    def work(k: int) -> None:
        for _ in range(25):
            r = g(x=inputs[k])
            if not np.allclose(r, expected[k], rtol=1e-12):
                failures.append(k)
            del r

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_out_buffers_are_the_callers(e8) -> None:
    g, want = e8
    mine = np.empty(N)
    got = g(x=_x(0), out=mine)
    assert got is mine
    del got
    other = g(x=_x(1))  # the caller's buffer is not the program's to reuse
    assert not np.shares_memory(other, mine)
    np.testing.assert_allclose(mine, want(_x(0)), rtol=1e-12)
