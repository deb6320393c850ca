"""A small axis run as a loop (eqsat_ad.plan.split, eqsat_ad.plan.lower.loops): counted, not timed.

* The N-body gradient's plan allocates nothing over N x N x 3 (the array of differences the
  function builds is recomputed where it is read, one coordinate at a time); its largest array is
  N x N. The conv1d gradient's plan has no K x N array: K shifted-slice updates.
* Both equal the hand-written gradients (and so finite differences, checked by the sweep's own
  catalogue test) at small sizes.
* On random programs with small axes, the split lowering (forced: every candidate split) equals the
  reference interpreter on finite inputs, and on inf/nan inputs the compiled program equals the
  one compiled without splits (the strict code, which runs those inputs, never splits).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import programs, random_inputs, tensor_params

import eqsat_ad as ea
import eqsat_ad.plan.split as split
from eqsat_ad.ad import vjp
from eqsat_ad.backend.numpy import _load
from eqsat_ad.plan.lower import lower_program
from eqsat_ad.plan.order import invariant_first
from eqsat_ad.plan.price import program_cost

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from sweep_programs import CONV1D, NBODY  # noqa: E402


def _grad(p):
    t = p.target
    g = ea.grad(ea.parse(t) if isinstance(t, str) else t,
                wrt=p.wrt if len(p.wrt) > 1 else p.wrt[0])
    ins = p.make_inputs(p.small, np.random.default_rng(3))
    got = g(**ins)
    want = p.hand(**ins)
    for a, k in zip(got if isinstance(got, tuple) else (got,), p.wrt, strict=True):
        np.testing.assert_allclose(a, want[k], rtol=1e-9, atol=1e-12)
    return g


def test_nbody_gradient_allocates_nothing_over_n_by_n_by_3():
    g = _grad(NBODY)
    sizes = {"N": 1000, "M": 3}
    plan = program_cost(g.program, sizes).plan
    top = plan.largest(sizes)
    assert top is not None and top.alloc.evaluate(sizes) == 1000 * 1000  # O(N²), not 3 N²
    assert all(k.alloc.degree() <= 2 or "M" not in k.alloc.size_names() for k in plan.kernels)
    low = lower_program(g.program, sizes)
    assert any(d.kind == "recomputed" for d in low.decisions)
    assert sum(d.kind == "split-loop" for d in low.decisions) == 1  # r2
    # x_bar: its differences x[i, j] - x[k, j] spread into matrix products, no loop needed
    assert [d.statement for d in low.decisions if d.kind == "spread"] == ["x_bar"]
    # the code that runs at these sizes equals the hand gradient
    ins = NBODY.make_inputs({"N": 40}, np.random.default_rng(5))
    np.testing.assert_allclose(_load(lower_program(g.program, {"N": 40, "M": 3}))(**ins),
                               NBODY.hand(**ins)["x"], rtol=1e-9)


def test_conv1d_gradient_has_no_k_by_n_array():
    g = _grad(CONV1D)
    sizes = {"N": 2**18, "K": 9}
    plan = program_cost(g.program, sizes).plan
    assert all(k.alloc.evaluate(sizes) <= 2**18 for k in plan.kernels)
    assert not [k for k in plan.kernels if k.kind == "gather"]  # shifted slices, no gathers
    low = lower_program(g.program, sizes)
    assert sum(d.kind == "split-loop" for d in low.decisions) == 3
    ins = CONV1D.make_inputs({"N": 50, "K": 4}, np.random.default_rng(6))
    got = _load(lower_program(g.program, {"N": 50, "K": 4}))(**ins)
    want = CONV1D.hand(**ins)
    np.testing.assert_allclose(got[0], want["x"], rtol=1e-9)
    np.testing.assert_allclose(got[1], want["w"], rtol=1e-9)


def test_a_tiny_problem_is_not_split():
    # the loop's calls cost more than the small arrays it would save
    g = _grad(CONV1D)
    low = lower_program(g.program, {"N": 7, "K": 3})
    assert not [d for d in low.decisions if d.kind == "split-loop"]


def test_strict_code_is_not_split():
    g = _grad(CONV1D)
    low = lower_program(g.program, {"N": 2**18, "K": 9}, strict=True)
    assert not [d for d in low.decisions if d.kind == "split-loop"]


SIZES = (3, 2)  # small sizes: the random programs' axes (and their constants 2, 3) are loops


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          database=None)
@given(prog=programs(max_statements=3), data=st.data())
def test_split_lowering_equals_the_interpreter(prog, data):
    if data.draw(st.booleans(), label="adjoint") and tensor_params(prog):
        prog = vjp(prog, data.draw(st.sampled_from(tensor_params(prog)), label="wrt"))
    sizes = dict(zip(prog.size_names(), SIZES, strict=False))
    args = random_inputs(prog, sizes, np.random.default_rng(0))
    bad = dict(args)
    floats = [p.name for p in prog.params if p.kind == "tensor" and np.ndim(args[p.name])]
    if floats:
        a = np.array(bad[floats[0]], dtype=float)
        a.flat[0] = data.draw(st.sampled_from([np.inf, -np.inf, np.nan]), label="bad")
        bad[floats[0]] = a
    whole = ea.compile(prog)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split, "prefer", lambda a, b: True)  # every candidate is split
        low = lower_program(prog, sizes)
        compiled = ea.compile(prog)
        # finite inputs: the split code itself equals the interpreter
        _same(_load(low)(**args), ea.evaluate(prog, **args))
        # inf/nan: the compiled program (its fast code split, the strict rerun whole) is the
        # program compiled without splits, value for value (nan where it has nan)
        for given_args in (args, bad):
            _same(compiled(**given_args), whole(**given_args))


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want, strict=True):
        a = np.asarray(a.to_dense() if hasattr(a, "to_dense") else a, dtype=float)
        np.testing.assert_allclose(a, np.asarray(b, dtype=float), rtol=1e-7, atol=1e-9,
                                   equal_nan=True)


def test_the_forced_split_fires_on_a_small_axis():
    # (so the random test above exercises loops: a program with a length-3 axis)
    prog = ea.parse("def f(x: [N, 3], y: [N]):\n"
                    "    d[i: N, j: N, k: 3] = x[i, k] - x[j, k]\n"
                    "    s = Sum[i: N, j: N, k: 3](d[i, j, k] * d[i, j, k] * y[j])\n"
                    "    return s\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split, "prefer", lambda a, b: True)
        low = lower_program(prog, {"N": 50})
    assert [d for d in low.decisions if d.kind == "split-loop"]
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((50, 3)), rng.standard_normal(50)
    np.testing.assert_allclose(_load(low)(x, y), ea.evaluate(prog, x, y), rtol=1e-10)


def test_a_read_out_of_range_in_some_trips_is_not_evaluated_there():
    # found by test_split_lowering_equals_the_interpreter: y3[l] reads x[-l + 3], in range only
    # for l >= 1; a loop over l masked the value instead of skipping it, so x[3] was read at l = 0
    prog = ea.parse("""
def f(x: [3], a: [], R: rel[N, M]):
    y1 = -(x[1] + a + (2 >= M) * x[0])
    y2[i: M, j: 3] = Sum[k: M](y1) * (x[-j + 2] * a)
    y3[l: N] = y2[-l + M - 1, l - 1]
    return (2 >= N) * x[0] + Sum[p: N](y3[p])
""")
    args = {"x": np.array([0.27, -0.46, -0.91]), "a": np.array(-0.97),
            "R": np.zeros((3, 2), dtype=bool)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split, "prefer", lambda a, b: True)
        # the optimized program, written out: optimization under its CPU-time limit may
        # return another equivalent program on a loaded machine
        opt = ea.parse(
            "def f(x: [3], a: [], R: rel[N, M]):\n"
            "    y3[l: N] = (M >= l + 1 and l >= 1 and 4 > l)"
            " * (x[-l + 3] * (a * Sum[i: M](-(x[1] + a) - (2 >= M) * x[0])))\n"
            "    return (2 >= N) * x[0] + Sum[i: N](y3[i])\n")
        low = lower_program(opt, {"N": 3, "M": 2})
        assert [d for d in low.decisions if d.kind == "split-loop"]
        assert "if M >= _k" in low.source
        _same(_load(low)(**args), ea.evaluate(prog, **args))
        # whatever program the optimizer returns, its code agrees
        _same(ea.compile(prog)(**args), ea.evaluate(prog, **args))


def test_operands_a_loop_does_not_change_are_contracted_first_outside_it():
    # Σ_{k, j} A[i, k] B[k, j] x[j] in a loop where only x changes: A B first (summing k, which
    # nothing else carries), then the result with x (summing j); an invariant operand over the
    # result's indices only scales the result instead, and a step needs two invariant operands
    ops = [("i", "k"), ("k", "j"), ("j",)]
    summed = ["k", "j"]
    assert invariant_first(ops, [False, False, True], ("i",), summed) == ([0, 1], ["k"], ["j"])
    # (the widest first; B changes, so both summed indices wait for it)
    assert invariant_first(ops, [False, True, False], ("i",), summed) == ([0, 2], [], summed)
    assert invariant_first([("i",), ("i", "k"), ("k",)], [False, False, True], ("i",),
                           ["k"]) is None
    assert invariant_first(ops, [False, False, False], ("i",), summed) is None
    assert invariant_first(ops[:2], [False, True], ("i", "j"), ["k"]) is None
    # the N-body gradient as a loop over the 3 coordinates: the hoisted step runs once, and the
    # values are the interpreter's
    prog = ea.parse("""
def f(A: [N, N], B: [N, N], x: [N, M]):
    y[i: N, d: M] = Sum[k: N, j: N](A[i, k] * B[k, j] * x[j, d])
    return y
""")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split, "prefer", lambda a, b: True)
        low = lower_program(prog, {"N": 40, "M": 3})
    loop = low.source.index("for _k")
    assert "@" in low.source[:loop], low.source  # A @ B before the loop
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((40, 40)), rng.standard_normal((40, 40)),
            rng.standard_normal((40, 3))]
    np.testing.assert_allclose(_load(low)(*args), ea.evaluate(prog, *args), rtol=1e-10)
