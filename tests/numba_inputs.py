"""Helpers of the Numba backend's tests: random arguments for a program's parameters, and a
count of the guard's decisions."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea


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


def count_guard_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the guard's decisions in fused programs (its scans of the arguments): ``["n"]``."""
    from eqsat_ad.backend.fused import program as fused_program

    calls = {"n": 0}
    real = fused_program.trusted

    def spy(*args: object) -> bool:
        calls["n"] += 1
        return real(*args)

    monkeypatch.setattr(fused_program, "trusted", spy)
    return calls
