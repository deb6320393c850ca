"""The index-language parser: each construct, its meaning, and each unsupported construct."""

from __future__ import annotations

import textwrap
from fractions import Fraction

import numpy as np
import pytest
import sympy

import eqsat_ad as ea
from eqsat_ad.frontend.index_lang import parse, tensor_fn
from eqsat_ad.ir import (
    Access,
    Affine,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    IndexVar,
    Loc,
    Neg,
    Param,
    Pow,
    ProgramError,
    Rel,
    Sum,
    print_program,
    register_function,
    size,
)

i, j, k = Affine.var("i"), Affine.var("j"), Affine.var("k")
N = Affine.of_dim(size("N"))


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def body_of(expr: str, params: str = "x: [N], A: [N, N], w: []") -> object:
    """The parsed body of ``s[i: N, j: N] = expr``."""
    prog = parse(f"def f({params}):\n    s[i: N, j: N] = {expr}\n    return w\n")
    return prog.statements[0].body


def scalar_of(expr: str, params: str = "x: [N], A: [N, N], w: []") -> object:
    return parse(f"def f({params}):\n    return {expr}\n").outputs[0]


# ================================================================================================
# Constructs
# ================================================================================================


def test_design_example_parses_to_the_expected_ir() -> None:
    prog = parse(
        src("""
        def f(A: [N, N], x: [N], M: rel[N, N], w: []):
            y[i: N] = Sum[j: N](A[i, j] * x[j])           # tensor statement
            s = Sum[i: N, j: N](M[i, j] * A[i, j])        # scalar statement
            d[i: N] = (i + 1 < N) * (x[i + 1] - x[i])
            return w * Sum[i: N](x[i] * y[i]) + s + Sum[i: N](d[i] ** 2)
        """)
    )
    n = size("N")
    assert prog.name == "f"
    assert prog.params == (
        Param("A", (n, n)),
        Param("x", (n,)),
        Param("M", (n, n), "relation"),
        Param("w", ()),
    )
    y, s, d = prog.statements
    assert y.indices == (IndexVar("i", n),)
    assert y.body == Sum((IndexVar("j", n),), Binary("*", Access("A", (i, j)), Access("x", (j,))))
    assert s.indices == ()
    assert s.body == Sum(
        (IndexVar("i", n), IndexVar("j", n)),
        Binary("*", Bracket(Rel("M", (i, j))), Access("A", (i, j))),
    )
    assert d.body == Binary(
        "*",
        Bracket(Cmp("<", i + 1, N)),
        Binary("-", Access("x", (i + 1,)), Access("x", (i,))),
    )
    assert not prog.returns_tuple and len(prog.outputs) == 1

    # ... and it means what docs/index-language.md says.
    rng = np.random.default_rng(1)
    A, x = rng.normal(size=(4, 4)), rng.normal(size=4)
    M, w = rng.random((4, 4)) < 0.5, 0.7
    yv = A @ x
    dv = np.append(x[1:] - x[:-1], 0.0)
    want = w * x @ yv + (A * M).sum() + (dv**2).sum()
    assert ea.evaluate(prog, A=A, x=x, M=M, w=w) == pytest.approx(want)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("x[i]", (i,)),
        ("x[i + 1]", (i + 1,)),
        ("x[i - 1]", (i - 1,)),
        ("x[2*i]", (i.scale(2),)),
        ("x[i * 2]", (i.scale(2),)),
        ("x[N - 1 - i]", (N - 1 - i,)),
        ("x[-i + N - 1]", (N - 1 - i,)),
        ("x[i - j]", (i - j,)),
        ("x[k/2]", (k.scale(Fraction(1, 2)),)),
        ("x[3*k/2]", (k.scale(Fraction(3, 2)),)),
        ("x[(i + 1) * 2]", ((i + 1).scale(2),)),
        ("x[-i]", (-i,)),
        ("x[0]", (Affine.constant(0),)),
        ("A[i, i]", (i, i)),
        ("A[N - 1, 0]", (N - 1, Affine.constant(0))),
    ],
)
def test_affine_indices(text: str, want: tuple[Affine, ...]) -> None:
    e = body_of(f"Sum[k: N]({text})")
    assert isinstance(e, Sum)
    assert e.body == Access(text.split("[")[0], want)


def test_fractional_and_strided_indices_read_the_right_elements() -> None:
    prog = parse(
        src("""
        def f(x: [N]):
            h[k: N] = x[k/2]
            y[i: N] = (2*i < N) * x[2*i]
            return h, y
        """)
    )
    x = np.arange(1.0, 7.0)
    h, y = ea.evaluate(prog, x=x)
    # x[k/2] is 0 at odd k (a fractional index reads 0)
    np.testing.assert_allclose(h, [1, 0, 2, 0, 3, 0])
    np.testing.assert_allclose(y, [1, 3, 5, 0, 0, 0])


def test_negative_literal_versus_negated_constant() -> None:
    assert scalar_of("-2") == Const(-2.0)
    assert scalar_of("- 2.5") == Const(-2.5)
    assert scalar_of("-(2)") == Neg(Const(2.0))
    assert scalar_of("-(-2)") == Neg(Const(-2.0))
    assert scalar_of("--w") == Neg(Neg(Access("w")))
    # Python precedence: -2 ** 2 is -(2 ** 2)
    assert scalar_of("-2 ** 2") == Neg(Pow(Const(2.0), 2.0))
    assert scalar_of("(-2) ** 2") == Pow(Const(-2.0), 2.0)
    assert ea.evaluate(parse("def f(w: []):\n    return -2 ** 2 + (-2) ** 2 * w\n"), w=3.0) == 8.0


def test_numbers_are_floats() -> None:
    c = scalar_of("3")
    assert c == Const(3.0) and isinstance(c.value, float)
    assert scalar_of("0.25") == Const(0.25)
    assert scalar_of("1e-3") == Const(0.001)


@pytest.mark.parametrize(
    ("text", "exponent"),
    [
        ("w ** 2", 2.0),
        ("w ** 0.5", 0.5),
        ("w ** (-1)", -1.0),
        ("w ** -1", -1.0),
        ("w ** -(2)", -2.0),
    ],
)
def test_power_with_constant_exponent(text: str, exponent: float) -> None:
    assert scalar_of(text) == Pow(Access("w"), exponent)


@pytest.mark.parametrize(
    "fn", ["exp", "log", "sin", "cos", "tanh", "sqrt", "abs", "sigmoid", "stop_gradient"]
)
def test_unary_builtins(fn: str) -> None:
    assert scalar_of(f"{fn}(w)") == Call(fn, (Access("w"),))


def test_binary_builtins_and_registered_functions() -> None:
    assert scalar_of("max(w, 1) - min(w, 0)") == Binary(
        "-", Call("max", (Access("w"), Const(1.0))), Call("min", (Access("w"), Const(0.0)))
    )
    register_function("softplus_parse_test", sympy.log(1 + sympy.exp(sympy.Symbol("x"))))
    prog = parse("def f(w: []):\n    return softplus_parse_test(w)\n")
    assert prog.outputs[0] == Call("softplus_parse_test", (Access("w"),))
    assert ea.evaluate(prog, w=0.3) == pytest.approx(np.log1p(np.exp(0.3)))


def test_sums_bind_several_and_nest() -> None:
    e = scalar_of("Sum[i: N, j: 3](A[i, j] * Sum[k: N](x[k]))")
    n = size("N")
    assert e == Sum(
        (IndexVar("i", n), IndexVar("j", 3)),
        Binary("*", Access("A", (i, j)), Sum((IndexVar("k", n),), Access("x", (k,)))),
    )


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_each_comparison_is_a_bracket(op: str) -> None:
    assert body_of(f"({op.join(['i ', ' j'])}) * x[i]") == Binary(
        "*", Bracket(Cmp(op, i, j)), Access("x", (i,))
    )


def test_conjunctions_chains_and_relations() -> None:
    params = "x: [N], R: rel[N, N], w: []"
    assert body_of("(i < j and j < N)", params) == Bracket(And((Cmp("<", i, j), Cmp("<", j, N))))
    # a chained comparison is a conjunction, as in Python
    assert body_of("(0 <= i < N)", params) == Bracket(
        And((Cmp("<=", Affine.constant(0), i), Cmp("<", i, N)))
    )
    assert body_of("R[i, j] * x[j]", params) == Binary(
        "*", Bracket(Rel("R", (i, j))), Access("x", (j,))
    )
    assert body_of("(R[i, j] and i != j)", params) == Bracket(
        And((Rel("R", (i, j)), Cmp("!=", i, j)))
    )
    # a bracket may be multiplied in anywhere, on either side, or stand alone
    assert body_of("x[i] * (i == j) * 2", params) == Binary(
        "*", Binary("*", Access("x", (i,)), Bracket(Cmp("==", i, j))), Const(2.0)
    )
    assert body_of("(i == j)", params) == Bracket(Cmp("==", i, j))


def test_chained_bracket_semantics() -> None:
    prog = parse(
        src("""
        def f(x: [N], R: rel[N]):
            y[i: N] = (1 <= i < N - 1) * x[i] + (R[i] and i > 0) * 10
            return y
        """)
    )
    x, R = np.arange(1.0, 6.0), np.array([True, True, False, True, False])
    np.testing.assert_allclose(ea.evaluate(prog, x=x, R=R), [0, 12, 3, 14, 0])


def test_returns() -> None:
    single = parse("def f(x: [N]):\n    return Sum[i: N](x[i])\n")
    assert not single.returns_tuple and len(single.outputs) == 1
    pair = parse("def f(x: [N], w: []):\n    return w, x\n")
    assert pair.returns_tuple and pair.outputs == (Access("w"), Access("x"))
    one = parse("def f(x: [N], w: []):\n    return (w,)\n")
    assert one.returns_tuple and one.outputs == (Access("w"),)
    whole = parse("def f(x: [N]):\n    y[i: N] = 2 * x[i]\n    return y\n")
    assert whole.outputs == (Access("y"),)
    np.testing.assert_allclose(ea.evaluate(whole, x=np.array([1.0, 2.0])), [2.0, 4.0])


def test_parameters_with_integer_dimensions_and_relations() -> None:
    prog = parse("def g(B: [3, M], R: rel[M], c: []):\n    return c\n")
    assert prog.name == "g"
    assert prog.params == (
        Param("B", (3, size("M"))),
        Param("R", (size("M"),), "relation"),
        Param("c", ()),
    )


def test_locations_docstrings_and_comments() -> None:
    prog = parse(
        src('''
        def f(x: [N]):
            """A docstring is allowed."""
            # a comment
            y[i: N] = 2 * x[i + 1]
            return Sum[i: N](y[i])
        '''),
        filename="prog.idx",
    )
    (y,) = prog.statements
    assert y.loc == Loc(4, 4, "prog.idx")
    assert y.body.loc == Loc(4, 14, "prog.idx")
    assert y.body.rhs.loc == Loc(4, 18, "prog.idx")  # x[i + 1]
    assert prog.params[0].loc == Loc(1, 6, "prog.idx")
    assert prog.outputs[0].loc == Loc(5, 11, "prog.idx")


def test_printed_program_parses_back() -> None:
    text = src("""
        def f(A: [N, N], x: [N], R: rel[N, N], w: []):
            y[i: N, j: N] = (i < j and j < N - 1) * A[-i + N - 1, 2*j] - -(2) + -2 * x[i/2] ** (-1)
            z = Sum[k: N](R[k, k] * y[k, k] ** 2 / 4) + max(w, tanh(-w))
            return z, y
        """)
    prog = parse(text)
    assert print_program(prog) == text
    assert parse(print_program(prog)) == prog


# ================================================================================================
# tensor_fn
# ================================================================================================


@tensor_fn
def _trace_plus(A: [N, N], x: [N]):  # noqa: F821 - never executed; sizes are index-language names
    """Trace of A plus the squared norm of x."""
    t = Sum[i:N](A[i, i])  # noqa: F821
    return t + Sum[i:N](x[i] ** 2)  # noqa: F821


def test_tensor_fn_on_a_decorated_function() -> None:
    prog = _trace_plus
    assert prog.name == "_trace_plus"
    assert prog.param_names == ("A", "x")
    A, x = np.arange(9.0).reshape(3, 3), np.array([1.0, 2.0, 3.0])
    assert ea.evaluate(prog, A=A, x=x) == pytest.approx(np.trace(A) + 14.0)
    # locations point into this file
    (t,) = prog.statements
    assert t.loc is not None and t.loc.filename == __file__
    src_lines = open(__file__).read().splitlines()
    # (formatters may write Sum[i:N]; the parser accepts either spacing)
    assert src_lines[t.loc.line - 1].replace(" ", "").startswith("t=Sum[i:N](A[i,i])")
    assert src_lines[t.loc.line - 1][t.loc.col :].startswith("t = ")


def test_tensor_fn_nested_reports_the_file_line_and_column() -> None:
    with pytest.raises(ProgramError) as info:

        @tensor_fn
        def bad(x: [N]):  # noqa: F821
            return Sum[i:N](x[i] * zz)  # noqa: F821

    err = info.value
    assert err.message == "unknown name 'zz'"
    line = open(__file__).read().splitlines()[err.loc.line - 1]
    assert err.loc.filename == __file__
    assert line[err.loc.col :].startswith("zz)")


def test_tensor_fn_without_source_is_a_program_error() -> None:
    with pytest.raises(ProgramError, match="cannot read the source"):
        tensor_fn(len)


def test_public_names() -> None:
    assert ea.parse is parse and ea.tensor_fn is tensor_fn


# ================================================================================================
# Errors: each unsupported construct, with its message and location
# ================================================================================================

HEAD = "def f(x: [N], A: [N, N], w: []):\n"


@pytest.mark.parametrize(
    ("body", "message", "line", "col"),
    [
        # statements
        ("    for i in x:\n        pass\n    return w", "for loop is not supported", 2, 4),
        ("    while w:\n        pass\n    return w", "while loop is not supported", 2, 4),
        ("    if w:\n        pass\n    return w", "if statement is not supported", 2, 4),
        ("    import numpy\n    return w", "import is not supported", 2, 4),
        ("    w += 1\n    return w", "augmented assignment", 2, 4),
        ("    def g():\n        pass\n    return w", "nested function definition", 2, 4),
        ("    w\n    return w", "expression statement is not supported", 2, 4),
        ("    pass\n    return w", "pass statement is not supported", 2, 4),
        ("    a = b = w\n    return a", "chained assignment", 2, 4),
        ("    a, b = w, w\n    return a", "cannot assign to 'a, b'", 2, 4),
        ("    y[i] = x[i]\n    return y", "must bind each index with its extent", 2, 6),
        ("    y[i: N: 2] = x[i]\n    return y", "must bind each index with its extent", 2, 6),
        ("    y[i: N + 1] = x[i]\n    return y", "a dimension must be a size name", 2, 9),
        ("    return w\n    z = w", "statements after 'return'", 3, 4),
        ("    z = w", "function 'f' has no return statement", 1, 0),
        ("    return", "'return' needs a value", 2, 4),
        ("    return ()", "'return ()' returns nothing", 2, 11),
        # expressions
        ("    return w // 2", "floor division '//' is not supported", 2, 11),
        ("    return w % 2", "modulo '%' is not supported", 2, 11),
        ("    return +w", "unary '+' is not supported", 2, 11),
        ("    return w if w else 1", "conditional expression is not supported", 2, 11),
        ("    return np.exp(w)", "cannot call 'np.exp'", 2, 11),
        ("    return np.pi", "attribute access is not supported", 2, 11),
        ("    return exp(x=w)", "keyword arguments to 'exp'", 2, 11),
        ("    return [w]", "list is not supported", 2, 11),
        ("    return 'w'", "the literal 'w' is not a number", 2, 11),
        ("    return True", "the literal True is not a number", 2, 11),
        ("    return w * 1" + "0" * 400, "the literal 1000", 2, 15),
        ("    return w ** 1" + "0" * 400, "is too large", 2, 16),
        ("    return w * 1e400", "the constant inf is not finite", 2, 15),
        ("    return Sum[i: N]", "Sum[...] must be applied to a body", 2, 11),
        ("    return Sum[i: N](x[i], 1)", "takes exactly one body", 2, 11),
        ("    return Sum[i](x[i])", "Sum must bind each index with its extent", 2, 15),
        ("    return w ** w", "the exponent of '**' must be a constant number, not 'w'", 2, 16),
        ("    return (x)[0][0]", "only names can be indexed, not '(x)[0]'", 2, 11),
        ("    return Sum[i: N]((i < N or i > 0) * x[i])", "'or' is not supported", 2, 22),
        ("    return Sum[i: N]((not i < N) * x[i])", "'not' is not supported", 2, 22),
        ("    return Sum[i: N]((i is 0) * x[i])", "comparison 'is' is not supported", 2, 22),
        ("    return Sum[i: N]((x[i] > 0) * x[i])", "'x[i]' is not an index expression", 2, 22),
        ("    return Sum[i: N]((i < N and w) * x[i])", "tensor 'w' is used as a relation", 2, 32),
        ("    return Sum[i: N]((i < N and 2) * x[i])", "'2' is not a comparison", 2, 32),
        # index expressions
        ("    return Sum[i: N, j: N](A[i * j, j])", "'i * j' is not affine", 2, 29),
        ("    return Sum[i: N](x[i * N])", "'i * N' is not affine", 2, 23),
        ("    return Sum[i: N](x[2 / i])", "'2 / i' is not affine (division", 2, 23),
        ("    return Sum[i: N](x[i / 0])", "division by zero in index 'i / 0'", 2, 23),
        ("    return Sum[i: N](x[i // 2])", "floor division '//' is not supported in index", 2, 23),
        ("    return x[0.5]", "index constant 0.5 must be an integer", 2, 13),
        ("    return Sum[i: N](x[exp(i)])", "'exp(i)' is not an index expression", 2, 23),
        ("    return x[0:2]", "'0:2' is not an index expression", 2, 13),
    ],
)
def test_parse_errors(body: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ProgramError) as info:
        parse(HEAD + body + "\n", filename="bad.idx")
    err = info.value
    assert message in err.message
    assert (err.loc.line, err.loc.col, err.loc.filename) == (line, col, "bad.idx")
    assert str(err).startswith(f"bad.idx:{line}:{col}: ")


@pytest.mark.parametrize(
    ("text", "message", "line", "col"),
    [
        ("def f(x: [N]:\n    return x\n", "syntax error", 1, 12),
        ("import numpy\ndef f(x: [N]):\n    return x\n", "import is not supported at top", 1, 0),
        ("x = 1\n", "is not supported at top level", 1, 0),
        ("", "expected exactly one function definition, found 0", 1, 0),
        (
            "def f(x: [N]):\n    return x\ndef g(x: [N]):\n    return x\n",
            "expected exactly one function definition, found 2",
            3,
            0,
        ),
        ("async def f(x: [N]):\n    return x\n", "async function is not supported", 1, 0),
        ("@dec\ndef f(x: [N]):\n    return x\n", "decorators are not supported", 1, 1),
        ("def f(x):\n    return x\n", "parameter 'x' has no shape annotation", 1, 6),
        ("def f(x: int):\n    return x\n", "parameter 'x' has an unknown shape annotation", 1, 9),
        ("def f(x: [N] = 0):\n    return x\n", "default values are not supported", 1, 15),
        ("def f(*x):\n    return x\n", "variable parameters '*x'", 1, 7),
        ("def f(**x):\n    return x\n", "variable parameters '**x'", 1, 8),
        ("def f(*, x: [N]):\n    return x\n", "keyword-only parameters", 1, 9),
        ("def f(x: [N], /):\n    return x\n", "positional-only parameters", 1, 6),
        ("def f(x: [N]) -> float:\n    return x\n", "a return annotation is not supported", 1, 17),
        ("def f(x: [N - 1]):\n    return x\n", "a dimension must be a size name", 1, 10),
        ("def f(x: [-1]):\n    return x\n", "a dimension must be a size name", 1, 10),
        ("def f(x: [2.5]):\n    return x\n", "a dimension must be a size name", 1, 10),
    ],
)
def test_program_level_errors(text: str, message: str, line: int, col: int) -> None:
    with pytest.raises(ProgramError) as info:
        parse(text)
    assert message in info.value.message
    assert (info.value.loc.line, info.value.loc.col) == (line, col)


def test_parse_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="source text"):
        parse(b"def f(x: [N]):\n    return x\n")  # type: ignore[arg-type]


def test_indented_source_is_dedented_and_keeps_its_columns() -> None:
    prog = parse("\n        def f(w: []):\n            return exp(w)\n")
    assert prog.outputs[0].loc == Loc(3, 19)
    assert ea.evaluate(prog, w=0.0) == 1.0


def test_comments_between_minus_and_literal_do_not_count_as_parentheses() -> None:
    assert scalar_of("(-  # a (comment\n    2)") == Const(-2.0)
    assert scalar_of("(-  # a comment\n    (2))") == Neg(Const(2.0))


def test_long_chains_parse() -> None:
    """A chain longer than CPython's parser takes is read in pieces, with its locations."""
    deep = "def f(w: []):\n    return " + " + ".join(["w"] * 5000) + " - 2 * w\n"
    prog = parse(deep)
    assert ea.evaluate(prog, w=0.5) == pytest.approx(2499.0)
    assert prog.outputs[0].rhs.loc == Loc(2, 11 + 4 * 5000)  # the last operand, '2 * w'
    assert parse(str(prog)) == prog
    # a long but reasonable expression is fine
    prog = parse("def f(w: []):\n    return " + " + ".join(["w"] * 300) + "\n")
    assert ea.evaluate(prog, w=0.5) == pytest.approx(150.0)


def test_rank_zero_relation_is_written_rel_of_empty_tuple() -> None:
    # `rel[]` is not Python syntax; a boolean scalar is declared `rel[()]`.
    prog = parse("def f(R: rel[()], w: []):\n    return R * w\n")
    assert prog.params[0] == Param("R", (), "relation")
    assert prog.outputs[0] == Binary("*", Bracket(Rel("R", ())), Access("w"))
    assert ea.evaluate(prog, R=np.array(True), w=2.0) == 2.0
    assert ea.evaluate(prog, R=np.array(False), w=2.0) == 0.0
