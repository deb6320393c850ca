"""The worked examples: sources parse, the interpreter matches independent NumPy, and the
hand-written gradients (and E7's Hessian) match central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from eqsat_ad.examples import (
    PAPER_EXAMPLES,
    WORKED_EXAMPLES,
    WorkedExample,
    example,
    k_reads,
    k_traces,
)
from eqsat_ad.ir import Program, print_program
from eqsat_ad.ir.interpreter import evaluate

index_lang = pytest.importorskip("eqsat_ad.frontend.index_lang")

IDS = [ex.id for ex in WORKED_EXAMPLES]
# Small sizes, all different, so a transposed or swapped axis cannot go unnoticed.
SMALL = {"N": 5, "M": 3, "R": 2, "B": 3, "D": 4, "H": 6, "K": 3}


def small_sizes(ex: WorkedExample) -> dict[str, int]:
    return {name: SMALL[name] for name in ex.default_sizes}


def program(ex: WorkedExample) -> Program:
    return index_lang.parse(ex.source)


def central_difference(f, inputs: dict, name: str, h: float = 1e-6) -> np.ndarray:
    """d f / d inputs[name], one element at a time."""
    x = np.asarray(inputs[name], dtype=float)
    grad = np.zeros_like(x)
    for pos in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[pos] += h
        minus[pos] -= h
        grad[pos] = (f(**{**inputs, name: plus}) - f(**{**inputs, name: minus})) / (2 * h)
    return grad


def test_registry():
    assert [ex.id for ex in PAPER_EXAMPLES] == [f"E{n}" for n in range(1, 13)]
    assert len(set(IDS)) == len(IDS)
    assert example("e7") is example("E7")
    assert example("chain").id == "chain"
    with pytest.raises(KeyError, match="E13"):
        example("E13")
    with pytest.raises(ValueError):
        k_traces(0)
    with pytest.raises(ValueError):
        k_reads(0)


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=IDS)
def test_source_parses_and_round_trips(ex: WorkedExample):
    prog = program(ex)
    assert ex.program() == prog
    assert index_lang.parse(print_program(prog)) == prog
    names = set(prog.param_names)
    assert set(ex.wrt) <= names
    assert set(prog.size_names()) == set(ex.default_sizes)
    assert set(ex.inputs()) == names


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=IDS)
def test_interpreter_matches_numpy(ex: WorkedExample):
    prog = program(ex)
    for sizes, seed in ((dict(ex.default_sizes), 0), (small_sizes(ex), 1)):
        inputs = ex.inputs(sizes, seed)
        got = evaluate(prog, **inputs)
        assert isinstance(got, float)
        assert got == pytest.approx(ex.numpy_f(**inputs), rel=1e-9, abs=1e-9)
    # positional arguments, in parameter order
    positional = [inputs[p] for p in prog.param_names]
    assert evaluate(prog, *positional) == pytest.approx(ex.numpy_f(**inputs), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("ex", WORKED_EXAMPLES, ids=IDS)
def test_hand_written_gradient_matches_finite_differences(ex: WorkedExample):
    inputs = ex.inputs(small_sizes(ex), seed=2)
    grads = ex.numpy_grad(**inputs)
    assert set(grads) == set(ex.wrt)
    for name in ex.wrt:
        assert grads[name].shape == np.shape(inputs[name])
        fd = central_difference(ex.numpy_f, inputs, name)
        np.testing.assert_allclose(grads[name], fd, rtol=1e-6, atol=1e-6, err_msg=name)


def test_e7_hessian_matches_finite_differences_of_gradient():
    ex = example("E7")
    assert ex.numpy_hessian is not None
    inputs = ex.inputs({"N": 5}, seed=3)
    hess = ex.numpy_hessian(**inputs)

    def grad_entry(j: int):
        return lambda **kw: ex.numpy_grad(**kw)["x"][j]

    # row j of the Hessian is the gradient of d f / d x[j]
    fd = np.stack([central_difference(grad_entry(j), inputs, "x") for j in range(5)])
    np.testing.assert_allclose(hess, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hess, hess.T)


@pytest.mark.parametrize("k", [1, 2, 7])
def test_k_traces_family(k: int):
    ex = k_traces(k)
    prog = program(ex)
    assert len(prog.statements) == k
    inputs = ex.inputs({"N": 6}, seed=k)
    assert evaluate(prog, **inputs) == pytest.approx(k * np.trace(inputs["A"]))
    np.testing.assert_array_equal(ex.numpy_grad(**inputs)["A"], k * np.eye(6))
    np.testing.assert_allclose(ex.numpy_grad(**inputs)["A"],
                               central_difference(ex.numpy_f, inputs, "A"), atol=1e-6)


@pytest.mark.parametrize("k", [1, 3, 9])
def test_k_reads_family_including_reads_past_the_end(k: int):
    ex = k_reads(k)
    prog = program(ex)
    inputs = ex.inputs({"N": 5}, seed=k)
    x = inputs["x"]
    # x[t] for t >= N reads 0, so only the first min(k, N) squares count
    assert evaluate(prog, **inputs) == pytest.approx(float(np.sum(x[: min(k, 5)] ** 2)))
    np.testing.assert_allclose(ex.numpy_grad(**inputs)["x"],
                               central_difference(ex.numpy_f, inputs, "x"), atol=1e-6)


def test_demo_parses_prints_and_evaluates_the_k_trace_program(capsys):
    from eqsat_ad.demo import Demo, run, section_evaluate, section_program

    demo = Demo(k_traces(3), {"N": 8}, seed=4)
    assert run(demo, (section_program, section_evaluate)) == 0
    out = capsys.readouterr().out
    assert "t3 = Sum[i: N](A[i, i])" in out
    assert "agrees" in out and not demo.failures
    assert demo.program is not None and len(demo.program.statements) == 3
    assert evaluate(demo.program, **demo.inputs) == pytest.approx(3 * np.trace(demo.inputs["A"]))


def test_demo_reports_missing_and_failing_stages(capsys):
    from eqsat_ad.demo import Demo, Unavailable, run
    from eqsat_ad.ir import ProgramError

    def missing(demo):
        raise Unavailable("ea.nothing is not available yet")

    def broken(demo):
        raise ProgramError("bad program")

    demo = Demo(k_traces(2), {"N": 3})
    assert run(demo, (missing,)) == 0
    assert "skipped: ea.nothing" in capsys.readouterr().out
    assert run(demo, (missing, broken)) == 1
    out = capsys.readouterr().out
    assert "FAILED: ProgramError: bad program" in out and demo.failures == ["broken"]


def test_demo_runs_every_stage_end_to_end(capsys):
    from eqsat_ad.demo import Demo, run

    demo = Demo(k_traces(3), {"N": 6}, seed=1, timing_n=16, timing_budget=0.001)
    assert run(demo) == 0, demo.failures
    out = capsys.readouterr().out
    assert "A_bar[i: N, j: N] = 3 * ((i == j) * ybar)" in out  # the three bracket terms merged
    assert "np.zeros" in out and "eager tape" in out
    assert "MISMATCH" not in out and "skipped" not in out
