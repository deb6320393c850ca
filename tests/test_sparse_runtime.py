"""The runtime of sparse relations (``SparseRelation``: CSR row offsets, range checks) and the
semantics at its edges: rows without members, priced equals run per generated line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eqsat_ad as ea
from eqsat_ad.backend.numpy import _load
from eqsat_ad.ir.errors import ArgumentTypeError, ShapeError
from eqsat_ad.ir.relations import relation_argument
from eqsat_ad.plan.lower import lower_program

sys.path.insert(0, str(Path(__file__).parent))
from plan_probe import line_peaks  # noqa: E402
from test_sparse import ATT, DEG, EDGES, GCN, LAP, _args, _relation  # noqa: E402

# rows 0, 3 and 6 (the last) have no members
DENSE = np.array([
    [0, 0, 0, 0, 0],
    [1, 0, 1, 0, 0],
    [0, 0, 0, 0, 1],
    [0, 0, 0, 0, 0],
    [1, 1, 1, 1, 1],
    [0, 1, 0, 1, 1],
    [0, 0, 0, 0, 0],
], dtype=bool)


def test_csr_rows_are_offsets_and_agree_with_coordinates() -> None:
    csr = sp.csr_array(DENSE.astype(float))
    by_rows = relation_argument("M", csr, [7, 5])
    by_coords = relation_argument("M", csr.tocoo(), [7, 5])
    assert by_rows.indptr is not None and by_coords.indptr is None
    assert by_rows._coords[0] is None  # nothing has read the rows yet
    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal(7), rng.standard_normal((7, 3))
    for x, which in ((x1, (0,)), (x2, (0, None)), (x2.T.copy(), (None, 0))):
        np.testing.assert_array_equal(by_rows.gather(x, which), by_coords.gather(x, which))
    assert by_rows._coords[0] is None
    vals1, vals2 = rng.standard_normal(csr.nnz), rng.standard_normal((csr.nnz, 3))
    for vals, axis in ((vals1, 0), (vals2, 0), (vals2.T.copy(), 1)):
        got = by_rows.segment_sum(vals, axis, 0)
        np.testing.assert_allclose(got, by_coords.segment_sum(vals, axis, 0), atol=1e-14)
        assert not np.take(got, [0, 3, 6], axis=axis).any()  # empty rows are 0
    w = rng.standard_normal(csr.nnz)
    x5 = rng.standard_normal((5, 3))
    np.testing.assert_allclose(by_rows.spmm(w, x5, 0, 0, 1), by_coords.spmm(w, x5, 0, 0, 1))
    np.testing.assert_array_equal(by_rows.coords[0], by_coords.coords[0])
    assert by_rows.dense.tolist() == DENSE.tolist()
    empty = relation_argument("M", sp.csr_array((4, 4)), [4, 4])
    assert empty.segment_sum(np.zeros(0), 0, 0).tolist() == [0.0] * 4


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_index_range_check_in_one_pass_for_every_integer_type(dtype) -> None:
    ok = np.array([0, 3, 2], dtype=dtype)
    assert relation_argument("s", ok, [3, 4]).coords[1].tolist() == [0, 3, 2]
    with pytest.raises(ShapeError, match="'s' holds 4, outside 0 .. 3"):
        relation_argument("s", np.array([0, 4, 2], dtype=dtype), [3, 4])
    if np.dtype(dtype).kind == "i":
        with pytest.raises(ShapeError, match="'s' holds -1.*do not wrap around"):
            relation_argument("s", np.array([0, -1, 2], dtype=dtype), [3, 4])
    with pytest.raises(ArgumentTypeError, match="'s'.*integers"):
        relation_argument("s", np.array([True, False, True]), [3, 4])
    with pytest.raises(ShapeError, match="'s'"):  # an index array of the wrong shape
        relation_argument("s", np.zeros((3, 2), dtype=dtype), [3, 4])


@pytest.mark.parametrize("storage", ["dense", "csr", "coo"])
def test_rows_without_members_agree_with_the_interpreter(storage: str) -> None:
    """``o[i] = Σ_j [M] e v / z[i]`` at a row with no member is a strong zero divided by
    ``z[i] = 0``: 0, as the interpreter says (docs/semantics.md), not 0 / 0, in the forward
    program and in its gradient, dense or sparse."""
    prog = ea.parse(ATT)
    rng = np.random.default_rng(2)
    n = DENSE.shape[0]
    m = np.zeros((n, n), dtype=bool)
    m[:, :5] = DENSE
    q, k, v = rng.standard_normal((n, 2)), rng.standard_normal((n, 2)), rng.standard_normal(n)
    rel = {"dense": m, "csr": sp.csr_array(m.astype(float)), "coo": sp.coo_array(m)}[storage]
    want = ea.evaluate(prog, q, k, v, m)
    assert np.isfinite(want)
    assert ea.compile(prog)(q, k, v, rel) == pytest.approx(want, rel=1e-12)
    vjp = ea.vjp(prog, wrt=("q", "k", "v"))
    wants = ea.evaluate(vjp, q, k, v, m, 1.0)
    got = ea.grad(prog, wrt=("q", "k", "v"))(q, k, v, rel)
    for a, b in zip(got, wants, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("src", [LAP, GCN, ATT, DEG, EDGES],
                         ids=["lap", "gcn", "att", "deg", "edges"])
def test_sparse_lines_allocate_what_the_plan_lists(src: str) -> None:
    """The probe of tests/test_plan.py on sparse plans: every generated line allocates at most
    what its kernels are priced at (32 bytes per planned element, as there)."""
    prog = ea.parse(src)
    wrt = tuple(p.name for p in prog.params if p.kind == "tensor")
    rels = frozenset(p.name for p in prog.params if p.kind == "relation")
    g = ea.grad(prog, wrt=wrt).program
    n, rng = 400, np.random.default_rng(3)
    if src is EDGES:
        e = 8 * n
        args = (rng.standard_normal(n), rng.integers(0, n, e), rng.integers(0, n, e))
        sizes = {"N": n, "E": e, "nnz_src": e, "nnz_dst": e}
    else:
        rel = _relation(n, 8 / n, 4)
        if src is ATT:  # every row attends to itself (no empty row: no strict rerun)
            rel = sp.csr_array(((rel + sp.eye_array(n)) > 0).astype(float))
        args = _args(src, rng, n)[:-1] + (rel,)
        sizes = {"N": n, "F": 5, "G": 3, "D": 3, f"nnz_{next(iter(rels))}": args[-1].nnz}
    low = lower_program(g, sparse=rels)
    fn = _load(low)
    bound = [relation_argument(p.name, a, [None] * (p.rank - 1) + [n])
             if p.kind == "relation" else a for p, a in zip(g.params, args, strict=True)]
    peaks = line_peaks(fn, bound)
    lines = low.source.splitlines()
    by_line: dict[int, int] = {}
    for k in low.plan.kernels:
        by_line[k.line] = by_line.get(k.line, 0) + int(k.alloc.evaluate(sizes))
    assert peaks
    for line, measured in peaks.items():
        assert measured <= 32 * by_line.get(line, 0) + 16384, (lines[line - 1], measured)


TWO = {
    "intersection": """
def f(x: [N], M: rel[N, N], P: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * P[i, j] * (x[i] - x[j]) ** 2)
""",
    "transposed": """
def f(x: [N], M: rel[N, N], P: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * P[j, i] * x[i] * exp(x[j]))
""",
    "chain": """
def f(x: [N], M: rel[N, N], P: rel[N, N]):
    return Sum[i: N, j: N, k: N](M[i, j] * P[j, k] * x[i] * sin(x[k]))
""",
    "chain-output": """
def f(x: [N], M: rel[N, N], P: rel[N, N]):
    y[i: N] = Sum[j: N, k: N](M[i, j] * P[j, k] * x[k] * x[j])
    return Sum[i: N](y[i] ** 2)
""",
}


@pytest.mark.parametrize("name", list(TWO))
@pytest.mark.parametrize("storage", ["sparse-sparse", "sparse-dense"])
def test_two_relations_in_one_product_run_by_members(name: str, storage: str) -> None:
    """Two relations in one product: the same indices (an intersection: the second is a mask
    at the first's members) or a chain (the indices only one of them reads summed first by its
    members); O(nnz) kernels, values as the interpreter's and the dense plan's."""
    prog = ea.parse(TWO[name])
    n, rng = 30, np.random.default_rng(7)
    x = rng.standard_normal(n)
    m, p = _relation(n, 0.15, 1), _relation(n, 0.3, 2)
    if name != "chain":  # (the chain's M also meets P in its dense-relation form)
        p = (p + m.T + m > 0).astype(float).tocsr()  # so that they share members
    pa = p if storage == "sparse-sparse" else p.toarray() > 0
    dense = (m.toarray() > 0, p.toarray() > 0)
    want = ea.evaluate(prog, x, *dense)
    assert ea.compile(prog)(x, m, pa) == pytest.approx(want, rel=1e-10, abs=1e-12)
    g = ea.grad(prog, wrt="x")
    np.testing.assert_allclose(g(x, m, pa), g(x, *dense), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g(x, m, pa), ea.evaluate(ea.vjp(prog, wrt="x"), x, *dense, 1.0),
                               rtol=1e-10, atol=1e-12)
    if storage == "sparse-sparse":
        low = lower_program(g.program, sparse={"M", "P"})
        assert ".dense" not in low.source, low.source
        big = 10**6
        sizes = {"N": big, "nnz_M": 8 * big, "nnz_P": 8 * big}
        assert all(k.space.degree() <= 1 and float(k.space.evaluate(sizes)) <= 64 * big
                   for k in low.plan.kernels), [str(k) for k in low.plan.kernels]


SHIFTED = {
    "relation": """
def f(x: [N], y: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[i + 1, j] * x[i] * y[j] ** 2)
""",
    "reversed": """
def f(x: [N], y: [N], M: rel[N, N]):
    z[i: N] = Sum[j: N](M[N - 1 - i, j] * sin(y[j]) * x[i])
    return Sum[i: N](z[i] ** 2)
""",
    "strided": """
def f(x: [N], y: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[2 * i, j] * exp(x[i]) * y[j])
""",
    "read": """
def f(x: [N], y: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * x[i + 1] * y[j] * x[j - 2])
""",
}


@pytest.mark.parametrize("name", list(SHIFTED))
def test_shifted_relation_indices_and_reads_run_by_members(name: str) -> None:
    """``M[i + 1, j]``, ``M[N - 1 - i, j]``, ``M[2i, j]``: the members solved for the plain
    indices (``M.shifted``, members outside the ranges dropped); ``x[i + 1]`` at the members:
    a gather with reads outside ``x`` 0 (``M.gather_at``). Values as the interpreter's."""
    prog = ea.parse(SHIFTED[name])
    n, rng = 25, np.random.default_rng(8)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    m = _relation(n, 0.2, 3)
    dense = m.toarray() > 0
    want = ea.evaluate(prog, x, y, dense)
    assert ea.compile(prog)(x, y, m) == pytest.approx(want, rel=1e-10, abs=1e-12)
    vjp = ea.vjp(prog, wrt=("x", "y"))
    g = ea.grad(prog, wrt=("x", "y"))
    for a, b in zip(g(x, y, m), ea.evaluate(vjp, x, y, dense, 1.0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    low = lower_program(prog, sparse={"M"})
    assert ".dense" not in low.source, low.source
    assert ("M.shifted(" if name != "read" else "M.gather_at(") in low.source
    # the gradient too: a shifted read's adjoint reads the relation shifted, written to the
    # sub-range of the output where the shift stays inside (x_bar[1:N] += ...)
    low = lower_program(g.program, sparse={"M"})
    assert ".dense" not in low.source, low.source


def test_shifted_members_and_reads_at_the_edges() -> None:
    rel = relation_argument("M", sp.csr_array(DENSE.astype(float)), [7, 5])
    s = rel.shifted(((1, 1, 1), None), (7, 5))  # (i + 1, j) in M
    want = np.zeros((7, 5), dtype=bool)
    want[:6] = DENSE[1:]
    assert s.dense.tolist() == want.tolist()
    s = rel.shifted(((-1, 1, 6), (2, 1, 0)), (7, 3))  # (6 - i, 2j) in M: reversed, even columns
    want = DENSE[::-1][:, ::2]
    assert s.dense.tolist() == want.tolist()
    assert np.all(np.diff(np.ravel_multi_index(s.coords, s.shape)) > 0)  # row-major again
    x = np.arange(5.0) + 1
    got = rel.gather_at(x, ((1, 1, 1, 2),))  # x[j + 2], 0 past the end
    cols = rel.coords[1]
    assert got.tolist() == [x[c + 2] if c + 2 < 5 else 0.0 for c in cols]


_IDX_I = ["i", "i", "i + 1", "i - 1", "N - 1 - i", "2 * i"]
_IDX_J = ["j", "j", "j + 1", "j - 2", "N - 1 - j"]
_FACTORS = ["x[{i}]", "y[{j}]", "A[i, j]", "A[j, i]", "exp(x[{j}])", "sin(y[{i}] * x[{j}])",
            "B[{j}, f]"]


@st.composite
def relation_programs(draw: st.DrawFn) -> str:
    """Sums under one or two relations read at shifted, reversed or strided indices, with
    factors read the same ways; the sum kept over i or taken whole."""
    def pick(xs: list[str]) -> str:
        return draw(st.sampled_from(xs))

    rel = f"M[{pick(_IDX_I)}, {pick(_IDX_J)}]"
    second = pick(["", "", " * P[i, j]", " * P[j, i]", " * P[j, k]"])
    factors = [pick(_FACTORS).format(i=pick(_IDX_I), j=pick(_IDX_J))
               for _ in range(draw(st.integers(1, 3)))]
    if second == " * P[j, k]":
        factors.append(f"cos(x[{pick(['k', 'k + 1'])}])")
    sums = "j: N" + (", k: N" if "k" in second else "") + (
        ", f: 3" if any("B[" in f for f in factors) else "")
    body = f"{rel}{second} * {' * '.join(factors)}"
    if draw(st.booleans()):
        return (f"def f(x: [N], y: [N], A: [N, N], B: [N, 3], M: rel[N, N], P: rel[N, N]):\n"
                f"    z[i: N] = Sum[{sums}]({body})\n"
                f"    return Sum[i: N](tanh(z[i]) * x[i])\n")
    return (f"def f(x: [N], y: [N], A: [N, N], B: [N, 3], M: rel[N, N], P: rel[N, N]):\n"
            f"    return Sum[i: N, {sums}]({body})\n")


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(src=relation_programs(), seed=st.integers(0, 2**16))
def test_random_relation_programs_by_members_match_the_interpreter(src: str, seed: int
                                                                   ) -> None:
    """Programs built from relation reads at shifted / reversed / strided indices, a second
    relation (intersection or chain) and factors read the same ways: the compiled program and
    its optimized gradient, given the relations as SciPy matrices, compute what the
    interpreter computes from the dense boolean arrays."""
    prog = ea.parse(src)
    n, rng = 13, np.random.default_rng(seed)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, 3))
    m, p = _relation(n, 0.08, seed % 97), _relation(n, 0.1, seed % 89 + 1)
    dense = (m.toarray() > 0, p.toarray() > 0)
    want = ea.evaluate(prog, x, y, a, b, *dense)
    assert ea.compile(prog)(x, y, a, b, m, p) == pytest.approx(want, rel=1e-9, abs=1e-9)
    g = ea.grad(prog, wrt=("x", "y"))
    wants = ea.evaluate(ea.vjp(prog, wrt=("x", "y")), x, y, a, b, *dense, 1.0)
    for got, w in zip(g(x, y, a, b, m, p), wants, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-9, atol=1e-9)
