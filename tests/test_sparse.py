"""Sparse relations and index arrays: SciPy sparse and integer-array arguments, O(nnz) plans
(gathers and segment sums) checked against the interpreter, the dense path, finite differences
and the adjoint identity; allocation sizes counted on the plan."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import eqsat_ad as ea
from eqsat_ad.ir.errors import ArgumentTypeError, ProgramError, ShapeError
from eqsat_ad.ir.relations import SparseRelation, prefer_dense, relation_argument
from eqsat_ad.plan.lower import lower_program
from eqsat_ad.plan.price import program_cost

LAP = """
def lap(x: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * (x[i] - x[j]) ** 2)
"""
BIL = """
def bil(u: [N], v: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * u[i] * v[j])
"""
GCN = """
def gcn(H: [N, F], W: [F, G], A: rel[N, N]):
    Z[i: N, g: G] = Sum[j: N, f: F](A[i, j] * H[j, f] * W[f, g])
    return Sum[i: N, g: G](tanh(Z[i, g]))
"""
ATT = """
def att(q: [N, D], k: [N, D], v: [N], M: rel[N, N]):
    z[i: N] = Sum[j: N](M[i, j] * exp(Sum[d: D](q[i, d] * k[j, d])))
    o[i: N] = Sum[j: N](M[i, j] * exp(Sum[d: D](q[i, d] * k[j, d])) * v[j]) / z[i]
    return Sum[i: N](o[i] ** 2)
"""
DEG = """
def deg(x: [N], M: rel[N, N]):
    d[i: N] = Sum[j: N](M[i, j])
    return Sum[i: N](d[i] * x[i] ** 2)
"""
EDGES = """
def edges(x: [N], src: idx[E, N], dst: idx[E, N]):
    d[e: E] = x[src[e]] - x[dst[e]]
    return Sum[e: E](d[e] ** 2)
"""
MESH = """
def mesh(p: [V, 2], a: idx[E, V], b: idx[E, V], r: []):
    l[e: E] = sqrt(Sum[c: 2]((p[a[e], c] - p[b[e], c]) ** 2))
    return Sum[e: E]((l[e] - r) ** 2)
"""


def _relation(n: int, density: float, seed: int, fmt: str = "csr") -> sp.sparray:
    m = sp.random_array((n, n), density=density, rng=seed, format="coo")
    m = sp.coo_array((np.ones(m.nnz), (m.row, m.col)), shape=(n, n))
    return m.asformat(fmt)


def _close(a, b) -> None:
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,),
                    strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-10)


def _args(src: str, rng: np.random.Generator, n: int = 40):
    rel = _relation(n, 0.06, 3)
    if "def att" in src:  # every row attends to itself (an empty row divides 0 by 0)
        rel = sp.csr_array(((rel + sp.eye_array(n)) > 0).astype(float))
    if "def lap" in src or "def deg" in src:
        return (rng.standard_normal(n), rel)
    if "def bil" in src:
        return (rng.standard_normal(n), rng.standard_normal(n), rel)
    if "def gcn" in src:
        return (rng.standard_normal((n, 5)), rng.standard_normal((5, 3)), rel)
    return (rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), rng.standard_normal(n), rel)


def _dense(args):
    return tuple(a.toarray() > 0 if sp.issparse(a) else a for a in args)


# --- arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_sparse_formats_mean_the_dense_relation(fmt: str) -> None:
    prog = ea.parse(LAP)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(30)
    rel = _relation(30, 0.1, 1, fmt)
    want = ea.evaluate(prog, x, rel.toarray() > 0)
    assert ea.evaluate(prog, x, rel) == pytest.approx(want)
    assert ea.compile(prog)(x, rel) == pytest.approx(want)


def test_duplicates_count_once_and_explicit_zeros_are_not_members() -> None:
    rows, cols = np.array([0, 0, 1, 2, 2]), np.array([1, 1, 2, 0, 1])
    data = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    coo = sp.coo_matrix((data, (rows, cols)), shape=(3, 3))
    rel = relation_argument("M", coo, [3, 3])
    assert rel.nnz == 3
    assert rel.dense.tolist() == [[False, True, False], [False, False, True],
                                  [True, False, False]]
    prog = ea.parse(BIL)
    u, v = np.arange(3.0) + 1, np.arange(3.0) + 2
    assert ea.compile(prog)(u, v, coo) == pytest.approx(ea.evaluate(prog, u, v, rel.dense))
    assert ea.evaluate(prog, u, v, coo) == pytest.approx(1 * 3 + 2 * 4 + 3 * 2)


def test_index_array_is_the_relation_src_e_eq_i() -> None:
    src = np.array([2, 0, 2, 1])
    rel = relation_argument("src", src, [4, 3])
    assert rel.dense.tolist() == (np.arange(3)[None, :] == src[:, None]).tolist()
    prog = ea.parse(EDGES)
    x = np.array([1.0, -2.0, 5.0])
    dst = np.array([0, 1, 1, 2])
    want = float(np.sum((x[src] - x[dst]) ** 2))
    assert ea.evaluate(prog, x, src, dst) == pytest.approx(want)
    assert ea.compile(prog)(x, src, dst) == pytest.approx(want)
    assert ea.compile(prog)(x, src=src, dst=dst) == pytest.approx(want)


@pytest.mark.parametrize("run", ["evaluate", "compiled"])
def test_bad_relation_arguments_name_the_parameter(run: str) -> None:
    lap, edges = ea.parse(LAP), ea.parse(EDGES)
    call = ea.evaluate if run == "evaluate" else (lambda p, *a: ea.compile(p)(*a))
    x = np.zeros(5)
    with pytest.raises(ShapeError, match="'M'"):
        call(lap, x, _relation(6, 0.3, 0))
    weights = sp.random_array((5, 5), density=0.5, rng=0, format="csr") * 3.5
    with pytest.raises(ArgumentTypeError, match="'M'.*0/1"):
        call(lap, x, weights)
    src, dst = np.array([0, 1, 4]), np.array([1, 2, 3])
    with pytest.raises(ArgumentTypeError, match="'src'.*integers"):
        call(edges, x, src.astype(float), dst)
    with pytest.raises(ShapeError, match="'dst' holds -1.*do not wrap"):
        call(edges, x, src, np.array([1, -1, 3]))
    with pytest.raises(ShapeError, match="'src' holds 5, outside 0 .. 4"):
        call(edges, x, np.array([0, 5, 1]), dst)
    with pytest.raises(ShapeError, match="'dst'"):
        call(edges, x, src, np.array([1, 2]))
    with pytest.raises(ArgumentTypeError, match="'M'.*boolean or 0/1"):
        call(lap, x, "not a relation")
    with pytest.raises(ArgumentTypeError, match="'M'"):
        call(lap, x, np.full((5, 5), 2.5))


def test_index_array_syntax_errors() -> None:
    with pytest.raises(ProgramError, match="idx\\[E, N\\]"):
        ea.parse("def f(x: [N], s: idx[E]):\n    return Sum[e: E](x[s[e]])\n")
    with pytest.raises(ProgramError, match="only inside an index"):
        ea.parse("def f(x: [N], s: idx[E, N]):\n    return Sum[e: E](s[e])\n")


def test_an_index_array_read_is_a_sum_against_its_relation() -> None:
    prog = ea.parse(EDGES)
    text = str(prog)
    assert "src: rel[E, N]" in text and "src[e, src_at1] * x[src_at1]" in text


# --- compiled code vs the interpreter, sparse vs dense --------------------------------------


@pytest.mark.parametrize("src", [LAP, BIL, GCN, ATT, DEG], ids=["lap", "bil", "gcn", "att", "deg"])
def test_sparse_plans_match_interpreter_and_dense(src: str) -> None:
    prog = ea.parse(src)
    rng = np.random.default_rng(1)
    args = _args(src, rng)
    dense = _dense(args)
    want = ea.evaluate(prog, *dense)
    _close(ea.compile(prog)(*args), want)
    wrt = tuple(p.name for p in prog.params if p.kind == "tensor")
    g = ea.grad(prog, wrt=wrt)
    _close(g(*args), g(*dense))
    naive = ea.grad(prog, wrt=wrt, optimize=False)
    _close(naive(*args), g(*dense))


@pytest.mark.parametrize("src", [LAP, BIL, GCN, ATT, DEG], ids=["lap", "bil", "gcn", "att", "deg"])
def test_sparse_lowering_runs_by_members(src: str) -> None:
    """Every sum over the relation runs as gathers and segment sums: no dense mask."""
    prog = ea.parse(src)
    wrt = tuple(p.name for p in prog.params if p.kind == "tensor")
    rel = next(p.name for p in prog.params if p.kind == "relation")
    for p in (prog, ea.grad(prog, wrt=wrt).program):
        low = lower_program(p, sparse={rel})
        kinds = set(low.plan.kinds())
        assert kinds & {"relation-gather", "segment-sum"}
        assert f"{rel}.dense" not in low.source
        assert "dense-relation" not in {d.kind for d in low.decisions}


def test_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(2)
    for src in (LAP, ATT, MESH):
        prog = ea.parse(src)
        if src is MESH:
            v, e = 30, 80
            a = rng.integers(0, v, e)  # no self-edge: l = 0 there, sqrt'(0) * 0 is nan (IEEE)
            args = (rng.standard_normal((v, 2)), a, (a + rng.integers(1, v, e)) % v, 0.5)
        else:
            args = _args(src, rng, 30)
        f = ea.compile(prog)
        name = prog.params[0].name
        grad = ea.grad(prog, wrt=name)(*args)
        x0 = args[0]
        for _ in range(4):
            k = tuple(int(rng.integers(0, n)) for n in x0.shape)
            h = 1e-6
            xp, xm = x0.copy(), x0.copy()
            xp[k] += h
            xm[k] -= h
            fd = (f(xp, *args[1:]) - f(xm, *args[1:])) / (2 * h)
            assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_adjoint_identity_of_a_sparse_product() -> None:
    prog = ea.parse("""
def gz(H: [N, F], A: rel[N, N]):
    Z[i: N, f: F] = Sum[j: N](A[i, j] * H[j, f])
    return Z
""")
    rng = np.random.default_rng(3)
    n, f = 50, 4
    a = _relation(n, 0.08, 5)
    h, hdot, ybar = (rng.standard_normal((n, f)) for _ in range(3))
    jv = ea.compile(ea.jvp(prog, wrt="H"))(h, a, hdot)
    vj = ea.compile(ea.vjp(prog, wrt="H"))(h, a, ybar)
    assert np.sum(ybar * jv) == pytest.approx(np.sum(vj * hdot), rel=1e-12)
    np.testing.assert_allclose(vj, a.T @ ybar, rtol=1e-12)


def test_edge_list_gradient_is_a_scatter_add() -> None:
    prog = ea.parse(EDGES)
    rng = np.random.default_rng(4)
    n, e = 100, 700
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    x = rng.standard_normal(n)
    d = x[src] - x[dst]
    want = 2 * (np.bincount(src, d, n) - np.bincount(dst, d, n))
    np.testing.assert_allclose(ea.grad(prog, wrt="x")(x, src, dst), want, rtol=1e-12)


def test_dense_cheaper_relation_runs_dense() -> None:
    full = SparseRelation((8, 8), np.nonzero(np.ones((8, 8), bool)))
    assert prefer_dense(full)
    assert not prefer_dense(relation_argument("M", _relation(400, 0.01, 0), [400, 400]))
    prog = ea.parse(LAP)
    x = np.random.default_rng(5).standard_normal(8)
    assert ea.compile(prog)(x, sp.csr_array(np.ones((8, 8)))) == pytest.approx(
        ea.evaluate(prog, x, np.ones((8, 8), bool)))


# --- counting: O(N + nnz) plans ------------------------------------------------------------


def _worst(plan, sizes) -> float:
    return max(max(float(k.space.evaluate(sizes)), float(k.alloc.evaluate(sizes)))
               for k in plan.kernels)


@pytest.mark.parametrize("src", [LAP, GCN, ATT], ids=["lap", "gcn", "att"])
def test_sparse_plans_allocate_o_n_plus_nnz(src: str) -> None:
    prog = ea.parse(src)
    wrt = tuple(p.name for p in prog.params if p.kind == "tensor")
    rel = next(p.name for p in prog.params if p.kind == "relation")
    g = ea.grad(prog, wrt=wrt).program
    n = 10**6
    sizes = {"N": n, f"nnz_{rel}": 8 * n, "F": 8, "G": 8, "D": 8}
    sparse_plan = lower_program(g, sparse={rel}).plan
    dense_plan = lower_program(g).plan
    # Every kernel visits and allocates at most (features)² · (N + nnz) elements; the dense
    # plan of the same program visits N² (the check can fail).
    assert _worst(sparse_plan, sizes) <= 64 * 9 * n
    assert _worst(dense_plan, sizes) >= n * n
    for k in sparse_plan.kernels:
        assert k.alloc.degree() <= 1 + (src is not LAP) * 2  # N, nnz times feature sizes


def test_gcn_runs_sparse_products_without_member_by_feature_arrays() -> None:
    g = ea.grad(ea.parse(GCN), wrt=("H", "W")).program
    low = lower_program(g, sparse={"A"})
    # Z = (Â H) W, H_bar = (Âᵀ Z_bar) Wᵀ, W_bar = Hᵀ (Âᵀ Z_bar): the gradients share Âᵀ Z_bar
    assert low.source.count("A.spmm(") == 2 and "A.gather(" not in low.source
    assert low.source.count("A.spmm(None, Z_bar, 0, 1, 0)") == 1
    # no operand of a sparse product is a transposed (copied) array
    assert ".T, " not in low.source and "A.spmm(None, _t1, 1" not in low.source
    n = 10**5
    sizes = {"N": n, "nnz_A": 10 * n, "F": 64, "G": 64}
    assert max(float(k.alloc.evaluate(sizes)) for k in low.plan.kernels) <= n * 64


def test_the_narrower_sparse_product_runs_first() -> None:
    """``Σ_k Â[k, i] Σ_l Z̄[k, l] W[j, l]``: the sparse product on the narrower operand (F
    columns after ``Z̄ Wᵀ`` when F < G, else Z̄ itself); the plan prices what runs."""
    g = ea.grad(ea.parse(GCN), wrt=("H", "W")).program
    rng = np.random.default_rng(5)
    a = _relation(30, 0.1, 2)
    for f_, g_ in ((2, 9), (9, 2)):
        sizes = {"N": 30, "F": f_, "G": g_, "nnz_A": a.nnz}
        low = lower_program(g, sizes, sparse={"A"})
        h_bar = next(line for line in low.source.splitlines() if line.startswith("    H_bar"))
        spmm_widths = sorted(int(k.space.evaluate(sizes)) // a.nnz for k in low.plan.kernels
                             if k.kind == "segment-sum")
        # Z: Â H or Â (H W), min(F, G) columns; W_bar: Âᵀ Z̄, G columns
        if f_ < g_:  # H_bar = Âᵀ (Z̄ Wᵀ): F columns
            assert "A.spmm(" in h_bar and spmm_widths == [f_, f_, g_]
        else:  # H_bar = (Âᵀ Z̄) Wᵀ, sharing Âᵀ Z̄ with W_bar
            assert "A.spmm(" not in h_bar and spmm_widths == [g_, g_]
        h, w = rng.standard_normal((30, f_)), rng.standard_normal((f_, g_))
        _close(ea.grad(ea.parse(GCN), wrt=("H", "W"))(h, w, a),
               ea.grad(ea.parse(GCN), wrt=("H", "W"))(h, w, a.toarray() > 0))


def test_edge_list_plan_is_linear() -> None:
    g = ea.grad(ea.parse(EDGES), wrt="x").program
    plan = lower_program(g, sparse={"src", "dst"}).plan
    for k in plan.kernels:
        assert k.space.degree() <= 1 and k.alloc.degree() <= 1, str(k)


def test_prices_use_the_member_count() -> None:
    g = ea.grad(ea.parse(LAP), wrt="x").program
    sparse = program_cost(g, {"N": 1000, "nnz_M": 8000})
    dense = program_cost(g, {"N": 1000})
    assert "nnz_M" in sparse.total_poly.size_names() and sparse.total_poly.degree() == 1
    assert dense.total_poly.degree() == 2
    rep = ea.optimize(ea.vjp(ea.parse(BIL), wrt="u"), sizes={"N": 10**5, "nnz_M": 8 * 10**5})
    assert "nnz_M" in str(rep.report)


@pytest.mark.parametrize("src", [LAP, GCN], ids=["lap", "gcn"])
def test_measured_allocations_are_o_n_plus_nnz(src: str) -> None:
    """Each line of the generated gradient, run on a sparse relation, allocates O(N + nnz)
    bytes (measured with tracemalloc), far below the N² of a dense mask."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from plan_probe import line_peaks

    from eqsat_ad.backend.numpy import _load

    prog = ea.parse(src)
    wrt = tuple(p.name for p in prog.params if p.kind == "tensor")
    rel_name = next(p.name for p in prog.params if p.kind == "relation")
    g = ea.grad(prog, wrt=wrt).program
    n = 3000
    rng = np.random.default_rng(6)
    rel = SparseRelation.of(_relation(n, 8 / n, 7))
    args = _args(src, rng, n)[:-1] + (rel,)
    fn = _load(lower_program(g, sparse={rel_name}))
    peaks = line_peaks(fn, args)
    width = 5 if src is GCN else 1  # features per row
    bound = 8 * 4 * width * (n + rel.nnz) + 65536
    assert peaks and max(peaks.values()) <= bound < n * n  # a dense boolean mask is n² bytes
