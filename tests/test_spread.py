"""Sums of reads spread over their contractions (eqsat_ad.plan.spread), and what choosing the
spread form costs the lowering: trial lowerings counted, each (term list, split) priced once."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.numpy import _load
from eqsat_ad.ir.expr import Access
from eqsat_ad.plan.lower.statements import Codegen
from eqsat_ad.plan.normal import FreshNames, Term, expand
from eqsat_ad.plan.spread import SPREAD_LIMIT, spread_reads

# Σ_k W[i, k] (x[i] - x[k]): spread into x[i] Σ_k W[i, k] - W @ x (no N x N difference)
CHEAP = """
def f(W: [N, N], x: [N]):
    y[i: N] = Sum[k: N](W[i, k] * (x[i] - x[k]))
    return y
"""
# the same per coordinate d of a small axis M: a split candidate besides the spread
PER_COORDINATE = """
def f(W: [N, N], x: [N, M]):
    y[i: N, d: M] = Sum[k: N](W[i, k] * (x[i, d] - x[k, d]))
    return y
"""
# a contraction with a small axis and nothing to spread
PLAIN_SPLIT = """
def f(W: [N, N], x: [N, M]):
    y[i: N, d: M] = Sum[k: N](W[i, k] * x[k, d] * x[i, d])
    return y
"""
# neither: lowered once, no trial
PLAIN = """
def f(W: [N, N], x: [N]):
    y[i: N] = Sum[k: N](W[i, k] * x[k])
    return y
"""
SIZES = {"N": 200, "M": 3}


def _terms(source: str) -> tuple[list[Term], FreshNames]:
    prog = ea.parse(source)
    (s,) = prog.statements
    names = FreshNames({"i", "k", "d"}, flatten=True)
    return expand(s.body, names), names


def test_a_difference_of_reads_is_spread_into_one_term_per_read():
    terms, names = _terms(CHEAP)
    spread = spread_reads(terms, names)
    assert spread is not None and len(terms) == 1 and len(spread) == 2
    assert sorted(t.coef for t in spread) == [-1.0, 1.0]
    for t in spread:  # each a contraction of plain reads over the same summed index
        assert [iv.name for iv in t.sums] == [iv.name for iv in terms[0].sums]
        assert all(isinstance(f, Access) for f in t.factors) and len(t.factors) == 2


@pytest.mark.parametrize("source", [PLAIN, PLAIN_SPLIT])
def test_nothing_to_spread_is_none(source):
    terms, names = _terms(source)
    assert spread_reads(terms, names) is None


def _differences(n: int) -> str:
    reads = " * ".join(f"(x{m}[i] - x{m}[k])" for m in range(n))
    params = ", ".join(f"x{m}: [N]" for m in range(n))
    return f"def f(W: [N, N], {params}):\n    y[i: N] = Sum[k: N](W[i, k] * {reads})\n" \
        "    return y\n"


def test_a_spread_past_the_limit_is_not_made():
    # a product of n differences of reads spreads into 2^n terms: 16 = SPREAD_LIMIT at most
    assert SPREAD_LIMIT == 2 ** 4
    terms, names = _terms(_differences(4))
    spread = spread_reads(terms, names)
    assert spread is not None and len(spread) == 16
    terms, names = _terms(_differences(5))
    assert spread_reads(terms, names) is None


def _lowered(source: str, cls: type[Codegen] = Codegen) -> tuple[Codegen, object]:
    cg = cls(ea.parse(source), SIZES, False)
    return cg, cg.lowered()


@pytest.mark.parametrize(("source", "trials", "spread"), [
    (CHEAP, 2, True),           # the terms whole, the spread form whole
    (PER_COORDINATE, 4, True),  # each form whole and as a loop over d
    (PLAIN_SPLIT, 2, False),    # whole and as a loop over d: no spread trial
    (PLAIN, 0, False),          # no choice to make: lowered once, no trial
])
def test_trial_lowerings_are_counted(source, trials, spread):
    cg, low = _lowered(source)
    assert cg.trials == trials
    assert any(d.kind == "spread" for d in low.decisions) == spread, low.source


class _AskedTwice(Codegen):
    """Asks for every split choice twice: the second answer must come without a trial."""

    repeats = 0

    def split_choice(self, s, terms):
        first = super().split_choice(s, terms)
        before = self.trials
        again = super().split_choice(s, terms)
        assert again == first and self.trials == before
        type(self).repeats += 1
        return first


class _Uncached(Codegen):
    """Prices every trial afresh (no remembered prices)."""

    def trial_price(self, s, terms, cand):
        self.trial_prices = {}
        return super().trial_price(s, terms, cand)


@pytest.mark.parametrize("source", [CHEAP, PER_COORDINATE, PLAIN_SPLIT])
def test_a_priced_term_list_is_not_lowered_again_and_the_code_is_the_same(source):
    _AskedTwice.repeats = 0
    cg, low = _lowered(source)
    twice, low2 = _lowered(source, _AskedTwice)
    uncached, low3 = _lowered(source, _Uncached)
    assert _AskedTwice.repeats >= 1
    assert twice.trials == cg.trials == uncached.trials
    assert low2.source == low.source == low3.source
    prog = ea.parse(source)
    rng = np.random.default_rng(5)
    args = [rng.standard_normal([SIZES[d.name] for d in p.shape]) for p in prog.params]
    np.testing.assert_allclose(_load(low)(*args), ea.evaluate(prog, *args),
                               rtol=1e-9, atol=1e-9)
