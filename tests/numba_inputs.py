"""Helpers of the Numba backend's tests: random arguments for a program's parameters, a count
of the guard's decisions, limits for tests that assert what a finished search found, and E8's
former adjoint (a loop nest with a fused producer read under brackets)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea

# for tests whose assertions need the search's result, not a starved one (a slower machine gets
# less done in the default 2 s of CPU time): these searches end at their node or iteration bound
ROOMY = ea.Limits(seconds=30)

# E8's adjoint as the extraction returned it before a coefficient shared by a statement's terms
# was priced once (the distributed form, 2 x[i] - 2 x[i - 1] ..., now wins): the difference d
# fused into x_bar's loop, read under brackets at i and at i - 1. Compiled as it stands.
E8_ADJOINT = """
def diff_sq_grad(x: [N]):
    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
    d_bar[i: N] = 2 * d[i]
    x_bar[i: N] = Sum[i1: N]((i == i1 + 1) * d_bar[i1] * (i1 + 1 < N)) - d_bar[i] * (i + 1 < N)
    return x_bar
"""


def random_arguments(prog: ea.Program, sizes: dict[str, int], seed: int = 0,
                     dtype: type = np.float64, poison: float | None = None
                     ) -> dict[str, np.ndarray]:
    """Standard normal tensors of ``dtype`` and relations true with probability 1/2, at
    ``sizes``; ``poison`` (inf or nan) written at each tensor's first, middle and last entry
    (the first as -inf for inf)."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in prog.params:
        shape = tuple(d if isinstance(d, int) else sizes[d.name] for d in p.shape)
        if p.kind == "relation":
            out[p.name] = rng.random(shape) < 0.5
            continue
        v = rng.standard_normal(shape).astype(dtype)
        if poison is not None and v.size:
            flat = v.reshape(-1)
            flat[-1], flat[flat.size // 2] = poison, poison
            flat[0] = -poison if poison == np.inf else poison
        out[p.name] = v
    return out


def count_calls(monkeypatch: pytest.MonkeyPatch, name: str, *modules: object
                ) -> dict[str, int]:
    """Counts the calls of the function ``name`` of the first of ``modules`` made through any
    of them (each module's own binding replaced by one spy): ``["n"]``."""
    calls = {"n": 0}
    real = getattr(modules[0], name)

    def spy(*args: object) -> object:
        calls["n"] += 1
        return real(*args)

    for m in modules:
        monkeypatch.setattr(m, name, spy)
    return calls


def count_guard_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the guard's decisions in fused programs (its scans of the arguments and proof,
    before or after the run): ``["n"]``."""
    from eqsat_ad.backend.fused import checks

    return count_calls(monkeypatch, "proven_finite", checks)


def kernel_text(source: str, name: str) -> str:
    """The text of the generated kernel ``name`` in a fused module's ``source``."""
    text = source[source.index(f"def {name}("):]
    return text[:text.index("\n\n\n")] if "\n\n\n" in text else text


def agree(got: object, want: object, rtol: float) -> None:
    """Each output of ``got`` as ``want``'s (one array or a tuple): shapes, nan and ±inf
    patterns exactly, finite values within ``rtol``."""
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t, strict=True):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        assert g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isposinf(g), np.isposinf(w))
        np.testing.assert_array_equal(np.isneginf(g), np.isneginf(w))
        ok = np.isfinite(w)
        np.testing.assert_allclose(g[ok], w[ok], rtol=rtol, atol=rtol)
