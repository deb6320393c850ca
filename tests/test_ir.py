"""The IR core: affine arithmetic, free indices, capture-avoiding substitution, printing."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqsat_ad.ir import (
    Access,
    Affine,
    Binary,
    Bracket,
    Cmp,
    Const,
    IndexVar,
    Neg,
    Param,
    Pow,
    Program,
    Statement,
    Sum,
    free_indices,
    mul,
    print_expr,
    rename,
    size,
    substitute,
)

i, j, k = Affine.var("i"), Affine.var("j"), Affine.var("k")
N = Affine.of_dim(size("N"))

small = st.integers(-5, 5)
affines = st.builds(
    lambda a, b, c, n: Affine.make({"i": a, "j": b}, {"N": n}, c), small, small, small, small
)


@given(affines, affines, st.integers(0, 9), st.integers(0, 9), st.integers(1, 9))
def test_affine_arithmetic_matches_integers(
    a: Affine, b: Affine, vi: int, vj: int, vn: int
) -> None:
    env, sizes = {"i": vi, "j": vj}, {"N": vn}
    assert (a + b).evaluate(env, sizes) == a.evaluate(env, sizes) + b.evaluate(env, sizes)
    assert (a - b).evaluate(env, sizes) == a.evaluate(env, sizes) - b.evaluate(env, sizes)
    assert a.scale(3).evaluate(env, sizes) == 3 * a.evaluate(env, sizes)
    # substituting i := b evaluates as the composition
    sub = a.substitute({"i": b})
    assert sub.evaluate(env, sizes) == a.evaluate({"i": b.evaluate(env, sizes), "j": vj}, sizes)


def test_affine_normal_form_is_structural() -> None:
    assert i + 1 - i == Affine.constant(1)
    assert (i + j) == (j + i)
    assert hash(i + j) == hash(j + i)
    assert (i - i).is_constant()
    assert str(N - 1 - i) == "-i + N - 1"
    assert str(k.scale(Fraction(1, 2))) == "k/2"
    assert str(i.scale(2) + 1) == "2*i + 1"
    assert not k.scale(Fraction(1, 2)).is_integral()


def test_free_indices_respect_binders() -> None:
    body = mul(Access("A", (i, j)), Bracket(Cmp("<", j, N)))
    assert free_indices(body) == {"i", "j"}
    assert free_indices(Sum((IndexVar("j", "N"),), body)) == {"i"}
    assert free_indices(Sum((IndexVar("i", "N"), IndexVar("j", "N")), body)) == frozenset()


def test_substitution_avoids_capture() -> None:
    # Sum_j A[i, j] with i := j must rename the bound j, not capture the free one.
    e = Sum((IndexVar("j", "N"),), Access("A", (i, j)))
    out = substitute(e, {"i": j})
    assert isinstance(out, Sum)
    bound = out.indices[0].name
    assert bound != "j"
    assert out.body == Access("A", (j, Affine.var(bound)))
    assert free_indices(out) == {"j"}


def test_substitution_stops_at_shadowing_binder() -> None:
    e = Sum((IndexVar("i", "N"),), Access("x", (i,)))
    assert substitute(e, {"i": j + 1}) == e
    assert rename(Access("x", (i + 1,)), {"i": "k"}) == Access("x", (k + 1,))


def test_values_are_immutable_and_hashable() -> None:
    a = Access("x", (i,))
    with pytest.raises(AttributeError):
        a.name = "y"  # type: ignore[misc]
    assert len({a, Access("x", (i,)), Access("x", (j,))}) == 2


def test_printer_parenthesizes_by_precedence() -> None:
    x = Access("x")
    assert print_expr(Binary("-", x, Binary("-", x, x))) == "x - (x - x)"
    assert print_expr(Binary("-", Binary("-", x, x), x)) == "x - x - x"
    assert print_expr(Binary("*", Binary("+", x, x), x)) == "(x + x) * x"
    assert print_expr(Neg(Pow(x, 2))) == "-x ** 2"
    assert print_expr(Pow(Neg(x), 2)) == "(-x) ** 2"
    assert print_expr(Neg(Const(2))) == "-(2)"
    assert print_expr(Pow(x, -1)) == "x ** (-1)"
    assert print_expr(Const(0.5)) == "0.5"


def test_program_prints_in_index_language() -> None:
    prog = Program(
        params=(Param("A", ("N", "N")), Param("M", ("N", "N"), "relation")),
        statements=(
            Statement("t", (), Sum((IndexVar("i", "N"),), Access("A", (i, i)))),
        ),
        outputs=(Binary("+", Access("t"), Access("t")),),
    )
    assert str(prog) == (
        "def f(A: [N, N], M: rel[N, N]):\n"
        "    t = Sum[i: N](A[i, i])\n"
        "    return t + t\n"
    )
    assert prog.size_names() == ("N",)
    assert prog.shape_of("A") == (size("N"), size("N"))


def test_unread_outputs_are_returned_whole_and_read_by_nothing():
    from eqsat_ad.frontend.index_lang import parse

    prog = parse(
        "def f(x: [N]):\n"
        "    y[i: N] = x[i] * 2\n"
        "    z[i: N] = y[i] + 1\n"
        "    w[i: N] = x[i]\n"
        "    return y, z, Sum[i: N](w[i]), x"
    )
    assert prog.unread_outputs() == frozenset({"z"})  # y and w are read; x is a parameter
