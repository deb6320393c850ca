"""The shipped rule files are sound on random instances; a wrong rule is found and named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.egraph.check import RuleCheck, RuleWarning, check_rules
from eqsat_ad.egraph.rules import SHIPPED, RuleError, load_rule_file, rules_dir
from eqsat_ad.ir.errors import EqsatError
from eqsat_ad.ir.interpreter import evaluate

BAD = Path(__file__).parent / "rules_bad.egg"


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_rule_passes_the_checker(name):
    result = check_rules(name, trials=16, seed=0)
    assert isinstance(result, RuleCheck)
    assert result.ok, str(result)
    assert len(result.rules) >= 3
    # most rules really were tried (the checker is not vacuous)
    assert len(result.unexercised) <= len(result.rules) // 4, str(result)


def test_key_indicator_rules_are_exercised():
    exercised: dict[str, int] = {}
    for seed in (0, 1):
        result = check_rules("indicator", trials=32, seed=seed)
        assert result.ok, str(result)
        for rule, k in result.exercised.items():
            exercised[rule] = exercised.get(rule, 0) + k
    for rule in ("sum-elim", "sum-elim-bare", "sum-elim-stride", "bracket-out-of-sum",
                 "lower-bound-holds", "upper-bound-holds", "range-ge-holds", "range-gt-holds",
                 "range-top-holds", "range-top-holds-ge"):
        assert exercised.get(rule, 0) > 0, rule


def test_a_wrong_rule_is_found_and_named():
    found: set[str] = set()
    for seed in (0, 1, 2):
        result = check_rules(str(BAD), trials=32, seed=seed)
        assert not result.ok
        found |= {f.rule for f in result.failures}
        text = str(result)
        assert "unsound" in text and "!=" in text and "sizes" in text
        for failure in result.failures:
            assert failure.rule in text and failure.lhs != failure.rhs
            assert str(failure).startswith(f"rule {failure.rule!r} is unsound")
    # both wrong rules are named; the sound one in the same file never is
    assert found == {"bracket-into-division", "sum-elim-without-range"}


def test_shipped_files_are_one_named_ruleset_each():
    for name in SHIPPED:
        rf = load_rule_file(name)
        assert rf.name == name
        assert Path(rf.path).parent == rules_dir()
    assert load_rule_file("indicator").saturate and not load_rule_file("sumprod").saturate


def test_checker_errors_are_clear(tmp_path):
    with pytest.raises(RuleError, match="unknown rule set"):
        check_rules("nonsense")
    with pytest.raises(EqsatError, match="trials"):
        check_rules("arith", trials=0)
    broken = tmp_path / "broken.egg"
    broken.write_text("(ruleset broken)\n(rewrite (Mul a) a :ruleset broken :name \"x\")\n")
    with pytest.raises(RuleError, match=r"broken.egg:2:10: Arity mismatch"):
        check_rules(str(broken))


_FINITE_ONLY_RULES = """
(ruleset risky)
; x - x = 0 holds for finite x only: inf - inf is nan
(rewrite (Add x (Mul (Num -1.0) x)) (Num 0.0) :ruleset risky :name "sub-self")
; the distributive law without the finiteness guard of rules/sumprod.egg
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :ruleset risky :name "distribute-any")
; a factor out of a sum, unguarded: sum_i w * x[i] with w = inf, x = [2, -1]
(rule ((= s (Sum j n (Mul a b))) (= f (free a)) (set-not-contains f j))
      ((union s (Mul a (Sum j n b)))) :ruleset risky :name "factor-out-any")
"""


def test_finite_only_rules_are_flagged(tmp_path):
    path = tmp_path / "risky.egg"
    path.write_text(_FINITE_ONLY_RULES)
    found: set[str] = set()
    for seed in (0, 1, 2):
        result = check_rules(str(path), trials=24, seed=seed)
        found |= {f.rule for f in result.failures}
    assert {"sub-self", "distribute-any", "factor-out-any"} <= found, found
    # marked finite-only, the same rules are checked with finite values only, and pass
    marker = "; finite-only: sub-self distribute-any factor-out-any"
    path.write_text(_FINITE_ONLY_RULES.replace("(ruleset risky)", f"(ruleset risky)\n{marker}"))
    for seed in (0, 1):
        result = check_rules(str(path), trials=24, seed=seed)
        assert result.ok, str(result)
        assert set(result.finite_only) == {"sub-self", "distribute-any", "factor-out-any"}
        assert "finite values only" in str(result)


def test_the_shipped_guards_make_the_finite_only_laws_sound():
    # the guarded versions pass with inf, nan, ±0, huge, tiny values and sizes 0 and 1
    for seed in (3, 4):
        result = check_rules("sumprod", trials=24, seed=seed)
        assert result.ok, str(result)
        for rule in ("distribute", "factor", "factor-out-of-sum", "factor-into-sum"):
            assert result.exercised.get(rule, 0) > 0, rule


def test_rules_optimize_never_runs_are_warned_about(tmp_path):
    path = tmp_path / "stray.egg"
    path.write_text(
        "(ruleset mine)\n"
        "(rewrite (Mul a (Num 1.0)) a :ruleset mine :name \"kept\")\n"
        "(rewrite (Add a (Num 0.0)) a :name \"no-ruleset\")\n"
    )
    with pytest.warns(RuleWarning) as record:
        result = check_rules(str(path), trials=4)
    text = " ".join(str(w.message) for w in record)
    assert "'no-ruleset' belongs to no ruleset" in text and "'kept'" not in text
    assert len(result.warnings) == 1 and "WARNING" in str(result)
    # a rule in a ruleset the file does not declare cannot load at all: a located error
    other = tmp_path / "elsewhere.egg"
    other.write_text(
        "(ruleset mine)\n(rewrite (Add (Num 0.0) a) a :ruleset elsewhere :name \"elsewhere\")\n"
    )
    with pytest.raises(ValueError, match=r"elsewhere\.egg:2:1: No such ruleset: elsewhere"):
        check_rules(str(other), trials=1)


def test_shipped_rule_files_warn_about_nothing():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuleWarning)
        for name in SHIPPED:
            assert check_rules(name, trials=1).warnings == ()


def test_checker_values_cover_non_finite_huge_tiny_and_sizes_0_and_1():
    import random

    import numpy as np

    from eqsat_ad.egraph.check import _settings
    from eqsat_ad.egraph.check_instances import random_arrays

    settings = _settings(random.Random(0), 3, finite=False)
    assert {s["N"] for s, _ in settings} == {0, 1, 3}
    values = np.concatenate([a[k].ravel() for _, a in settings for k in ("S", "T1", "T2")])
    assert np.isnan(values).any() and np.isposinf(values).any() and np.isneginf(values).any()
    assert (values == 0).any() and (np.abs(values[np.isfinite(values)]) > 1e29).any()
    assert ((np.abs(values) < 1e-29) & (values != 0)).any()
    rng = np.random.default_rng(0)
    for mode in ("plain", "huge", "tiny"):
        a = random_arrays(rng, 4, mode)
        assert all(np.isfinite(v).all() and (v != 0).all() for k, v in a.items()
                   if v.dtype != bool)
    # finite-only rules are never shown inf or nan
    finite = _settings(random.Random(0), 3, finite=True)
    assert all(np.isfinite(v).all() for _, a in finite for v in a.values() if v.dtype != bool)


@pytest.mark.parametrize("term", ["max(2, 0.001)", "abs(2.0)", "tanh(2.0)", "min(2, 0.001)"])
def test_like_terms_add_their_coefficients_exactly(term: str) -> None:
    """``t1 - t1`` with ``t1 = Σ_{i<2} c`` (c a finite call of constants) was optimized to
    ``c`` (fuzz seed 3007, case 2015): a cyclic e-class grew like-term coefficients to 2**64,
    where ``a + 1`` rounds to ``a``, so ``a e + e = a e`` put e and 2e in one class. The
    like-terms rules fire only where the coefficients add exactly."""
    prog = ea.parse(f"def f(x: [N]):\n    t1 = Sum[i: 2]({term})\n    return t1 - t1\n")
    x = np.ones(3)
    assert evaluate(prog, x=x) == 0.0
    f = ea.compile(prog)
    assert f(x=x) == 0.0
    # a short sum is unrolled only where its summand reads the summed index (scan.egg): this
    # constant one, unrolled, grew the e-graph to the node limit (35,040 nodes, 5 s)
    stats = f.report.stats
    assert stats.stop_reason == "saturated" and stats.nodes < 200, (stats.stop_reason, stats.nodes)
