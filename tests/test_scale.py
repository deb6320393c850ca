"""Programs far deeper than Python's recursion limit: long sums, long statement chains, unrolled
loops, through every stage (issue 11, item 1). Sizes are chosen so each test stays a few seconds;
experiments/scale.py runs the full 5,000-term gradients through the optimizer and backend."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph.encode import encode_program
from eqsat_ad.egraph.share import drop_unit_factors, share_statement_bodies
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.expr import Access, Binary
from eqsat_ad.ir.outline import MAX_HEIGHT, max_height, outline
from eqsat_ad.ir.printer import print_expr
from eqsat_ad.ir.traverse import has_strong_zero, height

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from deep_programs import chain_gradient, rnn_adjoint, statement_chain, sum_of_squares  # noqa: E402

RNG = np.random.default_rng(11)


def test_5000_term_expression_parse_print_evaluate_and_differentiate() -> None:
    n = 5000
    prog = ea.parse(sum_of_squares(n))
    assert height(prog.outputs[0]) > 5000
    check_program(prog)
    assert ea.parse(str(prog)) == prog  # the printer and the parser, both ways
    assert hash(ea.parse(str(prog))) == hash(prog)
    x = RNG.standard_normal(n)
    assert ea.evaluate(prog, x) == pytest.approx(float(x @ x))
    adjoint = ea.vjp(prog, "x")
    assert max_height(outline(adjoint)) <= MAX_HEIGHT  # what the backend compiles is shallow
    np.testing.assert_allclose(ea.evaluate(adjoint, x, 0.5), x, rtol=1e-12)
    shared = share_statement_bodies(drop_unit_factors(adjoint))  # the passes after extraction
    np.testing.assert_allclose(ea.evaluate(shared, x, 0.5), x, rtol=1e-12)
    tangent = ea.jvp(prog, "x")
    v = RNG.standard_normal(n)
    assert ea.evaluate(tangent, x, v) == pytest.approx(2 * float(x @ v))
    enc = encode_program(prog)
    assert enc.text.count("(Add ") >= n - 1


def test_5000_statement_program_gradient_matches_finite_differences() -> None:
    n = 5000
    prog = ea.parse(statement_chain(n))
    x = RNG.standard_normal(8)
    g = ea.evaluate(ea.vjp(prog, "x"), x, 1.0)
    np.testing.assert_allclose(g, chain_gradient(n, x), rtol=1e-10)
    h = 1e-6
    fd = np.array([
        (ea.evaluate(prog, x + h * e) - ea.evaluate(prog, x - h * e)) / (2 * h)
        for e in np.eye(8)[:2]
    ])
    np.testing.assert_allclose(g[:2], fd, rtol=1e-5)


def test_numpy_loop_unrolled_5000_times() -> None:
    n = 5000

    def ema(x):
        s = 0.0
        for i in range(5000):
            s = 0.9 * s + x[i] * x[i]
        return s

    x = RNG.standard_normal(n)
    prog = ea.translate(ema, shapes={"x": (n,)})
    g = ea.evaluate(ea.vjp(prog, "x"), x, 1.0)
    np.testing.assert_allclose(g, 2 * 0.9 ** np.arange(n - 1, -1, -1) * x, rtol=1e-10)


def test_compiled_gradient_and_hessian_of_a_long_sum() -> None:
    """Through the backend (generated code flat enough for CPython) and the optimizer."""
    n = 600  # 1,200 levels deep: more than Python's recursion limit
    prog = ea.parse(sum_of_squares(n))
    x = RNG.standard_normal(n)
    g = ea.grad(prog, "x", optimize=False)
    compile(g.source, "<generated>", "exec")
    np.testing.assert_allclose(g(x), 2 * x, rtol=1e-12)
    opt = ea.grad(prog, "x", limits=ea.Limits(iterations=1, nodes=2000, seconds=2))
    np.testing.assert_allclose(opt(x), 2 * x, rtol=1e-12)
    hess = ea.hessian(ea.parse(sum_of_squares(300)), "x", optimize=False)
    np.testing.assert_allclose(hess(x[:300]), 2 * np.eye(300), atol=1e-12)


def test_outline_keeps_values_and_shallow_programs() -> None:
    shallow = ea.parse(sum_of_squares(10))
    assert outline(shallow) is shallow
    src = (
        "def f(A: [N, N]):\n    y[i: N] = Sum[j: N]("
        + " + ".join(f"A[i, j] * {k + 1}" for k in range(200))
        + ")\n    return Sum[i: N](y[i] * y[i])\n"
    )
    prog = ea.parse(src)
    flat = outline(prog, limit=16)
    assert max_height(flat) <= 16
    assert len(flat.statements) > len(prog.statements)
    check_program(flat)
    A = RNG.standard_normal((4, 4))
    assert ea.evaluate(flat, A) == pytest.approx(ea.evaluate(prog, A))


def test_deep_structural_equality_and_hash() -> None:
    a: ea.ir.Expr = Access("x")
    b: ea.ir.Expr = Access("x")
    for _ in range(20000):
        a, b = Binary("+", a, Access("x")), Binary("+", b, Access("x"))
    assert a == b and hash(a) == hash(b)
    assert Binary("-", a, Access("x")) != Binary("+", b, Access("x"))


# ------------------------------------------------------------------------------------------------
# like terms (item 3)
# ------------------------------------------------------------------------------------------------


def test_merge_like_terms_keeps_values_and_signs() -> None:
    from eqsat_ad.ir.like_terms import merge_like_terms

    prog = ea.parse(
        "def f(x: [N], A: [N, N]):\n"
        "    y[i: N] = 2 * x[i] + Sum[j: N](A[i, j]) - x[i] + x[i] * 3 + Sum[k: N](A[i, k])"
        " + 0 * x[i] + 1 + 2\n"
        "    return Sum[i: N](y[i])\n"
    )
    merged = merge_like_terms(prog)
    # the two alpha-equivalent sums merge, 2x and 3x merge, -x stays apart (inf - inf), 1 + 2
    assert print_expr(merged.statements[0].body) == (
        "5 * x[i] + 2 * Sum[j: N](A[i, j]) - x[i] + 3"
    )
    x, A = RNG.standard_normal(5), RNG.standard_normal((5, 5))
    assert ea.evaluate(merged, x, A) == pytest.approx(ea.evaluate(prog, x, A))


@pytest.mark.parametrize("k", [16, 64, 256])
def test_k_traces_merge_with_linear_e_graphs(k: int) -> None:
    """k copies of a trace: one bracket term, and an e-graph whose size does not grow like k²."""
    from eqsat_ad.api import gradient_program
    from eqsat_ad.examples import k_traces

    ex = k_traces(k)
    naive = gradient_program(ex.program(), ("A",))
    out = ea.optimize(naive)
    assert print_expr(out.program.statements[-1].body) == f"{k} * (i == j)"
    assert out.report.stats.stop_reason == "saturated"
    assert out.report.stats.nodes <= 4 * k + 50
    A = ex.inputs({"N": 6})["A"]
    np.testing.assert_allclose(ea.evaluate(out.program, A), k * np.eye(6))


# ------------------------------------------------------------------------------------------------
# limits, progress, cache (items 4, 5, 6)
# ------------------------------------------------------------------------------------------------


def test_stop_reason_names_the_bound_and_progress_is_reported(capsys) -> None:
    events: list = []
    prog = rnn_adjoint(8)
    out = ea.optimize(prog, limits=ea.Limits(iterations=2), progress=events.append)
    assert out.report.stats.stop_reason in ("iteration limit", "node limit")
    steps = [e for e in events if e.phase == "saturate"]
    assert [e.iteration for e in steps] == list(range(1, len(steps) + 1))
    assert events[-1].phase == "done"
    assert events[-1].stop_reason == out.report.stats.stop_reason
    assert any(e.phase == "extract" and e.cost is not None for e in events)
    ea.optimize(ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n"), verbose=True)
    assert "eqsat_ad: done: iteration" in capsys.readouterr().err


def test_saturated_only_at_a_fixed_point() -> None:
    from eqsat_ad.egraph.encode import encode_program as encode
    from eqsat_ad.egraph.rules import load_rules, verify_step_text
    from eqsat_ad.egraph.saturate import saturate

    prog = ea.vjp(ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i] * x[i])\n"), "x")
    files = load_rules(None)
    run = saturate(encode(prog).text, files, 50, 100000, 60.0)
    assert run.stop_reason == "saturated"
    assert "verify" not in verify_step_text(files)  # a plain run of every set, no scheduler
    assert "(run sumprod)" in verify_step_text(files)


def test_grad_reports_progress_to_a_callback() -> None:
    events: list = []
    g = ea.grad(ea.parse(sum_of_squares(5)), "x", progress=events.append)
    np.testing.assert_allclose(g(np.arange(5.0)), 2 * np.arange(5.0))
    assert events and events[-1].phase == "done"


def test_the_disk_cache_returns_the_stored_optimization(tmp_path, monkeypatch) -> None:
    import eqsat_ad.egraph.optimize as opt
    from eqsat_ad.egraph import cache

    monkeypatch.setenv("EQSAT_AD_CACHE", "1")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    prog = ea.vjp(ea.parse("def f(A: [N, N]):\n    return Sum[i: N](A[i, i])\n"), "A")
    first = ea.optimize(prog)
    entries = list(tmp_path.glob("*/*.pickle"))
    assert len(entries) == 1

    def no_optimizer(*args, **kwargs):
        raise AssertionError("the optimizer ran although the result was cached")

    monkeypatch.setattr(opt, "_optimize", no_optimizer)
    second = ea.optimize(prog)
    assert second.program == first.program
    assert str(second.report) == str(first.report)
    # other limits, rules or programs are other keys
    with pytest.raises(AssertionError, match="optimizer ran"):
        ea.optimize(prog, limits=ea.Limits(iterations=3))
    with pytest.raises(AssertionError, match="optimizer ran"):
        ea.optimize(prog, cache=False)
    # a damaged entry is a miss, not an error
    entries[0].write_bytes(b"not a pickle")
    assert cache.load(entries[0].stem) is None
    monkeypatch.setenv("EQSAT_AD_CACHE", "0")
    assert not cache.enabled()


def test_a_search_the_time_limit_starved_is_not_stored(tmp_path, monkeypatch) -> None:
    """On a starved machine the time limit can stop the search before the e-graph gives
    anything; that result depends on the load, so no later process may read it back."""
    import eqsat_ad.egraph.optimize as opt
    from eqsat_ad.egraph.saturate import SaturationError

    monkeypatch.setenv("EQSAT_AD_CACHE", "1")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    prog = ea.vjp(ea.parse("def f(A: [N, N]):\n    return Sum[i: N](A[i, i])\n"), "A")

    def starved(*args, **kwargs):
        raise SaturationError("equality saturation produced no e-graph within 1.6 s "
                              "(time limit); raise Limits.seconds")

    real = opt.saturate
    monkeypatch.setattr(opt, "saturate", starved)
    kept = ea.optimize(prog)
    assert kept.report.stats.stop_reason == "time limit"
    assert "produced no e-graph" in kept.report.stats.note
    assert not list(tmp_path.glob("*/*.pickle"))
    monkeypatch.setattr(opt, "saturate", real)
    done = ea.optimize(prog)  # the same key, now searched: stored
    assert done.program != kept.program
    assert len(list(tmp_path.glob("*/*.pickle"))) == 1


def test_the_cache_key_follows_every_source_that_prices_a_plan(tmp_path) -> None:
    """A change to a subpackage (the Numba backend's prices, the plan's lowering) is a new
    version of the optimizer: its keys change, so no stale optimization is read back."""
    import shutil

    from eqsat_ad.egraph import cache

    package = Path(ea.__file__).resolve().parent
    copy = tmp_path / "eqsat_ad"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.source_digest(copy)
    assert before == cache.source_digest(package)
    for changed in ("backend/fused/schedule.py", "plan/lower/statements.py", "plan/price.py"):
        f = copy / changed
        text = f.read_text()
        f.write_text(text + "\n# changed\n")
        assert cache.source_digest(copy) != before, changed
        f.write_text(text)
    assert cache.source_digest(copy) == before
    (copy / "frontend" / "closures.py").write_text("# not a source of prices\n")
    assert cache.source_digest(copy) == before


def test_cache_writes_are_atomic_under_concurrent_writers(tmp_path, monkeypatch) -> None:
    import multiprocessing as mp

    from eqsat_ad.egraph import cache

    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    value = {"payload": list(range(200000))}
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=cache.store, args=("ab" + "0" * 62, value)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert cache.load("ab" + "0" * 62) == value
    assert not list(tmp_path.glob("*/.tmp-*"))  # no temporary file left behind


def _chain_adjoint(n: int) -> ea.Program:
    return ea.vjp(ea.parse(statement_chain(n)), "x")


def test_finiteness_notes_cost_linear_comparisons(monkeypatch) -> None:
    """Counting, not timing: recording that a parameter is scanned for inf/nan compares
    decisions a bounded number of times per read, not once per decision taken so far."""
    from eqsat_ad.plan.lower import lower_program
    from eqsat_ad.plan.lower.values import Decision

    calls = [0]
    eq = Decision.__eq__

    def counting(self, other):  # noqa: ANN001, ANN202 (the dataclass's own signature)
        calls[0] += 1
        return eq(self, other)

    monkeypatch.setattr(Decision, "__eq__", counting)
    counts = {}
    for n in (100, 400):
        calls[0] = 0
        lowered = lower_program(_chain_adjoint(n))
        assert [d.detail for d in lowered.decisions if d.kind == "finite-input"] == ["ybar", "x"]
        counts[n] = calls[0]
    assert counts[400] <= 5 * counts[100] + 10, counts  # linear (quadratic gives ~16x)


def test_program_cost_scans_the_plan_once(monkeypatch) -> None:
    """Counting: the plan's kernels are grouped by statement in one pass, however many
    statements the program has (a scan per statement is quadratic on long programs)."""
    from eqsat_ad.plan import price
    from eqsat_ad.plan.kernels import Plan

    scans = [0]

    class Kernels(tuple):
        def __iter__(self):  # noqa: ANN204
            scans[0] += 1
            return super().__iter__()

    plan_of = price.program_plan
    monkeypatch.setattr(price, "program_plan",
                        lambda *a, **k: Plan(Kernels(plan_of(*a, **k).kernels)))
    counts = {}
    for n in (20, 200):
        scans[0] = 0
        cost = price.program_cost(_chain_adjoint(n), {"N": 8})
        assert len(cost.details) == len(_chain_adjoint(n).statements) + 1
        counts[n] = scans[0]
    assert counts[20] == counts[200] <= 2, counts


def test_grad_lowers_the_optimized_program_once(monkeypatch) -> None:
    """Counting: the cost report's lowering of the optimized program is the one compiled (one
    lowering for the naive adjoint, one for the optimized), and it is the same code."""
    from eqsat_ad.plan.lower import statements

    lowered = []
    program = statements.Codegen.program

    def counting(self):  # noqa: ANN001, ANN202
        lowered.append(self.prog)
        return program(self)

    monkeypatch.setattr(statements.Codegen, "program", counting)
    g = ea.grad(ea.parse(statement_chain(30)), "x")
    assert len(lowered) == 2 and lowered[1] is g.program, len(lowered)
    from eqsat_ad.plan.lower.statements import Codegen

    assert g.source == program(Codegen(g.program, None, False, False, frozenset())).source
    x = RNG.standard_normal(8)
    np.testing.assert_allclose(g(x), chain_gradient(30, x), rtol=1e-12)


def test_a_strong_zero_is_found_at_the_bottom_of_a_5000_deep_chain() -> None:
    """has_strong_zero walks with a stack (the traversal module's promise): no RecursionError."""
    prog = ea.parse(sum_of_squares(5000))
    deep = prog.outputs[0]
    assert height(deep) > sys.getrecursionlimit()
    assert not has_strong_zero(deep)
    assert has_strong_zero(deep, frozenset({"x"}))  # x read as a relation
    bracket = ea.parse("def f(x: [N]):\n    return Sum[i: N]((i > 1) * x[i])\n").outputs[0]
    assert has_strong_zero(Binary("+", bracket, deep))
