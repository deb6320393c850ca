"""Seeing the optimizer's reasoning: rewrite chains, the e-graph picture, HTML views."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.ir.printer import print_program
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
    # the cost after each step is the cost model's price of that statement (N = 50)
    assert chain[0].value == 50**2 + 2 * 50 and chain[-1].value == 50**2 + 50
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
    assert why.startswith("A_bar: N**2 + 2*N → N**2 + N")
    # expression rewrites are named first; analysis bookkeeping is only counted
    assert "like-terms ×" in why and "int-lin-term" not in why
    assert "analysis / index-arithmetic matches" in why
    assert e.to_dict()["chains"]["A_bar"][-1]["cost"] == "N**2 + N"


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
