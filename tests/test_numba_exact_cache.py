"""Whether optimized loops are the unoptimized program's own code at a call's sizes (the fused
program's ``_exact``: then no guard scans run) is decided once per size binding and kept on disk
with the optimizer's cache: a later process (a new program object) reads the decision instead
of lowering both programs twice, which was a third of a first call that loads its kernels from
Numba's cache. The decision read back is the one computed, and a size binding not yet decided,
or an unreadable entry, is decided afresh."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph import cache
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

import eqsat_ad.backend.fused as fused  # noqa: E402
from eqsat_ad.backend.fused import exact as fused_exact  # noqa: E402
from eqsat_ad.backend.numpy import CompiledProgram  # noqa: E402

TV = """
def tv(u: [H, W]):
    dx[i: H, j: W] = u[i + 1, j] - u[i, j]
    dy[i: H, j: W] = u[i, j + 1] - u[i, j]
    return Sum[i: H, j: W]((i < H - 1 and j < W - 1) * sqrt(dx[i, j] ** 2 + dy[i, j] ** 2 + 0.0001))
"""


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("EQSAT_AD_CACHE", "1")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fused, "_CACHE", {})
    return tmp_path


def _fresh(monkeypatch: pytest.MonkeyPatch):
    """The gradient as a new process builds it: no program object kept in memory."""
    monkeypatch.setattr(fused, "_CACHE", {})
    return ea.grad(ea.parse(TV), "u", backend="numba")


def _no_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision's own work fails: comparing the strict code, the NumPy backend's _plain."""
    real = fused_exact.lower_program

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("the decision was not read from disk")

    def lower(*args: object, **kwargs: object) -> object:
        if kwargs.get("strict"):
            refuse()
        return real(*args, **kwargs)

    monkeypatch.setattr(fused_exact, "lower_program", lower)
    monkeypatch.setattr(CompiledProgram, "_plain", refuse)


def test_a_later_process_reads_the_decision_from_disk(disk: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    u = rng.standard_normal((9, 7))
    g = _fresh(monkeypatch)
    assert g.program != g.naive and g.compiled.fallback.same_code
    first = g(u)
    assert list(g.compiled._exact_by.values()) == [True]  # the same code: no guard scans
    np.testing.assert_allclose(first, evaluate(g.naive, u=u), rtol=1e-12, atol=1e-12)
    with monkeypatch.context() as m:
        _no_lowering(m)
        later = _fresh(monkeypatch)
        np.testing.assert_array_equal(later(u), first)
        assert list(later.compiled._exact_by.values()) == [True]
    # another size binding is decided afresh (and then read back too)
    v = rng.standard_normal((5, 11))
    again = _fresh(monkeypatch)
    want = again(v)
    with monkeypatch.context() as m:
        _no_lowering(m)
        np.testing.assert_array_equal(_fresh(monkeypatch)(v), want)


def test_an_unreadable_entry_is_decided_afresh(disk: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    u = np.random.default_rng(1).standard_normal((6, 8))
    g = _fresh(monkeypatch)
    want = g(u)
    entries = [p for p in disk.glob("*/*.pickle")]
    assert entries
    for p in entries:  # every entry (the optimizer's too) replaced by something else
        cache.store(p.stem, "not a decision")
    later = _fresh(monkeypatch)
    np.testing.assert_array_equal(later(u), want)
    assert list(later.compiled._exact_by.values()) == [True]


def test_nothing_is_written_with_the_cache_off(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("EQSAT_AD_CACHE", "0")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    g = _fresh(monkeypatch)
    g(np.ones((4, 5)))
    assert list(g.compiled._exact_by.values()) == [True]
    assert not list(tmp_path.glob("*/*.pickle"))
