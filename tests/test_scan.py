"""Scans in the e-graph (rules/scan.egg): triangular and banded bracket sums are running sums.

* The rules are sound on random instances (inf and nan included) and an off-by-one bound is
  caught by the checker.
* Extraction itself prices a prefix sum O(N) (it priced it N² before the rule set).
* Prefix sums, suffix sums, moving windows (a constant and a symbolic width), cumulative sums
  along one axis of a matrix and of its row sums, and their gradients, run as Scan kernels:
  O(N) by the plan's price (counting kernels' points, no timing), with values equal to the
  reference interpreter's and to ``np.cumsum``.
"""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph.check import check_rules
from eqsat_ad.egraph.encode import encode_program
from eqsat_ad.egraph.extract import HUGE, Extractor
from eqsat_ad.egraph.optimize import Limits
from eqsat_ad.egraph.rules import load_rules, rules_dir
from eqsat_ad.egraph.saturate import saturate
from eqsat_ad.plan.poly import degree

PREFIX = """
def prefix_sum(x: [N]):
    c[i: N] = Sum[j: N]((j <= i) * x[j])
    return Sum[i: N](c[i] ** 2)
"""
MOVING = """
def moving_average(x: [N]):
    m[i: N] = Sum[j: N]((i - 8 < j and j <= i) * x[j]) / 8.0
    return Sum[i: N](m[i] ** 2)
"""
WINDOW = """
def window(x: [N], w: [K]):
    m[i: N] = Sum[j: N]((i - K < j and j <= i) * x[j])
    return Sum[i: N](m[i] ** 2)
"""
SUFFIX = """
def suffix(x: [N], y: [N]):
    s[i: N] = Sum[j: N]((j >= i) * exp(x[j]))
    return Sum[i: N](y[i] * log(s[i]))
"""
COLUMNS = """
def columns(A: [N, M]):
    C[i: N, k: M] = Sum[j: N]((j < i) * A[j, k])
    return Sum[i: N, k: M](C[i, k] ** 2)
"""

ROW_SUMS = """
def row_sums(A: [N, M]):
    c[i: N] = Sum[j: N]((j <= i) * Sum[k: M](A[j, k]))
    return Sum[i: N](c[i] ** 2)
"""

WEIGHTED = """
def weighted(x: [N], w: [N]):
    return Sum[i: N](w[i] * Sum[j: N]((j <= i) * x[j]))
"""


def test_scan_rules_are_sound_and_exercised() -> None:
    result = check_rules("scan", trials=48, seed=1)
    assert result.ok, str(result)
    assert not result.unexercised, str(result)
    assert result.finite_only == ()  # a Scan is the bracket sum: no finiteness assumed


def test_an_off_by_one_scan_bound_is_caught(tmp_path) -> None:
    text = (rules_dir() / "scan.egg").read_text()
    wrong = text.replace(
        "((set (scan-hi p j) (LAdd d (LAdd (LVar j) (LNil (bigrat (bigint 1) (bigint 1)))))))",
        "((set (scan-hi p j) (LAdd d (LVar j))))")  # j <= r taken as j < r
    assert wrong != text
    path = tmp_path / "scan_wrong.egg"
    path.write_text(wrong.replace("(ruleset scan)", "(ruleset scanwrong)")
                    .replace(":ruleset scan ", ":ruleset scanwrong "))
    failures = [f for seed in (1, 2) for f in check_rules(str(path), 48, seed).failures]
    assert failures and all(f.rule.startswith("scan") or f.rule == "all rules together"
                            for f in failures)


def _extraction_cost(prog: ea.Program, rules) -> float:
    enc = encode_program(prog)
    run = saturate(enc.text, load_rules(rules), 8, 5000, 30.0)
    return Extractor(run.snapshot, enc, None).best_program().cost[0]


@pytest.mark.parametrize("src", [PREFIX, MOVING])
def test_extraction_prices_a_running_sum_linearly(src: str) -> None:
    """Extraction's own cost (sizes at 2**20): a running sum is O(N) with the scan rules, and
    was O(N²) without them."""
    adjoint = ea.vjp(ea.parse(src), wrt="x")
    with_scan = _extraction_cost(adjoint, None)
    without = _extraction_cost(adjoint, ["indicator", "arith", "sumprod", "reindex"])
    assert with_scan < 100 * HUGE
    assert without >= HUGE**2


def _kinds(report_side) -> list[str]:
    return [k.kind for k in report_side.cost.plan.kernels]


CASES = [
    (PREFIX, {"N": 7}, "x", 1),
    (MOVING, {"N": 19}, "x", 1),
    (WINDOW, {"N": 13, "K": 4}, "x", 1),
    (SUFFIX, {"N": 9}, "x", 1),
    (COLUMNS, {"N": 8, "M": 3}, "A", 2),
    # the normal form flattens the inner sum into the scanned one: it is summed out first
    (ROW_SUMS, {"N": 8, "M": 3}, "A", 2),
    # the scan inside a sum over its bound: the running sums first, then the outer sum
    (WEIGHTED, {"N": 9}, "x", 1),
]


@pytest.mark.parametrize(("src", "sizes", "wrt", "deg"), CASES)
def test_scans_and_their_gradients_are_linear_and_agree(src, sizes, wrt, deg) -> None:
    prog = ea.parse(src)
    rng = np.random.default_rng(5)
    args = {}
    for p in prog.params:
        shape = tuple(sizes[d.name] if not isinstance(d, int) else d for d in p.shape)
        args[p.name] = rng.uniform(0.5, 1.5, size=shape)
    limits = Limits(seconds=20.0)
    fwd = ea.compile(prog, limits=limits)
    assert np.allclose(fwd(**args), ea.evaluate(prog, **args))
    g = ea.grad(prog, wrt=wrt, limits=limits)
    want = ea.evaluate(ea.vjp(prog, wrt=wrt), **args, ybar=1.0)
    assert np.allclose(g(**args), want)
    for report in (fwd.report, g.report):
        # the plan's price, a polynomial in the sizes: linear in the data (N, or N*M)
        assert degree(report.optimized.cost.total_poly) == deg, str(report)
        assert degree(report.naive.cost.total_poly) <= deg + 1
    # running sums, or (a short window) shifted slice updates: never a mask over N x N
    kinds = _kinds(g.report.optimized)
    assert "scan" in kinds or "slice-update" in kinds or "window" in str(g.source), kinds
    assert "mask" not in kinds, kinds


def test_prefix_sum_gradient_is_a_pair_of_cumsums() -> None:
    prog = ea.parse(PREFIX)
    g = ea.grad(prog, wrt="x")
    x = np.random.default_rng(0).normal(size=50)
    c2 = 2.0 * np.cumsum(x)
    assert np.allclose(g(x), np.cumsum(c2[::-1])[::-1])
    assert _kinds(g.report.optimized).count("scan") >= 2
    assert degree(g.report.optimized.cost.total_poly) == 1


@pytest.mark.parametrize(("src", "sizes", "wrt", "deg"), CASES)
def test_scans_agree_with_the_interpreter_on_inf_and_nan(src, sizes, wrt, deg) -> None:
    """Running sums carry inf and nan as the masked sum does (a band, a difference of running
    sums, is checked finite and rerun as the masked sum where it is not)."""
    prog = ea.parse(src)
    rng = np.random.default_rng(9)
    args = {}
    for p in prog.params:
        shape = tuple(sizes[d.name] if not isinstance(d, int) else d for d in p.shape)
        a = rng.uniform(0.5, 1.5, size=shape)
        flat = a.reshape(-1)
        flat[len(flat) // 2] = np.inf
        flat[-2 if p.name == wrt else 0] = -np.inf
        args[p.name] = a
    with np.errstate(all="ignore"):
        fwd = ea.compile(prog)
        assert np.allclose(fwd(**args), ea.evaluate(prog, **args), equal_nan=True)
        g = ea.grad(prog, wrt=wrt)
        want = ea.evaluate(ea.vjp(prog, wrt=wrt), **args, ybar=1.0)
        assert np.allclose(g(**args), want, equal_nan=True)


def test_what_extraction_prices_as_a_scan_the_plan_runs_as_one() -> None:
    """Every Scan extraction may choose decodes to a sum the plan runs in running sums, nested
    and flattened ones included: a scan of a scan (an inlined double cumsum), a scan summed over
    its bound, a scan of row sums. Priced by the plan (counting), checked by the interpreter."""
    src = """
def f(A: [N, M], w: [N]):
    D[i: N, j: M] = Sum[k: N]((k >= i) * Sum[l: N]((l < k + 1) * A[l, j]))
    s = Sum[i: N](w[i] * Sum[j: N]((j <= i) * Sum[m: M](A[j, m])))
    return Sum[i: N, j: M](D[i, j]) + s
"""
    prog = ea.parse(src)
    fn = ea.compile(prog, optimize=False)
    assert degree(fn.report.naive.cost.total_poly) == 2, str(fn.report)  # N*M, not N**2 * M
    rng = np.random.default_rng(2)
    A, w = rng.normal(size=(9, 4)), rng.normal(size=9)
    assert np.isclose(fn(A, w), ea.evaluate(prog, A=A, w=w))


def _sum_term(source: str):
    from eqsat_ad.ir.expr import free_indices
    from eqsat_ad.plan.normal import FreshNames, expand
    from eqsat_ad.plan.ranges import Axis

    (s,) = ea.parse(source).statements
    (t,) = expand(s.body, FreshNames({"i"}, flatten=True))  # (sums keep their names)
    inner = {iv.name: Axis.full(iv) for iv in t.sums}
    return t, inner, lambda f: set(free_indices(f))


def test_a_triangular_sum_splits_into_the_running_sums_operand_and_the_rest():
    from eqsat_ad.ir.index import Affine
    from eqsat_ad.plan.windows import scan_split

    # Σ_j [j <= i] x[j] w[i]: the running sums of x, read at i + 1, times w[i]
    t, inner, free = _sum_term("def f(x: [N], w: [N]):\n"
                               "    c[i: N] = Sum[j: N]((j <= i) * x[j] * w[i])\n    return c\n")
    got = scan_split("j", inner, t.factors, t.conds, free)
    assert got is not None
    assert got.bounds == ("i", None, Affine.var("i") + 1)
    assert [free(f) for f in got.with_j] == [{"j"}] and [free(f) for f in got.rest] == [{"i"}]
    assert got.private == {} and got.rest_conds == [] and got.conds_j == t.conds
    # Σ_{j, k} [j <= i] A[j, k]: k only under the scan, summed out first
    t, inner, free = _sum_term("def f(A: [N, N]):\n"
                               "    c[i: N] = Sum[j: N, k: N]((j <= i) * A[j, k])\n    return c\n")
    got = scan_split("j", inner, t.factors, t.conds, free)
    assert got is not None and set(got.private) == {"k"}
    # Σ_j [j <= i] A[i, j]: the operand holds i, no running sum serves every i
    t, inner, free = _sum_term("def f(A: [N, N]):\n"
                               "    c[i: N] = Sum[j: N]((j <= i) * A[i, j])\n    return c\n")
    assert scan_split("j", inner, t.factors, t.conds, free) is None
