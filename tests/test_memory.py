"""ea.keep_freed_memory (backend/memory.py): glibc keeps freed memory in the process, so a
compiled function's repeated calls fault no new pages in; bad arguments are refused by name;
where the C library is not glibc nothing changes."""

from __future__ import annotations

import resource
import sys

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend import memory

# arrays of 1 MiB (256 x 512 float64): each temporary is a block glibc would map on its own
PROGRAM = """\
def f(x: [N, M], w: [N, M]):
    return Sum[i: N, j: M](w[i, j] * exp(x[i, j]) * tanh(x[i, j]))
"""


@pytest.mark.parametrize("kwargs", [
    {"mmap_bytes": 0}, {"mmap_bytes": -1}, {"mmap_bytes": 2**26}, {"mmap_bytes": 1.5},
    {"mmap_bytes": True}, {"trim_bytes": 0}, {"trim_bytes": 2**31}, {"trim_bytes": "big"},
])
def test_bad_arguments_are_refused_by_name(kwargs: dict) -> None:
    (name,) = kwargs
    with pytest.raises(ea.EqsatValueError, match=name):
        ea.keep_freed_memory(**kwargs)


def test_without_glibc_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_mallopt", lambda: None)
    assert memory.keep_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux") or memory._mallopt() is None,
                    reason="needs glibc's mallopt")
def test_repeated_calls_fault_no_pages_in() -> None:
    assert ea.keep_freed_memory() is True
    g = ea.grad(ea.parse(PROGRAM), ("x", "w"), optimize=False)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((256, 512)), rng.standard_normal((256, 512))
    for _ in range(3):
        g(x, w)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        grads = g(x, w)
        del grads
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # each call allocates several 1 MiB arrays (256 pages each): with the memory given back,
    # every call would fault at least one of them in again
    assert faults < 10 * 64, faults
    np.testing.assert_allclose(g(x, w)[1], np.exp(x) * np.tanh(x))
