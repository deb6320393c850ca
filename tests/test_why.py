"""Seeing the optimizer's reasoning: rewrite chains, the e-graph picture, HTML views."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.printer import print_program
from eqsat_ad.plan.price import program_plan
from eqsat_ad.why import explain
from eqsat_ad.why.picture import egraph_picture

K_TRACE = ea.parse("""
def f(A: [N, N]):
    t1 = Sum[i: N](A[i, i])
    t2 = Sum[i: N](A[i, i])
    return t1 + t2
""")


@pytest.fixture(scope="module")
def grad_and_explanation():
    g = ea.grad(K_TRACE, wrt="A", sizes={"N": 50})
    return g, g.explain()


def test_chain_runs_from_the_naive_statement_to_the_extracted_one(grad_and_explanation):
    g, e = grad_and_explanation
    chain = e.chains()["A_bar"]
    naive_rows = {r["name"]: r for r in g.report.to_dict()["naive"]["statements"]}
    final_rows = {r["name"]: r for r in g.report.to_dict()["optimized"]["statements"]}
    assert chain[0].label == "naive" and chain[0].text == naive_rows["A_bar"]["statement"]
    assert chain[-1].text == final_rows["A_bar"]["statement"] == "A_bar[i: N, j: N] = 2 * (i == j)"
    # the cost after each step is the price of that statement in the plan the backend runs for
    # that step's program (N = 50): the naive statement writes two masked terms, the extracted
    # one a single scaled diagonal
    plans = [program_plan(e.steps[0].program, {"N": 50}), program_plan(g.program, {"N": 50})]
    for link, plan in zip((chain[0], chain[-1]), plans, strict=True):
        price = plan.statement_cost("A_bar")
        assert link.value == price.evaluate({"N": 50}) and link.cost == str(price.to_sympy())
    assert chain[0].value == naive_rows["A_bar"]["value"] > chain[-1].value
    assert chain[-1].value == final_rows["A_bar"]["value"]
    # the rules named in the chain are rules that fired, no more often than they fired in all
    total = g.report.stats.rule_counts
    fired: dict[str, int] = {}
    for link in chain[1:]:
        for rule, k in link.fired.items():
            fired[rule] = fired.get(rule, 0) + k
    assert "like-terms" in fired
    assert all(0 < k <= total[r] for r, k in fired.items())
    assert print_program(e.final.program) == print_program(g.program)


def test_explanation_text_and_why_lines(grad_and_explanation):
    _, e = grad_and_explanation
    text = str(e)
    assert "A_bar" in text and "↓" in text and "2 * (i == j)" in text
    (why,) = e.why_lines()
    chain = e.chains()["A_bar"]
    # naive price → extracted price of A_bar, the plan's prices (checked in the test above)
    assert why.startswith(f"A_bar: {chain[0].cost} → {chain[-1].cost} (1 step; ")
    assert chain[0].cost != chain[-1].cost
    # expression rewrites are named; analysis bookkeeping is never named, only counted
    assert "like-terms ×" in why and "int-lin-term" not in why
    assert e.fired_text({"like-terms": 2, "int-lin-term": 5, "nonneg-size": 1}) == (
        "like-terms ×2; 6 analysis / index-arithmetic matches")
    assert e.to_dict()["chains"]["A_bar"][-1]["cost"] == chain[-1].cost
    # the returned variable costs nothing and never changes: kept in the data, not printed
    assert [link.value for link in e.chains()["<return>"]] == [0]
    assert "\n<return>" not in text and "<return>" in e.to_dict()["chains"]


def test_expression_rules_are_told_from_bookkeeping():
    from eqsat_ad.why.chain import expression_rules

    rewrites = expression_rules(None)  # the shipped sets
    assert {"like-terms", "bracket-first", "one-mul", "mul-comm"} <= rewrites
    assert not {"int-lin-term", "nonneg-const", "lattice-access"} & rewrites
    # sum elimination is a rule (not a rewrite) that unions expression classes
    assert any(r.startswith("sum-elim") for r in rewrites)


def test_every_step_program_computes_the_same_gradient(grad_and_explanation):
    _, e = grad_and_explanation
    A = np.random.default_rng(1).standard_normal((6, 6))
    values = [ea.evaluate(s.program, A=A) for s in e.steps]
    for v in values[1:]:
        np.testing.assert_allclose(v, values[0], atol=1e-12)
    np.testing.assert_allclose(values[-1], 2 * np.eye(6))


def test_picture_highlights_the_extracted_term(grad_and_explanation):
    g, _ = grad_and_explanation
    pic = egraph_picture(g.naive, sizes={"N": 50})
    labels = {k: lbl for nodes in pic.nodes.values() for k, lbl in nodes}
    chosen = {labels[k] for k in pic.chosen if k in labels}
    # the extracted body 2 * [i == j]: a product, the constant 2, the bracket
    assert {"×", "2"} <= chosen and any(lbl.startswith("[") for lbl in chosen)
    assert "A_bar" in pic.roots.values()
    svg = g.explain().svg()
    root = ET.fromstring(svg)  # well-formed, standalone
    assert root.tag.endswith("svg")
    filled = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")
              if r.get("fill") == "#ffd8a8"]
    assert len(filled) == len(pic.chosen & set(labels))


def test_optimized_prints_as_program_and_report_and_explains_itself():
    res = ea.optimize(ea.vjp(K_TRACE, "A"), sizes={"N": 10})
    text = str(res)
    assert text.startswith("def f_vjp(") and "Cost report" in text
    assert res.explain().chains()["A_bar"][-1].text == res.explain().final.rows()["A_bar"][
        "statement"]
    assert "A_bar" in res.report.explain().chains()
    html = res.report._repr_html_()
    assert "<table>" in html and "Cost report" in html and "A_bar" in html
    # the report's three priced columns and its why lines, as str(report) prints them
    from html import escape

    assert "<th>eager AD</th><th>naive adjoint</th><th>optimized</th>" in html
    assert res.report.why() and all(escape(w) in html for w in res.report.why())
    assert f"<td>{int(res.report.eager_value)}</td>" in html
    assert "<pre>" in res._repr_html_()


def test_compiled_gradient_renders_in_notebooks(grad_and_explanation):
    g, _ = grad_and_explanation
    html = g._repr_html_()
    assert "A_bar[i: N, j: N] = 2 * (i == j)" in html and "def f_grad(A):" in html
    assert "<table>" in html


def test_explain_rejects_what_it_cannot_explain():
    with pytest.raises(TypeError, match="explain takes"):
        explain(42)


def test_explanation_page_is_self_contained(grad_and_explanation):
    _, e = grad_and_explanation
    page = e.html()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "Rewrite chains" in page
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")


def test_picture_highlights_the_program_the_optimizer_keeps():
    # of extraction's best few programs, the picture follows the one whose plan is cheapest:
    # the statements it keeps are the optimized program's
    import time

    from eqsat_ad.egraph.encode import encode_program
    from eqsat_ad.egraph.extract import Extractor
    from eqsat_ad.egraph.optimize import Limits
    from eqsat_ad.egraph.rules import load_rules
    from eqsat_ad.egraph.saturate import saturate
    from eqsat_ad.ir.like_terms import merge_like_terms
    from eqsat_ad.ir.outline import outline
    from eqsat_ad.why.picture import _statements_kept

    # (a program whose extracted form stays cheaper than the input once the guard's pass over
    # the arguments is priced: the optimizer keeps the e-graph's choice, not the input)
    prog = ea.vjp(ea.parse("""
def f(A: [N, N], x: [N]):
    D[i: N, j: N] = (i == j) * x[i]
    y[i: N] = Sum[j: N](D[i, j] * x[j])
    z[i: N] = Sum[j: N](A[i, j] * y[j])
    return Sum[i: N](x[i] * z[i] + y[i] * y[i])
"""), "x")
    sizes = {"N": 300}
    enc = encode_program(outline(merge_like_terms(prog)))
    run = saturate(enc.text, load_rules(None), Limits().iterations, Limits().nodes, 5.0)
    best = Extractor(run.snapshot, enc, sizes, time.perf_counter() + 5.0).best_program()
    assert best.alternatives  # there is a choice to follow
    optimized = ea.optimize(prog, sizes=sizes)
    assert optimized.report.optimized.value < optimized.report.naive.value
    kept = {s.name for s in optimized.program.statements}
    assert _statements_kept(best, sizes) == kept


def test_optimized_result_and_report_carry_the_call_that_made_them():
    from dataclasses import replace

    from eqsat_ad.egraph.optimize import OptimizeCall

    prog = ea.vjp(K_TRACE, "A")
    res = ea.optimize(prog, sizes={"N": 10})
    assert isinstance(res.inputs, OptimizeCall)
    assert res.inputs.program is prog and res.inputs.sizes == {"N": 10}
    assert res.report.inputs == res.inputs
    assert res == replace(res, inputs=None)  # a result is its program and report
    with pytest.raises(ea.EqsatError, match="does not know"):
        ea.CostReport.build(prog, res.program).explain()
    with pytest.raises(TypeError, match="not made by ea.optimize"):
        explain(replace(res, inputs=None))


def test_finish_picks_the_cheapest_plan_among_the_candidates():
    from eqsat_ad.egraph.optimize import finish, tidy

    square = ea.parse("""
def g(A: [N, R], B: [R, N], C: [N, R]):
    AB[i: N, j: N] = Sum[a: R](A[i, a] * B[a, j])
    return Sum[i: N, j: N, b: R](AB[i, j] * C[j, b])
""")
    thin = ea.parse("""
def g(A: [N, R], B: [R, N], C: [N, R]):
    BC[a: R, b: R] = Sum[j: N](B[a, j] * C[j, b])
    return Sum[i: N, a: R, b: R](A[i, a] * BC[a, b])
""")
    # the expensive candidate first: the plan's price decides, ties keep the order
    assert finish([square, thin], {"N": 100, "R": 4}) == (1, tidy(thin))
    assert finish([thin, square], None) == (0, tidy(thin))
    assert finish([square, square], None) == (0, tidy(square))


PREFIX = ea.parse("""
def prefix_sum(x: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](c[i] ** 2)
""")


def _listed(report) -> list[str]:
    line = next((w for w in report.why() if w.startswith("rewrites: ")), None)
    return [] if line is None else line[len("rewrites: "):].removesuffix(", ...").split(", ")


def test_why_lists_the_rewrites_on_the_path_and_no_bookkeeping():
    from eqsat_ad.why.chain import expression_rules

    res = ea.optimize(ea.vjp(PREFIX, "x"), sizes={"N": 100}, cache=False)
    st = res.report.stats
    assert _listed(res.report) == list(st.path)[:8]
    rewriting = expression_rules(None)
    assert set(st.path) <= rewriting and set(st.path) <= set(st.rule_counts)
    bookkeeping = set(st.rule_counts) - rewriting
    assert bookkeeping and not bookkeeping & set(_listed(res.report))  # counted, not listed
    assert set(st.rule_counts) & rewriting - set(st.path)  # fired, but not on the path
    assert {"scan-prefix-lo", "scan-prefix-hi"} <= set(st.path)  # the scans the result uses
    d = res.report.to_dict()["saturation"]
    assert d["rule_counts"] == st.rule_counts and d["path"] == list(st.path)
    assert "×" not in str(res.report) and "rules fired" not in res.report._repr_html_()


def test_why_names_sum_elimination_where_the_result_needs_it():
    shifted = ea.parse("""
def f(x: [N], w: [N]):
    return Sum[i: N](w[i] * x[i + 1] - w[i] * x[i])
""")
    res = ea.optimize(ea.vjp(shifted, "x"), cache=False)
    assert "Sum" not in str(res.program)  # the bracket sums were eliminated
    assert "sum-elim" in res.report.stats.path
    k_trace = ea.optimize(ea.vjp(K_TRACE, "A"), cache=False)
    assert k_trace.report.stats.path == ("like-terms",)  # the pre-pass alone


def test_why_lists_no_rewrite_when_the_input_is_kept():
    dot = ea.parse("""
def f(x: [N], w: [N]):
    return Sum[i: N](x[i] * w[i])
""")
    res = ea.optimize(dot, cache=False)
    assert res.report.stats.path == () and _listed(res.report) == []
    assert res.report.stats.rule_counts  # rules did fire: the counts keep them


def test_path_candidates_are_the_expression_rewrites_of_the_rule_files():
    from eqsat_ad.egraph.path import rewrites
    from eqsat_ad.egraph.rules import load_rules
    from eqsat_ad.why.chain import expression_rules

    names = {name for name, _, _ in rewrites(load_rules(None))}
    assert {"mul-comm", "sum-elim", "one-mul", "scan-prefix-lo", "scan-band"} <= names
    assert not names & {"int-lin-term", "scan-lo-ge", "nonneg-const", "lattice-access"}
    assert names <= expression_rules(None)


def _join_snapshot(n: int):
    """An e-graph where ``(Mul a (Add b c)) -> (Add (Mul a b) c)`` has one instance among n
    candidates on each side: the root class R holds ``Mul(L_i, T)`` (T holds ``Add(M_last, C)``)
    and the chosen ``Add(P, C)``; P holds ``Mul(L_i, M_i)``. Nested loops over the two sides'
    matches take n² steps, a join of them about n."""
    from eqsat_ad.egraph.saturate import Snapshot

    nodes: list[tuple[str, int, tuple]] = []
    leaf = iter(range(1000, 10**6))

    def num(v: float) -> int:
        c = next(leaf)
        nodes.append(("Num", c, (v,)))
        return c

    R, P, T, C = 0, 1, 2, 3
    ls = [num(float(i)) for i in range(n)]
    ms = [num(-1.0 - i) for i in range(n)]
    nodes.append(("Add", T, (ms[-1], C)))
    nodes.append(("Num", C, (0.5,)))
    nodes += [("Mul", R, (li, T)) for li in ls]
    nodes += [("Mul", P, (li, mi)) for li, mi in zip(ls, ms, strict=True)]
    nodes.append(("Add", R, (P, C)))
    sort = {c: "E" for _, c, _ in nodes}
    return Snapshot(nodes=nodes, sort=sort), len(nodes) - 1


REASSOCIATE = [
    ("r", ["Mul", "a", ["Add", "b", "c"]], ["Add", ["Mul", "a", "b"], "c"]),
    ("never", ["Mul", "a", ["Mul", "b", "c"]], ["Add", ["Mul", "a", "c"], "b"]),
]


def test_path_reading_joins_the_two_sides_and_is_bounded_by_its_budget():
    from eqsat_ad.egraph.path import MATCH_BUDGET, rules_on_path

    traces = {}
    for n in (200, 400):
        snap, root = _join_snapshot(n)
        traces[n] = rules_on_path(snap, {root}, set(), REASSOCIATE)
        assert traces[n].rules == ["r"] and not traces[n].cut  # the one instance is found
    # linear in the class sizes (nested loops over both sides' matches would be 4x)
    assert traces[200].steps < 10 * 200 and traces[400].steps <= 2.2 * traces[200].steps
    assert traces[400].steps < MATCH_BUDGET
    snap, root = _join_snapshot(400)
    for budget in (1, 50, traces[400].steps // 2, traces[400].steps - 1):
        cut = rules_on_path(snap, {root}, set(), REASSOCIATE, budget=budget)
        assert cut.cut and cut.steps <= budget and set(cut.rules) <= {"r"}
        assert budget > 50 or cut.rules == []  # cut before the instance was reached


def test_a_cut_trace_says_so_in_the_report():
    from eqsat_ad.cost.report import CostReport, SaturationStats

    naive = ea.parse("""
def f(x: [N]):
    return Sum[i: N](2 * x[i])
""")
    opt = ea.parse("""
def f(x: [N]):
    return 2 * Sum[i: N](x[i])
""")

    def line(**kw) -> str | None:
        stats = SaturationStats(stop_reason="saturated", **kw)
        report = CostReport.build(naive, opt, {"N": 8}, stats)
        return next((w for w in report.why() if w.startswith("rewrites:")), None)

    assert line(path=("factor-out-of-sum",)) == "rewrites: factor-out-of-sum"
    assert line(path=("factor-out-of-sum",), path_cut=True) == (
        "rewrites: factor-out-of-sum (trace cut at budget)")
    assert line(path=(), path_cut=True) == "rewrites: (trace cut at budget)"
    assert line(path=()) is None
    assert SaturationStats(path_cut=True).to_dict()["path_cut"] is True
