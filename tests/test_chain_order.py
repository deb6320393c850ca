"""Matrix chains of the sweep (issue 10): the contraction order the plan chooses costs no more
FLOPs than NumPy's optimal einsum path, and the compiled forward runs the naive program's very
code (no guard) with a price at most the optimal path's. Counted, never timed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.index import size
from eqsat_ad.plan import contraction_path

# the sweep's chains (experiments/sweep_programs.py): D0 .. DL
CHAINS = {
    "chain3": (4000, 10, 4000, 10),
    "chain4": (8, 1024, 8, 1024, 8),
    "chain5": (512, 2, 512, 512, 2, 512),
    "chain6": (16, 256, 256, 4, 256, 256, 16),
    "chain7": (1024, 32, 8, 128, 2, 512, 16, 1024),
    "chain8": (64, 4, 4, 64, 64, 16, 256, 1024, 64),
}
LETTERS = "abcdefghij"


def _flops(spec: str, shapes: list[tuple[int, ...]], path: list | str) -> float:
    ops = [np.empty(s) for s in shapes]
    text = np.einsum_path(spec, *ops, optimize=path)[1]
    return float(re.search(r"Optimized FLOP count:\s*(\S+)", text).group(1))


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("output", ["", "first-last"])
def test_the_chosen_order_is_numpy_optimal(name: str, output: str) -> None:
    dims = CHAINS[name]
    n = len(dims) - 1
    operands = [LETTERS[k] + LETTERS[k + 1] for k in range(n)]
    out = "" if not output else LETTERS[0] + LETTERS[n]
    shapes = [(dims[k], dims[k + 1]) for k in range(n)]
    spec = ",".join(operands) + "->" + out
    extents = {LETTERS[k]: size(f"D{k}") for k in range(n + 1)}
    sizes = {f"D{k}": d for k, d in enumerate(dims)}
    path = contraction_path(operands, out, extents, sizes)
    ours = _flops(spec, shapes, path.einsum_path())
    best = _flops(spec, shapes, "optimal")
    assert ours <= best, (name, ours, best, path.steps)


def _chain_program(name: str) -> tuple[ea.Program, dict[str, int]]:
    dims = CHAINS[name]
    n = len(dims) - 1
    params = ", ".join(f"A{k}: [D{k}, D{k + 1}]" for k in range(n))
    gens = ", ".join(f"i{k}: D{k}" for k in range(n + 1))
    body = " * ".join(f"A{k}[i{k}, i{k + 1}]" for k in range(n))
    prog = ea.parse(f"def {name}({params}):\n    return Sum[{gens}]({body})\n")
    return prog, {f"D{k}": d for k, d in enumerate(dims)}


def _optimal_price(dims: tuple[int, ...]) -> float:
    """NumPy's optimal path for Σ A0 .. A(L-1), priced as the plan prices a contraction: its
    iteration space plus the entries it writes."""
    n = len(dims) - 1
    terms = [LETTERS[k] + LETTERS[k + 1] for k in range(n)]
    extent = dict(zip(LETTERS, dims, strict=False))
    path = np.einsum_path(",".join(terms) + "->", *[np.empty((dims[k], dims[k + 1]))
                                                     for k in range(n)], optimize="optimal")[0]
    live, price = list(terms), 0.0
    for step in path[1:]:
        picked = [live[k] for k in step]
        live = [t for k, t in enumerate(live) if k not in step]
        used = set("".join(picked))
        keep = "".join(sorted(c for c in used if any(c in t for t in live)))
        price += np.prod([extent[c] for c in used]) + np.prod([extent[c] for c in keep])
        live.append(keep)
    return price


@pytest.mark.parametrize("name", ["chain4", "chain6"])
def test_the_forward_is_priced_below_the_optimal_path_and_runs_unguarded(name, monkeypatch):
    """chain4 (8, 1024, 8, 1024, 8) once ran 1.8x np.linalg.multi_dot: not its order (the plan
    sums the outer matrices first, below NumPy's optimal path) but the guard's four passes and
    interval proof per call. The optimized forward lowers to the naive program's code, so a
    call runs that code with no pass over an argument."""
    from eqsat_ad.backend import guard

    def no_scan(*args):
        raise AssertionError("the guard scanned an argument")

    monkeypatch.setattr(guard, "_magnitudes", no_scan)
    monkeypatch.setattr(guard, "_refined", no_scan)
    prog, sizes = _chain_program(name)
    f = ea.compile(prog, sizes=sizes)
    assert f.report.optimized.value <= _optimal_price(CHAINS[name])
    assert f.report.same_code
    dims = CHAINS[name]
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((dims[k], dims[k + 1])) / np.sqrt(dims[k])
            for k in range(len(dims) - 1)]
    np.testing.assert_allclose(f(*mats), np.sum(np.linalg.multi_dot(mats)), rtol=1e-9)
    assert f.compiled.fallback.calls == 0


@pytest.mark.parametrize("name", ["chain4", "chain8"])
def test_the_gradient_computes_each_step_of_the_chain_once(name):
    """The L adjoints of a chain share its prefix and suffix products: each row sum and each
    matrix-vector product is computed once however many statements need it (their einsum
    letters differ from statement to statement; the code does not), so an L-chain's gradient
    runs 2 sums and 2(L - 2) products, not L(L - 1) steps. An adjoint that is an outer product
    of two vectors is written along its own layout (no transposed copy)."""
    prog, sizes = _chain_program(name)
    n = len(CHAINS[name]) - 1
    g = ea.grad(prog, wrt=tuple(f"A{k}" for k in range(n)), sizes=sizes)
    src = g.source
    assert src.count("np.einsum(") == 2, src
    assert src.count(" @ ") == 2 * (n - 2), src
    assert not re.search(r"np\.broadcast_to\(\w+\.T,", src), src
    rng = np.random.default_rng(1)
    small = [3, 2, 4, 3, 2, 3, 4, 2, 3][: n + 1]
    mats = [rng.standard_normal((small[k], small[k + 1])) for k in range(n)]
    got = g(*mats)
    eps = 1e-6
    for k in range(n):
        fd = np.zeros_like(mats[k])
        for idx in np.ndindex(mats[k].shape):
            up = [m.copy() for m in mats]
            dn = [m.copy() for m in mats]
            up[k][idx] += eps
            dn[k][idx] -= eps
            fd[idx] = (np.sum(np.linalg.multi_dot(up))
                       - np.sum(np.linalg.multi_dot(dn))) / (2 * eps)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-8)
