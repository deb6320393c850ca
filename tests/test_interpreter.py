"""The reference interpreter against NumPy written by hand, and its semantic invariants.

Programs are built directly from IR values, so these tests do not depend on the parser.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    Neg,
    Param,
    Pow,
    Program,
    ProgramError,
    Rel,
    ShapeError,
    Statement,
    Sum,
    add,
    div,
    mul,
    size,
    sub,
)
from eqsat_ad.ir.interpreter import bind_arguments, evaluate, evaluate_expr

N, M = size("N"), size("M")
i, j, k = Affine.var("i"), Affine.var("j"), Affine.var("k")
iN, jN, jM, kN = IndexVar("i", N), IndexVar("j", N), IndexVar("j", M), IndexVar("k", N)


def c(v: int | Fraction) -> Affine:
    return Affine.constant(v)


def matvec_program() -> Program:
    """``y[i] = Sum_j A[i, j] x[j]; return Sum_i x[i] y[i], y`` with A: N x M, x: M... (square)."""
    y = Statement("y", (iN,), Sum((jM,), mul(Access("A", (i, j)), Access("x", (j,)))))
    out = Sum((iN,), mul(Access("w", (i,)), Access("y", (i,))))
    params = (Param("A", (N, M)), Param("x", (M,)), Param("w", (N,)))
    return Program(params, (y,), (out, Access("y")), returns_tuple=True, name="matvec")


RNG = np.random.default_rng(1)


# ------------------------------------------------------------------------------------------------
# Programs against NumPy
# ------------------------------------------------------------------------------------------------


def test_matvec_positional_keyword_and_mixed_arguments_agree_with_numpy():
    prog = matvec_program()
    a, x, w = RNG.normal(size=(5, 3)), RNG.normal(size=3), RNG.normal(size=5)
    expected_f, expected_y = w @ (a @ x), a @ x
    for result in (
        evaluate(prog, a, x, w),
        evaluate(prog, A=a, x=x, w=w),
        evaluate(prog, a, w=w, x=x),
    ):
        f, y = result
        assert isinstance(f, float)
        assert f == pytest.approx(expected_f)
        np.testing.assert_allclose(y, expected_y)


def test_scalar_and_tensor_outputs_have_python_types():
    prog = matvec_program()
    a, x, w = RNG.normal(size=(4, 2)), RNG.normal(size=2), RNG.normal(size=4)
    single = Program(prog.params, prog.statements, (Access("y"),))
    y = evaluate(single, a, x, w)
    assert isinstance(y, np.ndarray) and y.shape == (4,)
    one_tuple = Program(prog.params, prog.statements, (prog.outputs[0],), returns_tuple=True)
    out = evaluate(one_tuple, a, x, w)
    assert isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], float)


def test_scalar_parameter_and_statement():
    # s = w * Sum_i x[i]; return s * s
    s = Statement("s", (), mul(Access("w"), Sum((iN,), Access("x", (i,)))))
    prog = Program((Param("x", (N,)), Param("w", ())), (s,), (mul(Access("s"), Access("s")),))
    x = RNG.normal(size=6)
    assert evaluate(prog, x, 2.5) == pytest.approx((2.5 * x.sum()) ** 2)
    assert evaluate(prog, x, np.array(2.5)) == pytest.approx((2.5 * x.sum()) ** 2)


def test_transpose_statement_and_broadcast_generator():
    # T[j, i] = A[i, j]; B[i, j] = x[i] (broadcast along j)
    t = Statement("T", (jM, iN), Access("A", (i, j)))
    b = Statement("B", (iN, jM), Access("x", (i,)))
    prog = Program((Param("A", (N, M)), Param("x", (N,))), (t, b), (Access("T"), Access("B")),
                   returns_tuple=True)
    a, x = RNG.normal(size=(3, 4)), RNG.normal(size=3)
    T, B = evaluate(prog, a, x)
    np.testing.assert_array_equal(T, a.T)
    np.testing.assert_array_equal(B, np.repeat(x[:, None], 4, axis=1))


def test_builtins_and_arithmetic():
    e = add(
        Call("tanh", (Access("x", (i,)),)),
        sub(div(Pow(Access("x", (i,)), 2), Const(3)), Neg(Call("max", (Access("x", (i,)),
                                                                       Const(0.5))))),
    )
    x = RNG.normal(size=7)
    got = evaluate_expr(e, {"x": x}, {}, {"i": 7})
    np.testing.assert_allclose(got, np.tanh(x) + x**2 / 3 + np.maximum(x, 0.5))


def test_einsum_and_dense_paths_agree():
    # A finite product takes the einsum path; an inf in a column the bracket guards away forces
    # the dense strong-zero path. Both must give the contraction over the guarded range.
    body = mul(mul(Access("A", (i, j)), Access("B", (j, k))), Access("C", (k, i)))
    a, b, cc = (RNG.normal(size=(4, 4)) for _ in range(3))
    env = {"A": a, "B": b, "C": cc}
    expected = np.einsum("ij,jk,ki->i", a, b, cc)
    np.testing.assert_allclose(evaluate_expr(Sum((jN, kN), body), env, {"N": 4}, {"i": 4}),
                               expected)
    guarded = Sum((jN, kN), mul(Bracket(Cmp("<", j, c(3))), body))
    a_inf = a.copy()
    a_inf[:, 3] = np.inf
    expected3 = np.einsum("ij,jk,ki->i", a[:, :3], b[:3], cc)
    np.testing.assert_allclose(evaluate_expr(guarded, env, {"N": 4}, {"i": 4}), expected3)
    np.testing.assert_allclose(evaluate_expr(guarded, {**env, "A": a_inf}, {"N": 4}, {"i": 4}),
                               expected3)


# ------------------------------------------------------------------------------------------------
# Semantics: zero padding, fractional indices, strong zero, empty sums
# ------------------------------------------------------------------------------------------------


def test_out_of_range_reads_zero():
    x = np.arange(1.0, 6.0)
    shifted = evaluate_expr(Access("x", (i + 1,)), {"x": x}, {}, {"i": 5})
    np.testing.assert_array_equal(shifted, [2, 3, 4, 5, 0])
    back = evaluate_expr(Access("x", (i - 2,)), {"x": x}, {}, {"i": 5})
    np.testing.assert_array_equal(back, [0, 0, 1, 2, 3])
    rev = evaluate_expr(Access("x", (Affine.make({"i": -1}, {"N": 1}, -1),)), {"x": x},
                        {"N": 5}, {"i": 7})
    np.testing.assert_array_equal(rev, [5, 4, 3, 2, 1, 0, 0])


def test_fractional_index_reads_zero():
    x = np.arange(10.0, 16.0)
    half = evaluate_expr(Access("x", (i.scale(Fraction(1, 2)),)), {"x": x}, {}, {"i": 6})
    np.testing.assert_array_equal(half, [10, 0, 11, 0, 12, 0])
    thirds = Affine.make({"i": Fraction(2, 3)}, const=Fraction(1, 3))  # (2i + 1) / 3
    got = evaluate_expr(Access("x", (thirds,)), {"x": x}, {}, {"i": 6})
    np.testing.assert_array_equal(got, [0, 11, 0, 0, 13, 0])


def test_strong_zero_guards_inf_and_nan():
    inf = div(Const(1), Const(0))
    nan = sub(inf, inf)
    for bad in (inf, nan, Call("log", (Const(-1),)), Pow(Const(0), -1)):
        guarded = mul(Bracket(Cmp("<", i, c(2))), bad)
        got = evaluate_expr(guarded, {}, {}, {"i": 4})
        assert np.all(got[2:] == 0.0)
        assert not np.any(np.isfinite(got[:2]))
        # the other operand order, and under a Sum whose terms are all guarded away
        assert np.all(evaluate_expr(mul(bad, Bracket(Cmp(">", i, c(5)))), {}, {}, {"i": 4}) == 0)
        total = Sum((iN,), mul(Bracket(Cmp(">=", i, Affine.of_dim(N))), bad))
        assert evaluate_expr(total, {}, {"N": 4}) == 0.0


def test_zero_tensor_entry_times_inf_is_nan():
    # Only brackets are strong zeros: a 0.0 read from a tensor is an IEEE zero.
    x = np.array([0.0, 2.0])
    y = np.array([np.inf, 3.0])
    got = evaluate_expr(mul(Access("x", (i,)), Access("y", (i,))), {"x": x, "y": y}, {}, {"i": 2})
    np.testing.assert_array_equal(got, [np.nan, 6.0])
    total = Sum((IndexVar("i", 2),), mul(Access("x", (i,)), Access("y", (i,))))
    assert np.isnan(evaluate_expr(total, {"x": x, "y": y}, {}))
    # an out-of-range read is an ordinary 0.0 as well (zero padding)
    pad = mul(Access("x", (i + 2,)), Access("y", (i,)))
    np.testing.assert_array_equal(evaluate_expr(pad, {"x": x, "y": y}, {}, {"i": 2}),
                                  [np.nan, 0.0])


def test_ieee_outside_brackets():
    inf = div(Const(1), Const(0))
    computed_zero = sub(Const(1), Const(1))
    assert np.isnan(evaluate_expr(mul(computed_zero, inf), {}, {}))
    assert evaluate_expr(mul(Const(0), inf), {}, {}) == 0.0  # the literal 0 is a strong zero
    assert evaluate_expr(Call("exp", (Const(1000),)), {}, {}) == np.inf  # overflow gives inf
    # 1 / (1 + exp(1000)) * exp(1000) is 0 * inf: nan, not 0
    e = Call("exp", (Const(1000),))
    assert np.isnan(evaluate_expr(mul(div(Const(1), Binary("+", Const(1), e)), e), {}, {}))


def test_strong_zero_is_a_value_that_survives_nesting():
    inf = div(Const(1), Const(0))
    false = Bracket(Cmp("==", c(0), c(1)))
    # inf * ([false] * 2), inf * (-[false]), inf * Σ_{j<3} [false], inf * Σ over nothing
    for z in (mul(false, Const(2)), Neg(false), Sum((IndexVar("j", 3),), false),
              Sum((IndexVar("j", 0),), Const(1)), div(false, Const(0)), Pow(false, 2)):
        assert evaluate_expr(mul(inf, z), {}, {}) == 0.0, z
    # ... but a sum with an ordinary term, a function of it and a stored value are ordinary
    assert np.isnan(evaluate_expr(mul(inf, Binary("+", false, sub(Const(1), Const(1)))), {}, {}))
    assert evaluate_expr(mul(inf, Binary("+", false, Const(0))), {}, {}) == 0.0  # literal 0
    assert np.isnan(evaluate_expr(mul(inf, Call("tanh", (false,))), {}, {}))
    assert evaluate_expr(mul(inf, Pow(false, 0)), {}, {}) == np.inf
    prog = Program((Param("w", ()),), (Statement("t", (IndexVar("i", 2),),
                                                 Bracket(Cmp("==", i, c(0)))),),
                   (Sum((IndexVar("i", 2),), mul(Access("w"), Access("t", (i,)))),))
    assert np.isnan(evaluate(prog, np.inf))  # t[1] is a stored 0.0: inf * 0.0 is nan
    v, strong = evaluate_expr(mul(false, inf), {}, {}, strong=True)
    assert v == 0.0 and strong


def test_empty_sum_is_zero_and_unused_index_multiplies_by_extent():
    x = RNG.normal(size=3)
    assert evaluate_expr(Sum((IndexVar("j", 0),), Access("x", (j,))), {"x": x}, {}) == 0.0
    # Sum over an index the body ignores: body times the extent
    got = evaluate_expr(Sum((IndexVar("j", 5),), Access("x", (i,))), {"x": x}, {}, {"i": 3})
    np.testing.assert_allclose(got, 5 * x)
    # even an infinite body summed over nothing is 0 (empty sum)
    empty = Sum((IndexVar("j", 0),), div(Const(1), Const(0)))
    assert evaluate_expr(empty, {}, {}) == 0.0
    # sizes bound to 0 by an argument
    prog = Program((Param("x", (N,)),), (), (Sum((iN,), Access("x", (i,))),))
    assert evaluate(prog, np.zeros(0)) == 0.0


def test_brackets_and_conjunctions():
    grid = {"i": 4, "j": 4}
    eye = evaluate_expr(Bracket(Cmp("==", i, j)), {}, {}, grid)
    np.testing.assert_array_equal(eye, np.eye(4))
    upper = evaluate_expr(Bracket(Cmp("<", i, j)), {}, {}, grid)
    np.testing.assert_array_equal(upper, np.triu(np.ones((4, 4)), 1))
    both = evaluate_expr(Bracket(And((Cmp("<=", i, j), Cmp("!=", j, c(3))))), {}, {}, grid)
    np.testing.assert_array_equal(both, np.triu(np.ones((4, 4))) * (np.arange(4) != 3))
    # an index that cancels (i == i) is still an axis of the bracket
    np.testing.assert_array_equal(evaluate_expr(Bracket(Cmp("==", i, i)), {}, {}, {"i": 3}),
                                  np.ones(3))
    # strides: [2 j == i] selects even i
    even = evaluate_expr(Sum((IndexVar("j", 4),), Bracket(Cmp("==", j.scale(2), i))), {}, {},
                         {"i": 6})
    np.testing.assert_array_equal(even, [1, 0, 1, 0, 1, 0])


def test_relation_bracket_and_zero_one_ints():
    # y[m] = Sum_n [R(m, n)] x[n]
    y = Statement("y", (IndexVar("m", M),),
                  Sum((IndexVar("n", N),), mul(Bracket(Rel("R", (Affine.var("m"),
                                                                Affine.var("n")))),
                                                Access("x", (Affine.var("n"),)))))
    prog = Program((Param("x", (N,)), Param("R", (M, N), "relation")), (y,), (Access("y"),))
    r = RNG.random((3, 5)) < 0.5
    x = RNG.normal(size=5)
    np.testing.assert_allclose(evaluate(prog, x, r), r.astype(float) @ x)
    np.testing.assert_allclose(evaluate(prog, x, r.astype(int)), r.astype(float) @ x)
    with pytest.raises(ShapeError, match="relation"):
        evaluate(prog, x, r * 2.5)


def test_relation_out_of_range_is_false():
    r = np.ones((2, 2), dtype=bool)
    got = evaluate_expr(Bracket(Rel("R", (i, i + 1))), {"R": r}, {}, {"i": 3})
    np.testing.assert_array_equal(got, [1, 0, 0])


def test_shadowing_binder():
    # Sum_i (Sum_i x[i]) == N * sum(x): the inner binder shadows the outer one
    x = RNG.normal(size=4)
    e = Sum((IndexVar("i", 3),), Sum((IndexVar("i", 4),), Access("x", (i,))))
    assert evaluate_expr(e, {"x": x}, {}) == pytest.approx(3 * x.sum())


def test_evaluate_expr_order_and_broadcast():
    a = RNG.normal(size=(2, 3))
    got = evaluate_expr(Access("A", (i, j)), {"A": a}, {}, {"i": 2, "j": 3, "k": 4},
                        order=("j", "k", "i"))
    assert got.shape == (3, 4, 2)
    np.testing.assert_array_equal(got[:, 1, :], a.T)
    with pytest.raises(ProgramError, match="omits"):
        evaluate_expr(Access("A", (i, j)), {"A": a}, {}, {"i": 2, "j": 3}, order=("i",))
    with pytest.raises(ProgramError, match="extent"):
        evaluate_expr(Access("A", (i, j)), {"A": a}, {}, {"i": 2})


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 6),
    coeff=st.fractions(min_value=-3, max_value=3, max_denominator=3),
    offset=st.integers(-4, 4),
)
def test_affine_access_matches_pointwise_definition(n, coeff, offset):
    x = np.arange(1.0, n + 1.0)
    a = Affine.make({"i": coeff}, const=offset)
    got = evaluate_expr(Access("x", (a,)), {"x": x}, {}, {"i": 7}, order=("i",))
    for p in range(7):
        pos = coeff * p + offset
        want = x[int(pos)] if pos.denominator == 1 and 0 <= pos < n else 0.0
        assert got[p] == want


# ------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------


def test_argument_errors_name_the_parameter():
    prog = matvec_program()
    a, x, w = np.zeros((5, 3)), np.zeros(3), np.zeros(5)
    with pytest.raises(ShapeError, match=r"missing argument.*w"):
        evaluate(prog, a, x)
    with pytest.raises(ShapeError, match="unexpected argument 'v'"):
        evaluate(prog, a, x, w, v=1.0)
    with pytest.raises(ShapeError, match="two values for argument 'x'"):
        evaluate(prog, a, x, w, x=x)
    with pytest.raises(ShapeError, match="takes 3 argument"):
        evaluate(prog, a, x, w, w)
    with pytest.raises(ShapeError, match=r"'x' has rank 2.*x: \[M\]"):
        evaluate(prog, a, np.zeros((3, 1)), w)
    with pytest.raises(ShapeError, match=r"'w'.*N = 4.*N = 5.*'A'"):
        evaluate(prog, a, x, np.zeros(4))
    with pytest.raises(ShapeError, match="real numbers"):
        evaluate(prog, a, np.array(["a", "b", "c"]), w)


def test_fixed_dimension_is_checked():
    prog = Program((Param("x", (3,)),), (), (Sum((IndexVar("i", 3),), Access("x", (i,))),))
    assert evaluate(prog, [1.0, 2.0, 3.0]) == 6.0
    with pytest.raises(ShapeError, match="needs length 3"):
        evaluate(prog, [1.0, 2.0])


def test_bind_arguments_returns_sizes():
    arrays, sizes = bind_arguments(matvec_program(), np.ones((5, 3)), np.ones(3), w=np.ones(5))
    assert sizes == {"N": 5, "M": 3}
    assert arrays["A"].dtype == np.float64 and set(arrays) == {"A", "x", "w"}


def test_program_errors():
    x = Param("x", (N,))
    unknown = Program((x,), (), (Sum((iN,), Access("z", (i,))),))
    with pytest.raises(ProgramError, match="unknown name 'z'"):
        evaluate(unknown, np.ones(3))
    free = Program((x,), (), (Access("x", (i,)),))
    with pytest.raises(ProgramError, match="free index"):
        evaluate(free, np.ones(3))
    stray = Program((x,), (Statement("y", (iN,), Access("x", (j,))),), (Access("y"),))
    with pytest.raises(ProgramError, match="neither generators"):
        evaluate(stray, np.ones(3))
    rank = Program((x,), (), (Sum((iN,), Access("x", (i, i))),))
    with pytest.raises(ProgramError, match="rank 1"):
        evaluate(rank, np.ones(3))
    fn = Program((x,), (), (Sum((iN,), Call("nosuch", (Access("x", (i,)),))),))
    with pytest.raises(ProgramError, match="unknown function"):
        evaluate(fn, np.ones(3))
    unbound = Program((x,), (), (Sum((IndexVar("i", M),), Access("x", (i,))),))
    with pytest.raises(ProgramError, match="size M"):
        evaluate(unbound, np.ones(3))
    twice = Program((x,), (Statement("x", (), Const(1)),), (Access("x"),))
    with pytest.raises(ProgramError, match="assigned twice"):
        evaluate(twice, np.ones(3))
    not_rel = Program((x,), (), (Sum((iN,), Bracket(Rel("x", (i,)))),))
    with pytest.raises(ProgramError, match="not one"):
        evaluate(not_rel, np.ones(3))


def test_inputs_are_not_mutated_and_outputs_are_fresh():
    t = Statement("t", (iN,), Access("x", (i,)))
    prog = Program((Param("x", (N,)),), (t,), (Access("t"),))
    x = np.arange(3.0)
    out = evaluate(prog, x)
    out[0] = 99.0
    assert x[0] == 0.0
    ident = Program((Param("x", (N,)),), (), (Access("x"),))
    y = evaluate(ident, x)
    y[1] = 99.0
    assert x[1] == 1.0


def test_binary_operator_table():
    # every Binary op, elementwise, against NumPy
    x, y = RNG.normal(size=4), RNG.normal(size=4) + 3.0
    for op, fn in (("+", np.add), ("-", np.subtract), ("*", np.multiply), ("/", np.divide)):
        got = evaluate_expr(Binary(op, Access("x", (i,)), Access("y", (i,))), {"x": x, "y": y}, {},
                            {"i": 4})
        np.testing.assert_allclose(got, fn(x, y))


# ------------------------------------------------------------------------------------------------
# The vectorized interpreter against a one-point-at-a-time definition, on random expressions
# ------------------------------------------------------------------------------------------------

_N = 4
_AFFINES = [i, j, k, i + 1, j - 1, i.scale(2), i.scale(Fraction(1, 2)), i - j, c(0), c(_N - 1)]


def _pointwise(e, point: dict[str, int], env: dict[str, np.ndarray]) -> float:
    """The semantics spelled out for one point: zero padding, strong zeros (literal 0, false
    brackets, sums without a term that is not one), sums as loops."""

    def read(name, idx):
        pos = [a.evaluate(point, {"N": _N}) for a in idx]
        value = env[name]
        if all(p.denominator == 1 and 0 <= p < n for p, n in zip(pos, value.shape, strict=True)):
            return float(value[tuple(int(p) for p in pos)])
        return 0.0

    match e:
        case Const(v):
            return STRONG if v == 0 else v
        case Access(name, idx):
            return read(name, idx)
        case Bracket(Cmp(op, lhs, rhs)):
            a, b = lhs.evaluate(point, {"N": _N}), rhs.evaluate(point, {"N": _N})
            held = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                    ">=": a >= b}[op]
            return 1.0 if held else STRONG
        case Binary("*", lhs, rhs):
            a, b = _pointwise(lhs, point, env), _pointwise(rhs, point, env)
            return STRONG if a is STRONG or b is STRONG else a * b
        case Binary(op, lhs, rhs):
            a, b = _pointwise(lhs, point, env), _pointwise(rhs, point, env)
            if a is STRONG and b is STRONG:
                return STRONG
            a, b = _plain(a), _plain(b)
            return a + b if op == "+" else a - b
        case Neg(arg):
            a = _pointwise(arg, point, env)
            return a if a is STRONG else -a
        case Pow(base, _):
            a = _pointwise(base, point, env)
            return a if a is STRONG else a**2
        case Call("tanh", (arg,)):
            return float(np.tanh(_plain(_pointwise(arg, point, env))))
        case Sum((iv,), body):
            terms = [_pointwise(body, {**point, iv.name: t}, env) for t in range(_N)]
            terms = [t for t in terms if t is not STRONG]
            return sum(terms) if terms else STRONG
    raise AssertionError(e)


STRONG = object()
"""The strong zero of the pointwise definition: 0 that absorbs every factor."""


def _plain(v):
    return 0.0 if v is STRONG else v


def _exprs():
    leaves = st.one_of(
        st.integers(-2, 2).map(Const),
        st.sampled_from(_AFFINES).map(lambda a: Access("x", (a,))),
        st.tuples(st.sampled_from(_AFFINES), st.sampled_from(_AFFINES)).map(
            lambda ab: Access("A", ab)),
        st.tuples(st.sampled_from(["==", "<", ">="]), st.sampled_from(_AFFINES),
                  st.sampled_from(_AFFINES)).map(lambda t: Bracket(Cmp(*t))),
    )

    def grow(sub):
        return st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*"]), sub, sub).map(lambda t: Binary(*t)),
            sub.map(Neg),
            sub.map(lambda e: Pow(e, 2)),
            sub.map(lambda e: Call("tanh", (e,))),
            st.tuples(st.sampled_from("ijk"), sub).map(
                lambda t: Sum((IndexVar(t[0], N),), t[1])),
        )

    return st.recursive(leaves, grow, max_leaves=6)


@settings(max_examples=60, deadline=None)
@given(e=_exprs(), seed=st.integers(0, 2**16))
def test_vectorized_matches_pointwise_semantics(e, seed):
    rng = np.random.default_rng(seed)
    env = {"x": rng.normal(size=_N), "A": rng.normal(size=(_N, _N))}
    # non-finite and zero entries too: the strong zeros must be exactly where they are
    env["x"][rng.integers(_N)] = rng.choice([np.inf, -np.inf, np.nan, 0.0])
    extents = {"i": _N, "j": _N, "k": _N}
    got, strong = evaluate_expr(e, env, {"N": _N}, extents, order=("i", "j", "k"), strong=True)
    for point in np.ndindex(_N, _N, _N):
        want = _pointwise(e, dict(zip("ijk", point, strict=True)), env)
        assert bool(strong[point]) == (want is STRONG)
        want = _plain(want)
        if np.isnan(want):
            assert np.isnan(got[point])
        elif np.isinf(want):
            assert got[point] == want
        else:
            assert got[point] == pytest.approx(want, rel=1e-9, abs=1e-9)
