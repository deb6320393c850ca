"""The NumPy backend's finiteness checks: which values the generated code checks for inf and
nan (a parameter through its product, or scanned), and that a non-finite value anywhere gives
the reference interpreter's answer (IEEE products, strong zeros kept)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params
from test_backend import assert_same, run_both

import eqsat_ad as ea
from eqsat_ad.ad import vjp
from eqsat_ad.backend import runtime
from eqsat_ad.backend.numpy import lower_program

_LAYER = """
def f(x: [B, N], W: [N, N], b: [N]):
    t[i: B, j: N] = Sum[k: N](x[i, k] * W[k, j])
    h[i: B, j: N] = tanh(t[i, j] + b[j])
    g[i: N, j: N] = Sum[l: B](x[l, i] * h[l, j])
    return h, g
"""


def test_a_large_parameter_is_checked_through_its_product():
    # W (N x N) is read only by x @ W (B x N): checking the product is cheaper than scanning W.
    prog = ea.parse(_LAYER)
    lowered = lower_program(prog, {"B": 2, "N": 50})
    inputs = {d.detail for d in lowered.decisions if d.kind == "finite-input"}
    results = {d.detail for d in lowered.decisions if d.kind == "finite-result"}
    assert "W" not in inputs and "W" in results
    # x is also read by the N x N product g: scanning x (B x N) is cheaper there.
    assert {"x", "b"} <= inputs
    assert "_rt.checked(x @ W)" in lowered.source
    assert "_rt.checked(" not in lowered.source.split("g = ")[1]
    # With unknown sizes, W is still the larger operand.
    assert "W" not in {d.detail for d in lower_program(prog).decisions if d.kind == "finite-input"}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in the interpreter
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", ["W", "x", "b"])
def test_a_non_finite_parameter_checked_anywhere_gives_the_interpreters_answer(bad, where):
    prog = ea.parse(_LAYER)
    rng = np.random.default_rng(4)
    inputs = {"x": rng.normal(size=(3, 6)), "W": rng.normal(size=(6, 6)), "b": rng.normal(size=6)}
    assert_same(*run_both(prog, inputs))
    inputs["x"][:, 1] = 0.0  # the bad W row meets only zeros: 0 * inf is nan (IEEE)
    inputs[where][(1,) * inputs[where].ndim] = bad
    got, want = run_both(prog, inputs)
    assert_same(got, want)
    if where == "W":
        assert np.isnan(got[0][:, 1]).all()


def test_checked_raises_on_a_non_finite_result():
    assert runtime.checked(np.ones(2)).tolist() == [1, 1]
    for bad in (np.inf, np.nan):
        with pytest.raises(runtime.NonFinite):
            runtime.checked(np.array([1.0, bad]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in the interpreter
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=3, scalar_output=False), sizes_strategy(), st.integers(0, 2**16),
       st.booleans(), st.sampled_from([np.inf, -np.inf, np.nan]))
def test_random_programs_with_non_finite_inputs_match_interpreter(prog, sizes, seed, adjoint,
                                                                   bad):
    # One entry inf/nan, some entries 0 (so that 0 * inf appears): the compiled code, whichever
    # way it checks finiteness, must give the interpreter's strong-zero answers.
    if adjoint:
        names = tensor_params(prog)
        if names and len(prog.outputs) == 1:
            prog = vjp(prog, names[0])
    rng = np.random.default_rng(seed)
    inputs = random_inputs(prog, sizes, rng)
    arrays = [n for n, v in inputs.items() if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    if not arrays:
        return
    for n in arrays:
        inputs[n][rng.random(inputs[n].shape) < 0.3] = 0.0
    target = arrays[int(rng.integers(len(arrays)))]
    inputs[target].flat[int(rng.integers(inputs[target].size))] = bad
    got, want = run_both(prog, inputs)
    assert_same(got, want, rtol=1e-7, atol=1e-9)


_CHECKED_BODIES = (
    "y[i: N] = Sum[j: M](A[i, j] * x[j])",
    "y[i: N] = Sum[j: M](A[i, j] * x[j] * x[j])",
    "y[i: N] = Sum[j: M](A[i, j] * A[i, j])",
    "y[i: N] = Sum[j: M](A[i, j] * x[M - 1 - j]) + Sum[j: M](A[i, j])",
    "y[i: N] = Sum[k: N](Sum[j: M](A[i, j] * A[k, j]) * u[k])",
    "y[i: N] = Sum[j: M](A[i, j] * B[j, i]) + u[i] * x[0]",
)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in the interpreter
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(_CHECKED_BODIES), sizes_strategy(), st.integers(0, 2**16),
       st.sampled_from([np.inf, -np.inf, np.nan]), st.sampled_from(["A", "B", "x", "u"]))
def test_products_checked_by_their_result_keep_strong_zero(body, sizes, seed, bad, target):
    # The product's result is checked instead of its operands; downstream products with zeros
    # (z) must still see strong-zero values when an operand held inf/nan.
    prog = ea.parse(
        f"def f(A: [N, M], B: [M, N], x: [M], u: [N]):\n    {body}\n"
        "    z[i: N] = y[i] * u[i]\n    return z, y\n"
    )
    rng = np.random.default_rng(seed)
    inputs = random_inputs(prog, sizes, rng)
    for n in inputs:
        inputs[n][rng.random(inputs[n].shape) < 0.4] = 0.0
    assert_same(*run_both(prog, inputs))
    inputs[target].flat[int(rng.integers(inputs[target].size))] = bad
    assert_same(*run_both(prog, inputs))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf
def test_a_factor_that_may_be_inf_stays_inside_its_sum():
    """Σ_j A[i, j] * x[i] is not x[i] * Σ_j A[i, j] when x[i] = inf and row i of A has both
    signs (nan, not inf): with inf/nan inputs the product is summed as written."""
    prog = ea.parse("def f(x: [N], A: [N, N]):\n    y[i: N] = Sum[j: N](A[i, j] * x[i])\n"
                    "    return y")
    A = np.array([[-0.5, 0.75], [-0.25, -0.125]])
    for bad in (np.inf, -np.inf, np.nan):
        x = np.array([bad, 0.0])
        got, want = run_both(prog, {"x": x, "A": A})
        assert np.isnan(got[0]) and got[1] == 0.0
        assert_same(got, want)
    # Finite inputs keep the hoisted form (the row sum, then one product).
    assert "A.sum(axis=1)" in lower_program(prog).source
    # A computed factor that may overflow is checked before it leaves the sum.
    risky = ea.parse("def g(x: [N], A: [N, N]):\n    y[i: N] = Sum[j: N](A[i, j] * exp(x[i]))\n"
                     "    return y")
    assert "_rt.checked(" in lower_program(risky).source
    x = np.array([1000.0, 0.0])
    got, want = run_both(risky, {"x": x, "A": A})
    assert_same(got, want)
