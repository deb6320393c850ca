"""Kernels written for a quicker cold compile (:mod:`eqsat_ad.backend.fused.compact`, issue 15).

A partitioned row's two edges run as one loop, as do the first and last edge rows: one copy
of the guarded code each (blur's kernel held four). Constants are named once at a kernel's
top; integer bounds are folded or written as conditional expressions (no ``min``/``max``
overload compiled). The values stay the interpreter's, and the edges' bit for bit those of
the NumPy backend where it computes the same arithmetic, at every small size (empty interior,
one row, one column) and with nan and inf at the edges."""

from __future__ import annotations

import ast
import importlib
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from eqsat_ad.backend.fused import compile_numba  # noqa: E402
from eqsat_ad.backend.fused.compact import (  # noqa: E402
    MAX_BRANCHES,
    branches,
    extreme,
    hoist_constants,
    within_budget,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
STENCILS = importlib.import_module("fused_programs").PROGRAMS

pytestmark = pytest.mark.usefixtures("numba_cache")


def _kernel(source: str, name: str) -> str:
    return source.split(f"def _k_{name}(")[1].split("\n@nb.njit")[0].split("\ndef run(")[0]


@pytest.mark.parametrize(("name", "kernels"), [("blur", ["x_bar"]), ("tv", ["dy_bar", "u_bar"])])
def test_each_guarded_body_is_written_once(name: str, kernels: list[str]) -> None:
    src, wrt, _ = STENCILS[name]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    for k in kernels:
        body = _kernel(g.source, k)
        # the edge rows: one loop (not before and after the interior rows), the edges of an
        # interior row: one loop (not before and after the interior)
        assert body.count("# the edge rows: every guard") == 1, body
        assert body.count("for _ep in range(") == 1, body
        assert body.count("for i in range(_rlo, _rhi):") == 1
        # no builtin min/max called, every constant named once at the top
        assert not re.search(r"(?<![\w.])(min|max)\(", body), body
        consts = re.findall(r"(?<![\w.])F\(", body)
        assert len(consts) == len(re.findall(r"\n    _cst\d+ = F\(", body))
    if name == "blur":  # the 9 taps with their guards: in the edge rows and at the edges
        assert _kernel(g.source, "x_bar").count("if 0 <= l") == 2 * 9


@pytest.mark.parametrize("name", sorted(STENCILS))
def test_no_builtin_min_or_max_is_compiled(name: str) -> None:
    """The stencils', N-body's, the sliding window's and the scans' bounds: no call."""
    src, wrt, _ = STENCILS[name]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    assert not re.search(r"(?<![\w.])(min|max)\(", g.source), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["blur", "tv"])
def test_small_sizes_and_edges_equal_the_interpreter(name: str, dtype: type) -> None:
    """Every split of the rows and points into edges and interior (interior empty, one row,
    one column), nan and inf at the corners and in the middle: the interpreter's values."""
    src, wrt, _ = STENCILS[name]
    g = ea.grad(ea.parse(src), wrt, backend="numba")
    rng = np.random.default_rng(7)
    for h, w in itertools.product((1, 2, 3, 4, 6), (1, 2, 3, 5)):
        for poison in (None, np.nan, np.inf):
            args = {p.name: rng.standard_normal((h, w)).astype(dtype)
                    for p in g.program.params}
            if poison is not None:
                first = args[g.program.params[0].name]
                first[0, 0], first[-1, -1], first[h // 2, w // 2] = poison, -poison, poison
            with np.errstate(all="ignore"):
                got = np.asarray(g(**args))
                want = evaluate(g.program, **{k: v.astype(np.float64) for k, v in args.items()})
            assert got.dtype == dtype and got.shape == (h, w)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            tol = 1e-12 if dtype == np.float64 else 2e-3
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def test_extreme_is_min_and_max() -> None:
    codes = ["0", "1", "-1", "W", "W + 1", "W - 1", "H - 2", "-(-(W) // 2)", "W - H"]
    for fn, py in (("min", min), ("max", max)):
        for r in (1, 2, 3):
            for chosen in itertools.combinations(codes, r):
                code = extreme(fn, list(chosen))
                assert not re.search(r"(?<![\w.])(min|max)\(", code)
                for W, H in itertools.product(range(-1, 5), range(-1, 5)):  # noqa: N806
                    env = {"W": W, "H": H}
                    assert eval(code, env) == py(eval(c, env) for c in chosen), (fn, chosen)
    assert extreme("max", ["0", "1", "-1"]) == "1"
    assert extreme("min", ["W", "W + 1", "W - 1"]) == "(W - 1)"


def test_constants_are_named_once_at_the_top() -> None:
    lines = ["    a = F(0) + F(0.5) * x[F(0)]", "    # F(3) in a comment",
             "    b = _F(2) + F(np.inf) - F(-np.inf) + F(1e-05) + F(-2)"]
    out = hoist_constants(lines)
    assert out[:6] == ["    _cst0 = F(0)", "    _cst1 = F(0.5)", "    _cst2 = F(np.inf)",
                       "    _cst3 = F(-np.inf)", "    _cst4 = F(1e-05)", "    _cst5 = F(-2)"]
    assert out[6:] == ["    a = _cst0 + _cst1 * x[_cst0]", "    # F(3) in a comment",
                       "    b = _F(2) + _cst2 - _cst3 + _cst4 + _cst5"]


def test_the_branch_budget_counts_what_splits_a_kernels_blocks() -> None:
    def kernel(n: int, read: str = "(x[{k}] if {k} < n else 0.0)") -> str:
        return "def _k(x, n):\n    return " + " + ".join(read.format(k=k) for k in range(n)) + "\n"

    assert within_budget(kernel(MAX_BRANCHES)) and not within_budget(kernel(MAX_BRANCHES + 1))
    # a chained comparison and an inlined helper's call split blocks too
    assert not within_budget(kernel(MAX_BRANCHES // 2 + 1, "(x[{k}] if 0 <= {k} < n else 0.0)"))
    assert not within_budget(kernel(MAX_BRANCHES // 4 + 1, "_step(x[{k}])"))
    assert within_budget(kernel(MAX_BRANCHES, "np.sin(x[{k}])"))
    loops = "def _k(x):\n" + "".join(f"    for i{k} in range(3):\n        pass\n"
                                      for k in range(MAX_BRANCHES + 1))
    assert not within_budget(loops)
    assert within_budget(kernel(MAX_BRANCHES) + "\n" + kernel(MAX_BRANCHES).replace("_k", "_j"))
    assert not within_budget("def _k(x):\n    for i in range(3):\n")  # (runs as NumPy code)


def test_siblings_past_the_branch_budget_run_as_kernels_of_their_own() -> None:
    """Two statements over the same points sharing a read run as one pass; where that kernel
    would be past the budget (each alone is not), they run as two kernels."""
    a = " + ".join(f"x[i + {k}] * x[i + {k}]" for k in range(1, 91))
    b = " + ".join(f"x[i - {k}]" for k in range(1, 91))
    nb = compile_numba(ea.parse(f"def f(x: [N]):\n    a[i: N] = {a}\n    b[i: N] = {b}\n"
                                "    return a, b\n"))
    assert nb.schedule.placement == {"a": "loop", "b": "loop"}
    kernels = {fn.name: branches(fn) for fn in ast.parse(nb.source).body
               if isinstance(fn, ast.FunctionDef) and fn.name.startswith("_k")}
    assert set(kernels) == {"_k_a", "_k_b"} and sum(kernels.values()) > MAX_BRANCHES
    assert max(kernels.values()) <= MAX_BRANCHES
    # (not called: Numba takes about 15 s over the two; each kernel's code is tested elsewhere)


def fuzzed(x, y):  # the fuzzer's seed 3001, case 57 (a NumPy-subset function)
    for _ in range(3):
        y = (x[-1] - np.sum(x[::2]))  # noqa: F841 - as the fuzzer wrote it
    return np.min((np.einsum('ij,j->i', np.full((x.shape[0], x[1:].shape[0],), 100.0), x[1:])
                   * np.maximum(x, x)), axis=0)


def test_a_statement_past_the_branch_budget_runs_as_numpy_code() -> None:
    """The unoptimized gradient of ``fuzzed``: x_bar's kernel (step and max of guarded reads,
    its one-term sums unrolled) held 1087 branches and took 135 s to compile cold; past the
    budget it runs as the NumPy backend's code, with its values. (t1_bar's held 456 while
    ``t1``'s two-point sum was tiled where it read it; summed at each point, 64: a kernel.)"""
    x, y = np.array([0.3, -1.2, 0.7]), 0.5
    g = ea.grad(fuzzed, argnums=(0, 1), optimize=False, backend="numba")
    got = g(x, y)
    placement = g.compiled.schedule.placement
    assert placement["x_bar"] == "numpy" and placement["t1_bar"] == "loop", placement
    kernels = {fn.name: branches(fn) for fn in ast.parse(g.source).body
               if isinstance(fn, ast.FunctionDef) and fn.name.startswith("_k")}
    assert "_k_x_bar" not in kernels and max(kernels.values()) <= MAX_BRANCHES, kernels
    want = ea.grad(fuzzed, argnums=(0, 1), optimize=False)(x, y)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def fuzzed_zero_sum(x, y, C):  # the fuzzer's seed 3002, case 31
    s1 = 0.0
    for _ in range(len(C)):
        s1 += np.dot(np.square(np.full((C[1:].shape[0],), 0.0)),
                     np.full((C[1:].shape[0],), 2.0))
    t2 = C[0]
    return np.sin(np.where(-(s1) >= (y / np.trace(C)), (t2[::2] @ t2[::2]), t2[0]))


def test_a_loop_whose_terms_are_all_strong_zeros_is_not_written() -> None:
    """``s1`` sums a sum of zeros: its accumulator loop got no line inside (every term a
    strong zero), and the kernel was a ``for`` with no body, a syntax error at compile time.
    An empty loop or guard is now left out."""
    args = {"x": 0.5, "y": -1.0, "C": np.arange(9.0).reshape(3, 3) + 1}
    got = ea.compile(fuzzed_zero_sum, backend="numba")(**args)
    assert got == ea.compile(fuzzed_zero_sum)(**args) == np.sin(1.0 + 9.0)
