"""The e-graph encoding: round trips, alpha-merging, rule loading, bounded saturation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy

import eqsat_ad as ea
from eqsat_ad.egraph.encode import encode_program
from eqsat_ad.egraph.optimize import Limits, optimize
from eqsat_ad.egraph.rules import RuleError, load_rules
from eqsat_ad.egraph.saturate import saturate
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.errors import EqsatError


def _close(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return len(a) == len(b) and all(
        np.allclose(x, y, rtol=1e-6, atol=1e-9) for x, y in zip(a, b, strict=True)
    )


TRACES = """
def f(A: [N, N]):
    t1 = Sum[i: N](A[i, i])
    t2 = Sum[j: N](A[j, j])
    t3 = Sum[k: N](A[k, k])
    return t1 + t2 + t3
"""


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(scalar_output=False, max_depth=2), sizes_strategy(), st.integers(0, 2**32 - 1))
def test_decoding_without_rules_gives_back_an_equal_program(prog, sizes, seed):
    out = optimize(prog, rules=[]).program
    check_program(out)
    assert out.params == prog.params
    assert len(out.outputs) == len(prog.outputs) and out.returns_tuple == prog.returns_tuple
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(out, **inputs))


def test_alpha_equivalent_statements_share_one_eclass():
    prog = ea.parse(TRACES)
    enc = encode_program(prog)
    run = saturate(enc.text, (), iterations=1, nodes=1000, seconds=10)
    classes = {run.snapshot.lets[enc.body_let[s]] for s in ("t1", "t2", "t3")}
    assert len(classes) == 1
    # binder names do not reach the e-graph: renaming every index gives the same encoding
    renamed = ea.parse(TRACES.replace("i", "p").replace("j", "q").replace("k", "r"))
    assert encode_program(renamed).text == enc.text


def test_k_copies_of_a_trace_cost_what_one_costs():
    from eqsat_ad.cost.model import program_cost

    one = ea.parse("def f(A: [N, N]):\n    t1 = Sum[i: N](A[i, i])\n    return t1\n")
    three = optimize(ea.parse(TRACES), sizes={"N": 50}).program
    assert program_cost(three).total_poly.degree() == program_cost(one).total_poly.degree() == 1
    A = np.random.default_rng(0).normal(size=(5, 5))
    assert np.isclose(ea.evaluate(three, A=A), 3 * np.trace(A))


def test_inlined_statement_reads_zero_out_of_range():
    # y1[0, 1] is outside y1 when N == 1: inlining must keep the range guard
    prog = ea.parse(
        "def f(A: [N, N]):\n"
        "    y1[i: N, j: N] = A[i, i]\n"
        "    return y1[0, 1], y1\n"
    )
    out = optimize(prog).program
    for n in (1, 2, 3):
        A = np.arange(n * n, dtype=float).reshape(n, n) + 1
        assert _close(ea.evaluate(prog, A=A), ea.evaluate(out, A=A))


def test_unknown_rule_set_is_a_clear_error(tmp_path):
    with pytest.raises(RuleError, match="unknown rule set 'indicatr'"):
        load_rules(["indicatr"])
    with pytest.raises(EqsatError, match="cannot read rule file"):
        load_rules([str(tmp_path / "missing.egg")])
    two = tmp_path / "two.egg"
    two.write_text("(ruleset a)\n(ruleset b)\n")
    with pytest.raises(RuleError, match="exactly one"):
        load_rules([str(two)])
    broken = tmp_path / "broken.egg"
    broken.write_text("(ruleset mine)\n(rewrite (Mul a) a :ruleset mine)\n")
    with pytest.raises(EqsatError, match="egglog"):
        optimize(ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n"), rules=[str(broken)])


def test_a_researchers_own_rule_file_is_loaded(tmp_path):
    mine = tmp_path / "mine.egg"
    mine.write_text(
        "; schedule: saturate\n(ruleset mine)\n"
        '(rewrite (Add a a) (Mul (Num 2.0) a) :ruleset mine :name "double")\n'
    )
    (rf,) = load_rules([str(mine)])
    assert rf.name == "mine" and rf.saturate
    # two statements with one value: equal only inside the e-graph (reads unioned with bodies)
    prog = ea.parse(
        "def f(x: [N]):\n    s = Sum[i: N](x[i])\n    t = Sum[j: N](x[j])\n    return s + t\n"
    )
    res = optimize(prog, rules=[str(mine)])
    assert res.report.stats.rule_counts.get("double", 0) >= 1
    x = np.arange(4.0)
    assert np.isclose(ea.evaluate(res.program, x=x), 2 * x.sum())


E8 = """
def f(x: [N]):
    d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
    return Sum[i: N](d[i] ** 2)
"""


def test_hitting_a_bound_is_not_an_error():
    from eqsat_ad.ad.reverse import vjp

    prog = vjp(ea.parse(E8), "x")
    inputs = {"x": np.random.default_rng(1).normal(size=6), "ybar": 1.5}
    want = ea.evaluate(prog, **inputs)
    for limits, reason in (
        (Limits(iterations=1), "iteration limit"),
        (Limits(nodes=60), "node limit"),
        (Limits(iterations=0), "iteration limit"),
    ):
        res = optimize(prog, limits=limits)
        assert res.report.stats.stop_reason == reason
        assert _close(want, ea.evaluate(res.program, **inputs))


def test_time_limit_kills_the_worker_and_keeps_a_correct_program():
    from eqsat_ad.ad.reverse import vjp

    prog = vjp(ea.parse(E8), "x")
    res = optimize(prog, limits=Limits(seconds=0.001))
    assert res.report.stats.stop_reason == "time limit"
    inputs = {"x": np.linspace(-1, 1, 5), "ybar": 2.0}
    assert _close(ea.evaluate(prog, **inputs), ea.evaluate(res.program, **inputs))


@pytest.mark.parametrize(
    "kwargs", [{"iterations": -1}, {"nodes": 1.5}, {"seconds": 0}, {"seconds": True}]
)
def test_bad_limits_are_rejected(kwargs):
    with pytest.raises(EqsatError, match="Limits"):
        Limits(**kwargs)


def test_bad_arguments_are_rejected():
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n")
    with pytest.raises(EqsatError, match="Program"):
        optimize("def f(): return 1")
    with pytest.raises(EqsatError, match="Limits"):
        optimize(prog, limits=(1, 2, 3))
    with pytest.raises(EqsatError, match="sizes"):
        optimize(prog, sizes={"N": -3})


RANGE_BRACKETS = """
def f(x: [N], w: [N]):
    y[i: N] = (N > i/2) * (i >= 0) * (i < N) * (i + 1 > 0) * (2 * i < N) * x[i]
    z[i: N, j: N] = (N - 1 >= i) * (i + j + 1 > 0) * (i + 1 < N) * w[i] * x[j]
    return y, z
"""


def test_brackets_implied_by_generator_ranges_are_removed():
    from eqsat_ad.ir.expr import Bracket, children
    from eqsat_ad.ir.printer import print_pred

    prog = ea.parse(RANGE_BRACKETS)
    out = optimize(prog, sizes={"N": 9}).program

    def brackets(e):
        found = [print_pred(e.pred)] if isinstance(e, Bracket) else []
        return found + [b for c in children(e) for b in brackets(c)]

    kept = {s.name: brackets(s.body) for s in out.statements}
    # only the brackets that can be false for some in-range generator are left
    assert kept == {"y": ["N > 2*i"], "z": ["N > i + 1"]}, kept
    for n in (1, 4, 7):
        rng = np.random.default_rng(n)
        args = {"x": rng.normal(size=n), "w": rng.normal(size=n)}
        assert _close(ea.evaluate(prog, **args), ea.evaluate(out, **args))


def test_extraction_stops_at_its_deadline_with_the_best_program_so_far():
    import time

    from eqsat_ad.ad.reverse import vjp
    from eqsat_ad.egraph.extract import Extractor, OutOfTime

    prog = vjp(ea.parse(E8), "x")
    enc = encode_program(prog)
    run = saturate(enc.text, load_rules(None), 4, 3000, 20.0)
    with pytest.raises(OutOfTime):
        Extractor(run.snapshot, enc, None, deadline=time.process_time() - 1.0)
    ex = Extractor(run.snapshot, enc, None)
    price = ex.price

    def price_then_expire(materialized):
        out = price(materialized)
        ex.deadline = 0.0  # the clock runs out after the first priced program
        return out

    ex.price = price_then_expire
    cut = ex.best_program()
    assert not cut.complete
    full = Extractor(run.snapshot, enc, None).best_program()
    assert full.complete and full.cost <= cut.cost
    inputs = {"x": np.random.default_rng(3).normal(size=6), "ybar": 0.7}
    want = ea.evaluate(prog, **inputs)
    assert _close(want, ea.evaluate(cut.program, **inputs))
    assert _close(want, ea.evaluate(full.program, **inputs))
