"""Intermediates whose lives do not overlap share one kept array (backend/fused/storage.py,
``shared_buffers``), and a loop nest whose input dies in it is written over that input
(backend/fused/inplace.py): fewer arrays in the caches and in memory, the same values."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.backend.fused import program as program_module
from eqsat_ad.backend.fused.inplace import point_reads, read_through_output
from eqsat_ad.backend.fused.storage import shared_buffers
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")


def _kept(name: str, shape: str = "N, K") -> list[str]:
    return [f"    {name} = _tmp.get({name!r})",
            f"    if {name} is None or {name}.shape != ({shape},):",
            f"        {name} = _tmp[{name!r}] = np.empty(({shape},), dtype=F)"]


def test_an_array_no_longer_read_lends_its_memory_to_the_next_of_its_shape() -> None:
    run = ["def run(x, N, K, _buf, _tmp, _box, _fin):",
           *_kept("a"), "    _k_a(a, x, N, K)",
           *_kept("b"), "    _k_b(b, a, N, K)",  # reads a: a is live at b's binding
           *_kept("c", "K, N"), "    _k_c(c, b, N, K)",  # another shape: its own array
           *_kept("d"), "    _k_d(d, b, c, N, K)",  # a's last use is before d's binding
           "    # e: a comment naming a is no use",
           *_kept("e"), "    _k_e(e, d, N, K)",  # b's last use (d's kernel) is before e
           "    return (e,), False"]
    out = shared_buffers(run)
    text = "\n".join(out)
    assert "    d = _tmp.get('a')  # (a's array: no longer read)" in out
    assert "        d = _tmp['a'] = np.empty((N, K,), dtype=F)" in out
    assert "    e = _tmp.get('b')  # (b's array: no longer read)" in out
    for own in ("a", "b", "c"):
        assert f"    {own} = _tmp.get({own!r})" in out
    assert "_tmp['d']" not in text and "_tmp['e']" not in text
    assert len(out) == len(run)
    # the shared array is shared in turn: f takes a's (now d's) array once d is dead
    longer = [*run[:-1], *_kept("f"), "    _k_f(f, e, N, K)", "    return (f,), False"]
    assert "    f = _tmp.get('a')  # (a's array: no longer read)" in shared_buffers(longer)


def test_overlapping_lives_and_lone_arrays_keep_their_own() -> None:
    run = ["def run(x, N, K, _buf, _tmp, _box, _fin):",
           *_kept("a"), "    _k_a(a, x, N, K)",
           *_kept("b"), "    _k_b(b, x, N, K)",
           "    _r = _np_c(_fin, x, a, b)",  # a read after b's binding
           "    return (_r,), False"]
    assert shared_buffers(run) == run
    assert shared_buffers(run[:4]) == run[:4]


MLP = """
def mlp(X: [B, D], W1: [H, D], b1: [H], W2: [K, H], Y: [B, K]):
    hid[n: B, j: H] = tanh(Sum[d: D](X[n, d] * W1[j, d]) + b1[j])
    z[n: B, c: K] = Sum[j: H](hid[n, j] * W2[c, j])
    return Sum[n: B, c: K]((z[n, c] - Y[n, c]) ** 2)
"""


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlps_gradient_shares_its_arrays_and_keeps_the_interpreters_values(
        monkeypatch: pytest.MonkeyPatch, dtype: type, in_place: bool) -> None:
    source = MLP
    if not in_place:  # loop nests never written over their inputs (a program of its own name:
        # compiled programs are kept per program)
        monkeypatch.setattr(program_module, "in_place", lambda *a: (a[-2], a[-1], None))
        source = MLP.replace("def mlp(", "def mlp_not_in_place(")
    # (the program as written: its z and z_bar, the subject here, whatever extraction prefers)
    g = ea.grad(ea.parse(source), wrt=("W1", "b1", "W2"), backend="numba", optimize=False)
    if in_place:  # tanh over its product's array, z_bar over z's
        assert "    hid = _p_hid  # (in place: _p_hid is read at hid's points only)" in g.source
        assert "    z_bar = z  # (in place: z is read at z_bar's points only)" in g.source
        assert "    hid_bar = _tmp.get('hid_bar')" in g.source  # (hid's array is live)
    else:  # hid's product (_p_hid), last read by hid's loop nest, lends its array to hid_bar
        assert "    hid_bar = _tmp.get('_p_hid')  # (_p_hid's array: no longer read)" in g.source
    rng = np.random.default_rng(3)
    sizes = {"B": 7, "D": 5, "H": 9, "K": 4}
    close = {"rtol": 2e-4, "atol": 1e-5} if dtype == np.float32 else \
        {"rtol": 1e-10, "atol": 1e-12}
    for k in range(4):  # repeated calls: the kept arrays are reused, their old values unread
        args = {"X": rng.standard_normal((sizes["B"], sizes["D"])),
                "W1": rng.standard_normal((sizes["H"], sizes["D"])) * (k + 1),
                "b1": rng.standard_normal(sizes["H"]),
                "W2": rng.standard_normal((sizes["K"], sizes["H"])),
                "Y": rng.standard_normal((sizes["B"], sizes["K"]))}
        if k == 2:  # an inf: hid_bar's product falls back to its NumPy part, a fresh array
            args["W2"][1, 3] = np.inf
        args = {n: v.astype(dtype) for n, v in args.items()}
        got = g(**args)
        with np.errstate(all="ignore"):  # (the interpreter's inf - inf)
            want = evaluate(g.program, **args)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == dtype
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_allclose(a, b, **close)


# --- a loop nest written over the array it reads (backend/fused/inplace.py) ---------------------

KERNEL = '''@nb.njit(cache=True, error_model="numpy", no_cfunc_wrapper=True)
def _k_t_bar(_out, h, h_bar, N, K):
    _cst0 = F(1)
    for i in range(N):
        for j in range(K):
            _out[i, np.uintp(j)] = (h_bar[i, j] * (_cst0 - (h[i, j] * h[i, j])))'''


def test_a_kernel_reads_the_array_it_overwrites_through_its_output() -> None:
    code, reads = read_through_output(KERNEL, ["h", "h_bar"], "h_bar")
    assert "def _k_t_bar(_out, h, N, K):" in code
    assert "(_out[i, j] * (_cst0 - (h[i, j] * h[i, j])))" in code and "h_bar" not in code
    assert reads == ["h"]
    # another use of the array than indexing it: not rewritten
    assert read_through_output(KERNEL.replace("_cst0 = F(1)", "_cst0 = F(h_bar.size)"),
                               ["h", "h_bar"], "h_bar") is None
    assert read_through_output(KERNEL, ["h", "h_bar"], "x") is None


def test_only_reads_at_the_statements_own_point_qualify() -> None:
    prog = ea.parse("""
def f(a: [N, M], b: [N, M], c: [M, N]):
    t[i: N, j: M] = a[i, j] * b[i, j] + b[i, j]
    u[i: N, j: M] = a[i, j] * c[j, i]
    v[i: N, j: M] = a[i, j] * b[i, j + 1]
    w[i: N, j: M] = a[i, j] * Sum[k: M](b[i, k])
    return t, u, v, w
""")
    t, u, v, w = prog.statements
    assert point_reads(t) == {"a", "b"}
    assert point_reads(u) == {"a"}  # (c at a transposed point)
    assert point_reads(v) == {"a"}  # (b at a shifted point)
    assert point_reads(w) == frozenset()  # (a sum: its terms may be kept in the output's row)


def test_an_array_written_in_place_stays_its_holders_while_either_is_read() -> None:
    run = ["def run(x, N, K, _buf, _tmp, _box, _fin):",
           *_kept("a"), "    _k_a(a, x, N, K)",
           "    t = a  # (in place: a is read at t's points only)", "    _k_t(t, x, N, K)",
           *_kept("b"), "    _k_b(b, t, N, K)",  # a's array is still t's: b gets its own
           *_kept("c"), "    _k_c(c, b, N, K)",  # t is dead: c may take a's array
           "    return (c,), False"]
    out = shared_buffers(run)
    assert "    b = _tmp.get('b')" in out
    assert "    c = _tmp.get('a')  # (a's array: no longer read)" in out


def _mlp_np(X, W1, b1, W2, y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - y
    return 0.5 * np.sum(r * r)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlp_numpys_tanh_and_its_derivative_are_written_in_place(dtype: type) -> None:
    g = ea.grad(_mlp_np, wrt=("W1", "b1", "W2"), backend="numba")
    rng = np.random.default_rng(5)
    close = {"rtol": 2e-4, "atol": 1e-5} if dtype == np.float32 else \
        {"rtol": 1e-10, "atol": 1e-12}
    for k in range(4):
        args = {"X": rng.standard_normal((7, 5)), "W1": rng.standard_normal((5, 9)) * (k + 1),
                "b1": rng.standard_normal(9), "W2": rng.standard_normal((9, 4)),
                "y": rng.standard_normal((7, 4))}
        if k == 2:  # an inf: the products fall back to their NumPy parts (fresh arrays)
            args["X"][3, 1] = np.inf
        args = {n: v.astype(dtype) for n, v in args.items()}
        got = g(**args)
        with np.errstate(all="ignore"):
            want = evaluate(g.program, **args)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == dtype
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_allclose(a, b, **close)
    src = g.source
    assert "    h = _p_h  # (in place: _p_h is read at h's points only)" in src
    assert "    t_bar = h_bar  # (in place: h_bar is read at t_bar's points only)" in src
    assert "def _k_h(_out, b1, " in src and "_tanh((_out[i, j] + b1[j]))" in src


def test_an_output_is_never_written_over_a_kept_array() -> None:
    """``y = tanh(A @ B + c)`` returned: its loop nest reads the product's kept array at its
    own points only, but an output written over it would hand the caller an array the next
    call overwrites."""
    g = ea.compile(ea.parse("""
def f(A: [N, K], B: [K, M], c: [M]):
    y[i: N, j: M] = tanh(Sum[k: K](A[i, k] * B[k, j]) + c[j])
    return y
"""), backend="numba")
    assert "(in place" not in g.source and "_p_y = _tmp.get('_p_y')" in g.source
    rng = np.random.default_rng(9)
    A, B, c = rng.standard_normal((30, 20)), rng.standard_normal((20, 40)), rng.standard_normal(40)
    first = g(A, B, c)
    kept = first.copy()
    second = g(2 * A, B, c)
    np.testing.assert_array_equal(first, kept)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(second, np.tanh(2 * A @ B + c), rtol=1e-12)
