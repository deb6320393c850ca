"""AD on the worked examples (eqsat_ad/examples.py): the naive adjoint of every example matches
its hand-written gradient and central finite differences; tangents match directional differences;
E7's symbolic Hessian is A + Aᵀ; the paper's k-trace and k-read families have k bracket terms."""

from __future__ import annotations

import numpy as np
import pytest
from test_ad import as_tuple, central_difference, walk, well_formed

from eqsat_ad.ad import hessian_program, jvp, vjp
from eqsat_ad.examples import WORKED_EXAMPLES, WorkedExample, example, k_reads, k_traces
from eqsat_ad.ir import Bracket, Sum
from eqsat_ad.ir.interpreter import evaluate

IDS = [ex.id for ex in WORKED_EXAMPLES]
# Small and all different, so a swapped axis cannot go unnoticed.
SMALL = {"N": 5, "M": 3, "R": 2, "B": 3, "D": 4, "H": 6, "K": 3}


def small_inputs(ex: WorkedExample, seed: int = 0) -> dict:
    return ex.inputs({name: SMALL[name] for name in ex.default_sizes}, seed=seed)


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=IDS)
def test_vjp_matches_hand_written_gradient_and_finite_differences(ex: WorkedExample) -> None:
    prog = ex.program()
    grad = well_formed(vjp(prog, ex.wrt))
    inputs = small_inputs(ex)
    got = as_tuple(evaluate(grad, **inputs, ybar=1.0), len(ex.wrt) > 1)
    by_hand = ex.numpy_grad(**inputs)
    for name, value in zip(ex.wrt, got, strict=True):
        np.testing.assert_allclose(value, by_hand[name], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(
            value, central_difference(prog, inputs, name), rtol=1e-5, atol=1e-7
        )


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=IDS)
def test_jvp_matches_directional_differences(ex: WorkedExample) -> None:
    prog = ex.program()
    tangent = well_formed(jvp(prog, ex.wrt))
    inputs = small_inputs(ex, seed=1)
    rng = np.random.default_rng(7)
    dots = {n: rng.standard_normal(np.shape(inputs[n])) for n in ex.wrt}
    got = evaluate(tangent, **inputs, **{f"{n}_dot": d for n, d in dots.items()})
    eps = 1e-6
    plus = evaluate(prog, **{**inputs, **{n: inputs[n] + eps * d for n, d in dots.items()}})
    minus = evaluate(prog, **{**inputs, **{n: inputs[n] - eps * d for n, d in dots.items()}})
    assert got == pytest.approx((plus - minus) / (2 * eps), rel=1e-5, abs=1e-7)


def test_e7_hessian_is_a_plus_a_transpose() -> None:
    ex = example("E7")
    prog = ex.program()
    hess = well_formed(hessian_program(prog, "x"))
    inputs = small_inputs(ex)
    H = evaluate(hess, **inputs)
    assert ex.numpy_hessian is not None
    np.testing.assert_allclose(H, ex.numpy_hessian(**inputs), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H, inputs["A"] + inputs["A"].T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ex", [e for e in WORKED_EXAMPLES if e.id not in ("mlp",)],
                         ids=[e.id for e in WORKED_EXAMPLES if e.id not in ("mlp",)])
def test_hessian_of_examples_matches_finite_differences_of_gradient(ex: WorkedExample) -> None:
    prog = ex.program()
    x = ex.wrt[0]
    hess = well_formed(hessian_program(prog, x))
    inputs = small_inputs(ex, seed=2)
    grad = vjp(prog, x)
    expected = central_difference(grad, {**inputs, "ybar": 1.0}, x, eps=1e-5)
    np.testing.assert_allclose(evaluate(hess, **inputs), expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_k_traces_naive_adjoint_has_k_brackets(k: int) -> None:
    ex = k_traces(k)
    grad = well_formed(vjp(ex.program(), "A"))
    a_bar = grad.statement("A_bar")
    assert sum(isinstance(e, Bracket) for e in walk(a_bar.body)) == k
    inputs = small_inputs(ex)
    np.testing.assert_allclose(evaluate(grad, **inputs, ybar=1.0), ex.numpy_grad(**inputs)["A"])


@pytest.mark.parametrize("k", [1, 3, 6])
def test_k_reads_naive_adjoint_has_k_point_brackets(k: int) -> None:
    ex = k_reads(k)
    grad = well_formed(vjp(ex.program(), "x"))
    x_bar = grad.statement("x_bar")
    brackets = [e for e in walk(x_bar.body) if isinstance(e, Bracket)]
    assert len(brackets) == k
    assert not any(isinstance(e, Sum) for e in walk(x_bar.body))  # x̄[i] = Σ_t [i = t] 2 x[t]
    inputs = small_inputs(ex)
    np.testing.assert_allclose(evaluate(grad, **inputs, ybar=1.0), ex.numpy_grad(**inputs)["x"])


def test_relation_example_has_no_relation_adjoint() -> None:
    ex = example("E12")
    grad = well_formed(vjp(ex.program(), ex.wrt))
    relations = {p.name for p in grad.params if p.kind == "relation"}
    assert relations
    assert not any(s.name.startswith(tuple(relations)) for s in grad.statements)
    inputs = small_inputs(ex)
    got = as_tuple(evaluate(grad, **inputs, ybar=1.0), len(ex.wrt) > 1)
    for name, value in zip(ex.wrt, got, strict=True):
        np.testing.assert_allclose(value, ex.numpy_grad(**inputs)[name])
