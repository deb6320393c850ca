"""The cost report: figures are the prices of the plans, the table reads, the dict is JSON."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, tensor_params

from eqsat_ad import CostReport
from eqsat_ad.ad import vjp
from eqsat_ad.cost import program_cost
from eqsat_ad.cost.poly import as_poly, big_o
from eqsat_ad.cost.report import DEFAULT_SIZE, SaturationStats
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import EqsatError
from eqsat_ad.ir.index import size

N, R = size("N"), size("R")

NAIVE = parse("""
def f(A: [N, N], ybar: []):
    A_bar[i: N, j: N] = Sum[k: N]((i == k and j == k) * ybar)
    return A_bar
""")
OPTIMIZED = parse("""
def f(A: [N, N], ybar: []):
    A_bar[i: N, j: N] = (i == j) * ybar
    return A_bar
""")
STATS = SaturationStats(
    iterations=4, nodes=321, classes=87, seconds=0.25, stop_reason="saturated",
    rule_counts={"sum-elim-eq": 3, "bracket-and": 5},
)


def test_figures_are_the_prices_of_the_plans():
    sizes = {"N": 64}
    rep = CostReport.build(NAIVE, OPTIMIZED, sizes, STATS)
    naive, opt = program_cost(NAIVE, sizes), program_cost(OPTIMIZED, sizes)
    assert rep.naive.total == naive.total and rep.optimized.total == opt.total
    # the backend solves k = i in the naive sum while lowering: both plans are one zero-fill,
    # one index range and one diagonal scatter, N**2 + 2*N elements touched
    assert naive.plan.kinds() == opt.plan.kinds() == ["fill", "fill", "scatter"]
    assert rep.naive.total == N**2 + 2 * N == rep.optimized.total
    kernels = naive.plan.kernels
    assert rep.naive.value == 64**2 + 2 * 64 == sum(k.cost.evaluate(sizes) for k in kernels)
    assert rep.speedup == 1.0 and rep.eager_value == rep.naive.value  # one term: nothing to sum
    assert rep.naive.big_o == "O(N**2)" == rep.optimized.big_o
    assert rep.naive.largest is not None and rep.naive.largest.elements.to_sympy() == N**2
    assert rep.sizes == sizes and rep.defaulted == ()
    assert [r.name for r in rep.naive.rows] == ["A_bar", "<return>"]
    assert rep.naive.rows[0].cost == naive.statements["A_bar"]


def test_eager_ad_pays_one_dense_adjoint_per_indexing_operation():
    from eqsat_ad.examples import k_traces

    k = 32
    fwd = k_traces(k).program()
    naive = vjp(fwd, "A")
    rep = CostReport.build(naive, naive, {"N": 100})
    # k terms [i == j] * t_bar: the naive plan zero-fills once and scatters k diagonals; a tape
    # builds k dense N x N adjoints
    a_bar = next(s for s in naive.statements if s.name == "A_bar")
    assert sum(1 for k_ in rep.naive.cost.plan.kernels
               if k_.statement == "A_bar" and k_.kind == "scatter") == k
    assert rep.eager == rep.naive.cost.total_poly + as_poly((k - 1) * N**2)
    assert rep.eager.leading().to_sympy() == k * N**2
    assert rep.naive.cost.total_poly.leading().to_sympy() == N**2
    assert rep.eager_speedup == pytest.approx(float(rep.eager_value / rep.naive.value))
    assert a_bar.shape == (N, N)


def test_table_shows_three_columns_scaling_largest_why_and_statements():
    text = str(CostReport.build(NAIVE, OPTIMIZED, {"N": 64}, STATS))
    for expected in [
        "sizes: N=64", "scaling", "O(N**2)", "eager AD", "naive adjoint", "optimized",
        "speed-up of optimized", "prices of the plans the backend runs",
        "largest intermediate", "N**2 = 4096 (A_bar)",
        "321 nodes, 87 classes, 4 iterations, 0.25 s, stopped: saturated",
        "naive program", "optimized program",
        "A_bar[i: N, j: N] = Sum[k: N]((i == k and j == k) * ybar)",
        "A_bar[i: N, j: N] = (i == j) * ybar",
        "why", "rewrites: bracket-and, sum-elim-eq",
    ]:
        assert expected in text, expected
    assert "rules fired" not in text  # the counts are in to_dict()
    rep = CostReport.build(NAIVE, OPTIMIZED, {"N": 64}, STATS)
    assert str(rep.naive.total) in text and str(rep.optimized.total) in text
    assert f"{rep.speedup:.4g}x" in text


def test_why_names_the_statements_whose_price_changed():
    naive = parse("""
def f(A: [N, R], B: [R, N], C: [N, R]):
    AB[i: N, j: N] = Sum[a: R](A[i, a] * B[a, j])
    return Sum[i: N, j: N, b: R](AB[i, j] * C[j, b])
""")
    opt = parse("""
def f(A: [N, R], B: [R, N], C: [N, R]):
    return Sum[i: N, a: R, j: N, b: R](A[i, a] * B[a, j] * C[j, b])
""")
    rep = CostReport.build(naive, opt, {"R": 8, "N": 500})
    why = rep.why()
    assert any(w.startswith("AB: removed") for w in why)
    assert any(w.startswith("<return>: O(") for w in why)
    assert all(w in str(rep) for w in why)


def test_default_sizes_are_stated():
    rep = CostReport.build(NAIVE, OPTIMIZED)
    assert rep.sizes == {"N": DEFAULT_SIZE} and rep.defaulted == ("N",)
    assert f"every size defaults to {DEFAULT_SIZE}" in str(rep)
    assert "not run" in str(rep)  # no saturation stats given


def test_partial_sizes_default_the_rest():
    naive = parse("""
def f(A: [N, R], B: [R, N], C: [N, R]):
    AB[i: N, j: N] = Sum[a: R](A[i, a] * B[a, j])
    return Sum[i: N, j: N, b: R](AB[i, j] * C[j, b])
""")
    opt = parse("""
def f(A: [N, R], B: [R, N], C: [N, R]):
    return Sum[i: N, a: R, j: N, b: R](A[i, a] * B[a, j] * C[j, b])
""")
    rep = CostReport.build(naive, opt, {"R": 8})
    assert rep.sizes == {"R": 8, "N": DEFAULT_SIZE} and rep.defaulted == ("N",)
    assert f"N = {DEFAULT_SIZE}" in str(rep)
    assert rep.naive.big_o == "O(N**2*R)" and rep.optimized.big_o == "O(N*R)"
    # the naive program materializes an N×N product, the optimized one nothing quadratic
    assert rep.naive.largest is not None and rep.naive.largest.elements.to_sympy() == N**2
    assert rep.optimized.largest_value < rep.naive.largest_value
    assert rep.speedup is not None and rep.speedup > 100


def test_to_dict_round_trips_through_json():
    rep = CostReport.build(NAIVE, OPTIMIZED, {"N": 64}, STATS)
    d = rep.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert sympy.sympify(d["naive"]["total"], locals={"N": N}) == rep.naive.total
    assert d["optimized"]["big_o"] == big_o(rep.optimized.total)
    assert d["speedup"] == rep.speedup and d["eager_speedup"] == rep.eager_speedup
    assert d["saturation"]["rule_counts"] == {"sum-elim-eq": 3, "bracket-and": 5}
    assert d["why"] == rep.why()
    assert d["naive"]["statements"][0]["value"] == int(rep.naive.rows[0].value)
    assert d["naive"]["largest_intermediate"]["elements"] == "N**2"


def test_costs_stay_json_numbers_and_count_masks_densely():
    tri = parse("""
def f(x: [N]):
    T[i: N, j: N] = (i < j) * x[i]
    return T
""")
    rep = CostReport.build(tri, tri, {"N": 5})
    d = json.loads(json.dumps(rep.to_dict()))
    # the backend builds the N x N mask (i < j) and applies it with np.where: 2 N**2, plus an
    # index range and its shift (2 N); the caller scans x (trusted finite) first: N / 2
    assert d["naive"]["value"] == rep.naive.value == Fraction(2 * 25 + 2 * 5) + Fraction(5, 2)
    assert [k["kind"] for k in d["naive"]["kernels"]] == [
        "check", "fill", "elementwise", "mask", "mask"]
    assert rep.speedup == 1.0


def test_stop_reasons_and_stats_validation():
    for reason in SaturationStats.STOP_REASONS:
        st = SaturationStats(stop_reason=reason)
        assert st.saturated == (reason == "saturated")
    text = str(CostReport.build(NAIVE, OPTIMIZED, {"N": 8}, SaturationStats(
        iterations=9, nodes=10_000, classes=900, seconds=1.5, stop_reason="node limit")))
    assert "stopped: node limit" in text
    with pytest.raises(EqsatError, match="unknown stop reason 'bored'"):
        SaturationStats(stop_reason="bored")
    with pytest.raises(EqsatError, match="iterations must be a non-negative integer"):
        SaturationStats(iterations=-1)
    with pytest.raises(EqsatError, match="rule_counts"):
        SaturationStats(rule_counts={"r": 1.5})  # type: ignore[dict-item]
    counts = {"r": 1}
    st = SaturationStats(rule_counts=counts)
    counts["r"] = 2
    assert st.rule_counts == {"r": 1}  # the report keeps its own copy


def test_bad_inputs_are_clear_errors():
    with pytest.raises(EqsatError, match="naive program must be a Program"):
        CostReport.build("not a program", OPTIMIZED)  # type: ignore[arg-type]
    with pytest.raises(EqsatError, match="stats must be SaturationStats"):
        CostReport.build(NAIVE, OPTIMIZED, stats={"iterations": 1})  # type: ignore[arg-type]
    with pytest.raises(EqsatError, match="non-negative integer"):
        CostReport.build(NAIVE, OPTIMIZED, {"N": -3})


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=programs(max_statements=2, smooth=True), data=st.data())
def test_reports_on_random_programs_and_their_adjoints(prog, data):
    adj = vjp(prog, data.draw(st.sampled_from(tensor_params(prog))))
    rep = CostReport.build(adj, adj, stats=STATS)
    d = rep.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["naive"] == d["optimized"]
    assert rep.speedup in (None, 1.0)
    text = str(rep)
    for row in rep.naive.rows:
        if not (row.kind == "output" and row.cost == 0):
            assert row.big_o in text


def test_numpy_integer_sizes_are_accepted_and_stay_json():
    import numpy as np

    rep = CostReport.build(NAIVE, OPTIMIZED, {"N": np.int64(16)})
    assert rep.sizes == {"N": 16} and type(rep.sizes["N"]) is int
    json.dumps(rep.to_dict())
    with pytest.raises(EqsatError, match="sizes must map size names"):
        CostReport.build(NAIVE, OPTIMIZED, [("N", 3)])  # type: ignore[arg-type]
