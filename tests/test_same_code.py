"""Optimized code that is the naive program's very code runs as optimize=False runs it
(plan/same_code.py, CompiledProgram._plain): no guard, no pass over an argument, the same
function object; real rewrites stay guarded. Counted, never timed."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend import guard
from eqsat_ad.backend import numpy as backend
from eqsat_ad.examples import example
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.plan.same_code import canonical_code, same_code

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# E6's gradient, naive and optimized, as the backend lowers them (comments left out)
NAIVE = """def g(A, x):
    \"\"\"naive\"\"\"
    _dt = _rt.float_type(A, x)
    y = _rt.checked(A @ x)
    y_bar = x
    A_bar = y_bar[:, None] * x[None, :]
    _t2 = _rt.checked(y_bar @ A)
    x_bar = y + _t2
    return A_bar, x_bar
"""
OPTIMIZED = """def g(A, x):
    \"\"\"optimized\"\"\"
    _dt = _rt.float_type(A, x)
    y_bar = x
    A_bar = x[:, None] * x[None, :]
    _t1 = _rt.checked(A @ x)
    _t2 = _rt.checked(y_bar @ A)
    x_bar = _t1 + _t2
    return A_bar, x_bar
"""


def test_names_order_and_einsum_letters_do_not_matter() -> None:
    assert same_code(NAIVE, OPTIMIZED)
    a = "def g(C):\n    _t8 = _rt.checked(np.einsum('bc->b', C))\n    return _t8\n"
    b = "def g(C):\n    _t1 = _rt.checked(np.einsum('cb->c', C))\n    return _t1\n"
    assert same_code(a, b)
    assert canonical_code(a)[0] == "values"
    # a local read before its assignment raises in Python: never the same as a global read
    early = "def g(a):\n    y = foo\n    foo = 1\n    z = 1\n    return y\n"
    assert not same_code(early, "def g(a):\n    y = foo\n    z = 1\n    return y\n")


@pytest.mark.parametrize("other", [
    OPTIMIZED.replace("_t1 + _t2", "_t2 + _t1"),              # (an other expression)
    OPTIMIZED.replace("A @ x", "A.T @ x"),
    OPTIMIZED.replace("return A_bar, x_bar", "return x_bar, A_bar"),
    OPTIMIZED.replace("    x_bar =", "    _t9 = _rt.checked(A * A)\n    x_bar ="),  # a check more
    OPTIMIZED.replace("_rt.checked(A @ x)", "A @ x"),        # a check less
    OPTIMIZED.replace("x_bar = _t1 + _t2", "x_bar = np.add(_t1, _t2, out=_t1)"),
    OPTIMIZED.replace("    return", "    A_bar[0, 0] = 0.0\n    return"),
    OPTIMIZED.replace("def g(A, x)", "def g(x, A)"),
])
def test_different_code_is_told_apart(other: str) -> None:
    assert not same_code(NAIVE, other)


def test_code_with_loops_compares_exactly_up_to_local_names() -> None:
    a = ("def g(A, B):\n    out = np.zeros((2, 3))\n    for _k1 in range(1, 3):\n"
         "        _t2 = A[_k1 - 1] @ B\n        out[_k1 - 1] += _t2\n    return out\n")
    b = a.replace("_k1", "_k7").replace("_t2", "_t9").replace("out", "A_bar")
    assert canonical_code(a)[0] == "exact" and same_code(a, b)
    assert not same_code(a, a.replace("+=", "-="))
    assert not same_code(a, a.replace("range(1, 3)", "range(1, 2)"))
    # a global is not a local: renaming np would be another function
    assert not same_code(a, a.replace("np.zeros", "xp.zeros"))


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every scan the guard makes of the arguments (its magnitudes, exact ranges)."""
    seen: list[str] = []
    for name in ("_magnitudes", "_refined"):
        real = getattr(guard, name)

        def spy(*a, _real=real, _name=name):
            seen.append(_name)
            return _real(*a)

        monkeypatch.setattr(guard, name, spy)
    return seen


def test_the_quadratic_form_gradient_runs_the_naive_code_with_no_pass_over_A(monkeypatch):
    """E6 (y = A x; f = x . y): the optimizer inlines y, and the backend computes exactly what
    it computed before. The call runs the unoptimized program's own function: the guard reads
    no argument, finite or not, and an inf in A gives the interpreter's (and optimize=False's)
    values."""
    ex = example("E6")
    prog = ex.program()
    g = ea.grad(prog, wrt=ex.wrt, sizes={"N": 6})
    naive = ea.grad(prog, wrt=ex.wrt, optimize=False)
    assert g.program != naive.program and g.report.same_code
    scans = _count_scans(monkeypatch)
    inputs = ex.inputs({"N": 6}, seed=3)
    for a in (inputs["A"], np.where(np.eye(6) > 0, np.inf, inputs["A"])):
        got, want = g(a, inputs["x"]), naive(a, inputs["x"])
        for u, v in zip(got, want, strict=True):
            np.testing.assert_array_equal(u, v)
    ref = evaluate(ea.vjp(prog, wrt=ex.wrt), A=a, x=inputs["x"], ybar=1.0)
    for u, v in zip(g(a, inputs["x"]), ref, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12)
    assert scans == [] and g.compiled.fallback.calls == 0
    # the very function optimize=False runs
    cp = g.compiled
    plain = next(iter(cp._plain_by.values()))
    assert plain is not None and plain.program == cp.fallback.compiled().program


@pytest.mark.parametrize("name, sizes", [
    ("chain", {"N": 40, "R": 3}),
])
def test_matrix_chain_gradients_take_the_unguarded_path(monkeypatch, name, sizes) -> None:
    ex = example(name)
    g = ea.grad(ex.program(), wrt=ex.wrt, sizes=sizes)
    scans = _count_scans(monkeypatch)
    inputs = ex.inputs(sizes, seed=1)
    for _ in range(3):
        got = g(**inputs)
    hand = ex.numpy_grad(**inputs)
    for k, w in enumerate(ex.wrt):
        np.testing.assert_allclose(got[k], hand[w], rtol=1e-9, atol=1e-12)
    assert scans == [] and g.report.same_code


def test_a_chain_forward_at_thin_thick_sizes_is_the_naive_code(monkeypatch) -> None:
    """Σ A0 A1 A2 A3 with sizes 8, 64, 8, 64, 8 (the sweep's chain4, smaller): the optimizer's
    regrouping lowers to the same contractions, so the forward runs unguarded too."""
    dims = (8, 64, 8, 64, 8)
    params = ", ".join(f"A{k}: [D{k}, D{k + 1}]" for k in range(4))
    body = " * ".join(f"A{k}[i{k}, i{k + 1}]" for k in range(4))
    gens = ", ".join(f"i{k}: D{k}" for k in range(5))
    prog = ea.parse(f"def c4({params}):\n    return Sum[{gens}]({body})\n")
    sizes = {f"D{k}": d for k, d in enumerate(dims)}
    f = ea.compile(prog, sizes=sizes)
    scans = _count_scans(monkeypatch)
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((dims[k], dims[k + 1])) for k in range(4)]
    np.testing.assert_allclose(f(*mats), np.sum(np.linalg.multi_dot(mats)), rtol=1e-10)
    assert scans == [] and f.report.same_code


def test_real_rewrites_stay_guarded_with_one_pass_per_call(monkeypatch) -> None:
    """E2's gradient (of four traces of A) is one bracket times 4, the four terms merged: other
    code, so each call is guarded, with one magnitude pass (per read argument) and no more."""
    ex = example("E2")
    g = ea.grad(ex.program(), wrt=ex.wrt, sizes={"N": 5})
    scans = _count_scans(monkeypatch)
    inputs = ex.inputs({"N": 5}, seed=0)
    for k in range(3):
        g(**inputs)
        assert scans == ["_magnitudes"] * (k + 1)
    assert not g.report.same_code and g.compiled.fallback.calls == 0


def test_the_decision_is_made_once_per_signature(monkeypatch) -> None:
    calls = {"n": 0}
    real = backend.same_code

    def counting(a: str, b: str) -> bool:
        calls["n"] += 1
        return real(a, b)

    monkeypatch.setattr(backend, "same_code", counting)
    ex = example("E6")
    g = ea.grad(ex.program(), wrt=ex.wrt)
    for n in (4, 4, 4, 7, 7, 4):
        g(**ex.inputs({"N": n}))
    assert calls["n"] == 2
    # where the cost report found other code (E2's traces merged), no call compares
    ex = example("E2")
    g = ea.grad(ex.program(), wrt=ex.wrt)
    assert not g.report.same_code
    for n in (4, 7):
        g(**ex.inputs({"N": n}))
    assert calls["n"] == 2


def test_keyword_calls_skip_the_binder_after_the_first(monkeypatch) -> None:
    """A call by keyword with every parameter named is the positional call: repeated calls
    with arrays of one signature go straight to the cached function."""
    binds = {"n": 0}
    real = backend.CompiledProgram.bind

    def counting(self, *a, **kw):
        binds["n"] += 1
        return real(self, *a, **kw)

    monkeypatch.setattr(backend.CompiledProgram, "bind", counting)
    ex = example("E6")
    inputs = ex.inputs({"N": 4})
    for optimize in (True, False):
        g = ea.grad(ex.program(), wrt=ex.wrt, optimize=optimize)
        g(**inputs)
        binds["n"] = 0
        for _ in range(3):
            g(**inputs)
        assert binds["n"] == 0
        g(**{**inputs, "x": list(inputs["x"])})  # (a list: the binder converts it)
        assert binds["n"] == 1


def test_two_programs_optimized_to_one_keep_their_own_unoptimized_programs() -> None:
    """``Σ_j -x[j]`` and ``-Σ_j x[j]`` are optimized to one program, whose compiled form is
    cached and shared; each guarded copy remembers its own unoptimized program per call
    signature (the second once ran the first's code: +inf for the -0.0 sum's -inf)."""
    got = {}
    for body in ("Sum[j: N](-x[j])", "-Sum[j: N](x[j])"):
        prog = ea.parse(f"def f(x: [N], y: [N]):\n    return 1 / ({body}) + y[0]\n")
        inputs = {"x": np.array([0.0, 0.0]), "y": np.array([1.0, 1.0])}
        with np.errstate(divide="ignore"):
            want = ea.evaluate(prog, **inputs)
            got[body] = ea.compile(prog)(**inputs)
        assert got[body] == want
    assert got == {"Sum[j: N](-x[j])": np.inf, "-Sum[j: N](x[j])": -np.inf}
