"""Matrix products split from the elementwise work around them (backend/fused/epilogue.py):
BLAS for the product, into a buffer kept from call to call, and loop nests for the epilogue
(``tanh(X @ W1.T + b1)``) and for elementwise factors feeding a product (``hid_bar · (1 -
hid**2)``, read by ``W1_bar``'s product and ``b1_bar``'s sum, computed once).

The values are the interpreter's (within rounding: vmath's tanh and exp), in float64 and
float32, at odd sizes, with inf and nan in the arguments; a statement whose split could store
a strong zero is not split; the schedule runs the split program only where it is priced below
both the unsplit fused program and the whole NumPy program."""

from __future__ import annotations

import numpy as np
import pytest
from numba_inputs import agree, kernel_text, random_arguments

import eqsat_ad as ea
from eqsat_ad.examples import WORKED_EXAMPLES
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Statement
from eqsat_ad.plan.lower import lower_program
from eqsat_ad.plan.poly import Poly, compare

pytest.importorskip("numba")

from eqsat_ad.backend.fused.epilogue import (  # noqa: E402
    cheaper,
    product_into,
    product_operands,
    split_products,
)
from eqsat_ad.backend.fused.parts import alone_price  # noqa: E402
from eqsat_ad.backend.fused.program import NumbaProgram  # noqa: E402
from eqsat_ad.backend.fused.schedule import LOOP_RATIO, schedule  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")


def _alone(nb: NumbaProgram, s: Statement) -> Poly:
    """``s``'s NumPy code run on its own, priced as ``nb``'s schedule prices it."""
    return alone_price(nb.program, nb._shapes, s, nb._signed(s))

MLP = next(e for e in WORKED_EXAMPLES if e.id == "mlp")

NMF = """\
def nmf(V: [M, N], W: [M, R], H: [R, N]):
    E[i: M, j: N] = V[i, j] - Sum[r: R](W[i, r] * H[r, j])
    return Sum[i: M, j: N](E[i, j] ** 2)
"""

# the epilogue under a bracket: stored, the product would lose the bracket's strong zero
BRACKETED = """\
def banded(A: [N, K], B: [K, N], c: [N], w: [N, N]):
    y[i: N, j: N] = (i <= j) * tanh(Sum[k: K](A[i, k] * B[k, j]) + c[j])
    return Sum[i: N, j: N](w[i, j] * y[i, j])
"""


def _mlp() -> ea.Compiled:
    return ea.grad(MLP.program(), MLP.wrt, backend="numba")


def test_mlp_runs_the_product_as_blas_and_the_tanh_epilogue_as_a_loop() -> None:
    g = _mlp()
    sched = g.compiled.schedule
    assert sched.placement["_p_hid"] == "numpy" and sched.why["_p_hid"] == "contraction (BLAS)"
    assert sched.placement["hid"] == "loop"
    # BLAS into a buffer kept from call to call, then one loop: bias and tanh in one pass
    assert "if not _product_into(_p_hid, X, W1.T, _fin):" in g.source
    kernel = kernel_text(g.source, "_k_hid")
    # (written over the product's array, which it reads at its own points only: .inplace)
    assert "    hid = _p_hid  # (in place" in g.source
    assert "_tanh((_out[n, j] + b1[j]))" in kernel
    assert "np.tanh" not in g.source
    # tanh's derivative times hid_bar: one loop nest into an array both the weight
    # gradient's product and the bias gradient's sum read (computed once)
    assert sched.placement["_f_W1_bar"] == "loop"
    stmts = {s.name: s for s in g.compiled._prog.statements}
    assert "_f_W1_bar" in stmts["W1_bar"].reads() and "_f_W1_bar" in stmts["b1_bar"].reads()
    assert "hid" not in stmts["b1_bar"].reads()
    assert sched.why["W1_bar"] == "contraction (BLAS)"
    # a product no caller sees (hid_bar, read by the factor's loop) into a kept buffer too
    assert "if not _product_into(hid_bar, z_bar, W2, _fin):" in g.source


def test_results_are_not_the_kept_buffers() -> None:
    # the buffers kept from call to call never reach a result: a later call leaves an
    # earlier call's results as they were
    g = _mlp()
    sizes = {"B": 6, "D": 5, "H": 17, "K": 3}
    first = g(**random_arguments(g.program, sizes, seed=4))
    kept = tuple(np.array(v, copy=True) for v in first)
    second = g(**random_arguments(g.program, sizes, seed=5))
    for a, b, c in zip(first, kept, second, strict=True):
        np.testing.assert_array_equal(a, b)
        assert not np.shares_memory(a, c)


def test_the_split_is_priced_below_the_numpy_program() -> None:
    g = _mlp()
    c = g.compiled
    whole = lower_program(c.program).plan
    price = c.schedule.price
    assert price is not None
    assert compare(price, whole.cost * LOOP_RATIO) < 0
    # unsplit (only the softmax's loop nest beside the NumPy statements) it is dearer: the
    # split program runs
    prog = c.program
    assert split_products(prog, whole) is not None
    unsplit = schedule(prog, whole, {s.name: c._loopable(s) for s in prog.statements},
                       alone={s.name: _alone(c, s) for s in prog.statements})
    assert unsplit.placement["hid"] == unsplit.placement["W1_bar"] == "numpy"
    assert unsplit.price is not None and compare(price, unsplit.price) < 0
    assert cheaper(c.schedule, unsplit) and not cheaper(unsplit, c.schedule)


def test_a_single_numpy_pass_around_a_product_is_not_split() -> None:
    # V - W @ H: one NumPy pass; a loop nest reads and writes what it does (measured slower)
    g = ea.grad(ea.parse(NMF), ("W", "H"), backend="numba")
    assert not any(n.startswith(("_p_", "_f_")) for n in g.compiled.schedule.placement)
    assert g.compiled.numpy_only


def test_a_product_under_a_bracket_is_not_split() -> None:
    g = ea.grad(ea.parse(BRACKETED), ("A", "B", "c"))
    prog = g.program
    plan = lower_program(prog).plan
    assert split_products(prog, plan) is None
    # (without the bracket, the same products split: tanh's derivative as a factor)
    free = ea.grad(ea.parse(BRACKETED.replace("(i <= j) * ", "")), ("A", "B", "c")).program
    assert split_products(free, lower_program(free).plan) is not None
    gn = ea.grad(ea.parse(BRACKETED), ("A", "B", "c"), backend="numba")
    args = random_arguments(prog, {"N": 7, "K": 5}, seed=3)
    args["A"][0, :] = np.inf  # row 0 of the product is inf: the bracket zeroes y[i < j]...
    with np.errstate(all="ignore"):
        agree(gn(**args), evaluate(gn.program, **args), 1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", [(1, 1, 1, 1), (3, 5, 7, 2), (16, 32, 64, 10),
                                   (17, 33, 65, 3)])
def test_mlp_gradient_is_the_interpreters(dtype: type, sizes: tuple[int, ...]) -> None:
    g = _mlp()
    b, d, h, k = sizes
    args = random_arguments(g.program, {"B": b, "D": d, "H": h, "K": k}, seed=b + h,
                            dtype=dtype)
    got = g(**args)
    assert all(np.asarray(v).dtype == dtype for v in got)
    want = evaluate(g.program, **{n: v.astype(np.float64) for n, v in args.items()})
    rtol = 1e-10 if dtype == np.float64 else 5e-4
    agree(got, want, rtol)
    agree(got, ea.grad(MLP.program(), MLP.wrt)(**args), rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("poison", [np.inf, np.nan])
def test_mlp_gradient_with_nonfinite_arguments(dtype: type, poison: float) -> None:
    g = _mlp()
    args = random_arguments(g.program, {"B": 9, "D": 6, "H": 20, "K": 4}, seed=1,
                            dtype=dtype, poison=poison)
    with np.errstate(all="ignore"):
        got = g(**args)
        want = evaluate(g.program, **{n: v.astype(np.float64) for n, v in args.items()})
    agree(got, tuple(np.asarray(w, dtype=dtype) for w in want),
           1e-10 if dtype == np.float64 else 5e-4)


@pytest.mark.parametrize("name", ["X", "W1", "b1", "W2"])
def test_one_nonfinite_entry_reaches_the_epilogue_as_the_interpreter_says(name: str) -> None:
    g = _mlp()
    args = random_arguments(g.program, {"B": 5, "D": 4, "H": 6, "K": 3}, seed=2)
    args[name].reshape(-1)[1] = np.inf
    with np.errstate(all="ignore"):
        agree(g(**args), evaluate(g.program, **args), 1e-10)


def test_product_into_runs_blas_only_on_finite_operands() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 5))
    out = np.empty((6, 5))
    assert product_into(out, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-14)
    a[2, 1] = np.nan  # checked on the operands (smaller than the product)
    assert not product_into(out, a, b)
    big_a, big_b = rng.standard_normal((40, 2)), rng.standard_normal((2, 50))
    big_b[1, 7] = -np.inf  # checked on the product (smaller than the operands: no)
    out = np.empty((40, 50))
    with np.errstate(all="ignore"):
        assert not product_into(out, big_a, big_b)
    big_b[1, 7] = 1.0
    assert product_into(out, big_a, big_b)
    np.testing.assert_allclose(out, big_a @ big_b, rtol=1e-14)


def test_product_operands_orient_the_matrices() -> None:
    g = _mlp()
    stmts = {s.name: s for s in g.compiled._prog.statements}
    shapes = g.compiled._shapes
    assert product_operands(stmts["_p_hid"], shapes) == ("X", "W1.T")
    assert product_operands(stmts["hid"], shapes) is None


def test_a_product_of_part_of_a_matrix_is_not_written_as_its_whole_product() -> None:
    """``t[i: 1, j: 2] = Σ_k B[i, k] B[k, j]`` reads B's first row only: BLAS into t's kept
    buffer wrote ``B @ B`` (2 x 2) into a 1 x 2 array, a ValueError (the fuzzer's numba run,
    seed 3003, case 183). Only a matrix read whole is an operand."""
    src = """
def f(x: [], B: [2, 2]):
    t[i: 1, j: 2] = Sum[k: 2](B[i, k] * B[k, j])
    t1[i: 1, j: 2] = x / t[i, j]
    t2[i: 2] = (B[i, i] + B[i, i]) * t1[0, i]
    return Sum[i: 2](t2[i])
"""
    prog = ea.parse(src)
    shapes = {p.name: p.shape for p in prog.params}
    (t, *_) = prog.statements
    assert product_operands(t, shapes) is None
    whole = ea.parse("def g(B: [2, 2]):\n    t[i: 2, j: 2] = Sum[k: 2](B[i, k] * B[j, k])\n"
                     "    return t\n").statements[0]
    assert product_operands(whole, shapes) == ("B", "B.T")
    args = {"x": 0.7, "B": np.array([[1.5, -2.0], [0.25, 3.0]])}
    f = ea.compile(prog, optimize=False, backend="numba")
    np.testing.assert_allclose(f(**args), evaluate(prog, **args), rtol=1e-12)
