"""Errors in a rule file cite the author's file, line and column, and suggest prelude names."""

from __future__ import annotations

import pytest

import eqsat_ad as ea
from eqsat_ad.egraph.rule_errors import nearest_names, prelude_names, unclosed_paren
from eqsat_ad.egraph.rules import RuleError

PROG = ea.parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n")

TYPO = """; my rules
(ruleset mine)

(rewrite (Mul a (Num 1.0)) a :ruleset mine :name "ok")
(rewrite (Mull a (Num 0.0))
         (Num 0.0) :ruleset mine :name "typo")
"""


@pytest.fixture
def typo_file(tmp_path):
    p = tmp_path / "typo.egg"
    p.write_text(TYPO)
    return p


@pytest.mark.parametrize("use", ["optimize", "check_rules"])
def test_unknown_constructor_is_located_in_the_users_file(typo_file, use):
    with pytest.raises(RuleError) as info:
        if use == "optimize":
            ea.optimize(PROG, rules=["arith", typo_file])
        else:
            ea.check_rules(typo_file)
    msg = str(info.value)
    assert msg.startswith(f"{typo_file}:5:10: Unbound function Mull")
    assert "nearest names the prelude declares: Mul" in msg
    assert "(rewrite (Mull a (Num 0.0))" in msg  # the user's own line, with a caret under it
    assert isinstance(info.value, ValueError)


def test_arity_and_unclosed_parenthesis(tmp_path):
    arity = tmp_path / "arity.egg"
    arity.write_text("(ruleset a)\n(rewrite (Mul a) a :ruleset a)\n")
    with pytest.raises(RuleError, match=r"arity.egg:2:10: Arity mismatch"):
        ea.check_rules(arity)
    unclosed = tmp_path / "unclosed.egg"
    unclosed.write_text('(ruleset u)\n; a comment with a ( in it\n(rewrite (Mul a (Num 1.0) a '
                        ':ruleset u :name "x (y")\n')
    with pytest.raises(RuleError, match=r"unclosed.egg:3:1: this '\(' is never closed"):
        ea.optimize(PROG, rules=unclosed)


def test_nearest_names_come_from_the_prelude():
    names = prelude_names()
    assert {"Sum", "Mul", "Acc", "Br", "Eq", "lfree", "extent"} <= set(names)
    assert nearest_names("Summ")[0] == "Sum"
    assert nearest_names("mul") == ["Mul"]
    assert unclosed_paren("(a (b) ; (\n)") is None
    assert unclosed_paren('(a "(" (b)\n (c') == (1, 1)


def test_shipped_and_good_files_still_load():
    assert ea.check_rules("arith").ok
