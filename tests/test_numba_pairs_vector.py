"""The pair loop's vectorized form (backend/fused/pairs.py): per row, the inner loop writes the
row terms to a scratch row and adds the column terms into rows stored along the pairs' index,
then the row sums add the scratch row in order. The values are those of the scalar loop in the
interpreter's order, bit for bit (a scalar evaluator of the program in that order is the
reference here), in float64 and float32, for any N (vector width or not, N = 1 and 2), with
nan and inf wherever they are; the inner loop runs packed square roots and divisions."""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.ir.expr import Access, Binary, Call, Const, Expr, Neg, Pow, Sum
from eqsat_ad.ir.index import Affine
from eqsat_ad.ir.interpreter import evaluate

numba = pytest.importorskip("numba")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
NBODY = importlib.import_module("fused_programs").PROGRAMS["nbody"]
SIZES = (1, 2, 3, 17, 67)  # vectors of 8 (float64) or 16 (float32) lanes: remainders too


pytestmark = pytest.mark.usefixtures("numba_cache")


def _at(a: Affine, env: Mapping[str, int], sizes: Mapping[str, int]) -> int:
    v = a.const + sum(c * env[n] for n, c in a.index) + sum(c * sizes[n] for n, c in a.sizes)
    assert v.denominator == 1
    return int(v)


def _scalar(e: Expr, env: dict[str, int], arrays: Mapping[str, np.ndarray],
            sizes: Mapping[str, int], F: type) -> np.floating:
    """``e`` at one point in float type ``F``, one operation at a time, a sum adding its terms
    to F(0) in order of its index (the interpreter's order; plain arithmetic only)."""
    if isinstance(e, Const):
        return F(e.value)
    if isinstance(e, Access):
        a = arrays[e.name]
        idx = tuple(_at(x, env, sizes) for x in e.indices)
        inside = all(0 <= i < n for i, n in zip(idx, a.shape, strict=True))
        return a[idx] if inside else F(0)
    if isinstance(e, Neg):
        return -_scalar(e.arg, env, arrays, sizes, F)
    if isinstance(e, Binary):
        a = _scalar(e.lhs, env, arrays, sizes, F)
        b = _scalar(e.rhs, env, arrays, sizes, F)
        ops = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
        return ops[e.op](a, b)
    if isinstance(e, Pow):  # as the loop writer spells powers (LoopWriter.power)
        v = _scalar(e.base, env, arrays, sizes, F)
        if e.exponent == 2:
            return v * v
        assert e.exponent == 0.5, e
        return np.sqrt(v)
    if isinstance(e, Call):
        assert e.fn in ("sqrt", "abs"), e.fn
        v = _scalar(e.args[0], env, arrays, sizes, F)
        return np.sqrt(v) if e.fn == "sqrt" else np.abs(v)
    assert isinstance(e, Sum) and len(e.indices) == 1, e
    iv = e.indices[0]
    acc = F(0)
    for j in range(int(sizes[iv.extent.name] if not isinstance(iv.extent, int) else iv.extent)):
        acc = acc + _scalar(e.body, {**env, iv.name: j}, arrays, sizes, F)
    return acc


def _sequential(prog: ea.Program, args: Mapping[str, np.ndarray], sizes: Mapping[str, int],
                F: type) -> np.ndarray:
    """The program's value computed point by point in ``F`` (:func:`_scalar`)."""
    arrays = dict(args)
    for s in prog.statements:
        ext = [int(iv.extent) if isinstance(iv.extent, int) else sizes[iv.extent.name]
               for iv in s.indices]
        out = np.empty(ext, dtype=F)
        for point in np.ndindex(*ext):
            env = {iv.name: int(v) for iv, v in zip(s.indices, point, strict=True)}
            out[point] = _scalar(s.body, env, arrays, sizes, F)
        arrays[s.name] = out
    (o,) = prog.outputs
    return arrays[o.name]


def _nbody_args(n: int, dtype: type, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, 3)).astype(dtype),
            "m": (np.abs(rng.standard_normal(n)) + 0.1).astype(dtype)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", SIZES)
def test_nbody_values_are_the_sequential_order_bit_for_bit(n: int, dtype: type) -> None:
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    assert g.compiled.schedule.placement["x_bar"] == "pairs"
    src = g.source
    # the row terms to a scratch row, the column terms into rows along _q, x read rotated
    assert "_pt[0, _q] = " in src and "_s1[0, _q] += " in src and "_rot_x[0, _q]" in src
    args = _nbody_args(n, dtype, seed=n)
    got = g(**args)
    assert got.dtype == dtype
    want = _sequential(g.program, args, {"N": n}, dtype)
    np.testing.assert_array_equal(got, want)
    ref = evaluate(g.program, **{k: v.astype(np.float64) for k, v in args.items()})
    agree(got, ref, 1e-9 if dtype == np.float64 else 2e-3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 17, 67])
def test_nan_and_inf_anywhere_follow_the_interpreter(n: int, dtype: type) -> None:
    # The gradient program compiled as it is (no guard: the pair loop itself runs on nan
    # and inf), at points in the vector body and in the remainder of the inner loop.
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    f = ea.compile(g.program, backend="numba", optimize=False)
    assert f.compiled.schedule.placement["x_bar"] == "pairs"
    for seed, (where, what) in enumerate([((0, 0), np.nan), ((n - 1, 2), np.inf),
                                          ((n // 2, 1), -np.inf), ("m", np.inf),
                                          ("m", np.nan)]):
        args = _nbody_args(n, dtype, seed)
        if where == "m":
            args["m"][n - 1 - seed % n] = what
        else:
            args["x"][where] = what
        with np.errstate(all="ignore"):
            got = f(**args)
            want = _sequential(g.program, args, {"N": n}, dtype)
            ref = evaluate(g.program, **{k: v.astype(np.float64) for k, v in args.items()})
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
        agree(got, ref, 1e-9 if dtype == np.float64 else 2e-3)


TWO_COORDINATES = ("def f(x: [N, 2], A: [N, N]):\n    e[i: N, j: N] = abs(A[i, j]) * 0.5 + 1\n"
                   "    y[i: N, k: 2] = (Sum[j: N](e[j, i] * x[j, k]) * x[i, k]\n"
                   "                     + Sum[j: N](sqrt(e[i, j] ** 2 + 1) * x[j, k]))\n"
                   "    return y\n")
NO_COORDINATE = ("def f(x: [N], A: [N, N]):\n    e[i: N, j: N] = abs(A[i, j]) * 0.5 + 1\n"
                 "    y[i: N] = Sum[j: N](e[j, i] * x[j]) - Sum[j: N](sqrt(e[i, j]) * x[j])\n"
                 "    return y\n")


@pytest.mark.parametrize("src", [TWO_COORDINATES, NO_COORDINATE])
@pytest.mark.parametrize("n", [1, 2, 9, 33])
def test_row_and_column_terms_with_and_without_other_indices(n: int, src: str) -> None:
    # a fused pair value read both ways, a body outside the sums; two coordinates (the scratch
    # rows and the rotated copy of x serve every k) or none (rows of one entry per point):
    # bit for bit the sequential order
    f = ea.compile(ea.parse(src), backend="numba", optimize=False)
    assert f.compiled.schedule.placement == {"e": "fused", "y": "pairs"}
    rng = np.random.default_rng(n)
    for dtype in (np.float64, np.float32):
        x_shape = (n, 2) if src == TWO_COORDINATES else (n,)
        args = {"x": rng.standard_normal(x_shape).astype(dtype),
                "A": rng.standard_normal((n, n)).astype(dtype)}
        if n > 2:
            args["A"][n - 1, 1] = np.nan
        with np.errstate(all="ignore"):
            got = f(**args)
            want = _sequential(f.program, args, {"N": n}, dtype)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


def test_the_inner_loop_is_vectorized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packed square roots and divisions on ymm or zmm registers (on a CPU with AVX2 or
    AVX-512; elsewhere the test does not apply)."""
    import llvmlite.binding as llvm

    if not llvm.get_host_cpu_features().get("avx2"):
        pytest.skip("no AVX2 on this CPU")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))  # compiled here: asm to inspect
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    from eqsat_ad.backend.fused.program import NumbaProgram

    nb = NumbaProgram(g.program)
    for dtype, s in ((np.float64, "d"), (np.float32, "s")):
        args = _nbody_args(33, dtype, 0)
        nb(**args)
        kernel = nb._module(np.dtype(dtype))._k_x_bar
        asm = kernel.inspect_asm(kernel.signatures[0])
        for op in ("vsqrtp", "vdivp"):
            assert any(f"{op}{s}\t%{r}" in asm for r in ("zmm", "ymm")), (dtype, op)
    assert math.isfinite(float(np.sum(nb(**_nbody_args(5, np.float64, 1)))))
