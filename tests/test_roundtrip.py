"""Printer/parser round trip on random programs, and the guarantees of tests/strategies.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import (
    Access,
    Affine,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    IndexVar,
    Param,
    Pow,
    Pred,
    Program,
    Rel,
    Sum,
    children,
    free_indices,
    print_program,
    size,
)
from eqsat_ad.ir.checks import check_program

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

knobs = st.fixed_dictionaries(
    {
        "max_statements": st.integers(0, 4),
        "allow_relations": st.booleans(),
        "smooth": st.booleans(),
        "scalar_output": st.booleans(),
        "max_depth": st.integers(1, 3),
    }
)


def walk(e: Expr) -> Iterator[Expr]:
    yield e
    for c in children(e):
        yield from walk(c)


def nodes(prog: Program) -> Iterator[Expr]:
    for s in prog.statements:
        yield from walk(s.body)
    for o in prog.outputs:
        yield from walk(o)


def preds(prog: Program) -> Iterator[Pred]:
    def conjuncts(p: Pred) -> Iterator[Pred]:
        yield p
        if isinstance(p, And):
            for q in p.preds:
                yield from conjuncts(q)

    for e in nodes(prog):
        if isinstance(e, Bracket):
            yield from conjuncts(e.pred)


@FAST
@given(st.data(), knobs)
def test_print_then_parse_is_the_identity(data: st.DataObject, kw: dict) -> None:
    prog = data.draw(programs(**kw))
    check_program(prog)
    text = print_program(prog)
    again = parse(text)
    assert again == prog
    assert print_program(again) == text


@FAST
@given(st.data(), knobs, sizes_strategy(), st.integers(0, 2**32 - 1))
def test_generated_programs_evaluate_to_finite_values(
    data: st.DataObject, kw: dict, sizes: dict[str, int], seed: int
) -> None:
    prog = data.draw(programs(**kw))
    args = random_inputs(prog, sizes, np.random.default_rng(seed))
    for p in prog.params:
        v = np.asarray(args[p.name])
        assert v.shape == tuple(sizes[d.name] if hasattr(d, "name") else d for d in p.shape)
        if p.kind == "relation":
            assert v.dtype == bool
        else:
            assert v.dtype == np.float64 and np.all(np.abs(v) <= 1.0)
    result = ea.evaluate(prog, **args)
    values = result if prog.returns_tuple else (result,)
    assert len(values) == len(prog.outputs)
    for v in values:
        assert np.all(np.isfinite(v))
    if kw["scalar_output"]:
        assert not prog.returns_tuple and isinstance(result, float)


@FAST
@given(programs(smooth=True, allow_relations=False, max_statements=4))
def test_smooth_programs_use_only_smooth_functions_and_no_relations(prog: Program) -> None:
    calls = {e.fn for e in nodes(prog) if isinstance(e, Call)}
    assert not calls & {"abs", "max", "min", "stop_gradient"}
    assert all(p.kind == "tensor" for p in prog.params)
    assert tensor_params(prog) == prog.param_names


@FAST
@given(programs(scalar_output=True, max_statements=4))
def test_scalar_output_reads_every_statement(prog: Program) -> None:
    (out,) = prog.outputs
    assert not free_indices(out)
    read: set[str] = set()
    for s in prog.statements:
        read |= s.reads()
    for o in prog.outputs:
        read |= {e.name for e in walk(o) if isinstance(e, Access)}
    assert {s.name for s in prog.statements} <= read


def has_access(pred: Callable[[Access, Program], bool]) -> Callable[[Program], bool]:
    return lambda prog: any(isinstance(e, Access) and pred(e, prog) for e in nodes(prog))


def _shifted(a: Access, _: Program) -> bool:
    return any(
        ix.as_var() is None and len(ix.index) == 1 and ix.index[0][1] == 1 for ix in a.indices
    )


def _reversed(a: Access, _: Program) -> bool:
    return any(ix.index and ix.index[0][1] == -1 and ix.sizes for ix in a.indices)


def _strided(a: Access, _: Program) -> bool:
    return any(any(c == 2 for _, c in ix.index) for ix in a.indices)


def _diagonal(a: Access, _: Program) -> bool:
    return len(a.indices) == 2 and a.indices[0] == a.indices[1] and bool(a.indices[0].index)


def _constant(a: Access, _: Program) -> bool:
    return bool(a.indices) and all(ix.is_constant() for ix in a.indices)


def _difference(a: Access, _: Program) -> bool:
    return any(len(ix.index) == 2 for ix in a.indices)


def _op(op: str) -> Callable[[Program], bool]:
    return lambda prog: any(isinstance(p, Cmp) and p.op == op for p in preds(prog))


FEATURES: dict[str, Callable[[Program], bool]] = {
    "shifted access x[i + 1]": has_access(_shifted),
    "reversed access x[N - 1 - i]": has_access(_reversed),
    "strided access x[2*i]": has_access(_strided),
    "diagonal access A[i, i]": has_access(_diagonal),
    "constant access x[0]": has_access(_constant),
    "difference access x[i - j]": has_access(_difference),
    "nested sums": lambda p: any(
        isinstance(e, Sum) and any(isinstance(d, Sum) for d in walk(e.body)) for e in nodes(p)
    ),
    "relation bracket": lambda p: any(isinstance(q, Rel) for q in preds(p)),
    "conjunction": lambda p: any(isinstance(q, And) for q in preds(p)),
    "built-in call": lambda p: any(isinstance(e, Call) for e in nodes(p)),
    "three statements": lambda p: len(p.statements) == 3,
    **{f"bracket {op}": _op(op) for op in ("==", "!=", "<", "<=")},
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_the_strategy_reaches_each_shape(feature: str) -> None:
    found = find(
        programs(),
        FEATURES[feature],
        settings=settings(
            max_examples=1000,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
        ),
    )
    check_program(found)


def test_random_inputs_names_missing_sizes() -> None:
    prog = parse("def f(x: [N], A: [M, 2]):\n    return x[0] + A[0, 0]\n")
    with pytest.raises(ValueError, match="'M'"):
        random_inputs(prog, {"N": 2}, np.random.default_rng(0))
    args = random_inputs(prog, {"N": 2, "M": 3}, np.random.default_rng(0))
    assert args["x"].shape == (2,) and args["A"].shape == (3, 2)


coefficients = st.fractions(min_value=-4, max_value=4, max_denominator=3)


@FAST
@given(coefficients, coefficients, coefficients, coefficients)
def test_affine_indices_round_trip(ci: Fraction, cj: Fraction, cn: Fraction, c0: Fraction) -> None:
    a = Affine.make({"i": ci, "j": cj}, {"N": cn}, c0)
    prog = Program(
        (Param("x", (size("N"),)),),
        (),
        (Sum((IndexVar("i", size("N")), IndexVar("j", size("N"))), Access("x", (a,))),),
    )
    assert parse(print_program(prog)) == prog


@FAST
@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(-8, 8))
def test_constants_and_exponents_round_trip(value: float, exponent: float) -> None:
    prog = Program((Param("w", ()),), (), (Binary("*", Const(value), Pow(Access("w"), exponent)),))
    back = parse(print_program(prog))
    assert back == prog
    assert back.outputs[0].lhs.value == value and back.outputs[0].rhs.exponent == exponent
