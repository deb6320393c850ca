"""Defect classes the fuzzer found in the compiled code's handling of docs/semantics.md (strong
zeros, IEEE products, the sign of zero), one focused regression test per class: the
interpreter's value is stated, and every stage (unoptimized and optimized code, values and
gradients) is checked against it by the fuzzer's own comparison."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.fuzz import Case, check_case
from eqsat_ad.fuzz.report import DEFECTS
from eqsat_ad.ir.interpreter import evaluate

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _agree(source: str, shapes: dict, sizes: dict, inputs: dict, generator: str = "index"
           ) -> None:
    """Interpreter, optimize=False and optimized code agree (values, nan/inf patterns, and the
    gradients of a scalar program)."""
    case = Case(generator, source, shapes, sizes)
    findings = check_case(case, {"nonfinite": inputs}, fd=False)["nonfinite"]
    assert [f for f in findings if f.outcome in DEFECTS] == []


def _value(source: str, **inputs) -> float:
    return evaluate(ea.parse(source), **inputs)


def test_the_strict_code_keeps_a_data_factor_out_of_a_sum_of_terms() -> None:
    """``[p] a (b + c)`` was distributed into ``[p] a b + [p] a c`` (to bring the bracket to the
    top of each term) also for inf/nan inputs: inf * 0.25 is inf, inf * -0.25 + inf * 0.5
    nan. A bracket alone still distributes."""
    src = "def f(x: [N]):\n    return (N > 1) * x[0] * (x[1] + 0.5)\n"
    x = np.array([np.inf, -0.25])
    assert _value(src, x=x) == np.inf
    _agree(src, {"x": ("N",)}, {"N": 2}, {"x": x})
    _agree("def f(x: [N]):\n    return max((N > 1) * x[0] * (x[1] + 0.5), 1.0)\n",
           {"x": ("N",)}, {"N": 2}, {"x": np.array([np.inf, -np.inf])})
    for optimize in (False, True):  # finite inputs: the fast code (distributed) is exact
        assert ea.compile(ea.parse(src), optimize=optimize)(np.array([2.0, -0.25])) == 0.5


@pytest.mark.parametrize("source, want", [
    # a bracket: the quotient is a strong zero where it is false, whatever the divisor
    ("def f(x: [N], a: []):\n    return a * (0 == N) / (1 + x[0] ** 2)\n", 0.0),
    # a data comparison is a bracket on data
    ("def f(x: [N], a: []):\n    return gt(x[1], 5) * a / x[0]\n", 0.0),
    # ... also as a factor of a product that meets inf
    ("def f(x: [N], a: []):\n    return a * (gt(x[1], 5) * x[1] / x[0])\n", 0.0),
    # the literal 0 is a strong zero: 0 / 0 is 0
    ("def f(x: [N], a: []):\n    return 0 * (N == 2) / (x[1] - x[1]) + a * (0 / x[0])\n", 0.0),
])
def test_a_strong_zero_divided_by_anything_is_a_strong_zero(source: str, want: float) -> None:
    inputs = {"x": np.array([np.nan, 1.0]), "a": np.inf}
    assert _value(source, **inputs) == want
    _agree(source, {"x": ("N",), "a": ()}, {"N": 2}, inputs)


def test_the_gradient_of_a_min_is_guarded_by_its_tie_comparison() -> None:
    """The gradient of ``min`` passes the adjoint through ``eq(x, min) / count``: where the
    comparison is false the product with an infinite adjoint is 0, not nan."""
    src = ("def f(B: [N, N], C: [N, N]):\n    t[i: N] = -Max[j: N](-B[j, i])\n"
           "    return Sum[i: N](Sum[j: N](t[j] * C[i, j]))\n")
    b = np.array([[1.7, 2.0, 1.8], [-0.9, 1.2, 0.3], [-1e-300, 0.3, -1.4]])
    c = np.array([[1.6, 1.4, 0.5], [1.2, 1.6, -np.inf], [-1.9, 1.2, 1.5]])
    g = evaluate(ea.api.gradient_program(ea.parse(src), ("B",), as_tuple=True), B=b, C=c)[0]
    np.testing.assert_array_equal(g[:, 2], [0.0, 0.0, -np.inf])
    _agree(src, {"B": ("N", "N"), "C": ("N", "N")}, {"N": 3}, {"B": b, "C": c})


@pytest.mark.parametrize("source, inputs", [
    ("def f(w: []):\n    return Sum[j: 1](w) ** (-1)\n", {"w": -0.0}),
    ("def f(w: [], x: [N]):\n    return Sum[j: N](w * x[j]) ** (-1)\n",
     {"w": -1.0, "x": np.array([0.0, 0.0])}),
])
def test_a_sum_of_negative_zeros_is_positive_zero(source: str, inputs: dict) -> None:
    """A sum starts at +0.0 (as np.sum): Σ_j w with w = -0.0 is +0.0, so its reciprocal is
    +inf; the compiled code computed ``1 * w`` (and ``w * Σ_j x[j]``), -0.0."""
    assert _value(source, **inputs) == np.inf
    shapes = {k: () if np.ndim(v) == 0 else ("N",) for k, v in inputs.items()}
    _agree(source, shapes, {"N": 2}, inputs)


def test_a_constant_data_comparison_stays_a_condition() -> None:
    """``ge(1.0, 1.0) * ge(1.0, 1.0)`` (a comparison of constants, after inlining) was wrapped in
    ``_dt(...)`` like a number, so ``&`` of two of them raised TypeError; it is a NumPy bool."""
    src = "def f(A: [3]):\n    t0 = ge(1.0, 1.0)\n    return t0 * t0 + gt(1.0, 2.0) * A[0]\n"
    a = np.ones(3, dtype=np.float32)
    for optimize in (False, True):
        got = ea.compile(ea.parse(src), optimize=optimize)(a)
        assert got == 1.0 and np.asarray(got).dtype == np.float32
    _agree(src, {"A": (3,)}, {}, {"A": np.array([np.inf, 1.0, 1.0])})


def test_generated_code_keeps_the_association_of_a_product_with_a_quotient() -> None:
    """``x * (1 / b)`` was emitted as ``x * 1 / b``, which Python evaluates as ``(x * 1) / b``:
    at b = 5e-324, 1 / b overflows to inf and the interpreter's 0 * inf is nan, the generated
    code's 0 / 5e-324 is 0 (and 2 * inf against 2 / 5e-324, inf against a finite number)."""
    src = "def f(x: [N], b: [N]):\n    y[i: N] = x[i] * (1 / b[i])\n    return y\n"
    x, b = np.array([0.0, 2.0, 1.0]), np.array([5e-324, 5e-324, 4.0])
    want = evaluate(ea.parse(src), x=x, b=b)
    np.testing.assert_array_equal(want, [np.nan, np.inf, 0.25])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.compile(ea.parse(src), optimize=optimize)(x, b), want)


def test_the_interpreter_applies_a_bracket_to_a_product_that_overflows() -> None:
    """The reference interpreter contracts finite factors with einsum; a product of finite
    factors can still overflow (1000 * 3 * (1e154)^2 = inf), and einsum multiplied it by the
    bracket's 0.0: nan where the bracket is false. The careful path keeps the strong zero."""
    src = ("def f(x: [3], w: [2]):\n"
           "    y[i: 3] = Sum[i1: 2]((i == i1 + 1) * w[i1] * (3 * x[i1 + 1] ** 2))\n"
           "    return y\n")
    x, w = np.array([-0.7, 1e154, -1e-300]), np.array([1000.0, 1000.0])
    np.testing.assert_array_equal(evaluate(ea.parse(src), x=x, w=w), [0.0, np.inf, 0.0])
    _agree(src, {"x": (3,), "w": (2,)}, {}, {"x": x, "w": w})


def test_adding_the_literal_zero_to_a_negative_zero() -> None:
    """IEEE: ``-0.0 + 0`` is +0.0 (the strong zero's value), so ``1 / (-t0[1] + 0)`` with
    ``t0[1]`` an ordinary 0.0 (a read outside the tensor) is +inf. The generated code dropped
    the literal 0 and kept -0.0 (-inf); now the literal stays an addend (``+ 0.0``)."""
    src = "def f(B: [N]):\n    t0[i: N] = i <= 1\n    return 1.0 / (-t0[1] + 0)\n"
    assert _value(src, B=np.array([1.0])) == np.inf
    _agree(src, {"B": ("N",)}, {"N": 1}, {"B": np.array([1.0])})


@pytest.mark.parametrize("expr, x0, want", [
    ("-x[0] + 0", 0.0, np.inf),   # -0.0 + 0 = +0.0
    ("0 + x[0]", -0.0, np.inf),   # 0 + -0.0 = +0.0
    ("0 - x[0]", 0.0, np.inf),    # 0 - +0.0 = +0.0
    ("x[0] - 0", -0.0, -np.inf),  # -0.0 - 0 = -0.0: nothing to add
])
def test_the_unoptimized_code_adds_the_literal_zero_as_ieee_does(expr: str, x0: float,
                                                                  want: float) -> None:
    src = f"def f(x: [N]):\n    return 1.0 / ({expr})\n"
    x = np.array([x0, 1.0])
    assert _value(src, x=x) == want
    assert ea.compile(ea.parse(src), optimize=False)(x) == want


def test_the_optimized_code_adds_the_literal_zero_as_ieee_does() -> None:
    """The e-graph's ``add-zero`` (``e + 0 = e``) keeps -0.0 where IEEE gives +0.0. The sign of
    a zero is observable inside a program only through a division or a negative power of that
    zero (``1 / -0.0 = -inf``), and the optimized code is trusted only where every divisor of
    the unoptimized program is proven away from zero (backend/guard.py): here the unoptimized
    program reruns, and it adds the literal 0 (``+ 0.0``)."""
    x = np.array([0.0, 1.0])
    for src in ["def f(x: [N]):\n    return 1.0 / (-x[0] + 0)\n",
                "def f(x: [N]):\n    y[i: N] = -x[i] + 0\n    return 1.0 / y[0]\n",
                "def f(x: [N]):\n    y[i: N] = 0 - x[i]\n    return 1.0 / y[0]\n"]:
        assert _value(src, x=x) == np.inf
        for optimize in (False, True):
            assert ea.compile(ea.parse(src), optimize=optimize)(x) == np.inf
        _agree(src, {"x": ("N",)}, {"N": 2}, {"x": x})


def test_a_stored_statement_adds_the_literal_zero_as_ieee_does() -> None:
    """``y[i] = -x[i] + 0`` stored: the normal form has no zero term, so the literal is added
    after the statement's terms (``y = y + 0.0``); ``e - 0`` is ``e`` exactly."""
    x = np.array([0.0, -0.0])
    for src, want in [("def f(x: [N]):\n    y[i: N] = -x[i] + 0\n    return y\n", [0.0, 0.0]),
                      ("def f(x: [N]):\n    y[i: N] = x[i] - 0\n    return y\n", [0.0, -0.0]),
                      ("def f(x: [N]):\n    y = 0 - x[1]\n    return y\n", 0.0)]:
        got = ea.compile(ea.parse(src), optimize=False)(x)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(np.signbit(_value(src, x=x)), np.signbit(want))


def test_a_negated_bracket_is_positive_zero() -> None:
    """``-[p]`` where p is false is a strong zero, +0.0: the generated code wrote
    ``-float(p)`` (-0.0), so ``1 / -[p]`` was -inf against the interpreter's +inf."""
    for src, want in [
        ("def f(x: [N]):\n    return 1 / -(N < 1)\n", np.inf),
        ("def f(x: [N]):\n    y[i: N] = 1 / -(i < 1)\n    return y\n", [-1.0, np.inf]),
        ("def f(x: [N]):\n    return 1 / -(gt(x[0], 5) * x[1])\n", np.inf),
    ]:
        x = np.array([0.0, 0.0])
        np.testing.assert_array_equal(_value(src, x=x), want)
        _agree(src, {"x": ("N",)}, {"N": 2}, {"x": x})


def test_a_strong_zero_is_positive_zero_also_negated() -> None:
    """The literal ``-0`` is a strong zero, whose value is +0.0 (the compiled code's literal
    0): ``(-0) ** (-1)`` is +inf, as compiled (the interpreter gave -inf)."""
    src = "def f(A: [1, M]):\n    t1[i: 3, j: M] = (-0) ** (-1)\n    return t1\n"
    a = np.ones((1, 1))
    np.testing.assert_array_equal(_value(src, A=a), np.full((3, 1), np.inf))
    _agree(src, {"A": (1, "M")}, {"M": 1}, {"A": a})


@pytest.mark.parametrize("source, shapes, inputs, want", [
    # the range narrowed to nothing
    ("def f(x: [N], w: []):\n    return w * Sum[i: N]((i + 1 > N) * x[i + 1])\n",
     {"x": ("N",), "w": ()}, {"x": np.array([1.0, 2.0]), "w": np.nan}, 0.0),
    # a bracket false for some outputs only
    ("def f(x: [N], w: [N]):\n    y[j: N] = w[j] * Sum[i: N]((i < j) * x[i])\n    return y\n",
     {"x": ("N",), "w": ("N",)}, {"x": np.array([1.0, 2.0]), "w": np.array([np.inf, 1.0])},
     [0.0, 1.0]),
    # data comparisons, all false
    ("def f(x: [N], w: []):\n    return w * Sum[i: N](gt(x[i], 5) * x[i])\n",
     {"x": ("N",), "w": ()}, {"x": np.array([1.0, 2.0]), "w": np.inf}, 0.0),
    # ... over a quotient by inf (fuzz reproducer s2027_gradient_index_grad_optimize_false_005)
    ("def f(B: [2], x: [N]):\n    t0 = N > 2\n    return Sum[i: N](gt0(t0)) / (B[1] / 0.0)\n",
     {"B": (2,), "x": ("N",)}, {"B": np.array([1.0, 1.0]), "x": np.array([1.0, 2.0])}, 0.0),
])
def test_a_sum_of_strong_zeros_is_a_strong_zero(source: str, shapes: dict, inputs: dict,
                                                 want: object) -> None:
    """A sum whose terms are all guarded away is a strong zero, so its product with inf or nan
    (or its quotient) is 0; the generated code computed it as an ordinary 0.0 (nan). The strict
    code now guards such a product by the count of live terms."""
    np.testing.assert_array_equal(_value(source, **inputs), want)
    _agree(source, shapes, {"N": 2}, inputs)


def test_the_chain_rule_multiplies_a_stored_zero_adjoint_by_an_infinite_derivative() -> None:
    """Class 2: ``y = sqrt(x)`` stored, only ``y[1]`` returned. The adjoint of ``y[0]`` is a
    stored 0.0 and ``sqrt'(0) = inf``: IEEE gives nan for ``d/dx[0]`` (JAX's ``jax.grad(lambda
    x: jnp.sqrt(x)[1])`` too), though the function does not depend on ``x[0]``. The
    interpreter, ``optimize=False`` and the optimized gradient (which reruns the unoptimized
    program: ``1 / sqrt(x)`` is not proven finite at ``x = 0``) agree; away from 0 the
    optimized gradient is the fast path's."""
    p = ea.parse("def f(x: [N]):\n    y[i: N] = sqrt(x[i])\n    return y[1]\n")
    x = np.array([0.0, 4.0, 9.0])
    want = evaluate(ea.vjp(p, wrt="x"), x=x, ybar=1.0)
    np.testing.assert_array_equal(want, [np.nan, 0.25, 0.0])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.grad(p, optimize=optimize)(x), want)
    g = ea.grad(p)
    np.testing.assert_array_equal(g(np.array([1.0, 4.0, 9.0])), [0.0, 0.25, 0.0])
    assert g.compiled.fallback.calls == 0


def test_a_relation_guards_a_difference_times_an_infinite_weight() -> None:
    """``Σ_e a[e, i] (x[i] - z[i]) w[e]`` with ``w[0] = inf``: where ``a[e, i]`` is false the
    term is a strong zero (0), so only ``i = 0`` (a member with ``e = 0``) is inf. Found when
    a sparse mesh gradient at a self-edge reran its unoptimized program (tests/test_sparse.py)."""
    src = ("def f(x: [V], z: [V], w: [E], a: rel[E, V]):\n"
           "    y[i: V] = Sum[e: E](a[e, i] * (x[i] - z[i]) * w[e])\n    return y\n")
    x, z, w = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 1.0]), np.array([np.inf, 1.0])
    a = np.array([[True, False, False], [False, True, True]])
    want = evaluate(ea.parse(src), x=x, z=z, w=w, a=a)
    np.testing.assert_array_equal(want, [np.inf, 1.0, 2.0])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.compile(ea.parse(src), optimize=optimize)(x, z, w, a),
                                      want)


@pytest.mark.parametrize("source, want", [
    # class 6: the factor [i != 0] ((N >= 1) + B) of a product, its strong zero at i = 0 kept
    ("def f(A: [N, N], B: []):\n    y[i: N] = (i != 0) * ((N >= 1) + B) * A[i, i]\n"
     "    return y\n", [0.0, np.inf]),
    # ... and under a sum, with a factor outside the bracket's sum of terms
    ("def f(A: [N, N], B: []):\n    y[j: N] = Sum[i: N]((i != 0) * (A[i, j] + 1.0) * B)\n"
     "    return y\n", [-np.inf, np.nan]),
])
def test_a_guarded_sum_of_terms_times_an_infinite_factor_keeps_its_strong_zero(
        source: str, want: list[float]) -> None:
    """A factor ``[p] * (a + b)`` evaluated alone holds a plain 0.0 where p is false; the
    strict code applies p to the whole product instead, so another factor's inf does not make
    it nan (the strict code's guard masks, plan/lower/reduce.py ``split_guards``)."""
    A, B = np.array([[1.0, np.inf], [1.0, -1.0]]), -np.inf
    got = _value(source, A=A, B=B)
    np.testing.assert_array_equal(got, want)
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.compile(ea.parse(source), optimize=optimize)(A, B),
                                      want)
    _agree(source, {"A": ("N", "N"), "B": ()}, {"N": 2}, {"A": A, "B": B})


@pytest.mark.parametrize("source, A", [
    # the two class-6 reproducers (experiments/results/fuzz_repros/s2027b_gradient_index_*)
    ("def f(A: [N, N], B: []):\n    return (Sum[i:N]((i != 0) * A[i, i]) * ((N >= 1) + B)) ** 2\n",
     [[1.0, np.inf], [1.0, 1.0]]),
    ("def f(A: [N, N], B: []):\n"
     "    return (Sum[i:N]((i != 0) * A[i / 2, i]) * ((N >= 1) + B)) ** 2\n",
     [[-1.34, np.inf], [-1.89, -1.66]]),
])
def test_the_gradient_of_a_guarded_sum_times_an_infinite_factor(source: str, A: list) -> None:
    """``A_bar[i, i] = [i != 0] ((N >= 1) + B) ...``: 0 at i = 0 whatever B is (B = -inf), in the
    interpreted, unoptimized and optimized gradients alike."""
    p, a, b = ea.parse(source), np.array(A), -np.inf
    want = evaluate(ea.vjp(p, wrt="A"), A=a, B=b, ybar=1.0)
    assert want[0, 0] == 0.0
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.grad(p, wrt="A", optimize=optimize)(a, b), want)
    _agree(source, {"A": ("N", "N"), "B": ()}, {"N": 2}, {"A": a, "B": b})


def test_np_sign_is_nan_at_nan() -> None:
    """``np.sign`` is the built-in ``sign`` (IEEE: nan at nan, +0.0 at -0.0 as NumPy), not
    ``(x > 0) - (x < 0)`` (0 at nan); its derivative is 0 almost everywhere."""
    def f(x):
        return np.sign(x)

    def g(x):
        return np.sign(np.sqrt(x)) > x  # the front-end reproducer: nan > x is False

    def h(x):
        return np.sum(np.sign(x) * x)

    x = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan])
    shapes = {"x": ("N",)}
    for optimize in (False, True):
        got = ea.compile(f, shapes=shapes, optimize=optimize)(x)
        np.testing.assert_array_equal(got, np.sign(x))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(np.sign(x)))
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(ea.compile(g, shapes=shapes, optimize=optimize)(x),
                                          g(x))
        x1 = np.array([-2.0, 3.0, 0.5])
        np.testing.assert_array_equal(ea.grad(h, shapes=shapes, optimize=optimize)(x1),
                                      np.sign(x1))
    assert "sign(" in str(ea.translate(f, shapes=shapes))


def test_a_factor_outside_a_sum_keeps_the_sign_of_a_zero_product() -> None:
    """``A[M] * Σ_i x[i/2]`` (fuzz seed 77, program 62): the read outside ``A`` is an ordinary
    +0.0 and the sum negative, so the product is -0.0 and ``1 / it`` is -inf. The fast code's
    normal form wrote it as ``Σ_i A[M] x[i/2]`` with the factor taken out again and ``+ 0.0``
    (the sign of a sum of zeros): +inf. A division by zero now reruns the strict code, which
    keeps the product's nesting."""
    src = ("def f(x: [M], A: [M], w: []):\n"
           "    return -(sqrt(gt0(w)) / (A[M] * Sum[i: M](x[i/2])))\n")
    inputs = {"x": np.array([-0.95, 1.96]), "A": np.array([5e-324, -0.33]), "w": 1.5}
    assert _value(src, **inputs) == np.inf
    _agree(src, {"x": ("M",), "A": ("M",), "w": ()}, {"M": 2}, inputs)
    # the factor inside the sum: a sum of zeros is +0.0 (1 / it is +inf), outside: -0.0
    for body, want in (("Sum[j: N](w * x[j])", np.inf), ("w * Sum[j: N](x[j])", -np.inf)):
        src = f"def f(x: [N], w: []):\n    return 1 / ({body})\n"
        inputs = {"x": np.array([0.0, 0.0]), "w": -2.0}
        assert _value(src, **inputs) == want
        _agree(src, {"x": ("N",), "w": ()}, {"N": 2}, inputs)


def test_an_infinite_constant_matrix_times_a_vector_is_a_sum_of_products() -> None:
    """``(1e-3 / 0.0) @ clip(...)`` (fuzz seed 77, program 77): every entry of the broadcast
    constant matrix is inf, the vector has entries of both signs, so each sum of products is
    inf - inf = nan. The strict code's einsum took the stride-0 operand out of the sum (inf *
    Σ v: inf); it now sums the products of a copy."""
    def f(C):
        t = np.full((C.shape[0], C.shape[0]), 1e-3) / np.full((C.shape[0], C.shape[0]), 0.0)
        return (t @ np.clip(C[:, 0] + C[:, 0], -1.0, 1.0))[-1]

    C = np.array([[1.5, -0.4], [0.9, 1.6], [-1.8, -1.3]])
    src = ("import numpy as np\n\n\ndef f(C):\n"
           "    t = np.full((C.shape[0], C.shape[0]), 1e-3) / np.full((C.shape[0], C.shape[0]),"
           " 0.0)\n    return (t @ np.clip(C[:, 0] + C[:, 0], -1.0, 1.0))[-1]\n")
    with np.errstate(all="ignore"):
        assert np.isnan(f(C))
    _agree(src, {"C": ("M", "N")}, {"M": 3, "N": 2}, {"C": C}, generator="numpy")
    from eqsat_ad.backend import runtime

    t = np.broadcast_to(np.inf, (3, 3))
    assert np.isnan(runtime.einsum_sz("ab,b->a", False, t, np.array([1.0, -1.0, 0.5]))).all()


@pytest.mark.parametrize("body, want", [
    ("Sum[j: N](-x[j])", np.inf),  # a sum of -0.0 terms is +0.0
    ("-Sum[j: N](x[j])", -np.inf),  # the negated sum is -0.0
    ("-Sum[j: N](-x[j])", -np.inf),
    ("Sum[j: N](-2 * x[j] * y[1])", np.inf),  # (the optimizer takes -2 out: -2 * Σ is -0.0)
])
def test_a_coefficient_inside_a_sum_leaves_the_sum_positive_zero(body: str, want: float
                                                                 ) -> None:
    """The normal form's coefficient of a summed term was applied to the sum, whether the
    program wrote it inside (``Σ_j -x[j]``: +0.0 at x = 0) or outside (``-Σ_j x[j]``: -0.0); the
    interpreter's einsum multiplied a constant factor after its sum (-0.0); and the optimized
    program ``-2 Σ_j x[j] y[1]``, whose fast code is the unoptimized one's, ran unguarded."""
    src = f"def f(x: [N], y: [N]):\n    return 1 / ({body}) + y[0]\n"
    for y0 in (1.0, want):  # the fast code, then the strict code (an infinite argument)
        inputs = {"x": np.array([0.0, 0.0]), "y": np.array([y0, 1.0])}
        assert _value(src, **inputs) == want
        _agree(src, {"x": ("N",), "y": ("N",)}, {"N": 2}, inputs)


def test_a_max_of_a_constant_is_a_float_reduction() -> None:
    """``np.min(np.full((n, n), 3.0), axis=0)`` (10,000-program run, seed 2028,
    ``internal_numpy_compile_optimize_false_004``) translates to ``-Max[j: N](-3)``, whose
    generated ``np.max`` of the broadcast integer -3 with ``initial=-np.inf`` raised
    OverflowError; the operand is taken as floats now."""
    def f(x):
        for _ in range(3):
            x = np.min(np.full((x.shape[0], x.shape[0]), 3.0), axis=0)
        return x

    x = np.array([1.0, 2.0])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.compile(f, optimize=optimize)(x), [3.0, 3.0])
    _agree("import numpy as np\n\n\ndef f(x):\n    s1 = x\n    for _ in range(3):\n"
           "        x = np.min(np.full((x.shape[0], x.shape[0]), 3.0), axis=0)\n"
           "    return s1 + x\n", {"x": ("N",)}, {"N": 2}, {"x": np.array([np.inf, 2.0])},
           generator="numpy")


@pytest.mark.parametrize("source, shapes, inputs", [
    # fuzz 2029:1742: a nan factor times (a false bracket's term + a false comparison)
    ("def f(A: [N, N], w: []):\n"
     "    t0[i: N] = log(w + (i < i/2) * A[i, 2*i])\n"
     "    return Sum[j: N](t0[j/2]) * ((N <= 1 and N == 2) * A[0, N] + eq(t0[1], A[1, N - 1]))\n",
     {"A": ("N", "N"), "w": ()}, {"A": np.arange(4.0).reshape(2, 2), "w": -1.0}),
    # ... a difference of guarded terms, over the grid of a statement
    ("def f(x: [N], w: [N]):\n    y[i: N] = w[i] * ((i == 0) * x[i] - gt(x[i], 5))\n    return y\n",
     {"x": ("N",), "w": ("N",)}, {"x": np.array([1.0, 2.0]), "w": np.array([1.0, np.inf])}),
    # ... as the numerator of a quotient by nan
    ("def f(x: [N], w: []):\n    return ((N > 5) * x[0] + gt(x[1], 5)) / w\n",
     {"x": ("N",), "w": ()}, {"x": np.array([1.0, 2.0]), "w": np.nan}),
])
def test_a_sum_of_guarded_terms_as_a_factor_is_a_strong_zero(source: str, shapes: dict,
                                                              inputs: dict) -> None:
    """``w * ([p] a + gt(x, y))`` is 0 where p and the comparison are false, even for w nan or
    inf: both terms are strong zeros, and so is their sum (docs/semantics.md). The strict code
    multiplied the sum, an ordinary 0.0 there, by w (nan); it now guards the product by the
    disjunction of the terms' guards (plan/lower/reads.py ``zero_guard``). The nan of the first
    program comes from finite inputs (log of a negative number)."""
    got = np.asarray(_value(source, **inputs))
    assert got.flat[-1] == 0.0 if got.ndim else got == 0.0
    for optimize in (False, True):
        np.testing.assert_array_equal(
            ea.compile(ea.parse(source), optimize=optimize)(*inputs.values()), got)
    _agree(source, shapes, {"N": 2}, inputs)


def test_a_statically_empty_sum_divided_by_nan_is_a_strong_zero() -> None:
    """fuzz 2029:1968: ``Σ_i [i > i] c / d``: no term survives, so the sum is a strong zero
    and so is its quotient, even by a nan that finite inputs make (``(-1.5) ** 0.5``); the
    code divided the literal 0 by it."""
    src = ("def f(x: [N]):\n    t0[i: N] = ge(expm1(x[i] - x[i]) ** -1, x[i])\n"
           "    return Sum[i: N]((i > i) * 3 ** -1) / (t0[1] + x[0] ** 0.5)\n")
    x = np.array([-1.5, -1.25])
    assert _value(src, x=x) == 0.0
    for optimize in (False, True):
        assert ea.compile(ea.parse(src), optimize=optimize)(x) == 0.0
    _agree(src, {"x": ("N",)}, {"N": 2}, {"x": x})


def test_a_recomputed_small_array_read_outside_it_is_zero() -> None:
    """fuzz 2029:2494: ``t0[i: 1, j: N] = x`` (a small axis: recomputed where it is read by the
    fast code, plan/split.py ``inline_small_arrays``) read at ``t0[1, N]``, outside it: 0, so the
    gradient of ``t0[1, N] * t0[0, N - 1]`` is 0. The recomputed read was the body ``x`` itself;
    it is now guarded by the read's range where the reader's ranges do not prove it inside."""
    src = ("def f(x: [], R: rel[N]):\n    t0[i: 1, j: N] = x\n"
           "    return t0[1, N] * t0[0, N - 1]\n")
    p, x, r = ea.parse(src), 1.75, np.array([False, True])
    assert evaluate(ea.vjp(p, wrt="x"), x=x, R=r, ybar=1.0) == 0.0
    for optimize in (False, True):
        assert ea.grad(p, wrt="x", optimize=optimize)(x, r) == 0.0
    _agree(src, {"x": (), "R": ("N",)}, {"N": 2}, {"x": x, "R": r})


def _tie(x: np.ndarray) -> np.ndarray:
    # (fuzz 2029:2753) two equal entries 100 - t, t = -1.5 Σ x[:-1]: a tie of the max
    return np.max(np.full(2, 100.0) - np.dot(np.full((2, 3), -1.5), x[:-1]), axis=0)


def test_the_derivative_of_a_max_at_a_tie_of_equal_expressions_is_shared() -> None:
    """``max' = step(x - y)``, 1/2 at a tie. Where ``x`` and ``y`` are the same expression the
    interpreter's tie is exact; the generated code summed ``(a - t) - (a - t)`` as ``a - t - a
    + t`` (and the optimizer's ``s + (-s)`` as one sum of their terms), a rounding error whose
    step is 0 or 1: gradients 0 or 3 instead of 1.5. The argument of a function that jumps at
    0 (step, sign, gt0) is now computed side by side (plan/lower/reads.py ``difference``)."""
    x = np.array([-1.18775964, 1.80001655, -1.96578588, 1.86672638])
    p = ea.grad(_tie, optimize=False, shapes={"x": (4,)}).program
    want = evaluate(p, x=x)
    np.testing.assert_array_equal(want, [1.5, 1.5, 1.5, 0.0])
    for optimize in (False, True):
        np.testing.assert_array_equal(ea.grad(_tie, optimize=optimize)(x), want)
    # the optimizer's form of the derivative (fuzz 2029:135), in the index language
    src = "def f(y: [N]):\n    return step(y[0] + (y[1] + y[2]) + (-y[0] - (y[1] + y[2])))\n"
    fns = [ea.compile(ea.parse(src), optimize=optimize) for optimize in (False, True)]
    for y in np.random.default_rng(0).normal(size=(20, 3)):  # (most summed flat are not 0)
        assert _value(src, y=y) == 0.5
        assert [fn(y) for fn in fns] == [0.5, 0.5]


def test_an_unrolled_window_sum_of_negative_zeros_is_positive_zero() -> None:
    """fuzz 2029:4912: ``Σ_{j: 3} x[1] * x[-1]`` reads 0.0 outside ``x``, so each term is -0.0
    for ``x[1] < 0``; a sum adds its terms to +0.0 (docs/semantics.md), so ``1 / t0`` is +inf.
    The window unrolling (``a + a + a``) gave -0.0 (-inf); the statement now adds the sum's
    + 0.0. The gradient's ``inf * x[-1]`` (an ordinary 0.0 read) is nan; the strict code's
    unrolling turned the read's range into a condition (a strong zero: 0), and now keeps the
    read zero padded (plan/windows.py ``unroll_windows``, ``narrow``)."""
    src = ("def f(x: [3]):\n    t0[i: 3] = Sum[j: 3, k: 1](x[k + 1] * x[k - 1])\n"
           "    return -(t0[2] ** -1) + t0[1]\n")
    x = np.array([0.5, -1.25, 1.5])
    assert _value(src, x=x) == -np.inf
    for optimize in (False, True):
        assert ea.compile(ea.parse(src), optimize=optimize)(x) == -np.inf
    _agree(src, {"x": (3,)}, {}, {"x": x})


# --- found by the fuzzer's run on the Numba backend (python -m eqsat_ad.fuzz --backend numba) --
def _agree_on(backend: str, source: str, shapes: dict, sizes: dict, inputs: dict) -> None:
    findings = check_case(Case("index", source, shapes, sizes), {"nonfinite": inputs}, fd=False,
                          backend=backend)["nonfinite"]
    assert [f for f in findings if f.outcome in DEFECTS] == []


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_sum_an_equality_removes_still_starts_at_plus_zero(backend: str) -> None:
    """``Σ_i [i == 0] y`` is ``0.0 + y``: +0.0 at y = -0.0, so 1 / it is +inf. Both backends
    wrote it as ``y`` (seed 3001, case 773: -inf); now with the + 0.0 where its sign can show
    (a scalar, or a statement a divisor reads)."""
    if backend == "numba":
        pytest.importorskip("numba")
    scalar = "def f(y: []):\n    s1 = Sum[i: 3]((i == 0) * y)\n    return 1 / s1\n"
    assert _value(scalar, y=-0.0) == np.inf
    _agree_on(backend, scalar, {"y": ()}, {}, {"y": -0.0})
    array = ("def f(y: [N]):\n    s1[j: N] = Sum[i: N]((i == j) * y[i])\n"
             "    return Sum[j: N](1 / s1[j])\n")
    y = np.array([-0.0, 2.0])
    assert _value(array, y=y) == np.inf
    _agree_on(backend, array, {"y": ("N",)}, {"N": 2}, {"y": y})



@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("body, want", [
    ("-Sum[i: N]((i == 0) * y[i])", -np.inf),  # -(0.0 + y): -0.0 at y = ±0.0
    ("Sum[i: N](-((i == 0) * y[i]))", np.inf),  # 0.0 + -y: +0.0 at y = ±0.0
    ("-2.0 * Sum[i: N]((i == 0) * y[i])", -np.inf),
    ("-Sum[i: N]((i == 0) * y[i]) - Sum[i: N]((i == 1) * y[i])", -np.inf),  # (N >= 2 kept)
])
def test_a_negated_sum_an_equality_removes_is_minus_zero(backend: str, body: str,
                                                          want: float) -> None:
    """``-Σ_i [i == 0] y`` is ``-(0.0 + y)``: -0.0 at y = -0.0, so 1 / it is -inf. Both
    backends wrote ``-y`` (+0.0): the normal form's negative coefficient is applied to the
    sum, and the + 0.0 the sum starts from was added only to positive terms (found while
    fixing seed 3001, case 773). A coefficient written inside the sum keeps the sum +0.0."""
    if backend == "numba":
        pytest.importorskip("numba")
    src = f"def f(y: [N]):\n    s1 = {body}\n    return 1.0 / s1\n"
    for y in ([-0.0, -0.0, 2.0], [0.0, -0.0, 2.0], [-0.0, 0.0, 2.0]):
        assert _value(src, y=np.array(y)) == want
        _agree_on(backend, src, {"y": ("N",)}, {"N": 3}, {"y": np.array(y)})
    array = ("def f(y: [N], x: [N]):\n    s[j: N] = -Sum[i: N]((i == j) * y[i])\n"
             "    return Sum[j: N](x[j] / s[j])\n")
    inputs = {"y": np.array([-0.0, 0.0, 1.0]), "x": np.array([1.0, 1.0, 1.0])}
    assert _value(array, **inputs) == -np.inf
    _agree_on(backend, array, {"y": ("N",), "x": ("N",)}, {"N": 3}, inputs)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("body, y, want", [
    ("(j > 0) * y[j]", [1.0, -0.0, 2.0], np.inf),  # s[1] = -0.0: -1 / s[1] is +inf
    ("-(j > 0) * Sum[i: N]((i == j) * y[i])", [1.0, 0.0, 2.0], np.inf),  # -(0.0 + 0.0)
    ("-Sum[i: N]((i == 0) * (j == 1) * y[i])", [-0.0, 1.0, 2.0], np.inf),  # a point write
    ("-(j > 0) * y[j]", [1.0, 0.0, 2.0], np.inf),  # -0.0 at j = 1
])
def test_a_statement_of_one_term_keeps_its_sign_of_zero(backend: str, body: str, y: list,
                                                         want: float) -> None:
    """A statement whose one term writes part of its array was written into zeros by
    ``+=`` / ``-=``: ``0.0 + t`` is +0.0 where the term is -0.0, and ``0.0 - t`` +0.0 where
    it is +0.0, where the interpreter has the term itself. The NumPy backend now assigns the
    term (``np.negative(t, out=...)`` for a negative one); the Numba backend's NumPy-run
    statement keeps the sign a later divisor reads (``lower_program``'s ``signed``)."""
    if backend == "numba":
        pytest.importorskip("numba")
    src = (f"def f(y: [N], x: [N]):\n    s[j: N] = {body}\n"
           "    return Sum[j: N](x[j] / s[j])\n")
    inputs = {"y": np.array(y), "x": np.array([1.0, -1.0, 1.0])}
    assert _value(src, **inputs) == want  # (+0.0 at j = 1 would add -inf: nan)
    _agree_on(backend, src, {"y": ("N",), "x": ("N",)}, {"N": 3}, inputs)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_masked_diagonal_of_one_term_keeps_its_sign_of_zero(backend: str) -> None:
    """The masked scatter (``_rt.scatter_add``) of a statement's only term subtracted it from
    zeros: ``s[2, 2] = -(y[2] + 0.0)`` was +0.0 at ``y[2] = 0``, so ``x[2] / s[2, 2]`` was
    -inf, not +inf; it assigns now."""
    if backend == "numba":
        pytest.importorskip("numba")
    src = ("def f(y: [N], x: [N]):\n"
           "    s[j: N, k: N] = -(j != 1) * Sum[i: N]((i == j) * (i == k) * y[i])\n"
           "    return Sum[j: N](x[j] / s[j, j])\n")
    inputs = {"y": np.array([1.0, 0.0, 0.0]), "x": np.array([1.0, -1.0, 1.0])}
    assert _value(src, **inputs) == -np.inf  # -1 / +0.0 (j = 1, masked) and 1 / -0.0
    _agree_on(backend, src, {"y": ("N",), "x": ("N",)}, {"N": 3}, inputs)

def test_a_negated_strong_zero_is_plus_zero_in_the_loop_nests() -> None:
    """``(-(0)) ** (-1)`` is +inf (a strong zero is +0.0, negated too); the Numba loop nests
    negated the 0.0 (seed 3001, case 750: -inf)."""
    pytest.importorskip("numba")
    src = "def f(x: [N]):\n    t0[i: N, j: 2] = (j > i - 1) * (-(0)) ** (-1)\n    return t0[1, 1]\n"
    x = np.zeros(3)
    assert _value(src, x=x) == np.inf
    _agree_on("numba", src, {"x": ("N",)}, {"N": 3}, {"x": x})
    masked = "def f(x: [N]):\n    return 1 / -((N < 0) * x[0])\n"
    assert _value(masked, x=np.array([2.0])) == np.inf
    _agree_on("numba", masked, {"x": ("N",)}, {"N": 1}, {"x": np.array([2.0])})
