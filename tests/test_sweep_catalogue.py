"""The sweep benchmark's catalogue is right: hand-written gradients match finite differences.

experiments/sweep.py compares eqsat_ad's gradients with the hand-written NumPy gradients of
experiments/sweep_programs.py; this checks the catalogue itself (no timing, small sizes): each
hand gradient against central differences of the program's NumPy function, and each
index-language program's value (reference interpreter) against that NumPy function.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.plan.price import program_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
sweep_programs = importlib.import_module("sweep_programs")
CATALOGUE = sweep_programs.CATALOGUE
sweep_measure = importlib.import_module("sweep_measure")


def test_catalogue_is_large_and_uses_both_front_ends():
    names = [p.name for p in CATALOGUE]
    assert len(names) >= 25 and len(set(names)) == len(names)
    assert {p.frontend for p in CATALOGUE} == {"index", "numpy"}
    assert [len(p.chain) - 1 for p in CATALOGUE if p.chain] == [3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize("prog", CATALOGUE, ids=lambda p: p.name)
def test_hand_gradient_matches_finite_differences(prog):
    inputs = prog.inputs(prog.small, seed=1)
    hand = prog.hand(**inputs)
    assert set(hand) == set(prog.wrt)
    for name in prog.wrt:
        assert hand[name].shape == np.shape(inputs[name]), name
        fd = sweep_measure.central_differences(prog.f, inputs, name)
        np.testing.assert_allclose(hand[name], fd, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("prog", [p for p in CATALOGUE if p.frontend == "index"],
                         ids=lambda p: p.name)
def test_index_program_computes_the_numpy_function(prog):
    inputs = prog.inputs(prog.small, seed=2)
    got = ea.evaluate(prog.program(), **inputs)
    assert float(got) == pytest.approx(prog.f(**inputs), rel=1e-9, abs=1e-9)


# ================================================================================================
# The sweep's reading of the cost report and of numpy's einsum path
# ================================================================================================



def test_report_prices_reads_the_current_report():
    prog = ea.parse("""
def f(A: [N, N], x: [N]):
    y[i: N] = Sum[j: N](A[i, j] * x[j])
    return Sum[i: N](x[i] * y[i])
""")
    g = ea.grad(prog, wrt="x", sizes={"N": 300})
    report = g.report
    got = sweep_measure.report_prices(report)
    # the prices of the plans the backend runs, at the report's sizes, and the call's finite
    # scan of the arguments the code trusts (here x: N / 2)
    naive = program_plan(g.naive, {"N": 300}).value({"N": 300}) + 150
    assert got["naive"] == float(report.naive.value) == float(naive)
    assert got["optimized"] == float(report.optimized.value)
    assert got["speedup"] == pytest.approx(report.speedup)
    assert got["largest_optimized"] == float(report.optimized.largest_value)
    # the eager-AD column: no largest intermediate of its own
    assert got["eager"] == float(report.eager_value) >= got["naive"]
    assert got["largest_eager"] is None


class _FutureReport:
    """A report priced from one plan, with an eager-AD column (the shape issue 10 asks for)."""

    def to_dict(self):
        return {
            "columns": {
                "eager_ad": {"price": 3200, "largest_intermediate": {"value": 400}},
                "naive": {"price": 200},
                "optimized": {"price": 100, "largest_intermediate": {"value": 20}},
            }
        }


def test_report_prices_reads_an_eager_column_and_derives_the_speedup():
    got = sweep_measure.report_prices(_FutureReport())
    assert (got["eager"], got["naive"], got["optimized"]) == (3200, 200, 100)
    assert got["speedup"] == 2.0
    assert (got["largest_eager"], got["largest_optimized"]) == (400, 20)


def test_einsum_optimal_cost_prices_each_contraction():
    # Σ A B over (2, 3) x (3, 4): one contraction, iterating 2·3·4 and writing a scalar.
    assert sweep_measure.einsum_optimal_cost([(2, 3), (3, 4)])["cost"] == 2 * 3 * 4 + 1
    # Σ A B C, (50, 1) x (1, 50) x (50, 1): the optimal path contracts B C first (iterating
    # 1·50·1, writing 1·1), then A with it (50·1·1, writing a scalar), never over 50·50.
    three = sweep_measure.einsum_optimal_cost([(50, 1), (1, 50), (50, 1)])["cost"]
    assert three == (50 + 1) + (50 + 1)


def test_same_code_ignores_comments_and_einsum_letters_only():
    naive = ("def g(A, x):\n    # y = ...\n    _t1 = np.einsum('bc->b', A)\n"
             "    return _t1 @ x\n")
    renamed = ("def g(A, x):\n    # y[i: N] = ...\n    _t1 = np.einsum('cb->c', A)\n"
               "    return _t1 @ x\n")
    other = ("def g(A, x):\n    _t1 = np.einsum('bc->c', A)\n    return _t1 @ x\n")
    assert sweep_measure.same_code(naive, renamed)
    assert not sweep_measure.same_code(naive, other)  # a column sum, not a row sum
    assert not sweep_measure.same_code(naive, naive.replace("@ x", "@ x.T"))
