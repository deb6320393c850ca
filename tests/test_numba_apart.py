"""Arrays a loop nest writes start apart, modulo 4 KiB, from the arrays it reads
(backend/fused/apart.py), and stay recyclable as outputs."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.fused.apart import LINE, PAGE, empty_apart, owner_free
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

BLUR = """
def blur(x: [H, W], w: [H, W]):
    b[i: H, j: W] = Sum[a: 3, c: 3](x[i + a - 1, j + c - 1]) / 9.0
    return Sum[i: H, j: W](w[i, j] * b[i, j])
"""


def _start(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0] % PAGE


def _gap(a: int, b: int) -> int:
    d = (a - b) % PAGE
    return min(d, PAGE - d)


def _close(dtype: type) -> dict[str, float]:
    """Tolerances for sums of nine products (of unit scale) added in another order."""
    return {"rtol": 1e-4, "atol": 1e-6} if dtype == np.float32 else \
        {"rtol": 1e-10, "atol": 1e-14}


def _page_aligned(shape: tuple[int, ...], offset: int, dtype: type = np.float64
                  ) -> np.ndarray:
    """An array of ``shape`` starting ``offset`` bytes past a page boundary."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(n + 2 * PAGE, dtype=np.uint8)
    skip = (offset - _start(raw)) % PAGE
    return raw[skip:skip + n].view(dtype).reshape(shape)


@pytest.mark.parametrize("offset", [0, 16, 1000, 4032])
def test_a_new_array_starts_half_a_page_from_a_stencils_rows(offset: int) -> None:
    x = _page_aligned((64, 512), offset)  # rows of 4 KiB: every row starts at `offset`
    a = empty_apart((64, 512), np.float64, (x,))
    assert a.shape == (64, 512) and a.dtype == np.float64 and a.flags.c_contiguous
    assert a.flags.writeable and _start(a) % LINE == 0
    assert not np.may_share_memory(a, x)
    assert _gap(_start(a), offset) >= PAGE // 2 - LINE // 2  # as far as a line start can be
    a[...] = 1.0  # all of it is the array's own memory
    assert a.sum() == a.size


def test_rows_that_do_not_repeat_each_page_are_all_kept_apart() -> None:
    x = _page_aligned((80, 500), 0)  # rows 4000 bytes apart: starts 0, ±96, ±192 mod 4 KiB
    y = _page_aligned((2000,), 2048)
    a = empty_apart((80, 500), np.float64, (x, y, 3.0, None))
    marks = [(k * 4000) % PAGE for k in range(-2, 3)] + [2048]
    nearest = min(_gap(_start(a), m) for m in marks)
    best = max(min(_gap(s, m) for m in marks) for s in range(0, PAGE, LINE))
    assert nearest >= best - LINE // 2 and nearest >= 512


def test_small_arrays_and_no_reads_are_plain_arrays() -> None:
    x = _page_aligned((64, 512), 0)
    assert empty_apart((10,), np.float32, (x,)).base is None
    assert empty_apart((32, 512), np.float64, (x,)).base is None  # 128 KiB: below MIN_BYTES
    assert empty_apart((64, 512), np.float32, (np.ones(3),)).base is None
    assert empty_apart((64, 512), np.float32, ()).base is None


def test_an_apart_array_is_free_only_while_nothing_else_sees_its_memory() -> None:
    x = _page_aligned((64, 512), 0)
    a = empty_apart((64, 512), np.float64, (x,))
    assert a.base is not None
    assert owner_free(a)  # (after: pytest's assertion keeps a reference to a.base)
    view = a[3:]
    assert not owner_free(a)
    del view
    assert owner_free(a)
    mem = memoryview(a.base)
    assert not owner_free(a)
    del mem
    assert owner_free(a) and owner_free(np.ones(3))
    assert not owner_free(x[1:])  # a view of another array's memory


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blurs_gradient_is_written_apart_from_w_and_recycled(dtype: type) -> None:
    g = ea.grad(ea.parse(BLUR), wrt="x", backend="numba")
    assert "_apart((H, W,), F, (b_bar, ))" in g.source
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 1024)).astype(dtype)
    w = _page_aligned((96, 1024), 0, dtype)  # rows 4 or 8 KiB: each starts at 0 mod 4 KiB
    w[...] = rng.standard_normal((96, 1024))
    want = evaluate(g.program, x=x, w=w)
    for _ in range(2):  # the first call binds; repeat calls recycle
        g(x=x, w=w)
    first = g(x=x, w=w)
    np.testing.assert_allclose(first, want, **_close(dtype))
    assert _gap(_start(first), 0) >= PAGE // 2 - LINE
    seen = weakref.ref(first)
    del first
    second = g(x=x, w=w)
    assert seen() is second  # the dropped view, reused
    held = second[1:]
    before = held.copy()
    del second
    third = g(x=x, w=2 * w)
    assert not np.may_share_memory(third, held)  # a view the caller holds is never written
    np.testing.assert_array_equal(held, before)
    np.testing.assert_allclose(third, evaluate(g.program, x=x, w=2 * w), **_close(dtype))
