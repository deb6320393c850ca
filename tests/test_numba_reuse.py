"""A row sum's terms read back at the points of its row, statements over the rows alone run in
their sibling's kernel, and the guard's count inside the loop that reads an argument
(backend/fused/reuse.py, checks.py).

Softmax-like gradients (logsumexp, softmax cross-entropy) compute exp once per entry: into the
row sum's buffer, read back at the points; the values are the interpreter's (within rounding:
vmath's exp), in float64 and float32, at odd sizes, with nan and ±inf in the arguments."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import agree, kernel_text

import eqsat_ad as ea
from eqsat_ad.compiled import Compiled
from eqsat_ad.ir.interpreter import evaluate

pytest.importorskip("numba")

from eqsat_ad.backend.fused.checks import counted_in_loop  # noqa: E402
from eqsat_ad.backend.fused.reuse import (  # noqa: E402
    canonical,
    reused_terms,
    row_sibling,
)

LOGSUMEXP = """\
def logsumexp(x: [B, N], w: [B]):
    s[b: B] = log(Sum[n: N](exp(x[b, n])))
    return Sum[b: B](w[b] * s[b])
"""

# softmax cross-entropy as the NumPy front end writes it (the sweep's softmax_xent)
def softmax_xent(z, Y):
    lse = np.log(np.sum(np.exp(z), axis=1))
    return np.sum(lse) - np.sum(Y * z)


pytestmark = pytest.mark.usefixtures("numba_cache")


def _logsumexp() -> Compiled:
    g = ea.grad(ea.parse(LOGSUMEXP), ("x", "w"), backend="numba")
    assert g.compiled.schedule.placement == {"x_bar": "loop", "w_bar": "loop"}, \
        g.compiled.schedule.why
    return g


def test_logsumexp_computes_each_exp_once_in_one_kernel() -> None:
    g = _logsumexp()
    kernel = kernel_text(g.source, "_k_x_bar")
    assert kernel.startswith("def _k_x_bar(_out0, _out1, ")  # w_bar in x_bar's kernel
    assert kernel.count("_exp(") == 1 and kernel.count("_pairwise(") == 1
    # the exps stored in x_bar's row as they are computed, scaled there in cache
    assert "np.log(" in kernel and "_out0[i, np.uintp(j)]" in kernel
    assert "_terms_" not in kernel and "_pairwise(_out0[i], 0, N," in kernel


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", [(1, 1), (3, 7), (2, 128), (5, 129), (4, 300), (3, 1000)])
def test_logsumexp_gradient_is_the_interpreters(dtype: type, sizes: tuple[int, int]) -> None:
    g = _logsumexp()
    b, n = sizes
    rng = np.random.default_rng(b * n)
    x = rng.standard_normal((b, n)).astype(dtype)
    w = rng.standard_normal(b).astype(dtype)
    got = g(x=x, w=w)
    assert all(np.asarray(v).dtype == dtype for v in got)
    want = evaluate(g.program, x=x.astype(np.float64), w=w.astype(np.float64))
    agree(got, want, 1e-12 if dtype == np.float64 else 2e-5)
    # the NumPy backend's values within rounding (vmath's exp against np.exp)
    agree(got, ea.grad(ea.parse(LOGSUMEXP), ("x", "w"))(x=x, w=w),
           1e-12 if dtype == np.float64 else 2e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logsumexp_gradient_with_nonfinite_arguments(dtype: type) -> None:
    g = _logsumexp()
    b, n = 7, 150
    rng = np.random.default_rng(5)
    x = rng.standard_normal((b, n)).astype(dtype)
    w = rng.standard_normal(b).astype(dtype)
    x[0, 3] = np.nan          # a nan row
    x[1, 0] = np.inf          # exp(inf) / inf: nan in the row, w_bar inf
    x[2, :] = -np.inf         # every exp 0: 0 / 0
    x[3, n - 1] = 800.0       # exp overflows
    x[4, 7] = -800.0          # exp underflows to 0 at one point
    w[5] = np.inf             # inf times the softmax row
    w[6] = 0.0
    x[6, 2] = np.inf          # 0 * nan
    with np.errstate(all="ignore"):
        got = g(x=x, w=w)
        want = evaluate(g.program, x=x.astype(np.float64), w=w.astype(np.float64))
    if dtype == np.float32:  # (800 overflows float32's exp at the float64 program's 800 too)
        want = tuple(np.asarray(v, dtype=np.float32) for v in want)
    agree(got, want, 1e-12 if dtype == np.float64 else 2e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", [(1, 1), (5, 3), (9, 256), (3, 257)])
def test_softmax_xent_reads_its_exps_back(dtype: type, sizes: tuple[int, int]) -> None:
    g = ea.grad(softmax_xent, backend="numba")
    b, k = sizes
    rng = np.random.default_rng(k)
    z = rng.standard_normal((b, k)).astype(dtype)
    y = np.zeros((b, k), dtype=dtype)
    y[np.arange(b), rng.integers(0, k, size=b)] = 1
    got = g(z, y)
    assert got.dtype == dtype
    placement = g.compiled.schedule.placement
    assert set(placement.values()) == {"loop"}, g.compiled.schedule.why
    kernel = kernel_text(g.source, "_k_" + next(iter(placement)))
    assert kernel.count("_exp(") == 1 and "_out[i, np.uintp(j)]" in kernel
    e = np.exp(z.astype(np.float64))
    want = e / e.sum(axis=1, keepdims=True) - y
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 2e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-6)
    # nan, inf: the interpreter's patterns (through the guard: the optimized program is
    # proven equal to the naive one where the arguments are finite)
    z[0, 0] = np.nan
    if b > 1:
        z[1, -1] = np.inf
    with np.errstate(all="ignore"):
        got = g(z, y)
        want = ea.grad(softmax_xent)(z, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)],
                               rtol=1e-12 if dtype == np.float64 else 2e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-6)


ROWS = """\
def f(x: [B, N], w: [B]):
    y[i: B, j: N] = sin(x[i, j]) * w[i] / Sum[k: N](sin(x[i, k]) ** 2 + 1)
    r[i: B] = sqrt(Sum[j: N](sin(x[i, j]) ** 2 + 1)) * w[i]
    return y, r
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_row_statement_shares_its_siblings_sum(dtype: type) -> None:
    # the two sums are one up to the summed index's name: computed once per row; the term
    # read back is the sum's whole body (sin(x)**2 + 1), not sin(x) alone: sin runs twice
    f = ea.compile(ea.parse(ROWS), backend="numba")
    placement = f.compiled.schedule.placement
    assert placement == {"y": "loop", "r": "loop"}, f.compiled.schedule.why
    kernel = kernel_text(f.source, "_k_y")
    assert kernel.startswith("def _k_y(_out0, _out1, ")
    assert kernel.count("_pairwise(") == 1 and "_k_r" not in f.source
    for b, n in ((1, 1), (4, 9), (3, 300)):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((b, n)).astype(dtype)
        w = rng.standard_normal(b).astype(dtype)
        x[0, 0] = np.inf  # sin(inf): nan in row 0 of both
        with np.errstate(all="ignore"):
            got = f(x=x, w=w)
            want = evaluate(f.program, x=x.astype(np.float64), w=w.astype(np.float64))
        agree(got, want, 1e-12 if dtype == np.float64 else 2e-5)
        assert np.isnan(got[1][0]) and np.isnan(got[0][0]).all()


BOUNDED = {  # y's body, and whether its loop stores 0.0 outside the range first (.interior)
    "(j >= 1) * (exp(x[i, j]) * (w[i] / Sum[k: N](exp(x[i, k]))))": True,
    "(j >= 1) * (j < N - 1) * (exp(x[i, j]) * w[i] / Sum[k: N](exp(x[i, k])))": False,
}


@pytest.mark.parametrize("body", list(BOUNDED))
@pytest.mark.parametrize("n", [1, 2, 3, 40])
def test_a_row_with_zeros_outside_a_range_keeps_its_terms_apart(body: str, n: int) -> None:
    # Where 0.0 is stored before the range's loop (brackets bounding j by sizes at the top of
    # the body), the output's row cannot hold the row sum's terms: a buffer of its own does.
    # Brackets evaluated at each point (a select) read the term and then store: the row does.
    f = ea.compile(ea.parse(f"def f(x: [B, N], w: [B]):\n    y[i: B, j: N] = {body}\n"
                            "    return y\n"), backend="numba")
    assert f.compiled.schedule.placement == {"y": "loop"}, f.compiled.schedule.why
    kernel = kernel_text(f.source, "_k_y")
    if BOUNDED[body]:
        assert "_terms_N_0[np.uintp(j)]" in kernel and "_pairwise(_out[" not in kernel
        assert "where a bracket is false" in kernel
    else:
        assert "_out[i, np.uintp(j)]" in kernel and "_terms_" not in kernel
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal((3, n)), rng.standard_normal(3)
    x[1, 0] = np.inf  # outside the range: a strong zero at the point, inf in the sum
    with np.errstate(all="ignore"):
        got = f(x=x, w=w)
        want = evaluate(f.program, x=x, w=w)
    agree(got, want, 1e-12)
    assert (got[:, 0] == 0).all() and not np.signbit(got[:, 0]).any()


BRACKETED = """\
def f(x: [B, N], w: [B]):
    y[i: B, j: N] = (j != 1) * exp(x[i, j]) * w[i] / Sum[k: N]((k != 1) * exp(x[i, k]))
    return y
"""


def test_a_term_that_may_be_a_strong_zero_is_not_read_back() -> None:
    # the buffer holds values, not strong-zero flags: a bracketed term is computed at the point
    prog = ea.parse(BRACKETED)
    y = prog.statements[0]
    assert reused_terms(y, frozenset()) == {}
    f = ea.compile(prog, backend="numba")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6))
    x[:, 1] = np.inf  # where the bracket is false: a strong zero, 0 (not nan)
    w = rng.standard_normal(3)
    with np.errstate(all="ignore"):
        got = f(x=x, w=w)
    want = evaluate(f.program, x=x, w=w)
    agree(got, want, 1e-12)
    assert (got[:, 1] == 0).all()


def test_alpha_equivalent_sums_are_one_and_siblings_need_a_shared_sum() -> None:
    prog = ea.parse(ROWS)
    y, r = prog.statements
    (sy,), (sr,) = ([e for e in _sums(s.body)] for s in (y, r))
    assert sy != sr and canonical(sy) == canonical(sr)
    assert row_sibling(y, r, frozenset()) and not row_sibling(r, y, frozenset())
    other = ea.parse(ROWS.replace("Sum[j: N](sin(x[i, j]) ** 2 + 1)",
                                  "Sum[j: N](cos(x[i, j]) ** 2 + 1)")).statements[1]
    assert not row_sibling(y, other, frozenset())


def _sums(e):
    from eqsat_ad.backend.fused.reuse import top_sums
    return top_sums(e)


def test_the_count_goes_into_the_loop_reading_the_row() -> None:
    lines = ["    for i in range(N):",
             "        for k in range(M):",
             "            _t[k] = _exp(z[i, k]) + z[i, np.uintp(k)]",
             "        for j in range(min(_lo, M)):",
             "            _out[i, j] = Y[i, j]"]
    assert counted_in_loop(lines, 1, "z", 1, "i", "M")
    assert lines[2:5] == ["            _cv1 = z[i, k]",
                          "            _in1 += (_cv1 >= _blo1) & (_cv1 <= _bhi1)",
                          "            _t[k] = _exp(_cv1) + _cv1"]
    # a loop over part of the row (an edge) or not reading the array: counted apart
    assert not counted_in_loop(lines, 1, "Y", 0, "i", "M")
    assert not counted_in_loop(lines, 1, "w", 2, "i", "M")


CLOSED = """\
def f(z: [B, N], w: [B, N]):
    e[i: B, j: N] = exp(z[i, j])
    p[i: B, j: N] = e[i, j] * w[i, j] / Sum[k: N](e[i, k])
    return Sum[i: B, j: N](p[i, j])
"""


def test_a_sum_over_no_free_index_is_priced_with_its_body() -> None:
    # The scalar's loop nest would recompute the row sum at every (i, j): B·N² where NumPy
    # sums each row once. Priced as a read (2 in all), it ran as that loop nest.
    from eqsat_ad.backend.fused.schedule import loop_price
    from eqsat_ad.plan.poly import Poly

    f = ea.compile(ea.parse(CLOSED), backend="numba")
    scalar = next(s for s in f.compiled._prog.statements if not s.indices)
    price = loop_price(scalar)
    assert price.degree() == 3 and Poly.const(2) != price
    assert f.compiled.schedule.placement[scalar.name] == "numpy"
    rng = np.random.default_rng(2)
    z, w = rng.standard_normal((4, 50)), rng.standard_normal((4, 50))
    np.testing.assert_allclose(f(z=z, w=w), evaluate(f.program, z=z, w=w), rtol=1e-12)
