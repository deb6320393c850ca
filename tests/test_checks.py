"""check_program: every well-formedness rule, on parsed source (with locations) and on IR."""

from __future__ import annotations

import pytest

from eqsat_ad.frontend.index_lang import parse
from eqsat_ad.ir import (
    Access,
    Affine,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    IndexVar,
    Loc,
    Param,
    Pow,
    Program,
    ProgramError,
    Rel,
    Statement,
    Sum,
    size,
)
from eqsat_ad.ir.checks import check_program

HEAD = "def f(x: [N], A: [N, N], R: rel[N, N], w: []):\n"


@pytest.mark.parametrize(
    ("body", "message", "line", "col"),
    [
        ("    return w + z", "unknown name 'z'", 2, 15),
        ("    a = b\n    b = w\n    return a", "'b' is used before it is defined", 2, 8),
        ("    y[i: N] = y[i]\n    return y", "'y' is used before it is defined", 2, 14),
        ("    a = w\n    a = 2 * w\n    return a", "'a' is assigned twice", 3, 4),
        ("    w = 2\n    return w", "statement 'w' has the name of a parameter", 2, 4),
        ("    return Sum[i: N](A[i])", "'A' has 2 indices but is accessed with 1", 2, 21),
        ("    return x[0, 1]", "'x' has 1 index but is accessed with 2", 2, 11),
        ("    return w[0]", "'w' has 0 indices but is accessed with 1", 2, 11),
        (
            "    return Sum[i: N](R[i] * x[i])",
            "relation 'R' has 2 indices but is accessed with 1",
            2,
            21,
        ),
        ("    return Sum[i: N](x[i]) + x[i]", "return expression has free index 'i'", 2, 29),
        (
            "    a = Sum[i: N](x[i]) + x[i]\n    return a",
            "index 'i' is used outside the Sum",
            2,
            26,
        ),
        ("    y[i: N] = Sum[j: N](A[i, j])\n    z[i: N] = x[j]\n    return z", "index 'j'", 3, 14),
        ("    y[i: N] = x[k]\n    return y", "unknown name 'k'", 2, 14),
        ("    y[i: N, i: N] = x[i]\n    return y", "duplicate index 'i' in the generators", 2, 4),
        ("    return Sum[i: N, i: N](x[i])", "duplicate index 'i' in one Sum", 2, 11),
        ("    y[i: K] = x[i]\n    return y", "size 'K' of index 'i' cannot be matched", 2, 4),
        ("    return Sum[i: K](x[i])", "size 'K' of index 'i' cannot be matched", 2, 11),
        ("    return foo(w)", "unknown function 'foo'", 2, 11),
        ("    return exp(w, w)", "'exp' takes 1 argument but is given 2", 2, 11),
        ("    return max(w)", "'max' takes 2 arguments but is given 1", 2, 11),
        ("    return Sum[i: N]((x[i] and i < N) * w)", "tensor 'x' is used as a relation", 2, 22),
        (
            "    return Sum[i: N](x[i] * R)",
            "relation 'R' has 2 indices but is accessed with 0",
            2,
            28,
        ),
        (
            "    y[i: N] = x[i]\n    return Sum[i: N](y)",
            "tensor 'y' of rank 1 is used without",
            3,
            21,
        ),
        ("    return x + 1", "tensor 'x' of rank 1 is used without indices", 2, 11),
        ("    return x[i]", "return expression has free index 'i'", 2, 11),
        ("    return Sum[i: N](x[i] * A[i, j])", "return expression has free index 'j'", 2, 28),
        ("    return (w, Sum[j: N](A[i, j]))", "return expression has free index 'i'", 2, 25),
        ("    return N * w", "size 'N' cannot be used as a value", 2, 11),
        ("    y[i: N] = i\n    return y", "index 'i' cannot be used as a value", 2, 14),
        ("    return Sum[i: N](x[x])", "tensor 'x' cannot be used in an index expression", 2, 21),
        ("    return Sum[N: N](x[N])", "index 'N' has the name of a size", 2, 11),
        ("    return Sum[x: N](A[x, x])", "index 'x' has the name of a tensor", 2, 11),
        (
            "    y[i: N] = x[i]\n    return Sum[y: N](x[y])",
            "index 'y' has the name of a tensor",
            3,
            11,
        ),
        ("    i = w\n    return Sum[i: N](x[i])", "index 'i' has the name of a tensor", 3, 11),
        ("    N = w\n    return N", "statement 'N' has the name of a size", 2, 4),
        ("    Sum = w\n    return w", "statement name 'Sum' is reserved", 2, 4),
    ],
)
def test_check_errors_on_parsed_source(body: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ProgramError) as info:
        parse(HEAD + body + "\n", filename="chk.idx")
    err = info.value
    assert message in err.message
    assert err.loc is not None
    assert (err.loc.line, err.loc.col, err.loc.filename) == (line, col, "chk.idx")
    assert str(err) == f"chk.idx:{line}:{col}: {err.message}"


@pytest.mark.parametrize(
    ("text", "message", "line", "col"),
    [
        ("def f(N: [N]):\n    return N\n", "parameter 'N' has the name of a size", 1, 6),
        ("def f(x: [N], x: [N]):\n    return x\n", "duplicate parameter 'x'", 1, 14),
        ("def f(Sum: []):\n    return Sum\n", "parameter name 'Sum' is reserved", 1, 6),
        (
            "def f(x: [N]):\n    return Sum[i: N](x[i]) + Sum[x: N](w)\n",
            "index 'x' has the name of a tensor",
            2,
            29,
        ),
    ],
)
def test_parameter_errors(text: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ProgramError) as info:
        parse(text)
    assert message in info.value.message
    assert (info.value.loc.line, info.value.loc.col) == (line, col)


def test_well_formed_programs_pass() -> None:
    # shadowing a generator by a Sum is well defined (the inner binder wins) and allowed
    prog = parse(
        "def f(x: [N], A: [N, M], R: rel[N, M], w: []):\n"
        "    y[i: N] = Sum[j: M](R[i, j] * A[i, j]) + x[N - 1 - i]\n"
        "    z[i: N] = Sum[i: N](x[i]) * y[i / 2]\n"
        "    return w * Sum[i: N](z[i]), y\n"
    )
    check_program(prog)
    assert prog.returns_tuple and len(prog.outputs) == 2


# ================================================================================================
# Directly built IR (what later stages produce): the nearest location, or none
# ================================================================================================

n = size("N")
i = Affine.var("i")
X = Param("x", (n,))
R = Param("R", (n,), "relation")


ZERO = (Const(0.0),)


def prog_of(*statements: Statement, outputs=ZERO, params=(X, R)) -> Program:
    return Program(params, statements, outputs)


def raises(prog: Program, message: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        check_program(prog)
    assert message in info.value.message
    return info.value


def test_relation_used_as_a_value() -> None:
    out = Sum((IndexVar("i", n),), Access("R", (i,)))
    err = raises(prog_of(outputs=(out,)), "relation 'R' is used as a value")
    assert err.loc is None


def test_relation_returned_whole_is_a_value() -> None:
    raises(prog_of(outputs=(Access("R"),)), "relation 'R' is used as a value")


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_non_finite_constants(value: float) -> None:
    raises(prog_of(outputs=(Const(value),)), "is not finite")
    raises(prog_of(outputs=(Pow(Access("x", (Affine.constant(0),)), value),)), "is not finite")


def test_unknown_relation_and_nonrelation_in_a_bracket() -> None:
    bad = Sum((IndexVar("i", n),), Bracket(Rel("Q", (i,))))
    raises(prog_of(outputs=(bad,)), "unknown name 'Q'")
    stmt = Statement("y", (IndexVar("i", n),), Access("x", (i,)))
    uses = Sum((IndexVar("i", n),), Bracket(Rel("y", (i,))))
    raises(prog_of(stmt, outputs=(uses,)), "tensor 'y' is used as a relation")


def test_location_falls_back_to_the_enclosing_statement() -> None:
    here = Loc(7, 4, "gen")
    stmt = Statement("y", (IndexVar("i", n),), Binary("*", Const(2.0), Access("z", (i,))), here)
    err = raises(prog_of(stmt, outputs=(Access("y"),)), "unknown name 'z'")
    assert err.loc == here


def test_unbound_size_inside_an_index_expression() -> None:
    out = Access("x", (Affine.of_dim(size("K")) - 1,))
    raises(prog_of(outputs=(out,)), "size 'K' cannot be matched")


def test_size_shadowed_by_an_index_in_an_index_expression() -> None:
    # a generator named N would already clash; this checks the Affine.sizes path on its own
    body = Access("x", (Affine.of_dim(n),))
    stmt = Statement("y", (IndexVar("N", n),), body)
    raises(prog_of(stmt, outputs=(Access("y"),)), "index 'N' has the name of a size")


def test_empty_sum_empty_conjunction_and_no_outputs() -> None:
    raises(prog_of(outputs=(Sum((), Const(1.0)),)), "Sum binds no index")
    from eqsat_ad.ir import And

    # a conjunction of fewer than two predicates cannot even be built: it would not round-trip
    with pytest.raises(ValueError, match="at least two predicates"):
        And(())
    raises(prog_of(outputs=()), "returns nothing")


def test_statement_free_index_is_reported() -> None:
    stmt = Statement("y", (IndexVar("i", n),), Access("x", (Affine.var("j"),)))
    raises(prog_of(stmt, outputs=(Access("y"),)), "unknown name 'j'")


def test_call_arity_on_ir() -> None:
    raises(prog_of(outputs=(Call("sigmoid", ()),)), "'sigmoid' takes 1 argument but is given 0")


def test_rejects_non_programs() -> None:
    with pytest.raises(TypeError, match="expects a Program"):
        check_program("def f(): return 1")  # type: ignore[arg-type]


def test_bracket_on_a_relation_passes() -> None:
    out = Sum((IndexVar("i", n),), Binary("*", Bracket(Rel("R", (i,))), Access("x", (i,))))
    check_program(prog_of(outputs=(out,)))
    out2 = Bracket(Cmp("<", Affine.constant(0), Affine.of_dim(n)))
    check_program(prog_of(outputs=(out2,)))


@pytest.mark.parametrize(
    ("prog", "message"),
    [
        (prog_of(Statement("x-bar", (), Const(1.0))), "statement name 'x-bar' is not a valid"),
        (prog_of(params=(Param("lambda", ()),)), "parameter name 'lambda' is not a valid"),
        (
            prog_of(outputs=(Sum((IndexVar("1i", n),), Const(1.0)),)),
            "index name '1i' is not a valid identifier",
        ),
    ],
)
def test_names_must_be_identifiers(prog: Program, message: str) -> None:
    raises(prog, message)
