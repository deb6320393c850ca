"""The shipped rule files are sound on random instances; a wrong rule is found and named."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqsat_ad.egraph.check import RuleCheck, check_rules
from eqsat_ad.egraph.rules import SHIPPED, RuleError, load_rule_file, rules_dir
from eqsat_ad.ir.errors import EqsatError

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
