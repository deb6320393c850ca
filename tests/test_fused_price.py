"""For ``backend="numba"`` extraction ranks its best few programs by the price of the fused
schedule that backend runs (:func:`eqsat_ad.plan.price.backend_price`), the safety net compares
that price with the input's, and the cost report prints it: what is minimized, reported and run
is one object for this backend too."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("numba")

# the fold tests' rolled loop (an exponential moving average)
from test_fold import EMA  # noqa: E402

import eqsat_ad as ea  # noqa: E402
import eqsat_ad.egraph.optimize as optimize_module  # noqa: E402
from eqsat_ad.backend.fused import pairs  # noqa: E402
from eqsat_ad.backend.fused.price import fused_price  # noqa: E402
from eqsat_ad.backend.fused.program import NumbaProgram  # noqa: E402
from eqsat_ad.backend.fused.schedule import LOOP_RATIO, work  # noqa: E402
from eqsat_ad.backend.fused.specialize import fix_sizes  # noqa: E402
from eqsat_ad.examples import PAPER_EXAMPLES  # noqa: E402
from eqsat_ad.plan.poly import ONE, ZERO, big_o  # noqa: E402
from eqsat_ad.plan.price import backend_price, program_cost  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
NBODY = importlib.import_module("fused_programs").PROGRAMS["nbody"]

pytestmark = pytest.mark.usefixtures("numba_cache")

_EXAMPLES = {e.id: e for e in PAPER_EXAMPLES}


def _candidates(monkeypatch: pytest.MonkeyPatch, example: str, backend: str
                ) -> tuple[list[ea.Program], dict[str, int], int, ea.Program]:
    """Extraction's best few programs for the worked example's gradient, the sizes they were
    ranked at, the position of the one ``finish`` chose and the optimized program."""
    seen: dict[str, object] = {}
    real = optimize_module.finish

    def spy(candidates, sizes, deadline=None, backend="numpy"):  # type: ignore[no-untyped-def]
        k, chosen = real(candidates, sizes, deadline, backend)
        seen.update(candidates=list(candidates), sizes=sizes, k=k)
        return k, chosen

    monkeypatch.setattr(optimize_module, "finish", spy)
    ex = _EXAMPLES[example]
    g = ea.grad(ea.parse(ex.source), list(ex.wrt), sizes=dict(ex.default_sizes), backend=backend)
    assert "candidates" in seen, "extraction ranked no candidates"
    return seen["candidates"], seen["sizes"], seen["k"], g  # type: ignore[return-value]


def test_numba_extraction_picks_the_cheapest_fused_schedule(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # E11: candidates the NumPy plan prices alike; the fused schedules differ (one fuses the
    # row sum's adjoint into A_bar's loop nest, another keeps a transpose as its own pass)
    candidates, sizes, k, g = _candidates(monkeypatch, "E11", "numba")
    tidied = [optimize_module.tidy(c) for c in candidates]
    fused = [backend_price(p, "numba", sizes).evaluate(sizes) for p in tidied]
    plan = [program_cost(p, sizes).total_poly.evaluate(sizes) for p in tidied]
    assert len(set(fused)) > 1, "the candidates' fused prices should differ"
    assert fused[k] == min(fused)
    assert g.report.fused.optimized.evaluate(sizes) == fused[k]
    # ranked as NumPy the same candidates give a program whose fused schedule costs more
    k_numpy, _ = optimize_module.finish(candidates, sizes, None, "numpy")
    assert plan[k_numpy] == min(plan)
    assert fused[k_numpy] > fused[k]


def test_the_report_prints_the_fused_prices_it_ranked_by(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    ex = _EXAMPLES["E11"]
    sizes = dict(ex.default_sizes)
    g = ea.grad(ea.parse(ex.source), list(ex.wrt), sizes=sizes, backend="numba")
    report = g.report
    assert report.fused is not None and report.fused.name == "numba"
    assert report.fused.optimized == fused_price(g.program, sizes)
    naive = ea.grad(ea.parse(ex.source), list(ex.wrt), optimize=False).program
    assert report.fused.naive == fused_price(naive, sizes)
    text = str(report)
    row = next(line for line in text.splitlines() if line.strip().startswith("numba at sizes"))
    at = [report.fused.naive.evaluate(sizes), report.fused.optimized.evaluate(sizes)]
    assert [float(x) for x in row.split()[3:]] == [float(v) for v in at]
    assert any(line.strip().startswith("numba cost") for line in text.splitlines())
    d = report.to_dict()["fused"]
    assert d["name"] == "numba"
    assert d["optimized"]["value"] == pytest.approx(float(at[1]))
    assert d["naive"]["big_o"] == "O(M*N)"
    # the NumPy backend's report prices no fused program
    numpy_report = ea.grad(ea.parse(ex.source), list(ex.wrt), sizes=sizes).report
    assert numpy_report.fused is None and "numba cost" not in str(numpy_report)
    assert "fused" not in numpy_report.to_dict()


@pytest.mark.parametrize("example", ["E1", "E6", "E8", "E11"])
def test_the_optimized_fused_schedule_is_never_priced_above_the_naive(example: str) -> None:
    ex = _EXAMPLES[example]
    sizes = dict(ex.default_sizes)
    g = ea.grad(ea.parse(ex.source), list(ex.wrt), sizes=sizes, backend="numba")
    f = g.report.fused
    assert f is not None
    assert f.optimized.evaluate(sizes) <= f.naive.evaluate(sizes)


def test_the_safety_net_compares_fused_prices_for_a_fusing_backend() -> None:
    # a report whose fused prices say the optimized program runs slower is priced above,
    # whatever its NumPy plans say; the same report without them is judged by the plans
    ex = _EXAMPLES["E11"]
    sizes = dict(ex.default_sizes)
    report = ea.grad(ea.parse(ex.source), list(ex.wrt), sizes=sizes, backend="numba").report
    names = sorted(sizes)
    f = report.fused
    assert not optimize_module._priced_above(report, names, sizes)
    swapped = dataclasses.replace(report, fused=dataclasses.replace(
        f, naive=f.optimized, optimized=f.naive + ONE))
    assert optimize_module._priced_above(swapped, names, sizes)
    plain = dataclasses.replace(swapped, fused=None)
    assert not optimize_module._priced_above(plain, names, sizes)


def test_a_pair_counts_the_work_its_terms_share_once() -> None:
    # N-body's x_bar: a row and a column term over k = 0, 1, 2. At a pair (p, q) the column
    # term's body is the row term's negated: LLVM computes the product once. Row term at k = 0:
    # d2_bar read, x reads at p and q, -, 2 *, *: 6 points; at k = 1, 2 the d2_bar read is
    # already loaded: 5; the column term: its negation, 1. Each of the six adds once: 25,
    # against 45 term by term.
    g = ea.grad(ea.parse(NBODY.source), "x", backend="numba")
    form = g.compiled._pairs["x_bar"]
    assert pairs._pair_work(form) == 25 * ONE
    by_term = ZERO
    for t in form.terms:
        by_term = by_term + (work(t.sum.body) + ONE) * len(form.rest_values())
    assert by_term == 45 * ONE


def test_fixed_small_sizes_price_the_specialized_pair_loop() -> None:
    # the NumPy front end's N-body names the coordinate axis M; a call with M = 3 runs the
    # program with M fixed, a pair loop, and that is the program priced
    src = ("def f(x: [N, M], m: [N]):\n"
           "    d2[i: N, j: N] = Sum[k: M]((x[i, k] - x[j, k]) ** 2) + 0.01\n"
           "    return Sum[i: N, j: N](m[i] * m[j] / sqrt(d2[i, j]))\n")
    prog = ea.grad(ea.parse(src), "x", optimize=False).program
    general = fused_price(prog)
    assert "M" in str(general.to_sympy())
    fixed = fused_price(prog, {"N": 1000, "M": 3})
    assert "M" not in str(fixed.to_sympy())
    schedule, plan = NumbaProgram.scheduled(fix_sizes(prog, {"M": 3}))
    assert "pairs" in schedule.placement.values()
    assert schedule.price is not None
    assert fixed == schedule.price * Fraction(1, LOOP_RATIO)
    # too many coordinates to unroll: the general price, M a symbol
    assert fused_price(prog, {"N": 1000, "M": 1000}) == general


def test_only_a_fusing_backend_prices_apart_from_the_plan() -> None:
    prog = ea.grad(ea.parse(_EXAMPLES["E1"].source), list(_EXAMPLES["E1"].wrt)).program
    assert backend_price(prog, "numpy") is None
    numba = backend_price(prog, "numba")
    assert numba is not None and numba == fused_price(prog)
    # rolled loops run as the NumPy backend runs them, under either backend
    ema = ea.grad(ea.parse(EMA), "x", optimize=False).program
    assert ema.folds and backend_price(ema, "numba") is None




# blur_window's optimized adjoint as an earlier candidate read: x_bar sums k over the extent
# of its first index, so W is an extent a pair loop would unroll (small_sizes)
BLUR_WINDOW_CANDIDATE = """
def blur_window_grad(x: [H, W]):
    b[i: H, j: W] = 0.1111111111111111 * (x[i - 1, j - 1] + x[i - 1, j] + x[i - 1, j + 1] + x[i, j - 1] + x[i, j] + x[i, j + 1] + x[i + 1, j - 1] + x[i + 1, j] + x[i + 1, j + 1])
    x_bar[i: H, j: W] = Sum[k: H]((i + 1 >= k and k + 2 > i) * Sum[l: W](0.2222222222222222 * ((j + 1 == l) * b[k, l]) + (0.2222222222222222 * ((j == l) * b[k, l]) + 0.2222222222222222 * ((j == l + 1) * b[k, l]))))
    return (x_bar,)
"""  # noqa: E501


def test_a_large_extent_stays_a_symbol_of_the_price() -> None:
    # fixed to 1024, W would make an O(H*W) price look O(H) to the asymptotic comparison (the
    # ranking and the safety net then kept this candidate, 6.5x slower than the naive adjoint)
    prog = ea.parse(BLUR_WINDOW_CANDIDATE)
    general = fused_price(prog)
    assert fused_price(prog, {"H": 1024, "W": 1024}) == general
    assert big_o(general) == "O(H*W)"
    few = fused_price(prog, {"H": 1024, "W": 3})  # a few points: constants of the call
    assert "W" not in str(few.to_sympy())
    assert few.evaluate({"H": 1024}) == general.evaluate({"H": 1024, "W": 3})


def test_blur_windows_numba_gradient_keeps_its_loop_nests() -> None:
    sweep = importlib.import_module("sweep_programs")
    sp = next(p for p in sweep.CATALOGUE if p.name == "blur_window")
    sizes = dict(sp.bench)
    g = ea.grad(ea.parse(sp.target), list(sp.wrt), sizes=sizes, backend="numba")
    f = g.report.fused
    assert f is not None and big_o(f.optimized) == big_o(f.naive) == "O(H*W)"
    assert f.optimized.evaluate(sizes) <= f.naive.evaluate(sizes)
    assert "numpy" not in g.compiled.schedule.placement.values()
