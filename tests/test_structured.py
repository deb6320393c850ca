"""Structured outputs: Diagonal and Sparse gradients (``structured=True``).

Values: every structured result, converted to dense, equals the dense result of the same program
and the reference interpreter (worked examples, Hessians, random programs and their adjoints,
non-finite inputs). Structure: the gradients of diagonal and point reads come back as Diagonal /
Sparse holding O(N) (or O(k)) numbers, and computing them allocates O(N), not O(N²) (counted with
tracemalloc, not timed).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, sizes_strategy, tensor_params

import eqsat_ad as ea
from eqsat_ad.ad import vjp
from eqsat_ad.backend.numpy import compile_program
from eqsat_ad.backend.structured import Diagonal, Sparse, SparseBuilder
from eqsat_ad.examples import WORKED_EXAMPLES, example, k_reads, k_traces
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.plan.lower import lower_program


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def assert_dense_equal(got, want, rtol=1e-9, atol=1e-11):
    got, want = _tuple(got), _tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        d = g.toarray() if isinstance(g, Sparse) else np.asarray(g)
        assert d.shape == np.shape(w)
        np.testing.assert_allclose(d, w, rtol=rtol, atol=atol, equal_nan=True)


# ================================================================================================
# The containers
# ================================================================================================


def test_sparse_sums_repeated_points_and_converts():
    s = Sparse((3, 4), ([0, 2, 0], [1, 3, 1]), [1.0, 2.0, 5.0])
    want = np.zeros((3, 4))
    want[0, 1], want[2, 3] = 6.0, 2.0
    np.testing.assert_array_equal(s.toarray(), want)
    np.testing.assert_array_equal(np.asarray(s), want)
    assert np.asarray(s, dtype=np.float32).dtype == np.float32
    assert (s.shape, s.ndim, s.nnz, s.size, s.dtype) == ((3, 4), 2, 3, 12, np.float64)
    assert "3 stored entries" in repr(s)


def test_sparse_arithmetic_matches_dense_arithmetic():
    rng = np.random.default_rng(0)
    s = Sparse((4, 5), (rng.integers(0, 4, 6), rng.integers(0, 5, 6)), rng.standard_normal(6))
    t = Sparse((4, 5), (rng.integers(0, 4, 3), rng.integers(0, 5, 3)), rng.standard_normal(3))
    x = rng.standard_normal((4, 5))
    d, e = s.toarray(), t.toarray()
    np.testing.assert_allclose(x + s, x + d)  # ndarray first: NumPy defers to Sparse
    np.testing.assert_allclose(s + x, d + x)
    np.testing.assert_allclose(x - s, x - d)
    np.testing.assert_allclose(s - x, d - x)
    np.testing.assert_allclose((s + t).toarray(), d + e)
    np.testing.assert_allclose((s - t).toarray(), d - e)
    np.testing.assert_allclose((2.5 * s).toarray(), 2.5 * d)
    np.testing.assert_allclose((s * 2.5).toarray(), 2.5 * d)
    np.testing.assert_allclose((s / 4).toarray(), d / 4)
    np.testing.assert_allclose((-s).toarray(), -d)
    np.testing.assert_allclose((s * x).toarray(), d * x)
    assert isinstance(2 * s, Sparse) and isinstance(s + t, Sparse)


def test_add_to_updates_in_place_with_a_scale():
    s = Sparse((5,), ([1, 3, 1],), [1.0, 2.0, 3.0])
    x = np.ones(5)
    out = s.add_to(x, scale=-0.5)
    assert out is x
    np.testing.assert_allclose(x, [1, -1, 1, 0, 1])
    with pytest.raises(ValueError, match="shape"):
        s.add_to(np.ones(4))


def test_diagonal_matches_np_diag():
    v = np.arange(1.0, 5.0)
    d = Diagonal(v, (4, 4))
    np.testing.assert_array_equal(d.toarray(), np.diag(v))
    np.testing.assert_array_equal(d.diagonal(), v)
    np.testing.assert_array_equal(Sparse.toarray(d), np.diag(v))  # via the coordinates
    x = np.random.default_rng(1).standard_normal((4, 3))
    np.testing.assert_allclose(d @ x, np.diag(v) @ x)
    np.testing.assert_allclose(d @ x[:, 0], np.diag(v) @ x[:, 0])
    np.testing.assert_allclose(x.T @ d, x.T @ np.diag(v))
    np.testing.assert_allclose((3 * d).toarray(), 3 * np.diag(v))
    assert isinstance(3 * d, Diagonal)
    # A scalar fills the diagonal; a rectangular or 3-axis shape uses min(shape) points.
    np.testing.assert_array_equal(Diagonal(2.0, (2, 3)).toarray(), 2 * np.eye(2, 3))
    cube = Diagonal([1.0, 2.0], (2, 2, 2)).toarray()
    assert cube[1, 1, 1] == 2.0 and cube.sum() == 3.0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Sparse((3,), ([0, 3],), [1.0, 2.0]), "outside"),
        (lambda: Sparse((3,), ([0],), [1.0, 2.0]), "shape"),
        (lambda: Sparse((3, 3), ([0],), [1.0]), "axes"),
        (lambda: Sparse((3,), ([[0]],), [[1.0]]), "one-dimensional"),
        (lambda: Diagonal([1.0, 2.0], (3, 3)), "holds 3 values"),
        (lambda: Diagonal([1.0], (3,)), "two axes"),
        (lambda: Sparse((-1,), ([],), []), "negative"),
    ],
)
def test_bad_containers_are_value_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_builder_masks_signs_and_points():
    b = SparseBuilder((3, 3), np.float32)
    k = np.arange(3)
    b.add((k, k), np.array([1.0, 2.0, 3.0]), k != 1)
    b.add((k[:, None], 0), 1.0, True, -1)
    b.points.append(((2, 1), 7.0))
    b.points.append(((2, 1), -1.0))
    s = b.build()
    want = np.diag([1.0, 0.0, 3.0])
    want[:, 0] -= 1.0
    want[2, 1] += 6.0
    assert s.dtype == np.float32
    np.testing.assert_allclose(s.toarray(), want)
    assert SparseBuilder((2,), np.float64).build().nnz == 0


# ================================================================================================
# Generated code
# ================================================================================================


@pytest.mark.parametrize("ex_id", [ex.id for ex in WORKED_EXAMPLES])
def test_structured_gradients_of_worked_examples_equal_dense_ones(ex_id):
    ex = example(ex_id)
    wrt = ex.wrt if len(ex.wrt) > 1 else ex.wrt[0]
    inputs = ex.inputs({k: min(v, 9) for k, v in ex.default_sizes.items()}, seed=3)
    structured = ea.grad(ex.program(), wrt=wrt, structured=True)
    dense = ea.grad(ex.program(), wrt=wrt)
    assert_dense_equal(structured(**inputs), dense(**inputs))
    want = ex.numpy_grad(**inputs)
    assert_dense_equal(structured(**inputs), tuple(want[n] for n in ex.wrt), rtol=1e-8,
                       atol=1e-10)


def test_trace_gradients_are_diagonals_holding_n_numbers():
    n = 7
    A = np.random.default_rng(0).standard_normal((n, n))
    for k in (1, 5):
        g = ea.grad(k_traces(k).program(), wrt="A", structured=True)
        out = g(A=A)
        assert isinstance(out, Diagonal) and out.nnz == n
        np.testing.assert_allclose(out.diagonal(), np.full(n, float(k)))
        assert "_rt.Diagonal(" in g.source and "np.zeros" not in g.source


def test_point_read_gradients_are_sparse_with_k_entries():
    x = np.random.default_rng(0).standard_normal(50)
    g = ea.grad(k_reads(6).program(), wrt="x", structured=True)
    out = g(x=x)
    assert isinstance(out, Sparse) and not isinstance(out, Diagonal)
    assert out.nnz == 6
    np.testing.assert_allclose(sorted(out.coords[0]), range(6))
    want = np.zeros(50)
    want[:6] = 2 * x[:6]
    np.testing.assert_allclose(out.toarray(), want)
    e4 = ea.grad(example("E4").program(), wrt="x", structured=True)(x=x)
    assert isinstance(e4, Sparse) and e4.nnz == 1


def test_structured_gradient_allocates_o_n_not_o_n_squared():
    n = 2000
    A = np.random.default_rng(0).standard_normal((n, n))
    g = ea.grad(k_traces(8).program(), wrt="A", structured=True)
    dense = ea.grad(k_traces(8).program(), wrt="A")
    g(A=A), dense(A=A)  # compile first

    def peak(fn):
        tracemalloc.start()
        fn(A=A)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    assert peak(g) < 64 * n * 8  # a few vectors of N
    assert peak(dense) >= n * n * 8  # the dense N×N output, for contrast


def test_diagonal_hessian_is_structured():
    prog = ea.parse("def cubes(x: [N]):\n    return Sum[i: N](x[i] * x[i] * x[i])")
    x = np.random.default_rng(2).standard_normal(6)
    h = ea.hessian(prog, structured=True)(x=x)
    assert isinstance(h, Diagonal)
    np.testing.assert_allclose(h.toarray(), np.diag(6 * x))


def test_compile_returns_a_structured_forward_output():
    prog = ea.parse("def D(x: [N]):\n    y[i: N, j: N] = (i == j) * x[i]\n    return y")
    x = np.arange(4.0)
    out = ea.compile(prog, structured=True)(x=x)
    assert isinstance(out, Diagonal)
    np.testing.assert_array_equal(out.toarray(), np.diag(x))
    assert isinstance(ea.compile(prog)(x=x), np.ndarray)


def test_outputs_read_by_other_statements_or_with_dense_terms_stay_dense():
    read = ea.parse(
        "def f(x: [N]):\n"
        "    y[i: N, j: N] = (i == j) * x[i]\n"
        "    z[i: N] = Sum[j: N](y[i, j])\n"
        "    return y, z"
    )
    mixed = ea.parse("def g(x: [N]):\n    y[i: N] = (i == 0) * x[0] + x[i]\n    return y")
    x = np.arange(1.0, 4.0)
    out = compile_program(read, structured=True)(x=x)
    assert all(isinstance(o, np.ndarray) for o in out)
    assert_dense_equal(out, evaluate(read, x=x))
    assert isinstance(compile_program(mixed, structured=True)(x=x), np.ndarray)


def test_masked_scatter_and_negative_terms():
    prog = ea.parse(
        "def f(x: [N], R: rel[N, N]):\n"
        "    y[i: N, j: N] = (i == j) * R[i, j] * x[i] - (j == 0) * x[i]\n"
        "    return y"
    )
    rng = np.random.default_rng(4)
    x, R = rng.standard_normal(5), rng.random((5, 5)) < 0.5
    out = compile_program(prog, structured=True)(x=x, R=R)
    assert isinstance(out, Sparse)
    assert "SparseBuilder" in lower_program(prog, structured=True).source
    assert_dense_equal(out, evaluate(prog, x=x, R=R))
    points = ea.parse("def h(x: [N]):\n    y[i: N] = x[2] * (i == 0) - (i == 1) * x[0]\n"
                      "    return y")
    src = lower_program(points, structured=True).source
    assert src.count(".points.append(") == 2
    for n in (1, 2, 4):
        x = rng.standard_normal(n)
        got = compile_program(points, structured=True)(x=x)
        assert isinstance(got, Sparse)
        assert_dense_equal(got, evaluate(points, x=x))


def test_non_finite_inputs_keep_strong_zero_off_the_diagonal():
    ex = example("E3")
    inputs = ex.inputs({"N": 5}, seed=0)
    inputs["x"] = inputs["x"].copy()
    inputs["x"][2] = np.inf
    prog = ea.grad(ex.program(), wrt=("x", "B"), structured=True)
    got = prog(**inputs)
    assert isinstance(got[1], Diagonal)
    want = evaluate(prog.program, **inputs)
    assert_dense_equal(got, want)


def test_preserve_result_and_tuples_with_structured_outputs():
    ex = example("E3")
    inputs = ex.inputs({"N": 6}, seed=1)
    g = ea.grad(ex.program(), wrt=("x", "B"), structured=True, preserve_result=True)
    xb, Bb, value = g(**inputs)
    assert isinstance(Bb, Diagonal) and isinstance(xb, np.ndarray)
    np.testing.assert_allclose(value, ex.numpy_f(**inputs))
    want = ex.numpy_grad(**inputs)
    np.testing.assert_allclose(np.asarray(Bb), want["B"])


def test_python_functions_get_structured_gradients():
    def traces(A):
        return np.trace(A) + 2.0 * np.trace(A)

    def first(x):
        return x[0] * x[0]

    A = np.random.default_rng(0).standard_normal((5, 5))
    g = ea.grad(traces, structured=True)(A)
    assert isinstance(g, Diagonal)
    np.testing.assert_allclose(g.toarray(), 3 * np.eye(5))
    x = np.arange(1.0, 5.0)
    s = ea.grad(first, structured=True)(x)
    assert isinstance(s, Sparse) and s.nnz == 1
    np.testing.assert_allclose(np.asarray(s), [2.0, 0, 0, 0])
    assert isinstance(ea.grad(first)(x), np.ndarray)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    programs(max_statements=3, scalar_output=False),
    sizes_strategy(),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_random_programs_and_adjoints_structured_match_interpreter(prog, sizes, seed, adjoint):
    if adjoint:
        names = tensor_params(prog)
        if names and len(prog.outputs) == 1:
            prog = vjp(prog, names[0])
    inputs = random_inputs(prog, sizes, np.random.default_rng(seed))
    got = compile_program(prog, structured=True)(**inputs)
    assert_dense_equal(got, evaluate(prog, **inputs), rtol=1e-7, atol=1e-9)


def test_cost_model_prices_structured_outputs_by_their_points():
    from eqsat_ad.cost import program_cost

    k = 6
    g = ea.grad(k_traces(k).program(), wrt="A", structured=True, sizes={"N": 1000})
    dense = program_cost(g.program, {"N": 1000}, lowered=True)
    points = program_cost(g.program, {"N": 1000}, lowered=True, structured=True)
    assert dense.big_o() == "O(N**2)" and points.big_o() == "O(N)"
    naive = program_cost(g.naive, {"N": 1000}, lowered=True, structured=True)
    # before: k diagonal scatters of N points into the sparse builder, plus one index range;
    # after: one diagonal of N stored values
    assert naive.plan.kinds().count("scatter") == k
    assert naive.value() == (k + 1) * points.value()
    assert points.plan.kinds() == ["fill"]
    assert g.report.structured and g.report.optimized.big_o == "O(N)"
    assert g.report.speedup == pytest.approx(k + 1)
    # A statement that another statement reads stays dense.
    reads = ea.parse("""
def f(A: [N, N]):
    D[i: N, j: N] = (i == j) * A[i, i]
    return Sum[i: N, j: N](D[i, j])
""")
    assert program_cost(reads, {"N": 1000}, structured=True).big_o() == "O(N**2)"


# ================================================================================================
# Outer products
# ================================================================================================


def test_outer_matches_np_outer():
    from eqsat_ad.backend.structured import Outer

    rng = np.random.default_rng(5)
    u, v, w = rng.standard_normal(3), rng.standard_normal(4), rng.standard_normal((2, 2))
    o = Outer((u, v))
    np.testing.assert_allclose(o.toarray(), np.outer(u, v))
    assert (o.shape, o.nnz, o.size) == ((3, 4), 7, 12) and "factors 3 x 4" in repr(o)
    three = Outer((u, v, w), (3, 4, 2, 2))
    np.testing.assert_allclose(np.asarray(three), np.einsum("i,j,kl->ijkl", u, v, w))
    x, y = rng.standard_normal((4, 2)), rng.standard_normal((5, 3))
    np.testing.assert_allclose(o @ x, np.outer(u, v) @ x)
    np.testing.assert_allclose(o @ x[:, 0], np.outer(u, v) @ x[:, 0])
    np.testing.assert_allclose(y @ o, y @ np.outer(u, v))
    np.testing.assert_allclose((2 * o).toarray(), 2 * np.outer(u, v))
    np.testing.assert_allclose((-o / 4).toarray(), -np.outer(u, v) / 4)
    z = rng.standard_normal((3, 4))
    np.testing.assert_allclose(z + o, z + np.outer(u, v))
    np.testing.assert_allclose(z - o, z - np.outer(u, v))
    np.testing.assert_allclose(o - z, np.outer(u, v) - z)
    np.testing.assert_allclose(o * z, np.outer(u, v) * z)
    np.testing.assert_allclose(o.add_to(z.copy(), scale=-0.5), z - 0.5 * np.outer(u, v))
    # 0 * inf is nan (IEEE), as in np.outer and in the program.
    inf = Outer((np.array([np.inf, 1.0]), np.array([0.0, 2.0])))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(inf.toarray(), np.outer([np.inf, 1.0], [0.0, 2.0]))
    # Factors are copies: changing an input later does not change the gradient.
    u0 = u.copy()
    u[0] = 99.0
    np.testing.assert_allclose(o.factors[0], u0)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: __import__("eqsat_ad").Outer((np.ones(2),)), "two factors"),
        (lambda: __import__("eqsat_ad").Outer((np.ones(2), 3.0)), "one axis"),
        (lambda: __import__("eqsat_ad").Outer((np.ones(2), np.ones(3)), (3, 2)), "make"),
    ],
)
def test_bad_outer_products_are_value_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bilinear_gradients_are_outer_products():
    from eqsat_ad.backend.structured import Outer

    ex = example("E6")
    inputs = ex.inputs({"N": 6}, seed=2)
    g = ea.grad(ex.program(), wrt=("A", "x"), structured=True)
    A_bar, x_bar = g(**inputs)
    assert isinstance(A_bar, Outer) and A_bar.nnz == 12 and isinstance(x_bar, np.ndarray)
    assert "_rt.Outer(" in g.source
    want = ex.numpy_grad(**inputs)
    np.testing.assert_allclose(A_bar.toarray(), want["A"])
    chain = example("chain")
    inputs = chain.inputs({"N": 9, "R": 3}, seed=1)
    got = ea.grad(chain.program(), wrt=chain.wrt, structured=True)(**inputs)
    # B's gradient Σ_{i,l} A[i, r] C[n, l]: the optimizer keeps the double sum (taking the
    # reads out of it is exact for finite A and C only, docs/semantics.md); the plan regroups it
    # as (Σ_i A[i, r]) (Σ_l C[n, l]) in the fast code, which runs on finite inputs only (checked
    # before the call), so it is returned as an Outer of the two factors.
    assert [type(v).__name__ for v in got] == ["ndarray", "Outer", "ndarray"]
    want = chain.numpy_grad(**inputs)
    for value, name in zip(got, chain.wrt, strict=True):
        np.testing.assert_allclose(np.asarray(value), want[name], rtol=1e-10)


@pytest.mark.parametrize(
    "body, outer",
    [
        ("y[i: N, j: M] = 2 * w * a[i] * b[j]", True),  # index-free factors join the first
        ("y[i: N, j: M, k: M] = a[i] * B2[j, k] * b[k]", True),
        ("y[i: N, j: M] = Sum[k: M](B[i, k] * b[k]) * exp(b[j])", True),
        ("y[i: N, k: M, j: M] = a[i] * B2[j, k]", True),  # a factor read transposed
        ("y[i: N, j: M] = a[i] * B[i, j]", False),  # one index in every factor
        ("y[i: N, j: M, k: N] = C[i, k] * b[j]", False),  # the groups interleave
        ("y[i: N, j: M] = a[i] * b[j] + a[i]", False),  # two terms
    ],
)
def test_outer_detection_values_and_cost(body, outer):
    from eqsat_ad.backend.structured import Outer
    from eqsat_ad.cost import program_cost

    prog = ea.parse("def f(a: [N], b: [M], B: [N, M], B2: [M, M], C: [N, N], w: []):\n"
                    f"    {body}\n    return y")
    inputs = random_inputs(prog, {"N": 3, "M": 4}, np.random.default_rng(6))
    got = compile_program(prog, structured=True)(**inputs)
    assert isinstance(got, Outer) == outer
    assert_dense_equal(got, evaluate(prog, **inputs))
    dense = program_cost(prog, {"N": 30, "M": 40}, lowered=True)
    stored = program_cost(prog, {"N": 30, "M": 40}, lowered=True, structured=True)
    assert (stored.value() < dense.value()) == outer


def test_outer_is_the_dense_ieee_product():
    prog = ea.parse("def f(a: [N], b: [N]):\n    y[i: N, j: N] = exp(a[i]) * b[j]\n    return y")
    a, b = np.array([1000.0, 0.0]), np.array([0.0, 1.0])
    got = compile_program(prog, structured=True)(a=a, b=b)
    assert_dense_equal(got, evaluate(prog, a=a, b=b))
    assert np.isnan(got.toarray()[0, 0])  # exp(1000) = inf times 0 is nan, as in the program
    # o @ v agrees with the dense product (IEEE), not with u (v . x)
    o = ea.Outer((np.array([np.inf, 1.0]), np.array([1.0, 0.0])))
    v = np.array([1.0, 1.0])
    np.testing.assert_array_equal(o @ v, np.asarray(o) @ v)
    np.testing.assert_array_equal(v @ o, v @ np.asarray(o))


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(max_statements=3), sizes_strategy(), st.integers(0, 2**16))
def test_optimized_random_adjoints_structured_match_interpreter(prog, sizes, seed):
    """What the optimizer extracts (more brackets solved, outer products exposed) returned
    structured equals the interpreter's value of the same program."""
    from eqsat_ad.egraph.optimize import Limits, optimize

    names = tensor_params(prog)
    if not names:
        return
    adjoint = optimize(vjp(prog, names[0]), limits=Limits(iterations=8, nodes=3000,
                                                           seconds=1.0)).program
    inputs = random_inputs(adjoint, sizes, np.random.default_rng(seed))
    got = compile_program(adjoint, structured=True)(**inputs)
    assert_dense_equal(got, evaluate(adjoint, **inputs), rtol=1e-7, atol=1e-9)


def _no_dense(monkeypatch, cls) -> None:
    def refuse(self):
        raise AssertionError(f"{cls.__name__} was made dense")

    monkeypatch.setattr(cls, "toarray", refuse)


@pytest.mark.parametrize("kind", ["diagonal", "sparse", "outer"])
def test_numpy_idioms_on_structured_gradients(kind, monkeypatch):
    from eqsat_ad.backend.structured import Diagonal, Outer, Sparse

    rng = np.random.default_rng(11)
    g = {
        "diagonal": Diagonal(np.array([1.0, 2.0, 3.0]), (3, 3)),
        "sparse": Sparse((3, 3), [np.array([0, 0, 2]), np.array([1, 1, 2])],
                         np.array([1.0, 2.0, -4.0])),
        "outer": Outer((np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0, 0.5]))),
    }[kind]
    dense = np.asarray(g)
    x = rng.standard_normal((3, 3))
    # results that need no dense copy of g: in-place SGD steps, sums, norms
    with monkeypatch.context() as m:
        if kind != "outer":  # (an Outer adds into W densely: every entry may change)
            _no_dense(m, type(g))
        w = x.copy()
        before = id(w)
        w -= 0.1 * g
        w += g
        assert id(w) == before
        np.testing.assert_allclose(w, x + 0.9 * dense)
        _no_dense(m, type(g))
        assert np.sum(g) == pytest.approx(dense.sum())
        assert np.linalg.norm(g) == pytest.approx(np.linalg.norm(dense))
    # everything else agrees with the dense array
    np.testing.assert_allclose(np.sum(g, axis=0), dense.sum(axis=0))
    np.testing.assert_allclose(x + g, x + dense)
    np.testing.assert_allclose(x * g, x * dense)
    np.testing.assert_allclose(x @ g, x @ dense)
    np.testing.assert_allclose(np.maximum(g, 0.5), np.maximum(dense, 0.5))
    np.testing.assert_allclose(np.linalg.norm(g, axis=0), np.linalg.norm(dense, axis=0))
    # with inf in the other operand the dense IEEE product is the reference
    bad = x.copy()
    bad[0, 0] = np.inf
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.isnan(bad * g), np.isnan(bad * dense))
        np.testing.assert_array_equal(np.isnan(bad @ g), np.isnan(bad @ dense))
