"""Built-in functions in the fused loops against the reference interpreter, bit for bit where
Numba's scalar functions and NumPy's differ: the maximum and minimum of equal signed zeros (as
NumPy's kernels: the second argument on x86, not ``where(a >= b, a, b)``), with nan from either
argument, and the sign of -0.0 (+0.0, where Numba's np.sign keeps -0.0)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

SPECIAL = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_maximum_and_minimum_are_numpys_on_every_pair_of_special_values(fn, dtype) -> None:
    # (the reciprocal shows a zero's sign as an infinity's: fuzz seed 3017, case 211)
    prog = ea.parse(f"def f(a: [N], b: [N]):\n    y[i: N] = {fn}(a[i], b[i]) ** -1\n"
                    "    return y\n")
    g = ea.compile(prog, backend="numba", optimize=False)
    assert g.compiled.fallback is None and g.compiled.schedule.placement == {"y": "loop"}
    pairs = [(p, q) for p in SPECIAL for q in SPECIAL]
    a = np.array([p for p, _ in pairs], dtype=dtype)
    b = np.array([q for _, q in pairs], dtype=dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(evaluate(prog, a=a, b=b))
        got = g(a=a, b=b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)  # (nan where nan)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sign_is_numpys_on_special_values(dtype) -> None:
    prog = ea.parse("def f(a: [N]):\n    y[i: N] = sign(a[i]) ** -1\n    return y\n")
    g = ea.compile(prog, backend="numba", optimize=False)
    assert g.compiled.fallback is None and g.compiled.schedule.placement == {"y": "loop"}
    a = np.array([*SPECIAL, 1e-320, -1e-320, 2.5, -2.5], dtype=dtype)
    with np.errstate(all="ignore"):
        want = np.asarray(evaluate(prog, a=a))
        got = g(a=a)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize(("body", "helpers", "vmath"), [
    ("max(a[i], 0.0) * b[i]", {"_maximum"}, False),
    ("exp(a[i]) + tanh(b[i])", {"_exp", "_tanh"}, True),
    ("a[i] * b[i] + 1.0", set(), False),
])
def test_a_module_carries_only_the_helpers_its_kernels_call(body, helpers, vmath) -> None:
    """The generated source defines the helpers its loops call and no others, and imports
    vmath (with its file's digest, which keys Numba's cache) exactly where one of them needs
    it; the module compiles and agrees with the interpreter."""
    from eqsat_ad.backend.fused.functions import HELPERS, helpers_for

    prog = ea.parse(f"def f(a: [N], b: [N]):\n    y[i: N] = {body}\n    return y\n")
    g = ea.compile(prog, backend="numba", optimize=False)
    assert g.compiled.schedule.placement == {"y": "loop"}
    every = {line.split("(")[0].removeprefix("def ") for line in HELPERS.splitlines()
             if line.startswith("def _")}
    assert helpers <= every
    defined = {n for n in every if f"def {n}(" in g.source}
    assert defined == helpers
    vmath_line = HELPERS.strip().splitlines()[0]
    assert (vmath_line in g.source) == vmath and ("# vmath " in vmath_line)
    imports, code = helpers_for("z = _sign(x) + np._step(x)")  # (np._step: not a helper call)
    assert imports == [] and "def _sign(" in code and "def _step(" not in code
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(50), rng.standard_normal(50)
    np.testing.assert_allclose(g(a=a, b=b), evaluate(prog, a=a, b=b), rtol=1e-13, atol=0)
