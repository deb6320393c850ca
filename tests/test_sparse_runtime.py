"""The runtime of sparse relations (``SparseRelation``: CSR row offsets, range checks) and the
semantics at its edges: rows without members, priced equals run per generated line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import eqsat_ad as ea
from eqsat_ad.backend.numpy import _load, lower_program
from eqsat_ad.ir.errors import ArgumentTypeError, ShapeError
from eqsat_ad.ir.relations import relation_argument

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
    [0, 1, 0, 0, 0],
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
